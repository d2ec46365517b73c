//===- Ilp.h - a small mixed-integer program and its solver -----*- C++ -*-===//
//
// The one place spmd talks to a MILP solver (COIN-OR CBC, through its C
// interface). Variables are added with their objective coefficient and
// bounds, rows as sparse linear constraints; solve() minimizes. The model is
// handed to CBC in one column-major matrix, so building it is linear in its
// size. Plain C++: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_ILP_H
#define SPMD_CORE_ILP_H

#include <utility>
#include <vector>

namespace spmd {

class IlpModel {
public:
  /// Adds a variable in [lb, ub] with objective coefficient `obj`; returns
  /// its index.
  int addVar(double obj, double lb, double ub, bool integer);
  /// Adds lo <= sum(coef * var) <= hi.
  void addRow(const std::vector<std::pair<int, double>> &terms, double lo,
              double hi);
  /// Adds `delta` to variable `var`'s objective coefficient.
  void addObjective(int var, double delta) { obj[var] += delta; }
  /// The objective's coefficients, one per variable.
  const std::vector<double> &objective() const { return obj; }
  /// Replaces the objective (missing coefficients are 0).
  void setObjective(std::vector<double> coefficients) {
    coefficients.resize(obj.size(), 0.0);
    obj = std::move(coefficients);
  }
  int numVars() const { return static_cast<int>(obj.size()); }
  int numRows() const { return static_cast<int>(rowLo.size()); }

  enum class Status {
    Optimal,    // proven optimal
    Feasible,   // a solution, not proven optimal (the time limit ended it)
    Infeasible, // proven to have no solution
    NoSolution, // the time limit ended it before any solution was found
  };
  struct Result {
    Status status = Status::NoSolution;
    std::vector<double> values;
    double objective = 0;
    double seconds = 0;
  };
  /// Minimizes within `timeLimitSeconds`; `start`, if of the right size, is
  /// an initial solution CBC may improve on.
  Result solve(double timeLimitSeconds,
               const std::vector<double> &start = {}) const;

private:
  std::vector<double> obj, lb, ub;
  std::vector<char> integer;
  std::vector<double> rowLo, rowHi;
  /// Row-major terms, turned column-major by solve().
  std::vector<std::vector<std::pair<int, double>>> rows;
};

} // namespace spmd

#endif // SPMD_CORE_ILP_H

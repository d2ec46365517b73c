//===- Ilp.cpp - IlpModel on COIN-OR CBC ----------------------------------===//

#include "core/Ilp.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

using namespace spmd;

int IlpModel::addVar(double o, double l, double u, bool isInteger) {
  obj.push_back(o);
  lb.push_back(l);
  ub.push_back(u);
  integer.push_back(isInteger);
  return numVars() - 1;
}

void IlpModel::addRow(const std::vector<std::pair<int, double>> &terms,
                      double lo, double hi) {
  // One entry per variable (CBC's matrix wants no duplicates).
  std::vector<std::pair<int, double>> merged(terms);
  std::sort(merged.begin(), merged.end());
  size_t out = 0;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (out > 0 && merged[out - 1].first == merged[i].first)
      merged[out - 1].second += merged[i].second;
    else
      merged[out++] = merged[i];
  }
  merged.resize(out);
  rows.push_back(std::move(merged));
  rowLo.push_back(lo);
  rowHi.push_back(hi);
}

IlpModel::Result IlpModel::solve(double timeLimitSeconds,
                                 const std::vector<double> &start) const {
  Result result;
  auto begin = std::chrono::steady_clock::now();
  int n = numVars(), m = numRows();
  // Column-major matrix.
  std::vector<CoinBigIndex> colStart(n + 1, 0);
  for (const auto &row : rows)
    for (const auto &[var, coef] : row)
      ++colStart[var + 1];
  for (int j = 0; j < n; ++j)
    colStart[j + 1] += colStart[j];
  std::vector<int> rowIndex(colStart[n]);
  std::vector<double> values(colStart[n]);
  std::vector<CoinBigIndex> fill(colStart.begin(), colStart.end() - 1);
  for (int i = 0; i < m; ++i)
    for (const auto &[var, coef] : rows[i]) {
      rowIndex[fill[var]] = i;
      values[fill[var]++] = coef;
    }

  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  Cbc_loadProblem(model, n, m, colStart.data(), rowIndex.data(), values.data(),
                  lb.data(), ub.data(), obj.data(), rowLo.data(), rowHi.data());
  for (int j = 0; j < n; ++j)
    if (integer[j])
      Cbc_setInteger(model, j);
  Cbc_setMaximumSeconds(model, std::max(0.01, timeLimitSeconds));
  // Deterministic: one thread, a fixed seed.
  Cbc_setParameter(model, "threads", "0");
  Cbc_setParameter(model, "randomCbcSeed", "1");
  // CBC's presolve and preprocessing cost more than they save on these
  // models (the 4-layer GPT on 2x2: 13 s with them, 2 s without).
  Cbc_setParameter(model, "presolve", "off");
  Cbc_setParameter(model, "preprocess", "off");
  if (static_cast<int>(start.size()) == n)
    Cbc_setInitialSolution(model, start.data());
  Cbc_solve(model);

  if (Cbc_isProvenOptimal(model))
    result.status = Status::Optimal;
  else if (Cbc_isProvenInfeasible(model))
    result.status = Status::Infeasible;
  else if (Cbc_numberSavedSolutions(model) > 0 ||
           Cbc_getColSolution(model) != nullptr)
    result.status = Status::Feasible;
  if (result.status == Status::Optimal || result.status == Status::Feasible) {
    const double *sol = Cbc_getColSolution(model);
    if (sol) {
      result.values.assign(sol, sol + n);
      result.objective = Cbc_getObjValue(model);
    } else {
      result.status = Status::NoSolution;
    }
  }
  // A "feasible" answer must satisfy the rows (CBC returns its last LP point
  // when stopped without an integer solution).
  if (result.status == Status::Feasible) {
    for (int j = 0; j < n && result.status == Status::Feasible; ++j)
      if (integer[j] &&
          std::fabs(result.values[j] - std::round(result.values[j])) > 1e-6)
        result.status = Status::NoSolution;
    for (int i = 0; i < m && result.status == Status::Feasible; ++i) {
      double s = 0;
      for (const auto &[var, coef] : rows[i])
        s += coef * result.values[var];
      if (s < rowLo[i] - 1e-6 || s > rowHi[i] + 1e-6)
        result.status = Status::NoSolution;
    }
  }
  Cbc_deleteModel(model);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  return result;
}

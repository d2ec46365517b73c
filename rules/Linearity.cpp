//===- Linearity.cpp - How a result depends on partial operands -----------===//

#include "rules/Linearity.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

spmd::Dep spmd::combineDep(Operation *op, ArrayRef<Dep> deps, ReduceKind kind) {
  if (llvm::all_of(deps, [](Dep d) { return d == Dep::Const; }))
    return Dep::Const;
  if (llvm::is_contained(deps, Dep::Bad))
    return Dep::Bad;
  bool allTerms = llvm::all_of(deps, [](Dep d) { return d == Dep::Term; });
  auto termAndConst = [&] { return deps.size() == 2 && deps[0] != deps[1]; };
  auto termOverConst = [&] {
    return deps.size() == 2 && deps[0] == Dep::Term && deps[1] == Dep::Const;
  };
  bool unary = deps.size() == 1;
  if (kind == ReduceKind::Sum || kind == ReduceKind::Avg) {
    if (isa<arith::AddFOp, arith::AddIOp, arith::SubFOp, arith::SubIOp>(op))
      return allTerms ? Dep::Term : Dep::Bad;
    if (isa<arith::MulFOp, arith::MulIOp>(op))
      return termAndConst() ? Dep::Term : Dep::Bad;
    if (isa<arith::DivFOp>(op))
      return termOverConst() ? Dep::Term : Dep::Bad;
    if (isa<arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(op))
      return unary ? Dep::Term : Dep::Bad;
    return Dep::Bad;
  }
  // max/min: the reduction commutes with itself and with adding something
  // the same on every rank.
  bool isMax = kind == ReduceKind::Max;
  if (isMax &&
      isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp, arith::MaxUIOp>(
          op))
    return Dep::Term;
  if (!isMax &&
      isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp, arith::MinUIOp>(
          op))
    return Dep::Term;
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return termAndConst() ? Dep::Term : Dep::Bad;
  if (isa<arith::SubFOp, arith::SubIOp>(op))
    return termOverConst() ? Dep::Term : Dep::Bad;
  if (isa<arith::ExtFOp, arith::TruncFOp>(op))
    return unary ? Dep::Term : Dep::Bad;
  return Dep::Bad;
}

spmd::Dep spmd::dependence(Value v, const llvm::DenseSet<Value> &terms,
                           Block *body, ReduceKind kind,
                           llvm::DenseMap<Value, Dep> &memo) {
  if (terms.contains(v))
    return Dep::Term;
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  Dep result = Dep::Const;
  if (auto select = dyn_cast_or_null<arith::SelectOp>(def);
      select && def->getBlock() == body) {
    // A mask: select(c, t, f) with c the same on every rank picks a term or
    // a constant. For sum/avg the constant must be zero (a zero term); for
    // max/min any constant commutes with the reduction.
    auto branch = [&](Value b) {
      Dep d = dependence(b, terms, body, kind, memo);
      if (d != Dep::Const)
        return d;
      bool zero =
          matchPattern(b, m_AnyZeroFloat()) || matchPattern(b, m_Zero());
      return kind == ReduceKind::Max || kind == ReduceKind::Min || zero
                 ? Dep::Term
                 : Dep::Bad;
    };
    Dep cond = dependence(select.getCondition(), terms, body, kind, memo);
    Dep t = dependence(select.getTrueValue(), terms, body, kind, memo);
    Dep f = dependence(select.getFalseValue(), terms, body, kind, memo);
    if (cond != Dep::Const)
      result = Dep::Bad;
    else if (t == Dep::Const && f == Dep::Const)
      result = Dep::Const;
    else if (branch(select.getTrueValue()) == Dep::Term &&
             branch(select.getFalseValue()) == Dep::Term)
      result = Dep::Term;
    else
      result = Dep::Bad;
    memo[v] = result;
    return result;
  }
  if (def && def->getBlock() == body) {
    SmallVector<Dep> deps;
    for (Value operand : def->getOperands())
      deps.push_back(dependence(operand, terms, body, kind, memo));
    result = combineDep(def, deps, kind);
  }
  memo[v] = result;
  return result;
}

std::optional<SmallVector<spmd::Dep>>
spmd::resultDependence(Operation *op, ArrayRef<unsigned> partial,
                       ReduceKind kind) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    Block *body = linalgOp.getBlock();
    if (!body || !linalgOp.hasPureTensorSemantics())
      return std::nullopt;
    llvm::DenseSet<Value> terms;
    for (unsigned o : partial)
      terms.insert(linalgOp.getMatchingBlockArgument(&op->getOpOperand(o)));
    llvm::DenseMap<Value, Dep> memo;
    SmallVector<Dep> deps;
    for (OpResult r : op->getResults())
      deps.push_back(
          dependence(body->getTerminator()->getOperand(r.getResultNumber()),
                     terms, body, kind, memo));
    return deps;
  }
  if (op->getNumRegions() != 0 || !OpTrait::hasElementwiseMappableTraits(op))
    return std::nullopt;
  SmallVector<Dep> operandDeps(op->getNumOperands(), Dep::Const);
  for (unsigned o : partial)
    operandDeps[o] = Dep::Term;
  return SmallVector<Dep>(op->getNumResults(),
                          combineDep(op, operandDeps, kind));
}

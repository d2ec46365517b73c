//===- GemmMatch.cpp - contractions BLAS can run as (batched) GEMMs -------===//

#include "passes/plan/GemmMatch.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

using namespace mlir;

std::optional<spmd::GemmLoops> spmd::matchGemmLoops(ArrayRef<AffineMap> maps) {
  if (maps.size() != 3)
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(maps);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  // The loops of each operand in order.
  SmallVector<unsigned> loops[3];
  for (int i = 0; i < 3; ++i)
    for (AffineExpr e : maps[i].getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d)
        return std::nullopt;
      loops[i].push_back(d.getPosition());
    }
  // Splits `operand` into consecutive runs of the given groups; fails unless
  // each run holds exactly its group.
  auto split = [&](ArrayRef<unsigned> operand,
                   ArrayRef<ArrayRef<unsigned>> groups,
                   SmallVector<SmallVector<unsigned>> &runs) {
    size_t at = 0;
    runs.clear();
    for (ArrayRef<unsigned> group : groups) {
      SmallVector<unsigned> run;
      while (at < operand.size() && llvm::is_contained(group, operand[at]))
        run.push_back(operand[at++]);
      if (run.size() != group.size())
        return false;
      runs.push_back(run);
    }
    return at == operand.size();
  };
  ArrayRef<unsigned> batch = dims->batch, m = dims->m, n = dims->n, k = dims->k;
  GemmLoops form;
  auto &[aRuns, bRuns, cRuns] = form.runs;
  if (!split(loops[2], {batch, m, n}, cRuns))
    return std::nullopt;
  if (!split(loops[0], {batch, m, k}, aRuns)) {
    if (!split(loops[0], {batch, k, m}, aRuns))
      return std::nullopt;
    form.transposeA = true;
  }
  if (!split(loops[1], {batch, k, n}, bRuns)) {
    if (!split(loops[1], {batch, n, k}, bRuns))
      return std::nullopt;
    form.transposeB = true;
  }
  // Same loop order in every operand that reads a group.
  unsigned am = form.transposeA ? 2 : 1, ak = form.transposeA ? 1 : 2;
  unsigned bk = form.transposeB ? 2 : 1, bn = form.transposeB ? 1 : 2;
  if (aRuns[0] != cRuns[0] || bRuns[0] != cRuns[0] || aRuns[am] != cRuns[1] ||
      bRuns[bn] != cRuns[2] || aRuns[ak] != bRuns[bk])
    return std::nullopt;
  return form;
}

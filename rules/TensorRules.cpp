//===- TensorRules.cpp - Sharding rules of tensor ops ---------------------===//
//
// Ops that move data commute with every partial kind, so their partial
// alternatives allow sum, avg, max and min unless said otherwise.
//
//  * tensor.empty: a parallel factor per dim, and the alternative {} (any
//    layout: the contents are undefined).
//  * tensor.splat, tensor.from_elements: R only (no factors).
//  * tensor.cast between ranked types of one rank: like an elementwise op;
//    alternative {source}.
//  * tensor.dim with a constant index: a factor per dim of the source but
//    the queried one; alternative {source}.
//  * tensor.expand_shape / collapse_shape: per reassociation group, the
//    collapsed dim and the outermost expanded dim share a reshape factor
//    (splittable only where the torch.chunk boundaries of both agree; needs
//    replication when the group has a dynamic size); the other expanded
//    dims have none. Dims of static size 1 are skipped: the outermost other
//    dim carries the split, and a group with one such dim is that dim (a
//    plain factor). Alternative {source}.
//  * tensor.extract_slice: a source dim taken whole (offset 0, full static
//    size, stride 1) shares a factor with its result dim; other dims have
//    none. Alternative {source}.
//  * tensor.insert_slice: a dest dim the source covers whole shares a factor
//    with the source and result dims. Alternative {source, dest}.
//    Rank-reducing slices (either kind) have no factors and no alternative.
//  * tensor.concat: every dim but the concatenated one shares a factor with
//    all inputs. Alternative {all inputs}.
//  * tensor.pad: dims with zero low and high padding share a factor.
//    Alternative {source}: max|min, and sum|avg when the padding value is
//    constant zero (another value would be counted once per rank).
//
//===----------------------------------------------------------------------===//

#include "rules/RuleModels.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace spmd;

static std::optional<int64_t> rankOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return t.getRank();
  return std::nullopt;
}

/// A rule with the slots of `op` and no factors.
static ShardingRule emptyRule(Operation *op) {
  SmallVector<std::optional<int64_t>> operands, results;
  for (Value v : op->getOperands())
    operands.push_back(rankOf(v));
  for (Value v : op->getResults())
    results.push_back(rankOf(v));
  return ShardingRule::empty(operands, results);
}

static int64_t staticSize(int64_t size) {
  return ShapedType::isDynamic(size) ? -1 : size;
}

/// Whether `groups` partitions the expanded dims in order, one group per
/// collapsed dim. Upstream's verifiers check the indices as 32-bit affine
/// dims, so an index past 2^32 can verify and must not index a shape here.
static bool validReassociation(ArrayRef<ReassociationIndices> groups,
                               RankedTensorType collapsed,
                               RankedTensorType expanded) {
  if (static_cast<int64_t>(groups.size()) != collapsed.getRank())
    return false;
  if (groups.empty()) // to or from rank 0: every expanded dim is a unit
    return true;
  int64_t next = 0;
  for (const ReassociationIndices &group : groups) {
    if (group.empty())
      return false;
    for (int64_t d : group)
      if (d != next++)
        return false;
  }
  return next == expanded.getRank();
}

/// Reshape rule: `collapsed` / `expanded` are the types, `groups` the
/// reassociation (collapsed dim g <-> expanded dims groups[g]).
static ShardingRule reshapeRule(Operation *op, RankedTensorType collapsed,
                                RankedTensorType expanded,
                                ArrayRef<ReassociationIndices> groups,
                                bool sourceIsCollapsed) {
  ShardingRule rule = emptyRule(op);
  SmallVector<int> &collapsedDims =
      *rule.slotDims[sourceIsCollapsed ? 0 : rule.numOperands];
  SmallVector<int> &expandedDims =
      *rule.slotDims[sourceIsCollapsed ? rule.numOperands : 0];
  for (auto [g, group] : llvm::enumerate(groups)) {
    Factor f;
    f.size = staticSize(collapsed.getDimSize(g));
    // The outermost expanded dim of the group that is not a static 1
    // carries the split (leading 1s, as unsqueeze and view(1, ...) add them,
    // take no part); when every other dim is a 1, the group is that one dim
    // and splits as it does.
    auto carriers = llvm::make_filter_range(
        group, [&](int64_t d) { return expanded.getDimSize(d) != 1; });
    int64_t outer = carriers.empty() ? group.front() : *carriers.begin();
    bool plain =
        llvm::hasSingleElement(carriers) && !expanded.isDynamicDim(outer);
    if (!plain && group.size() > 1) {
      f.reshape = true;
      f.outerSize = expanded.getDimSize(outer);
      bool dynamic = collapsed.isDynamicDim(g);
      for (int64_t d : group) {
        dynamic |= expanded.isDynamicDim(d);
        if (d > outer && !expanded.isDynamicDim(d))
          f.innerSize *= expanded.getDimSize(d);
      }
      if (dynamic)
        f.kind = Factor::Kind::NeedReplication;
    }
    int factor = rule.addFactor(f);
    collapsedDims[g] = factor;
    expandedDims[outer] = factor;
  }
  rule.alts.push_back({{0}, allReduceKinds()});
  return rule;
}

/// Does a slice take dim `d` of a `size`-sized dim whole?
static bool isWholeDim(OffsetSizeAndStrideOpInterface op, unsigned d,
                       int64_t size) {
  return !ShapedType::isDynamic(size) && op.getStaticOffsets()[d] == 0 &&
         op.getStaticSizes()[d] == size && op.getStaticStrides()[d] == 1;
}

/// extract_slice / insert_slice: `whole` is the source / dest slot, `part`
/// the slots of the slice's type (result / source), `wholeLike` the slots
/// with the whole's type (the insert's result).
static ShardingRule
sliceRule(OffsetSizeAndStrideOpInterface op, RankedTensorType wholeType,
          const llvm::SmallBitVector &dropped, unsigned whole, unsigned part,
          ArrayRef<unsigned> wholeLike, SmallVector<unsigned> altOperands) {
  ShardingRule rule = emptyRule(op);
  // A rank-reducing slice (x[..., 0] as select writes it) drops unit dims:
  // the slice's dim of whole dim d is d less the dropped dims before it.
  int64_t partDim = 0;
  for (int64_t d = 0; d < wholeType.getRank(); ++d) {
    if (dropped.test(d))
      continue;
    int64_t p = partDim++;
    if (!isWholeDim(op, d, wholeType.getDimSize(d)))
      continue;
    int f = rule.addFactor({Factor::Kind::Parallel, wholeType.getDimSize(d)});
    (*rule.slotDims[whole])[d] = f;
    (*rule.slotDims[part])[p] = f;
    for (unsigned s : wholeLike)
      (*rule.slotDims[s])[d] = f;
  }
  rule.alts.push_back({std::move(altOperands), allReduceKinds()});
  return rule;
}

static std::optional<ShardingRule> tensorRule(Operation *op) {
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    ShardingRule rule = identityRule(op, empty.getType().getRank());
    rule.alts.push_back({{}, allReduceKinds()});
    return rule;
  }
  if (isa<tensor::SplatOp, tensor::FromElementsOp>(op))
    return emptyRule(op);
  if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
    std::optional<int64_t> src = rankOf(castOp.getSource()),
                           dst = rankOf(castOp.getResult());
    if (!src || !dst || *src != *dst)
      return std::nullopt;
    ShardingRule rule = identityRule(op, *src);
    rule.alts.push_back({{0}, allReduceKinds()});
    return rule;
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    // Reads only the shape: any layout that does not split the queried dim.
    std::optional<int64_t> rank = rankOf(dim.getSource());
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!rank || !index || *index < 0 || *index >= *rank)
      return std::nullopt;
    ShardingRule rule = identityRule(op, *rank);
    (*rule.slotDims[0])[*index] = -1;
    rule.alts.push_back({{0}, allReduceKinds()});
    return rule;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    if (!validReassociation(expand.getReassociationIndices(),
                            expand.getSrcType(), expand.getResultType()))
      return std::nullopt;
    return reshapeRule(op, expand.getSrcType(), expand.getResultType(),
                       expand.getReassociationIndices(), true);
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    if (!validReassociation(collapse.getReassociationIndices(),
                            collapse.getResultType(), collapse.getSrcType()))
      return std::nullopt;
    return reshapeRule(op, collapse.getResultType(), collapse.getSrcType(),
                       collapse.getReassociationIndices(), false);
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return sliceRule(slice, slice.getSourceType(), slice.getDroppedDims(),
                     /*whole=*/0, /*part=*/op->getNumOperands(), {}, {0});
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return sliceRule(insert, insert.getDestType(), insert.getDroppedDims(),
                     /*whole=*/1, /*part=*/0, {op->getNumOperands()}, {0, 1});
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    ShardingRule rule = identityRule(op, concat.getResultType().getRank());
    for (auto &dims : rule.slotDims)
      (*dims)[concat.getDim()] = -1;
    rule.factors[concat.getDim()] = {
        Factor::Kind::NeedReplication,
        concat.getResultType().getDimSize(concat.getDim())};
    rule.alts.push_back(
        {llvm::to_vector(llvm::seq<unsigned>(0, op->getNumOperands())),
         allReduceKinds()});
    return rule;
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    int64_t rank = pad.getResultType().getRank();
    ShardingRule rule = identityRule(op, rank);
    for (int64_t d = 0; d < rank; ++d) {
      if (pad.getStaticLow()[d] == 0 && pad.getStaticHigh()[d] == 0)
        continue;
      for (auto &dims : rule.slotDims)
        if (dims)
          (*dims)[d] = -1;
      rule.factors[d] = {Factor::Kind::NeedReplication,
                         staticSize(pad.getResultType().getDimSize(d))};
    }
    PartialAlt alt{{0}, {ReduceKind::Max, ReduceKind::Min}};
    Value padding = pad.getConstantPaddingValue();
    if (padding && (matchPattern(padding, m_AnyZeroFloat()) ||
                    matchPattern(padding, m_Zero())))
      alt.kinds.insert(alt.kinds.begin(), {ReduceKind::Sum, ReduceKind::Avg});
    rule.alts.push_back(alt);
    return rule;
  }
  return std::nullopt;
}

namespace {
template <typename OpTy>
struct TensorRuleModel
    : ShardingRuleOpInterface::ExternalModel<TensorRuleModel<OpTy>, OpTy> {
  std::optional<ShardingRule> getShardingRule(Operation *op) const {
    return tensorRule(op);
  }
};
} // namespace

template <typename... OpTys> static void attachTensorModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<TensorRuleModel<OpTys>>(*ctx), ...);
}

void spmd::registerTensorRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    attachTensorModels<tensor::EmptyOp, tensor::SplatOp, tensor::FromElementsOp,
                       tensor::CastOp, tensor::DimOp, tensor::ExpandShapeOp,
                       tensor::CollapseShapeOp, tensor::ExtractSliceOp,
                       tensor::InsertSliceOp, tensor::ConcatOp, tensor::PadOp>(
        ctx);
  });
}

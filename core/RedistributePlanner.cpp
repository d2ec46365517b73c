//===- RedistributePlanner.cpp - plan a layout change as collectives ------===//

#include "core/RedistributePlanner.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

namespace spmd {

const char *stepKindName(RedistributeStep::Kind kind) {
  switch (kind) {
  case RedistributeStep::Kind::AllGather:
    return "all_gather";
  case RedistributeStep::Kind::AllReduce:
    return "all_reduce";
  case RedistributeStep::Kind::ReduceScatter:
    return "reduce_scatter";
  case RedistributeStep::Kind::AllToAll:
    return "all_to_all";
  case RedistributeStep::Kind::LocalShard:
    return "shard";
  case RedistributeStep::Kind::LocalPartial:
    return "partial";
  }
  return "?";
}

bool RedistributeStep::isCollective() const {
  return kind != Kind::LocalShard && kind != Kind::LocalPartial;
}

std::string RedistributeStep::str(const Mesh &mesh) const {
  std::string s = stepKindName(kind);
  s += "([";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + mesh.axisNames[axes[i]];
  s += "]";
  switch (kind) {
  case Kind::AllGather:
  case Kind::LocalShard:
    s += ", dim " + std::to_string(dim);
    break;
  case Kind::ReduceScatter:
    s += ", dim " + std::to_string(dim) + ", " + reduceKindName(reduce);
    break;
  case Kind::AllReduce:
  case Kind::LocalPartial:
    s += std::string(", ") + reduceKindName(reduce);
    break;
  case Kind::AllToAll:
    s += ", split " + std::to_string(splitDim) + ", concat " +
         std::to_string(concatDim);
    break;
  }
  return s + ") -> " + after.str();
}

int64_t RedistributePlan::numCollectives() const {
  return std::count_if(
      steps.begin(), steps.end(),
      [](const RedistributeStep &s) { return s.isCollective(); });
}

std::string RedistributePlan::str(const Mesh &mesh) const {
  if (!ok())
    return "error: " + error;
  std::string s;
  for (const RedistributeStep &step : steps)
    s += (s.empty() ? "" : "; ") + step.str(mesh);
  return s.empty() ? "(nothing)" : s;
}

bool partialKindsCommute(const Layout &layout) {
  std::set<ReduceKind> kinds;
  for (const Placement &p : layout.placements)
    if (p.isPartial())
      kinds.insert(p.reduce);
  if (kinds.size() <= 1)
    return true;
  for (ReduceKind k : kinds)
    if (k != ReduceKind::Sum && k != ReduceKind::Avg)
      return false;
  return true;
}

namespace {

/// Everything the successor generation needs about one search.
class Planner {
public:
  Planner(const Mesh &mesh, const std::vector<int64_t> &shape,
          int64_t elementBytes, const RedistributeCostModel &model)
      : mesh(mesh), shape(shape), elementBytes(elementBytes), model(model) {}

  RedistributePlan run(const Layout &source, const Layout &target);
  /// Source -> R everywhere -> target; always valid, rarely the cheapest.
  RedistributePlan viaReplicated(const Layout &source, const Layout &target);

private:
  /// Calls fn(step) for every valid step out of `layout`.
  template <typename Fn> void forEachStep(const Layout &layout, Fn fn);

  /// Axes A may become the innermost axes sharding `dim` of a tensor in
  /// `layout`: every axis of A comes after the axes sharding `dim` now, and
  /// a flat split of the group equals the nested one for every local size
  /// `dim` can have.
  bool canAppend(const Layout &layout, int64_t dim,
                 const std::vector<int64_t> &axes) const;

  double bytes(const Layout &layout) const;
  double transfer(CollectiveKind kind, const std::vector<int64_t> &axes,
                  double bytes) const;
  double stepCost(const RedistributeStep &step, const Layout &before) const;

  const Mesh &mesh;
  const std::vector<int64_t> &shape;
  int64_t elementBytes;
  const RedistributeCostModel &model;
  /// Partial kinds the search may use: those of source and target.
  std::vector<ReduceKind> kinds;
};

} // namespace

/// Every non-empty subset of `items`, each in the order of `items`.
static std::vector<std::vector<int64_t>>
subsets(const std::vector<int64_t> &items) {
  std::vector<std::vector<int64_t>> result;
  size_t n = items.size();
  for (uint64_t mask = 1; mask < (uint64_t(1) << n); ++mask) {
    std::vector<int64_t> s;
    for (size_t i = 0; i < n; ++i)
      if (mask & (uint64_t(1) << i))
        s.push_back(items[i]);
    result.push_back(std::move(s));
  }
  return result;
}

/// Every size a dim of `n` elements can have under the nested `splits`.
static std::set<int64_t> chunkSizes(int64_t n,
                                    const std::vector<int64_t> &splits) {
  std::set<int64_t> sizes;
  std::vector<int64_t> idx(splits.size(), 0);
  while (true) {
    sizes.insert(nestedChunkRange(n, splits, idx).size);
    size_t i = splits.size();
    while (i > 0 && ++idx[i - 1] == splits[i - 1])
      idx[--i] = 0;
    if (i == 0)
      return sizes;
  }
}

bool Planner::canAppend(const Layout &layout, int64_t dim,
                        const std::vector<int64_t> &axes) const {
  std::vector<int64_t> current = layout.shardAxes(dim);
  if (!current.empty() && axes.front() <= current.back())
    return false;
  if (axes.size() == 1)
    return true;
  std::vector<int64_t> outer, inner;
  for (int64_t a : current)
    outer.push_back(mesh.axisSizes[a]);
  for (int64_t a : axes)
    inner.push_back(mesh.axisSizes[a]);
  int64_t k = mesh.groupSize(axes);
  for (int64_t size : chunkSizes(shape[dim], outer)) {
    std::vector<int64_t> idx(inner.size());
    for (int64_t flat = 0; flat < k; ++flat) {
      int64_t rest = flat;
      for (size_t i = inner.size(); i-- > 0;) {
        idx[i] = rest % inner[i];
        rest /= inner[i];
      }
      if (!(nestedChunkRange(size, inner, idx) == chunkRange(size, k, flat)))
        return false;
    }
  }
  return true;
}

double Planner::bytes(const Layout &layout) const {
  double n = static_cast<double>(elementBytes);
  for (int64_t s : maxLocalShape(mesh, layout, shape))
    n *= static_cast<double>(s);
  return n;
}

double Planner::transfer(CollectiveKind kind, const std::vector<int64_t> &axes,
                         double bytes) const {
  return collectiveTime(kind, mesh.groupSize(axes), bytes, model.comm.alpha,
                        model.comm.betaOf(axes));
}

double Planner::stepCost(const RedistributeStep &step,
                         const Layout &before) const {
  using Kind = RedistributeStep::Kind;
  switch (step.kind) {
  case Kind::AllGather:
    return transfer(CollectiveKind::AllGather, step.axes,
                    bytes(step.after) / double(mesh.groupSize(step.axes)));
  case Kind::AllReduce:
    return transfer(CollectiveKind::AllReduce, step.axes, bytes(before));
  case Kind::ReduceScatter:
    return transfer(CollectiveKind::ReduceScatter, step.axes, bytes(before));
  case Kind::AllToAll:
    return transfer(CollectiveKind::AllToAll, step.axes, bytes(before));
  case Kind::LocalShard:
  case Kind::LocalPartial:
    return model.localStep;
  }
  return 0;
}

template <typename Fn> void Planner::forEachStep(const Layout &layout, Fn fn) {
  using Kind = RedistributeStep::Kind;
  int64_t rank = static_cast<int64_t>(shape.size());
  auto emit = [&](RedistributeStep step, Placement placement) {
    step.after = layout;
    for (int64_t a : step.axes)
      step.after.placements[a] = placement;
    if (!partialKindsCommute(step.after))
      return;
    step.cost = stepCost(step, layout);
    fn(step);
  };

  std::vector<int64_t> replicated;
  std::map<ReduceKind, std::vector<int64_t>> partial;
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    const Placement &p = layout.placements[a];
    if (p.isReplicate())
      replicated.push_back(a);
    else if (p.isPartial())
      partial[p.reduce].push_back(a);
  }

  for (int64_t d = 0; d < rank; ++d) {
    std::vector<int64_t> sharding = layout.shardAxes(d);
    for (size_t t = 1; t <= sharding.size(); ++t) {
      std::vector<int64_t> suffix(sharding.end() - t, sharding.end());
      // Gather the innermost axes of d.
      RedistributeStep gather;
      gather.kind = Kind::AllGather;
      gather.axes = suffix;
      gather.dim = d;
      emit(gather, Placement::replicate());
      // Or move them to the innermost position of another dim.
      for (int64_t i = 0; i < rank; ++i) {
        if (i == d || !canAppend(layout, i, suffix))
          continue;
        RedistributeStep a2a;
        a2a.kind = Kind::AllToAll;
        a2a.axes = suffix;
        a2a.splitDim = i;
        a2a.concatDim = d;
        emit(a2a, Placement::shard(i));
      }
    }
  }

  for (const auto &[kind, axes] : partial) {
    for (const std::vector<int64_t> &group : subsets(axes)) {
      RedistributeStep reduce;
      reduce.kind = Kind::AllReduce;
      reduce.axes = group;
      reduce.reduce = kind;
      emit(reduce, Placement::replicate());
      for (int64_t d = 0; d < rank; ++d) {
        if (!canAppend(layout, d, group))
          continue;
        RedistributeStep scatter;
        scatter.kind = Kind::ReduceScatter;
        scatter.axes = group;
        scatter.dim = d;
        scatter.reduce = kind;
        emit(scatter, Placement::shard(d));
      }
    }
  }

  for (const std::vector<int64_t> &group : subsets(replicated)) {
    for (int64_t d = 0; d < rank; ++d) {
      if (!canAppend(layout, d, group))
        continue;
      RedistributeStep slice;
      slice.kind = Kind::LocalShard;
      slice.axes = group;
      slice.dim = d;
      emit(slice, Placement::shard(d));
    }
    for (ReduceKind kind : kinds) {
      RedistributeStep part;
      part.kind = Kind::LocalPartial;
      part.axes = group;
      part.reduce = kind;
      emit(part, Placement::partial(kind));
    }
  }
}

namespace {
/// A layout as a compact search key.
std::vector<int> key(const Layout &layout) {
  std::vector<int> k;
  for (const Placement &p : layout.placements)
    k.push_back(p.isReplicate() ? 0
                : p.isShard()   ? 1 + static_cast<int>(p.dim)
                                : -1 - static_cast<int>(p.reduce));
  return k;
}

struct Visit {
  double cost = 0;
  int64_t steps = 0;
  bool done = false;
  std::vector<int> parent;
  RedistributeStep step; // the step that reached this layout
};
} // namespace

RedistributePlan Planner::run(const Layout &source, const Layout &target) {
  for (const Layout *l : {&source, &target})
    for (const Placement &p : l->placements)
      if (p.isPartial() &&
          std::find(kinds.begin(), kinds.end(), p.reduce) == kinds.end())
        kinds.push_back(p.reduce);

  std::map<std::vector<int>, Visit> visits;
  using Entry = std::tuple<double, int64_t, std::vector<int>>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  std::map<std::vector<int>, Layout> layouts;

  std::vector<int> start = key(source), goal = key(target);
  int64_t settled = 0;
  visits[start] = Visit{};
  layouts[start] = source;
  queue.push({0.0, 0, start});
  while (!queue.empty()) {
    // Not a structured binding: the lambda below captures these, which
    // clang before 16 (the libFuzzer build, SPMD_FUZZERS) rejects.
    double cost = std::get<0>(queue.top());
    int64_t steps = std::get<1>(queue.top());
    std::vector<int> k = std::get<2>(queue.top());
    queue.pop();
    Visit &visit = visits[k];
    if (visit.done)
      continue;
    visit.done = true;
    if (k == goal)
      break;
    if (++settled > model.maxStates)
      return viaReplicated(source, target);
    Layout layout = layouts[k];
    forEachStep(layout, [&](const RedistributeStep &step) {
      std::vector<int> next = key(step.after);
      double nextCost = cost + step.cost;
      auto it = visits.find(next);
      if (it != visits.end() &&
          (it->second.done ||
           std::make_pair(it->second.cost, it->second.steps) <=
               std::make_pair(nextCost, steps + 1)))
        return;
      Visit v;
      v.cost = nextCost;
      v.steps = steps + 1;
      v.parent = k;
      v.step = step;
      visits[next] = v;
      layouts[next] = step.after;
      queue.push({nextCost, steps + 1, next});
    });
  }

  RedistributePlan plan;
  auto it = visits.find(goal);
  if (it == visits.end() || !it->second.done) {
    plan.error = "no plan from " + source.str() + " to " + target.str();
    return plan;
  }
  plan.cost = it->second.cost;
  for (std::vector<int> k = goal; k != start; k = visits[k].parent)
    plan.steps.push_back(visits[k].step);
  std::reverse(plan.steps.begin(), plan.steps.end());
  return plan;
}

RedistributePlan Planner::viaReplicated(const Layout &source,
                                        const Layout &target) {
  using Kind = RedistributeStep::Kind;
  RedistributePlan plan;
  Layout current = source;
  auto add = [&](RedistributeStep step, Placement placement) {
    step.after = current;
    for (int64_t a : step.axes)
      step.after.placements[a] = placement;
    step.cost = stepCost(step, current);
    plan.cost += step.cost;
    current = step.after;
    plan.steps.push_back(step);
  };
  std::map<ReduceKind, std::vector<int64_t>> partial;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    if (current.placements[a].isPartial())
      partial[current.placements[a].reduce].push_back(a);
  for (const auto &[kind, axes] : partial) {
    RedistributeStep step;
    step.kind = Kind::AllReduce;
    step.axes = axes;
    step.reduce = kind;
    add(step, Placement::replicate());
  }
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    std::vector<int64_t> axes = current.shardAxes(d);
    if (axes.empty())
      continue;
    RedistributeStep step;
    step.kind = Kind::AllGather;
    step.axes = axes;
    step.dim = d;
    add(step, Placement::replicate());
  }
  // Axes in mesh order: each new shard is the innermost of its dim.
  for (int64_t a = 0; a < mesh.rank(); ++a) {
    const Placement &p = target.placements[a];
    RedistributeStep step;
    step.axes = {a};
    if (p.isShard()) {
      step.kind = Kind::LocalShard;
      step.dim = p.dim;
      add(step, p);
    } else if (p.isPartial()) {
      step.kind = Kind::LocalPartial;
      step.reduce = p.reduce;
      add(step, p);
    }
  }
  return plan;
}

RedistributePlan planRedistribute(const Mesh &mesh,
                                  const std::vector<int64_t> &globalShape,
                                  int64_t elementBytes, const Layout &source,
                                  const Layout &target,
                                  const RedistributeCostModel &cost) {
  RedistributePlan plan;
  std::string error = mesh.validate();
  int64_t rank = static_cast<int64_t>(globalShape.size());
  if (error.empty() && mesh.rank() > 16)
    error = "meshes of more than 16 axes are not supported";
  if (error.empty())
    for (int64_t s : globalShape)
      if (s < 0)
        error = "negative dim size " + std::to_string(s);
  if (error.empty() && (error = source.validate(mesh, rank)).empty())
    error = target.validate(mesh, rank);
  if (error.empty())
    for (const Layout *l : {&source, &target})
      if (!partialKindsCommute(*l))
        error = "layout " + l->str() +
                " mixes max or min partials with other reductions, whose "
                "order is undefined";
  if (!error.empty()) {
    plan.error = error;
    return plan;
  }
  if (source == target)
    return plan;
  return Planner(mesh, globalShape, elementBytes, cost).run(source, target);
}

} // namespace spmd

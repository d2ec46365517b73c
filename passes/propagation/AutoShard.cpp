//===- AutoShard.cpp - spmd-auto-shard: choose the layouts ----------------===//
//
// Chooses layouts for a global program's free arguments (those without
// `spmd.layout`) and for its activations, minimizing the estimated step
// time under a per-device memory budget, and writes them as annotations
// spmd-propagate then completes and partitioning realizes.
//
// The model (Alpa's, on spmd's factor rules):
//
//  * nodes: every free argument (candidates: R or S(d) per mesh axis) and
//    every op with a sharding rule (candidates: the AxisChoices of
//    PropagateChoice.h: None, Shard(factor), Partial(alternative, kind)).
//    Annotated arguments, user constrains and ops without a rule are fixed;
//    tensor.empty has no contents and takes any layout for free;
//  * node cost: the profile's roofline of the op's flops and bytes
//    (opCounts()) on its local share;
//  * reshard cost: the alpha-beta reshard (CostModel.h) from what the
//    producer makes to what a consumer needs, paid once per value and
//    needed placement however many consumers need it (partitioning makes
//    one constrain for them all), without its latency when bucketing
//    combines it with others of its kind (the reshard of an argument, or
//    of a value only the optimizer reads: one latency per bucket in the
//    estimate); a result marked `spmd.updates = i`
//    (the new value of argument i: a parameter, an optimizer state) must
//    come back in argument i's layout, so that edge ties the two; other
//    results are R unless annotated;
//  * memory: the bytes live at each program point (arguments throughout,
//    other values from definition to last use) at their local sizes.
//
// Mesh axes are solved one at a time, in mesh order: on axis a each node
// picks one candidate, costs use the local sizes the axes before it left,
// and the memory rows assume the axes after it shard every value. The last
// axis is exact: its memory and local sizes are known, and each reshard is
// priced as the whole layout change along the planner's path on the real
// mesh (exact-last-axis). Each axis is one MILP solved by CBC
// (core/Ilp.h): binary candidate variables, edge variables with both
// marginals tied to the two ends' candidates (a tight linearization of the
// product), a variable per value, producer candidate and placement (or
// layout, on the exact axis) several consumers may need
// (bounded below by each consumer's edge variables), and memory rows
// added lazily at the program points the solution overfills. When the solver
// stops without a solution, a deterministic greedy choice (each node, in
// program order, the candidate cheapest against its decided producers)
// stands in. When no assignment fits the budget, the axes are solved again
// for the smallest peak, and the error names that peak. On a mesh of
// several axes, the plan is improved by coordinate descent (each axis
// solved again with the others kept, descend()), the mesh taken as one axis
// of all its devices and the axes in reverse order are solved as well
// (otherStarts()), and the lowest estimate kept, within `search-time`.
//
// Repeated layers: nodes whose Weisfeiler-Lehman colors agree after
// `tie-rounds` refinements (the same op of every layer away from the
// model's ends) share one block of variables, and edges between the same
// two blocks share one block of edge variables.
//
//===----------------------------------------------------------------------===//

#include "passes/propagation/Passes.h"
#include "passes/propagation/PropagateChoice.h"
#include "rules/ShardingRuleOpInterface.h"

#include "core/Ilp.h"
#include "core/RedistributePlanner.h"
#include "dialects/spmd/SPMDOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>

namespace spmd {
#define GEN_PASS_DEF_SPMDAUTOSHARD
#include "passes/propagation/Passes.h.inc"
} // namespace spmd

using namespace mlir;
using ::spmd::CommCostParams;
using ::spmd::DeviceProfile;
using ::spmd::IlpModel;
using ::spmd::Layout;
using ::spmd::LayoutAttr;
using ::spmd::Mesh;
using ::spmd::Placement;
using ::spmd::ShardingRule;
using namespace ::spmd::propagation;

namespace {

constexpr double kInf = 1e30;
/// Objective unit: microseconds (CBC's tolerances suit numbers near 1).
constexpr double kScale = 1e6;
/// A fraction of the estimate below the model's error: a solve that could
/// gain no more is skipped.
constexpr double kNegligible = 1e-3;
/// At most this many axes solved again by descend() (each one MILP).
constexpr int kDescentSteps = 4;
/// Rounds of descent from a refined plan (run()).
constexpr int kRefineRounds = 3;

/// Costs a reshard's bytes sent per rank instead of its time.
const CommCostParams &bytesOnly() {
  static const CommCostParams params = [] {
    CommCostParams p;
    p.alpha = 0;
    p.beta = 1;
    return p;
  }();
  return params;
}

/// Parses "64MiB", "1.5GB", "4096" into bytes; nullopt if malformed.
std::optional<double> parseBytes(StringRef text) {
  text = text.trim();
  if (text.empty())
    return 0.0;
  size_t i = 0;
  while (i < text.size() && (isdigit(text[i]) || text[i] == '.'))
    ++i;
  double value;
  if (text.take_front(i).getAsDouble(value))
    return std::nullopt;
  std::string u = text.drop_front(i).trim().lower();
  double scale = 1;
  if (u == "" || u == "b")
    scale = 1;
  else if (u == "kb")
    scale = 1e3;
  else if (u == "mb")
    scale = 1e6;
  else if (u == "gb")
    scale = 1e9;
  else if (u == "kib" || u == "k")
    scale = 1024.0;
  else if (u == "mib" || u == "m")
    scale = 1024.0 * 1024;
  else if (u == "gib" || u == "g")
    scale = 1024.0 * 1024 * 1024;
  else
    return std::nullopt;
  return value * scale;
}

std::string formatBytes(double bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes >= 1024.0 * 1024 * 1024)
    os << llvm::format("%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024)
    os << llvm::format("%.2f MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024.0)
    os << llvm::format("%.1f KiB", bytes / 1024.0);
  else
    os << llvm::format("%.0f B", bytes);
  return s;
}

unsigned elementBytes(Type type) {
  return ::spmd::elementBytes(cast<RankedTensorType>(type).getElementType())
      .value_or(8);
}

/// One candidate of a node on the current axis.
struct Cand {
  AxisChoice choice;                      // op nodes
  Placement arg = Placement::replicate(); // argument nodes
};

/// A tensor value the model tracks: its producer node and slot.
struct ValueInfo {
  int node = -1;  // -1: no node (tensor.empty: free, no bytes)
  int result = 0; // result number, for op nodes
  Type type;
  /// Largest local shape after the decided axes.
  SmallVector<int64_t> local;
  int def = 0, lastUse = 0; // program points
};

struct Node {
  Operation *op = nullptr; // null: an argument
  int arg = -1;
  std::optional<ShardingRule> rule;
  /// A fixed layout (annotated argument, user constrain, op without rule).
  std::optional<Layout> fixed;
  /// Placements of a pinned op's results (a user's spmd.layout attribute).
  SmallVector<std::optional<Layout>> pinned;
  /// Its flops and bytes, unpartitioned (a share is costed by nodeCost()).
  OpCounts work;
  /// Per factor: local size after the decided axes.
  SmallVector<int64_t> factorLocal;
  /// Decided per axis.
  SmallVector<Cand> decided;
  // Current axis.
  SmallVector<Cand> cands;
  int var = -1; // first x variable, if cands.size() > 1
  int chosen = 0;
  /// Nodes of one class (same structure `tie-rounds` ops around them: the
  /// same op of every middle layer) share their variables.
  int cls = -1;
};

/// What a consumer needs of a value on the current axis.
struct Edge {
  int value;    // index into values
  int consumer; // node, or -1 (a fixed requirement)
  /// The consumer's operand slot; with no consumer, -2 - i for function
  /// result i's annotation, else (-1) R.
  int slot = -1;
  bool toArg = false; // consumer is an argument node (a tied result)
  /// The greedy fallback's approximation of the one reshard per value and
  /// layout the solver counts exactly: a value read by n ops charges each
  /// edge 1/n of its reshard.
  double share = 1;
};

class AutoSharder {
public:
  AutoSharder(func::FuncOp fn, FlatSymbolRefAttr meshRef, Mesh mesh,
              const DeviceProfile &profile, double budget, double timeLimit,
              double commSlack, double searchTime, bool pinActivations,
              int tieRounds, bool exactLast)
      : fn(fn), meshRef(meshRef), mesh(std::move(mesh)), profile(profile),
        budget(budget), timeLimit(timeLimit), commSlack(commSlack),
        searchTime(searchTime), pinActivations(pinActivations),
        tieRounds(tieRounds), exactLast(exactLast) {}

  LogicalResult run(llvm::raw_ostream *report);

private:
  LogicalResult build();
  void candidates(int axis);
  Placement placementOf(const Node &n, unsigned slot, const Cand &c,
                        int axis) const;
  Placement producedOn(int value, const Cand &c, int axis) const;
  double valueBytes(int value) const;
  /// The part of `n`'s work one rank does after axis `axis` takes `c`.
  double nodeShare(const Node &n, const Cand &c, int axis) const;
  /// Seconds of that part (the profile's roofline: a share small enough to
  /// stay in cache costs less than its size says).
  double nodeCost(const Node &n, const Cand &c, int axis) const;
  /// What the consumer of `e` needs of its value on `axis` when it takes
  /// candidate `to`.
  Placement needOf(const Edge &e, const Cand &to, int axis) const;
  double edgeCost(const Edge &e, const Cand &from, const Cand &to, int axis,
                  const CommCostParams &comm) const;
  /// Adds the reshard costs of axis `axis` to the objective (solveAxis).
  /// `bucketLatency`: bucketed reshards pay their latency each (else none).
  /// `comm`, if given, gets the same costs per variable, every reshard
  /// paying its latency, and `sent` the bytes they send as seconds at the
  /// profile's bandwidth: the objectives refine() weights.
  void addReshardCosts(IlpModel &ilp, int axis, bool bucketLatency,
                       std::vector<double> *comm = nullptr,
                       std::vector<double> *sent = nullptr);
  /// The reshards the chosen candidates make on `axis` (time under
  /// `comm`): one per value and needed placement, at the value's size after
  /// the axes before `axis`.
  /// `buckets`, if given, gets the number of buckets its bucketed reshards
  /// join; `refills`, if given, the time of the fills made again instead
  /// (refillTime()), which are not communication.
  double chosenReshardCost(int axis, const CommCostParams &comm,
                           int *buckets = nullptr,
                           double *refills = nullptr) const;
  /// A bucket of collectives: axes (a bit mask), kind, element type.
  using BucketKey = std::tuple<unsigned, int, const void *>;
  /// Time under `comm` of the partitioner's collectives (the redistribute
  /// planner's path) that change `value` from `have` to `need`; the
  /// buckets of those that bucketing combines go to `bucketed`.
  double pathCost(int value, const Layout &have, const Layout &need,
                  const CommCostParams &comm,
                  SmallVectorImpl<BucketKey> &bucketed) const;
  /// The decided plan's reshards, one per value and layout needed, each
  /// along its path: what partitioning makes of it.
  /// `refills`, if given, gets the time of the fills made again instead of
  /// resharded (refillTime()).
  /// A node without a decision on the last axis yet counts its chosen
  /// candidate there (the axis being solved, exactAxis()).
  double decidedReshardCost(const CommCostParams &comm,
                            double *refills = nullptr) const;
  /// Is `axis` priced in full (exact-last-axis): the last of several, every
  /// other axis decided, so each reshard's cost is its whole layout change
  /// along the planner's path, as the estimate prices it, not the sum of
  /// per-axis changes at the sizes the axes before it left.
  bool exactAxis(int axis) const {
    return exactLast && exactNow && axis > 0 && axis + 1 == mesh.rank();
  }
  /// Cleared while another start solves (otherStarts()): its model is
  /// harder to solve priced in full (the 4-layer GPT's reverse-order start
  /// on 2x4: 21 s against 3 s), and descent from it prices in full.
  bool exactNow = true;
  /// While a start solves on the mesh's axes reordered (tryStart(),
  /// refineKept()): the real mesh, and per axis solved, its real axis.
  /// Whole layouts are priced on the real mesh, where the plan is laid
  /// out: a dimension split on two axes nests in mesh order, so the same
  /// placements move other chunks (and the planner takes other paths) on
  /// the reordered mesh.
  Mesh realMesh;
  SmallVector<int> toReal;
  const Mesh &pricing() const { return toReal.empty() ? mesh : realMesh; }
  Layout inRealOrder(Layout l) const {
    if (toReal.empty())
      return l;
    Layout out = l;
    for (auto [a, p] : llvm::enumerate(l.placements))
      out.placements[toReal[a]] = p;
    return out;
  }
  /// Prices on `real` while solving on its axes reordered by `fromAxis`
  /// (the solve axis of each real axis); nothing if the ranks differ.
  void priceOn(const Mesh &real, ArrayRef<int> fromAxis) {
    toReal.clear();
    if (int(fromAxis.size()) != mesh.rank() || real.rank() != mesh.rank())
      return;
    realMesh = real;
    toReal.assign(fromAxis.size(), 0);
    for (auto [r, a] : llvm::enumerate(fromAxis))
      toReal[a] = r;
  }
  /// The reshard time of the candidates chosen on `axis` under `comm`
  /// (bytesOnly(): the bytes per rank they send), as the estimate counts
  /// it where exactAxis().
  double chosenComm(int axis, const CommCostParams &comm) const;
  /// Does communication of `bytes` and `seconds` take less than `than`'s:
  /// fewer bytes, or as many in less time?
  static bool lessComm(double bytes, double seconds,
                       std::pair<double, double> than) {
    return bytes < than.first * (1 - 1e-6) ||
           (bytes <= than.first * (1 + 1e-6) &&
            seconds < than.second * (1 - 1e-6));
  }
  /// A fill of an empty tensor is not resharded: spmd-propagate fills
  /// another empty in the placement a user needs. The time of that fill on
  /// axis `axis` (the other axes as decided), or -1 where it cannot (a
  /// partial kind the fill's rule does not make, or not such a fill).
  double refillTime(int value, const Placement &need, int axis) const;
  /// The time of `value`'s fill (its node's work) at the local shape
  /// `local`.
  double fillTime(int value, ArrayRef<int64_t> local) const;
  /// Can spmd-propagate fill an empty in `need` for fill `value` (its
  /// rule makes every partial kind in it)?
  bool refillable(const Layout &need, int value) const;
  /// Bytes of `value` split by every decided axis but `axis`.
  double bytesBesides(int value, int axis) const;
  double edgeCost(const Edge &e, const Cand &from, const Cand &to,
                  int axis) const {
    return edgeCost(e, from, to, axis, profile.comm);
  }
  double memBytes(int value, const Cand &c, int axis, double later) const;
  /// Solves axis `axis`; `minPeak`: minimize the peak instead of time.
  bool solveAxis(int axis, bool minPeak, double &peakOut);
  /// A solved model of one axis, kept for refine().
  struct Solved {
    IlpModel ilp;
    IlpModel::Result result;        // empty: the greedy fallback chose
    std::vector<double> comm, sent; // see addReshardCosts()
    SmallVector<int> chosen;
    double peak = 0;
    double seconds = 0;       // in the solver
    double refineSeconds = 0; // refine()'s budget
    SmallVector<int> vars;    // per node, its first variable (Node::var)
    bool exact = false;       // priced in full (exactAxis())
  };
  /// One solve of axis `axis`; `bucketLatency`: bucketed reshards pay their
  /// latency each (else none).
  bool solveAxisOnce(int axis, bool minPeak, bool bucketLatency, Solved &out);
  /// A plan within `commSlack` of `s`'s estimate that communicates less,
  /// if one is found within `seconds` (n.chosen).
  void refine(int axis, Solved &s, double seconds, double &peakOut);
  /// The estimated time of the candidates chosen on `axis`: their compute
  /// and their reshards, one latency per bucket (`buckets`, if given,
  /// gets their number).
  double chosenAxisCost(int axis, int *buckets = nullptr) const;
  void greedy(int axis);
  void commit(int axis);
  void reset();
  void computeClasses(int rounds);
  void computeBucketable();
  /// Other starts on a mesh of several axes, each kept if its estimate is
  /// lower than the plan so far: the mesh flattened to one axis (every 1-D
  /// plan over all devices: TP, DP, FSDP) laid out on every axis alike, and
  /// the axes solved in reverse order (the inner axis first, as a hand plan
  /// picks TP within a node before DP or FSDP across nodes).
  /// Returns whether one was kept (its axes not priced in full: descent
  /// from it re-solves each).
  bool otherStarts();
  /// False once the search's time is spent (its steps begin no later than
  /// `search-time` seconds after the pass began); noted once.
  bool searchTimeLeft();
  /// Can the plan be solved on a permuted or flattened mesh?
  bool permutable() const;
  /// One of them: solve on `solveMesh`, then lay its choice on the real
  /// mesh's axis a from the solved axis `fromAxis[a]`. A solved axis s with
  /// `keep[s] >= 0` is not solved: it takes the plan's choice on real axis
  /// `keep[s]`. Returns whether the plan was replaced.
  bool tryStart(const Mesh &solveMesh, ArrayRef<int> fromAxis, StringRef what,
                ArrayRef<int> keep = {});
  /// The plan's state, to go back to when a start is not kept.
  struct Snapshot {
    SmallVector<SmallVector<Cand>> decided;
    SmallVector<SmallVector<int64_t>> factors, local;
    double comm, compute, bytes, memoryBound;
    SmallVector<std::string> notes;
    std::string solverNote;
  };
  Snapshot save() const;
  void restore(const Snapshot &s);
  /// Chooses on `axis` (after candidates()) each node's candidate equal to
  /// `plan[node][from]`; false where a node has no such candidate.
  bool pick(int axis, ArrayRef<SmallVector<Cand>> plan, int from);
  /// Lays the plan decided on the current (solve) mesh onto `real`, real
  /// axis a taking solved axis `fromAxis[a]`'s choice, and estimates it.
  bool layOut(const Mesh &real, ArrayRef<int> fromAxis);
  /// Is the estimated peak within the budget?
  bool fits() const;
  /// refine() of the plan kept, on the model its last axis was solved in
  /// (`pending`): during the search plans compare by their estimates, and
  /// refining each start would cost a solve each. Returns whether the
  /// refined plan replaced it.
  bool refineKept();
  struct Pending {
    Mesh mesh;
    SmallVector<int> fromAxis;
    SmallVector<SmallVector<Cand>> decided;
    Solved solved;
  };
  /// While set, solveAxis() keeps the last axis's model in `lastSolved`
  /// instead of refining it.
  bool deferRefine = false;
  /// The search's steps begin before this (searchTimeLeft()).
  std::chrono::steady_clock::time_point searchDeadline;
  bool searchStopped = false;
  std::optional<Solved> lastSolved;
  std::optional<Pending> pending;
  /// Coordinate descent from the plan kept: each axis solved again with
  /// every other axis as the plan has it (the axis solved last is exact,
  /// its memory and local sizes known), kept while the estimate falls.
  /// `exact`: the axis the plan's last solve already chose that way, or -1.
  /// Returns whether a step was kept.
  bool descend(int exact);
  /// The bucket a reshard of `value` from `have` to `need` joins: a key
  /// of its collective and element type, or nullopt when it pays its own
  /// latency.
  std::optional<std::pair<int, const void *>>
  bucketOf(int value, const Placement &have, const Placement &need) const;
  Layout finalLayout(int value) const;
  /// The most bytes live at one program point, `bytesOf(value)` each;
  /// `where` gets the point.
  double livePeak(llvm::function_ref<double(int)> bytesOf,
                  int *where = nullptr) const;
  /// livePeak() of `axis`'s plan `chosen` (a candidate per node), each
  /// value's bytes as split by the axes up to `axis`.
  double planPeak(int axis, ArrayRef<int> chosen, int *where = nullptr) const;
  /// The devices the axes after `axis` split over (memory rows assume
  /// they shard everything).
  double laterDevices(int axis) const {
    double later = 1;
    for (int b = axis + 1; b < mesh.rank(); ++b)
      later *= double(mesh.axisSizes[b]);
    return later;
  }
  double estimatedPeak() const;
  void write();
  void writeReport(llvm::raw_ostream &os, double solveSeconds);

  mutable func::FuncOp fn;
  FlatSymbolRefAttr meshRef;
  Mesh mesh;
  const DeviceProfile &profile;
  double budget, timeLimit, commSlack, searchTime;
  bool pinActivations;
  int tieRounds = 6;
  bool exactLast = true;
  /// Model sizes and the MILPs solved, for the report.
  int maxVars = 0, maxRows = 0, numClasses = 0, numSolves = 0;

  std::vector<Node> nodes;
  std::vector<ValueInfo> values;
  DenseMap<Value, int> valueIndex;
  ::spmd::ShardingRuleCache ruleCache;
  std::vector<Edge> edges;
  /// Edges by value.
  std::vector<SmallVector<int>> edgesOfValue;
  /// Per value: its reshards can wait for others of their kind, so that
  /// bucketing combines them (computeBucketable()).
  std::vector<bool> bucketable;
  /// Per value: a fill of an empty tensor (refillable()).
  std::vector<bool> refill;
  /// Per function result: the argument it updates, or -1.
  SmallVector<int> updates;
  int numPoints = 0;
  /// Edges by consumer node (greedy()).
  DenseMap<int, SmallVector<int>> edgesInto;
  /// Local sizes before any axis is decided (reset()).
  SmallVector<SmallVector<int64_t>> initialLocal, initialFactors;
  std::string solverNote;
  /// Per axis the refinement changed: the estimates before and after.
  SmallVector<std::string> refineNotes;
  /// Per other start and descent step (otherStarts(), descend()): its
  /// estimate and whether it was kept.
  SmallVector<std::string> searchNotes;
  double commSeconds = 0, computeSeconds = 0, commBytes = 0;
  /// The part of computeSeconds in memory-bound ops (elementwise, norms,
  /// reductions): the runtime's fused kernels, against its GEMMs.
  double memoryBoundSeconds = 0;
  /// The partitioner's path per shape and layout change.
  mutable std::map<std::string, ::spmd::RedistributePlan> planCache;
};

LogicalResult AutoSharder::build() {
  Block &body = fn.getBody().front();
  StringRef layoutName = ::spmd::SPMDDialect::kLayoutAttrName;
  auto addValue = [&](Value v, int node, int result, int point) {
    if (!isa<RankedTensorType>(v.getType()))
      return;
    ValueInfo info;
    info.node = node;
    info.result = result;
    info.type = v.getType();
    auto type = cast<RankedTensorType>(v.getType());
    for (int64_t d : type.getShape())
      info.local.push_back(ShapedType::isDynamic(d) ? 1024 : d);
    info.def = info.lastUse = point;
    valueIndex[v] = values.size();
    values.push_back(std::move(info));
  };

  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      continue;
    Node n;
    n.arg = arg.getArgNumber();
    if (auto l = fn.getArgAttrOfType<LayoutAttr>(n.arg, layoutName))
      n.fixed = l.toLayout();
    nodes.push_back(std::move(n));
    addValue(arg, nodes.size() - 1, 0, 0);
  }
  int point = 0;
  for (Operation &op : body) {
    ++point;
    for (Value v : op.getOperands()) {
      auto it = valueIndex.find(v);
      if (it != valueIndex.end())
        values[it->second].lastUse = point;
    }
    if (isa<func::ReturnOp>(op) || op.getNumResults() == 0)
      continue;
    if (isa<tensor::EmptyOp>(op)) {
      for (Value r : op.getResults())
        addValue(r, -1, 0, point);
      continue;
    }
    if (!llvm::all_of(op.getResultTypes(),
                      [](Type t) { return isa<RankedTensorType>(t); })) {
      if (llvm::any_of(op.getResultTypes(),
                       [](Type t) { return isa<RankedTensorType>(t); }))
        return op.emitOpError("spmd-auto-shard: results mixing tensors and "
                              "other values are not supported");
      continue;
    }
    Node n;
    n.op = &op;
    if (auto c = dyn_cast<::spmd::ConstrainOp>(op)) {
      if (c.getLayout().getMesh() != meshRef)
        return op.emitOpError("spmd-auto-shard: layout on mesh ")
               << c.getLayout().getMesh() << ", the function's is " << meshRef;
      n.fixed = c.getLayout().toLayout();
    } else {
      if (const ShardingRule *rule = ruleCache.lookup(&op))
        n.rule = *rule;
      if (!n.rule)
        n.fixed = Layout::replicated(mesh.rank());
    }
    if (n.rule) {
      if (std::optional<OpCounts> c = opCounts(&op)) {
        n.work = *c;
      } else if (OpTrait::hasElementwiseMappableTraits(&op)) {
        // Elementwise arith/math ops on whole tensors: one op per element.
        auto type = cast<RankedTensorType>(op.getResult(0).getType());
        n.work.flops = 1;
        for (int64_t d : type.getShape())
          n.work.flops *= ShapedType::isDynamic(d) ? 1024.0 : double(d);
        for (Type t :
             llvm::concat<Type>(op.getOperandTypes(), op.getResultTypes()))
          if (isa<RankedTensorType>(t))
            n.work.bytes += n.work.flops * elementBytes(t);
        n.work.bits = 8 * elementBytes(type);
      }
      for (const auto &f : n.rule->factors)
        n.factorLocal.push_back(f.size);
      n.pinned.resize(op.getNumResults());
      Attribute a = op.getAttr(layoutName);
      if (auto l = dyn_cast_or_null<LayoutAttr>(a))
        n.pinned[0] = l.toLayout();
      else if (auto array = dyn_cast_or_null<ArrayAttr>(a))
        for (auto [i, e] : llvm::enumerate(array))
          if (auto l = dyn_cast<LayoutAttr>(e); l && i < n.pinned.size())
            n.pinned[i] = l.toLayout();
    }
    nodes.push_back(std::move(n));
    for (OpResult r : op.getResults())
      addValue(r, nodes.size() - 1, r.getResultNumber(), point);
  }
  numPoints = point + 1;

  // Args stay live throughout.
  for (ValueInfo &v : values)
    if (v.node >= 0 && !nodes[v.node].op)
      v.lastUse = numPoints;

  // Edges.
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    if (!n.op)
      continue;
    if (auto c = dyn_cast<::spmd::ConstrainOp>(n.op)) {
      Edge e;
      e.value = valueIndex.lookup(c.getInput());
      e.consumer = ni; // fixed: the need is its layout
      e.slot = 0;
      edges.push_back(e);
      continue;
    }
    if (!n.rule)
      continue; // operands constrained to R; counted as fixed needs below
    for (auto [i, v] : llvm::enumerate(n.op->getOperands())) {
      auto it = valueIndex.find(v);
      if (it == valueIndex.end() || values[it->second].node < 0)
        continue;
      Edge e;
      e.value = it->second;
      e.consumer = ni;
      e.slot = i;
      edges.push_back(e);
    }
  }
  for (auto [ni, n] : llvm::enumerate(nodes))
    if (n.op && !n.rule && !isa<::spmd::ConstrainOp>(n.op))
      for (Value v : n.op->getOperands()) {
        auto it = valueIndex.find(v);
        if (it == valueIndex.end() || values[it->second].node < 0)
          continue;
        Edge e;
        e.value = it->second;
        e.consumer = -1;
        edges.push_back(e);
      }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  updates.assign(fn.getNumResults(), -1);
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto it = valueIndex.find(v);
    if (auto u = fn.getResultAttrOfType<IntegerAttr>(i, "spmd.updates")) {
      int64_t a = u.getInt();
      if (a < 0 || a >= fn.getNumArguments() ||
          fn.getArgument(a).getType() != v.getType())
        return fn.emitOpError("spmd-auto-shard: result ")
               << i << " updates argument " << a
               << ", which does not exist or has another type";
      updates[i] = a;
    }
    if (it == valueIndex.end() || values[it->second].node < 0)
      continue;
    Edge e;
    e.value = it->second;
    if (auto l = fn.getResultAttrOfType<LayoutAttr>(i, layoutName)) {
      e.consumer = -1;
      e.slot = -2 - int(i); // need: the annotation
    } else if (updates[i] >= 0) {
      int argValue = valueIndex.lookup(fn.getArgument(updates[i]));
      e.consumer = values[argValue].node;
      e.toArg = true;
    } else {
      e.consumer = -1; // R
    }
    edges.push_back(e);
  }
  return success();
}

Placement AutoSharder::placementOf(const Node &n, unsigned slot, const Cand &c,
                                   int axis) const {
  if (!n.op)
    return n.fixed ? n.fixed->placements[axis] : c.arg;
  if (n.fixed)
    return n.fixed->placements[axis];
  return required(*n.rule, slot, c.choice);
}

Placement AutoSharder::producedOn(int value, const Cand &c, int axis) const {
  const ValueInfo &v = values[value];
  const Node &n = nodes[v.node];
  if (!n.op)
    return placementOf(n, 0, c, axis);
  unsigned slot = n.rule ? n.rule->numOperands + v.result : 0;
  return placementOf(n, slot, c, axis);
}

static double shapeBytes(Type type, ArrayRef<int64_t> shape) {
  double n = elementBytes(type);
  for (int64_t d : shape)
    n *= double(d);
  return n;
}

double AutoSharder::valueBytes(int value) const {
  return shapeBytes(values[value].type, values[value].local);
}

void AutoSharder::candidates(int axis) {
  int64_t k = mesh.axisSizes[axis];
  for (Node &n : nodes) {
    n.cands.clear();
    n.var = -1;
    n.chosen = 0;
    if (n.fixed || k == 1) {
      n.cands.push_back(Cand{});
      continue;
    }
    if (!n.op) {
      n.cands.push_back(Cand{});
      const ValueInfo &v =
          values[valueIndex.lookup(fn.getBody().front().getArgument(n.arg))];
      for (auto [d, size] : llvm::enumerate(v.local))
        if (size >= k && !ShapedType::isDynamic(
                             cast<RankedTensorType>(v.type).getDimSize(d)))
          n.cands.push_back(Cand{{}, Placement::shard(d)});
      continue;
    }
    const ShardingRule &rule = *n.rule;
    auto pinnedOk = [&](const AxisChoice &c) {
      for (auto [r, p] : llvm::enumerate(n.pinned))
        if (p && required(rule, rule.numOperands + r, c) != p->placements[axis])
          return false;
      return true;
    };
    SmallVector<AxisChoice> all;
    all.push_back(AxisChoice{});
    for (auto [f, factor] : llvm::enumerate(rule.factors)) {
      if (factor.kind == ::spmd::Factor::Kind::NeedReplication ||
          factor.size < 0 || n.factorLocal[f] < k)
        continue;
      if (factor.kind == ::spmd::Factor::Kind::Reduction &&
          llvm::any_of(rule.resultCombiner,
                       [](const auto &c) { return !c.has_value(); }))
        continue;
      SmallVector<int64_t> axes;
      for (int b = 0; b < axis; ++b)
        if (n.decided[b].choice.kind == AxisChoice::Kind::Shard &&
            n.decided[b].choice.factor == int(f))
          axes.push_back(b);
      axes.push_back(axis);
      if (!rule.splitOk(f, mesh, axes))
        continue;
      AxisChoice c;
      c.kind = AxisChoice::Kind::Shard;
      c.factor = f;
      all.push_back(c);
    }
    // One kind per alternative: sum where allowed (what contractions
    // make), else the first.
    for (auto [a, alt] : llvm::enumerate(rule.alts)) {
      if (alt.kinds.empty())
        continue;
      AxisChoice c;
      c.kind = AxisChoice::Kind::Partial;
      c.alt = a;
      c.reduce = llvm::is_contained(alt.kinds, ::spmd::ReduceKind::Sum)
                     ? ::spmd::ReduceKind::Sum
                     : alt.kinds.front();
      all.push_back(c);
    }
    for (const AxisChoice &c : all)
      if (pinnedOk(c))
        n.cands.push_back(Cand{c, {}});
    if (n.cands.empty())
      n.cands.push_back(Cand{}); // the annotation's need is charged on edges
  }
}

double AutoSharder::nodeShare(const Node &n, const Cand &c, int axis) const {
  double w = 1;
  for (auto [f, local] : llvm::enumerate(n.factorLocal))
    if (n.rule->factors[f].size > 0)
      w *= double(local) / double(n.rule->factors[f].size);
  if (c.choice.kind == AxisChoice::Kind::Shard) {
    int64_t local = n.factorLocal[c.choice.factor];
    w *= double(::spmd::chunkCapacity(local, mesh.axisSizes[axis])) /
         double(std::max<int64_t>(1, local));
  }
  return w;
}

double AutoSharder::nodeCost(const Node &n, const Cand &c, int axis) const {
  if (!n.op || !n.rule)
    return 0;
  double w = nodeShare(n, c, axis);
  return profile.computeTime(n.work.flops * w, n.work.bytes * w, n.work.bits);
}

Placement AutoSharder::needOf(const Edge &e, const Cand &to, int axis) const {
  if (e.consumer >= 0) {
    const Node &c = nodes[e.consumer];
    return e.toArg ? placementOf(c, 0, to, axis)
                   : placementOf(c, e.slot, to, axis);
  }
  if (e.slot <= -2)
    return fn
        .getResultAttrOfType<LayoutAttr>(-2 - e.slot,
                                         ::spmd::SPMDDialect::kLayoutAttrName)
        .toLayout()
        .placements[axis];
  return Placement::replicate();
}

double AutoSharder::edgeCost(const Edge &e, const Cand &from, const Cand &to,
                             int axis, const CommCostParams &comm) const {
  Placement have = producedOn(e.value, from, axis);
  Placement need = needOf(e, to, axis);
  if (have == need)
    return 0;
  if (double t = refillTime(e.value, need, axis); t >= 0)
    return e.share * t;
  return e.share * ::spmd::axisReshardCost(have, need, mesh.axisSizes[axis],
                                           valueBytes(e.value), comm, axis);
}

/// A placement as a small integer (map keys).
static int64_t placementKey(const Placement &p) {
  if (p.isShard())
    return 16 + p.dim;
  if (p.isPartial())
    return 1 + int64_t(p.reduce);
  return 0;
}

void AutoSharder::computeBucketable() {
  // The optimizer: ops without a reduction whose results go only to other
  // optimizer ops and to results that update an argument. A value read only
  // there (a weight's gradient) is resharded whenever convenient, as is an
  // argument (a stored parameter): spmd-bucket-collectives combines such
  // collectives, so one latency covers all of a kind. Activations' reshards
  // sit on the critical path, one after another, and pay their own.
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<Operation *, int> nodeOf;
  for (auto [ni, n] : llvm::enumerate(nodes))
    if (n.op)
      nodeOf[n.op] = ni;
  std::vector<bool> optimizer(nodes.size(), false);
  auto usersOk = [&](Value v) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == ret) {
        if (updates[use.getOperandNumber()] < 0)
          return false;
        continue;
      }
      auto it = nodeOf.find(user);
      if (it == nodeOf.end() || !optimizer[it->second])
        return false;
    }
    return true;
  };
  for (int ni = int(nodes.size()) - 1; ni >= 0; --ni) {
    const Node &n = nodes[ni];
    // A constrain only names a layout (spmd-propagate puts one between a
    // gradient and its update): it is part of the optimizer if its result
    // is, else a gradient's reduction would pay a latency it does not.
    bool constrain = n.op && isa<::spmd::ConstrainOp>(n.op);
    if (!n.op || (!n.rule && !constrain) ||
        (n.rule && llvm::any_of(n.rule->factors, [](const auto &f) {
           return f.kind == ::spmd::Factor::Kind::Reduction;
         })))
      continue;
    optimizer[ni] = llvm::all_of(n.op->getResults(), usersOk);
  }
  bucketable.assign(values.size(), false);
  for (auto [vi, v] : llvm::enumerate(values)) {
    if (v.node < 0)
      continue;
    if (!nodes[v.node].op) {
      bucketable[vi] = true;
      continue;
    }
    Value value = nodes[v.node].op->getResult(v.result);
    bucketable[vi] = !value.use_empty() && usersOk(value);
  }
}

/// Which collectives bucketing combines: a number per kind and reduction
/// (all_gather 0, reduce_scatter 1 + reduction, all_reduce 8 + reduction),
/// or -1 (all_to_alls are not bucketed).
static int bucketKind(::spmd::CollectiveKind kind, ::spmd::ReduceKind reduce) {
  switch (kind) {
  case ::spmd::CollectiveKind::AllGather:
    return 0;
  case ::spmd::CollectiveKind::ReduceScatter:
    return 1 + int(reduce);
  case ::spmd::CollectiveKind::AllReduce:
    return 8 + int(reduce);
  case ::spmd::CollectiveKind::AllToAll:
    return -1;
  }
  return -1;
}

std::optional<std::pair<int, const void *>>
AutoSharder::bucketOf(int value, const Placement &have,
                      const Placement &need) const {
  if (!bucketable[value] || have == need || have.isReplicate())
    return std::nullopt;
  using ::spmd::CollectiveKind;
  CollectiveKind collective = have.isShard()
                                  ? (need.isShard() ? CollectiveKind::AllToAll
                                                    : CollectiveKind::AllGather)
                              : need.isShard() ? CollectiveKind::ReduceScatter
                                               : CollectiveKind::AllReduce;
  int kind = bucketKind(collective, have.reduce);
  if (kind < 0)
    return std::nullopt;
  Type element = cast<RankedTensorType>(values[value].type).getElementType();
  return std::make_pair(kind, element.getAsOpaquePointer());
}

double AutoSharder::bytesBesides(int value, int axis) const {
  const ValueInfo &v = values[value];
  SmallVector<int64_t> shape(initialLocal[value]);
  for (auto [b, cand] : llvm::enumerate(nodes[v.node].decided)) {
    Placement p = producedOn(value, cand, b);
    if (int(b) != axis && p.isShard())
      shape[p.dim] = ::spmd::chunkCapacity(shape[p.dim], mesh.axisSizes[b]);
  }
  return shapeBytes(v.type, shape);
}

double AutoSharder::pathCost(int value, const Layout &have, const Layout &need,
                             const CommCostParams &comm,
                             SmallVectorImpl<BucketKey> &bucketed) const {
  const Mesh &mesh = pricing();
  auto type = cast<RankedTensorType>(values[value].type);
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  int64_t elem = ::spmd::elementBytes(type.getElementType()).value_or(8);
  const ::spmd::RedistributePlan *plan = nullptr;
  if (type.hasStaticShape()) {
    // Keyed by the mesh too: a start solves on the axes reordered.
    std::string key = have.str() + need.str() + std::to_string(elem);
    for (int64_t n : shape)
      key += "x" + std::to_string(n);
    for (int64_t n : mesh.axisSizes)
      key += "m" + std::to_string(n);
    auto [it, inserted] = planCache.try_emplace(key);
    if (inserted)
      it->second = ::spmd::planRedistribute(mesh, shape, elem, have, need);
    plan = &it->second;
  }
  if (!plan || !plan->ok()) {
    // No path (a dynamic shape): the sum of the axes' changes.
    double total = 0;
    for (int a = 0; a < mesh.rank(); ++a)
      total += ::spmd::axisReshardCost(have.placements[a], need.placements[a],
                                       mesh.axisSizes[a],
                                       bytesBesides(value, a), comm, a);
    return total;
  }
  double total = 0;
  const Layout *before = &have;
  for (const ::spmd::RedistributeStep &step : plan->steps) {
    const Layout &from = *before;
    before = &step.after;
    if (!step.isCollective())
      continue;
    double input = double(elem);
    for (int64_t n : ::spmd::maxLocalShape(mesh, from, shape))
      input *= double(n);
    int64_t k = 1;
    unsigned mask = 0;
    for (int64_t a : step.axes) {
      k *= mesh.axisSizes[a];
      mask |= 1u << a;
    }
    using StepKind = ::spmd::RedistributeStep::Kind;
    using ::spmd::CollectiveKind;
    CollectiveKind kind =
        step.kind == StepKind::AllGather       ? CollectiveKind::AllGather
        : step.kind == StepKind::ReduceScatter ? CollectiveKind::ReduceScatter
        : step.kind == StepKind::AllReduce     ? CollectiveKind::AllReduce
                                               : CollectiveKind::AllToAll;
    int bucket = bucketKind(kind, step.reduce);
    total += ::spmd::collectiveTime(kind, k, input, comm.alpha,
                                    comm.betaOf(step.axes));
    if (bucket >= 0 && bucketable[value])
      bucketed.push_back(
          {mask, bucket, type.getElementType().getAsOpaquePointer()});
  }
  return total;
}

double AutoSharder::decidedReshardCost(const CommCostParams &comm,
                                       double *refills) const {
  // What spmd-propagate and spmd-partition make of the plan: one reshard
  // per value and layout needed (all axes: two consumers that need the
  // same placement on one axis and different ones on another each pay the
  // first axis's change, which per-axis sums count once), each from the
  // closest copy already made (as spmd-propagate picks it, under the
  // partition pipeline's default `h100` profile), along the redistribute
  // planner's path (pathCost()).
  static const Cand none{};
  static const CommCostParams pick = ::spmd::deviceProfile("h100")->comm;
  int rank = mesh.rank();
  auto on = [](const Node &n, int a) -> const Cand & {
    return a < int(n.decided.size()) ? n.decided[a] : n.cands[n.chosen];
  };
  const Mesh &mesh = pricing();
  double total = 0;
  std::set<BucketKey> buckets;
  SmallVector<BucketKey> bucketed;
  for (auto [vi, es] : llvm::enumerate(edgesOfValue)) {
    if (es.empty())
      continue;
    const Node &u = nodes[values[vi].node];
    Layout have;
    for (int a = 0; a < rank; ++a)
      have.placements.push_back(producedOn(vi, on(u, a), a));
    have = inRealOrder(std::move(have));
    double global = shapeBytes(values[vi].type, initialLocal[vi]);
    std::vector<Layout> made;
    for (int ei : es) {
      const Edge &e = edges[ei];
      Layout need;
      for (int a = 0; a < rank; ++a)
        need.placements.push_back(
            needOf(e, e.consumer >= 0 ? on(nodes[e.consumer], a) : none, a));
      need = inRealOrder(std::move(need));
      if (need == have || llvm::is_contained(made, need))
        continue;
      if (refill[vi] && refillable(need, vi)) {
        // Filled again in `need`: the fill's time at its local size.
        if (refills)
          *refills +=
              fillTime(vi, ::spmd::maxLocalShape(mesh, need,
                                                 {initialLocal[vi].begin(),
                                                  initialLocal[vi].end()}));
        made.push_back(std::move(need));
        continue;
      }
      const Layout *from = &have;
      double fromCost = ::spmd::reshardCost(mesh, have, need, global, pick);
      for (const Layout &l : made) {
        double c = ::spmd::reshardCost(mesh, l, need, global, pick);
        if (c < fromCost)
          from = &l, fromCost = c;
      }
      bucketed.clear();
      total += pathCost(vi, *from, need, comm, bucketed);
      // Bucketing combines them with others of their kind: one latency
      // per bucket.
      total -= comm.alpha * double(bucketed.size());
      buckets.insert(bucketed.begin(), bucketed.end());
      made.push_back(std::move(need));
    }
  }
  return total + comm.alpha * double(buckets.size());
}

double AutoSharder::chosenReshardCost(int axis, const CommCostParams &comm,
                                      int *numBuckets, double *refills) const {
  static const Cand none{};
  double total = 0;
  std::set<std::pair<int, const void *>> buckets;
  for (auto [vi, es] : llvm::enumerate(edgesOfValue)) {
    if (es.empty())
      continue;
    const Node &u = nodes[values[vi].node];
    Placement have = producedOn(vi, u.cands[u.chosen], axis);
    std::set<int64_t> paid;
    for (int ei : es) {
      const Edge &e = edges[ei];
      const Cand &to = e.consumer >= 0
                           ? nodes[e.consumer].cands[nodes[e.consumer].chosen]
                           : none;
      Placement need = needOf(e, to, axis);
      if (need == have || !paid.insert(placementKey(need)).second)
        continue;
      if (double t = refillTime(vi, need, axis); t >= 0) {
        if (refills)
          *refills += t;
        continue;
      }
      total += ::spmd::axisReshardCost(have, need, mesh.axisSizes[axis],
                                       valueBytes(vi), comm, axis);
      if (auto bucket = bucketOf(vi, have, need)) {
        total -= comm.alpha;
        buckets.insert(*bucket);
      }
    }
  }
  if (numBuckets)
    *numBuckets = static_cast<int>(buckets.size());
  return total + comm.alpha * double(buckets.size());
}

void AutoSharder::addReshardCosts(IlpModel &ilp, int axis, bool bucketLatency,
                                  std::vector<double> *comm,
                                  std::vector<double> *sent) {
  // Partitioning makes one reshard per value and needed placement, shared
  // by every user that needs it (one constrain), so a value pays each
  // placement once, whatever the number of its users: with producer
  // candidate s, placement L costs need[s, L] >= [some user needs L], a
  // continuous variable bounded below by, per user, the sum of the
  // producer-consumer edge variables (Alpa's linearization: e[s, t] = 1 iff
  // the producer takes s and the consumer t) whose consumer candidate needs
  // L. A placement only one user can need costs on those variables directly.
  static const SmallVector<Cand> single{Cand{}};
  std::map<std::pair<int, int>, int> edgeBlocks;
  auto edgeBlock = [&](const Node &u, const Node &v) {
    auto [it, inserted] = edgeBlocks.try_emplace({u.var, v.var}, -1);
    if (!inserted)
      return it->second;
    // Edges between the same two variable blocks (a tied layer's copies, or
    // two operands of one op) share the block.
    size_t ns = u.cands.size(), nt = v.cands.size();
    int base = ilp.numVars();
    it->second = base;
    for (size_t j = 0; j < ns * nt; ++j)
      ilp.addVar(0, 0, 1, false);
    for (size_t s = 0; s < ns; ++s) {
      std::vector<std::pair<int, double>> row{{u.var + int(s), -1.0}};
      for (size_t t = 0; t < nt; ++t)
        row.push_back({int(base + s * nt + t), 1.0});
      ilp.addRow(row, 0, 0);
    }
    for (size_t t = 0; t < nt; ++t) {
      std::vector<std::pair<int, double>> row{{v.var + int(t), -1.0}};
      for (size_t s = 0; s < ns; ++s)
        row.push_back({int(base + s * nt + t), 1.0});
      ilp.addRow(row, 0, 0);
    }
    return base;
  };
  int64_t k = mesh.axisSizes[axis];
  // exactAxis(): a need is the whole layout (the other axes as decided),
  // priced along the planner's path as the estimate prices it.
  bool exact = exactAxis(axis);
  static const Cand none{};
  SmallVector<BucketKey> bucketed;
  std::map<SmallVector<SmallVector<int, 4>, 2>, int> indicators;

  for (auto [vi, es] : llvm::enumerate(edgesOfValue)) {
    if (es.empty())
      continue;
    const Node &u = nodes[values[vi].node];
    bool uVar = u.cands.size() >= 2;
    Layout rest; // the other axes' placements, the producer's
    if (exact)
      for (int a = 0; a < axis; ++a)
        rest.placements.push_back(producedOn(vi, u.decided[a], a));
    // The layouts users need on the other axes (per edge).
    SmallVector<Layout> restOf;
    if (exact)
      for (int ei : es) {
        const Edge &e = edges[ei];
        Layout l;
        for (int a = 0; a < axis; ++a)
          l.placements.push_back(needOf(
              e, e.consumer >= 0 ? nodes[e.consumer].decided[a] : none, a));
        restOf.push_back(std::move(l));
      }
    for (auto [s, cu] : llvm::enumerate(u.cands)) {
      Layout have = rest;
      have.placements.push_back(producedOn(vi, cu, axis));
      // Per needed layout (one placement, or every axis's where exact):
      // per user, the variables whose sum says it needs it; empty: it
      // does whatever it takes (a fixed need).
      using Key = SmallVector<int64_t, 4>;
      std::map<Key, std::pair<Layout, SmallVector<SmallVector<int, 4>, 2>>>
          needs;
      for (auto [i, ei] : llvm::enumerate(es)) {
        const Edge &e = edges[ei];
        const Node *v = e.consumer >= 0 ? &nodes[e.consumer] : nullptr;
        bool vVar = v && v->cands.size() >= 2;
        const auto &vs = v ? v->cands : single;
        std::map<Key, SmallVector<int, 4>> terms;
        for (auto [t, cv] : llvm::enumerate(vs)) {
          Layout need = exact ? restOf[i] : Layout{};
          need.placements.push_back(needOf(e, cv, axis));
          if (need == have)
            continue;
          Key key;
          for (const Placement &p : need.placements)
            key.push_back(placementKey(p));
          needs.try_emplace(
              key, std::make_pair(need, SmallVector<SmallVector<int, 4>, 2>{}));
          auto &term = terms[key];
          if (vVar && uVar)
            term.push_back(edgeBlock(u, *v) + s * vs.size() + t);
          else if (vVar)
            term.push_back(v->var + t);
        }
        for (auto &[key, term] : terms)
          needs[key].second.push_back(std::move(term));
      }
      for (auto &[key, entry] : needs) {
        auto &[need, users] = entry;
        double refilled = -1, moved = 0, sentBytes = 0;
        int shared = 0; // bucketed collectives
        if (exact) {
          if (refill[vi] && refillable(need, vi))
            refilled =
                fillTime(vi, ::spmd::maxLocalShape(pricing(), inRealOrder(need),
                                                   {initialLocal[vi].begin(),
                                                    initialLocal[vi].end()}));
          else {
            bucketed.clear();
            moved = pathCost(vi, inRealOrder(have), inRealOrder(need),
                             profile.comm, bucketed);
            shared = bucketed.size();
            SmallVector<BucketKey> same; // as `bucketed`
            if (sent)
              sentBytes = pathCost(vi, inRealOrder(have), inRealOrder(need),
                                   bytesOnly(), same);
          }
        } else {
          refilled = refillTime(vi, need.placements[0], axis);
          if (refilled < 0) {
            moved =
                ::spmd::axisReshardCost(have.placements[0], need.placements[0],
                                        k, valueBytes(vi), profile.comm, axis);
            shared =
                bucketOf(vi, have.placements[0], need.placements[0]) ? 1 : 0;
            if (sent)
              sentBytes = ::spmd::axisReshardCost(
                  have.placements[0], need.placements[0], k, valueBytes(vi),
                  bytesOnly(), axis);
          }
        }
        double cost = (refilled >= 0 ? refilled : moved) * kScale;
        if (cost <= 0)
          continue;
        double own = refilled >= 0 ? 0 : cost; // no communication
        double bytes = sentBytes * profile.comm.beta * kScale;
        // A bucketed reshard shares its latency with the others of its
        // bucket: the solver charges it none, or (bucketLatency) its
        // own; solveAxis() keeps the better. (Charging each bucket one
        // latency, with a binary per bucket bounded by its members, made
        // the model 5-10x slower to solve; the estimate counts one per
        // bucket, chosenReshardCost().)
        if (!bucketLatency && refilled < 0)
          cost -= profile.comm.alpha * kScale * shared;
        if (cost <= 0 && !comm)
          continue;
        // The indicator that the producer takes s and some user needs
        // `need`, as a sum of variables (empty: always).
        SmallVector<int, 4> indicator;
        if (llvm::any_of(users, [](const auto &t) { return t.empty(); })) {
          // A fixed need: paid whenever the producer takes s.
          if (uVar)
            indicator.push_back(u.var + s);
        } else if (users.size() == 1) {
          indicator = users[0];
        } else {
          // The same users' variables (a tied layer's copy of this value,
          // its edge blocks shared) share one indicator: 32 layers' copies
          // made ~45k of the 32-layer GPT's ~97k variables.
          for (auto &term : users)
            llvm::sort(term);
          llvm::sort(users);
          auto [it, inserted] = indicators.try_emplace(users, -1);
          if (inserted) {
            it->second = ilp.addVar(0, 0, 1, false);
            for (const auto &term : users) {
              std::vector<std::pair<int, double>> row{{it->second, 1.0}};
              for (int var : term)
                row.push_back({var, -1.0});
              ilp.addRow(row, 0, kInf);
            }
          }
          indicator.push_back(it->second);
        }
        for (int var : indicator) {
          if (cost > 0)
            ilp.addObjective(var, cost);
          if (comm) {
            comm->resize(ilp.numVars(), 0.0);
            (*comm)[var] += own;
          }
          if (sent) {
            sent->resize(ilp.numVars(), 0.0);
            (*sent)[var] += bytes;
          }
        }
      }
    }
  }
}

double AutoSharder::memBytes(int value, const Cand &c, int axis,
                             double later) const {
  double bytes = valueBytes(value);
  Placement p = producedOn(value, c, axis);
  if (p.isShard()) {
    int64_t local = values[value].local[p.dim];
    bytes *= double(::spmd::chunkCapacity(local, mesh.axisSizes[axis])) /
             double(std::max<int64_t>(1, local));
  }
  return bytes / later;
}

bool AutoSharder::refillable(const Layout &need, int value) const {
  const ShardingRule &rule = *nodes[values[value].node].rule;
  return llvm::all_of(need.placements, [&](const Placement &p) {
    return !p.isPartial() || llvm::any_of(rule.alts, [&](const auto &alt) {
      return llvm::is_contained(alt.kinds, p.reduce);
    });
  });
}

double AutoSharder::refillTime(int value, const Placement &need,
                               int axis) const {
  if (!refill[value] || !refillable(Layout{{need}}, value))
    return -1;
  SmallVector<int64_t> local(values[value].local);
  if (need.isShard())
    local[need.dim] =
        ::spmd::chunkCapacity(local[need.dim], mesh.axisSizes[axis]);
  return fillTime(value, local);
}

double AutoSharder::fillTime(int value, ArrayRef<int64_t> local) const {
  auto type = cast<RankedTensorType>(values[value].type);
  double share = 1;
  for (auto [d, n] : llvm::enumerate(local))
    share *= double(n) / double(std::max<int64_t>(1, type.getDimSize(d)));
  const OpCounts &work = nodes[values[value].node].work;
  return profile.computeTime(work.flops * share, work.bytes * share, work.bits);
}

double AutoSharder::chosenComm(int axis, const CommCostParams &comm) const {
  return exactAxis(axis) ? decidedReshardCost(comm)
                         : chosenReshardCost(axis, comm);
}

double AutoSharder::chosenAxisCost(int axis, int *buckets) const {
  double refills = 0, cost = 0;
  if (exactAxis(axis)) {
    cost = decidedReshardCost(profile.comm, &refills);
    if (buckets) // only their number
      chosenReshardCost(axis, profile.comm, buckets);
  } else {
    cost = chosenReshardCost(axis, profile.comm, buckets, &refills);
  }
  cost += refills;
  for (const Node &n : nodes)
    cost += nodeCost(n, n.cands[n.chosen], axis);
  return cost;
}

bool AutoSharder::solveAxis(int axis, bool minPeak, double &peakOut) {
  if (minPeak) {
    Solved s;
    bool ok = solveAxisOnce(axis, minPeak, false, s);
    peakOut = s.peak;
    return ok;
  }
  // The solver cannot charge one latency per bucket cheaply (see
  // addReshardCosts()): solve with bucketed reshards free of latency and
  // with each paying its own, and keep the one the estimate, one latency
  // per bucket, prefers. The first favours many small bucketed reshards
  // (parameters gathered where a replicated copy costs nothing), the
  // second too few.
  Solved free, charged;
  if (!solveAxisOnce(axis, minPeak, false, free))
    return false;
  int buckets = 0;
  double costFree = chosenAxisCost(axis, &buckets);
  // Every plan's estimate is at least the free model's optimum (the
  // estimate only adds one latency per bucket), so the charged solve can
  // gain no more than the free plan's bucket latencies: not worth a second
  // solve where they are a negligible part of the estimate (the 32-layer
  // GPT on 2x4: ~20 us of ~750 ms, against 5-6 s per solve).
  bool skipCharged =
      free.result.status == IlpModel::Status::Optimal &&
      double(buckets) * profile.comm.alpha <= kNegligible * costFree;
  if (!skipCharged && !solveAxisOnce(axis, minPeak, true, charged))
    return false;
  Solved &best =
      skipCharged || chosenAxisCost(axis) > costFree ? free : charged;
  best.exact = exactAxis(axis);
  for (auto [ni, n] : llvm::enumerate(nodes))
    n.chosen = best.chosen[ni];
  peakOut = best.peak;
  // The last axis only: a refined earlier axis changes the later axes'
  // models (the 32-layer GPT's second axis of 2x4 then ran into the time
  // limit, 60 s in all instead of 18). Within the time the first
  // solves took, at least 4 s (the 4-layer Llama's refinement on 2x2
  // needs ~2.5 s) and at most a quarter of the limit.
  best.refineSeconds =
      std::min(0.25 * timeLimit, std::max(4.0, free.seconds + charged.seconds));
  if (axis != mesh.rank() - 1)
    return true;
  if (deferRefine)
    lastSolved = std::move(best);
  else
    refine(axis, best, best.refineSeconds, peakOut);
  return true;
}

bool AutoSharder::solveAxisOnce(int axis, bool minPeak, bool bucketLatency,
                                Solved &out) {
  IlpModel &ilp = out.ilp;
  double later = laterDevices(axis);
  DenseMap<int, int> classVar; // class -> its first node with variables
  // Among plans of equal time, the one that stores less: an argument's
  // local bytes at a negligible price (256 MiB: 0.03 us).
  auto cost = [&](const Node &n, const Cand &c) {
    if (minPeak)
      return 0.0;
    if (n.op)
      return nodeCost(n, c, axis) * kScale;
    int value = valueIndex.lookup(fn.getArgument(n.arg));
    return 1e-16 * memBytes(value, c, axis, later) * kScale;
  };
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    if (n.cands.size() < 2)
      continue;
    auto it = classVar.find(n.cls);
    if (it != classVar.end()) {
      const Node &first = nodes[it->second];
      bool same = first.cands.size() == n.cands.size();
      for (size_t c = 0; same && c < n.cands.size(); ++c)
        same = first.cands[c].choice == n.cands[c].choice &&
               first.cands[c].arg == n.cands[c].arg;
      if (same) {
        n.var = first.var;
        for (auto [c, cand] : llvm::enumerate(n.cands))
          ilp.addObjective(n.var + c, cost(n, cand));
        continue;
      }
    } else {
      classVar[n.cls] = ni;
    }
    n.var = ilp.numVars();
    std::vector<std::pair<int, double>> one;
    for (const Cand &c : n.cands)
      one.push_back({ilp.addVar(cost(n, c), 0, 1, true), 1.0});
    ilp.addRow(one, 1, 1);
  }
  // The communication objectives, for refine() (the last axis only).
  bool refinable = commSlack > 0 && axis == mesh.rank() - 1;
  if (!minPeak)
    addReshardCosts(ilp, axis, bucketLatency, refinable ? &out.comm : nullptr,
                    refinable ? &out.sent : nullptr);
  int peakVar = -1;
  if (minPeak)
    peakVar = ilp.addVar(1.0, 0, kInf, false);

  // Memory rows at a program point, lazily.
  auto liveAt = [&](int point) {
    std::vector<std::pair<int, double>> row;
    double constant = 0;
    for (auto [vi, v] : llvm::enumerate(values)) {
      if (v.node < 0 || v.def > point || v.lastUse < point)
        continue;
      const Node &n = nodes[v.node];
      if (n.cands.size() < 2) {
        constant += memBytes(vi, n.cands[0], axis, later);
        continue;
      }
      for (auto [s, c] : llvm::enumerate(n.cands))
        row.push_back({n.var + int(s), memBytes(vi, c, axis, later)});
    }
    return std::make_pair(row, constant);
  };
  bool limitMemory = budget > 0 || minPeak;
  SmallVector<int> chosen(nodes.size(), 0);
  double totalSolve = 0;
  std::set<int> rowsAt;
  IlpModel::Result &last = out.result;
  // Nothing to choose (every layout given): no model to solve.
  for (int round = 0; round < 16 && ilp.numVars() > 0; ++round) {
    maxVars = std::max(maxVars, ilp.numVars());
    maxRows = std::max(maxRows, ilp.numRows());
    IlpModel::Result r = ilp.solve(timeLimit - totalSolve);
    ++numSolves;
    totalSolve += r.seconds;
    last = IlpModel::Result();
    if (r.status == IlpModel::Status::Infeasible)
      return false;
    if (r.status == IlpModel::Status::NoSolution) {
      solverNote = "solver stopped without a solution on axis " +
                   mesh.axisNames[axis] + "; greedy choice used";
      greedy(axis);
      for (auto [ni, n] : llvm::enumerate(nodes))
        chosen[ni] = n.chosen;
      break;
    }
    last = r;
    if (r.status == IlpModel::Status::Feasible)
      solverNote = "solver time limit reached on axis " + mesh.axisNames[axis] +
                   "; best solution found used";
    for (auto [ni, n] : llvm::enumerate(nodes)) {
      chosen[ni] = 0;
      if (n.cands.size() < 2)
        continue;
      for (size_t s = 0; s < n.cands.size(); ++s)
        if (r.values[n.var + s] > 0.5)
          chosen[ni] = s;
    }
    if (!limitMemory)
      break;
    int where = 0;
    double peak = planPeak(axis, chosen, &where);
    double limit = minPeak ? r.values[peakVar] : budget;
    if (peak <= limit * (1 + 1e-9) + 1 || rowsAt.count(where))
      break;
    rowsAt.insert(where);
    auto [row, constant] = liveAt(where);
    if (minPeak) {
      row.push_back({peakVar, -1.0});
      ilp.addRow(row, -kInf, -constant);
    } else {
      ilp.addRow(row, -kInf, budget - constant);
    }
  }
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    n.chosen = chosen[ni];
    out.vars.push_back(n.var);
  }
  out.chosen = chosen;
  out.seconds = totalSolve;
  int where = 0;
  out.peak = planPeak(axis, chosen, &where);
  return true;
}

void AutoSharder::refine(int axis, Solved &s, double seconds, double &peakOut) {
  // The estimate's error is larger than the differences between many
  // plans (the roofline values splitting elementwise work above the
  // reshards it costs, which simulated ranks do not bear out): of the
  // plans within the slack of the fastest, prefer one that sends fewer
  // bytes (or as many in less time): bytes do not depend on the
  // profile's latency, its least certain figure (weighting the time
  // instead kept fewer, larger collectives: the 2x2 Llama's plan sent
  // 3.5% more than FSDP x TP+SP). Found by weighting communication up in the
  // same model (each solve as easy as the first; minimizing communication under
  // a row bounding the time was 5-10x slower on the 2x2 GPT and found nothing
  // in a bounded time), heavier first.
  if (commSlack <= 0 || s.result.values.empty() || s.comm.empty())
    return;
  IlpModel &ilp = s.ilp;
  const std::vector<double> time = ilp.objective();
  double fastest = chosenAxisCost(axis);
  std::pair<double, double> before = {chosenComm(axis, bytesOnly()),
                                      chosenComm(axis, profile.comm)};
  SmallVector<int> best(s.chosen);
  std::pair<double, double> bestComm = before;
  double bestPeak = peakOut;
  seconds = std::min(seconds, timeLimit);
  auto begin = std::chrono::steady_clock::now();
  // (The 2x2 Llama: bytes added once found nothing; four times over, a
  // plan sending 6% fewer. The time-weighted tries find a plan without a
  // latency-bound reshard, whose bytes barely weigh.)
  const std::pair<const std::vector<double> *, double> tries[] = {
      {&s.sent, 4.0}, {&s.sent, 1.0}, {&s.comm, 1.0}, {&s.comm, 0.25}};
  for (auto [extra, weight] : tries) {
    if (seconds <= 0.01)
      break;
    std::vector<double> objective = time;
    for (auto [j, c] : llvm::enumerate(*extra))
      objective[j] += weight * c;
    ilp.setObjective(std::move(objective));
    IlpModel::Result r = ilp.solve(seconds, s.result.values);
    ++numSolves;
    seconds -= r.seconds;
    if (r.values.empty())
      continue;
    SmallVector<int> refined(nodes.size(), 0);
    for (auto [ni, n] : llvm::enumerate(nodes)) {
      if (n.cands.size() < 2)
        continue;
      for (size_t c = 0; c < n.cands.size(); ++c)
        if (r.values[n.var + c] > 0.5)
          refined[ni] = c;
      n.chosen = refined[ni];
    }
    double peak = planPeak(axis, refined);
    double bytes = chosenComm(axis, bytesOnly());
    double comm = chosenComm(axis, profile.comm);
    if ((budget <= 0 || peak <= budget * (1 + 1e-9) + 1) &&
        chosenAxisCost(axis) <= fastest * (1 + commSlack) &&
        lessComm(bytes, comm, bestComm)) {
      best = refined;
      bestComm = {bytes, comm};
      bestPeak = peak;
      break;
    }
  }
  for (auto [ni, n] : llvm::enumerate(nodes))
    n.chosen = best[ni];
  if (bestComm == before)
    return;
  refineNotes.push_back(llvm::formatv(
      "axis {0}: a plan communicating less within {1:P1} (comm-slack): "
      "estimated {2:f3} ms ({3}, {4:f3} ms communication), the fastest "
      "{5:f3} ms ({6}, {7:f3} ms); found in {8:f2} s",
      mesh.axisNames[axis], commSlack, chosenAxisCost(axis) * 1e3,
      formatBytes(bestComm.first), bestComm.second * 1e3, fastest * 1e3,
      formatBytes(before.first), before.second * 1e3,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count()));
  peakOut = bestPeak;
}

void AutoSharder::computeClasses(int rounds) {
  // Weisfeiler-Lehman colors: an op's name, attributes, types and body,
  // refined `rounds` times by the colors of its producers and users.
  size_t n = nodes.size();
  std::vector<llvm::hash_code> color(n);
  std::vector<SmallVector<std::pair<int, int>>> preds(n), succs(n);
  for (const Edge &e : edges) {
    int u = values[e.value].node;
    if (e.consumer < 0)
      continue;
    preds[e.consumer].push_back({e.slot, u});
    succs[u].push_back({e.slot, e.consumer});
  }
  for (auto [ni, node] : llvm::enumerate(nodes)) {
    if (!node.op) {
      Value arg = fn.getArgument(node.arg);
      color[ni] = llvm::hash_combine(
          "arg", arg.getType().getAsOpaquePointer(),
          node.fixed ? std::hash<std::string>()(node.fixed->str()) : 0);
      continue;
    }
    llvm::hash_code h = OperationEquivalence::computeHash(
        node.op, OperationEquivalence::ignoreHashValue,
        OperationEquivalence::ignoreHashValue,
        OperationEquivalence::IgnoreLocations);
    for (Type t : node.op->getOperandTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    node.op->walk([&](Operation *inner) {
      if (inner != node.op)
        h = llvm::hash_combine(
            h, inner->getName().getAsOpaquePointer(),
            inner->getRawDictionaryAttrs().getAsOpaquePointer());
    });
    color[ni] = h;
  }
  for (int r = 0; r < rounds; ++r) {
    std::vector<llvm::hash_code> next(n);
    for (size_t ni = 0; ni < n; ++ni) {
      SmallVector<size_t> in, out;
      for (auto [slot, u] : preds[ni])
        in.push_back(llvm::hash_combine(slot, color[u]));
      for (auto [slot, v] : succs[ni])
        out.push_back(llvm::hash_combine(slot, color[v]));
      llvm::sort(in);
      llvm::sort(out);
      next[ni] = llvm::hash_combine(
          color[ni], llvm::hash_combine_range(in.begin(), in.end()),
          llvm::hash_combine_range(out.begin(), out.end()));
    }
    color.swap(next);
  }
  DenseMap<size_t, int> ids;
  for (auto [ni, node] : llvm::enumerate(nodes)) {
    if (rounds < 0) {
      node.cls = ni;
      continue;
    }
    auto [it, inserted] = ids.try_emplace(size_t(color[ni]), ids.size());
    node.cls = it->second;
  }
  numClasses = rounds < 0 ? int(n) : int(ids.size());
}

void AutoSharder::greedy(int axis) {
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    n.chosen = 0;
    if (n.cands.size() < 2)
      continue;
    double best = kInf;
    for (auto [s, c] : llvm::enumerate(n.cands)) {
      double cost = nodeCost(n, c, axis);
      if (!n.op) {
        // An argument: the smallest local share under a budget, else R.
        cost = budget > 0 ? memBytes(valueIndex.lookup(fn.getArgument(n.arg)),
                                     c, axis, 1)
                          : double(s);
      } else {
        for (int ei : edgesInto.lookup(ni)) {
          const Edge &e = edges[ei];
          const Node &u = nodes[values[e.value].node];
          cost += edgeCost(e, u.cands[u.chosen], c, axis);
        }
      }
      if (cost < best)
        best = cost, n.chosen = s;
    }
  }
}

void AutoSharder::commit(int axis) {
  if (axis + 1 == mesh.rank())
    for (Node &n : nodes) {
      if (!n.op || !n.rule)
        continue;
      double w = nodeShare(n, n.cands[n.chosen], axis);
      double flops = n.work.flops * w, bytes = n.work.bytes * w;
      double t = profile.computeTime(flops, bytes, n.work.bits);
      computeSeconds += t;
      if (profile.memoryTime(bytes) > profile.flopTime(flops, n.work.bits))
        memoryBoundSeconds += t;
    }
  int64_t k = mesh.axisSizes[axis];
  for (auto [vi, v] : llvm::enumerate(values)) {
    if (v.node < 0)
      continue;
    const Node &n = nodes[v.node];
    Placement p = producedOn(vi, n.cands[n.chosen], axis);
    if (p.isShard())
      v.local[p.dim] = ::spmd::chunkCapacity(v.local[p.dim], k);
  }
  for (Node &n : nodes) {
    const Cand &c = n.cands[n.chosen];
    n.decided.push_back(c);
    if (n.op && n.rule && c.choice.kind == AxisChoice::Kind::Shard)
      n.factorLocal[c.choice.factor] =
          ::spmd::chunkCapacity(n.factorLocal[c.choice.factor], k);
  }
  if (axis + 1 < mesh.rank())
    return;
  // The plan's communication as partitioning makes it (the first axis's
  // reshards, costed while solving it, did not know what later axes split,
  // nor that a change on several axes takes the planner's path).
  double refills = 0;
  commSeconds = decidedReshardCost(profile.comm, &refills);
  commBytes = decidedReshardCost(bytesOnly());
  computeSeconds += refills;
}

void AutoSharder::reset() {
  for (auto [vi, v] : llvm::enumerate(values))
    v.local = initialLocal[vi];
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    n.factorLocal = initialFactors[ni];
    n.decided.clear();
  }
  commSeconds = computeSeconds = commBytes = memoryBoundSeconds = 0;
  refineNotes.clear();
}

Layout AutoSharder::finalLayout(int value) const {
  const ValueInfo &v = values[value];
  Layout l;
  for (int a = 0; a < mesh.rank(); ++a)
    l.placements.push_back(producedOn(value, nodes[v.node].decided[a], a));
  return l;
}

double AutoSharder::planPeak(int axis, ArrayRef<int> chosen, int *where) const {
  double later = laterDevices(axis);
  return livePeak(
      [&](int vi) {
        int node = values[vi].node;
        return memBytes(vi, nodes[node].cands[chosen[node]], axis, later);
      },
      where);
}

double AutoSharder::livePeak(llvm::function_ref<double(int)> bytesOf,
                             int *where) const {
  std::vector<double> delta(numPoints + 2, 0);
  for (auto [vi, v] : llvm::enumerate(values)) {
    if (v.node < 0)
      continue;
    double b = bytesOf(vi);
    delta[v.def] += b;
    delta[std::min(v.lastUse, numPoints) + 1] -= b;
  }
  double live = 0, peak = 0;
  for (int p = 0; p <= numPoints; ++p) {
    live += delta[p];
    if (live > peak) {
      peak = live;
      if (where)
        *where = p;
    }
  }
  return peak;
}

double AutoSharder::estimatedPeak() const {
  return livePeak([&](int vi) { return valueBytes(vi); });
}

void AutoSharder::write() {
  MLIRContext *ctx = fn.getContext();
  StringRef name = ::spmd::SPMDDialect::kLayoutAttrName;
  auto attr = [&](const Layout &l) { return LayoutAttr::get(meshRef, l); };
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()) ||
        fn.getArgAttr(arg.getArgNumber(), name))
      continue;
    fn.setArgAttr(arg.getArgNumber(), name,
                  attr(finalLayout(valueIndex.lookup(arg))));
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    if (!isa<RankedTensorType>(fn.getResultTypes()[i]) ||
        fn.getResultAttr(i, name))
      continue;
    Layout l = Layout::replicated(mesh.rank());
    if (updates[i] >= 0)
      l = finalLayout(valueIndex.lookup(fn.getArgument(updates[i])));
    fn.setResultAttr(i, name, attr(l));
  }
  if (!pinActivations)
    return;
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    if (!n.op || !n.rule || n.op->getAttr(name))
      continue;
    SmallVector<Attribute> layouts;
    for (OpResult r : n.op->getResults())
      layouts.push_back(attr(finalLayout(valueIndex.lookup(r))));
    if (layouts.size() == 1)
      n.op->setAttr(name, layouts[0]);
    else
      n.op->setAttr(name, ArrayAttr::get(ctx, layouts));
  }
}

/// DTensor's name for what a layout does to a parameter on each axis
/// (`gathered`: the axes on which a consumer needs it replicated: stored
/// sharded, gathered for use, as FSDP). Colwise / Rowwise name the dims of a
/// Linear's [out, in] weight.
static std::string styleOf(const Layout &l, const Mesh &mesh, int64_t rank,
                           ArrayRef<bool> gathered) {
  std::string out;
  for (auto [a, p] : llvm::enumerate(l.placements)) {
    if (mesh.axisSizes[a] == 1)
      continue;
    std::string s;
    if (p.isReplicate())
      s = "Replicate";
    else if (p.isShard() && gathered[a])
      s = "FSDP Shard(" + std::to_string(p.dim) + ")";
    else if (p.isShard() && p.dim == 0)
      s = rank == 1 ? "Colwise (bias)" : "Colwise";
    else if (p.isShard() && p.dim == 1 && rank == 2)
      s = "Rowwise";
    else
      s = p.str();
    out += (out.empty() ? "" : ", ") + mesh.axisNames[a] + ": " + s;
  }
  return out.empty() ? "Replicate" : out;
}

void AutoSharder::writeReport(llvm::raw_ostream &os, double solveSeconds) {
  Block &body = fn.getBody().front();
  SmallVector<bool> updated(fn.getNumArguments(), false);
  for (int a : updates)
    if (a >= 0)
      updated[a] = true;
  // Per argument value: the axes on which some consumer needs it R.
  DenseMap<int, SmallVector<bool>> gathered;
  for (const Edge &e : edges) {
    if (e.consumer < 0 || nodes[values[e.value].node].op)
      continue;
    const Node &c = nodes[e.consumer];
    auto &g = gathered[e.value];
    g.resize(mesh.rank(), false);
    for (int a = 0; a < mesh.rank(); ++a) {
      Placement need = e.toArg ? placementOf(c, 0, c.decided[a], a)
                               : placementOf(c, e.slot, c.decided[a], a);
      g[a] = g[a] || need.isReplicate();
    }
  }
  // Optimizer state: an updated argument that reaches no result but the
  // updated arguments' (it does not influence the loss). Its parameter:
  // the one other argument whose update it reaches.
  DenseSet<Value> reachesOutput;
  Operation *ret = body.getTerminator();
  for (OpOperand &operand : ret->getOpOperands())
    if (updates[operand.getOperandNumber()] < 0)
      reachesOutput.insert(operand.get());
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return reachesOutput.contains(r); }))
      continue;
    op.walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        reachesOutput.insert(v);
    });
  }
  auto argName = [&](BlockArgument arg) {
    std::string name = "arg" + std::to_string(arg.getArgNumber());
    if (auto loc = dyn_cast<NameLoc>(arg.getLoc()))
      name += " (" + loc.getName().str() + ")";
    return name;
  };
  auto stateOf = [&](BlockArgument arg) -> std::optional<BlockArgument> {
    if (reachesOutput.contains(arg))
      return std::nullopt;
    // The updated arguments its value reaches, through the return.
    DenseSet<Value> seen{arg};
    SmallVector<Value> work{arg};
    SmallVector<int> reached;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        if (!user)
          continue;
        if (user == ret) {
          if (use.getOwner() == ret)
            reached.push_back(updates[use.getOperandNumber()]);
          continue;
        }
        for (Value r : user->getResults())
          if (seen.insert(r).second)
            work.push_back(r);
      }
    }
    std::optional<BlockArgument> param;
    for (int a : reached) {
      if (a < 0 || a == static_cast<int>(arg.getArgNumber()))
        continue;
      if (param && param->getArgNumber() != static_cast<unsigned>(a))
        return arg; // state of several parameters: none named
      if (reachesOutput.contains(fn.getArgument(a)))
        param = fn.getArgument(a);
    }
    return param ? *param : arg;
  };

  os << "spmd-auto-shard plan for @" << fn.getSymName() << " on mesh "
     << meshRef << " [";
  for (int a = 0; a < mesh.rank(); ++a)
    os << (a ? ", " : "") << mesh.axisNames[a] << "=" << mesh.axisSizes[a];
  os << "], device " << profile.name << "\n";
  for (BlockArgument arg : body.getArguments()) {
    auto it = valueIndex.find(arg);
    if (it == valueIndex.end())
      continue;
    Layout l = finalLayout(it->second);
    auto type = cast<RankedTensorType>(arg.getType());
    os << "  " << argName(arg) << " " << type << " " << l.str() << "  "
       << (nodes[values[it->second].node].fixed ? "given" : "chosen") << ", ";
    std::optional<BlockArgument> state;
    if (!updated[arg.getArgNumber()]) {
      os << "input";
    } else if ((state = stateOf(arg))) {
      // DTensor's optimizers keep state in its parameter's placements.
      os << "optimizer state";
      if (*state != arg) {
        os << " of " << argName(*state);
        auto p = valueIndex.find(*state);
        if (p != valueIndex.end() && finalLayout(p->second) == l)
          os << ", as its parameter";
      }
      for (auto [a, pl] : llvm::enumerate(l.placements))
        if (mesh.axisSizes[a] != 1 && !pl.isReplicate())
          os << ", " << mesh.axisNames[a] << ": " << pl.str();
    } else {
      os << styleOf(l, mesh, type.getRank(),
                    gathered.lookup(it->second).empty()
                        ? SmallVector<bool>(mesh.rank(), false)
                        : gathered.lookup(it->second));
    }
    os << "\n";
  }
  os << llvm::format("  estimated compute %.3f ms (%.3f ms memory-bound), "
                     "communication %.3f ms "
                     "(%s per rank), peak memory %s per device",
                     computeSeconds * 1e3, memoryBoundSeconds * 1e3,
                     commSeconds * 1e3, formatBytes(commBytes).c_str(),
                     formatBytes(estimatedPeak()).c_str());
  if (budget > 0)
    os << " (budget " << formatBytes(budget) << ")";
  os << llvm::format("\n  solved in %.2f s: %zu ops and arguments in %d "
                     "classes, at most %d variables and %d rows per axis, "
                     "MILPs solved: %d",
                     solveSeconds, nodes.size(), numClasses, maxVars, maxRows,
                     numSolves);
  if (!solverNote.empty())
    os << " (" << solverNote << ")";
  os << "\n";
  for (const std::string &note : refineNotes)
    os << "  " << note << "\n";
  for (const std::string &note : searchNotes)
    os << "  " << note << "\n";
}

bool AutoSharder::permutable() const {
  // Solving on another mesh (flattened or its axes reordered) re-reads the
  // user's layouts on other axes: each must read alike on every axis.
  auto uniform = [](const Layout &l) { return llvm::all_equal(l.placements); };
  if (llvm::none_of(nodes, [](const Node &n) { return !n.op && !n.fixed; }))
    return false; // no argument to choose for (a hand plan's estimate)
  for (const Node &n : nodes) {
    if (n.fixed && !uniform(*n.fixed))
      return false;
    for (const std::optional<Layout> &p : n.pinned)
      if (p && !uniform(*p))
        return false;
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (auto l = fn.getResultAttrOfType<LayoutAttr>(
            i, ::spmd::SPMDDialect::kLayoutAttrName);
        l && !uniform(l.toLayout()))
      return false;
  return true;
}

bool AutoSharder::otherStarts() {
  // Axes solved one at a time price each axis's collectives apart: on a
  // 2-D mesh they miss a plan that shards everything over both axes as one
  // (FSDP over all devices gathers each bucket once, over both axes), which
  // a 1-D mesh of all the devices finds; and the first axis solved prices
  // its choice before the later ones split what it moves, so the order
  // matters.
  Mesh real = mesh;
  int rank = real.rank();
  bool kept = false;
  if (tryStart(Mesh{{"all"}, {real.numDevices()}}, SmallVector<int>(rank, 0),
               llvm::formatv("the mesh as one axis of {0} devices",
                             real.numDevices())
                   .str()))
    kept = true;
  Mesh reversed{{real.axisNames.rbegin(), real.axisNames.rend()},
                {real.axisSizes.rbegin(), real.axisSizes.rend()}};
  SmallVector<int> fromAxis;
  for (int a = 0; a < rank; ++a)
    fromAxis.push_back(rank - 1 - a);
  if (tryStart(reversed, fromAxis,
               "the axes solved in reverse order (" +
                   llvm::join(reversed.axisNames, ", ") + ")"))
    kept = true;
  return kept;
}

bool AutoSharder::descend(int exact) {
  // Each step solves one axis last, the others kept: a solve order with it
  // at the end, the others before it in mesh order.
  int rank = mesh.rank();
  int failed = 0, steps = 0;
  bool kept = false;
  for (int axis = (exact + 1) % rank; failed < rank - (exact >= 0 ? 1 : 0) &&
                                      steps < kDescentSteps && searchTimeLeft();
       axis = (axis + 1) % rank) {
    if (axis == exact)
      continue;
    Mesh order;
    SmallVector<int> keep, fromAxis(rank, 0);
    for (int a = 0; a < rank; ++a)
      if (a != axis) {
        fromAxis[a] = order.rank();
        keep.push_back(a);
        order.axisNames.push_back(mesh.axisNames[a]);
        order.axisSizes.push_back(mesh.axisSizes[a]);
      }
    fromAxis[axis] = order.rank();
    keep.push_back(-1);
    order.axisNames.push_back(mesh.axisNames[axis]);
    order.axisSizes.push_back(mesh.axisSizes[axis]);
    ++steps;
    double before = commSeconds + computeSeconds;
    if (tryStart(order, fromAxis,
                 "axis " + mesh.axisNames[axis] +
                     " solved again, the other axes kept",
                 keep)) {
      kept = true;
      // A gain below the model's resolution: not worth another solve.
      if (commSeconds + computeSeconds > before * (1 - kNegligible))
        break;
      exact = axis;
      failed = 0;
    } else {
      ++failed;
    }
  }
  return kept;
}

AutoSharder::Snapshot AutoSharder::save() const {
  Snapshot s{{},
             {},
             {},
             commSeconds,
             computeSeconds,
             commBytes,
             memoryBoundSeconds,
             refineNotes,
             solverNote};
  for (const Node &n : nodes) {
    s.decided.push_back(n.decided);
    s.factors.push_back(n.factorLocal);
  }
  for (const ValueInfo &v : values)
    s.local.push_back(v.local);
  return s;
}

void AutoSharder::restore(const Snapshot &s) {
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    n.decided = s.decided[ni];
    n.factorLocal = s.factors[ni];
  }
  for (auto [vi, v] : llvm::enumerate(values))
    v.local = s.local[vi];
  commSeconds = s.comm;
  computeSeconds = s.compute;
  commBytes = s.bytes;
  memoryBoundSeconds = s.memoryBound;
  refineNotes = s.notes;
  solverNote = s.solverNote;
}

bool AutoSharder::pick(int axis, ArrayRef<SmallVector<Cand>> plan, int from) {
  candidates(axis);
  for (auto [ni, n] : llvm::enumerate(nodes)) {
    const Cand &want = plan[ni][from];
    auto it = llvm::find_if(n.cands, [&](const Cand &c) {
      return n.op ? c.choice == want.choice : c.arg == want.arg;
    });
    if (it == n.cands.end())
      return false;
    n.chosen = it - n.cands.begin();
  }
  return true;
}

bool AutoSharder::layOut(const Mesh &real, ArrayRef<int> fromAxis) {
  // Each solved axis's choice on its real axis. S(d) over the flattened
  // mesh is S(d) nested on each axis in mesh order (the same chunks); a
  // dimension split on two axes in another order nests the other way,
  // which the real mesh's estimate prices as it is.
  SmallVector<SmallVector<Cand>> solved;
  for (const Node &n : nodes)
    solved.push_back(n.decided);
  mesh = real;
  toReal.clear();
  reset();
  for (int axis = 0; axis < mesh.rank(); ++axis) {
    if (!pick(axis, solved, fromAxis[axis]))
      return false;
    commit(axis);
  }
  return true;
}

bool AutoSharder::fits() const {
  return budget <= 0 || estimatedPeak() <= budget * (1 + 1e-9) + 1;
}

bool AutoSharder::searchTimeLeft() {
  if (std::chrono::steady_clock::now() < searchDeadline)
    return true;
  if (!searchStopped)
    searchNotes.push_back(llvm::formatv(
        "search-time of {0} s spent: no further starts or axes solved again",
        searchTime));
  searchStopped = true;
  return false;
}

bool AutoSharder::tryStart(const Mesh &solveMesh, ArrayRef<int> fromAxis,
                           StringRef what, ArrayRef<int> keep) {
  if (!searchTimeLeft())
    return false;
  Snapshot first = save();
  auto begin = std::chrono::steady_clock::now();
  auto took = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         begin)
        .count();
  };
  // This start's own solver note is reported only if its plan is kept.
  solverNote.clear();
  Mesh real = mesh;
  mesh = solveMesh;
  priceOn(real, fromAxis);
  exactNow = !keep.empty();
  llvm::scope_exit priceAgain([&] { exactNow = true; });
  reset();
  bool ok = true;
  for (int axis = 0; ok && axis < mesh.rank(); ++axis) {
    double peak = 0;
    if (!keep.empty() && keep[axis] >= 0) {
      ok = pick(axis, first.decided, keep[axis]);
    } else {
      candidates(axis);
      ok = solveAxis(axis, /*minPeak=*/false, peak);
    }
    if (ok)
      commit(axis);
  }
  // The solve's last axis, for refining the plan kept (refineKept()).
  std::optional<Pending> last;
  if (ok && lastSolved) {
    last.emplace();
    last->mesh = solveMesh;
    last->fromAxis.assign(fromAxis.begin(), fromAxis.end());
    for (const Node &n : nodes)
      last->decided.push_back(n.decided);
    last->solved = std::move(*lastSolved);
    lastSolved.reset();
  }
  ok = ok && layOut(real, fromAxis);
  double firstTotal = first.comm + first.compute;
  double total = commSeconds + computeSeconds;
  if (ok && total < firstTotal * (1 - 1e-6) && fits()) {
    refineNotes = first.notes;
    pending = std::move(last);
    searchNotes.push_back(
        llvm::formatv("{0}: estimated {1:f3} ms, the plan before it {2:f3} ms "
                      "({3:f1} s)",
                      what, total * 1e3, firstTotal * 1e3, took()));
    return true;
  }
  if (ok)
    searchNotes.push_back(llvm::formatv(
        "{0}: estimated {1:f3} ms, not kept (the plan before it {2:f3} ms; "
        "{3:f1} s)",
        what, total * 1e3, firstTotal * 1e3, took()));
  else
    searchNotes.push_back(llvm::formatv(
        "{0}: no plan on the mesh, not kept ({1:f1} s)", what, took()));
  mesh = real;
  toReal.clear();
  restore(first);
  return false;
}

bool AutoSharder::refineKept() {
  // The plan kept, from the model its last axis was solved in: of the plans
  // within comm-slack of it on that axis, one that communicates less
  // (refine()), kept if the whole plan's estimate is within the slack and
  // it sends fewer bytes (or as many in less time).
  if (!pending)
    return false;
  Pending p = std::move(*pending);
  pending.reset();
  Snapshot first = save();
  Mesh real = mesh;
  mesh = p.mesh;
  priceOn(real, p.fromAxis);
  exactNow = p.solved.exact;
  llvm::scope_exit priceAgain([&] { exactNow = true; });
  reset();
  int lastAxis = mesh.rank() - 1;
  bool ok = true;
  for (int axis = 0; ok && axis < lastAxis; ++axis)
    if ((ok = pick(axis, p.decided, axis)))
      commit(axis);
  if (ok) {
    candidates(lastAxis);
    for (auto [ni, n] : llvm::enumerate(nodes)) {
      n.chosen = p.solved.chosen[ni];
      n.var = p.solved.vars[ni];
    }
    double peak = p.solved.peak;
    refine(lastAxis, p.solved, p.solved.refineSeconds, peak);
    commit(lastAxis);
  }
  SmallVector<std::string> notes(refineNotes);
  ok = ok && layOut(real, p.fromAxis);
  double before = first.comm + first.compute;
  if (ok && !notes.empty() &&
      lessComm(commBytes, commSeconds, {first.bytes, first.comm}) &&
      commSeconds + computeSeconds <= before * (1 + commSlack) && fits()) {
    refineNotes = first.notes;
    refineNotes.append(notes);
    return true;
  }
  mesh = real;
  toReal.clear();
  restore(first);
  return false;
}

LogicalResult AutoSharder::run(llvm::raw_ostream *report) {
  if (failed(build()))
    return failure();
  edgesOfValue.resize(values.size());
  for (auto [ei, e] : llvm::enumerate(edges)) {
    if (e.consumer >= 0)
      edgesInto[e.consumer].push_back(ei);
    edgesOfValue[e.value].push_back(ei);
  }
  DenseMap<int, int> readers;
  for (const Edge &e : edges)
    if (!e.toArg)
      ++readers[e.value];
  for (Edge &e : edges)
    if (!e.toArg)
      e.share = 1.0 / std::max(1, readers.lookup(e.value));
  for (const ValueInfo &v : values)
    initialLocal.push_back(v.local);
  for (const Node &n : nodes)
    initialFactors.push_back(n.factorLocal);
  computeClasses(tieRounds);
  computeBucketable();
  refill.assign(values.size(), false);
  for (auto [vi, v] : llvm::enumerate(values))
    if (v.node >= 0 && nodes[v.node].op && nodes[v.node].rule &&
        nodes[v.node].op->getNumResults() == 1)
      refill[vi] =
          bool(::spmd::propagation::refillable(nodes[v.node].op->getResult(0)));

  auto begin = std::chrono::steady_clock::now();
  searchDeadline =
      begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(searchTime));
  bool minPeak = false;
  bool search = mesh.rank() > 1 && permutable();
  deferRefine = search;
  for (int axis = 0; axis < mesh.rank(); ++axis) {
    candidates(axis);
    double peak = 0;
    if (!solveAxis(axis, minPeak, peak)) {
      if (minPeak)
        return fn.emitOpError("spmd-auto-shard: the solver found no layout");
      // No layout fits: find the smallest peak instead.
      minPeak = true;
      reset();
      axis = -1;
      continue;
    }
    commit(axis);
  }
  if (!minPeak && search) {
    // The search: the first plan's model is kept for refineKept().
    if (lastSolved) {
      pending.emplace();
      pending->mesh = mesh;
      for (int a = 0; a < mesh.rank(); ++a)
        pending->fromAxis.push_back(a);
      for (const Node &n : nodes)
        pending->decided.push_back(n.decided);
      pending->solved = std::move(*lastSolved);
      lastSolved.reset();
    }
    // Descent from it, then the other starts (and descent from one kept).
    descend(mesh.rank() - 1);
    if (otherStarts())
      descend(-1);
    // A refined plan starts another descent: it can lead where descent
    // from the fastest did not (the 2x2 Llama's flat plan, refined to
    // fewer bytes, descended to one faster than it and sending 15% fewer).
    // A plan so found is kept if it is faster than the fastest before it or
    // sends no more than the refined one (else the refinement's choice of
    // fewer bytes within comm-slack would be undone: the 32-layer GPT on
    // 2x2 descended back to the fastest).
    double fastest = commSeconds + computeSeconds;
    for (int round = 0; round < kRefineRounds && refineKept(); ++round) {
      Snapshot refined = save();
      searchNotes.push_back(llvm::formatv(
          "descent from the plan refined within comm-slack ({0:f3} ms, {1}):",
          (refined.comm + refined.compute) * 1e3, formatBytes(refined.bytes)));
      if (!descend(-1))
        break;
      double now = commSeconds + computeSeconds;
      if (now >= fastest * (1 - 1e-6) &&
          commBytes > refined.bytes * (1 + 1e-6)) {
        searchNotes.push_back(llvm::formatv(
            "its plan not kept: {0:f3} ms, no faster than the fastest and "
            "sending more than the refined plan ({1} against {2})",
            now * 1e3, formatBytes(commBytes), formatBytes(refined.bytes)));
        pending.reset();
        restore(refined);
        break;
      }
      fastest = std::min(fastest, now);
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  double peak = estimatedPeak();
  if (minPeak || (budget > 0 && peak > budget * (1 + 1e-9) + 1))
    return fn.emitOpError("spmd-auto-shard: no layout fits the memory budget "
                          "of ")
           << formatBytes(budget) << " per device; the smallest peak found is "
           << formatBytes(peak) << " per device";
  write();
  if (report)
    writeReport(*report, seconds);
  return success();
}

struct SPMDAutoShardPass
    : public ::spmd::impl::SPMDAutoShardBase<SPMDAutoShardPass> {
  using SPMDAutoShardBase::SPMDAutoShardBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    SPMDAutoShardBase::getDependentDialects(registry);
    ::spmd::registerShardingRuleExternalModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<DeviceProfile> profile = ::spmd::deviceProfile(device);
    if (!profile) {
      module.emitError() << "spmd-auto-shard: unknown device '" << device
                         << "' (known: h100, cpu)";
      return signalPassFailure();
    }
    std::optional<double> budget = parseBytes(memoryBudget);
    if (!budget) {
      module.emitError() << "spmd-auto-shard: memory-budget '" << memoryBudget
                         << "' is not a size (e.g. 4096, 64MiB, 1.5GB)";
      return signalPassFailure();
    }
    auto bad = [&](StringRef what, double got) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%g", got);
      module.emitError() << "spmd-auto-shard: " << what << ", got " << text;
      signalPassFailure();
    };
    if (!(timeLimit > 0))
      return bad("time-limit must be positive seconds", timeLimit);
    if (!(commSlack >= 0))
      return bad("comm-slack must be a fraction >= 0", commSlack);
    if (!(searchTime >= 0))
      return bad("search-time must be seconds >= 0", searchTime);
    if (std::isnan(collectiveLatency))
      return bad("collective-latency must be microseconds", collectiveLatency);
    if (collectiveLatency >= 0) {
      profile->comm.alpha = collectiveLatency * 1e-6;
      profile->name += llvm::formatv(" ({0} us per collective)",
                                     collectiveLatency.getValue())
                           .str();
    }
    ::spmd::MeshOp meshOp;
    for (auto m : module.getOps<::spmd::MeshOp>())
      if (mesh.empty() || m.getSymName() == mesh) {
        if (meshOp) {
          module.emitError("spmd-auto-shard: the module has several meshes; "
                           "name one with mesh=");
          return signalPassFailure();
        }
        meshOp = m;
      }
    if (!meshOp) {
      module.emitError() << "spmd-auto-shard: "
                         << (mesh.empty() ? std::string("the module has no "
                                                        "spmd.mesh")
                                          : "no spmd.mesh named @" + mesh);
      return signalPassFailure();
    }
    std::unique_ptr<llvm::raw_fd_ostream> file;
    llvm::raw_ostream *os = nullptr;
    if (report == "-") {
      os = &llvm::errs();
    } else if (!report.empty()) {
      std::error_code ec;
      file = std::make_unique<llvm::raw_fd_ostream>(report, ec);
      if (ec) {
        module.emitError() << "spmd-auto-shard: cannot write report '" << report
                           << "': " << ec.message();
        return signalPassFailure();
      }
      os = file.get();
    }
    auto ref = FlatSymbolRefAttr::get(meshOp.getSymNameAttr());
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      if (!fn.getBody().hasOneBlock()) {
        fn.emitOpError("spmd-auto-shard: only single-block functions are "
                       "supported");
        return signalPassFailure();
      }
      AutoSharder sharder(fn, ref, meshOp.toMesh(), *profile, *budget,
                          timeLimit, commSlack, searchTime, pinActivations,
                          tieRounds, exactLastAxis);
      if (failed(sharder.run(os)))
        return signalPassFailure();
    }
  }
};

} // namespace

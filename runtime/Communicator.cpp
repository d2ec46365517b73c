//===- Communicator.cpp - Collectives of one rank of a mesh ---------------===//

#include "runtime/Communicator.h"

#include "runtime/BlockOps.h"

#include <algorithm>

namespace spmd {

const char *collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllGather:
    return "allGather";
  case CollectiveKind::AllReduce:
    return "allReduce";
  case CollectiveKind::ReduceScatter:
    return "reduceScatter";
  case CollectiveKind::AllToAll:
    return "allToAll";
  case CollectiveKind::Barrier:
    return "barrier";
  case CollectiveKind::Fingerprint:
    return "fingerprint";
  }
  return "?";
}

static bool hasReduce(CollectiveKind k) {
  return k == CollectiveKind::AllReduce || k == CollectiveKind::ReduceScatter;
}
static bool hasData(CollectiveKind k) {
  return k != CollectiveKind::Barrier && k != CollectiveKind::Fingerprint;
}

bool Fingerprint::operator==(const Fingerprint &o) const {
  return kind == o.kind && axes == o.axes && dtype == o.dtype &&
         (!hasReduce(kind) || reduce == o.reduce) && dim0 == o.dim0 &&
         dim1 == o.dim1 && shape == o.shape && sequence == o.sequence;
}

static std::string axesStr(const Mesh &mesh, const Axes &axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i)
      s += ", ";
    if (axes[i] >= 0 && axes[i] < mesh.rank())
      s += mesh.axisNames[axes[i]];
    else
      s += "#" + std::to_string(axes[i]);
  }
  return s + "]";
}

std::string Fingerprint::str(const Mesh &mesh) const {
  std::string s =
      std::string(collectiveName(kind)) + "(axes=" + axesStr(mesh, axes);
  switch (kind) {
  case CollectiveKind::AllGather:
    s += ", dim=" + std::to_string(dim0);
    break;
  case CollectiveKind::ReduceScatter:
    s += ", dim=" + std::to_string(dim0);
    [[fallthrough]];
  case CollectiveKind::AllReduce:
    s += std::string(", ") + reduceKindName(reduce);
    break;
  case CollectiveKind::AllToAll:
    s += ", split=" + std::to_string(dim0) + ", concat=" + std::to_string(dim1);
    break;
  default:
    break;
  }
  if (hasData(kind) || kind == CollectiveKind::Fingerprint)
    s += std::string(", ") + dtypeName(dtype) + ", shape=" + shapeStr(shape);
  return s + ", seq=" + std::to_string(sequence) + ")";
}

std::string describeGroup(const Mesh &mesh, const Axes &axes, int64_t device) {
  std::string s = axesStr(mesh, axes) + " (ranks ";
  std::vector<int64_t> members = mesh.group(device, axes);
  for (size_t i = 0; i < members.size(); ++i)
    s += (i ? ", " : "") + std::to_string(members[i]);
  return s + ")";
}

Status planCollective(const Mesh &mesh, const std::vector<int64_t> &group,
                      const std::vector<const CallDesc *> &members, bool verify,
                      std::vector<Shape> &outShapes) {
  size_t n = members.size();
  const CallDesc &first = *members[0];
  auto memberName = [&](size_t i) {
    return "member " + std::to_string(i) + " (rank " +
           std::to_string(group[i]) + ")";
  };
  auto fail = [&](size_t i, const std::string &what) {
    return Status::error(memberName(i) + " " + what);
  };
  bool compareFingerprints =
      verify || first.kind == CollectiveKind::Fingerprint;
  for (size_t i = 1; i < n; ++i) {
    const CallDesc &c = *members[i];
    if (compareFingerprints || c.kind == CollectiveKind::Fingerprint) {
      if (c.fingerprint != first.fingerprint)
        return Status::error("fingerprint mismatch: " + memberName(0) +
                             " has " + first.fingerprint.str(mesh) + " but " +
                             memberName(i) + " has " + c.fingerprint.str(mesh));
    }
    if (c.kind != first.kind || c.dtype != first.dtype ||
        (hasReduce(c.kind) && c.reduce != first.reduce) ||
        c.dim0 != first.dim0 || c.dim1 != first.dim1)
      return Status::error(
          "members disagree on the collective: " + memberName(0) + " calls " +
          first.fingerprint.str(mesh) + " but " + memberName(i) + " calls " +
          c.fingerprint.str(mesh));
  }
  outShapes.assign(n, Shape());
  if (!hasData(first.kind))
    return Status::success();

  size_t rank = first.shape.size();
  for (size_t i = 0; i < n; ++i) {
    const CallDesc &c = *members[i];
    if (c.shape.size() != rank)
      return fail(i, "passes a rank-" + std::to_string(c.shape.size()) +
                         " block " + shapeStr(c.shape) +
                         " but member 0 a rank-" + std::to_string(rank) +
                         " block " + shapeStr(first.shape));
    for (int64_t s : c.shape)
      if (s < 0)
        return fail(i, "passes the invalid shape " + shapeStr(c.shape));
  }
  auto checkDim = [&](int64_t d, const char *what) -> Status {
    if (d < 0 || d >= static_cast<int64_t>(rank))
      return Status::error(std::string(what) + " " + std::to_string(d) +
                           " is out of range for rank-" + std::to_string(rank) +
                           " blocks");
    return Status::success();
  };
  // Every member's shape must equal member 0's except on `freeDim`.
  auto checkShapes = [&](int64_t freeDim) -> Status {
    for (size_t i = 1; i < n; ++i)
      for (size_t d = 0; d < rank; ++d)
        if (static_cast<int64_t>(d) != freeDim &&
            members[i]->shape[d] != first.shape[d])
          return fail(i, "passes shape " + shapeStr(members[i]->shape) +
                             " but member 0 passes " + shapeStr(first.shape) +
                             (freeDim >= 0
                                  ? " (only dim " + std::to_string(freeDim) +
                                        " may differ)"
                                  : " (shapes must be equal)"));
    return Status::success();
  };

  int64_t k = static_cast<int64_t>(n);
  switch (first.kind) {
  case CollectiveKind::AllGather: {
    if (Status s = checkDim(first.dim0, "gather dim"); !s.ok())
      return s;
    if (Status s = checkShapes(first.dim0); !s.ok())
      return s;
    int64_t total = 0;
    for (const CallDesc *c : members)
      total += c->shape[first.dim0];
    Shape out = first.shape;
    out[first.dim0] = total;
    outShapes.assign(n, out);
    break;
  }
  case CollectiveKind::AllReduce:
    if (Status s = checkShapes(-1); !s.ok())
      return s;
    outShapes.assign(n, first.shape);
    break;
  case CollectiveKind::ReduceScatter: {
    if (Status s = checkDim(first.dim0, "scatter dim"); !s.ok())
      return s;
    if (Status s = checkShapes(-1); !s.ok())
      return s;
    for (int64_t j = 0; j < k; ++j) {
      outShapes[j] = first.shape;
      outShapes[j][first.dim0] = chunkRange(first.shape[first.dim0], k, j).size;
    }
    break;
  }
  case CollectiveKind::AllToAll: {
    int64_t split = first.dim0, concat = first.dim1;
    if (Status s = checkDim(split, "split dim"); !s.ok())
      return s;
    if (Status s = checkDim(concat, "concat dim"); !s.ok())
      return s;
    if (Status s = checkShapes(concat); !s.ok())
      return s;
    for (int64_t j = 0; j < k; ++j) {
      Shape out = first.shape;
      out[split] = chunkRange(first.shape[split], k, j).size;
      int64_t total = 0;
      for (const CallDesc *c : members)
        total += split == concat ? chunkRange(c->shape[split], k, j).size
                                 : c->shape[concat];
      out[concat] = total;
      outShapes[j] = out;
    }
    break;
  }
  default:
    break;
  }
  size_t es = dtypeSize(first.dtype);
  for (size_t i = 0; i < n; ++i) {
    uint64_t need = static_cast<uint64_t>(numElements(outShapes[i])) * es;
    if (need > members[i]->capacityBytes)
      return fail(i, "has an output buffer of " +
                         std::to_string(members[i]->capacityBytes) +
                         " bytes but its result " + shapeStr(outShapes[i]) +
                         " needs " + std::to_string(need));
  }
  return Status::success();
}

Communicator::Communicator(Mesh mesh, int64_t device)
    : theMesh(std::move(mesh)), theDevice(device) {}

Communicator::~Communicator() = default;

std::string Communicator::describeCall(const CallDesc &call,
                                       const Axes &axes) const {
  return std::string(collectiveName(call.kind)) + " #" +
         std::to_string(call.sequence) + " on mesh axes " +
         describeGroup(theMesh, axes, theDevice);
}

Status Communicator::resolveAxes(const std::vector<std::string> &names,
                                 Axes &axes) const {
  axes.clear();
  for (const std::string &name : names) {
    std::optional<int64_t> a = theMesh.axisIndex(name);
    if (!a)
      return Status::error("mesh has no axis named '" + name + "'");
    axes.push_back(*a);
  }
  return Status::success();
}

CollectiveResult Communicator::issue(CallDesc call, const Axes &axes,
                                     const void *in, void *out) {
  call.sequence = nextSequence++;
  // The axes must name distinct mesh axes; this is the same on every rank.
  for (size_t i = 0; i < axes.size(); ++i) {
    bool bad = axes[i] < 0 || axes[i] >= theMesh.rank();
    for (size_t j = 0; j < i && !bad; ++j)
      bad = axes[j] == axes[i];
    if (bad) {
      std::string s = std::string(collectiveName(call.kind)) + " #" +
                      std::to_string(call.sequence) + " on rank " +
                      std::to_string(theDevice) + ": invalid mesh axes [";
      for (size_t j = 0; j < axes.size(); ++j)
        s += (j ? ", " : "") + std::to_string(axes[j]);
      return {Status::error(s + "] for a rank-" +
                            std::to_string(theMesh.rank()) + " mesh"),
              {}};
    }
  }
  if (call.kind != CollectiveKind::Fingerprint) {
    Fingerprint &fp = call.fingerprint;
    fp.kind = call.kind;
    fp.axes = axes;
    fp.dtype = call.dtype;
    fp.reduce = call.reduce;
    fp.dim0 = call.dim0;
    fp.dim1 = call.dim1;
    fp.shape = call.shape;
    fp.sequence = call.sequence;
    auto mayDiffer = [&](int64_t d) {
      if (d >= 0 && d < static_cast<int64_t>(fp.shape.size()))
        fp.shape[d] = -1;
    };
    if (call.kind == CollectiveKind::AllGather)
      mayDiffer(call.dim0);
    if (call.kind == CollectiveKind::AllToAll)
      mayDiffer(call.dim1);
  }
  return execute(call, axes, in, out);
}

CollectiveResult Communicator::allGather(const InBlock &in, OutBlock out,
                                         const Axes &axes, int64_t dim) {
  CallDesc c;
  c.kind = CollectiveKind::AllGather;
  c.dtype = in.dtype;
  c.dim0 = dim;
  c.shape = in.shape;
  c.capacityBytes = out.capacityBytes;
  return issue(std::move(c), axes, in.data, out.data);
}

CollectiveResult Communicator::allReduce(const InBlock &in, OutBlock out,
                                         const Axes &axes, ReduceKind kind) {
  CallDesc c;
  c.kind = CollectiveKind::AllReduce;
  c.dtype = in.dtype;
  c.reduce = kind;
  c.shape = in.shape;
  c.capacityBytes = out.capacityBytes;
  return issue(std::move(c), axes, in.data, out.data);
}

CollectiveResult Communicator::reduceScatter(const InBlock &in, OutBlock out,
                                             const Axes &axes, int64_t dim,
                                             ReduceKind kind) {
  CallDesc c;
  c.kind = CollectiveKind::ReduceScatter;
  c.dtype = in.dtype;
  c.reduce = kind;
  c.dim0 = dim;
  c.shape = in.shape;
  c.capacityBytes = out.capacityBytes;
  return issue(std::move(c), axes, in.data, out.data);
}

CollectiveResult Communicator::allToAll(const InBlock &in, OutBlock out,
                                        const Axes &axes, int64_t splitDim,
                                        int64_t concatDim) {
  CallDesc c;
  c.kind = CollectiveKind::AllToAll;
  c.dtype = in.dtype;
  c.dim0 = splitDim;
  c.dim1 = concatDim;
  c.shape = in.shape;
  c.capacityBytes = out.capacityBytes;
  return issue(std::move(c), axes, in.data, out.data);
}

Status Communicator::barrier(const Axes &axes) {
  CallDesc c;
  c.kind = CollectiveKind::Barrier;
  return issue(std::move(c), axes, nullptr, nullptr).status;
}

CollectiveResult Communicator::shard(const InBlock &in, OutBlock out,
                                     const Axes &axes, int64_t dim) const {
  auto fail = [&](const std::string &m) -> CollectiveResult {
    return {
        Status::error("shard on rank " + std::to_string(theDevice) + ": " + m),
        {}};
  };
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= theMesh.rank() ||
        std::find(axes.begin(), axes.begin() + i, axes[i]) != axes.begin() + i)
      return fail("invalid mesh axes");
  if (dim < 0 || dim >= static_cast<int64_t>(in.shape.size()))
    return fail("dim " + std::to_string(dim) + " is out of range for a rank-" +
                std::to_string(in.shape.size()) + " block");
  Range r = chunkRange(in.shape[dim], theMesh.groupSize(axes),
                       theMesh.groupIndex(theDevice, axes));
  Shape shape = in.shape, offset(in.shape.size(), 0);
  shape[dim] = r.size;
  offset[dim] = r.offset;
  size_t es = dtypeSize(in.dtype);
  size_t need = static_cast<size_t>(numElements(shape)) * es;
  if (need > out.capacityBytes)
    return fail("the output buffer of " + std::to_string(out.capacityBytes) +
                " bytes is smaller than the " + std::to_string(need) +
                " bytes of " + shapeStr(shape));
  copyBox(out.data, shape, Shape(shape.size(), 0), in.data, in.shape, offset,
          shape, es);
  return {Status::success(), shape};
}

Status Communicator::checkFingerprint(const Axes &axes,
                                      const Fingerprint &fingerprint) {
  CallDesc c;
  c.kind = CollectiveKind::Fingerprint;
  c.fingerprint = fingerprint;
  return issue(std::move(c), axes, nullptr, nullptr).status;
}

bool callheader::encode(const CallDesc &c, int64_t *h) {
  std::fill(h, h + kHeaderWords, 0);
  const Fingerprint &fp = c.fingerprint;
  if (c.shape.size() > kMaxRank || fp.shape.size() > kMaxRank ||
      fp.axes.size() > kMaxAxes)
    return false;
  h[hKind] = static_cast<int64_t>(c.kind);
  h[hDType] = static_cast<int64_t>(c.dtype);
  h[hReduce] = static_cast<int64_t>(c.reduce);
  h[hDim0] = c.dim0;
  h[hDim1] = c.dim1;
  h[hSeq] = static_cast<int64_t>(c.sequence);
  h[hCapacity] = static_cast<int64_t>(c.capacityBytes);
  h[hRank] = static_cast<int64_t>(c.shape.size());
  std::copy(c.shape.begin(), c.shape.end(), h + hShape);
  h[hFpKind] = static_cast<int64_t>(fp.kind);
  h[hFpDType] = static_cast<int64_t>(fp.dtype);
  h[hFpReduce] = static_cast<int64_t>(fp.reduce);
  h[hFpDim0] = fp.dim0;
  h[hFpDim1] = fp.dim1;
  h[hFpSeq] = static_cast<int64_t>(fp.sequence);
  h[hFpNumAxes] = static_cast<int64_t>(fp.axes.size());
  std::copy(fp.axes.begin(), fp.axes.end(), h + hFpAxes);
  h[hFpRank] = static_cast<int64_t>(fp.shape.size());
  std::copy(fp.shape.begin(), fp.shape.end(), h + hFpShape);
  return true;
}

CallDesc callheader::decode(const int64_t *h) {
  CallDesc c;
  c.kind = static_cast<CollectiveKind>(h[hKind]);
  c.dtype = static_cast<DType>(h[hDType]);
  c.reduce = static_cast<ReduceKind>(h[hReduce]);
  c.dim0 = h[hDim0];
  c.dim1 = h[hDim1];
  c.sequence = static_cast<uint64_t>(h[hSeq]);
  c.capacityBytes = static_cast<uint64_t>(h[hCapacity]);
  c.shape.assign(h + hShape, h + hShape + h[hRank]);
  Fingerprint &fp = c.fingerprint;
  fp.kind = static_cast<CollectiveKind>(h[hFpKind]);
  fp.dtype = static_cast<DType>(h[hFpDType]);
  fp.reduce = static_cast<ReduceKind>(h[hFpReduce]);
  fp.dim0 = h[hFpDim0];
  fp.dim1 = h[hFpDim1];
  fp.sequence = static_cast<uint64_t>(h[hFpSeq]);
  fp.axes.assign(h + hFpAxes, h + hFpAxes + h[hFpNumAxes]);
  fp.shape.assign(h + hFpShape, h + hFpShape + h[hFpRank]);
  return c;
}

} // namespace spmd

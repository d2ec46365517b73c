//===- Plan.cpp - Plan model ----------------------------------------------===//

#include "runtime/Plan.h"

#include "core/Checked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <sys/resource.h>

using namespace spmd;
using namespace spmd::plan;

bool plan::isCollective(StepKind kind) {
  return kind == StepKind::AllGather || kind == StepKind::AllReduce ||
         kind == StepKind::ReduceScatter || kind == StepKind::AllToAll;
}

const char *plan::stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel:
    return "kernel";
  case StepKind::Gemm:
    return "gemm";
  case StepKind::Copy:
    return "copy";
  case StepKind::AllGather:
    return "all_gather";
  case StepKind::AllReduce:
    return "all_reduce";
  case StepKind::ReduceScatter:
    return "reduce_scatter";
  case StepKind::AllToAll:
    return "all_to_all";
  case StepKind::Shard:
    return "shard";
  case StepKind::PartialFromReplicated:
    return "partial_from_replicated";
  }
  return "?";
}

bool BufferRef::isStatic() const {
  for (int64_t d : shape)
    if (d < 0)
      return false;
  return true;
}

static std::string refStr(const BufferRef &ref) {
  std::string s =
      ref.where == BufferRef::Where::Arg    ? "arg" + std::to_string(ref.index)
      : ref.where == BufferRef::Where::Heap ? "heap" + std::to_string(ref.index)
                                            : "@" + std::to_string(ref.index);
  std::string shape = "[";
  for (size_t i = 0; i < ref.shape.size(); ++i)
    shape +=
        (i ? ", " : "") +
        (ref.shape[i] < 0 ? std::string("?") : std::to_string(ref.shape[i]));
  return s + ":" + dtypeName(ref.type) + shape + "]";
}

std::string Schedule::validate() const {
  auto check = [&](const BufferRef &ref, const std::string &what) {
    if (ref.where == BufferRef::Where::Arg) {
      if (ref.index < 0 || ref.index >= static_cast<int64_t>(args.size()))
        return what + " names argument " + std::to_string(ref.index) + " of " +
               std::to_string(args.size());
      const TensorInfo &arg = args[ref.index];
      // The argument's own type, or a static view (reshape) of a static one.
      std::optional<int64_t> count = checkedProduct(ref.shape);
      bool view = count && count == checkedProduct(arg.localShape);
      for (int64_t d : arg.localShape)
        view = view && d >= 0;
      if (arg.type != ref.type || (arg.localShape != ref.shape && !view))
        return what + " uses argument " + std::to_string(ref.index) + " as " +
               refStr(ref);
      return std::string();
    }
    if (ref.where == BufferRef::Where::Heap) {
      size_t dynamic = 0;
      for (int64_t d : ref.shape)
        dynamic += d < 0;
      if (ref.index < 0 || ref.index >= numHeapBuffers ||
          ref.sizeSlots.size() != dynamic ||
          (!ref.sizeScales.empty() && ref.sizeScales.size() != dynamic))
        return what + " has a malformed dynamic buffer " + refStr(ref);
      for (auto [mul, div] : ref.sizeScales)
        if (mul <= 0 || div <= 0)
          return what + " has a malformed dynamic buffer " + refStr(ref);
      for (int64_t slot : ref.sizeSlots)
        if (slot < 0 || slot >= static_cast<int64_t>(sizes.size()))
          return what + " buffer " + refStr(ref) + " names unknown size " +
                 std::to_string(slot);
      return std::string();
    }
    if (!ref.isStatic())
      return what + " arena buffer " + refStr(ref) + " has a dynamic shape";
    // Untrusted plan file: neither the size nor the end may wrap.
    std::optional<int64_t> bytes =
        checkedProduct(ref.shape, static_cast<int64_t>(dtypeSize(ref.type)));
    if (!bytes || !fitsWithin(ref.index, *bytes, arenaBytes))
      return what + " buffer " + refStr(ref) + " lies outside the arena of " +
             std::to_string(arenaBytes) + " bytes";
    return std::string();
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    std::string what =
        "step " + std::to_string(i) + " (" + stepKindName(step.kind) + ")";
    for (const BufferRef &ref : step.operands)
      if (std::string err = check(ref, what); !err.empty())
        return err;
    if (step.kind == StepKind::Kernel &&
        (step.kernel < 0 ||
         step.kernel >= static_cast<int64_t>(kernels.size())))
      return what + " calls unknown kernel " + std::to_string(step.kernel);
    size_t want = step.kind == StepKind::Kernel ? step.operands.size()
                  : step.kind == StepKind::Gemm ? 3
                                                : 2;
    if (step.operands.size() != want)
      return what + " has " + std::to_string(step.operands.size()) +
             " operands, expected " + std::to_string(want);
    for (int64_t axis : step.axes)
      if (axis < 0 || axis >= mesh.rank())
        return what + " names mesh axis " + std::to_string(axis);
    if (!step.scalars.empty() && step.kind != StepKind::Kernel)
      return what + " has scalar arguments";
    for (int64_t slot : step.scalars)
      if (slot < 0 || slot >= static_cast<int64_t>(sizes.size()))
        return what + " reads unknown scalar " + std::to_string(slot);
  }
  for (const SizeSource &size : sizes) {
    if (size.kind != SizeSource::Kind::ArgDim) {
      for (int64_t axis : size.axes)
        if (axis < 0 || axis >= mesh.rank())
          return "a dynamic size names mesh axis " + std::to_string(axis);
      if (size.globalSize < 0)
        return "a dynamic size has a negative global size";
      continue;
    }
    if (size.arg < 0 || size.arg >= static_cast<int64_t>(args.size()) ||
        size.dim < 0 ||
        size.dim >= static_cast<int64_t>(args[size.arg].localShape.size()))
      return "a dynamic size names dim " + std::to_string(size.dim) +
             " of argument " + std::to_string(size.arg);
  }
  // Scattering the arguments and assembling the results divides by the
  // mesh axes their layouts name.
  auto checkTensor = [&](const TensorInfo &info,
                         const std::string &what) -> std::string {
    int64_t rank = static_cast<int64_t>(info.localShape.size());
    if (info.layout)
      if (std::string err = info.layout->validate(mesh, rank); !err.empty())
        return what + ": " + err;
    if (info.globalShape &&
        (static_cast<int64_t>(info.globalShape->size()) != rank ||
         std::any_of(info.globalShape->begin(), info.globalShape->end(),
                     [](int64_t d) { return d < 0; })))
      return what + ": global shape " + shapeStr(*info.globalShape) +
             " does not fit its local shape " + shapeStr(info.localShape);
    return "";
  };
  for (size_t i = 0; i < args.size(); ++i)
    if (std::string err = checkTensor(args[i], "argument " + std::to_string(i));
        !err.empty())
      return err;
  for (size_t i = 0; i < results.size(); ++i)
    if (std::string err =
            checkTensor(results[i], "result " + std::to_string(i));
        !err.empty())
      return err;
  if (resultRefs.size() != results.size())
    return "schedule has " + std::to_string(resultRefs.size()) +
           " result buffers for " + std::to_string(results.size()) + " results";
  for (size_t i = 0; i < resultRefs.size(); ++i)
    if (std::string err = check(resultRefs[i], "result " + std::to_string(i));
        !err.empty())
      return err;
  return "";
}

std::string Schedule::str() const {
  std::ostringstream os;
  os << "schedule " << name << " arena " << arenaBytes << " bytes, "
     << steps.size() << " steps\n";
  for (const Step &step : steps) {
    os << "  " << stepKindName(step.kind);
    if (step.kind == StepKind::Kernel)
      os << " " << kernels[step.kernel];
    for (const BufferRef &ref : step.operands)
      os << " " << refStr(ref);
    for (int64_t slot : step.scalars)
      os << " %s" << slot;
    os << "\n";
  }
  // The collective sequence is the same on every rank: counts and input
  // bytes per kind and mesh axes ("?" when rank-dependent).
  std::map<std::string, std::pair<int64_t, int64_t>> totals;
  for (const Step &step : steps) {
    if (step.kind == StepKind::Kernel || step.kind == StepKind::Gemm ||
        step.kind == StepKind::Copy || step.kind == StepKind::Shard ||
        step.kind == StepKind::PartialFromReplicated)
      continue;
    std::string key = std::string(stepKindName(step.kind)) + " on [";
    for (size_t i = 0; i < step.axes.size(); ++i)
      key += (i ? ", " : "") + mesh.axisNames[step.axes[i]];
    key += "]";
    auto &[count, bytes] = totals[key];
    ++count;
    const BufferRef &in = step.operands[0];
    if (bytes >= 0)
      bytes = in.isStatic() && in.where != BufferRef::Where::Heap
                  ? bytes + in.bytes()
                  : -1;
  }
  for (const auto &[key, total] : totals)
    os << "collectives: " << total.first << " x " << key << ", "
       << (total.second < 0 ? std::string("?") : std::to_string(total.second))
       << " input bytes\n";
  return os.str();
}

/// The stack a new thread reserves: glibc takes RLIMIT_STACK, or 2 MiB
/// when it is unlimited.
static int64_t threadStackBytes() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return int64_t(2) << 20;
  return static_cast<int64_t>(
      std::min<rlim_t>(limit.rlim_cur, rlim_t(1) << 40));
}

std::string plan::checkRunResources(const Schedule &schedule,
                                    bool ranksAsThreads, int64_t available,
                                    const Schedule *reference) {
  int64_t numRanks = schedule.mesh.numDevices();
  if (ranksAsThreads && numRanks > kMaxThreadRanks)
    return "the mesh has " + std::to_string(numRanks) +
           " devices; one process runs at most " +
           std::to_string(kMaxThreadRanks) + " ranks as threads";
  // Dynamic dims count as 0: their size is known only from the inputs.
  auto bytesOf = [](const Shape &shape, DType type) -> std::optional<int64_t> {
    Shape known = shape;
    for (int64_t &d : known)
      d = std::max<int64_t>(d, 0);
    return checkedProduct(known, static_cast<int64_t>(dtypeSize(type)));
  };
  // Sums; nullopt once any term or sum overflows.
  using Bytes = std::optional<int64_t>;
  auto add = [](Bytes &total, Bytes n, int64_t times = 1) {
    if (total && n)
      if (Bytes bytes = checkedMul(*n, times))
        return void(total = checkedAdd(*total, *bytes));
    total = std::nullopt;
  };
  auto globalOf = [&](const TensorInfo &t) {
    return t.globalShape ? bytesOf(*t.globalShape, t.type)
                         : bytesOf(t.localShape, t.type);
  };
  // Every rank's block of a tensor. Uneven shards (a dynamic local dim):
  // the ranks' blocks together hold at least the global tensor.
  auto blocksOf = [&](const TensorInfo &t) {
    bool uneven = std::any_of(t.localShape.begin(), t.localShape.end(),
                              [](int64_t d) { return d < 0; });
    Bytes bytes = 0;
    if (uneven && t.globalShape)
      add(bytes, globalOf(t));
    else
      add(bytes, bytesOf(t.localShape, t.type), numRanks);
    return bytes;
  };
  // Held from the start to the end: the global inputs and every rank's
  // block of them.
  Bytes inputs = 0;
  for (const TensorInfo &arg : schedule.args) {
    add(inputs, blocksOf(arg));
    add(inputs, globalOf(arg));
  }
  // Every rank copies its results out of its arena (an MPI job gathers
  // them all to every process); they are kept to the end.
  Bytes outputs = 0;
  for (const TensorInfo &result : schedule.results)
    add(outputs, blocksOf(result));
  // While the ranks run: their arenas and, for rank threads, their stacks
  // (RLIMIT_STACK or glibc's default size each: 1024 ranks take 8 GiB).
  Bytes running = inputs;
  add(running, outputs);
  add(running, schedule.arenaBytes, ranksAsThreads ? numRanks : 1);
  if (ranksAsThreads)
    add(running, threadStackBytes(), numRanks);
  // After the ranks (arenas and stacks freed): the assembled global
  // results and --check's reference, which runs on its own copy of the
  // global inputs in its own arena and compares one block at a time.
  Bytes after = inputs;
  add(after, outputs);
  for (const TensorInfo &result : schedule.results)
    add(after, globalOf(result));
  if (reference) {
    add(after, reference->arenaBytes);
    for (const TensorInfo &arg : reference->args)
      add(after, globalOf(arg));
    Bytes block = 0;
    for (const TensorInfo &result : reference->results)
      if (Bytes bytes = globalOf(result); bytes && block)
        block = std::max(*block, *bytes);
      else
        block = std::nullopt;
    add(after, block);
  }
  Bytes total = running && after ? Bytes(std::max(*running, *after)) : Bytes();
  return checkMemory(total.value_or(-1),
                     "the arguments, arenas and results of " +
                         std::to_string(numRanks) +
                         (numRanks == 1 ? " rank" : " ranks") +
                         (reference ? " and the --check reference" : ""),
                     available);
}

//===- DeviceExecutor.cpp - Runs a plan schedule on a GPU -----------------===//

#include "runtime/cuda/DeviceExecutor.h"

#include <algorithm>

using namespace spmd;
using namespace spmd::cuda;
using namespace spmd::plan;

// What cuBLASLt and float4 loads want, and what DeviceArena promises.
static constexpr int64_t kAlignment = 256;

DeviceBackend::~DeviceBackend() = default;

const char *cuda::streamName(StreamId id) {
  return id == StreamId::Compute ? "compute" : "communication";
}

LaunchDims cuda::kernelLaunch(const KernelSpec &spec, int64_t work,
                              int smCount) {
  if (!spec.warpPerRow)
    return elementwiseLaunch(work, smCount);
  // One warp per row, 8 rows per 256-thread block, grid-stride beyond.
  LaunchDims d;
  if (work <= 0)
    return d;
  d.block = 256;
  d.grid = static_cast<unsigned>(
      std::min<int64_t>((work + 7) / 8, int64_t(std::max(smCount, 1)) * 32));
  return d;
}

DeviceExecutor::DeviceExecutor(const Schedule &schedule,
                               std::vector<KernelSpec> specs,
                               DeviceBackend &backend, int64_t device,
                               DeviceExecutorOptions options)
    : schedule(schedule), specs(std::move(specs)), backend(backend),
      device(device), options(options) {}

DeviceExecutor::~DeviceExecutor() { release(); }

void DeviceExecutor::release() {
  for (DevicePtr p : args)
    backend.release(p);
  args.clear();
  if (arena)
    backend.release(arena);
  if (heap)
    backend.release(heap);
  arena = heap = 0;
  heapCapacity = 0;
}

std::string
DeviceExecutor::setArguments(const std::vector<const void *> &hostArgs,
                             const std::vector<Shape> &shapes,
                             const std::vector<std::vector<Shape>> &allShapes) {
  if (hostArgs.size() != schedule.args.size())
    return "schedule " + schedule.name + " takes " +
           std::to_string(schedule.args.size()) + " arguments, got " +
           std::to_string(hostArgs.size());
  if (std::string err = rank.bind(schedule, device, shapes, kAlignment);
      !err.empty())
    return err;
  release();
  runs = 0;
  // At least one byte each: every buffer gets its own address range.
  Status status = backend.allocate(
      static_cast<size_t>(std::max<int64_t>(schedule.arenaBytes, 1)), arena);
  heapCapacity = static_cast<size_t>(std::max<int64_t>(rank.heapBytes(), 1));
  if (status.ok())
    status = backend.allocate(heapCapacity, heap);
  argBytes.clear();
  for (size_t i = 0; status.ok() && i < hostArgs.size(); ++i) {
    size_t bytes = static_cast<size_t>(numElements(rank.argShapes()[i])) *
                   dtypeSize(schedule.args[i].type);
    argBytes.push_back(bytes);
    DevicePtr p = 0;
    status = backend.allocate(std::max<size_t>(bytes, 1), p);
    if (!status.ok())
      break;
    args.push_back(p);
    if (bytes)
      status = backend.upload(p, hostArgs[i], bytes);
  }
  if (!status.ok())
    return status.message();
  members.clear();
  if (options.cudaGraph) {
    bool collectives =
        std::any_of(schedule.steps.begin(), schedule.steps.end(),
                    [](const Step &s) { return isCollective(s.kind); });
    if (collectives && !backend.canCaptureCollectives())
      return "--cuda-graph: the collectives of " + backend.describe() +
             " go through host memory and cannot be captured (NCCL can: "
             "--comm nccl or --comm mpi)";
    if (allShapes.size() != static_cast<size_t>(schedule.mesh.numDevices()))
      return "--cuda-graph needs every rank's argument shapes";
  }
  // Every member's block shapes from the plan, so collectives need not
  // exchange them (a host synchronization per collective otherwise).
  if ((options.cudaGraph || options.planShapes) &&
      allShapes.size() == static_cast<size_t>(schedule.mesh.numDevices())) {
    members.resize(allShapes.size());
    for (size_t d = 0; d < allShapes.size(); ++d)
      if (std::string err = members[d].bind(schedule, static_cast<int64_t>(d),
                                            allShapes[d], kAlignment);
          !err.empty())
        return "rank " + std::to_string(d) + ": " + err;
  }
  return "";
}

DevicePtr DeviceExecutor::address(const BufferRef &ref) const {
  switch (ref.where) {
  case BufferRef::Where::Arg:
    return args[ref.index];
  case BufferRef::Where::Heap:
    return heap + static_cast<DevicePtr>(rank.heapOffset(ref.index));
  case BufferRef::Where::Arena:
    break;
  }
  return arena + static_cast<DevicePtr>(ref.index);
}

std::string DeviceExecutor::run() {
  if (args.size() != schedule.args.size())
    return "run before setArguments";
  // Run 0 executes (and sizes NCCL's scratch buffers), run 1 is captured,
  // later runs replay it.
  capture = options.cudaGraph && runs == 1;
  if (options.cudaGraph && runs >= 2) {
    ++runs;
    mode = "replayed";
    Status status = backend.replay();
    if (status.ok())
      status = backend.synchronize();
    return status.ok() ? "" : "graph replay: " + status.message();
  }
  mode = capture ? "captured" : "executed";
  if (capture)
    if (Status s = backend.beginCapture(); !s.ok())
      return "graph capture: " + s.message();
  pending.clear();
  stats = OverlapStats();
  computeSinceCollective = true;
  nextEvent = 0;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    if (static_cast<int64_t>(i) == failStep) {
      failStep = -1;
      if (capture)
        (void)backend.endCapture();
      return "step " + std::to_string(i) + ": injected fault";
    }
    // A traced step is bracketed by two timing marks on its stream.
    StreamId stream = isCollective(schedule.steps[i].kind) ? StreamId::Comm
                                                           : StreamId::Compute;
    bool timed = trace && !capture;
    if (timed)
      if (Status s = backend.timeMark(stream, 2 * static_cast<int64_t>(i));
          !s.ok())
        return "trace: " + s.message();
    std::string err = issue(i);
    if (timed && err.empty())
      if (Status s = backend.timeMark(stream, 2 * static_cast<int64_t>(i) + 1);
          !s.ok())
        err = "trace: " + s.message();
    if (!err.empty()) {
      if (capture)
        (void)backend.endCapture();
      (void)backend.synchronize();
      const Step &step = schedule.steps[i];
      return "step " + std::to_string(i) + " (" + stepKindName(step.kind) +
             (step.kind == StepKind::Kernel
                  ? " " + schedule.kernels[step.kernel]
                  : std::string()) +
             "): " + err;
    }
  }
  if (std::string err = joinStreams(); !err.empty())
    return err;
  ++runs;
  Status status;
  if (capture) {
    status = backend.endCapture();
    if (status.ok())
      status = backend.replay();
    if (!status.ok())
      return "graph capture: " + status.message();
  }
  status = backend.synchronize();
  if (!status.ok())
    return status.message();
  if (trace && !capture) {
    std::vector<double> us;
    int64_t n = static_cast<int64_t>(schedule.steps.size());
    if (Status s = backend.markTimes(2 * n, us); !s.ok())
      return "trace: " + s.message();
    for (int64_t i = 0; i < n; ++i) {
      plan::TraceEvent event = plan::describeStep(schedule, rank, i);
      event.startUs = us[2 * i];
      event.durationUs = std::max(0.0, us[2 * i + 1] - us[2 * i]);
      event.stream = isCollective(schedule.steps[i].kind) ? 1 : 0;
      trace->push_back(std::move(event));
    }
  }
  return "";
}

std::string DeviceExecutor::joinStreams() {
  // The step ends on the compute stream: it waits for the last collective.
  if (pending.empty())
    return "";
  Status s = backend.wait(StreamId::Compute, pending.back().event);
  retire(pending.size());
  return s.ok() ? "" : s.message();
}

namespace {
std::string describeStep(const Schedule &schedule, size_t index) {
  const Step &step = schedule.steps[index];
  std::string s =
      "step " + std::to_string(index) + " (" + stepKindName(step.kind);
  if (step.kind == StepKind::Kernel)
    s += " " + schedule.kernels[step.kernel];
  return s + ")";
}

bool overlaps(const Access &a, const Access &b) {
  return a.begin < b.end && b.begin < a.end;
}
} // namespace

std::string DeviceExecutor::issue(size_t index) {
  const Step &step = schedule.steps[index];
  OpInfo op;
  op.what = describeStep(schedule, index);
  // Which operands a step writes: a kernel its non-const buffers, a GEMM
  // C, every other step its output (operand 1).
  for (size_t k = 0; k < step.operands.size(); ++k) {
    const BufferRef &ref = step.operands[k];
    bool write;
    if (step.kind == StepKind::Kernel) {
      const KernelSpec &spec = specs[step.kernel];
      write = k >= spec.readOnly.size() || !spec.readOnly[k];
    } else if (step.kind == StepKind::Gemm) {
      write = k == 2;
    } else {
      write = k == 1;
    }
    DevicePtr begin = address(ref);
    op.accesses.push_back(
        {begin, begin + static_cast<DevicePtr>(rank.bytes(ref)), write});
  }
  if (isCollective(step.kind))
    return issueCollective(index, op);
  if (std::string err = computeWaitsFor(op); !err.empty())
    return err;
  computeSinceCollective = true;
  ++stats.computeSteps;
  stats.computeWhilePending += !pending.empty();
  for (Pending &p : pending)
    ++p.computeBehind;
  switch (step.kind) {
  case StepKind::Kernel:
    return issueKernel(step, op);
  case StepKind::Gemm:
    return issueGemm(step, op);
  default:
    return issueLocal(step, op);
  }
}

std::string DeviceExecutor::computeWaitsFor(const OpInfo &op) {
  // The communication stream runs in order: waiting for the latest pending
  // collective this step touches covers every earlier one.
  for (size_t p = pending.size(); p-- > 0;) {
    bool touches = false;
    for (const Access &a : op.accesses)
      for (const Access &b : pending[p].accesses)
        touches = touches || overlaps(a, b);
    if (!touches)
      continue;
    Status s = backend.wait(StreamId::Compute, pending[p].event);
    retire(p + 1);
    return s.ok() ? "" : s.message();
  }
  return "";
}

void DeviceExecutor::retire(size_t end) {
  for (size_t p = 0; p < end; ++p)
    stats.overlapped += pending[p].computeBehind > 0;
  pending.erase(pending.begin(), pending.begin() + end);
}

std::string DeviceExecutor::issueKernel(const Step &step, const OpInfo &op) {
  const KernelSpec &spec = specs[step.kernel];
  size_t buffers = step.operands.size();
  std::vector<Shape> shapes;
  for (const BufferRef &ref : step.operands)
    shapes.push_back(rank.resolve(ref));
  // Every parameter is 8 bytes: pointers, then index scalars, then dims.
  std::vector<int64_t> values;
  for (size_t k = 0; k < buffers; ++k)
    values.push_back(static_cast<int64_t>(address(step.operands[k])));
  for (int64_t slot : step.scalars)
    values.push_back(rank.sizes()[slot]);
  if (spec.dynamicDims.size() > buffers)
    return "kernel " + spec.name + " has more buffer arguments than the step";
  for (size_t k = 0; k < spec.dynamicDims.size(); ++k)
    for (int64_t d : spec.dynamicDims[k])
      values.push_back(shapes[k][d]);
  int64_t work = spec.workConstant;
  for (auto [arg, dim] : spec.workFactors) {
    if (dim >= 0) {
      work *= shapes[arg][dim];
      continue;
    }
    size_t scalar = static_cast<size_t>(arg) - buffers;
    if (static_cast<size_t>(arg) < buffers || scalar >= step.scalars.size())
      return "kernel " + spec.name + ": work factor of argument " +
             std::to_string(arg) + ", which is not an index argument";
    work *= rank.sizes()[step.scalars[scalar]];
  }
  std::vector<void *> params;
  for (int64_t &v : values)
    params.push_back(&v);
  LaunchDims dims = kernelLaunch(spec, work, backend.smCount());
  if (dims.grid == 0)
    return "";
  Status s =
      backend.launch(step.kernel, dims, params.data(), params.size(), op);
  return s.ok() ? "" : s.message();
}

std::string DeviceExecutor::issueGemm(const Step &step, const OpInfo &op) {
  Shape as = rank.resolve(step.operands[0]);
  Shape cs = rank.resolve(step.operands[2]);
  size_t o = cs.size() - 2;
  GemmDesc desc;
  desc.dtype = step.operands[2].type;
  desc.transA = step.transposeA;
  desc.transB = step.transposeB;
  desc.batch = cs.size() == 3 ? cs[0] : 1;
  desc.m = cs[o];
  desc.n = cs[o + 1];
  desc.k = step.transposeA ? as[o] : as[o + 1];
  desc.beta = static_cast<float>(step.beta);
  desc.allowTF32 = options.allowTF32 && desc.dtype == DType::F32;
  if (desc.m == 0 || desc.n == 0 || desc.batch == 0)
    return "";
  Status s;
  DevicePtr c = address(step.operands[2]);
  if (desc.k == 0) { // nothing to add; beta 0 still clears C
    if (step.beta == 0)
      s = backend.zero(c, static_cast<size_t>(rank.bytes(step.operands[2])),
                       op);
  } else {
    s = backend.gemm(desc, address(step.operands[0]), address(step.operands[1]),
                     c, op);
  }
  return s.ok() ? "" : s.message();
}

std::string DeviceExecutor::issueLocal(const Step &step, const OpInfo &op) {
  Shape in = rank.resolve(step.operands[0]);
  Shape out = rank.resolve(step.operands[1]);
  DevicePtr src = address(step.operands[0]), dst = address(step.operands[1]);
  size_t elem = dtypeSize(step.operands[0].type);
  size_t bytes = static_cast<size_t>(numElements(in)) * elem;
  Status s;
  switch (step.kind) {
  case StepKind::Copy:
    if (in != out)
      return "copies " + shapeStr(in) + " into " + shapeStr(out);
    if (src != dst && bytes)
      s = backend.copy2D(dst, bytes, src, bytes, bytes, 1, op);
    break;
  case StepKind::Shard: {
    // This member's torch.chunk along dim: rows of the dims before it, each
    // a contiguous run of the chunk.
    const Mesh &mesh = schedule.mesh;
    Range r = chunkRange(in[step.dim0], mesh.groupSize(step.axes),
                         mesh.groupIndex(device, step.axes));
    Shape box = in;
    box[step.dim0] = r.size;
    if (box != out)
      return "chunk " + shapeStr(box) + " does not fit output " + shapeStr(out);
    size_t rows = 1, inner = elem;
    for (size_t d = 0; d < in.size(); ++d) {
      if (d < static_cast<size_t>(step.dim0))
        rows *= static_cast<size_t>(in[d]);
      else if (d > static_cast<size_t>(step.dim0))
        inner *= static_cast<size_t>(in[d]);
    }
    size_t width = static_cast<size_t>(r.size) * inner;
    if (rows && width)
      s = backend.copy2D(dst, width, src + r.offset * inner,
                         static_cast<size_t>(in[step.dim0]) * inner, width,
                         rows, op);
    break;
  }
  case StepKind::PartialFromReplicated:
    // A sum's term is the value on group index 0 and zero elsewhere;
    // avg/max/min terms are the value itself.
    if (step.reduce == ReduceKind::Sum &&
        schedule.mesh.groupIndex(device, step.axes) != 0) {
      if (bytes)
        s = backend.zero(dst, bytes, op);
    } else if (src != dst && bytes) {
      s = backend.copy2D(dst, bytes, src, bytes, bytes, 1, op);
    }
    break;
  default:
    return "unknown step";
  }
  return s.ok() ? "" : s.message();
}

std::string DeviceExecutor::issueCollective(size_t index, const OpInfo &op) {
  const Step &step = schedule.steps[index];
  // The collective reads what compute produced, and may overwrite what
  // compute still reads: it waits for everything issued before it.
  if (computeSinceCollective) {
    int64_t ready = nextEvent++;
    Status s = backend.record(StreamId::Compute, ready);
    if (s.ok())
      s = backend.wait(StreamId::Comm, ready);
    if (!s.ok())
      return s.message();
    computeSinceCollective = false;
  }
  // Planned shapes always while capturing (nothing may wait for the host),
  // else unless the collectives are to verify themselves.
  bool planned = !members.empty() && (options.planShapes || capture);
  std::vector<Shape> memberShapes;
  if (planned)
    for (int64_t d : schedule.mesh.group(device, step.axes))
      memberShapes.push_back(members[d].resolve(step.operands[0]));
  Status s = backend.collective(
      step, address(step.operands[0]), rank.resolve(step.operands[0]),
      address(step.operands[1]), rank.resolve(step.operands[1]),
      planned ? &memberShapes : nullptr, op);
  if (!s.ok())
    return s.message();
  int64_t done = nextEvent++;
  if (Status r = backend.record(StreamId::Comm, done); !r.ok())
    return r.message();
  pending.push_back({done, op.accesses});
  ++stats.collectives;
  return "";
}

std::string DeviceExecutor::feedResults(size_t count) {
  OpInfo op;
  op.what = "feeding results into arguments";
  for (size_t i = 0; i < count; ++i) {
    const BufferRef &ref = schedule.resultRefs[i];
    if (rank.resolve(ref) != rank.argShapes()[i])
      return "result " + std::to_string(i) + " has local shape " +
             shapeStr(rank.resolve(ref)) + ", argument " + std::to_string(i) +
             " " + shapeStr(rank.argShapes()[i]) + ": cannot feed it back";
    DevicePtr src = address(ref);
    if (src == args[i] || argBytes[i] == 0)
      continue;
    op.accesses = {{src, src + argBytes[i], false},
                   {args[i], args[i] + argBytes[i], true}};
    Status s = backend.copy2D(args[i], argBytes[i], src, argBytes[i],
                              argBytes[i], 1, op);
    if (!s.ok())
      return s.message();
  }
  Status s = backend.synchronize();
  return s.ok() ? "" : s.message();
}

std::string DeviceExecutor::uploadArgument(size_t i, const void *data) {
  if (i >= args.size())
    return "argument " + std::to_string(i) + " out of range";
  if (argBytes[i] == 0)
    return "";
  Status s = backend.upload(args[i], data, argBytes[i]);
  return s.ok() ? "" : "argument " + std::to_string(i) + ": " + s.message();
}

std::string DeviceExecutor::downloadArgument(size_t i,
                                             std::vector<char> &bytes) {
  if (i >= args.size())
    return "argument " + std::to_string(i) + " out of range";
  bytes.assign(argBytes[i], 0);
  if (bytes.empty())
    return "";
  Status s = backend.download(bytes.data(), args[i], bytes.size());
  return s.ok() ? "" : "argument " + std::to_string(i) + ": " + s.message();
}

Shape DeviceExecutor::resultShape(size_t i) const {
  return rank.resolve(schedule.resultRefs[i]);
}

std::string DeviceExecutor::downloadResult(size_t i, std::vector<char> &bytes) {
  const BufferRef &ref = schedule.resultRefs[i];
  bytes.assign(static_cast<size_t>(rank.bytes(ref)), 0);
  if (bytes.empty())
    return "";
  Status s = backend.download(bytes.data(), address(ref), bytes.size());
  return s.ok() ? "" : "result " + std::to_string(i) + ": " + s.message();
}

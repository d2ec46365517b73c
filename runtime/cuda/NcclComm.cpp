//===- NcclComm.cpp - Collectives on GPUs through NCCL --------------------===//

#include "runtime/cuda/NcclComm.h"

#include "runtime/cuda/TcpStore.h"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace spmd {
namespace cuda {

namespace {

using Clock = std::chrono::steady_clock;

using namespace callheader;

bool hasData(CollectiveKind k) {
  return k != CollectiveKind::Barrier && k != CollectiveKind::Fingerprint;
}

ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F64:
    return ncclFloat64;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  default:
    return ncclFloat32;
  }
}

ncclRedOp_t ncclOp(ReduceKind k) {
  switch (k) {
  case ReduceKind::Avg:
    return ncclAvg;
  case ReduceKind::Max:
    return ncclMax;
  case ReduceKind::Min:
    return ncclMin;
  default:
    return ncclSum;
  }
}

int64_t prod(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i)
    p *= s[i];
  return p;
}

} // namespace

struct NcclComm::State {
  struct Group {
    ncclComm_t comm = nullptr;
    std::vector<int64_t> members;
    int64_t index = 0;
  };
  std::unique_ptr<Device> device;
  std::unique_ptr<Stream> ownStream;
  CUstream stream = nullptr;
  ncclComm_t world = nullptr;
  std::map<Axes, Group> groups;
  CUdeviceptr scratch = 0;
  size_t scratchBytes = 0;
  CUdeviceptr wide = 0; // f32 copies of 16-bit operands of reductions
  size_t wideBytes = 0;
  std::unique_ptr<Module> convertModule;
  Recompiler recompile;
  bool nativeHalfReduce = false;
  std::vector<Shape> plannedShapes; // for the next collective only
  std::string aborted;              // non-empty once aborted: the reason
  std::vector<int64_t> hostHeaders;

  const DriverApi &api() const { return device->api(); }

  std::vector<ncclComm_t> comms() const {
    std::vector<ncclComm_t> all;
    for (auto &g : groups)
      if (g.second.comm)
        all.push_back(g.second.comm);
    if (world)
      all.push_back(world);
    return all;
  }

  void abortAll() {
    for (ncclComm_t c : comms())
      ncclCommAbort(c);
    for (auto &g : groups)
      g.second.comm = nullptr;
    world = nullptr;
  }

  Status fail(const std::string &message) {
    if (aborted.empty())
      aborted = message;
    abortAll();
    return Status::error(message);
  }

  Clock::time_point deadline(double seconds) const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(seconds));
  }

  /// Waits for a non-blocking NCCL call on `comm` to finish.
  Status waitComm(ncclComm_t comm, const std::string &what, double timeout) {
    auto end = deadline(timeout);
    while (true) {
      ncclResult_t async = ncclSuccess;
      ncclResult_t rc = ncclCommGetAsyncError(comm, &async);
      if (rc != ncclSuccess)
        return fail(what +
                    ": ncclCommGetAsyncError: " + ncclGetErrorString(rc));
      if (async == ncclSuccess)
        return Status::success();
      if (async != ncclInProgress)
        return fail(what + ": " + ncclGetErrorString(async) + " (" +
                    ncclGetLastError(comm) + ")");
      if (Clock::now() > end)
        return fail(what + " did not complete within " +
                    std::to_string(timeout) +
                    " s; aborting the NCCL "
                    "communicators");
      std::this_thread::yield();
    }
  }

  /// Checks a (possibly in-progress) NCCL call's result.
  Status check(ncclResult_t rc, ncclComm_t comm, const std::string &what,
               double timeout) {
    if (rc == ncclInProgress && comm)
      return waitComm(comm, what, timeout);
    if (rc != ncclSuccess)
      return fail(what + ": " + ncclGetErrorString(rc) +
                  (comm ? std::string(" (") + ncclGetLastError(comm) + ")"
                        : std::string()));
    return Status::success();
  }

  /// Waits for the stream while watching every communicator for errors.
  Status waitStream(const std::string &what, double timeout) {
    auto end = deadline(timeout);
    while (true) {
      CUresult r = api().cuStreamQuery(stream);
      if (r == CUDA_SUCCESS)
        return Status::success();
      if (r != CUDA_ERROR_NOT_READY)
        return fail(what + ": " + errorText(api(), r));
      for (ncclComm_t c : comms()) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(c, &async);
        if (async != ncclSuccess && async != ncclInProgress)
          return fail(what + ": " + ncclGetErrorString(async) + " (" +
                      ncclGetLastError(c) + ")");
      }
      if (Clock::now() > end)
        return fail(what + " did not complete within " +
                    std::to_string(timeout) +
                    " s; aborting the NCCL communicators");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  Status ensureScratch(size_t bytes, double timeout) {
    if (bytes <= scratchBytes)
      return Status::success();
    // Earlier collectives may still use the old buffer.
    Status s = waitStream("growing the NCCL scratch buffer", timeout);
    if (!s.ok())
      return s;
    if (scratch)
      api().cuMemFree(scratch);
    scratch = 0;
    scratchBytes = 0;
    size_t want = std::max(bytes, scratchBytes * 2);
    CUresult r = api().cuMemAlloc(&scratch, want);
    if (r != CUDA_SUCCESS)
      return Status::error("NCCL scratch buffer of " + std::to_string(want) +
                           " bytes: " + errorText(api(), r));
    scratchBytes = want;
    return Status::success();
  }

  Status ensureWide(size_t bytes, double timeout) {
    if (bytes <= wideBytes)
      return Status::success();
    Status s = waitStream("growing the f32 reduction buffer", timeout);
    if (!s.ok())
      return s;
    if (wide)
      api().cuMemFree(wide);
    wide = 0;
    wideBytes = 0;
    CUresult r = api().cuMemAlloc(&wide, bytes);
    if (r != CUDA_SUCCESS)
      return Status::error("f32 reduction buffer of " + std::to_string(bytes) +
                           " bytes: " + errorText(api(), r));
    wideBytes = bytes;
    return Status::success();
  }

  /// Converts `n` elements between a 16-bit float type and f32 on the
  /// stream (kernels of the library, compiled through `recompile` on first
  /// use).
  Status convert(DType half, bool toF32, CUdeviceptr in, CUdeviceptr out,
                 int64_t n) {
    if (n == 0)
      return Status::success();
    if (!convertModule) {
      if (!recompile)
        return Status::error("f16/bf16 reductions in f32 need kernels "
                             "compiled for the GPU: no Recompiler set "
                             "(NcclComm::setRecompiler)");
      static const char *source =
          "#include \"spmd_kernels.cuh\"\n"
          "#define C(S, T) extern \"C\" __global__ void spmd_convert_##S##_f32("
          "const T *i, float *o, long long n) { spmdk::convert(i, o, n); } "
          "extern \"C\" __global__ void spmd_convert_f32_##S(const float *i, "
          "T *o, long long n) { spmdk::convert(i, o, n); }\n"
          "C(f16, spmdk::f16)\nC(bf16, spmdk::bf16)\n";
      // Source only: loading compiles it for the device.
      CompiledModule m;
      m.name = "nccl_convert.cu";
      m.source = source;
      Status s = Module::load(*device, m, recompile, convertModule);
      if (!s.ok())
        return s;
    }
    std::string suffix = half == DType::F16 ? "f16" : "bf16";
    std::string name = toF32 ? "spmd_convert_" + suffix + "_f32"
                             : "spmd_convert_f32_" + suffix;
    CUfunction fn;
    Status s = convertModule->function(name, fn);
    if (!s.ok())
      return s;
    LaunchDims d = elementwiseLaunch(n, device->smCount());
    void *args[] = {&in, &out, &n};
    return cuda::check(api(),
                       api().cuLaunchKernel(fn, d.grid, 1, 1, d.block, 1, 1, 0,
                                            stream, args, nullptr),
                       "launching " + name);
  }

  /// Row-strided device copy: `height` rows of `width` bytes.
  Status copy2D(CUdeviceptr dst, size_t dstPitch, CUdeviceptr src,
                size_t srcPitch, size_t width, size_t height) {
    if (!width || !height)
      return Status::success();
    if (height == 1 || (dstPitch == width && srcPitch == width))
      return cuda::check(
          api(), api().cuMemcpyDtoDAsync(dst, src, width * height, stream),
          "cuMemcpyDtoDAsync");
    CUDA_MEMCPY2D m;
    std::memset(&m, 0, sizeof m);
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = src;
    m.srcPitch = srcPitch;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = dst;
    m.dstPitch = dstPitch;
    m.WidthInBytes = width;
    m.Height = height;
    return cuda::check(api(), api().cuMemcpy2DAsync(&m, stream),
                       "cuMemcpy2DAsync");
  }
};

NcclComm::NcclComm(const Mesh &mesh, int64_t device)
    : Communicator(mesh, device), state(std::make_unique<State>()) {}

NcclComm::~NcclComm() {
  State &st = *state;
  if (!st.device)
    return;
  (void)st.device->makeCurrent();
  if (st.aborted.empty()) {
    // Orderly teardown; abort is the fallback if finalize cannot finish.
    for (ncclComm_t c : st.comms()) {
      ncclResult_t rc = ncclCommFinalize(c);
      if (rc == ncclSuccess || rc == ncclInProgress)
        (void)st.waitComm(c, "ncclCommFinalize",
                          std::min(timeoutSeconds(), 10.0));
    }
    for (ncclComm_t c : st.comms())
      ncclCommDestroy(c);
  } else {
    st.abortAll();
  }
  if (st.scratch)
    st.api().cuMemFree(st.scratch);
  if (st.wide)
    st.api().cuMemFree(st.wide);
}

void NcclComm::setNativeHalfReduce(bool on) { state->nativeHalfReduce = on; }
void NcclComm::setRecompiler(Recompiler recompile) {
  state->recompile = std::move(recompile);
}
void NcclComm::setPlannedShapes(std::vector<Shape> memberShapes) {
  state->plannedShapes = std::move(memberShapes);
}

const Device &NcclComm::gpu() const { return *state->device; }
void NcclComm::setStream(CUstream s) {
  state->stream = s ? s : state->ownStream->get();
}
CUstream NcclComm::stream() const { return state->stream; }

void NcclComm::abort(const std::string &reason) {
  State &st = *state;
  if (st.aborted.empty())
    st.aborted = "rank " + std::to_string(device()) + " aborted: " + reason;
  st.abortAll();
}

Status NcclComm::synchronize() {
  if (!state->aborted.empty())
    return Status::error(state->aborted);
  return state->waitStream("synchronizing the NCCL stream", timeoutSeconds());
}

Status NcclComm::newUniqueId(std::string &id) {
  ncclUniqueId uid;
  ncclResult_t rc = ncclGetUniqueId(&uid);
  if (rc != ncclSuccess)
    return Status::error(std::string("ncclGetUniqueId: ") +
                         ncclGetErrorString(rc) + " (" +
                         ncclGetLastError(nullptr) + ")");
  id.assign(uid.internal, sizeof uid.internal);
  return Status::success();
}

Status NcclComm::create(const Mesh &mesh, int64_t device, int gpu,
                        const std::string &uniqueId, double timeoutSeconds,
                        std::unique_ptr<NcclComm> &comm) {
  std::string bad = mesh.validate();
  if (!bad.empty())
    return Status::error("nccl: bad mesh: " + bad);
  if (device < 0 || device >= mesh.numDevices())
    return Status::error("nccl: device " + std::to_string(device) +
                         " is outside the mesh of " +
                         std::to_string(mesh.numDevices()) + " devices");
  if (uniqueId.size() != sizeof(ncclUniqueId))
    return Status::error("nccl: the unique id has " +
                         std::to_string(uniqueId.size()) + " bytes, not " +
                         std::to_string(sizeof(ncclUniqueId)));
  std::unique_ptr<NcclComm> c(new NcclComm(mesh, device));
  c->setTimeoutSeconds(timeoutSeconds);
  State &st = *c->state;
  std::string where = "nccl rank " + std::to_string(device);
  Status s = Device::open(gpu, st.device);
  if (!s.ok())
    return Status::error(where + ": " + s.message());
  s = Stream::create(*st.device, st.ownStream);
  if (!s.ok())
    return Status::error(where + ": " + s.message());
  st.stream = st.ownStream->get();
  ncclUniqueId uid;
  std::memcpy(uid.internal, uniqueId.data(), sizeof uid.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // every wait is ours, with a timeout
  ncclResult_t rc =
      ncclCommInitRankConfig(&st.world, static_cast<int>(mesh.numDevices()),
                             uid, static_cast<int>(device), &config);
  s = st.check(rc, st.world, where + ": ncclCommInitRankConfig",
               timeoutSeconds);
  // A non-blocking init may still be connecting after returning success.
  if (s.ok() && st.world)
    s = st.waitComm(st.world, where + ": ncclCommInitRankConfig",
                    timeoutSeconds);
  if (!s.ok())
    return s;
  comm = std::move(c);
  return Status::success();
}

Status NcclComm::createFromEnv(const Mesh &mesh, double timeoutSeconds,
                               std::unique_ptr<NcclComm> &comm) {
  LaunchEnv env;
  Status s = readLaunchEnv(env);
  if (!s.ok())
    return s;
  if (env.worldSize != mesh.numDevices())
    return Status::error("WORLD_SIZE " + std::to_string(env.worldSize) +
                         " differs from the mesh's " +
                         std::to_string(mesh.numDevices()) + " devices");
  // Fail on a missing GPU before anything waits for peers.
  int count = 0;
  s = deviceCount(count);
  if (!s.ok())
    return s;
  std::string id(sizeof(ncclUniqueId), '\0');
  if (env.rank == 0) {
    s = newUniqueId(id);
    if (!s.ok())
      return s;
  }
  s = shareFromRankZero(env, id, timeoutSeconds);
  if (!s.ok())
    return s;
  return create(mesh, env.rank, env.localRank, id, timeoutSeconds, comm);
}

Status
NcclComm::createSingleProcess(const Mesh &mesh, const std::vector<int> &gpus,
                              double timeoutSeconds,
                              std::vector<std::unique_ptr<NcclComm>> &comms) {
  if (static_cast<int64_t>(gpus.size()) != mesh.numDevices())
    return Status::error("nccl: " + std::to_string(gpus.size()) +
                         " GPUs for a mesh of " +
                         std::to_string(mesh.numDevices()) + " devices");
  int count = 0;
  Status s = deviceCount(count);
  if (!s.ok())
    return s;
  std::string id;
  s = newUniqueId(id);
  if (!s.ok())
    return s;
  size_t n = gpus.size();
  comms.clear();
  comms.resize(n);
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      results[i] = create(mesh, static_cast<int64_t>(i), gpus[i], id,
                          timeoutSeconds, comms[i]);
    });
  for (std::thread &t : threads)
    t.join();
  for (size_t i = 0; i < n; ++i)
    if (!results[i].ok()) {
      for (auto &c : comms)
        if (c)
          c->abort("another rank failed to initialize");
      comms.clear();
      return results[i];
    }
  return Status::success();
}

CollectiveResult NcclComm::shardOnDevice(const InBlock &in, OutBlock out,
                                         const Axes &axes, int64_t dim) {
  State &st = *state;
  int64_t rank = static_cast<int64_t>(in.shape.size());
  if (dim < 0 || dim >= rank)
    return {Status::error("shard: dim " + std::to_string(dim) +
                          " is outside a rank-" + std::to_string(rank) +
                          " block"),
            {}};
  int64_t n = mesh().groupSize(axes);
  int64_t idx = mesh().groupIndex(device(), axes);
  Range r = chunkRange(in.shape[dim], n, idx);
  Shape outShape = in.shape;
  outShape[dim] = r.size;
  size_t es = dtypeSize(in.dtype);
  size_t bytes = numElements(outShape) * es;
  if (bytes > out.capacityBytes)
    return {Status::error("shard: the output needs " + std::to_string(bytes) +
                          " bytes, capacity " +
                          std::to_string(out.capacityBytes)),
            {}};
  size_t inner = prod(in.shape, dim + 1, rank) * es;
  size_t outer = prod(in.shape, 0, dim);
  Status s =
      st.copy2D(reinterpret_cast<CUdeviceptr>(out.data), r.size * inner,
                reinterpret_cast<CUdeviceptr>(in.data) + r.offset * inner,
                in.shape[dim] * inner, r.size * inner, outer);
  return {s, s.ok() ? outShape : Shape()};
}

CollectiveResult NcclComm::execute(const CallDesc &call, const Axes &axes,
                                   const void *inPtr, void *outPtr) {
  State &st = *state;
  std::string where = describeCall(call, axes);
  auto fail = [&](const std::string &m) -> CollectiveResult {
    return {Status::error(where + ": " + m), {}};
  };
  if (!st.aborted.empty())
    return fail("the NCCL communicators were aborted: " + st.aborted);
  Status s = st.device->makeCurrent();
  if (!s.ok())
    return fail(s.message());
  CUdeviceptr in = reinterpret_cast<CUdeviceptr>(inPtr);
  CUdeviceptr out = reinterpret_cast<CUdeviceptr>(outPtr);
  double timeout = timeoutSeconds();
  size_t es = dtypeSize(call.dtype);

  // A group of one member (no axes, or axes of size 1) moves nothing: a
  // local copy, without a communicator (SPMD_NCCL_SELF_GROUPS=1 sends such
  // groups through NCCL anyway, to test NCCL on one GPU).
  static const bool selfGroups = [] {
    const char *v = std::getenv("SPMD_NCCL_SELF_GROUPS");
    return v && std::string(v) == "1";
  }();
  if (axes.empty() || (mesh().groupSize(axes) == 1 && !selfGroups)) {
    st.plannedShapes.clear(); // for this collective only
    std::vector<Shape> outShapes;
    s = planCollective(mesh(), {device()}, {&call}, verifyCollectives(),
                       outShapes);
    if (!s.ok())
      return fail(s.message());
    size_t bytes = numElements(call.shape) * es;
    if (hasData(call.kind) && bytes && out != in)
      s = cuda::check(st.api(),
                      st.api().cuMemcpyDtoDAsync(out, in, bytes, st.stream),
                      "cuMemcpyDtoDAsync");
    return {s.ok() ? s : Status::error(where + ": " + s.message()),
            outShapes[0]};
  }

  // The group's communicator, split from the world on first use.
  auto git = st.groups.find(axes);
  if (git == st.groups.end()) {
    State::Group g;
    g.members = mesh().group(device(), axes);
    g.index = mesh().groupIndex(device(), axes);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc =
        ncclCommSplit(st.world, static_cast<int>(g.members[0]),
                      static_cast<int>(g.index), &g.comm, &config);
    // Non-blocking, the split may fill in the child's handle only when it
    // completes: wait on the parent first, then on the child.
    if (rc == ncclSuccess || rc == ncclInProgress)
      s = st.waitComm(st.world, where + ": ncclCommSplit", timeout);
    else
      s = st.check(rc, st.world, where + ": ncclCommSplit", timeout);
    if (s.ok() && !g.comm)
      s = st.fail(where + ": ncclCommSplit gave no communicator for the " +
                  std::to_string(g.members.size()) + "-member group");
    if (s.ok())
      s = st.waitComm(g.comm, where + ": ncclCommSplit", timeout);
    if (!s.ok())
      return {s, {}};
    git = st.groups.emplace(axes, std::move(g)).first;
  }
  State::Group &g = git->second;
  const int n = static_cast<int>(g.members.size());
  const int me = static_cast<int>(g.index);
  ncclComm_t comm = g.comm;
  auto nccl = [&](ncclResult_t rc, const char *what) {
    return st.check(rc, comm, where + ": " + what, timeout);
  };

  std::vector<CallDesc> calls(n);
  std::vector<const CallDesc *> ptrs(n);
  bool verify = false;
  std::vector<Shape> planned;
  planned.swap(st.plannedShapes);
  if (!planned.empty()) {
    // 1'. The plan knows every member's shape: no exchange, no host sync.
    if (static_cast<int>(planned.size()) != n)
      return fail(std::to_string(planned.size()) +
                  " planned shapes for a group of " + std::to_string(n));
    if (planned[me] != call.shape)
      return fail("the planned shape " + shapeStr(planned[me]) +
                  " of this member differs from its block " +
                  shapeStr(call.shape));
    for (int i = 0; i < n; ++i) {
      calls[i] = call;
      calls[i].shape = planned[i];
      calls[i].fingerprint.sequence = call.fingerprint.sequence;
      ptrs[i] = &calls[i];
    }
  } else {
    // 1. Exchange headers through the group (device round trip).
    size_t headerBytes = kHeaderWords * sizeof(int64_t);
    st.hostHeaders.assign(kHeaderWords * (n + 1), 0);
    int64_t *mine = st.hostHeaders.data() + kHeaderWords * n;
    bool fits = encode(call, mine);
    if (!fits)
      mine[hRank] = -1;
    mine[hVerify] = verifyCollectives();
    s = st.ensureScratch(headerBytes * (n + 1), timeout);
    if (!s.ok())
      return fail(s.message());
    CUdeviceptr hdrAll = st.scratch, hdrMine = st.scratch + headerBytes * n;
    if (!(s = cuda::check(
              st.api(),
              st.api().cuMemcpyHtoDAsync(hdrMine, mine, headerBytes, st.stream),
              "header upload"))
             .ok() ||
        !(s = nccl(ncclAllGather(reinterpret_cast<void *>(hdrMine),
                                 reinterpret_cast<void *>(hdrAll), kHeaderWords,
                                 ncclInt64, comm, st.stream),
                   "ncclAllGather (headers)"))
             .ok() ||
        !(s = cuda::check(st.api(),
                          st.api().cuMemcpyDtoHAsync(st.hostHeaders.data(),
                                                     hdrAll, headerBytes * n,
                                                     st.stream),
                          "header download"))
             .ok() ||
        !(s = st.waitStream(where + " (header exchange)", timeout)).ok())
      return {Status::error(s.message().rfind(where, 0) == 0
                                ? s.message()
                                : where + ": " + s.message()),
              {}};
    for (int i = 0; i < n; ++i) {
      const int64_t *h = st.hostHeaders.data() + i * kHeaderWords;
      verify |= h[hVerify] != 0;
      if (h[hRank] < 0)
        return fail(
            "member " + std::to_string(i) + " (rank " +
            std::to_string(g.members[i]) + ") passes a block of more than " +
            std::to_string(kMaxRank) + " dims or a group of more than " +
            std::to_string(kMaxAxes) + " axes");
      calls[i] = decode(h);
      ptrs[i] = &calls[i];
    }
  }
  std::vector<Shape> outShapes;
  s = planCollective(mesh(), g.members, ptrs, verify, outShapes);
  if (!s.ok())
    return fail(s.message());
  Shape outShape = outShapes[me];
  if (!hasData(call.kind))
    return {Status::success(), outShape};

  // 2. Move the data. Reductions of f16/bf16 run in f32 (as on the CPU
  // backends) unless native 16-bit reduction was asked for: widen into the
  // f32 buffer, reduce there, narrow into `out` afterwards.
  ncclDataType_t type = ncclType(call.dtype);
  const bool widen = (call.kind == CollectiveKind::AllReduce ||
                      call.kind == CollectiveKind::ReduceScatter) &&
                     (call.dtype == DType::F16 || call.dtype == DType::BF16) &&
                     !st.nativeHalfReduce;
  CUdeviceptr finalOut = out;
  if (widen) {
    int64_t nin = numElements(call.shape), nout = numElements(outShape);
    size_t inBytes = DeviceArena::align(nin * 4);
    s = st.ensureWide(inBytes + nout * 4 + 4, timeout);
    if (s.ok())
      s = st.convert(call.dtype, true, in, st.wide, nin);
    if (!s.ok())
      return fail(s.message());
    in = st.wide;
    out = st.wide + inBytes;
    inPtr = reinterpret_cast<const void *>(in);
    outPtr = reinterpret_cast<void *>(out);
    es = 4;
    type = ncclFloat32;
  }
  const size_t rank = call.shape.size();
  auto ok = [&](Status r) -> CollectiveResult {
    if (r.ok() && widen)
      r = st.convert(call.dtype, false, out, finalOut, numElements(outShape));
    if (!r.ok())
      return {Status::error(r.message().rfind(where, 0) == 0
                                ? r.message()
                                : where + ": " + r.message()),
              {}};
    return {Status::success(), outShape};
  };
  switch (call.kind) {
  case CollectiveKind::AllGather: {
    const int64_t dim = call.dim0;
    const size_t outer = prod(call.shape, 0, dim);
    const size_t inner = prod(call.shape, dim + 1, rank) * es;
    int64_t dmax = 0, total = 0;
    bool even = true;
    for (int i = 0; i < n; ++i) {
      dmax = std::max(dmax, calls[i].shape[dim]);
      total += calls[i].shape[dim];
      even &= calls[i].shape[dim] == calls[0].shape[dim];
    }
    if (even && outer == 1)
      return ok(nccl(ncclAllGather(inPtr, outPtr, call.shape[dim] * inner,
                                   ncclInt8, comm, st.stream),
                     "ncclAllGather"));
    if (dmax == 0 || outer == 0 || inner == 0)
      return ok(Status::success());
    const size_t padded = outer * dmax * inner; // bytes per member
    s = st.ensureScratch(padded * (n + 1), timeout);
    if (!s.ok())
      return ok(s);
    CUdeviceptr gathered = st.scratch, mineP = st.scratch + padded * n;
    const size_t myW = call.shape[dim] * inner;
    if (!(s = st.copy2D(mineP, dmax * inner, in, myW, myW, outer)).ok() ||
        !(s = nccl(ncclAllGather(reinterpret_cast<void *>(mineP),
                                 reinterpret_cast<void *>(gathered), padded,
                                 ncclInt8, comm, st.stream),
                   "ncclAllGather (padded)"))
             .ok())
      return ok(s);
    int64_t prefix = 0;
    for (int i = 0; i < n; ++i) {
      size_t w = calls[i].shape[dim] * inner;
      s = st.copy2D(out + prefix * inner, total * inner, gathered + padded * i,
                    dmax * inner, w, outer);
      if (!s.ok())
        return ok(s);
      prefix += calls[i].shape[dim];
    }
    return ok(Status::success());
  }
  case CollectiveKind::AllReduce: {
    if (call.reduce == ReduceKind::Avg && !isFloat(call.dtype))
      return fail("integer avg is not supported by the NCCL backend");
    return ok(nccl(ncclAllReduce(inPtr, outPtr, numElements(call.shape), type,
                                 ncclOp(call.reduce), comm, st.stream),
                   "ncclAllReduce"));
  }
  case CollectiveKind::ReduceScatter: {
    if (call.reduce == ReduceKind::Avg && !isFloat(call.dtype))
      return fail("integer avg is not supported by the NCCL backend");
    const int64_t dim = call.dim0;
    const size_t outer = prod(call.shape, 0, dim);
    const size_t innerE = prod(call.shape, dim + 1, rank); // elements
    const size_t inner = innerE * es;
    const int64_t full = call.shape[dim];
    int64_t cmax = 0;
    bool even = true;
    for (int i = 0; i < n; ++i) {
      cmax = std::max(cmax, outShapes[i][dim]);
      even &= outShapes[i][dim] == outShapes[0][dim];
    }
    if (even && outer == 1)
      return ok(nccl(ncclReduceScatter(inPtr, outPtr, cmax * innerE, type,
                                       ncclOp(call.reduce), comm, st.stream),
                     "ncclReduceScatter"));
    if (cmax == 0 || outer == 0 || innerE == 0)
      return ok(Status::success());
    const size_t q = outer * cmax * inner; // padded bytes per member
    s = st.ensureScratch(q * (n + 1), timeout);
    if (!s.ok())
      return ok(s);
    CUdeviceptr packed = st.scratch, recv = st.scratch + q * n;
    // Zero padding: finite for every reduction, and discarded afterwards.
    s = cuda::check(st.api(),
                    st.api().cuMemsetD8Async(packed, 0, q * n, st.stream),
                    "cuMemsetD8Async");
    int64_t prefix = 0;
    for (int j = 0; j < n && s.ok(); ++j) {
      size_t w = outShapes[j][dim] * inner;
      s = st.copy2D(packed + q * j, cmax * inner, in + prefix * inner,
                    full * inner, w, outer);
      prefix += outShapes[j][dim];
    }
    if (s.ok())
      s = nccl(ncclReduceScatter(reinterpret_cast<void *>(packed),
                                 reinterpret_cast<void *>(recv),
                                 outer * cmax * innerE, type,
                                 ncclOp(call.reduce), comm, st.stream),
               "ncclReduceScatter (padded)");
    if (s.ok()) {
      size_t w = outShape[dim] * inner;
      s = st.copy2D(out, w, recv, cmax * inner, w, outer);
    }
    return ok(s);
  }
  case CollectiveKind::AllToAll: {
    const int64_t split = call.dim0, concat = call.dim1;
    // What member j sends to member i: j's chunk i along `split`.
    auto chunkShape = [&](int j, int i) {
      Shape sh = calls[j].shape;
      sh[split] = chunkRange(calls[j].shape[split], n, i).size;
      return sh;
    };
    std::vector<size_t> sendOff(n + 1, 0), recvOff(n + 1, 0);
    for (int j = 0; j < n; ++j) {
      sendOff[j + 1] = sendOff[j] + numElements(chunkShape(me, j)) * es;
      recvOff[j + 1] = recvOff[j] + numElements(chunkShape(j, me)) * es;
    }
    s = st.ensureScratch(sendOff[n] + recvOff[n], timeout);
    if (!s.ok())
      return ok(s);
    CUdeviceptr sendBuf = st.scratch, recvBuf = st.scratch + sendOff[n];
    // Pack my chunks contiguously.
    const size_t sOuter = prod(call.shape, 0, split);
    const size_t sInner = prod(call.shape, split + 1, rank) * es;
    for (int j = 0; j < n && s.ok(); ++j) {
      Range r = chunkRange(call.shape[split], n, j);
      s = st.copy2D(sendBuf + sendOff[j], r.size * sInner,
                    in + r.offset * sInner, call.shape[split] * sInner,
                    r.size * sInner, sOuter);
    }
    if (!s.ok())
      return ok(s);
    s = nccl(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < n && s.ok(); ++j) {
      size_t sb = sendOff[j + 1] - sendOff[j], rb = recvOff[j + 1] - recvOff[j];
      if (sb)
        s = nccl(ncclSend(reinterpret_cast<void *>(sendBuf + sendOff[j]), sb,
                          ncclInt8, j, comm, st.stream),
                 "ncclSend");
      if (s.ok() && rb)
        s = nccl(ncclRecv(reinterpret_cast<void *>(recvBuf + recvOff[j]), rb,
                          ncclInt8, j, comm, st.stream),
                 "ncclRecv");
    }
    if (s.ok())
      s = nccl(ncclGroupEnd(), "ncclGroupEnd");
    if (!s.ok())
      return ok(s);
    // Unpack along `concat` in group order.
    const size_t cOuter = prod(outShape, 0, concat);
    const size_t cInner = prod(outShape, concat + 1, rank) * es;
    int64_t prefix = 0;
    for (int j = 0; j < n && s.ok(); ++j) {
      int64_t cj = chunkShape(j, me)[concat];
      s = st.copy2D(out + prefix * cInner, outShape[concat] * cInner,
                    recvBuf + recvOff[j], cj * cInner, cj * cInner, cOuter);
      prefix += cj;
    }
    return ok(s);
  }
  default:
    return ok(Status::success());
  }
}

} // namespace cuda
} // namespace spmd

//===- EmuBackend.cpp - A GPU emulated on the host ------------------------===//

#include "runtime/cuda/EmuBackend.h"

#include "runtime/Executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace spmd;
using namespace spmd::cuda;

//===----------------------------------------------------------------------===//
// EmuModule
//===----------------------------------------------------------------------===//

namespace {
/// Runs `argv` with stdout and stderr into `logPath`; the exit status.
int runLogged(const std::vector<std::string> &argv, const std::string &logPath,
              std::string &error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::string("waitpid: ") + std::strerror(errno);
      return -1;
    }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string tail(const std::string &path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}
} // namespace

Status EmuModule::build(const std::string &source, const std::string &cxx,
                        const std::string &sourceRoot,
                        const std::string &workDir,
                        std::unique_ptr<EmuModule> &module) {
  std::string dir = workDir;
  if (dir.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/spmd-emu-XXXXXX";
    if (!mkdtemp(pattern.data()))
      return Status::error("cannot create a directory like " + pattern + ": " +
                           std::strerror(errno));
    dir = pattern;
  } else {
    mkdir(dir.c_str(), 0755);
  }
  std::string src = dir + "/kernels.cpp", so = dir + "/kernels.so",
              log = dir + "/compile.log";
  {
    std::ofstream out(src);
    out << "#include <string>\n" << source << "\n";
    if (!out)
      return Status::error("cannot write " + src);
  }
  std::vector<std::string> argv = {cxx,
                                   "-std=c++17",
                                   "-O1",
                                   "-fPIC",
                                   "-shared",
                                   "-w",
                                   "-I" + sourceRoot,
                                   "-I" + sourceRoot + "/runtime/cuda/kernels",
                                   src,
                                   sourceRoot + "/runtime/cuda/HostEmu.cpp",
                                   sourceRoot + "/runtime/DType.cpp",
                                   "-o",
                                   so};
  std::string error;
  int rc = runLogged(argv, log, error);
  if (rc < 0)
    return Status::error(error);
  if (rc != 0)
    return Status::error("host compilation of " + src + " failed (" + cxx +
                         " exit " + std::to_string(rc) +
                         "): " + tail(log, 2000));
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status::error(std::string("dlopen: ") + dlerror());
  // A temporary folder goes once loaded (a failed build keeps it, named in
  // the message, for a look at the source and the log).
  if (workDir.empty()) {
    for (const std::string &f : {src, so, log})
      unlink(f.c_str());
    rmdir(dir.c_str());
  }
  module.reset(new EmuModule());
  module->handle = handle;
  module->so = so;
  return Status::success();
}

EmuModule::~EmuModule() {
  if (handle)
    dlclose(handle);
}

Status EmuModule::entry(const std::string &kernel, EmuEntry &fn) const {
  fn = reinterpret_cast<EmuEntry>(dlsym(handle, ("spmdemu_" + kernel).c_str()));
  if (!fn)
    return Status::error("no emulation entry for kernel " + kernel + " in " +
                         so);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// EmuBackend
//===----------------------------------------------------------------------===//

EmuBackend::EmuBackend(std::vector<EmuEntry> kernels, plan::Collectives *comm,
                       int smCount)
    : kernels(std::move(kernels)), comm(comm), sms(smCount) {}

EmuBackend::~EmuBackend() {
  for (auto &[ptr, mem] : allocations)
    std::free(mem);
}

Status EmuBackend::allocate(size_t bytes, DevicePtr &ptr) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *mem = std::aligned_alloc(256, rounded);
  if (!mem)
    return Status::error("emulated GPU: cannot allocate " +
                         std::to_string(bytes) + " bytes");
  // Fresh device memory is not zero on a GPU either: make a read of
  // unwritten memory show.
  std::memset(mem, 0xff, rounded);
  ptr = reinterpret_cast<DevicePtr>(mem);
  allocations[ptr] = mem;
  return Status::success();
}

void EmuBackend::release(DevicePtr ptr) {
  auto it = allocations.find(ptr);
  if (it == allocations.end())
    return;
  std::free(it->second);
  allocations.erase(it);
}

Status EmuBackend::upload(DevicePtr dst, const void *src, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return Status::success();
}

Status EmuBackend::download(void *dst, DevicePtr src, size_t bytes) {
  if (!history.empty())
    return Status::error("emulated GPU: download before synchronize");
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return Status::success();
}

Status EmuBackend::issue(StreamId stream, const OpInfo &op,
                         std::function<Status()> body) {
  int s = static_cast<int>(stream), other = 1 - s;
  for (const Issued &prev : history) {
    if (prev.stream == stream || prev.seq <= clocks[s][other])
      continue; // same stream, or ordered before this by an event
    for (const Access &a : op.accesses)
      for (const Access &b : prev.op.accesses) {
        if (!(a.write || b.write) || !(a.begin < b.end && b.begin < a.end))
          continue;
        return Status::error(
            "race on the emulated GPU: " + op.what + " on the " +
            streamName(stream) + " stream " + (a.write ? "writes" : "reads") +
            " bytes that " + prev.op.what + " on the " +
            streamName(prev.stream) + " stream " +
            (b.write ? "writes" : "reads") + ", and no event orders them");
      }
  }
  // A stream joins a capture by waiting for an event of the capturing
  // (compute) stream; work issued to it before that would run at once on
  // a GPU, outside the graph.
  if (capturing && stream == StreamId::Comm && !commJoined)
    return Status::error("graph capture on the emulated GPU: " + op.what +
                         " on the communication stream, which has not "
                         "joined the capture through an event");
  history.push_back({stream, ++clocks[s][s], op});
  if (trace)
    trace->push_back(std::string(streamName(stream)) + ": " + op.what);
  if (capturing) {
    graph.push_back(std::move(body));
    return Status::success();
  }
  ++executed;
  return body();
}

Status EmuBackend::launch(int64_t kernel, LaunchDims dims, void **params,
                          size_t numParams, const OpInfo &op) {
  if (kernel < 0 || static_cast<size_t>(kernel) >= kernels.size())
    return Status::error("emulated GPU: no kernel " + std::to_string(kernel));
  // Parameters by value, as cuLaunchKernel copies them (each 8 bytes).
  std::vector<uint64_t> values;
  for (size_t i = 0; i < numParams; ++i) {
    uint64_t v;
    std::memcpy(&v, params[i], sizeof v);
    values.push_back(v);
  }
  EmuEntry fn = kernels[kernel];
  return issue(StreamId::Compute, op, [fn, dims, values, op]() {
    std::vector<uint64_t> copy = values;
    std::vector<void *> ptrs;
    for (uint64_t &v : copy)
      ptrs.push_back(&v);
    const char *err = fn(dims.grid, dims.block, ptrs.data());
    if (err && *err)
      return Status::error(op.what + ": emulated launch: " + err);
    return Status::success();
  });
}

Status EmuBackend::gemm(const GemmDesc &desc, DevicePtr a, DevicePtr b,
                        DevicePtr c, const OpInfo &op) {
  // The CPU backend's BLAS GEMM on the same row-major blocks.
  plan::Step step;
  step.kind = plan::StepKind::Gemm;
  step.transposeA = desc.transA;
  step.transposeB = desc.transB;
  step.beta = desc.beta != 0.0f;
  step.operands.resize(3);
  for (plan::BufferRef &ref : step.operands)
    ref.type = desc.dtype;
  auto shape = [&](int64_t r, int64_t c2) {
    return desc.batch == 1 ? Shape{r, c2} : Shape{desc.batch, r, c2};
  };
  Shape as = desc.transA ? shape(desc.k, desc.m) : shape(desc.m, desc.k);
  Shape bs = desc.transB ? shape(desc.n, desc.k) : shape(desc.k, desc.n);
  Shape cs = shape(desc.m, desc.n);
  return issue(StreamId::Compute, op, [=]() {
    std::string err = plan::runGemm(
        step, as, bs, cs, reinterpret_cast<const void *>(a),
        reinterpret_cast<const void *>(b), reinterpret_cast<void *>(c));
    return err.empty() ? Status::success()
                       : Status::error(op.what + ": " + err);
  });
}

Status EmuBackend::copy2D(DevicePtr dst, size_t dstPitch, DevicePtr src,
                          size_t srcPitch, size_t width, size_t height,
                          const OpInfo &op) {
  return issue(StreamId::Compute, op, [=]() {
    for (size_t r = 0; r < height; ++r)
      std::memmove(reinterpret_cast<char *>(dst + r * dstPitch),
                   reinterpret_cast<const char *>(src + r * srcPitch), width);
    return Status::success();
  });
}

Status EmuBackend::zero(DevicePtr dst, size_t bytes, const OpInfo &op) {
  return issue(StreamId::Compute, op, [=]() {
    std::memset(reinterpret_cast<void *>(dst), 0, bytes);
    return Status::success();
  });
}

Status EmuBackend::collective(const plan::Step &step, DevicePtr in,
                              const Shape &inShape, DevicePtr out,
                              const Shape &outShape,
                              const std::vector<Shape> *memberShapes,
                              const OpInfo &op) {
  if (!comm)
    return Status::error(op.what + ": a collective needs a communicator");
  if (memberShapes) {
    // What a GPU would pass NCCL instead of exchanging: it must be right.
    int64_t me = comm->mesh().groupIndex(comm->device(), step.axes);
    if (static_cast<size_t>(me) >= memberShapes->size() ||
        (*memberShapes)[me] != inShape)
      return Status::error(op.what +
                           ": planned member shapes disagree with "
                           "this rank's block " +
                           shapeStr(inShape));
  }
  plan::Collectives *c = comm;
  plan::Step s = step;
  return issue(StreamId::Comm, op, [=]() {
    std::string err =
        plan::runCollective(*c, s, reinterpret_cast<const void *>(in), inShape,
                            reinterpret_cast<void *>(out), outShape);
    return err.empty() ? Status::success()
                       : Status::error(op.what + ": " + err);
  });
}

Status EmuBackend::timeMark(StreamId, int64_t mark) {
  if (mark < 0)
    return Status::error("emulated GPU: mark " + std::to_string(mark));
  if (static_cast<size_t>(mark) >= marks.size())
    marks.resize(static_cast<size_t>(mark) + 1, 0);
  marks[mark] = plan::traceClockUs();
  return Status::success();
}

Status EmuBackend::markTimes(int64_t count, std::vector<double> &us) {
  if (count > static_cast<int64_t>(marks.size()))
    return Status::error("emulated GPU: " + std::to_string(count) +
                         " marks asked, " + std::to_string(marks.size()) +
                         " recorded");
  us.assign(marks.begin(), marks.begin() + count);
  return Status::success();
}

Status EmuBackend::record(StreamId stream, int64_t event) {
  if (event < 0)
    return Status::error("emulated GPU: event " + std::to_string(event));
  if (static_cast<size_t>(event) >= events.size())
    events.resize(static_cast<size_t>(event) + 1);
  int s = static_cast<int>(stream);
  events[event].clock = {clocks[s][0], clocks[s][1]};
  if (trace)
    trace->push_back(std::string(streamName(stream)) + " records e" +
                     std::to_string(event));
  events[event].inCapture = capturing && stream == StreamId::Compute;
  return Status::success();
}

Status EmuBackend::wait(StreamId stream, int64_t event) {
  if (event < 0 || static_cast<size_t>(event) >= events.size())
    return Status::error("emulated GPU: wait on event " +
                         std::to_string(event) + ", never recorded");
  int s = static_cast<int>(stream);
  for (int t = 0; t < 2; ++t)
    clocks[s][t] = std::max(clocks[s][t], events[event].clock[t]);
  if (trace)
    trace->push_back(std::string(streamName(stream)) + " waits e" +
                     std::to_string(event));
  if (stream == StreamId::Comm && events[event].inCapture)
    commJoined = true;
  return Status::success();
}

Status EmuBackend::synchronize() {
  if (capturing)
    return Status::error("emulated GPU: synchronize while capturing a graph");
  for (int t = 0; t < 2; ++t)
    clocks[0][t] = clocks[1][t] = std::max(clocks[0][t], clocks[1][t]);
  history.clear();
  return Status::success();
}

Status EmuBackend::beginCapture() {
  if (capturing)
    return Status::error("emulated GPU: capture already begun");
  capturing = true;
  commJoined = false;
  for (EventState &e : events)
    e.inCapture = false;
  graph.clear();
  return Status::success();
}

Status EmuBackend::endCapture() {
  if (!capturing)
    return Status::error("emulated GPU: no capture to end");
  capturing = false;
  // The capture ends on the compute stream: it must have joined the
  // communication stream's last operation.
  if (clocks[0][1] < clocks[1][1])
    return Status::error("graph capture on the emulated GPU: the "
                         "communication stream was not joined back into the "
                         "compute stream before the capture ended");
  return Status::success();
}

Status EmuBackend::replay() {
  for (const std::function<Status()> &body : graph) {
    ++executed;
    if (Status s = body(); !s.ok())
      return s;
  }
  return Status::success();
}

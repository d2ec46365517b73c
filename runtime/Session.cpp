//===- Session.cpp - A plan held on its ranks between runs ----------------===//

#include "runtime/Session.h"

#include "runtime/CommCollectives.h"
#include "runtime/GlobalIO.h"
#include "runtime/InProcessComm.h"
#include "runtime/RankSteps.h"
#include "runtime/Ranks.h"
#include "runtime/Workers.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

namespace spmd::plan {

struct SessionState {
  explicit SessionState(const Mesh &mesh, InProcessOptions options)
      : world(mesh, options) {}
  InProcessWorld world;        // the threads' collectives
  std::unique_ptr<MpiRun> mpi; // or this process's rank of an mpirun job
  std::vector<int64_t> held;   // the ranks this process runs
  std::vector<std::unique_ptr<CommCollectives>> comms;
  std::vector<std::unique_ptr<RankSteps>> steps;      // [rank]
  std::vector<std::vector<std::vector<char>>> blocks; // [rank][arg] (host)
  std::vector<std::vector<Shape>> shapes;             // [rank][arg]
  std::vector<std::string> errors;                    // the last run's
  std::vector<std::vector<TraceEvent>> traces;
  std::string failure; // the run that broke the session

  // Ranks 1..n-1 run on threads kept for the session's life (a thread
  // start per rank and call would cost more than a small step); rank 0
  // runs on the caller's thread. Like the in-process collectives, a waiter
  // yields for a while (a step's ranks start and end close together), then
  // parks on a condition variable: no core spins while another computes.
  static constexpr int kSpins = 200;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable start, done;
  std::atomic<int64_t> generation{0}, pending{0};
  bool stop = false; // under mu
  std::function<void(int64_t)> job;

  void work(int64_t device) {
    int64_t seen = 0;
    for (;;) {
      for (int i = 0; i < kSpins && generation.load() == seen; ++i)
        std::this_thread::yield();
      {
        std::unique_lock<std::mutex> lock(mu);
        start.wait(lock, [&] { return stop || generation.load() != seen; });
        if (stop)
          return;
      }
      seen = generation.load();
      job(device);
      if (pending.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        done.notify_one();
      }
    }
  }

  /// Runs job(d) for every rank d and waits for all.
  void runAll(std::function<void(int64_t)> fn) {
    job = std::move(fn);
    pending.store(static_cast<int64_t>(steps.size()) - 1);
    {
      std::lock_guard<std::mutex> lock(mu);
      generation.fetch_add(1);
    }
    start.notify_all();
    job(0);
    for (int i = 0; i < kSpins && pending.load() != 0; ++i)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&] { return pending.load() == 0; });
  }

  ~SessionState() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    start.notify_all();
    for (std::thread &t : workers)
      t.join();
  }
};

RankMaker Session::cpuRanks(const Schedule &schedule,
                            std::vector<KernelFn> kernels) {
  return [&schedule, kernels](int64_t device, Collectives *comm,
                              std::vector<std::vector<char>> &blocks,
                              const std::vector<std::vector<Shape>> &allShapes,
                              std::string &) -> std::unique_ptr<RankSteps> {
    return std::make_unique<CpuSteps>(schedule, kernels, comm, blocks,
                                      allShapes[device]);
  };
}

std::unique_ptr<Session> Session::create(const Schedule &schedule,
                                         const RankMaker &makeRank,
                                         SessionOptions options,
                                         std::string &error) {
  std::unique_ptr<Session> session(new Session(schedule));
  InProcessOptions inproc;
  inproc.timeoutSeconds = options.timeoutSeconds;
  const Mesh &mesh = schedule.mesh;
  // Under MPI the in-process world is unused (its collectives are never
  // called); a one-device one keeps the state's shape.
  auto state = std::make_unique<SessionState>(
      options.mpi ? Mesh{{"x"}, {1}} : mesh, inproc);
  int64_t n = mesh.numDevices();
  if (options.mpi) {
    state->mpi = MpiRun::create(mesh, options.timeoutSeconds,
                                /*verify=*/false, error);
    if (!state->mpi)
      return nullptr;
    state->held = {state->mpi->device()};
  } else {
    for (int64_t d = 0; d < n; ++d)
      state->held.push_back(d);
  }
  setRankThreads(options.mpi ? localRanks() : n, options.threadsPerRank);
  state->blocks.resize(n);
  state->shapes.resize(n);
  state->errors.resize(n);
  state->traces.resize(n);
  state->steps.resize(n);
  // Every rank's argument blocks (zeros) and shapes; those of the ranks
  // held here are kept.
  for (int64_t d = 0; d < n; ++d)
    for (size_t i = 0; i < schedule.args.size(); ++i) {
      Shape global = session->argGlobalShape(i);
      Shape shape;
      std::vector<char> zeros(numElements(global) *
                              dtypeSize(schedule.args[i].type));
      std::vector<char> block =
          scatterTensor(mesh, schedule.args[i], zeros.data(), global, d, shape);
      if (std::find(state->held.begin(), state->held.end(), d) !=
          state->held.end())
        state->blocks[d].push_back(std::move(block));
      state->shapes[d].push_back(shape);
    }
  for (int64_t d : state->held) {
    Collectives *comm;
    if (state->mpi) {
      comm = &state->mpi->collectives();
    } else {
      state->comms.push_back(
          std::make_unique<CommCollectives>(state->world.comm(d)));
      comm = state->comms.back().get();
    }
    state->steps[d] = makeRank(d, comm, state->blocks[d], state->shapes, error);
    if (!state->steps[d]) {
      error = "rank " + std::to_string(d) + ": " + error;
      return nullptr;
    }
  }
  if (!state->mpi)
    for (int64_t d = 1; d < n; ++d)
      state->workers.emplace_back([s = state.get(), d] { s->work(d); });
  session->state = std::move(state);
  return session;
}

Session::Session(const Schedule &schedule) : sched(schedule) {}

Session::~Session() = default;

const std::vector<int64_t> &Session::ranks() const { return state->held; }

/// Every rank's block of `info` (`mine(d, data, shape)` gives those of
/// this process's ranks; under MPI the others come from their processes),
/// assembled.
static std::string gatherAndAssemble(
    const Schedule &sched, SessionState &state, const TensorInfo &info,
    const std::string &what,
    const std::function<std::string(int64_t, std::vector<char> &, Shape &)>
        &mine,
    NpyArray &global) {
  int64_t n = sched.mesh.numDevices();
  std::vector<std::vector<std::vector<char>>> blocks(n);
  std::vector<std::vector<Shape>> shapes(n);
  for (int64_t d : state.held) {
    blocks[d].resize(1);
    shapes[d].resize(1);
    if (std::string err = mine(d, blocks[d][0], shapes[d][0]); !err.empty())
      return what + ": " + err;
  }
  if (state.mpi)
    if (std::string err = state.mpi->gatherTensors({info}, blocks, shapes);
        !err.empty())
      return what + ": " + err;
  std::vector<const std::vector<char> *> pointers;
  std::vector<Shape> blockShapes;
  for (int64_t d = 0; d < n; ++d) {
    pointers.push_back(&blocks[d][0]);
    blockShapes.push_back(shapes[d][0]);
  }
  Status s =
      assembleTensor(sched.mesh, info, what, pointers, blockShapes, global);
  return s.ok() ? "" : s.message();
}

Shape Session::argGlobalShape(size_t i) const {
  return globalShapeOf(sched.mesh, sched.args[i]);
}

std::string Session::setArg(size_t i, DType type, const Shape &shape,
                            const void *data) {
  if (i >= sched.args.size())
    return "argument " + std::to_string(i) + " out of range (" +
           std::to_string(sched.args.size()) + " arguments)";
  const TensorInfo &arg = sched.args[i];
  if (shape != argGlobalShape(i))
    return "argument " + std::to_string(i) + " has global shape " +
           shapeStr(argGlobalShape(i)) + ", not " + shapeStr(shape);
  std::vector<char> converted;
  if (type != arg.type) {
    if (!(type == DType::F32 &&
          (arg.type == DType::F16 || arg.type == DType::BF16)))
      return "argument " + std::to_string(i) + " is " + dtypeName(arg.type) +
             ", not " + dtypeName(type);
    NpyArray array;
    array.dtype = type;
    array.shape = shape;
    const char *bytes = static_cast<const char *>(data);
    array.data.assign(bytes, bytes + numElements(shape) * dtypeSize(type));
    converted = convert(array, arg.type);
    data = converted.data();
  }
  for (int64_t d : state->held) {
    Shape local;
    std::vector<char> block =
        scatterTensor(sched.mesh, arg, data, shape, d, local);
    if (std::string err = state->steps[d]->writeArgument(i, block.data());
        !err.empty())
      return "rank " + std::to_string(d) + ": " + err;
  }
  return "";
}

std::string Session::getArg(size_t i, NpyArray &global) const {
  if (i >= sched.args.size())
    return "argument " + std::to_string(i) + " out of range";
  return gatherAndAssemble(
      sched, *state, sched.args[i], "argument " + std::to_string(i),
      [&](int64_t d, std::vector<char> &data, Shape &shape) {
        shape = state->shapes[d][i];
        return state->steps[d]->readArgument(i, data);
      },
      global);
}

std::string Session::run(size_t feed) {
  if (!state->failure.empty())
    return "an earlier run failed (" + state->failure +
           "); the session cannot run again";
  if (feed > std::min(sched.args.size(), sched.results.size()))
    return "cannot feed " + std::to_string(feed) + " results back";
  auto rankRun = [&](int64_t d) -> std::string {
    if (std::string err = state->steps[d]->run(); !err.empty())
      return err;
    return state->steps[d]->feed(feed);
  };
  std::fill(state->errors.begin(), state->errors.end(), "");
  if (state->mpi) {
    // A failing rank stops the whole job, naming itself.
    int64_t d = state->held[0];
    if (std::string err = rankRun(d); !err.empty())
      state->mpi->abort("rank " + std::to_string(d) + ": " + err);
  } else {
    state->runAll([&](int64_t d) {
      state->errors[d] = rankRun(d);
      if (!state->errors[d].empty())
        state->world.comm(d).abort(state->errors[d]);
    });
  }
  ++numRuns;
  if (state->world.failed()) {
    state->failure = state->world.failureMessage();
    return state->failure;
  }
  for (size_t d = 0; d < state->errors.size(); ++d)
    if (!state->errors[d].empty()) {
      state->failure = "rank " + std::to_string(d) + ": " + state->errors[d];
      return state->failure;
    }
  return "";
}

std::string Session::getResult(size_t i, NpyArray &global) const {
  if (i >= sched.results.size())
    return "result " + std::to_string(i) + " out of range";
  if (numRuns == 0)
    return "no run yet";
  return gatherAndAssemble(
      sched, *state, sched.results[i], "result " + std::to_string(i),
      [&](int64_t d, std::vector<char> &data, Shape &shape) {
        return state->steps[d]->result(i, data, shape);
      },
      global);
}

std::string Session::barrier() {
  if (!state->mpi)
    return "";
  // A gather of one value per process is the barrier.
  int64_t n = sched.mesh.numDevices();
  std::vector<std::vector<std::vector<char>>> blocks(n);
  std::vector<std::vector<Shape>> shapes(n);
  blocks[state->held[0]] = {std::vector<char>(sizeof(int64_t), 0)};
  shapes[state->held[0]] = {Shape{}};
  TensorInfo token;
  token.type = DType::I64;
  return state->mpi->gatherTensors({token}, blocks, shapes);
}

int64_t Session::argumentBytes(int64_t rank) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < sched.args.size(); ++i)
    bytes += numElements(state->shapes[rank][i]) *
             static_cast<int64_t>(dtypeSize(sched.args[i].type));
  return bytes;
}

bool Session::setTrace(bool on) {
  bool recorded = true;
  for (int64_t d : state->held)
    recorded &= state->steps[d]->setTrace(on ? &state->traces[d] : nullptr);
  return recorded;
}

const std::vector<std::vector<TraceEvent>> &Session::traces() const {
  return state->traces;
}

void Session::clearTrace() {
  for (auto &t : state->traces)
    t.clear();
}

} // namespace spmd::plan

//===- InProcessComm.cpp - All ranks as threads of one process ------------===//

#include "runtime/InProcessComm.h"

#include "runtime/BlockOps.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sstream>
#include <thread>

namespace spmd {

namespace {
using Clock = std::chrono::steady_clock;
// Waits first yield this many times before sleeping on the condition
// variable: cheap when the group arrives together, harmless when ranks
// outnumber cores.
constexpr int kSpins = 64;

bool hasData(CollectiveKind k) {
  return k != CollectiveKind::Barrier && k != CollectiveKind::Fingerprint;
}

Clock::time_point deadlineAfter(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

std::string secondsStr(double s) {
  std::ostringstream os;
  os << s << " s";
  return os.str();
}
} // namespace

/// A group's meeting point. Slots are written before the first wait and
/// read only between the first and the second, so no lock guards them.
struct InProcessArena {
  struct Slot {
    const CallDesc *call = nullptr;
    const void *in = nullptr;
    void *out = nullptr;
  };

  std::vector<int64_t> members; // devices, in group order
  std::mutex mu;
  std::condition_variable cv;
  int64_t arrived = 0;                 // guarded by mu
  std::vector<uint64_t> arrivedIn;     // generation + 1 of each arrival
  std::atomic<uint64_t> generation{0}; // bumped when everyone arrived
  std::atomic<int64_t> busy{0};        // members still reading buffers
  std::vector<Slot> slots;
  Status plan; // written by the last arriver
  std::vector<Shape> outShapes;
};

struct InProcessShared {
  Mesh mesh;
  InProcessOptions options;
  std::mutex mu;
  std::map<std::pair<Axes, int64_t>, std::unique_ptr<InProcessArena>> arenas;
  std::atomic<bool> failed{false};
  std::string failure; // set once, under mu, before `failed`
  /// Records the first failure and wakes every waiter of every group.
  void fail(const std::string &message) {
    std::vector<InProcessArena *> toWake;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (failed.load())
        return;
      failure = message;
      failed.store(true);
      for (auto &entry : arenas)
        toWake.push_back(entry.second.get());
    }
    for (InProcessArena *a : toWake) {
      std::lock_guard<std::mutex> lock(a->mu);
      a->cv.notify_all();
    }
  }

  // Where each rank is blocked, so a timeout blames a rank that is absent
  // rather than one that waits for someone else. The record points at the
  // waiter's own objects, valid while recorded (the waiter clears it under
  // waitMu before returning).
  struct WaitRecord {
    const Communicator *comm = nullptr;
    const CallDesc *call = nullptr;
    const Axes *axes = nullptr;
  };
  std::mutex waitMu;
  std::vector<WaitRecord> waitingIn;

  void setWaiting(int64_t device, const WaitRecord &record) {
    std::lock_guard<std::mutex> lock(waitMu);
    waitingIn[device] = record;
  }
  std::string waitingWhere(int64_t device) {
    std::lock_guard<std::mutex> lock(waitMu);
    const WaitRecord &r = waitingIn[device];
    return r.comm ? r.comm->describeCall(*r.call, *r.axes) : std::string();
  }
  std::string failureMessage() {
    std::lock_guard<std::mutex> lock(mu);
    return failure;
  }
};

InProcessComm::InProcessComm(std::shared_ptr<InProcessShared> s, int64_t device)
    : Communicator(s->mesh, device), shared(std::move(s)) {
  setTimeoutSeconds(shared->options.timeoutSeconds);
  setVerifyCollectives(shared->options.verifyCollectives);
}

InProcessComm::~InProcessComm() = default;

void InProcessComm::abort(const std::string &reason) {
  shared->fail("rank " + std::to_string(device()) + " aborted: " + reason);
}

InProcessArena &InProcessComm::arenaFor(const Axes &axes) {
  auto it = arenas.find(axes);
  if (it != arenas.end())
    return *it->second;
  std::vector<int64_t> group = mesh().group(device(), axes);
  std::lock_guard<std::mutex> lock(shared->mu);
  std::unique_ptr<InProcessArena> &slot = shared->arenas[{axes, group[0]}];
  if (!slot) {
    slot = std::make_unique<InProcessArena>();
    slot->members = group;
    slot->arrivedIn.assign(group.size(), 0);
    slot->slots.resize(group.size());
  }
  arenas[axes] = slot.get();
  return *slot;
}

namespace {

struct Runner {
  InProcessShared &shared;
  InProcessArena &arena;
  const CallDesc &call;
  const Communicator &comm;
  const Axes &axes;
  double timeout;
  size_t me;

  // Built only for messages: formatting costs more than a small collective.
  std::string where() const { return comm.describeCall(call, axes); }

  Status failedError() {
    return Status::error(where() + ": aborted: " + shared.failureMessage());
  }

  /// First wait: publish, and the last arriver validates for the group.
  Status arrive(const Mesh &mesh, bool verify) {
    InProcessArena &a = arena;
    size_t n = a.members.size();
    std::unique_lock<std::mutex> lock(a.mu);
    if (shared.failed.load())
      return failedError();
    uint64_t gen = a.generation.load(std::memory_order_relaxed);
    a.arrivedIn[me] = gen + 1;
    if (++a.arrived == static_cast<int64_t>(n)) {
      a.arrived = 0;
      std::vector<const CallDesc *> calls(n);
      for (size_t i = 0; i < n; ++i)
        calls[i] = a.slots[i].call;
      a.plan = planCollective(mesh, a.members, calls, verify, a.outShapes);
      if (a.plan.ok() && hasData(call.kind))
        a.busy.store(static_cast<int64_t>(n), std::memory_order_relaxed);
      a.generation.store(gen + 1, std::memory_order_release);
      lock.unlock();
      a.cv.notify_all();
      return Status::success();
    }
    lock.unlock();
    for (int i = 0; i < kSpins; ++i) {
      if (a.generation.load(std::memory_order_acquire) != gen)
        return Status::success();
      std::this_thread::yield();
    }
    lock.lock();
    shared.setWaiting(arena.members[me], {&comm, &call, &axes});
    struct ClearWaiting {
      InProcessShared &shared;
      int64_t device;
      ~ClearWaiting() { shared.setWaiting(device, {}); }
    } clear{shared, arena.members[me]};
    Clock::time_point deadline = deadlineAfter(timeout);
    bool extended = false;
    while (a.generation.load(std::memory_order_acquire) == gen) {
      if (shared.failed.load())
        return failedError();
      if (a.cv.wait_until(lock, deadline) != std::cv_status::timeout ||
          a.generation.load(std::memory_order_acquire) != gen ||
          shared.failed.load())
        continue;
      // Blame the members that are not blocked elsewhere; if all missing
      // members wait in other collectives, give their own timeouts a chance
      // to find the rank at the root, then report the cycle.
      std::vector<int64_t> missing, absent;
      for (size_t i = 0; i < n; ++i)
        if (a.arrivedIn[i] != gen + 1)
          missing.push_back(a.members[i]);
      std::string elsewhere;
      for (int64_t m : missing) {
        std::string w = shared.waitingWhere(m);
        if (w.empty())
          absent.push_back(m);
        else
          elsewhere += "; rank " + std::to_string(m) + " waits in " + w;
      }
      if (absent.empty() && !extended) {
        extended = true;
        deadline = deadlineAfter(timeout);
        continue;
      }
      const std::vector<int64_t> &blamed = absent.empty() ? missing : absent;
      std::string names;
      for (size_t i = 0; i < blamed.size(); ++i)
        names += (i ? ", " : "") + std::to_string(blamed[i]);
      std::string message = (blamed.size() > 1 ? "ranks " : "rank ") + names +
                            " did not arrive at " + where() + " within " +
                            secondsStr(timeout);
      if (absent.empty())
        message += " (waiting in other collectives" + elsewhere + ")";
      lock.unlock();
      shared.fail(message);
      return failedError();
    }
    return Status::success();
  }

  /// Second wait: nobody returns (and reuses its buffers) while another
  /// member may still read them. Every member got past the first wait and
  /// copying never blocks, so this wait is bounded without a timeout (a
  /// timeout here would only misfire on a large copy under load).
  void leave() {
    InProcessArena &a = arena;
    if (a.busy.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(a.mu);
      a.cv.notify_all();
      return;
    }
    for (int i = 0; i < kSpins; ++i) {
      if (a.busy.load(std::memory_order_acquire) == 0)
        return;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(a.mu);
    a.cv.wait(lock,
              [&] { return a.busy.load(std::memory_order_acquire) == 0; });
  }

  /// This member's share of the data movement.
  void compute() {
    InProcessArena &a = arena;
    size_t n = a.members.size();
    size_t es = dtypeSize(call.dtype);
    const Shape &outShape = a.outShapes[me];
    void *out = a.slots[me].out;
    size_t rank = call.shape.size();
    switch (call.kind) {
    case CollectiveKind::AllGather: {
      Shape dstOff(rank, 0), srcOff(rank, 0);
      for (size_t i = 0; i < n; ++i) {
        const Shape &shape = a.slots[i].call->shape;
        copyBox(out, outShape, dstOff, a.slots[i].in, shape, srcOff, shape, es);
        dstOff[call.dim0] += shape[call.dim0];
      }
      return;
    }
    case CollectiveKind::AllToAll: {
      int64_t split = call.dim0, concat = call.dim1;
      Shape dstOff(rank, 0), srcOff(rank, 0);
      for (size_t i = 0; i < n; ++i) {
        const Shape &shape = a.slots[i].call->shape;
        Range r = chunkRange(shape[split], static_cast<int64_t>(n),
                             static_cast<int64_t>(me));
        Shape box = shape;
        box[split] = r.size;
        srcOff[split] = r.offset;
        copyBox(out, outShape, dstOff, a.slots[i].in, shape, srcOff, box, es);
        dstOff[concat] += box[concat];
      }
      return;
    }
    case CollectiveKind::ReduceScatter: {
      // Each piece of this member's chunk is contiguous in every input.
      int64_t dim = call.dim0, outer = 1, inner = 1;
      for (int64_t d = 0; d < dim; ++d)
        outer *= call.shape[d];
      for (size_t d = dim + 1; d < rank; ++d)
        inner *= call.shape[d];
      Range r = chunkRange(call.shape[dim], static_cast<int64_t>(n),
                           static_cast<int64_t>(me));
      int64_t piece = r.size * inner;
      if (piece == 0)
        return;
      std::vector<const void *> ptrs(n);
      for (int64_t o = 0; o < outer; ++o) {
        int64_t from = (o * call.shape[dim] + r.offset) * inner;
        for (size_t i = 0; i < n; ++i)
          ptrs[i] = static_cast<const char *>(a.slots[i].in) + from * es;
        reduceBuffers(call.dtype, call.reduce, ptrs.data(),
                      static_cast<int64_t>(n),
                      static_cast<char *>(out) + o * piece * es, piece);
      }
      return;
    }
    case CollectiveKind::AllReduce: {
      // Member `me` reduces one slice of the elements and writes it to every
      // member's output: each byte is read and written once per member.
      // Slices are disjoint, so in-place outputs are safe.
      int64_t count = numElements(call.shape);
      int64_t k = static_cast<int64_t>(n);
      int64_t slice = ((count + k - 1) / k + 63) / 64 * 64;
      int64_t begin = std::min(count, static_cast<int64_t>(me) * slice);
      int64_t end = std::min(count, begin + slice);
      constexpr int64_t kTile = 8192;
      thread_local std::vector<char> scratch;
      scratch.resize(kTile * es);
      std::vector<const void *> ptrs(n);
      for (int64_t t = begin; t < end; t += kTile) {
        int64_t len = std::min(kTile, end - t);
        for (size_t i = 0; i < n; ++i)
          ptrs[i] = static_cast<const char *>(a.slots[i].in) + t * es;
        reduceBuffers(call.dtype, call.reduce, ptrs.data(), k, scratch.data(),
                      len);
        for (size_t i = 0; i < n; ++i)
          std::memcpy(static_cast<char *>(a.slots[i].out) + t * es,
                      scratch.data(), len * es);
      }
      return;
    }
    default:
      return;
    }
  }
};

} // namespace

CollectiveResult InProcessComm::execute(const CallDesc &call, const Axes &axes,
                                        const void *in, void *out) {
  if (shared->failed.load())
    return {Status::error(describeCall(call, axes) +
                          ": aborted: " + shared->failureMessage()),
            {}};
  InProcessArena &a = arenaFor(axes);
  size_t me = static_cast<size_t>(mesh().groupIndex(device(), axes));
  if (a.members.size() == 1) {
    // Alone in the group: every collective is a copy.
    std::vector<Shape> outShapes;
    Status s = planCollective(mesh(), a.members, {&call}, verifyCollectives(),
                              outShapes);
    if (!s.ok())
      return {Status::error(describeCall(call, axes) + ": " + s.message()), {}};
    if (hasData(call.kind)) {
      size_t bytes = numElements(call.shape) * dtypeSize(call.dtype);
      if (bytes && out != in)
        std::memmove(out, in, bytes);
    }
    return {Status::success(), outShapes[0]};
  }
  a.slots[me] = {&call, in, out};
  Runner runner{*shared, a, call, *this, axes, timeoutSeconds(), me};
  if (Status s = runner.arrive(mesh(), verifyCollectives()); !s.ok())
    return {s, {}};
  if (!a.plan.ok())
    return {Status::error(describeCall(call, axes) + ": " + a.plan.message()),
            {}};
  Shape outShape = a.outShapes[me];
  if (!hasData(call.kind))
    return {Status::success(), outShape};
  runner.compute();
  runner.leave();
  return {Status::success(), outShape};
}

InProcessWorld::InProcessWorld(Mesh mesh, InProcessOptions options)
    : shared(std::make_shared<InProcessShared>()) {
  shared->mesh = std::move(mesh);
  shared->options = options;
  shared->waitingIn.resize(shared->mesh.numDevices());
  int64_t n = shared->mesh.numDevices();
  for (int64_t d = 0; d < n; ++d)
    comms.push_back(std::make_unique<InProcessComm>(shared, d));
}

InProcessWorld::~InProcessWorld() = default;

namespace {
struct RankStart {
  const std::function<void(InProcessComm &)> *fn;
  InProcessComm *comm;
};
void *startRank(void *arg) {
  auto *start = static_cast<RankStart *>(arg);
  (*start->fn)(*start->comm);
  return nullptr;
}
} // namespace

std::string
InProcessWorld::run(const std::function<void(InProcessComm &)> &fn) {
  // pthreads rather than std::thread: a thread that cannot be created is
  // an error code here, where std::thread throws (and this code is built
  // without exceptions, so that aborted the process).
  std::vector<RankStart> starts;
  starts.reserve(comms.size());
  std::vector<pthread_t> threads;
  std::string error;
  for (auto &c : comms) {
    starts.push_back({&fn, c.get()});
    pthread_t thread;
    if (int err = pthread_create(&thread, nullptr, startRank, &starts.back())) {
      error = "cannot start rank " + std::to_string(c->device()) + " of " +
              std::to_string(comms.size()) +
              " as a thread: " + std::strerror(err);
      shared->fail(error);
      break;
    }
    threads.push_back(thread);
  }
  for (pthread_t thread : threads)
    pthread_join(thread, nullptr);
  return error;
}

bool InProcessWorld::failed() const { return shared->failed.load(); }

std::string InProcessWorld::failureMessage() const {
  return shared->failureMessage();
}

} // namespace spmd

//===- MpiComm.cpp - One MPI process per rank -----------------------------===//

#include "runtime/MpiComm.h"

#include "runtime/BlockOps.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace spmd {

namespace {

using Clock = std::chrono::steady_clock;

using namespace callheader;

bool hasData(CollectiveKind k) {
  return k != CollectiveKind::Barrier && k != CollectiveKind::Fingerprint;
}

MPI_Datatype mpiType(DType t) {
  switch (t) {
  case DType::F64:
    return MPI_DOUBLE;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  default: // f32, and f16/bf16 after widening
    return MPI_FLOAT;
  }
}

MPI_Op mpiOp(ReduceKind k) {
  switch (k) {
  case ReduceKind::Max:
    return MPI_MAX;
  case ReduceKind::Min:
    return MPI_MIN;
  default:
    return MPI_SUM; // avg divides afterwards
  }
}

bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }

/// Divides `count` elements by n (avg after a sum).
void divideBy(DType t, void *data, int64_t count, int64_t n) {
  switch (t) {
  case DType::F64:
    for (int64_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= static_cast<double>(n);
    return;
  case DType::I32:
    for (int64_t i = 0; i < count; ++i)
      static_cast<int32_t *>(data)[i] /= static_cast<int32_t>(n);
    return;
  case DType::I64:
    for (int64_t i = 0; i < count; ++i)
      static_cast<int64_t *>(data)[i] /= n;
    return;
  default: // f32 (also the widened 16-bit floats)
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] /= static_cast<float>(n);
    return;
  }
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

int64_t prod(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= s[i];
  return p;
}

} // namespace

struct MpiComm::State {
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<int64_t> members;
    int64_t index = 0;
  };
  std::map<Axes, Group> groups;

  // Watchdog: `active` collective and when it must be done.
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool active = false;
  Clock::time_point deadline;
  std::string what;
  double timeout = 60;
  std::thread watchdog;
};

Status MpiComm::initialize(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return Status::success();
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS)
    return Status::error("MPI_Init_thread failed: " + mpiError(rc));
  return Status::success();
}

void MpiComm::finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

bool MpiComm::active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void MpiComm::abortWorld(const std::string &reason) {
  std::fprintf(stderr, "spmd: rank %d aborts: %s\n", worldRank(),
               reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort(); // MPI_Abort does not return; be sure.
}

int MpiComm::worldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiComm::worldSize() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

MpiComm::MpiComm(const Mesh &mesh, int64_t device)
    : Communicator(mesh, device), state(std::make_unique<State>()) {}

Status MpiComm::create(const Mesh &mesh, double timeoutSeconds,
                       std::unique_ptr<MpiComm> &comm) {
  std::string e = mesh.validate();
  if (!e.empty())
    return Status::error("mpi: " + e);
  int size = worldSize();
  if (mesh.numDevices() != size)
    return Status::error("mpi: the mesh has " +
                         std::to_string(mesh.numDevices()) +
                         " devices but MPI_COMM_WORLD has " +
                         std::to_string(size) + " processes");
  if (mesh.rank() > 4)
    return Status::error("mpi: meshes of more than 4 axes are not supported");
  comm.reset(new MpiComm(mesh, worldRank()));
  State &st = *comm->state;
  comm->setTimeoutSeconds(timeoutSeconds);
  // Every ordered set of distinct axes, in the same order on all ranks.
  std::vector<Axes> sets;
  std::function<void(Axes &)> extend = [&](Axes &prefix) {
    for (int64_t a = 0; a < mesh.rank(); ++a) {
      if (std::find(prefix.begin(), prefix.end(), a) != prefix.end())
        continue;
      prefix.push_back(a);
      sets.push_back(prefix);
      extend(prefix);
      prefix.pop_back();
    }
  };
  Axes prefix;
  extend(prefix);
  int64_t device = comm->device();
  for (const Axes &axes : sets) {
    State::Group g;
    g.members = mesh.group(device, axes);
    g.index = mesh.groupIndex(device, axes);
    int rc = MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(g.members[0]),
                            static_cast<int>(g.index), &g.comm);
    if (rc != MPI_SUCCESS)
      return Status::error("mpi: MPI_Comm_split failed: " + mpiError(rc));
    MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
    st.groups[axes] = std::move(g);
  }
  int rank = static_cast<int>(device);
  st.watchdog = std::thread([&st, rank] {
    std::unique_lock<std::mutex> lock(st.mu);
    while (!st.stop) {
      st.cv.wait_for(lock, std::chrono::milliseconds(50));
      if (st.active && Clock::now() >= st.deadline) {
        std::fprintf(stderr,
                     "spmd: rank %d: %s did not complete within %g s; "
                     "aborting the job\n",
                     rank, st.what.c_str(), st.timeout);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
  });
  return Status::success();
}

MpiComm::~MpiComm() {
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->stop = true;
  }
  state->cv.notify_all();
  if (state->watchdog.joinable())
    state->watchdog.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    for (auto &entry : state->groups)
      MPI_Comm_free(&entry.second.comm);
}

void MpiComm::abort(const std::string &reason) {
  std::fprintf(stderr, "spmd: rank %d aborts: %s\n", static_cast<int>(device()),
               reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort(); // MPI_Abort does not return; be sure.
}

CollectiveResult MpiComm::execute(const CallDesc &call, const Axes &axes,
                                  const void *in, void *out) {
  std::string where = describeCall(call, axes);
  auto fail = [&](const std::string &m) -> CollectiveResult {
    return {Status::error(where + ": " + m), {}};
  };
  if (axes.empty()) {
    std::vector<Shape> outShapes;
    Status s = planCollective(mesh(), {device()}, {&call}, verifyCollectives(),
                              outShapes);
    if (!s.ok())
      return fail(s.message());
    size_t bytes = numElements(call.shape) * dtypeSize(call.dtype);
    if (hasData(call.kind) && bytes && out != in)
      std::memmove(out, in, bytes);
    return {Status::success(), outShapes[0]};
  }
  State &st = *state;
  State::Group &g = st.groups.at(axes);
  int n = static_cast<int>(g.members.size());
  int64_t me = g.index;

  // Arm the watchdog for this collective.
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.active = true;
    st.timeout = timeoutSeconds();
    st.deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeoutSeconds()));
    st.what = where;
  }
  struct Disarm {
    State &st;
    ~Disarm() {
      std::lock_guard<std::mutex> lock(st.mu);
      st.active = false;
    }
  } disarm{st};

  // 1. Exchange headers; everyone validates the same data.
  std::vector<int64_t> mine(kHeaderWords), all(kHeaderWords * n);
  bool fits = encode(call, mine.data());
  if (!fits)
    mine[hRank] = -1;
  mine[hVerify] = verifyCollectives();
  int rc = MPI_Allgather(mine.data(), kHeaderWords, MPI_INT64_T, all.data(),
                         kHeaderWords, MPI_INT64_T, g.comm);
  if (rc != MPI_SUCCESS)
    return fail("MPI_Allgather failed: " + mpiError(rc));
  std::vector<CallDesc> calls(n);
  std::vector<const CallDesc *> ptrs(n);
  // Verify if any member asks to, so all members decide alike.
  bool verify = false;
  for (int i = 0; i < n; ++i) {
    const int64_t *h = all.data() + i * kHeaderWords;
    verify |= h[hVerify] != 0;
    if (h[hRank] < 0)
      return fail("member " + std::to_string(i) + " (rank " +
                  std::to_string(g.members[i]) +
                  ") passes a block of more than " + std::to_string(kMaxRank) +
                  " dims or a group of more than " + std::to_string(kMaxAxes) +
                  " axes");
    calls[i] = decode(h);
    ptrs[i] = &calls[i];
  }
  std::vector<Shape> outShapes;
  Status plan = planCollective(mesh(), g.members, ptrs, verify, outShapes);
  if (!plan.ok())
    return fail(plan.message());
  Shape outShape = outShapes[me];
  if (!hasData(call.kind))
    return {Status::success(), outShape};

  // 2. Move the data. Counts are ints in MPI; the same check on every rank.
  DType dtype = call.dtype;
  size_t es = dtypeSize(dtype);
  auto tooLarge = [&](int64_t v) { return v > INT_MAX; };
  size_t rank = call.shape.size();
  switch (call.kind) {
  case CollectiveKind::AllGather: {
    int64_t dim = call.dim0;
    std::vector<int> counts(n), displs(n);
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
      int64_t bytes = numElements(calls[i].shape) * static_cast<int64_t>(es);
      if (tooLarge(bytes) || tooLarge(total))
        return fail("blocks larger than 2 GiB are not supported");
      counts[i] = static_cast<int>(bytes);
      displs[i] = static_cast<int>(total);
      total += bytes;
    }
    // Members' blocks are consecutive in the result when nothing precedes
    // the gather dim.
    bool direct = prod(outShape, 0, dim) == 1;
    std::vector<char> staging(direct ? 0 : total);
    char *recv = direct ? static_cast<char *>(out) : staging.data();
    rc = MPI_Allgatherv(in, counts[me], MPI_BYTE, recv, counts.data(),
                        displs.data(), MPI_BYTE, g.comm);
    if (rc != MPI_SUCCESS)
      return fail("MPI_Allgatherv failed: " + mpiError(rc));
    if (!direct) {
      Shape dstOff(rank, 0), zero(rank, 0);
      for (int i = 0; i < n; ++i) {
        copyBox(out, outShape, dstOff, recv + displs[i], calls[i].shape, zero,
                calls[i].shape, es);
        dstOff[dim] += calls[i].shape[dim];
      }
    }
    break;
  }
  case CollectiveKind::AllReduce: {
    int64_t count = numElements(call.shape);
    std::vector<float> wide;
    void *buf = out;
    if (isHalf(dtype)) {
      wide.resize(count);
      widenToF32(dtype, in, wide.data(), count);
      buf = wide.data();
    } else if (out != in && count) {
      std::memcpy(out, in, count * es);
    }
    size_t wes = isHalf(dtype) ? 4 : es;
    for (int64_t off = 0; off < count; off += INT_MAX / 2) {
      int len = static_cast<int>(std::min<int64_t>(INT_MAX / 2, count - off));
      rc = MPI_Allreduce(MPI_IN_PLACE, static_cast<char *>(buf) + off * wes,
                         len, mpiType(dtype), mpiOp(call.reduce), g.comm);
      if (rc != MPI_SUCCESS)
        return fail("MPI_Allreduce failed: " + mpiError(rc));
    }
    if (call.reduce == ReduceKind::Avg)
      divideBy(dtype, buf, count, n);
    if (isHalf(dtype))
      narrowFromF32(dtype, wide.data(), out, count);
    break;
  }
  case CollectiveKind::ReduceScatter: {
    int64_t dim = call.dim0, outer = prod(call.shape, 0, dim),
            inner = prod(call.shape, dim + 1, rank), d = call.shape[dim];
    std::vector<int> counts(n);
    for (int j = 0; j < n; ++j) {
      int64_t c = chunkRange(d, n, j).size * inner * outer;
      if (tooLarge(c * 4) || tooLarge(c * static_cast<int64_t>(es)))
        return fail("blocks larger than 2 GiB are not supported");
      counts[j] = static_cast<int>(c);
    }
    int64_t count = numElements(call.shape);
    // Member j's chunk must be contiguous in the send buffer: pack unless
    // nothing precedes the scatter dim.
    const void *send = in;
    std::vector<char> packed;
    if (outer > 1) {
      packed.resize(count * es);
      char *dst = packed.data();
      for (int j = 0; j < n; ++j) {
        Range r = chunkRange(d, n, j);
        for (int64_t o = 0; o < outer; ++o) {
          size_t bytes = r.size * inner * es;
          std::memcpy(dst,
                      static_cast<const char *>(in) +
                          (o * d + r.offset) * inner * es,
                      bytes);
          dst += bytes;
        }
      }
      send = packed.data();
    }
    std::vector<float> wideIn, wideOut;
    void *recv = out;
    if (isHalf(dtype)) {
      wideIn.resize(count);
      widenToF32(dtype, send, wideIn.data(), count);
      send = wideIn.data();
      wideOut.resize(counts[me] + 1);
      recv = wideOut.data();
    }
    rc = MPI_Reduce_scatter(send, recv, counts.data(), mpiType(dtype),
                            mpiOp(call.reduce), g.comm);
    if (rc != MPI_SUCCESS)
      return fail("MPI_Reduce_scatter failed: " + mpiError(rc));
    if (call.reduce == ReduceKind::Avg)
      divideBy(dtype, recv, counts[me], n);
    if (isHalf(dtype))
      narrowFromF32(dtype, wideOut.data(), out, counts[me]);
    break;
  }
  case CollectiveKind::AllToAll: {
    int64_t split = call.dim0, concat = call.dim1;
    std::vector<int> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
    std::vector<Shape> recvBoxes(n);
    int64_t sendTotal = 0, recvTotal = 0;
    for (int j = 0; j < n; ++j) {
      Shape box = call.shape;
      box[split] = chunkRange(call.shape[split], n, j).size;
      int64_t bytes = numElements(box) * static_cast<int64_t>(es);
      Shape rbox = calls[j].shape;
      rbox[split] = chunkRange(calls[j].shape[split], n, me).size;
      int64_t rbytes = numElements(rbox) * static_cast<int64_t>(es);
      if (tooLarge(sendTotal + bytes) || tooLarge(recvTotal + rbytes))
        return fail("blocks larger than 2 GiB are not supported");
      sendCounts[j] = static_cast<int>(bytes);
      sendDispls[j] = static_cast<int>(sendTotal);
      recvCounts[j] = static_cast<int>(rbytes);
      recvDispls[j] = static_cast<int>(recvTotal);
      recvBoxes[j] = rbox;
      sendTotal += bytes;
      recvTotal += rbytes;
    }
    // Chunks along the split dim are consecutive in the input when nothing
    // precedes it; received pieces are consecutive in the output when
    // nothing precedes the concat dim.
    const char *send = static_cast<const char *>(in);
    std::vector<char> packed;
    if (prod(call.shape, 0, split) > 1) {
      packed.resize(sendTotal);
      Shape zero(rank, 0), off(rank, 0);
      for (int j = 0; j < n; ++j) {
        Shape box = call.shape;
        Range r = chunkRange(call.shape[split], n, j);
        box[split] = r.size;
        off[split] = r.offset;
        copyBox(packed.data() + sendDispls[j], box, zero, in, call.shape, off,
                box, es);
      }
      send = packed.data();
    }
    bool direct = prod(outShape, 0, concat) == 1;
    std::vector<char> staging(direct ? 0 : recvTotal);
    char *recv = direct ? static_cast<char *>(out) : staging.data();
    rc = MPI_Alltoallv(send, sendCounts.data(), sendDispls.data(), MPI_BYTE,
                       recv, recvCounts.data(), recvDispls.data(), MPI_BYTE,
                       g.comm);
    if (rc != MPI_SUCCESS)
      return fail("MPI_Alltoallv failed: " + mpiError(rc));
    if (!direct) {
      Shape dstOff(rank, 0), zero(rank, 0);
      for (int i = 0; i < n; ++i) {
        copyBox(out, outShape, dstOff, recv + recvDispls[i], recvBoxes[i], zero,
                recvBoxes[i], es);
        dstOff[concat] += recvBoxes[i][concat];
      }
    }
    break;
  }
  default:
    break;
  }
  return {Status::success(), outShape};
}

} // namespace spmd

//===- Ranks.cpp - spmd-run's ranks: threads (inproc) or processes (mpi) --===//

#include "runtime/Ranks.h"

#include "runtime/CommCollectives.h"
#include "runtime/InProcessComm.h"
#ifdef SPMD_HAVE_MPI
#include "runtime/MpiComm.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace spmd;
using plan::Schedule;

std::string spmd::runInProcess(const Mesh &mesh, double timeoutSeconds,
                               bool verify, int64_t mismatchRank,
                               const RankFn &fn) {
  InProcessOptions options;
  options.timeoutSeconds = timeoutSeconds;
  options.verifyCollectives = verify;
  InProcessWorld world(mesh, options);
  return world.run([&](InProcessComm &rank) {
    plan::CommCollectives comm(rank);
    if (rank.device() == mismatchRank)
      comm.mismatchForTesting();
    fn(rank.device(), comm,
       [&](const std::string &reason) { rank.abort(reason); });
  });
}

MpiRun::~MpiRun() = default;

#ifdef SPMD_HAVE_MPI
/// Every rank's blocks of `tensors`, flattened, all-gathered over the whole
/// mesh (group order is device order): afterwards every process holds every
/// rank's blocks and shapes. Types without a DType travel as f64.
static std::string
gatherAll(Communicator &comm, const std::vector<plan::TensorInfo> &tensors,
          std::vector<std::vector<std::vector<char>>> &outputs,
          std::vector<std::vector<Shape>> &outShapes) {
  const Mesh &mesh = comm.mesh();
  int64_t numRanks = mesh.numDevices();
  int64_t me = comm.device();
  Axes all;
  for (int64_t a = 0; a < mesh.rank(); ++a)
    all.push_back(a);
  for (size_t i = 0; i < tensors.size(); ++i) {
    DType type = tensors[i].type;
    const Shape &mine = outShapes[me][i];
    // Shapes: one row per rank (rank 0 results send one unused dim).
    int64_t width = std::max<int64_t>(1, mine.size());
    std::vector<int64_t> row(width, 0);
    std::copy(mine.begin(), mine.end(), row.begin());
    std::vector<int64_t> rows(numRanks * width);
    CollectiveResult r = comm.allGather(
        InBlock{row.data(), DType::I64, {1, width}},
        OutBlock{rows.data(), rows.size() * sizeof(int64_t)}, all, 0);
    if (!r.ok())
      return "gathering result shapes: " + r.status.message();
    std::vector<int64_t> counts(numRanks);
    int64_t total = 0;
    for (int64_t d = 0; d < numRanks; ++d) {
      outShapes[d].resize(tensors.size());
      outShapes[d][i] = Shape(rows.begin() + d * width,
                              rows.begin() + d * width + mine.size());
      counts[d] = numElements(outShapes[d][i]);
      total += counts[d];
    }
    // The communicators move i8 results (i1/i8 buffers) widened.
    bool direct = type != DType::I8;
    DType wire = direct ? type : DType::F64;
    std::vector<char> send(counts[me] * dtypeSize(wire));
    if (direct)
      std::memcpy(send.data(), outputs[me][i].data(), send.size());
    else
      for (int64_t k = 0; k < counts[me]; ++k)
        storeFromDouble(send.data(), wire, k,
                        loadAsDouble(outputs[me][i].data(), type, k));
    std::vector<char> recv(total * dtypeSize(wire));
    r = comm.allGather(InBlock{send.data(), wire, {counts[me]}},
                       OutBlock{recv.data(), recv.size()}, all, 0);
    if (!r.ok())
      return "gathering results: " + r.status.message();
    int64_t offset = 0;
    for (int64_t d = 0; d < numRanks; ++d) {
      outputs[d].resize(tensors.size());
      std::vector<char> &out = outputs[d][i];
      out.assign(counts[d] * dtypeSize(type), 0);
      if (direct)
        std::memcpy(out.data(), recv.data() + offset * dtypeSize(wire),
                    out.size());
      else
        for (int64_t k = 0; k < counts[d]; ++k)
          storeFromDouble(out.data(), type, k,
                          loadAsDouble(recv.data(), wire, offset + k));
      offset += counts[d];
    }
  }
  return "";
}

namespace {
class MpiRunImpl final : public MpiRun {
public:
  explicit MpiRunImpl(std::unique_ptr<MpiComm> comm)
      : comm(std::move(comm)), adapter(*this->comm) {}
  int64_t device() const override { return comm->device(); }
  plan::Collectives &collectives() override { return adapter; }
  [[noreturn]] void abort(const std::string &reason) override {
    comm->abort(reason);
  }
  std::string
  gatherResults(const Schedule &schedule,
                std::vector<std::vector<std::vector<char>>> &outputs,
                std::vector<std::vector<Shape>> &outShapes) override {
    return gatherAll(*comm, schedule.results, outputs, outShapes);
  }
  std::string gatherTensors(const std::vector<plan::TensorInfo> &tensors,
                            std::vector<std::vector<std::vector<char>>> &blocks,
                            std::vector<std::vector<Shape>> &shapes) override {
    return gatherAll(*comm, tensors, blocks, shapes);
  }

private:
  std::unique_ptr<MpiComm> comm;
  plan::CommCollectives adapter;
};
} // namespace

std::string MpiRun::initialize(int *argc, char ***argv) {
  Status st = MpiComm::initialize(argc, argv);
  return st.ok() ? "" : st.message();
}

void MpiRun::finalize() { MpiComm::finalize(); }

bool MpiRun::active() { return MpiComm::active(); }

void MpiRun::abortJob(const std::string &reason) {
  MpiComm::abortWorld(reason);
}

std::unique_ptr<MpiRun> MpiRun::create(const Mesh &mesh, double timeout,
                                       bool verify, std::string &error) {
  std::unique_ptr<MpiComm> comm;
  if (Status st = MpiComm::create(mesh, timeout, comm); !st.ok()) {
    error = st.message();
    return nullptr;
  }
  comm->setVerifyCollectives(verify);
  return std::make_unique<MpiRunImpl>(std::move(comm));
}
#else
std::string MpiRun::initialize(int *, char ***) {
  return "this spmd-run was built without MPI";
}
void MpiRun::finalize() {}
bool MpiRun::active() { return false; }
void MpiRun::abortJob(const std::string &reason) {
  std::fprintf(stderr, "spmd: aborts: %s\n", reason.c_str());
  std::exit(1);
}
std::unique_ptr<MpiRun> MpiRun::create(const Mesh &, double, bool,
                                       std::string &error) {
  error = "this spmd-run was built without MPI";
  return nullptr;
}
#endif

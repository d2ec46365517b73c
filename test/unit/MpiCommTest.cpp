//===- MpiCommTest.cpp - MPI communicator, run under mpirun -np 4 ---------===//
//
// Every rank runs the same GoogleTest cases on a 2x2 mesh; the exit code is
// the worst over the ranks. With --fault=abort|hang the driver instead
// injects a fault (test/unit/mpi-fault.sh checks that mpirun stops with a
// message).
//
//===----------------------------------------------------------------------===//

#include "runtime/MpiComm.h"
#include "CollectiveCases.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <thread>

using namespace spmd;
using namespace spmd::testcases;

namespace {

std::unique_ptr<MpiComm> comm;   // 2x2 mesh
std::unique_ptr<MpiComm> comm1d; // the same 4 processes as a 1-D mesh

Mesh mesh2x2() { return Mesh{{"dp", "tp"}, {2, 2}}; }

class MpiCollectives : public ::testing::TestWithParam<CollectiveKind> {};

TEST_P(MpiCollectives, MatchSerialReference) {
  CollectiveKind kind = GetParam();
  uint64_t seed = 77;
  size_t failures = 0;
  for (Axes axes : {Axes{0}, Axes{1}, Axes{0, 1}, Axes{1, 0}}) {
    for (const Case &c : casesFor(kind, seed += 10000)) {
      std::string e = runCase(*comm, axes, c);
      if (!e.empty() && ++failures <= 5)
        ADD_FAILURE() << e << " (axes "
                      << describeGroup(comm->mesh(), axes, comm->device())
                      << ")";
    }
  }
  EXPECT_EQ(failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Mesh2x2, MpiCollectives,
                         ::testing::Values(CollectiveKind::AllGather,
                                           CollectiveKind::AllReduce,
                                           CollectiveKind::ReduceScatter,
                                           CollectiveKind::AllToAll),
                         [](const ::testing::TestParamInfo<CollectiveKind> &i) {
                           return std::string(collectiveName(i.param));
                         });

class MpiCollectives1D : public ::testing::TestWithParam<CollectiveKind> {};

TEST_P(MpiCollectives1D, MatchSerialReference) {
  size_t failures = 0;
  for (const Case &c : casesFor(GetParam(), 555)) {
    std::string e = runCase(*comm1d, {0}, c);
    if (!e.empty() && ++failures <= 5)
      ADD_FAILURE() << e;
  }
  EXPECT_EQ(failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Mesh4, MpiCollectives1D,
                         ::testing::Values(CollectiveKind::AllGather,
                                           CollectiveKind::AllReduce,
                                           CollectiveKind::ReduceScatter,
                                           CollectiveKind::AllToAll),
                         [](const ::testing::TestParamInfo<CollectiveKind> &i) {
                           return std::string(collectiveName(i.param));
                         });

TEST(MpiComm, ExplicitFingerprintCheck) {
  Fingerprint fp;
  fp.kind = CollectiveKind::AllToAll;
  fp.axes = {0};
  fp.dim0 = 1;
  fp.dim1 = comm1d->device() == 2 ? 1 : 0;
  Status s = comm1d->checkFingerprint({0}, fp);
  EXPECT_NE(s.message().find("fingerprint mismatch: member 0 (rank 0) has "
                             "allToAll(axes=[w], split=1, concat=0, f32, "
                             "shape=[], seq=0) but member 2 (rank 2) has "
                             "allToAll(axes=[w], split=1, concat=1, f32, "
                             "shape=[], seq=0)"),
            std::string::npos)
      << s.message();
  fp.dim1 = 0;
  EXPECT_TRUE(comm1d->checkFingerprint({0}, fp).ok());
}

TEST(MpiComm, InPlaceAllReduceAndBarrier) {
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>(i) * (comm->device() + 1);
  CollectiveResult r =
      comm->allReduce({v.data(), DType::F64, {10, 100}},
                      {v.data(), v.size() * 8}, {0, 1}, ReduceKind::Sum);
  ASSERT_TRUE(r.ok()) << r.status.message();
  EXPECT_EQ(r.shape, (Shape{10, 100}));
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], static_cast<double>(i) * 10);
  EXPECT_TRUE(comm->barrier({1}).ok());
  EXPECT_TRUE(comm->barrier({}).ok());
}

TEST(MpiComm, BadCallsFailOnEveryMember) {
  float in[16] = {0}, out[64];
  // Shapes that must agree differ on rank 1 (group {0, 1} over tp).
  Shape s{2, comm->device() == 1 ? 3 : 2};
  CollectiveResult r =
      comm->allGather({in, DType::F32, s}, {out, sizeof(out)}, {1}, 0);
  if (comm->device() < 2) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status.message().find(
                  "allGather #" + std::to_string(comm->sequence() - 1) +
                  " on mesh axes [tp] (ranks 0, 1): member 1 (rank 1) passes "
                  "shape [2, 3] but member 0 passes [2, 2] (only dim 0 may "
                  "differ)"),
              std::string::npos)
        << r.status.message();
  } else {
    EXPECT_TRUE(r.ok()) << r.status.message();
  }
  // A too small output on rank 3 fails its whole column group {1, 3}.
  size_t cap = comm->device() == 3 ? 8 : sizeof(out);
  r = comm->allReduce({in, DType::F32, {4}}, {out, cap}, {0}, ReduceKind::Sum);
  if (comm->device() % 2 == 1) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status.message().find("member 1 (rank 3) has an output buffer "
                                      "of 8 bytes but its result [4] needs 16"),
              std::string::npos)
        << r.status.message();
  } else {
    EXPECT_TRUE(r.ok()) << r.status.message();
  }
}

// Ranks 0 and 2 issue one collective more than 1 and 3: the next row
// collective's fingerprints differ in their sequence numbers and every rank
// reports it. (Ranks 1 and 3 then catch up so later tests agree again.)
TEST(MpiComm, FingerprintMismatchIsReported) {
  comm->setVerifyCollectives(true);
  int64_t d = comm->device();
  if (d == 0 || d == 2) {
    ASSERT_TRUE(comm->barrier({0}).ok());
  }
  float v = static_cast<float>(d), out[2];
  uint64_t seq = comm->sequence();
  CollectiveResult r =
      comm->allGather({&v, DType::F32, {1}}, {out, sizeof(out)}, {1}, 0);
  ASSERT_FALSE(r.ok());
  std::string first = std::to_string(d < 2 ? 0 : 2),
              second = std::to_string(d < 2 ? 1 : 3);
  uint64_t seq0 = d % 2 == 0 ? seq : seq + 1, seq1 = seq0 - 1;
  EXPECT_NE(r.status.message().find(
                "fingerprint mismatch: member 0 (rank " + first +
                ") has allGather(axes=[tp], dim=0, f32, shape=[?], seq=" +
                std::to_string(seq0) + ") but member 1 (rank " + second +
                ") has allGather(axes=[tp], dim=0, f32, shape=[?], seq=" +
                std::to_string(seq1) + ")"),
            std::string::npos)
      << r.status.message();
  if (d == 1 || d == 3) {
    ASSERT_TRUE(comm->barrier({0}).ok());
  }
  // In step again: verification passes.
  r = comm->allGather({&v, DType::F32, {1}}, {out, sizeof(out)}, {1}, 0);
  EXPECT_TRUE(r.ok()) << r.status.message();
  comm->setVerifyCollectives(false);
}

/// Prints only failures, prefixed with the rank (ranks other than 0).
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank, r.file_name(),
                   r.line_number(), r.message());
  }

private:
  int rank;
};

int runFault(const std::string &mode) {
  int64_t d = comm->device();
  float v = 1, out[4];
  CollectiveResult r =
      comm->allReduce({&v, DType::F32, {}}, {out, 4}, {0, 1}, ReduceKind::Sum);
  if (!r.ok() || out[0] != 4) {
    std::fprintf(stderr, "rank %d: first collective failed\n", (int)d);
    return 3;
  }
  if (mode == "abort" && d == 1)
    comm->abort("injected fault");
  if (mode == "hang" && d == 3)
    std::this_thread::sleep_for(std::chrono::seconds(120));
  r = comm->allReduce({&v, DType::F32, {}}, {out, 4}, {0, 1}, ReduceKind::Sum);
  std::fprintf(stderr, "rank %d: the faulty collective returned (%s)\n", (int)d,
               r.ok() ? "ok" : r.status.message().c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (Status s = MpiComm::initialize(&argc, &argv); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 2;
  }
  std::string fault;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--fault=", 8) == 0)
      fault = argv[i] + 8;
  if (Status s = MpiComm::create(mesh2x2(), fault == "hang" ? 2.0 : 60.0, comm);
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    MpiComm::finalize();
    return 2;
  }
  if (Status s = MpiComm::create(Mesh{{"w"}, {4}}, 60.0, comm1d); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    MpiComm::finalize();
    return 2;
  }
  int rc;
  if (!fault.empty()) {
    rc = runFault(fault);
  } else {
    ::testing::InitGoogleTest(&argc, argv);
    int rank = MpiComm::worldRank();
    if (rank != 0) {
      ::testing::TestEventListeners &listeners =
          ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new FailurePrinter(rank));
    }
    rc = RUN_ALL_TESTS();
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    rc = worst;
  }
  comm.reset();
  comm1d.reset();
  MpiComm::finalize();
  return rc;
}

//===- Workers.h - A rank's compute threads ---------------------*- C++ -*-===//
//
// A rank runs its steps on its own thread; when the process has more cores
// than ranks, each rank also gets helper threads (Workers) that split its
// GEMMs and its kernels' outermost parallel loops. BLAS itself then runs one
// thread per call: its own pool would spin on cores that other ranks (or
// other processes) need, and concurrent calls from several rank threads
// would share it badly.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_WORKERS_H
#define SPMD_RUNTIME_WORKERS_H

#include <cstdint>
#include <functional>
#include <memory>

namespace spmd::plan {

/// Compute threads per rank for executors created from now on: `threads`
/// when > 0, else the cores this process may use divided by `ranks` (at
/// least 1). SPMD_THREADS_PER_RANK in the environment overrides both.
/// Also makes BLAS single-threaded per call. Returns the count chosen.
int setRankThreads(int64_t ranks, int64_t threads = 0);
/// The current count (1 until setRankThreads is called).
int rankThreads();
/// Cores this process may run on (its affinity mask).
int usableCores();
/// Ranks of this job on this machine under mpirun (OpenMPI's
/// OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS), else 1.
int64_t localRanks();

/// Fork-join over `size()` threads: the caller and size() - 1 helpers that
/// wait (yielding briefly, then blocked) between jobs.
class Workers {
public:
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers &) = delete;
  Workers &operator=(const Workers &) = delete;

  int size() const { return threads; }
  /// Runs fn(i) for every i in [0, n), spread over the threads; returns
  /// when all are done. fn must not call run() again.
  void run(int64_t n, const std::function<void(int64_t)> &fn);

private:
  struct State;
  int threads;
  std::unique_ptr<State> state;
};

} // namespace spmd::plan

#endif // SPMD_RUNTIME_WORKERS_H

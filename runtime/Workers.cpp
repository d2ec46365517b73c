//===- Workers.cpp - A rank's compute threads -----------------------------===//

#include "runtime/Workers.h"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

using namespace spmd::plan;

static std::atomic<int> threadsPerRank{1};

int spmd::plan::usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int64_t spmd::plan::localRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *value = std::getenv(name))
      if (int64_t n = std::atoll(value); n > 0)
        return n;
  return 1;
}

int spmd::plan::setRankThreads(int64_t ranks, int64_t threads) {
  int64_t n = threads;
  if (const char *env = std::getenv("SPMD_THREADS_PER_RANK"))
    n = std::atoll(env);
  if (n <= 0)
    n = usableCores() / std::max<int64_t>(ranks, 1);
  // More helpers than cores only adds switching; 64 bounds a typo.
  n = std::clamp<int64_t>(n, 1, std::min(64, usableCores()));
  threadsPerRank.store(static_cast<int>(n));
  openblas_set_num_threads(1);
  return static_cast<int>(n);
}

int spmd::plan::rankThreads() { return threadsPerRank.load(); }

struct Workers::State {
  std::vector<std::thread> helpers;
  std::mutex mu;
  std::condition_variable start, done;
  std::atomic<int64_t> generation{0}, pending{0}, next{0};
  int64_t count = 0;
  const std::function<void(int64_t)> *job = nullptr;
  bool stop = false; // under mu

  // Work items are taken from a shared counter, so a helper that starts
  // late (its core was busy) takes fewer.
  void drain() {
    for (int64_t i; (i = next.fetch_add(1)) < count;)
      (*job)(i);
  }

  void helper() {
    int64_t seen = 0;
    for (;;) {
      // A step's GEMMs and kernels follow each other closely: yield a
      // while before blocking, but never spin on a core someone needs.
      for (int i = 0; i < 100 && generation.load() == seen; ++i)
        std::this_thread::yield();
      {
        std::unique_lock<std::mutex> lock(mu);
        start.wait(lock, [&] { return stop || generation.load() != seen; });
        if (stop)
          return;
      }
      seen = generation.load();
      drain();
      if (pending.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        done.notify_one();
      }
    }
  }
};

Workers::Workers(int threads)
    : threads(std::max(1, threads)), state(std::make_unique<State>()) {
  for (int i = 1; i < this->threads; ++i)
    state->helpers.emplace_back([s = state.get()] { s->helper(); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->stop = true;
  }
  state->start.notify_all();
  for (std::thread &t : state->helpers)
    t.join();
}

void Workers::run(int64_t n, const std::function<void(int64_t)> &fn) {
  if (threads == 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  State &s = *state;
  s.job = &fn;
  s.count = n;
  s.next.store(0);
  s.pending.store(threads - 1);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.generation.fetch_add(1);
  }
  s.start.notify_all();
  s.drain();
  for (int i = 0; i < 100 && s.pending.load() != 0; ++i)
    std::this_thread::yield();
  std::unique_lock<std::mutex> lock(s.mu);
  s.done.wait(lock, [&] { return s.pending.load() == 0; });
}

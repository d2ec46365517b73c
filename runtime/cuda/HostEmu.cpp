//===- HostEmu.cpp - Fiber scheduler for emulated CUDA blocks -------------===//

#include "runtime/cuda/HostEmu.h"

#include "runtime/DType.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ucontext.h>
#include <vector>

namespace spmd_emu {

namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kSharedBytes = 228 * 1024; // sm_90's maximum per block

enum class Wait { None, Block, Warp, Done };

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  uint3 index;
  Wait wait = Wait::None;
  size_t sharedCursor = 0;
};

struct Block {
  const std::function<void()> *body = nullptr;
  std::vector<Fiber> fibers;
  std::vector<uint64_t> slots; // one shuffle slot per thread
  std::unique_ptr<char[]> shared;
  ucontext_t scheduler;
  int current = -1;
  std::string error;
};

thread_local Block *running = nullptr;

Fiber &self() { return running->fibers[running->current]; }

void park(Wait w) {
  Fiber &f = self();
  f.wait = w;
  swapcontext(&f.context, &running->scheduler);
}

void fiberEntry() {
  (*running->body)();
  park(Wait::Done);
}

// Out of line: getcontext returns twice, which would make the compiler
// distrust the scheduler loop's locals.
__attribute__((noinline)) void initFiber(Fiber &f) {
  f.wait = Wait::None;
  f.sharedCursor = 0;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack.get();
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiberEntry, 0);
}

} // namespace

/// Set while a flat launch runs: barriers cannot be honoured there.
thread_local bool flat = false;

[[noreturn]] void flatBarrier(const char *what) {
  std::fprintf(stderr,
               "spmd_emu: %s in a kernel launched without fibers "
               "(launchFlat is for kernels without barriers)\n",
               what);
  std::abort();
}

void syncBlock() {
  if (flat)
    flatBarrier("__syncthreads");
  park(Wait::Block);
}
void syncWarp() {
  if (flat)
    flatBarrier("__syncwarp");
  park(Wait::Warp);
}

uint64_t exchange(uint64_t bits, int srcLane) {
  if (flat)
    flatBarrier("a warp shuffle");
  Block &b = *running;
  int me = b.current;
  b.slots[me] = bits;
  park(Wait::Warp);
  int src = (me & ~31) + srcLane;
  uint64_t v = (src < static_cast<int>(b.fibers.size()) &&
                b.fibers[src].wait != Wait::Done)
                   ? b.slots[src]
                   : bits;
  park(Wait::Warp); // nobody overwrites a slot before every lane read it
  return v;
}

void *sharedBytes(size_t bytes, size_t align) {
  if (flat)
    flatBarrier("shared memory");
  Fiber &f = self();
  size_t off = (f.sharedCursor + align - 1) / align * align;
  if (off + bytes > kSharedBytes) {
    std::fprintf(stderr, "spmd_emu: more than %zu bytes of shared memory\n",
                 kSharedBytes);
    std::abort();
  }
  f.sharedCursor = off + bytes;
  return running->shared.get() + off;
}

float halfBitsToFloat(uint16_t bits) { return spmd::halfToFloat(bits); }
uint16_t floatToHalfBits(float value) { return spmd::floatToHalf(value); }

/// What CUDA rejects in a launch configuration, or "".
static std::string checkConfiguration(dim3 grid, dim3 block) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024)
    return "block of " + std::to_string(threads) +
           " threads (CUDA allows 1 to 1024)";
  if (block.z > 64)
    return "blockDim.z above 64";
  if (grid.y > 65535 || grid.z > 65535)
    return "gridDim.y/z above 65535";
  if (uint64_t(grid.x) * grid.y * grid.z == 0)
    return "empty grid (CUDA rejects a launch with no blocks)";
  return "";
}

std::string launchFlatBody(dim3 grid, dim3 block,
                           const std::function<void()> &body) {
  if (std::string error = checkConfiguration(grid, block); !error.empty())
    return error;
  gridDim = grid;
  blockDim = block;
  flat = true;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, bz};
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              threadIdx = {tx, ty, tz};
              body();
            }
      }
  flat = false;
  return "";
}

std::string launchBody(dim3 grid, dim3 block,
                       const std::function<void()> &body) {
  if (std::string error = checkConfiguration(grid, block); !error.empty())
    return error;
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  Block b;
  b.body = &body;
  b.fibers.resize(threads);
  b.slots.resize(threads);
  b.shared.reset(new char[kSharedBytes]);
  for (Fiber &f : b.fibers)
    f.stack.reset(new char[kStackBytes]);
  Block *outer = running;
  running = &b;
  gridDim = grid;
  blockDim = block;
  std::string error;
  for (unsigned bz = 0; bz < grid.z && error.empty(); ++bz)
    for (unsigned by = 0; by < grid.y && error.empty(); ++by)
      for (unsigned bx = 0; bx < grid.x && error.empty(); ++bx) {
        blockIdx = {bx, by, bz};
        for (uint64_t t = 0; t < threads; ++t) {
          Fiber &f = b.fibers[t];
          f.index = {unsigned(t % block.x), unsigned(t / block.x % block.y),
                     unsigned(t / (uint64_t(block.x) * block.y))};
          initFiber(f);
        }
        int n = static_cast<int>(threads);
        while (true) {
          // Run every runnable fiber until it parks.
          for (int t = 0; t < n; ++t) {
            Fiber &f = b.fibers[t];
            if (f.wait != Wait::None)
              continue;
            b.current = t;
            threadIdx = f.index;
            swapcontext(&b.scheduler, &f.context);
          }
          // Release complete barriers: a warp when all its live lanes wait
          // at the warp barrier, the block when all live threads wait at it.
          int live = 0, atBlock = 0;
          bool released = false;
          for (int w = 0; w * 32 < n; ++w) {
            int lo = w * 32, hi = std::min(n, lo + 32), wl = 0, atWarp = 0;
            for (int t = lo; t < hi; ++t) {
              Wait s = b.fibers[t].wait;
              wl += s != Wait::Done;
              atWarp += s == Wait::Warp;
              atBlock += s == Wait::Block;
            }
            live += wl;
            if (atWarp && atWarp == wl) {
              for (int t = lo; t < hi; ++t)
                if (b.fibers[t].wait == Wait::Warp)
                  b.fibers[t].wait = Wait::None;
              released = true;
            }
          }
          if (live == 0)
            break;
          if (!released && atBlock == live) {
            for (Fiber &f : b.fibers)
              if (f.wait == Wait::Block)
                f.wait = Wait::None;
            released = true;
          }
          if (!released) {
            error = "block (" + std::to_string(bx) + ", " + std::to_string(by) +
                    ", " + std::to_string(bz) +
                    "): threads wait at different barriers (divergent "
                    "__syncthreads or warp shuffle); " +
                    std::to_string(atBlock) + " of " + std::to_string(live) +
                    " live threads at __syncthreads";
            break;
          }
        }
      }
  running = outer;
  return error;
}

} // namespace spmd_emu

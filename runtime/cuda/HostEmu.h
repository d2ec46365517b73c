//===- HostEmu.h - Run CUDA kernel source as C++ on the CPU ----*- C++ -*-===//
//
// Lets the kernel library (kernels/spmd_kernels.cuh) and the kernels printed
// over it compile as ordinary C++, and runs them with CUDA's semantics on the
// CPU, so tests check the very source NVRTC compiles for the GPU.
//
// Every thread of a block is a fiber (ucontext) on the calling OS thread; a
// block runs until all its fibers finish, blocks run one after another.
// __syncthreads() parks the fiber until every live thread of the block has
// arrived (an exited thread counts as arrived); the warp shuffles park it
// until every live lane of its warp has published its value. A barrier that
// can never complete (divergent __syncthreads) aborts with a message rather
// than hanging. Since one OS thread runs everything, atomics are plain
// read-modify-writes.
//
// Shared memory: CUDA's `__shared__ T a[n];` declares one array per block,
// which C++ cannot express for a local, so kernel code writes
// SPMD_SHARED(T, a, n): the device expansion is the __shared__ declaration,
// here every thread of the block gets the same slice of a per-block arena
// (threads reach their declarations in the same order).
//
// Not emulated: dynamic shared memory, clusters, cooperative groups, warp
// votes, textures.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_CUDA_HOSTEMU_H
#define SPMD_RUNTIME_CUDA_HOSTEMU_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define SPMD_SHARED(T, name, n) T *name = ::spmd_emu::sharedArray<T>(n)

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};

// The running fiber's coordinates (set by the scheduler before it resumes a
// fiber; read fresh after every barrier, which is an opaque call).
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace spmd_emu {

/// Parks the calling fiber at the block barrier / its warp's barrier.
void syncBlock();
void syncWarp();
/// Publishes `bits` for the lanes of this warp and returns lane `src`'s
/// (own value when `src` is outside the live lanes).
uint64_t exchange(uint64_t bits, int srcLane);
/// `bytes` of the block's shared arena, the same for every thread that makes
/// the same sequence of calls.
void *sharedBytes(size_t bytes, size_t align);
template <class T> T *sharedArray(size_t n) {
  return static_cast<T *>(sharedBytes(n * sizeof(T), alignof(T)));
}

float halfBitsToFloat(uint16_t bits);
uint16_t floatToHalfBits(float value);

/// Runs `body` as a kernel over `grid` x `block`. Returns an error message,
/// empty on success (bad configuration, barrier deadlock).
std::string launchBody(dim3 grid, dim3 block,
                       const std::function<void()> &body);

/// Runs `body` for every thread in turn, without fibers: for kernels with no
/// barrier, shuffle or shared memory (a grid-stride loop), where it is the
/// same computation many times faster. A barrier there aborts with a
/// message.
std::string launchFlatBody(dim3 grid, dim3 block,
                           const std::function<void()> &body);
template <class... Params, class... Args>
std::string launchFlat(void (*kernel)(Params...), dim3 grid, dim3 block,
                       Args... args) {
  return launchFlatBody(grid, block, [=] { kernel(args...); });
}

/// Launches `kernel(args...)`: emu::launch(k, grid, block, a, b, c).
template <class... Params, class... Args>
std::string launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                   Args... args) {
  return launchBody(grid, block, [=] { kernel(args...); });
}

template <class T> uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T> T fromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

} // namespace spmd_emu

inline void __syncthreads() { spmd_emu::syncBlock(); }
inline void __syncwarp(unsigned = 0xffffffffu) { spmd_emu::syncWarp(); }

template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
  int lane = threadIdx.x & 31;
  int base = lane & ~(width - 1);
  return spmd_emu::fromBits<T>(
      spmd_emu::exchange(spmd_emu::toBits(v), base + (src & (width - 1))));
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int laneMask, int width = 32) {
  int lane = threadIdx.x & 31;
  int src = lane ^ laneMask;
  if ((src & ~(width - 1)) != (lane & ~(width - 1)))
    src = lane;
  return spmd_emu::fromBits<T>(spmd_emu::exchange(spmd_emu::toBits(v), src));
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  int lane = threadIdx.x & 31;
  int src = lane + static_cast<int>(delta);
  if ((src & ~(width - 1)) != (lane & ~(width - 1)))
    src = lane;
  return spmd_emu::fromBits<T>(spmd_emu::exchange(spmd_emu::toBits(v), src));
}

template <class T> T atomicAdd(T *p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <class T> T atomicMax(T *p, T v) {
  T old = *p;
  *p = old < v ? v : old;
  return old;
}
template <class T> T __ldg(const T *p) { return *p; }

inline float __int_as_float(int v) {
  return spmd_emu::fromBits<float>(static_cast<uint32_t>(v));
}
inline float __uint_as_float(unsigned v) {
  return spmd_emu::fromBits<float>(v);
}
inline int __float_as_int(float v) {
  return static_cast<int>(spmd_emu::toBits(v));
}
inline unsigned __float_as_uint(float v) {
  return static_cast<unsigned>(spmd_emu::toBits(v));
}
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
inline float __expf(float v) { return std::exp(v); }
inline float __logf(float v) { return std::log(v); }
inline float __fdividef(float a, float b) { return a / b; }

#endif // SPMD_RUNTIME_CUDA_HOSTEMU_H

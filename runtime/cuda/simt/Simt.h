//===- Simt.h - CUDA kernels as host C++, one fiber per CUDA thread -*- C++
//-*-===//
//
// Included first (g++ -include runtime/cuda/simt/Simt.h) into every .cu file
// that runs on the host: runtime/cuda's kernels and launchers, and the .cu
// files tgc generates, after simt_rewrite.py turned the three things a C++
// compiler cannot parse into calls of this file (`k<<<g, b, s, st>>>(a)`,
// `extern __shared__ T x[]` and inline PTX).
//
// A launch is enqueued on its stream (Runtime.cpp) and, when it runs, runs
// its blocks one after another; within a block every CUDA thread is a fiber
// (Scheduler.cpp) with its own threadIdx, and the fibers take turns on one
// OS thread, each until it waits at a barrier or returns:
//  - __syncthreads is a barrier of the block's live threads; a thread that
//    returns leaves it (sm_70+).
//  - Warp collectives (__shfl*_sync, __syncwarp, __ballot_sync, __any_sync,
//    __all_sync, __reduce_*_sync, mma.sync) meet the lanes their mask names
//    in a 32-lane warp (diverged lanes in groups of disjoint masks). A lane
//    outside its own mask, a mask naming a lane that has exited, lanes meeting
//    at different collectives, or a lane that exits while others wait for it,
//    is an error naming the kernel and the lines; so is a deadlock.
//    __activemask is the lanes at the same call once the warp's others have
//    returned or wait elsewhere (converged).
//  - Static __shared__ arrays are function statics (one block runs at a
//    time), dynamic shared memory a per-block allocation of exactly the
//    launch's bytes, filled with 0xff before every block so that reads of
//    unwritten bytes show (as NaN); over 48 KiB needs cudaFuncSetAttribute,
//    over 227 KiB is refused, as on an H100.
//  - mma.sync.m16n8k16 with bf16 inputs is computed from the PTX ISA's
//    fragment layouts; atomics are atomic.
//
// Under ThreadSanitizer the fibers are TSan fibers and a barrier is a
// release by every thread that arrives and an acquire by every thread that
// leaves it, so a missing __syncthreads is reported as the race it is.
// Races between blocks are not: blocks run in turn (TGC_SIMT_SEED=N runs
// them in a seeded random order, which finds some of them).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_SIMT_SIMT_H
#define TGC_RUNTIME_CUDA_SIMT_SIMT_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

// host_defines.h makes these GNU attributes that g++ ignores; __shared__
// would then declare a per-thread automatic array.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#undef __noinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// One block runs at a time, so a function-static array is the block's
// shared memory.
#define __shared__ static
// The device halves of the project's headers (DeviceMath.cuh).
#define __CUDACC__ 1
#define TGC_SIMT 1

namespace tgc::simt {

/// Where a CUDA built-in was called: diagnostics name the line. As the
/// built-ins' default argument, `Site()` is their caller's file and line:
/// __builtin_LINE() is the call site's only as a function's own default
/// argument (inside a braced initializer, g++ gives the line of the
/// declaration, so every diagnostic named Simt.h; SimtTest found it).
struct Site {
  constexpr Site(const char *file = __builtin_FILE(),
                 int line = __builtin_LINE())
      : file(file), line(line) {}
  const char *file;
  int line;
};
#define TGC_SIMT_SITE ::tgc::simt::Site()

/// The running CUDA thread's coordinates (all fibers share one OS thread).
struct ThreadCoords {
  uint3 thread;
  uint3 block;
};
extern ThreadCoords current;
extern dim3 currentBlockDim, currentGridDim;

//===----------------------------------------------------------------------===//
// Scheduler.cpp
//===----------------------------------------------------------------------===//

/// Runs `threadBody` once per CUDA thread of every block of the grid.
void runGrid(const char *kernel, dim3 grid, dim3 block, size_t sharedBytes,
             const std::function<void()> &threadBody);

/// Waits until every live thread of the block arrives.
void syncThreads(Site site);

/// The collectives a warp can meet at.
enum class WarpOp {
  Sync,
  ShuffleIdx,
  ShuffleUp,
  ShuffleDown,
  ShuffleXor,
  Ballot,
  ReduceAdd,
  ReduceMin,
  ReduceMax,
  ReduceAnd,
  ReduceOr,
  ReduceXor,
  MmaM16n8k16Bf16,
};

/// The 64 bits a lane hands to a warp collective and gets back from it (six
/// words for mma's fragments).
struct LaneWords {
  uint64_t w[6] = {0, 0, 0, 0, 0, 0};
};

/// Every lane of `mask` calls this with the same `op`; `arg` is the shuffle's
/// lane or delta, `width` its segment. Returns this lane's result.
LaneWords warpCollective(WarpOp op, unsigned mask, const LaneWords &in, int arg,
                         int width, bool isSigned, Site site);

/// The block's dynamic shared memory.
void *dynamicShared();

/// The lanes of this thread's warp that are converged with it: those at
/// this same __activemask call once every lane of the warp has reached it,
/// returned, or waits elsewhere.
unsigned activeMask(Site site);

/// A serializing atomic read-modify-write of `bytes` at `p` (the fibers of
/// one block share one OS thread, but the emulation's host threads do not).
template <typename T, typename F> T atomicUpdate(T *p, F update) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4 or 8 bytes");
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits *bits = reinterpret_cast<Bits *>(p);
  Bits seen = __atomic_load_n(bits, __ATOMIC_RELAXED), next;
  T old;
  do {
    std::memcpy(&old, &seen, sizeof(T));
    T value = update(old);
    std::memcpy(&next, &value, sizeof(T));
  } while (!__atomic_compare_exchange_n(bits, &seen, next, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

template <typename T> LaneWords wordsOf(const T &v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "warp collectives move up to 8 trivially copyable bytes");
  LaneWords in;
  std::memcpy(&in.w[0], &v, sizeof(T));
  return in;
}
template <typename T> T valueOf(const LaneWords &out) {
  T v;
  std::memcpy(&v, &out.w[0], sizeof(T));
  return v;
}

template <typename T>
T shuffle(WarpOp op, unsigned mask, T v, int arg, int width, Site site) {
  return valueOf<T>(warpCollective(op, mask, wordsOf(v), arg, width,
                                   std::is_signed_v<T>, site));
}

//===----------------------------------------------------------------------===//
// Launches (k<<<grid, block, bytes, stream>>>(args) after simt_rewrite.py)
//===----------------------------------------------------------------------===//

struct LaunchConfig {
  LaunchConfig(dim3 grid, dim3 block, size_t sharedBytes = 0,
               cudaStream_t stream = nullptr)
      : grid(grid), block(block), sharedBytes(sharedBytes), stream(stream) {}
  dim3 grid, block;
  size_t sharedBytes;
  cudaStream_t stream;
};

/// Checks the configuration as the driver does (an invalid one sets the
/// launch's error and runs nothing) and every pointer argument (a pointer
/// into no device allocation is an error: the GPU would fault on it).
bool checkLaunch(const char *kernel, const void *address,
                 const LaunchConfig &config, const char *file, int line);
void checkPointerArgument(const char *kernel, int index, const void *p,
                          const char *file, int line);
void enqueueKernel(const char *kernel, const LaunchConfig &config,
                   std::function<void()> threadBody);

template <typename T>
void checkArgument(const char *kernel, int index, const T &value,
                   const char *file, int line) {
  if constexpr (std::is_pointer_v<T>)
    checkPointerArgument(kernel, index, (const void *)value, file, line);
}

template <typename Tuple, size_t... I>
void checkArguments(const char *kernel, const Tuple &args,
                    std::index_sequence<I...>, const char *file, int line) {
  (checkArgument(kernel, (int)I, std::get<I>(args), file, line), ...);
}

/// The arguments are converted to the kernel's parameter types now, as at a
/// real launch; each CUDA thread then calls the kernel on its own copy.
template <typename... P, typename... A>
void launch(const char *kernel, const char *file, int line,
            void (*function)(P...), const LaunchConfig &config, A &&...args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "kernel launched with the wrong number of arguments");
  if (!checkLaunch(kernel, (const void *)function, config, file, line))
    return;
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(
      std::forward<A>(args)...);
  checkArguments(kernel, *params, std::index_sequence_for<P...>(), file, line);
  enqueueKernel(kernel, config,
                [function, params] { std::apply(function, *params); });
}

//===----------------------------------------------------------------------===//
// Inline PTX (simt_rewrite.py turns each asm statement into one of these)
//===----------------------------------------------------------------------===//

namespace ptx {
/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d = a b + c over
/// the warp, a 16x16 bf16 (4 registers), b 16x8 bf16 (2), c and d 16x8 f32.
void mma_sync_aligned_m16n8k16_row_col_f32_bf16_bf16_f32(
    float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1,
    uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1, float c0, float c1,
    float c2, float c3, Site site);
} // namespace ptx

} // namespace tgc::simt

//===----------------------------------------------------------------------===//
// The CUDA built-ins
//===----------------------------------------------------------------------===//

#define threadIdx (::tgc::simt::current.thread)
#define blockIdx (::tgc::simt::current.block)
#define blockDim (::tgc::simt::currentBlockDim)
#define gridDim (::tgc::simt::currentGridDim)
constexpr int warpSize = 32;

inline void __syncthreads(tgc::simt::Site site = TGC_SIMT_SITE) {
  tgc::simt::syncThreads(site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       tgc::simt::Site site = TGC_SIMT_SITE) {
  tgc::simt::warpCollective(tgc::simt::WarpOp::Sync, mask, {}, 0, 32, false,
                            site);
}
inline unsigned __activemask(tgc::simt::Site site = TGC_SIMT_SITE) {
  return tgc::simt::activeMask(site);
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <typename T>
T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32,
              tgc::simt::Site site = TGC_SIMT_SITE) {
  return tgc::simt::shuffle(tgc::simt::WarpOp::ShuffleIdx, mask, v, srcLane,
                            width, site);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 tgc::simt::Site site = TGC_SIMT_SITE) {
  return tgc::simt::shuffle(tgc::simt::WarpOp::ShuffleUp, mask, v, (int)delta,
                            width, site);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   tgc::simt::Site site = TGC_SIMT_SITE) {
  return tgc::simt::shuffle(tgc::simt::WarpOp::ShuffleDown, mask, v, (int)delta,
                            width, site);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32,
                  tgc::simt::Site site = TGC_SIMT_SITE) {
  return tgc::simt::shuffle(tgc::simt::WarpOp::ShuffleXor, mask, v, laneMask,
                            width, site);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              tgc::simt::Site site = TGC_SIMT_SITE) {
  return (unsigned)tgc::simt::warpCollective(tgc::simt::WarpOp::Ballot, mask,
                                             tgc::simt::wordsOf(predicate != 0),
                                             0, 32, false, site)
      .w[0];
}
inline int __any_sync(unsigned mask, int predicate,
                      tgc::simt::Site site = TGC_SIMT_SITE) {
  return __ballot_sync(mask, predicate, site) != 0;
}
inline int __all_sync(unsigned mask, int predicate,
                      tgc::simt::Site site = TGC_SIMT_SITE) {
  // Every lane of the mask takes part (warpCollective checks it).
  return __ballot_sync(mask, predicate, site) == mask;
}
#define TGC_SIMT_WARP_REDUCE(NAME, OP, T)                                      \
  inline T NAME(unsigned mask, T value,                                        \
                tgc::simt::Site site = TGC_SIMT_SITE) {                        \
    return tgc::simt::shuffle(tgc::simt::WarpOp::OP, mask, value, 0, 32,       \
                              site);                                           \
  }
TGC_SIMT_WARP_REDUCE(__reduce_add_sync, ReduceAdd, unsigned)
TGC_SIMT_WARP_REDUCE(__reduce_add_sync, ReduceAdd, int)
TGC_SIMT_WARP_REDUCE(__reduce_min_sync, ReduceMin, unsigned)
TGC_SIMT_WARP_REDUCE(__reduce_min_sync, ReduceMin, int)
TGC_SIMT_WARP_REDUCE(__reduce_max_sync, ReduceMax, unsigned)
TGC_SIMT_WARP_REDUCE(__reduce_max_sync, ReduceMax, int)
TGC_SIMT_WARP_REDUCE(__reduce_and_sync, ReduceAnd, unsigned)
TGC_SIMT_WARP_REDUCE(__reduce_or_sync, ReduceOr, unsigned)
TGC_SIMT_WARP_REDUCE(__reduce_xor_sync, ReduceXor, unsigned)
#undef TGC_SIMT_WARP_REDUCE

template <typename T> T atomicAdd(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return old + v; });
}
template <typename T> T atomicSub(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return old - v; });
}
template <typename T> T atomicMax(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return old < v ? v : old; });
}
template <typename T> T atomicMin(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return v < old ? v : old; });
}
template <typename T> T atomicExch(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T) { return v; });
}
template <typename T> T atomicAnd(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return old & v; });
}
template <typename T> T atomicOr(T *p, T v) {
  return tgc::simt::atomicUpdate(p, [v](T old) { return old | v; });
}
template <typename T> T atomicCAS(T *p, T compare, T v) {
  return tgc::simt::atomicUpdate(
      p, [compare, v](T old) { return old == compare ? v : old; });
}

/// cuda_runtime.h's typed overload, declared there for nvcc only.
template <typename T>
cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void *>(entry), attr,
                                value);
}

// Device math and bit built-ins that host headers lack.
template <typename A, typename B>
inline std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <typename A, typename B>
inline std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}
inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned i;
  std::memcpy(&i, &f, 4);
  return i;
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T> T __ldg(const T *p) { return *p; }

#endif // TGC_RUNTIME_CUDA_SIMT_SIMT_H

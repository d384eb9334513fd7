//===- SimtKernels.h - Launchers of the test kernels ------------*- C++ -*-===//
//
// The host side of SimtKernels.cu: one launcher per test kernel, callable
// from plain C++ (SimtTest.cpp is compiled without Simt.h, as a test of a
// real GPU would be). Every launcher enqueues on `stream` and returns at
// once; what it reports comes back through cudaGetLastError and the device
// buffers it was given.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_SIMT_TESTS_SIMTKERNELS_H
#define TGC_RUNTIME_CUDA_SIMT_TESTS_SIMTKERNELS_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tgc::simt::test {

/// Every thread writes threadIdx, blockIdx, blockDim and gridDim (12
/// unsigned) at 12 * (linear block * threads per block + linear thread).
void launchRecordCoordinates(dim3 grid, dim3 block, unsigned *out,
                             cudaStream_t stream = nullptr);

/// Threads at or past `stay` return at once, threads with t % 5 == 4 after
/// the first barrier; the rest go through three. Writes, per thread t of
/// block b at b * blockDim + t, what the barriers must have made visible
/// (see the kernel); threads that returned early write nothing.
void launchBarrierWithExits(int blocks, int threads, int stay, int *out,
                            cudaStream_t stream = nullptr);

/// The shuffle kinds, in the order the shuffle kernel numbers them.
enum ShuffleKind {
  ShuffleIdx = 0,
  ShuffleUp = 1,
  ShuffleDown = 2,
  ShuffleXor = 3
};

/// One warp per case; `cases` holds (kind, width, arg, mask) per case. Lane l
/// of case c holds 1000 c + l (int) and (l + 1) << 40 | 64 c + l (long
/// long); lanes in the mask shuffle both and write the results at 32 c + l,
/// the others return at once.
void launchShuffleCases(int count, const int *cases, int *outInt,
                        long long *outLong, cudaStream_t stream = nullptr);

/// Results per lane of the vote kernel, in this order.
enum VoteResult {
  VoteBallot,
  VoteAny,
  VoteAll,
  VoteAddU,
  VoteMinU,
  VoteMinI,
  VoteMaxU,
  VoteMaxI,
  VoteAnd,
  VoteOr,
  VoteXor,
  VoteActive,
  VoteResults
};

/// One warp per case; `cases` holds (mask, predicate bits) per case and
/// `values` 32 ints per case. Lanes in the mask write VoteResults unsigned
/// at (32 c + l) * VoteResults, the others return at once.
void launchVoteCases(int count, const unsigned *cases, const int *values,
                     unsigned *out, cudaStream_t stream = nullptr);

/// One warp: lanes l % 3 == 0 write __activemask() to out[l] at one call,
/// the other lanes below 20 at another, and each group then writes
/// __reduce_add_sync(its mask, 1) to out[32 + l]; lanes 20 and up that are
/// in neither return at once.
void launchDivergentActiveMask(unsigned *out, cudaStream_t stream = nullptr);

/// Device counters the atomics kernel updates (zeroed by the caller).
struct AtomicCounters {
  float floatSum;
  int intSum;
  double doubleSum;
  unsigned casCount;
  int intMax;
  unsigned unsignedMax;
};

/// `blocks` x `threads` threads: each adds 0.5f, 1 (its return value goes
/// to olds[id]) and 0.125 id, adds 2 through an atomicCAS loop and takes
/// the max of (7919 id) % 10007, and of id as unsigned.
void launchAtomics(int blocks, int threads, AtomicCounters *counters, int *olds,
                   cudaStream_t stream = nullptr);

/// Thread 0 of each block counts the bytes of its `bytes` of dynamic shared
/// memory that are not 0xff into dirty[block]; then the block fills them
/// with its index.
void launchDynamicSharedPoison(int blocks, size_t bytes, unsigned *dirty,
                               cudaStream_t stream = nullptr);

/// A kernel that sets *ran = 1 and has `bytes` of dynamic shared memory;
/// its cudaFuncSetAttribute(MaxDynamicSharedMemorySize) limit.
void launchSharedProbe(size_t bytes, int *ran, cudaStream_t stream = nullptr);
cudaError_t setSharedProbeLimit(int bytes);

/// One warp: d = a b + c through mma.sync.aligned.m16n8k16 (inline PTX,
/// rewritten), with a 16x16 row-major bf16 (as uint16_t bits), b 16x8
/// ([k][n]) bf16 and c, d 16x8 row-major float.
void launchMma(const uint16_t *a, const uint16_t *b, const float *c, float *d,
               cudaStream_t stream = nullptr);

/// x[i] = value for i < n.
void launchFill(float *x, float value, int n, cudaStream_t stream = nullptr);
/// y[i] = a x[i] + b for i < n.
void launchAxpb(float *y, const float *x, float a, float b, int n,
                cudaStream_t stream = nullptr);
/// out[i] = sinf(x[i]) * y[i] + sqrtf(fabsf(x[i])) for i < n: bits that any
/// reordering of the work that feeds it would change.
void launchMix(float *out, const float *x, const float *y, int n,
               cudaStream_t stream = nullptr);

/// The misuses the emulator stops the program for, one kernel each.
enum class Misuse {
  LaneOutsideItsMask,   ///< lane l shuffles with the mask 1 << (l + 1) % 32
  MaskNamesExitedLane,  ///< lanes 0-15 return, 16-31 shuffle with all 32
  DivergedLanes,        ///< even lanes at __shfl_xor_sync, odd at _down_
  LaneExitsWhileWaited, ///< lanes 0-15 __syncwarp(all), 16-31 return
  BlockDeadlock,        ///< lane 0 __syncwarp(0x3), the rest __syncthreads
};
void launchMisuse(Misuse misuse, cudaStream_t stream = nullptr);

} // namespace tgc::simt::test

#endif // TGC_RUNTIME_CUDA_SIMT_TESTS_SIMTKERNELS_H

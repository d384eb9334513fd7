//===- SimtKernels.cu - Kernels that exercise the emulator -----*- CUDA -*-===//
//
// The device half of SimtTest.cpp: CUDA C++ as runtime/cuda writes it, built
// the way runtime/cuda's .cu files are for the host (simt_rewrite.py, then
// g++ with -include Simt.h), so that the launches, `extern __shared__` and
// the inline-PTX mma go through the same rewrite. Each kernel exercises one
// built-in; the launchers (SimtKernels.h) are what the tests call.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/tests/SimtKernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace tgc::simt::test {
namespace {

//===----------------------------------------------------------------------===//
// Coordinates and barriers
//===----------------------------------------------------------------------===//

__global__ void recordCoordinates(unsigned *out) {
  unsigned block =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned *r = out + 12 * (block * threads + thread);
  r[0] = threadIdx.x, r[1] = threadIdx.y, r[2] = threadIdx.z;
  r[3] = blockIdx.x, r[4] = blockIdx.y, r[5] = blockIdx.z;
  r[6] = blockDim.x, r[7] = blockDim.y, r[8] = blockDim.z;
  r[9] = gridDim.x, r[10] = gridDim.y, r[11] = gridDim.z;
}

/// The staying threads t < stay write 10 t + 1, pass a barrier and read
/// thread (t + 1) % stay's value (a thread that runs before its neighbour
/// sees it only through the barrier). Threads with t % 5 == 4 write that
/// and return; the others pass a second barrier (without the returned
/// threads: sm_70), write 7 t + their read value, pass a third and add what
/// thread (t + 1) % stay wrote if it is still there.
__global__ void barrierWithExits(int *out, int stay) {
  __shared__ int first[1024];
  __shared__ int second[1024];
  int t = threadIdx.x;
  int *mine = out + blockIdx.x * blockDim.x + t;
  if (t >= stay)
    return;
  first[t] = 10 * t + 1;
  __syncthreads();
  int next = first[(t + 1) % stay];
  if (t % 5 == 4) {
    *mine = next;
    return;
  }
  __syncthreads();
  second[t] = 7 * t + next;
  __syncthreads();
  int n = (t + 1) % stay;
  *mine = next + (n % 5 == 4 ? 0 : second[n]);
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

__global__ void shuffleCases(const int *cases, int *outInt,
                             long long *outLong) {
  const int *c = cases + 4 * blockIdx.x;
  int kind = c[0], width = c[1], arg = c[2];
  unsigned mask = (unsigned)c[3];
  int lane = threadIdx.x;
  if (!(mask >> lane & 1))
    return;
  int vi = 1000 * (int)blockIdx.x + lane;
  long long vl = (long long)(lane + 1) << 40 | (64LL * blockIdx.x + lane);
  int ri = 0;
  long long rl = 0;
  switch (kind) {
  case ShuffleIdx:
    ri = __shfl_sync(mask, vi, arg, width);
    rl = __shfl_sync(mask, vl, arg, width);
    break;
  case ShuffleUp:
    ri = __shfl_up_sync(mask, vi, (unsigned)arg, width);
    rl = __shfl_up_sync(mask, vl, (unsigned)arg, width);
    break;
  case ShuffleDown:
    ri = __shfl_down_sync(mask, vi, (unsigned)arg, width);
    rl = __shfl_down_sync(mask, vl, (unsigned)arg, width);
    break;
  default:
    ri = __shfl_xor_sync(mask, vi, arg, width);
    rl = __shfl_xor_sync(mask, vl, arg, width);
    break;
  }
  outInt[32 * blockIdx.x + lane] = ri;
  outLong[32 * blockIdx.x + lane] = rl;
}

__global__ void voteCases(const unsigned *cases, const int *values,
                          unsigned *out) {
  unsigned mask = cases[2 * blockIdx.x], predicates = cases[2 * blockIdx.x + 1];
  int lane = threadIdx.x;
  if (!(mask >> lane & 1))
    return;
  int p = predicates >> lane & 1;
  int v = values[32 * blockIdx.x + lane];
  unsigned u = (unsigned)v;
  unsigned *r = out + (32 * blockIdx.x + lane) * VoteResults;
  r[VoteBallot] = __ballot_sync(mask, p);
  r[VoteAny] = (unsigned)__any_sync(mask, p);
  r[VoteAll] = (unsigned)__all_sync(mask, p);
  r[VoteAddU] = __reduce_add_sync(mask, u);
  r[VoteMinU] = __reduce_min_sync(mask, u);
  r[VoteMinI] = (unsigned)__reduce_min_sync(mask, v);
  r[VoteMaxU] = __reduce_max_sync(mask, u);
  r[VoteMaxI] = (unsigned)__reduce_max_sync(mask, v);
  r[VoteAnd] = __reduce_and_sync(mask, u);
  r[VoteOr] = __reduce_or_sync(mask, u);
  r[VoteXor] = __reduce_xor_sync(mask, u);
  r[VoteActive] = __activemask();
}

__global__ void divergentActiveMask(unsigned *out) {
  int lane = threadIdx.x;
  unsigned mask;
  if (lane % 3 == 0)
    mask = __activemask();
  else if (lane < 20)
    mask = __activemask();
  else
    return;
  out[lane] = mask;
  out[32 + lane] = __reduce_add_sync(mask, 1u);
}

//===----------------------------------------------------------------------===//
// Atomics and shared memory
//===----------------------------------------------------------------------===//

__global__ void atomics(AtomicCounters *counters, int *olds) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&counters->floatSum, 0.5f);
  olds[id] = atomicAdd(&counters->intSum, 1);
  atomicAdd(&counters->doubleSum, 0.125 * id);
  // The classic compare-and-swap loop, starting from an atomic read.
  unsigned seen = atomicCAS(&counters->casCount, 0u, 0u), assumed;
  do {
    assumed = seen;
    seen = atomicCAS(&counters->casCount, assumed, assumed + 2u);
  } while (seen != assumed);
  atomicMax(&counters->intMax, (int)((7919LL * id) % 10007));
  atomicMax(&counters->unsignedMax, (unsigned)id);
}

__global__ void dynamicSharedPoison(unsigned *dirty, size_t bytes) {
  extern __shared__ unsigned char raw[];
  if (threadIdx.x == 0) {
    unsigned n = 0;
    for (size_t i = 0; i < bytes; ++i)
      n += raw[i] != 0xff;
    dirty[blockIdx.x] = n;
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
    raw[i] = (unsigned char)blockIdx.x;
}

__global__ void sharedProbe(int *ran) {
  extern __shared__ __align__(16) float scratch[];
  scratch[threadIdx.x] = 1.0f;
  if (threadIdx.x == 0)
    *ran = (int)scratch[0];
}

//===----------------------------------------------------------------------===//
// Tensor cores
//===----------------------------------------------------------------------===//

/// As FlashAttention.cu issues it: the PTX that simt_rewrite.py turns into
/// Simt.h's emulation.
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                    uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ uint32_t pack(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | (uint32_t)hi << 16;
}

/// The PTX ISA's m16n8k16 fragment layouts, lane = 4 g + t: a0 holds A's
/// row g, columns 2t and 2t + 1; a1 row g + 8; a2 and a3 the same rows at
/// columns + 8. b0 holds B's rows 2t, 2t + 1 of column g; b1 rows + 8. c0,
/// c1 are C's row g, columns 2t, 2t + 1; c2, c3 row g + 8.
__global__ void mmaM16n8k16(const uint16_t *a, const uint16_t *b,
                            const float *c, float *d) {
  int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  auto at = [&](int r, int k) { return a[r * 16 + k]; };
  auto bt = [&](int k, int n) { return b[k * 8 + n]; };
  uint32_t fa[4] = {pack(at(g, 2 * t), at(g, 2 * t + 1)),
                    pack(at(g + 8, 2 * t), at(g + 8, 2 * t + 1)),
                    pack(at(g, 2 * t + 8), at(g, 2 * t + 9)),
                    pack(at(g + 8, 2 * t + 8), at(g + 8, 2 * t + 9))};
  uint32_t b0 = pack(bt(2 * t, g), bt(2 * t + 1, g));
  uint32_t b1 = pack(bt(2 * t + 8, g), bt(2 * t + 9, g));
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1],
                  c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  mma(acc, fa, b0, b1);
  d[g * 8 + 2 * t] = acc[0], d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2], d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

//===----------------------------------------------------------------------===//
// Streams and graphs
//===----------------------------------------------------------------------===//

__global__ void fill(float *x, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = value;
}

__global__ void axpb(float *y, const float *x, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + b;
}

__global__ void mix(float *out, const float *x, const float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = sinf(x[i]) * y[i] + sqrtf(fabsf(x[i]));
}

//===----------------------------------------------------------------------===//
// Misuse
//===----------------------------------------------------------------------===//

__global__ void laneOutsideItsMask(int *out) {
  int lane = threadIdx.x % 32;
  out[lane] = __shfl_sync(1u << (lane + 1) % 32, lane, 0);
}

__global__ void maskNamesExitedLane(int *out) {
  int lane = threadIdx.x % 32;
  if (lane < 16)
    return;
  out[lane] = __shfl_sync(0xffffffffu, lane, 16);
}

__global__ void divergedLanes(int *out) {
  int lane = threadIdx.x % 32, v;
  if (lane % 2 == 0)
    v = __shfl_xor_sync(0xffffffffu, lane, 1);
  else
    v = __shfl_down_sync(0xffffffffu, lane, 1);
  out[lane] = v;
}

__global__ void laneExitsWhileWaited(int *out) {
  int lane = threadIdx.x % 32;
  if (lane >= 16)
    return;
  __syncwarp();
  out[lane] = lane;
}

__global__ void blockDeadlock(int *out) {
  if (threadIdx.x == 0)
    __syncwarp(0x3u);
  else
    __syncthreads();
  out[threadIdx.x] = 1;
}

int blocksFor(int n) { return (n + 127) / 128; }

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

void launchRecordCoordinates(dim3 grid, dim3 block, unsigned *out,
                             cudaStream_t stream) {
  recordCoordinates<<<grid, block, 0, stream>>>(out);
}

void launchBarrierWithExits(int blocks, int threads, int stay, int *out,
                            cudaStream_t stream) {
  barrierWithExits<<<blocks, threads, 0, stream>>>(out, stay);
}

void launchShuffleCases(int count, const int *cases, int *outInt,
                        long long *outLong, cudaStream_t stream) {
  shuffleCases<<<count, 32, 0, stream>>>(cases, outInt, outLong);
}

void launchVoteCases(int count, const unsigned *cases, const int *values,
                     unsigned *out, cudaStream_t stream) {
  voteCases<<<count, 32, 0, stream>>>(cases, values, out);
}

void launchDivergentActiveMask(unsigned *out, cudaStream_t stream) {
  divergentActiveMask<<<1, 32, 0, stream>>>(out);
}

void launchAtomics(int blocks, int threads, AtomicCounters *counters, int *olds,
                   cudaStream_t stream) {
  atomics<<<blocks, threads, 0, stream>>>(counters, olds);
}

void launchDynamicSharedPoison(int blocks, size_t bytes, unsigned *dirty,
                               cudaStream_t stream) {
  if (bytes > 48 * 1024)
    cudaFuncSetAttribute(dynamicSharedPoison,
                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                         (int)bytes);
  dynamicSharedPoison<<<blocks, 64, bytes, stream>>>(dirty, bytes);
}

void launchSharedProbe(size_t bytes, int *ran, cudaStream_t stream) {
  sharedProbe<<<1, 32, bytes, stream>>>(ran);
}

cudaError_t setSharedProbeLimit(int bytes) {
  return cudaFuncSetAttribute(
      sharedProbe, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

void launchMma(const uint16_t *a, const uint16_t *b, const float *c, float *d,
               cudaStream_t stream) {
  mmaM16n8k16<<<1, 32, 0, stream>>>(a, b, c, d);
}

void launchFill(float *x, float value, int n, cudaStream_t stream) {
  fill<<<blocksFor(n), 128, 0, stream>>>(x, value, n);
}

void launchAxpb(float *y, const float *x, float a, float b, int n,
                cudaStream_t stream) {
  axpb<<<blocksFor(n), 128, 0, stream>>>(y, x, a, b, n);
}

void launchMix(float *out, const float *x, const float *y, int n,
               cudaStream_t stream) {
  mix<<<blocksFor(n), 128, 0, stream>>>(out, x, y, n);
}

void launchMisuse(Misuse misuse, cudaStream_t stream) {
  int *out = nullptr;
  cudaMalloc(&out, 64 * sizeof(int));
  switch (misuse) {
  case Misuse::LaneOutsideItsMask:
    laneOutsideItsMask<<<1, 32, 0, stream>>>(out);
    break;
  case Misuse::MaskNamesExitedLane:
    maskNamesExitedLane<<<1, 32, 0, stream>>>(out);
    break;
  case Misuse::DivergedLanes:
    divergedLanes<<<1, 32, 0, stream>>>(out);
    break;
  case Misuse::LaneExitsWhileWaited:
    laneExitsWhileWaited<<<1, 32, 0, stream>>>(out);
    break;
  case Misuse::BlockDeadlock:
    blockDeadlock<<<1, 64, 0, stream>>>(out);
    break;
  }
  cudaFree(out); // waits for the kernel, as cudaFree does
}

} // namespace tgc::simt::test

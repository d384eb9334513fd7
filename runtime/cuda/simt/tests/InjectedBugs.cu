//===- InjectedBugs.cu - Bugs sanitizers must report -----------*- CUDA -*-===//
//
// A checker that cannot fail is no checker: each mode of this program runs
// one kernel with a bug that compute-sanitizer would find on a GPU, and the
// sanitizer build it runs in must report it at the marked line
// (expect_report.sh finds the `@` markers and greps the report for them):
//
//   InjectedBugs race             a block reduction whose __syncthreads
//                                 was removed: ThreadSanitizer's data race
//   InjectedBugs global-overflow  a read one past a cudaMalloc'd array:
//                                 AddressSanitizer's heap-buffer-overflow
//   InjectedBugs shared-overflow  a read one past the launch's dynamic
//                                 shared memory: the same
//
// Without its bug each kernel is correct, and the program checks its result;
// it exits 0 when the sanitizer stayed silent.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kThreads = 128, kBlocks = 4;

/// Each block sums its kThreads values: per-warp partial sums in shared
/// memory, then thread 0 adds them, without the barrier between the two.
__global__ void blockSumWithoutBarrier(const float *x, float *sums) {
  __shared__ float partial[kThreads / 32];
  float v = x[blockIdx.x * kThreads + threadIdx.x];
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = v; // @race-write
  // (the __syncthreads that belongs here is missing)
  if (threadIdx.x == 0) {
    float s = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      s += partial[w]; // @race-read
    sums[blockIdx.x] = s;
  }
}

/// y[i] = x[i] + x[i + 1], reading one past the end for the last i.
__global__ void neighbourSum(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] + x[i + 1]; // @global-read
}

/// Stages the block's values in dynamic shared memory, then reads one past
/// them.
__global__ void sharedShift(const float *x, float *y) {
  extern __shared__ float staged[];
  staged[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  y[blockIdx.x * blockDim.x + threadIdx.x] =
      staged[threadIdx.x + 1]; // @shared-read
}

int fail(const char *what) {
  std::fprintf(stderr, "InjectedBugs: %s\n", what);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return fail("usage: InjectedBugs race|global-overflow|shared-overflow");
  const int n = kThreads * kBlocks;
  std::vector<float> host(n, 1.0f);
  float *x = nullptr, *y = nullptr;
  cudaMalloc((void **)&x, n * sizeof(float));
  cudaMalloc((void **)&y, n * sizeof(float));
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  if (!std::strcmp(argv[1], "race")) {
    blockSumWithoutBarrier<<<kBlocks, kThreads>>>(x, y);
  } else if (!std::strcmp(argv[1], "global-overflow")) {
    neighbourSum<<<kBlocks, kThreads>>>(x, y, n);
  } else if (!std::strcmp(argv[1], "shared-overflow")) {
    sharedShift<<<kBlocks, kThreads, kThreads * sizeof(float)>>>(x, y);
  } else {
    return fail("unknown mode");
  }
  if (cudaDeviceSynchronize() != cudaSuccess)
    return fail("the kernel failed");
  cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("InjectedBugs %s: ran, y[0] = %g\n", argv[1], host[0]);
  cudaFree(x);
  cudaFree(y);
  return 0;
}

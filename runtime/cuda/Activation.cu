//===- Activation.cu - GELU, dropout and casts ---------------------*- C++ -*-===//
//
// The standalone elementwise kernels. The CUDA emitter generates fused
// elementwise kernels from DeviceMath.cuh's functions; these launchers serve
// ops it leaves alone and the tests. Each is a grid-stride loop, one element
// per thread per iteration: memory-bound and simple.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

namespace tgc::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void geluKernel(const T *x, T *y, int64_t n, bool tanhApprox) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = toFloat(x[i]);
    y[i] = fromFloat<T>(tanhApprox ? geluTanh(v) : geluErf(v));
  }
}

template <typename T>
__global__ void geluGradKernel(const T *g, const T *x, T *dx, int64_t n,
                               bool tanhApprox) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = toFloat(x[i]);
    float d = tanhApprox ? geluTanhGrad(v) : geluErfGrad(v);
    dx[i] = fromFloat<T>(toFloat(g[i]) * d);
  }
}

/// The step and stream are read on the device, so a captured graph replays
/// with the current micro-batch's mask.
template <typename T>
__global__ void dropoutKernel(const T *x, T *y, int64_t n, float p,
                              uint64_t seed, const int64_t *step,
                              const int64_t *randomStream) {
  int64_t s = *step, r = *randomStream;
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = dropout_keep(seed, s, r, i, p) ? fromFloat<T>(toFloat(x[i]) * scale)
                                       : fromFloat<T>(0.0f);
}

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromFloat<To>(toFloat(x[i]));
}

template <typename T>
void geluImpl(const T *x, T *y, int64_t n, bool tanhApprox,
              cudaStream_t stream) {
  if (n <= 0)
    return;
  geluKernel<T><<<gridStrideBlocks(n, kThreads), kThreads, 0, stream>>>(
      x, y, n, tanhApprox);
  TGC_CUDA_CHECK_LAUNCH();
}

template <typename T>
void geluGradImpl(const T *g, const T *x, T *dx, int64_t n, bool tanhApprox,
                  cudaStream_t stream) {
  if (n <= 0)
    return;
  geluGradKernel<T><<<gridStrideBlocks(n, kThreads), kThreads, 0, stream>>>(
      g, x, dx, n, tanhApprox);
  TGC_CUDA_CHECK_LAUNCH();
}

template <typename T>
void dropoutImpl(const T *x, T *y, int64_t n, float p, uint64_t seed,
                 const int64_t *step, const int64_t *randomStream,
                 cudaStream_t stream) {
  if (n <= 0)
    return;
  dropoutKernel<T><<<gridStrideBlocks(n, kThreads), kThreads, 0, stream>>>(
      x, y, n, p, seed, step, randomStream);
  TGC_CUDA_CHECK_LAUNCH();
}

template <typename From, typename To>
void castImpl(const From *x, To *y, int64_t n, cudaStream_t stream) {
  if (n <= 0)
    return;
  castKernel<From, To><<<gridStrideBlocks(n, kThreads), kThreads, 0,
                         stream>>>(x, y, n);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace

void gelu(const float *x, float *y, int64_t n, bool tanhApprox,
          cudaStream_t stream) {
  geluImpl(x, y, n, tanhApprox, stream);
}
void gelu(const bf16 *x, bf16 *y, int64_t n, bool tanhApprox,
          cudaStream_t stream) {
  geluImpl(x, y, n, tanhApprox, stream);
}
void gelu_grad(const float *g, const float *x, float *dx, int64_t n,
               bool tanhApprox, cudaStream_t stream) {
  geluGradImpl(g, x, dx, n, tanhApprox, stream);
}
void gelu_grad(const bf16 *g, const bf16 *x, bf16 *dx, int64_t n,
               bool tanhApprox, cudaStream_t stream) {
  geluGradImpl(g, x, dx, n, tanhApprox, stream);
}
void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             const int64_t *step, const int64_t *randomStream,
             cudaStream_t stream) {
  dropoutImpl(x, y, n, p, seed, step, randomStream, stream);
}
void dropout(const bf16 *x, bf16 *y, int64_t n, float p, uint64_t seed,
             const int64_t *step, const int64_t *randomStream,
             cudaStream_t stream) {
  dropoutImpl(x, y, n, p, seed, step, randomStream, stream);
}
void cast(const float *x, bf16 *y, int64_t n, cudaStream_t stream) {
  castImpl(x, y, n, stream);
}
void cast(const bf16 *x, float *y, int64_t n, cudaStream_t stream) {
  castImpl(x, y, n, stream);
}

} // namespace tgc::cuda

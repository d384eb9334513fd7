//===- Pool.cu - 2-D max and average pooling, forward and backward --*- C++ -*-===//
//
// fp32, one thread per output element forward and one per input element
// backward: an input gathers the gradients of the windows that cover it, in
// the CPU's (oy, ox) order, so nothing is added by two threads. Windows are
// clipped to the unpadded input: max ignores the padding, average divides by
// the clipped window's size (count_include_pad=False). The max gradient goes
// to each window's first maximum (NaN counts as the maximum), found by the
// CPU's scan.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"

namespace tgc::cuda {

namespace {

constexpr int kThreads = 256;

/// The part of output (oy, ox)'s window inside the input.
struct Window {
  int64_t y0, y1, x0, x1;
};

__device__ Window windowAt(const Pool2dDims &d, int64_t oy, int64_t ox) {
  int64_t ys = oy * d.strideH - d.padH, xs = ox * d.strideW - d.padW;
  Window win{max(ys, (int64_t)0), min(ys + d.kh, d.h), max(xs, (int64_t)0),
             min(xs + d.kw, d.w)};
  win.y1 = max(win.y1, win.y0);
  win.x1 = max(win.x1, win.x0);
  return win;
}

/// The flat index in the plane of the window's first maximum, -1 if empty.
__device__ int64_t argMax(const float *plane, const Pool2dDims &d,
                          const Window &win) {
  int64_t best = -1;
  float bestVal = -INFINITY;
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x) {
      float v = plane[y * d.w + x];
      if (best < 0 || v > bestVal || (v != v && bestVal == bestVal)) {
        best = y * d.w + x;
        bestVal = v;
      }
    }
  return best;
}

/// Output rows oy whose window covers input row iy: [first, last].
__device__ void coveringOutputs(int64_t i, int64_t k, int64_t stride,
                                int64_t pad, int64_t outSize, int64_t &first,
                                int64_t &last) {
  // oy * stride - pad <= i < oy * stride - pad + k
  int64_t hi = i + pad;
  int64_t lo = hi - k + 1;
  first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  last = min(hi / stride, outSize - 1);
}

/// Thread per output element.
template <bool IsMax>
__global__ void poolForwardKernel(const float *x, float *y, Pool2dDims d) {
  int64_t total = d.n * d.c * d.oh * d.ow;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, p = i / (d.ow * d.oh);
  const float *plane = x + p * d.h * d.w;
  Window win = windowAt(d, oy, ox);
  if (IsMax) {
    int64_t at = argMax(plane, d, win);
    y[i] = at < 0 ? -INFINITY : plane[at];
  } else {
    double sum = 0;
    for (int64_t yy = win.y0; yy < win.y1; ++yy)
      for (int64_t xx = win.x0; xx < win.x1; ++xx)
        sum += plane[yy * d.w + xx];
    int64_t count = (win.y1 - win.y0) * (win.x1 - win.x0);
    y[i] = count > 0 ? (float)(sum / count) : 0.0f;
  }
}

/// Thread per input element. IsMax needs x to find each window's maximum.
template <bool IsMax>
__global__ void poolBackwardKernel(const float *g, const float *x, float *dx,
                                   Pool2dDims d) {
  int64_t total = d.n * d.c * d.h * d.w;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  int64_t ix = i % d.w, iy = (i / d.w) % d.h, p = i / (d.w * d.h);
  const float *gp = g + p * d.oh * d.ow;
  int64_t oy0, oy1, ox0, ox1;
  coveringOutputs(iy, d.kh, d.strideH, d.padH, d.oh, oy0, oy1);
  coveringOutputs(ix, d.kw, d.strideW, d.padW, d.ow, ox0, ox1);
  float acc = 0.0f;
  for (int64_t oy = oy0; oy <= oy1; ++oy)
    for (int64_t ox = ox0; ox <= ox1; ++ox) {
      Window win = windowAt(d, oy, ox);
      if (IsMax) {
        if (argMax(x + p * d.h * d.w, d, win) == iy * d.w + ix)
          acc += gp[oy * d.ow + ox];
      } else {
        int64_t count = (win.y1 - win.y0) * (win.x1 - win.x0);
        acc += gp[oy * d.ow + ox] / (float)count;
      }
    }
  dx[i] = acc;
}

} // namespace

void max_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t stream) {
  int64_t total = dims.n * dims.c * dims.oh * dims.ow;
  if (total == 0)
    return;
  poolForwardKernel<true><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(
      x, y, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &dims, cudaStream_t stream) {
  int64_t total = dims.n * dims.c * dims.h * dims.w;
  if (total == 0)
    return;
  poolBackwardKernel<true><<<blocksFor(total, kThreads), kThreads, 0,
                             stream>>>(g, x, dx, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

void avg_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t stream) {
  int64_t total = dims.n * dims.c * dims.oh * dims.ow;
  if (total == 0)
    return;
  poolForwardKernel<false><<<blocksFor(total, kThreads), kThreads, 0,
                             stream>>>(x, y, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

void avg_pool2d_grad(const float *g, float *dx, const Pool2dDims &dims,
                     cudaStream_t stream) {
  int64_t total = dims.n * dims.c * dims.h * dims.w;
  if (total == 0)
    return;
  poolBackwardKernel<false><<<blocksFor(total, kThreads), kThreads, 0,
                              stream>>>(g, nullptr, dx, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace tgc::cuda

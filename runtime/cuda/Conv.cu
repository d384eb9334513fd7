//===- Conv.cu - Direct 2-D convolution, forward and gradients -----*- C++ -*-===//
//
// fp32 direct convolution for the small CNNs of the examples (the CPU uses
// im2col + GEMM; a large model would want cuDNN). Each output element is
// owned by one thread that gathers everything it needs, so nothing is added
// by two threads:
//   forward      y[n, o, oy, ox]  = bias[o] + sum over its window
//   grad input   dx[n, c, iy, ix] = sum over the outputs whose window
//                                   covers it (solving for oy, ox)
//   grad weight  dw[o, c, ki, kj] = sum over images and output positions;
//                                   a warp per weight (up to 2048 positions)
//                                   or a block per weight, its threads
//                                   striding over (n, oy, ox), added in a
//                                   fixed tree.
// Sums are fp32 in the order of the loops.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"

namespace tgc::cuda {

namespace {

constexpr int kThreads = 256;

/// Thread per output element.
__global__ void convForwardKernel(const float *x, const float *w,
                                  const float *bias, float *y, Conv2dDims d) {
  int64_t total = d.n * d.o * d.oh * d.ow;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, o = (i / (d.ow * d.oh)) % d.o,
          img = i / (d.ow * d.oh * d.o);
  int64_t cg = d.c / d.groups, og = d.o / d.groups, g = o / og;
  float acc = 0.0f;
  for (int64_t c = 0; c < cg; ++c) {
    const float *plane = x + (img * d.c + g * cg + c) * d.h * d.w;
    const float *wk = w + (o * cg + c) * d.kh * d.kw;
    for (int64_t ki = 0; ki < d.kh; ++ki) {
      int64_t iy = oy * d.strideH - d.padH + ki * d.dilH;
      if (iy < 0 || iy >= d.h)
        continue;
      for (int64_t kj = 0; kj < d.kw; ++kj) {
        int64_t ix = ox * d.strideW - d.padW + kj * d.dilW;
        if (ix >= 0 && ix < d.w)
          acc += plane[iy * d.w + ix] * wk[ki * d.kw + kj];
      }
    }
  }
  y[i] = bias ? acc + bias[o] : acc;
}

/// Thread per input element: the outputs (oy, ox) with
/// oy * stride - pad + ki * dil == iy for some ki, likewise for x.
__global__ void convGradInputKernel(const float *g, const float *w, float *dx,
                                    Conv2dDims d) {
  int64_t total = d.n * d.c * d.h * d.w;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  int64_t ix = i % d.w, iy = (i / d.w) % d.h, c = (i / (d.w * d.h)) % d.c,
          img = i / (d.w * d.h * d.c);
  int64_t cg = d.c / d.groups, og = d.o / d.groups, grp = c / cg,
          cl = c % cg;
  float acc = 0.0f;
  for (int64_t ol = 0; ol < og; ++ol) {
    int64_t o = grp * og + ol;
    const float *gp = g + (img * d.o + o) * d.oh * d.ow;
    const float *wk = w + (o * cg + cl) * d.kh * d.kw;
    for (int64_t ki = 0; ki < d.kh; ++ki) {
      int64_t ty = iy + d.padH - ki * d.dilH;
      if (ty < 0 || ty % d.strideH != 0 || ty / d.strideH >= d.oh)
        continue;
      int64_t oy = ty / d.strideH;
      for (int64_t kj = 0; kj < d.kw; ++kj) {
        int64_t tx = ix + d.padW - kj * d.dilW;
        if (tx < 0 || tx % d.strideW != 0 || tx / d.strideW >= d.ow)
          continue;
        acc += gp[oy * d.ow + tx / d.strideW] * wk[ki * d.kw + kj];
      }
    }
  }
  dx[i] = acc;
}

/// Positions up to which a warp sums a weight's gradient (64 a lane): a
/// block per weight would spend most of its time in the block reduction
/// (and a host emulation of it, runtime/cuda/simt, in switching between its
/// threads).
constexpr int64_t kWarpWeightPositions = 64 * kWarpSize;
constexpr int kWeightsPerBlock = kThreads / kWarpSize;

/// The sum over the positions `first`, `first + stride`, ... of weight
/// element `wi` = (o, c, ki, kj)'s gradient terms.
__device__ float weightGradPartial(const float *g, const float *x,
                                   const Conv2dDims &d, int64_t wi,
                                   int64_t first, int64_t stride) {
  int64_t cg = d.c / d.groups, og = d.o / d.groups;
  int64_t kj = wi % d.kw, ki = (wi / d.kw) % d.kh,
          cl = (wi / (d.kw * d.kh)) % cg, o = wi / (d.kw * d.kh * cg);
  int64_t c = (o / og) * cg + cl;
  int64_t positions = d.n * d.oh * d.ow;
  float acc = 0.0f;
  for (int64_t p = first; p < positions; p += stride) {
    int64_t ox = p % d.ow, oy = (p / d.ow) % d.oh, img = p / (d.ow * d.oh);
    int64_t iy = oy * d.strideH - d.padH + ki * d.dilH;
    int64_t ix = ox * d.strideW - d.padW + kj * d.dilW;
    if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w)
      acc += g[((img * d.o + o) * d.oh + oy) * d.ow + ox] *
             x[((img * d.c + c) * d.h + iy) * d.w + ix];
  }
  return acc;
}

/// Block per weight element.
__global__ void convGradWeightKernel(const float *g, const float *x, float *dw,
                                     Conv2dDims d) {
  __shared__ float shared[kWarpSize];
  int64_t wi = blockIdx.x;
  float acc = weightGradPartial(g, x, d, wi, threadIdx.x, blockDim.x);
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    dw[wi] = acc;
}

/// Warp per weight element, kWeightsPerBlock a block.
__global__ void convGradWeightWarpKernel(const float *g, const float *x,
                                         float *dw, Conv2dDims d,
                                         int64_t weights) {
  int lane = threadIdx.x % kWarpSize;
  int64_t wi =
      blockIdx.x * (int64_t)kWeightsPerBlock + threadIdx.x / kWarpSize;
  if (wi >= weights)
    return; // the whole warp
  float acc = warpReduce(weightGradPartial(g, x, d, wi, lane, kWarpSize),
                         SumOp());
  if (lane == 0)
    dw[wi] = acc;
}

} // namespace

void conv2d(const float *x, const float *w, const float *bias, float *y,
            const Conv2dDims &dims, cudaStream_t stream) {
  int64_t total = dims.n * dims.o * dims.oh * dims.ow;
  if (total == 0)
    return;
  convForwardKernel<<<blocksFor(total, kThreads), kThreads, 0, stream>>>(
      x, w, bias, y, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

void conv2d_grad_input(const float *g, const float *w, float *dx,
                       const Conv2dDims &dims, cudaStream_t stream) {
  int64_t total = dims.n * dims.c * dims.h * dims.w;
  if (total == 0)
    return;
  convGradInputKernel<<<blocksFor(total, kThreads), kThreads, 0, stream>>>(
      g, w, dx, dims);
  TGC_CUDA_CHECK_LAUNCH();
}

void conv2d_grad_weight(const float *g, const float *x, float *dw,
                        const Conv2dDims &dims, cudaStream_t stream) {
  int64_t weights = dims.o * (dims.c / dims.groups) * dims.kh * dims.kw;
  if (weights == 0)
    return;
  if (dims.n * dims.oh * dims.ow <= kWarpWeightPositions)
    convGradWeightWarpKernel<<<blocksFor(weights, kWeightsPerBlock), kThreads,
                               0, stream>>>(g, x, dw, dims, weights);
  else
    convGradWeightKernel<<<(unsigned)weights, kThreads, 0, stream>>>(g, x, dw,
                                                                     dims);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace tgc::cuda

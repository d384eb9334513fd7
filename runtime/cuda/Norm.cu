//===- Norm.cu - Layer norm and RMS norm, forward and backward -----*- C++ -*-===//
//
// Normalization over the last dim of [rows, d], one warp per row, eight rows
// per block: a warp sweeps its row (16-byte accesses where the row allows)
// once per statistic (mean, then the centered variance; or the mean square)
// and once to write, so the statistics are fp32 and two-pass like the CPU's,
// and a row of GPT-2's 768 bf16 is 1.5 KB that stays in L1 between sweeps.
//
// The backward recomputes the statistics from x (nothing is saved by the
// forward) and writes dx per row as the forward does. The weight and bias
// gradients are column sums over rows, reduced in two fixed-order stages:
// blocks of 32 columns x 64 rows add their rows in double into one partial
// per (row chunk, column) in the workspace, then one thread per column adds
// the chunks in order. No atomics: the same inputs give the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/RowAccess.cuh"

namespace tgc::cuda {

namespace {

constexpr int kRowsPerBlock = 8; // one warp each
constexpr int kChunkRows = 64;   // rows per partial of dw/db
constexpr int kColumns = 32;     // columns per partial block

int64_t chunksFor(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }
int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

struct LayerStats {
  float mean, rstd;
};

/// mean and 1/sqrt(var + eps) of a row, two passes; every lane gets them.
template <typename T>
__device__ LayerStats layerStats(const T *x, int64_t d, float eps, int lane) {
  float sum = 0;
  forRowElements(x, d, lane, kWarpSize, [&](int64_t, float v) { sum += v; });
  float mean = warpReduce(sum, SumOp()) / (float)d;
  float sq = 0;
  forRowElements(x, d, lane, kWarpSize, [&](int64_t, float v) {
    float c = v - mean;
    sq += c * c;
  });
  float var = warpReduce(sq, SumOp()) / (float)d;
  return {mean, 1.0f / sqrtf(var + eps)};
}

/// 1/sqrt(mean(x^2) + eps) of a row; every lane gets it.
template <typename T>
__device__ float rmsRstd(const T *x, int64_t d, float eps, int lane) {
  float sq = 0;
  forRowElements(x, d, lane, kWarpSize,
                 [&](int64_t, float v) { sq += v * v; });
  return 1.0f / sqrtf(warpReduce(sq, SumOp()) / (float)d + eps);
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Warp per row, kRowsPerBlock rows per block.
template <typename T>
__global__ void layerNormKernel(const T *x, const T *w, const T *b, T *y,
                                int64_t rows, int64_t d, float eps) {
  int lane = threadIdx.x % kWarpSize;
  int64_t r = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows)
    return;
  const T *xr = x + r * d;
  LayerStats s = layerStats(xr, d, eps, lane);
  transformRow(xr, y + r * d, d, lane, kWarpSize, [&](int64_t j, float v) {
    float out = (v - s.mean) * s.rstd;
    if (w)
      out *= toFloat(w[j]);
    if (b)
      out += toFloat(b[j]);
    return out;
  });
}

/// Warp per row, kRowsPerBlock rows per block.
template <typename T>
__global__ void rmsNormKernel(const T *x, const T *w, T *y, int64_t rows,
                              int64_t d, float eps) {
  int lane = threadIdx.x % kWarpSize;
  int64_t r = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows)
    return;
  const T *xr = x + r * d;
  float rstd = rmsRstd(xr, d, eps, lane);
  transformRow(xr, y + r * d, d, lane, kWarpSize, [&](int64_t j, float v) {
    return w ? v * rstd * toFloat(w[j]) : v * rstd;
  });
}

//===----------------------------------------------------------------------===//
// Backward: dx and the row statistics
//===----------------------------------------------------------------------===//

/// Warp per row: the row's (mean, rstd) into `stats` (when not null, for the
/// weight gradients) and, when dx is not null,
/// dx = rstd * (dyhat - mean(dyhat) - xhat * mean(dyhat * xhat)),
/// dyhat = g * w. dx must not alias g or x (the weight gradients read both
/// after this kernel).
template <typename T>
__global__ void layerNormGradRowsKernel(const T *g, const T *x, const T *w,
                                        T *dx, LayerStats *stats,
                                        int64_t rows, int64_t d, float eps) {
  int lane = threadIdx.x % kWarpSize;
  int64_t r = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows)
    return;
  const T *xr = x + r * d, *gr = g + r * d;
  LayerStats s = layerStats(xr, d, eps, lane);
  if (stats && lane == 0)
    stats[r] = s;
  if (!dx)
    return;
  float sumDy = 0, sumDyXhat = 0;
  forRowElements(xr, d, lane, kWarpSize, [&](int64_t j, float v) {
    float dyhat = w ? toFloat(gr[j]) * toFloat(w[j]) : toFloat(gr[j]);
    sumDy += dyhat;
    sumDyXhat += dyhat * ((v - s.mean) * s.rstd);
  });
  float meanDy = warpReduce(sumDy, SumOp()) / (float)d;
  float meanDyXhat = warpReduce(sumDyXhat, SumOp()) / (float)d;
  transformRow(xr, dx + r * d, d, lane, kWarpSize, [&](int64_t j, float v) {
    float dyhat = w ? toFloat(gr[j]) * toFloat(w[j]) : toFloat(gr[j]);
    float xhat = (v - s.mean) * s.rstd;
    return s.rstd * (dyhat - meanDy - xhat * meanDyXhat);
  });
}

/// Warp per row: rstd into `stats` (mean 0) and, when dx is not null,
/// dx = rstd * (dyhat - xhat * mean(dyhat * xhat)). dx must not alias g or
/// x.
template <typename T>
__global__ void rmsNormGradRowsKernel(const T *g, const T *x, const T *w,
                                      T *dx, LayerStats *stats, int64_t rows,
                                      int64_t d, float eps) {
  int lane = threadIdx.x % kWarpSize;
  int64_t r = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows)
    return;
  const T *xr = x + r * d, *gr = g + r * d;
  float rstd = rmsRstd(xr, d, eps, lane);
  if (stats && lane == 0)
    stats[r] = {0.0f, rstd};
  if (!dx)
    return;
  float sumDyXhat = 0;
  forRowElements(xr, d, lane, kWarpSize, [&](int64_t j, float v) {
    float dyhat = w ? toFloat(gr[j]) * toFloat(w[j]) : toFloat(gr[j]);
    sumDyXhat += dyhat * (v * rstd);
  });
  float meanDyXhat = warpReduce(sumDyXhat, SumOp()) / (float)d;
  transformRow(xr, dx + r * d, d, lane, kWarpSize, [&](int64_t j, float v) {
    float dyhat = w ? toFloat(gr[j]) * toFloat(w[j]) : toFloat(gr[j]);
    return rstd * (dyhat - v * rstd * meanDyXhat);
  });
}

//===----------------------------------------------------------------------===//
// Backward: weight and bias gradients
//===----------------------------------------------------------------------===//

/// Stage 1. Block (kColumns, kRowsPerBlock) threads over kColumns columns
/// (blockIdx.x) and one chunk of kChunkRows rows (blockIdx.y): thread (c, t)
/// adds rows t, t + 8, ... of its column in double, then the 8 partials are
/// added in order. Writes partialW/partialB[chunk * d + column];
/// xhat = (x - mean) * rstd, the mean being 0 for the RMS norm.
template <typename T>
__global__ void paramGradPartialKernel(const T *g, const T *x,
                                       const LayerStats *stats, int64_t rows,
                                       int64_t d, double *partialW,
                                       double *partialB) {
  __shared__ double sw[kRowsPerBlock][kColumns], sb[kRowsPerBlock][kColumns];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t col = blockIdx.x * (int64_t)kColumns + tx;
  int64_t r0 = blockIdx.y * (int64_t)kChunkRows;
  int64_t r1 = min(rows, r0 + kChunkRows);
  double accW = 0, accB = 0;
  if (col < d)
    for (int64_t r = r0 + ty; r < r1; r += kRowsPerBlock) {
      float gv = toFloat(g[r * d + col]);
      float xhat = (toFloat(x[r * d + col]) - stats[r].mean) * stats[r].rstd;
      accW += (double)gv * xhat;
      accB += gv;
    }
  sw[ty][tx] = accW;
  sb[ty][tx] = accB;
  __syncthreads();
  if (ty == 0 && col < d) {
    for (int i = 1; i < kRowsPerBlock; ++i) {
      accW += sw[i][tx];
      accB += sb[i][tx];
    }
    partialW[blockIdx.y * d + col] = accW;
    if (partialB)
      partialB[blockIdx.y * d + col] = accB;
  }
}

/// Stage 2. Thread per column: the chunks' partials in chunk order.
template <typename T>
__global__ void paramGradFinalKernel(const double *partialW,
                                     const double *partialB, int64_t chunks,
                                     int64_t d, T *dw, T *db) {
  int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (col >= d)
    return;
  double accW = 0, accB = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    accW += partialW[c * d + col];
    if (partialB)
      accB += partialB[c * d + col];
  }
  if (dw)
    dw[col] = fromFloat<T>((float)accW);
  if (db)
    db[col] = fromFloat<T>((float)accB);
}

/// Workspace: the row statistics, then the partials of dw (and db).
struct GradWorkspace {
  LayerStats *stats;
  double *partialW, *partialB;
};

GradWorkspace carve(void *workspace, int64_t rows, int64_t d, bool withBias) {
  char *p = static_cast<char *>(workspace);
  GradWorkspace ws;
  ws.stats = reinterpret_cast<LayerStats *>(p);
  p += align256(rows * (int64_t)sizeof(LayerStats));
  ws.partialW = reinterpret_cast<double *>(p);
  p += chunksFor(rows) * d * (int64_t)sizeof(double);
  ws.partialB = withBias ? reinterpret_cast<double *>(p) : nullptr;
  return ws;
}

/// Stages 1 and 2 for dw (and db when not null).
template <typename T>
void launchParamGrads(const T *g, const T *x, const GradWorkspace &ws,
                      int64_t rows, int64_t d, T *dw, T *db,
                      cudaStream_t stream) {
  int64_t chunks = chunksFor(rows);
  if (chunks > 65535)
    throw Error("tgc::cuda: norm weight gradients take up to " +
                std::to_string(65535 * kChunkRows) + " rows, got " +
                std::to_string(rows));
  dim3 grid(blocksFor(d, kColumns), (unsigned)chunks);
  paramGradPartialKernel<T><<<grid, dim3(kColumns, kRowsPerBlock), 0,
                              stream>>>(g, x, ws.stats, rows, d, ws.partialW,
                                        db ? ws.partialB : nullptr);
  TGC_CUDA_CHECK_LAUNCH();
  constexpr int kThreads = 256;
  paramGradFinalKernel<T><<<blocksFor(d, kThreads), kThreads, 0, stream>>>(
      ws.partialW, db ? ws.partialB : nullptr, chunks, d, dw, db);
  TGC_CUDA_CHECK_LAUNCH();
}

constexpr int kRowThreads = kRowsPerBlock * kWarpSize;

template <typename T>
void layerNormImpl(const T *x, const T *w, const T *b, T *y, int64_t rows,
                   int64_t d, float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0)
    return;
  layerNormKernel<T><<<blocksFor(rows, kRowsPerBlock), kRowThreads, 0,
                       stream>>>(x, w, b, y, rows, d, eps);
  TGC_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layerNormGradImpl(const T *g, const T *x, const T *w, T *dx, T *dw,
                       T *db, int64_t rows, int64_t d, float eps,
                       void *workspace, cudaStream_t stream) {
  if (d <= 0)
    return;
  bool params = dw || db;
  if (rows <= 0) {
    // No rows: the sums over rows are zero.
    if (dw)
      TGC_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(T) * d, stream));
    if (db)
      TGC_CUDA_CHECK(cudaMemsetAsync(db, 0, sizeof(T) * d, stream));
    return;
  }
  if (params && !workspace)
    throw Error("tgc::cuda::layer_norm_grad: dw/db need a workspace of "
                "layer_norm_grad_workspace_bytes(rows, d)");
  GradWorkspace ws = params ? carve(workspace, rows, d, true)
                            : GradWorkspace{nullptr, nullptr, nullptr};
  layerNormGradRowsKernel<T><<<blocksFor(rows, kRowsPerBlock), kRowThreads,
                               0, stream>>>(g, x, w, dx, ws.stats, rows, d,
                                            eps);
  TGC_CUDA_CHECK_LAUNCH();
  if (params)
    launchParamGrads(g, x, ws, rows, d, dw, db, stream);
}

template <typename T>
void rmsNormImpl(const T *x, const T *w, T *y, int64_t rows, int64_t d,
                 float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0)
    return;
  rmsNormKernel<T><<<blocksFor(rows, kRowsPerBlock), kRowThreads, 0,
                     stream>>>(x, w, y, rows, d, eps);
  TGC_CUDA_CHECK_LAUNCH();
}

template <typename T>
void rmsNormGradImpl(const T *g, const T *x, const T *w, T *dx, T *dw,
                     int64_t rows, int64_t d, float eps, void *workspace,
                     cudaStream_t stream) {
  if (d <= 0)
    return;
  if (rows <= 0) {
    if (dw)
      TGC_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(T) * d, stream));
    return;
  }
  if (dw && !workspace)
    throw Error("tgc::cuda::rms_norm_grad: dw needs a workspace of "
                "rms_norm_grad_workspace_bytes(rows, d)");
  GradWorkspace ws = dw ? carve(workspace, rows, d, false)
                        : GradWorkspace{nullptr, nullptr, nullptr};
  rmsNormGradRowsKernel<T><<<blocksFor(rows, kRowsPerBlock), kRowThreads, 0,
                             stream>>>(g, x, w, dx, ws.stats, rows, d, eps);
  TGC_CUDA_CHECK_LAUNCH();
  if (dw)
    launchParamGrads<T>(g, x, ws, rows, d, dw, nullptr, stream);
}

} // namespace

int64_t layer_norm_grad_workspace_bytes(int64_t rows, int64_t d) {
  return align256(rows * (int64_t)sizeof(LayerStats)) +
         2 * chunksFor(rows) * d * (int64_t)sizeof(double);
}

int64_t rms_norm_grad_workspace_bytes(int64_t rows, int64_t d) {
  return align256(rows * (int64_t)sizeof(LayerStats)) +
         chunksFor(rows) * d * (int64_t)sizeof(double);
}

void layer_norm(const float *x, const float *w, const float *b, float *y,
                int64_t rows, int64_t d, float eps, cudaStream_t stream) {
  layerNormImpl(x, w, b, y, rows, d, eps, stream);
}
void layer_norm(const bf16 *x, const bf16 *w, const bf16 *b, bf16 *y,
                int64_t rows, int64_t d, float eps, cudaStream_t stream) {
  layerNormImpl(x, w, b, y, rows, d, eps, stream);
}
void layer_norm_grad(const float *g, const float *x, const float *w, float *dx,
                     float *dw, float *db, int64_t rows, int64_t d, float eps,
                     void *workspace, cudaStream_t stream) {
  layerNormGradImpl(g, x, w, dx, dw, db, rows, d, eps, workspace, stream);
}
void layer_norm_grad(const bf16 *g, const bf16 *x, const bf16 *w, bf16 *dx,
                     bf16 *dw, bf16 *db, int64_t rows, int64_t d, float eps,
                     void *workspace, cudaStream_t stream) {
  layerNormGradImpl(g, x, w, dx, dw, db, rows, d, eps, workspace, stream);
}
void rms_norm(const float *x, const float *w, float *y, int64_t rows,
              int64_t d, float eps, cudaStream_t stream) {
  rmsNormImpl(x, w, y, rows, d, eps, stream);
}
void rms_norm(const bf16 *x, const bf16 *w, bf16 *y, int64_t rows, int64_t d,
              float eps, cudaStream_t stream) {
  rmsNormImpl(x, w, y, rows, d, eps, stream);
}
void rms_norm_grad(const float *g, const float *x, const float *w, float *dx,
                   float *dw, int64_t rows, int64_t d, float eps,
                   void *workspace, cudaStream_t stream) {
  rmsNormGradImpl(g, x, w, dx, dw, rows, d, eps, workspace, stream);
}
void rms_norm_grad(const bf16 *g, const bf16 *x, const bf16 *w, bf16 *dx,
                   bf16 *dw, int64_t rows, int64_t d, float eps,
                   void *workspace, cudaStream_t stream) {
  rmsNormGradImpl(g, x, w, dx, dw, rows, d, eps, workspace, stream);
}

} // namespace tgc::cuda

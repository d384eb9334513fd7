//===- Conv.cpp - 2-D convolution by im2col and GEMM ------------*- C++ -*-===//
//
// Per image and group, the input patches are unrolled into a column matrix
// col [C/g * KH * KW, OH * OW] (a 1x1, stride-1, unpadded convolution uses the
// image itself), and
//   forward      y_ng  = w_g · col
//   grad input   dx_ng = col2im(w_gᵀ · g_ng)
//   grad weight  dw_g  = Σ_n g_ng · colᵀ
// Images x groups run in parallel, a GEMM each (the weight gradient sums
// per-thread partials in thread order); a single image splits its GEMMs over
// the threads (BlasThreads.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"
#include "runtime/cpu/ThreadScratch.h"

#include <algorithm>
#include <cstring>
#include <omp.h>
#include <vector>

namespace tgc::cpu {

namespace {

struct ConvGeometry {
  const Conv2dDims &d;
  int64_t cg, og, kk, ohw, rows; // rows = cg * kk, the GEMM's inner dim

  explicit ConvGeometry(const Conv2dDims &dims)
      : d(dims), cg(dims.c / dims.groups), og(dims.o / dims.groups),
        kk(dims.kh * dims.kw), ohw(dims.oh * dims.ow), rows(cg * kk) {}

  /// The image itself is the column matrix.
  bool isPointwise() const {
    return d.kh == 1 && d.kw == 1 && d.strideH == 1 && d.strideW == 1 &&
           d.padH == 0 && d.padW == 0 && d.oh == d.h && d.ow == d.w;
  }

  /// Output columns ox whose input column ox * stride + base lies in
  /// [0, w): [lo, hi).
  void validColumns(int64_t base, int64_t &lo, int64_t &hi) const {
    int64_t s = d.strideW;
    lo = base >= 0 ? 0 : (-base + s - 1) / s;
    hi = base > d.w - 1 ? 0 : std::min(d.ow, (d.w - 1 - base) / s + 1);
    lo = std::min(lo, d.ow);
    hi = std::max(hi, lo);
  }
};

/// col[(c, ki, kj), (oy, ox)] = x[c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw].
/// `ld`: the distance between the column matrix's rows (geo.ohw for one
/// image's; n * geo.ohw for one image's block of a batch's). Rows are as
/// short as the image (4 to 32 floats for small CNNs): plain loops, which
/// GCC must not turn back into memset/memcpy calls costing more than the
/// copy.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
void im2col(const float *x, const ConvGeometry &geo, float *col,
            int64_t ld) {
  const Conv2dDims &d = geo.d;
  for (int64_t c = 0; c < geo.cg; ++c)
    for (int64_t ki = 0; ki < d.kh; ++ki)
      for (int64_t kj = 0; kj < d.kw; ++kj) {
        float *dst = col + ((c * d.kh + ki) * d.kw + kj) * ld;
        int64_t base = kj * d.dilW - d.padW, lo, hi;
        geo.validColumns(base, lo, hi);
        for (int64_t oy = 0; oy < d.oh; ++oy) {
          float *out = dst + oy * d.ow;
          int64_t iy = oy * d.strideH - d.padH + ki * d.dilH;
          if (iy < 0 || iy >= d.h) {
            for (int64_t ox = 0; ox < d.ow; ++ox)
              out[ox] = 0.0f;
            continue;
          }
          const float *in = x + (c * d.h + iy) * d.w + base;
          for (int64_t ox = 0; ox < lo; ++ox)
            out[ox] = 0.0f;
          if (d.strideW == 1)
            for (int64_t ox = lo; ox < hi; ++ox)
              out[ox] = in[ox];
          else
            for (int64_t ox = lo; ox < hi; ++ox)
              out[ox] = in[ox * d.strideW];
          for (int64_t ox = hi; ox < d.ow; ++ox)
            out[ox] = 0.0f;
        }
      }
}

/// x[c, iy, ix] += col[(c, ki, kj), (oy, ox)], the adjoint of im2col; x is
/// zeroed first.
void col2im(const float *col, const ConvGeometry &geo, float *x, int64_t ld) {
  const Conv2dDims &d = geo.d;
  std::memset(x, 0, sizeof(float) * geo.cg * d.h * d.w);
  for (int64_t c = 0; c < geo.cg; ++c)
    for (int64_t ki = 0; ki < d.kh; ++ki)
      for (int64_t kj = 0; kj < d.kw; ++kj) {
        const float *src = col + ((c * d.kh + ki) * d.kw + kj) * ld;
        int64_t base = kj * d.dilW - d.padW, lo, hi;
        geo.validColumns(base, lo, hi);
        for (int64_t oy = 0; oy < d.oh; ++oy) {
          int64_t iy = oy * d.strideH - d.padH + ki * d.dilH;
          if (iy < 0 || iy >= d.h)
            continue;
          const float *in = src + oy * d.ow;
          float *out = x + (c * d.h + iy) * d.w + base;
          for (int64_t ox = lo; ox < hi; ++ox)
            out[ox * d.strideW] += in[ox];
        }
      }
}

/// Runs fn(task) for tasks [0, count): in parallel when there are enough
/// tasks, else in turn with each GEMM split over the threads.
/// Returns whether it ran in parallel.
template <typename Fn>
bool forEachTask(int64_t count, Fn fn) {
  int threads = maxThreads();
  if (threads > 1 && count > 1 && 2 * count >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t t = 0; t < count; ++t)
      fn(t);
    return true;
  }
  for (int64_t t = 0; t < count; ++t)
    fn(t);
  return false;
}

/// Small images on one thread (the column matrix of the whole batch within
/// kBatchedFloats): one GEMM over all images' columns instead of one per
/// image, whose M x N x K of, say, 32 x 16 x 144 leaves the GEMM kernel
/// mostly in its edges. The columns are [rows, n * ohw], image-major
/// within a row. With more threads the images run in parallel instead
/// (the CNN's step: 0.74 ms that way at 2 threads, 0.79 batched, whose
/// small GEMMs stay on one thread).
constexpr int64_t kBatchedFloats = 1 << 22;
bool batchesImages(const ConvGeometry &geo) {
  const Conv2dDims &d = geo.d;
  return maxThreads() == 1 && d.groups == 1 && d.n > 1 && !geo.isPointwise() &&
         geo.rows > 0 &&
         geo.ohw * d.n * std::max(geo.rows, geo.og) <= kBatchedFloats;
}

/// The batch's column matrix, one image's block per task.
float *batchColumns(const float *x, const ConvGeometry &geo, int slot) {
  const Conv2dDims &d = geo.d;
  int64_t ld = d.n * geo.ohw;
  float *col = threadScratch(slot, (size_t)geo.rows * ld);
  forEachTask(d.n, [&](int64_t img) {
    im2col(x + img * d.c * d.h * d.w, geo, col + img * geo.ohw, ld);
  });
  return col;
}

/// [n, og, ohw] <-> [og, n * ohw].
void toImageMajor(const float *rows, const ConvGeometry &geo, float *y) {
  const Conv2dDims &d = geo.d;
  for (int64_t img = 0; img < d.n; ++img)
    for (int64_t o = 0; o < geo.og; ++o)
      std::memcpy(y + (img * geo.og + o) * geo.ohw,
                  rows + o * d.n * geo.ohw + img * geo.ohw,
                  sizeof(float) * geo.ohw);
}
void toChannelMajor(const float *y, const ConvGeometry &geo, float *rows) {
  const Conv2dDims &d = geo.d;
  for (int64_t img = 0; img < d.n; ++img)
    for (int64_t o = 0; o < geo.og; ++o)
      std::memcpy(rows + o * d.n * geo.ohw + img * geo.ohw,
                  y + (img * geo.og + o) * geo.ohw, sizeof(float) * geo.ohw);
}

} // namespace

void conv2d(const float *x, const float *w, const float *bias, float *y,
            const Conv2dDims &d) {
  ConvGeometry geo(d);
  if (d.n * d.o * geo.ohw == 0)
    return;
  if (batchesImages(geo)) {
    int64_t ld = d.n * geo.ohw;
    const float *col = batchColumns(x, geo, 2);
    float *out = threadScratch(3, (size_t)geo.og * ld);
    gemm(CblasNoTrans, CblasNoTrans, geo.og, ld, geo.rows, 1.0f, w, geo.rows,
         col, ld, 0.0f, out, ld);
    toImageMajor(out, geo, y);
    if (bias)
      for (int64_t img = 0; img < d.n; ++img)
        for (int64_t o = 0; o < geo.og; ++o) {
          float b = bias[o];
          float *row = y + (img * geo.og + o) * geo.ohw;
#pragma omp simd
          for (int64_t j = 0; j < geo.ohw; ++j)
            row[j] += b;
        }
    return;
  }
  forEachTask(d.n * d.groups, [&](int64_t task) {
    int64_t img = task / d.groups, gi = task % d.groups;
    const float *xg = x + (img * d.c + gi * geo.cg) * d.h * d.w;
    float *yg = y + (img * d.o + gi * geo.og) * geo.ohw;
    const float *col = xg;
    if (!geo.isPointwise()) {
      float *buf = threadScratch(2, (size_t)geo.rows * geo.ohw);
      im2col(xg, geo, buf, geo.ohw);
      col = buf;
    }
    if (geo.rows == 0)
      std::memset(yg, 0, sizeof(float) * geo.og * geo.ohw);
    else
      gemm(CblasNoTrans, CblasNoTrans, geo.og, geo.ohw, geo.rows, 1.0f,
           w + gi * geo.og * geo.rows, geo.rows, col, geo.ohw, 0.0f, yg,
           geo.ohw);
    if (bias)
      for (int64_t o = 0; o < geo.og; ++o) {
        float b = bias[gi * geo.og + o];
        float *row = yg + o * geo.ohw;
#pragma omp simd
        for (int64_t j = 0; j < geo.ohw; ++j)
          row[j] += b;
      }
  });
}

void conv2d_grad_input(const float *g, const float *w, float *dx,
                       const Conv2dDims &d) {
  ConvGeometry geo(d);
  if (d.n * d.c * d.h * d.w == 0)
    return;
  if (batchesImages(geo) && geo.og > 0 && geo.ohw > 0) {
    int64_t ld = d.n * geo.ohw;
    float *grows = threadScratch(3, (size_t)geo.og * ld);
    toChannelMajor(g, geo, grows);
    float *dcol = threadScratch(2, (size_t)geo.rows * ld);
    gemm(CblasTrans, CblasNoTrans, geo.rows, ld, geo.og, 1.0f, w, geo.rows,
         grows, ld, 0.0f, dcol, ld);
    forEachTask(d.n, [&](int64_t img) {
      col2im(dcol + img * geo.ohw, geo, dx + img * d.c * d.h * d.w, ld);
    });
    return;
  }
  forEachTask(d.n * d.groups, [&](int64_t task) {
    int64_t img = task / d.groups, gi = task % d.groups;
    const float *gg = g + (img * d.o + gi * geo.og) * geo.ohw;
    float *dxg = dx + (img * d.c + gi * geo.cg) * d.h * d.w;
    if (geo.og == 0 || geo.ohw == 0) {
      std::memset(dxg, 0, sizeof(float) * geo.cg * d.h * d.w);
      return;
    }
    bool direct = geo.isPointwise();
    float *dcol = direct ? dxg : threadScratch(2, (size_t)geo.rows * geo.ohw);
    gemm(CblasTrans, CblasNoTrans, geo.rows, geo.ohw, geo.og, 1.0f,
         w + gi * geo.og * geo.rows, geo.rows, gg, geo.ohw, 0.0f, dcol,
         geo.ohw);
    if (!direct)
      col2im(dcol, geo, dxg, geo.ohw);
  });
}

void conv2d_grad_weight(const float *g, const float *x, float *dw,
                        const Conv2dDims &d) {
  ConvGeometry geo(d);
  int64_t wsize = d.o * geo.rows;
  if (wsize == 0)
    return;
  std::memset(dw, 0, sizeof(float) * wsize);
  if (d.n * geo.ohw == 0)
    return;
  if (batchesImages(geo)) {
    int64_t ld = d.n * geo.ohw;
    const float *col = batchColumns(x, geo, 2);
    float *grows = threadScratch(3, (size_t)geo.og * ld);
    toChannelMajor(g, geo, grows);
    gemm(CblasNoTrans, CblasTrans, geo.og, geo.rows, ld, 1.0f, grows, ld, col,
         ld, 0.0f, dw, geo.rows);
    return;
  }
  // Per-thread partial sums over images, or dw itself when run in turn.
  int threads = maxThreads();
  std::vector<float> partials;
  bool parallel = threads > 1 && d.n * d.groups > 1 &&
                  2 * d.n * d.groups >= threads;
  if (parallel)
    partials.assign((size_t)threads * wsize, 0.0f);
  auto accumulate = [&](int64_t task, float *target) {
    int64_t img = task / d.groups, gi = task % d.groups;
    const float *gg = g + (img * d.o + gi * geo.og) * geo.ohw;
    const float *xg = x + (img * d.c + gi * geo.cg) * d.h * d.w;
    const float *col = xg;
    if (!geo.isPointwise()) {
      float *buf = threadScratch(2, (size_t)geo.rows * geo.ohw);
      im2col(xg, geo, buf, geo.ohw);
      col = buf;
    }
    gemm(CblasNoTrans, CblasTrans, geo.og, geo.rows, geo.ohw, 1.0f, gg, geo.ohw,
         col, geo.ohw, 1.0f, target + gi * geo.og * geo.rows, geo.rows);
  };
  if (!parallel) {
    for (int64_t t = 0; t < d.n * d.groups; ++t)
      accumulate(t, dw);
    return;
  }
  int teamSize = 1;
  {
#pragma omp parallel
    {
#pragma omp single
      teamSize = omp_get_num_threads();
      float *mine = partials.data() + (size_t)omp_get_thread_num() * wsize;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < d.n * d.groups; ++t)
        accumulate(t, mine);
    }
  }
#pragma omp parallel for schedule(static) if (wsize > 16384)
  for (int64_t i = 0; i < wsize; ++i) {
    float acc = 0;
    for (int t = 0; t < teamSize; ++t)
      acc += partials[(size_t)t * wsize + i];
    dw[i] = acc;
  }
}

} // namespace tgc::cpu

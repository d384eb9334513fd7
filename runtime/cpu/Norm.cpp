//===- Norm.cpp - Layer norm and RMS norm, forward and backward ----*- C++ -*-===//
//
// Normalization over the last dim of [rows, d], one row per task. Row
// statistics accumulate in double. The backward recomputes mean and rstd from
// x instead of saving them; the weight and bias gradients are sums over rows,
// gathered in per-thread double partials and added up in thread order, so the
// result does not depend on scheduling.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"

#include <cmath>
#include <omp.h>
#include <vector>

namespace tgc::cpu {

namespace {

struct RowStats {
  float mean, rstd;
};

RowStats layerNormStats(const float *x, int64_t d, float eps) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < d; ++j)
    sum += x[j];
  double mean = sum / d;
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t j = 0; j < d; ++j) {
    double c = x[j] - mean;
    sq += c * c;
  }
  return {(float)mean, (float)(1.0 / std::sqrt(sq / d + eps))};
}

float rmsNormRstd(const float *x, int64_t d, float eps) {
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t j = 0; j < d; ++j)
    sq += (double)x[j] * x[j];
  return (float)(1.0 / std::sqrt(sq / d + eps));
}

/// Per-thread accumulators for column sums over rows (the weight and bias
/// gradients), `count` vectors of length d per thread.
class ColumnPartials {
public:
  ColumnPartials(int64_t d, int count)
      : d(d), count(count), data((size_t)maxThreads() * count * d, 0.0) {}
  double *forThread(int tid, int which) {
    return data.data() + ((size_t)tid * count + which) * d;
  }
  /// out[j] = sum over the first `threads` threads, in thread order.
  void sumInto(float *out, int which, int threads) {
#pragma omp parallel for schedule(static) if (d * threads > 65536)
    for (int64_t j = 0; j < d; ++j) {
      double acc = 0;
      for (int t = 0; t < threads; ++t)
        acc += forThread(t, which)[j];
      out[j] = (float)acc;
    }
  }

private:
  int64_t d;
  int count;
  std::vector<double> data;
};

bool worthThreads(int64_t rows, int64_t d) { return rows > 1 && rows * d > 16384; }

} // namespace

void layer_norm(const float *x, const float *w, const float *b, float *y,
                int64_t rows, int64_t d, float eps) {
#pragma omp parallel for schedule(static) if (worthThreads(rows, d))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    RowStats s = layerNormStats(xr, d, eps);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) {
      float v = (xr[j] - s.mean) * s.rstd;
      if (w)
        v *= w[j];
      if (b)
        v += b[j];
      yr[j] = v;
    }
  }
}

void layer_norm_grad(const float *g, const float *x, const float *w,
                     float *dx, float *dw, float *db, int64_t rows, int64_t d,
                     float eps) {
  bool columns = dw || db;
  ColumnPartials partials(columns ? d : 0, 2);
  int teamSize = 1;
#pragma omp parallel if (worthThreads(rows, d))
  {
    int tid = omp_get_thread_num();
#pragma omp single
    teamSize = omp_get_num_threads();
    double *pw = partials.forThread(tid, 0), *pb = partials.forThread(tid, 1);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * d, *gr = g + r * d;
      RowStats s = layerNormStats(xr, d, eps);
      if (dx) {
        // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
        double sumDy = 0, sumDyXhat = 0;
#pragma omp simd reduction(+ : sumDy, sumDyXhat)
        for (int64_t j = 0; j < d; ++j) {
          float dyhat = w ? gr[j] * w[j] : gr[j];
          sumDy += dyhat;
          sumDyXhat += dyhat * ((xr[j] - s.mean) * s.rstd);
        }
        float meanDy = (float)(sumDy / d), meanDyXhat = (float)(sumDyXhat / d);
        float *dxr = dx + r * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          float dyhat = w ? gr[j] * w[j] : gr[j];
          float xhat = (xr[j] - s.mean) * s.rstd;
          dxr[j] = s.rstd * (dyhat - meanDy - xhat * meanDyXhat);
        }
      }
      if (dw) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          pw[j] += (double)gr[j] * ((xr[j] - s.mean) * s.rstd);
      }
      if (db) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          pb[j] += gr[j];
      }
    }
  }
  if (dw)
    partials.sumInto(dw, 0, teamSize);
  if (db)
    partials.sumInto(db, 1, teamSize);
}

void rms_norm(const float *x, const float *w, float *y, int64_t rows,
              int64_t d, float eps) {
#pragma omp parallel for schedule(static) if (worthThreads(rows, d))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    float rstd = rmsNormRstd(xr, d, eps);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j)
      yr[j] = w ? xr[j] * rstd * w[j] : xr[j] * rstd;
  }
}

void rms_norm_grad(const float *g, const float *x, const float *w, float *dx,
                   float *dw, int64_t rows, int64_t d, float eps) {
  ColumnPartials partials(dw ? d : 0, 1);
  int teamSize = 1;
#pragma omp parallel if (worthThreads(rows, d))
  {
    int tid = omp_get_thread_num();
#pragma omp single
    teamSize = omp_get_num_threads();
    double *pw = partials.forThread(tid, 0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * d, *gr = g + r * d;
      float rstd = rmsNormRstd(xr, d, eps);
      if (dx) {
        // dx = rstd * (dxhat - xhat * mean(dxhat * xhat)).
        double sumDyXhat = 0;
#pragma omp simd reduction(+ : sumDyXhat)
        for (int64_t j = 0; j < d; ++j) {
          float dyhat = w ? gr[j] * w[j] : gr[j];
          sumDyXhat += dyhat * (xr[j] * rstd);
        }
        float meanDyXhat = (float)(sumDyXhat / d);
        float *dxr = dx + r * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          float dyhat = w ? gr[j] * w[j] : gr[j];
          dxr[j] = rstd * (dyhat - xr[j] * rstd * meanDyXhat);
        }
      }
      if (dw) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          pw[j] += (double)gr[j] * (xr[j] * rstd);
      }
    }
  }
  if (dw)
    partials.sumInto(dw, 0, teamSize);
}

} // namespace tgc::cpu

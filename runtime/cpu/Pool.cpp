//===- Pool.cpp - 2-D max and average pooling, fwd and bwd ---------*- C++ -*-===//
//
// One (image, channel) plane per task, so the backward's scatter into
// overlapping windows needs no synchronization. Windows are clipped to the
// unpadded input: max ignores the padding (as if it were -inf), average
// divides by the clipped window's size (torch's count_include_pad=False).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tgc::cpu {

namespace {

/// The part of an output position's window inside the input.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

Window window(const Pool2dDims &d, int64_t oy, int64_t ox) {
  int64_t ys = oy * d.strideH - d.padH, xs = ox * d.strideW - d.padW;
  Window win{std::max<int64_t>(ys, 0), std::min(ys + d.kh, d.h),
             std::max<int64_t>(xs, 0), std::min(xs + d.kw, d.w)};
  win.y1 = std::max(win.y1, win.y0);
  win.x1 = std::max(win.x1, win.x0);
  return win;
}

bool worthThreads(const Pool2dDims &d) {
  return d.n * d.c > 1 && d.n * d.c * d.oh * d.ow * d.kh * d.kw > 16384;
}

/// The flat index in the plane of the window's first maximum, or -1 for an
/// empty window. NaN counts as the maximum, as in torch.
int64_t argMax(const float *plane, const Pool2dDims &d, const Window &win) {
  int64_t best = -1;
  float bestVal = -std::numeric_limits<float>::infinity();
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

} // namespace

void max_pool2d(const float *x, float *y, const Pool2dDims &d) {
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *plane = x + p * d.h * d.w;
    float *out = y + p * d.oh * d.ow;
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        int64_t at = argMax(plane, d, window(d, oy, ox));
        out[oy * d.ow + ox] =
            at < 0 ? -std::numeric_limits<float>::infinity() : plane[at];
      }
  }
}

void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &d) {
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *plane = x + p * d.h * d.w;
    const float *gp = g + p * d.oh * d.ow;
    float *dp = dx + p * d.h * d.w;
    std::memset(dp, 0, sizeof(float) * d.h * d.w);
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        int64_t at = argMax(plane, d, window(d, oy, ox));
        if (at >= 0)
          dp[at] += gp[oy * d.ow + ox];
      }
  }
}

void avg_pool2d(const float *x, float *y, const Pool2dDims &d) {
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *plane = x + p * d.h * d.w;
    float *out = y + p * d.oh * d.ow;
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        Window win = window(d, oy, ox);
        double sum = 0;
        for (int64_t yy = win.y0; yy < win.y1; ++yy)
          for (int64_t xx = win.x0; xx < win.x1; ++xx)
            sum += plane[yy * d.w + xx];
        int64_t count = win.count();
        out[oy * d.ow + ox] = count > 0 ? (float)(sum / count) : 0.0f;
      }
  }
}

void avg_pool2d_grad(const float *g, float *dx, const Pool2dDims &d) {
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *gp = g + p * d.oh * d.ow;
    float *dp = dx + p * d.h * d.w;
    std::memset(dp, 0, sizeof(float) * d.h * d.w);
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        Window win = window(d, oy, ox);
        int64_t count = win.count();
        if (count == 0)
          continue;
        float share = gp[oy * d.ow + ox] / (float)count;
        for (int64_t yy = win.y0; yy < win.y1; ++yy)
          for (int64_t xx = win.x0; xx < win.x1; ++xx)
            dp[yy * d.w + xx] += share;
      }
  }
}

} // namespace tgc::cpu

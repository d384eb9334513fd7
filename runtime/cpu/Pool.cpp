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
#include <cstdint>
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

/// Whether v replaces best as the running maximum: larger, or the first NaN
/// (NaN counts as the maximum, as in torch). Branch-free, as pooled data
/// gives the branch predictor nothing to learn.
inline bool takes(float v, float best) {
  return (v > best) | ((v != v) & (best == best));
}

/// The flat index in the plane of the window's first maximum, or -1 for an
/// empty window.
int64_t argMax(const float *plane, const Pool2dDims &d, const Window &win) {
  if (win.count() == 0)
    return -1;
  int64_t best = win.y0 * d.w + win.x0;
  float bestVal = plane[best];
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x) {
      float v = plane[y * d.w + x];
      bool take = takes(v, bestVal);
      best = take ? y * d.w + x : best;
      bestVal = take ? v : bestVal;
    }
  return best;
}

/// argMax of the common 2x2 window that lies inside the plane, at `at`.
inline int64_t argMax2x2(const float *plane, int64_t w, int64_t at) {
  int64_t best = at;
  float bestVal = plane[at];
  for (int64_t k : {at + 1, at + w, at + w + 1}) {
    float v = plane[k];
    bool take = takes(v, bestVal);
    best = take ? k : best;
    bestVal = take ? v : bestVal;
  }
  return best;
}

/// The common 2x2 window with stride 2 and no padding: the windows tile
/// the plane, so the forward is one sweep over pairs of rows computing each
/// maximum with bit-mask selects, 8x faster than the argmax walk on the
/// CNN's first pool. (A backward written the same way, picking the
/// gradient's position with masks, was slower than the scatter: the index
/// chain is serial.)
bool isTiled2x2(const Pool2dDims &d) {
  return d.kh == 2 && d.kw == 2 && d.strideH == 2 && d.strideW == 2 &&
         d.padH == 0 && d.padW == 0 && 2 * d.oh <= d.h && 2 * d.ow <= d.w;
}

/// c ? x : y through bit masks: GCC turns float selects after these
/// compares back into jumps, which the pooled data mispredicts.
inline float pick(bool c, float x, float y) {
  uint32_t m = 0u - (uint32_t)c, bx, by;
  std::memcpy(&bx, &x, 4);
  std::memcpy(&by, &y, 4);
  uint32_t r = (bx & m) | (by & ~m);
  float f;
  std::memcpy(&f, &r, 4);
  return f;
}

inline float max4(float a, float b, float c, float e) {
  float m = pick(takes(b, a), b, a);
  m = pick(takes(c, m), c, m);
  return pick(takes(e, m), e, m);
}

void maxPoolTiled2x2(const float *plane, float *out, const Pool2dDims &d) {
  for (int64_t oy = 0; oy < d.oh; ++oy) {
    const float *r0 = plane + 2 * oy * d.w, *r1 = r0 + d.w;
    float *o = out + oy * d.ow;
    for (int64_t ox = 0; ox < d.ow; ++ox)
      o[ox] = max4(r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]);
  }
}

/// The backward of maxPoolTiled2x2 when the windows cover the planes
/// exactly (h = 2 oh, w = 2 ow): each input gets its window's gradient when
/// it is the window's first maximum (the first element equal to the
/// maximum, or the first NaN: argMax2x2's pick), else 0, written once. The
/// windows' four elements are first copied apart into contiguous arrays
/// for a block of output rows, so that the mask arithmetic in between
/// vectorizes (on the strided rows themselves GCC keeps it scalar).
void maxPoolGradExact2x2(const float *x, const float *g, float *dx,
                         const Pool2dDims &d) {
  constexpr int64_t kBlock = 512;
  int64_t rows = d.n * d.c * d.oh;
  int64_t rowsPerBlock =
      std::max<int64_t>(1, kBlock / std::max<int64_t>(d.ow, 1));
  int64_t blocks = (rows + rowsPerBlock - 1) / rowsPerBlock;
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    int64_t r0 = blk * rowsPerBlock, r1 = std::min(rows, r0 + rowsPerBlock);
    int64_t len = (r1 - r0) * d.ow;
    alignas(64) float a[kBlock], b[kBlock], c[kBlock], e[kBlock];
    if (len > kBlock) // one output row longer than the block
      len = 0;
    auto forEach = [&](auto fn) {
      for (int64_t r = r0, i = 0; r < r1; ++r)
        for (int64_t ox = 0; ox < d.ow; ++ox, ++i)
          fn(i, 2 * r * d.w + 2 * ox, r * d.ow + ox);
    };
    if (len == 0) {
      // Rows too long for the block: the scatter.
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          int64_t at = argMax2x2(x, d.w, 2 * r * d.w + 2 * ox);
          int64_t base = 2 * r * d.w + 2 * ox;
          float v = 0.0f + g[r * d.ow + ox];
          dx[base] = at == base ? v : 0.0f;
          dx[base + 1] = at == base + 1 ? v : 0.0f;
          dx[base + d.w] = at == base + d.w ? v : 0.0f;
          dx[base + d.w + 1] = at == base + d.w + 1 ? v : 0.0f;
        }
      continue;
    }
    forEach([&](int64_t i, int64_t in, int64_t) {
      a[i] = x[in];
      b[i] = x[in + 1];
      c[i] = x[in + d.w];
      e[i] = x[in + d.w + 1];
    });
    alignas(64) float gv[kBlock];
    forEach([&](int64_t i, int64_t, int64_t out) { gv[i] = g[out]; });
    for (int64_t i = 0; i < len; ++i) {
      float m = max4(a[i], b[i], c[i], e[i]);
      bool mNaN = m != m;
      bool k0 = (a[i] == m) | ((a[i] != a[i]) & mNaN);
      bool k1 = ((b[i] == m) | ((b[i] != b[i]) & mNaN)) & !k0;
      bool k2 = ((c[i] == m) | ((c[i] != c[i]) & mNaN)) & !(k0 | k1);
      bool k3 = !(k0 | k1 | k2);
      // 0 + g, as the scatter into a zeroed plane adds it (-0 becomes +0).
      float v = 0.0f + gv[i];
      a[i] = pick(k0, v, 0.0f);
      b[i] = pick(k1, v, 0.0f);
      c[i] = pick(k2, v, 0.0f);
      e[i] = pick(k3, v, 0.0f);
    }
    forEach([&](int64_t i, int64_t in, int64_t) {
      dx[in] = a[i];
      dx[in + 1] = b[i];
      dx[in + d.w] = c[i];
      dx[in + d.w + 1] = e[i];
    });
  }
}

/// Calls fn(outputIndex, argMaxInPlane) for each output of one plane.
template <typename Fn>
void forEachArgMax(const float *plane, const Pool2dDims &d, Fn fn) {
  bool unpadded2x2 = d.kh == 2 && d.kw == 2 && d.padH == 0 && d.padW == 0 &&
                     (d.oh - 1) * d.strideH + 2 <= d.h &&
                     (d.ow - 1) * d.strideW + 2 <= d.w;
  for (int64_t oy = 0; oy < d.oh; ++oy)
    for (int64_t ox = 0; ox < d.ow; ++ox)
      fn(oy * d.ow + ox,
         unpadded2x2
             ? argMax2x2(plane, d.w, oy * d.strideH * d.w + ox * d.strideW)
             : argMax(plane, d, window(d, oy, ox)));
}

} // namespace

void max_pool2d(const float *x, float *y, const Pool2dDims &d) {
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *plane = x + p * d.h * d.w;
    float *out = y + p * d.oh * d.ow;
    if (isTiled2x2(d)) {
      maxPoolTiled2x2(plane, out, d);
      continue;
    }
    forEachArgMax(plane, d, [&](int64_t o, int64_t at) {
      out[o] = at < 0 ? -std::numeric_limits<float>::infinity() : plane[at];
    });
  }
}

void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &d) {
  if (isTiled2x2(d) && 2 * d.oh == d.h && 2 * d.ow == d.w) {
    maxPoolGradExact2x2(x, g, dx, d);
    return;
  }
#pragma omp parallel for schedule(static) if (worthThreads(d))
  for (int64_t p = 0; p < d.n * d.c; ++p) {
    const float *plane = x + p * d.h * d.w;
    const float *gp = g + p * d.oh * d.ow;
    float *dp = dx + p * d.h * d.w;
    std::memset(dp, 0, sizeof(float) * d.h * d.w);
    forEachArgMax(plane, d, [&](int64_t o, int64_t at) {
      if (at >= 0)
        dp[at] += gp[o];
    });
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

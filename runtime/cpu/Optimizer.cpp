//===- Optimizer.cpp - Fused optimizer updates and LR schedules ----*- C++ -*-===//
//
// One pass over a parameter per optimizer step, with PyTorch's arithmetic:
// per-element math in float in torch's order, step-dependent factors (bias
// corrections) in double and rounded once, as torch does with its Python
// scalars. LAMB needs the norms of the parameter and of its update before it
// can apply either, so it takes two passes and recomputes the update in the
// second instead of storing it.
//
// The hyperparameters arrive as float, but torch computes 1 - beta2 from the
// double the user wrote: (float)0.999 is 0.99900001, and 1 - it is 1.3e-5 off
// 0.001. So the betas and alpha are read back as the shortest decimal that
// rounds to the same float (0.999), which is the value written in the model.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tgc::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;
constexpr double kPi = 3.14159265358979323846;

/// The shortest decimal that rounds to `v`, as a double.
double decimalOf(float v) {
  char buf[32];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf) - 1, v);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

/// The hyperparameters whose complements (1 - beta) torch takes in double.
struct Decimals {
  double beta1, beta2, alpha;
  explicit Decimals(const OptimizerHyper &h)
      : beta1(decimalOf(h.beta1)), beta2(decimalOf(h.beta2)),
        alpha(decimalOf(h.alpha)) {}
};

void sgd(float *p, const float *g, float *const *state, int numState,
         int64_t n, float lr, const OptimizerHyper &h) {
  float wd = h.weightDecay, mom = h.momentum;
  float *buf = numState > 0 ? state[0] : nullptr;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (wd != 0)
      d += wd * p[i];
    if (buf && mom != 0) {
      // A zero buffer makes the first step buf = grad, as torch's clone.
      buf[i] = mom * buf[i] + d;
      d = h.nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

void adam(bool decoupled, float *p, const float *g, float *m, float *v,
          int64_t n, float lr, int64_t step, const OptimizerHyper &h) {
  Decimals dec(h);
  double bc1 = 1.0 - std::pow(dec.beta1, (double)step);
  double bc2 = 1.0 - std::pow(dec.beta2, (double)step);
  float stepSize = (float)(lr / bc1);
  float bc2Sqrt = (float)std::sqrt(bc2);
  float b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weightDecay;
  float c1 = (float)(1.0 - dec.beta1), c2 = (float)(1.0 - dec.beta2);
  float decay = (float)(1.0 - (double)lr * wd);
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    float pi = p[i];
    if (decoupled)
      pi *= decay;
    else if (wd != 0)
      d += wd * pi;
    m[i] = m[i] * b1 + c1 * d;
    v[i] = v[i] * b2 + c2 * d * d;
    float denom = std::sqrt(v[i]) / bc2Sqrt + eps;
    p[i] = pi - stepSize * (m[i] / denom);
  }
}

void rmsprop(float *p, const float *g, float *const *state, int numState,
             int64_t n, float lr, const OptimizerHyper &h) {
  float *sq = state[0];
  float *buf = numState > 1 ? state[1] : nullptr;
  float alpha = h.alpha, eps = h.eps, wd = h.weightDecay, mom = h.momentum;
  float ca = (float)(1.0 - decimalOf(h.alpha));
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (wd != 0)
      d += wd * p[i];
    sq[i] = sq[i] * alpha + ca * d * d;
    float avg = std::sqrt(sq[i]) + eps;
    if (buf && mom > 0) {
      buf[i] = buf[i] * mom + d / avg;
      p[i] -= lr * buf[i];
    } else {
      p[i] -= lr * (d / avg);
    }
  }
}

void adagrad(float *p, const float *g, float *sum, int64_t n, float lr,
             const OptimizerHyper &h) {
  float eps = h.eps, wd = h.weightDecay;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (wd != 0)
      d += wd * p[i];
    sum[i] += d * d;
    p[i] -= lr * (d / (std::sqrt(sum[i]) + eps));
  }
}

void lamb(float *p, const float *g, float *m, float *v, int64_t n, float lr,
          int64_t step, const OptimizerHyper &h) {
  Decimals dec(h);
  float bc1 = (float)(1.0 - std::pow(dec.beta1, (double)step));
  float bc2 = (float)(1.0 - std::pow(dec.beta2, (double)step));
  float b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weightDecay;
  float c1 = (float)(1.0 - dec.beta1), c2 = (float)(1.0 - dec.beta2);
  auto update = [&](int64_t i) {
    return (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps) + wd * p[i];
  };
  double pNorm2 = 0, uNorm2 = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : pNorm2, uNorm2) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] * b1 + c1 * g[i];
    v[i] = v[i] * b2 + c2 * g[i] * g[i];
    float u = update(i);
    pNorm2 += (double)p[i] * p[i];
    uNorm2 += (double)u * u;
  }
  float trust = pNorm2 > 0 && uNorm2 > 0
                    ? (float)(std::sqrt(pNorm2) / std::sqrt(uNorm2))
                    : 1.0f;
  float scaled = lr * trust;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    p[i] -= scaled * update(i);
}

void lion(float *p, const float *g, float *m, int64_t n, float lr,
          const OptimizerHyper &h) {
  Decimals dec(h);
  float b1 = h.beta1, b2 = h.beta2, wd = h.weightDecay;
  float c1 = (float)(1.0 - dec.beta1), c2 = (float)(1.0 - dec.beta2);
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float c = b1 * m[i] + c1 * g[i];
    float sign = (float)(c > 0) - (float)(c < 0);
    p[i] -= lr * (sign + wd * p[i]);
    m[i] = b2 * m[i] + c2 * g[i];
  }
}

} // namespace

void optimizer_update(OptimizerKind kind, float *param, const float *grad,
                      float *const *state, int numState, int64_t n, float lr,
                      int64_t step, const OptimizerHyper &hyper) {
  switch (kind) {
  case OptimizerKind::SGD:
    sgd(param, grad, state, numState, n, lr, hyper);
    break;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
    adam(kind == OptimizerKind::AdamW, param, grad, state[0], state[1], n, lr,
         step, hyper);
    break;
  case OptimizerKind::RMSprop:
    rmsprop(param, grad, state, numState, n, lr, hyper);
    break;
  case OptimizerKind::Adagrad:
    adagrad(param, grad, state[0], n, lr, hyper);
    break;
  case OptimizerKind::LAMB:
    lamb(param, grad, state[0], state[1], n, lr, step, hyper);
    break;
  case OptimizerKind::Lion:
    lion(param, grad, state[0], n, lr, hyper);
    break;
  }
}

//===----------------------------------------------------------------------===//
// Learning-rate schedules
//===----------------------------------------------------------------------===//

float lr_schedule(const ScheduleParams &sp, int64_t step, float baseLr) {
  double base = baseLr;
  int64_t w = sp.warmupSteps;
  if (w > 0 && step < w)
    return (float)(base * (double)std::max<int64_t>(step, 0) / (double)w);
  // Fraction of the decay span [from, to] done at `step`, in [0, 1].
  auto progress = [&](int64_t from, int64_t to) {
    if (to <= from)
      return 1.0;
    return std::clamp((double)(step - from) / (double)(to - from), 0.0, 1.0);
  };
  // Steps after the warmup, counting from 0 (torch's last_epoch).
  int64_t it = std::max<int64_t>(step - w - 1, 0);
  switch (sp.kind) {
  case ScheduleKind::Constant:
    return baseLr;
  case ScheduleKind::Cosine: {
    double p = progress(w, sp.totalSteps);
    return (float)(sp.minLr +
                   (base - sp.minLr) * 0.5 * (1.0 + std::cos(kPi * p)));
  }
  case ScheduleKind::Linear:
    return (float)(base + (sp.minLr - base) * progress(w, sp.totalSteps));
  case ScheduleKind::Step:
    return (float)(base * std::pow(sp.gamma, (double)(it / std::max<int64_t>(
                                                            sp.stepSize, 1))));
  case ScheduleKind::Cyclic: {
    double half = (double)std::max<int64_t>(sp.stepSize, 1);
    double cycle = std::floor(1.0 + it / (2.0 * half));
    double x = std::fabs(it / half - 2.0 * cycle + 1.0);
    return (float)(base + (sp.maxLr - base) * std::max(0.0, 1.0 - x));
  }
  case ScheduleKind::WSD: {
    int64_t decayStart = sp.totalSteps - sp.decaySteps;
    if (step <= decayStart)
      return baseLr;
    return (float)(base + (sp.minLr - base) * progress(decayStart,
                                                       sp.totalSteps));
  }
  }
  return baseLr;
}

} // namespace tgc::cpu

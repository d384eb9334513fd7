//===- OptimizerTest.cpp - optimizer_update and lr_schedule --------*- C++ -*-===//
//
// Three steps of every optimizer against the PyTorch formulas evaluated in
// double, with the state slots in TgOptimizerOps.td order; the schedules at
// their key steps (warmup, boundaries, ends) against hand-computed values.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

/// Parameter and up to two state slots in double.
struct RefState {
  std::vector<double> p, s0, s1;
};

/// Hyperparameters as the user writes them (double, like torch's).
struct RefHyper {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0,
         momentum = 0, alpha = 0.99;
  bool nesterov = false;

  OptimizerHyper toFloat() const {
    return {(float)beta1,       (float)beta2,    (float)eps, (float)weightDecay,
            (float)momentum, (float)alpha, nesterov};
  }
};

double sign(double x) { return (x > 0) - (x < 0); }

/// One step of torch.optim.<kind> (LAMB: the paper with bias correction,
/// Lion: its paper) written out per element.
void referenceStep(OptimizerKind kind, RefState &st, const std::vector<float> &g,
                   double lr, int64_t step, const RefHyper &h) {
  size_t n = st.p.size();
  double b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weightDecay;
  double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  switch (kind) {
  case OptimizerKind::SGD:
    for (size_t i = 0; i < n; ++i) {
      double d = g[i] + wd * st.p[i];
      if (h.momentum > 0) {
        st.s0[i] = step == 1 ? d : h.momentum * st.s0[i] + d;
        d = h.nesterov ? d + h.momentum * st.s0[i] : st.s0[i];
      }
      st.p[i] -= lr * d;
    }
    break;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
    for (size_t i = 0; i < n; ++i) {
      double d = g[i];
      if (kind == OptimizerKind::AdamW)
        st.p[i] *= 1 - lr * wd;
      else
        d += wd * st.p[i];
      st.s0[i] = b1 * st.s0[i] + (1 - b1) * d;
      st.s1[i] = b2 * st.s1[i] + (1 - b2) * d * d;
      st.p[i] -= lr / bc1 * st.s0[i] / (std::sqrt(st.s1[i] / bc2) + eps);
    }
    break;
  case OptimizerKind::RMSprop:
    for (size_t i = 0; i < n; ++i) {
      double d = g[i] + wd * st.p[i];
      st.s0[i] = h.alpha * st.s0[i] + (1 - h.alpha) * d * d;
      double avg = std::sqrt(st.s0[i]) + eps;
      if (h.momentum > 0) {
        st.s1[i] = h.momentum * st.s1[i] + d / avg;
        st.p[i] -= lr * st.s1[i];
      } else {
        st.p[i] -= lr * d / avg;
      }
    }
    break;
  case OptimizerKind::Adagrad:
    for (size_t i = 0; i < n; ++i) {
      double d = g[i] + wd * st.p[i];
      st.s0[i] += d * d;
      st.p[i] -= lr * d / (std::sqrt(st.s0[i]) + eps);
    }
    break;
  case OptimizerKind::LAMB: {
    std::vector<double> u(n);
    double pn = 0, un = 0;
    for (size_t i = 0; i < n; ++i) {
      st.s0[i] = b1 * st.s0[i] + (1 - b1) * g[i];
      st.s1[i] = b2 * st.s1[i] + (1 - b2) * g[i] * g[i];
      u[i] = (st.s0[i] / bc1) / (std::sqrt(st.s1[i] / bc2) + eps) +
             wd * st.p[i];
      pn += st.p[i] * st.p[i];
      un += u[i] * u[i];
    }
    double trust = pn > 0 && un > 0 ? std::sqrt(pn) / std::sqrt(un) : 1.0;
    for (size_t i = 0; i < n; ++i)
      st.p[i] -= lr * trust * u[i];
    break;
  }
  case OptimizerKind::Lion:
    for (size_t i = 0; i < n; ++i) {
      double c = b1 * st.s0[i] + (1 - b1) * g[i];
      st.p[i] -= lr * (sign(c) + wd * st.p[i]);
      st.s0[i] = b2 * st.s0[i] + (1 - b2) * g[i];
    }
    break;
  }
}

void checkOptimizer(OptimizerKind kind, int numState, const RefHyper &h,
                    int64_t n = 37, float lr = 1e-2) {
  std::vector<float> p = randomVector(n, 1);
  std::vector<float> s0(n, 0.0), s1(n, 0.0);
  float *state[] = {s0.data(), s1.data()};
  RefState ref{std::vector<double>(p.begin(), p.end()),
               std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g = randomVector(n, 10 + (uint32_t)step, -0.5f, 0.5);
    optimizer_update(kind, p.data(), g.data(), state, numState, n, lr, step,
                     h.toFloat());
    referenceStep(kind, ref, g, lr, step, h);
    std::string tag = "kind " + std::to_string((int)kind) + " step " +
                      std::to_string(step);
    expectClose(p, ref.p, 1e-5, 1e-6, "param, " + tag);
    if (numState > 0)
      expectClose(s0, ref.s0, 1e-5, 1e-7, "state 0, " + tag);
    if (numState > 1)
      expectClose(s1, ref.s1, 1e-5, 1e-8, "state 1, " + tag);
  }
}

RefHyper hyper(double wd = 0, double momentum = 0, bool nesterov = false) {
  RefHyper h;
  h.weightDecay = wd;
  h.momentum = momentum;
  h.nesterov = nesterov;
  return h;
}

} // namespace

TEST(Optimizer, SGD) {
  checkOptimizer(OptimizerKind::SGD, 0, hyper());
  checkOptimizer(OptimizerKind::SGD, 0, hyper(0.1));
  checkOptimizer(OptimizerKind::SGD, 1, hyper(0.01, 0.9));
  checkOptimizer(OptimizerKind::SGD, 1, hyper(0.01, 0.9, true));
}

TEST(Optimizer, AdamAndAdamW) {
  checkOptimizer(OptimizerKind::Adam, 2, hyper());
  checkOptimizer(OptimizerKind::Adam, 2, hyper(0.1));
  checkOptimizer(OptimizerKind::AdamW, 2, hyper(0.1));
  checkOptimizer(OptimizerKind::AdamW, 2, hyper(0.1), 40000); // threaded
}

TEST(Optimizer, RMSprop) {
  RefHyper h = hyper(0.01);
  checkOptimizer(OptimizerKind::RMSprop, 1, h);
  h.momentum = 0.9;
  checkOptimizer(OptimizerKind::RMSprop, 2, h);
}

TEST(Optimizer, Adagrad) {
  RefHyper h = hyper(0.01);
  h.eps = 1e-10;
  checkOptimizer(OptimizerKind::Adagrad, 1, h);
}

TEST(Optimizer, LAMB) {
  checkOptimizer(OptimizerKind::LAMB, 2, hyper(0.01));
  checkOptimizer(OptimizerKind::LAMB, 2, hyper(0.0));
  checkOptimizer(OptimizerKind::LAMB, 2, hyper(0.01), 40000); // threaded norms
}

TEST(Optimizer, LAMBTrustRatioIsOneForZeroParam) {
  std::vector<float> p(4, 0.0), g{1, -1, 2, -2}, m(4, 0.0), v(4, 0.0);
  float *state[] = {m.data(), v.data()};
  optimizer_update(OptimizerKind::LAMB, p.data(), g.data(), state, 2, 4, 0.1f,
                   1, hyper(0.01).toFloat());
  // Bias-corrected first step: update = g / (|g| + eps) = sign(g).
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(p[i], -0.1f * (g[i] > 0 ? 1 : -1), 1e-6);
}

TEST(Optimizer, Lion) {
  RefHyper h = hyper(0.1);
  h.beta2 = 0.99;
  checkOptimizer(OptimizerKind::Lion, 1, h, 37, 1e-3);
}

//===----------------------------------------------------------------------===//
// lr_schedule
//===----------------------------------------------------------------------===//

namespace {

ScheduleParams schedule(ScheduleKind kind) {
  ScheduleParams p{};
  p.kind = kind;
  p.warmupSteps = 10;
  p.totalSteps = 110;
  p.stepSize = 20;
  p.decaySteps = 40;
  p.minLr = 0.1;
  p.gamma = 0.5;
  p.maxLr = 3.0;
  return p;
}

} // namespace

TEST(LrSchedule, LinearWarmupFromStepOne) {
  for (ScheduleKind kind :
       {ScheduleKind::Constant, ScheduleKind::Cosine, ScheduleKind::Linear,
        ScheduleKind::Step, ScheduleKind::Cyclic, ScheduleKind::WSD}) {
    ScheduleParams p = schedule(kind);
    EXPECT_FLOAT_EQ(lr_schedule(p, 1, 1.0), 0.1);
    EXPECT_FLOAT_EQ(lr_schedule(p, 5, 2.0), 1.0);
    EXPECT_FLOAT_EQ(lr_schedule(p, 10, 2.0), 2.0) << "warmup ends at base";
  }
}

TEST(LrSchedule, Constant) {
  ScheduleParams p = schedule(ScheduleKind::Constant);
  EXPECT_FLOAT_EQ(lr_schedule(p, 11, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 1000, 1.0), 1.0);
  p.warmupSteps = 0;
  EXPECT_FLOAT_EQ(lr_schedule(p, 1, 1.0), 1.0);
}

TEST(LrSchedule, Cosine) {
  ScheduleParams p = schedule(ScheduleKind::Cosine);
  EXPECT_FLOAT_EQ(lr_schedule(p, 60, 1.0), 0.55); // halfway: (1 + 0.1) / 2
  EXPECT_FLOAT_EQ(lr_schedule(p, 35, 1.0),
                  (float)(0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 0.25))));
  EXPECT_FLOAT_EQ(lr_schedule(p, 110, 1.0), 0.1);
  EXPECT_FLOAT_EQ(lr_schedule(p, 500, 1.0), 0.1);
}

TEST(LrSchedule, Linear) {
  ScheduleParams p = schedule(ScheduleKind::Linear);
  EXPECT_FLOAT_EQ(lr_schedule(p, 60, 1.0), 0.55);
  EXPECT_FLOAT_EQ(lr_schedule(p, 85, 1.0), 0.325);
  EXPECT_FLOAT_EQ(lr_schedule(p, 110, 1.0), 0.1);
}

TEST(LrSchedule, StepDecaysEveryStepSize) {
  ScheduleParams p = schedule(ScheduleKind::Step);
  EXPECT_FLOAT_EQ(lr_schedule(p, 11, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 30, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 31, 1.0), 0.5);
  EXPECT_FLOAT_EQ(lr_schedule(p, 51, 1.0), 0.25);
  p.warmupSteps = 0; // torch StepLR: step s uses gamma^floor((s-1)/size)
  EXPECT_FLOAT_EQ(lr_schedule(p, 1, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 20, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 21, 1.0), 0.5);
}

TEST(LrSchedule, CyclicTriangle) {
  ScheduleParams p = schedule(ScheduleKind::Cyclic);
  p.warmupSteps = 0;
  EXPECT_FLOAT_EQ(lr_schedule(p, 1, 1.0), 1.0);  // iteration 0
  EXPECT_FLOAT_EQ(lr_schedule(p, 11, 1.0), 2.0); // halfway up
  EXPECT_FLOAT_EQ(lr_schedule(p, 21, 1.0), 3.0); // peak at step_size
  EXPECT_FLOAT_EQ(lr_schedule(p, 31, 1.0), 2.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 41, 1.0), 1.0); // next cycle starts
  EXPECT_FLOAT_EQ(lr_schedule(p, 51, 1.0), 2.0);
}

TEST(LrSchedule, WarmupStableDecay) {
  ScheduleParams p = schedule(ScheduleKind::WSD);
  EXPECT_FLOAT_EQ(lr_schedule(p, 11, 1.0), 1.0);
  EXPECT_FLOAT_EQ(lr_schedule(p, 70, 1.0), 1.0); // decay starts after 70
  EXPECT_FLOAT_EQ(lr_schedule(p, 90, 1.0), 0.55);
  EXPECT_FLOAT_EQ(lr_schedule(p, 110, 1.0), 0.1);
  EXPECT_FLOAT_EQ(lr_schedule(p, 200, 1.0), 0.1);
}

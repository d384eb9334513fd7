//===- OptimizerTest.cpp - optimizer updates and LR schedules ------*- C++ -*-===//
//
// Three steps of every optimizer against tgc::cpu::optimizer_update on the
// same inputs, with lr, step and the gradient scale in device memory; the
// bf16-gradient and bf16-copy variants; lr_schedule at the key steps of
// every kind against tgc::cpu::lr_schedule.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

struct OptCase {
  OptimizerKind kind;
  int numState;
  OptimizerHyper hyper;
  int64_t n;
};

OptimizerHyper hyper(float wd = 0, float momentum = 0, bool nesterov = false) {
  return {0.9f, 0.999f, 1e-8f, wd, momentum, 0.99f, nesterov};
}

std::vector<OptCase> cases() {
  OptimizerHyper lion = hyper(0.1f);
  lion.beta2 = 0.99f;
  OptimizerHyper adagrad = hyper(0.01f);
  adagrad.eps = 1e-10f;
  return {
      {OptimizerKind::SGD, 0, hyper(), 37},
      {OptimizerKind::SGD, 0, hyper(0.1f), 37},
      {OptimizerKind::SGD, 1, hyper(0.01f, 0.9f), 37},
      {OptimizerKind::SGD, 1, hyper(0.01f, 0.9f, true), 37},
      {OptimizerKind::Adam, 2, hyper(), 37},
      {OptimizerKind::Adam, 2, hyper(0.1f), 37},
      {OptimizerKind::AdamW, 2, hyper(0.1f), 40000},
      {OptimizerKind::RMSprop, 1, hyper(0.01f), 37},
      {OptimizerKind::RMSprop, 2, hyper(0.01f, 0.9f), 37},
      {OptimizerKind::Adagrad, 1, adagrad, 37},
      {OptimizerKind::LAMB, 2, hyper(0.01f), 37},
      {OptimizerKind::LAMB, 2, hyper(0.0f), 300000}, // many blocks of norms
      {OptimizerKind::Lion, 1, lion, 37},
  };
}

/// Runs 3 steps on both sides; `gradScale` multiplies the gradient (on the
/// CPU side applied to the gradient first, as tg-optimizer does).
void checkOptimizer(const OptCase &c, float gradScale, bool bf16Grad) {
  const float lr = c.kind == OptimizerKind::Lion ? 1e-3f : 1e-2f;
  std::vector<float> p = randomVector(c.n, 1);
  std::vector<float> s0(c.n, 0.0f), s1(c.n, 0.0f);
  float *state[] = {s0.data(), s1.data()};
  DeviceBuffer<float> dp(p), ds0(c.n), ds1(c.n), dlr(std::vector<float>{lr}),
      dscale(std::vector<float>{gradScale});
  DeviceBuffer<int64_t> dstep(1);
  DeviceBuffer<bf16> copy(c.n);
  float *dstate[] = {ds0.get(), ds1.get()};
  Workspace ws(optimizer_workspace_bytes(c.kind, c.n));
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g =
        randomVector(c.n, 10 + (uint32_t)step, -0.5f, 0.5f);
    if (bf16Grad)
      g = roundToBf16(g);
    std::vector<float> scaled = g;
    for (float &x : scaled)
      x *= gradScale;
    tgc::cpu::optimizer_update((tgc::cpu::OptimizerKind)c.kind, p.data(),
                               scaled.data(), state, c.numState, c.n, lr, step,
                               {c.hyper.beta1, c.hyper.beta2, c.hyper.eps,
                                c.hyper.weightDecay, c.hyper.momentum,
                                c.hyper.alpha, c.hyper.nesterov});
    dstep.upload({step});
    const float *scalePtr = gradScale != 1.0f ? dscale.get() : nullptr;
    if (bf16Grad) {
      DeviceBuffer<bf16> dg(toBf16(g));
      optimizer_update(c.kind, dp.get(), dg.get(), dstate, c.numState, c.n,
                       dlr.get(), dstep.get(), scalePtr, c.hyper, copy.get(),
                       ws.get(), nullptr);
    } else {
      DeviceBuffer<float> dg(g);
      optimizer_update(c.kind, dp.get(), dg.get(), dstate, c.numState, c.n,
                       dlr.get(), dstep.get(), scalePtr, c.hyper, nullptr,
                       ws.get(), nullptr);
    }
    std::string tag = "kind " + std::to_string((int)c.kind) + " n " +
                      std::to_string(c.n) + " step " + std::to_string(step);
    expectClose(dp.toHost(), p, 1e-5, 1e-6, "param, " + tag);
    if (c.numState > 0)
      expectClose(ds0.toHost(), s0, 1e-5, 1e-7, "state 0, " + tag);
    if (c.numState > 1)
      expectClose(ds1.toHost(), s1, 1e-5, 1e-8, "state 1, " + tag);
    if (bf16Grad) {
      EXPECT_EQ(toFloat(copy.toHost()), roundToBf16(dp.toHost())) << tag;
    }
  }
}

TEST(CudaOptimizer, EveryKindMatchesCpuOverThreeSteps) {
  TGC_REQUIRE_GPU();
  for (const OptCase &c : cases())
    checkOptimizer(c, 1.0f, false);
}

TEST(CudaOptimizer, GradScaleBf16GradAndCopy) {
  TGC_REQUIRE_GPU();
  for (const OptCase &c : cases())
    checkOptimizer(c, 0.25f, true);
}

/// 100 lanes (three launches) of sizes 1 to 5000, half with a gradient
/// scale, in one call: each lane as optimizer_update gives it alone.
TEST(CudaOptimizer, LanesMatchOneUpdateEach) {
  TGC_REQUIRE_GPU();
  for (const OptCase &c : cases()) {
    const int count = c.kind == OptimizerKind::LAMB ? 5 : 100;
    DeviceBuffer<float> lr(std::vector<float>{1e-3f}),
        scale(std::vector<float>{0.5f});
    DeviceBuffer<int64_t> step(std::vector<int64_t>{2});
    std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers;
    auto device = [&](const std::vector<float> &v) {
      buffers.push_back(std::make_unique<DeviceBuffer<float>>(v));
      return buffers.back()->get();
    };
    std::vector<OptimizerLane> lanes;
    std::vector<std::array<float *, 4>> alone; // param, grad, state 0, 1
    int64_t most = 0;
    for (int i = 0; i < count; ++i) {
      int64_t n = 1 + (i * 997) % 5000;
      most = std::max(most, n);
      std::vector<float> p = randomVector(n, 100 + i),
                         g = randomVector(n, 200 + i, -0.5f, 0.5f),
                         s = randomVector(n, 300 + i, 0.0f, 0.1f);
      const float *gradScale = i % 2 ? scale.get() : nullptr;
      lanes.push_back(
          {device(p), device(g), {device(s), device(s)}, n, gradScale});
      alone.push_back({device(p), device(g), device(s), device(s)});
    }
    Workspace ws(optimizer_workspace_bytes(c.kind, most));
    optimizer_update_lanes(c.kind, lanes.data(), count, false, lr.get(),
                           step.get(), c.hyper, ws.get(), nullptr);
    for (int i = 0; i < count; ++i) {
      float *state[] = {alone[i][2], alone[i][3]};
      optimizer_update(c.kind, alone[i][0], alone[i][1], state, 2, lanes[i].n,
                       lr.get(), step.get(), lanes[i].gradScale, c.hyper,
                       nullptr, ws.get(), nullptr);
    }
    for (int i = 0; i < count; ++i) {
      auto host = [&](float *p) {
        std::vector<float> v(lanes[i].n);
        TGC_CUDA_CHECK(
            cudaMemcpy(v.data(), p, v.size() * 4, cudaMemcpyDeviceToHost));
        return v;
      };
      std::string tag =
          "kind " + std::to_string((int)c.kind) + " lane " + std::to_string(i);
      EXPECT_EQ(host(lanes[i].param), host(alone[i][0])) << tag;
      EXPECT_EQ(host(lanes[i].state[0]), host(alone[i][2])) << tag;
    }
  }
}

/// A lane without the state its update needs is an error, for LAMB too
/// (whose lane-by-lane path once handed the kernel a null moment); an empty
/// lane needs no state and is skipped, as optimizer_update skips n = 0.
TEST(CudaOptimizer, LaneStateChecks) {
  TGC_REQUIRE_GPU();
  DeviceBuffer<float> p(4), g(4), m(4), lr(std::vector<float>{0.1f});
  DeviceBuffer<int64_t> step(std::vector<int64_t>{1});
  Workspace ws(optimizer_workspace_bytes(OptimizerKind::LAMB, 4));
  for (OptimizerKind kind : {OptimizerKind::LAMB, OptimizerKind::AdamW}) {
    OptimizerLane missing{p.get(), g.get(), {m.get(), nullptr}, 4, nullptr};
    try {
      optimizer_update_lanes(kind, &missing, 1, false, lr.get(), step.get(),
                             hyper(0.01f), ws.get(), nullptr);
      ADD_FAILURE() << "a lane without its second moment was accepted";
    } catch (const tgc::Error &e) {
      EXPECT_NE(std::string(e.what()).find("lane 0 lacks a state slot"),
                std::string::npos)
          << e.what();
    }
    OptimizerLane empty{p.get(), g.get(), {nullptr, nullptr}, 0, nullptr};
    EXPECT_NO_THROW(optimizer_update_lanes(kind, &empty, 1, false, lr.get(),
                                           step.get(), hyper(0.01f), ws.get(),
                                           nullptr));
  }
  TGC_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(CudaOptimizer, LambTrustRatioIsOneForZeroParam) {
  TGC_REQUIRE_GPU();
  std::vector<float> g{1, -1, 2, -2};
  DeviceBuffer<float> p(4), m(4), v(4), dg(g), lr(std::vector<float>{0.1f});
  DeviceBuffer<int64_t> step(std::vector<int64_t>{1});
  float *state[] = {m.get(), v.get()};
  Workspace ws(optimizer_workspace_bytes(OptimizerKind::LAMB, 4));
  optimizer_update(OptimizerKind::LAMB, p.get(), dg.get(), state, 2, 4,
                   lr.get(), step.get(), nullptr, hyper(0.01f), nullptr,
                   ws.get(), nullptr);
  std::vector<float> got = p.toHost();
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], -0.1f * (g[i] > 0 ? 1 : -1), 1e-6);
}

TEST(CudaLrSchedule, MatchesCpu) {
  TGC_REQUIRE_GPU();
  DeviceBuffer<int64_t> step(1);
  DeviceBuffer<float> base(std::vector<float>{2.0f}), lr(1);
  for (ScheduleKind kind :
       {ScheduleKind::Constant, ScheduleKind::Cosine, ScheduleKind::Linear,
        ScheduleKind::Step, ScheduleKind::Cyclic, ScheduleKind::WSD}) {
    for (int64_t warmup : {0, 10}) {
      ScheduleParams p{kind, warmup, 110, 20, 40, 0.1, 0.5, 3.0};
      tgc::cpu::ScheduleParams cp{(tgc::cpu::ScheduleKind)kind, warmup, 110,
                                  20, 40, 0.1, 0.5, 3.0};
      for (int64_t s : {1, 5, 10, 11, 20, 21, 30, 31, 35, 41, 51, 60, 70, 85,
                        90, 109, 110, 111, 500}) {
        step.upload({s});
        lr_schedule(p, step.get(), base.get(), lr.get(), nullptr);
        float want = tgc::cpu::lr_schedule(cp, s, 2.0f);
        EXPECT_FLOAT_EQ(lr.toHost()[0], want)
            << "kind " << (int)kind << " warmup " << warmup << " step " << s;
      }
    }
  }
}

} // namespace

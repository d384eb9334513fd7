//===- StepProgramTest.cpp - Running a generated step --------------*- C++ -*-===//
//
// StepProgram.h with a hand-written program in the shape tgc generates: the
// device state laid out as its ProgramDesc says, the step's scalars reaching
// the device and its metrics the host, eagerly and as a replayed CUDA graph,
// and gradients stored and accumulated over micro-batches. Every test needs
// a GPU (the host emulation of test/Codegen/cuda runs this file's subject on
// the host with generated programs).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/StepProgram.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace tgc;
using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

//===----------------------------------------------------------------------===//
// A program of one step
//===----------------------------------------------------------------------===//

constexpr float kConstant = 0.25f;

int64_t workspaceBytes() { return 1000; }

void uploadConstants(char *constants) {
  TGC_CUDA_CHECK(
      cudaMemcpy(constants, &kConstant, sizeof(float), cudaMemcpyHostToDevice));
}

const ProgramDesc kProgram = {
    /*constantBytes=*/4, /*plannedBytes=*/512,
    /*numBuckets=*/2,
    /*numParams=*/0,     /*numState=*/0,
    /*numInputs=*/0,     /*numOutputs=*/0,
    /*numGrads=*/0,      workspaceBytes,
    uploadConstants,
};

/// As a generated step: the scalars to the device first, the metrics to the
/// host last, read from device memory: loss = baseLr (through the
/// intermediates), gradNorm = the constant, lr = microBatches' bits.
void launches(StepIO &, Device &d, const OpTimes &t) {
  cudaStream_t stream = d.compute;
  t.begin(0, stream);
  TGC_CUDA_CHECK(cudaMemcpyAsync(d.scalars, &d.host->scalars, sizeof(Scalars),
                                 cudaMemcpyHostToDevice, stream));
  t.end(0, stream);
  char *work = d.work;
  TGC_CUDA_CHECK(cudaMemcpyAsync(work, &d.scalars->baseLr, sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream));
  TGC_CUDA_CHECK(cudaMemcpyAsync(&d.host->metrics.loss, work, sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
  TGC_CUDA_CHECK(cudaMemcpyAsync(&d.host->metrics.gradNorm, d.constants,
                                 sizeof(float), cudaMemcpyDeviceToHost,
                                 stream));
  TGC_CUDA_CHECK(cudaMemcpyAsync(&d.host->metrics.lr,
                                 &d.scalars->microBatches, sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
}

const char *const kLabels[] = {"scalars"};
const bool kOnComm[] = {false};

StepIO stepIO(float baseLr, int32_t microBatches, int32_t captureGraph) {
  StepIO io{};
  io.step = 1;
  io.baseLr = baseLr;
  io.microBatches = microBatches;
  io.captureGraph = captureGraph;
  return io;
}

/// What launches() put in io.lr: microBatches' bits.
int32_t microBatchesOf(const StepIO &io) {
  int32_t bits;
  static_assert(sizeof(bits) == sizeof(io.lr));
  std::memcpy(&bits, &io.lr, sizeof(bits));
  return bits;
}

TEST(CudaStepProgram, DeviceFollowsTheProgramDesc) {
  TGC_REQUIRE_GPU();
  Device &d = device(kProgram);
  EXPECT_EQ(&device(kProgram), &d);
  EXPECT_EQ(reinterpret_cast<char *>(d.scalars), d.arena);
  EXPECT_EQ(d.constants, d.arena + 256);
  EXPECT_EQ(d.work, d.arena + 512);
  EXPECT_EQ(d.workspace, d.arena + 1024);
  EXPECT_EQ(d.arenaMemory->size(), 1024 + 1024); // workspace rounded to 256
  EXPECT_EQ(d.bucketReady.size(), 2u);
  EXPECT_EQ(d.bucketDone.size(), 2u);
  EXPECT_EQ(d.compute, Context::get().computeStream());
  EXPECT_EQ(d.comm, Context::get().commStream());
  float constant = 0;
  TGC_CUDA_CHECK(cudaMemcpy(&constant, d.constants, sizeof(float),
                            cudaMemcpyDeviceToHost));
  EXPECT_EQ(constant, kConstant);
}

TEST(CudaStepProgram, ScalarsInMetricsOut) {
  TGC_REQUIRE_GPU();
  StepProgram train{"train_step", &kProgram, launches, 1, kLabels, kOnComm,
                    /*trainMetrics=*/true};
  StepProgram eval{"eval_step", &kProgram, launches, 1, kLabels, kOnComm,
                   /*trainMetrics=*/false};
  for (int call = 0; call < 2; ++call) {
    StepIO io = stepIO(0.5f + call, 3 + call, /*captureGraph=*/0);
    runStep(train, io);
    EXPECT_EQ(io.loss, 0.5f + call);
    EXPECT_EQ(io.gradNorm, kConstant);
    EXPECT_EQ(microBatchesOf(io), 3 + call);
  }
  StepIO io = stepIO(2.0f, 1, 0);
  io.gradNorm = -1;
  runStep(eval, io);
  EXPECT_EQ(io.loss, 2.0f);
  EXPECT_EQ(io.gradNorm, -1.0f); // not a train step's metric
}

// The first call runs eagerly, the second captures, the rest replay: each
// reads its own call's scalars from pinned memory.
TEST(CudaStepProgram, GraphReplaysReadThisStepsScalars) {
  TGC_REQUIRE_GPU();
  StepProgram train{"train_step", &kProgram, launches, 1, kLabels, kOnComm,
                    /*trainMetrics=*/true};
  for (int call = 0; call < 5; ++call) {
    StepIO io = stepIO(1.0f + call, 10 + call, /*captureGraph=*/1);
    runStep(train, io);
    EXPECT_EQ(io.loss, 1.0f + call) << "call " << call;
    EXPECT_EQ(microBatchesOf(io), 10 + call) << "call " << call;
  }
  ASSERT_EQ(train.graphs.size(), 1u);
  EXPECT_NE(train.graphs[0].exec, nullptr);
}

// A pipeline's chunk function is called with each micro-batch's slot
// buffers in turn: one graph per set, each replayed with its own.
TEST(CudaStepProgram, AGraphPerSetOfSlotBuffers) {
  TGC_REQUIRE_GPU();
  ProgramDesc program = kProgram;
  program.numSlots = 1;
  StepProgram chunk{
      "chunk0_forward",      &program, launches, 1, kLabels, kOnComm,
      /*trainMetrics=*/false};
  int first = 0, second = 0;
  void *slotsA[] = {&first}, *slotsB[] = {&second};
  for (int call = 0; call < 6; ++call) {
    StepIO io = stepIO(1.0f + call, 2, /*captureGraph=*/1);
    io.slots = call % 2 ? slotsB : slotsA;
    runStep(chunk, io);
    EXPECT_EQ(io.loss, 1.0f + call) << "call " << call;
  }
  ASSERT_EQ(chunk.graphs.size(), 2u);
  EXPECT_NE(chunk.graphs[0].exec, nullptr);
  EXPECT_NE(chunk.graphs[1].exec, nullptr);
}

//===----------------------------------------------------------------------===//
// storeOrAddGrad
//===----------------------------------------------------------------------===//

TEST(CudaStepProgram, StoreOrAddGradAccumulatesMicroBatches) {
  TGC_REQUIRE_GPU();
  const int64_t n = 100000; // more than one grid's worth of blocks
  std::vector<float> g0 = randomVector(n, 1), g1 = randomVector(n, 2);
  DeviceBuffer<float> dst(std::vector<float>(n, 7.0f)), d0(g0), d1(g1);
  DeviceBuffer<int32_t> microBatch(std::vector<int32_t>{0});
  cudaStream_t stream = Context::get().computeStream();
  storeOrAddGrad(dst.get(), d0.get(), n, microBatch.get(), stream);
  EXPECT_EQ(dst.toHost(), g0); // stored, whatever was there
  microBatch.upload({1});
  storeOrAddGrad(dst.get(), d1.get(), n, microBatch.get(), stream);
  std::vector<float> sum = dst.toHost();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(sum[i], g0[i] + g1[i]) << "at " << i;
}

TEST(CudaStepProgram, StoreOrAddGradReadsBf16) {
  TGC_REQUIRE_GPU();
  const int64_t n = 1000;
  std::vector<bf16> g = toBf16(randomVector(n, 3));
  std::vector<float> wide = toFloat(g);
  DeviceBuffer<float> dst(n);
  DeviceBuffer<bf16> dg(g);
  DeviceBuffer<int32_t> microBatch(std::vector<int32_t>{0});
  cudaStream_t stream = Context::get().computeStream();
  storeOrAddGrad(dst.get(), dg.get(), n, microBatch.get(), stream);
  EXPECT_EQ(dst.toHost(), wide);
  microBatch.upload({2});
  storeOrAddGrad(dst.get(), dg.get(), n, microBatch.get(), stream);
  std::vector<float> twice = dst.toHost();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(twice[i], 2 * wide[i]) << "at " << i;
}

} // namespace

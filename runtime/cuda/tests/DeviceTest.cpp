//===- DeviceTest.cpp - DeviceOps, the context and the arena -------*- C++ -*-===//
//
// The parts that need no GPU (the peak table, the messages, select() on a
// machine without one) run everywhere; the rest needs a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Device.h"
#include "runtime/cuda/tests/GpuTest.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

using namespace tgc;
using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

TEST(CudaDevice, PeakFlopsByName) {
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H100 80GB HBM3", Precision::BF16),
                   989.4e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H100 80GB HBM3", Precision::TF32),
                   494.7e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H100 80GB HBM3", Precision::FP32),
                   66.9e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H200", Precision::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H100 PCIe", Precision::BF16),
                   756.0e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA H100 NVL", Precision::FP32), 60.0e12);
  EXPECT_DOUBLE_EQ(peakFlopsFor("NVIDIA A100-SXM4-80GB", Precision::BF16),
                   312.0e12);
  EXPECT_EQ(peakFlopsFor("NVIDIA GeForce RTX 4090", Precision::BF16), 0.0);
}

TEST(CudaDevice, Descriptions) {
  EXPECT_EQ(describeDevice("NVIDIA H100 80GB HBM3", 84934656000ull),
            "NVIDIA H100 80GB HBM3, 79.1 GiB");
  EXPECT_EQ(formatBytes(2.0 * (1ull << 30)), "2.00 GiB");
  EXPECT_EQ(formatBytes(512.0 * (1ull << 20)), "512.0 MiB");
  EXPECT_EQ(formatBytes(64), "64 B");
}

TEST(CudaDevice, SelectWithoutGpuSaysSo) {
  if (noGpuReason().empty())
    GTEST_SKIP() << "a GPU is present; SelectAndAlloc covers this machine";
  try {
    deviceOps()->select(0);
    FAIL() << "select(0) succeeded without a GPU";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device found"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaDevice, SelectAndAlloc) {
  TGC_REQUIRE_GPU();
  const DeviceOps *ops = deviceOps();
  EXPECT_STREQ(ops->kind, "cuda");
  std::string description = ops->select(0);
  EXPECT_NE(description.find("GiB"), std::string::npos) << description;

  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  try {
    ops->select(count);
    FAIL() << "select(" << count << ") succeeded";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "device " + std::to_string(count) +
                                         " requested, " +
                                         std::to_string(count) + " visible");
  }

  // Zero-filled, and the copies round-trip.
  std::vector<float> host(1000, 1.0f);
  void *p = ops->alloc(host.size() * sizeof(float));
  ops->download(host.data(), p, host.size() * sizeof(float));
  for (float v : host)
    ASSERT_EQ(v, 0.0f);
  std::vector<float> values = randomVector(1000, 1);
  ops->upload(p, values.data(), values.size() * sizeof(float));
  ops->download(host.data(), p, host.size() * sizeof(float));
  EXPECT_EQ(host, values);
  ops->release(p);
  ops->synchronize();

  try {
    ops->alloc(int64_t(1) << 52); // 4 PiB
    FAIL() << "a 4 PiB allocation succeeded";
  } catch (const Error &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cuda out of memory: asked for 4194304.00 GiB"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("free of"), std::string::npos) << what;
  }
}

TEST(CudaDevice, ContextAndArena) {
  TGC_REQUIRE_GPU();
  deviceOps()->select(0);
  Context &ctx = Context::get();
  EXPECT_EQ(&ctx, &Context::get());
  EXPECT_NE(ctx.computeStream(), ctx.commStream());
  EXPECT_NE(ctx.gemmWorkspace(), nullptr);
  EXPECT_GT(ctx.multiprocessors(), 0);

  DeviceArena arena(1 << 20);
  EXPECT_EQ(arena.size(), 1 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.base()) % DeviceArena::kAlignment,
            0u);
  float *f = arena.at<float>(4096);
  EXPECT_EQ(reinterpret_cast<char *>(f), arena.base() + 4096);
  DeviceArena moved(std::move(arena));
  EXPECT_EQ(arena.base(), nullptr);
  EXPECT_EQ(moved.size(), 1 << 20);
}

} // namespace

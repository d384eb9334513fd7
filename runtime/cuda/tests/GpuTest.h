//===- GpuTest.h - Shared helpers of the CUDA kernel tests ---------*- C++ -*-===//
//
// Every test compares a tgc::cuda launcher with the tgc::cpu kernel of the
// same op on the same (seeded, random) inputs. Tests that need a GPU start
// with TGC_REQUIRE_GPU(), which skips them, visibly, where there is none.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_TESTS_GPUTEST_H
#define TGC_RUNTIME_CUDA_TESTS_GPUTEST_H

#include "runtime/cuda/Kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::cuda::test {

/// Why the tests cannot use a GPU ("" when they can).
const std::string &noGpuReason();

#define TGC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::tgc::cuda::test::noGpuReason().empty())                             \
      GTEST_SKIP() << "needs a CUDA GPU: "                                     \
                   << ::tgc::cuda::test::noGpuReason();                        \
  } while (0)

/// A zero-filled device array of T, freed on destruction.
template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t count);
  explicit DeviceBuffer(const std::vector<T> &host);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  T *get() const { return data; }
  size_t size() const { return count; }
  /// Waits for the device and copies back.
  std::vector<T> toHost() const;
  void upload(const std::vector<T> &host);

private:
  T *data = nullptr;
  size_t count = 0;
};

/// Scratch memory for launchers that take a workspace.
using Workspace = DeviceBuffer<char>;

/// Uniform floats in [lo, hi) from a fixed seed.
std::vector<float> randomVector(int64_t n, uint32_t seed, float lo = -1.0f,
                                float hi = 1.0f);
/// Uniform integers in [lo, hi).
std::vector<int64_t> randomIndices(int64_t n, uint32_t seed, int64_t lo,
                                   int64_t hi);
std::vector<int32_t> toInt32(const std::vector<int64_t> &v);

std::vector<bf16> toBf16(const std::vector<float> &v);
std::vector<float> toFloat(const std::vector<bf16> &v);
/// The floats a bf16 buffer of `v` holds: inputs of bf16 tests, so that the
/// CPU reference sees exactly what the GPU sees.
std::vector<float> roundToBf16(const std::vector<float> &v);

/// Expects |got - want| <= atol + rtol * |want| elementwise (NaN matches
/// NaN, an infinity itself).
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double rtol, double atol, const std::string &what);

/// The largest |v|, for tolerances relative to a tensor's scale.
double maxAbs(const std::vector<float> &v);

} // namespace tgc::cuda::test

#endif // TGC_RUNTIME_CUDA_TESTS_GPUTEST_H

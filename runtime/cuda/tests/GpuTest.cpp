//===- GpuTest.cpp - Shared helpers of the CUDA kernel tests -------*- C++ -*-===//

#include "runtime/cuda/tests/GpuTest.h"

#include "runtime/cuda/Check.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tgc::cuda::test {

const std::string &noGpuReason() {
  static const std::string reason = [] {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    }
    return count == 0 ? std::string("no CUDA device visible") : std::string();
  }();
  return reason;
}

template <typename T> DeviceBuffer<T>::DeviceBuffer(size_t count) : count(count) {
  if (count == 0)
    return;
  TGC_CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void **>(&data), count * sizeof(T)));
  TGC_CUDA_CHECK(cudaMemset(data, 0, count * sizeof(T)));
}

template <typename T>
DeviceBuffer<T>::DeviceBuffer(const std::vector<T> &host)
    : DeviceBuffer(host.size()) {
  upload(host);
}

template <typename T> DeviceBuffer<T>::~DeviceBuffer() {
  if (data)
    (void)cudaFree(data);
}

template <typename T> std::vector<T> DeviceBuffer<T>::toHost() const {
  std::vector<T> host(count);
  TGC_CUDA_CHECK(cudaDeviceSynchronize());
  if (count)
    TGC_CUDA_CHECK(cudaMemcpy(host.data(), data, count * sizeof(T),
                              cudaMemcpyDeviceToHost));
  return host;
}

template <typename T> void DeviceBuffer<T>::upload(const std::vector<T> &host) {
  ASSERT_EQ(host.size(), count);
  if (count)
    TGC_CUDA_CHECK(cudaMemcpy(data, host.data(), count * sizeof(T),
                              cudaMemcpyHostToDevice));
}

template class DeviceBuffer<float>;
template class DeviceBuffer<bf16>;
template class DeviceBuffer<int32_t>;
template class DeviceBuffer<int64_t>;
template class DeviceBuffer<uint8_t>;
template class DeviceBuffer<char>;

std::vector<float> randomVector(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

std::vector<int64_t> randomIndices(int64_t n, uint32_t seed, int64_t lo,
                                   int64_t hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  std::vector<int64_t> v(n);
  for (int64_t &x : v)
    x = dist(gen);
  return v;
}

std::vector<int32_t> toInt32(const std::vector<int64_t> &v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

std::vector<bf16> toBf16(const std::vector<float> &v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = __float2bfloat16_rn(v[i]);
  return out;
}

std::vector<float> toFloat(const std::vector<bf16> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = __bfloat162float(v[i]);
  return out;
}

std::vector<float> roundToBf16(const std::vector<float> &v) {
  return toFloat(toBf16(v));
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double rtol, double atol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i]))
      continue;
    if (std::isinf(want[i]) && got[i] == want[i])
      continue;
    double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs((double)got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want "
                    << want[i] << " (tolerance " << tol << ")";
      if (++failures >= 10)
        return;
    }
  }
}

double maxAbs(const std::vector<float> &v) {
  double m = 0;
  for (float x : v)
    m = std::max(m, (double)std::fabs(x));
  return m;
}

} // namespace tgc::cuda::test

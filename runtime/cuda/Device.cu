//===- Device.cu - DeviceOps, the CUDA context and the arena -------*- C++ -*-===//
//
// The host side of the CUDA runtime: choosing the GPU, memory and copies for
// the training loop, the one-time context (streams, cuBLASLt, workspace), and
// the error reporting every other file uses through Check.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Device.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/Check.h"

#include <cstdio>
#include <cstring>
#include <utility>

namespace tgc::cuda {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {

/// The path from "runtime/" on, so that messages do not carry the build
/// machine's checkout location.
const char *repoRelative(const char *file) {
  const char *at = std::strstr(file, "runtime/");
  return at ? at : file;
}

std::string location(const char *file, int line) {
  return std::string(repoRelative(file)) + ":" + std::to_string(line);
}

} // namespace

void throwCudaError(cudaError_t error, const char *call, const char *file,
                    int line) {
  throw Error(std::string(call) + " failed: " + cudaGetErrorString(error) +
              " (" + location(file, line) + ")");
}

void throwCublasError(cublasStatus_t status, const char *call,
                      const char *file, int line) {
  throw Error(std::string(call) + " failed: " + cublasGetStatusString(status) +
              " (" + location(file, line) + ")");
}

//===----------------------------------------------------------------------===//
// Device description and peak throughput
//===----------------------------------------------------------------------===//

std::string formatBytes(double bytes) {
  char buf[64];
  if (bytes >= (double)(1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / (double)(1ull << 30));
  else if (bytes >= (double)(1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / (double)(1ull << 20));
  else if (bytes >= 1024.0)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  return buf;
}

std::string describeDevice(const std::string &deviceName,
                           std::size_t totalBytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB",
                (double)totalBytes / (double)(1ull << 30));
  return deviceName + ", " + buf;
}

double peakFlopsFor(const std::string &deviceName, Precision precision) {
  // Dense figures from NVIDIA's datasheets (the sparse ones are twice these),
  // in TFLOP/s: {fp32, tf32, bf16}.
  struct Peak {
    double fp32, tf32, bf16;
  };
  auto has = [&](const char *part) {
    return deviceName.find(part) != std::string::npos;
  };
  Peak peak{0, 0, 0};
  if (has("H100") || has("H200") || has("GH200")) {
    if (has("PCIe"))
      peak = {51.2, 378.0, 756.0};
    else if (has("NVL"))
      peak = {60.0, 417.5, 835.5};
    else // SXM5, GH200: the H100 SXM figures (H200 differs only in memory).
      peak = {66.9, 494.7, 989.4};
  } else if (has("A100")) {
    peak = {19.5, 156.0, 312.0};
  }
  double tflops = precision == Precision::BF16   ? peak.bf16
                  : precision == Precision::TF32 ? peak.tf32
                                                 : peak.fp32;
  return tflops * 1e12;
}

//===----------------------------------------------------------------------===//
// DeviceOps
//===----------------------------------------------------------------------===//

namespace {

const char *selectDevice(int ordinal) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    // The failed query leaves an error behind; clear it.
    (void)cudaGetLastError();
    throw Error(std::string("no CUDA device found") +
                (err != cudaSuccess
                     ? std::string(" (cudaGetDeviceCount: ") +
                           cudaGetErrorString(err) + ")"
                     : std::string()));
  }
  if (ordinal < 0 || ordinal >= count)
    throw Error("device " + std::to_string(ordinal) + " requested, " +
                std::to_string(count) + " visible");
  TGC_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp props;
  TGC_CUDA_CHECK(cudaGetDeviceProperties(&props, ordinal));
  static std::string description;
  description = describeDevice(props.name, props.totalGlobalMem);
  return description.c_str();
}

void *allocZeroed(int64_t bytes) {
  if (bytes <= 0)
    return nullptr;
  void *p = nullptr;
  cudaError_t err = cudaMalloc(&p, (size_t)bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    TGC_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    throw Error("cuda out of memory: asked for " + formatBytes((double)bytes) +
                ", " + formatBytes((double)freeBytes) + " free of " +
                formatBytes((double)totalBytes));
  }
  TGC_CUDA_CHECK(err);
  TGC_CUDA_CHECK(cudaMemset(p, 0, (size_t)bytes));
  return p;
}

void release(void *p) {
  if (p)
    TGC_CUDA_CHECK(cudaFree(p));
}

void upload(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    TGC_CUDA_CHECK(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyHostToDevice));
}

void download(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    TGC_CUDA_CHECK(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyDeviceToHost));
}

void synchronize() { TGC_CUDA_CHECK(cudaDeviceSynchronize()); }

template <Precision P> double peakOfCurrentDevice() {
  int device = 0;
  cudaDeviceProp props;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&props, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0.0;
  }
  return peakFlopsFor(props.name, P);
}

template <Precision P> const DeviceOps *opsFor() {
  static const DeviceOps ops{"cuda",   selectDevice, allocZeroed,
                             release,  upload,       download,
                             synchronize, peakOfCurrentDevice<P>};
  return &ops;
}

} // namespace

const DeviceOps *deviceOps(Precision precision) {
  switch (precision) {
  case Precision::BF16:
    return opsFor<Precision::BF16>();
  case Precision::TF32:
    return opsFor<Precision::TF32>();
  case Precision::FP32:
    break;
  }
  return opsFor<Precision::FP32>();
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

Context &Context::get() {
  // Never deleted: see Device.h.
  static Context *context = new Context();
  return *context;
}

Context::Context() {
  TGC_CUDA_CHECK(cudaGetDevice(&ordinal));
  TGC_CUDA_CHECK(cudaGetDeviceProperties(&props, ordinal));
  TGC_CUDA_CHECK(cudaStreamCreate(&compute));
  TGC_CUDA_CHECK(cudaStreamCreate(&comm));
  TGC_CUBLAS_CHECK(cublasLtCreate(&lt));
  workspace = allocZeroed((int64_t)kGemmWorkspaceBytes);
  plans = newMatmulPlanCache();
}

//===----------------------------------------------------------------------===//
// DeviceArena
//===----------------------------------------------------------------------===//

DeviceArena::DeviceArena(int64_t size)
    : data(static_cast<char *>(allocZeroed(size))), bytes(size) {}

DeviceArena::~DeviceArena() {
  // No throwing from a destructor; a failing cudaFree here means the context
  // is already gone, and the memory with it.
  if (data)
    (void)cudaFree(data);
}

DeviceArena::DeviceArena(DeviceArena &&other) noexcept
    : data(std::exchange(other.data, nullptr)),
      bytes(std::exchange(other.bytes, 0)) {}

DeviceArena &DeviceArena::operator=(DeviceArena &&other) noexcept {
  if (this != &other) {
    if (data)
      (void)cudaFree(data);
    data = std::exchange(other.data, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

} // namespace tgc::cuda

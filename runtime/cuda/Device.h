//===- Device.h - The CUDA device: DeviceOps, context, arena -------*- C++ -*-===//
//
// What a generated .cu file needs around its kernels:
//  - deviceOps(): runtime/core/Model.h's DeviceOps for the training loop
//    (select a GPU, allocate, copy, synchronize, peak FLOP/s for MFU);
//  - Context: the per-process CUDA state created once after select: a
//    compute stream, a communication stream, the cuBLASLt handle and its GEMM
//    workspace, and the device's properties;
//  - DeviceArena: the one cudaMalloc that holds every buffer of the step,
//    at offsets planned by the compiler.
//
// One process drives one GPU (the one select() chose). The Context is created
// on the current device at its first use and lives until the process exits:
// it is never destroyed, because the CUDA runtime may already be torn down
// when static destructors run.
//
// Plain C++17 plus the CUDA runtime API: nothing here needs nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_DEVICE_H
#define TGC_RUNTIME_CUDA_DEVICE_H

#include "runtime/core/Model.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tgc::cuda {

//===----------------------------------------------------------------------===//
// DeviceOps
//===----------------------------------------------------------------------===//

/// The arithmetic the step's FLOPs run in, for DeviceOps::peakFlops.
enum class Precision { BF16, TF32, FP32 };

/// DeviceOps for CUDA. `precision` picks the peak that peakFlops() reports
/// (bf16 for a bf16 model, tf32 for fp32 GEMMs with TF32 allowed, fp32
/// otherwise). The returned object is static.
///  - select(ordinal): cudaSetDevice; throws tgc::Error "no CUDA device found
///    (...)" or "device 3 requested, 2 visible"; returns "NVIDIA H100 80GB
///    HBM3, 79.1 GiB".
///  - alloc(bytes): cudaMalloc, zero-filled; out of memory throws "cuda out of
///    memory: asked for 2.00 GiB, 1.25 GiB free of 79.10 GiB". 0 bytes gives
///    nullptr.
///  - upload/download: synchronous cudaMemcpy (after all work queued on the
///    Context's streams, which synchronize with the legacy default stream).
///  - synchronize: cudaDeviceSynchronize.
const DeviceOps *deviceOps(Precision precision = Precision::BF16);

/// Dense (no sparsity) peak FLOP/s of the GPU named `deviceName` (as in
/// cudaDeviceProp::name) for `precision`; 0 for GPUs the table does not know.
/// Known: H100 SXM/PCIe/NVL, H200 SXM/NVL, GH200, A100.
double peakFlopsFor(const std::string &deviceName, Precision precision);

/// "NVIDIA H100 80GB HBM3, 79.1 GiB".
std::string describeDevice(const std::string &deviceName,
                           std::size_t totalBytes);

/// "2.00 GiB", "512.0 MiB", "64 B": sizes in error messages.
std::string formatBytes(double bytes);

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

/// cuBLASLt plans by GEMM shape; defined in Matmul.cu.
class MatmulPlanCache;
MatmulPlanCache *newMatmulPlanCache();

class Context {
public:
  /// The context of the current device, created at the first call.
  static Context &get();

  /// Where the step's kernels run. Both streams are blocking streams (they
  /// synchronize with the legacy default stream), so DeviceOps' synchronous
  /// copies see every kernel queued before them.
  cudaStream_t computeStream() const { return compute; }
  /// Where collectives run, so that they can overlap compute.
  cudaStream_t commStream() const { return comm; }

  cublasLtHandle_t cublasLt() const { return lt; }
  /// The GEMM workspace (kGemmWorkspaceBytes). It is shared by every GEMM:
  /// GEMMs must not run concurrently on two streams.
  void *gemmWorkspace() const { return workspace; }
  static constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;

  int device() const { return ordinal; }
  const cudaDeviceProp &properties() const { return props; }
  int multiprocessors() const { return props.multiProcessorCount; }

  /// cuBLASLt descriptors and algorithms by GEMM shape (Matmul.cu).
  MatmulPlanCache &matmulPlans() { return *plans; }

  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

private:
  Context();

  int ordinal = 0;
  cudaDeviceProp props{};
  cudaStream_t compute = nullptr, comm = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  MatmulPlanCache *plans = nullptr;
};

//===----------------------------------------------------------------------===//
// DeviceArena
//===----------------------------------------------------------------------===//

/// One zero-filled device allocation carved up at compiler-planned offsets.
/// Offsets should be multiples of kAlignment: cuBLASLt picks its fastest
/// kernels for 256-byte aligned operands, and the vectorized kernels need 16.
class DeviceArena {
public:
  static constexpr int64_t kAlignment = 256;

  DeviceArena() = default;
  /// Allocates `bytes` through deviceOps()->alloc (same errors).
  explicit DeviceArena(int64_t bytes);
  ~DeviceArena();
  DeviceArena(DeviceArena &&other) noexcept;
  DeviceArena &operator=(DeviceArena &&other) noexcept;
  DeviceArena(const DeviceArena &) = delete;
  DeviceArena &operator=(const DeviceArena &) = delete;

  char *base() const { return data; }
  int64_t size() const { return bytes; }
  /// The buffer at `offset` bytes, typed.
  template <typename T> T *at(int64_t offset) const {
    return reinterpret_cast<T *>(data + offset);
  }

private:
  char *data = nullptr;
  int64_t bytes = 0;
};

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_DEVICE_H

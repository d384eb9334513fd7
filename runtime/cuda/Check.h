//===- Check.h - Error checks for CUDA and cuBLAS calls -----------*- C++ -*-===//
//
// Every CUDA runtime and cuBLAS(Lt) call in runtime/cuda goes through one of
// these macros, so that a failure becomes a tgc::Error whose message names the
// call, the library's own error string and the source line:
//
//   cudaMalloc(&p, bytes) failed: out of memory (runtime/cuda/Device.cu:88)
//
// Kernel launches are checked with TGC_CUDA_CHECK_LAUNCH() right after the
// launch; that catches bad launch configurations at once (asynchronous faults
// surface at the next synchronizing call, as always with CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_CHECK_H
#define TGC_RUNTIME_CUDA_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace tgc::cuda {

/// Throws tgc::Error: "<call> failed: <cudaGetErrorString> (<file>:<line>)".
[[noreturn]] void throwCudaError(cudaError_t error, const char *call,
                                 const char *file, int line);
/// Throws tgc::Error: "<call> failed: <cublasGetStatusString> (<file>:<line>)".
[[noreturn]] void throwCublasError(cublasStatus_t status, const char *call,
                                   const char *file, int line);

inline void checkCuda(cudaError_t error, const char *call, const char *file,
                      int line) {
  if (error != cudaSuccess)
    throwCudaError(error, call, file, line);
}

inline void checkCublas(cublasStatus_t status, const char *call,
                        const char *file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throwCublasError(status, call, file, line);
}

} // namespace tgc::cuda

#define TGC_CUDA_CHECK(call)                                                   \
  ::tgc::cuda::checkCuda((call), #call, __FILE__, __LINE__)
#define TGC_CUBLAS_CHECK(call)                                                 \
  ::tgc::cuda::checkCublas((call), #call, __FILE__, __LINE__)
/// After a <<<...>>> launch: reports an invalid configuration (too much
/// shared memory, a zero grid) as the launch's error.
#define TGC_CUDA_CHECK_LAUNCH()                                                \
  ::tgc::cuda::checkCuda(cudaGetLastError(), "kernel launch", __FILE__,       \
                         __LINE__)

#endif // TGC_RUNTIME_CUDA_CHECK_H

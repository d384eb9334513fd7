//===- prelude.h - A generated .cu compiled as host C++ -----------*- C++ -*-===//
//
// The host emulation of the CUDA backend's tests (host-emulation.test): a
// .cu file tgc generated, and the runtime's step driver it runs on
// (runtime/cuda/StepProgram.cu), with their <<<...>>> launches turned into
// calls by emulate.py, compile as plain C++ with this file included first.
// Each kernel then runs as one thread of a one-block grid: its grid-stride
// loop visits every element in order. The other launchers of runtime/cuda
// and the CUDA runtime calls the files make are emulated on the
// host in emulate.cpp, with runtime/cpu's kernels (the reference semantics of
// runtime/cuda/Kernels.h). What this checks is the emitter's own logic (the
// schedule, fusion, the arena plan, the buckets, the binding to StepIO), not
// CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_EMULATE_PRELUDE_H
#define TGC_TEST_EMULATE_PRELUDE_H

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#define __launch_bounds__(threads)

/// One thread of a one-block grid.
struct EmulatedDim {
  unsigned x = 0;
};
inline EmulatedDim blockIdx, threadIdx;
inline EmulatedDim blockDim{1}, gridDim{1};

namespace tgc::cuda {

// DeviceMath.cuh's device half, for the host.
inline float toFloat(float x) { return x; }
inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> T fromFloat(float x);
template <> inline float fromFloat<float>(float x) { return x; }
template <> inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
inline float geluTanh(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}
inline float geluTanhGrad(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
  float s = 1.0f / (1.0f + std::exp(-2.0f * u));
  return s + x * s * (1.0f - s) * 2.0f * du;
}
inline float geluErf(float x) {
  return x * 0.5f * std::erfc(-x * 0.7071067811865476f);
}
inline float geluErfGrad(float x) {
  float cdf = 0.5f * std::erfc(-x * 0.7071067811865476f);
  return cdf + x * 0.3989422804014327f * std::exp(-0.5f * x * x);
}

} // namespace tgc::cuda

// expf, tanhf, ... are <math.h>'s on the host.
#include <math.h>

#endif // TGC_TEST_EMULATE_PRELUDE_H

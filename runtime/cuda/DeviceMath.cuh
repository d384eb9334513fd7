//===- DeviceMath.cuh - Device helpers for generated CUDA kernels -*- CUDA -*-===//
//
// What the CUDA emitter's generated elementwise kernels share with the
// runtime's hand-written ones, so that both compute the same values:
//  - bf16 <-> fp32 loads and stores (bf16 storage, fp32 math);
//  - 16-byte packs for vectorized access;
//  - GELU (exact and tanh forms) and their derivatives, written as the CPU
//    runtime writes them (runtime/cpu/Activation.cpp);
//  - dropout_keep, bit-for-bit the mask of runtime/cpu/Kernels.h, callable
//    from host and device code.
//
// Include it from .cu files; dropout_keep alone is also usable from plain
// C++ (the tests check it against the CPU's on the host).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_DEVICEMATH_CUH
#define TGC_RUNTIME_CUDA_DEVICEMATH_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tgc::cuda {

//===----------------------------------------------------------------------===//
// Dropout mask
//===----------------------------------------------------------------------===//

/// splitmix64's finalizer.
__host__ __device__ inline uint64_t splitmix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// tgc::cpu::dropout_keep: element `i` of step `step` and micro-batch
/// stream `stream` is kept when the top 24 bits of its hash, read as a
/// uniform number in [0, 1), are >= p.
__host__ __device__ inline bool dropout_keep(uint64_t seed, int64_t step,
                                             int64_t stream, int64_t i,
                                             float p) {
  uint64_t key =
      splitmix64Mix(seed + 0x9E3779B97F4A7C15ull * (uint64_t)(step + 1) +
                    0xD1B54A32D192ED03ull * (uint64_t)stream);
  uint64_t h = splitmix64Mix(key + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
  return (float)(h >> 40) * (1.0f / 16777216.0f) >= p;
}

#ifdef __CUDACC__

//===----------------------------------------------------------------------===//
// Element access: storage type T (float or __nv_bfloat16), fp32 math
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

/// Round-to-nearest-even conversion to the storage type.
template <typename T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__device__ __forceinline__ float loadFloat(const T *p, int64_t i) {
  return toFloat(p[i]);
}
template <typename T>
__device__ __forceinline__ void storeFloat(T *p, int64_t i, float v) {
  p[i] = fromFloat<T>(v);
}

/// 16 bytes of T: 4 floats or 8 bf16, loaded and stored as one uint4.
/// The address must be 16-byte aligned.
template <typename T> struct alignas(16) Pack16 {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];

  __device__ __forceinline__ static Pack16 load(const T *p) {
    Pack16 pack;
    *reinterpret_cast<uint4 *>(pack.v) = *reinterpret_cast<const uint4 *>(p);
    return pack;
  }
  __device__ __forceinline__ void store(T *p) const {
    *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(v);
  }
};

/// Whether `p` may be accessed in 16-byte packs.
__host__ __device__ inline bool isAligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kGeluCubic = 0.044715f;

/// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
/// x * sigmoid(2u) to avoid the cancellation of 1 + tanh(u) near -1.
__device__ __forceinline__ float geluTanh(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}

/// d/dx geluTanh(x) = s + x s (1 - s) 2 u', s = sigmoid(2u).
__device__ __forceinline__ float geluTanhGrad(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  float s = 1.0f / (1.0f + expf(-2.0f * u));
  return s + x * s * (1.0f - s) * 2.0f * du;
}

/// x Phi(x) through erfc, which keeps its relative accuracy for large
/// negative x.
__device__ __forceinline__ float geluErf(float x) {
  return x * 0.5f * erfcf(-x * kInvSqrt2);
}

/// d/dx geluErf(x) = Phi(x) + x phi(x).
__device__ __forceinline__ float geluErfGrad(float x) {
  float cdf = 0.5f * erfcf(-x * kInvSqrt2);
  float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

#endif // __CUDACC__

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_DEVICEMATH_CUH

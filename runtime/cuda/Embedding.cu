//===- Embedding.cu - Row gather and its deterministic scatter-add --*- C++ -*-===//
//
// The forward copies one table row per output row (a block per row, 16-byte
// packs when the rows allow).
//
// The gradient must add the output gradients of all positions that read the
// same table row, and do it in a fixed order. As on the CPU, the positions
// are grouped by row first: a stable radix sort (cub) of (row, position)
// pairs by row keeps the positions of each row in increasing order. Then one
// block per sorted slot that starts a run of equal rows sums that run's
// gradient rows in position order (fp32, the CPU's order) and writes the
// table row; rows no position reads stay zero from a memset. No atomics.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace tgc::cuda {

namespace {

constexpr int kThreads = 128;

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Block per output row; with Packed, d is a multiple of the pack size and
/// both buffers are 16-byte aligned.
template <typename T, typename Idx, bool Packed>
__global__ void embeddingKernel(const T *table, int64_t rows, int64_t d,
                                const Idx *indices, T *out) {
  int64_t i = blockIdx.x;
  int64_t row = (int64_t)indices[i];
  bool valid = row >= 0 && row < rows;
  T *dst = out + i * d;
  const T *src = table + (valid ? row : 0) * d;
  if (Packed) {
    constexpr int kVec = Pack16<T>::kSize;
    for (int64_t j = threadIdx.x * (int64_t)kVec; j < d;
         j += (int64_t)blockDim.x * kVec) {
      Pack16<T> pack;
      if (valid)
        pack = Pack16<T>::load(src + j);
      else
        for (int e = 0; e < kVec; ++e)
          pack.v[e] = fromFloat<T>(0.0f);
      pack.store(dst + j);
    }
  } else {
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
      dst[j] = valid ? src[j] : fromFloat<T>(0.0f);
  }
}

template <typename T, typename Idx>
void embeddingImpl(const T *table, int64_t rows, int64_t d, const Idx *indices,
                   int64_t n, T *out, cudaStream_t stream) {
  if (n <= 0 || d <= 0)
    return;
  bool packed = d % Pack16<T>::kSize == 0 && isAligned16(table) &&
                isAligned16(out);
  if (packed)
    embeddingKernel<T, Idx, true><<<(unsigned)n, kThreads, 0, stream>>>(
        table, rows, d, indices, out);
  else
    embeddingKernel<T, Idx, false><<<(unsigned)n, kThreads, 0, stream>>>(
        table, rows, d, indices, out);
  TGC_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

/// keys[i] = the row position i reads (rows for an out-of-range index, which
/// sorts last and is skipped), values[i] = i. Thread per position.
template <typename Idx>
__global__ void sortKeysKernel(const Idx *indices, int64_t n, int64_t rows,
                               uint32_t *keys, int32_t *values) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  int64_t row = (int64_t)indices[i];
  keys[i] = (uint32_t)(row >= 0 && row < rows ? row : rows);
  values[i] = (int32_t)i;
}

/// Block per sorted slot; the block of a slot that starts a run of one row
/// sums the run's gradient rows, in position order, into that table row.
template <typename T>
__global__ void scatterRunsKernel(const T *g, const uint32_t *keys,
                                  const int32_t *positions, int64_t n,
                                  int64_t rows, int64_t d, T *dtable) {
  int64_t s = blockIdx.x;
  uint32_t key = keys[s];
  if (key >= rows || (s > 0 && keys[s - 1] == key))
    return;
  int64_t end = s + 1;
  while (end < n && keys[end] == key)
    ++end;
  T *dst = dtable + (int64_t)key * d;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float acc = 0.0f;
    for (int64_t p = s; p < end; ++p)
      acc += toFloat(g[(int64_t)positions[p] * d + j]);
    dst[j] = fromFloat<T>(acc);
  }
}

/// The workspace: keys and positions before and after the sort, then cub's
/// temporary storage.
struct SortBuffers {
  uint32_t *keysIn, *keysOut;
  int32_t *valuesIn, *valuesOut;
  void *temp;
  size_t tempBytes;
};

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bits that hold every key, the out-of-range marker `rows` included.
int keyBits(int64_t rows) {
  int bits = 1;
  while (bits < 32 && ((int64_t)1 << bits) <= rows)
    ++bits;
  return bits;
}

size_t sortTempBytes(int64_t n, int64_t rows) {
  size_t bytes = 0;
  TGC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
      (const int32_t *)nullptr, (int32_t *)nullptr, (int)n, 0,
      keyBits(rows)));
  return bytes;
}

SortBuffers carve(void *workspace, int64_t n, int64_t rows) {
  char *p = static_cast<char *>(workspace);
  int64_t array = align256(n * 4);
  SortBuffers b;
  b.keysIn = reinterpret_cast<uint32_t *>(p);
  b.keysOut = reinterpret_cast<uint32_t *>(p + array);
  b.valuesIn = reinterpret_cast<int32_t *>(p + 2 * array);
  b.valuesOut = reinterpret_cast<int32_t *>(p + 3 * array);
  b.temp = p + 4 * array;
  b.tempBytes = sortTempBytes(n, rows);
  return b;
}

template <typename T, typename Idx>
void embeddingGradImpl(const T *g, const Idx *indices, int64_t n, int64_t rows,
                       int64_t d, T *dtable, void *workspace,
                       cudaStream_t stream) {
  if (rows <= 0 || d <= 0)
    return;
  TGC_CUDA_CHECK(cudaMemsetAsync(dtable, 0, sizeof(T) * rows * d, stream));
  if (n <= 0)
    return;
  if (n >= ((int64_t)1 << 31) || rows >= ((int64_t)1 << 31))
    throw Error("tgc::cuda::embedding_grad: needs fewer than 2^31 positions "
                "and rows, got " +
                std::to_string(n) + " and " + std::to_string(rows));
  if (!workspace)
    throw Error("tgc::cuda::embedding_grad: needs a workspace of "
                "embedding_grad_workspace_bytes(n, rows)");
  SortBuffers b = carve(workspace, n, rows);
  sortKeysKernel<Idx><<<blocksFor(n, 256), 256, 0, stream>>>(
      indices, n, rows, b.keysIn, b.valuesIn);
  TGC_CUDA_CHECK_LAUNCH();
  TGC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      b.temp, b.tempBytes, b.keysIn, b.keysOut, b.valuesIn, b.valuesOut,
      (int)n, 0, keyBits(rows), stream));
  scatterRunsKernel<T><<<(unsigned)n, kThreads, 0, stream>>>(
      g, b.keysOut, b.valuesOut, n, rows, d, dtable);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace

int64_t embedding_grad_workspace_bytes(int64_t n, int64_t rows) {
  if (n <= 0)
    return 0;
  return 4 * align256(n * 4) + align256((int64_t)sortTempBytes(n, rows));
}

void embedding(const float *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, float *out,
               cudaStream_t stream) {
  embeddingImpl(table, rows, d, indices, n, out, stream);
}
void embedding(const float *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, float *out,
               cudaStream_t stream) {
  embeddingImpl(table, rows, d, indices, n, out, stream);
}
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, bf16 *out,
               cudaStream_t stream) {
  embeddingImpl(table, rows, d, indices, n, out, stream);
}
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, bf16 *out,
               cudaStream_t stream) {
  embeddingImpl(table, rows, d, indices, n, out, stream);
}

void embedding_grad(const float *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *workspace,
                    cudaStream_t stream) {
  embeddingGradImpl(g, indices, n, rows, d, dtable, workspace, stream);
}
void embedding_grad(const float *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *workspace,
                    cudaStream_t stream) {
  embeddingGradImpl(g, indices, n, rows, d, dtable, workspace, stream);
}
void embedding_grad(const bf16 *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *workspace,
                    cudaStream_t stream) {
  embeddingGradImpl(g, indices, n, rows, d, dtable, workspace, stream);
}
void embedding_grad(const bf16 *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *workspace,
                    cudaStream_t stream) {
  embeddingGradImpl(g, indices, n, rows, d, dtable, workspace, stream);
}

} // namespace tgc::cuda

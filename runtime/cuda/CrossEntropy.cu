//===- CrossEntropy.cu - Softmax cross-entropy and the fused classifier -*- C++ -*-===//
//
// Three small steps, each one launch:
//  1. one block counts the rows that are not ignored and fixes the gradient
//     scale shared by all rows (g / count for mean, g for sum), in the
//     workspace, so that step 2 needs no host round trip;
//  2. one block per row: an online max and sum of exponentials in one read
//     gives lse, the row's loss is lse - logit[label]; with a gradient, a
//     second sweep writes (softmax - onehot) * scale over the row, in place
//     if asked (the row is still in L2 from the first sweep);
//  3. one block adds the per-row losses in a fixed order, in double, into
//     the mean or the sum.
// The forward-only cross_entropy runs 1 (for the mean), 2 and 3;
// cross_entropy_grad 1 and 2; the fused classifier all three.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/RowAccess.cuh"

namespace tgc::cuda {

namespace {

/// The head of the workspace; the per-row losses follow at kRowsOffset.
struct Scratch {
  long long counted; ///< rows whose label is not ignore_index
  float shared;      ///< the gradient scale of every row (mean, sum)
};
constexpr int64_t kRowsOffset = 256;

/// One block of kCountThreads.
constexpr int kCountThreads = 1024;
template <typename Idx>
__global__ void countKernel(const Idx *labels, int64_t rows,
                            int64_t ignoreIndex, Reduction reduction,
                            const float *g, Scratch *scratch) {
  __shared__ long long shared[kWarpSize];
  long long counted = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    counted += (int64_t)labels[r] != ignoreIndex;
  counted = blockReduce(counted, SumOp(), shared);
  if (threadIdx.x == 0) {
    float g0 = g ? g[0] : 1.0f;
    scratch->counted = counted;
    scratch->shared = reduction == Reduction::Sum
                          ? g0
                          : (float)((double)g0 / (double)counted);
  }
}

/// One block per row. Writes the row's loss to perRow (when not null) and,
/// WithGrad, its gradient to dlogits (which may alias logits).
template <typename T, typename Idx, bool WithGrad>
__global__ void rowKernel(const T *logits, const Idx *labels, int64_t classes,
                          int64_t ignoreIndex, Reduction reduction,
                          const float *g, const Scratch *scratch,
                          float *perRow, T *dlogits) {
  __shared__ MaxSum shared[kWarpSize];
  int64_t r = blockIdx.x;
  const T *x = logits + r * classes;
  T *dx = WithGrad ? dlogits + r * classes : nullptr;
  int64_t label = (int64_t)labels[r];
  if (label == ignoreIndex || label < 0 || label >= classes) {
    // Ignored rows add 0 and get a zero gradient; a bad label poisons its
    // row with NaN.
    float fill = label == ignoreIndex ? 0.0f : __int_as_float(0x7fc00000);
    if (perRow && threadIdx.x == 0)
      perRow[r] = fill;
    if (WithGrad)
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        dx[c] = fromFloat<T>(fill);
    return;
  }
  // Read before the gradient sweep may overwrite it (in place).
  float target = toFloat(x[label]);
  MaxSum acc{-INFINITY, 0.0f};
  forRowElements(x, classes, threadIdx.x, blockDim.x,
                 [&](int64_t, float v) { addToMaxSum(acc, v); });
  MaxSum row = blockReduce(acc, MaxSumOp(), shared);
  float lse = row.m + logf(row.s);
  if (perRow && threadIdx.x == 0)
    perRow[r] = lse - target;
  if (WithGrad) {
    float scale = reduction == Reduction::None ? (g ? g[r] : 1.0f)
                                               : scratch->shared;
    transformRow(x, dx, classes, threadIdx.x, blockDim.x,
                 [&](int64_t c, float v) {
                   float d = scale * expf(v - lse);
                   return c == label ? d - scale : d;
                 });
  }
}

/// One block of kLossThreads: the mean or sum of the per-row losses.
constexpr int kLossThreads = 1024;
__global__ void lossKernel(const float *perRow, int64_t rows,
                           Reduction reduction, const Scratch *scratch,
                           float *loss) {
  __shared__ double shared[kWarpSize];
  double total = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    total += perRow[r];
  total = blockReduce(total, SumOp(), shared);
  if (threadIdx.x == 0)
    loss[0] = reduction == Reduction::Mean
                  ? (float)(total / (double)scratch->counted)
                  : (float)total;
}

int rowThreads(int64_t classes) {
  int threads = 32;
  while (threads < 1024 && (int64_t)threads * 8 < classes)
    threads *= 2;
  return threads;
}

/// The three steps; each runs when its result is wanted.
template <typename T, typename Idx>
void crossEntropyImpl(const T *logits, const Idx *labels, int64_t rows,
                      int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, T *dlogits, void *workspace,
                      cudaStream_t stream) {
  if (rows <= 0)
    return;
  bool grad = dlogits != nullptr;
  bool count = (loss && reduction == Reduction::Mean) ||
               (grad && reduction != Reduction::None);
  if ((count || (loss && !perRow)) && !workspace)
    throw Error("tgc::cuda::cross_entropy: needs a workspace of "
                "cross_entropy_workspace_bytes(rows)");
  auto *scratch = static_cast<Scratch *>(workspace);
  float *losses = perRow;
  if (loss && !losses)
    losses = reinterpret_cast<float *>(static_cast<char *>(workspace) +
                                       kRowsOffset);
  if (count) {
    countKernel<Idx><<<1, kCountThreads, 0, stream>>>(
        labels, rows, ignoreIndex, reduction, g, scratch);
    TGC_CUDA_CHECK_LAUNCH();
  }
  int threads = rowThreads(classes);
  if (grad)
    rowKernel<T, Idx, true><<<(unsigned)rows, threads, 0, stream>>>(
        logits, labels, classes, ignoreIndex, reduction, g, scratch, losses,
        dlogits);
  else
    rowKernel<T, Idx, false><<<(unsigned)rows, threads, 0, stream>>>(
        logits, labels, classes, ignoreIndex, reduction, g, scratch, losses,
        nullptr);
  TGC_CUDA_CHECK_LAUNCH();
  if (loss) {
    lossKernel<<<1, kLossThreads, 0, stream>>>(losses, rows, reduction,
                                               scratch, loss);
    TGC_CUDA_CHECK_LAUNCH();
  }
}

} // namespace

int64_t cross_entropy_workspace_bytes(int64_t rows) {
  return kRowsOffset + (rows * (int64_t)sizeof(float) + 255) / 256 * 256;
}

#define TGC_CROSS_ENTROPY(T, IDX)                                              \
  void cross_entropy(const T *logits, const IDX *labels, int64_t rows,         \
                     int64_t classes, int64_t ignoreIndex,                     \
                     Reduction reduction, float *loss, float *perRow,          \
                     void *workspace, cudaStream_t stream) {                   \
    if (reduction == Reduction::None && !perRow)                               \
      throw Error("tgc::cuda::cross_entropy: reduction none needs perRow");    \
    crossEntropyImpl<T, IDX>(logits, labels, rows, classes, ignoreIndex,       \
                             reduction, nullptr, loss, perRow, nullptr,        \
                             workspace, stream);                               \
  }                                                                            \
  void cross_entropy_grad(const float *g, const T *logits, const IDX *labels,  \
                          int64_t rows, int64_t classes, int64_t ignoreIndex,  \
                          Reduction reduction, T *dlogits, void *workspace,    \
                          cudaStream_t stream) {                               \
    crossEntropyImpl<T, IDX>(logits, labels, rows, classes, ignoreIndex,       \
                             reduction, g, nullptr, nullptr, dlogits,          \
                             workspace, stream);                               \
  }                                                                            \
  void fused_classifier(const T *logits, const IDX *labels, int64_t rows,      \
                        int64_t classes, int64_t ignoreIndex,                  \
                        Reduction reduction, const float *g, float *loss,      \
                        float *perRow, T *dlogits, void *workspace,            \
                        cudaStream_t stream) {                                 \
    crossEntropyImpl<T, IDX>(logits, labels, rows, classes, ignoreIndex,       \
                             reduction, g, loss, perRow, dlogits, workspace,   \
                             stream);                                          \
  }

TGC_CROSS_ENTROPY(float, int32_t)
TGC_CROSS_ENTROPY(float, int64_t)
TGC_CROSS_ENTROPY(bf16, int32_t)
TGC_CROSS_ENTROPY(bf16, int64_t)

#undef TGC_CROSS_ENTROPY

} // namespace tgc::cuda

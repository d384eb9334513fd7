//===- Reduce.cu - Sum, mean and max over dims; global norms --------*- C++ -*-===//
//
// A reduction over any set of dims runs as passes of one shape,
// [outer, red, inner] -> [outer, inner], as on the CPU: size-1 dims are
// dropped, runs of adjacent reduced (or kept) dims merged, and the reduced
// runs removed one at a time from the innermost, the partial results in the
// workspace between passes. Per pass:
//  - inner == 1: one block per output, its threads striding along the
//    contiguous run;
//  - inner > 1: blocks of 32 columns x 16 row slices; neighbouring threads
//    read neighbouring columns and the 16 slices are added in order.
// Sums accumulate in double, max keeps NaN.
//
// The global gradient norm adds squares over many tensors: each launch
// takes up to 32 of them (their pointers passed by value), each block a
// 4096-element chunk of one tensor, writing one double partial; a last
// block adds all partials in order and takes the square root.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

#include <algorithm>
#include <vector>

namespace tgc::cuda {

namespace {

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

/// One output per block, blockDim.x threads along the row.
template <typename TIn, typename TOut>
__global__ void reduceRowsKernel(const TIn *src, int64_t red, TOut *dst,
                                 bool isMax, float scale) {
  __shared__ double sharedSum[kWarpSize];
  __shared__ float sharedMax[kWarpSize];
  const TIn *row = src + blockIdx.x * red;
  if (isMax) {
    float acc = -INFINITY;
    for (int64_t i = threadIdx.x; i < red; i += blockDim.x)
      acc = nanMax(acc, toFloat(row[i]));
    acc = blockReduce(acc, NanMaxOp(), sharedMax);
    if (threadIdx.x == 0)
      dst[blockIdx.x] = fromFloat<TOut>(acc * scale);
  } else {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < red; i += blockDim.x)
      acc += toFloat(row[i]);
    acc = blockReduce(acc, SumOp(), sharedSum);
    if (threadIdx.x == 0)
      dst[blockIdx.x] = fromFloat<TOut>((float)acc * scale);
  }
}

constexpr int kColumns = 32, kSlices = 16;

/// Block (kColumns, kSlices) per 32 columns of one outer index:
/// blockIdx.x = outer * columnBlocks + column block.
template <typename TIn, typename TOut>
__global__ void reduceColumnsKernel(const TIn *src, int64_t red, int64_t inner,
                                    int64_t columnBlocks, TOut *dst,
                                    bool isMax, float scale) {
  __shared__ double sums[kSlices][kColumns];
  __shared__ float maxima[kSlices][kColumns];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t o = blockIdx.x / columnBlocks;
  int64_t j = (blockIdx.x % columnBlocks) * kColumns + tx;
  const TIn *base = src + o * red * inner + j;
  double sum = 0;
  float mx = -INFINITY;
  if (j < inner)
    for (int64_t r = ty; r < red; r += kSlices) {
      float v = toFloat(base[r * inner]);
      if (isMax)
        mx = nanMax(mx, v);
      else
        sum += v;
    }
  sums[ty][tx] = sum;
  maxima[ty][tx] = mx;
  __syncthreads();
  if (ty != 0 || j >= inner)
    return;
  for (int i = 1; i < kSlices; ++i) {
    sum += sums[i][tx];
    mx = nanMax(mx, maxima[i][tx]);
  }
  dst[o * inner + j] =
      fromFloat<TOut>(isMax ? mx * scale : (float)sum * scale);
}

template <typename TOut>
__global__ void fillKernel(TOut *dst, int64_t n, float value) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = fromFloat<TOut>(value);
}

template <typename TIn, typename TOut>
void reducePass(const TIn *src, int64_t outer, int64_t red, int64_t inner,
                TOut *dst, bool isMax, float scale, cudaStream_t stream) {
  if (inner == 1) {
    // Short rows (a bias gradient's [N, C, H*W] rows of H*W) get as many
    // warps as they have elements for, not 256 threads mostly idle.
    int threads = red >= 256 ? 256 : (int)blocksFor(red, kWarpSize) * kWarpSize;
    reduceRowsKernel<TIn, TOut><<<(unsigned)outer, threads, 0, stream>>>(
        src, red, dst, isMax, scale);
  } else {
    int64_t columnBlocks = (inner + kColumns - 1) / kColumns;
    reduceColumnsKernel<TIn, TOut>
        <<<(unsigned)(outer * columnBlocks), dim3(kColumns, kSlices), 0,
           stream>>>(src, red, inner, columnBlocks, dst, isMax, scale);
  }
  TGC_CUDA_CHECK_LAUNCH();
}

/// The CPU's simplification: runs of adjacent dims with the same role, size-1
/// dims dropped.
struct Runs {
  std::vector<int64_t> sizes;
  std::vector<bool> isRed;
  int64_t keptCount = 1, redCount = 1;
};

Runs simplify(const int64_t *shape, int rank, const int64_t *dims,
              int numDims) {
  std::vector<bool> reduced(rank, false);
  for (int i = 0; i < numDims; ++i)
    reduced[dims[i]] = true;
  Runs runs;
  for (int i = 0; i < rank; ++i) {
    (reduced[i] ? runs.redCount : runs.keptCount) *= shape[i];
    if (shape[i] == 1)
      continue;
    if (!runs.sizes.empty() && runs.isRed.back() == reduced[i]) {
      runs.sizes.back() *= shape[i];
      continue;
    }
    runs.sizes.push_back(shape[i]);
    runs.isRed.push_back(reduced[i]);
  }
  return runs;
}

/// Elements of the first pass's output when there is more than one pass
/// (0 otherwise): the largest intermediate.
int64_t firstIntermediate(const Runs &runs) {
  int passes = (int)std::count(runs.isRed.begin(), runs.isRed.end(), true);
  if (passes <= 1)
    return 0;
  int j = (int)runs.sizes.size() - 1;
  while (!runs.isRed[j])
    --j;
  int64_t count = 1;
  for (int i = 0; i < (int)runs.sizes.size(); ++i)
    if (i != j)
      count *= runs.sizes[i];
  return count;
}

template <typename T>
void reduceImpl(ReduceKind kind, const T *x, const int64_t *shape, int rank,
                const int64_t *dims, int numDims, T *out, void *workspace,
                cudaStream_t stream) {
  bool isMax = kind == ReduceKind::Max;
  Runs runs = simplify(shape, rank, dims, numDims);
  if (runs.keptCount == 0)
    return;
  if (runs.redCount == 0) {
    float identity = kind == ReduceKind::Sum    ? 0.0f
                     : kind == ReduceKind::Mean ? NAN
                                                : -INFINITY;
    fillKernel<T><<<blocksFor(runs.keptCount, 256), 256, 0, stream>>>(
        out, runs.keptCount, identity);
    TGC_CUDA_CHECK_LAUNCH();
    return;
  }
  float meanScale =
      kind == ReduceKind::Mean ? (float)(1.0 / (double)runs.redCount) : 1.0f;
  int passes = (int)std::count(runs.isRed.begin(), runs.isRed.end(), true);
  if (passes == 0) {
    TGC_CUDA_CHECK(cudaMemcpyAsync(out, x, sizeof(T) * runs.keptCount,
                                   cudaMemcpyDeviceToDevice, stream));
    return;
  }
  int64_t bufElems = firstIntermediate(runs);
  if (bufElems > 0 && !workspace)
    throw Error("tgc::cuda::reduce: reducing non-adjacent dims needs a "
                "workspace of reduce_workspace_bytes(...)");
  float *bufs[2] = {static_cast<float *>(workspace), nullptr};
  if (bufElems > 0)
    bufs[1] = reinterpret_cast<float *>(static_cast<char *>(workspace) +
                                        align256(bufElems * 4));

  // The first pass reads T, the last writes T; in between fp32.
  const float *srcF = nullptr;
  int pass = 0;
  std::vector<int64_t> sizes = runs.sizes;
  std::vector<bool> isRed = runs.isRed;
  while (passes > 0) {
    int j = (int)sizes.size() - 1;
    while (!isRed[j])
      --j;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < j; ++i)
      outer *= sizes[i];
    for (int i = j + 1; i < (int)sizes.size(); ++i)
      inner *= sizes[i];
    bool last = passes == 1;
    float scale = last ? meanScale : 1.0f;
    float *dstF = last ? nullptr : bufs[pass % 2];
    if (pass == 0 && last)
      reducePass(x, outer, sizes[j], inner, out, isMax, scale, stream);
    else if (pass == 0)
      reducePass(x, outer, sizes[j], inner, dstF, isMax, scale, stream);
    else if (last)
      reducePass(srcF, outer, sizes[j], inner, out, isMax, scale, stream);
    else
      reducePass(srcF, outer, sizes[j], inner, dstF, isMax, scale, stream);
    srcF = dstF;
    ++pass;
    --passes;
    // Drop the run and merge its kept neighbours.
    sizes.erase(sizes.begin() + j);
    isRed.erase(isRed.begin() + j);
    if (j > 0 && j < (int)sizes.size() && isRed[j - 1] == isRed[j]) {
      sizes[j - 1] *= sizes[j];
      sizes.erase(sizes.begin() + j);
      isRed.erase(isRed.begin() + j);
    }
  }
}

//===----------------------------------------------------------------------===//
// global_norm
//===----------------------------------------------------------------------===//

constexpr int kNormThreads = 256;
constexpr int64_t kNormChunk = kNormThreads * 16;
constexpr int kTensorsPerLaunch = 32;

/// Up to kTensorsPerLaunch tensors, passed by value to one launch; tensor t
/// owns blocks [firstBlock[t], firstBlock[t + 1]).
struct NormLaunch {
  const void *data[kTensorsPerLaunch];
  int64_t count[kTensorsPerLaunch];
  int64_t firstBlock[kTensorsPerLaunch + 1];
  bool isBf16[kTensorsPerLaunch];
  int tensors;
};

template <typename T>
__device__ double chunkSquares(const T *x, int64_t begin, int64_t end) {
  double acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    double v = toFloat(x[i]);
    acc += v * v;
  }
  return acc;
}

/// Block per chunk of kNormChunk elements of one tensor: partials[blockIdx.x]
/// = the chunk's sum of squares.
__global__ void squaresKernel(NormLaunch launch, double *partials) {
  __shared__ double shared[kWarpSize];
  int t = 0;
  while (t + 1 < launch.tensors && launch.firstBlock[t + 1] <= blockIdx.x)
    ++t;
  int64_t begin = (blockIdx.x - launch.firstBlock[t]) * kNormChunk;
  int64_t end = min(launch.count[t], begin + kNormChunk);
  double acc =
      launch.isBf16[t]
          ? chunkSquares(static_cast<const bf16 *>(launch.data[t]), begin, end)
          : chunkSquares(static_cast<const float *>(launch.data[t]), begin,
                         end);
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = acc;
}

/// One block: norm[0] = sqrt(sum of the partials).
__global__ void normFinalKernel(const double *partials, int64_t count,
                                float *norm) {
  __shared__ double shared[kWarpSize];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    acc += partials[i];
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    norm[0] = (float)sqrt(acc);
}

int64_t chunksOf(const NormInput &input) {
  return (input.count + kNormChunk - 1) / kNormChunk;
}

/// One thread: torch's clip coefficient, clamped at 1 with NaN kept.
__global__ void clipFactorKernel(const float *norm, float maxNorm,
                                 float *scale) {
  float coef = maxNorm / (norm[0] + 1e-6f);
  scale[0] = coef != coef ? coef : fminf(coef, 1.0f);
}

} // namespace

int64_t reduce_workspace_bytes(const int64_t *shape, int rank,
                               const int64_t *dims, int numDims) {
  int64_t elems = firstIntermediate(simplify(shape, rank, dims, numDims));
  return elems > 0 ? 2 * align256(elems * 4) : 0;
}

void reduce(ReduceKind kind, const float *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, float *out, void *workspace,
            cudaStream_t stream) {
  reduceImpl(kind, x, shape, rank, dims, numDims, out, workspace, stream);
}
void reduce(ReduceKind kind, const bf16 *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, bf16 *out, void *workspace,
            cudaStream_t stream) {
  reduceImpl(kind, x, shape, rank, dims, numDims, out, workspace, stream);
}

int64_t global_norm_workspace_bytes(const NormInput *inputs, int count) {
  int64_t chunks = 0;
  for (int i = 0; i < count; ++i)
    chunks += chunksOf(inputs[i]);
  return chunks * (int64_t)sizeof(double);
}

void global_norm(const NormInput *inputs, int count, float *norm,
                 void *workspace, cudaStream_t stream) {
  auto *partials = static_cast<double *>(workspace);
  int64_t written = 0;
  int next = 0;
  while (next < count) {
    NormLaunch launch{};
    int64_t blocks = 0;
    for (; next < count && launch.tensors < kTensorsPerLaunch; ++next) {
      const NormInput &in = inputs[next];
      if (in.dtype != DType::F32 && in.dtype != DType::BF16)
        throw Error("tgc::cuda::global_norm: inputs must be f32 or bf16");
      if (in.count <= 0)
        continue;
      int t = launch.tensors++;
      launch.data[t] = in.data;
      launch.count[t] = in.count;
      launch.isBf16[t] = in.dtype == DType::BF16;
      launch.firstBlock[t] = blocks;
      blocks += chunksOf(in);
    }
    launch.firstBlock[launch.tensors] = blocks;
    if (blocks == 0)
      continue;
    squaresKernel<<<(unsigned)blocks, kNormThreads, 0, stream>>>(
        launch, partials + written);
    TGC_CUDA_CHECK_LAUNCH();
    written += blocks;
  }
  normFinalKernel<<<1, 1024, 0, stream>>>(partials, written, norm);
  TGC_CUDA_CHECK_LAUNCH();
}

void clip_factor(const float *norm, float maxNorm, float *scale,
                 cudaStream_t stream) {
  clipFactorKernel<<<1, 1, 0, stream>>>(norm, maxNorm, scale);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace tgc::cuda

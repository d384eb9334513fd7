//===- Shape.cu - Transpose, slice and concat ----------------------*- C++ -*-===//
//
// Data movement for the shape ops that are not views, written once over the
// element size (1, 2, 4 or 8 bytes) so that bool, bf16, f32 and i64 share
// the code. Everything is one of three kernels:
//  - gather: y (dense) [i] = x[view(i)], a strided view of x: slices, and
//    transposes whose innermost dim stays innermost (reads and writes both
//    run along rows);
//  - scatter: y[view(i)] = x (dense) [i]: slice gradients (into zeros) and
//    concat (each input into its columns of the output);
//  - a 32 x 32 tiled transpose through shared memory for permutations that
//    move the innermost dim, so that reads and writes both coalesce.
// Transposes first simplify the permutation as the CPU does: size-1 dims
// dropped, output dims that stay adjacent in the input merged.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"

#include <algorithm>
#include <vector>

namespace tgc::cuda {

namespace {

constexpr int kMaxDims = kMaxRank;
constexpr int kThreads = 256;

/// Element i of a dense [size...] tensor sits at base + sum idx_d * stride_d
/// of another buffer.
struct StridedView {
  int rank;
  int64_t size[kMaxDims], stride[kMaxDims];
  int64_t base;

  __device__ int64_t offset(int64_t i) const {
    int64_t off = base;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % size[d]) * stride[d];
      i /= size[d];
    }
    return off;
  }
};

/// Thread per element (grid-stride).
template <typename E>
__global__ void gatherKernel(const E *x, E *y, int64_t total, StridedView v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[v.offset(i)];
}

/// Thread per element (grid-stride).
template <typename E>
__global__ void scatterKernel(const E *x, E *y, int64_t total, StridedView v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x)
    y[v.offset(i)] = x[i];
}

/// Output dims of a transpose other than the two tiled ones.
struct TileRest {
  int rank;
  int64_t size[kMaxDims], in[kMaxDims], out[kMaxDims];
};

constexpr int kTile = 32, kTileRows = 8;

/// Block (kTile, kTileRows) per 32 x 32 tile of the output dims q (the one
/// that is innermost in the input) and l (innermost in the output), for one
/// index of the other dims: blockIdx.x = (rest * tilesQ + tq) * tilesL + tl.
/// Reads run along q, writes along l.
template <typename E>
__global__ void tiledTransposeKernel(const E *x, E *y, int64_t sizeQ,
                                     int64_t sizeL, int64_t inStrideL,
                                     int64_t outStrideQ, int64_t tilesQ,
                                     int64_t tilesL, TileRest rest) {
  __shared__ E tile[kTile][kTile + 1];
  int64_t task = blockIdx.x;
  int64_t tl = task % tilesL, tq = (task / tilesL) % tilesQ;
  int64_t idx = task / (tilesL * tilesQ);
  int64_t inOff = 0, outOff = 0;
  for (int d = rest.rank - 1; d >= 0; --d) {
    int64_t i = idx % rest.size[d];
    idx /= rest.size[d];
    inOff += i * rest.in[d];
    outOff += i * rest.out[d];
  }
  int64_t q0 = tq * kTile, l0 = tl * kTile;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int il = ty; il < kTile; il += kTileRows)
    if (q0 + tx < sizeQ && l0 + il < sizeL)
      tile[il][tx] = x[inOff + (q0 + tx) + (l0 + il) * inStrideL];
  __syncthreads();
  for (int iq = ty; iq < kTile; iq += kTileRows)
    if (q0 + iq < sizeQ && l0 + tx < sizeL)
      y[outOff + (q0 + iq) * outStrideQ + (l0 + tx)] = tile[tx][iq];
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Calls fn(E{}) with E the unsigned integer of `elemSize` bytes.
template <typename Fn> void dispatchElemSize(int64_t elemSize, Fn fn) {
  switch (elemSize) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  case 8:
    return fn(uint64_t{});
  default:
    throw Error("tgc::cuda: element size " + std::to_string(elemSize) +
                " is not 1, 2, 4 or 8 bytes");
  }
}

void checkRank(int rank) {
  if (rank < 0 || rank > kMaxDims)
    throw Error("tgc::cuda: rank " + std::to_string(rank) +
                " is above the supported " + std::to_string(kMaxDims));
}

std::vector<int64_t> rowMajorStrides(const int64_t *shape, int rank) {
  std::vector<int64_t> strides(rank);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t product(const int64_t *shape, int rank) {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i)
    p *= shape[i];
  return p;
}

void gather(const void *x, int64_t elemSize, int64_t total,
            const StridedView &view, void *y, cudaStream_t stream) {
  dispatchElemSize(elemSize, [&](auto tag) {
    using E = decltype(tag);
    gatherKernel<E><<<gridStrideBlocks(total, kThreads), kThreads, 0,
                      stream>>>(static_cast<const E *>(x), static_cast<E *>(y),
                                total, view);
  });
  TGC_CUDA_CHECK_LAUNCH();
}

void scatter(const void *x, int64_t elemSize, int64_t total,
             const StridedView &view, void *y, cudaStream_t stream) {
  dispatchElemSize(elemSize, [&](auto tag) {
    using E = decltype(tag);
    scatterKernel<E><<<gridStrideBlocks(total, kThreads), kThreads, 0,
                       stream>>>(static_cast<const E *>(x),
                                 static_cast<E *>(y), total, view);
  });
  TGC_CUDA_CHECK_LAUNCH();
}

/// The view of x that slice reads (and slice_grad writes): dims shaped
/// boxShape at start + i * stride of an x shaped xShape.
StridedView sliceView(const int64_t *xShape, int rank, const int64_t *start,
                      const int64_t *stride, const int64_t *boxShape) {
  std::vector<int64_t> inStrides = rowMajorStrides(xShape, rank);
  StridedView v{};
  v.rank = rank;
  for (int d = 0; d < rank; ++d) {
    v.size[d] = boxShape[d];
    v.stride[d] = stride[d] * inStrides[d];
    v.base += start[d] * inStrides[d];
  }
  return v;
}

} // namespace

void transpose_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                     int rank, const int64_t *perm, void *y,
                     cudaStream_t stream) {
  checkRank(rank);
  int64_t total = product(shape, rank);
  if (total == 0)
    return;
  std::vector<int64_t> inStrides = rowMajorStrides(shape, rank);
  // Output dims (size, input stride), simplified.
  std::vector<int64_t> size, in;
  for (int i = 0; i < rank; ++i) {
    int64_t sz = shape[perm[i]], st = inStrides[perm[i]];
    if (sz == 1)
      continue;
    if (!size.empty() && in.back() == st * sz) {
      size.back() *= sz;
      in.back() = st;
      continue;
    }
    size.push_back(sz);
    in.push_back(st);
  }
  int r = (int)size.size();
  if (r == 0 || in[r - 1] == 1) {
    // The innermost dim stays innermost: a gather along rows.
    StridedView v{};
    v.rank = r;
    for (int d = 0; d < r; ++d) {
      v.size[d] = size[d];
      v.stride[d] = in[d];
    }
    gather(x, elemSize, total, v, y, stream);
    return;
  }
  // q: the output dim that is innermost in the input; l: the output's last.
  int q = (int)(std::find(in.begin(), in.end(), 1) - in.begin());
  int l = r - 1;
  std::vector<int64_t> out = rowMajorStrides(size.data(), r);
  TileRest rest{};
  for (int i = 0; i < r; ++i)
    if (i != q && i != l) {
      rest.size[rest.rank] = size[i];
      rest.in[rest.rank] = in[i];
      rest.out[rest.rank] = out[i];
      ++rest.rank;
    }
  int64_t tilesQ = (size[q] + kTile - 1) / kTile;
  int64_t tilesL = (size[l] + kTile - 1) / kTile;
  int64_t blocks = total / (size[q] * size[l]) * tilesQ * tilesL;
  dispatchElemSize(elemSize, [&](auto tag) {
    using E = decltype(tag);
    tiledTransposeKernel<E><<<(unsigned)blocks, dim3(kTile, kTileRows), 0,
                              stream>>>(
        static_cast<const E *>(x), static_cast<E *>(y), size[q], size[l],
        in[l], out[q], tilesQ, tilesL, rest);
  });
  TGC_CUDA_CHECK_LAUNCH();
}

void slice_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                 int rank, const int64_t *start, const int64_t *stride,
                 void *y, const int64_t *outShape, cudaStream_t stream) {
  checkRank(rank);
  int64_t total = product(outShape, rank);
  if (total == 0)
    return;
  gather(x, elemSize, total, sliceView(shape, rank, start, stride, outShape),
         y, stream);
}

void slice_grad_bytes(const void *g, int64_t elemSize, const int64_t *gShape,
                      int rank, const int64_t *start, const int64_t *stride,
                      void *dx, const int64_t *xShape, cudaStream_t stream) {
  checkRank(rank);
  int64_t xTotal = product(xShape, rank);
  if (xTotal == 0)
    return;
  TGC_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)(xTotal * elemSize), stream));
  int64_t total = product(gShape, rank);
  if (total == 0)
    return;
  scatter(g, elemSize, total, sliceView(xShape, rank, start, stride, gShape),
          dx, stream);
}

void concat_bytes(const void *const *inputs, int64_t elemSize,
                  const int64_t *const *shapes, int numInputs, int rank,
                  int axis, void *out, cudaStream_t stream) {
  checkRank(rank);
  if (numInputs == 0)
    return;
  // Each output row (the dims before `axis`) is the inputs' rows side by
  // side: input i is the [outer, chunk_i] box at column offset_i.
  int64_t outer = product(shapes[0], axis);
  std::vector<int64_t> chunk(numInputs);
  int64_t rowElems = 0;
  for (int i = 0; i < numInputs; ++i) {
    chunk[i] = product(shapes[i] + axis, rank - axis);
    rowElems += chunk[i];
  }
  int64_t offset = 0;
  for (int i = 0; i < numInputs; ++i) {
    StridedView v{};
    v.rank = 2;
    v.size[0] = outer;
    v.size[1] = chunk[i];
    v.stride[0] = rowElems;
    v.stride[1] = 1;
    v.base = offset;
    offset += chunk[i];
    if (outer * chunk[i] > 0)
      scatter(inputs[i], elemSize, outer * chunk[i], v, out, stream);
  }
}

} // namespace tgc::cuda

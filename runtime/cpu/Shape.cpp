//===- Shape.cpp - Transpose, slice and concat ---------------------*- C++ -*-===//
//
// Data movement for the shape ops that are not views. Each is written once
// over the element size (1, 2, 4 or 8 bytes) so that integer and bf16
// tensors share the float code.
//
// Transpose first simplifies the permutation: size-1 dims are dropped and
// output dims that stay adjacent in the input are merged. If the innermost
// dim stays innermost, rows are copied; otherwise the two dims that are
// innermost in the input and in the output are moved in 32 x 32 tiles, so
// that both reads and writes touch whole cache lines.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tgc::cpu {

namespace {

constexpr int64_t kParallelBytes = 1 << 16;

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

template <typename T>
void transposeImpl(const T *x, const int64_t *shape, int rank,
                   const int64_t *perm, T *y) {
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
    // The innermost dim stays innermost: copy rows of `len`.
    int64_t len = r == 0 ? 1 : size[r - 1];
    int64_t rows = total / len;
#pragma omp parallel for schedule(static) if (total * (int64_t)sizeof(T) > kParallelBytes)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t off = 0, rest = row;
      for (int i = r - 2; i >= 0; --i) {
        off += (rest % size[i]) * in[i];
        rest /= size[i];
      }
      std::memcpy(y + row * len, x + off, sizeof(T) * len);
    }
    return;
  }
  // q: the output dim that is innermost in the input.
  int q = (int)(std::find(in.begin(), in.end(), 1) - in.begin());
  int last = r - 1;
  std::vector<int64_t> out = rowMajorStrides(size.data(), r);
  std::vector<int> restDims;
  for (int i = 0; i < r; ++i)
    if (i != q && i != last)
      restDims.push_back(i);
  constexpr int64_t kTile = 32;
  int64_t tilesQ = (size[q] + kTile - 1) / kTile;
  int64_t tilesL = (size[last] + kTile - 1) / kTile;
  int64_t rest = total / (size[q] * size[last]);
  int64_t tasks = rest * tilesQ * tilesL;
  int64_t strideL = in[last], strideQ = out[q];
#pragma omp parallel for schedule(static) if (total * (int64_t)sizeof(T) > kParallelBytes)
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t tl = task % tilesL, tq = (task / tilesL) % tilesQ;
    int64_t idx = task / (tilesL * tilesQ);
    int64_t inOff = 0, outOff = 0;
    for (int k = (int)restDims.size() - 1; k >= 0; --k) {
      int dim = restDims[k];
      int64_t i = idx % size[dim];
      idx /= size[dim];
      inOff += i * in[dim];
      outOff += i * out[dim];
    }
    int64_t q0 = tq * kTile, q1 = std::min(size[q], q0 + kTile);
    int64_t l0 = tl * kTile, l1 = std::min(size[last], l0 + kTile);
    for (int64_t iq = q0; iq < q1; ++iq) {
      const T *src = x + inOff + iq;
      T *dst = y + outOff + iq * strideQ;
      for (int64_t il = l0; il < l1; ++il)
        dst[il] = src[il * strideL];
    }
  }
}

/// Calls fn(outRow, inOffset) for each innermost output row of a strided box
/// of `x`; `inOffset` is the input index of the row's first element.
template <typename Fn>
void forEachBoxRow(const int64_t *xShape, int rank, const int64_t *start,
                   const int64_t *stride, const int64_t *boxShape,
                   int64_t elemSize, Fn fn) {
  int64_t total = product(boxShape, rank);
  if (total == 0)
    return;
  std::vector<int64_t> inStrides = rowMajorStrides(xShape, rank);
  int64_t len = rank == 0 ? 1 : boxShape[rank - 1];
  int64_t rows = total / len;
#pragma omp parallel for schedule(static) if (total * elemSize > kParallelBytes)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = rank == 0 ? 0 : start[rank - 1], rest = row;
    for (int i = rank - 2; i >= 0; --i) {
      off += (start[i] + (rest % boxShape[i]) * stride[i]) * inStrides[i];
      rest /= boxShape[i];
    }
    fn(row, off);
  }
}

template <typename T>
void sliceImpl(const T *x, const int64_t *shape, int rank,
               const int64_t *start, const int64_t *stride, T *y,
               const int64_t *outShape) {
  int64_t len = rank == 0 ? 1 : outShape[rank - 1];
  int64_t step = rank == 0 ? 1 : stride[rank - 1];
  forEachBoxRow(shape, rank, start, stride, outShape, sizeof(T),
                [&](int64_t row, int64_t off) {
                  T *dst = y + row * len;
                  const T *src = x + off;
                  if (step == 1)
                    std::memcpy(dst, src, sizeof(T) * len);
                  else
                    for (int64_t j = 0; j < len; ++j)
                      dst[j] = src[j * step];
                });
}

template <typename Fn>
void dispatchElemSize(int64_t elemSize, Fn fn) {
  switch (elemSize) {
  case 1:
    fn(uint8_t{});
    break;
  case 2:
    fn(uint16_t{});
    break;
  case 4:
    fn(uint32_t{});
    break;
  case 8:
    fn(uint64_t{});
    break;
  default:
    break;
  }
}

} // namespace

void transpose(const float *x, const int64_t *shape, int rank,
               const int64_t *perm, float *y) {
  transposeImpl(x, shape, rank, perm, y);
}
void transpose(const int32_t *x, const int64_t *shape, int rank,
               const int64_t *perm, int32_t *y) {
  transposeImpl(x, shape, rank, perm, y);
}
void transpose(const int64_t *x, const int64_t *shape, int rank,
               const int64_t *perm, int64_t *y) {
  transposeImpl(x, shape, rank, perm, y);
}
void transpose_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                     int rank, const int64_t *perm, void *y) {
  dispatchElemSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    transposeImpl(static_cast<const T *>(x), shape, rank, perm,
                  static_cast<T *>(y));
  });
}

void slice(const float *x, const int64_t *shape, int rank,
           const int64_t *start, const int64_t *stride, float *y,
           const int64_t *outShape) {
  sliceImpl(x, shape, rank, start, stride, y, outShape);
}
void slice_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                 int rank, const int64_t *start, const int64_t *stride,
                 void *y, const int64_t *outShape) {
  dispatchElemSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    sliceImpl(static_cast<const T *>(x), shape, rank, start, stride,
              static_cast<T *>(y), outShape);
  });
}

void slice_grad(const float *g, const int64_t *gShape, int rank,
                const int64_t *start, const int64_t *stride, float *dx,
                const int64_t *xShape) {
  int64_t xTotal = product(xShape, rank);
#pragma omp parallel for schedule(static) if (xTotal * 4 > kParallelBytes)
  for (int64_t i = 0; i < xTotal; ++i)
    dx[i] = 0.0f;
  int64_t len = rank == 0 ? 1 : gShape[rank - 1];
  int64_t step = rank == 0 ? 1 : stride[rank - 1];
  forEachBoxRow(xShape, rank, start, stride, gShape, sizeof(float),
                [&](int64_t row, int64_t off) {
                  const float *src = g + row * len;
                  float *dst = dx + off;
                  for (int64_t j = 0; j < len; ++j)
                    dst[j * step] = src[j];
                });
}

void concat_bytes(const void *const *inputs, int64_t elemSize,
                  const int64_t *const *shapes, int numInputs, int rank,
                  int axis, void *out) {
  if (numInputs == 0)
    return;
  int64_t outer = product(shapes[0], axis);
  // Bytes each input adds to one outer row, and where they start.
  std::vector<int64_t> chunk(numInputs), offset(numInputs);
  int64_t rowBytes = 0;
  for (int i = 0; i < numInputs; ++i) {
    chunk[i] = product(shapes[i] + axis, rank - axis) * elemSize;
    offset[i] = rowBytes;
    rowBytes += chunk[i];
  }
  char *dst = static_cast<char *>(out);
  int64_t tasks = outer * numInputs;
#pragma omp parallel for schedule(static) if (outer * rowBytes > kParallelBytes && tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t o = t / numInputs;
    int i = (int)(t % numInputs);
    const char *src = static_cast<const char *>(inputs[i]);
    std::memcpy(dst + o * rowBytes + offset[i], src + o * chunk[i], chunk[i]);
  }
}

void concat(const float *const *inputs, const int64_t *const *shapes,
            int numInputs, int rank, int axis, float *out) {
  concat_bytes(reinterpret_cast<const void *const *>(inputs), sizeof(float),
               shapes, numInputs, rank, axis, out);
}

} // namespace tgc::cpu

//===- CublasLt.cpp - cuBLASLt on OpenBLAS for the host runtime -*- C++ -*-===//
//
// The cuBLASLt that runtime/cuda calls (Matmul.cu, Check.h), for the build
// that compiles the .cu files as C++ on a host without a GPU. The functions
// keep the exact signatures of <cublasLt.h>, so the callers compile
// unchanged; libcublasLt is not linked.
//
// What is emulated:
//  - Handles, matrix layouts, matmul descriptors and preferences are real
//    objects with cuBLASLt's attributes, attribute sizes and defaults. A
//    handle that was never created or was destroyed gives
//    CUBLAS_STATUS_NOT_INITIALIZED, such a descriptor
//    CUBLAS_STATUS_INVALID_VALUE, where the real library would read freed
//    memory.
//  - The problems runtime/cuda needs: CUBLAS_COMPUTE_32F (and _PEDANTIC) on
//    f32 x f32 -> f32, bf16 x bf16 -> bf16 and bf16 x bf16 -> f32,
//    CUBLAS_COMPUTE_32F_FAST_TF32 on f32; f32 scale, host alpha/beta;
//    column- or row-major layouts, strided batches (stride 0 broadcasts);
//    the epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS, GELU_AUX,
//    GELU_AUX_BIAS, DGELU and DGELU_BGRAD. Anything else is
//    CUBLAS_STATUS_NOT_SUPPORTED, as the real heuristic answers for a
//    combination it has no kernel for.
//  - cublasLtMatmulAlgoGetHeuristic returns one algorithm without workspace.
//    It honours the preference's minimum alignments and the alignment of the
//    bias and aux pointers set on the descriptor: the algorithm assumes
//    min(preference, 16) bytes, the widest vector load a GPU kernel makes,
//    and there is none when a pointer is promised less than its element.
//  - cublasLtMatmul returns the statuses the library documents (parameters
//    in conflict: INVALID_VALUE; unsupported: NOT_SUPPORTED) and stops the
//    program through tgc::simt::fatal where a GPU would fault: a matrix,
//    bias, aux or workspace that does not fit in the allocation its pointer
//    lies in, a pointer that is not device memory, a pointer less aligned
//    than the algorithm assumed (misaligned address).
//  - The product runs when the stream does (tgc::simt::enqueue), with
//    everything captured by value, so descriptors may be destroyed and
//    alpha/beta go out of scope once the call returns, as on a GPU.
//
// The arithmetic: fp32 products by OpenBLAS's cblas_sgemm, bf16 inputs
// widened to fp32 first; alpha, beta, C and the epilogue in fp32 on the
// unrounded product; D (and the aux) rounded once, to nearest even. The GELU
// is the tanh form computed as the CPU runtime computes it
// (runtime/cpu/Kernels.h), so fused and CPU results agree; DGELU_BGRAD's
// bias gradient is the sum over D's columns of the DGELU output, summed in
// double.
//
// Not emulated: the TF32 rounding of FAST_TF32 (inputs stay fp32), the
// tensor cores' accumulation order, split-K and every other property of the
// real algorithms (algorithm attributes are not readable), the workspace
// beyond checking that it is as large as claimed, pointer-array batches,
// ReLU bit-mask and BGRADA/BGRADB epilogues, fp16/fp8/int8 types, scale and
// amax pointers, device pointer modes. Setting an attribute of those gives
// CUBLAS_STATUS_NOT_SUPPORTED rather than being ignored, as do negative
// batch strides and batched bias gradients that would share one vector.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/Runtime.h"

#include "runtime/cpu/Kernels.h"

#include <cblas.h>
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

/// The handle. The real one holds the device and the heuristics cache; the
/// stand-in needs only its identity.
struct cublasLtContext {
  int device = 0;
};

namespace {

//===----------------------------------------------------------------------===//
// Live objects
//===----------------------------------------------------------------------===//

enum class ObjectKind { Handle, Layout, MatmulDesc, Preference };

/// Every handle and descriptor created and not yet destroyed, so that a use
/// after destroy is an error status instead of a read of freed memory.
class LiveObjects {
public:
  void add(const void *p, ObjectKind kind) {
    std::lock_guard<std::mutex> lock(mutex);
    objects[p] = kind;
  }
  bool remove(const void *p, ObjectKind kind) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = objects.find(p);
    if (it == objects.end() || it->second != kind)
      return false;
    objects.erase(it);
    return true;
  }
  bool contains(const void *p, ObjectKind kind) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = objects.find(p);
    return it != objects.end() && it->second == kind;
  }

private:
  std::mutex mutex;
  std::unordered_map<const void *, ObjectKind> objects;
};

/// Never destroyed: descriptors may be destroyed from static destructors.
LiveObjects &live() {
  static LiveObjects *objects = new LiveObjects();
  return *objects;
}

//===----------------------------------------------------------------------===//
// Descriptors and their attributes
//===----------------------------------------------------------------------===//

/// A matrix layout, with the attribute types of
/// cublasLtMatrixLayoutAttribute_t.
struct Layout {
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batchCount = 1;
  int64_t batchStride = 0;
  int64_t planeOffset = 0;
  uint32_t batchMode = CUBLASLT_BATCH_MODE_STRIDED;
};

/// A matmul descriptor, with the attribute types of
/// cublasLtMatmulDescAttributes_t.
struct MatmulDesc {
  int32_t computeType = CUBLAS_COMPUTE_32F;
  int32_t scaleType = CUDA_R_32F;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N, transC = CUBLAS_OP_N;
  int32_t fillMode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int64_t biasBatchStride = 0;
  int32_t biasType = -1; ///< -1: D's type
  void *aux = nullptr;
  int64_t auxLd = 0, auxBatchStride = 0;
  int32_t auxType = -1; ///< -1: D's type
  int32_t smCountTarget = 0;
};

/// A heuristic preference, with the attribute types of
/// cublasLtMatmulPreferenceAttributes_t.
struct Preference {
  uint32_t searchMode = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t maxWorkspaceBytes = 0;
  uint32_t reductionSchemeMask = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t minAlignment[4] = {256, 256, 256, 256}; ///< A, B, C, D
  float maxWavesCount = 0.0f;
  uint64_t implMask = ~uint64_t(0);
};

/// Where an attribute lives in its descriptor; a null `data` for one the
/// stand-in does not know.
struct Field {
  void *data = nullptr;
  size_t size = 0;
};

template <typename T> Field fieldOf(T &value) { return {&value, sizeof(T)}; }

Field layoutField(Layout &l, cublasLtMatrixLayoutAttribute_t attr) {
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE:
    return fieldOf(l.type);
  case CUBLASLT_MATRIX_LAYOUT_ORDER:
    return fieldOf(l.order);
  case CUBLASLT_MATRIX_LAYOUT_ROWS:
    return fieldOf(l.rows);
  case CUBLASLT_MATRIX_LAYOUT_COLS:
    return fieldOf(l.cols);
  case CUBLASLT_MATRIX_LAYOUT_LD:
    return fieldOf(l.ld);
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    return fieldOf(l.batchCount);
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    return fieldOf(l.batchStride);
  case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
    return fieldOf(l.planeOffset);
  case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:
    return fieldOf(l.batchMode);
  }
  return {};
}

/// The attributes the stand-in emulates; the others (scale and amax
/// pointers, fp8 modes, emulation descriptors) are not settable, since
/// accepting them would silently compute something else.
Field descField(MatmulDesc &d, cublasLtMatmulDescAttributes_t attr) {
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    return fieldOf(d.computeType);
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    return fieldOf(d.scaleType);
  case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    return fieldOf(d.pointerMode);
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return fieldOf(d.transA);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return fieldOf(d.transB);
  case CUBLASLT_MATMUL_DESC_TRANSC:
    return fieldOf(d.transC);
  case CUBLASLT_MATMUL_DESC_FILL_MODE:
    return fieldOf(d.fillMode);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return fieldOf(d.epilogue);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return fieldOf(d.bias);
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
    return fieldOf(d.biasBatchStride);
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    return fieldOf(d.biasType);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    return fieldOf(d.aux);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    return fieldOf(d.auxLd);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    return fieldOf(d.auxBatchStride);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
    return fieldOf(d.auxType);
  case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
    return fieldOf(d.smCountTarget);
  default:
    return {};
  }
}

Field preferenceField(Preference &p,
                      cublasLtMatmulPreferenceAttributes_t attr) {
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
    return fieldOf(p.searchMode);
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return fieldOf(p.maxWorkspaceBytes);
  case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
    return fieldOf(p.reductionSchemeMask);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    return fieldOf(p.minAlignment[0]);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    return fieldOf(p.minAlignment[1]);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    return fieldOf(p.minAlignment[2]);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return fieldOf(p.minAlignment[3]);
  case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
    return fieldOf(p.maxWavesCount);
  case CUBLASLT_MATMUL_PREF_IMPL_MASK:
    return fieldOf(p.implMask);
  }
  return {};
}

/// Set*Attribute: the buffer must be there and of the attribute's size.
cublasStatus_t setField(Field field, const void *buf, size_t sizeInBytes) {
  if (!field.data)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!buf || sizeInBytes != field.size)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(field.data, buf, field.size);
  return CUBLAS_STATUS_SUCCESS;
}

/// Get*Attribute: with sizeInBytes 0, only the size needed is reported.
cublasStatus_t getField(Field field, void *buf, size_t sizeInBytes,
                        size_t *sizeWritten) {
  if (!field.data)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (sizeInBytes == 0) {
    if (!sizeWritten)
      return CUBLAS_STATUS_INVALID_VALUE;
    *sizeWritten = field.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || sizeInBytes != field.size)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, field.data, field.size);
  if (sizeWritten)
    *sizeWritten = field.size;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Object, typename Handle>
Object *lookup(Handle handle, ObjectKind kind) {
  if (!handle || !live().contains(handle, kind))
    return nullptr;
  return reinterpret_cast<Object *>(handle);
}

template <typename Object, typename Handle>
cublasStatus_t create(Handle *out, ObjectKind kind, const Object &init) {
  if (!out)
    return CUBLAS_STATUS_INVALID_VALUE;
  Object *object = new Object(init);
  live().add(object, kind);
  *out = reinterpret_cast<Handle>(object);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Object, typename Handle>
cublasStatus_t destroy(Handle handle, ObjectKind kind) {
  if (!handle)
    return CUBLAS_STATUS_SUCCESS;
  if (!live().remove(handle, kind))
    return CUBLAS_STATUS_INVALID_VALUE;
  delete reinterpret_cast<Object *>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

const char *typeName(int32_t type) {
  switch (type) {
  case CUDA_R_32F:
    return "f32";
  case CUDA_R_16BF:
    return "bf16";
  case CUDA_R_16F:
    return "f16";
  case CUDA_R_64F:
    return "f64";
  case CUDA_R_8I:
    return "i8";
  case CUDA_R_32I:
    return "i32";
  default:
    return "unsupported type";
  }
}

int64_t elementBytes(int32_t type) { return type == CUDA_R_16BF ? 2 : 4; }

/// One matrix of the problem as the work reads or writes it.
struct Matrix {
  int32_t type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 0;
  bool rowMajor = false;
  int32_t batch = 1;
  int64_t stride = 0;

  int64_t offset(int64_t r, int64_t c) const {
    return rowMajor ? r * ld + c : r + c * ld;
  }
  /// Elements from the first to one past the last that the batches touch;
  /// saturates instead of overflowing, so that a huge ld fails the bounds
  /// check instead of passing it.
  uint64_t spanElements() const {
    if (rows == 0 || cols == 0)
      return 0;
    uint64_t outer = rowMajor ? rows - 1 : cols - 1;
    uint64_t inner = rowMajor ? cols : rows;
    uint64_t span, batches;
    if (__builtin_mul_overflow(outer, (uint64_t)ld, &span) ||
        __builtin_add_overflow(span, inner, &span) ||
        __builtin_mul_overflow((uint64_t)(batch - 1), (uint64_t)stride,
                               &batches) ||
        __builtin_add_overflow(span, batches, &span))
      return std::numeric_limits<uint64_t>::max();
    return span;
  }
  uint64_t spanBytes() const {
    uint64_t bytes;
    if (__builtin_mul_overflow(spanElements(), (uint64_t)elementBytes(type),
                               &bytes))
      return std::numeric_limits<uint64_t>::max();
    return bytes;
  }
  /// "bf16 [64 x 32] col-major, ld 64, batch 4, stride 2048".
  std::string describe() const {
    std::string s = std::string(typeName(type)) + " [" + std::to_string(rows) +
                    " x " + std::to_string(cols) + "] " +
                    (rowMajor ? "row-major" : "col-major") + ", ld " +
                    std::to_string(ld);
    if (batch > 1)
      s += ", batch " + std::to_string(batch) + ", stride " +
           std::to_string(stride);
    return s;
  }
  bool operator==(const Matrix &o) const {
    return type == o.type && rows == o.rows && cols == o.cols && ld == o.ld &&
           rowMajor == o.rowMajor && batch == o.batch && stride == o.stride;
  }
};

/// What the epilogue does, decoded from cublasLtEpilogue_t.
struct EpilogueSteps {
  bool bias = false;     ///< add bias[row] (read)
  bool relu = false;     ///< max(v, 0)
  bool gelu = false;     ///< gelu(v)
  bool saveAux = false;  ///< aux = v before the activation
  bool dgelu = false;    ///< v * gelu'(aux)
  bool biasGrad = false; ///< bias[row] = sum over columns of D (written)
};

/// The emulated epilogues; false for the others.
bool decodeEpilogue(uint32_t epilogue, EpilogueSteps &steps) {
  steps = EpilogueSteps();
  switch (epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    return true;
  case CUBLASLT_EPILOGUE_RELU:
    steps.relu = true;
    return true;
  case CUBLASLT_EPILOGUE_BIAS:
    steps.bias = true;
    return true;
  case CUBLASLT_EPILOGUE_RELU_BIAS:
    steps.bias = steps.relu = true;
    return true;
  case CUBLASLT_EPILOGUE_GELU:
    steps.gelu = true;
    return true;
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    steps.bias = steps.gelu = true;
    return true;
  case CUBLASLT_EPILOGUE_GELU_AUX:
    steps.gelu = steps.saveAux = true;
    return true;
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    steps.bias = steps.gelu = steps.saveAux = true;
    return true;
  case CUBLASLT_EPILOGUE_DGELU:
    steps.dgelu = true;
    return true;
  case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    steps.dgelu = steps.biasGrad = true;
    return true;
  default:
    return false;
  }
}

/// Everything the work needs, by value.
struct Problem {
  Matrix a, b, c, d;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  EpilogueSteps steps;
  int32_t biasType = CUDA_R_32F, auxType = CUDA_R_32F;
  int64_t biasBatchStride = 0, auxLd = 0, auxBatchStride = 0;
};

/// The layout as a Matrix; INVALID_VALUE or NOT_SUPPORTED where cuBLASLt
/// rejects it.
cublasStatus_t matrixOf(const Layout &l, Matrix &out) {
  if (l.order != CUBLASLT_ORDER_COL && l.order != CUBLASLT_ORDER_ROW)
    return CUBLAS_STATUS_NOT_SUPPORTED; // the tiled orders are for IMMA
  if (l.batchMode != CUBLASLT_BATCH_MODE_STRIDED || l.planeOffset != 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // "Usually only values that can be expressed as int32_t are supported."
  if (l.rows > (uint64_t)std::numeric_limits<int32_t>::max() ||
      l.cols > (uint64_t)std::numeric_limits<int32_t>::max())
    return CUBLAS_STATUS_NOT_SUPPORTED;
  out.type = (int32_t)l.type;
  out.rows = (int64_t)l.rows;
  out.cols = (int64_t)l.cols;
  out.ld = l.ld;
  out.rowMajor = l.order == CUBLASLT_ORDER_ROW;
  out.batch = l.batchCount;
  out.stride = l.batchStride;
  // The leading dimension keeps the rows (columns) from overlapping.
  int64_t minLd = std::max<int64_t>(1, out.rowMajor ? out.cols : out.rows);
  if (l.ld < minLd || l.batchCount < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (l.batchStride < 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

bool isTranspose(int32_t op, bool &transposed) {
  // CUBLAS_OP_C is CUBLAS_OP_T for real types; CONJG is not supported.
  transposed = op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  return op == CUBLAS_OP_N || transposed;
}

/// The statuses cuBLASLt returns for a descriptor and its layouts, from both
/// the heuristic and the matmul; fills `p` when the problem is supported.
cublasStatus_t describeProblem(const MatmulDesc &desc, const Layout &la,
                               const Layout &lb, const Layout &lc,
                               const Layout &ld, Problem &p) {
  for (auto [layout, matrix] :
       {std::make_pair(&la, &p.a), std::make_pair(&lb, &p.b),
        std::make_pair(&lc, &p.c), std::make_pair(&ld, &p.d)})
    if (cublasStatus_t status = matrixOf(*layout, *matrix))
      return status;

  if (desc.scaleType != CUDA_R_32F ||
      desc.pointerMode != CUBLASLT_POINTER_MODE_HOST ||
      desc.transC != CUBLAS_OP_N || desc.fillMode != CUBLAS_FILL_MODE_FULL)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!isTranspose(desc.transA, p.transA) ||
      !isTranspose(desc.transB, p.transB))
    return CUBLAS_STATUS_NOT_SUPPORTED;

  // The types cuBLASLt's table of supported combinations has for these
  // compute types.
  bool f32 = p.a.type == CUDA_R_32F && p.b.type == CUDA_R_32F &&
             p.c.type == CUDA_R_32F && p.d.type == CUDA_R_32F;
  bool bf16In = p.a.type == CUDA_R_16BF && p.b.type == CUDA_R_16BF &&
                p.c.type == p.d.type &&
                (p.d.type == CUDA_R_16BF || p.d.type == CUDA_R_32F);
  bool supported = false;
  switch (desc.computeType) {
  case CUBLAS_COMPUTE_32F:
  case CUBLAS_COMPUTE_32F_PEDANTIC:
    supported = f32 || bf16In;
    break;
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    supported = f32;
    break;
  default:
    break;
  }
  if (!supported)
    return CUBLAS_STATUS_NOT_SUPPORTED;

  // op(A) is m x k, op(B) k x n, C and D m x n, all with one batch count.
  p.m = p.d.rows;
  p.n = p.d.cols;
  p.k = p.transA ? p.a.rows : p.a.cols;
  int64_t aRows = p.transA ? p.a.cols : p.a.rows;
  int64_t bRows = p.transB ? p.b.cols : p.b.rows;
  int64_t bCols = p.transB ? p.b.rows : p.b.cols;
  if (aRows != p.m || bRows != p.k || bCols != p.n || p.c.rows != p.m ||
      p.c.cols != p.n)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (p.a.batch != p.d.batch || p.b.batch != p.d.batch ||
      p.c.batch != p.d.batch)
    return CUBLAS_STATUS_INVALID_VALUE;

  if (!decodeEpilogue(desc.epilogue, p.steps))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  bool usesBias = p.steps.bias || p.steps.biasGrad;
  bool usesAux = p.steps.saveAux || p.steps.dgelu;
  // The bias (and bias gradient) is of D's type for these kernels.
  p.biasType = desc.biasType == -1 ? p.d.type : desc.biasType;
  if (usesBias && p.biasType != p.d.type)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  p.biasBatchStride = desc.biasBatchStride;
  if (usesBias && p.biasBatchStride < 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // Batches writing one bias gradient would race.
  if (p.steps.biasGrad && p.d.batch > 1 && p.biasBatchStride < p.m)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (usesAux) {
    // "If set for an unsupported ... combination, cublasLtMatmul() will
    // return CUBLAS_INVALID_VALUE"; the GELU input is of D's type.
    p.auxType = desc.auxType == -1 ? p.d.type : desc.auxType;
    if (p.auxType != p.d.type)
      return CUBLAS_STATUS_INVALID_VALUE;
    // "Must be divisible by 8 and be no less than the number of rows in the
    // output matrix"; the batch stride "must be divisible by 8".
    p.auxLd = desc.auxLd;
    p.auxBatchStride = desc.auxBatchStride;
    if (p.auxLd % 8 != 0 || p.auxLd < p.m || p.auxBatchStride % 8 != 0 ||
        p.auxBatchStride < 0)
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/// The aux matrix: column-major, D's shape, at the descriptor's ld.
Matrix auxMatrix(const Problem &p) {
  Matrix aux;
  aux.type = p.auxType;
  aux.rows = p.m;
  aux.cols = p.n;
  aux.ld = p.auxLd;
  aux.batch = p.d.batch;
  aux.stride = p.auxBatchStride;
  return aux;
}

/// The bias vector: m elements per batch.
Matrix biasMatrix(const Problem &p) {
  Matrix bias;
  bias.type = p.biasType;
  bias.rows = p.m;
  bias.cols = 1;
  bias.ld = std::max<int64_t>(1, p.m);
  bias.batch = p.d.batch;
  bias.stride = p.biasBatchStride;
  return bias;
}

//===----------------------------------------------------------------------===//
// Algorithms and alignment
//===----------------------------------------------------------------------===//

/// The widest access a GPU GEMM kernel makes: 16-byte vector loads.
constexpr uint32_t kMaxVectorBytes = 16;

/// Marks an algorithm the stand-in's heuristic returned ("tgcsimt1").
constexpr uint64_t kAlgoMagic = 0x31746d6973636774ull;

/// What an algorithm assumes, stored in cublasLtMatmulAlgo_t::data.
enum AlgoSlot {
  kMagic = 0,
  kAlignA = 1, // A, B, C, D, bias, aux: bytes the pointers are aligned to
  kAlignBias = 5,
  kAlignAux = 6,
  kWorkspace = 7,
};

/// The largest power of two up to 256 that divides the address and every
/// batch step, as runtime/cuda/Matmul.cu computes it.
uint32_t alignmentOf(const void *p, uint64_t strideBytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256u;
  bits |= strideBytes;
  return (uint32_t)(bits & (~bits + 1));
}

uint32_t alignmentOf(const void *p, const Matrix &m) {
  return alignmentOf(p, m.batch > 1 ? (uint64_t)m.stride * elementBytes(m.type)
                                    : 0);
}

//===----------------------------------------------------------------------===//
// Checks of what would fault
//===----------------------------------------------------------------------===//

std::string pointerText(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

/// The matrix must lie in the device allocation its pointer is in.
void checkSpan(const char *name, const void *p, const Matrix &m) {
  uint64_t need = m.spanBytes();
  if (need == 0)
    return;
  size_t have = tgc::simt::bytesFrom(p);
  if (have == 0)
    tgc::simt::fatal(std::string("cublasLtMatmul: ") + name + " (" +
                     m.describe() + ") at " + pointerText(p) +
                     " is not device memory: it needs " + std::to_string(need) +
                     " bytes of a cudaMalloc allocation");
  if (need > have)
    tgc::simt::fatal(std::string("cublasLtMatmul: ") + name + " (" +
                     m.describe() + ") needs " + std::to_string(need) +
                     " bytes at " + pointerText(p) +
                     " but its allocation has " + std::to_string(have) +
                     " bytes from there");
}

/// The pointer must be as aligned as the algorithm assumed, or its vector
/// loads fault ("misaligned address").
void checkAlignment(const char *name, const void *p, const Matrix &m,
                    uint64_t assumed) {
  uint32_t actual = alignmentOf(p, m);
  if (actual < assumed)
    tgc::simt::fatal(std::string("cublasLtMatmul: misaligned address: ") +
                     name + " (" + m.describe() + ") at " + pointerText(p) +
                     " is " + std::to_string(actual) +
                     "-byte aligned but the algorithm assumes " +
                     std::to_string(assumed) + " bytes");
}

//===----------------------------------------------------------------------===//
// The work
//===----------------------------------------------------------------------===//

float loadElement(const void *base, int32_t type, int64_t i) {
  if (type == CUDA_R_16BF)
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(base)[i]);
  return static_cast<const float *>(base)[i];
}

void storeElement(void *base, int32_t type, int64_t i, float v) {
  if (type == CUDA_R_16BF)
    static_cast<__nv_bfloat16 *>(base)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float *>(base)[i] = v;
}

const void *batchPointer(const void *base, const Matrix &m, int64_t batch) {
  return static_cast<const char *>(base) +
         batch * m.stride * elementBytes(m.type);
}

/// An operand as cblas_sgemm takes it: fp32 column-major with its ld, and
/// whether it is stored transposed. fp32 data is used in place (a
/// row-major matrix is the column-major transpose of the same memory);
/// bf16 (or an ld beyond int) is widened into `scratch`.
struct GemmOperand {
  const float *data;
  int64_t ld;
  bool storedTransposed;
};

GemmOperand gemmOperand(const void *base, const Matrix &m,
                        std::vector<float> &scratch) {
  if (m.type == CUDA_R_32F && m.ld <= std::numeric_limits<int>::max())
    return {static_cast<const float *>(base), m.ld, m.rowMajor};
  scratch.resize((size_t)(m.rows * m.cols));
  for (int64_t c = 0; c < m.cols; ++c)
    for (int64_t r = 0; r < m.rows; ++r)
      scratch[(size_t)(r + c * m.rows)] =
          loadElement(base, m.type, m.offset(r, c));
  return {scratch.data(), m.rows, false};
}

/// The pointers and scalars of one call.
struct Operands {
  const void *a, *b, *c;
  void *d;
  const void *bias;
  void *aux;
  float alpha, beta;
};

void runMatmul(const Problem &p, const Operands &ops) {
  const int64_t m = p.m, n = p.n, k = p.k;
  Matrix aux = auxMatrix(p), bias = biasMatrix(p);
  std::vector<float> acc((size_t)(m * n)), aScratch, bScratch;
  std::vector<double> biasGrad;
  for (int32_t batch = 0; batch < p.d.batch; ++batch) {
    if (k > 0) {
      GemmOperand a =
          gemmOperand(batchPointer(ops.a, p.a, batch), p.a, aScratch);
      GemmOperand b =
          gemmOperand(batchPointer(ops.b, p.b, batch), p.b, bScratch);
      bool ta = p.transA != a.storedTransposed;
      bool tb = p.transB != b.storedTransposed;
      cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans,
                  tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                  ops.alpha, a.data, (int)a.ld, b.data, (int)b.ld, 0.0f,
                  acc.data(), (int)m);
    } else {
      std::fill(acc.begin(), acc.end(), 0.0f); // an empty sum
    }

    const void *c = ops.c ? batchPointer(ops.c, p.c, batch) : nullptr;
    void *d = const_cast<void *>(batchPointer(ops.d, p.d, batch));
    void *biasPtr =
        ops.bias ? const_cast<void *>(batchPointer(ops.bias, bias, batch))
                 : nullptr;
    void *auxPtr = ops.aux
                       ? const_cast<void *>(batchPointer(ops.aux, aux, batch))
                       : nullptr;
    if (p.steps.biasGrad)
      biasGrad.assign((size_t)m, 0.0);
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t row = 0; row < m; ++row) {
        float v = acc[(size_t)(row + col * m)];
        // beta == 0 does not read C, as BLAS promises: NaNs there stay out.
        if (ops.beta != 0.0f)
          v += ops.beta * loadElement(c, p.c.type, p.c.offset(row, col));
        if (p.steps.bias)
          v += loadElement(biasPtr, p.biasType, row);
        if (p.steps.saveAux)
          storeElement(auxPtr, p.auxType, aux.offset(row, col), v);
        if (p.steps.relu)
          v = std::max(v, 0.0f);
        if (p.steps.gelu)
          v = tgc::cpu::gelu_scalar(v, /*tanhApprox=*/true);
        if (p.steps.dgelu)
          v = tgc::cpu::gelu_grad_scalar(
              v, loadElement(auxPtr, p.auxType, aux.offset(row, col)),
              /*tanhApprox=*/true);
        if (p.steps.biasGrad)
          biasGrad[(size_t)row] += v;
        storeElement(d, p.d.type, p.d.offset(row, col), v);
      }
    }
    if (p.steps.biasGrad)
      for (int64_t row = 0; row < m; ++row)
        storeElement(biasPtr, p.biasType, row, (float)biasGrad[(size_t)row]);
  }
}

const char *statusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

/// cuBLAS's own wording.
const char *statusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "the operation completed successfully";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "an absent device architectural feature is required";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "an access to GPU memory space failed";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "the GPU program failed to execute";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "an internal operation failed";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "the functionality requested requires some license";
  }
  return "unknown error";
}

} // namespace

//===----------------------------------------------------------------------===//
// Handles and status strings
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle) {
  return create(lightHandle, ObjectKind::Handle, cublasLtContext());
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (!lightHandle || !live().remove(lightHandle, ObjectKind::Handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  return statusName(status);
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  return statusString(status);
}

const char *cublasGetStatusString(cublasStatus_t status) {
  return statusString(status);
}

//===----------------------------------------------------------------------===//
// Matrix layouts
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  Layout layout;
  layout.type = (uint32_t)type;
  layout.rows = rows;
  layout.cols = cols;
  layout.ld = ld;
  return create(matLayout, ObjectKind::Layout, layout);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return destroy<Layout>(matLayout, ObjectKind::Layout);
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes) {
  Layout *layout = lookup<Layout>(matLayout, ObjectKind::Layout);
  if (!layout)
    return CUBLAS_STATUS_INVALID_VALUE;
  Field field = layoutField(*layout, attr);
  return field.data ? setField(field, buf, sizeInBytes)
                    : CUBLAS_STATUS_INVALID_VALUE; // not an attribute
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(
    cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  Layout *layout = lookup<Layout>(matLayout, ObjectKind::Layout);
  if (!layout)
    return CUBLAS_STATUS_INVALID_VALUE;
  Field field = layoutField(*layout, attr);
  return field.data ? getField(field, buf, sizeInBytes, sizeWritten)
                    : CUBLAS_STATUS_INVALID_VALUE;
}

//===----------------------------------------------------------------------===//
// Matmul descriptors
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  MatmulDesc desc;
  desc.computeType = (int32_t)computeType;
  desc.scaleType = (int32_t)scaleType;
  return create(matmulDesc, ObjectKind::MatmulDesc, desc);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return destroy<MatmulDesc>(matmulDesc, ObjectKind::MatmulDesc);
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes) {
  MatmulDesc *desc = lookup<MatmulDesc>(matmulDesc, ObjectKind::MatmulDesc);
  if (!desc)
    return CUBLAS_STATUS_INVALID_VALUE;
  return setField(descField(*desc, attr), buf, sizeInBytes);
}

cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr, void *buf,
                               size_t sizeInBytes, size_t *sizeWritten) {
  MatmulDesc *desc = lookup<MatmulDesc>(matmulDesc, ObjectKind::MatmulDesc);
  if (!desc)
    return CUBLAS_STATUS_INVALID_VALUE;
  return getField(descField(*desc, attr), buf, sizeInBytes, sizeWritten);
}

//===----------------------------------------------------------------------===//
// Preferences
//===----------------------------------------------------------------------===//

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  return create(pref, ObjectKind::Preference, Preference());
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return destroy<Preference>(pref, ObjectKind::Preference);
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes) {
  Preference *p = lookup<Preference>(pref, ObjectKind::Preference);
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  Field field = preferenceField(*p, attr);
  return field.data ? setField(field, buf, sizeInBytes)
                    : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  Preference *p = lookup<Preference>(pref, ObjectKind::Preference);
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  Field field = preferenceField(*p, attr);
  return field.data ? getField(field, buf, sizeInBytes, sizeWritten)
                    : CUBLAS_STATUS_INVALID_VALUE;
}

//===----------------------------------------------------------------------===//
// Heuristic and matmul
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount) {
  if (!live().contains(lightHandle, ObjectKind::Handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  MatmulDesc *desc = lookup<MatmulDesc>(operationDesc, ObjectKind::MatmulDesc);
  Layout *la = lookup<Layout>(Adesc, ObjectKind::Layout);
  Layout *lb = lookup<Layout>(Bdesc, ObjectKind::Layout);
  Layout *lc = lookup<Layout>(Cdesc, ObjectKind::Layout);
  Layout *ld = lookup<Layout>(Ddesc, ObjectKind::Layout);
  Preference *pref = lookup<Preference>(preference, ObjectKind::Preference);
  if (!desc || !la || !lb || !lc || !ld || !pref)
    return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  if (cublasStatus_t status = describeProblem(*desc, *la, *lb, *lc, *ld, p))
    return status;

  // No kernel reads narrower than an element, and this one is an FMA kernel
  // accumulating in fp32 (what CUBLASLT_MATMUL_PREF_IMPL_MASK filters on).
  const Matrix *matrices[4] = {&p.a, &p.b, &p.c, &p.d};
  for (int i = 0; i < 4; ++i)
    if (pref->minAlignment[i] < elementBytes(matrices[i]->type))
      return CUBLAS_STATUS_NOT_SUPPORTED;
  uint64_t impl =
      CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA |
      CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F |
      (p.a.type == CUDA_R_16BF ? CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF
                               : CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F);
  if ((impl & pref->implMask) != impl)
    return CUBLAS_STATUS_NOT_SUPPORTED;

  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof(result));
  for (int i = 0; i < 4; ++i)
    result.algo.data[kAlignA + i] =
        std::min(pref->minAlignment[i], kMaxVectorBytes);
  // The bias and aux pointers are not dereferenced here, but their
  // alignment is what the algorithm then assumes.
  if (p.steps.bias || p.steps.biasGrad) {
    uint32_t align =
        std::min(alignmentOf(desc->bias, biasMatrix(p)), kMaxVectorBytes);
    if (align < elementBytes(p.biasType))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    result.algo.data[kAlignBias] = align;
  }
  if (p.steps.saveAux || p.steps.dgelu) {
    uint32_t align =
        std::min(alignmentOf(desc->aux, auxMatrix(p)), kMaxVectorBytes);
    if (align < elementBytes(p.auxType))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    result.algo.data[kAlignAux] = align;
  }
  result.algo.data[kMagic] = kAlgoMagic;
  result.algo.data[kWorkspace] = 0;
  result.workspaceSize =
      0; // within any CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  heuristicResultsArray[0] = result;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream) {
  if (!live().contains(lightHandle, ObjectKind::Handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulDesc *desc = lookup<MatmulDesc>(computeDesc, ObjectKind::MatmulDesc);
  Layout *la = lookup<Layout>(Adesc, ObjectKind::Layout);
  Layout *lb = lookup<Layout>(Bdesc, ObjectKind::Layout);
  Layout *lc = lookup<Layout>(Cdesc, ObjectKind::Layout);
  Layout *ld = lookup<Layout>(Ddesc, ObjectKind::Layout);
  if (!desc || !la || !lb || !lc || !ld || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  if (cublasStatus_t status = describeProblem(*desc, *la, *lb, *lc, *ld, p))
    return status;
  if (algo && algo->data[kMagic] != kAlgoMagic)
    return CUBLAS_STATUS_INVALID_VALUE; // not from the heuristic
  if (algo && workspaceSizeInBytes < algo->data[kWorkspace])
    return CUBLAS_STATUS_INVALID_VALUE;

  // Host pointer mode: the scalars are read now, not when the work runs.
  Operands ops;
  ops.alpha = *static_cast<const float *>(alpha);
  ops.beta = *static_cast<const float *>(beta);
  ops.a = A;
  ops.b = B;
  ops.c = ops.beta != 0.0f ? C : nullptr;
  ops.d = D;
  ops.bias = p.steps.bias || p.steps.biasGrad ? desc->bias : nullptr;
  ops.aux = p.steps.saveAux || p.steps.dgelu ? desc->aux : nullptr;

  // In place (C == D) needs one layout for both.
  if (C == D && !(p.c == p.d))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (((p.steps.bias || p.steps.biasGrad) && !ops.bias) ||
      ((p.steps.saveAux || p.steps.dgelu) && !ops.aux))
    return CUBLAS_STATUS_INVALID_VALUE;

  // What would fault on the device. k == 0 reads neither A nor B, and m or
  // n == 0 touches nothing.
  if (p.m == 0 || p.n == 0)
    return CUBLAS_STATUS_SUCCESS;
  Matrix bias = biasMatrix(p), aux = auxMatrix(p);
  checkSpan("A", A, p.a);
  checkSpan("B", B, p.b);
  if (ops.c)
    checkSpan("C", C, p.c);
  checkSpan("D", D, p.d);
  if (ops.bias)
    checkSpan(p.steps.biasGrad ? "the bias gradient" : "the bias", ops.bias,
              bias);
  if (ops.aux)
    checkSpan("the GELU aux", ops.aux, aux);
  if (workspaceSizeInBytes > 0 &&
      tgc::simt::bytesFrom(workspace) < workspaceSizeInBytes)
    tgc::simt::fatal(
        "cublasLtMatmul: the workspace at " + pointerText(workspace) + " is " +
        std::to_string(workspaceSizeInBytes) +
        " bytes by workspaceSizeInBytes but its allocation has " +
        std::to_string(tgc::simt::bytesFrom(workspace)) + " bytes from there");
  // Without an algorithm the library picks one for the actual pointers.
  if (algo) {
    if (p.k > 0) {
      checkAlignment("A", A, p.a, algo->data[kAlignA]);
      checkAlignment("B", B, p.b, algo->data[kAlignA + 1]);
    }
    if (ops.c)
      checkAlignment("C", C, p.c, algo->data[kAlignA + 2]);
    checkAlignment("D", D, p.d, algo->data[kAlignA + 3]);
    if (ops.bias)
      checkAlignment("the bias", ops.bias, bias, algo->data[kAlignBias]);
    if (ops.aux)
      checkAlignment("the GELU aux", ops.aux, aux, algo->data[kAlignAux]);
  } else {
    const Matrix *matrices[4] = {&p.a, &p.b, &p.c, &p.d};
    const void *pointers[4] = {p.k > 0 ? A : nullptr, p.k > 0 ? B : nullptr,
                               ops.c, D};
    const char *names[4] = {"A", "B", "C", "D"};
    for (int i = 0; i < 4; ++i)
      if (pointers[i])
        checkAlignment(names[i], pointers[i], *matrices[i],
                       elementBytes(matrices[i]->type));
  }

  std::string what = "cublasLtMatmul " + std::to_string(p.m) + "x" +
                     std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
                     typeName(p.a.type) + " -> " + typeName(p.d.type);
  if (p.d.batch > 1)
    what += ", batch " + std::to_string(p.d.batch);
  tgc::simt::enqueue(stream, what, [p, ops] { runMatmul(p, ops); });
  return CUBLAS_STATUS_SUCCESS;
}

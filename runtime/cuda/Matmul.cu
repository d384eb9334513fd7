//===- Matmul.cu - Batched, broadcasting GEMMs on cuBLASLt ---------*- C++ -*-===//
//
// tg.matmul on cuBLASLt, in row-major terms (Kernels.h explains the mapping
// onto cuBLASLt's column-major). The batch dims are first simplified: dims
// of size 1 in c are dropped and adjacent dims that broadcast the same way
// are merged, because their strides compose. Then
//  - a shared b and a full, untransposed a fold into the rows of one GEMM;
//  - otherwise the innermost merged dim becomes cuBLASLt's strided batch
//    (stride 0 for a broadcast operand) and the host loops over the rest.
//
// A plan (the operation descriptor, the three layouts and the algorithm
// cuBLASLt's heuristic picked) is built once per shape, type, epilogue and
// operand alignment and kept in the Context's MatmulPlanCache. When cuBLASLt
// has no algorithm for a fused epilogue, the plan runs the plain product and
// a small kernel applies the epilogue; when it has none for a strided batch,
// the batches run one by one.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/DeviceMath.cuh"

#include <array>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

namespace tgc::cuda {

namespace {

//===----------------------------------------------------------------------===//
// Shapes and plans
//===----------------------------------------------------------------------===//

template <typename T> constexpr cudaDataType_t cudaTypeOf();
template <> constexpr cudaDataType_t cudaTypeOf<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cudaTypeOf<bf16>() { return CUDA_R_16BF; }

/// One cublasLtMatmul call in row-major terms: c (batch x [m, n]) =
/// op(a) · op(b), with batch strides in elements (0: broadcast).
struct GemmCall {
  int64_t m, n, k;
  bool transA, transB;
  int64_t batch, strideA, strideB, strideC;
};

/// The largest power of two up to 256 that divides the address and every
/// batch step: what cuBLASLt may assume about each matrix.
uint32_t alignmentOf(const void *p, int64_t strideBytes) {
  uint64_t bits = (uint64_t)reinterpret_cast<uintptr_t>(p) | 256u;
  if (strideBytes > 0)
    bits |= (uint64_t)strideBytes;
  return (uint32_t)(bits & (~bits + 1));
}

/// Everything a plan depends on.
using PlanKey = std::array<int64_t, 18>;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// Whether the epilogue runs inside cuBLASLt (else a kernel follows).
  bool fusedEpilogue = false;
};

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case Epilogue::BiasGelu:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case Epilogue::GeluGrad:
    return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool usesBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::BiasGelu;
}
bool usesAux(Epilogue e) {
  return e == Epilogue::Gelu || e == Epilogue::BiasGelu ||
         e == Epilogue::GeluGrad;
}

/// The pointers of one call.
struct GemmOperands {
  const void *a, *b;
  void *c;
  const void *bias;
  void *aux;
};

} // namespace

//===----------------------------------------------------------------------===//
// MatmulPlanCache
//===----------------------------------------------------------------------===//

class MatmulPlanCache {
public:
  /// Plans keyed by shape; the mutex also covers a plan's use, since calls
  /// set the per-call pointers on the shared descriptor.
  std::mutex mutex;
  std::map<PlanKey, Plan> plans;
};

MatmulPlanCache *newMatmulPlanCache() { return new MatmulPlanCache(); }

namespace {

/// Sets up `desc` and the layouts of `call`; the bias and aux pointers are
/// set too since the heuristic reads their alignment.
Plan describe(const GemmCall &call, cudaDataType_t abType,
              cudaDataType_t cType, cublasComputeType_t compute,
              Epilogue epilogue, const GemmOperands &ops) {
  Plan plan;
  TGC_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
  // cuBLASLt's A is our b and its B our a (Kernels.h).
  cublasOperation_t opA = call.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = call.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
  TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
  cublasLtEpilogue_t epi = ltEpilogue(epilogue);
  TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (usesBias(epilogue))
    TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ops.bias,
        sizeof(ops.bias)));
  if (usesAux(epilogue)) {
    int64_t ld = call.n, batchStride = call.m * call.n;
    TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &ops.aux,
        sizeof(ops.aux)));
    TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
        &batchStride, sizeof(batchStride)));
  }

  auto layout = [&](cublasLtMatrixLayout_t *l, cudaDataType_t type,
                    int64_t rows, int64_t cols, int64_t stride) {
    int64_t ld = rows > 1 ? rows : 1;
    TGC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows,
                                                (uint64_t)cols, ld));
    if (call.batch > 1) {
      int32_t count = (int32_t)call.batch;
      TGC_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      TGC_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
          sizeof(stride)));
    }
  };
  // Stored shapes, column-major: b is [n, k] (or [k, n] with transB), a is
  // [k, m] (or [m, k] with transA), c is [n, m].
  if (call.transB)
    layout(&plan.a, abType, call.k, call.n, call.strideB);
  else
    layout(&plan.a, abType, call.n, call.k, call.strideB);
  if (call.transA)
    layout(&plan.b, abType, call.m, call.k, call.strideA);
  else
    layout(&plan.b, abType, call.k, call.m, call.strideA);
  layout(&plan.c, cType, call.n, call.m, call.strideC);
  return plan;
}

void destroy(Plan &plan) {
  if (plan.desc)
    cublasLtMatmulDescDestroy(plan.desc);
  if (plan.a)
    cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b)
    cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.c)
    cublasLtMatrixLayoutDestroy(plan.c);
  plan = Plan();
}

/// Asks the heuristic for the best algorithm; false when it has none.
bool pickAlgorithm(Plan &plan, const uint32_t align[4]) {
  Context &ctx = Context::get();
  cublasLtMatmulPreference_t pref;
  TGC_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t workspace = Context::kGemmWorkspaceBytes;
  TGC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    TGC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, attrs[i], &align[i], sizeof(align[i])));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      ctx.cublasLt(), plan.desc, plan.a, plan.b, plan.c, plan.c, pref, 1,
      &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    return false;
  plan.algo = result.algo;
  return true;
}

//===----------------------------------------------------------------------===//
// The epilogue when cuBLASLt cannot fuse it
//===----------------------------------------------------------------------===//

/// Elementwise over `count` elements of c ([rows, n] row-major): the bias
/// (indexed by column), GELU with the pre-activation saved, or the GELU
/// gradient. Grid-stride loop, one element per thread per iteration.
template <typename TC>
__global__ void epilogueKernel(TC *c, const TC *bias, TC *aux, int64_t count,
                               int64_t n, Epilogue epilogue) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = toFloat(c[i]);
    if (epilogue == Epilogue::Bias || epilogue == Epilogue::BiasGelu)
      v += toFloat(bias[i % n]);
    if (epilogue == Epilogue::Gelu || epilogue == Epilogue::BiasGelu) {
      aux[i] = fromFloat<TC>(v);
      v = geluTanh(v);
    } else if (epilogue == Epilogue::GeluGrad) {
      v *= geluTanhGrad(toFloat(aux[i]));
    }
    c[i] = fromFloat<TC>(v);
  }
}

template <typename TC>
void launchEpilogue(TC *c, const void *bias, void *aux, int64_t count,
                    int64_t n, Epilogue epilogue, cudaStream_t stream) {
  constexpr int kThreads = 256;
  epilogueKernel<TC><<<gridStrideBlocks(count, kThreads), kThreads, 0,
                       stream>>>(c, static_cast<const TC *>(bias),
                                 static_cast<TC *>(aux), count, n, epilogue);
  TGC_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Running GEMMs
//===----------------------------------------------------------------------===//

template <typename TA, typename TC> class GemmRunner {
public:
  GemmRunner(const MatmulOptions &options, cudaStream_t stream)
      : options(options), stream(stream),
        compute(std::is_same<TA, float>::value && options.allowTf32
                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                    : CUBLAS_COMPUTE_32F) {}

  /// Runs `call` on the operands; false when cuBLASLt has no algorithm for
  /// it (the caller then splits the batch).
  bool run(const GemmCall &call, const GemmOperands &ops) {
    Context &ctx = Context::get();
    MatmulPlanCache &cache = ctx.matmulPlans();
    std::lock_guard<std::mutex> lock(cache.mutex);
    const Plan *plan = findPlan(cache, call, ops);
    if (!plan)
      return false;
    if (plan->fusedEpilogue && usesBias(options.epilogue))
      TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ops.bias,
          sizeof(ops.bias)));
    if (plan->fusedEpilogue && usesAux(options.epilogue))
      TGC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &ops.aux,
          sizeof(ops.aux)));
    float alpha = 1.0f, beta = options.accumulate ? 1.0f : 0.0f;
    TGC_CUBLAS_CHECK(cublasLtMatmul(
        ctx.cublasLt(), plan->desc, &alpha, ops.b, plan->a, ops.a, plan->b,
        &beta, ops.c, plan->c, ops.c, plan->c, &plan->algo,
        ctx.gemmWorkspace(), Context::kGemmWorkspaceBytes, stream));
    if (!plan->fusedEpilogue && options.epilogue != Epilogue::None)
      launchEpilogue(static_cast<TC *>(ops.c), ops.bias, ops.aux,
                     call.batch * call.m * call.n, call.n, options.epilogue,
                     stream);
    return true;
  }

private:
  const Plan *findPlan(MatmulPlanCache &cache, const GemmCall &call,
                       const GemmOperands &ops) {
    uint32_t align[4] = {
        alignmentOf(ops.b, call.strideB * (int64_t)sizeof(TA)),
        alignmentOf(ops.a, call.strideA * (int64_t)sizeof(TA)),
        alignmentOf(ops.c, call.strideC * (int64_t)sizeof(TC)),
        alignmentOf(ops.c, call.strideC * (int64_t)sizeof(TC))};
    Epilogue epilogue = options.epilogue;
    uint32_t biasAlign = usesBias(epilogue) ? alignmentOf(ops.bias, 0) : 0;
    uint32_t auxAlign =
        usesAux(epilogue)
            ? alignmentOf(ops.aux, call.strideC * (int64_t)sizeof(TC))
            : 0;
    PlanKey key = {cudaTypeOf<TA>(), cudaTypeOf<TC>(), compute, call.m,
                   call.n, call.k, call.transA, call.transB, call.batch,
                   call.strideA, call.strideB, call.strideC, (int64_t)epilogue,
                   align[0], align[1], align[2], biasAlign, auxAlign};
    auto it = cache.plans.find(key);
    if (it != cache.plans.end())
      return it->second.desc ? &it->second : nullptr;

    // cuBLASLt's GELU aux needs a leading dimension that is a multiple of 8.
    bool tryFused = epilogue != Epilogue::None &&
                    (!usesAux(epilogue) || call.n % 8 == 0);
    Plan plan;
    if (tryFused) {
      plan = describe(call, cudaTypeOf<TA>(), cudaTypeOf<TC>(), compute,
                      epilogue, ops);
      plan.fusedEpilogue = pickAlgorithm(plan, align);
      if (!plan.fusedEpilogue)
        destroy(plan);
    }
    if (!plan.fusedEpilogue) {
      plan = describe(call, cudaTypeOf<TA>(), cudaTypeOf<TC>(), compute,
                      Epilogue::None, ops);
      if (!pickAlgorithm(plan, align))
        destroy(plan); // remembered as "no algorithm"
    }
    auto inserted = cache.plans.emplace(key, plan).first;
    return inserted->second.desc ? &inserted->second : nullptr;
  }

  const MatmulOptions &options;
  cudaStream_t stream;
  cublasComputeType_t compute;
};

/// A merged batch dim: its size and each operand's stride in elements
/// (0 where the operand broadcasts).
struct BatchDim {
  int64_t size, strideA, strideB, strideC;
};

template <typename TA, typename TC>
void matmulImpl(const TA *a, const TA *b, TC *c, int64_t m, int64_t n,
                int64_t k, bool transA, bool transB, const int64_t *aBatch,
                const int64_t *bBatch, const int64_t *cBatch, int batchRank,
                const MatmulOptions &options, cudaStream_t stream) {
  Epilogue epilogue = options.epilogue;
  if (usesBias(epilogue) && !options.bias)
    throw Error("tgc::cuda::matmul: the bias epilogue needs a bias");
  if (usesAux(epilogue) && !options.geluAux)
    throw Error("tgc::cuda::matmul: the gelu epilogues need geluAux");
  if (options.accumulate && epilogue != Epilogue::None &&
      epilogue != Epilogue::Bias)
    throw Error("tgc::cuda::matmul: accumulate combines only with the bias "
                "epilogue");

  // Simplify the batch dims, innermost last.
  int64_t batch = 1;
  std::vector<BatchDim> dims;
  int64_t aSize = m * k, bSize = k * n, cSize = m * n;
  {
    std::vector<BatchDim> reversed;
    int64_t as = aSize, bs = bSize, cs = cSize;
    for (int i = batchRank - 1; i >= 0; --i) {
      int64_t size = cBatch[i];
      batch *= size;
      BatchDim dim{size, aBatch[i] == 1 ? 0 : as, bBatch[i] == 1 ? 0 : bs, cs};
      as *= aBatch[i];
      bs *= bBatch[i];
      cs *= size;
      if (size == 1)
        continue;
      if (!reversed.empty()) {
        // Merge with the dim inside it when both broadcast the same way:
        // then the outer stride is the inner one times the inner size.
        BatchDim &inner = reversed.back();
        bool sameA = (dim.strideA == 0) == (inner.strideA == 0);
        bool sameB = (dim.strideB == 0) == (inner.strideB == 0);
        if (sameA && sameB) {
          inner.size *= size;
          continue;
        }
      }
      reversed.push_back(dim);
    }
    dims.assign(reversed.rbegin(), reversed.rend());
  }
  if (m <= 0 || n <= 0 || batch <= 0)
    return;

  if (k <= 0) {
    // An empty sum: c = 0 (or unchanged when accumulating), then the
    // epilogue on it.
    if (!options.accumulate)
      TGC_CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(TC) * batch * cSize, stream));
    if (epilogue != Epilogue::None)
      launchEpilogue(c, options.bias, options.geluAux, batch * cSize, n,
                     epilogue, stream);
    return;
  }

  GemmRunner<TA, TC> runner(options, stream);
  auto operandsAt = [&](int64_t aOff, int64_t bOff, int64_t cOff) {
    void *aux = options.geluAux ? static_cast<TC *>(options.geluAux) + cOff
                                : nullptr;
    return GemmOperands{a + aOff, b + bOff, c + cOff, options.bias, aux};
  };

  // [batch..., M, K] · [K, N]: the batches are more rows of one GEMM.
  bool bShared = true, aFull = true;
  for (const BatchDim &d : dims) {
    bShared &= d.strideB == 0;
    aFull &= d.strideA != 0;
  }
  if (bShared && aFull && !transA) {
    GemmCall call{batch * m, n, k, transA, transB, 1, 0, 0, 0};
    if (!runner.run(call, operandsAt(0, 0, 0)))
      throw Error("cuBLASLt has no algorithm for a " +
                  std::to_string(batch * m) + "x" + std::to_string(n) + "x" +
                  std::to_string(k) + " GEMM");
    return;
  }

  // The innermost merged dim is cuBLASLt's batch; the host loops over the
  // others. When cuBLASLt cannot run that batch, it loops over it too.
  BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, 0} : dims.back();
  int outerRank = dims.empty() ? 0 : (int)dims.size() - 1;
  int64_t outerCount = batch / inner.size;
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t aOff = 0, bOff = 0, cOff = 0, rest = o;
    for (int i = outerRank - 1; i >= 0; --i) {
      int64_t idx = rest % dims[i].size;
      rest /= dims[i].size;
      aOff += idx * dims[i].strideA;
      bOff += idx * dims[i].strideB;
      cOff += idx * dims[i].strideC;
    }
    GemmCall call{m, n, k, transA, transB, inner.size, inner.strideA,
                  inner.strideB, inner.strideC};
    if (runner.run(call, operandsAt(aOff, bOff, cOff)))
      continue;
    GemmCall single{m, n, k, transA, transB, 1, 0, 0, 0};
    for (int64_t i = 0; i < inner.size; ++i)
      if (!runner.run(single, operandsAt(aOff + i * inner.strideA,
                                         bOff + i * inner.strideB,
                                         cOff + i * inner.strideC)))
        throw Error("cuBLASLt has no algorithm for a " + std::to_string(m) +
                    "x" + std::to_string(n) + "x" + std::to_string(k) +
                    " GEMM");
  }
}

} // namespace

void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream) {
  matmulImpl(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
             batchRank, options, stream);
}

void matmul(const bf16 *a, const bf16 *b, bf16 *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream) {
  matmulImpl(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
             batchRank, options, stream);
}

void matmul(const bf16 *a, const bf16 *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream) {
  matmulImpl(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
             batchRank, options, stream);
}

} // namespace tgc::cuda

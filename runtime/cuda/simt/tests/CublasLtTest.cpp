//===- CublasLtTest.cpp - The cuBLASLt stand-in against loops ---*- C++ -*-===//
//
// runtime/cuda/simt/CublasLt.cpp through the cuBLASLt API, on the host
// runtime's device memory: every transpose combination, row-major layouts,
// strided and broadcast batches and each epilogue against a naive loop with
// the CPU runtime's GELU, then every status the stand-in returns and every
// fault it stops the program for.
//
// Inputs are quarter-integers in [-2, 2]: exact in bf16, with products and
// short sums exact in fp32, so products compare exactly and only the
// rounding of D (and the GELU) is in play.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// Quarter-integers in [-2, 2] from a fixed linear congruential sequence.
std::vector<float> quarterValues(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t s = seed * 2654435761u + 12345u;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = (float)((int)((s >> 16) % 17) - 8) * 0.25f;
  }
  return v;
}

size_t bytesOf(cudaDataType_t type) { return type == CUDA_R_16BF ? 2 : 4; }

/// A matrix as cuBLASLt describes it.
struct MatrixSpec {
  cudaDataType_t type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 0;
  bool rowMajor = false;
  int32_t batch = 1;
  int64_t stride = 0;

  int64_t at(int64_t r, int64_t c, int64_t b) const {
    return b * stride + (rowMajor ? r * ld + c : r + c * ld);
  }
  /// Elements from the first to one past the last of every batch.
  size_t span() const {
    return (size_t)((batch - 1) * stride + (rowMajor ? (rows - 1) * ld + cols
                                                     : (cols - 1) * ld + rows));
  }
};

MatrixSpec colMajor(cudaDataType_t type, int64_t rows, int64_t cols,
                    int64_t ld = 0) {
  return {type, rows, cols, ld ? ld : rows, false, 1, 0};
}

/// cudaMalloc'd memory with fp32 uploads and downloads in its element type.
class DeviceArray {
public:
  DeviceArray(cudaDataType_t type, size_t count) : type(type), count(count) {
    EXPECT_EQ(cudaMalloc(&ptr, count * bytesOf(type)), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  void upload(const std::vector<float> &values) {
    ASSERT_EQ(values.size(), count);
    std::vector<char> bytes(count * bytesOf(type));
    for (size_t i = 0; i < count; ++i) {
      if (type == CUDA_R_16BF) {
        __nv_bfloat16 b = __float2bfloat16_rn(values[i]);
        std::memcpy(&bytes[2 * i], &b, 2);
      } else {
        std::memcpy(&bytes[4 * i], &values[i], 4);
      }
    }
    ASSERT_EQ(
        cudaMemcpy(ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
        cudaSuccess);
  }
  std::vector<float> download() const {
    std::vector<char> bytes(count * bytesOf(type));
    EXPECT_EQ(
        cudaMemcpy(bytes.data(), ptr, bytes.size(), cudaMemcpyDeviceToHost),
        cudaSuccess);
    return toFloats(bytes.data());
  }
  /// The memory as it is now, read without synchronizing (device memory
  /// is host memory in the emulation).
  std::vector<float> peek() const {
    return toFloats(static_cast<const char *>(ptr));
  }

  cudaDataType_t type;
  size_t count;
  void *ptr = nullptr;

private:
  std::vector<float> toFloats(const char *bytes) const {
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
      if (type == CUDA_R_16BF) {
        __nv_bfloat16 b;
        std::memcpy(&b, bytes + 2 * i, 2);
        values[i] = __bfloat162float(b);
      } else {
        std::memcpy(&values[i], bytes + 4 * i, 4);
      }
    }
    return values;
  }
};

float roundTo(cudaDataType_t type, float v) {
  return type == CUDA_R_16BF ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}

//===----------------------------------------------------------------------===//
// One GEMM: descriptors, operands and the naive reference
//===----------------------------------------------------------------------===//

/// A problem in cuBLASLt's terms; C is D's layout unless set.
struct GemmSetup {
  MatrixSpec a, b, c, d;
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  float alpha = 1.0f, beta = 0.0f;
  int64_t auxLd = 0, auxStride = 0, biasStride = 0;
  /// C is D's memory (in place).
  bool inPlace = false;
};

/// m x n x k with the given transposes, column-major, of one type.
GemmSetup plainSetup(cudaDataType_t ab, cudaDataType_t cd, int64_t m, int64_t n,
                     int64_t k, cublasOperation_t opA, cublasOperation_t opB) {
  GemmSetup s;
  s.opA = opA;
  s.opB = opB;
  s.a = opA == CUBLAS_OP_N ? colMajor(ab, m, k) : colMajor(ab, k, m);
  s.b = opB == CUBLAS_OP_N ? colMajor(ab, k, n) : colMajor(ab, n, k);
  s.c = s.d = colMajor(cd, m, n);
  return s;
}

bool epilogueUsesBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}
bool epilogueUsesAux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

/// What the naive loop computes.
struct Expected {
  std::vector<float> d, aux, bias;
};

class Gemm {
public:
  Gemm(cublasLtHandle_t handle, const GemmSetup &setup)
      : handle(handle), s(setup), a(s.a.type, s.a.span()),
        b(s.b.type, s.b.span()), c(s.c.type, s.inPlace ? 1 : s.c.span()),
        d(s.d.type, s.d.span()),
        bias(s.d.type, (size_t)(s.d.rows + (s.d.batch - 1) * s.biasStride)),
        aux(s.d.type, auxCount()) {
    hostA = quarterValues(a.count, 1);
    hostB = quarterValues(b.count, 2);
    hostC = quarterValues(s.c.span(), 3);
    hostBias = quarterValues(bias.count, 4);
    hostAux = quarterValues(aux.count, 5);
    a.upload(hostA);
    b.upload(hostB);
    // D starts as cudaMalloc left it (NaN) unless it is C.
    if (s.inPlace)
      d.upload(hostC);
    else
      c.upload(hostC);
    bias.upload(hostBias);
    aux.upload(hostAux);

    EXPECT_EQ(cublasLtMatmulDescCreate(&desc, s.compute, CUDA_R_32F),
              CUBLAS_STATUS_SUCCESS);
    setDesc(CUBLASLT_MATMUL_DESC_TRANSA, s.opA);
    setDesc(CUBLASLT_MATMUL_DESC_TRANSB, s.opB);
    setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, s.epilogue);
    if (epilogueUsesBias(s.epilogue)) {
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.ptr);
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, s.biasStride);
    }
    if (epilogueUsesAux(s.epilogue)) {
      setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.ptr);
      setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, s.auxLd);
      setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, s.auxStride);
    }
    la = makeLayout(s.a);
    lb = makeLayout(s.b);
    lc = makeLayout(s.c);
    ld = makeLayout(s.d);
    EXPECT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    uint64_t workspace = 1 << 20;
    EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(
                  pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                  sizeof(workspace)),
              CUBLAS_STATUS_SUCCESS);
    // What the operands promise, as runtime/cuda/Matmul.cu tells it.
    const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const MatrixSpec *specs[4] = {&s.a, &s.b, &s.c, &s.d};
    const void *pointers[4] = {a.ptr, b.ptr, s.inPlace ? d.ptr : c.ptr, d.ptr};
    for (int i = 0; i < 4; ++i) {
      uint32_t align = alignmentOf(pointers[i], *specs[i]);
      EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, attrs[i], &align,
                                                     sizeof(align)),
                CUBLAS_STATUS_SUCCESS);
    }
  }

  /// The largest power of two up to 256 dividing the address and the batch
  /// step in bytes.
  static uint32_t alignmentOf(const void *p, const MatrixSpec &m) {
    uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256u;
    if (m.batch > 1)
      bits |= (uint64_t)m.stride * bytesOf(m.type);
    return (uint32_t)(bits & (~bits + 1));
  }

  ~Gemm() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
  }

  template <typename T>
  void setDesc(cublasLtMatmulDescAttributes_t attr, const T &value) {
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(T)),
              CUBLAS_STATUS_SUCCESS)
        << "attribute " << attr;
  }

  cublasStatus_t heuristic() {
    found = 0;
    return cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, ld, pref, 1,
                                          &result, &found);
  }

  /// cublasLtMatmul with the heuristic's algorithm (or none), no sync.
  cublasStatus_t matmul(bool withAlgo = true, cudaStream_t stream = nullptr) {
    return cublasLtMatmul(handle, desc, &s.alpha, a.ptr, la, b.ptr, lb, &s.beta,
                          s.inPlace ? d.ptr : c.ptr, lc, d.ptr, ld,
                          withAlgo ? &result.algo : nullptr, nullptr, 0,
                          stream);
  }

  /// Heuristic, matmul and synchronize; the first failing status.
  cublasStatus_t run() {
    if (cublasStatus_t status = heuristic())
      return status;
    EXPECT_EQ(found, 1);
    EXPECT_EQ(result.workspaceSize, 0u);
    if (cublasStatus_t status = matmul())
      return status;
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    return CUBLAS_STATUS_SUCCESS;
  }

  /// D (and the aux and bias gradient) by a naive loop over the rounded
  /// inputs, in the order the stand-in documents: alpha * product + beta *
  /// C, bias, aux, activation, rounding once.
  Expected expected() const {
    Expected e;
    e.d = std::vector<float>(s.d.span(), NAN);
    e.aux = rounded(s.d.type, hostAux);
    e.bias = rounded(s.d.type, hostBias);
    int64_t m = s.d.rows, n = s.d.cols;
    int64_t k = s.opA == CUBLAS_OP_N ? s.a.cols : s.a.rows;
    std::vector<float> ra = rounded(s.a.type, hostA),
                       rb = rounded(s.b.type, hostB),
                       rc = rounded(s.c.type, hostC);
    cublasLtEpilogue_t ep = s.epilogue;
    for (int64_t batch = 0; batch < s.d.batch; ++batch) {
      std::vector<double> grad(m, 0.0);
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t row = 0; row < m; ++row) {
          double sum = 0;
          for (int64_t i = 0; i < k; ++i) {
            double x = s.opA == CUBLAS_OP_N ? ra[s.a.at(row, i, batch)]
                                            : ra[s.a.at(i, row, batch)];
            double y = s.opB == CUBLAS_OP_N ? rb[s.b.at(i, col, batch)]
                                            : rb[s.b.at(col, i, batch)];
            sum += x * y;
          }
          float v = s.alpha * (float)sum;
          if (s.beta != 0.0f)
            v += s.beta * rc[s.c.at(row, col, batch)];
          if (epilogueUsesBias(ep) && ep != CUBLASLT_EPILOGUE_DGELU_BGRAD)
            v += e.bias[(size_t)(batch * s.biasStride + row)];
          int64_t auxAt = batch * s.auxStride + row + col * s.auxLd;
          if (ep == CUBLASLT_EPILOGUE_GELU_AUX ||
              ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
            e.aux[(size_t)auxAt] = roundTo(s.d.type, v);
          if (ep == CUBLASLT_EPILOGUE_RELU || ep == CUBLASLT_EPILOGUE_RELU_BIAS)
            v = std::max(v, 0.0f);
          if (ep == CUBLASLT_EPILOGUE_GELU ||
              ep == CUBLASLT_EPILOGUE_GELU_BIAS ||
              ep == CUBLASLT_EPILOGUE_GELU_AUX ||
              ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
            v = tgc::cpu::gelu_scalar(v, true);
          if (ep == CUBLASLT_EPILOGUE_DGELU ||
              ep == CUBLASLT_EPILOGUE_DGELU_BGRAD)
            v = tgc::cpu::gelu_grad_scalar(v, e.aux[(size_t)auxAt], true);
          grad[row] += v;
          e.d[(size_t)s.d.at(row, col, batch)] = roundTo(s.d.type, v);
        }
      }
      if (ep == CUBLASLT_EPILOGUE_DGELU_BGRAD)
        for (int64_t row = 0; row < m; ++row)
          e.bias[(size_t)(batch * s.biasStride + row)] =
              roundTo(s.d.type, (float)grad[row]);
    }
    return e;
  }

  /// D, aux and bias against expected(), element by element; the padding
  /// between D's columns must stay untouched.
  void check() const {
    Expected e = expected();
    expectClose(d.download(), e.d, "D");
    if (epilogueUsesAux(s.epilogue))
      expectClose(aux.download(), e.aux, "aux");
    if (epilogueUsesBias(s.epilogue))
      expectClose(bias.download(), e.bias, "bias");
  }

  /// Exact for what the inputs make exact; within a few ulp for the GELU,
  /// which may be compiled with other contractions in each file.
  void expectClose(const std::vector<float> &got,
                   const std::vector<float> &want, const char *what) const {
    ASSERT_EQ(got.size(), want.size()) << what;
    float ulp = s.d.type == CUDA_R_16BF ? 1.0f / 128 : 1.0f / (1 << 22);
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i]))
            << what << "[" << i << "] = " << got[i] << ", should be untouched";
        continue;
      }
      EXPECT_NEAR(got[i], want[i], ulp * std::max(1.0f, std::fabs(want[i])))
          << what << "[" << i << "]";
    }
  }

  cublasLtHandle_t handle;
  GemmSetup s;
  DeviceArray a, b, c, d, bias, aux;
  std::vector<float> hostA, hostB, hostC, hostBias, hostAux;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;

private:
  size_t auxCount() const {
    if (!epilogueUsesAux(s.epilogue) || s.auxLd < s.d.rows)
      return 1;
    return (size_t)((s.d.batch - 1) * s.auxStride + (s.d.cols - 1) * s.auxLd +
                    s.d.rows);
  }
  static std::vector<float> rounded(cudaDataType_t type, std::vector<float> v) {
    for (float &x : v)
      x = roundTo(type, x);
    return v;
  }

  cublasLtMatrixLayout_t makeLayout(const MatrixSpec &m) {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&l, m.type, (uint64_t)m.rows,
                                         (uint64_t)m.cols, m.ld),
              CUBLAS_STATUS_SUCCESS);
    if (m.rowMajor) {
      int32_t order = CUBLASLT_ORDER_ROW;
      EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                    l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)),
                CUBLAS_STATUS_SUCCESS);
    }
    if (m.batch > 1) {
      EXPECT_EQ(
          cublasLtMatrixLayoutSetAttribute(
              l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &m.batch, sizeof(m.batch)),
          CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                    l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.stride,
                    sizeof(m.stride)),
                CUBLAS_STATUS_SUCCESS);
    }
    return l;
  }
};

class CublasLtTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS);
  }
  cublasLtHandle_t handle = nullptr;
};

using CublasLtDeathTest = CublasLtTest;

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

struct TypePair {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
};

const TypePair kTypePairs[] = {
    {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
    {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
    {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F},
};

TEST_F(CublasLtTest, EveryTransposeAndTypeMatchesTheNaiveLoop) {
  for (const TypePair &types : kTypePairs)
    for (cublasOperation_t opA : {CUBLAS_OP_N, CUBLAS_OP_T})
      for (cublasOperation_t opB : {CUBLAS_OP_N, CUBLAS_OP_T}) {
        SCOPED_TRACE(::testing::Message()
                     << "types " << types.ab << "/" << types.cd << " opA "
                     << opA << " opB " << opB);
        GemmSetup s = plainSetup(types.ab, types.cd, 6, 5, 7, opA, opB);
        s.compute = types.compute;
        // Leading dimensions past the rows: the padding stays untouched.
        s.a.ld += 3;
        s.b.ld += 1;
        s.d.ld += 2;
        s.c = s.d;
        s.c.ld += 1;
        s.alpha = 1.5f;
        s.beta = 0.5f;
        Gemm gemm(handle, s);
        ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
        gemm.check();
      }
}

TEST_F(CublasLtTest, RowMajorLayouts) {
  for (const TypePair &types : kTypePairs) {
    GemmSetup s =
        plainSetup(types.ab, types.cd, 4, 6, 5, CUBLAS_OP_N, CUBLAS_OP_T);
    s.compute = types.compute;
    // A row-major 4 x 5 with ld 7, B row-major 6 x 5 (transposed), C
    // column-major, D row-major 4 x 6 with ld 9.
    s.a = {types.ab, 4, 5, 7, true, 1, 0};
    s.b = {types.ab, 6, 5, 5, true, 1, 0};
    s.d = {types.cd, 4, 6, 9, true, 1, 0};
    s.c = colMajor(types.cd, 4, 6);
    s.beta = -1.0f;
    Gemm gemm(handle, s);
    ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
    gemm.check();
  }
}

TEST_F(CublasLtTest, StridedAndBroadcastBatches) {
  for (const TypePair &types : kTypePairs) {
    GemmSetup s =
        plainSetup(types.ab, types.cd, 5, 3, 4, CUBLAS_OP_T, CUBLAS_OP_N);
    s.compute = types.compute;
    // A's batches with a gap between them, B shared (stride 0), D packed.
    s.a.batch = s.b.batch = s.c.batch = s.d.batch = 3;
    s.a.stride = 4 * 5 + 6;
    s.b.stride = 0;
    s.d.stride = 5 * 3;
    s.c = s.d;
    s.beta = 1.0f;
    s.inPlace = true;
    Gemm gemm(handle, s);
    ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
    gemm.check();
  }
}

TEST_F(CublasLtTest, RoundsToNearestEven) {
  // 1 + 2^-8 and 1 + 3 * 2^-8 lie halfway between bf16 values: even
  // mantissas win (1 and 1 + 2^-6), where truncation would give 1 and
  // 1 + 2^-7.
  GemmSetup s =
      plainSetup(CUDA_R_16BF, CUDA_R_16BF, 2, 1, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  gemm.a.upload({1.0f, 1.0f + 1.0f / 128, 1.0f / 256, 1.0f / 256});
  gemm.b.upload({1.0f, 1.0f});
  ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.d.download(), (std::vector<float>{1.0f, 1.0f + 1.0f / 64}));
}

TEST_F(CublasLtTest, BetaZeroDoesNotReadC) {
  // D == C holds cudaMalloc's NaNs; beta 0 must not read them.
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 3, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, gemm.desc, &s.alpha, gemm.a.ptr, gemm.la,
                           gemm.b.ptr, gemm.lb, &s.beta, gemm.d.ptr, gemm.lc,
                           gemm.d.ptr, gemm.ld, &gemm.result.algo, nullptr, 0,
                           nullptr),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  for (float v : gemm.d.download())
    EXPECT_FALSE(std::isnan(v));
  gemm.check();
}

TEST_F(CublasLtTest, EmptySumIsBetaC) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 3, 2, 0, CUBLAS_OP_N, CUBLAS_OP_N);
  s.a.ld = 3;
  s.b.ld = 1;
  s.beta = 2.0f;
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
  gemm.check();
}

TEST_F(CublasLtTest, RunsWhenTheStreamDoesWithDescriptorsGone) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  s.alpha = 2.0f;
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm.matmul(true, stream), CUBLAS_STATUS_SUCCESS);
  // Nothing ran yet: D holds cudaMalloc's NaNs.
  for (float v : gemm.d.peek())
    EXPECT_TRUE(std::isnan(v));
  // The work took copies: the descriptors and alpha may go.
  EXPECT_EQ(cublasLtMatmulDescDestroy(gemm.desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(gemm.la), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(gemm.ld), CUBLAS_STATUS_SUCCESS);
  gemm.desc = nullptr;
  gemm.la = gemm.ld = nullptr;
  gemm.s.alpha = 0.0f; // the reference below uses 2
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  gemm.s.alpha = 2.0f;
  gemm.check();
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

//===----------------------------------------------------------------------===//
// Epilogues
//===----------------------------------------------------------------------===//

const cublasLtEpilogue_t kEpilogues[] = {
    CUBLASLT_EPILOGUE_DEFAULT,  CUBLASLT_EPILOGUE_RELU,
    CUBLASLT_EPILOGUE_BIAS,     CUBLASLT_EPILOGUE_RELU_BIAS,
    CUBLASLT_EPILOGUE_GELU,     CUBLASLT_EPILOGUE_GELU_BIAS,
    CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
    CUBLASLT_EPILOGUE_DGELU,    CUBLASLT_EPILOGUE_DGELU_BGRAD,
};

TEST_F(CublasLtTest, EachEpilogueMatchesItsFormula) {
  for (const TypePair &types : kTypePairs)
    for (cublasLtEpilogue_t epilogue : kEpilogues) {
      SCOPED_TRACE(::testing::Message()
                   << "types " << types.ab << "/" << types.cd << " epilogue "
                   << epilogue);
      GemmSetup s =
          plainSetup(types.ab, types.cd, 6, 5, 4, CUBLAS_OP_T, CUBLAS_OP_N);
      s.compute = types.compute;
      s.epilogue = epilogue;
      s.auxLd = 8;
      s.alpha = 0.5f;
      Gemm gemm(handle, s);
      ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
      gemm.check();
    }
}

TEST_F(CublasLtTest, BatchedEpiloguesUseTheirBatchStrides) {
  for (cublasLtEpilogue_t epilogue :
       {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD}) {
    GemmSetup s =
        plainSetup(CUDA_R_16BF, CUDA_R_16BF, 5, 3, 4, CUBLAS_OP_N, CUBLAS_OP_N);
    s.a.batch = s.b.batch = s.c.batch = s.d.batch = 2;
    s.a.stride = 5 * 4;
    s.b.stride = 4 * 3;
    s.d.stride = 5 * 3;
    s.c = s.d;
    s.epilogue = epilogue;
    s.auxLd = 8;
    s.auxStride = 24;
    s.biasStride = epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD ? 5 : 0;
    Gemm gemm(handle, s);
    ASSERT_EQ(gemm.run(), CUBLAS_STATUS_SUCCESS);
    gemm.check();
  }
}

//===----------------------------------------------------------------------===//
// Statuses
//===----------------------------------------------------------------------===//

TEST_F(CublasLtTest, StatusStrings) {
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an invalid numeric value was used as an argument");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_SUCCESS),
               "the operation completed successfully");
}

TEST_F(CublasLtTest, HandlesThatAreNotOneAreNotInitialized) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 2, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  cublasLtHandle_t gone;
  ASSERT_EQ(cublasLtCreate(&gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtDestroy(gone), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtDestroy(gone), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  for (cublasLtHandle_t bad : {gone, (cublasLtHandle_t) nullptr}) {
    gemm.handle = bad;
    EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(gemm.matmul(false), CUBLAS_STATUS_NOT_INITIALIZED);
  }
}

TEST_F(CublasLtTest, DestroyedDescriptorsAreInvalidValues) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 2, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  int32_t order = CUBLASLT_ORDER_COL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  uint64_t workspace = 0;

  ASSERT_EQ(cublasLtMatrixLayoutDestroy(gemm.lb), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(gemm.lb), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm.matmul(), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                gemm.lb, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)),
            CUBLAS_STATUS_INVALID_VALUE);
  gemm.lb = nullptr;
  EXPECT_EQ(gemm.matmul(), CUBLAS_STATUS_INVALID_VALUE);

  ASSERT_EQ(cublasLtMatmulDescDestroy(gemm.desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(gemm.desc,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescDestroy(gemm.desc), CUBLAS_STATUS_INVALID_VALUE);
  gemm.desc = nullptr;

  ASSERT_EQ(cublasLtMatmulPreferenceDestroy(gemm.pref), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(
                gemm.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                sizeof(workspace)),
            CUBLAS_STATUS_INVALID_VALUE);
  gemm.pref = nullptr;
  // A descriptor of another kind is not one either.
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(
                reinterpret_cast<cublasLtMatmulDesc_t>(gemm.la),
                CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(CublasLtTest, AttributesCheckTheirSizes) {
  cublasLtMatrixLayout_t layout;
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulPreference_t pref;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 4, 3, 4),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);

  // ROWS is a uint64_t, BATCH_COUNT an int32_t, TRANSA an int32_t, the
  // alignments uint32_t.
  uint32_t rows32 = 8;
  int64_t count64 = 2;
  int64_t trans64 = CUBLAS_OP_T;
  uint64_t align64 = 16;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows32, sizeof(rows32)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout,
                                             CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                             &count64, sizeof(count64)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_ROWS, nullptr, sizeof(uint64_t)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &trans64, sizeof(trans64)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(
                pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align64,
                sizeof(align64)),
            CUBLAS_STATUS_INVALID_VALUE);
  // Not emulated: refused rather than ignored.
  const void *scale = nullptr;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc,
                                           CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                           &scale, sizeof(scale)),
            CUBLAS_STATUS_NOT_SUPPORTED);

  // Get: the size needed with a 0 size, then the value; the defaults.
  size_t written = 0;
  uint64_t rows = 0;
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_ROWS, nullptr, 0, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(uint64_t));
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_ROWS, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(layout,
                                             CUBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                             sizeof(rows), &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(rows, 4u);
  uint32_t epilogue = 0, alignment = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue),
                                           nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(epilogue, (uint32_t)CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_EQ(cublasLtMatmulPreferenceGetAttribute(
                pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignment,
                sizeof(alignment), nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(alignment, 256u);
  uint16_t small = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &small, sizeof(small), nullptr),
            CUBLAS_STATUS_INVALID_VALUE);

  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

/// The status of the heuristic and of the matmul (without an algorithm) for
/// the setup after `edit`; both must agree.
template <typename Edit>
cublasStatus_t statusAfter(cublasLtHandle_t handle, GemmSetup s, Edit edit) {
  Gemm gemm(handle, s);
  edit(gemm);
  cublasStatus_t heuristic = gemm.heuristic();
  cublasStatus_t matmul = gemm.matmul(false);
  EXPECT_EQ(heuristic, matmul);
  if (heuristic != CUBLAS_STATUS_SUCCESS) {
    EXPECT_EQ(gemm.found, 0);
  }
  cudaStreamSynchronize(nullptr);
  return heuristic;
}

/// Replaces one of the gemm's layouts.
void relayout(cublasLtMatrixLayout_t &layout, cudaDataType_t type,
              uint64_t rows, uint64_t cols, int64_t ld) {
  cublasLtMatrixLayoutDestroy(layout);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld),
            CUBLAS_STATUS_SUCCESS);
}

TEST_F(CublasLtTest, LayoutsInConflictAreInvalidValues) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  // op(A) 4 x 2 but op(B) 5 x 3.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) { relayout(g.lb, CUDA_R_32F, 5, 3, 5); }),
            CUBLAS_STATUS_INVALID_VALUE);
  // TRANSA makes A 2 x 4.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
  // C 4 x 2, D 4 x 3.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) { relayout(g.lc, CUDA_R_32F, 4, 2, 4); }),
            CUBLAS_STATUS_INVALID_VALUE);
  // ld below the rows.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) { relayout(g.la, CUDA_R_32F, 4, 2, 3); }),
            CUBLAS_STATUS_INVALID_VALUE);
  // Row-major: ld below the columns.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          relayout(g.lb, CUDA_R_32F, 2, 3, 2);
                          int32_t order = CUBLASLT_ORDER_ROW;
                          cublasLtMatrixLayoutSetAttribute(
                              g.lb, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                              sizeof(order));
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
  // Batch counts 2, 1, 1, 1.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          int32_t count = 2;
                          cublasLtMatrixLayoutSetAttribute(
                              g.la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                              sizeof(count));
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(CublasLtTest, UnsupportedTypesAreNotSupported) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  // f32 x bf16.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) { relayout(g.lb, CUDA_R_16BF, 2, 3, 2); }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // f32 x f32 -> bf16.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          relayout(g.lc, CUDA_R_16BF, 4, 3, 4);
                          relayout(g.ld, CUDA_R_16BF, 4, 3, 4);
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // f16.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          relayout(g.la, CUDA_R_16F, 4, 2, 4);
                          relayout(g.lb, CUDA_R_16F, 2, 3, 2);
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // C and D of different types.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) { relayout(g.lc, CUDA_R_16BF, 4, 3, 4); }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // A tiled order.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          int32_t order = CUBLASLT_ORDER_COL32;
                          cublasLtMatrixLayoutSetAttribute(
                              g.la, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                              sizeof(order));
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // A bf16 scale.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          int32_t scale = CUDA_R_16BF;
                          g.setDesc(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale);
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // TF32 on bf16 inputs.
  GemmSetup bf16 =
      plainSetup(CUDA_R_16BF, CUDA_R_16BF, 4, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  bf16.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  EXPECT_EQ(statusAfter(handle, bf16, [](Gemm &) {}),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtTest, EpilogueRequirements) {
  GemmSetup s =
      plainSetup(CUDA_R_16BF, CUDA_R_16BF, 6, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  s.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  s.auxLd = 8;
  EXPECT_EQ(statusAfter(handle, s, [](Gemm &) {}), CUBLAS_STATUS_SUCCESS);
  // The aux ld: a multiple of 8, at least D's rows.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                    int64_t(7));
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
  GemmSetup wide = s;
  wide.d = wide.c = colMajor(CUDA_R_16BF, 12, 3);
  wide.a = colMajor(CUDA_R_16BF, 12, 2);
  EXPECT_EQ(statusAfter(handle, wide, [](Gemm &) {}),
            CUBLAS_STATUS_INVALID_VALUE);
  // The aux batch stride: a multiple of 8.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(
                              CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                              int64_t(12));
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
  // The aux of another type than D's.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                    int32_t(CUDA_R_32F));
                        }),
            CUBLAS_STATUS_INVALID_VALUE);
  // A bias of another type than D's.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                    int32_t(CUDA_R_32F));
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // ReLU bit masks are not emulated.
  EXPECT_EQ(statusAfter(handle, s,
                        [](Gemm &g) {
                          g.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE,
                                    CUBLASLT_EPILOGUE_RELU_AUX);
                        }),
            CUBLAS_STATUS_NOT_SUPPORTED);
  // Batched bias gradients that would all land on one vector.
  GemmSetup batched = s;
  batched.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
  for (MatrixSpec *m : {&batched.a, &batched.b, &batched.c, &batched.d}) {
    m->batch = 2;
    m->stride = m->rows * m->cols;
  }
  batched.auxStride = 24;
  EXPECT_EQ(statusAfter(handle, batched, [](Gemm &) {}),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtTest, MatmulChecksPointersAndInPlaceLayouts) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 6, 3, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  s.epilogue = CUBLASLT_EPILOGUE_DGELU;
  s.auxLd = 8;
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  // DGELU without its aux input.
  gemm.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, (void *)nullptr);
  EXPECT_EQ(gemm.matmul(), CUBLAS_STATUS_INVALID_VALUE);
  // A bias epilogue without a bias.
  gemm.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  EXPECT_EQ(gemm.matmul(), CUBLAS_STATUS_INVALID_VALUE);
  gemm.setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  // No alpha.
  EXPECT_EQ(cublasLtMatmul(handle, gemm.desc, nullptr, gemm.a.ptr, gemm.la,
                           gemm.b.ptr, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                           gemm.d.ptr, gemm.ld, nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  // C == D with C's ld 7 and D's 6.
  cublasLtMatrixLayout_t padded;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&padded, CUDA_R_32F, 6, 3, 7),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(handle, gemm.desc, &s.alpha, gemm.a.ptr, gemm.la,
                           gemm.b.ptr, gemm.lb, &s.beta, gemm.d.ptr, padded,
                           gemm.d.ptr, gemm.ld, nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(padded), CUBLAS_STATUS_SUCCESS);
  // An algorithm that did not come from the heuristic.
  cublasLtMatmulAlgo_t made{};
  EXPECT_EQ(cublasLtMatmul(handle, gemm.desc, &s.alpha, gemm.a.ptr, gemm.la,
                           gemm.b.ptr, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                           gemm.d.ptr, gemm.ld, &made, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  cudaStreamSynchronize(nullptr);
}

TEST_F(CublasLtTest, HeuristicHonoursAlignmentsAndCounts) {
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  s.epilogue = CUBLASLT_EPILOGUE_BIAS;
  Gemm gemm(handle, s);
  cublasLtMatmulHeuristicResult_t result;
  int found = -1;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, gemm.desc, gemm.la, gemm.lb,
                                           gemm.lc, gemm.ld, gemm.pref, 0,
                                           &result, &found),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.found, 1);
  EXPECT_EQ(gemm.result.state, CUBLAS_STATUS_SUCCESS);
  // No fp32 kernel reads A at 2-byte alignment.
  uint32_t two = 2;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                gemm.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &two,
                sizeof(two)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm.found, 0);
  uint32_t four = 4;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                gemm.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &four,
                sizeof(four)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  // A bias pointer 2 bytes into an fp32 vector.
  gemm.setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
               (const void *)((const char *)gemm.bias.ptr + 2));
  EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_NOT_SUPPORTED);
  // An implementation mask without FMA kernels.
  gemm.setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, (const void *)gemm.bias.ptr);
  uint64_t tensorOpsOnly = CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                gemm.pref, CUBLASLT_MATMUL_PREF_IMPL_MASK, &tensorOpsOnly,
                sizeof(tensorOpsOnly)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.heuristic(), CUBLAS_STATUS_NOT_SUPPORTED);
}

//===----------------------------------------------------------------------===//
// Faults
//===----------------------------------------------------------------------===//

TEST_F(CublasLtDeathTest, MatrixPastItsAllocation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 4, 8, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  // B is 8 x 4 (128 bytes); 64 bytes before the end of its allocation.
  const void *late = (const char *)gemm.b.ptr + 64;
  EXPECT_DEATH(cublasLtMatmul(handle, gemm.desc, &s.alpha, gemm.a.ptr, gemm.la,
                              late, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                              gemm.d.ptr, gemm.ld, &gemm.result.algo, nullptr,
                              0, nullptr),
               "simt: cublasLtMatmul: B \\(f32 \\[8 x 4\\] col-major, ld "
               "8\\) needs 128 bytes at 0x[0-9a-f]+ but its allocation has 64 "
               "bytes from there");
}

TEST_F(CublasLtDeathTest, BatchesPastTheAllocation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_16BF, CUDA_R_16BF, 4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  for (MatrixSpec *m : {&s.a, &s.b, &s.c, &s.d}) {
    m->batch = 2;
    m->stride = 16;
  }
  Gemm gemm(handle, s);
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  // D's layout says 3 batches 16 apart: 48 elements, 96 bytes, in 64.
  int32_t three = 3;
  for (cublasLtMatrixLayout_t l : {gemm.la, gemm.lb, gemm.lc, gemm.ld})
    ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(
                  l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &three, sizeof(three)),
              CUBLAS_STATUS_SUCCESS);
  EXPECT_DEATH(gemm.matmul(),
               "cublasLtMatmul: A \\(bf16 \\[4 x 4\\] col-major, ld 4, batch "
               "3, stride 16\\) needs 96 bytes at 0x[0-9a-f]+ but its "
               "allocation has 64 bytes");
}

TEST_F(CublasLtDeathTest, HostPointerIsNotDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 2, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  std::vector<float> host(4, 1.0f);
  EXPECT_DEATH(cublasLtMatmul(handle, gemm.desc, &s.alpha, host.data(), gemm.la,
                              gemm.b.ptr, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                              gemm.d.ptr, gemm.ld, nullptr, nullptr, 0,
                              nullptr),
               "cublasLtMatmul: A \\(f32 \\[2 x 2\\] col-major, ld 2\\) at "
               "0x[0-9a-f]+ is not device memory");
}

TEST_F(CublasLtDeathTest, BiasShorterThanTheRows) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 4, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  s.epilogue = CUBLASLT_EPILOGUE_BIAS;
  Gemm gemm(handle, s);
  // The last 2 of the bias' 4 floats.
  gemm.setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
               (const void *)((const float *)gemm.bias.ptr + 2));
  EXPECT_DEATH(gemm.matmul(false),
               "cublasLtMatmul: the bias \\(f32 \\[4 x 1\\] col-major, ld "
               "4\\) needs 16 bytes at 0x[0-9a-f]+ but its allocation has 8 "
               "bytes");
}

TEST_F(CublasLtDeathTest, PointerLessAlignedThanTheAlgorithm) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 2, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  // The preference promises A's 256-byte alignment; A one float in.
  ASSERT_EQ(gemm.heuristic(), CUBLAS_STATUS_SUCCESS);
  DeviceArray bigger(CUDA_R_32F, 8);
  const void *shifted = (const float *)bigger.ptr + 1;
  EXPECT_DEATH(cublasLtMatmul(handle, gemm.desc, &s.alpha, shifted, gemm.la,
                              gemm.b.ptr, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                              gemm.d.ptr, gemm.ld, &gemm.result.algo, nullptr,
                              0, nullptr),
               "cublasLtMatmul: misaligned address: A \\(f32 \\[2 x 2\\] "
               "col-major, ld 2\\) at 0x[0-9a-f]+ is 4-byte aligned but the "
               "algorithm assumes 16 bytes");
}

TEST_F(CublasLtDeathTest, WorkspaceSmallerThanClaimed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GemmSetup s =
      plainSetup(CUDA_R_32F, CUDA_R_32F, 2, 2, 2, CUBLAS_OP_N, CUBLAS_OP_N);
  Gemm gemm(handle, s);
  DeviceArray workspace(CUDA_R_32F, 16);
  EXPECT_DEATH(cublasLtMatmul(handle, gemm.desc, &s.alpha, gemm.a.ptr, gemm.la,
                              gemm.b.ptr, gemm.lb, &s.beta, gemm.c.ptr, gemm.lc,
                              gemm.d.ptr, gemm.ld, nullptr, workspace.ptr, 1024,
                              nullptr),
               "cublasLtMatmul: the workspace at 0x[0-9a-f]+ is 1024 bytes by "
               "workspaceSizeInBytes but its allocation has 64 bytes");
}

} // namespace

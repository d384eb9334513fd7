//===- emulate.cpp - runtime/cuda and the CUDA runtime on the host -*- C++ -*-===//
//
// What a generated .cu calls, for the host emulation of prelude.h: the
// launchers of runtime/cuda/Kernels.h in f32, with runtime/cpu's kernels and
// the documented epilogues; the context, arena and DeviceOps of Device.h on
// host memory; and the few CUDA runtime calls the generated file makes
// (copies are memcpy, streams and events order nothing because everything
// runs at once, in program order). Graph capture is not emulated.
//
// Two checks the real kernels cannot make: attention_grad verifies that the
// forward's output and log-sum-exp it is handed are still intact (the arena
// plan must keep them alive), and every launcher checks that its pointers
// are not null where runtime/cuda requires memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

using namespace tgc;
using namespace tgc::cuda;

namespace {

int64_t product(const int64_t *dims, int rank) {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i)
    p *= dims[i];
  return p;
}

void require(const void *p, const char *what) {
  if (!p)
    throw Error(std::string("emulated runtime/cuda: ") + what + " is null");
}

[[noreturn]] void notEmulated(const char *what) {
  throw Error(std::string("emulated runtime/cuda: ") + what +
              " is not emulated (f32 only)");
}

float geluTanh(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}

float geluTanhGrad(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
  float s = 1.0f / (1.0f + std::exp(-2.0f * u));
  return s + x * s * (1.0f - s) * 2.0f * du;
}

/// Natural-log log-sum-exp of each query's visible scaled scores.
void attentionLse(const float *q, const float *k, const float *mask,
                  cuda::AttentionMaskShape ms, float *lse, int64_t B,
                  int64_t H, int64_t Hkv, int64_t T, int64_t S, int64_t D,
                  bool causal, float scale) {
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t t = 0; t < T; ++t) {
      int64_t b = bh / H, h = bh % H, kv = b * Hkv + h / (H / Hkv);
      const float *qt = q + (bh * T + t) * D;
      int64_t last = causal ? std::max<int64_t>(0, std::min(S, t + (S - T) + 1))
                            : S;
      double m = -INFINITY, sum = 0;
      std::vector<double> scores(last);
      for (int64_t s = 0; s < last; ++s) {
        const float *ks = k + (kv * S + s) * D;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += (double)qt[d] * ks[d];
        scores[s] = dot * scale;
        if (mask)
          scores[s] += mask[(((ms.B > 1 ? b : 0) * ms.H + (ms.H > 1 ? h : 0)) *
                                 ms.T +
                             (ms.T > 1 ? t : 0)) *
                                ms.S +
                            (ms.S > 1 ? s : 0)];
        m = std::max(m, scores[s]);
      }
      if (m == -INFINITY) {
        lse[bh * T + t] = -INFINITY;
        continue;
      }
      for (int64_t s = 0; s < last; ++s)
        sum += std::exp(scores[s] - m);
      lse[bh * T + t] = (float)(m + std::log(sum));
    }
}

cpu::AttentionMaskShape cpuMaskShape(cuda::AttentionMaskShape m) {
  return {m.B, m.H, m.T, m.S};
}

std::vector<float> wide(const bf16 *p, int64_t n) {
  std::vector<float> v(p ? n : 0);
  for (int64_t i = 0; p && i < n; ++i)
    v[i] = __bfloat162float(p[i]);
  return v;
}
void narrow(const std::vector<float> &v, bf16 *p) {
  for (size_t i = 0; p && i < v.size(); ++i)
    p[i] = __float2bfloat16_rn(v[i]);
}
float *data(std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }

cpu::ReduceKind reduceKind(ReduceKind kind) {
  return kind == ReduceKind::Sum    ? cpu::ReduceKind::Sum
         : kind == ReduceKind::Mean ? cpu::ReduceKind::Mean
                                    : cpu::ReduceKind::Max;
}

} // namespace

//===----------------------------------------------------------------------===//
// The CUDA runtime calls of generated code
//===----------------------------------------------------------------------===//

extern "C" {
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       enum cudaMemcpyKind) {
  std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int) {
  *p = std::calloc(1, size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  // Events carry nothing here; the generated code keeps its handles until
  // exit, as CUDA frees them with the context, so they live in one pool.
  static std::deque<int> events;
  events.emplace_back();
  *event = reinterpret_cast<cudaEvent_t>(&events.back());
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
  return cudaEventCreate(event);
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) {
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaStreamBeginCapture(cudaStream_t, enum cudaStreamCaptureMode) {
  return cudaErrorNotSupported;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *) {
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t,
                                 unsigned long long) {
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t) {
  return "not supported by the host emulation";
}
}

namespace tgc::cuda {

void throwCudaError(cudaError_t error, const char *call, const char *file,
                    int line) {
  throw Error(std::string(call) + " failed: " + cudaGetErrorString(error) +
              " (" + file + ":" + std::to_string(line) + ")");
}
void throwCublasError(cublasStatus_t, const char *call, const char *file,
                      int line) {
  throw Error(std::string(call) + " failed (" + file + ":" +
              std::to_string(line) + ")");
}

//===----------------------------------------------------------------------===//
// Device.h
//===----------------------------------------------------------------------===//

Context &Context::get() {
  static Context *context = new Context();
  return *context;
}
Context::Context() {}

DeviceArena::DeviceArena(int64_t size) : bytes(size) {
  data = static_cast<char *>(std::calloc(1, size ? size : 1));
  if (!data)
    throw Error("emulated arena: out of memory");
}
DeviceArena::~DeviceArena() { std::free(data); }

const DeviceOps *deviceOps(Precision) {
  static const DeviceOps ops = {
      "cuda",
      [](int) -> const char * { return "host emulation of the CUDA backend"; },
      [](int64_t bytes) -> void * {
        void *p = std::calloc(1, bytes ? bytes : 1);
        if (!p)
          throw Error("emulated device: out of memory");
        return p;
      },
      [](void *p) { std::free(p); },
      [](void *dst, const void *src, int64_t bytes) {
        std::memcpy(dst, src, bytes);
      },
      [](void *dst, const void *src, int64_t bytes) {
        std::memcpy(dst, src, bytes);
      },
      [] {},
      []() -> double { return 0; },
  };
  return &ops;
}

//===----------------------------------------------------------------------===//
// Kernels.h, f32
//===----------------------------------------------------------------------===//

void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t) {
  require(a, "matmul a");
  require(b, "matmul b");
  require(c, "matmul c");
  if (options.accumulate)
    notEmulated("matmul accumulate");
  cpu::matmul(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
              batchRank);
  int64_t count = product(cBatch, batchRank) * m * n;
  auto *bias = static_cast<const float *>(options.bias);
  auto *aux = static_cast<float *>(options.geluAux);
  switch (options.epilogue) {
  case Epilogue::None:
    break;
  case Epilogue::Bias:
    require(bias, "matmul bias");
    for (int64_t i = 0; i < count; ++i)
      c[i] += bias[i % n];
    break;
  case Epilogue::Gelu:
  case Epilogue::BiasGelu:
    require(aux, "matmul geluAux");
    for (int64_t i = 0; i < count; ++i) {
      float v = c[i] + (options.epilogue == Epilogue::BiasGelu
                            ? (require(bias, "matmul bias"), bias[i % n])
                            : 0.0f);
      aux[i] = v;
      c[i] = geluTanh(v);
    }
    break;
  case Epilogue::GeluGrad:
    require(aux, "matmul geluAux");
    for (int64_t i = 0; i < count; ++i)
      c[i] *= geluTanhGrad(aux[i]);
    break;
  }
}

int64_t reduce_workspace_bytes(const int64_t *, int, const int64_t *, int) {
  return 0;
}
void reduce(ReduceKind kind, const float *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, float *out, void *,
            cudaStream_t) {
  cpu::reduce(reduceKind(kind), x, shape, rank, dims, numDims, out);
}
void softmax(const float *x, float *y, int64_t outer, int64_t n,
             int64_t inner, cudaStream_t) {
  cpu::softmax(x, y, outer, n, inner);
}
void log_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t) {
  cpu::log_softmax(x, y, outer, n, inner);
}

int64_t global_norm_workspace_bytes(const NormInput *, int) { return 0; }
void global_norm(const NormInput *inputs, int count, float *norm, void *,
                 cudaStream_t) {
  double sum = 0;
  for (int i = 0; i < count; ++i) {
    if (inputs[i].dtype == DType::F32) {
      sum += cpu::sum_squares(static_cast<const float *>(inputs[i].data),
                              inputs[i].count);
      continue;
    }
    for (int64_t j = 0; j < inputs[i].count; ++j) {
      double v = __bfloat162float(static_cast<const bf16 *>(inputs[i].data)[j]);
      sum += v * v;
    }
  }
  norm[0] = (float)std::sqrt(sum);
}

void layer_norm(const float *x, const float *w, const float *b, float *y,
                int64_t rows, int64_t d, float eps, cudaStream_t) {
  cpu::layer_norm(x, w, b, y, rows, d, eps);
}
int64_t layer_norm_grad_workspace_bytes(int64_t, int64_t) { return 0; }
void layer_norm_grad(const float *g, const float *x, const float *w, float *dx,
                     float *dw, float *db, int64_t rows, int64_t d, float eps,
                     void *, cudaStream_t) {
  if (dx == g || dx == x)
    throw Error("emulated layer_norm_grad: dx aliases g or x");
  cpu::layer_norm_grad(g, x, w, dx, dw, db, rows, d, eps);
}

void embedding(const float *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, float *out, cudaStream_t) {
  cpu::embedding(table, rows, d, indices, n, out);
}
void embedding(const float *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, float *out, cudaStream_t) {
  cpu::embedding(table, rows, d, indices, n, out);
}
int64_t embedding_grad_workspace_bytes(int64_t, int64_t) { return 0; }
void embedding_grad(const float *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *,
                    cudaStream_t) {
  cpu::embedding_grad(g, indices, n, rows, d, dtable);
}
void embedding_grad(const float *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *,
                    cudaStream_t) {
  cpu::embedding_grad(g, indices, n, rows, d, dtable);
}

int64_t cross_entropy_workspace_bytes(int64_t) { return 0; }
template <typename L>
static void crossEntropy(const float *logits, const L *labels, int64_t rows,
                         int64_t classes, int64_t ignoreIndex,
                         Reduction reduction, float *loss, float *perRow) {
  float value = cpu::cross_entropy(logits, labels, rows, classes, ignoreIndex,
                                   (int)reduction, perRow);
  if (loss)
    loss[0] = value;
}
void cross_entropy(const float *logits, const int32_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *, cudaStream_t) {
  crossEntropy(logits, labels, rows, classes, ignoreIndex, reduction, loss,
               perRow);
}
void cross_entropy(const float *logits, const int64_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *, cudaStream_t) {
  crossEntropy(logits, labels, rows, classes, ignoreIndex, reduction, loss,
               perRow);
}
template <typename L>
static void crossEntropyGrad(const float *g, const float *logits,
                             const L *labels, int64_t rows, int64_t classes,
                             int64_t ignoreIndex, Reduction reduction,
                             float *dlogits) {
  static const float one = 1.0f;
  std::vector<float> copy(logits, logits + rows * classes);
  cpu::cross_entropy_grad(g ? g : &one, copy.data(), labels, rows, classes,
                          ignoreIndex, (int)reduction, dlogits);
}
void cross_entropy_grad(const float *g, const float *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        float *dlogits, void *, cudaStream_t) {
  require(g, "cross_entropy_grad g");
  crossEntropyGrad(g, logits, labels, rows, classes, ignoreIndex, reduction,
                   dlogits);
}
void cross_entropy_grad(const float *g, const float *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        float *dlogits, void *, cudaStream_t) {
  require(g, "cross_entropy_grad g");
  crossEntropyGrad(g, logits, labels, rows, classes, ignoreIndex, reduction,
                   dlogits);
}
void fused_classifier(const float *logits, const int32_t *labels,
                      int64_t rows, int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, float *dlogits, void *, cudaStream_t) {
  crossEntropy(logits, labels, rows, classes, ignoreIndex, reduction, loss,
               perRow);
  crossEntropyGrad(g, logits, labels, rows, classes, ignoreIndex, reduction,
                   dlogits);
}
void fused_classifier(const float *logits, const int64_t *labels,
                      int64_t rows, int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, float *dlogits, void *, cudaStream_t) {
  crossEntropy(logits, labels, rows, classes, ignoreIndex, reduction, loss,
               perRow);
  crossEntropyGrad(g, logits, labels, rows, classes, ignoreIndex, reduction,
                   dlogits);
}

void attention(const float *q, const float *k, const float *v,
               const float *mask, AttentionMaskShape maskShape, float *out,
               float *lse, int64_t B, int64_t H, int64_t Hkv, int64_t T,
               int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
               cudaStream_t) {
  cpu::attention(q, k, v, mask, cpuMaskShape(maskShape), out, B, H, Hkv, T, S,
                 D, Dv, causal, scale);
  if (lse)
    attentionLse(q, k, mask, maskShape, lse, B, H, Hkv, T, S, D, causal,
                 scale);
}
int64_t attention_grad_workspace_bytes(int64_t, int64_t, int64_t, int64_t,
                                       bool) {
  return 0;
}
void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *mask,
                    AttentionMaskShape maskShape, const float *out,
                    const float *lse, float *dq, float *dk, float *dv,
                    float *dmask, int64_t B, int64_t H, int64_t Hkv, int64_t T,
                    int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
                    void *, cudaStream_t) {
  // The forward's output and LSE must have survived until here.
  if (out) {
    std::vector<float> expect(B * H * T * Dv);
    cpu::attention(q, k, v, mask, cpuMaskShape(maskShape), expect.data(), B, H,
                   Hkv, T, S, D, Dv, causal, scale);
    for (size_t i = 0; i < expect.size(); ++i)
      if (std::fabs(expect[i] - out[i]) > 1e-5f * (1 + std::fabs(expect[i])))
        throw Error("emulated attention_grad: the forward's output was "
                    "overwritten before the backward");
  }
  if (lse) {
    std::vector<float> expect(B * H * T);
    attentionLse(q, k, mask, maskShape, expect.data(), B, H, Hkv, T, S, D,
                 causal, scale);
    for (size_t i = 0; i < expect.size(); ++i)
      if (!(expect[i] == lse[i] ||
            std::fabs(expect[i] - lse[i]) <= 1e-5f * (1 + std::fabs(expect[i]))))
        throw Error("emulated attention_grad: the forward's log-sum-exp was "
                    "overwritten before the backward");
  }
  cpu::attention_grad(g, q, k, v, mask, cpuMaskShape(maskShape), dq, dk, dv,
                      dmask, B, H, Hkv, T, S, D, Dv, causal, scale);
}

void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             const int64_t *step, const int64_t *randomStream, cudaStream_t) {
  cpu::dropout(x, y, n, p, seed, step[0], randomStream[0]);
}

void transpose_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                     int rank, const int64_t *perm, void *y, cudaStream_t) {
  cpu::transpose_bytes(x, elemSize, shape, rank, perm, y);
}
void slice_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                 int rank, const int64_t *start, const int64_t *stride,
                 void *y, const int64_t *outShape, cudaStream_t) {
  cpu::slice_bytes(x, elemSize, shape, rank, start, stride, y, outShape);
}
void slice_grad_bytes(const void *g, int64_t elemSize, const int64_t *gShape,
                      int rank, const int64_t *start, const int64_t *stride,
                      void *dx, const int64_t *xShape, cudaStream_t) {
  if (elemSize == 2) {
    std::vector<float> wg = wide(static_cast<const bf16 *>(g),
                                 product(gShape, rank)),
                       wdx(product(xShape, rank));
    cpu::slice_grad(wg.data(), gShape, rank, start, stride, wdx.data(),
                    xShape);
    narrow(wdx, static_cast<bf16 *>(dx));
    return;
  }
  if (elemSize != 4)
    notEmulated("slice_grad of 1- or 8-byte elements");
  cpu::slice_grad(static_cast<const float *>(g), gShape, rank, start, stride,
                  static_cast<float *>(dx), xShape);
}
void concat_bytes(const void *const *inputs, int64_t elemSize,
                  const int64_t *const *shapes, int numInputs, int rank,
                  int axis, void *out, cudaStream_t) {
  cpu::concat_bytes(inputs, elemSize, shapes, numInputs, rank, axis, out);
}

static cpu::Conv2dDims cpuDims(const Conv2dDims &d) {
  return {d.n,    d.c,       d.h,       d.w,    d.o,    d.kh,
          d.kw,   d.oh,      d.ow,      d.strideH, d.strideW, d.padH,
          d.padW, d.dilH,    d.dilW,    d.groups};
}
static cpu::Pool2dDims cpuDims(const Pool2dDims &d) {
  return {d.n,  d.c,  d.h,       d.w,       d.oh,   d.ow,
          d.kh, d.kw, d.strideH, d.strideW, d.padH, d.padW};
}
void conv2d(const float *x, const float *w, const float *bias, float *y,
            const Conv2dDims &dims, cudaStream_t) {
  cpu::conv2d(x, w, bias, y, cpuDims(dims));
}
void conv2d_grad_input(const float *g, const float *w, float *dx,
                       const Conv2dDims &dims, cudaStream_t) {
  cpu::conv2d_grad_input(g, w, dx, cpuDims(dims));
}
void conv2d_grad_weight(const float *g, const float *x, float *dw,
                        const Conv2dDims &dims, cudaStream_t) {
  cpu::conv2d_grad_weight(g, x, dw, cpuDims(dims));
}
void max_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t) {
  cpu::max_pool2d(x, y, cpuDims(dims));
}
void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &dims, cudaStream_t) {
  cpu::max_pool2d_grad(g, x, dx, cpuDims(dims));
}
void avg_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t) {
  cpu::avg_pool2d(x, y, cpuDims(dims));
}
void avg_pool2d_grad(const float *g, float *dx, const Pool2dDims &dims,
                     cudaStream_t) {
  cpu::avg_pool2d_grad(g, dx, cpuDims(dims));
}

int64_t optimizer_workspace_bytes(OptimizerKind, int64_t) { return 0; }
void optimizer_update(OptimizerKind kind, float *param, const float *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *, cudaStream_t) {
  if (paramCopy)
    notEmulated("optimizer_update paramCopy");
  std::vector<float> scaled;
  if (gradScale) {
    scaled.assign(grad, grad + n);
    for (float &g : scaled)
      g *= gradScale[0];
    grad = scaled.data();
  }
  cpu::OptimizerHyper h{hyper.beta1,       hyper.beta2,    hyper.eps,
                        hyper.weightDecay, hyper.momentum, hyper.alpha,
                        hyper.nesterov};
  cpu::optimizer_update(static_cast<cpu::OptimizerKind>(kind), param, grad,
                        state, numState, n, lr[0], step[0], h);
}

//===----------------------------------------------------------------------===//
// Kernels.h, bf16: widened to f32, run as above, rounded back
//===----------------------------------------------------------------------===//

template <typename TC>
static void matmulBf16(const bf16 *a, const bf16 *b, TC *c, int64_t m,
                       int64_t n, int64_t k, bool transA, bool transB,
                       const int64_t *aBatch, const int64_t *bBatch,
                       const int64_t *cBatch, int batchRank,
                       const MatmulOptions &options) {
  int64_t cCount = product(cBatch, batchRank) * m * n;
  std::vector<float> wa = wide(a, product(aBatch, batchRank) * m * k),
                     wb = wide(b, product(bBatch, batchRank) * k * n),
                     wc(cCount), bias, aux;
  MatmulOptions wideOptions = options;
  if constexpr (std::is_same_v<TC, bf16>) {
    bias = wide(static_cast<const bf16 *>(options.bias), n);
    aux = wide(static_cast<const bf16 *>(options.geluAux), cCount);
  } else {
    auto *b32 = static_cast<const float *>(options.bias);
    auto *x32 = static_cast<const float *>(options.geluAux);
    bias.assign(b32, b32 ? b32 + n : b32);
    aux.assign(x32, x32 ? x32 + cCount : x32);
  }
  wideOptions.bias = data(bias);
  wideOptions.geluAux = data(aux);
  matmul(wa.data(), wb.data(), wc.data(), m, n, k, transA, transB, aBatch,
         bBatch, cBatch, batchRank, wideOptions, nullptr);
  if constexpr (std::is_same_v<TC, bf16>) {
    narrow(wc, c);
    narrow(aux, static_cast<bf16 *>(options.geluAux));
  } else {
    std::copy(wc.begin(), wc.end(), c);
    if (options.geluAux)
      std::copy(aux.begin(), aux.end(), static_cast<float *>(options.geluAux));
  }
}
void matmul(const bf16 *a, const bf16 *b, bf16 *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t) {
  matmulBf16(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
             batchRank, options);
}
void matmul(const bf16 *a, const bf16 *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t) {
  matmulBf16(a, b, c, m, n, k, transA, transB, aBatch, bBatch, cBatch,
             batchRank, options);
}

void reduce(ReduceKind kind, const bf16 *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, bf16 *out, void *,
            cudaStream_t) {
  int64_t kept = 1;
  for (int d = 0; d < rank; ++d)
    if (std::find(dims, dims + numDims, d) == dims + numDims)
      kept *= shape[d];
  std::vector<float> wx = wide(x, product(shape, rank)), wo(kept);
  cpu::reduce(reduceKind(kind), wx.data(), shape, rank, dims, numDims,
              wo.data());
  narrow(wo, out);
}
void softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n, int64_t inner,
             cudaStream_t) {
  std::vector<float> wx = wide(x, outer * n * inner), wy(wx.size());
  cpu::softmax(wx.data(), wy.data(), outer, n, inner);
  narrow(wy, y);
}
void log_softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t) {
  std::vector<float> wx = wide(x, outer * n * inner), wy(wx.size());
  cpu::log_softmax(wx.data(), wy.data(), outer, n, inner);
  narrow(wy, y);
}
void layer_norm(const bf16 *x, const bf16 *w, const bf16 *b, bf16 *y,
                int64_t rows, int64_t d, float eps, cudaStream_t) {
  std::vector<float> wx = wide(x, rows * d), ww = wide(w, d), wb = wide(b, d),
                     wy(rows * d);
  cpu::layer_norm(wx.data(), data(ww), data(wb), wy.data(), rows, d, eps);
  narrow(wy, y);
}
void layer_norm_grad(const bf16 *g, const bf16 *x, const bf16 *w, bf16 *dx,
                     bf16 *dw, bf16 *db, int64_t rows, int64_t d, float eps,
                     void *, cudaStream_t) {
  if (dx == g || dx == x)
    throw Error("emulated layer_norm_grad: dx aliases g or x");
  std::vector<float> wg = wide(g, rows * d), wx = wide(x, rows * d),
                     ww = wide(w, d), wdx(rows * d), wdw(d), wdb(d);
  cpu::layer_norm_grad(wg.data(), wx.data(), data(ww), wdx.data(), wdw.data(),
                       wdb.data(), rows, d, eps);
  narrow(wdx, dx);
  narrow(wdw, dw);
  narrow(wdb, db);
}
template <typename I>
static void embeddingBf16(const bf16 *table, int64_t rows, int64_t d,
                          const I *indices, int64_t n, bf16 *out) {
  std::vector<float> wt = wide(table, rows * d), wo(n * d);
  cpu::embedding(wt.data(), rows, d, indices, n, wo.data());
  narrow(wo, out);
}
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, bf16 *out, cudaStream_t) {
  embeddingBf16(table, rows, d, indices, n, out);
}
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, bf16 *out, cudaStream_t) {
  embeddingBf16(table, rows, d, indices, n, out);
}
template <typename I>
static void embeddingGradBf16(const bf16 *g, const I *indices, int64_t n,
                              int64_t rows, int64_t d, bf16 *dtable) {
  std::vector<float> wg = wide(g, n * d), wt(rows * d);
  cpu::embedding_grad(wg.data(), indices, n, rows, d, wt.data());
  narrow(wt, dtable);
}
void embedding_grad(const bf16 *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *,
                    cudaStream_t) {
  embeddingGradBf16(g, indices, n, rows, d, dtable);
}
void embedding_grad(const bf16 *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *,
                    cudaStream_t) {
  embeddingGradBf16(g, indices, n, rows, d, dtable);
}
template <typename I>
static void classifierBf16(const bf16 *logits, const I *labels, int64_t rows,
                           int64_t classes, int64_t ignoreIndex,
                           Reduction reduction, const float *g, float *loss,
                           float *perRow, bf16 *dlogits) {
  std::vector<float> wl = wide(logits, rows * classes), wd(rows * classes);
  if (loss || perRow)
    crossEntropy(wl.data(), labels, rows, classes, ignoreIndex, reduction,
                 loss, perRow);
  if (dlogits) {
    crossEntropyGrad(g, wl.data(), labels, rows, classes, ignoreIndex,
                     reduction, wd.data());
    narrow(wd, dlogits);
  }
}
void cross_entropy(const bf16 *logits, const int32_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *, cudaStream_t) {
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction,
                 nullptr, loss, perRow, (bf16 *)nullptr);
}
void cross_entropy(const bf16 *logits, const int64_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *, cudaStream_t) {
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction,
                 nullptr, loss, perRow, (bf16 *)nullptr);
}
void cross_entropy_grad(const float *g, const bf16 *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        bf16 *dlogits, void *, cudaStream_t) {
  require(g, "cross_entropy_grad g");
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction, g,
                 nullptr, nullptr, dlogits);
}
void cross_entropy_grad(const float *g, const bf16 *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        bf16 *dlogits, void *, cudaStream_t) {
  require(g, "cross_entropy_grad g");
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction, g,
                 nullptr, nullptr, dlogits);
}
void fused_classifier(const bf16 *logits, const int32_t *labels, int64_t rows,
                      int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, bf16 *dlogits, void *, cudaStream_t) {
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction, g,
                 loss, perRow, dlogits);
}
void fused_classifier(const bf16 *logits, const int64_t *labels, int64_t rows,
                      int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, bf16 *dlogits, void *, cudaStream_t) {
  classifierBf16(logits, labels, rows, classes, ignoreIndex, reduction, g,
                 loss, perRow, dlogits);
}
void attention(const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *mask,
               AttentionMaskShape maskShape, bf16 *out, float *lse, int64_t B,
               int64_t H, int64_t Hkv, int64_t T, int64_t S, int64_t D,
               int64_t Dv, bool causal, float scale, cudaStream_t) {
  int64_t maskSize =
      mask ? maskShape.B * maskShape.H * maskShape.T * maskShape.S : 0;
  std::vector<float> wq = wide(q, B * H * T * D), wk = wide(k, B * Hkv * S * D),
                     wv = wide(v, B * Hkv * S * Dv), wm = wide(mask, maskSize),
                     wo(B * H * T * Dv);
  attention(wq.data(), wk.data(), wv.data(), mask ? wm.data() : nullptr,
            maskShape, wo.data(), lse, B, H, Hkv, T, S, D, Dv, causal, scale,
            nullptr);
  narrow(wo, out);
}
void attention_grad(const bf16 *g, const bf16 *q, const bf16 *k,
                    const bf16 *v, const bf16 *mask,
                    AttentionMaskShape maskShape, const bf16 *out,
                    const float *lse, bf16 *dq, bf16 *dk, bf16 *dv,
                    bf16 *dmask, int64_t B, int64_t H, int64_t Hkv, int64_t T,
                    int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
                    void *, cudaStream_t) {
  int64_t maskSize =
      mask ? maskShape.B * maskShape.H * maskShape.T * maskShape.S : 0;
  std::vector<float> wg = wide(g, B * H * T * Dv), wq = wide(q, B * H * T * D),
                     wk = wide(k, B * Hkv * S * D),
                     wv = wide(v, B * Hkv * S * Dv), wm = wide(mask, maskSize),
                     wdq(wq.size()), wdk(wk.size()), wdv(wv.size()),
                     wdm(dmask ? maskSize : 0);
  const float *wideMask = mask ? wm.data() : nullptr;
  // The forward's output is bf16: compare it at bf16's precision.
  if (out) {
    std::vector<float> expect(B * H * T * Dv);
    cpu::attention(wq.data(), wk.data(), wv.data(), wideMask,
                   cpuMaskShape(maskShape), expect.data(), B, H, Hkv, T, S, D,
                   Dv, causal, scale);
    for (size_t i = 0; i < expect.size(); ++i)
      if (std::fabs(expect[i] - __bfloat162float(out[i])) >
          1e-2f * (1 + std::fabs(expect[i])))
        throw Error("emulated attention_grad: the forward's output was "
                    "overwritten before the backward");
  }
  attention_grad(wg.data(), wq.data(), wk.data(), wv.data(), wideMask,
                 maskShape, nullptr, lse, wdq.data(), wdk.data(), wdv.data(),
                 dmask ? wdm.data() : nullptr, B, H, Hkv, T, S, D, Dv, causal,
                 scale, nullptr, nullptr);
  narrow(wdq, dq);
  narrow(wdk, dk);
  narrow(wdv, dv);
  narrow(wdm, dmask);
}
void optimizer_update(OptimizerKind kind, float *param, const bf16 *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *workspace, cudaStream_t stream) {
  std::vector<float> wg = wide(grad, n);
  optimizer_update(kind, param, wg.data(), state, numState, n, lr, step,
                   gradScale, hyper, paramCopy, workspace, stream);
}

void optimizer_update_lanes(OptimizerKind kind, const OptimizerLane *lanes,
                            int count, bool bf16Grads, const float *lr,
                            const int64_t *step, const OptimizerHyper &hyper,
                            void *workspace, cudaStream_t stream) {
  // Lane by lane: the lanes of one call touch disjoint tensors.
  for (int i = 0; i < count; ++i) {
    const OptimizerLane &l = lanes[i];
    float *state[] = {l.state[0], l.state[1]};
    int numState = l.state[1] ? 2 : l.state[0] ? 1 : 0;
    if (bf16Grads)
      optimizer_update(kind, l.param, static_cast<const bf16 *>(l.grad), state,
                       numState, l.n, lr, step, l.gradScale, hyper, nullptr,
                       workspace, stream);
    else
      optimizer_update(kind, l.param, static_cast<const float *>(l.grad), state,
                       numState, l.n, lr, step, l.gradScale, hyper, nullptr,
                       workspace, stream);
  }
}

void lr_schedule(const ScheduleParams &p, const int64_t *step,
                 const float *baseLr, float *lr, cudaStream_t) {
  cpu::ScheduleParams c{static_cast<cpu::ScheduleKind>(p.kind),
                        p.warmupSteps, p.totalSteps, p.stepSize,
                        p.decaySteps, p.minLr, p.gamma, p.maxLr};
  lr[0] = cpu::lr_schedule(c, step[0], baseLr[0]);
}

} // namespace tgc::cuda

//===- Kernels.h - CPU kernels called by generated C++ ----------*- C++ -*-===//
//
// The CPU half of the runtime's compute: one function per tg op (or gradient
// op) that the C++ emitter does not inline as an elementwise OpenMP loop.
// Every kernel takes fp32 data in dense row-major layout and writes a
// caller-provided output; the semantics are those of the op descriptions in
// dialects/tg/IR/TgOps.td, TgGradOps.td and TgOptimizerOps.td.
//
// All kernels run with OpenMP over the threads omp_get_max_threads() allows;
// OpenBLAS runs on the calling thread, its large GEMMs split over the same
// OpenMP threads (BlasThreads.h), so omp_set_num_threads() rules both.
// Kernels are called from one host thread at a time.
//
// Plain C++17: nothing here may include LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_KERNELS_H
#define TGC_RUNTIME_CPU_KERNELS_H

#include "runtime/cpu/FastExp.h"

#include <cmath>
#include <cstdint>

namespace tgc::cpu {

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

/// c = op(a) · op(b) over broadcast batch dims. `a` is [aBatch..., M, K]
/// ([aBatch..., K, M] with transA), `b` [bBatch..., K, N] ([bBatch..., N, K]
/// with transB), `c` [cBatch..., M, N]. The three batch shapes have rank
/// `batchRank` (left-padded with 1 by the caller); an `aBatch`/`bBatch` entry
/// is 1 or equal to the `cBatch` entry. The batch pointers may be null when
/// batchRank is 0.
void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank);

enum class ReduceKind { Sum, Mean, Max };

/// Reduces `x` (shape[rank]) over `dims` (sorted, distinct, non-negative);
/// `out` holds the kept dims in their order (keepdim only changes the shape,
/// not the layout). With numDims == 0 nothing is reduced and `x` is copied.
/// Sums accumulate in double; max propagates NaN.
void reduce(ReduceKind kind, const float *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, float *out);

/// Softmax of `x` viewed as [outer, n, inner] along the middle dim.
void softmax(const float *x, float *y, int64_t outer, int64_t n,
             int64_t inner);
/// Log-softmax of `x` viewed as [outer, n, inner] along the middle dim.
void log_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner);

/// Sum of squares in double: the global gradient norm is the square root of
/// the sum of this over all gradients.
double sum_squares(const float *x, int64_t n);

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// y = (x - mean) / sqrt(var + eps) * w + b over the last dim `d` of
/// [rows, d]; `w` and `b` may be null (1 and 0).
void layer_norm(const float *x, const float *w, const float *b, float *y,
                int64_t rows, int64_t d, float eps);
/// Gradients of layer_norm for the output gradient `g`. `dw` and `db` are
/// overwritten (not accumulated); any of dx/dw/db may be null when not
/// needed. A null `w` is the unscaled norm.
void layer_norm_grad(const float *g, const float *x, const float *w,
                     float *dx, float *dw, float *db, int64_t rows, int64_t d,
                     float eps);

/// y = x / sqrt(mean(x^2) + eps) * w over the last dim; `w` may be null.
void rms_norm(const float *x, const float *w, float *y, int64_t rows,
              int64_t d, float eps);
/// Gradients of rms_norm; `dw` is overwritten. `w`, `dx` and `dw` may be
/// null.
void rms_norm_grad(const float *g, const float *x, const float *w, float *dx,
                   float *dw, int64_t rows, int64_t d, float eps);

//===----------------------------------------------------------------------===//
// Activations and dropout
//===----------------------------------------------------------------------===//

/// GELU of one element and its gradient, written for loops that vectorize
/// (no libm calls, no branches; see FastExp.h) and accurate to a few ulp of
/// the exact function, large negative x included
/// (test/unit/cpu/GeluTest.cpp):
/// - exact: x Phi(x) with Phi(-|x|) = 1/2 erfc(|x|/sqrt 2) =
///   1/2 t Q(t) exp(-x^2/2), t = 1/(1 + 0.4 |x|/sqrt 2), Q a degree-10
///   polynomial fitted to erfcx (relative error 6e-9); exp(-x^2/2) from x^2
///   in double, split in two floats, so that it keeps its relative accuracy
///   where x^2/2 is large;
/// - tanhApprox: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
///   written as x * sigmoid(2u) (no cancellation near -1), with 2u in
///   double and split in two floats for the same reason.
/// Inline so that generated fused loops compute what gelu() does.
namespace detail {
/// Phi(-|x|) and exp(-x^2/2) for the exact GELU.
inline void geluNormalTail(float x, float &tail, float &density) {
  double half = -0.5 * (double)x * (double)x; // exact in double
  float hi = (float)half;
  float lo = (float)(half - (double)hi);
  density = fastExpSplit(hi, lo);
  float a = detail::bitsFloat(detail::floatBits(x) & 0x7FFFFFFFu);
  float t = 1.0f / (1.0f + 0.28284271247461901f * a); // 0.4 / sqrt(2)
  float q = -2.921516848e-02f;
  q = q * t + 1.404469747e-01f;
  q = q * t - 2.355278130e-01f;
  q = q * t + 1.375620836e-01f;
  q = q * t - 4.689567023e-02f;
  q = q * t + 8.391663589e-02f;
  q = q * t + 1.190082318e-01f;
  q = q * t + 1.717392966e-01f;
  q = q * t + 2.076137280e-01f;
  q = q * t + 2.256758602e-01f;
  q = q * t + 2.256758348e-01f;
  tail = 0.5f * t * q * density;
}
/// Phi(x) from Phi(-|x|): tail itself for x < 0, 1 - tail otherwise, with
/// selects of constants only (so the loop stays free of branches).
inline float geluNormalCdf(float x, float tail) {
  float base = x < 0.0f ? 0.0f : 1.0f;
  float sign = x < 0.0f ? 1.0f : -1.0f;
  return base + sign * tail;
}
/// exp(-2u) for the tanh GELU, 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) in
/// double.
inline float geluTanhExp(float x) {
  double xd = x;
  double v = -1.5957691216057308 * xd * (1.0 + 0.044715 * xd * xd);
  float hi = (float)v;
  float lo = (float)(v - (double)hi);
  return fastExpSplit(hi, lo);
}
} // namespace detail

inline float gelu_scalar(float x, bool tanhApprox) {
  if (tanhApprox)
    return x / (1.0f + detail::geluTanhExp(x));
  float tail, density;
  detail::geluNormalTail(x, tail, density);
  return x * detail::geluNormalCdf(x, tail);
}
/// g * gelu'(x) for one element.
inline float gelu_grad_scalar(float g, float x, bool tanhApprox) {
  if (tanhApprox) {
    // d/dx [x s(2u)] = s + x s (1 - s) 2 u', with 1 - s = e / (1 + e) for
    // e = exp(-2u) written as 1 / (1 + 1/e): accurate where s is near 1,
    // and 1 (not inf / inf) where e overflows.
    float e = detail::geluTanhExp(x);
    float s = 1.0f / (1.0f + e);
    float oneMinusS = 1.0f / (1.0f + 1.0f / e);
    float du2 = 1.5957691216057308f * (1.0f + 3.0f * 0.044715f * x * x);
    return g * (s + x * s * oneMinusS * du2);
  }
  // d/dx [x Phi(x)] = Phi(x) + x phi(x).
  float tail, density;
  detail::geluNormalTail(x, tail, density);
  float cdf = detail::geluNormalCdf(x, tail);
  return g * (cdf + x * (0.3989422804014327f * density));
}

/// GELU: gelu_scalar over n elements.
void gelu(const float *x, float *y, int64_t n, bool tanhApprox);
/// dx = g * gelu'(x).
void gelu_grad(const float *g, const float *x, float *dx, int64_t n,
               bool tanhApprox);

/// The dropout mask as a pure function of (seed, step, stream, index):
/// element `i` is kept when the top 24 bits of a splitmix64 hash, read as a
/// uniform number in [0, 1), are >= p. `seed` is the op's (the model file
/// gives each dropout its own), `step` the training step and `stream` the
/// micro-batch's index in the global batch (StepIO::randomStream), so every
/// micro-batch of every process draws its own mask, the same for any number
/// of processes and after a resume, and recomputing the op replays it.
/// Inline so that generated code (and the GPU runtime) can draw the very
/// same mask.
inline bool dropout_keep(uint64_t seed, int64_t step, int64_t stream,
                         int64_t i, float p) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t key = mix(seed + 0x9E3779B97F4A7C15ull * (uint64_t)(step + 1) +
                     0xD1B54A32D192ED03ull * (uint64_t)stream);
  uint64_t h = mix(key + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
  return (float)(h >> 40) * (1.0f / 16777216.0f) >= p;
}

/// y = x * keep / (1 - p) with the mask of dropout_keep. The gradient of
/// dropout is dropout of the output gradient with the same seed, step and
/// stream.
void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             int64_t step, int64_t stream);

//===----------------------------------------------------------------------===//
// Embedding and loss (IDX: int32_t or int64_t indices)
//===----------------------------------------------------------------------===//

/// out[i, :] = table[indices[i], :] for i < n; rows of an out-of-range index
/// are zero.
void embedding(const float *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, float *out);
void embedding(const float *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, float *out);

/// dtable = 0, then dtable[indices[i], :] += g[i, :] (deterministic order,
/// out-of-range indices skipped).
void embedding_grad(const float *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable);
void embedding_grad(const float *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable);

/// Softmax cross-entropy of logits [rows, classes] against labels [rows].
/// Rows labelled `ignoreIndex` add 0 and do not count. `reduction` is
/// 0 (mean over counted rows; NaN when none count), 1 (sum) or 2 (none).
/// `perRow`, when not null, receives each row's loss (required for none).
/// Returns the mean or sum (for none, the sum). A label outside
/// [0, classes) that is not ignoreIndex gives that row a NaN loss.
float cross_entropy(const float *logits, const int32_t *labels, int64_t rows,
                    int64_t classes, int64_t ignoreIndex, int reduction,
                    float *perRow);
float cross_entropy(const float *logits, const int64_t *labels, int64_t rows,
                    int64_t classes, int64_t ignoreIndex, int reduction,
                    float *perRow);

/// dlogits of cross_entropy; `g` is one scalar (mean, sum) or [rows] (none).
void cross_entropy_grad(const float *g, const float *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, int reduction, float *dlogits);
void cross_entropy_grad(const float *g, const float *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, int reduction, float *dlogits);

/// cross_entropy and cross_entropy_grad on the same logits in one sweep
/// (the fused classifier): each row's log-sum-exp computed once; the same
/// results, bit for bit, as the two calls. Returns the loss as
/// cross_entropy does and writes dlogits.
float cross_entropy_with_grad(const float *g, const float *logits,
                              const int32_t *labels, int64_t rows,
                              int64_t classes, int64_t ignoreIndex,
                              int reduction, float *perRow, float *dlogits);
float cross_entropy_with_grad(const float *g, const float *logits,
                              const int64_t *labels, int64_t rows,
                              int64_t classes, int64_t ignoreIndex,
                              int reduction, float *perRow, float *dlogits);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The shape of attention's additive mask, [B', H', T', S'] with each dim 1
/// (broadcast) or the scores' [B, H, T, S]; a mask of lower rank has 1s in
/// front. The mask itself is [B', H', T', S'] contiguous.
struct AttentionMaskShape {
  int64_t B = 1, H = 1, T = 1, S = 1;
};

/// out = softmax(q k^T * scale + mask) v per (batch, head): q [B,H,T,D],
/// k [B,Hkv,S,D], v [B,Hkv,S,Dv], out [B,H,T,Dv]; query head h reads
/// key/value head h / (H / Hkv) (Hkv divides H). `mask` (null for none)
/// broadcasts to the scores [B,H,T,S] and may hold -inf. With `causal`,
/// query t sees keys s <= t + (S - T). A query that sees no key (causally,
/// or every score -inf) gets a zero output.
void attention(const float *q, const float *k, const float *v,
               const float *mask, AttentionMaskShape maskShape, float *out,
               int64_t B, int64_t H, int64_t Hkv, int64_t T, int64_t S,
               int64_t D, int64_t Dv, bool causal, float scale);
/// Gradients of attention for the output gradient `g` [B,H,T,Dv]; the
/// probabilities are recomputed, nothing is saved from the forward. dk and
/// dv sum over the query heads of each key/value head. `dmask` (null when
/// not wanted; needs `mask`) receives the scores' gradient summed over the
/// dims the mask broadcasts along, in a fixed order.
void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *mask,
                    AttentionMaskShape maskShape, float *dq, float *dk,
                    float *dv, float *dmask, int64_t B, int64_t H, int64_t Hkv,
                    int64_t T, int64_t S, int64_t D, int64_t Dv, bool causal,
                    float scale);

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

/// x [n, c, h, w], weight [o, c / groups, kh, kw], y [n, o, oh, ow].
struct Conv2dDims {
  int64_t n, c, h, w, o, kh, kw, oh, ow, strideH, strideW, padH, padW, dilH,
      dilW, groups;
};

void conv2d(const float *x, const float *w, const float *bias, float *y,
            const Conv2dDims &dims);
/// dx (overwritten) for the output gradient g.
void conv2d_grad_input(const float *g, const float *w, float *dx,
                       const Conv2dDims &dims);
/// dw (overwritten) for the output gradient g.
void conv2d_grad_weight(const float *g, const float *x, float *dw,
                        const Conv2dDims &dims);

/// x [n, c, h, w], y [n, c, oh, ow]; padding is symmetric.
struct Pool2dDims {
  int64_t n, c, h, w, oh, ow, kh, kw, strideH, strideW, padH, padW;
};

/// Max over each window's unpadded elements.
void max_pool2d(const float *x, float *y, const Pool2dDims &dims);
/// dx (overwritten): each window's gradient goes to its first maximum.
void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &dims);
/// Mean over each window's unpadded elements (count_include_pad=False).
void avg_pool2d(const float *x, float *y, const Pool2dDims &dims);
void avg_pool2d_grad(const float *g, float *dx, const Pool2dDims &dims);

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// y[i0..] = x permuted: output dim i is input dim perm[i].
void transpose(const float *x, const int64_t *shape, int rank,
               const int64_t *perm, float *y);
void transpose(const int32_t *x, const int64_t *shape, int rank,
               const int64_t *perm, int32_t *y);
void transpose(const int64_t *x, const int64_t *shape, int rank,
               const int64_t *perm, int64_t *y);
/// Any element size of 1, 2, 4 or 8 bytes (bool, bf16, ...).
void transpose_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                     int rank, const int64_t *perm, void *y);

/// y = x[start + i * stride] per dim, y shaped outShape.
void slice(const float *x, const int64_t *shape, int rank,
           const int64_t *start, const int64_t *stride, float *y,
           const int64_t *outShape);
/// dx = 0 (shaped xShape), then dx[start + i * stride] = g[i].
void slice_grad(const float *g, const int64_t *gShape, int rank,
                const int64_t *start, const int64_t *stride, float *dx,
                const int64_t *xShape);
/// slice for any element size of 1, 2, 4 or 8 bytes.
void slice_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                 int rank, const int64_t *start, const int64_t *stride,
                 void *y, const int64_t *outShape);

/// Joins `inputs` (each of rank `rank`, shaped shapes[i]) along `axis`.
void concat(const float *const *inputs, const int64_t *const *shapes,
            int numInputs, int rank, int axis, float *out);
/// concat for any element size.
void concat_bytes(const void *const *inputs, int64_t elemSize,
                  const int64_t *const *shapes, int numInputs, int rank,
                  int axis, void *out);

//===----------------------------------------------------------------------===//
// Optimizers and learning-rate schedules
//===----------------------------------------------------------------------===//

enum class OptimizerKind { SGD, Adam, AdamW, RMSprop, Adagrad, LAMB, Lion };

struct OptimizerHyper {
  float beta1, beta2, eps, weightDecay, momentum, alpha;
  bool nesterov;
};

/// One step (`step` counts from 1) on `n` elements, updating `param` and the
/// state in place. `state` holds the slots of tg.optimizer_update in order:
///   SGD      momentum_buffer (only when momentum > 0)
///   Adam     exp_avg, exp_avg_sq         (L2: grad += wd * param)
///   AdamW    exp_avg, exp_avg_sq         (param *= 1 - lr * wd first)
///   RMSprop  square_avg[, momentum_buffer when momentum > 0]
///   Adagrad  sum
///   LAMB     exp_avg, exp_avg_sq         (trust ratio ||p|| / ||update||)
///   Lion     exp_avg
/// State starts at zero. The math is PyTorch's optimizer of the same name
/// (LAMB as in the paper / apex FusedLAMB, Lion as in its paper).
void optimizer_update(OptimizerKind kind, float *param, const float *grad,
                      float *const *state, int numState, int64_t n, float lr,
                      int64_t step, const OptimizerHyper &hyper);

enum class ScheduleKind { Constant, Cosine, Linear, Step, Cyclic, WSD };

struct ScheduleParams {
  ScheduleKind kind;
  int64_t warmupSteps, totalSteps, stepSize, decaySteps;
  double minLr, gamma, maxLr;
};

/// The learning rate at `step` (counting from 1). Steps s < warmupSteps give
/// baseLr * s / warmupSteps; after that, with w = warmupSteps:
///   Constant  baseLr
///   Cosine    minLr + (baseLr - minLr) (1 + cos(pi p)) / 2,
///             p = (s - w) / (totalSteps - w) clamped to [0, 1]
///   Linear    baseLr + (minLr - baseLr) p
///   Step      baseLr * gamma^floor((s - w - 1) / stepSize)   (torch StepLR)
///   Cyclic    triangular between baseLr and maxLr, half cycle stepSize,
///             at iteration s - w - 1                        (torch CyclicLR)
///   WSD       baseLr until totalSteps - decaySteps, then linear to minLr at
///             totalSteps
float lr_schedule(const ScheduleParams &params, int64_t step, float baseLr);

// Handing a step's results over (generated code calls these once per
// result, so that a deep model's thousands of results compile to calls,
// not loops).

/// Copies `bytes` from `value` to `target` unless they are one buffer (an
/// update done in place).
void bind_result(void *target, const void *value, int64_t bytes);

/// A micro-batch's gradient into the step's sum: the first (`first`)
/// writes it, the others add theirs.
void accumulate_grad(void *sum, const float *grad, int64_t n, bool first);

/// `sum[i] += part[i]`.
void add_into(void *sum, const float *part, int64_t n);

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_KERNELS_H

//===- Kernels.h - CUDA kernels called by generated CUDA code -----*- C++ -*-===//
//
// The GPU half of the runtime's compute: one host-callable launcher per tg op
// (or gradient op) that the CUDA emitter does not generate itself, with the
// semantics of runtime/cpu/Kernels.h (and so of dialects/tg/IR/TgOps.td,
// TgGradOps.td and TgOptimizerOps.td). The CPU header is the reference for
// every formula; this one says what differs on the GPU.
//
// Conventions, for every launcher:
//  - Buffers are device memory, dense and row-major. Shapes, dims and other
//    arrays of sizes are host memory, read during the call.
//  - Element types: float, or bf16 (__nv_bfloat16) storage with fp32 math
//    inside. Parameters and optimizer state are always fp32 (master weights).
//    Losses, log-sum-exps and norms are fp32.
//  - Work is queued on `stream` (the last argument) and nothing waits for it:
//    no launcher synchronizes, allocates or reads device memory on the host,
//    so a whole step can be captured in a CUDA graph. Scalars that change
//    between steps (the step, the learning rate, the clip factor) are read
//    from DEVICE memory (`const int64_t *step`, `const float *lr`).
//  - Results are deterministic: no floating-point atomics; reductions run in
//    a fixed order that depends only on the shapes.
//  - Launchers that need scratch memory take `void *workspace` (16-byte
//    aligned) of at least the matching *_workspace_bytes() size, a host
//    function of the shapes. Calls queued on one stream run in order, so
//    generated code may give all of them one scratch buffer sized as the
//    largest requirement, allocated at start-up. The GEMM workspace is the
//    Context's (Device.h).
//  - Pointers from cudaMalloc or the arena at 16-byte multiples give the
//    vectorized paths (256 bytes for the fastest cuBLASLt kernels); any
//    alignment of the element type is correct.
//  - Run a step once before capturing it in a graph: the first GEMM of a
//    shape asks cuBLASLt's heuristic for an algorithm and the first
//    attention launch raises its kernel's shared-memory limit (host calls
//    that are then cached).
//  - Errors (unsupported shapes, a failed launch) throw tgc::Error.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_KERNELS_H
#define TGC_RUNTIME_CUDA_KERNELS_H

#include "runtime/core/Model.h"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tgc::cuda {

using bf16 = __nv_bfloat16;

//===----------------------------------------------------------------------===//
// Matrix products (cuBLASLt)
//===----------------------------------------------------------------------===//

/// What cuBLASLt fuses after the product. GELU is the tanh form (GPT-2's;
/// cuBLASLt's GELU epilogue is that form).
enum class Epilogue {
  None,
  Bias,     ///< c = a·b + bias
  Gelu,     ///< aux = a·b;        c = gelu(aux)
  BiasGelu, ///< aux = a·b + bias; c = gelu(aux)
  GeluGrad, ///< c = (a·b) * gelu'(aux): the gradient through a Gelu epilogue
};

struct MatmulOptions {
  Epilogue epilogue = Epilogue::None;
  /// [N], of c's element type, shared by every batch (Bias, BiasGelu).
  const void *bias = nullptr;
  /// Shaped like c, of c's element type: the pre-activation, written by Gelu
  /// and BiasGelu, read by GeluGrad.
  void *geluAux = nullptr;
  /// c += op(a)·op(b) (beta = 1), for gradient accumulation; with None or
  /// Bias only (the bias is added once per call).
  bool accumulate = false;
  /// fp32 inputs only: let the tensor cores round the inputs to TF32.
  bool allowTf32 = false;
};

/// c = op(a)·op(b) over broadcast batch dims, with tgc::cpu::matmul's
/// arguments: `a` is [aBatch..., M, K] ([aBatch..., K, M] with transA), `b`
/// [bBatch..., K, N] ([bBatch..., N, K] with transB), `c` [cBatch..., M, N];
/// an aBatch/bBatch entry is 1 or the cBatch entry. fp32 accumulation
/// (CUBLAS_COMPUTE_32F). Supported element types (a, b, c): (f32, f32, f32),
/// (bf16, bf16, bf16) and (bf16, bf16, f32).
///
/// Row-major onto cuBLASLt's column-major: a row-major [M, N] matrix is the
/// column-major [N, M] matrix of the same memory, its transpose, so
/// c = a·b is computed as cᵀ = bᵀ·aᵀ: cuBLASLt's A is our b, its B our a,
/// its D is N x M with leading dimension N, and the bias (one value per row
/// of cuBLASLt's D) is one value per column of our c. Batches that broadcast
/// a shared `b` (a linear layer on [B, T, K]) fold into the rows of one
/// GEMM; other batches run as strided batched GEMMs (stride 0 for a
/// broadcast operand), looping on the host over batch dims that one stride
/// cannot describe. Descriptors and the chosen algorithm are cached by shape,
/// type, epilogue and pointer alignment; the workspace is the Context's
/// (32 MiB, so GEMMs must not run on two streams at once). An epilogue cuBLASLt cannot fuse for a shape (the GELU aux needs
/// N % 8 == 0) runs as a separate kernel after the product, same result.
void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream);
void matmul(const bf16 *a, const bf16 *b, bf16 *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream);
void matmul(const bf16 *a, const bf16 *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank,
            const MatmulOptions &options, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max };

/// tgc::cpu::reduce: `x` (shape[rank]) over `dims` (sorted, distinct,
/// non-negative) into `out` (the kept dims in order). Sums accumulate in
/// double; max propagates NaN. Like the CPU, it runs one pass per run of
/// adjacent reduced dims, innermost first; between passes the partial
/// results live in `workspace` as fp32.
int64_t reduce_workspace_bytes(const int64_t *shape, int rank,
                               const int64_t *dims, int numDims);
void reduce(ReduceKind kind, const float *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, float *out, void *workspace,
            cudaStream_t stream);
void reduce(ReduceKind kind, const bf16 *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, bf16 *out, void *workspace,
            cudaStream_t stream);

/// Softmax / log-softmax of `x` viewed as [outer, n, inner] along the middle
/// dim (tgc::cpu::softmax). A row of all -inf gives NaN, as in torch.
void softmax(const float *x, float *y, int64_t outer, int64_t n,
             int64_t inner, cudaStream_t stream);
void softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n, int64_t inner,
             cudaStream_t stream);
void log_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t stream);
void log_softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t stream);

/// One tensor of a global norm: `count` elements of F32 or BF16.
struct NormInput {
  const void *data;
  DType dtype;
  int64_t count;
};

/// tg.global_norm: norm[0] = sqrt(sum of squares of every element of every
/// input), accumulated in double (tgc::cpu::sum_squares per tensor). Inputs
/// go many to a launch; each block writes one partial sum to `workspace`
/// and a last one-block kernel adds them in order.
int64_t global_norm_workspace_bytes(const NormInput *inputs, int count);
void global_norm(const NormInput *inputs, int count, float *norm,
                 void *workspace, cudaStream_t stream);

/// torch.nn.utils.clip_grad_norm_'s factor, as tg-optimizer builds it:
/// scale[0] = min(maxNorm / (norm[0] + 1e-6), 1) in fp32 (NaN stays NaN).
void clip_factor(const float *norm, float maxNorm, float *scale,
                 cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// y = (x - mean) / sqrt(var + eps) * w + b over the last dim `d` of
/// [rows, d]; `w`, `b` (of x's type) may be null. One warp per row, fp32
/// statistics.
void layer_norm(const float *x, const float *w, const float *b, float *y,
                int64_t rows, int64_t d, float eps, cudaStream_t stream);
void layer_norm(const bf16 *x, const bf16 *w, const bf16 *b, bf16 *y,
                int64_t rows, int64_t d, float eps, cudaStream_t stream);

/// Gradients of layer_norm (tgc::cpu::layer_norm_grad): dx, dw, db
/// overwritten; any of them may be null; dx must not alias g or x (as on
/// the CPU). The row statistics are recomputed
/// from x. dw/db are reduced in two deterministic stages: per chunk of 64
/// rows into `workspace` (double), then over the chunks.
int64_t layer_norm_grad_workspace_bytes(int64_t rows, int64_t d);
void layer_norm_grad(const float *g, const float *x, const float *w, float *dx,
                     float *dw, float *db, int64_t rows, int64_t d, float eps,
                     void *workspace, cudaStream_t stream);
void layer_norm_grad(const bf16 *g, const bf16 *x, const bf16 *w, bf16 *dx,
                     bf16 *dw, bf16 *db, int64_t rows, int64_t d, float eps,
                     void *workspace, cudaStream_t stream);

/// y = x / sqrt(mean(x^2) + eps) * w over the last dim; `w` may be null.
void rms_norm(const float *x, const float *w, float *y, int64_t rows,
              int64_t d, float eps, cudaStream_t stream);
void rms_norm(const bf16 *x, const bf16 *w, bf16 *y, int64_t rows, int64_t d,
              float eps, cudaStream_t stream);

/// Gradients of rms_norm; dx and dw may be null, dw as layer_norm_grad's.
int64_t rms_norm_grad_workspace_bytes(int64_t rows, int64_t d);
void rms_norm_grad(const float *g, const float *x, const float *w, float *dx,
                   float *dw, int64_t rows, int64_t d, float eps,
                   void *workspace, cudaStream_t stream);
void rms_norm_grad(const bf16 *g, const bf16 *x, const bf16 *w, bf16 *dx,
                   bf16 *dw, int64_t rows, int64_t d, float eps,
                   void *workspace, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Activations, dropout, casts
//===----------------------------------------------------------------------===//

/// GELU, exact (x Phi(x)) or with tanhApprox; dx = g * gelu'(x). The emitter
/// fuses these into its own kernels through DeviceMath.cuh; these are the
/// standalone forms.
void gelu(const float *x, float *y, int64_t n, bool tanhApprox,
          cudaStream_t stream);
void gelu(const bf16 *x, bf16 *y, int64_t n, bool tanhApprox,
          cudaStream_t stream);
void gelu_grad(const float *g, const float *x, float *dx, int64_t n,
               bool tanhApprox, cudaStream_t stream);
void gelu_grad(const bf16 *g, const bf16 *x, bf16 *dx, int64_t n,
               bool tanhApprox, cudaStream_t stream);

/// y = x * keep / (1 - p) with tgc::cpu::dropout_keep's mask for
/// (seed, *step, *randomStream, i): the same mask as the CPU's. `step` and
/// `randomStream` are device memory (a replayed CUDA graph reads the
/// current values).
void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             const int64_t *step, const int64_t *randomStream,
             cudaStream_t stream);
void dropout(const bf16 *x, bf16 *y, int64_t n, float p, uint64_t seed,
             const int64_t *step, const int64_t *randomStream,
             cudaStream_t stream);

/// Round-to-nearest-even fp32 -> bf16, and exact bf16 -> fp32.
void cast(const float *x, bf16 *y, int64_t n, cudaStream_t stream);
void cast(const bf16 *x, float *y, int64_t n, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// out[i, :] = table[indices[i], :] for i < n; rows of an out-of-range index
/// are zero.
void embedding(const float *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, float *out,
               cudaStream_t stream);
void embedding(const float *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, float *out,
               cudaStream_t stream);
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, bf16 *out,
               cudaStream_t stream);
void embedding(const bf16 *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, bf16 *out,
               cudaStream_t stream);

/// dtable = 0, then dtable[indices[i], :] += g[i, :], out-of-range indices
/// skipped. Deterministic: the positions are sorted by row (a stable radix
/// sort, cub) and each row is summed in position order in fp32, the CPU's
/// order. Needs n and rows below 2^31.
int64_t embedding_grad_workspace_bytes(int64_t n, int64_t rows);
void embedding_grad(const float *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *workspace,
                    cudaStream_t stream);
void embedding_grad(const float *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable, void *workspace,
                    cudaStream_t stream);
void embedding_grad(const bf16 *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *workspace,
                    cudaStream_t stream);
void embedding_grad(const bf16 *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, bf16 *dtable, void *workspace,
                    cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// Reductions of cross_entropy, as in tgc::cpu::cross_entropy.
enum class Reduction : int { Mean = 0, Sum = 1, None = 2 };

/// Softmax cross-entropy of logits [rows, classes] against labels [rows]
/// (tgc::cpu::cross_entropy): rows labelled `ignoreIndex` add 0 and do not
/// count; an out-of-range label gives its row a NaN loss. Writes
///  - loss[0] (when not null): the mean over counted rows (NaN when none
///    count) or the sum; for None, the sum;
///  - perRow[rows] (when not null; the losses for None): each row's loss.
/// One block per row, an online max/sum in one read of the row.
int64_t cross_entropy_workspace_bytes(int64_t rows);
void cross_entropy(const float *logits, const int32_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *workspace,
                   cudaStream_t stream);
void cross_entropy(const float *logits, const int64_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *workspace,
                   cudaStream_t stream);
void cross_entropy(const bf16 *logits, const int32_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *workspace,
                   cudaStream_t stream);
void cross_entropy(const bf16 *logits, const int64_t *labels, int64_t rows,
                   int64_t classes, int64_t ignoreIndex, Reduction reduction,
                   float *loss, float *perRow, void *workspace,
                   cudaStream_t stream);

/// dlogits of cross_entropy (tgc::cpu::cross_entropy_grad); `g` is device
/// memory: one float (Mean, Sum) or [rows] (None). dlogits may be `logits`
/// itself (in place).
void cross_entropy_grad(const float *g, const float *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        float *dlogits, void *workspace, cudaStream_t stream);
void cross_entropy_grad(const float *g, const float *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        float *dlogits, void *workspace, cudaStream_t stream);
void cross_entropy_grad(const float *g, const bf16 *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        bf16 *dlogits, void *workspace, cudaStream_t stream);
void cross_entropy_grad(const float *g, const bf16 *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, Reduction reduction,
                        bf16 *dlogits, void *workspace, cudaStream_t stream);

/// The fused classifier (llm.c's): cross_entropy and cross_entropy_grad in
/// one read of the logits. Per row, the loss (into perRow / loss as
/// cross_entropy) and dlogits = (softmax - onehot) * g / count (Mean),
/// * g (Sum) or * g[row] (None), with the probabilities never stored.
/// `g` is device memory and may be null for a loss gradient of 1 (training
/// on the loss itself). dlogits may be `logits` (in place: the logits are
/// overwritten by their gradient).
void fused_classifier(const float *logits, const int32_t *labels,
                      int64_t rows, int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, float *dlogits, void *workspace,
                      cudaStream_t stream);
void fused_classifier(const float *logits, const int64_t *labels,
                      int64_t rows, int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, float *dlogits, void *workspace,
                      cudaStream_t stream);
void fused_classifier(const bf16 *logits, const int32_t *labels, int64_t rows,
                      int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, bf16 *dlogits, void *workspace,
                      cudaStream_t stream);
void fused_classifier(const bf16 *logits, const int64_t *labels, int64_t rows,
                      int64_t classes, int64_t ignoreIndex,
                      Reduction reduction, const float *g, float *loss,
                      float *perRow, bf16 *dlogits, void *workspace,
                      cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The shape of attention's additive mask (as tgc::cpu's): [B', H', T', S']
/// contiguous, each dim 1 (broadcast) or the scores' [B, H, T, S].
struct AttentionMaskShape {
  int64_t B = 1, H = 1, T = 1, S = 1;
};

/// out = softmax(q kᵀ * scale + mask) v per (batch, head)
/// (tgc::cpu::attention): q [B,H,T,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv],
/// out [B,H,T,Dv], D and Dv up to 128; query head h reads key/value head
/// h / (H / Hkv). `mask` (null for none, the element type of q) broadcasts
/// to the scores and may hold -inf. With `causal`, query t sees keys
/// s <= t + (S - T); a query that sees no key (causally, or every score
/// -inf) gets zeros (and lse -inf). When `lse` is not null it receives the
/// natural-log log-sum-exp of each query's scores, [B,H,T] fp32, for
/// attention_grad.
///
/// Flash-attention style: 64 queries per block, keys in tiles of 64 with an
/// online softmax; blocks stop at their last visible key. bf16 runs on the
/// tensor cores (mma.sync m16n8k16, fp32 accumulation, P rounded to bf16 for
/// P·V); fp32 runs a warp-per-query kernel in fp32 throughout. Both read the
/// mask where they form the scores.
void attention(const float *q, const float *k, const float *v,
               const float *mask, AttentionMaskShape maskShape, float *out,
               float *lse, int64_t B, int64_t H, int64_t Hkv, int64_t T,
               int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
               cudaStream_t stream);
void attention(const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *mask,
               AttentionMaskShape maskShape, bf16 *out, float *lse, int64_t B,
               int64_t H, int64_t Hkv, int64_t T, int64_t S, int64_t D,
               int64_t Dv, bool causal, float scale, cudaStream_t stream);

/// Gradients of attention for the output gradient g [B,H,T,Dv]
/// (tgc::cpu::attention_grad), recomputing the probabilities. `out` and
/// `lse` are the forward's output and log-sum-exp: pass both and the
/// backward starts at once; pass neither (null) and one forward-cost pass
/// recomputes them first (lse alone is not used). Then one kernel per key
/// block of each key/value head writes dk and dv (summed over the query
/// heads of its group), one per query block writes dq: no atomics. `dmask`
/// (null when the mask is not trained) receives the scores' gradient summed
/// over the mask's broadcast dims, in a fixed order.
/// Workspace: delta = rowsum(g * out) and, when recomputed, lse: [B,H,T]
/// fp32 each; with `maskGrad` (dmask not null) also the scores' gradient,
/// [B,H,T,S] fp32.
int64_t attention_grad_workspace_bytes(int64_t B, int64_t H, int64_t T,
                                       int64_t S, bool maskGrad);
void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *mask,
                    AttentionMaskShape maskShape, const float *out,
                    const float *lse, float *dq, float *dk, float *dv,
                    float *dmask, int64_t B, int64_t H, int64_t Hkv, int64_t T,
                    int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
                    void *workspace, cudaStream_t stream);
void attention_grad(const bf16 *g, const bf16 *q, const bf16 *k,
                    const bf16 *v, const bf16 *mask,
                    AttentionMaskShape maskShape, const bf16 *out,
                    const float *lse, bf16 *dq, bf16 *dk, bf16 *dv,
                    bf16 *dmask, int64_t B, int64_t H, int64_t Hkv, int64_t T,
                    int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
                    void *workspace, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW, fp32)
//===----------------------------------------------------------------------===//

/// x [n, c, h, w], weight [o, c / groups, kh, kw], y [n, o, oh, ow]; as
/// tgc::cpu::Conv2dDims.
struct Conv2dDims {
  int64_t n, c, h, w, o, kh, kw, oh, ow, strideH, strideW, padH, padW, dilH,
      dilW, groups;
};

/// Direct convolution, one thread per output (naive: meant for the small
/// CNNs of the examples). `bias` may be null.
void conv2d(const float *x, const float *w, const float *bias, float *y,
            const Conv2dDims &dims, cudaStream_t stream);
/// dx (overwritten): one thread per input element, gathering its outputs.
void conv2d_grad_input(const float *g, const float *w, float *dx,
                       const Conv2dDims &dims, cudaStream_t stream);
/// dw (overwritten): one block per weight element, a fixed-order reduction
/// over images and output positions.
void conv2d_grad_weight(const float *g, const float *x, float *dw,
                        const Conv2dDims &dims, cudaStream_t stream);

/// x [n, c, h, w], y [n, c, oh, ow]; padding is symmetric
/// (tgc::cpu::Pool2dDims).
struct Pool2dDims {
  int64_t n, c, h, w, oh, ow, kh, kw, strideH, strideW, padH, padW;
};

/// Max over each window's unpadded elements (NaN counts as the maximum).
void max_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t stream);
/// dx (overwritten): each window's gradient goes to its first maximum.
void max_pool2d_grad(const float *g, const float *x, float *dx,
                     const Pool2dDims &dims, cudaStream_t stream);
/// Mean over each window's unpadded elements (count_include_pad=False).
void avg_pool2d(const float *x, float *y, const Pool2dDims &dims,
                cudaStream_t stream);
void avg_pool2d_grad(const float *g, float *dx, const Pool2dDims &dims,
                     cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Shape ops (any element size of 1, 2, 4 or 8 bytes: bool, bf16, f32, i64)
//===----------------------------------------------------------------------===//

/// y = x permuted: output dim i is input dim perm[i]. Size-1 dims are
/// dropped and dims that stay adjacent merged first; if the innermost dim
/// stays innermost rows are copied, otherwise 32 x 32 tiles go through
/// shared memory so that reads and writes are both coalesced. rank <= 8.
void transpose_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                     int rank, const int64_t *perm, void *y,
                     cudaStream_t stream);
inline void transpose(const float *x, const int64_t *shape, int rank,
                      const int64_t *perm, float *y, cudaStream_t stream) {
  transpose_bytes(x, sizeof(float), shape, rank, perm, y, stream);
}
inline void transpose(const bf16 *x, const int64_t *shape, int rank,
                      const int64_t *perm, bf16 *y, cudaStream_t stream) {
  transpose_bytes(x, sizeof(bf16), shape, rank, perm, y, stream);
}

/// y = x[start + i * stride] per dim, y shaped outShape.
void slice_bytes(const void *x, int64_t elemSize, const int64_t *shape,
                 int rank, const int64_t *start, const int64_t *stride,
                 void *y, const int64_t *outShape, cudaStream_t stream);
inline void slice(const float *x, const int64_t *shape, int rank,
                  const int64_t *start, const int64_t *stride, float *y,
                  const int64_t *outShape, cudaStream_t stream) {
  slice_bytes(x, sizeof(float), shape, rank, start, stride, y, outShape,
              stream);
}
inline void slice(const bf16 *x, const int64_t *shape, int rank,
                  const int64_t *start, const int64_t *stride, bf16 *y,
                  const int64_t *outShape, cudaStream_t stream) {
  slice_bytes(x, sizeof(bf16), shape, rank, start, stride, y, outShape,
              stream);
}

/// dx = 0 (shaped xShape), then dx[start + i * stride] = g[i].
void slice_grad_bytes(const void *g, int64_t elemSize, const int64_t *gShape,
                      int rank, const int64_t *start, const int64_t *stride,
                      void *dx, const int64_t *xShape, cudaStream_t stream);
inline void slice_grad(const float *g, const int64_t *gShape, int rank,
                       const int64_t *start, const int64_t *stride, float *dx,
                       const int64_t *xShape, cudaStream_t stream) {
  slice_grad_bytes(g, sizeof(float), gShape, rank, start, stride, dx, xShape,
                   stream);
}
inline void slice_grad(const bf16 *g, const int64_t *gShape, int rank,
                       const int64_t *start, const int64_t *stride, bf16 *dx,
                       const int64_t *xShape, cudaStream_t stream) {
  slice_grad_bytes(g, sizeof(bf16), gShape, rank, start, stride, dx, xShape,
                   stream);
}

/// Joins `inputs` (device pointers in a host array, each of rank `rank`,
/// shaped shapes[i]) along `axis`: one copy kernel per input.
void concat_bytes(const void *const *inputs, int64_t elemSize,
                  const int64_t *const *shapes, int numInputs, int rank,
                  int axis, void *out, cudaStream_t stream);
inline void concat(const float *const *inputs, const int64_t *const *shapes,
                   int numInputs, int rank, int axis, float *out,
                   cudaStream_t stream) {
  concat_bytes(reinterpret_cast<const void *const *>(inputs), sizeof(float),
               shapes, numInputs, rank, axis, out, stream);
}
inline void concat(const bf16 *const *inputs, const int64_t *const *shapes,
                   int numInputs, int rank, int axis, bf16 *out,
                   cudaStream_t stream) {
  concat_bytes(reinterpret_cast<const void *const *>(inputs), sizeof(bf16),
               shapes, numInputs, rank, axis, out, stream);
}

//===----------------------------------------------------------------------===//
// Optimizers and learning-rate schedules
//===----------------------------------------------------------------------===//

/// As tgc::cpu::OptimizerKind / OptimizerHyper.
enum class OptimizerKind { SGD, Adam, AdamW, RMSprop, Adagrad, LAMB, Lion };

struct OptimizerHyper {
  float beta1, beta2, eps, weightDecay, momentum, alpha;
  bool nesterov;
};

/// One step of tgc::cpu::optimizer_update on `n` fp32 elements, with the
/// same per-element fp32 arithmetic in the same order (PyTorch's), updating
/// `param` and `state` (device pointers in a host array, the slots of
/// tg.optimizer_update in order) in place. From device memory:
///  - lr[0], the learning rate (lr_schedule's output);
///  - step[0], counting from 1 (bias corrections in double, as the CPU);
///  - gradScale[0] when not null: the gradient is multiplied by it first, in
///    fp32 (the clip factor, or 1 / microBatches, or their product).
/// `paramCopy`, when not null, receives the updated parameter in bf16 (the
/// compute copy of a bf16 model). LAMB runs two kernels: per-block partial
/// norms of the parameter and its update into `workspace`, then the update
/// with the trust ratio; the other kinds need no workspace (0 bytes).
int64_t optimizer_workspace_bytes(OptimizerKind kind, int64_t n);
void optimizer_update(OptimizerKind kind, float *param, const float *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *workspace, cudaStream_t stream);
/// The same with a bf16 gradient (read as fp32).
void optimizer_update(OptimizerKind kind, float *param, const bf16 *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *workspace, cudaStream_t stream);

/// One tensor of a multi-tensor update (tg-fuse's optimizer kernel of
/// several updates): optimizer_update's pointers and size.
struct OptimizerLane {
  float *param;
  const void *grad; ///< f32, or bf16 with `bf16Grads`
  float *state[2];  ///< the update's slots in order; null where unused
  int64_t n;
  const float *gradScale; ///< null: the gradient is not scaled
};

/// optimizer_update on each of `count` lanes, all with the same kind,
/// hyperparameters, learning rate and step: one launch per 48 lanes (each
/// block on one lane), the per-element arithmetic of optimizer_update.
/// LAMB goes lane by lane (its trust ratio needs each lane's norms), in a
/// workspace of the largest lane's optimizer_workspace_bytes.
void optimizer_update_lanes(OptimizerKind kind, const OptimizerLane *lanes,
                            int count, bool bf16Grads, const float *lr,
                            const int64_t *step, const OptimizerHyper &hyper,
                            void *workspace, cudaStream_t stream);

/// As tgc::cpu::ScheduleKind / ScheduleParams.
enum class ScheduleKind { Constant, Cosine, Linear, Step, Cyclic, WSD };

struct ScheduleParams {
  ScheduleKind kind;
  int64_t warmupSteps, totalSteps, stepSize, decaySteps;
  double minLr, gamma, maxLr;
};

/// lr[0] = tgc::cpu::lr_schedule(params, step[0], baseLr[0]), evaluated by
/// one device thread with the CPU's double formulas; all three pointers are
/// device memory.
void lr_schedule(const ScheduleParams &params, const int64_t *step,
                 const float *baseLr, float *lr, cudaStream_t stream);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_KERNELS_H

//===- FlashAttention.cu - bf16 attention on the tensor cores ------*- C++ -*-===//
//
// FlashAttention-2's algorithm on mma.sync.m16n8k16 (bf16 in, fp32
// accumulate), written for clarity over the last few percent:
//
//  - Blocks of 4 warps (at least 2 blocks per SM by the launch bounds, which
//    lets ptxas use up to 255 registers without spilling). A warp owns 16 rows of the block's 64 (queries in
//    the forward and in dq, keys in dk/dv) and keeps its accumulators in
//    registers, in the mma C layout, so it knows which row each value
//    belongs to (the online softmax rescales rows).
//  - The other operand streams through shared memory in tiles of 64 rows,
//    head dims zero-padded to KD (64 or 128) so that any D, Dv <= 128 works.
//    Rows are padded by 8 bf16 (16 bytes): the fragment loads below are then
//    free of bank conflicts.
//  - Scores are scaled into the base-2 domain (exp2f), the additive mask
//    too: the kernels instantiated for a mask stage the 64 x 64 mask entries
//    of each score tile in shared memory (fp32, coalesced reads, broadcast
//    dims at stride 0) beside the operand tiles; a causally hidden score is
//    -inf before the exponential. A row that sees no key (causally, or every
//    score -inf) keeps m = -inf and l = 0 and gets zeros (and lse = -inf);
//    the backward gives it P = 0.
//  - Grouped-query attention: a query head reads the key/value head of its
//    group; the dk/dv kernel runs per key/value head and walks the query
//    heads of the group in turn.
//  - The backward recomputes P from lse and uses delta = rowsum(g * out):
//    one kernel per 64 keys accumulates dk and dv over the queries that see
//    them, another per 64 queries accumulates dq (and stores dS in fp32 when
//    the mask needs a gradient; Attention.cu sums it over the mask's
//    broadcast dims). Nothing is added by two blocks, so there are no
//    atomics and the result is deterministic (at the cost of computing Q·Kᵀ
//    and dO·Vᵀ twice).
//
// Fragment layouts of mma.m16n8k16 (PTX ISA), for lane = 4 g + t:
//   A (16 x 16, row major), 4 regs of 2 bf16:
//     a0 = A[g][2t, 2t+1]  a1 = A[g+8][2t, 2t+1]
//     a2 = A[g][2t+8, +9]  a3 = A[g+8][2t+8, +9]
//   B (16 x 8, indexed [k][n]), 2 regs:  b0 = B[2t, 2t+1][g]  b1 = B[2t+8, +9][g]
//   C (16 x 8 fp32), 4 regs:  c0, c1 = C[g][2t, 2t+1]  c2, c3 = C[g+8][2t, 2t+1]
// Two neighbouring C tiles (n-tiles 2j, 2j+1) of a product hold exactly the
// A fragment of k-step j of the next product (P·V after Q·Kᵀ), so P never
// leaves the registers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/FlashAttention.h"

#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

namespace tgc::cuda::flash {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 64; // rows per block and per streamed tile
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

/// Row stride of a shared tile of head dim KD, in bf16.
template <int KD> __host__ __device__ constexpr int strideOf() { return KD + 8; }

//===----------------------------------------------------------------------===//
// Fragments
//===----------------------------------------------------------------------===//

__device__ __forceinline__ uint32_t load32(const bf16 *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

/// Two bf16 in one register, `lo` in the low half (the lower k index).
__device__ __forceinline__ uint32_t pack(bf16 lo, bf16 hi) {
  return (uint32_t)__bfloat16_as_ushort(lo) |
         ((uint32_t)__bfloat16_as_ushort(hi) << 16);
}
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  return pack(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
}

struct FragA {
  uint32_t r[4];
};

/// A fragment of rows [row0, row0 + 16) x k [k0, k0 + 16) of a row-major
/// shared tile.
template <int KD>
__device__ __forceinline__ FragA loadA(const bf16 *tile, int row0, int k0,
                                       int g, int t) {
  constexpr int ks = strideOf<KD>();
  const bf16 *p = tile + (row0 + g) * ks + k0 + 2 * t;
  return {{load32(p), load32(p + 8 * ks), load32(p + 8), load32(p + 8 * ks + 8)}};
}

/// The A fragment of k-step j from the C tiles 2j and 2j+1 of a product.
__device__ __forceinline__ FragA aFromC(const float (&lo)[4],
                                        const float (&hi)[4]) {
  return {{pack(lo[0], lo[1]), pack(lo[2], lo[3]), pack(hi[0], hi[1]),
           pack(hi[2], hi[3])}};
}

/// B(k, n) = tile[n0 + n][k0 + k]: the tile holds B transposed (rows are n),
/// as K holds Kᵀ for Q·Kᵀ. Pairs along k are adjacent: one load each.
template <int KD>
__device__ __forceinline__ void loadBTransposed(const bf16 *tile, int n0,
                                                int k0, int g, int t,
                                                uint32_t &b0, uint32_t &b1) {
  const bf16 *p = tile + (n0 + g) * strideOf<KD>() + k0 + 2 * t;
  b0 = load32(p);
  b1 = load32(p + 8);
}

/// B(k, n) = tile[k0 + k][n0 + n]: rows are k, as V for P·V. Pairs along k
/// are in two rows: two loads each.
template <int KD>
__device__ __forceinline__ void loadB(const bf16 *tile, int k0, int n0, int g,
                                      int t, uint32_t &b0, uint32_t &b1) {
  constexpr int ks = strideOf<KD>();
  const bf16 *p = tile + (k0 + 2 * t) * ks + n0 + g;
  b0 = pack(p[0], p[ks]);
  b1 = pack(p[8 * ks], p[9 * ks]);
}

/// c += a · b on the tensor cores.
__device__ __forceinline__ void mma(float (&c)[4], const FragA &a, uint32_t b0,
                                    uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b0),
                 "r"(b1));
}

/// Max and sum over the 4 lanes (t = 0..3) that share a row.
__device__ __forceinline__ float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

//===----------------------------------------------------------------------===//
// Shared tiles
//===----------------------------------------------------------------------===//

/// tile[r][c] = src[r * ld + c] for r < rows, c < cols, zero elsewhere in
/// [kRows, KD); all threads of the block. With `packed`, cols and ld are
/// multiples of 8 and src 16-byte aligned: 16-byte loads.
template <int KD>
__device__ void loadTile(bf16 *tile, const bf16 *src, int64_t rows,
                         int64_t cols, int64_t ld, bool packed) {
  constexpr int ks = strideOf<KD>();
  if (packed) {
    constexpr int kChunks = KD / 8;
    for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
      int r = c / kChunks, c8 = (c % kChunks) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < rows && c8 < cols)
        v = *reinterpret_cast<const uint4 *>(src + r * ld + c8);
      *reinterpret_cast<uint4 *>(tile + r * ks + c8) = v;
    }
  } else {
    for (int e = threadIdx.x; e < kRows * KD; e += kThreads) {
      int r = e / KD, c = e % KD;
      tile[r * ks + c] = r < rows && c < cols ? src[r * ld + c]
                                              : __float2bfloat16_rn(0.0f);
    }
  }
}

/// Whether query `row` sees `key`.
__device__ __forceinline__ bool visible(const Params &p, int64_t row,
                                        int64_t key) {
  return row < p.T && key < p.S && (!p.causal || key <= row + (p.S - p.T));
}

/// Keys the queries [0, lastRow] can see: [0, keyEnd).
__device__ __forceinline__ int64_t keyEnd(const Params &p, int64_t lastRow) {
  if (!p.causal)
    return p.S;
  int64_t end = lastRow + (p.S - p.T) + 1;
  return end < 0 ? 0 : (end > p.S ? p.S : end);
}

// Head arithmetic in 32 bits (heads over the batch are far below 2^31): a
// 64-bit division is a call, and the backward kernels have no registers to
// spare around one.

/// Query heads per key/value head.
__device__ __forceinline__ int headGroup(const HeadsAndMask &hm) {
  return (int)hm.H / (int)hm.Hkv;
}

/// The key/value head that query head `head` (flattened over the batch)
/// reads.
__device__ __forceinline__ int64_t kvHeadOf(const HeadsAndMask &hm,
                                            int64_t head) {
  int h = (int)head, heads = (int)hm.H;
  return h / heads * (int)hm.Hkv + h % heads / headGroup(hm);
}

/// The first query head (flattened over the batch) that reads key/value
/// head `kvHead`.
__device__ __forceinline__ int64_t firstHeadOf(const HeadsAndMask &hm,
                                               int64_t kvHead) {
  int kv = (int)kvHead, kvHeads = (int)hm.Hkv;
  return kv / kvHeads * (int)hm.H + kv % kvHeads * headGroup(hm);
}

/// Row stride of a shared mask tile, in floats (padded against bank
/// conflicts of the fragment reads).
constexpr int kMaskStride = kRows + 8;
constexpr int kMaskTileBytes = kRows * kMaskStride * (int)sizeof(float);

/// maskT[r][c] = mask(row0 + r, key0 + c) of query head `head`, in the
/// base-2 domain (0 outside the scores, which are never visible); all
/// threads of the block, consecutive threads on consecutive keys.
__device__ void loadMaskTile(float *maskT, const Params &p,
                             const HeadsAndMask &hm, int64_t head,
                             int64_t row0, int64_t key0) {
  int h = (int)head, heads = (int)hm.H;
  const MaskStrides &st = hm.maskStrides;
  const bf16 *mask = hm.mask + h / heads * st.batch + h % heads * st.head;
  for (int e = threadIdx.x; e < kRows * kRows; e += kThreads) {
    int r = e / kRows, c = e % kRows;
    int64_t row = row0 + r, key = key0 + c;
    maskT[r * kMaskStride + c] =
        row < p.T && key < p.S
            ? toFloat(mask[row * st.row + key * st.key]) * kLog2e
            : 0.0f;
  }
}

/// A query's lse in the base-2 domain, as the backward subtracts it from
/// the scores: +inf for a query that sees no key (lse -inf, a fully masked
/// row), so that exp2(score - lse) is 0 for it, not NaN, without a test per
/// score.
__device__ __forceinline__ float lseLog2(float lse) {
  return lse == -INFINITY ? INFINITY : lse * kLog2e;
}

struct Packing {
  bool qk, vg; // 16-byte loads of q/k rows (D) and of v/g rows (Dv)
};

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Block per (head, 64 queries): blockIdx.x = head * queryBlocks + block.
/// Shared: Q, K, V tiles (and with `Masked` the mask tile). Writes out and
/// lse, or (Delta) lse and delta.
template <int KD, bool Delta, bool Masked>
__global__ void __launch_bounds__(kThreads, 2)
    forwardKernel(Params p, HeadsAndMask hm, Packing packing,
                  int64_t queryBlocks) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int ks = strideOf<KD>();
  bf16 *qs = reinterpret_cast<bf16 *>(smem);
  bf16 *kt = qs + kRows * ks;
  bf16 *vt = kt + kRows * ks;
  float *maskT = reinterpret_cast<float *>(vt + kRows * ks);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4,
      t = lane % 4;
  int64_t head = blockIdx.x / queryBlocks, kvHead = kvHeadOf(hm, head);
  int64_t q0 = (blockIdx.x % queryBlocks) * kRows;
  const bf16 *q = p.q + head * p.T * p.D, *k = p.k + kvHead * p.S * p.D,
             *v = p.v + kvHead * p.S * p.Dv;
  loadTile<KD>(qs, q + q0 * p.D, p.T - q0, p.D, p.D, packing.qk);

  // This thread's two rows of the warp's 16 (the C fragment's g and g + 8).
  int64_t rows[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float scaleLog2 = p.scale * kLog2e;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[KD / 8][4] = {};
  int64_t last = q0 + kRows - 1 < p.T - 1 ? q0 + kRows - 1 : p.T - 1;
  int64_t end = keyEnd(p, last);
  for (int64_t k0 = 0; k0 < end; k0 += kRows) {
    __syncthreads(); // the previous tiles are no longer read
    loadTile<KD>(kt, k + k0 * p.D, p.S - k0, p.D, p.D, packing.qk);
    loadTile<KD>(vt, v + k0 * p.Dv, p.S - k0, p.Dv, p.Dv, packing.vg);
    if (Masked)
      loadMaskTile(maskT, p, hm, head, q0, k0);
    __syncthreads();

    // S = Q Kᵀ for 16 queries x 64 keys.
    float s[8][4] = {};
#pragma unroll
    for (int kk = 0; kk < KD / 16; ++kk) {
      FragA a = loadA<KD>(qs, warp * 16, kk * 16, g, t);
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        uint32_t b0, b1;
        loadBTransposed<KD>(kt, nt * 8, kk * 16, g, t, b0, b1);
        mma(s[nt], a, b0, b1);
      }
    }

    // Online softmax in base 2: mask, row max, rescale, exponentiate.
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = nt * 8 + 2 * t + (e & 1);
        int64_t key = k0 + col;
        float score = s[nt][e] * scaleLog2;
        if (Masked)
          score += maskT[(warp * 16 + g + 8 * (e / 2)) * kMaskStride + col];
        s[nt][e] = visible(p, rows[e / 2], key) ? score : -INFINITY;
        mx[e / 2] = fmaxf(mx[e / 2], s[nt][e]);
      }
    float base[2], alpha[2], rowSum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mNew = fmaxf(m[i], quadMax(mx[i]));
      base[i] = mNew == -INFINITY ? 0.0f : mNew;
      alpha[i] = exp2f(m[i] - base[i]);
      m[i] = mNew;
    }
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nt][e] = exp2f(s[nt][e] - base[e / 2]);
        rowSum[e / 2] += s[nt][e];
      }
#pragma unroll
    for (int i = 0; i < 2; ++i)
      l[i] = l[i] * alpha[i] + rowSum[i]; // this lane's part of the row
#pragma unroll
    for (int nt = 0; nt < KD / 8; ++nt) {
      o[nt][0] *= alpha[0];
      o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1];
      o[nt][3] *= alpha[1];
    }

    // O += P V, P straight from the score registers.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      FragA a = aFromC(s[2 * j], s[2 * j + 1]);
#pragma unroll
      for (int nt = 0; nt < KD / 8; ++nt) {
        uint32_t b0, b1;
        loadB<KD>(vt, j * 16, nt * 8, g, t, b0, b1);
        mma(o[nt], a, b0, b1);
      }
    }
  }

  float inv[2], lse[2], dot[2] = {0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] = quadSum(l[i]);
    inv[i] = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
    lse[i] = l[i] > 0.0f ? m[i] * kLn2 + logf(l[i]) : -INFINITY;
  }
  const bf16 *gh = Delta ? p.g + head * p.T * p.Dv : nullptr;
  bf16 *out = Delta ? nullptr : p.out + head * p.T * p.Dv;
#pragma unroll
  for (int nt = 0; nt < KD / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int64_t row = rows[e / 2], col = nt * 8 + 2 * t + (e & 1);
      if (row >= p.T || col >= p.Dv)
        continue;
      float value = o[nt][e] * inv[e / 2];
      if (Delta)
        dot[e / 2] += toFloat(gh[row * p.Dv + col]) * value;
      else
        out[row * p.Dv + col] = __float2bfloat16_rn(value);
    }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float delta = Delta ? quadSum(dot[i]) : 0.0f;
    if (t != 0 || rows[i] >= p.T)
      continue;
    if (p.lse)
      p.lse[head * p.T + rows[i]] = lse[i];
    if (Delta)
      p.delta[head * p.T + rows[i]] = delta;
  }
}

//===----------------------------------------------------------------------===//
// Backward: dk and dv
//===----------------------------------------------------------------------===//

/// Block per (key/value head, 64 keys): blockIdx.x = kvHead * keyBlocks +
/// block. For each query head of the group in turn, the queries that can
/// see the block's keys stream through in tiles of 64, each tile in two
/// halves of 32 (to bound the registers). Shared: K and V of the block, Q
/// and dO of the query tile, and its lse (base 2) and delta (and with
/// `Masked` the query tile's mask).
template <int KD, bool Masked>
__global__ void __launch_bounds__(kThreads, 2)
    backwardKVKernel(Params p, HeadsAndMask hm, Packing packing,
                     int64_t keyBlocks) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int ks = strideOf<KD>();
  bf16 *kt = reinterpret_cast<bf16 *>(smem);
  bf16 *vt = kt + kRows * ks;
  bf16 *qt = vt + kRows * ks;
  bf16 *gt = qt + kRows * ks;
  float *lseT = reinterpret_cast<float *>(gt + kRows * ks);
  float *deltaT = lseT + kRows;
  float *maskT = deltaT + kRows;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4,
      t = lane % 4;
  int64_t kvHead = blockIdx.x / keyBlocks;
  int64_t k0 = (blockIdx.x % keyBlocks) * kRows;
  const bf16 *k = p.k + kvHead * p.S * p.D, *v = p.v + kvHead * p.S * p.Dv;
  loadTile<KD>(kt, k + k0 * p.D, p.S - k0, p.D, p.D, packing.qk);
  loadTile<KD>(vt, v + k0 * p.Dv, p.S - k0, p.Dv, p.Dv, packing.vg);

  int64_t keys[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  float scaleLog2 = p.scale * kLog2e;
  float dk[KD / 8][4] = {}, dv[KD / 8][4] = {};
  // The first query that sees key k0.
  int64_t first = p.causal ? k0 - (p.S - p.T) : 0;
  // The query heads of the group in turn.
  int64_t group = headGroup(hm), firstHead = firstHeadOf(hm, kvHead);
#pragma unroll 1
  for (int64_t head = firstHead, end = firstHead + group; head < end; ++head) {
    const bf16 *q = p.q + head * p.T * p.D, *gh = p.g + head * p.T * p.Dv;
    const float *lse = p.lse + head * p.T, *delta = p.delta + head * p.T;
    for (int64_t t0 = first < 0 ? 0 : first; t0 < p.T; t0 += kRows) {
      __syncthreads();
      loadTile<KD>(qt, q + t0 * p.D, p.T - t0, p.D, p.D, packing.qk);
      loadTile<KD>(gt, gh + t0 * p.Dv, p.T - t0, p.Dv, p.Dv, packing.vg);
      for (int i = threadIdx.x; i < kRows; i += kThreads) {
        bool in = t0 + i < p.T;
        lseT[i] = in ? lseLog2(lse[t0 + i]) : 0.0f;
        deltaT[i] = in ? delta[t0 + i] : 0.0f;
      }
      if (Masked)
        loadMaskTile(maskT, p, hm, head, t0, k0);
      __syncthreads();

      // Not unrolled: one half's tiles at a time next to dk and dv is what
      // fits in the registers.
#pragma unroll 1
      for (int half = 0; half < 2; ++half) {
        int qh = half * 32;
        // Sᵀ = K Qᵀ (16 keys x 32 queries), then Pᵀ in place.
        float pt[4][4] = {};
#pragma unroll
        for (int kk = 0; kk < KD / 16; ++kk) {
          FragA a = loadA<KD>(kt, warp * 16, kk * 16, g, t);
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            uint32_t b0, b1;
            loadBTransposed<KD>(qt, qh + nt * 8, kk * 16, g, t, b0, b1);
            mma(pt[nt], a, b0, b1);
          }
        }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            int col = qh + nt * 8 + 2 * t + (e & 1);
            float score = pt[nt][e] * scaleLog2 - lseT[col];
            if (Masked)
              score += maskT[col * kMaskStride + warp * 16 + g + 8 * (e / 2)];
            pt[nt][e] = visible(p, t0 + col, keys[e / 2]) ? exp2f(score) : 0.0f;
          }
        // dPᵀ = V dOᵀ (16 keys x 32 queries), then dSᵀ = Pᵀ (dPᵀ - delta).
        float dst[4][4] = {};
#pragma unroll
        for (int kk = 0; kk < KD / 16; ++kk) {
          FragA a = loadA<KD>(vt, warp * 16, kk * 16, g, t);
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            uint32_t b0, b1;
            loadBTransposed<KD>(gt, qh + nt * 8, kk * 16, g, t, b0, b1);
            mma(dst[nt], a, b0, b1);
          }
        }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            int col = qh + nt * 8 + 2 * t + (e & 1);
            dst[nt][e] = pt[nt][e] * (dst[nt][e] - deltaT[col]);
          }
        // dV += Pᵀ dO and dK += dSᵀ Q, k running over the 32 queries.
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          FragA ap = aFromC(pt[2 * j], pt[2 * j + 1]);
          FragA ads = aFromC(dst[2 * j], dst[2 * j + 1]);
#pragma unroll
          for (int nt = 0; nt < KD / 8; ++nt) {
            uint32_t b0, b1;
            loadB<KD>(gt, qh + j * 16, nt * 8, g, t, b0, b1);
            mma(dv[nt], ap, b0, b1);
            loadB<KD>(qt, qh + j * 16, nt * 8, g, t, b0, b1);
            mma(dk[nt], ads, b0, b1);
          }
        }
      }
    }
  }

  bf16 *dkh = p.dk + kvHead * p.S * p.D, *dvh = p.dv + kvHead * p.S * p.Dv;
#pragma unroll
  for (int nt = 0; nt < KD / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int64_t key = keys[e / 2], col = nt * 8 + 2 * t + (e & 1);
      if (key >= p.S)
        continue;
      if (col < p.D)
        dkh[key * p.D + col] = __float2bfloat16_rn(dk[nt][e] * p.scale);
      if (col < p.Dv)
        dvh[key * p.Dv + col] = __float2bfloat16_rn(dv[nt][e]);
    }
}

//===----------------------------------------------------------------------===//
// Backward: dq
//===----------------------------------------------------------------------===//

/// Block per (head, 64 queries): blockIdx.x = head * queryBlocks + block.
/// Shared: Q and dO of the block, K and V tiles streamed over the visible
/// keys (and with `Masked` their mask tile). With `Masked`, stores dS into
/// hm.dscores when that is not null.
template <int KD, bool Masked>
__global__ void __launch_bounds__(kThreads, 2)
    backwardQKernel(Params p, HeadsAndMask hm, Packing packing,
                    int64_t queryBlocks) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int ks = strideOf<KD>();
  bf16 *qs = reinterpret_cast<bf16 *>(smem);
  bf16 *gs = qs + kRows * ks;
  bf16 *kt = gs + kRows * ks;
  bf16 *vt = kt + kRows * ks;
  float *maskT = reinterpret_cast<float *>(vt + kRows * ks);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4,
      t = lane % 4;
  int64_t head = blockIdx.x / queryBlocks, kvHead = kvHeadOf(hm, head);
  int64_t q0 = (blockIdx.x % queryBlocks) * kRows;
  const bf16 *q = p.q + head * p.T * p.D, *k = p.k + kvHead * p.S * p.D,
             *v = p.v + kvHead * p.S * p.Dv, *gh = p.g + head * p.T * p.Dv;
  loadTile<KD>(qs, q + q0 * p.D, p.T - q0, p.D, p.D, packing.qk);
  loadTile<KD>(gs, gh + q0 * p.Dv, p.T - q0, p.Dv, p.Dv, packing.vg);

  int64_t rows[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float lse2[2], delta[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    bool in = rows[i] < p.T;
    lse2[i] = in ? lseLog2(p.lse[head * p.T + rows[i]]) : 0.0f;
    delta[i] = in ? p.delta[head * p.T + rows[i]] : 0.0f;
  }
  float scaleLog2 = p.scale * kLog2e;
  float dq[KD / 8][4] = {};
  int64_t last = q0 + kRows - 1 < p.T - 1 ? q0 + kRows - 1 : p.T - 1;
  int64_t end = keyEnd(p, last);
  for (int64_t k0 = 0; k0 < end; k0 += kRows) {
    __syncthreads();
    loadTile<KD>(kt, k + k0 * p.D, p.S - k0, p.D, p.D, packing.qk);
    loadTile<KD>(vt, v + k0 * p.Dv, p.S - k0, p.Dv, p.Dv, packing.vg);
    if (Masked)
      loadMaskTile(maskT, p, hm, head, q0, k0);
    __syncthreads();

    // P = exp(S - lse) and dP = dO Vᵀ, 16 queries x 64 keys.
    float s[8][4] = {}, dp[8][4] = {};
#pragma unroll
    for (int kk = 0; kk < KD / 16; ++kk) {
      FragA aq = loadA<KD>(qs, warp * 16, kk * 16, g, t);
      FragA ag = loadA<KD>(gs, warp * 16, kk * 16, g, t);
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        uint32_t b0, b1;
        loadBTransposed<KD>(kt, nt * 8, kk * 16, g, t, b0, b1);
        mma(s[nt], aq, b0, b1);
        loadBTransposed<KD>(vt, nt * 8, kk * 16, g, t, b0, b1);
        mma(dp[nt], ag, b0, b1);
      }
    }
    // dS = P (dP - delta), into dp.
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = nt * 8 + 2 * t + (e & 1);
        int64_t key = k0 + col;
        bool seen = visible(p, rows[e / 2], key);
        float score = s[nt][e] * scaleLog2 - lse2[e / 2];
        if (Masked)
          score += maskT[(warp * 16 + g + 8 * (e / 2)) * kMaskStride + col];
        float prob = seen ? exp2f(score) : 0.0f;
        dp[nt][e] = prob * (dp[nt][e] - delta[e / 2]);
      }
    if (Masked && hm.dscores) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int64_t row = rows[e / 2], key = k0 + nt * 8 + 2 * t + (e & 1);
          if (row < p.T && key < p.S)
            hm.dscores[(head * p.T + row) * p.S + key] = dp[nt][e];
        }
    }
    // dQ += dS K, k running over the 64 keys.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      FragA a = aFromC(dp[2 * j], dp[2 * j + 1]);
#pragma unroll
      for (int nt = 0; nt < KD / 8; ++nt) {
        uint32_t b0, b1;
        loadB<KD>(kt, j * 16, nt * 8, g, t, b0, b1);
        mma(dq[nt], a, b0, b1);
      }
    }
  }

  bf16 *dqh = p.dq + head * p.T * p.D;
#pragma unroll
  for (int nt = 0; nt < KD / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int64_t row = rows[e / 2], col = nt * 8 + 2 * t + (e & 1);
      if (row < p.T && col < p.D)
        dqh[row * p.D + col] = __float2bfloat16_rn(dq[nt][e] * p.scale);
    }
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

template <int KD> constexpr int tileBytes() {
  return kRows * strideOf<KD>() * (int)sizeof(bf16);
}

/// Launches `Kernel` with `bytes` of dynamic shared memory, raising that
/// kernel's limit above the default 48 KB on its first launch.
template <auto Kernel, typename... Args>
void launch(int64_t blocks, int bytes, cudaStream_t stream, Args... args) {
  if (blocks == 0)
    return;
  static const cudaError_t configured = cudaFuncSetAttribute(
      Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  TGC_CUDA_CHECK(configured);
  Kernel<<<(unsigned)blocks, kThreads, bytes, stream>>>(args...);
  TGC_CUDA_CHECK_LAUNCH();
}

Packing packingOf(const Params &p) {
  bool qk = p.D % 8 == 0 && isAligned16(p.q) && isAligned16(p.k);
  bool vg = p.Dv % 8 == 0 && isAligned16(p.v) && (!p.g || isAligned16(p.g));
  return {qk, vg};
}

int64_t blocksOf(int64_t n) { return (n + kRows - 1) / kRows; }

template <int KD, bool Delta>
void forwardAt(const Params &p, const HeadsAndMask &hm, int64_t heads,
               cudaStream_t stream) {
  int64_t queryBlocks = blocksOf(p.T);
  int bytes = 3 * tileBytes<KD>();
  if (hm.mask)
    launch<forwardKernel<KD, Delta, true>>(heads * queryBlocks,
                                           bytes + kMaskTileBytes, stream, p,
                                           hm, packingOf(p), queryBlocks);
  else
    launch<forwardKernel<KD, Delta, false>>(heads * queryBlocks, bytes, stream,
                                            p, hm, packingOf(p), queryBlocks);
}

template <int KD>
void backwardAt(const Params &p, const HeadsAndMask &hm, int64_t heads,
                cudaStream_t stream) {
  int64_t keyBlocks = blocksOf(p.S), queryBlocks = blocksOf(p.T);
  int64_t kvHeads = heads / hm.H * hm.Hkv;
  int kvBytes = 4 * tileBytes<KD>() + 2 * kRows * (int)sizeof(float);
  int qBytes = 4 * tileBytes<KD>();
  if (hm.mask) {
    launch<backwardKVKernel<KD, true>>(kvHeads * keyBlocks,
                                       kvBytes + kMaskTileBytes, stream, p, hm,
                                       packingOf(p), keyBlocks);
    launch<backwardQKernel<KD, true>>(heads * queryBlocks,
                                      qBytes + kMaskTileBytes, stream, p, hm,
                                      packingOf(p), queryBlocks);
  } else {
    launch<backwardKVKernel<KD, false>>(kvHeads * keyBlocks, kvBytes, stream,
                                        p, hm, packingOf(p), keyBlocks);
    launch<backwardQKernel<KD, false>>(heads * queryBlocks, qBytes, stream, p,
                                       hm, packingOf(p), queryBlocks);
  }
}

/// Head dims padded to 64 or 128.
bool small(const Params &p) { return p.D <= 64 && p.Dv <= 64; }

} // namespace

void forward(const Params &p, const HeadsAndMask &hm, int64_t heads,
             cudaStream_t stream) {
  if (small(p))
    forwardAt<64, false>(p, hm, heads, stream);
  else
    forwardAt<128, false>(p, hm, heads, stream);
}

void forwardDelta(const Params &p, const HeadsAndMask &hm, int64_t heads,
                  cudaStream_t stream) {
  if (small(p))
    forwardAt<64, true>(p, hm, heads, stream);
  else
    forwardAt<128, true>(p, hm, heads, stream);
}

void backward(const Params &p, const HeadsAndMask &hm, int64_t heads,
              cudaStream_t stream) {
  if (small(p))
    backwardAt<64>(p, hm, heads, stream);
  else
    backwardAt<128>(p, hm, heads, stream);
}

} // namespace tgc::cuda::flash

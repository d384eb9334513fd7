//===- Optimizer.cu - Fused optimizer updates and LR schedules -----*- C++ -*-===//
//
// One kernel per optimizer step of up to 48 parameters (a multi-tensor
// update: each block of the grid's y dimension on one parameter, its
// grid-stride loop along x), with runtime/cpu/Optimizer.cpp's arithmetic: per-element math in fp32 in torch's order,
// step-dependent factors (bias corrections) in double and rounded once.
// Everything that changes from step to step is read on the device (the
// learning rate, the step, the gradient scale), so that a captured CUDA
// graph replays a whole training step. Each thread reads those scalars and
// computes the factors once, then walks a grid-stride loop.
//
// The hyperparameters are constants of the compiled step and arrive by
// value; the betas and alpha are read back as the shortest decimal that
// rounds to the same float, exactly as the CPU does (see Optimizer.cpp), so
// that 1 - beta matches torch's double arithmetic.
//
// LAMB needs the norms of the parameter and of its update before it can
// apply either: the first kernel updates the moments and writes per-block
// partial sums of squares (double) to the workspace; the second adds them in
// order (every block does, redundantly and identically), forms the trust
// ratio and applies the update, recomputed from the new moments.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

#include <charconv>
#include <cstdlib>
#include <vector>

namespace tgc::cuda {

namespace {

constexpr int kThreads = 256;
constexpr double kPi = 3.14159265358979323846;

/// The shortest decimal that rounds to `v`, as a double.
double decimalOf(float v) {
  char buf[32];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf) - 1, v);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

/// Hyperparameters as the kernels use them.
struct Hyper {
  float b1, b2, eps, wd, mom, alpha;
  bool nesterov;
  double beta1, beta2; // decimals, for the step's bias corrections
  float c1, c2, ca;    // 1 - beta1, 1 - beta2, 1 - alpha, rounded once
};

Hyper hyperOf(const OptimizerHyper &h) {
  double beta1 = decimalOf(h.beta1), beta2 = decimalOf(h.beta2),
         alpha = decimalOf(h.alpha);
  return {h.beta1,         h.beta2,         h.eps,
          h.weightDecay,   h.momentum,      h.alpha,
          h.nesterov,      beta1,           beta2,
          (float)(1.0 - beta1), (float)(1.0 - beta2), (float)(1.0 - alpha)};
}

/// The gradient as the update sees it: scaled first, in fp32.
template <typename G>
__device__ __forceinline__ float gradAt(const G *g, int64_t i, float scale) {
  return toFloat(g[i]) * scale;
}

__device__ __forceinline__ void storeCopy(bf16 *copy, int64_t i, float p) {
  if (copy)
    copy[i] = __float2bfloat16_rn(p);
}

#define TGC_GRID_STRIDE(i, n)                                                  \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);   \
       i += (int64_t)gridDim.x * blockDim.x)

//===----------------------------------------------------------------------===//
// Kernels (grid-stride; lr, step and the gradient scale from device memory)
//===----------------------------------------------------------------------===//

template <typename G>
__device__ __forceinline__ void sgdUpdate(float *p, const G *g, float *buf, int64_t n,
                          const float *lrPtr, const float *scalePtr, Hyper h,
                          bf16 *copy) {
  float lr = *lrPtr, scale = scalePtr ? *scalePtr : 1.0f;
  TGC_GRID_STRIDE(i, n) {
    float d = gradAt(g, i, scale);
    if (h.wd != 0)
      d += h.wd * p[i];
    if (buf && h.mom != 0) {
      // A zero buffer makes the first step buf = grad, as torch's clone.
      buf[i] = h.mom * buf[i] + d;
      d = h.nesterov ? d + h.mom * buf[i] : buf[i];
    }
    p[i] -= lr * d;
    storeCopy(copy, i, p[i]);
  }
}

template <typename G>
__device__ __forceinline__ void adamUpdate(bool decoupled, float *p, const G *g, float *m,
                           float *v, int64_t n, const float *lrPtr,
                           const int64_t *stepPtr, const float *scalePtr,
                           Hyper h, bf16 *copy) {
  float lr = *lrPtr, scale = scalePtr ? *scalePtr : 1.0f;
  double step = (double)*stepPtr;
  double bc1 = 1.0 - pow(h.beta1, step), bc2 = 1.0 - pow(h.beta2, step);
  float stepSize = (float)(lr / bc1);
  float bc2Sqrt = (float)sqrt(bc2);
  float decay = (float)(1.0 - (double)lr * h.wd);
  TGC_GRID_STRIDE(i, n) {
    float d = gradAt(g, i, scale);
    float pi = p[i];
    if (decoupled)
      pi *= decay;
    else if (h.wd != 0)
      d += h.wd * pi;
    m[i] = m[i] * h.b1 + h.c1 * d;
    v[i] = v[i] * h.b2 + h.c2 * d * d;
    float denom = sqrtf(v[i]) / bc2Sqrt + h.eps;
    p[i] = pi - stepSize * (m[i] / denom);
    storeCopy(copy, i, p[i]);
  }
}

template <typename G>
__device__ __forceinline__ void rmspropUpdate(float *p, const G *g, float *sq, float *buf,
                              int64_t n, const float *lrPtr,
                              const float *scalePtr, Hyper h, bf16 *copy) {
  float lr = *lrPtr, scale = scalePtr ? *scalePtr : 1.0f;
  TGC_GRID_STRIDE(i, n) {
    float d = gradAt(g, i, scale);
    if (h.wd != 0)
      d += h.wd * p[i];
    sq[i] = sq[i] * h.alpha + h.ca * d * d;
    float avg = sqrtf(sq[i]) + h.eps;
    if (buf && h.mom > 0) {
      buf[i] = buf[i] * h.mom + d / avg;
      p[i] -= lr * buf[i];
    } else {
      p[i] -= lr * (d / avg);
    }
    storeCopy(copy, i, p[i]);
  }
}

template <typename G>
__device__ __forceinline__ void adagradUpdate(float *p, const G *g, float *sum, int64_t n,
                              const float *lrPtr, const float *scalePtr,
                              Hyper h, bf16 *copy) {
  float lr = *lrPtr, scale = scalePtr ? *scalePtr : 1.0f;
  TGC_GRID_STRIDE(i, n) {
    float d = gradAt(g, i, scale);
    if (h.wd != 0)
      d += h.wd * p[i];
    sum[i] += d * d;
    p[i] -= lr * (d / (sqrtf(sum[i]) + h.eps));
    storeCopy(copy, i, p[i]);
  }
}

template <typename G>
__device__ __forceinline__ void lionUpdate(float *p, const G *g, float *m, int64_t n,
                           const float *lrPtr, const float *scalePtr, Hyper h,
                           bf16 *copy) {
  float lr = *lrPtr, scale = scalePtr ? *scalePtr : 1.0f;
  TGC_GRID_STRIDE(i, n) {
    float gi = gradAt(g, i, scale);
    float c = h.b1 * m[i] + h.c1 * gi;
    float sign = (float)(c > 0) - (float)(c < 0);
    p[i] -= lr * (sign + h.wd * p[i]);
    m[i] = h.b2 * m[i] + h.c2 * gi;
    storeCopy(copy, i, p[i]);
  }
}

/// LAMB's bias corrections, as the CPU rounds them (to float).
struct LambFactors {
  float bc1, bc2;
};

__device__ LambFactors lambFactors(const int64_t *stepPtr, const Hyper &h) {
  double step = (double)*stepPtr;
  return {(float)(1.0 - pow(h.beta1, step)),
          (float)(1.0 - pow(h.beta2, step))};
}

/// The update direction of element i from the new moments.
__device__ __forceinline__ float lambUpdate(float m, float v, float p,
                                            LambFactors f, const Hyper &h) {
  return (m / f.bc1) / (sqrtf(v / f.bc2) + h.eps) + h.wd * p;
}

constexpr int kLambMaxBlocks = 1024;

unsigned lambBlocks(int64_t n) {
  unsigned blocks = gridStrideBlocks(n, kThreads);
  return blocks < (unsigned)kLambMaxBlocks ? blocks : (unsigned)kLambMaxBlocks;
}

/// Stage 1: new moments; partials[2 b] and [2 b + 1] = block b's sums of
/// p^2 and update^2.
template <typename G>
__global__ void lambMomentsKernel(const float *p, const G *g, float *m,
                                  float *v, int64_t n, const int64_t *stepPtr,
                                  const float *scalePtr, Hyper h,
                                  double *partials) {
  __shared__ double shared[kWarpSize];
  float scale = scalePtr ? *scalePtr : 1.0f;
  LambFactors f = lambFactors(stepPtr, h);
  double pNorm2 = 0, uNorm2 = 0;
  TGC_GRID_STRIDE(i, n) {
    float gi = gradAt(g, i, scale);
    m[i] = m[i] * h.b1 + h.c1 * gi;
    v[i] = v[i] * h.b2 + h.c2 * gi * gi;
    float u = lambUpdate(m[i], v[i], p[i], f, h);
    pNorm2 += (double)p[i] * p[i];
    uNorm2 += (double)u * u;
  }
  pNorm2 = blockReduce(pNorm2, SumOp(), shared);
  uNorm2 = blockReduce(uNorm2, SumOp(), shared);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = pNorm2;
    partials[2 * blockIdx.x + 1] = uNorm2;
  }
}

/// Stage 2: the trust ratio ||p|| / ||update|| from `blocks` partials, then
/// p -= lr * trust * update.
__global__ void lambApplyKernel(float *p, const float *m, const float *v,
                                int64_t n, const float *lrPtr,
                                const int64_t *stepPtr, Hyper h,
                                const double *partials, int blocks,
                                bf16 *copy) {
  __shared__ double shared[kWarpSize];
  double pNorm2 = 0, uNorm2 = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    pNorm2 += partials[2 * b];
    uNorm2 += partials[2 * b + 1];
  }
  pNorm2 = blockReduce(pNorm2, SumOp(), shared);
  uNorm2 = blockReduce(uNorm2, SumOp(), shared);
  float trust = pNorm2 > 0 && uNorm2 > 0
                    ? (float)(sqrt(pNorm2) / sqrt(uNorm2))
                    : 1.0f;
  float scaled = *lrPtr * trust;
  LambFactors f = lambFactors(stepPtr, h);
  TGC_GRID_STRIDE(i, n) {
    p[i] -= scaled * lambUpdate(m[i], v[i], p[i], f, h);
    storeCopy(copy, i, p[i]);
  }
}

#undef TGC_GRID_STRIDE

/// State slots a kind cannot do without (SGD's and RMSprop's momentum
/// buffers are optional).
int requiredSlots(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::SGD:
    return 0;
  case OptimizerKind::RMSprop:
  case OptimizerKind::Adagrad:
  case OptimizerKind::Lion:
    return 1;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
  case OptimizerKind::LAMB:
    return 2;
  }
  return 0;
}

/// Lanes per launch of a multi-tensor update: their pointers travel as
/// kernel parameters (2.7 kB of the 4 kB).
constexpr int kLanesPerLaunch = 48;

/// A chunk of lanes, by value: one launch, lane blockIdx.y.
struct LaneChunk {
  struct Lane {
    float *param;
    const void *grad;
    float *state[2];
    int64_t n;
    const float *gradScale;
    bf16 *copy;
  } lanes[kLanesPerLaunch];
};

template <typename G>
__global__ void lanesKernel(OptimizerKind kind, LaneChunk chunk,
                            const float *lr, const int64_t *step, Hyper h) {
  const LaneChunk::Lane &l = chunk.lanes[blockIdx.y];
  const G *g = static_cast<const G *>(l.grad);
  switch (kind) {
  case OptimizerKind::SGD:
    sgdUpdate<G>(l.param, g, l.state[0], l.n, lr, l.gradScale, h, l.copy);
    break;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
    adamUpdate<G>(kind == OptimizerKind::AdamW, l.param, g, l.state[0],
                  l.state[1], l.n, lr, step, l.gradScale, h, l.copy);
    break;
  case OptimizerKind::RMSprop:
    rmspropUpdate<G>(l.param, g, l.state[0], l.state[1], l.n, lr,
                     l.gradScale, h, l.copy);
    break;
  case OptimizerKind::Adagrad:
    adagradUpdate<G>(l.param, g, l.state[0], l.n, lr, l.gradScale, h, l.copy);
    break;
  case OptimizerKind::Lion:
    lionUpdate<G>(l.param, g, l.state[0], l.n, lr, l.gradScale, h, l.copy);
    break;
  case OptimizerKind::LAMB: // two kernels of its own
    break;
  }
}

/// Every kind but LAMB: the lanes in launches of kLanesPerLaunch, each
/// block of a launch on one lane's grid-stride loop.
template <typename G>
void launchLanes(OptimizerKind kind, const LaneChunk::Lane *lanes, int count,
                 const float *lr, const int64_t *step, const Hyper &h,
                 cudaStream_t stream) {
  for (int first = 0; first < count; first += kLanesPerLaunch) {
    int inChunk = std::min(count - first, kLanesPerLaunch);
    LaneChunk chunk{};
    int64_t most = 0;
    for (int i = 0; i < inChunk; ++i) {
      chunk.lanes[i] = lanes[first + i];
      most = std::max(most, lanes[first + i].n);
    }
    // About one H100's worth of blocks in all, each lane's loop strided.
    unsigned perLane = std::min(gridStrideBlocks(most, kThreads),
                                std::max(8u, 2 * 132 * 32 / (unsigned)inChunk));
    lanesKernel<G><<<dim3(perLane, inChunk), kThreads, 0, stream>>>(
        kind, chunk, lr, step, h);
    TGC_CUDA_CHECK_LAUNCH();
  }
}

template <typename G>
void optimizerImpl(OptimizerKind kind, float *param, const G *grad,
                   float *const *state, int numState, int64_t n,
                   const float *lr, const int64_t *step,
                   const float *gradScale, const OptimizerHyper &hyper,
                   bf16 *copy, void *workspace, cudaStream_t stream) {
  if (n <= 0)
    return;
  auto slot = [&](int i) { return numState > i ? state[i] : nullptr; };
  int needed = requiredSlots(kind);
  if (numState < needed)
    throw Error("tgc::cuda::optimizer_update: " + std::to_string(needed) +
                " state slots needed, got " + std::to_string(numState));
  Hyper h = hyperOf(hyper);
  switch (kind) {
  case OptimizerKind::SGD:
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
  case OptimizerKind::RMSprop:
  case OptimizerKind::Adagrad:
  case OptimizerKind::Lion: {
    LaneChunk::Lane lane{param, grad, {slot(0), slot(1)}, n, gradScale, copy};
    launchLanes<G>(kind, &lane, 1, lr, step, h, stream);
    return;
  }
  case OptimizerKind::LAMB: {
    if (!workspace)
      throw Error("tgc::cuda::optimizer_update: LAMB needs a workspace of "
                  "optimizer_workspace_bytes(LAMB, n)");
    unsigned lb = lambBlocks(n);
    auto *partials = static_cast<double *>(workspace);
    lambMomentsKernel<G><<<lb, kThreads, 0, stream>>>(
        param, grad, state[0], state[1], n, step, gradScale, h, partials);
    TGC_CUDA_CHECK_LAUNCH();
    lambApplyKernel<<<lb, kThreads, 0, stream>>>(param, state[0], state[1], n,
                                                 lr, step, h, partials,
                                                 (int)lb, copy);
    break;
  }
  }
  TGC_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Learning-rate schedule
//===----------------------------------------------------------------------===//

/// tgc::cpu::lr_schedule, line for line, on one thread.
__device__ float scheduleAt(const ScheduleParams &sp, int64_t step,
                            float baseLr) {
  double base = baseLr;
  int64_t w = sp.warmupSteps;
  if (w > 0 && step < w)
    return (float)(base * (double)max(step, (int64_t)0) / (double)w);
  // Fraction of the decay span [from, to] done at `step`, in [0, 1].
  auto progress = [&](int64_t from, int64_t to) {
    if (to <= from)
      return 1.0;
    double p = (double)(step - from) / (double)(to - from);
    return p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);
  };
  // Steps after the warmup, counting from 0 (torch's last_epoch).
  int64_t it = max(step - w - 1, (int64_t)0);
  switch (sp.kind) {
  case ScheduleKind::Constant:
    return baseLr;
  case ScheduleKind::Cosine: {
    double p = progress(w, sp.totalSteps);
    return (float)(sp.minLr + (base - sp.minLr) * 0.5 * (1.0 + cos(kPi * p)));
  }
  case ScheduleKind::Linear:
    return (float)(base + (sp.minLr - base) * progress(w, sp.totalSteps));
  case ScheduleKind::Step:
    return (float)(base *
                   pow(sp.gamma, (double)(it / max(sp.stepSize, (int64_t)1))));
  case ScheduleKind::Cyclic: {
    double half = (double)max(sp.stepSize, (int64_t)1);
    double cycle = floor(1.0 + it / (2.0 * half));
    double x = fabs(it / half - 2.0 * cycle + 1.0);
    return (float)(base + (sp.maxLr - base) * fmax(0.0, 1.0 - x));
  }
  case ScheduleKind::WSD: {
    int64_t decayStart = sp.totalSteps - sp.decaySteps;
    if (step <= decayStart)
      return baseLr;
    return (float)(base + (sp.minLr - base) * progress(decayStart,
                                                       sp.totalSteps));
  }
  }
  return baseLr;
}

__global__ void lrScheduleKernel(ScheduleParams params, const int64_t *step,
                                 const float *baseLr, float *lr) {
  lr[0] = scheduleAt(params, step[0], baseLr[0]);
}

} // namespace

int64_t optimizer_workspace_bytes(OptimizerKind kind, int64_t n) {
  if (kind != OptimizerKind::LAMB || n <= 0)
    return 0;
  return 2 * (int64_t)sizeof(double) * lambBlocks(n);
}

void optimizer_update(OptimizerKind kind, float *param, const float *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *workspace, cudaStream_t stream) {
  optimizerImpl(kind, param, grad, state, numState, n, lr, step, gradScale,
                hyper, paramCopy, workspace, stream);
}

void optimizer_update(OptimizerKind kind, float *param, const bf16 *grad,
                      float *const *state, int numState, int64_t n,
                      const float *lr, const int64_t *step,
                      const float *gradScale, const OptimizerHyper &hyper,
                      bf16 *paramCopy, void *workspace, cudaStream_t stream) {
  optimizerImpl(kind, param, grad, state, numState, n, lr, step, gradScale,
                hyper, paramCopy, workspace, stream);
}

void optimizer_update_lanes(OptimizerKind kind, const OptimizerLane *lanes,
                            int count, bool bf16Grads, const float *lr,
                            const int64_t *step, const OptimizerHyper &hyper,
                            void *workspace, cudaStream_t stream) {
  // Every lane that updates anything needs its state slots, LAMB's too (its
  // lane-by-lane path would hand the kernel a null moment); an empty lane
  // updates nothing and needs none, as in optimizer_update.
  int needed = requiredSlots(kind);
  for (int i = 0; i < count; ++i) {
    const OptimizerLane &l = lanes[i];
    if (l.n > 0 &&
        ((needed > 0 && !l.state[0]) || (needed > 1 && !l.state[1])))
      throw Error("tgc::cuda::optimizer_update_lanes: lane " +
                  std::to_string(i) + " lacks a state slot");
  }
  if (kind == OptimizerKind::LAMB) {
    // Its trust ratio needs each lane's norms: lane by lane.
    for (int i = 0; i < count; ++i) {
      const OptimizerLane &l = lanes[i];
      if (l.n == 0)
        continue;
      float *state[] = {l.state[0], l.state[1]};
      if (bf16Grads)
        optimizerImpl(kind, l.param, static_cast<const bf16 *>(l.grad), state,
                      2, l.n, lr, step, l.gradScale, hyper, nullptr, workspace,
                      stream);
      else
        optimizerImpl(kind, l.param, static_cast<const float *>(l.grad), state,
                      2, l.n, lr, step, l.gradScale, hyper, nullptr, workspace,
                      stream);
    }
    return;
  }
  std::vector<LaneChunk::Lane> all;
  for (int i = 0; i < count; ++i) {
    const OptimizerLane &l = lanes[i];
    if (l.n > 0)
      all.push_back({l.param, l.grad, {l.state[0], l.state[1]}, l.n,
                     l.gradScale, nullptr});
  }
  Hyper h = hyperOf(hyper);
  if (bf16Grads)
    launchLanes<bf16>(kind, all.data(), (int)all.size(), lr, step, h, stream);
  else
    launchLanes<float>(kind, all.data(), (int)all.size(), lr, step, h, stream);
}

void lr_schedule(const ScheduleParams &params, const int64_t *step,
                 const float *baseLr, float *lr, cudaStream_t stream) {
  lrScheduleKernel<<<1, 1, 0, stream>>>(params, step, baseLr, lr);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace tgc::cuda

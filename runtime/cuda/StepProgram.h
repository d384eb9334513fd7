//===- StepProgram.h - Running a generated CUDA step --------------*- C++ -*-===//
//
// What every generated .cu shares around its own launches:
//  - ProgramDesc: what the generated file says about itself (the arena's
//    layout, its gradient buckets, StepIO's array lengths, and the two
//    functions that size the launchers' workspace and fill the constants);
//  - Device: the device state its launches read (streams, the arena, pinned
//    scalars and metrics, the buckets' events), created at the first step;
//  - StepProgram and runStep(): one step function (train_step, eval_step,
//    grad_step) run eagerly, timed per launch (--profile) or as a CUDA graph
//    (--cuda-graph), with one synchronisation at its end;
//  - storeOrAddGrad(): a gradient into StepIO::grads, stored by a step's
//    first micro-batch and added by the others.
//
// A generated step is a function `void NAME_launches(tgc::StepIO &, Device &,
// const OpTimes &)` that queues its launches on d.compute (and its
// all-reduces on d.comm) and nothing else: it neither allocates nor
// synchronises, so that it can be captured in a graph. It starts by copying
// d.host->scalars into d.scalars and ends by copying its metrics into
// d.host->metrics.
//
// One process runs one generated program: the Device is created once, for
// the ProgramDesc of the first step run, and never freed (the CUDA runtime
// may be gone when static destructors run).
//
// Plain C++17 plus the CUDA runtime API, like Device.h: nothing here needs
// nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_STEPPROGRAM_H
#define TGC_RUNTIME_CUDA_STEPPROGRAM_H

#include "runtime/core/Model.h"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/Device.h"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace tgc::cuda {

//===----------------------------------------------------------------------===//
// The generated program
//===----------------------------------------------------------------------===//

/// What a generated .cu tells the runtime about itself; its step functions
/// share one.
struct ProgramDesc {
  /// The sizes the compiler planned: the constants section
  /// (tg-place-constants' #tg.constants), uploaded at start-up, and the
  /// intermediates (the largest #tg.arena of tg-plan-memory). The device
  /// arena is [scalars | constants | intermediates], then the launchers'
  /// workspace (arenaLayout).
  int64_t constantBytes;
  int64_t plannedBytes;
  /// Gradient all-reduce buckets: each gets a bucketReady and a bucketDone
  /// event.
  int numBuckets;
  /// The lengths of StepIO's arrays (for the pointers a graph bakes in).
  int numParams, numState, numInputs, numOutputs, numGrads;
  /// The largest scratch any launcher of the steps asks for.
  int64_t (*workspaceBytes)();
  /// Copies the program's constants to `constants` (device memory).
  void (*uploadConstants)(char *constants);
  /// The length of StepIO's slots (a pipelined program's chunk functions
  /// read and write them; 0 otherwise).
  int numSlots = 0;
};

//===----------------------------------------------------------------------===//
// Device state
//===----------------------------------------------------------------------===//

/// The step's scalars: written by the host into pinned memory before each
/// step and copied to the device by the step's first launch, so that a
/// replayed CUDA graph reads this step's values.
struct Scalars {
  int64_t step;
  int64_t randomStream;
  float baseLr;
  int32_t microBatches;
  int32_t microBatch;
};

/// The device arena's first block holds the step's Scalars; each part
/// after it starts at a multiple of this (cuBLASLt's fastest alignment).
constexpr int64_t kScalarsBlock = 256;
static_assert(sizeof(Scalars) <= kScalarsBlock, "the scalars fit their block");

/// Where the parts of `program`'s device arena start, and its size before
/// the launchers' workspace.
struct ArenaLayout {
  int64_t constantsOffset, workOffset, arenaBytes;
};
ArenaLayout arenaLayout(const ProgramDesc &program);

/// The step's metrics: copied from the device into pinned memory by the
/// step's last launches and read after its one synchronisation.
struct Metrics {
  float loss, gradNorm, lr;
};

struct HostBlock {
  Scalars scalars;
  Metrics metrics;
};

/// Everything the steps share.
struct Device {
  cudaStream_t compute = nullptr, comm = nullptr;
  /// One allocation: [scalars | constants | intermediates | workspace].
  DeviceArena *arenaMemory = nullptr;
  char *arena = nullptr;
  Scalars *scalars = nullptr;
  char *constants = nullptr, *work = nullptr;
  /// Scratch of the runtime's launchers (one stream at a time); null when
  /// none asks for any.
  void *workspace = nullptr;
  HostBlock *host = nullptr; ///< pinned
  /// Per all-reduce bucket: its gradients are written (compute stream), it
  /// is reduced (communication stream).
  std::vector<cudaEvent_t> bucketReady, bucketDone;
};

/// The device state, created at the first call (on the device the training
/// loop selected) for `program`: the arena allocated, the constants
/// uploaded, the events created. Later calls return it whatever they pass.
Device &device(const ProgramDesc &program);

//===----------------------------------------------------------------------===//
// Running a step: eagerly, timed, or as a CUDA graph
//===----------------------------------------------------------------------===//

/// --profile: a pair of CUDA events around each timed launch (null when
/// off). Launch k records start[k] before it and stop[k] after it on its
/// stream.
struct OpTimes {
  cudaEvent_t *start = nullptr, *stop = nullptr;
  void begin(int k, cudaStream_t s) const {
    if (start)
      TGC_CUDA_CHECK(cudaEventRecord(start[k], s));
  }
  void end(int k, cudaStream_t s) const {
    if (stop)
      TGC_CUDA_CHECK(cudaEventRecord(stop[k], s));
  }
};

/// A generated step's launches.
using Launches = void (*)(StepIO &io, Device &d, const OpTimes &t);

/// One step function of a generated program: its launches, what names its
/// timed launches in a profile, and what runStep keeps between calls.
struct StepProgram {
  const char *name; ///< "train_step"
  const ProgramDesc *program;
  Launches launches;
  int numTimed; ///< launches that call t.begin(k) / t.end(k), k < numTimed
  const char *const *labels; ///< numTimed names for the trace
  const bool *onComm;        ///< numTimed: on the communication lane
  /// Whether the step writes gradNorm and lr (train_step) besides the loss.
  bool trainMetrics;
  // --cuda-graph: per set of StepIO pointers (a pipeline's chunk function
  // is called with each micro-batch's slot buffers in turn), the first
  // call runs eagerly (cuBLASLt picks its algorithms, attention raises its
  // shared-memory limit), the second captures, the rest replay; at most
  // kMaxGraphs sets are kept, the oldest dropped first.
  struct Graph {
    std::vector<const void *> pointers;
    cudaGraphExec_t exec = nullptr;
    int eagerCalls = 0;
  };
  static constexpr size_t kMaxGraphs = 64;
  std::vector<Graph> graphs;
  // --profile.
  std::vector<cudaEvent_t> start, stop;
  cudaEvent_t finish = nullptr;
};

/// One call of a step function: the scalars from `io` into pinned memory,
/// the launches (timed when io.trace is set, as a graph when
/// io.captureGraph is), one synchronisation, then the metrics into `io`
/// (the loss, and gradNorm and lr where p.trainMetrics) and, when profiling,
/// each timed launch into io.trace.
void runStep(StepProgram &p, StepIO &io);

//===----------------------------------------------------------------------===//
// Gradients into StepIO
//===----------------------------------------------------------------------===//

/// dst[i] = g[i] on a step's first micro-batch (*microBatch == 0, device
/// memory), dst[i] += g[i] after: the device reads which micro-batch this
/// is, so one captured graph serves all. A null `microBatch` always adds (a
/// pipeline's W passes, whose sums the runtime zeroes). `n` elements,
/// queued on `stream`.
void storeOrAddGrad(float *dst, const float *g, int64_t n,
                    const int32_t *microBatch, cudaStream_t stream);
/// The same with a bf16 gradient (added in fp32).
void storeOrAddGrad(float *dst, const __nv_bfloat16 *g, int64_t n,
                    const int32_t *microBatch, cudaStream_t stream);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_STEPPROGRAM_H

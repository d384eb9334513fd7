//===- StepProgram.cu - Running a generated CUDA step -------------*- C++ -*-===//
//
// The host side of a generated step (StepProgram.h): the device state its
// launches share, the three ways of running them (eagerly, timed per launch,
// as a CUDA graph) and the one synchronisation that reads the metrics; and
// the kernel that stores or accumulates a micro-batch's gradients.
//
// runtime/cuda/simt compiles this file for the host as it compiles every
// .cu here and the generated ones (tgc --target=cuda --simt).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/StepProgram.h"

#include "runtime/core/Trace.h"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tgc::cuda {

//===----------------------------------------------------------------------===//
// Device state
//===----------------------------------------------------------------------===//

static int64_t alignUp(int64_t bytes) {
  return (bytes + kScalarsBlock - 1) / kScalarsBlock * kScalarsBlock;
}

ArenaLayout arenaLayout(const ProgramDesc &program) {
  ArenaLayout layout;
  layout.constantsOffset = kScalarsBlock;
  layout.workOffset = layout.constantsOffset + alignUp(program.constantBytes);
  layout.arenaBytes = layout.workOffset + alignUp(program.plannedBytes);
  return layout;
}

Device &device(const ProgramDesc &program) {
  static Device *instance = [&program] {
    auto *d = new Device;
    Context &context = Context::get();
    d->compute = context.computeStream();
    d->comm = context.commStream();
    ArenaLayout layout = arenaLayout(program);
    int64_t workspace = alignUp(program.workspaceBytes());
    d->arenaMemory = new DeviceArena(layout.arenaBytes + workspace);
    d->arena = d->arenaMemory->base();
    d->scalars = reinterpret_cast<Scalars *>(d->arena);
    d->constants = d->arena + layout.constantsOffset;
    d->work = d->arena + layout.workOffset;
    d->workspace = workspace ? d->arena + layout.arenaBytes : nullptr;
    TGC_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void **>(&d->host),
                                 sizeof(HostBlock), cudaHostAllocDefault));
    std::memset(d->host, 0, sizeof(HostBlock));
    program.uploadConstants(d->constants);
    d->bucketReady.resize(program.numBuckets);
    d->bucketDone.resize(program.numBuckets);
    for (int i = 0; i < program.numBuckets; ++i) {
      TGC_CUDA_CHECK(cudaEventCreateWithFlags(&d->bucketReady[i],
                                              cudaEventDisableTiming));
      TGC_CUDA_CHECK(cudaEventCreateWithFlags(&d->bucketDone[i],
                                              cudaEventDisableTiming));
    }
    return d;
  }();
  return *instance;
}

//===----------------------------------------------------------------------===//
// Running a step
//===----------------------------------------------------------------------===//

namespace {

/// Every pointer a captured graph has baked in.
std::vector<const void *> stepPointers(const ProgramDesc &program,
                                       const StepIO &io) {
  std::vector<const void *> p;
  for (int i = 0; i < program.numParams; ++i)
    p.push_back(io.params[i]);
  for (int i = 0; i < program.numState; ++i)
    p.push_back(io.state[i]);
  for (int i = 0; i < program.numInputs; ++i)
    p.push_back(io.inputs[i]);
  p.push_back(io.outputs);
  for (int i = 0; io.outputs && i < program.numOutputs; ++i)
    p.push_back(io.outputs[i]);
  p.push_back(io.grads);
  for (int i = 0; io.grads && i < program.numGrads; ++i)
    p.push_back(io.grads[i]);
  p.push_back(io.slots);
  for (int i = 0; io.slots && i < program.numSlots; ++i)
    p.push_back(io.slots[i]);
  p.push_back(io.comm);
  return p;
}

void runGraph(StepProgram &p, StepIO &io, Device &d) {
  std::vector<const void *> pointers = stepPointers(*p.program, io);
  auto it = std::find_if(
      p.graphs.begin(), p.graphs.end(),
      [&](const StepProgram::Graph &g) { return g.pointers == pointers; });
  if (it == p.graphs.end()) {
    if (p.graphs.size() >= StepProgram::kMaxGraphs) {
      if (p.graphs.front().exec)
        TGC_CUDA_CHECK(cudaGraphExecDestroy(p.graphs.front().exec));
      p.graphs.erase(p.graphs.begin());
    }
    p.graphs.push_back({std::move(pointers), nullptr, 0});
    it = p.graphs.end() - 1;
  }
  StepProgram::Graph &g = *it;
  if (g.exec) {
    TGC_CUDA_CHECK(cudaGraphLaunch(g.exec, d.compute));
    return;
  }
  if (g.eagerCalls++ == 0) {
    p.launches(io, d, OpTimes{});
    return;
  }
  cudaGraph_t graph = nullptr;
  TGC_CUDA_CHECK(
      cudaStreamBeginCapture(d.compute, cudaStreamCaptureModeThreadLocal));
  try {
    p.launches(io, d, OpTimes{});
  } catch (...) {
    cudaStreamEndCapture(d.compute, &graph);
    if (graph)
      cudaGraphDestroy(graph);
    throw;
  }
  TGC_CUDA_CHECK(cudaStreamEndCapture(d.compute, &graph));
  TGC_CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
  TGC_CUDA_CHECK(cudaGraphDestroy(graph));
  TGC_CUDA_CHECK(cudaGraphLaunch(g.exec, d.compute));
}

void runProfiled(StepProgram &p, StepIO &io, Device &d) {
  if (p.start.empty()) {
    p.start.resize(p.numTimed);
    p.stop.resize(p.numTimed);
    for (int k = 0; k < p.numTimed; ++k) {
      TGC_CUDA_CHECK(cudaEventCreate(&p.start[k]));
      TGC_CUDA_CHECK(cudaEventCreate(&p.stop[k]));
    }
    TGC_CUDA_CHECK(cudaEventCreate(&p.finish));
  }
  p.launches(io, d, OpTimes{p.start.data(), p.stop.data()});
  TGC_CUDA_CHECK(cudaEventRecord(p.finish, d.compute));
}

/// After the step's synchronisation: each launch's events become a trace
/// event, placed by its distance from the step's last event.
void reportTimes(const StepProgram &p, Trace &trace) {
  double end = trace.now();
  for (int k = 0; k < p.numTimed; ++k) {
    float fromStart = 0, fromStop = 0;
    if (cudaEventElapsedTime(&fromStart, p.start[k], p.finish) !=
            cudaSuccess ||
        cudaEventElapsedTime(&fromStop, p.stop[k], p.finish) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    trace.complete(p.labels[k], p.onComm[k] ? "collective" : "kernel",
                   p.onComm[k] ? Trace::Comm : Trace::Compute,
                   end - 1000.0 * fromStart, 1000.0 * (fromStart - fromStop));
  }
}

} // namespace

void runStep(StepProgram &p, StepIO &io) {
  Device &d = device(*p.program);
  d.host->scalars = {io.step, io.randomStream, io.baseLr, io.microBatches,
                     io.microBatch};
  if (io.trace)
    runProfiled(p, io, d);
  else if (io.captureGraph)
    runGraph(p, io, d);
  else
    p.launches(io, d, OpTimes{});
  TGC_CUDA_CHECK(cudaStreamSynchronize(d.compute));
  if (io.trace)
    reportTimes(p, *io.trace);
  io.loss = d.host->metrics.loss;
  if (p.trainMetrics) {
    io.gradNorm = d.host->metrics.gradNorm;
    io.lr = d.host->metrics.lr;
  }
}

//===----------------------------------------------------------------------===//
// Gradients into StepIO
//===----------------------------------------------------------------------===//

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void storeOrAddGradKernel(float *__restrict__ dst,
                                     const T *__restrict__ g, int64_t n,
                                     const int32_t *microBatch) {
  bool first = microBatch && *microBatch == 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = first ? toFloat(g[i]) : dst[i] + toFloat(g[i]);
}

template <typename T>
void launchStoreOrAddGrad(float *dst, const T *g, int64_t n,
                          const int32_t *microBatch, cudaStream_t stream) {
  unsigned blocks = (unsigned)std::clamp<int64_t>(
      (n + kThreads - 1) / kThreads, 1, 65535);
  storeOrAddGradKernel<T><<<blocks, kThreads, 0, stream>>>(dst, g, n,
                                                        microBatch);
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace

void storeOrAddGrad(float *dst, const float *g, int64_t n,
                    const int32_t *microBatch, cudaStream_t stream) {
  launchStoreOrAddGrad(dst, g, n, microBatch, stream);
}

void storeOrAddGrad(float *dst, const __nv_bfloat16 *g, int64_t n,
                    const int32_t *microBatch, cudaStream_t stream) {
  launchStoreOrAddGrad(dst, g, n, microBatch, stream);
}

} // namespace tgc::cuda

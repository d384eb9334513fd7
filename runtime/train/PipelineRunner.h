//===- PipelineRunner.h - Runs a stage's actions of a pipelined step -*- C++
//-*-===//
//
// A pipelined executable (tgc --pipeline-stages=P) runs one process per
// stage. Each finds its stage from its coordinate on the pipeline's mesh
// axis and runs its list of actions for the step: the chunks' F, B and W
// functions on each micro-batch, the sends and receives of the slots
// between stages (MPI: non-blocking sends, receives posted as early as
// their buffers allow), each chunk's reduction of its gradient sums over
// the data axes where the list puts it (after the chunk's last W), then
// its stage's update. A slot's buffers, and
// when each receive is posted, are tg-pipeline-schedule's plan
// (tg.pipeline_buffers): reused from one micro-batch to the next where the
// action list lets them (1F1B's first stage holds P micro-batches'
// activations, GPipe's all M). Evaluation runs the chunks' forwards alone,
// through the stages (evaluate).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_PIPELINERUNNER_H
#define TGC_RUNTIME_TRAIN_PIPELINERUNNER_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tgc {

class PipelineRunner {
public:
  /// `stage` is this process's, on data replica `replica` of `replicas`
  /// (its micro-batch m is the step's m * replicas + replica, whose random
  /// stream it draws).
  PipelineRunner(const ModelDesc &model, int stage, Communicator *comm,
                 int64_t replica = 0, int64_t replicas = 1);
  ~PipelineRunner();
  PipelineRunner(const PipelineRunner &) = delete;
  PipelineRunner &operator=(const PipelineRunner &) = delete;

  int stage() const { return stage_; }
  bool lastStage() const { return stage_ == desc_.stages - 1; }
  /// The bytes of the buffers stage `stage` holds for the values that
  /// cross its functions and boundaries.
  int64_t slotBytes(int stage) const;
  /// The stage that updates parameter `i` (the first that holds it), or -1
  /// for a frozen one, which every stage holds unchanged.
  int ownerOf(int param) const;

  /// Keeps a copy of the batch inputs (`inputs`, host memory, the model's
  /// buffers as the loader filled them) for micro-batch `m` (on the device
  /// where the model runs on one).
  void stageInputs(int m, const void *const *inputs);

  /// Runs this stage's actions and its update with `io` (params, state,
  /// grads, step, rates; the W passes add to the grads, which the caller
  /// zeroes: it knows the pieces' sizes on a mesh). Returns the sum of the
  /// micro-batches' losses on the last stage, 0 elsewhere.
  double runStep(StepIO &io);

  /// The forward alone on one batch (`inputs`, host memory, as for
  /// stageInputs), for evaluation: each of this stage's chunks in order,
  /// its slots received from the stage before and sent to the one after
  /// (micro-batch 0's buffers). Returns the loss on the last stage, 0
  /// elsewhere. Every process of the run calls it.
  double evaluate(StepIO &io, const void *const *inputs);

private:
  void run(const PipelineAction &action, StepIO &io, double &lossSum,
           const std::vector<int> &receives);
  /// Posts the receives of a RecvF or RecvB action.
  void postReceives(const PipelineAction &action, std::vector<int> &receives);
  /// Sends the slots a boundary moves, or posts their receives (whose
  /// handles it appends to `receives`).
  void transfer(const PipelineBoundary &boundary, bool forward, bool send,
                int microBatch, int peerChunk, std::vector<int> *receives);

  const ModelDesc &model_;
  const PipelineDesc &desc_;
  int stage_;
  Communicator *comm_;
  int64_t replica_, replicas_;
  int64_t chunks_;
  /// Per micro-batch, the slot pointers (null where this stage has none)
  /// and the copies of the inputs.
  std::vector<std::vector<void *>> slots_;
  std::vector<std::vector<void *>> inputs_;
  std::vector<std::unique_ptr<char[]>> storage_;
  std::vector<void *> device_; ///< device buffers (model.device)
  std::vector<int64_t> slotBytes_, inputBytes_;
};

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_PIPELINERUNNER_H

//===- PipelineRunner.cpp - Runs a stage's actions of a pipelined step -*- C++
//-*-===//

#include "runtime/train/PipelineRunner.h"

#include "runtime/comm/Comm.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>

namespace tgc {

namespace {

const char *actionName(PipelineActionKind kind) {
  switch (kind) {
  case PipelineActionKind::F:
    return "F";
  case PipelineActionKind::B:
    return "B";
  case PipelineActionKind::W:
    return "W";
  case PipelineActionKind::BW:
    return "BW";
  case PipelineActionKind::SendF:
    return "send-F";
  case PipelineActionKind::RecvF:
    return "recv-F";
  case PipelineActionKind::SendB:
    return "send-B";
  case PipelineActionKind::RecvB:
    return "recv-B";
  case PipelineActionKind::Reduce:
    return "reduce";
  }
  return "?";
}

bool isRecv(PipelineActionKind kind) {
  return kind == PipelineActionKind::RecvF || kind == PipelineActionKind::RecvB;
}

/// The chunk on the far side of a send or receive: the next chunk for
/// forward sends and backward receives, the one before for the others.
int64_t farChunk(const PipelineAction &a) {
  bool towardsNext = a.kind == PipelineActionKind::SendF ||
                     a.kind == PipelineActionKind::RecvB;
  return towardsNext ? a.chunk + 1 : a.chunk - 1;
}

} // namespace

PipelineRunner::PipelineRunner(const ModelDesc &model, int stage,
                               Communicator *comm, int64_t replica,
                               int64_t replicas)
    : model_(model), desc_(*model.pipeline), stage_(stage), comm_(comm),
      replica_(replica), replicas_(replicas),
      chunks_(int64_t(model.pipeline->stages) * model.pipeline->virtualStages) {
  if (stage < 0 || stage >= desc_.stages)
    throw Error("pipeline stage " + std::to_string(stage) + " of " +
                std::to_string(desc_.stages));
  int m = desc_.microBatches;
  slots_.assign(m, std::vector<void *>(desc_.numSlots, nullptr));
  inputs_.assign(m, std::vector<void *>(model.numInputs, nullptr));
  for (int k = 0; k < desc_.numSlots; ++k)
    slotBytes_.push_back(numElements(desc_.slots[k]) *
                         dtypeSize(desc_.slots[k].dtype));
  for (int i = 0; i < model.numInputs; ++i)
    inputBytes_.push_back(numElements(model.inputs[i].tensor) *
                          dtypeSize(model.inputs[i].tensor.dtype));
  auto allocate = [&](int64_t bytes) -> void * {
    if (model.device) {
      device_.push_back(model.device->alloc(std::max<int64_t>(bytes, 1)));
      return device_.back();
    }
    // 64-byte aligned, as the arena: the kernels vectorise.
    storage_.emplace_back(new char[bytes + 64]());
    char *p = storage_.back().get();
    return static_cast<void *>(p + (64 - reinterpret_cast<uintptr_t>(p) % 64));
  };
  // The buffers tg-pipeline-schedule planned for this stage's list.
  const PipelineStage &st = desc_.stageDescs[stage_];
  for (int k = 0; k < desc_.numSlots; ++k) {
    std::vector<void *> buffers;
    for (int b = 0; b < st.slotCounts[k]; ++b)
      buffers.push_back(allocate(slotBytes_[k]));
    for (int mb = 0; mb < m; ++mb)
      if (int b = st.slotBuffers[int64_t(mb) * desc_.numSlots + k]; b >= 0)
        slots_[mb][k] = buffers[b];
  }
  for (int mb = 0; mb < m; ++mb)
    for (int i = 0; i < model.numInputs; ++i)
      inputs_[mb][i] = allocate(inputBytes_[i]);
  comm::openPointToPoint(comm_, desc_.axis);
}

PipelineRunner::~PipelineRunner() {
  for (void *p : device_)
    model_.device->release(p);
}

int64_t PipelineRunner::slotBytes(int stage) const {
  const PipelineStage &st = desc_.stageDescs[stage];
  int64_t bytes = 0;
  for (int k = 0; k < desc_.numSlots; ++k)
    bytes += st.slotCounts[k] * slotBytes_[k];
  return bytes;
}

int PipelineRunner::ownerOf(int param) const {
  int64_t mask = desc_.paramStages[param];
  for (int s = 0; s < desc_.stages; ++s)
    if (mask & (int64_t(1) << s))
      return s;
  return -1;
}

void PipelineRunner::stageInputs(int m, const void *const *inputs) {
  for (int i = 0; i < model_.numInputs; ++i)
    if (model_.device)
      model_.device->upload(inputs_[m][i], inputs[i], inputBytes_[i]);
    else
      std::memcpy(inputs_[m][i], inputs[i], inputBytes_[i]);
}

void PipelineRunner::transfer(const PipelineBoundary &boundary, bool forward,
                              bool send, int microBatch, int peerChunk,
                              std::vector<int> *receives) {
  int peer = static_cast<int>(peerChunk % desc_.stages);
  int count = forward ? boundary.numForward : boundary.numBackward;
  const int32_t *list = forward ? boundary.forward : boundary.backward;
  for (int j = 0; j < count; ++j) {
    int k = list[j];
    void *buffer = slots_[microBatch][k];
    if (!buffer)
      throw Error("pipeline stage " + std::to_string(stage_) +
                  " has no buffer for slot " + std::to_string(k));
    // One tag per slot and micro-batch: matched in order between two
    // stages in any case.
    int tag =
        static_cast<int>((int64_t(microBatch) * desc_.numSlots + k) % 32000);
    if (send)
      comm::send(comm_, desc_.axis, peer, buffer, slotBytes_[k], tag);
    else
      receives->push_back(
          comm::postRecv(comm_, desc_.axis, peer, buffer, slotBytes_[k], tag));
  }
}

void PipelineRunner::run(const PipelineAction &a, StepIO &io, double &lossSum,
                         const std::vector<int> &receives) {
  io.microBatch = a.microBatch;
  io.randomStream = a.microBatch * replicas_ + replica_;
  io.inputs = const_cast<const void **>(inputs_[a.microBatch].data());
  io.slots = slots_[a.microBatch].data();
  std::string label =
      std::string(actionName(a.kind)) +
      (a.kind == PipelineActionKind::Reduce ? ""
                                            : std::to_string(a.microBatch)) +
      "@" + std::to_string(a.chunk);
  TraceScope scope(io.trace, label.c_str(), "pipeline");
  switch (a.kind) {
  case PipelineActionKind::F:
    desc_.forward[a.chunk](io);
    if (a.chunk == chunks_ - 1)
      lossSum += io.loss;
    return;
  case PipelineActionKind::B:
    desc_.backward[a.chunk](io);
    return;
  case PipelineActionKind::W:
    desc_.weight[a.chunk](io);
    return;
  case PipelineActionKind::BW:
    desc_.backward[a.chunk](io);
    desc_.weight[a.chunk](io);
    return;
  case PipelineActionKind::SendF:
    transfer(desc_.boundaries[a.chunk], true, true, a.microBatch, a.chunk + 1,
             nullptr);
    return;
  case PipelineActionKind::SendB:
    transfer(desc_.boundaries[a.chunk - 1], false, true, a.microBatch,
             a.chunk - 1, nullptr);
    return;
  case PipelineActionKind::RecvF:
  case PipelineActionKind::RecvB:
    // Posted when the step began: the bytes came in while this stage
    // computed.
    for (int handle : receives)
      comm::waitRecv(comm_, handle);
    return;
  case PipelineActionKind::Reduce:
    if (!desc_.reduce || !desc_.reduce[a.chunk])
      throw Error("pipeline stage " + std::to_string(stage_) +
                  " reduces chunk " + std::to_string(a.chunk) +
                  ", which has no reduction");
    desc_.reduce[a.chunk](io);
    return;
  }
}

void PipelineRunner::postReceives(const PipelineAction &a,
                                  std::vector<int> &receives) {
  if (a.kind == PipelineActionKind::RecvF)
    transfer(desc_.boundaries[a.chunk - 1], true, false, a.microBatch,
             a.chunk - 1, &receives);
  else if (a.kind == PipelineActionKind::RecvB)
    transfer(desc_.boundaries[a.chunk], false, false, a.microBatch, a.chunk + 1,
             &receives);
}

double PipelineRunner::evaluate(StepIO &io, const void *const *inputs) {
  stageInputs(0, inputs);
  io.microBatch = 0;
  io.randomStream = replica_;
  io.inputs = const_cast<const void **>(inputs_[0].data());
  io.slots = slots_[0].data();
  double loss = 0;
  for (int64_t c = stage_; c < chunks_; c += desc_.stages) {
    if (c > 0) {
      std::vector<int> receives;
      transfer(desc_.boundaries[c - 1], /*forward=*/true, /*send=*/false, 0,
               static_cast<int>(c - 1), &receives);
      for (int handle : receives)
        comm::waitRecv(comm_, handle);
    }
    desc_.forward[c](io);
    if (c == chunks_ - 1)
      loss = io.loss;
    else
      transfer(desc_.boundaries[c], /*forward=*/true, /*send=*/true, 0,
               static_cast<int>(c + 1), nullptr);
  }
  // The buffers are the next batch's.
  comm::waitSends(comm_);
  io.slots = nullptr;
  return loss;
}

double PipelineRunner::runStep(StepIO &io) {
  // The reductions' and the update's scalings read the step's count.
  io.microBatches = desc_.microBatches;
  double lossSum = 0;
  const PipelineStage &stage = desc_.stageDescs[stage_];
  // Each receive is posted as soon as its buffers are free (at the start
  // of the step where they are new), so that transfers complete while this
  // stage computes; a buffer a send still reads waits for the sends.
  int n = stage.numActions;
  std::vector<std::vector<int>> receives(n), postAfter(n);
  // Receives from one peer are posted in the order it sends (the order
  // this stage waits for them: pipeline::simulate refuses a list that
  // does otherwise when the program is built), as NCCL pairs them: one
  // whose buffers are free waits for those before it.
  std::vector<std::deque<int>> queue(desc_.stages);
  std::vector<bool> free(n, false), posted(n, false);
  auto peerOf = [&](const PipelineAction &a) {
    return static_cast<int>(farChunk(a) % desc_.stages);
  };
  for (int i = 0; i < n; ++i)
    if (isRecv(stage.actions[i].kind))
      queue[peerOf(stage.actions[i])].push_back(i);
  auto release = [&](int i) {
    free[i] = true;
    std::deque<int> &list = queue[peerOf(stage.actions[i])];
    while (!list.empty() && free[list.front()]) {
      int next = list.front();
      list.pop_front();
      if (stage.waitSends[next])
        comm::waitSends(comm_);
      postReceives(stage.actions[next], receives[next]);
      posted[next] = true;
    }
  };
  for (int i = 0; i < n; ++i) {
    if (stage.postAfter[i] == -1)
      release(i);
    else if (stage.postAfter[i] >= 0)
      postAfter[stage.postAfter[i]].push_back(i);
  }
  for (int i = 0; i < n; ++i) {
    const PipelineAction &a = stage.actions[i];
    if (isRecv(a.kind) && !posted[i])
      throw Error("pipeline stage " + std::to_string(stage_) + " waits for " +
                  actionName(a.kind) + std::to_string(a.microBatch) + "@" +
                  std::to_string(a.chunk) +
                  " before its buffers are free: the schedule's slot plan "
                  "contradicts its actions");
    if (!isRecv(a.kind) && stage.waitSends[i])
      comm::waitSends(comm_);
    run(a, io, lossSum, receives[i]);
    for (int later : postAfter[i])
      release(later);
  }
  comm::waitSends(comm_);
  io.slots = nullptr;
  {
    TraceScope scope(io.trace, "update", "pipeline");
    stage.update(io);
  }
  return lossSum;
}

} // namespace tgc

//===- Train.cpp - The training loop around the compiled step ---*- C++ -*-===//
//
// runTraining is the main of every training executable: it parses the flags
// (defaults from the ModelDesc), opens the data the model's input roles ask
// for, initialises the parameters (InitSpec, --init-from or --resume), and
// calls the compiled step functions: accumulate for every micro-batch of a
// step but the last, then trainStep; evalStep for validation; gradStep for
// --dump-grads. Around them: the progress bar, the JSONL log, checkpoints,
// and a clean stop on SIGINT/SIGTERM.
//
// With several processes the executable was compiled for a mesh
// (ModelDesc::mesh, runtime/train/MeshLayout): the run has exactly its
// processes, and the data replicas are the coordinates over the axes that
// split the batch. Every rank draws every micro-batch of a step from
// identically seeded loaders and computes its replica's share (micro-batch
// m goes to replica m mod R; the processes of one replica, tensor-parallel
// peers, read the same micro-batches); the step's collectives (placed by
// tg-partition) reduce the gradients, so R replicas with a global
// --batch-size take the same steps as one process with that batch. Split
// parameters and optimizer state are held as this process's pieces. On
// several processes every rank writes its pieces into a sharded checkpoint
// (runtime/checkpoint/ShardedCheckpoint.h), rank 0 the index; with
// --checkpoint-layout=consolidated rank 0 writes the whole tensors; --resume
// reads each process's pieces straight from either layout. Rank 0 alone
// prints and logs; evaluation batches are split over the replicas.
//
// A model with DeviceOps (a GPU executable) keeps every StepIO buffer on the
// device: the parameters are initialised on the host and uploaded, batches
// are uploaded as they are drawn, and checkpoints download what they save.
//
// Resume is bit-exact: a checkpoint holds the parameters, the optimizer
// state, the step and the training loader's position (its RNG state
// included), and nothing in a step depends on anything else (evaluation
// reads its own loader and changes no state), so a run stopped and resumed
// at any step produces the same losses and weights as an uninterrupted one,
// given the same thread count.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Model.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/HuggingFace.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/checkpoint/ShardedCheckpoint.h"
#include "runtime/comm/Comm.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/FloatFormat.h"
#include "runtime/core/JsonText.h"
#include "runtime/core/Trace.h"
#include "runtime/data/ClassData.h"
#include "runtime/data/TokenData.h"
#include "runtime/train/BlasCore.h"
#include "runtime/train/Flags.h"
#include "runtime/train/Init.h"
#include "runtime/train/Lora.h"
#include "runtime/train/MeshLayout.h"
#include "runtime/train/PipelineRunner.h"
#include "runtime/train/Progress.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <omp.h>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <utility>
#include <vector>

namespace tgc {
namespace {

//===----------------------------------------------------------------------===//
// Signals
//===----------------------------------------------------------------------===//

volatile std::sig_atomic_t stopSignal = 0;

extern "C" void onStopSignal(int signal) {
  stopSignal = signal;
  // A second Ctrl-C kills at once.
  std::signal(signal, SIG_DFL);
}

class StopSignalScope {
public:
  StopSignalScope() {
    stopSignal = 0;
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt_);
    sigaction(SIGTERM, &action, &oldTerm_);
  }
  ~StopSignalScope() {
    sigaction(SIGINT, &oldInt_, nullptr);
    sigaction(SIGTERM, &oldTerm_, nullptr);
  }

private:
  struct sigaction oldInt_, oldTerm_;
};

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::string data, valData;
  int64_t steps = 0, batchSize = 0, seqLen = 0, seed = 0;
  double lr = 0;
  int64_t evalEvery = 0, evalBatches = 0;
  std::string checkpointDir, checkpointLayout;
  /// Snapshot the state at the step boundary and write it in a background
  /// thread while training goes on.
  bool checkpointAsync = false;
  int64_t checkpointEvery = 0, keepCheckpoints = 3;
  std::string resume, initFrom, saveFinal, log, dumpGrads;
  /// --save-final writes the base model's parameters, the LoRA adapters
  /// folded into their weights.
  bool mergeLora = false;
  /// --save-final's layout: "tgc" (a checkpoint) or "hf" (a Hugging Face
  /// directory, named by hfConfig or --init-from's config.json).
  std::string saveFormat = "tgc", hfConfig;
  int64_t maxShardSize = static_cast<int64_t>(kHfMaxShardBytes);
  int64_t threads = 0, printEvery = 0;
  int64_t device = -1;
  std::string rendezvous, profile;
  bool noShuffle = false, cudaGraph = false, quiet = false, help = false;
  /// A step whose loss or gradient norm is not finite (or spikes, with
  /// lossSpike): stop, skip it, or roll back to the last checkpoint.
  std::string onNonfinite = "stop";
  double lossSpike = 0; ///< 0: off; else a factor > 1 of the running median
  int64_t maxRollbacks = 3;
  /// For tests: the steps (counting every step this process runs, from 1)
  /// before which the last parameter is made bad, and how (nan or spike).
  std::vector<int64_t> injectAt;
  std::string injectKind;
  /// --batch-size was on the command line (else the training table's, or
  /// when the table has none, one compiled micro-batch per process).
  bool batchSizeGiven = false;
};

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, AlignedFree>;

Buffer allocate(const TensorDesc &tensor) {
  int64_t bytes = numElements(tensor) * dtypeSize(tensor.dtype);
  size_t rounded = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw Error("out of memory allocating " + std::to_string(bytes) +
                " bytes for " + tensor.name);
  std::memset(p, 0, rounded);
  return Buffer(p);
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

enum class DataKind { None, Tokens, Classes };

struct EvalResult {
  double loss = 0;
  double accuracy = -1; ///< < 0 when not measured
};

/// One tensor of the step's StepIO: host memory, and the device copy when
/// the model runs on a device. A parameter or state split over the mesh
/// keeps the whole tensor in `host` (initialisation fills it whole, a
/// consolidated checkpoint gathers into it; after --resume it is stale until
/// then) and this process's piece in `piece` (on a device, in `device`):
/// `bytes` is the piece's.
struct Tensor {
  Buffer host;
  Buffer piece; ///< null unless split
  void *device = nullptr;
  int64_t bytes = 0;
  const TensorDesc *desc = nullptr; ///< the whole tensor, when split
  /// Host memory the step (or the device copy) reads.
  void *local() const { return piece ? piece.get() : host.get(); }
  /// What the step functions get.
  void *step() const { return device ? device : local(); }
};

class Trainer {
public:
  Trainer(const ModelDesc &model, Options options, Communicator *comm)
      : model_(model), opt_(std::move(options)), comm_(comm),
        rank_(comm::rank(comm)), world_(comm::worldSize(comm)),
        mesh_(model, rank_, world_), device_(model.device) {}
  ~Trainer();

  int run();

private:
  /// A host tensor, with its device copy where the model runs on a device
  /// and `onDevice`.
  Tensor makeTensor(const TensorDesc &desc, bool onDevice = true);
  /// A parameter or state tensor: whole on the host, this process's piece
  /// for the step when the mesh splits it.
  Tensor makeModelTensor(const TensorDesc &desc, bool onDevice = true);
  /// Whether pipeline stage `stage` (-1: this process's) holds parameter
  /// `param` (every process without a pipeline; every stage a frozen one).
  bool stageHolds(int param, int stage = -1) const;
  /// The parameter optimizer state `state` belongs to, -1 for none.
  int paramOfState(int state) const;
  /// Puts the pieces of the split tensors together in every process's host
  /// copy (after download); every rank calls it.
  void gatherModelState();
  /// A pipelined run: each parameter and its state from the stage that
  /// updates it to every stage, so that any process holds the whole model
  /// (evaluation, checkpoints).
  void syncPipelineState();
  /// Whether this process adds a pipelined loss into the sums: on the last
  /// stage, the first of the processes that share its batch (`perReplica`)
  /// or of all (a step's loss, reduced over the data axes already).
  bool countsPipelineLoss(bool perReplica) const;
  float pipelineStep(int64_t step);
  void upload(Tensor &t);
  void download(Tensor &t);
  void uploadModelState();
  void downloadModelState();
  void selectDevice();
  void checkModel();
  void setUpData();
  void setUpBuffers();
  void initialise();
  void fillInputs(bool train);
  /// Draws the step's training micro-batch `m` (of all replicas'): fills
  /// the inputs and returns true when it is this data replica's.
  bool drawTrainMicroBatch(int64_t m);
  void fillTokenInputs(const TokenBatch &batch);
  void fillClassInputs(const ClassBatch &batch);
  float trainStep(int64_t step);
  /// Why the step just taken is bad ("" when it is not): a loss or gradient
  /// norm that is not finite, or a loss spike.
  std::string badStep(float loss) const;
  /// Copies of the parameters and optimizer state (host memory) before a
  /// step that --on-nonfinite=skip may drop, and their return.
  void takeSnapshot();
  void restoreSnapshot();
  /// --inject-bad-step: spoils this process's copy of the last parameter.
  void injectBadStep();
  /// Loads the checkpoint at `path` into the parameters and state (this
  /// process's pieces) and sets startStep_ and skipped_; returns its
  /// metadata.
  Metadata loadState(const std::string &path);
  /// --on-nonfinite=rollback: the newest checkpoint back, the data where it
  /// is (past the batches of the bad step); returns the checkpoint's path.
  std::string rollBack(int64_t step, const std::string &why);
  void logEvent(int64_t step, const char *kind, const std::string &what,
                float loss);
  EvalResult evaluate();
  Metadata checkpointMetadata(int64_t step) const;
  void saveTo(const std::string &path, int64_t step);
  /// --save-final's file: saveTo's, or with --merge-lora the base model's
  /// parameters (runtime/train/Lora.h). Rank 0 calls it.
  void saveFinalTo(const std::string &path, int64_t step);
  /// Writes the step's checkpoint under --checkpoint-dir and returns its
  /// path; every rank calls it.
  std::string saveCheckpoint(int64_t step);
  std::string saveShardedCheckpoint(int64_t step);
  /// One of the three stages of a sharded checkpoint (see
  /// saveShardedCheckpoint): `work` on every rank or rank 0, then every
  /// rank learns whether one failed.
  void checkpointStage(bool everyRank, const std::string &target,
                       const std::function<void()> &work);
  /// --checkpoint-async: snapshots the state (after the previous write has
  /// finished) and starts writing it; returns the checkpoint's path.
  std::string startAsyncCheckpoint(int64_t step);
  /// What a snapshot copies: this process's pieces (sharded checkpoints) or
  /// the whole tensors' host copies (root of a consolidated one).
  std::vector<std::pair<const void *, int64_t>>
  snapshotSources(bool sharded) const;
  /// Allocates and touches the snapshot's buffers, so that the first
  /// checkpoint stalls no longer than the others.
  void prepareSnapshotBuffers(bool sharded);
  /// Copies the model state into the snapshot's buffers, in parallel.
  void copySnapshot(bool sharded);
  /// Finishes the write in flight: waits for it when `wait`, else finishes
  /// it only when every rank's part is on disk. Returns whether none is
  /// left in flight. Every rank calls it at the same points.
  bool finishAsyncCheckpoint(bool wait);
  /// The log entry, progress line and pruning after a checkpoint is whole.
  void checkpointWritten(int64_t step, const std::string &path,
                         double stallMs, bool async);
  /// Whether checkpoints are sharded: --checkpoint-layout, by default on
  /// several processes.
  bool shardedCheckpoints() const;
  void pruneCheckpoints();
  void dumpGrads();
  void finalLines();
  StepIO makeIO(int64_t step);
  bool isRoot() const { return rank_ == 0; }
  /// Whether any rank was asked to stop (every rank leaves the loop after
  /// the same step).
  bool stopRequested();

  const ModelDesc &model_;
  Options opt_;
  Communicator *comm_;
  int rank_, world_;
  /// The step's mesh: data replicas (which stand for the rank and the world
  /// size in data distribution) and the pieces of split tensors.
  MeshLayout mesh_;
  const DeviceOps *device_;
  /// A pipelined step's driver (null otherwise).
  std::unique_ptr<PipelineRunner> pipeline_;

  DataKind kind_ = DataKind::None;
  int tokensInput_ = -1, targetsInput_ = -1, positionsInput_ = -1;
  int featuresInput_ = -1, labelsInput_ = -1;
  /// The compiled micro-batch; micro-batches per step over all ranks, and
  /// on this rank.
  int64_t micro_ = 1, globalMicroBatches_ = 1, microBatches_ = 1, seqLen_ = 0;
  int64_t vocabSize_ = 0, numClasses_ = 0, numFeatures_ = 0;

  std::unique_ptr<TokenLoader> trainTokens_, valTokens_;
  std::unique_ptr<ClassLoader> trainClasses_, valClasses_;
  // The validation batch (for accuracy against the logits).
  const ClassBatch *lastClassBatch_ = nullptr;

  std::vector<Tensor> params_, state_, inputs_, outputs_, grads_;
  // What StepIO points at: device memory on a device, else host memory.
  std::vector<void *> paramPtrs_, statePtrs_, outputPtrs_, gradPtrs_;
  std::vector<const void *> inputPtrs_;
  /// The inputs' host copies, as the loader fills them (a pipeline stages
  /// them per micro-batch).
  std::vector<const void *> hostInputPtrs_;
  // Host copies of the parameters and state, for init and checkpoints.
  std::vector<void *> hostParams_, hostState_;
  /// --resume filled the pieces of split tensors directly: their whole host
  /// copies are not the values until gatherModelState.
  bool piecesLoaded_ = false;
  /// The sharded checkpoints' pieces and writers, built at the first save.
  ShardedLayout checkpointLayout_;
  /// The asynchronous checkpoint in flight: its snapshot of this process's
  /// parameters and state (host memory), and the thread writing it.
  struct PendingCheckpoint {
    int64_t step = 0;
    std::string path, partial;
    bool sharded = false;
    double stallMs = 0;
    Metadata meta;
    std::thread writer;
    std::atomic<bool> done{false};
    std::string failure; ///< written by the writer before `done`
  };
  std::unique_ptr<PendingCheckpoint> pending_;
  /// The snapshot the asynchronous checkpoint in flight writes: one host
  /// buffer per tensor, kept from one checkpoint to the next (at most one
  /// write is in flight; the next snapshot waits for it).
  std::vector<std::vector<char>> snapshotBuffers_;

  int64_t startStep_ = 0;
  /// Steps dropped by --on-nonfinite=skip: the optimizer (and the LR
  /// schedule) is at step - skipped_.
  int64_t skipped_ = 0;
  int64_t stepsRun_ = 0, rollbacks_ = 0;
  std::vector<std::vector<char>> snapshot_;
  /// The losses of the last good steps, for --loss-spike's median.
  std::vector<float> recentLosses_;
  float firstLoss_ = NAN, lastLoss_ = NAN;
  double firstValLoss_ = NAN, lastValLoss_ = NAN, lastAccuracy_ = -1;
  int32_t threads_ = 1;
  float lastStepLr_ = NAN, lastGradNorm_ = NAN;
  MetricsLog log_;
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<Trace> trace_;
};

Trainer::~Trainer() {
  // An error left a write in flight: let it end (it only writes a partial
  // directory or a temporary file, which the next save replaces).
  if (pending_ && pending_->writer.joinable())
    pending_->writer.join();
  if (!device_)
    return;
  for (auto *list : {&params_, &state_, &inputs_, &outputs_, &grads_})
    for (Tensor &t : *list)
      if (t.device)
        device_->release(t.device);
}

Tensor Trainer::makeTensor(const TensorDesc &desc, bool onDevice) {
  Tensor t;
  t.host = allocate(desc);
  t.bytes = numElements(desc) * dtypeSize(desc.dtype);
  if (device_ && onDevice)
    t.device = device_->alloc(std::max<int64_t>(t.bytes, 1));
  return t;
}

Tensor Trainer::makeModelTensor(const TensorDesc &desc, bool onDevice) {
  // A file shape that is no view of the shape (generated code that
  // contradicts itself) fails now, not at the first checkpoint.
  fileShapeOf(desc);
  if (!MeshLayout::isSplit(desc))
    return makeTensor(desc, onDevice);
  TensorDesc local = mesh_.local(desc);
  Tensor t = makeTensor(local, onDevice);
  t.piece = std::move(t.host);
  t.host = allocate(desc);
  t.desc = &desc;
  return t;
}

void Trainer::upload(Tensor &t) {
  // The piece is cut from the whole, which initialisation fills, unless
  // --resume loaded the pieces themselves.
  if (t.desc && !piecesLoaded_)
    mesh_.cut(*t.desc, t.host.get(), t.piece.get(), rank_);
  if (t.device && t.bytes)
    device_->upload(t.device, t.local(), t.bytes);
}

void Trainer::download(Tensor &t) {
  if (t.device && t.bytes)
    device_->download(t.local(), t.device, t.bytes);
}

bool Trainer::stageHolds(int param, int stage) const {
  if (!model_.pipeline)
    return true;
  if (stage < 0)
    stage = comm::meshCoordinate(comm_, model_.pipeline->axis);
  int64_t mask = model_.pipeline->paramStages[param];
  return mask == 0 || (mask & (int64_t(1) << stage));
}

void Trainer::syncPipelineState() {
  if (!pipeline_)
    return;
  // Each parameter and its state as the stage that updates it holds them,
  // to the processes at the same place of the other stages (the same piece
  // of a split tensor): gathered along the pipeline's axis, the owner's
  // copy kept. Only for evaluation and checkpoints.
  int axis = model_.pipeline->axis, stages = model_.pipeline->stages;
  std::vector<char> all;
  auto share = [&](Tensor &t, const TensorDesc &desc, int owner) {
    if (owner < 0 || !t.bytes)
      return;
    int64_t count = t.bytes / dtypeSize(desc.dtype);
    if (device_) {
      // NCCL gathers device memory; the host copy (and the device's, on a
      // stage that holds the tensor) becomes the owner's. A stage without
      // it sends its part of the gathered buffer, in place.
      char *gathered = static_cast<char *>(device_->alloc(t.bytes * stages));
      int coordinate = comm::meshCoordinate(comm_, axis);
      comm::allGather(comm_, axis,
                      t.device ? t.device
                               : gathered + int64_t(coordinate) * t.bytes,
                      gathered, count, desc.dtype, nullptr);
      device_->synchronize();
      device_->download(t.local(), gathered + int64_t(owner) * t.bytes,
                        t.bytes);
      device_->release(gathered);
      if (t.device)
        device_->upload(t.device, t.local(), t.bytes);
      return;
    }
    all.resize(static_cast<size_t>(t.bytes) * stages);
    comm::allGather(comm_, axis, t.local(), all.data(), count, desc.dtype,
                    nullptr);
    std::memcpy(t.local(), all.data() + int64_t(owner) * t.bytes, t.bytes);
  };
  std::vector<int> ownerOfParam(model_.numParams);
  for (int i = 0; i < model_.numParams; ++i) {
    ownerOfParam[i] = pipeline_->ownerOf(i);
    share(params_[i], model_.params[i].tensor, ownerOfParam[i]);
  }
  for (int i = 0; i < model_.numState; ++i)
    if (int p = paramOfState(i); p >= 0)
      share(state_[i], model_.state[i].tensor, ownerOfParam[p]);
}

int Trainer::paramOfState(int state) const {
  for (int p = 0; p < model_.numParams; ++p)
    if (std::strcmp(model_.state[state].param, model_.params[p].tensor.name) ==
        0)
      return p;
  return -1;
}

void Trainer::gatherModelState() {
  downloadModelState();
  syncPipelineState();
  for (auto *list : {&params_, &state_})
    for (Tensor &t : *list) {
      if (!t.desc)
        continue;
      // Each piece's owner sends it to everyone (host memory on every
      // backend); the pieces are whole tensors' parts, so this happens only
      // for checkpoints.
      std::vector<char> piece(static_cast<size_t>(t.bytes));
      for (int owner : mesh_.pieceOwners(*t.desc)) {
        if (owner == rank_)
          std::memcpy(piece.data(), t.piece.get(), piece.size());
        comm::broadcast(comm_, piece.data(), t.bytes, owner);
        mesh_.paste(*t.desc, piece.data(), t.host.get(), owner);
      }
    }
}

void Trainer::uploadModelState() {
  for (Tensor &t : params_)
    upload(t);
  for (Tensor &t : state_)
    upload(t);
}

void Trainer::downloadModelState() {
  if (!device_)
    return;
  device_->synchronize();
  for (Tensor &t : params_)
    download(t);
  for (Tensor &t : state_)
    download(t);
}

void Trainer::selectDevice() {
  if (!device_)
    return;
  int ordinal = opt_.device >= 0 ? static_cast<int>(opt_.device)
                : comm_       ? comm::deviceOrdinal(comm_)
                              : 0;
  if (ordinal < 0)
    ordinal = 0;
  const char *description = device_->select(ordinal);
  if (isRoot() && !opt_.quiet)
    std::printf("device: %s (%s)%s\n", description, device_->kind,
                world_ > 1 ? (", " + comm::describe(comm_)).c_str() : "");
}

bool Trainer::stopRequested() {
  bool stop = stopSignal != 0;
  if (comm_)
    stop = comm::allReduceSum(comm_, stop ? 1.0 : 0.0) > 0;
  return stop;
}

StepIO Trainer::makeIO(int64_t step) {
  StepIO io;
  std::memset(&io, 0, sizeof(io));
  io.params = paramPtrs_.data();
  io.state = statePtrs_.data();
  io.inputs = inputPtrs_.data();
  io.outputs = outputPtrs_.empty() ? nullptr : outputPtrs_.data();
  io.grads = gradPtrs_.empty() ? nullptr : gradPtrs_.data();
  io.step = step;
  io.microBatches = static_cast<int32_t>(microBatches_);
  io.baseLr = static_cast<float>(opt_.lr);
  io.lr = io.baseLr;
  io.threads = threads_;
  io.comm = comm_;
  io.trace = trace_.get();
  io.captureGraph = opt_.cudaGraph ? 1 : 0;
  return io;
}

/// Works out what data the model wants from its input roles and checks the
/// batch geometry against the flags.
void Trainer::checkModel() {
  for (int i = 0; i < model_.numInputs; ++i) {
    const InputDesc &input = model_.inputs[i];
    const TensorDesc &t = input.tensor;
    auto need = [&](bool ok, const std::string &what) {
      if (!ok)
        throw Error("model '" + std::string(model_.name) + "' input " +
                    t.name + " (" + shapeString(t) + " " +
                    dtypeName(t.dtype) + ") " + what);
    };
    bool integer = t.dtype == DType::I32 || t.dtype == DType::I64;
    switch (input.role) {
    case InputRole::Tokens:
      need(t.rank == 2 && integer, "should be an integer [batch, seq] tensor");
      tokensInput_ = i;
      break;
    case InputRole::Targets:
      need(t.rank == 2 && integer, "should be an integer [batch, seq] tensor");
      targetsInput_ = i;
      break;
    case InputRole::Positions:
      need(t.rank == 1 && integer, "should be an integer [seq] tensor");
      positionsInput_ = i;
      break;
    case InputRole::Features:
      need(t.rank >= 1 && (t.dtype == DType::F32 || t.dtype == DType::BF16 ||
                           t.dtype == DType::F16),
           "should be a float tensor with a leading batch dim");
      featuresInput_ = i;
      break;
    case InputRole::Labels:
      need(t.rank == 1 && integer, "should be an integer [batch] tensor");
      labelsInput_ = i;
      break;
    }
  }
  if (tokensInput_ >= 0) {
    kind_ = DataKind::Tokens;
    const TensorDesc &t = model_.inputs[tokensInput_].tensor;
    micro_ = t.shape[0];
    seqLen_ = t.shape[1];
  } else if (featuresInput_ >= 0) {
    kind_ = DataKind::Classes;
    const TensorDesc &t = model_.inputs[featuresInput_].tensor;
    micro_ = t.shape[0];
    numFeatures_ = 1;
    for (int d = 1; d < t.rank; ++d)
      numFeatures_ *= t.shape[d];
    if (labelsInput_ < 0)
      throw Error("model '" + std::string(model_.name) +
                  "' has a features input but no labels input");
  } else {
    micro_ = std::max<int64_t>(1, model_.defaults.batchSize);
  }

  // The sequence length is compiled in.
  if (opt_.seqLen != 0 && opt_.seqLen != seqLen_)
    throw Error("--seq-len " + std::to_string(opt_.seqLen) +
                " differs from the compiled sequence length " +
                std::to_string(seqLen_) + " of model '" + model_.name + "'");
  // The batch (over all ranks) is a whole number of compiled micro-batches,
  // and each rank takes the same number of them. A model file without a
  // batch size (one with no batch inputs, say) takes one micro-batch per
  // process and accumulation step.
  // With a mesh the data replicas share the batch, not the processes:
  // tensor-parallel peers compute the same micro-batches.
  const int64_t replicas = mesh_.replicas();
  if (!opt_.batchSizeGiven && model_.defaults.batchSize <= 0)
    opt_.batchSize =
        micro_ * std::max<int64_t>(1, model_.defaults.gradAccum) * replicas;
  if (opt_.batchSize <= 0 || opt_.batchSize % micro_ != 0)
    throw Error("--batch-size " + std::to_string(opt_.batchSize) +
                " is not a positive multiple of the compiled micro-batch " +
                std::to_string(micro_));
  globalMicroBatches_ = opt_.batchSize / micro_;
  std::string sharers = mesh_.hasMesh()
                            ? " data replicas (mesh " + mesh_.describe() + ")"
                            : " processes";
  if (globalMicroBatches_ % replicas != 0)
    throw Error("--batch-size " + std::to_string(opt_.batchSize) + " is " +
                std::to_string(globalMicroBatches_) + " micro-batches of " +
                std::to_string(micro_) + ", which " + std::to_string(replicas) +
                sharers + " cannot share evenly; use a multiple of " +
                std::to_string(micro_ * replicas));
  microBatches_ = globalMicroBatches_ / replicas;
  if (microBatches_ > 1 && !model_.accumulate && !model_.pipeline)
    throw Error("--batch-size " + std::to_string(opt_.batchSize) + " needs " +
                std::to_string(microBatches_) + " micro-batches of " +
                std::to_string(micro_) + " per step on each of " +
                std::to_string(replicas) +
                (mesh_.hasMesh() ? " data replica(s)" : " process(es)") +
                ", but model '" + model_.name +
                "' was compiled without gradient accumulation; use "
                "--batch-size " +
                std::to_string(micro_ * replicas) +
                " or compile with grad_accum (tgc --grad-accum N)");

  if (model_.pipeline && microBatches_ != model_.pipeline->microBatches)
    throw Error(
        "--batch-size " + std::to_string(opt_.batchSize) + " is " +
        std::to_string(microBatches_) + " micro-batches of " +
        std::to_string(micro_) + " per data replica, but model '" +
        model_.name + "' was compiled for a pipeline schedule of " +
        std::to_string(model_.pipeline->microBatches) + " (--batch-size " +
        std::to_string(micro_ * model_.pipeline->microBatches * replicas) +
        ", or recompile with tgc --grad-accum N)");
  // What the data must fit: the vocabulary (tokens feed embeddings and
  // label the loss), the classes. The compiler read each input's bound from
  // the graph: the rows of the tables it indexes, the logits it labels.
  auto tighten = [](int64_t &limit, int64_t bound) {
    if (bound > 0)
      limit = limit == 0 ? bound : std::min(limit, bound);
  };
  for (int i = 0; i < model_.numInputs; ++i) {
    const InputDesc &input = model_.inputs[i];
    if (input.role == InputRole::Tokens || input.role == InputRole::Targets)
      tighten(vocabSize_, input.valueLimit);
    if (input.role == InputRole::Labels)
      tighten(numClasses_, input.valueLimit);
  }
}

void Trainer::setUpData() {
  // Training and gradient dumps read batches; --steps 0 (only --init-from
  // and --save-final, say) does not.
  bool needTrain = opt_.steps > 0 || !opt_.dumpGrads.empty();
  if (kind_ == DataKind::None) {
    if (!opt_.data.empty() || !opt_.valData.empty())
      throw Error("model '" + std::string(model_.name) +
                  "' has no batch inputs: --data and --val-data do not apply");
    return;
  }
  if (opt_.data.empty() && needTrain)
    throw Error("model '" + std::string(model_.name) + "' needs --data (" +
                (kind_ == DataKind::Tokens
                     ? "an llm.c token shard, e.g. from tg-data text"
                     : "a classification file, e.g. from tg-data csv") +
                ")");
  uint64_t seed = static_cast<uint64_t>(opt_.seed);
  if (kind_ == DataKind::Tokens) {
    TokenLoader::Options o;
    o.batch = micro_;
    o.seqLen = seqLen_;
    o.vocabSize = vocabSize_;
    o.paths = opt_.data;
    o.seed = mix64(seed ^ 0xda7a);
    o.random = !opt_.noShuffle;
    if (!opt_.data.empty())
      trainTokens_ = std::make_unique<TokenLoader>(o);
    if (!opt_.valData.empty()) {
      o.paths = opt_.valData;
      o.random = false;
      o.prefetch = false;
      valTokens_ = std::make_unique<TokenLoader>(o);
    }
    return;
  }
  auto open = [&](const std::string &path, bool random) {
    ClassLoader::Options o;
    o.path = path;
    o.batch = micro_;
    o.seed = mix64(seed ^ 0xda7a);
    o.random = random;
    auto loader = std::make_unique<ClassLoader>(o);
    const ClassDataset &data = loader->dataset();
    if (data.numFeatures() != numFeatures_)
      throw Error(path + ": " + std::to_string(data.numFeatures()) +
                  " features per row, but model '" + model_.name +
                  "' input " + model_.inputs[featuresInput_].tensor.name +
                  " takes " + std::to_string(numFeatures_));
    // The file's header may count more classes than its rows use; a label
    // the model has no logit for is the error.
    if (numClasses_ > 0 && data.numClasses() > numClasses_)
      for (int64_t row = 0; row < data.numRows(); ++row)
        if (data.label(row) >= numClasses_)
          throw Error(path + ": row " + std::to_string(row) + " has label " +
                      std::to_string(data.label(row)) + ", but model '" +
                      model_.name + "' has " + std::to_string(numClasses_) +
                      " classes (labels 0.." +
                      std::to_string(numClasses_ - 1) + "; the file declares " +
                      std::to_string(data.numClasses()) + ")");
    return loader;
  };
  if (!opt_.data.empty())
    trainClasses_ = open(opt_.data, !opt_.noShuffle);
  if (!opt_.valData.empty())
    valClasses_ = open(opt_.valData, false);
}

void Trainer::setUpBuffers() {
  // A pipeline stage's device holds the parameters, state and gradients of
  // its own layers (the host keeps every tensor, for checkpoints); the
  // others' pointers are null.
  auto stepPointer = [&](const Tensor &t) -> void * {
    return device_ && !t.device ? nullptr : t.step();
  };
  for (int i = 0; i < model_.numParams; ++i) {
    params_.push_back(makeModelTensor(model_.params[i].tensor, stageHolds(i)));
    paramPtrs_.push_back(stepPointer(params_.back()));
    hostParams_.push_back(params_.back().host.get());
  }
  for (int i = 0; i < model_.numState; ++i) {
    int param = paramOfState(i);
    state_.push_back(makeModelTensor(model_.state[i].tensor,
                                     param < 0 || stageHolds(param)));
    statePtrs_.push_back(stepPointer(state_.back()));
    hostState_.push_back(state_.back().host.get());
  }
  for (int i = 0; i < model_.numInputs; ++i) {
    inputs_.push_back(makeTensor(model_.inputs[i].tensor));
    inputPtrs_.push_back(inputs_.back().step());
    hostInputPtrs_.push_back(inputs_.back().local());
  }
  for (int i = 0; i < model_.numOutputs; ++i) {
    outputs_.push_back(makeTensor(model_.outputs[i]));
    outputPtrs_.push_back(outputs_.back().step());
  }
  // Gradient accumulators, summed by accumulate and read by trainStep; they
  // stay zero when a step has one micro-batch. Like the parameters' pieces.
  if (model_.accumulate || model_.pipeline)
    for (int i = 0, k = 0; i < model_.numParams; ++i)
      if (model_.params[i].trainable) {
        const TensorDesc &grad =
            model_.grads ? model_.grads[k] : model_.params[i].tensor;
        grads_.push_back(makeTensor(mesh_.local(grad), stageHolds(i)));
        gradPtrs_.push_back(stepPointer(grads_.back()));
        ++k;
      }
  if (model_.pipeline) {
    const PipelineDesc &p = *model_.pipeline;
    if (p.axis < 0 || p.axis >= static_cast<int>(mesh_.sizes().size()) ||
        mesh_.sizes()[p.axis] != p.stages)
      throw Error("model '" + std::string(model_.name) + "' runs " +
                  std::to_string(p.stages) + " pipeline stages, but its mesh " +
                  mesh_.describe() +
                  " has no such axis: the executable contradicts itself");
    pipeline_ = std::make_unique<PipelineRunner>(
        model_, comm::meshCoordinate(comm_, p.axis), comm_, mesh_.replica(),
        mesh_.replicas());
  }
  // Positions are the same for every batch.
  if (positionsInput_ >= 0) {
    const TensorDesc &t = model_.inputs[positionsInput_].tensor;
    for (int64_t p = 0; p < t.shape[0]; ++p) {
      if (t.dtype == DType::I32)
        static_cast<int32_t *>(inputs_[positionsInput_].host.get())[p] =
            static_cast<int32_t>(p);
      else
        static_cast<int64_t *>(inputs_[positionsInput_].host.get())[p] = p;
    }
    upload(inputs_[positionsInput_]);
  }
}

Metadata Trainer::loadState(const std::string &path) {
  // Split tensors load straight into this process's pieces (from a sharded
  // checkpoint, only the files that hold parts of them are read); the whole
  // host copies of those stay unset until a gather.
  auto targets = [&](std::vector<Tensor> &tensors) {
    std::vector<LoadTarget> out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      Tensor &t = tensors[i];
      out[i].data = t.desc ? t.piece.get() : t.host.get();
      if (t.desc)
        mesh_.region(*t.desc, rank_, out[i].offset, out[i].shape);
    }
    return out;
  };
  Metadata meta =
      loadCheckpoint(path, model_, targets(params_), targets(state_));
  piecesLoaded_ = true;
  auto get = [&](const char *key) -> std::string {
    auto it = meta.find(key);
    if (it == meta.end())
      throw Error("checkpoint " + path + " lacks metadata \"" + key + "\"");
    return it->second;
  };
  auto count = [&](const char *key) {
    try {
      size_t used = 0;
      std::string text = get(key);
      int64_t value = std::stoll(text, &used);
      if (used != text.size() || value < 0)
        throw std::invalid_argument(key);
      return value;
    } catch (const std::logic_error &) {
      throw Error("checkpoint " + path + " has a bad " + key + " \"" +
                  get(key) + "\"");
    }
  };
  startStep_ = count("step");
  skipped_ = meta.count("skipped_steps") ? count("skipped_steps") : 0;
  return meta;
}

void Trainer::initialise() {
  uint64_t seed = static_cast<uint64_t>(opt_.seed);
  if (!opt_.resume.empty()) {
    std::string path = resolveResumePath(opt_.resume);
    Metadata meta = loadState(path);
    if (meta.count("model") && meta["model"] != model_.name)
      std::fprintf(stderr,
                   "warning: checkpoint %s was written by model '%s', this "
                   "is '%s' (the tensors match)\n",
                   path.c_str(), meta["model"].c_str(), model_.name);
    if (meta.count("batch_size") &&
        meta["batch_size"] != std::to_string(opt_.batchSize))
      std::fprintf(stderr,
                   "warning: checkpoint %s was trained with batch size %s, "
                   "this run uses %lld: the data goes on where it stopped, "
                   "but the steps differ from an uninterrupted run\n",
                   path.c_str(), meta["batch_size"].c_str(),
                   static_cast<long long>(opt_.batchSize));
    if (meta.count("first_loss"))
      firstLoss_ = std::strtof(meta["first_loss"].c_str(), nullptr);
    if (meta.count("first_val_loss"))
      firstValLoss_ = std::strtod(meta["first_val_loss"].c_str(), nullptr);
    if (meta.count("data_position")) {
      // The position counts samples of the whole run, which any mesh reads
      // the same; older checkpoints counted the writer's own units.
      DataPosition position = DataPosition::fromJson(meta["data_position"]);
      if (position.samples < 0) {
        int64_t step = -1, batch = -1;
        if (meta.count("step"))
          step = std::strtoll(meta["step"].c_str(), nullptr, 10);
        if (meta.count("batch_size"))
          batch = std::strtoll(meta["batch_size"].c_str(), nullptr, 10);
        if (step < 0 || batch <= 0)
          throw Error(path + ": its data position " +
                      meta["data_position"] +
                      " is in the writer's units, and the step or batch size "
                      "that would translate it is missing");
        try {
          position = trainTokens_
                         ? trainTokens_->translateLegacy(position, step, batch)
                     : trainClasses_
                         ? trainClasses_->translateLegacy(position, step, batch)
                         : position;
        } catch (const Error &e) {
          throw Error(path + ": " + e.what());
        }
      }
      try {
        if (trainTokens_)
          trainTokens_->setPosition(position);
        if (trainClasses_)
          trainClasses_->setPosition(position);
      } catch (const Error &e) {
        throw Error(path + ": " + e.what());
      }
    }
    if (!opt_.quiet && isRoot())
      std::printf("resumed from %s at step %lld\n", path.c_str(),
                  static_cast<long long>(startStep_));
    return;
  }
  // --init-from holds every parameter but the LoRA adapters, which a base
  // model's weights lack (the loaders check): drawing the others first
  // would be wasted work (seconds at GPT-2 124M).
  std::set<std::string> adapters;
  for (int i = 0; i < model_.numLoras; ++i) {
    adapters.insert(model_.loras[i].a);
    adapters.insert(model_.loras[i].b);
  }
  for (int i = 0; i < model_.numParams; ++i)
    if (opt_.initFrom.empty() || adapters.count(model_.params[i].tensor.name))
      initParam(model_.params[i], hostParams_[i], seed);
  if (opt_.initFrom.empty())
    return;
  if (isHuggingFaceDir(opt_.initFrom)) {
    std::string skipped = loadHuggingFaceParams(opt_.initFrom, model_,
                                                hostParams_.data(), adapters);
    if (!skipped.empty() && !opt_.quiet && isRoot())
      std::printf("%s: skipped tensors that no parameter stands for: %s\n",
                  opt_.initFrom.c_str(), skipped.c_str());
    return;
  }
  std::string ignored;
  loadParams(opt_.initFrom, model_, hostParams_.data(), &ignored, adapters);
  if (!ignored.empty() && !opt_.quiet && isRoot())
    std::fprintf(stderr, "warning: %s: ignored tensors the model lacks: %s\n",
                 opt_.initFrom.c_str(), ignored.c_str());
}

template <typename T>
static void storeInts(const T *src, int64_t count, DType dtype, void *dst) {
  if (dtype == DType::I32) {
    auto *out = static_cast<int32_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int32_t>(src[i]);
  } else {
    auto *out = static_cast<int64_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int64_t>(src[i]);
  }
}

void Trainer::fillTokenInputs(const TokenBatch &batch) {
  const TensorDesc &tokens = model_.inputs[tokensInput_].tensor;
  storeInts(batch.tokens.data(), micro_ * seqLen_, tokens.dtype,
            inputs_[tokensInput_].host.get());
  upload(inputs_[tokensInput_]);
  if (targetsInput_ >= 0) {
    storeInts(batch.targets.data(), micro_ * seqLen_,
              model_.inputs[targetsInput_].tensor.dtype,
              inputs_[targetsInput_].host.get());
    upload(inputs_[targetsInput_]);
  }
}

void Trainer::fillClassInputs(const ClassBatch &batch) {
  storeFloats(batch.features.data(), micro_ * numFeatures_,
              model_.inputs[featuresInput_].tensor.dtype,
              inputs_[featuresInput_].host.get());
  upload(inputs_[featuresInput_]);
  storeInts(batch.labels.data(), micro_,
            model_.inputs[labelsInput_].tensor.dtype,
            inputs_[labelsInput_].host.get());
  upload(inputs_[labelsInput_]);
}

void Trainer::fillInputs(bool train) {
  TraceScope scope(trace_.get(), "batch", "data");
  if (kind_ == DataKind::Tokens)
    fillTokenInputs(train ? trainTokens_->next() : valTokens_->next());
  else if (kind_ == DataKind::Classes)
    fillClassInputs(train ? trainClasses_->next() : valClasses_->next());
}

bool Trainer::drawTrainMicroBatch(int64_t m) {
  // Every rank draws every micro-batch, so the loaders stay in step; data
  // replica d computes micro-batches d, d + D, ...
  if (m % mesh_.replicas() == mesh_.replica()) {
    fillInputs(/*train=*/true);
    return true;
  }
  if (trainTokens_)
    trainTokens_->next();
  else if (trainClasses_)
    trainClasses_->next();
  return false;
}

float Trainer::pipelineStep(int64_t step) {
  StepIO io = makeIO(step - skipped_);
  // The first stage reads the tokens, the last the targets (from the host
  // copies the loader filled).
  for (int64_t m = 0, local = 0; m < globalMicroBatches_; ++m)
    if (drawTrainMicroBatch(m))
      pipeline_->stageInputs(static_cast<int>(local++), hostInputPtrs_.data());
  // The W passes add each micro-batch's part: the sums start at zero.
  for (Tensor &g : grads_) {
    std::memset(g.local(), 0, static_cast<size_t>(g.bytes));
    upload(g);
  }
  double lossSum = pipeline_->runStep(io);
  // The last stage has the loss of each micro-batch, reduced over the data
  // axes already; one of its processes counts it, the others pass zeros.
  bool counts = countsPipelineLoss(/*perReplica=*/false);
  double mean =
      comm::allReduceSum(comm_, counts ? lossSum : 0.0) / microBatches_;
  lastStepLr_ = io.lr;
  lastGradNorm_ = io.gradNorm;
  return static_cast<float>(mean);
}

float Trainer::trainStep(int64_t step) {
  if (pipeline_)
    return pipelineStep(step);
  double lossSum = 0;
  StepIO io = makeIO(step - skipped_);
  int64_t local = 0;
  for (int64_t m = 0; m < globalMicroBatches_; ++m) {
    if (!drawTrainMicroBatch(m))
      continue;
    io.microBatch = static_cast<int32_t>(local);
    io.randomStream = m;
    if (++local < microBatches_)
      model_.accumulate(io);
    else
      model_.trainStep(io);
    lossSum += io.loss;
  }
  // The mean over this replica's micro-batches, then over the replicas
  // (the first process of each counts it: its peers hold the same loss).
  double mean = lossSum / microBatches_;
  if (comm_)
    mean = comm::allReduceSum(comm_, mesh_.leadsReplica() ? mean : 0.0) /
           mesh_.replicas();
  float loss = static_cast<float>(mean);
  lastStepLr_ = io.lr;
  lastGradNorm_ = io.gradNorm;
  return loss;
}

bool Trainer::countsPipelineLoss(bool perReplica) const {
  if (!pipeline_->lastStage())
    return false;
  for (int a = 0; a < model_.numMeshAxes; ++a)
    if (a != model_.pipeline->axis &&
        !(perReplica && model_.mesh[a].splitsBatch) &&
        comm::meshCoordinate(comm_, a) != 0)
      return false;
  return true;
}

EvalResult Trainer::evaluate() {
  EvalResult result;
  int64_t batches = kind_ == DataKind::Tokens ? valTokens_->batchesPerPass()
                                              : valClasses_->batchesPerPass();
  if (opt_.evalBatches > 0)
    batches = std::min(batches, opt_.evalBatches);
  if (valTokens_)
    valTokens_->rewind();
  if (valClasses_)
    valClasses_->rewind();
  // A pipeline's chunks give the loss alone.
  bool accuracy =
      !pipeline_ && kind_ == DataKind::Classes && model_.numOutputs > 0 &&
      model_.outputs[0].dtype == DType::F32 && model_.outputs[0].rank == 2 &&
      model_.outputs[0].shape[0] == micro_;
  TraceScope scope(trace_.get(), "evaluation", "eval");
  double lossSum = 0;
  int64_t rows = 0, correct = 0;
  StepIO io = makeIO(startStep_);
  // The batches are split over the data replicas; each reads its own. A
  // partitioned step communicates inside, so every process takes the same
  // number of steps: whole rounds, one batch per replica.
  const int64_t replicas = mesh_.replicas(), replica = mesh_.replica();
  if (mesh_.hasMesh() && batches >= replicas)
    batches -= batches % replicas;
  for (int64_t b = 0; b < batches; ++b) {
    int64_t valid;
    if (b % replicas != replica) {
      if (valTokens_)
        valTokens_->next();
      else
        valClasses_->next();
      continue;
    }
    const ClassBatch *classBatch = nullptr;
    if (kind_ == DataKind::Tokens) {
      const TokenBatch &batch = valTokens_->next();
      fillTokenInputs(batch);
      valid = batch.validRows;
    } else {
      classBatch = &valClasses_->next();
      fillClassInputs(*classBatch);
      valid = classBatch->validRows;
    }
    if (pipeline_)
      io.loss =
          static_cast<float>(pipeline_->evaluate(io, hostInputPtrs_.data()));
    else
      model_.evalStep(io);
    lossSum += static_cast<double>(io.loss) * valid;
    rows += valid;
    if (accuracy) {
      download(outputs_[0]);
      const float *logits = static_cast<const float *>(outputs_[0].host.get());
      int64_t classes = model_.outputs[0].shape[1];
      for (int64_t r = 0; r < valid; ++r) {
        const float *row = logits + r * classes;
        int64_t best = std::max_element(row, row + classes) - row;
        correct += best == classBatch->labels[r];
      }
    }
  }
  if (comm_) {
    // The first process of each replica counts it (a pipeline's, on the
    // last stage).
    bool counts = pipeline_ ? countsPipelineLoss(/*perReplica=*/true)
                            : mesh_.leadsReplica();
    lossSum = comm::allReduceSum(comm_, counts ? lossSum : 0.0);
    rows = static_cast<int64_t>(
        comm::allReduceSum(comm_, counts ? double(rows) : 0.0));
    correct = static_cast<int64_t>(
        comm::allReduceSum(comm_, counts ? double(correct) : 0.0));
  }
  result.loss = rows ? lossSum / rows : NAN;
  if (accuracy && rows)
    result.accuracy = static_cast<double>(correct) / rows;
  return result;
}

//===----------------------------------------------------------------------===//
// Bad steps (--on-nonfinite, --loss-spike)
//===----------------------------------------------------------------------===//

/// Steps of good losses --loss-spike compares with, and how many it needs.
constexpr size_t kSpikeWindow = 50, kSpikeMinimum = 5;

std::string Trainer::badStep(float loss) const {
  if (!std::isfinite(loss))
    return "the training loss is " + formatFloat(loss);
  if (!std::isfinite(lastGradNorm_))
    return "the gradient norm is " + formatFloat(lastGradNorm_);
  if (opt_.lossSpike > 0 && recentLosses_.size() >= kSpikeMinimum) {
    std::vector<float> sorted = recentLosses_;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                     sorted.end());
    float median = sorted[sorted.size() / 2];
    if (loss > opt_.lossSpike * median)
      return "the training loss " + formatFloat(loss) + " is over " +
             formatDouble(opt_.lossSpike) + " x the median " +
             formatFloat(median) + " of the last " +
             std::to_string(recentLosses_.size()) + " steps (--loss-spike)";
  }
  return "";
}

void Trainer::takeSnapshot() {
  snapshot_.resize(params_.size() + state_.size());
  size_t i = 0;
  for (auto *list : {&params_, &state_})
    for (Tensor &t : *list) {
      download(t);
      const char *bytes = static_cast<const char *>(t.local());
      snapshot_[i++].assign(bytes, bytes + t.bytes);
    }
}

void Trainer::restoreSnapshot() {
  size_t i = 0;
  for (auto *list : {&params_, &state_})
    for (Tensor &t : *list) {
      std::memcpy(t.local(), snapshot_[i++].data(), t.bytes);
      if (t.device && t.bytes)
        device_->upload(t.device, t.local(), t.bytes);
    }
}

void Trainer::injectBadStep() {
  // The last parameter (an output bias or norm, in the models we know): a
  // NaN there reaches the loss, where one in an early layer may not (a
  // ReLU turns it into 0).
  if (params_.empty() || !params_.back().bytes)
    return;
  Tensor &t = params_.back();
  download(t);
  if (opt_.injectKind == "nan") {
    std::memset(t.local(), 0xff, t.bytes); // all ones: NaN in f32 and bf16
  } else {
    const TensorDesc &desc = t.desc ? *t.desc : model_.params[model_.numParams - 1].tensor;
    if (desc.dtype != DType::F32)
      throw Error("--inject-bad-step=...:spike needs an f32 last parameter, " +
                  std::string(desc.name) + " is not");
    float *values = static_cast<float *>(t.local());
    for (int64_t k = 0; k < t.bytes / 4; ++k)
      values[k] = k % 2 ? -30.0f : 30.0f;
  }
  if (t.device)
    device_->upload(t.device, t.local(), t.bytes);
}

std::string Trainer::rollBack(int64_t step, const std::string &why) {
  if (opt_.checkpointDir.empty())
    throw Error(why + " at step " + std::to_string(step) +
                ", and --on-nonfinite=rollback has no --checkpoint-dir to "
                "roll back to");
  finishAsyncCheckpoint(/*wait=*/true);
  if (++rollbacks_ > opt_.maxRollbacks)
    throw Error(why + " at step " + std::to_string(step) + " after " +
                std::to_string(opt_.maxRollbacks) +
                " rollbacks (--max-rollbacks): giving up");
  std::string path;
  try {
    path = resolveResumePath(opt_.checkpointDir);
  } catch (const Error &e) {
    throw Error(why + " at step " + std::to_string(step) +
                ", and there is no checkpoint to roll back to yet: " +
                e.what());
  }
  // The data stays where it is: past the batches that gave the bad step
  // (and those since the checkpoint), as large runs skip the batches around
  // a loss spike.
  DataPosition data = trainTokens_    ? trainTokens_->position()
                      : trainClasses_ ? trainClasses_->position()
                                      : DataPosition();
  loadState(path);
  uploadModelState();
  if (trainTokens_)
    trainTokens_->setPosition(data);
  if (trainClasses_)
    trainClasses_->setPosition(data);
  recentLosses_.clear();
  return path;
}

void Trainer::logEvent(int64_t step, const char *kind, const std::string &what,
                       float loss) {
  if (log_.isOpen())
    log_.write({{"step", step}, {kind, what}, {"bad_loss", jsonFloat(loss)}});
  if (isRoot())
    std::fprintf(stderr, "step %lld %s: %s\n", static_cast<long long>(step),
                 kind, what.c_str());
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

Metadata Trainer::checkpointMetadata(int64_t step) const {
  Metadata meta;
  meta["step"] = std::to_string(step);
  meta["skipped_steps"] = std::to_string(skipped_);
  meta["seed"] = std::to_string(opt_.seed);
  meta["batch_size"] = std::to_string(opt_.batchSize);
  if (trainTokens_)
    meta["data_position"] = trainTokens_->position().toJson();
  if (trainClasses_)
    meta["data_position"] = trainClasses_->position().toJson();
  if (std::isfinite(firstLoss_))
    meta["first_loss"] = formatFloat(firstLoss_);
  if (std::isfinite(firstValLoss_))
    meta["first_val_loss"] = formatDouble(firstValLoss_);
  return meta;
}

void Trainer::saveTo(const std::string &path, int64_t step) {
  Metadata meta = checkpointMetadata(step);
  // The tensors are whole (gatherModelState put the pieces together); the
  // mesh and the splits they had are recorded, for people: any mesh loads
  // them.
  meta["sharding"] = mesh_.hasMesh()
                         ? mesh_.metadataJson(model_)
                         : "{\"world_size\":" + std::to_string(world_) +
                               ",\"rank\":0,\"layout\":\"replicated\"}";
  tgc::saveCheckpoint(path, model_, hostParams_.data(), hostState_.data(),
                      meta);
}

void Trainer::saveFinalTo(const std::string &path, int64_t step) {
  if (!opt_.mergeLora && opt_.saveFormat == "tgc")
    return saveTo(path, step);
  if (!opt_.mergeLora) {
    saveHuggingFace(path, model_, hostParams_.data(),
                    readHfConfig(opt_.hfConfig), opt_.maxShardSize);
    return;
  }
  MergedParams merged = mergeLoraAdapters(model_, hostParams_.data());
  ModelDesc base = model_;
  base.numParams = static_cast<int32_t>(merged.params.size());
  base.params = merged.params.data();
  base.numState = 0;
  base.state = nullptr;
  if (opt_.saveFormat == "hf") {
    saveHuggingFace(path, base, merged.data.data(), readHfConfig(opt_.hfConfig),
                    opt_.maxShardSize);
    return;
  }
  Metadata meta = checkpointMetadata(step);
  meta["lora"] = "merged";
  tgc::saveCheckpoint(path, base, merged.data.data(), nullptr, meta);
}

bool Trainer::shardedCheckpoints() const {
  if (!opt_.checkpointLayout.empty())
    return opt_.checkpointLayout == "sharded";
  return world_ > 1;
}

std::string Trainer::saveCheckpoint(int64_t step) {
  // A write in flight comes first: checkpoints land in step order.
  finishAsyncCheckpoint(/*wait=*/true);
  syncPipelineState();
  auto start = std::chrono::steady_clock::now();
  std::string path;
  if (shardedCheckpoints()) {
    path = saveShardedCheckpoint(step);
  } else {
    // Every rank sends its pieces of split tensors; rank 0 writes.
    gatherModelState();
    path = checkpointPath(opt_.checkpointDir, step);
    if (isRoot()) {
      TraceScope scope(trace_.get(), "checkpoint", "checkpoint");
      saveTo(path, step);
    }
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  checkpointWritten(step, path, ms, /*async=*/false);
  return path;
}

void Trainer::checkpointWritten(int64_t step, const std::string &path,
                                double stallMs, bool async) {
  if (!isRoot())
    return;
  if (log_.isOpen())
    log_.write({{"step", step},
                {"checkpoint", path},
                // The time the training loop stood still for it: the whole
                // write, or only the snapshot when asynchronous.
                {"checkpoint_stall_ms", stallMs},
                {"checkpoint_async", async}});
  progress_->message("step " + std::to_string(step) + ": checkpoint " + path);
  pruneCheckpoints();
}

std::vector<std::pair<const void *, int64_t>>
Trainer::snapshotSources(bool sharded) const {
  std::vector<std::pair<const void *, int64_t>> sources;
  if (sharded) {
    for (auto *list : {&params_, &state_})
      for (const Tensor &t : *list)
        sources.emplace_back(t.local(), t.bytes);
    return sources;
  }
  for (int i = 0; i < model_.numParams; ++i) {
    const TensorDesc &t = model_.params[i].tensor;
    sources.emplace_back(hostParams_[i], numElements(t) * dtypeSize(t.dtype));
  }
  for (int i = 0; i < model_.numState; ++i) {
    const TensorDesc &t = model_.state[i].tensor;
    sources.emplace_back(hostState_[i], numElements(t) * dtypeSize(t.dtype));
  }
  return sources;
}

void Trainer::prepareSnapshotBuffers(bool sharded) {
  auto sources = snapshotSources(sharded);
  snapshotBuffers_.resize(sources.size());
  // resize writes every byte: the pages are the process's from here on,
  // and a snapshot is a copy, not a copy and a page fault per 4 KiB.
  for (size_t i = 0; i < sources.size(); ++i)
    snapshotBuffers_[i].resize(static_cast<size_t>(sources[i].second));
}

void Trainer::copySnapshot(bool sharded) {
  // Sized before the first step (prepareSnapshotBuffers); the layout of a
  // process's state does not change during a run.
  if (snapshotBuffers_.empty())
    prepareSnapshotBuffers(sharded);
  auto sources = snapshotSources(sharded);
  // Chunks of 4 MiB over the threads: one core's memcpy does not saturate
  // memory bandwidth.
  constexpr int64_t kChunk = int64_t(4) << 20;
  std::vector<std::tuple<char *, const char *, int64_t>> chunks;
  for (size_t i = 0; i < sources.size(); ++i) {
    const char *from = static_cast<const char *>(sources[i].first);
    char *to = snapshotBuffers_[i].data();
    for (int64_t at = 0; at < sources[i].second; at += kChunk)
      chunks.emplace_back(to + at, from + at,
                          std::min(kChunk, sources[i].second - at));
  }
  int64_t n = static_cast<int64_t>(chunks.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < n; ++c)
    std::memcpy(std::get<0>(chunks[c]), std::get<1>(chunks[c]),
                static_cast<size_t>(std::get<2>(chunks[c])));
}

std::string Trainer::startAsyncCheckpoint(int64_t step) {
  // The stall counts the wait for a write still in flight (checkpoints
  // closer together than a write takes) as well as the snapshot.
  auto start = std::chrono::steady_clock::now();
  finishAsyncCheckpoint(/*wait=*/true);
  syncPipelineState();
  TraceScope scope(trace_.get(), "checkpoint snapshot", "checkpoint");
  auto p = std::make_unique<PendingCheckpoint>();
  p->step = step;
  p->sharded = shardedCheckpoints();
  if (p->sharded) {
    downloadModelState();
    p->partial = partialCheckpointPath(opt_.checkpointDir, step);
    p->path = shardedCheckpointPath(opt_.checkpointDir, step);
    if (checkpointLayout_.tensors.empty())
      checkpointLayout_ = mesh_.checkpointLayout(model_);
    copySnapshot(p->sharded);
    p->meta = checkpointMetadata(step);
    checkpointStage(false, p->path,
                    [&] { preparePartialCheckpoint(p->partial); });
  } else {
    gatherModelState();
    p->path = checkpointPath(opt_.checkpointDir, step);
    if (isRoot()) {
      copySnapshot(p->sharded);
      p->meta = checkpointMetadata(step);
      p->meta["sharding"] =
          mesh_.hasMesh() ? mesh_.metadataJson(model_)
                          : "{\"world_size\":" + std::to_string(world_) +
                                ",\"rank\":0,\"layout\":\"replicated\"}";
    }
  }
  p->stallMs = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - start)
                   .count();
  PendingCheckpoint *raw = p.get();
  if (p->sharded || isRoot()) {
    raw->writer = std::thread([this, raw] {
      try {
        std::vector<void *> pointers;
        for (auto &c : snapshotBuffers_)
          pointers.push_back(c.data());
        if (raw->sharded) {
          std::vector<const void *> local(pointers.begin(), pointers.end());
          writeCheckpointShard(raw->partial, checkpointLayout_, rank_, local,
                               model_.name);
        } else {
          tgc::saveCheckpoint(raw->path, model_, pointers.data(),
                              pointers.data() + model_.numParams, raw->meta);
        }
      } catch (const Error &e) {
        raw->failure = e.what();
      } catch (const std::bad_alloc &) {
        raw->failure = "out of memory writing checkpoint " + raw->path;
      }
      raw->done.store(true, std::memory_order_release);
    });
  } else {
    raw->done.store(true, std::memory_order_release);
  }
  pending_ = std::move(p);
  return raw->path;
}

bool Trainer::finishAsyncCheckpoint(bool wait) {
  if (!pending_)
    return true;
  PendingCheckpoint &p = *pending_;
  bool mine = p.done.load(std::memory_order_acquire);
  if (!wait) {
    // A sharded checkpoint is whole when every rank's part is: they agree
    // (a collective every rank makes at the same step boundaries).
    bool all = mine;
    if (p.sharded)
      all = comm::allReduceSum(comm_, mine ? 0.0 : 1.0) == 0;
    if (!all)
      return false;
  }
  if (p.writer.joinable())
    p.writer.join();
  std::unique_ptr<PendingCheckpoint> owned = std::move(pending_);
  if (p.sharded) {
    checkpointStage(true, p.path, [&] {
      if (!p.failure.empty())
        throw Error(p.failure);
    });
    checkpointStage(false, p.path, [&] {
      commitShardedCheckpoint(p.partial, p.path, checkpointLayout_,
                              model_.name, p.meta);
    });
  } else if (!p.failure.empty()) {
    throw Error(p.failure);
  }
  checkpointWritten(p.step, p.path, p.stallMs, /*async=*/true);
  return true;
}

std::string Trainer::saveShardedCheckpoint(int64_t step) {
  downloadModelState();
  TraceScope scope(trace_.get(), "checkpoint", "checkpoint");
  std::string partial = partialCheckpointPath(opt_.checkpointDir, step);
  std::string target = shardedCheckpointPath(opt_.checkpointDir, step);
  // Which rank writes which piece: the same at every save.
  if (checkpointLayout_.tensors.empty())
    checkpointLayout_ = mesh_.checkpointLayout(model_);
  const ShardedLayout &layout = checkpointLayout_;
  // Three stages: rank 0 empties the partial directory, every rank writes
  // its pieces there, rank 0 writes the index and renames the directory.
  checkpointStage(false, target, [&] { preparePartialCheckpoint(partial); });
  checkpointStage(true, target, [&] {
    std::vector<const void *> local;
    for (const Tensor &t : params_)
      local.push_back(t.local());
    for (const Tensor &t : state_)
      local.push_back(t.local());
    writeCheckpointShard(partial, layout, rank_, local, model_.name);
  });
  checkpointStage(false, target, [&] {
    commitShardedCheckpoint(partial, target, layout, model_.name,
                            checkpointMetadata(step));
  });
  return target;
}

void Trainer::checkpointStage(bool everyRank, const std::string &target,
                              const std::function<void()> &work) {
  // After each stage every rank learns whether one failed, so they stop
  // together (the failed rank with its own message) instead of waiting for
  // it.
  std::string failure;
  if (everyRank || isRoot()) {
    try {
      work();
    } catch (const Error &error) {
      failure = error.what();
    }
  }
  double failed = comm::allReduceSum(comm_, failure.empty() ? 0.0 : 1.0);
  if (!failure.empty())
    throw Error(failure);
  if (failed > 0)
    throw Error("checkpoint " + target + " not written: another rank " +
                "failed (its error says why)");
}

/// Keeps the newest --keep-checkpoints checkpoints of the checkpoint
/// directory (files and sharded directories alike).
void Trainer::pruneCheckpoints() {
  if (opt_.keepCheckpoints <= 0)
    return;
  std::vector<std::pair<int64_t, std::string>> found;
  try {
    found = listCheckpoints(opt_.checkpointDir);
  } catch (const Error &) {
    return;
  }
  for (size_t i = 0; i + opt_.keepCheckpoints < found.size(); ++i) {
    const std::string &path = found[i].second;
    if (isShardedCheckpoint(path))
      removeShardedCheckpoint(path);
    else
      std::remove(path.c_str());
  }
}

/// --dump-grads: the loss and every trainable parameter's gradient on the
/// first training batch, as safetensors ("loss" and the parameter names).
void Trainer::dumpGrads() {
  if (model_.pipeline)
    throw Error("--dump-grads computes one process's gradients of the whole "
                "step, which a pipelined executable runs as stages; compile "
                "the model without pipeline stages for it");
  if (world_ > 1)
    throw Error("--dump-grads computes one process's gradients; run it "
                "without a launcher");
  std::vector<Tensor> grads;
  std::vector<TensorToWrite> tensors;
  gradPtrs_.clear();
  for (int i = 0; i < model_.numParams; ++i) {
    const ParamDesc &param = model_.params[i];
    if (!param.trainable)
      continue;
    grads.push_back(makeTensor(param.tensor));
    gradPtrs_.push_back(grads.back().step());
    // In the file shape, as PyTorch's gradient of the parameter is.
    tensors.push_back({param.tensor.name, param.tensor.dtype,
                       fileShapeOf(param.tensor), grads.back().host.get()});
  }
  fillInputs(/*train=*/true);
  StepIO io = makeIO(startStep_ + 1);
  io.grads = gradPtrs_.data();
  io.microBatch = 0;
  model_.gradStep(io);
  if (device_) {
    device_->synchronize();
    for (Tensor &t : grads)
      download(t);
  }
  float loss = io.loss;
  tensors.insert(tensors.begin(), {"loss", DType::F32, {}, &loss});
  Metadata meta;
  meta["model"] = model_.name;
  meta["step"] = std::to_string(startStep_);
  writeSafetensors(opt_.dumpGrads, tensors, meta);
  gradPtrs_.clear();
  if (device_)
    for (Tensor &t : grads)
      device_->release(t.device);
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

void Trainer::finalLines() {
  if (!isRoot())
    return;
  if (!std::isnan(lastValLoss_) && !opt_.quiet) {
    if (lastAccuracy_ >= 0)
      std::printf("accuracy: %.3f\n", lastAccuracy_);
    std::printf("val_loss: %.4f -> %.4f\n", firstValLoss_, lastValLoss_);
  }
  if (!std::isnan(lastLoss_) && !opt_.quiet)
    std::printf("train_loss: %.4f -> %.4f\n", firstLoss_, lastLoss_);
  std::fflush(stdout);
}

int Trainer::run() {
  threads_ = static_cast<int32_t>(opt_.threads > 0 ? opt_.threads
                                                   : omp_get_max_threads());
  omp_set_num_threads(threads_);
  if (!opt_.profile.empty())
    trace_ = std::make_unique<Trace>(rank_);
  // The step's collectives run over the mesh's axes.
  if (mesh_.hasMesh())
    comm::setMesh(comm_, mesh_.sizes());
  selectDevice();
  checkModel();
  setUpData();
  setUpBuffers();
  if (!opt_.checkpointDir.empty() && isRoot())
    prepareCheckpointDir(opt_.checkpointDir);
  initialise();
  uploadModelState();
  if (!opt_.dumpGrads.empty()) {
    dumpGrads();
    return 0;
  }
  if (startStep_ >= opt_.steps) {
    if (!opt_.quiet && isRoot())
      std::printf("nothing to do: the run is at step %lld of --steps %lld\n",
                  static_cast<long long>(startStep_),
                  static_cast<long long>(opt_.steps));
    if (!opt_.saveFinal.empty()) {
      gatherModelState();
      if (isRoot())
        saveFinalTo(opt_.saveFinal, startStep_);
    }
    return 0;
  }
  if (!opt_.log.empty() && isRoot()) {
    log_.open(opt_.log, /*append=*/startStep_ > 0);
    if (startStep_ == 0 && model_.arenaBytes > 0)
      log_.write({{"arena_bytes", model_.arenaBytes}});
  }
  if (isRoot() && !opt_.quiet && model_.arenaBytes > 0)
    std::printf("arena: %.2f MB for the step's buffers%s, as tgc planned it\n",
                model_.arenaBytes / 1e6, mesh_.hasMesh() ? " per rank" : "");
  if (pipeline_ && isRoot() && !opt_.quiet) {
    // What each stage holds between its functions: a set of slots per
    // micro-batch.
    const PipelineDesc &p = *model_.pipeline;
    std::string held;
    for (int s = 0; s < p.stages; ++s)
      held += (s ? ", " : "") + std::to_string(pipeline_->slotBytes(s) / 1000) +
              " kB";
    std::printf("pipeline: %d stages (%d chunks each), schedule %s, %d "
                "micro-batches; slots per stage %s\n",
                p.stages, p.virtualStages, p.schedule, p.microBatches,
                held.c_str());
    if (device_) {
      // This process's pieces of what each stage's device holds.
      std::vector<int64_t> bytes(p.stages, 0);
      auto add = [&](int param, const Tensor &t) {
        for (int s = 0; s < p.stages; ++s)
          if (stageHolds(param, s))
            bytes[s] += t.bytes;
      };
      for (int i = 0, k = 0; i < model_.numParams; ++i) {
        add(i, params_[i]);
        if (model_.params[i].trainable && k < (int)grads_.size())
          add(i, grads_[k++]);
      }
      for (int i = 0; i < model_.numState; ++i)
        if (int param = paramOfState(i); param >= 0)
          add(param, state_[i]);
      int64_t whole = 0;
      for (auto *list : {&params_, &state_, &grads_})
        for (const Tensor &t : *list)
          whole += t.bytes;
      std::string text;
      for (int s = 0; s < p.stages; ++s)
        text += (s ? ", " : "") + std::to_string(bytes[s] / 1000) + " kB";
      std::printf("pipeline: each stage's device holds its parameters, "
                  "optimizer state and gradient sums: %s (of %lld kB)\n",
                  text.c_str(), (long long)(whole / 1000));
    }
  }
  if (isRoot() && !opt_.quiet && mesh_.hasMesh())
    std::printf("batch: micro-batch %lld x %lld accumulated x %lld data "
                "replicas = %lld per step (mesh %s, %d process%s)\n",
                (long long)micro_, (long long)microBatches_,
                (long long)mesh_.replicas(),
                (long long)(micro_ * microBatches_ * mesh_.replicas()),
                mesh_.describe().c_str(), world_, world_ == 1 ? "" : "es");
  else if (isRoot() && !opt_.quiet)
    std::printf("batch: micro-batch %lld x %lld accumulated x %d processes "
                "= %lld per step\n",
                (long long)micro_, (long long)microBatches_, world_,
                (long long)(micro_ * microBatches_ * world_));
  if (std::string note = blasKernelsNote();
      isRoot() && !opt_.quiet && !note.empty())
    std::printf("blas: %s\n", note.c_str());
  bool tokens = kind_ == DataKind::Tokens;
  progress_ = std::make_unique<ProgressReporter>(
      opt_.steps, startStep_ + 1, opt_.quiet || !isRoot(), opt_.printEvery,
      tokens ? "tok/s" : "samples/s");
  // The asynchronous checkpoints' snapshot buffers, before the first step
  // (a write is a consolidated file on the root, or every rank's part).
  if (opt_.checkpointAsync && !opt_.checkpointDir.empty() &&
      opt_.checkpointEvery > 0 && (shardedCheckpoints() || isRoot()))
    prepareSnapshotBuffers(shardedCheckpoints());
  bool validate = valTokens_ || valClasses_;
  auto runEval = [&](int64_t step) {
    EvalResult r = evaluate();
    if (!std::isfinite(r.loss))
      throw Error("the validation loss on " + opt_.valData + " is " +
                  formatFloat(static_cast<float>(r.loss)) + " at step " +
                  std::to_string(step) +
                  (step == 0 ? " (before training: check the data and the "
                               "initial weights)"
                             : " (lower --lr?)"));
    if (std::isnan(firstValLoss_))
      firstValLoss_ = r.loss;
    lastValLoss_ = r.loss;
    lastAccuracy_ = r.accuracy;
    Json entry = {{"step", step}, {"val_loss", r.loss}};
    std::string line = "step " + std::to_string(step) +
                       ": val_loss " + formatFloat(static_cast<float>(r.loss));
    if (r.accuracy >= 0) {
      entry["val_accuracy"] = r.accuracy;
      line += ", val_accuracy " +
              formatFloat(static_cast<float>(r.accuracy));
    }
    if (log_.isOpen())
      log_.write(entry);
    progress_->message(line);
  };
  if (validate && startStep_ == 0)
    runEval(0);

  // Model FLOP utilisation on a device: the model's FLOPs per micro-batch
  // over this device's share of the step time and its peak.
  double peak = device_ ? device_->peakFlops() : 0;
  bool mfu = peak > 0 && model_.flopsPerStep > 0;
  StopSignalScope signals;
  int64_t perStep = opt_.batchSize * (tokens ? seqLen_ : 1);
  auto start = std::chrono::steady_clock::now();
  auto last = start;
  int64_t step = startStep_;
  bool stopped = false;
  while (step < opt_.steps) {
    if (stopRequested()) {
      stopped = true;
      break;
    }
    ++step;
    ++stepsRun_;
    if (opt_.onNonfinite == "skip")
      takeSnapshot();
    if (std::find(opt_.injectAt.begin(), opt_.injectAt.end(), stepsRun_) !=
        opt_.injectAt.end())
      injectBadStep();
    float loss;
    {
      TraceScope scope(trace_.get(), "train step", "step");
      loss = trainStep(step);
    }
    // Every rank sees the same loss and gradient norm (both are reduced
    // over the mesh), so every rank takes the same branch.
    std::string bad = badStep(loss);
    if (!bad.empty()) {
      if (opt_.onNonfinite == "skip") {
        restoreSnapshot();
        ++skipped_;
        logEvent(step, "skipped",
                 bad + "; the parameters and optimizer state are those "
                       "before it, the data moves on",
                 loss);
        continue;
      }
      if (opt_.onNonfinite == "rollback") {
        std::string path = rollBack(step, bad);
        logEvent(step, "rollback",
                 bad + "; back to " + path + " (step " +
                     std::to_string(startStep_) +
                     "), past the batches since then",
                 loss);
        step = startStep_;
        continue;
      }
      throw Error(bad + " at step " + std::to_string(step) +
                  (std::isfinite(loss) ? "" : " (lower --lr?)") +
                  "; --on-nonfinite=skip or rollback goes on past such steps");
    }
    recentLosses_.push_back(loss);
    if (recentLosses_.size() > kSpikeWindow)
      recentLosses_.erase(recentLosses_.begin());
    auto now = std::chrono::steady_clock::now();
    double stepSeconds = std::chrono::duration<double>(now - last).count();
    double elapsed = std::chrono::duration<double>(now - start).count();
    last = now;
    if (std::isnan(firstLoss_))
      firstLoss_ = loss;
    lastLoss_ = loss;
    double throughput = stepSeconds > 0 ? perStep / stepSeconds : 0;
    if (log_.isOpen()) {
      Json entry = {{"step", step},
                    {"loss", jsonFloat(loss)},
                    {"lr", jsonFloat(lastStepLr_)},
                    {"grad_norm", jsonFloat(lastGradNorm_)},
                    {tokens ? "tokens_per_s" : "samples_per_s", throughput}};
      if (mfu && stepSeconds > 0)
        entry["mfu"] = model_.flopsPerStep * microBatches_ / stepSeconds / peak;
      entry["step_ms"] = stepSeconds * 1e3;
      entry["time"] = elapsed;
      log_.write(entry);
    }
    progress_->step(step, loss, throughput, elapsed);
    if (validate && opt_.evalEvery > 0 && step % opt_.evalEvery == 0 &&
        step < opt_.steps)
      runEval(step);
    // A write in flight finishes at the first step boundary after it is
    // on disk everywhere.
    finishAsyncCheckpoint(/*wait=*/false);
    if (!opt_.checkpointDir.empty() && opt_.checkpointEvery > 0 &&
        step % opt_.checkpointEvery == 0 && step < opt_.steps) {
      if (opt_.checkpointAsync)
        startAsyncCheckpoint(step);
      else
        saveCheckpoint(step);
    }
  }
  // Interrupted runs exit with 128 + the signal, as a shell reports a
  // process the signal killed, so a scheduler can tell them from finished
  // ones (another rank's signal counts as SIGTERM).
  int interruptedBy = stopSignal == SIGINT ? SIGINT : SIGTERM;
  std::string interruption;
  if (stopped) {
    interruption = std::string("interrupted by ") +
                   (stopSignal == SIGINT    ? "SIGINT"
                    : stopSignal == SIGTERM ? "SIGTERM"
                                            : "another rank's signal") +
                   " at step " + std::to_string(step) + " of " +
                   std::to_string(opt_.steps) + "; ";
    if (!opt_.checkpointDir.empty()) {
      interruption += "checkpoint " + saveCheckpoint(step) +
                      " (continue with --resume " + opt_.checkpointDir + ")";
    } else {
      interruption += "no --checkpoint-dir: the run's state is not saved";
    }
  } else {
    if (validate)
      runEval(step);
    if (!opt_.checkpointDir.empty())
      saveCheckpoint(step);
    if (!opt_.saveFinal.empty()) {
      gatherModelState();
      if (isRoot())
        saveFinalTo(opt_.saveFinal, step);
    }
  }
  progress_->finish();
  if (trace_) {
    std::string path = opt_.profile;
    if (rank_ > 0)
      path += ".rank" + std::to_string(rank_);
    trace_->write(path);
    if (!opt_.quiet)
      std::printf("profile: %s (%zu events)\n", path.c_str(), trace_->size());
  }
  if (stopped) {
    if (isRoot())
      std::fprintf(stderr, "%s\n", interruption.c_str());
    return 128 + interruptedBy;
  }
  finalLines();
  return 0;
}

} // namespace

int runTraining(const ModelDesc &model, int argc, char **argv) {
  // OpenBLAS's kernels for this CPU, before anything else runs (the
  // executable may start itself again).
  if (!model.device)
    chooseBlasKernels(argv);
  // A file-size limit is a failed write like a full disk (an error, the
  // previous checkpoint kept), not a kill.
  std::signal(SIGXFSZ, SIG_IGN);
  Options opt;
  opt.steps = model.defaults.steps > 0 ? model.defaults.steps : 100;
  // The default global batch: the compiled micro-batch on every data
  // replica of the mesh, times the model's accumulation.
  int64_t replicas = 1;
  for (int a = 0; a < model.numMeshAxes; ++a)
    if (model.mesh[a].splitsBatch)
      replicas *= model.mesh[a].size;
  opt.batchSize = model.defaults.batchSize * replicas *
                  std::max<int64_t>(1, model.defaults.gradAccum);
  opt.seed = model.defaults.seed;
  opt.lr = model.defaults.lr;
  opt.evalBatches = 0;
  Communicator *comm = nullptr;
  std::string failure;
  FlagParser flags(argv[0]);
  flags.addString("data", &opt.data, "PATH",
                  "training data: token shards (.bin; a glob or a comma list) "
                  "or a classification file (.tgcls)");
  flags.addString("val-data", &opt.valData, "PATH",
                  "validation data, same format as --data");
  flags.addInt("steps", &opt.steps, "optimizer steps to train for");
  flags.addInt("batch-size", &opt.batchSize,
               "samples per optimizer step (a multiple of the compiled "
               "micro-batch; more means gradient accumulation)");
  flags.addInt("seq-len", &opt.seqLen,
               "sequence length (must equal the compiled one; 0: compiled)");
  flags.addFloat("lr", &opt.lr, "base learning rate (the schedule scales it)");
  flags.addInt("seed", &opt.seed,
               "seed for parameter initialisation and data order");
  flags.addInt("eval-every", &opt.evalEvery,
               "evaluate on --val-data every N steps (0: at the start and "
               "the end only)");
  flags.addInt("eval-batches", &opt.evalBatches,
               "micro-batches per evaluation (0: the whole validation set)");
  flags.addString("checkpoint-dir", &opt.checkpointDir, "DIR",
                  "write checkpoints (safetensors) here");
  flags.addString("checkpoint-layout", &opt.checkpointLayout, "LAYOUT",
                  "sharded (every process writes its pieces, plus an index; "
                  "the default on several processes) or consolidated (one "
                  "file of whole tensors; the default on one)");
  flags.addBool("checkpoint-async", &opt.checkpointAsync,
                "checkpoints during the run (--checkpoint-every) snapshot "
                "the state into host memory at the step boundary and are "
                "written by a background thread while training goes on (at "
                "most one in flight); each appears whole or not at all");
  flags.addInt("checkpoint-every", &opt.checkpointEvery,
               "checkpoint every N steps (0: at the end only)");
  flags.addInt("keep-checkpoints", &opt.keepCheckpoints,
               "keep the newest N checkpoints (0: all)");
  flags.addString("resume", &opt.resume, "PATH",
                  "continue from a checkpoint (a file or a sharded "
                  "checkpoint's directory, written on any mesh), or the "
                  "newest in a --checkpoint-dir");
  flags.addString("init-from", &opt.initFrom, "PATH",
                  "initial parameters from a safetensors file or a sharded "
                  "checkpoint (by name)");
  flags.addString("save-final", &opt.saveFinal, "PATH",
                  "write the final parameters and state here (a file; a "
                  "directory with --format=hf)");
  flags.addString("format", &opt.saveFormat, "FORMAT",
                  "--save-final's layout: tgc (a checkpoint: parameters and "
                  "optimizer state under our names) or hf (a Hugging Face "
                  "model directory: config.json and model.safetensors, or "
                  "shards and their index, with Hugging Face's names and "
                  "layouts; parameters only)");
  flags.addString("hf-config", &opt.hfConfig, "FILE",
                  "the config.json that --format=hf writes beside the "
                  "weights (default: --init-from's, when that is a Hugging "
                  "Face directory)");
  flags.addInt("max-shard-size", &opt.maxShardSize,
               "--format=hf: the most bytes of one weights file; more go "
               "into numbered shards and model.safetensors.index.json "
               "(Hugging Face's default, 5000000000)");
  flags.addBool("merge-lora", &opt.mergeLora,
                "with --save-final: fold the LoRA adapters (tgc --lora) into "
                "their weights, W + scale * A @ B, and save the base model's "
                "parameters alone");
  flags.addString("log", &opt.log, "FILE",
                  "JSON Lines metrics log (step, loss, lr, grad norm, "
                  "throughput, time)");
  flags.addString("dump-grads", &opt.dumpGrads, "FILE",
                  "compute the loss and gradients on one batch, write them "
                  "as safetensors and exit");
  flags.addBool("no-shuffle", &opt.noShuffle,
                "train on the data in file order (windows of --seq-len "
                "tokens, or rows) instead of a seeded shuffle");
  flags.addString("on-nonfinite", &opt.onNonfinite, "MODE",
                  "a step whose loss or gradient norm is not finite (or, with "
                  "--loss-spike, spikes): stop (the default), skip it (no "
                  "update; the optimizer state and LR schedule stay, the data "
                  "moves on) or rollback (to the newest checkpoint in "
                  "--checkpoint-dir, past the batches since then)");
  flags.addFloat("loss-spike", &opt.lossSpike,
                 "a loss above FACTOR (> 1) times the median of the last 50 "
                 "steps is a bad step (0: off)");
  flags.addInt("max-rollbacks", &opt.maxRollbacks,
               "--on-nonfinite=rollback gives up after N rollbacks");
  std::string injectBadStep;
  flags.addString("inject-bad-step", &injectBadStep, "K[,K...][:nan|:spike]",
                  "for tests: spoil the last parameter before the K-th step "
                  "this process runs (nan, the default, or spike: +-30)");
  flags.addInt("threads", &opt.threads, "CPU threads (0: all cores)");
  if (model.device) {
    flags.addInt("device", &opt.device,
                 "GPU to train on (-1: the local rank's, or 0)");
    flags.addBool("cuda-graph", &opt.cudaGraph,
                  "capture the step in a CUDA graph and replay it");
  }
  flags.addString("rendezvous", &opt.rendezvous, "FILE",
                  "with RANK/WORLD_SIZE set (torchrun style): the file on a "
                  "shared file system through which the processes meet "
                  "(default: $TGC_RENDEZVOUS)");
  flags.addString("profile", &opt.profile, "FILE",
                  "write a Chrome trace (chrome://tracing, Perfetto) of the "
                  "run's ops, collectives and phases");
  flags.addInt("print-every", &opt.printEvery,
               "progress line every N steps when not on a terminal (0: about "
               "20 lines per run)");
  flags.addBool("quiet", &opt.quiet, "print nothing but errors");
  flags.addBool("help", &opt.help, "show this help");
  try {
    flags.parse(argc, argv);
    opt.batchSizeGiven = flags.given("batch-size");
    if (opt.help) {
      std::printf("%s", flags.help(std::string("usage: ") + argv[0] +
                                   " [flags]\n\nTrains model '" + model.name +
                                   "' (compiled by tgc).\n\nflags:\n")
                            .c_str());
      return 0;
    }
    // Counts where 0 means "off" or "all": a negative one is a typo.
    for (auto [flag, value] :
         {std::pair<const char *, int64_t>{"steps", opt.steps},
          {"threads", opt.threads},
          {"eval-every", opt.evalEvery},
          {"eval-batches", opt.evalBatches},
          {"checkpoint-every", opt.checkpointEvery},
          {"keep-checkpoints", opt.keepCheckpoints},
          {"max-rollbacks", opt.maxRollbacks},
          {"print-every", opt.printEvery}})
      if (value < 0)
        throw Error(std::string("--") + flag + " must be >= 0, got " +
                    std::to_string(value));
    if (!opt.checkpointLayout.empty() && opt.checkpointLayout != "sharded" &&
        opt.checkpointLayout != "consolidated")
      throw Error("--checkpoint-layout must be sharded or consolidated, got '" +
                  opt.checkpointLayout + "'");
    if (opt.mergeLora && opt.saveFinal.empty())
      throw Error("--merge-lora needs --save-final, the file it writes the "
                  "merged weights to");
    if (opt.mergeLora && model.numLoras == 0)
      throw Error("--merge-lora: model '" + std::string(model.name) +
                  "' has no LoRA adapters (tgc --lora adds them)");
    if (opt.saveFormat != "tgc" && opt.saveFormat != "hf")
      throw Error("--format must be tgc or hf, got '" + opt.saveFormat + "'");
    if (opt.saveFormat == "hf") {
      if (opt.saveFinal.empty())
        throw Error("--format=hf needs --save-final, the directory it "
                    "writes the Hugging Face model to");
      if (model.numLoras > 0 && !opt.mergeLora)
        throw Error("--format=hf writes the base model's weights, which "
                    "the LoRA adapters have no names among: add --merge-lora "
                    "to fold them in");
      if (opt.hfConfig.empty() && !isHuggingFaceDir(opt.initFrom))
        throw Error("--format=hf needs the model's Hugging Face config.json: "
                    "--hf-config FILE, or --init-from a Hugging Face "
                    "directory");
      if (opt.hfConfig.empty())
        opt.hfConfig = opt.initFrom;
      // Read now: a bad config stops the run before it trains.
      readHfConfig(opt.hfConfig);
      if (opt.maxShardSize <= 0)
        throw Error("--max-shard-size must be > 0, got " +
                    std::to_string(opt.maxShardSize));
    }
    if (!(opt.lr >= 0))
      throw Error("--lr must be >= 0, got " + formatDouble(opt.lr));
    if (opt.onNonfinite != "stop" && opt.onNonfinite != "skip" &&
        opt.onNonfinite != "rollback")
      throw Error("--on-nonfinite must be stop, skip or rollback, got '" +
                  opt.onNonfinite + "'");
    if (!(opt.lossSpike == 0 || opt.lossSpike > 1))
      throw Error("--loss-spike must be a factor above 1 (or 0: off), got " +
                  formatDouble(opt.lossSpike));
    if (!injectBadStep.empty()) {
      std::string steps = injectBadStep;
      size_t colon = steps.find(':');
      opt.injectKind = colon == std::string::npos ? "nan"
                                                  : steps.substr(colon + 1);
      steps = steps.substr(0, colon);
      if (opt.injectKind != "nan" && opt.injectKind != "spike")
        throw Error("--inject-bad-step: the kind must be nan or spike, got '" +
                    opt.injectKind + "'");
      for (size_t at = 0; at <= steps.size();) {
        size_t comma = std::min(steps.find(',', at), steps.size());
        std::string item = steps.substr(at, comma - at);
        char *end = nullptr;
        long long k = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end || k < 1)
          throw Error("--inject-bad-step: '" + item +
                      "' is not a step number >= 1");
        opt.injectAt.push_back(k);
        at = comma + 1;
      }
    }
    // The process group first: everything after may need the others (and
    // a failure after it must take them down too).
    comm = comm::initFromEnvironment(
        model.device ? CommBackend::Nccl : CommBackend::Mpi, opt.rendezvous,
        static_cast<int>(opt.device));
    int status;
    {
      Trainer trainer(model, opt, comm);
      status = trainer.run();
    }
    comm::finalize(comm);
    return status;
  } catch (const Error &e) {
    failure = e.what();
  } catch (const std::bad_alloc &) {
    failure = "out of memory";
  }
  std::fflush(stdout);
  // With several processes the others would wait for this one forever.
  if (comm)
    comm::abortAll(comm, failure);
  std::fprintf(stderr, "%s: error: %s\n", argv[0], failure.c_str());
  return 1;
}

} // namespace tgc

//===- Model.h - The contract between generated code and the runtime -*- C++ -*-===//
//
// A training executable is one generated source file plus this runtime. The
// generated file describes the model (parameters, optimizer state, batch
// inputs, outputs, training defaults) in a ModelDesc and provides the compiled
// step functions; the runtime owns everything around them: flags, data,
// parameter initialisation, the training loop, checkpoints, logging.
//
// Plain C++17: nothing here may include LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_MODEL_H
#define TGC_RUNTIME_CORE_MODEL_H

#include <cstdint>

namespace tgc {

enum class DType : int32_t { F32, BF16, F16, F8E4M3, F8E5M2, I32, I64, I1 };

/// Matches #tg.init / the model file's InitKind.
enum class InitKind : int32_t {
  Zeros,
  Ones,
  Constant,
  Normal,
  Uniform,
  XavierUniform,
  XavierNormal,
  KaimingUniform,
  KaimingNormal,
  File
};

/// What the data loader writes into a batch input. The compiler assigns roles
/// from the input's dtype and dim_names:
///  - token data: the first integer input with dims [batch, seq] gets the
///    tokens, the second the next-token targets; an integer input with dims
///    [seq] gets the positions 0..T-1;
///  - classification data: the float input with a leading batch dim gets the
///    features (its non-batch dims must hold the file's feature count), the
///    integer input with dims [batch] gets the labels.
enum class InputRole : int32_t { Features, Labels, Tokens, Targets, Positions };

constexpr int kMaxRank = 8;

/// A tensor the runtime allocates. `shape` is the GLOBAL shape the step
/// functions work on (what initialisation draws, in row-major element
/// order); on a mesh, a process holds only its piece of a split tensor: each
/// dim divided by the product of the sizes of the mesh axes in `splitAxes`
/// for that dim. Batch inputs are the exception: their `shape` is the LOCAL
/// micro-batch one process computes (the data loader fills one process's
/// batch), and their batch dim's split is ModelDesc::mesh's splitsBatch.
///
/// Files may show a parameter in another shape than the compiler holds it
/// in: GPT-2's fused q|k|v projection is [768, 2304] in every file but
/// [768, 3, 768] inside a step split by attention heads. `fileShape` is then
/// the shape that checkpoints, init files and tg-ckpt show, a row-major view
/// of the same elements in the same order (same bytes); `shape`,
/// `splitAxes` and each process's piece stay in the internal shape.
///
/// Generated code fills these with positional aggregate initialisers;
/// members it leaves out are zero: no split, and the file shape is `shape`.
struct TensorDesc {
  const char *name;
  DType dtype;
  int32_t rank;
  int64_t shape[kMaxRank];
  /// Per dim, a bitmask of the mesh axes that split it (bit i: axis i of
  /// ModelDesc::mesh, the major axis first); 0 = whole on every process.
  int32_t splitAxes[kMaxRank];
  /// The shape in files when it differs from `shape`, with the same number
  /// of elements (see above); fileRank 0 means the same as `shape`
  /// (fileShapeOf in DType.h answers either way).
  int32_t fileRank;
  int64_t fileShape[kMaxRank];
};

struct InitSpec {
  InitKind kind;
  double mean, std, low, high, gain, value;
  const char *file; ///< safetensors path for InitKind::File ("" otherwise)
  const char *key;  ///< tensor name in that file
};

struct ParamDesc {
  TensorDesc tensor;
  InitSpec init;
  bool trainable;
};

/// Optimizer state of one parameter (a moment, a momentum buffer); starts at
/// zero and is checkpointed as "<param>.<slot>" (e.g. "fc1.weight.exp_avg"),
/// in its parameter's file shape when it has the parameter's shape.
struct StateDesc {
  TensorDesc tensor;
  const char *param;
  const char *slot;
};

struct InputDesc {
  TensorDesc tensor;
  InputRole role;
  /// Integer inputs: every value must be < valueLimit, the rows of the
  /// embedding tables the input indexes and the classes of the losses it
  /// labels, as the compiler read them from the graph; 0 when it indexes
  /// nothing (then nothing is checked).
  int64_t valueLimit;
};

/// One axis of the device mesh the step was partitioned for (tg.mesh).
/// Process r sits at the row-major coordinates of r in the mesh (the last
/// axis fastest); a collective over an axis runs among the processes that
/// differ only in their coordinate on it.
struct MeshAxisDesc {
  const char *name;
  int64_t size;
  /// 1 when the axis splits the batch (the batch dim of @train_step's
  /// inputs): processes that differ on it train on different data.
  int32_t splitsBatch;
  /// 1 when the axis takes its size from the process count at launch
  /// (tgc --mesh=data=auto): the product of the other axes' sizes divides
  /// the world size, and `size` is the one the plan was priced for.
  int32_t elastic;
};

/// The processes that train one model together (data parallel): defined by
/// runtime/comm/Comm.h. Generated code passes it to the collectives
/// (tgc::comm::allReduce...) that tg.all_reduce lowers to; null when the run
/// has one process, where every collective is the identity.
struct Communicator;
class Trace;

/// How the runtime reaches the memory the step functions work on. CPU
/// executables have none (ModelDesc::device is null: every buffer is host
/// memory). GPU executables point it at their device runtime, and then
/// every buffer in StepIO (params, state, inputs, outputs, grads) is device
/// memory that the runtime allocates, fills and reads only through these.
struct DeviceOps {
  const char *kind; ///< "cuda"
  /// Selects the device (--device, or the local rank); returns a
  /// description for the log ("NVIDIA H100 80GB HBM3, 79.1 GiB"), throws
  /// tgc::Error when there is none.
  const char *(*select)(int ordinal);
  void *(*alloc)(int64_t bytes); ///< zero-filled; throws when out of memory
  void (*release)(void *p);
  void (*upload)(void *dst, const void *src, int64_t bytes);
  void (*download)(void *dst, const void *src, int64_t bytes);
  void (*synchronize)();
  /// Peak dense FLOP/s of the selected device for the step's precision (for
  /// MFU in the log); 0 when unknown.
  double (*peakFlops)();
};

/// Buffers and scalars one call of a step function reads and writes. All
/// buffers are dense row-major, in the order of the ModelDesc's lists.
struct StepIO {
  void **params;       ///< updated in place by trainStep
  void **state;        ///< updated in place by trainStep
  const void **inputs; ///< one micro-batch
  void **outputs;      ///< filled by evalStep (the forward's extra outputs)
  void **grads;        ///< one per trainable param, in the order of the
                       ///< trainable ParamDescs: filled by gradStep and
                       ///< accumulate, read by trainStep with accumulation
  int64_t step;        ///< the step being taken, counting from 1
  /// Micro-batches in this step (accumulate calls + 1): trainStep averages
  /// the accumulated gradients over them.
  int32_t microBatches;
  /// Which micro-batch of the step this call computes, from 0: accumulate
  /// (and gradStep) write io.grads on micro-batch 0 and add to them after.
  int32_t microBatch;
  /// The micro-batch's index in the global batch (data replica d of D
  /// computes the global micro-batches d, d + D, ...; without a mesh every
  /// process is a replica). Random ops draw from (their seed,
  /// step, randomStream, element): every micro-batch of every process gets
  /// its own dropout mask, the same one for any process count, after a
  /// resume, and when the op is recomputed.
  int64_t randomStream;
  float baseLr;        ///< the schedule scales this
  int32_t threads;     ///< OpenMP threads to use
  Communicator *comm;  ///< null with one process
  /// --profile: each op reports its time here (runtime/core/Trace.h); null
  /// when not profiling.
  Trace *trace;
  /// --cuda-graph: a device step may capture itself in a CUDA graph and
  /// replay it (CPU steps ignore it).
  int32_t captureGraph;
  /// A pipelined step's functions (PipelineDesc): this micro-batch's slot
  /// buffers, by slot number (null where this stage has none).
  void **slots;
  // Metrics written by the step functions.
  float loss;
  float gradNorm; ///< global gradient norm before clipping (trainStep)
  float lr;       ///< learning rate used this step (trainStep)
};

/// Training defaults from the model file's training table; flags override.
struct TrainingDefaults {
  int64_t batchSize; ///< the compiled micro-batch
  int64_t seqLen;    ///< 0 for models without a sequence dim
  int64_t steps;
  int64_t seed;
  float lr;
  int64_t gradAccum;
};

/// One action of a pipeline stage's list (tg-pipeline-schedule).
enum class PipelineActionKind : int32_t {
  F,     ///< the chunk's forward
  B,     ///< its backward for the inputs
  W,     ///< its backward for the weights
  BW,    ///< B then W
  SendF, ///< the chunk's forward slots to the next chunk's stage
  RecvF, ///< the previous chunk's forward slots into this chunk
  SendB, ///< the chunk's backward slots to the previous chunk's stage
  RecvB, ///< the next chunk's backward slots into this chunk
  Reduce ///< the chunk's gradient sums over the data axes (once a step)
};

struct PipelineAction {
  PipelineActionKind kind;
  int32_t microBatch;
  int32_t chunk;
};

/// The slots one boundary, between chunks c and c + 1, moves: forward
/// after F of chunk c, backward after B of chunk c + 1.
struct PipelineBoundary {
  int32_t numForward;
  const int32_t *forward;
  int32_t numBackward;
  const int32_t *backward;
};

struct PipelineStage {
  int32_t numActions;
  const PipelineAction *actions;
  /// The optimizer update of the parameters this stage holds, on the
  /// gradients its W functions summed over the step's micro-batches
  /// (io.grads); it writes io.gradNorm and io.lr.
  void (*update)(StepIO &io);
  /// How the stage keeps its slots (tg-pipeline-schedule's plan): micro-
  /// batch m's buffer of slot k, slotBuffers[m * numSlots + k] (-1: none
  /// on this stage); the buffers of each slot; per action, the action after
  /// which its receives are posted (-1: at the step's start; -2: it
  /// receives nothing) and whether it first waits for the sends in flight
  /// (it reuses a buffer a send may still read).
  const int32_t *slotBuffers;
  const int32_t *slotCounts;
  const int32_t *postAfter;
  const uint8_t *waitSends;
};

/// A pipelined step (tg-pipeline-split): C = stages x virtualStages chunks,
/// chunk c on stage c mod stages, each an F, a B and a W function. Every
/// function reads io.params, io.inputs (the micro-batch's) and io.slots (by
/// slot number), writes its slot results into io.slots, and W adds its
/// parameter gradients into io.grads. Only the last chunk's F writes
/// io.loss. The stage is the process's coordinate on mesh axis `axis`.
struct PipelineDesc {
  int32_t stages, virtualStages;
  /// The micro-batches a step's action lists run.
  int32_t microBatches;
  int32_t axis;
  const char *schedule; ///< "1f1b", "zb-h1", ...
  int32_t numSlots;
  /// Each slot's tensor (one micro-batch's).
  const TensorDesc *slots;
  void (*const *forward)(StepIO &io); ///< per chunk
  void (*const *backward)(StepIO &io);
  void (*const *weight)(StepIO &io);
  /// Per chunk, null where it has none: its gradient sums reduced over the
  /// data axes, in place in io.grads, once its last W has run (the update
  /// then reads them reduced).
  void (*const *reduce)(StepIO &io);
  const PipelineBoundary *boundaries; ///< chunks - 1 of them
  const PipelineStage *stageDescs;    ///< per stage
  /// Per parameter, the stages that hold and update it (bit s); 0 for a
  /// frozen parameter, which every stage holds unchanged.
  const int64_t *paramStages;
};

/// Low-rank adapters that tgc --lora (tg-lora) gave a frozen weight, as
/// three parameters' names: the step reads x @ base + (x @ a) @ b * scale
/// (base transposed when `transposed`). --merge-lora folds them into the
/// weight it saves (runtime/train/Lora.h).
struct LoraDesc {
  const char *base, *a, *b;
  double scale;
  bool transposed;
};

struct ModelDesc {
  const char *name;
  int32_t numParams;
  const ParamDesc *params;
  int32_t numState;
  const StateDesc *state;
  int32_t numInputs;
  const InputDesc *inputs;
  int32_t numOutputs;
  const TensorDesc *outputs; ///< outputs[0], when present, is the logits
  TrainingDefaults defaults;
  /// Forward, backward and optimizer update on one micro-batch. With
  /// gradient accumulation the runtime calls accumulate for each micro-batch
  /// but the last, then trainStep.
  void (*trainStep)(StepIO &io);
  /// Forward and backward only, the gradients into io.grads (written on
  /// micro-batch 0, added after); trainStep then adds its own and divides by
  /// microBatches. Null when the model was compiled without accumulation
  /// (then trainStep ignores io.grads and takes one micro-batch per step).
  void (*accumulate)(StepIO &io);
  /// Forward only: loss and outputs, no state change (validation).
  void (*evalStep)(StepIO &io);
  /// Forward and backward only: loss and the gradients into io.grads, no
  /// state change (gradient checks: the executable's --dump-grads).
  void (*gradStep)(StepIO &io);
  /// Null for CPU executables (host memory); see DeviceOps.
  const DeviceOps *device;
  /// Model FLOPs of one micro-batch's training step (forward + backward:
  /// 6·N·tokens plus attention), for MFU; 0 when not computed.
  double flopsPerStep;
  /// Bytes of the one arena the step functions' buffers live in, as the
  /// compiler planned it (the runtime allocates exactly this for them, on
  /// a GPU beside the constants and the libraries' workspace, and reports
  /// it); 0 when unknown.
  int64_t arenaBytes;
  /// The mesh of the partitioned step: numMeshAxes axes, and a run has as
  /// many processes as the product of their sizes. 0 and null: the step
  /// was compiled for one process.
  int32_t numMeshAxes;
  const MeshAxisDesc *mesh;
  /// What io.grads holds, one per trainable parameter in order: the whole
  /// shape and the axes that split it (a process's piece is
  /// accumulated). Under data parallelism a gradient is a partial sum over
  /// the data axes, whole-shaped, where its parameter may be split (ZeRO-3);
  /// null: the parameters' shapes.
  const TensorDesc *grads;
  /// Null unless the step is pipelined; then trainStep, accumulate,
  /// evalStep and gradStep are null: the runtime runs the pipeline's
  /// functions, for training and for evaluation.
  const PipelineDesc *pipeline;
  /// tg-lora's adapters (0 and null without: the generated code leaves
  /// them out then).
  int32_t numLoras;
  const LoraDesc *loras;
};

/// The training executable's main: parses flags, loads data, initialises or
/// resumes the parameters, trains, evaluates and checkpoints.
int runTraining(const ModelDesc &model, int argc, char **argv);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_MODEL_H

//===- StepEmitter.h - The CUDA emitter's shared declarations ---*- C++ -*-===//
//
// What the pieces of the CUDA emitter share, private to compiler/codegen:
// the launches a step function becomes (Launch, FusedKernel, Bucket), the
// module-wide state its step functions add to (generated kernels,
// constants, workspaces), and StepEmitter, which turns one step function
// into a function of launches. Its members are defined by concern:
//   cuda/LaunchPlan.cpp          fusion, the launch list, FLOPs and traffic
//   cuda/MemoryPlan.cpp          tg-plan-memory's plan, its check, pointers
//   cuda/Streams.cpp             all-reduce buckets and the stream waits
//   cuda/ElementwiseKernels.cpp  the generated elementwise kernels
//   cuda/LibraryLaunches.cpp     cuBLASLt and runtime/cuda calls per op
//   cuda/LayerBodies.cpp         tg-outline-layers' bodies and their calls
//   EmitCuda.cpp                 one step function's code, and the file
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_CUDA_STEPEMITTER_H
#define TGC_COMPILER_CODEGEN_CUDA_STEPEMITTER_H

#include "compiler/codegen/CSyntax.h"
#include "compiler/codegen/EmitCuda.h"
#include "compiler/codegen/ModelDescription.h"
#include "compiler/codegen/StepWalk.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::tg::cuda_emit {

inline constexpr StringLiteral kBackend = "cuda backend";
/// The name a layer body is printed under until its text names it.
inline constexpr StringLiteral kBodyPlaceholder = "TGC_LAYER_BODY";
/// Threads per block of the generated kernels.
inline constexpr int64_t kBlock = 256;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
inline Type elementType(Value v) { return tensorType(v).getElementType(); }
inline int64_t numel(Value v) { return tensorType(v).getNumElements(); }

/// The C type the generated code stores an element type in, "" when the
/// CUDA backend lacks it.
inline StringRef storageType(Type t) {
  return t.isBF16() ? "bf16" : cElementType(t);
}
inline StringRef storageOf(Value v) { return storageType(elementType(v)); }

inline int64_t elementBytes(Type t) {
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}
inline int64_t bytesOf(Value v) { return tensorBytes(v.getType()); }

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

inline std::string opLabel(Operation *op) {
  return op->getName().stripDialect().str();
}

/// "tg.add (h.0.resid_1)".
inline std::string describeOp(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  std::string where = describeLoc(op->getLoc());
  if (!where.empty())
    s += " (" + where + ")";
  return s;
}

inline bool isView(Operation *op) { return isa<ReshapeOp, FlattenOp>(op); }

/// tg-place-constants' offset of a constant in the constants section, or
/// nothing when it is not read from memory.
inline std::optional<int64_t> constantOffsetOf(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto at =
      constant
          ? constant->getAttrOfType<IntegerAttr>(TgDialect::kConstantOffsetAttr)
          : nullptr;
  if (!at)
    return std::nullopt;
  return at.getInt();
}

//===----------------------------------------------------------------------===//
// Module-wide state: generated kernels, constants, workspaces
//===----------------------------------------------------------------------===//

struct Kernel {
  std::string name;
  std::string text; ///< parameter list and body, the deduplication key
  SmallVector<std::string> sites;
  llvm::StringSet<> siteSet; ///< sites, looked up (a deep model has many)
};

class StepEmitter;

struct ModuleState {
  std::vector<Kernel> kernels;
  /// The layer bodies of tg-outline-layers, emitted before the step
  /// functions that call them, by symbol.
  llvm::StringMap<StepEmitter *> bodies;
  llvm::StringMap<unsigned> kernelByText;
  /// Host arrays of the constants and the copies that upload them.
  std::string constantArrays, constantUploads;
  unsigned constantCounter = 0;
  /// One call of a *_workspace_bytes function each, in first-use order.
  std::vector<std::string> workspaceNeeds;
  std::set<std::string> workspaceSeen;
  int64_t numBuckets = 0;
  int64_t plannedBytes = 0;

  /// The name of the kernel with this parameter list and body, added under
  /// `baseName` when new; `site` is the op it computes, for its comment
  /// (ElementwiseKernels.cpp).
  std::string kernel(StringRef baseName, StringRef text, StringRef site);

  /// Prints `constant`'s host array and the copy that uploads it to its
  /// offset in the constants section (EmitCuda.cpp).
  LogicalResult uploadConstant(ConstantOp constant, int64_t offset);
};

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

enum class LaunchKind {
  Op,            ///< one op, one runtime/cuda call (or a copy)
  Elementwise,   ///< a generated kernel for a tree of elementwise ops
  Gemm,          ///< a matmul with its cuBLASLt epilogue
  Classifier,    ///< cross_entropy + cross_entropy_grad in one read
  Bucket,        ///< one all-reduce bucket, on the communication stream
  AllReduceWait, ///< the compute stream waits for one bucket
  Call,          ///< a layer body's launches (tg-outline-layers)
  Return         ///< the results go to the StepIO (for liveness)
};

struct Launch {
  LaunchKind kind = LaunchKind::Op;
  /// The op whose position this launch takes in op order (the last op of a
  /// GEMM epilogue or an elementwise tree; the cross_entropy of a
  /// classifier).
  Operation *op = nullptr;
  /// Every op whose work this launch does, producers first.
  SmallVector<Operation *> covered;
  // Gemm.
  MatmulOp matmul;
  StringRef epilogue = "None";
  Value bias, aux, out;
  // Classifier.
  CrossEntropyOp crossEntropy;
  CrossEntropyGradOp crossEntropyGrad;
  // Bucket.
  int bucket = -1;
  /// A multi-tensor optimizer kernel: its updates, `op` the last (one
  /// runtime call for all).
  SmallVector<OptimizerUpdateOp> lanes;
  // Call.
  func::CallOp call;
  StepEmitter *body = nullptr;
  /// Values read and written (before view resolution).
  SmallVector<Value> reads, writes;
  /// The first of its timers (a call has one per launch of its body).
  int timer = -1;
};

/// A tg.kernel of tg-fuse's: its body's ops in order (launched where the
/// kernel stands) and the values it stores (what its body yields, as
/// StepEmitter::flat names them).
struct FusedKernel {
  KernelKind kind;
  /// A gemm kernel's cuBLASLt epilogue, as tg-fuse named it.
  std::optional<GemmEpilogue> epilogue;
  SmallVector<Operation *> ops;
  SmallVector<Value> outputs;
  /// Its launch where planFusion builds one (a GEMM with its epilogue, the
  /// classifier, a multi-tensor update); else kernelLaunch derives it.
  std::optional<Launch> launch;
};

/// One tg.all_reduce: its inputs travel in one buffer, tg-plan-memory's
/// `tg.bucket_span`.
struct Bucket {
  AllReduceOp op;
  /// Per operand: reduced in place (the bucket is the gradient's buffer).
  SmallVector<bool> inPlace;
  int64_t offset = 0, bytes = 0;
  Type elementType;
};

//===----------------------------------------------------------------------===//
// One step function
//===----------------------------------------------------------------------===//

class StepEmitter {
public:
  StepEmitter(ModuleState &state, const CudaEmitOptions &options,
              func::FuncOp func, StringRef name, llvm::raw_ostream &os)
      : state(state), options(options), func(func), name(name), os(os) {}

  /// `bindArgument` gives the StepIO expression of an argument (a device
  /// pointer); `bindResults` writes the code that hands the results over.
  LogicalResult
  emit(llvm::function_ref<std::string(unsigned)> bindArgument,
       llvm::function_ref<LogicalResult(StepEmitter &, func::ReturnOp)>
           bindResults,
       StringRef summary);

  /// A layer body of tg-outline-layers' (`tg.layer_body`) as a host
  /// function of launches, `static void NAME(io, d, t, timer base, offset
  /// table, argument pointers...)`: its values at the slots of the offset
  /// table the call passes (cuda/LayerBodies.cpp). Its plan is checked at
  /// each call, with that call's offsets.
  LogicalResult emitBody();
  /// A body's C name (content-addressed, set once its text is known) and
  /// its prototype (with kBodyPlaceholder for the name).
  std::string cName;
  std::string bodyPrototype, bodyComment;
  /// The generated kernels its launches use, by index in ModuleState.
  const llvm::SetVector<unsigned> &kernelsUsed() const { return usedKernels; }

  /// The pointer variable of `v` (declared on first use).
  std::string ptr(Value v);
  /// Its pointer as an expression, without declaring it: its name where
  /// this part has declared it, else where it is (an argument, the arena,
  /// the constants).
  std::string pointerExpr(Value v);
  /// Whether `v` is argument `i`'s buffer (the argument or a view of it).
  bool isArgument(Value v, unsigned i) const {
    auto arg = dyn_cast<BlockArgument>(root(v));
    return arg && arg.getArgNumber() == i;
  }
  llvm::raw_ostream &out() { return os; }
  StringRef functionName() const { return name; }
  int64_t arenaBytes() const { return plannedBytes; }
  int64_t numTimed() const { return timers; }
  double flops() const { return totalFlops; }
  int64_t numBuckets() const { return buckets.size(); }
  const std::vector<std::string> &timerLabels() const { return labels; }
  const std::vector<bool> &timerOnComm() const { return onComm; }
  std::string flopsComment;
  std::string trafficComment;

private:
  /// The stages both a step function and a layer body go through: the
  /// launches planned (single block, types, plan, fusion, launch list),
  /// then counted and their constants uploaded (EmitCuda.cpp).
  LogicalResult planLaunches();
  LogicalResult countAndUploadConstants();
  // LaunchPlan.cpp: which ops share a launch, and the launches in op order.
  LogicalResult checkTypes();
  LogicalResult readKernels();
  LogicalResult gemmLaunch(FusedKernel &kernel);
  LogicalResult planFusion();
  LogicalResult buildLaunches();
  Launch opLaunch(Operation *op);
  Launch kernelLaunch(const FusedKernel &kernel);
  void countFlops();
  void countTraffic();
  // MemoryPlan.cpp: tg-plan-memory's offsets, and a replay of the launches
  // over them.
  LogicalResult readPlan();
  LogicalResult verifyPlan();
  class ArenaReplay;
  /// One timer per launch that runs something (a call: one per launch of
  /// its body), with its label.
  void numberTimers();
  // LayerBodies.cpp: the call of a layer body, and its launches' labels.
  LogicalResult emitCall(Launch &launch);
  void aliasCallResults(func::CallOp call);
  std::string callLabel(const Launch &launch, StringRef bodyLabel) const;

  // The code of one launch: LibraryLaunches.cpp (emitLaunch dispatches),
  // ElementwiseKernels.cpp and Streams.cpp.
  LogicalResult emitLaunch(Launch &launch);
  /// One runtime/cuda call on the compute stream, timed as `launch`:
  /// `tgc::cuda::FN(ARGS..., stream);`.
  LogicalResult libraryCall(const Launch &launch, StringRef fn,
                            ArrayRef<std::string> args);
  /// One op's runtime/cuda call: the first family below that knows the op
  /// emits it (each returns nothing for an op not its own).
  LogicalResult emitOp(Launch &launch, Operation *op);
  /// reduce (sum, mean, max) over dims, softmax and log_softmax.
  std::optional<LogicalResult> emitReductionCall(Launch &launch, Operation *op);
  /// layer_norm and rms_norm with their gradients, and dropout.
  std::optional<LogicalResult> emitNormAndDropoutCall(Launch &launch,
                                                      Operation *op);
  /// The embedding lookup and cross-entropy, with their gradients.
  std::optional<LogicalResult> emitEmbeddingAndLossCall(Launch &launch,
                                                        Operation *op);
  /// Attention and its gradient.
  std::optional<LogicalResult> emitAttentionCall(Launch &launch, Operation *op);
  /// conv2d and the 2-d poolings, with their gradients.
  std::optional<LogicalResult> emitConvAndPoolCall(Launch &launch,
                                                   Operation *op);
  /// all_gather, reduce_scatter and all_slice (not the all-reduce buckets).
  std::optional<LogicalResult> emitCollectiveCall(Launch &launch,
                                                  Operation *op);
  /// Data movement: transpose, slice and its gradient, concat.
  std::optional<LogicalResult> emitShapeCall(Launch &launch, Operation *op);
  /// The global gradient norm, the LR schedule and the optimizer updates.
  std::optional<LogicalResult> emitOptimizerCall(Launch &launch, Operation *op);
  LogicalResult emitElementwise(Launch &launch);
  LogicalResult emitGemm(Launch &launch);
  void emitClassifier(Launch &launch);
  LogicalResult emitOptimizerLanes(Launch &launch);
  void emitBucket(Launch &launch);
  /// A launch's timer: its index in the step function's table, or in a
  /// layer body, the index after the call's base (`tb`).
  std::string timerIndex(const Launch &launch) const {
    return (isBody ? "tb + " : "") + std::to_string(launch.timer);
  }
  std::string timerBegin(const Launch &launch, StringRef stream = "stream") {
    return llvm::formatv("  t.begin({0}, {1});\n", timerIndex(launch), stream)
        .str();
  }
  std::string timerEnd(const Launch &launch, StringRef stream = "stream") {
    return llvm::formatv("  t.end({0}, {1});\n", timerIndex(launch), stream)
        .str();
  }

  /// The value of the step `v` stands for: a kernel body's argument is the
  /// kernel's input, a kernel's result the value its body yields. Every
  /// value the emitter names, places or compares is one of these, as if
  /// the kernels' bodies stood in the step's block.
  Value flat(Value v) const {
    for (auto it = flatOf.find(v); it != flatOf.end(); it = flatOf.find(v))
      v = it->second;
    return v;
  }
  /// The ops that read `v` where kernels' bodies are read in place (a
  /// kernel's body ops for the kernel, the readers of its result for its
  /// yield), in op order.
  SmallVector<Operation *> flatUsers(Value v) const;
  void collectFlatUsers(Value v, SmallVectorImpl<Operation *> &users) const;
  Value root(Value v) const {
    v = flat(v);
    while (true) {
      auto it = alias.find(v);
      if (it == alias.end())
        return v;
      v = it->second;
    }
  }
  std::string workspace(StringRef need) {
    if (state.workspaceSeen.insert(need.str()).second)
      state.workspaceNeeds.push_back(need.str());
    return "d.workspace";
  }

  ModuleState &state;
  const CudaEmitOptions &options;
  func::FuncOp func;
  std::string name;
  llvm::raw_ostream &os;
  llvm::function_ref<std::string(unsigned)> bindArgument;

  SmallVector<Operation *> ops;
  /// Each op's index in `ops`.
  DenseMap<Operation *, size_t> opIndex;
  /// Views and in-place results: the value whose buffer a value uses.
  DenseMap<Value, Value> alias;
  /// tg-fuse's kernels (readKernels), and the value each of their body
  /// arguments and results stands for (flat).
  std::vector<FusedKernel> fusedKernels;
  DenseMap<Value, Value> flatOf;
  /// tg.attention_grad -> the tg.attention on the same q, k, v that keeps
  /// its log-sum-exp for it (in its tg.scratch).
  DenseMap<Operation *, AttentionOp> forwardOf;

  /// The step's pieces (StepWalk.h) in schedule order; a kernel's also by
  /// its index in fusedKernels.
  struct Piece {
    Operation *op;
    StepPiece piece;
    int kernel = -1;
  };
  std::vector<Piece> pieces;
  std::vector<Launch> launches; ///< in schedule order
  /// One per tg.all_reduce, in op order.
  std::vector<Bucket> buckets;
  DenseMap<Operation *, int> bucketOf;

  /// tg-plan-memory's plan: the arena offset of each value with bytes of
  /// its own (views are in `alias`), of each attention's log-sum-exp, and
  /// the arena's size.
  DenseMap<Value, int64_t> offsetOf;
  DenseMap<Operation *, int64_t> scratchOffset;
  /// In a layer body: the slot of each value with bytes of its own (its
  /// offset is the call's tg.slot_offsets at that slot).
  bool isBody = false;
  DenseMap<Value, int64_t> slotOf;
  llvm::SetVector<unsigned> usedKernels;
  int64_t plannedBytes = 0;

  DenseMap<Value, std::string> names;
  /// The line that declares each named pointer, for the parts that
  /// redeclare it, and the values declared in the part being emitted (all,
  /// when the step is one function).
  DenseMap<Value, std::string> declarations;
  DenseSet<Value> declaredHere;
  unsigned valueCounter = 0;
  int timers = 0;
  std::vector<std::string> labels;
  std::vector<bool> onComm;
  double totalFlops = 0;
  /// Launches by kind, and the bytes the launches other than GEMMs and
  /// collectives read and write (countTraffic).
  int64_t gemmLaunches = 0, otherLaunches = 0;
  double otherReadBytes = 0, otherWrittenBytes = 0;
  /// FLOPs by kind and counts (countFlops; a call adds its body's).
  double matmulFlopCount = 0, attentionFlopCount = 0;
  int64_t numMatmuls = 0, numAttention = 0;
};

} // namespace mlir::tg::cuda_emit

#endif // TGC_COMPILER_CODEGEN_CUDA_STEPEMITTER_H

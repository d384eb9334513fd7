//===- EmitCuda.cpp - tg train step to CUDA C++ -------------------*- C++ -*-===//
//
// One pass per step function (@train_step, @forward, @forward_backward) in
// four stages:
//  1. fusion: which ops share a launch. A matmul takes a following bias add
//     and tanh GELU (or, in the backward, a GELU gradient) into cuBLASLt's
//     epilogue; cross_entropy and its gradient on the same logits become the
//     fused classifier; chains of elementwise ops of one shape become one
//     generated kernel; the clip factor's multiply becomes the optimizer's
//     gradScale; reshapes are views.
//  2. schedule: the launches in op order, which tg-schedule decided: each
//     tg.all_reduce is one bucket, launched on the communication stream
//     where it stands (after its last gradient); the compute stream waits
//     for a bucket before the launch of the op its tg.waits names.
//  3. memory: every buffer in one arena, placed by liveness over that
//     schedule (LaunchArena), 256-byte aligned; gradients that are reduced
//     in place are written straight into their bucket.
//  4. code: one function of launches per step kind, and the glue that runs
//     it eagerly, timed (--profile) or as a CUDA graph (--cuda-graph).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCuda.h"
#include "compiler/codegen/CSyntax.h"
#include "compiler/codegen/LaunchArena.h"
#include "compiler/codegen/ModelDescription.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

using namespace mlir;
using namespace mlir::tg;

namespace {

constexpr StringLiteral kBackend = "cuda backend";
/// Threads per block of the generated kernels.
constexpr int64_t kBlock = 256;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
Type elementType(Value v) { return tensorType(v).getElementType(); }
int64_t numel(Value v) { return tensorType(v).getNumElements(); }

/// The C type the generated code stores an element type in, "" when the
/// CUDA backend lacks it.
StringRef storageType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(64))
    return "int64_t";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(1))
    return "uint8_t";
  return "";
}
StringRef storageOf(Value v) { return storageType(elementType(v)); }

int64_t elementBytes(Type t) {
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}
int64_t bytesOf(Value v) { return numel(v) * elementBytes(elementType(v)); }

/// The type elementwise code computes in: fp32 for every float type.
StringRef mathType(Type t) {
  if (isa<FloatType>(t))
    return "float";
  if (t.isInteger(1))
    return "bool";
  return storageType(t);
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

std::string opLabel(Operation *op) {
  return op->getName().stripDialect().str();
}

/// "tg.add (h.0.resid_1)".
std::string describeOp(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  std::string where = describeLoc(op->getLoc());
  if (!where.empty())
    s += " (" + where + ")";
  return s;
}

/// The tgc::comm::ReduceOp that carries out `reduction`.
StringRef commReduceOp(Reduction reduction) {
  switch (reduction) {
  case Reduction::sum:
    return "Sum";
  case Reduction::mean:
    return "Mean";
  }
  llvm_unreachable("unknown reduction");
}

/// The runtime's GELU device function for `approximate` (tgc::cuda::geluTanh
/// or geluErf; their gradients add `Grad`).
StringRef geluFunction(GeluApproximation approximate) {
  switch (approximate) {
  case GeluApproximation::none:
    return "geluErf";
  case GeluApproximation::tanh:
    return "geluTanh";
  }
  llvm_unreachable("unknown gelu approximation");
}

/// A C string literal's contents.
std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

bool isView(Operation *op) { return isa<ReshapeOp, FlattenOp>(op); }

/// Ops that only move elements: a generated kernel reads their operand at
/// remapped indices.
bool isDataMovement(Operation *op) {
  return isa<TransposeOp, SliceOp, SliceGradOp, ConcatOp, ReshapeOp,
             FlattenOp>(op);
}

/// Ops whose result element i depends on operand elements at i only (with
/// numpy broadcasting), or, for tg.iota, on i alone: the generated kernels.
bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp,
             CompareOp, SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
             TanhOp, ReluOp, SigmoidOp, SiluOp, GeluOp, GeluGradOp, CastOp,
             BroadcastToOp, SinOp, CosOp, IotaOp>(op);
}

/// A constant the generated kernels write as a literal: one value.
std::optional<Attribute> splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  if (dense.isSplat())
    return dense.getSplatValue<Attribute>();
  if (dense.getNumElements() == 1)
    return *dense.getValues<Attribute>().begin();
  return std::nullopt;
}

bool isSplatOne(Value v) {
  auto value = splatValue(v);
  if (!value)
    return false;
  if (auto f = dyn_cast<FloatAttr>(*value))
    return f.getValueAsDouble() == 1.0;
  return false;
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

struct ModuleState {
  std::vector<Kernel> kernels;
  llvm::StringMap<unsigned> kernelByText;
  /// Host arrays of the constants and the copies that upload them.
  std::string constantArrays, constantUploads;
  int64_t constantBytes = 0;
  unsigned constantCounter = 0;
  /// One call of a *_workspace_bytes function each, in first-use order.
  std::vector<std::string> workspaceNeeds;
  std::set<std::string> workspaceSeen;
  int64_t numBuckets = 0;
  int64_t plannedBytes = 0;

  /// The name of the kernel with this parameter list and body, added under
  /// `baseName` when new; `site` is the op it computes, for its comment.
  std::string kernel(StringRef baseName, StringRef text, StringRef site) {
    auto it = kernelByText.find(text);
    if (it != kernelByText.end()) {
      Kernel &k = kernels[it->second];
      if (k.siteSet.insert(site).second)
        k.sites.push_back(site.str());
      return k.name;
    }
    Kernel k;
    k.name = llvm::formatv("{0}_k{1}", baseName, kernels.size()).str();
    k.text = text.str();
    k.sites.push_back(site.str());
    k.siteSet.insert(site);
    kernelByText[text] = kernels.size();
    kernels.push_back(std::move(k));
    return kernels.back().name;
  }

  /// Places `constant` in the constants region; returns its offset.
  FailureOr<int64_t> addConstant(ConstantOp constant) {
    auto attr = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!attr)
      return constant.emitError(kBackend)
             << ": only dense constants are supported";
    Value v = constant.getResult();
    Type elem = elementType(v);
    int64_t n = numel(v);
    std::string name = llvm::formatv("kConstant{0}", constantCounter++).str();
    int64_t offset = constantBytes;
    constantBytes += (std::max<int64_t>(bytesOf(v), 1) + 255) / 256 * 256;
    // bf16 goes up as its bits.
    StringRef hostType = elem.isBF16() ? "uint16_t" : storageType(elem);
    auto literal = [&](int64_t i) -> std::string {
      if (isa<FloatType>(elem)) {
        APFloat f = attr.isSplat() ? attr.getSplatValue<APFloat>()
                                   : attr.getValues<APFloat>()[i];
        if (elem.isBF16())
          return llvm::formatv("{0:x4}",
                               f.bitcastToAPInt().getZExtValue())
              .str();
        return floatLiteral(f.convertToDouble());
      }
      APInt value = attr.isSplat() ? attr.getSplatValue<APInt>()
                                   : attr.getValues<APInt>()[i];
      return elem.isInteger(1) ? std::to_string(value.getZExtValue())
                               : std::to_string(value.getSExtValue()) +
                                     (elem.isInteger(64) ? "ll" : "");
    };
    llvm::raw_string_ostream arrays(constantArrays), uploads(constantUploads);
    arrays << "/// " << describeOp(constant) << "\n";
    if (attr.isSplat() && n > 1) {
      uploads << "  {\n    std::vector<" << hostType << "> " << name << "(" << n
              << ", (" << hostType << ")" << literal(0) << ");\n"
              << "    TGC_CUDA_CHECK(cudaMemcpy(constants + " << offset << ", "
              << name << ".data(), " << bytesOf(v)
              << ", cudaMemcpyHostToDevice));\n  }\n";
      arrays << "// (a splat of " << n << ", filled at start-up)\n";
      return offset;
    }
    arrays << "const " << hostType << " " << name << "[" << n << "] = {";
    for (int64_t i = 0; i < n; ++i)
      arrays << (i ? ", " : "") << literal(i);
    arrays << "};\n";
    uploads << "  TGC_CUDA_CHECK(cudaMemcpy(constants + " << offset << ", "
            << name << ", " << bytesOf(v) << ", cudaMemcpyHostToDevice));\n";
    return offset;
  }
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
  /// Values read and written (before view resolution).
  SmallVector<Value> reads, writes;
  /// LaunchArena buffers touched that are no SSA value (the attention LSE).
  SmallVector<int> extra;
  int timer = -1;
};

/// A tg.kernel of tg-fuse's, flattened: its ops in order, in the block where
/// it stood, and the values it stores (its results).
struct FusedKernel {
  KernelKind kind;
  SmallVector<Operation *> ops;
  SmallVector<Value> outputs;
};

/// One tg.all_reduce: its inputs travel in one buffer.
struct Bucket {
  AllReduceOp op;
  /// Per operand: reduced in place (the bucket is the gradient's buffer).
  SmallVector<bool> inPlace;
  SmallVector<int64_t> offsets; ///< byte offset of each operand
  int64_t bytes = 0;
  Type elementType;
  int buffer = -1;
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

  /// The pointer variable of `v` (declared on first use).
  std::string ptr(Value v);
  /// Its name where it has one already, without declaring it again in this
  /// part.
  std::string nameOf(Value v) {
    auto it = names.find(v);
    return it != names.end() ? it->second : ptr(v);
  }
  llvm::raw_ostream &out() { return os; }
  int64_t arenaBytes() const { return arena.peakBytes(); }
  int64_t numTimed() const { return timers; }
  double flops() const { return totalFlops; }
  int64_t numBuckets() const { return buckets.size(); }
  const std::vector<std::string> &timerLabels() const { return labels; }
  const std::vector<bool> &timerOnComm() const { return onComm; }
  std::string flopsComment;
  std::string trafficComment;

private:
  LogicalResult checkTypes();
  LogicalResult flattenKernels();
  LogicalResult gemmLaunch(const FusedKernel &kernel);
  LogicalResult planFusion();
  LogicalResult buildLaunches();
  LogicalResult placeBucketWaits();
  LogicalResult planMemory();
  LogicalResult verifyPlan();
  void countFlops();
  void countTraffic();

  LogicalResult emitLaunch(Launch &launch);
  LogicalResult emitOp(Launch &launch, Operation *op);
  LogicalResult emitElementwise(Launch &launch);
  LogicalResult emitGemm(Launch &launch);
  void emitClassifier(Launch &launch);
  void emitBucket(Launch &launch);
  std::string timerBegin(const Launch &launch, StringRef stream = "stream");
  std::string timerEnd(const Launch &launch, StringRef stream = "stream");

  Value root(Value v) const {
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
  DenseMap<Operation *, int64_t> opIndex;
  /// Views and in-place results: the value whose buffer a value uses.
  DenseMap<Value, Value> alias;
  /// Ops with no launch of their own (covered by another op's launch).
  llvm::SmallPtrSet<Operation *, 16> absorbed;
  /// Launches by the op whose position they take.
  DenseMap<Operation *, Launch> anchored;
  /// tg-fuse's kernels, flattened (flattenKernels).
  std::vector<FusedKernel> fusedKernels;
  /// Elementwise kernels by their last op.
  DenseMap<Operation *, const FusedKernel *> elementwiseKernels;
  /// The multiply folded into an optimizer update: its scale operand.
  DenseMap<Operation *, Value> gradScaleOf;
  /// tg.attention_grad -> the tg.attention on the same q, k, v.
  DenseMap<Operation *, AttentionOp> forwardOf;
  DenseMap<Operation *, int> lseBuffer;
  /// Constants read through memory (not as literals).
  llvm::SetVector<Value> materialized;

  std::vector<Launch> launches; ///< in schedule order
  /// One per tg.all_reduce, in op order.
  std::vector<Bucket> buckets;
  DenseMap<Operation *, int> bucketOf;

  LaunchArena arena;
  DenseMap<Value, int> bufferOf;
  DenseMap<Value, int64_t> memberOffset;
  DenseMap<Value, int64_t> constantOffset;

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
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::checkTypes() {
  // Blame the first op that touches a value of a type the GPU lacks.
  auto check = [&](Value v, Operation *where) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return where->emitError(kBackend)
             << ": " << where->getName() << " has a value of type "
             << v.getType() << ", expected a ranked tensor";
    if (storageType(t.getElementType()).empty())
      return where->emitError(kBackend)
             << ": " << where->getName() << " has element type "
             << t.getElementType()
             << ", which the GPU backend does not support (f32, bf16, i32, "
                "i64 and i1 are)";
    return success();
  };
  WalkResult walk = func.walk([&](Operation *op) {
    if (op == func.getOperation())
      return WalkResult::advance();
    for (Value v : op->getOperands())
      if (failed(check(v, op)))
        return WalkResult::interrupt();
    for (Value r : op->getResults())
      if (failed(check(r, op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (BlockArgument arg : func.getArguments())
    if (failed(check(arg, func)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// tg-fuse's tg.kernel ops, each replaced by its body's ops where it stood:
/// the launches are built from the recorded groups over one flat block.
LogicalResult StepEmitter::flattenKernels() {
  Block &block = func.getBody().front();
  SmallVector<KernelOp> kernels;
  for (Operation &op : block)
    if (auto kernel = dyn_cast<KernelOp>(op))
      kernels.push_back(kernel);
  for (KernelOp kernel : kernels) {
    Block &body = kernel.getBody().front();
    for (auto [arg, input] : llvm::zip(body.getArguments(), kernel.getInputs()))
      arg.replaceAllUsesWith(input);
    FusedKernel fused;
    fused.kind = kernel.getKind();
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
      op.moveBefore(kernel);
      fused.ops.push_back(&op);
    }
    for (auto [result, value] :
         llvm::zip(kernel.getResults(), kernel.getYield().getValues())) {
      result.replaceAllUsesWith(value);
      fused.outputs.push_back(value);
    }
    // tg-schedule's waits are the kernel's first op's.
    if (Attribute waits = kernel->getAttr(TgDialect::kWaitsAttr))
      fused.ops.front()->setAttr(TgDialect::kWaitsAttr, waits);
    kernel.erase();
    fusedKernels.push_back(std::move(fused));
  }
  return success();
}

/// The cuBLASLt epilogue of a gemm kernel (tg-fuse's cuda rules): a bias
/// add, a tanh GELU, both, or a tanh GELU gradient after the matmul.
LogicalResult StepEmitter::gemmLaunch(const FusedKernel &kernel) {
  auto mm = cast<MatmulOp>(kernel.ops.front());
  Launch launch;
  launch.kind = LaunchKind::Gemm;
  launch.matmul = mm;
  launch.covered = kernel.ops;
  Value c = mm.getResult();
  auto isTanhGelu = [](Operation *op) {
    auto gelu = dyn_cast<GeluOp>(op);
    return gelu && gelu.getApproximate() == GeluApproximation::tanh;
  };
  ArrayRef<Operation *> epilogue = ArrayRef(kernel.ops).drop_front();
  auto add = dyn_cast<AddOp>(epilogue.front());
  if (add && epilogue.size() <= 2 &&
      (epilogue.size() == 1 || isTanhGelu(epilogue.back()))) {
    launch.bias = add.getLhs() == c ? add.getRhs() : add.getLhs();
    if (epilogue.size() == 2) {
      launch.epilogue = "BiasGelu";
      launch.aux = add.getResult();
    } else {
      launch.epilogue = "Bias";
    }
  } else if (epilogue.size() == 1 && isTanhGelu(epilogue.front())) {
    launch.epilogue = "Gelu";
    launch.aux = c;
  } else if (auto grad = dyn_cast<GeluGradOp>(epilogue.front());
             grad && epilogue.size() == 1 &&
             grad.getApproximate() == GeluApproximation::tanh &&
             grad.getGrad() == c) {
    launch.epilogue = "GeluGrad";
    launch.aux = grad.getX();
  } else {
    std::string ops;
    for (Operation *op : epilogue)
      ops += (ops.empty() ? "" : ", ") + opLabel(op);
    return mm.emitError(kBackend)
           << ": a gemm kernel with an epilogue cuBLASLt lacks (" << ops
           << "); tg-fuse's cuda target forms only bias, tanh GELU and its "
              "gradient";
  }
  launch.out = epilogue.back()->getResult(0);
  launch.op = kernel.ops.back();
  for (Operation *op : kernel.ops)
    if (op != launch.op)
      absorbed.insert(op);
  anchored[launch.op] = launch;
  return success();
}

LogicalResult StepEmitter::planFusion() {
  Block &block = func.getBody().front();
  DenseSet<Operation *> inKernel;
  for (const FusedKernel &kernel : fusedKernels)
    inKernel.insert(kernel.ops.begin(), kernel.ops.end());
  for (Operation &op : block.without_terminator()) {
    opIndex[&op] = ops.size();
    ops.push_back(&op);
  }

  // Views share their operand's buffer, unless a kernel computes them.
  for (Operation *op : ops)
    if (isView(op) && !inKernel.contains(op))
      alias[op->getResult(0)] = op->getOperand(0);

  for (const FusedKernel &kernel : fusedKernels) {
    switch (kernel.kind) {
    case KernelKind::gemm:
      if (failed(gemmLaunch(kernel)))
        return failure();
      break;
    case KernelKind::classifier: {
      // cross_entropy + cross_entropy_grad in one read of the logits.
      auto ce = cast<CrossEntropyOp>(kernel.ops[0]);
      auto grad = cast<CrossEntropyGradOp>(kernel.ops[1]);
      Launch launch;
      launch.kind = LaunchKind::Classifier;
      launch.op = grad;
      launch.crossEntropy = ce;
      launch.crossEntropyGrad = grad;
      launch.covered = kernel.ops;
      absorbed.insert(ce);
      // In place when nothing else reads the logits: they become their
      // gradient.
      Value logits = ce.getLogits();
      bool onlyLoss = llvm::all_of(logits.getUsers(), [&](Operation *u) {
        return u == ce.getOperation() || u == grad.getOperation();
      });
      if (onlyLoss && logits.getDefiningOp() &&
          !isView(logits.getDefiningOp()) && !alias.count(logits) &&
          elementType(logits) == elementType(grad.getResult()))
        alias[grad.getResult()] = logits;
      anchored[grad] = launch;
      break;
    }
    case KernelKind::optimizer: {
      // The update reads the gradient and multiplies it by the scale.
      auto mul = cast<MulOp>(kernel.ops[0]);
      auto update = cast<OptimizerUpdateOp>(kernel.ops[1]);
      bool scaleIsRhs = tensorType(mul.getRhs()).getRank() == 0 &&
                        elementType(mul.getRhs()).isF32();
      gradScaleOf[update] = scaleIsRhs ? mul.getRhs() : mul.getLhs();
      alias[mul.getResult()] = scaleIsRhs ? mul.getLhs() : mul.getRhs();
      absorbed.insert(mul);
      break;
    }
    case KernelKind::elementwise: {
      // One generated kernel computing every output at each index.
      Operation *last = kernel.ops.back();
      for (Operation *op : kernel.ops)
        if (op != last)
          absorbed.insert(op);
      elementwiseKernels[last] = &kernel;
      break;
    }
    case KernelKind::reduction:
      return kernel.ops.front()->emitError(kBackend)
             << ": a reduction kernel; tg-fuse's cuda target forms none (the "
                "runtime reduces)";
    }
  }

  // tg.attention_grad reads the forward's output and log-sum-exp when the
  // forward is in the same function.
  for (Operation *op : ops) {
    auto grad = dyn_cast<AttentionGradOp>(op);
    if (!grad)
      continue;
    for (Operation *user : grad.getQuery().getUsers()) {
      auto fwd = dyn_cast<AttentionOp>(user);
      if (fwd && fwd.getKey() == grad.getKey() &&
          fwd.getValue() == grad.getValue() &&
          fwd.getMask() == grad.getMask() &&
          fwd.getCausal() == grad.getCausal() &&
          fwd.getScale() == grad.getScale() && opIndex.count(fwd) &&
          opIndex.lookup(fwd) < opIndex.lookup(grad) &&
          tensorType(fwd.getResult()) == tensorType(grad.getGrad())) {
        forwardOf[grad] = fwd;
        break;
      }
    }
  }

  // Each tg.all_reduce (a bucket of tg-schedule's) is one message: its
  // inputs laid out in one buffer, each reduced in place when nothing else
  // reads it.
  for (Operation *op : ops) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    if (!reduce)
      continue;
    Bucket b;
    b.op = reduce;
    b.elementType = elementType(reduce.getInputs()[0]);
    for (auto [input, result] :
         llvm::zip(reduce.getInputs(), reduce.getResults())) {
      if (elementType(input) != b.elementType)
        return reduce.emitError(kBackend)
               << ": a tg.all_reduce of " << b.elementType << " and "
               << elementType(input)
               << " tensors; one message holds one type (tg-schedule splits "
                  "them)";
      Operation *def = input.getDefiningOp();
      bool own = def && !isView(def) && !isa<ConstantOp>(def) &&
                 !alias.count(input) && input.hasOneUse() &&
                 !absorbed.contains(def);
      b.inPlace.push_back(own);
      if (own)
        alias[result] = input;
      b.offsets.push_back(b.bytes);
      b.bytes += (bytesOf(input) + 255) / 256 * 256;
    }
    bucketOf[reduce] = buckets.size();
    buckets.push_back(std::move(b));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::buildLaunches() {
  for (Operation *op : ops) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto it = anchored.find(op); it != anchored.end()) {
      launches.push_back(it->second);
    } else if (absorbed.contains(op)) {
      continue;
    } else if (auto it = elementwiseKernels.find(op);
               it != elementwiseKernels.end()) {
      Launch launch;
      launch.kind = LaunchKind::Elementwise;
      launch.op = op;
      launch.covered = it->second->ops;
      launch.writes = it->second->outputs;
      launches.push_back(launch);
    } else if (isView(op)) {
      continue;
    } else if (isElementwise(op)) {
      // A lone elementwise op: a generated kernel of its own.
      Launch launch;
      launch.kind = LaunchKind::Elementwise;
      launch.op = op;
      launch.covered = {op};
      launch.writes = {op->getResult(0)};
      launches.push_back(launch);
    } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
      Launch launch;
      launch.kind = LaunchKind::Bucket;
      launch.op = op;
      launch.bucket = bucketOf.lookup(op);
      launch.covered = {op};
      Bucket &b = buckets[launch.bucket];
      for (auto [i, own] : llvm::enumerate(b.inPlace))
        if (!own) {
          launch.reads.push_back(reduce.getInputs()[i]);
          launch.writes.push_back(reduce.getResults()[i]);
        }
      launches.push_back(launch);
    } else if (auto mm = dyn_cast<MatmulOp>(op)) {
      Launch launch;
      launch.kind = LaunchKind::Gemm;
      launch.op = op;
      launch.matmul = mm;
      launch.out = mm.getResult();
      launch.covered = {op};
      launches.push_back(launch);
    } else {
      Launch launch;
      launch.op = op;
      launch.covered = {op};
      launches.push_back(launch);
    }
  }

  // Reads and writes.
  for (Launch &l : launches) {
    llvm::SmallPtrSet<Operation *, 8> inside(l.covered.begin(),
                                             l.covered.end());
    auto addRead = [&](Value v) {
      if (!llvm::is_contained(l.reads, v))
        l.reads.push_back(v);
    };
    switch (l.kind) {
    case LaunchKind::Elementwise:
      for (Operation *op : l.covered)
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (def && inside.contains(def))
            continue;
          if (splatValue(operand))
            continue; // a literal in the kernel
          addRead(operand);
        }
      break;
    case LaunchKind::Gemm:
      addRead(l.matmul.getLhs());
      addRead(l.matmul.getRhs());
      if (l.bias)
        addRead(l.bias);
      if (l.epilogue == "GeluGrad")
        addRead(l.aux);
      else if (l.aux)
        l.writes.push_back(l.aux);
      l.writes.push_back(l.out);
      break;
    case LaunchKind::Classifier:
      addRead(l.crossEntropy.getLogits());
      addRead(l.crossEntropy.getLabels());
      if (!isSplatOne(l.crossEntropyGrad.getGrad()))
        addRead(l.crossEntropyGrad.getGrad());
      l.writes.push_back(l.crossEntropy.getResult());
      l.writes.push_back(l.crossEntropyGrad.getResult());
      break;
    case LaunchKind::AllReduceWait:
      break;
    case LaunchKind::Op: {
      for (Value operand : l.op->getOperands())
        addRead(operand);
      if (auto update = dyn_cast<OptimizerUpdateOp>(l.op)) {
        // In place: the new parameter and state overwrite the old.
        alias[update.getNewParam()] = update.getParam();
        for (auto [newState, old] :
             llvm::zip(update.getNewState(), update.getState()))
          alias[newState] = old;
        if (Value scale = gradScaleOf.lookup(update))
          addRead(scale);
      }
      if (auto grad = dyn_cast<AttentionGradOp>(l.op))
        if (AttentionOp fwd = forwardOf.lookup(grad))
          addRead(fwd.getResult());
      for (Value r : l.op->getResults())
        l.writes.push_back(r);
      break;
    }
    default:
      break;
    }
  }
  // Constants read through memory.
  for (Launch &l : launches)
    for (Value v : l.reads)
      if (Operation *def = root(v).getDefiningOp())
        if (isa<ConstantOp>(def))
          materialized.insert(root(v));
  return success();
}

LogicalResult StepEmitter::placeBucketWaits() {
  if (buckets.empty())
    return success();
  // tg-schedule's tg.waits: the buckets an op waits for, by the IR's bucket
  // numbers; the return's are waited for at the step's end.
  DenseMap<int64_t, int> bucketNumbered;
  for (auto [i, b] : llvm::enumerate(buckets)) {
    std::optional<uint64_t> number = b.op.getBucket();
    if (!number)
      return b.op.emitError(kBackend)
             << ": a tg.all_reduce without a bucket; run tg-schedule first";
    bucketNumbered[*number] = i;
  }
  auto waitsOf = [&](Operation *op) {
    SmallVector<int> list;
    if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kWaitsAttr))
      for (int64_t number : attr.asArrayRef())
        if (auto it = bucketNumbered.find(number); it != bucketNumbered.end())
          list.push_back(it->second);
    return list;
  };
  // What a bucket holds once reduced, to check that nothing touches it
  // before its wait (the emitter's own grouping may not move a reader
  // ahead of the op tg-schedule made wait).
  DenseMap<Value, int> heldBy;
  for (auto [i, b] : llvm::enumerate(buckets))
    for (Value r : b.op.getResults())
      heldBy[root(r)] = i;
  std::vector<bool> launched(buckets.size(), false),
      waited(buckets.size(), false);
  std::vector<Launch> scheduled;
  auto wait = [&](int b) {
    if (waited[b])
      return;
    Launch l;
    l.kind = LaunchKind::AllReduceWait;
    l.op = buckets[b].op;
    l.bucket = b;
    scheduled.push_back(std::move(l));
    waited[b] = true;
  };
  for (Launch &l : launches) {
    if (l.kind == LaunchKind::Bucket) {
      launched[l.bucket] = true;
    } else {
      for (Operation *op : l.covered)
        for (int b : waitsOf(op))
          wait(b);
      for (ArrayRef<Value> values :
           {ArrayRef<Value>(l.reads), ArrayRef<Value>(l.writes)})
        for (Value v : values) {
          auto it = heldBy.find(root(v));
          if (it != heldBy.end() && launched[it->second] &&
              !waited[it->second])
            return l.op->emitError(kBackend)
                   << ": internal error: this launch touches all-reduce "
                      "bucket "
                   << *buckets[it->second].op.getBucket()
                   << " before the op that waits for it (tg.waits)";
        }
    }
    scheduled.push_back(std::move(l));
  }
  for (int b : waitsOf(func.getBody().front().getTerminator()))
    wait(b);
  for (size_t b = 0; b < buckets.size(); ++b)
    if (!waited[b])
      return buckets[b].op.emitError(kBackend)
             << ": no op waits for all-reduce bucket "
             << *buckets[b].op.getBucket() << "; run tg-schedule first";
  launches = std::move(scheduled);
  return success();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::planMemory() {
  // Buckets first: their members are placed inside them.
  for (Bucket &b : buckets) {
    b.buffer = arena.addBuffer(b.bytes);
    for (auto [m, offset] : llvm::enumerate(b.offsets)) {
      Value slot = b.inPlace[m] ? b.op.getInputs()[m] : b.op.getResults()[m];
      bufferOf[slot] = b.buffer;
      memberOffset[slot] = offset;
    }
  }
  auto bufferFor = [&](Value v) -> int {
    Value r = root(v);
    if (isa<BlockArgument>(r) || r.getDefiningOp<ConstantOp>())
      return -1;
    auto it = bufferOf.find(r);
    if (it != bufferOf.end())
      return it->second;
    int id = arena.addBuffer(bytesOf(r));
    bufferOf[r] = id;
    return id;
  };
  Launch returnLaunch;
  returnLaunch.kind = LaunchKind::Return;
  for (Value v : func.getBody().front().getTerminator()->getOperands())
    returnLaunch.reads.push_back(v);
  llvm::SmallPtrSet<Operation *, 16> differentiated; // attention forwards
  for (auto [grad, fwd] : forwardOf)
    differentiated.insert(fwd);
  for (auto [pos, l] : llvm::enumerate(launches)) {
    for (Value v : l.writes)
      if (int b = bufferFor(v); b >= 0)
        arena.touch(b, pos);
    for (Value v : l.reads)
      if (int b = bufferFor(v); b >= 0)
        arena.touch(b, pos);
    // A bucket is reduced on the communication stream until the compute
    // stream waits for it: its bytes stay taken until then.
    if (l.kind == LaunchKind::Bucket)
      arena.touch(buckets[l.bucket].buffer, pos);
    if (l.kind == LaunchKind::AllReduceWait)
      arena.touch(buckets[l.bucket].buffer, pos);
    // The attention LSE lives from the forward to its gradient.
    if (auto fwd = dyn_cast<AttentionOp>(l.op);
        fwd && l.kind == LaunchKind::Op && differentiated.contains(fwd)) {
      if (!lseBuffer.count(fwd)) {
        ArrayRef<int64_t> q = tensorType(fwd.getQuery()).getShape();
        lseBuffer[fwd] = arena.addBuffer(q[0] * q[1] * q[2] * 4);
      }
      arena.touch(lseBuffer[fwd], pos);
    }
    if (auto grad = dyn_cast<AttentionGradOp>(l.op))
      if (AttentionOp fwd = forwardOf.lookup(grad))
        arena.touch(lseBuffer.lookup(fwd), pos);
  }
  for (Value v : returnLaunch.reads)
    if (int b = bufferFor(v); b >= 0)
      arena.touch(b, launches.size());
  arena.plan(256);

  return verifyPlan();
}

/// Replays the schedule over the arena: every value a launch reads must
/// still be in its bytes (written earlier, not overwritten since). A failure
/// is a compiler bug, reported rather than emitted.
LogicalResult StepEmitter::verifyPlan() {
  // Disjoint byte ranges of the planned region and the value in each; the
  // LSE buffers are owned by their attention op.
  std::map<int64_t, std::pair<int64_t, const void *>> owners;
  auto rangeOf = [&](Value r) -> std::pair<int64_t, int64_t> {
    int64_t start = arena.offset(bufferOf.lookup(r)) + memberOffset.lookup(r);
    return {start, start + std::max<int64_t>(bytesOf(r), 1)};
  };
  auto write = [&](int64_t start, int64_t end, const void *owner) {
    auto it = owners.lower_bound(start);
    if (it != owners.begin() && std::prev(it)->second.first > start)
      --it;
    std::vector<std::pair<int64_t, std::pair<int64_t, const void *>>> keep;
    while (it != owners.end() && it->first < end) {
      auto [s, rest] = *it;
      if (s < start)
        keep.push_back({s, {start, rest.second}});
      if (rest.first > end)
        keep.push_back({end, {rest.first, rest.second}});
      it = owners.erase(it);
    }
    for (auto &k : keep)
      owners[k.first] = k.second;
    owners[start] = {end, owner};
  };
  auto holds = [&](int64_t start, int64_t end, const void *owner) {
    int64_t at = start;
    auto it = owners.upper_bound(start);
    if (it == owners.begin())
      return false;
    --it;
    for (; it != owners.end() && at < end; ++it) {
      if (it->first > at || it->second.second != owner)
        return false;
      at = it->second.first;
    }
    return at >= end;
  };
  auto planned = [&](Value v) {
    return !isa<BlockArgument>(v) && !v.getDefiningOp<ConstantOp>() &&
           bufferOf.count(v);
  };
  auto check = [&](Launch &l, Value v) -> LogicalResult {
    Value r = root(v);
    if (!planned(r))
      return success();
    auto [start, end] = rangeOf(r);
    if (holds(start, end, r.getAsOpaquePointer()))
      return success();
    return l.op->emitError(kBackend)
           << ": internal error: the arena plan overwrites an operand of "
           << describeOp(l.op) << " before it is read";
  };
  for (Launch &l : launches) {
    for (Value v : l.reads)
      if (failed(check(l, v)))
        return failure();
    if (auto grad = dyn_cast_or_null<AttentionGradOp>(l.op))
      if (AttentionOp fwd = forwardOf.lookup(grad)) {
        int b = lseBuffer.lookup(fwd);
        if (!holds(arena.offset(b), arena.offset(b) + arena.bytes(b),
                   fwd.getOperation()))
          return l.op->emitError(kBackend)
                 << ": internal error: the attention LSE is overwritten";
      }
    if (l.kind == LaunchKind::Bucket) {
      Bucket &b = buckets[l.bucket];
      for (auto [m, own] : llvm::enumerate(b.inPlace))
        if (own && failed(check(l, b.op.getInputs()[m])))
          return failure();
    }
    for (Value v : l.writes) {
      Value r = root(v);
      if (planned(r)) {
        auto [start, end] = rangeOf(r);
        write(start, end, r.getAsOpaquePointer());
      }
    }
    if (auto fwd = dyn_cast_or_null<AttentionOp>(l.op))
      if (lseBuffer.count(fwd)) {
        int b = lseBuffer.lookup(fwd);
        write(arena.offset(b), arena.offset(b) + arena.bytes(b),
              fwd.getOperation());
      }
  }
  Launch end;
  end.op = func;
  for (Value v : func.getBody().front().getTerminator()->getOperands())
    if (failed(check(end, v)))
      return failure();
  return success();
}

std::string StepEmitter::ptr(Value v) {
  auto it = names.find(v);
  if (it != names.end()) {
    // Declared in an earlier part: again in this one.
    if (declaredHere.insert(v).second) {
      if (auto d = declarations.find(v); d != declarations.end())
        os << d->second;
      else
        ptr(root(v));
    }
    return it->second;
  }
  declaredHere.insert(v);
  Value r = root(v);
  StringRef type = storageOf(v);
  // A view of another value of the same type has that value's name.
  if (r != v && storageOf(r) == type) {
    std::string rootName = ptr(r);
    names[v] = rootName;
    return rootName;
  }
  std::string name;
  std::string expr;
  if (auto arg = dyn_cast<BlockArgument>(r)) {
    name = "a" + std::to_string(arg.getArgNumber());
    expr = "(" + type.str() + " *)" + bindArgument(arg.getArgNumber());
  } else if (r.getDefiningOp<ConstantOp>()) {
    name = "c" + std::to_string(valueCounter++);
    expr = llvm::formatv("({0} *)(d.constants + {1})", type,
                         constantOffset.lookup(r))
               .str();
  } else {
    name = "v" + std::to_string(valueCounter++);
    int64_t offset = arena.offset(bufferOf.lookup(r)) + memberOffset.lookup(r);
    expr = llvm::formatv("({0} *)(work + {1})", type, offset).str();
  }
  if (r != v) // a view with another element type (a bitcast reshape)
    name = "v" + std::to_string(valueCounter++);
  std::string &line = declarations[v];
  llvm::raw_string_ostream declaration(line);
  declaration << "  " << type << " *" << name << " = " << expr << ";";
  if (auto arg = dyn_cast<BlockArgument>(r)) {
    for (StringRef attr : {TgDialect::kParamAttr, TgDialect::kStateAttr,
                           TgDialect::kInputAttr, TgDialect::kAccumAttr,
                           TgDialect::kScalarAttr})
      if (auto s = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr))
        declaration << " // " << s.getValue();
  }
  declaration << "\n";
  os << line;
  names[v] = name;
  return name;
}

//===----------------------------------------------------------------------===//
// FLOPs
//===----------------------------------------------------------------------===//

void StepEmitter::countFlops() {
  double matmuls = 0, attention = 0;
  int64_t numMatmuls = 0, numAttention = 0;
  for (Operation *op : ops) {
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      auto a = tensorType(mm.getLhs()), c = tensorType(mm.getResult());
      int64_t k = mm.getTransposeLhs() ? a.getShape()[a.getRank() - 2]
                                       : a.getShape().back();
      matmuls += 2.0 * c.getNumElements() * k;
      ++numMatmuls;
    } else if (auto at = dyn_cast<AttentionOp>(op)) {
      ArrayRef<int64_t> q = tensorType(at.getQuery()).getShape(),
                        k = tensorType(at.getKey()).getShape(),
                        v = tensorType(at.getValue()).getShape();
      double f = 2.0 * q[0] * q[1] * q[2] * k[2] * (q[3] + v[3]);
      attention += at.getCausal() ? f / 2 : f;
      ++numAttention;
    } else if (auto at = dyn_cast<AttentionGradOp>(op)) {
      ArrayRef<int64_t> q = tensorType(at.getQuery()).getShape(),
                        k = tensorType(at.getKey()).getShape(),
                        v = tensorType(at.getValue()).getShape();
      double f = 4.0 * q[0] * q[1] * q[2] * k[2] * (q[3] + v[3]);
      attention += at.getCausal() ? f / 2 : f;
      ++numAttention;
    }
  }
  totalFlops = matmuls + attention;
  flopsComment = llvm::formatv(
      "//   {0} tg.matmul: 2*M*N*K each (batch dims included) = {1:e4}\n"
      "//   {2} tg.attention / tg.attention_grad: 4*B*H*T*S*D forward, twice "
      "that\n//     backward, halved when causal = {3:e4}\n",
      numMatmuls, matmuls, numAttention, attention);
}

/// What the step's launches move: the tensors each launch other than a
/// GEMM or a collective reads and writes, once per launch (a lower bound on
/// its memory traffic: a launcher may read a tensor twice). Intermediates a
/// launch keeps in registers are not counted, which is what fusion saves.
void StepEmitter::countTraffic() {
  for (Launch &l : launches) {
    switch (l.kind) {
    case LaunchKind::Gemm:
      ++gemmLaunches;
      continue;
    case LaunchKind::Bucket:
    case LaunchKind::AllReduceWait:
    case LaunchKind::Return:
      continue;
    case LaunchKind::Op:
      if (isa<MatmulOp>(l.op)) {
        ++gemmLaunches;
        continue;
      }
      break;
    default:
      break;
    }
    ++otherLaunches;
    llvm::SmallPtrSet<void *, 8> seen;
    for (Value v : l.reads)
      if (seen.insert(root(v).getAsOpaquePointer()).second)
        otherReadBytes += bytesOf(v);
    for (Value v : l.writes)
      otherWrittenBytes += bytesOf(v);
  }
  trafficComment = llvm::formatv(
      "//   {0} GEMM launches, {1} other kernel launches, {2} all-reduce "
      "buckets;\n//   the other kernels read {3:e4} and write {4:e4} bytes "
      "(each\n//   tensor once per launch)\n",
      gemmLaunches, otherLaunches, buckets.size(), otherReadBytes,
      otherWrittenBytes);
}

//===----------------------------------------------------------------------===//
// Code
//===----------------------------------------------------------------------===//

std::string StepEmitter::timerBegin(const Launch &launch, StringRef stream) {
  return llvm::formatv("  t.begin({0}, {1});\n", launch.timer, stream).str();
}
std::string StepEmitter::timerEnd(const Launch &launch, StringRef stream) {
  return llvm::formatv("  t.end({0}, {1});\n", launch.timer, stream).str();
}

/// The index of `operand` (shaped `in`) for element `i` of a result shaped
/// `out`, with numpy broadcasting; constant strides fold at compile time.
static std::string indexExpr(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                             StringRef i) {
  if (std::optional<std::string> simple = simpleBroadcastIndex(in, out, i))
    return *simple;
  while (!in.empty() && in.front() == 1)
    in = in.drop_front();
  // General case: one term per dim the operand does not broadcast along.
  SmallVector<int64_t> padded(out.size() - in.size(), 1);
  padded.append(in.begin(), in.end());
  std::string expr;
  int64_t stride = 1, inner = 1;
  for (int64_t d = out.size() - 1; d >= 0; --d) {
    if (padded[d] != 1) {
      std::string term =
          llvm::formatv("(({0} / {1}) % {2}) * {3}", i, inner, out[d], stride)
              .str();
      expr = expr.empty() ? term : term + " + " + expr;
      stride *= padded[d];
    }
    inner *= out[d];
  }
  return "(" + (expr.empty() ? std::string("0") : expr) + ")";
}

/// A literal of a one-value constant in the math type `math`.
static std::string literalOf(Attribute value, StringRef math) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    if (math == "float")
      return floatLiteral(f.getValueAsDouble());
    return llvm::formatv("({0})({1})", math, f.getValueAsDouble()).str();
  }
  auto i = cast<IntegerAttr>(value);
  if (math == "bool")
    return i.getValue().isZero() ? "false" : "true";
  std::string s = std::to_string(i.getValue().getSExtValue());
  if (math == "float")
    return s + ".0f";
  return math == "int64_t" ? s + "ll" : s;
}

/// The expression computing `op` from its operands' values `a` (in their
/// math types); its value is in the math type of its result.
static FailureOr<std::string> elementwiseExpr(Operation *op,
                                              ArrayRef<std::string> a) {
  Type resultElem = elementType(op->getResult(0));
  StringRef math = mathType(resultElem);
  bool isFloat = math == "float";
  auto fmt = [&](StringRef f) -> std::string {
    return llvm::formatv(f.data(), a.size() > 0 ? a[0] : "",
                         a.size() > 1 ? a[1] : "", a.size() > 2 ? a[2] : "")
        .str();
  };
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](AddOp) { return fmt("{0} + {1}"); })
      .Case([&](SubOp) { return fmt("{0} - {1}"); })
      .Case([&](MulOp) { return fmt("{0} * {1}"); })
      .Case([&](DivOp) { return fmt("{0} / {1}"); })
      .Case([&](PowOp) {
        return isFloat ? fmt("powf({0}, {1})")
                       : "(" + math.str() +
                             ")pow((double)" + a[0] + ", (double)" + a[1] +
                             ")";
      })
      .Case([&](MaximumOp) { return fmt("({0} >= {1} ? {0} : {1})"); })
      .Case([&](MinimumOp) { return fmt("({0} <= {1} ? {0} : {1})"); })
      .Case([&](CompareOp c) {
        StringRef sym = comparisonOperator(c.getPredicate());
        return "(" + a[0] + " " + sym.str() + " " + a[1] + ")";
      })
      .Case([&](SelectOp) { return fmt("({0} ? {1} : {2})"); })
      .Case([&](NegOp) { return fmt("-{0}"); })
      .Case([&](AbsOp) {
        return isFloat ? fmt("fabsf({0})") : fmt("({0} < 0 ? -{0} : {0})");
      })
      .Case([&](ExpOp) { return fmt("expf({0})"); })
      .Case([&](LogOp) { return fmt("logf({0})"); })
      .Case([&](SqrtOp) { return fmt("sqrtf({0})"); })
      .Case([&](RsqrtOp) { return fmt("1.0f / sqrtf({0})"); })
      .Case([&](TanhOp) { return fmt("tanhf({0})"); })
      .Case([&](SinOp) { return fmt("sinf({0})"); })
      .Case([&](CosOp) { return fmt("cosf({0})"); })
      .Case([&](ReluOp) { return fmt("({0} > 0.0f ? {0} : 0.0f)"); })
      .Case([&](SigmoidOp) { return fmt("1.0f / (1.0f + expf(-{0}))"); })
      .Case([&](SiluOp) { return fmt("{0} / (1.0f + expf(-{0}))"); })
      .Case([&](GeluOp g) {
        return "tgc::cuda::" + geluFunction(g.getApproximate()).str() + "(" +
               a[0] + ")";
      })
      .Case([&](GeluGradOp g) {
        return a[0] +
               " * tgc::cuda::" + geluFunction(g.getApproximate()).str() +
               "Grad(" + a[1] + ")";
      })
      .Case([&](CastOp c) -> std::string {
        StringRef from = mathType(elementType(c.getX()));
        if (math == "bool")
          return "(" + a[0] + " != 0)";
        if (from == math)
          return a[0];
        return "(" + math.str() + ")(" + a[0] + ")";
      })
      .Case([&](BroadcastToOp) { return a[0]; })
      .Default([&](Operation *other) -> FailureOr<std::string> {
        return other->emitError(kBackend) << ": no elementwise lowering";
      });
}

/// The math type an op reads operand `i` in.
static StringRef operandMath(Operation *op, unsigned i) {
  if (isa<SelectOp>(op) && i == 0)
    return "bool";
  if (isa<CompareOp, CastOp>(op))
    return mathType(elementType(op->getOperand(i)));
  return mathType(elementType(op->getResult(0)));
}

namespace {

/// The body of one generated kernel: the value of the root at element `i`,
/// built from its tree by asking each op for its value at an index (an
/// elementwise op at the broadcast index of each operand, a transpose or
/// slice at the remapped one), down to loads of the kernel's parameters.
class KernelBody {
public:
  KernelBody(ArrayRef<Operation *> tree, const DenseMap<Value, std::string> &params)
      : inside(tree.begin(), tree.end()), params(params) {}

  /// A local holding `v` at linear index `idx` (in `v`'s shape), in the
  /// math type of its element type.
  FailureOr<std::string> value(Value v, const std::string &idx);
  std::string text;

private:
  std::string local(StringRef type, StringRef prefix, const std::string &expr) {
    std::string name = (prefix + Twine(counter++)).str();
    text += llvm::formatv("    {0} {1} = {2};\n", type, name, expr).str();
    return name;
  }
  /// `idx` as a local when it is more than a name.
  std::string indexLocal(const std::string &expr) {
    if (llvm::all_of(expr, [](char c) { return isalnum((unsigned char)c) || c == '_'; }))
      return expr;
    return local("const int64_t", "j", expr);
  }

  llvm::SmallPtrSet<Operation *, 8> inside;
  const DenseMap<Value, std::string> &params;
  std::map<std::pair<const void *, std::string>, std::string> memo;
  unsigned counter = 0;
};

/// The multi-index of `idx` over `shape`: one expression per dim.
SmallVector<std::string> unravel(const std::string &idx,
                                 ArrayRef<int64_t> shape) {
  SmallVector<std::string> dims(shape.size());
  int64_t inner = 1;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1)
      dims[d] = "0";
    else if (d == 0)
      dims[d] = inner == 1 ? idx : llvm::formatv("({0} / {1})", idx, inner).str();
    else if (inner == 1)
      dims[d] = llvm::formatv("({0} % {1})", idx, shape[d]).str();
    else
      dims[d] =
          llvm::formatv("(({0} / {1}) % {2})", idx, inner, shape[d]).str();
    inner *= shape[d];
  }
  return dims;
}

/// The linear index of a multi-index over `shape`.
std::string ravel(ArrayRef<std::string> dims, ArrayRef<int64_t> shape) {
  std::string expr;
  int64_t stride = 1;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (dims[d] != "0") {
      std::string term =
          stride == 1 ? dims[d] : llvm::formatv("{0} * {1}", dims[d], stride).str();
      expr = expr.empty() ? term : term + " + " + expr;
    }
    stride *= shape[d];
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

FailureOr<std::string> KernelBody::value(Value v, const std::string &idx) {
  auto key = std::make_pair(v.getAsOpaquePointer(), idx);
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  Type elem = elementType(v);
  StringRef math = mathType(elem);
  std::string result;
  Operation *def = v.getDefiningOp();
  if (auto splat = splatValue(v)) {
    result = literalOf(*splat, math);
  } else if (!def || !inside.contains(def)) {
    // A parameter of the kernel.
    std::string load = params.lookup(v) + "[" + idx + "]";
    if (isa<FloatType>(elem))
      load = "toFloat(" + load + ")";
    else if (elem.isInteger(1))
      load = "(" + load + " != 0)";
    result = local(math, "l", load);
  } else if (isView(def)) {
    auto r = value(def->getOperand(0), idx);
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto t = dyn_cast<TransposeOp>(def)) {
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      in = tensorType(t.getX()).getShape();
    SmallVector<std::string> o = unravel(idx, out), from(in.size());
    for (auto [d, p] : llvm::enumerate(t.getPerm()))
      from[p] = o[d];
    auto r = value(t.getX(), indexLocal(ravel(from, in)));
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto sl = dyn_cast<SliceOp>(def)) {
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      in = tensorType(sl.getX()).getShape();
    SmallVector<int64_t> start = llvm::to_vector(sl.getStart()),
                         stride = sl.getEffectiveStride();
    SmallVector<std::string> o = unravel(idx, out), from(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      std::string scaled =
          stride[d] == 1 ? o[d] : llvm::formatv("{0} * {1}", o[d], stride[d]).str();
      from[d] = start[d] == 0 ? scaled
                              : llvm::formatv("({0} + {1})", scaled, start[d]).str();
      if (out[d] == 1)
        from[d] = std::to_string(start[d]);
    }
    auto r = value(sl.getX(), indexLocal(ravel(from, in)));
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto cat = dyn_cast<ConcatOp>(def)) {
    // The input that holds the element, in one branch each.
    ArrayRef<int64_t> out = tensorType(v).getShape();
    int64_t axis = *normalizeAxis(cat.getAxis(), out.size());
    SmallVector<std::string> o = unravel(idx, out);
    std::string at = local("const int64_t", "j", o[axis]);
    result = "t" + std::to_string(counter++);
    text += llvm::formatv("    {0} {1};\n", math, result).str();
    int64_t offset = 0;
    auto inputs = cat.getInputs();
    for (auto [k, input] : llvm::enumerate(inputs)) {
      int64_t size = tensorType(input).getShape()[axis];
      if (k == 0)
        text += llvm::formatv("    if ({0} < {1}) {{\n", at, offset + size);
      else if (k + 1 < inputs.size())
        text += llvm::formatv("    } else if ({0} < {1}) {{\n", at,
                              offset + size);
      else
        text += "    } else {\n";
      // A branch's locals stay in it.
      std::string outer = std::move(text);
      auto savedMemo = memo;
      text.clear();
      SmallVector<std::string> in(o.begin(), o.end());
      in[axis] = offset ? llvm::formatv("({0} - {1})", at, offset).str() : at;
      auto r = value(input, indexLocal(ravel(in, tensorType(input).getShape())));
      if (failed(r))
        return failure();
      std::string branch = std::move(text);
      text = std::move(outer);
      memo = std::move(savedMemo);
      for (StringRef line : llvm::split(StringRef(branch).rtrim('\n'), '\n'))
        text += "  " + line.str() + "\n";
      text += llvm::formatv("      {0} = {1};\n", result, *r).str();
      offset += size;
    }
    text += "    }\n";
  } else if (auto sg = dyn_cast<SliceGradOp>(def)) {
    // Zero outside the slice; inside, the gradient at the slice's index.
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      g = tensorType(sg.getGrad()).getShape();
    SmallVector<int64_t> start = llvm::to_vector(sg.getStart());
    SmallVector<int64_t> stride =
        sg.getStride() ? llvm::to_vector(*sg.getStride())
                       : SmallVector<int64_t>(start.size(), 1);
    SmallVector<std::string> o = unravel(idx, out), at(g.size()), hits;
    for (size_t d = 0; d < out.size(); ++d) {
      if (g[d] == out[d] && start[d] == 0 && stride[d] == 1) {
        at[d] = o[d];
        continue;
      }
      std::string rel = start[d] == 0
                            ? o[d]
                            : llvm::formatv("({0} - {1})", o[d], start[d]).str();
      std::string lo = start[d] == 0 ? "" : llvm::formatv("{0} >= 0", rel).str();
      at[d] = stride[d] == 1 ? rel : llvm::formatv("({0} / {1})", rel, stride[d]).str();
      if (!lo.empty())
        hits.push_back(lo);
      if (stride[d] != 1)
        hits.push_back(llvm::formatv("{0} % {1} == 0", rel, stride[d]).str());
      hits.push_back(llvm::formatv("{0} < {1}", at[d], g[d]).str());
    }
    std::string hit = local("const bool", "h",
                            hits.empty() ? "true" : llvm::join(hits.begin(), hits.end(), " && "));
    std::string j = local("const int64_t", "j",
                          llvm::formatv("{0} ? {1} : 0", hit, ravel(at, g)).str());
    auto r = value(sg.getGrad(), j);
    if (failed(r))
      return failure();
    result = local(math, "t",
                   llvm::formatv("{0} ? {1} : ({2})0", hit, *r, math).str());
  } else if (auto iota = dyn_cast<IotaOp>(def)) {
    // The coordinate along the counted dim, scaled and shifted.
    std::string coord = unravel(idx, tensorType(v).getShape())
        [iota.getNormalizedDimension()];
    double start = iota.getStart().convertToDouble();
    double step = iota.getStep().convertToDouble();
    auto literal = [&](double value) {
      return math == "float" ? floatLiteral(value)
                             : std::to_string((int64_t)value);
    };
    std::string expr = "(" + math.str() + ")" + coord;
    double scale = start != 0.0 ? std::fabs(step) : step;
    if (scale != 1.0)
      expr = literal(scale) + " * " + expr;
    if (start != 0.0)
      expr = literal(start) + (step < 0 ? " - " : " + ") + expr;
    result = local(math, "t", expr);
  } else {
    // Elementwise: each operand at its broadcast index.
    ArrayRef<int64_t> out = tensorType(v).getShape();
    SmallVector<std::string> a;
    for (auto [i, operand] : llvm::enumerate(def->getOperands())) {
      std::string operandIdx =
          indexLocal(indexExpr(tensorType(operand).getShape(), out, idx));
      auto r = value(operand, operandIdx);
      if (failed(r))
        return failure();
      StringRef want = operandMath(def, i);
      StringRef have = mathType(elementType(operand));
      a.push_back(have == want ? *r : "(" + want.str() + ")(" + *r + ")");
    }
    auto expr = elementwiseExpr(def, a);
    if (failed(expr))
      return failure();
    result = local(math, "t", *expr);
  }
  memo[key] = result;
  return result;
}

} // namespace

LogicalResult StepEmitter::emitElementwise(Launch &launch) {
  Operation *rootOp = launch.op;
  // Parameters: the external operands, then the results.
  std::string params, args;
  DenseMap<Value, std::string> param;
  for (Value v : launch.reads) {
    std::string p = "x" + std::to_string(param.size());
    param[v] = p;
    params += llvm::formatv("const {0} *__restrict__ {1}, ", storageOf(v), p);
    args += ptr(v) + ", ";
  }
  bool one = launch.writes.size() == 1;
  KernelBody kernelBody(launch.covered, param);
  std::string stores;
  for (auto [k, result] : llvm::enumerate(launch.writes)) {
    std::string y = one ? "y" : "y" + std::to_string(k);
    params += llvm::formatv("{0} *__restrict__ {1}, ", storageOf(result), y);
    args += ptr(result) + ", ";
    auto value = kernelBody.value(result, "i");
    if (failed(value))
      return failure();
    Type resultElem = elementType(result);
    if (isa<FloatType>(resultElem))
      stores += llvm::formatv("    {0}[i] = fromFloat<{1}>({2});\n", y,
                              storageType(resultElem), *value)
                    .str();
    else
      stores += llvm::formatv("    {0}[i] = ({1})({2});\n", y,
                              storageType(resultElem), *value)
                    .str();
  }
  params += "int64_t n";
  std::string body = kernelBody.text + stores;
  Value result = launch.writes.front();
  std::string text =
      "(" + params + ") {\n  for (int64_t i = (int64_t)blockIdx.x * " +
      "blockDim.x + threadIdx.x; i < n;\n       i += (int64_t)gridDim.x * " +
      "blockDim.x) {\n" + body + "  }\n}\n";
  std::string baseName;
  if (launch.covered.size() > 1) {
    // Named after the kinds of op it computes, each once, views left out.
    baseName = "fused";
    SmallVector<std::string> kinds;
    for (Operation *op : launch.covered)
      if (!isView(op) && !llvm::is_contained(kinds, opLabel(op)))
        kinds.push_back(opLabel(op));
    for (const std::string &kind : kinds)
      baseName += "_" + kind;
  } else {
    baseName = opLabel(rootOp);
  }
  std::string site;
  for (Operation *op : launch.covered)
    site += (site.empty() ? "" : " + ") + describeOp(op);
  std::string kernel = state.kernel(baseName, text, site);
  int64_t n = numel(result);
  int64_t blocks = std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 65535);
  os << timerBegin(launch) << "  " << kernel << "<<<" << blocks << ", "
     << kBlock << ", 0, stream>>>(" << args << n
     << ");\n  TGC_CUDA_CHECK_LAUNCH();\n"
     << timerEnd(launch);
  return success();
}

LogicalResult StepEmitter::emitGemm(Launch &launch) {
  MatmulOp op = launch.matmul;
  Value out = launch.out ? launch.out : op.getResult();
  auto a = tensorType(op.getLhs()), b = tensorType(op.getRhs()),
       c = tensorType(out);
  Type at = a.getElementType(), bt = b.getElementType(),
       ct = c.getElementType();
  bool ok = (at.isF32() && bt.isF32() && ct.isF32()) ||
            (at.isBF16() && bt.isBF16() && (ct.isBF16() || ct.isF32()));
  if (!ok)
    return op.emitError(kBackend)
           << ": tg.matmul of " << at << " x " << bt << " -> " << ct
           << " has no cuBLASLt kernel (f32 x f32 -> f32, bf16 x bf16 -> "
              "bf16 or f32 do)";
  int64_t batchRank = c.getRank() - 2;
  auto padBatch = [&](RankedTensorType t) {
    SmallVector<int64_t> dims(batchRank - (t.getRank() - 2), 1);
    llvm::append_range(dims, t.getShape().drop_back(2));
    return dims;
  };
  int64_t m = c.getShape()[c.getRank() - 2], n = c.getShape().back();
  int64_t k = op.getTransposeLhs() ? a.getShape()[a.getRank() - 2]
                                   : a.getShape().back();
  std::string lhs = ptr(op.getLhs()), rhs = ptr(op.getRhs()),
              bias = launch.bias ? ptr(launch.bias) : "",
              aux = launch.aux ? ptr(launch.aux) : "", result = ptr(out);
  os << timerBegin(launch) << "  {\n    static const int64_t aBatch[] = "
     << intList(padBatch(a)) << ", bBatch[] = " << intList(padBatch(b))
     << ", cBatch[] = " << intList(c.getShape().drop_back(2)) << ";\n"
     << "    tgc::cuda::MatmulOptions options;\n";
  if (launch.epilogue != "None")
    os << "    options.epilogue = tgc::cuda::Epilogue::" << launch.epilogue
       << ";\n";
  if (!bias.empty())
    os << "    options.bias = " << bias << ";\n";
  if (!aux.empty())
    os << "    options.geluAux = " << aux << ";\n";
  os << "    tgc::cuda::matmul(" << lhs << ", " << rhs << ", " << result
     << ", " << m << ", " << n << ", " << k << ", "
     << (op.getTransposeLhs() ? "true" : "false") << ", "
     << (op.getTransposeRhs() ? "true" : "false")
     << ", aBatch, bBatch, cBatch, " << batchRank << ", options, stream);\n"
     << "  }\n"
     << timerEnd(launch);
  return success();
}

void StepEmitter::emitClassifier(Launch &launch) {
  CrossEntropyOp ce = launch.crossEntropy;
  CrossEntropyGradOp grad = launch.crossEntropyGrad;
  auto t = tensorType(ce.getLogits());
  int64_t classes = t.getShape().back();
  int64_t rows = t.getNumElements() / classes;
  StringRef reduction = runtimeLossReduction(ce.getReduction());
  bool none = reduction == "None";
  std::string logits = ptr(ce.getLogits()), labels = ptr(ce.getLabels()),
              g = isSplatOne(grad.getGrad()) ? "nullptr" : ptr(grad.getGrad()),
              loss = ptr(ce.getResult()), dlogits = ptr(grad.getResult());
  os << timerBegin(launch) << "  tgc::cuda::fused_classifier(" << logits
     << ", " << labels << ", " << rows << ", " << classes << ", "
     << (int64_t)ce.getIgnoreIndex() << ", tgc::cuda::Reduction::" << reduction
     << ", " << g << ", " << (none ? "nullptr" : loss) << ", "
     << (none ? loss : "nullptr") << ", " << dlogits << ", "
     << workspace(llvm::formatv("tgc::cuda::cross_entropy_workspace_bytes({0})",
                                rows)
                      .str())
     << ", stream);\n"
     << timerEnd(launch);
}

void StepEmitter::emitBucket(Launch &launch) {
  Bucket &b = buckets[launch.bucket];
  // Each gradient by the parameter the optimizer updates with it.
  auto parameterOf = [&](unsigned m) -> std::string {
    SmallVector<Value> worklist = {b.op.getResults()[m]};
    for (size_t i = 0; i < worklist.size() && i < 8; ++i)
      for (Operation *user : worklist[i].getUsers()) {
        if (auto update = dyn_cast<OptimizerUpdateOp>(user)) {
          if (auto arg = dyn_cast<BlockArgument>(update.getParam()))
            if (auto name = func.getArgAttrOfType<StringAttr>(
                    arg.getArgNumber(), TgDialect::kParamAttr))
              return name.getValue().str();
        } else if (user->getNumResults() == 1) {
          worklist.push_back(user->getResult(0));
        }
      }
    Value v = b.op.getInputs()[m];
    std::string where =
        v.getDefiningOp() ? describeLoc(v.getDefiningOp()->getLoc()) : "";
    return where.empty() ? "#" + std::to_string(m) : where;
  };
  std::string names;
  for (unsigned m = 0; m < b.inPlace.size(); ++m)
    names += (names.empty() ? "" : ", ") + parameterOf(m);
  int64_t count = b.bytes / elementBytes(b.elementType);
  os << llvm::formatv("  // Bucket {0} of the gradient all-reduce: {1} "
                      "tensors, {2:f2} MB, ready now\n  //   ({3})\n",
                      launch.bucket, b.inPlace.size(), b.bytes / 1e6, names);
  for (auto [m, own] : llvm::enumerate(b.inPlace))
    if (!own) {
      Value in = b.op.getInputs()[m], out = b.op.getResults()[m];
      std::string src = ptr(in), dst = ptr(out);
      os << "  TGC_CUDA_CHECK(cudaMemcpyAsync(" << dst << ", " << src << ", "
         << bytesOf(in) << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
  int64_t offset = arena.offset(b.buffer);
  StringRef reduction = commReduceOp(b.op.getReduction());
  os << "  TGC_CUDA_CHECK(cudaEventRecord(d.bucketReady[" << launch.bucket
     << "], stream));\n"
     << "  TGC_CUDA_CHECK(cudaStreamWaitEvent(comm, d.bucketReady["
     << launch.bucket << "], 0));\n"
     << timerBegin(launch, "comm") << "  tgc::comm::allReduce(io.comm, work + "
     << offset << ", " << count << ", " << dtypeName(b.elementType)
     << ", tgc::comm::ReduceOp::" << reduction << ", comm);\n"
     << timerEnd(launch, "comm")
     << "  TGC_CUDA_CHECK(cudaEventRecord(d.bucketDone[" << launch.bucket
     << "], comm));\n";
}

static std::string nullable(StepEmitter &e, Value v) {
  return v ? e.ptr(v) : "nullptr";
}

/// tg.attention's mask shape as tgc::cuda::AttentionMaskShape's initializer,
/// [B', H', T', S'] with 1s in front of a lower-rank mask; `{}` without a
/// mask.
static std::string attentionMaskShape(Value mask) {
  if (!mask)
    return "{}";
  ArrayRef<int64_t> shape = tensorType(mask).getShape();
  SmallVector<int64_t, 4> dims(4 - shape.size(), 1);
  dims.append(shape.begin(), shape.end());
  return intList(dims);
}

LogicalResult StepEmitter::emitLaunch(Launch &launch) {
  // The comment: the ops and where they came from.
  if (launch.kind != LaunchKind::Bucket) {
    for (Operation *op : launch.covered)
      os << "  // " << describeOp(op) << "\n";
    if (launch.kind == LaunchKind::Gemm && launch.epilogue != "None")
      os << "  //   (one cuBLASLt call, the " << launch.epilogue
         << " epilogue)\n";
    if (launch.kind == LaunchKind::Classifier)
      os << "  //   (the fused classifier: loss and dlogits in one read of "
            "the logits"
         << (root(launch.crossEntropyGrad.getResult()) ==
                     launch.crossEntropy.getLogits()
                 ? ", in place"
                 : "")
         << ")\n";
  }
  switch (launch.kind) {
  case LaunchKind::Elementwise:
    return emitElementwise(launch);
  case LaunchKind::Gemm:
    return emitGemm(launch);
  case LaunchKind::Classifier:
    emitClassifier(launch);
    return success();
  case LaunchKind::Bucket:
    emitBucket(launch);
    return success();
  case LaunchKind::AllReduceWait:
    os << "  // Bucket " << launch.bucket
       << " is reduced before what follows touches it.\n"
       << "  TGC_CUDA_CHECK(cudaStreamWaitEvent(stream, d.bucketDone["
       << launch.bucket << "], 0));\n";
    return success();
  case LaunchKind::Op:
    return emitOp(launch, launch.op);
  case LaunchKind::Return:
    return success();
  }
  return success();
}

/// Outer, axis and inner extents of a tensor around one axis.
static std::tuple<int64_t, int64_t, int64_t> splitAxis(RankedTensorType t,
                                                       int64_t axis) {
  ArrayRef<int64_t> s = t.getShape();
  return {product(s.take_front(axis)), s[axis], product(s.drop_front(axis + 1))};
}

static std::string convDims(Value input, Value weight, Value output,
                            ArrayRef<int64_t> stride, ArrayRef<int64_t> pad,
                            ArrayRef<int64_t> dil, int64_t groups) {
  ArrayRef<int64_t> x = tensorType(input).getShape(),
                    w = tensorType(weight).getShape(),
                    y = tensorType(output).getShape();
  return llvm::formatv("tgc::cuda::Conv2dDims{{{0}, {1}, {2}, {3}, {4}, {5}, "
                       "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, "
                       "{15}}",
                       x[0], x[1], x[2], x[3], w[0], w[2], w[3], y[2], y[3],
                       stride[0], stride[1], pad[0], pad[1], dil[0], dil[1],
                       groups)
      .str();
}

static std::string poolDims(Value input, Value output,
                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                            ArrayRef<int64_t> pad) {
  ArrayRef<int64_t> x = tensorType(input).getShape(),
                    y = tensorType(output).getShape();
  return llvm::formatv("tgc::cuda::Pool2dDims{{{0}, {1}, {2}, {3}, {4}, {5}, "
                       "{6}, {7}, {8}, {9}, {10}, {11}}",
                       x[0], x[1], x[2], x[3], y[2], y[3], kernel[0], kernel[1],
                       stride[0], stride[1], pad[0], pad[1])
      .str();
}

LogicalResult StepEmitter::emitOp(Launch &launch, Operation *op) {
  // Every operand and result of one op kernel has one float type (f32 or
  // bf16) unless said otherwise.
  auto sameFloat = [&](ArrayRef<Value> values) -> LogicalResult {
    Type t;
    for (Value v : values) {
      if (!v)
        continue;
      Type e = elementType(v);
      if (!e.isF32() && !e.isBF16())
        return op->emitError(kBackend)
               << ": " << op->getName() << " takes f32 or bf16, got " << e;
      if (t && e != t)
        return op->emitError(kBackend)
               << ": " << op->getName() << " mixes " << t << " and " << e;
      t = e;
    }
    return success();
  };
  auto f32Only = [&](ArrayRef<Value> values) -> LogicalResult {
    for (Value v : values)
      if (v && !elementType(v).isF32())
        return op->emitError(kBackend)
               << ": " << op->getName() << " runs in f32 only on the GPU, got "
               << elementType(v)
               << " (compile with --precision=fp32, or keep this op in f32)";
    return success();
  };
  std::string begin = timerBegin(launch), end = timerEnd(launch);

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto r) -> LogicalResult {
        if (failed(sameFloat({r.getX(), r.getResult()})))
          return failure();
        StringRef kind = isa<ReduceSumOp>(op)    ? "Sum"
                         : isa<ReduceMeanOp>(op) ? "Mean"
                                                 : "Max";
        SmallVector<int64_t> dims = r.getReducedDims();
        auto x = tensorType(r.getX());
        std::string in = ptr(r.getX()), out = ptr(r.getResult());
        os << begin << "  {\n    static const int64_t shape[] = "
           << intList(x.getShape()) << ", dims[] = " << intList(dims)
           << ";\n    tgc::cuda::reduce(tgc::cuda::ReduceKind::" << kind
           << ", " << in << ", shape, " << x.getRank() << ", dims, "
           << dims.size() << ", " << out << ", "
           << workspace(llvm::formatv(
                            "[] {{ static const int64_t shape[] = {0}, dims[] "
                            "= {1}; return "
                            "tgc::cuda::reduce_workspace_bytes(shape, {2}, "
                            "dims, {3}); }()",
                            intList(x.getShape()), intList(dims), x.getRank(),
                            dims.size())
                            .str())
           << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) -> LogicalResult {
        if (failed(sameFloat({s.getX(), s.getResult()})))
          return failure();
        auto t = tensorType(s.getX());
        auto [outer, n, inner] =
            splitAxis(t, *normalizeAxis(s.getAxis(), t.getRank()));
        std::string in = ptr(s.getX()), out = ptr(s.getResult());
        os << begin << "  tgc::cuda::"
           << (isa<SoftmaxOp>(op) ? "softmax" : "log_softmax") << "(" << in
           << ", " << out << ", " << outer << ", " << n << ", " << inner
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](LayerNormOp l) -> LogicalResult {
        if (failed(sameFloat(
                {l.getX(), l.getWeight(), l.getBias(), l.getResult()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        std::string x = ptr(l.getX()), w = nullable(*this, l.getWeight()),
                    b = nullable(*this, l.getBias()), y = ptr(l.getResult());
        os << begin << "  tgc::cuda::layer_norm(" << x << ", " << w << ", " << b
           << ", " << y << ", " << t.getNumElements() / d << ", " << d << ", "
           << floatLiteral(l.getEps().convertToDouble()) << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](LayerNormGradOp l) -> LogicalResult {
        if (failed(sameFloat({l.getGrad(), l.getX(), l.getWeight(),
                              l.getDx(), l.getDweight(), l.getDbias()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back(), rows = t.getNumElements() / d;
        std::string g = ptr(l.getGrad()), x = ptr(l.getX()),
                    w = nullable(*this, l.getWeight()), dx = ptr(l.getDx()),
                    dw = ptr(l.getDweight()), db = ptr(l.getDbias());
        os << begin << "  tgc::cuda::layer_norm_grad(" << g << ", " << x << ", "
           << w << ", " << dx << ", " << dw << ", " << db << ", " << rows
           << ", " << d << ", " << floatLiteral(l.getEps().convertToDouble())
           << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::layer_norm_grad_workspace_bytes({0}, "
                            "{1})",
                            rows, d)
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](RmsNormOp l) -> LogicalResult {
        if (failed(sameFloat({l.getX(), l.getWeight(), l.getResult()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        std::string x = ptr(l.getX()), w = nullable(*this, l.getWeight()),
                    y = ptr(l.getResult());
        os << begin << "  tgc::cuda::rms_norm(" << x << ", " << w << ", " << y
           << ", " << t.getNumElements() / d << ", " << d << ", "
           << floatLiteral(l.getEps().convertToDouble()) << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](RmsNormGradOp l) -> LogicalResult {
        if (failed(sameFloat({l.getGrad(), l.getX(), l.getWeight(), l.getDx(),
                              l.getDweight()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back(), rows = t.getNumElements() / d;
        std::string g = ptr(l.getGrad()), x = ptr(l.getX()),
                    w = nullable(*this, l.getWeight()), dx = ptr(l.getDx()),
                    dw = ptr(l.getDweight());
        os << begin << "  tgc::cuda::rms_norm_grad(" << g << ", " << x << ", "
           << w << ", " << dx << ", " << dw << ", " << rows << ", " << d
           << ", " << floatLiteral(l.getEps().convertToDouble()) << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::rms_norm_grad_workspace_bytes({0}, {1})",
                            rows, d)
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](DropoutOp dr) -> LogicalResult {
        if (failed(sameFloat({dr.getX(), dr.getResult()})))
          return failure();
        std::string x = ptr(dr.getX()), y = ptr(dr.getResult());
        os << begin << "  tgc::cuda::dropout(" << x << ", " << y << ", "
           << numel(dr.getX()) << ", "
           << floatLiteral(dr.getP().convertToDouble()) << ", "
           << (uint64_t)dr.getSeed()
           << "ull, &d.scalars->step, &d.scalars->randomStream, stream);\n"
           << end;
        return success();
      })
      .Case([&](EmbeddingOp e) -> LogicalResult {
        if (failed(sameFloat({e.getTable(), e.getResult()})))
          return failure();
        auto t = tensorType(e.getTable());
        std::string table = ptr(e.getTable()), idx = ptr(e.getIndices()),
                    out = ptr(e.getResult());
        os << begin << "  tgc::cuda::embedding(" << table << ", "
           << t.getDimSize(0) << ", " << t.getDimSize(1) << ", " << idx << ", "
           << numel(e.getIndices()) << ", " << out << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](EmbeddingGradOp e) -> LogicalResult {
        if (failed(sameFloat({e.getGrad(), e.getResult()})))
          return failure();
        auto t = tensorType(e.getResult());
        int64_t n = numel(e.getIndices());
        std::string g = ptr(e.getGrad()), idx = ptr(e.getIndices()),
                    out = ptr(e.getResult());
        os << begin << "  tgc::cuda::embedding_grad(" << g << ", " << idx
           << ", " << n << ", " << t.getDimSize(0) << ", " << t.getDimSize(1)
           << ", " << out << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::embedding_grad_workspace_bytes({0}, "
                            "{1})",
                            n, t.getDimSize(0))
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](CrossEntropyOp c) -> LogicalResult {
        if (failed(sameFloat({c.getLogits()})))
          return failure();
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back(), rows = t.getNumElements() / classes;
        StringRef reduction = runtimeLossReduction(c.getReduction());
        bool none = reduction == "None";
        std::string logits = ptr(c.getLogits()), labels = ptr(c.getLabels()),
                    loss = ptr(c.getResult());
        os << begin << "  tgc::cuda::cross_entropy(" << logits << ", " << labels
           << ", " << rows << ", " << classes << ", "
           << (int64_t)c.getIgnoreIndex()
           << ", tgc::cuda::Reduction::" << reduction << ", "
           << (none ? "nullptr" : loss) << ", " << (none ? loss : "nullptr")
           << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::cross_entropy_workspace_bytes({0})",
                            rows)
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](CrossEntropyGradOp c) -> LogicalResult {
        if (failed(sameFloat({c.getLogits(), c.getResult()})))
          return failure();
        if (!elementType(c.getGrad()).isF32())
          return c.emitError(kBackend)
                 << ": tg.cross_entropy_grad needs an f32 loss gradient";
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back(), rows = t.getNumElements() / classes;
        StringRef reduction = runtimeLossReduction(c.getReduction());
        std::string g = ptr(c.getGrad()), logits = ptr(c.getLogits()),
                    labels = ptr(c.getLabels()), out = ptr(c.getResult());
        os << begin << "  tgc::cuda::cross_entropy_grad(" << g << ", " << logits
           << ", " << labels << ", " << rows << ", " << classes << ", "
           << (int64_t)c.getIgnoreIndex()
           << ", tgc::cuda::Reduction::" << reduction << ", " << out << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::cross_entropy_workspace_bytes({0})",
                            rows)
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](AttentionOp a) -> LogicalResult {
        if (failed(sameFloat({a.getQuery(), a.getKey(), a.getValue(),
                              a.getMask(), a.getResult()})))
          return failure();
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        // ptr() declares what it names on first use: all before the call.
        std::string qp = ptr(a.getQuery()), kp = ptr(a.getKey()),
                    vp = ptr(a.getValue()), mask = nullable(*this, a.getMask()),
                    out = ptr(a.getResult());
        std::string lse = "nullptr";
        if (lseBuffer.count(a))
          lse = llvm::formatv("(float *)(work + {0})",
                              arena.offset(lseBuffer.lookup(a)))
                    .str();
        os << begin << "  tgc::cuda::attention(" << qp << ", " << kp << ", "
           << vp << ", " << mask << ", " << attentionMaskShape(a.getMask())
           << ", " << out << ", " << lse << ", " << q[0] << ", " << q[1] << ", "
           << k[1] << ", " << q[2] << ", " << k[2] << ", " << q[3] << ", "
           << v[3] << ", " << (a.getCausal() ? "true" : "false") << ", "
           << floatLiteral(a.getEffectiveScale()) << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](AttentionGradOp a) -> LogicalResult {
        if (failed(sameFloat({a.getGrad(), a.getQuery(), a.getKey(),
                              a.getValue(), a.getMask(), a.getDquery(),
                              a.getDkey(), a.getDvalue(), a.getDmask()})))
          return failure();
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        double scale = a.getScale() ? a.getScale()->convertToDouble()
                                    : 1.0 / std::sqrt((double)q[3]);
        std::string out = "nullptr", lse = "nullptr";
        if (AttentionOp fwd = forwardOf.lookup(a)) {
          out = ptr(fwd.getResult());
          lse = llvm::formatv("(const float *)(work + {0})",
                              arena.offset(lseBuffer.lookup(fwd)))
                    .str();
        }
        std::string g = ptr(a.getGrad()), qp = ptr(a.getQuery()),
                    kp = ptr(a.getKey()), vp = ptr(a.getValue()),
                    mask = nullable(*this, a.getMask()),
                    dq = ptr(a.getDquery()), dk = ptr(a.getDkey()),
                    dv = ptr(a.getDvalue()),
                    dmask = nullable(*this, a.getDmask());
        bool maskGrad = (bool)a.getDmask();
        os << begin << "  tgc::cuda::attention_grad(" << g << ", " << qp << ", "
           << kp << ", " << vp << ", " << mask << ", "
           << attentionMaskShape(a.getMask()) << ", " << out << ", " << lse
           << ", " << dq << ", " << dk << ", " << dv << ", " << dmask << ", "
           << q[0] << ", " << q[1] << ", " << k[1] << ", " << q[2] << ", "
           << k[2] << ", " << q[3] << ", " << v[3] << ", "
           << (a.getCausal() ? "true" : "false") << ", " << floatLiteral(scale)
           << ", "
           << workspace(llvm::formatv(
                            "tgc::cuda::attention_grad_workspace_bytes({0}, "
                            "{1}, {2}, {3}, {4})",
                            q[0], q[1], q[2], k[2], maskGrad ? "true" : "false")
                            .str())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](Conv2dOp c) -> LogicalResult {
        if (failed(f32Only({c.getInput(), c.getWeight(), c.getBias()})))
          return failure();
        std::string x = ptr(c.getInput()), w = ptr(c.getWeight()),
                    b = nullable(*this, c.getBias()), y = ptr(c.getResult());
        os << begin << "  tgc::cuda::conv2d(" << x << ", " << w << ", " << b
           << ", " << y << ", "
           << convDims(c.getInput(), c.getWeight(), c.getResult(),
                       c.getStride(), c.getPadding(), c.getDilation(),
                       c.getGroups())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](Conv2dGradInputOp c) -> LogicalResult {
        if (failed(f32Only({c.getGrad(), c.getWeight()})))
          return failure();
        std::string g = ptr(c.getGrad()), w = ptr(c.getWeight()),
                    dx = ptr(c.getResult());
        os << begin << "  tgc::cuda::conv2d_grad_input(" << g << ", " << w
           << ", " << dx << ", "
           << convDims(c.getResult(), c.getWeight(), c.getGrad(),
                       c.getStride(), c.getPadding(), c.getDilation(),
                       c.getGroups())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case([&](Conv2dGradWeightOp c) -> LogicalResult {
        if (failed(f32Only({c.getGrad(), c.getInput()})))
          return failure();
        std::string g = ptr(c.getGrad()), x = ptr(c.getInput()),
                    dw = ptr(c.getResult());
        os << begin << "  tgc::cuda::conv2d_grad_weight(" << g << ", " << x
           << ", " << dw << ", "
           << convDims(c.getInput(), c.getResult(), c.getGrad(),
                       c.getStride(), c.getPadding(), c.getDilation(),
                       c.getGroups())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case<MaxPool2dOp, AvgPool2dOp>([&](auto p) -> LogicalResult {
        if (failed(f32Only({p.getInput()})))
          return failure();
        std::string x = ptr(p.getInput()), y = ptr(p.getResult());
        os << begin << "  tgc::cuda::" << (isa<MaxPool2dOp>(op) ? "max" : "avg")
           << "_pool2d(" << x << ", " << y << ", "
           << poolDims(p.getInput(), p.getResult(), p.getKernelSize(),
                       p.getEffectiveStride(), p.getPadding())
           << ", stream);\n"
           << end;
        return success();
      })
      .Case<MaxPool2dGradOp, AvgPool2dGradOp>([&](auto p) -> LogicalResult {
        if (failed(f32Only({p.getGrad(), p.getInput()})))
          return failure();
        SmallVector<int64_t> stride =
            p.getStride() ? llvm::to_vector(*p.getStride())
                          : llvm::to_vector(p.getKernelSize());
        std::string dims = poolDims(p.getInput(), p.getGrad(),
                                    p.getKernelSize(), stride, p.getPadding());
        std::string g = ptr(p.getGrad()), dx = ptr(p.getResult());
        if (isa<MaxPool2dGradOp>(op)) {
          std::string x = ptr(p.getInput());
          os << begin << "  tgc::cuda::max_pool2d_grad(" << g << ", " << x
             << ", " << dx << ", " << dims << ", stream);\n"
             << end;
        } else {
          os << begin << "  tgc::cuda::avg_pool2d_grad(" << g << ", " << dx
             << ", " << dims << ", stream);\n"
             << end;
        }
        return success();
      })
      .Case([&](TransposeOp t) -> LogicalResult {
        std::string x = ptr(t.getX()), y = ptr(t.getResult());
        os << begin << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(t.getX()).getShape())
           << ", perm[] = " << intList(t.getPerm()) << ";\n"
           << "    tgc::cuda::transpose_bytes(" << x << ", "
           << elementBytes(elementType(t.getX())) << ", shape, "
           << t.getPerm().size() << ", perm, " << y << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](SliceOp s) -> LogicalResult {
        std::string x = ptr(s.getX()), y = ptr(s.getResult());
        os << begin << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(s.getX()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(s.getEffectiveStride())
           << ", outShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cuda::slice_bytes(" << x << ", "
           << elementBytes(elementType(s.getX())) << ", shape, "
           << tensorType(s.getX()).getRank() << ", start, stride, " << y
           << ", outShape, stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](SliceGradOp s) -> LogicalResult {
        SmallVector<int64_t> stride =
            s.getStride() ? llvm::to_vector(*s.getStride())
                          : SmallVector<int64_t>(s.getStart().size(), 1);
        std::string g = ptr(s.getGrad()), dx = ptr(s.getResult());
        os << begin << "  {\n    static const int64_t gShape[] = "
           << intList(tensorType(s.getGrad()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(stride)
           << ", xShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cuda::slice_grad_bytes(" << g << ", "
           << elementBytes(elementType(s.getGrad())) << ", gShape, "
           << stride.size() << ", start, stride, " << dx
           << ", xShape, stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](ConcatOp c) -> LogicalResult {
        SmallVector<std::string> inputs;
        for (Value v : c.getInputs())
          inputs.push_back(ptr(v));
        std::string out = ptr(c.getResult());
        os << begin << "  {\n";
        std::string list, shapes;
        for (auto [i, v] : llvm::enumerate(c.getInputs())) {
          os << "    static const int64_t shape" << i << "[] = "
             << intList(tensorType(v).getShape()) << ";\n";
          list += (i ? ", " : "") + inputs[i];
          shapes += (i ? ", shape" : "shape") + std::to_string(i);
        }
        os << "    const void *inputs[] = {" << list << "};\n"
           << "    const int64_t *shapes[] = {" << shapes << "};\n"
           << "    tgc::cuda::concat_bytes(inputs, "
           << elementBytes(elementType(c.getResult())) << ", shapes, "
           << c.getInputs().size() << ", "
           << tensorType(c.getResult()).getRank() << ", "
           << *normalizeAxis(c.getAxis(), tensorType(c.getResult()).getRank())
           << ", " << out << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](GlobalNormOp g) -> LogicalResult {
        std::string list, sizes;
        for (Value v : g.getInputs()) {
          Type e = elementType(v);
          if (!e.isF32() && !e.isBF16())
            return g.emitError(kBackend)
                   << ": tg.global_norm takes f32 or bf16, got " << e;
          list += llvm::formatv("      {{{0}, {1}, {2}},\n", ptr(v),
                                dtypeName(e), numel(v))
                      .str();
          sizes += llvm::formatv("{{nullptr, {0}, {1}}, ", dtypeName(e),
                                 numel(v))
                       .str();
        }
        std::string out = ptr(g.getResult());
        os << begin << "  {\n    const tgc::cuda::NormInput inputs[] = {\n"
           << list << "    };\n    tgc::cuda::global_norm(inputs, "
           << g.getInputs().size() << ", " << out << ", "
           << workspace(llvm::formatv(
                            "[] {{ const tgc::cuda::NormInput inputs[] = {{{0}}; "
                            "return tgc::cuda::global_norm_workspace_bytes("
                            "inputs, {1}); }()",
                            sizes, g.getInputs().size())
                            .str())
           << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](LrScheduleOp l) -> LogicalResult {
        StringRef kind = runtimeScheduleKind(l.getKind());
        std::string step = ptr(l.getStep()), base = ptr(l.getBaseLr()),
                    out = ptr(l.getResult());
        os << begin << "  {\n    static const tgc::cuda::ScheduleParams schedule{"
           << "tgc::cuda::ScheduleKind::" << kind << ", " << l.getWarmupSteps()
           << ", " << l.getTotalSteps() << ", " << l.getStepSize() << ", "
           << l.getDecaySteps() << ", "
           << floatLiteral(l.getMinLr().convertToDouble()) << ", "
           << floatLiteral(l.getGamma().convertToDouble()) << ", "
           << floatLiteral(l.getMaxLr().convertToDouble()) << "};\n"
           << "    tgc::cuda::lr_schedule(schedule, " << step << ", " << base
           << ", " << out << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](OptimizerUpdateOp u) -> LogicalResult {
        Value grad = u.getGrad();
        Value scale = gradScaleOf.lookup(u);
        if (!elementType(u.getParam()).isF32() ||
            llvm::any_of(u.getState(),
                         [](Value s) { return !elementType(s).isF32(); }))
          return u.emitError(kBackend)
                 << ": tg.optimizer_update needs f32 parameters and state "
                    "(fp32 master weights)";
        Type ge = elementType(grad);
        if (!ge.isF32() && !ge.isBF16())
          return u.emitError(kBackend)
                 << ": tg.optimizer_update takes an f32 or bf16 gradient, got "
                 << ge;
        StringRef kind = runtimeOptimizerKind(u.getKind());
        std::string param = ptr(u.getNewParam()), g = ptr(grad),
                    lr = ptr(u.getLr()), step = ptr(u.getStep()),
                    s = scale ? ptr(scale) : "nullptr";
        std::string states;
        for (auto [i, v] : llvm::enumerate(u.getNewState()))
          states += (i ? ", " : "") + ptr(v);
        if (scale)
          os << "  //   (gradient scaled by the clip factor inside the "
                "update)\n";
        os << begin << "  {\n    float *state[] = {"
           << (states.empty() ? "nullptr" : states)
           << "};\n    static const tgc::cuda::OptimizerHyper hyper{"
           << floatLiteral(u.getBeta1().convertToDouble()) << ", "
           << floatLiteral(u.getBeta2().convertToDouble()) << ", "
           << floatLiteral(u.getEps().convertToDouble()) << ", "
           << floatLiteral(u.getWeightDecay().convertToDouble()) << ", "
           << floatLiteral(u.getMomentum().convertToDouble()) << ", "
           << floatLiteral(u.getAlpha().convertToDouble()) << ", "
           << (u.getNesterov() ? "true" : "false") << "};\n"
           << "    tgc::cuda::optimizer_update(tgc::cuda::OptimizerKind::"
           << kind << ", " << param << ", " << g << ", state, "
           << u.getState().size() << ", " << numel(u.getParam()) << ", " << lr
           << ", " << step << ", " << s << ", hyper, nullptr, "
           << workspace(llvm::formatv(
                            "tgc::cuda::optimizer_workspace_bytes(tgc::cuda::"
                            "OptimizerKind::{0}, {1})",
                            kind, numel(u.getParam()))
                            .str())
           << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitError(kBackend)
               << ": no lowering for '" << other->getName() << "'";
      });
}

LogicalResult StepEmitter::emit(
    llvm::function_ref<std::string(unsigned)> bind,
    llvm::function_ref<LogicalResult(StepEmitter &, func::ReturnOp)>
        bindResults,
    StringRef summary) {
  bindArgument = bind;
  if (!func.getBody().hasOneBlock())
    return func.emitError(kBackend)
           << ": @" << func.getName() << " must have a single block";
  if (failed(checkTypes()) || failed(flattenKernels()) ||
      failed(planFusion()) || failed(buildLaunches()))
    return failure();
  if (failed(placeBucketWaits()) || failed(planMemory()))
    return failure();
  countFlops();
  countTraffic();
  for (Value c : materialized) {
    auto offset = state.addConstant(c.getDefiningOp<ConstantOp>());
    if (failed(offset))
      return failure();
    constantOffset[c] = *offset;
  }
  state.numBuckets = std::max<int64_t>(state.numBuckets, buckets.size());
  state.plannedBytes = std::max(state.plannedBytes, arena.peakBytes());

  // Timers: one per launch that runs something.
  for (Launch &l : launches) {
    if (l.kind == LaunchKind::AllReduceWait || l.kind == LaunchKind::Return)
      continue;
    l.timer = timers++;
    std::string label;
    if (l.kind == LaunchKind::Bucket) {
      label = llvm::formatv("all_reduce bucket {0}", l.bucket).str();
      onComm.push_back(true);
    } else {
      for (Operation *op : l.covered)
        label += (label.empty() ? "" : "+") + opLabel(op);
      std::string where = describeLoc(l.op->getLoc());
      if (!where.empty())
        label += " " + where;
      onComm.push_back(false);
    }
    labels.push_back(label);
  }

  int64_t numLaunches = timers;
  std::string signature =
      "(tgc::StepIO &io, Device &d, const OpTimes &t) {\n";
  const char *scalars =
      "  // The step's scalars, from pinned memory (a replayed graph reads "
      "them anew).\n"
      "  TGC_CUDA_CHECK(cudaMemcpyAsync(d.scalars, &d.host->scalars, "
      "sizeof(Scalars),\n"
      "                                 cudaMemcpyHostToDevice, stream));\n";
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  std::string header =
      llvm::formatv("\n/// @{0}: {1}\n/// {2} launches, {3} bytes of arena, "
                    "{4} all-reduce buckets.\n",
                    func.getName(), summary, numLaunches, arena.peakBytes(),
                    buckets.size())
          .str();
  size_t perPart = std::max(1u, options.launchesPerFunction);
  if (launches.size() <= perPart) {
    os << header << "static void " << name << "_launches" << signature
       << "  cudaStream_t stream = d.compute;\n"
       << (buckets.empty() ? "" : "  cudaStream_t comm = d.comm;\n")
       << "  char *work = d.work;\n  (void)work;\n" << scalars;
    for (Launch &l : launches)
      if (failed(emitLaunch(l)))
        return failure();
    if (failed(bindResults(*this, ret)))
      return failure();
    os << "}\n";
    return success();
  }

  // A long step in parts, as the C++ emitter's (EmitCpp.cpp): the host
  // compiler's time on one function grows faster than the function. Each
  // part declares the pointers its launches read and write at its top
  // (ptr() names a value the same in every part); the results' are
  // declared where bindResults needs them.
  size_t numParts = (launches.size() + perPart - 1) / perPart;
  for (size_t p = 0; p < numParts; ++p) {
    ArrayRef<Launch> part(launches);
    part = part.slice(p * perPart,
                      std::min(perPart, launches.size() - p * perPart));
    bool last = p + 1 == numParts;
    std::string from = describeLoc(part.front().op->getLoc());
    std::string to = describeLoc(part.back().op->getLoc());
    os << "\n/// @" << func.getName() << ", part " << p + 1 << " of "
       << numParts << ": launches " << p * perPart << "-"
       << p * perPart + part.size() - 1;
    if (!from.empty() && !to.empty())
      os << " (" << from << " .. " << to << ")";
    // The communication stream where the part has a bucket to reduce.
    bool reduces = llvm::any_of(
        part, [](const Launch &l) { return l.kind == LaunchKind::Bucket; });
    os << (last ? ", then the results" : "")
       << ".\n[[gnu::noinline]] static void " << name << "_launches_part"
       << p + 1 << signature << "  cudaStream_t stream = d.compute;\n"
       << (reduces ? "  cudaStream_t comm = d.comm;\n" : "")
       << "  char *work = d.work;\n  (void)work;\n" << (p == 0 ? scalars : "");
    declaredHere.clear();
    for (const Launch &l : part) {
      for (Value v : l.reads)
        ptr(v);
      for (Value v : l.writes)
        ptr(v);
    }
    for (size_t i = p * perPart; i < p * perPart + part.size(); ++i)
      if (failed(emitLaunch(launches[i])))
        return failure();
    if (last && failed(bindResults(*this, ret)))
      return failure();
    os << "}\n";
  }
  os << header << "static void " << name << "_launches" << signature;
  for (size_t p = 0; p < numParts; ++p)
    os << "  " << name << "_launches_part" << p + 1 << "(io, d, t);\n";
  os << "}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The file
//===----------------------------------------------------------------------===//

/// io.grads[index] = v on a step's first micro-batch, += v on the others
/// (runtime/cuda/StepProgram.h).
std::string gradLaunch(StepEmitter &e, Value v, int index) {
  int64_t n = numel(v);
  std::string src = e.ptr(v);
  return llvm::formatv("  tgc::cuda::storeOrAddGrad((float *)io.grads[{0}], "
                       "{1}, {2}, &d.scalars->microBatch, stream);\n",
                       index, src, n)
      .str();
}

std::string metricCopy(StepEmitter &e, Value v, StringRef field) {
  std::string src = e.ptr(v);
  return llvm::formatv("  TGC_CUDA_CHECK(cudaMemcpyAsync(&d.host->metrics.{0}, "
                       "{1}, sizeof(float), cudaMemcpyDeviceToHost, stream));\n",
                       field, src)
      .str();
}

/// The step-program table of one function: labels and lanes of its timed
/// launches.
void emitProgram(llvm::raw_ostream &os, const StepEmitter &e, StringRef name,
                 bool trainMetrics) {
  os << "\nconst char *const k_" << name << "_labels[] = {\n";
  for (const std::string &label : e.timerLabels())
    os << "    \"" << escape(label) << "\",\n";
  if (e.timerLabels().empty())
    os << "    \"\",\n";
  os << "};\nconst bool k_" << name << "_on_comm[] = {";
  for (bool c : e.timerOnComm())
    os << (c ? "true, " : "false, ");
  if (e.timerOnComm().empty())
    os << "false";
  os << "};\ntgc::cuda::StepProgram " << name << "_program{\"" << name
     << "\", &kProgram, " << name << "_launches, " << e.numTimed() << ", k_"
     << name << "_labels,\n    k_" << name << "_on_comm, /*trainMetrics=*/"
     << (trainMetrics ? "true" : "false") << "};\n"
     << "void " << name << "(tgc::StepIO &io) { tgc::cuda::runStep(" << name
     << "_program, io); }\n";
}

} // namespace

LogicalResult mlir::tg::emitCuda(ModuleOp original, llvm::raw_ostream &os,
                                 const CudaEmitOptions &options,
                                 CudaEmitSummary *summary) {
  // The step emitters flatten tg.kernel ops into their functions: a copy,
  // so the caller's module keeps them.
  OwningOpRef<ModuleOp> copy(original.clone());
  ModuleOp module = *copy;
  auto analyzed = StepSignature::analyze(module, kBackend);
  if (failed(analyzed))
    return failure();
  if (failed(checkTensorSizes(
          module, options.deviceMemoryBytes,
          llvm::formatv("a GPU's memory ({0:f1} GB)",
                        options.deviceMemoryBytes / 1e9)
              .str())))
    return failure();
  const StepSignature &sig = *analyzed;
  func::FuncOp forward = sig.forward, step = sig.trainStep;
  auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fb)
    return module.emitError(kBackend)
           << ": the module needs @forward_backward (run tg-autodiff)";
  // The module says how it was compiled (tg-precision's attribute).
  std::string precision = options.precision;
  if (auto attr = module->getAttrOfType<StringAttr>("tg.precision"))
    precision = attr.getValue().str();
  if (precision.empty())
    precision = "fp32";

  ModuleState state;
  std::string body;
  llvm::raw_string_ostream bodyOs(body);

  // @train_step.
  StepEmitter trainEmitter(state, options, step, "train_step", bodyOs);
  auto bindTrainArg = [&](unsigned i) -> std::string {
    std::string buffer = sig.trainArgument(i);
    if (!buffer.empty())
      return buffer;
    StringRef scalar = sig.scalarArgs.lookup(i);
    return scalar == "step"      ? "&d.scalars->step"
           : scalar == "base_lr" ? "&d.scalars->baseLr"
                                 : "&d.scalars->microBatches";
  };
  auto bindTrainResults = [&](StepEmitter &e,
                              func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: updates not made in place, then the metrics.\n";
    llvm::StringMap<unsigned> argumentOf; // by StepIO buffer
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (std::string buffer = sig.trainArgument(i); !buffer.empty())
        argumentOf[buffer] = i;
    std::string metrics;
    for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
      StringRef field = sig.metricField(r);
      if (!field.empty()) {
        metrics += metricCopy(e, v, field);
        continue;
      }
      auto target = sig.updateTarget(r, kBackend);
      if (failed(target))
        return failure();
      // In-place updates (the optimizer's) already wrote there: their
      // pointer is the argument's.
      auto arg = argumentOf.find(*target);
      if (arg != argumentOf.end() &&
          e.nameOf(v) == "a" + std::to_string(arg->second))
        continue;
      std::string src = e.ptr(v);
      e.out() << "  TGC_CUDA_CHECK(cudaMemcpyAsync(" << *target << ", " << src
              << ", " << bytesOf(v)
              << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
    e.out() << metrics;
    return success();
  };
  if (failed(trainEmitter.emit(
          bindTrainArg, bindTrainResults,
          "forward, backward, gradient all-reduce and optimizer update")))
    return failure();

  // @forward: evaluation.
  StepEmitter evalEmitter(state, options, forward, "eval_step", bodyOs);
  auto bindForwardArg = [&](unsigned i) { return sig.forwardArgument(i); };
  auto bindEvalResults = [&](StepEmitter &e,
                             func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: the outputs, then the loss.\n";
    for (unsigned r = 1; r < ret.getNumOperands(); ++r) {
      Value v = ret.getOperand(r);
      std::string src = e.ptr(v);
      e.out() << "  if (io.outputs)\n    TGC_CUDA_CHECK(cudaMemcpyAsync(io."
              << "outputs[" << r - 1 << "], " << src << ", " << bytesOf(v)
              << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
    e.out() << metricCopy(e, ret.getOperand(0), "loss");
    return success();
  };
  if (failed(evalEmitter.emit(bindForwardArg, bindEvalResults,
                              "the forward pass (evaluation)")))
    return failure();

  // @forward_backward: gradients into io.grads, written by a step's first
  // micro-batch and added by the others (grad_step and accumulate).
  StepEmitter gradEmitter(state, options, fb, "grad_step", bodyOs);
  auto bindGradResults = [&](StepEmitter &e,
                             func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: the gradients into io.grads, then the loss.\n";
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      auto index = sig.gradResultIndex(fb, r, kBackend);
      if (failed(index))
        return failure();
      if (*index >= 0)
        e.out() << gradLaunch(e, ret.getOperand(r), *index);
    }
    e.out() << metricCopy(e, ret.getOperand(0), "loss");
    return success();
  };
  if (failed(gradEmitter.emit(bindForwardArg, bindGradResults,
                              "forward and backward of one micro-batch, the "
                              "gradients into io.grads")))
    return failure();

  // The layout of the arena.
  int64_t constantsOffset = 256;
  int64_t workOffset = constantsOffset + state.constantBytes;
  int64_t arenaBytes = workOffset + state.plannedBytes;
  double flops = trainEmitter.flops();

  std::string model = sig.modelName;
  os << "//===- Generated by tgc from " << options.sourceName << " - model \""
     << model << "\" (CUDA, " << precision << ") ---===//\n"
     << "//\n"
     << "// The training step of this model for NVIDIA GPUs, on "
        "runtime/cuda. Three step\n"
     << "// functions, each a list of launches on the compute stream:\n"
     << "//   train_step  @train_step: forward, backward, gradient all-reduce "
        "and\n"
     << "//               optimizer update of one micro-batch;\n"
     << "//   eval_step   @forward: the loss and outputs (evaluation);\n"
     << "//   grad_step   @forward_backward: the gradients into io.grads "
        "(--dump-grads,\n"
     << "//               and the first micro-batches of an accumulated "
        "step).\n"
     << "// GEMMs are cuBLASLt calls (fp32 accumulation) with bias and tanh-"
        "GELU fused\n"
     << "// into their epilogue where the IR allows; cross_entropy and its "
        "gradient are\n"
     << "// the fused classifier; elementwise ops are the generated kernels "
        "below (one\n"
     << "// per chain of same-shaped ops, named after them); the rest are "
        "runtime/cuda\n"
     << "// launchers. Each launch's comment names its tg ops and their "
        "model-file nodes.\n"
     << "//\n"
     << "// Streams: every kernel runs on the context's compute stream. "
        "Gradients are\n"
     << "// all-reduced in the buckets tg-schedule formed, each on the "
        "communication\n"
     << "// stream where it stands (after its last gradient), overlapping the "
        "rest of the\n"
     << "// backward; the compute stream waits for a bucket (an event) right "
        "before the\n"
     << "// first launch that touches it. A step synchronises with the host "
        "once, at its\n"
     << "// end, to read its metrics; with --cuda-graph it is captured and "
        "replayed.\n"
     << "//\n"
     << "// Memory: one device arena of kArenaBytes (scalars, constants, and "
        "every\n"
     << "// intermediate at an offset planned by liveness, 256-byte aligned) "
        "plus the\n"
     << "// launchers' workspace, allocated at the first step.\n"
     << "//\n"
     << "// FLOPs per step (one micro-batch of @train_step), for MFU:\n"
     << trainEmitter.flopsComment << "//   total kFlopsPerStep = "
     << llvm::formatv("{0:e4}", flops) << "\n"
     << "//\n"
     << "// Launches per step (one micro-batch of @train_step):\n"
     << trainEmitter.trafficComment << "//\n"
     << "//===---===//\n\n"
     << "#include \"runtime/comm/Comm.h\"\n"
     << "#include \"runtime/core/Model.h\"\n"
     << "#include \"runtime/core/Trace.h\"\n"
     << "#include \"runtime/cuda/Check.h\"\n"
     << "#include \"runtime/cuda/Device.h\"\n"
     << "#include \"runtime/cuda/DeviceMath.cuh\"\n"
     << "#include \"runtime/cuda/Kernels.h\"\n"
     << "#include \"runtime/cuda/StepProgram.h\"\n\n"
     << "#include <cuda_bf16.h>\n#include <cuda_runtime.h>\n\n"
     << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
     << "#include <cstring>\n#include <vector>\n\n"
     << "namespace {\n\n"
     << "using tgc::cuda::bf16;\nusing tgc::cuda::fromFloat;\n"
     << "using tgc::cuda::toFloat;\n\n"
     << "// The device state and per-launch timers the step functions are "
        "handed\n// (runtime/cuda/StepProgram.h).\n"
     << "using tgc::cuda::Device;\nusing tgc::cuda::OpTimes;\n"
     << "using tgc::cuda::Scalars;\n\n"
     << "/// The arena: [scalars | constants | intermediates]; the "
        "launchers' workspace\n/// follows it.\n"
     << "constexpr int64_t kConstantsOffset = " << constantsOffset << ";\n"
     << "constexpr int64_t kWorkOffset = " << workOffset << ";\n"
     << "constexpr int64_t kArenaBytes = " << arenaBytes << ";\n"
     << "constexpr int kNumBuckets = " << state.numBuckets << ";\n"
     << "constexpr double kFlopsPerStep = "
     << llvm::formatv("{0:e6}", flops) << ";\n"
     << "constexpr int kNumParams = " << sig.fwdParams.size()
     << ", kNumState = " << sig.stateArgs.size()
     << ", kNumInputs = " << sig.fwdInputs.size()
     << ", kNumOutputs = " << forward.getFunctionType().getNumResults() - 1
     << ", kNumGrads = " << sig.gradIndex.size() << ";\n";

  // Generated kernels.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Generated kernels\n//===------------------"
        "----------------------------------------------------===//\n";
  for (const Kernel &k : state.kernels) {
    os << "\n/// " << k.sites.front();
    if (k.sites.size() > 1) {
      os << "\n/// also";
      for (size_t i = 1; i < k.sites.size() && i < 4; ++i)
        os << (i > 1 ? ";" : "") << " " << k.sites[i];
      if (k.sites.size() > 4)
        os << "; and " << k.sites.size() - 4 << " more";
    }
    os << "\n__global__ void __launch_bounds__(" << kBlock << ") " << k.name
       << k.text;
  }

  // Constants and workspace.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Constants and workspace\n//===------------"
        "----------------------------------------------------------===//\n\n"
     << state.constantArrays
     << "\nvoid uploadConstants(char *constants) {\n  (void)constants;\n"
     << state.constantUploads << "}\n\n"
     << "/// The largest scratch any launcher of the steps asks for.\n"
     << "int64_t workspaceBytes() {\n  int64_t bytes = 0;\n";
  for (const std::string &need : state.workspaceNeeds)
    os << "  bytes = std::max<int64_t>(bytes, " << need << ");\n";
  os << "  return bytes;\n}\n";

  // Step functions.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Step functions\n//===-------------------"
        "---------------------------------------------------===//\n";
  os << body;

  // What runtime/cuda runs them with.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Step programs: run by tgc::cuda::runStep "
        "(runtime/cuda/StepProgram.h)\n//===------------------------------"
        "----------------------------------------===//\n\n"
     << "const tgc::cuda::ProgramDesc kProgram = {\n"
     << "    kArenaBytes, kConstantsOffset, kWorkOffset,\n"
     << "    kNumBuckets,\n"
     << "    kNumParams, kNumState, kNumInputs, kNumOutputs, kNumGrads,\n"
     << "    workspaceBytes, uploadConstants,\n};\n";
  emitProgram(os, trainEmitter, "train_step", true);
  emitProgram(os, evalEmitter, "eval_step", false);
  emitProgram(os, gradEmitter, "grad_step", false);

  // The model description.
  emitModelTables(sig, os);
  os << "\n} // namespace\n\n"
     << "const tgc::ModelDesc kModel = {\n"
     << "    \"" << model << "\",\n"
     << "    " << sig.fwdParams.size() << ", kParams,\n"
     << "    " << sig.stateArgs.size() << ", kState,\n"
     << "    " << sig.fwdInputs.size() << ", kInputs,\n"
     << "    " << (forward.getFunctionType().getNumResults() - 1)
     << ", kOutputs,\n"
     << "    " << trainingDefaults(sig, module) << ",\n"
     << "    train_step,\n    /*accumulate=*/"
     << (sig.accumArgs.empty() ? "nullptr" : "grad_step")
     << ",\n    eval_step,\n    grad_step,\n"
     << "    /*device=*/tgc::cuda::deviceOps(tgc::cuda::Precision::"
     << (precision == "bf16" ? "BF16" : "FP32") << "),\n"
     << "    /*flopsPerStep=*/kFlopsPerStep,\n"
     << "    /*arenaBytes=*/kArenaBytes,\n};\n\n"
     << "int main(int argc, char **argv) { return tgc::runTraining(kModel, "
        "argc, argv); }\n";

  if (summary) {
    summary->modelName = model;
    summary->precision = precision;
    summary->arenaBytes = arenaBytes;
    summary->flopsPerStep = flops;
    summary->numKernels = state.kernels.size();
    summary->numBuckets = state.numBuckets;
  }
  return success();
}

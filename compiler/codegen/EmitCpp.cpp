//===- EmitCpp.cpp - tg train step to portable C++ ----------------*- C++ -*-===//
//
// One pass over @train_step and @forward. Every SSA value becomes a typed
// pointer: arguments point into the runtime's buffers, intermediates into a
// static arena at the offsets tg-plan-memory chose, reshapes and in-place
// optimizer updates into the buffer they view. Elementwise ops become OpenMP
// loops with their broadcasting spelled out; the rest call runtime/cpu.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCpp.h"
#include "compiler/codegen/CSyntax.h"
#include "compiler/codegen/ModelDescription.h"
#include "compiler/codegen/PipelineTables.h"
#include "compiler/codegen/StepWalk.h"

#include "dialects/tg/IR/TgOps.h"
#include "passes/pipeline/Chunks.h"
#include "planning/pipeline/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"

#include <cmath>
#include <map>
#include <optional>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tg;

namespace {

//===----------------------------------------------------------------------===//
// Types and literals
//===----------------------------------------------------------------------===//

/// The C type of an element type, or "" when the CPU backend lacks it.
StringRef cType(Type t) { return cElementType(t); }

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
int64_t numel(Value v) { return tensorType(v).getNumElements(); }

StringRef cTypeOf(Value v) { return cType(tensorType(v).getElementType()); }

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// The `tanh` argument of the runtime's GELU functions.
StringRef tanhArgument(GeluApproximation approximate) {
  return approximate == GeluApproximation::tanh ? "true" : "false";
}

/// The C literal of a splat constant's value, else nothing.
std::optional<std::string> splatLiteral(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto attr = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                       : DenseElementsAttr();
  if (!attr || !attr.isSplat())
    return std::nullopt;
  Type elem = attr.getElementType();
  std::string value;
  if (isa<FloatType>(elem))
    value = floatLiteral(attr.getSplatValue<APFloat>().convertToDouble());
  else if (elem.isInteger(1))
    value = std::to_string(attr.getSplatValue<APInt>().getZExtValue());
  else
    value = std::to_string(attr.getSplatValue<APInt>().getSExtValue());
  return ("(" + cType(elem) + ")" + value).str();
}

/// Ops printed as one loop (emitLoop): they read a splat constant as its
/// literal, so it needs no storage. Alone, GELU and its gradient call the
/// runtime's vectorized loops instead.
bool isLoopOp(Operation *op) {
  return isa<KernelOp>(op) ||
         (isElementwiseOp(op) && !isa<GeluOp, GeluGradOp>(op));
}

/// Whether `use` reads a splat constant as its literal (isLoopOp), which
/// then needs no storage; a gemm kernel's GEMM reads its operands from
/// memory, its epilogue reads literals; a classifier kernel reads memory.
bool readsSplatAsLiteral(OpOperand &use) {
  auto kernel = dyn_cast<KernelOp>(use.getOwner());
  if (kernel && kernel.getKind() == KernelKind::classifier)
    return false;
  if (!kernel || kernel.getKind() != KernelKind::gemm)
    return isLoopOp(use.getOwner());
  Block &body = kernel.getBody().front();
  Value arg = body.getArgument(use.getOperandNumber());
  return !llvm::is_contained(body.front().getOperands(), arg);
}

/// What an op counts for in a part of the step (--ops-per-function): one,
/// or for the call of a layer body, which declares a pointer for each of
/// its arguments and results, a quarter of those.
size_t weightOf(Operation *op) {
  if (!isa<func::CallOp>(op))
    return 1;
  return std::max<size_t>(1, (op->getNumOperands() + op->getNumResults()) / 4);
}

size_t totalWeight(ArrayRef<Operation *> ops) {
  size_t total = 0;
  for (Operation *op : ops)
    total += weightOf(op);
  return total;
}

/// Between the parts of a step function emitted apart: where a unit may
/// end (emitCppUnits).
constexpr llvm::StringLiteral kUnitBreak = "\n//@@ tgc unit break\n";

/// Ops that print code: timed into io.trace under --profile. Views and
/// constants take no time.
bool doesWork(Operation *op) {
  StepPiece piece = stepPieceOf(op);
  return piece != StepPiece::Constant && piece != StepPiece::View;
}

std::string castExpr(StringRef expr, Type to) {
  if (to.isInteger(1))
    return ("(uint8_t)(" + expr + " != 0)").str();
  return ("(" + cType(to) + ")(" + expr + ")").str();
}

/// The C expression of one element of an elementwise op's result, from its
/// operands' elements `a`.
std::string scalarExpr(Operation *op, ArrayRef<std::string> a) {
  auto format = [&](const char *fmt) {
    return a.size() == 1   ? llvm::formatv(fmt, a[0]).str()
           : a.size() == 2 ? llvm::formatv(fmt, a[0], a[1]).str()
                           : llvm::formatv(fmt, a[0], a[1], a[2]).str();
  };
  if (std::optional<std::string> shared = elementwiseFormat(op, "std::{0}"))
    return format(shared->c_str());
  Type elem = tensorType(op->getResult(0)).getElementType();
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([&](PowOp) { return format("std::pow({0}, {1})"); })
      .Case([&](CompareOp c) {
        StringRef sym = comparisonOperator(c.getPredicate());
        return format(("(uint8_t)({0} " + sym + " {1})").str().c_str());
      })
      .Case([&](AbsOp) {
        return format(isa<FloatType>(elem) ? "std::fabs({0})"
                                           : "std::abs({0})");
      })
      .Case([&](GeluOp g) {
        return llvm::formatv("tgc::cpu::gelu_scalar({0}, {1})", a[0],
                             tanhArgument(g.getApproximate()))
            .str();
      })
      .Case([&](GeluGradOp g) {
        return llvm::formatv("tgc::cpu::gelu_grad_scalar({0}, {1}, {2})", a[0],
                             a[1], tanhArgument(g.getApproximate()))
            .str();
      })
      .Case([&](CastOp) { return castExpr(a[0], elem); })
      .Case([&](BroadcastToOp) { return a[0]; })
      .Default([&](Operation *) -> std::string {
        llvm_unreachable("scalarExpr: not an elementwise op");
      });
}

/// The C expression of element `index` of a tg.iota: its coordinate along
/// the counted dim, scaled and shifted (in f32 for a float result).
std::string iotaExpr(IotaOp op, StringRef index) {
  ArrayRef<int64_t> shape = op.getType().getShape();
  int64_t dim = op.getNormalizedDimension();
  int64_t inner = product(shape.drop_front(dim + 1));
  std::string coord = index.str();
  if (inner > 1)
    coord = llvm::formatv("({0} / {1})", coord, inner).str();
  if (product(shape.take_front(dim)) > 1)
    coord = llvm::formatv("({0} % {1})", coord, shape[dim]).str();
  // start + step * coord, leaving out the identities.
  double start = op.getStart().convertToDouble();
  double step = op.getStep().convertToDouble();
  Type elem = op.getType().getElementType();
  bool isFloat = isa<FloatType>(elem);
  auto literal = [&](double v) {
    return isFloat ? floatLiteral(v) : std::to_string((int64_t)v);
  };
  std::string e = isFloat ? "(float)" + coord
                          : llvm::formatv("({0}){1}", cType(elem), coord).str();
  double scale = start != 0.0 ? std::fabs(step) : step;
  if (scale != 1.0)
    e = literal(scale) + " * " + e;
  if (start != 0.0)
    e = literal(start) + (step < 0 ? " - " : " + ") + e;
  return e;
}

//===----------------------------------------------------------------------===//
// Function emission
//===----------------------------------------------------------------------===//

class FunctionEmitter {
public:
  FunctionEmitter(func::FuncOp func, llvm::raw_ostream &os,
                  unsigned opsPerFunction)
      : func(func), os(os), opsPerFunction(opsPerFunction) {}

  /// Writes the code that hands result `r`, value `v`, over to the StepIO.
  using ResultBinder =
      llvm::function_ref<LogicalResult(FunctionEmitter &, unsigned r, Value v)>;

  /// Emits `static void NAME(tgc::StepIO &io)`; `bindArgument` returns the
  /// C expression of an argument's buffer (e.g. "io.params[0]"). A function
  /// of more than `opsPerFunction` ops becomes NAME_part1, NAME_part2, ...
  /// of at most that many ops (or results to bind) each, which NAME calls
  /// in order.
  LogicalResult emit(StringRef name,
                     llvm::function_ref<std::string(unsigned)> bindArgument,
                     ResultBinder bindResult);

  /// Emits a layer body of tg-outline-layers' as `void NAME(tgc::StepIO
  /// &io, const int64_t *off, T *a0, ...)`: its buffers at the arena
  /// offsets `off` holds for the layer that calls it, its arguments the
  /// caller's buffers. Its results stay where its ops wrote them. Returns
  /// the prototype.
  FailureOr<std::string> emitBody(StringRef name);

  /// The C++ names of the layer bodies the step calls, by symbol.
  const llvm::StringMap<std::string> *bodyNames = nullptr;
  /// The step function has external linkage (a unit of its own, which
  /// the model description's unit declares), else it is static. In parts,
  /// so do the parts and the constants' accessors, each part preceded by
  /// kUnitBreak so that the parts can go to units of their own, which
  /// `externDeclarations` declares them in.
  bool external = false;
  std::string externDeclarations;

  std::string buf(Value v) { return names.lookup(v); }
  /// `v`'s name where it is declared, else its pointer expression from the
  /// plan, in parentheses: the call of a layer body and the results a part
  /// hands over read values without declaring them, so that a part of many
  /// calls or results keeps few pointers live.
  std::string refOf(Value v);
  llvm::raw_ostream &out() { return os; }
  int64_t arenaBytes() const { return arenaBytes_; }

private:
  LogicalResult checkTypes();
  /// Reads tg-plan-memory's plan; fails where it is missing.
  LogicalResult readPlan();
  /// One piece of the step (StepWalk.h), printed.
  LogicalResult emitOp(Operation *op);
  /// emitOp, timed into io.trace under --profile.
  LogicalResult emitTimedOp(Operation &op);
  void declareResult(Value v);
  /// `T *NAME = ...;` for an op result `v` that has its name.
  void declarePointer(Value v);
  /// The C expression of `v`'s buffer from the plan: its view's, its
  /// argument's binding, its arena offset (in a layer body, its slot's).
  std::string pointerExpr(Value v);

  // Parts: a step of many ops as several functions (see emit).
  LogicalResult emitParts(StringRef name, ArrayRef<Operation *> ops,
                          ResultBinder bindResult);
  /// Declares, at the top of a part, a value the part reads but does not
  /// define: an argument, a result of an earlier part or a constant.
  void declareInPart(Value v);

  // Elementwise loops.
  std::string indexExpr(Value operand, Value result, StringRef i);
  /// Prints one loop over `space`'s elements; `body` prints its
  /// statements given each operand's read (broadcast into the loop, or a
  /// splat's literal), the index of the element and the indentation.
  void emitLoop(Value space, ValueRange operands,
                llvm::function_ref<void(ArrayRef<std::string>, StringRef,
                                        StringRef)>
                    body);
  void emitElementwise(Value result, ValueRange operands,
                       llvm::function_ref<std::string(ArrayRef<std::string>)>
                           expr);
  LogicalResult emitKernel(KernelOp kernel);
  /// Prints the body ops `ops` as locals of a loop body, t<local>, ...,
  /// each operand's expression taken from (and each result's added to)
  /// `exprs`.
  void emitScalarOps(iterator_range<Block::iterator> ops,
                     DenseMap<Value, std::string> &exprs, unsigned &local,
                     StringRef indent);
  void emitElementwiseKernel(KernelOp kernel);
  void emitGemmKernel(KernelOp kernel);
  void emitReductionKernel(KernelOp kernel);
  void emitClassifierKernel(KernelOp kernel);

  LogicalResult emitMatmul(MatmulOp op);
  /// The runtime's GEMM call for `op`, reading `lhs` and `rhs` and writing
  /// `out` (C pointers).
  void emitMatmulCall(MatmulOp op, StringRef lhs, StringRef rhs, StringRef out);
  LogicalResult emitConstant(ConstantOp op);
  /// The call of a layer body: its results' pointers, then the call with
  /// this layer's offsets.
  LogicalResult emitLayerCall(func::CallOp call);
  /// How constant `v` named `name` is stored: the statement that defines it
  /// (a static array, or a splat's elements filled once on the heap) and its
  /// pointer type, or only a comment when every reader takes it as a
  /// literal.
  struct ConstantStorage {
    std::string statement, pointerType;
  };
  FailureOr<ConstantStorage> constantStorage(ConstantOp op, StringRef name);

  func::FuncOp func;
  llvm::raw_ostream &os;
  unsigned opsPerFunction;
  int64_t arenaBytes_ = 0;
  DenseMap<Value, std::string> names;
  unsigned counter = 0;
  unsigned shapeCounter = 0;

  // Parts.
  std::string stepName; ///< the C++ function: "train_step"
  llvm::function_ref<std::string(unsigned)> bindArgument;
  bool inParts = false;
  /// The values declared in the part being emitted.
  DenseSet<Value> declared;
  /// Constants kept in memory, by the pointer type of their accessor
  /// function (NAME_cN()).
  DenseMap<Value, std::string> constantPointers;
};

LogicalResult FunctionEmitter::checkTypes() {
  auto check = [&](Value v, Operation *where) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return where->emitError("cpu backend: expected a ranked tensor, got ")
             << v.getType();
    if (cType(t.getElementType()).empty())
      return where->emitError("cpu backend: element type ")
             << t.getElementType()
             << " is not supported on the CPU (f32, i32, i64, i1 are); use "
                "fp32 precision for CPU targets";
    return success();
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(check(arg, func)))
      return failure();
  WalkResult walk = func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (failed(check(r, op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult FunctionEmitter::readPlan() {
  FailureOr<int64_t> arena = plannedArenaBytes(func, "cpu backend");
  if (failed(arena))
    return failure();
  arenaBytes_ = *arena;
  return success();
}

void FunctionEmitter::declareResult(Value v) {
  names[v] = "v" + std::to_string(counter++);
  declarePointer(v);
}

std::string FunctionEmitter::pointerExpr(Value v) {
  std::string type = "(" + cTypeOf(v).str() + " *)";
  if (Value viewed = plannedView(v))
    return type + (declared.contains(viewed) ? buf(viewed)
                                             : "(" + pointerExpr(viewed) + ")");
  if (auto arg = dyn_cast<BlockArgument>(v))
    return type + bindArgument(arg.getArgNumber());
  if (isa<ConstantOp>(v.getDefiningOp()))
    // In parts, from its accessor (emitParts); else its local.
    return constantPointers.count(v) ? stepName + "_" + names[v] + "()"
                                     : names[v];
  auto r = cast<OpResult>(v);
  PlaceAttr place = placeOf(r.getOwner());
  // In a layer body, the slot of the offset table the caller passes.
  if (std::optional<int64_t> slot = place.slot(r.getResultNumber()))
    return type + "(arena + off[" + std::to_string(*slot) + "])";
  return type + "(arena + " +
         std::to_string(*place.arenaOffset(r.getResultNumber())) + ")";
}

std::string FunctionEmitter::refOf(Value v) {
  return declared.contains(v) ? buf(v) : "(" + pointerExpr(v) + ")";
}

void FunctionEmitter::declarePointer(Value v) {
  std::string name = names.lookup(v);
  os << "  " << cTypeOf(v) << " *" << name << " = " << pointerExpr(v) << ";\n";
  declared.insert(v);
}

std::string FunctionEmitter::indexExpr(Value operand, Value result,
                                       StringRef i) {
  ArrayRef<int64_t> in = tensorType(operand).getShape();
  ArrayRef<int64_t> out = tensorType(result).getShape();
  if (std::optional<std::string> simple = simpleBroadcastIndex(in, out, i))
    return *simple;
  // General case: strides with zeros for broadcast dims.
  SmallVector<int64_t> padded = broadcastAligned(in, out);
  SmallVector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (int64_t d = out.size() - 1; d >= 0; --d) {
    strides[d] = padded[d] == 1 ? 0 : stride;
    stride *= padded[d];
  }
  std::string id = std::to_string(shapeCounter++);
  os << "  static const int64_t shape" << id << "[] = " << intList(out)
     << ";\n  static const int64_t strides" << id << "[] = "
     << intList(strides) << ";\n";
  return llvm::formatv("tgc_bcast_index({0}, {1}, shape{2}, strides{2})", i,
                       out.size(), id)
      .str();
}

/// The element count of `operand` when it broadcasts against `result` by
/// repeating along leading dims only (a bias [N] against [M, N]), else 0.
static int64_t suffixBroadcastSize(Value operand, Value result) {
  ArrayRef<int64_t> in = tensorType(operand).getShape();
  ArrayRef<int64_t> out = tensorType(result).getShape();
  while (!in.empty() && in.front() == 1)
    in = in.drop_front();
  if (in.empty() || in.size() >= out.size() || out.take_back(in.size()) != in)
    return 0;
  return product(in);
}

void FunctionEmitter::emitLoop(
    Value space, ValueRange operands,
    llvm::function_ref<void(ArrayRef<std::string>, StringRef, StringRef)>
        body) {
  // The common broadcast (every operand full-sized, a scalar, or repeating
  // along leading dims with one inner size) is a loop nest whose inner loop
  // vectorizes, instead of a modulo per element.
  int64_t n = numel(space), inner = 0;
  bool nest = true;
  for (Value v : operands) {
    int64_t count = numel(v);
    if (count == n || count == 1)
      continue;
    int64_t k = suffixBroadcastSize(v, space);
    if (k == 0 || (inner != 0 && k != inner)) {
      nest = false;
      break;
    }
    inner = k;
  }
  if (nest && inner > 1) {
    std::string index = "o * " + std::to_string(inner) + " + j";
    SmallVector<std::string> args;
    for (Value v : operands) {
      int64_t count = numel(v);
      if (auto literal = splatLiteral(v)) {
        args.push_back(*literal);
        continue;
      }
      args.push_back(buf(v) + (count == n   ? "[" + index + "]"
                               : count == 1 ? "[0]"
                                            : "[j]"));
    }
    os << "  #pragma omp parallel for if(" << n << " > 32768)\n"
       << "  for (int64_t o = 0; o < " << n / inner << "; ++o) {\n"
       << "    #pragma omp simd\n"
       << "    for (int64_t j = 0; j < " << inner << "; ++j) {\n";
    body(args, index, "      ");
    os << "    }\n  }\n";
    return;
  }
  SmallVector<std::string> args;
  for (Value v : operands) {
    auto literal = splatLiteral(v);
    args.push_back(literal ? *literal
                           : buf(v) + "[" + indexExpr(v, space, "i") + "]");
  }
  os << "  #pragma omp parallel for if(" << n << " > 32768)\n"
     << "  for (int64_t i = 0; i < " << n << "; ++i) {\n";
  body(args, "i", "    ");
  os << "  }\n";
}

void FunctionEmitter::emitElementwise(
    Value result, ValueRange operands,
    llvm::function_ref<std::string(ArrayRef<std::string>)> expr) {
  emitLoop(result, operands,
           [&](ArrayRef<std::string> args, StringRef index, StringRef indent) {
             os << indent << buf(result) << "[" << index
                << "] = " << expr(args) << ";\n";
           });
}

/// Whether the C++ backend prints `kernel`: the kernels tg-fuse forms for
/// target=cpu. Other targets' (data movement in an elementwise loop, a
/// GEMM storing two results, an optimizer kernel) are an error to report.
static LogicalResult checkPrintable(KernelOp kernel) {
  auto fail = [&](StringRef what) {
    return kernel.emitError("C++ backend: this ")
           << stringifyKernelKind(kernel.getKind()) << " kernel " << what
           << "; tg-fuse's cpu target (tgc --emit=cpp) forms what it prints";
  };
  Block &body = kernel.getBody().front();
  switch (kernel.getKind()) {
  case KernelKind::elementwise:
    for (Operation &op : body.without_terminator())
      if (!isElementwiseOp(&op) ||
          cast<RankedTensorType>(op.getResult(0).getType()).getShape() !=
              cast<RankedTensorType>(kernel.getResult(0).getType()).getShape())
        return fail("with '" + op.getName().getStringRef().str() +
                    "' at another shape than its loop");
    return success();
  case KernelKind::gemm:
    if (kernel.getNumResults() != 1)
      return fail("storing more than one result");
    return success();
  case KernelKind::optimizer:
    return fail("(a multi-tensor update)");
  case KernelKind::reduction:
  case KernelKind::classifier:
    return success();
  }
  llvm_unreachable("unknown kernel kind");
}

LogicalResult FunctionEmitter::emitKernel(KernelOp kernel) {
  if (failed(checkPrintable(kernel)))
    return failure();
  switch (kernel.getKind()) {
  case KernelKind::elementwise:
    emitElementwiseKernel(kernel);
    break;
  case KernelKind::gemm:
    emitGemmKernel(kernel);
    break;
  case KernelKind::reduction:
    emitReductionKernel(kernel);
    break;
  case KernelKind::classifier:
    emitClassifierKernel(kernel);
    break;
  case KernelKind::optimizer:
    llvm_unreachable("checkPrintable refuses optimizer kernels");
  }
  return success();
}

void FunctionEmitter::emitScalarOps(iterator_range<Block::iterator> ops,
                                    DenseMap<Value, std::string> &exprs,
                                    unsigned &local, StringRef indent) {
  for (Operation &op : ops) {
    SmallVector<std::string> args;
    for (Value v : op.getOperands())
      args.push_back(exprs.lookup(v));
    Value r = op.getResult(0);
    std::string name = "t" + std::to_string(local++);
    os << indent << cTypeOf(r) << " " << name << " = " << scalarExpr(&op, args)
       << ";\n";
    exprs[r] = name;
  }
}

void FunctionEmitter::emitElementwiseKernel(KernelOp kernel) {
  // One loop over the kernel's iteration space: each body op becomes a
  // local of the loop body, only the yielded values are stored.
  Block &body = kernel.getBody().front();
  Value space = kernel.getResult(0);
  emitLoop(space, kernel.getInputs(),
           [&](ArrayRef<std::string> reads, StringRef index,
               StringRef indent) {
             DenseMap<Value, std::string> exprs;
             for (auto [arg, read] : llvm::zip(body.getArguments(), reads))
               exprs[arg] = read;
             unsigned local = 0;
             emitScalarOps(body.without_terminator(), exprs, local, indent);
             for (auto [result, yielded] :
                  llvm::zip(kernel.getResults(),
                            kernel.getYield().getValues()))
               os << indent << buf(result) << "[" << index
                  << "] = " << exprs.lookup(yielded) << ";\n";
           });
}

/// The block arguments the ops `ops` read, each once, in order of first read.
static SmallVector<BlockArgument>
argumentsReadBy(iterator_range<Block::iterator> ops) {
  SmallVector<BlockArgument> args;
  for (Operation &op : ops)
    for (Value v : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && !llvm::is_contained(args, arg))
        args.push_back(arg);
  return args;
}

void FunctionEmitter::emitGemmKernel(KernelOp kernel) {
  // The GEMM writes the result; one loop then applies the epilogue to it in
  // place, reading each element once and writing it once, as the unfused
  // ops' loops would compute it.
  Block &body = kernel.getBody().front();
  auto matmul = cast<MatmulOp>(body.front());
  Value out = kernel.getResult(0);
  auto input = [&](Value arg) {
    return kernel.getInputs()[cast<BlockArgument>(arg).getArgNumber()];
  };
  emitMatmulCall(matmul, buf(input(matmul.getLhs())),
                 buf(input(matmul.getRhs())), buf(out));
  auto epilogue = llvm::make_range(std::next(body.begin()),
                                   body.getTerminator()->getIterator());
  if (epilogue.empty())
    return;
  SmallVector<BlockArgument> args = argumentsReadBy(epilogue);
  SmallVector<Value> operands = {out};
  for (BlockArgument arg : args)
    operands.push_back(input(arg));
  emitLoop(out, operands,
           [&](ArrayRef<std::string> reads, StringRef index, StringRef indent) {
             DenseMap<Value, std::string> exprs;
             exprs[matmul.getResult()] = reads[0];
             for (auto [arg, read] : llvm::zip(args, reads.drop_front()))
               exprs[arg] = read;
             unsigned local = 0;
             emitScalarOps(epilogue, exprs, local, indent);
             os << indent << buf(out) << "[" << index
                << "] = " << exprs.lookup(kernel.getYield().getValues()[0])
                << ";\n";
           });
}

void FunctionEmitter::emitReductionKernel(KernelOp kernel) {
  // The runtime's one-pass reduction (runtime/cpu/Reduce.cpp) over
  // [outer, reduced, inner], reading the prologue's value where it reads
  // memory: sums in double, each output's terms in the same order (rows: one
  // simd reduction per row; columns: blocks of 64 along inner, rows in
  // order), then the epilogue on each reduced element.
  Block &body = kernel.getBody().front();
  Operation *reduction = nullptr;
  for (Operation &op : body.without_terminator())
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
      reduction = &op;
  auto [outer, red, inner] = *KernelOp::getReductionNest(reduction);
  bool isMax = isa<ReduceMaxOp>(reduction);
  Value x = reduction->getOperand(0), reduced = reduction->getResult(0);
  Value out = kernel.getResult(0);
  auto prologue = llvm::make_range(body.begin(), reduction->getIterator());
  auto epilogue = llvm::make_range(std::next(reduction->getIterator()),
                                   body.getTerminator()->getIterator());
  auto input = [&](BlockArgument arg) {
    return kernel.getInputs()[arg.getArgNumber()];
  };
  // An input's element at index `i` of `space` (broadcast into it).
  auto read = [&](BlockArgument arg, Value space, StringRef i) {
    Value v = input(arg);
    if (auto literal = splatLiteral(v))
      return *literal;
    return buf(v) + "[" + indexExpr(v, space, i) + "]";
  };
  DenseMap<Value, std::string> inExprs, outExprs;
  SmallVector<BlockArgument> prologueArgs = argumentsReadBy(
      llvm::make_range(body.begin(), std::next(reduction->getIterator())));
  for (BlockArgument arg : prologueArgs)
    inExprs[arg] = read(arg, x, "i");
  for (BlockArgument arg : argumentsReadBy(epilogue))
    outExprs[arg] = read(arg, out, "k");
  std::string scale;
  if (isa<ReduceMeanOp>(reduction))
    scale = " * " + floatLiteral((float)(1.0 / red));
  std::string type = cTypeOf(reduced).str();

  // Locals are numbered through the prologue, the reduced element and the
  // epilogue.
  unsigned local = 0;
  // The reduced element `acc` through the epilogue, stored at out[k].
  auto finish = [&](StringRef acc, StringRef indent) {
    std::string r = "t" + std::to_string(local++);
    os << indent << type << " " << r << " = "
       << (isMax ? acc.str() : "(" + type + ")" + acc.str() + scale) << ";\n";
    outExprs[reduced] = r;
    emitScalarOps(epilogue, outExprs, local, indent);
    os << indent << buf(out)
       << "[k] = " << outExprs.lookup(kernel.getYield().getValues()[0])
       << ";\n";
  };
  // One term, the prologue's value at index i, into `acc`.
  auto accumulate = [&](StringRef acc, StringRef indent) {
    emitScalarOps(prologue, inExprs, local, indent);
    std::string term = inExprs.lookup(x);
    if (isMax)
      os << indent << acc << " = (" << term << " > " << acc << " || " << term
         << " != " << term << ") ? " << term << " : " << acc << ";\n";
    else
      os << indent << acc << " += " << term << ";\n";
  };

  if (inner == 1) {
    os << "  #pragma omp parallel for schedule(static) if(" << outer * red
       << " > 32768)\n"
       << "  for (int64_t o = 0; o < " << outer << "; ++o) {\n";
    if (isMax)
      os << "    float acc = -INFINITY;\n";
    else
      os << "    double acc = 0;\n    #pragma omp simd reduction(+ : acc)\n";
    os << "    for (int64_t r = 0; r < " << red << "; ++r) {\n"
       << "      int64_t i = o * " << red << " + r;\n";
    accumulate("acc", "      ");
    os << "    }\n    int64_t k = o;\n";
    finish("acc", "    ");
    os << "  }\n";
    return;
  }
  constexpr int64_t kBlock = 64;
  int64_t blocks = (inner + kBlock - 1) / kBlock;
  os << "  #pragma omp parallel for schedule(static) if(" << outer * red * inner
     << " > 32768)\n"
     << "  for (int64_t blk = 0; blk < " << outer * blocks << "; ++blk) {\n"
     << "    int64_t o = blk / " << blocks << ", j0 = (blk % " << blocks
     << ") * " << kBlock << ";\n"
     << "    int64_t len = std::min<int64_t>(" << kBlock << ", " << inner
     << " - j0);\n";
  if (isMax)
    os << "    float acc[" << kBlock << "];\n"
       << "    for (int64_t j = 0; j < len; ++j)\n"
       << "      acc[j] = -INFINITY;\n";
  else
    os << "    double acc[" << kBlock << "] = {};\n";
  os << "    for (int64_t r = 0; r < " << red << "; ++r) {\n";
  if (!isMax)
    os << "      #pragma omp simd\n";
  os << "      for (int64_t j = 0; j < len; ++j) {\n"
     << "        int64_t i = (o * " << red << " + r) * " << inner
     << " + j0 + j;\n";
  accumulate("acc[j]", "        ");
  os << "      }\n    }\n"
     << "    for (int64_t j = 0; j < len; ++j) {\n"
     << "      int64_t k = o * " << inner << " + j0 + j;\n";
  finish("acc[j]", "      ");
  os << "    }\n  }\n";
}

LogicalResult FunctionEmitter::emitConstant(ConstantOp op) {
  Value v = op.getResult();
  if (inParts) {
    // Defined at namespace scope before the parts, declared by the parts
    // that read it (emitParts).
    if (constantPointers.count(v)) {
      os << "  // (" << names[v] << ": " << stepName << "_" << names[v]
         << "())\n";
      return success();
    }
  } else {
    names[v] = "c" + std::to_string(counter++);
    declared.insert(v);
  }
  auto storage = constantStorage(op, names[v]);
  if (failed(storage))
    return failure();
  os << "  " << storage->statement << "\n";
  return success();
}

FailureOr<FunctionEmitter::ConstantStorage>
FunctionEmitter::constantStorage(ConstantOp op, StringRef name) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitError("cpu backend: only dense constants are supported");
  Value v = op.getResult();
  Type elem = tensorType(v).getElementType();
  auto literal = [&](int64_t i) -> std::string {
    if (isa<FloatType>(elem))
      return floatLiteral(
          (attr.isSplat() ? attr.getSplatValue<APFloat>()
                          : attr.getValues<APFloat>()[i])
              .convertToDouble());
    APInt value = attr.isSplat() ? attr.getSplatValue<APInt>()
                                 : attr.getValues<APInt>()[i];
    return elem.isInteger(1) ? std::to_string(value.getZExtValue())
                             : std::to_string(value.getSExtValue());
  };
  int64_t n = numel(v);
  ConstantStorage storage;
  llvm::raw_string_ostream statement(storage.statement);
  if (attr.isSplat() && n > 1) {
    // Loops read a splat as its literal; an op that needs it in memory gets
    // it filled once on the heap (never a static array of its size).
    if (llvm::all_of(v.getUses(), readsSplatAsLiteral)) {
      statement << "// (a splat of " << n << ", read as " << literal(0) << ")";
      return storage;
    }
    statement << "static " << cTypeOf(v) << " *" << name << " = tgc_splat<"
              << cTypeOf(v) << ">(" << n << ", " << literal(0) << ");";
    storage.pointerType = (cTypeOf(v) + " *").str();
    return storage;
  }
  statement << "static const " << cTypeOf(v) << " " << name << "[" << n
            << "] = {";
  for (int64_t i = 0; i < n; ++i)
    statement << (i ? ", " : "") << literal(i);
  statement << "};";
  storage.pointerType = ("const " + cTypeOf(v) + " *").str();
  return storage;
}

/// A cross-entropy reduction as the runtime numbers it.
static int lossReductionCode(LossReduction reduction) {
  switch (reduction) {
  case LossReduction::mean:
    return 0;
  case LossReduction::sum:
    return 1;
  case LossReduction::none:
    return 2;
  }
  llvm_unreachable("unhandled LossReduction");
}

/// tg.cross_entropy's reduction as the runtime numbers it.
static int lossReductionCode(CrossEntropyOp op) {
  return lossReductionCode(op.getReduction());
}

void FunctionEmitter::emitClassifierKernel(KernelOp kernel) {
  // One sweep per row of logits: the log-sum-exp once, for the loss and
  // for dlogits (the very operations of the two runtime calls).
  Block &body = kernel.getBody().front();
  auto loss = cast<CrossEntropyOp>(body.front());
  auto grad = cast<CrossEntropyGradOp>(*std::next(body.begin()));
  auto input = [&](Value arg) {
    return kernel.getInputs()[cast<BlockArgument>(arg).getArgNumber()];
  };
  auto resultOf = [&](Value v) -> Value {
    for (auto [result, yielded] :
         llvm::zip(kernel.getResults(), kernel.getYield().getValues()))
      if (yielded == v)
        return result;
    return {};
  };
  Value lossOut = resultOf(loss.getResult());
  auto t = tensorType(input(loss.getLogits()));
  int64_t classes = t.getShape().back();
  int reduction = lossReductionCode(loss);
  std::string call = llvm::formatv(
      "tgc::cpu::cross_entropy_with_grad({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
      "{7}, {8})",
      buf(input(grad.getGrad())), buf(input(loss.getLogits())),
      buf(input(loss.getLabels())), t.getNumElements() / classes, classes,
      (int64_t)loss.getIgnoreIndex(), reduction,
      reduction == 2 && lossOut ? buf(lossOut) : "nullptr",
      buf(resultOf(grad.getResult())));
  if (lossOut && reduction != 2)
    os << "  " << buf(lossOut) << "[0] = " << call << ";\n";
  else
    os << "  " << call << ";\n";
}

LogicalResult FunctionEmitter::emitMatmul(MatmulOp op) {
  emitMatmulCall(op, buf(op.getLhs()), buf(op.getRhs()), buf(op.getResult()));
  return success();
}

void FunctionEmitter::emitMatmulCall(MatmulOp op, StringRef lhs, StringRef rhs,
                                     StringRef out) {
  MatmulDims dims(op);
  std::string id = std::to_string(shapeCounter++);
  os << "  {\n    " << dims.batchArrays() << "\n    tgc::cpu::matmul(" << lhs
     << ", " << rhs << ", " << out << ", " << dims.arguments() << ");\n  }\n";
  (void)id;
}

/// Outer, axis and inner extents of a tensor around one axis.
std::tuple<int64_t, int64_t, int64_t> splitAxis(RankedTensorType t,
                                                int64_t axis) {
  ArrayRef<int64_t> s = t.getShape();
  return {product(s.take_front(axis)), s[axis], product(s.drop_front(axis + 1))};
}

std::string nullable(FunctionEmitter &e, Value v) {
  return v ? e.buf(v) : "nullptr";
}

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  std::string where = describeLoc(op->getLoc());
  os << "  // " << op->getName();
  if (auto kernel = dyn_cast<KernelOp>(op); kernel && kernel.getName())
    os << " " << *kernel.getName();
  if (!where.empty())
    os << " (" << where << ")";
  os << "\n";
  StepPiece piece = stepPieceOf(op);
  if (piece == StepPiece::Constant)
    return emitConstant(cast<ConstantOp>(op));
  if (piece == StepPiece::Layer) {
    // Results named, declared where another op reads them (below).
    for (Value r : op->getResults())
      names[r] = "v" + std::to_string(counter++);
    return emitLayerCall(cast<func::CallOp>(op));
  }
  for (Value v : op->getOperands())
    if (isa_and_nonnull<func::CallOp>(v.getDefiningOp()) &&
        !declared.contains(v))
      declarePointer(v);
  for (Value r : op->getResults())
    declareResult(r);
  if (piece == StepPiece::View)
    return success(); // no code
  if (piece == StepPiece::Kernel)
    return emitKernel(cast<KernelOp>(op));
  if (isLoopOp(op)) {
    emitElementwise(op->getResult(0), op->getOperands(),
                    [&](ArrayRef<std::string> a) { return scalarExpr(op, a); });
    return success();
  }

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](IotaOp iota) {
        emitLoop(iota.getResult(), {},
                 [&](ArrayRef<std::string>, StringRef index, StringRef indent) {
                   os << indent << buf(iota.getResult()) << "[" << index
                      << "] = " << iotaExpr(iota, index) << ";\n";
                 });
        return success();
      })
      .Case([&](GeluOp g) {
        // The runtime's GELU vectorizes (and keeps accuracy for large
        // negative inputs); see runtime/cpu/Activation.cpp.
        os << "  tgc::cpu::gelu(" << buf(g.getX()) << ", " << buf(g.getResult())
           << ", " << numel(g.getX()) << ", "
           << tanhArgument(g.getApproximate()) << ");\n";
        return success();
      })
      .Case([&](GeluGradOp g) {
        os << "  tgc::cpu::gelu_grad(" << buf(g.getGrad()) << ", "
           << buf(g.getX()) << ", " << buf(g.getResult()) << ", "
           << numel(g.getX()) << ", " << tanhArgument(g.getApproximate())
           << ");\n";
        return success();
      })
      .Case([&](MatmulOp m) { return emitMatmul(m); })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto r) {
        StringRef kind = isa<ReduceSumOp>(op)    ? "Sum"
                         : isa<ReduceMeanOp>(op) ? "Mean"
                                                 : "Max";
        SmallVector<int64_t> dims = r.getReducedDims();
        auto x = tensorType(r.getX());
        os << "  {\n    static const int64_t shape[] = "
           << intList(x.getShape()) << ", dims[] = " << intList(dims)
           << ";\n    tgc::cpu::reduce(tgc::cpu::ReduceKind::" << kind << ", "
           << buf(r.getX()) << ", shape, " << x.getRank() << ", dims, "
           << dims.size() << ", " << buf(r.getResult()) << ");\n  }\n";
        return success();
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) {
        auto t = tensorType(s.getX());
        auto [outer, n, inner] =
            splitAxis(t, *normalizeAxis(s.getAxis(), t.getRank()));
        os << "  tgc::cpu::" << (isa<SoftmaxOp>(op) ? "softmax" : "log_softmax")
           << "(" << buf(s.getX()) << ", " << buf(s.getResult()) << ", "
           << outer << ", " << n << ", " << inner << ");\n";
        return success();
      })
      .Case([&](LayerNormOp l) {
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        os << "  tgc::cpu::layer_norm(" << buf(l.getX()) << ", "
           << nullable(*this, l.getWeight()) << ", "
           << nullable(*this, l.getBias()) << ", " << buf(l.getResult())
           << ", " << t.getNumElements() / d << ", " << d << ", "
           << floatLiteral(l.getEps().convertToDouble()) << ");\n";
        return success();
      })
      .Case([&](LayerNormGradOp l) {
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        os << "  tgc::cpu::layer_norm_grad(" << buf(l.getGrad()) << ", "
           << buf(l.getX()) << ", " << nullable(*this, l.getWeight()) << ", "
           << buf(l.getDx()) << ", " << buf(l.getDweight()) << ", "
           << buf(l.getDbias()) << ", " << t.getNumElements() / d << ", " << d
           << ", " << floatLiteral(l.getEps().convertToDouble()) << ");\n";
        return success();
      })
      .Case([&](RmsNormOp l) {
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        os << "  tgc::cpu::rms_norm(" << buf(l.getX()) << ", "
           << nullable(*this, l.getWeight()) << ", " << buf(l.getResult())
           << ", " << t.getNumElements() / d << ", " << d << ", "
           << floatLiteral(l.getEps().convertToDouble()) << ");\n";
        return success();
      })
      .Case([&](RmsNormGradOp l) {
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        os << "  tgc::cpu::rms_norm_grad(" << buf(l.getGrad()) << ", "
           << buf(l.getX()) << ", " << nullable(*this, l.getWeight()) << ", "
           << buf(l.getDx()) << ", " << buf(l.getDweight()) << ", "
           << t.getNumElements() / d << ", " << d << ", "
           << floatLiteral(l.getEps().convertToDouble()) << ");\n";
        return success();
      })
      .Case([&](DropoutOp d) {
        os << "  tgc::cpu::dropout(" << buf(d.getX()) << ", "
           << buf(d.getResult()) << ", " << numel(d.getX()) << ", "
           << floatLiteral(d.getP().convertToDouble()) << ", "
           << (uint64_t)d.getSeed() << "ull, io.step, io.randomStream);\n";
        return success();
      })
      .Case([&](EmbeddingOp e) {
        auto t = tensorType(e.getTable());
        os << "  tgc::cpu::embedding(" << buf(e.getTable()) << ", "
           << t.getDimSize(0) << ", " << t.getDimSize(1) << ", "
           << buf(e.getIndices()) << ", " << numel(e.getIndices()) << ", "
           << buf(e.getResult()) << ");\n";
        return success();
      })
      .Case([&](EmbeddingGradOp e) {
        auto t = tensorType(e.getResult());
        os << "  tgc::cpu::embedding_grad(" << buf(e.getGrad()) << ", "
           << buf(e.getIndices()) << ", " << numel(e.getIndices()) << ", "
           << t.getDimSize(0) << ", " << t.getDimSize(1) << ", "
           << buf(e.getResult()) << ");\n";
        return success();
      })
      .Case([&](CrossEntropyOp c) {
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back();
        int reduction = lossReductionCode(c.getReduction());
        std::string call = llvm::formatv(
            "tgc::cpu::cross_entropy({0}, {1}, {2}, {3}, {4}, {5}, {6})",
            buf(c.getLogits()), buf(c.getLabels()), t.getNumElements() / classes,
            classes, (int64_t)c.getIgnoreIndex(), reduction,
            reduction == 2 ? buf(c.getResult()) : "nullptr");
        if (reduction == 2)
          os << "  " << call << ";\n";
        else
          os << "  " << buf(c.getResult()) << "[0] = " << call << ";\n";
        return success();
      })
      .Case([&](CrossEntropyGradOp c) {
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back();
        int reduction = lossReductionCode(c.getReduction());
        os << "  tgc::cpu::cross_entropy_grad(" << buf(c.getGrad()) << ", "
           << buf(c.getLogits()) << ", " << buf(c.getLabels()) << ", "
           << t.getNumElements() / classes << ", " << classes << ", "
           << (int64_t)c.getIgnoreIndex() << ", " << reduction << ", "
           << buf(c.getResult()) << ");\n";
        return success();
      })
      .Case([&](AttentionOp a) {
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        os << "  tgc::cpu::attention(" << buf(a.getQuery()) << ", "
           << buf(a.getKey()) << ", " << buf(a.getValue()) << ", "
           << nullable(*this, a.getMask()) << ", "
           << attentionMaskShape(a.getMask()) << ", " << buf(a.getResult())
           << ", " << q[0] << ", " << q[1] << ", " << k[1] << ", " << q[2]
           << ", " << k[2] << ", " << q[3] << ", " << v[3] << ", "
           << (a.getCausal() ? "true" : "false") << ", "
           << floatLiteral(a.getEffectiveScale()) << ");\n";
        return success();
      })
      .Case([&](AttentionGradOp a) {
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        double scale = a.getScale() ? a.getScale()->convertToDouble()
                                    : 1.0 / std::sqrt((double)q[3]);
        os << "  tgc::cpu::attention_grad(" << buf(a.getGrad()) << ", "
           << buf(a.getQuery()) << ", " << buf(a.getKey()) << ", "
           << buf(a.getValue()) << ", " << nullable(*this, a.getMask()) << ", "
           << attentionMaskShape(a.getMask()) << ", " << buf(a.getDquery())
           << ", " << buf(a.getDkey()) << ", " << buf(a.getDvalue()) << ", "
           << nullable(*this, a.getDmask()) << ", " << q[0] << ", " << q[1]
           << ", " << k[1] << ", " << q[2] << ", " << k[2] << ", " << q[3]
           << ", " << v[3] << ", " << (a.getCausal() ? "true" : "false") << ", "
           << floatLiteral(scale) << ");\n";
        return success();
      })
      .Case([&](Conv2dOp c) {
        os << "  tgc::cpu::conv2d(" << buf(c.getInput()) << ", "
           << buf(c.getWeight()) << ", " << nullable(*this, c.getBias()) << ", "
           << buf(c.getResult()) << ", "
           << conv2dDims("tgc::cpu", c.getInput(), c.getWeight(), c.getResult(),
                         c.getStride(), c.getPadding(), c.getDilation(),
                         c.getGroups())
           << ");\n";
        return success();
      })
      .Case([&](Conv2dGradInputOp c) {
        os << "  tgc::cpu::conv2d_grad_input(" << buf(c.getGrad()) << ", "
           << buf(c.getWeight()) << ", " << buf(c.getResult()) << ", "
           << conv2dDims("tgc::cpu", c.getResult(), c.getWeight(), c.getGrad(),
                         c.getStride(), c.getPadding(), c.getDilation(),
                         c.getGroups())
           << ");\n";
        return success();
      })
      .Case([&](Conv2dGradWeightOp c) {
        os << "  tgc::cpu::conv2d_grad_weight(" << buf(c.getGrad()) << ", "
           << buf(c.getInput()) << ", " << buf(c.getResult()) << ", "
           << conv2dDims("tgc::cpu", c.getInput(), c.getResult(), c.getGrad(),
                         c.getStride(), c.getPadding(), c.getDilation(),
                         c.getGroups())
           << ");\n";
        return success();
      })
      .Case<MaxPool2dOp, AvgPool2dOp>([&](auto p) {
        os << "  tgc::cpu::" << (isa<MaxPool2dOp>(op) ? "max" : "avg")
           << "_pool2d(" << buf(p.getInput()) << ", " << buf(p.getResult())
           << ", "
           << pool2dDims("tgc::cpu", p.getInput(), p.getResult(),
                         p.getKernelSize(), p.getEffectiveStride(),
                         p.getPadding())
           << ");\n";
        return success();
      })
      .Case<MaxPool2dGradOp, AvgPool2dGradOp>([&](auto p) {
        SmallVector<int64_t> stride =
            p.getStride() ? llvm::to_vector(*p.getStride())
                          : llvm::to_vector(p.getKernelSize());
        std::string dims =
            pool2dDims("tgc::cpu", p.getInput(), p.getGrad(), p.getKernelSize(),
                       stride, p.getPadding());
        if (isa<MaxPool2dGradOp>(op))
          os << "  tgc::cpu::max_pool2d_grad(" << buf(p.getGrad()) << ", "
             << buf(p.getInput()) << ", " << buf(p.getResult()) << ", " << dims
             << ");\n";
        else
          os << "  tgc::cpu::avg_pool2d_grad(" << buf(p.getGrad()) << ", "
             << buf(p.getResult()) << ", " << dims << ");\n";
        return success();
      })
      .Case([&](TransposeOp t) -> LogicalResult {
        if (!tensorType(t.getX()).getElementType().isF32())
          return t.emitError("cpu backend: transpose supports f32 only, got ")
                 << tensorType(t.getX()).getElementType();
        os << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(t.getX()).getShape())
           << ", perm[] = " << intList(t.getPerm()) << ";\n"
           << "    tgc::cpu::transpose(" << buf(t.getX()) << ", shape, "
           << t.getPerm().size() << ", perm, " << buf(t.getResult())
           << ");\n  }\n";
        return success();
      })
      .Case([&](SliceOp s) -> LogicalResult {
        if (!tensorType(s.getX()).getElementType().isF32())
          return s.emitError("cpu backend: slice supports f32 only, got ")
                 << tensorType(s.getX()).getElementType();
        os << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(s.getX()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(s.getEffectiveStride())
           << ", outShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cpu::slice(" << buf(s.getX()) << ", shape, "
           << tensorType(s.getX()).getRank() << ", start, stride, "
           << buf(s.getResult()) << ", outShape);\n  }\n";
        return success();
      })
      .Case([&](SliceGradOp s) {
        SmallVector<int64_t> stride =
            s.getStride() ? llvm::to_vector(*s.getStride())
                          : SmallVector<int64_t>(s.getStart().size(), 1);
        os << "  {\n    static const int64_t gShape[] = "
           << intList(tensorType(s.getGrad()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(stride)
           << ", xShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cpu::slice_grad(" << buf(s.getGrad()) << ", gShape, "
           << stride.size() << ", start, stride, " << buf(s.getResult())
           << ", xShape);\n  }\n";
        return success();
      })
      .Case([&](ConcatOp c) -> LogicalResult {
        if (!tensorType(c.getResult()).getElementType().isF32())
          return c.emitError("cpu backend: concat supports f32 only, got ")
                 << tensorType(c.getResult()).getElementType();
        os << "  {\n";
        std::string inputs, shapes;
        for (auto [i, v] : llvm::enumerate(c.getInputs())) {
          os << "    static const int64_t shape" << i << "[] = "
             << intList(tensorType(v).getShape()) << ";\n";
          inputs += (i ? ", " : "") + buf(v);
          shapes += (i ? ", shape" : "shape") + std::to_string(i);
        }
        os << "    const float *inputs[] = {" << inputs << "};\n"
           << "    const int64_t *shapes[] = {" << shapes << "};\n"
           << "    tgc::cpu::concat(inputs, shapes, " << c.getInputs().size()
           << ", " << tensorType(c.getResult()).getRank() << ", "
           << *normalizeAxis(c.getAxis(), tensorType(c.getResult()).getRank())
           << ", " << buf(c.getResult()) << ");\n  }\n";
        return success();
      })
      .Case([&](AllReduceOp r) -> LogicalResult {
        // tg-plan-memory laid the gradients out side by side: one message.
        auto span = r->getAttrOfType<SpanAttr>(TgDialect::kBucketSpanAttr);
        if (!span)
          return r.emitError("cpu backend: a tg.all_reduce without "
                             "tg.bucket_span; run tg-plan-memory");
        FailureOr<int> axis = meshAxisIndex(r, r.getMeshAxis(), "cpu backend");
        if (failed(axis))
          return failure();
        for (auto [in, out] : llvm::zip(r.getInputs(), r.getResults()))
          if (plannedView(out) != in)
            os << "  std::memcpy(" << buf(out) << ", " << buf(in) << ", "
               << numel(in) << " * sizeof(float));\n";
        if (*axis < 0) {
          // No mesh: every process is a data-parallel replica.
          os << "  tgc::comm::"
             << (r.getReduction() == Reduction::mean ? "allReduceMean"
                                                     : "allReduceSum")
             << "(io.comm, (float *)(arena + " << span.getOffset() << "), "
             << span.getBytes() / 4 << ");\n";
          return success();
        }
        os << "  tgc::comm::allReduce(io.comm, /*axis=*/" << *axis << " /* "
           << r.getMeshAxis() << " */, arena + " << span.getOffset() << ", "
           << span.getBytes() / 4 << ", tgc::DType::F32, "
           << commReduceOp(r.getReduction()) << ", nullptr);\n";
        return success();
      })
      .Case([&](AllGatherOp g) -> LogicalResult {
        FailureOr<int> axis = meshAxisIndex(g, g.getMeshAxis(), "cpu backend");
        if (failed(axis))
          return failure();
        os << "  tgc::comm::allGather(io.comm, /*axis=*/" << *axis << " /* "
           << g.getMeshAxis() << " */, " << buf(g.getInput()) << ", "
           << buf(g.getResult()) << ", " << numel(g.getInput()) << ", "
           << dtypeName(tensorType(g.getInput()).getElementType())
           << ", nullptr, /*blocks=*/"
           << runsBefore(g.getInput().getType(), g.getDim()) << ");\n";
        return success();
      })
      .Case([&](ReduceScatterOp r) -> LogicalResult {
        if (!tensorType(r.getInput()).getElementType().isF32())
          return r.emitError("cpu backend: tg.reduce_scatter supports f32 "
                             "only");
        FailureOr<int> axis = meshAxisIndex(r, r.getMeshAxis(), "cpu backend");
        if (failed(axis))
          return failure();
        os << "  tgc::comm::reduceScatter(io.comm, /*axis=*/" << *axis << " /* "
           << r.getMeshAxis() << " */, " << buf(r.getInput()) << ", "
           << buf(r.getResult()) << ", " << numel(r.getResult())
           << ", tgc::DType::F32, " << commReduceOp(r.getReduction())
           << ", nullptr, /*blocks=*/"
           << runsBefore(r.getResult().getType(), r.getDim()) << ");\n";
        return success();
      })
      .Case([&](AllSliceOp a) -> LogicalResult {
        FailureOr<int> axis = meshAxisIndex(a, a.getMeshAxis(), "cpu backend");
        if (failed(axis))
          return failure();
        os << "  tgc::comm::slice(io.comm, /*axis=*/" << *axis << " /* "
           << a.getMeshAxis() << " */, " << buf(a.getInput()) << ", "
           << buf(a.getResult()) << ", " << numel(a.getResult()) << ", "
           << dtypeName(tensorType(a.getInput()).getElementType())
           << ", /*blocks=*/" << runsBefore(a.getResult().getType(), a.getDim())
           << ");\n";
        return success();
      })
      .Case([&](GlobalNormOp g) {
        os << "  {\n    double sum = 0.0;\n";
        for (Value v : g.getInputs())
          os << "    sum += tgc::cpu::sum_squares(" << buf(v) << ", "
             << numel(v) << ");\n";
        os << "    " << buf(g.getResult()) << "[0] = (float)std::sqrt(sum);\n"
           << "  }\n";
        return success();
      })
      .Case([&](LrScheduleOp l) {
        os << "  {\n    static const tgc::cpu::ScheduleParams schedule"
           << scheduleParams("tgc::cpu", l) << ";\n"
           << "    " << buf(l.getResult())
           << "[0] = tgc::cpu::lr_schedule(schedule, " << buf(l.getStep())
           << "[0], " << buf(l.getBaseLr()) << "[0]);\n  }\n";
        return success();
      })
      .Case([&](OptimizerUpdateOp u) -> LogicalResult {
        if (u.getGradScale())
          return u.emitError("cpu backend: tg.optimizer_update with a "
                             "grad_scale (tg-fuse's cuda target folds the "
                             "scale; the CPU runtime's update takes the "
                             "gradient scaled)");
        StringRef kind = runtimeOptimizerKind(u.getKind());
        std::string state;
        for (auto [i, v] : llvm::enumerate(u.getNewState()))
          state += (i ? ", " : "") + buf(v);
        os << "  {\n    float *state[] = {" << (state.empty() ? "nullptr" : state)
           << "};\n    static const tgc::cpu::OptimizerHyper hyper"
           << optimizerHyper(u) << ";\n"
           << "    tgc::cpu::optimizer_update(tgc::cpu::OptimizerKind::" << kind
           << ", " << buf(u.getNewParam()) << ", " << buf(u.getGrad()) << ", "
           << "state, " << u.getState().size() << ", " << numel(u.getParam())
           << ", " << buf(u.getLr()) << "[0], " << buf(u.getStep())
           << "[0], hyper);\n  }\n";
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitError("cpu backend: no lowering for '")
               << other->getName() << "'";
      });
}

LogicalResult FunctionEmitter::emit(
    StringRef name, llvm::function_ref<std::string(unsigned)> bindArgument,
    ResultBinder bindResult) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("cpu backend: @")
           << func.getName() << " must have a single block";
  if (failed(checkTypes()))
    return failure();
  if (failed(readPlan()))
    return failure();
  stepName = name.str();
  this->bindArgument = bindArgument;
  Block &block = func.getBody().front();
  SmallVector<Operation *> ops;
  // The CPU runtime's collectives block where they stand: a tg.await has
  // nothing left to wait for.
  (void)walkStep(func, [&](Operation *op, StepPiece piece) {
    if (piece != StepPiece::Await)
      ops.push_back(op);
    return success();
  });
  if (totalWeight(ops) > opsPerFunction)
    return emitParts(name, ops, bindResult);

  os << "\n/// @" << func.getName() << ": " << arenaBytes_
     << " bytes of arena.\n"
     << (external ? "void " : "static void ") << name << "(tgc::StepIO &io) {\n"
     << "  char *arena = tgc_arena();\n  (void)arena;\n";
  for (BlockArgument arg : func.getArguments()) {
    std::string n = "a" + std::to_string(arg.getArgNumber());
    names[arg] = n;
    declared.insert(arg);
    os << "  " << cTypeOf(arg) << " *" << n << " = (" << cTypeOf(arg) << " *)"
       << bindArgument(arg.getArgNumber()) << ";\n";
  }
  // --profile: each op that does work is timed into io.trace (one branch
  // per op when not profiling). Views and constants take no time.
  os << "  tgc::Trace *trace = io.trace;\n  double t0 = 0;\n  (void)t0;\n";
  for (Operation *op : ops)
    if (failed(emitTimedOp(*op)))
      return failure();
  for (Value v : block.getTerminator()->getOperands())
    if (isa_and_nonnull<func::CallOp>(v.getDefiningOp()) &&
        !declared.contains(v))
      declarePointer(v);
  for (auto [r, v] : llvm::enumerate(block.getTerminator()->getOperands()))
    if (failed(bindResult(*this, r, v)))
      return failure();
  os << "}\n";
  return success();
}

FailureOr<std::string> FunctionEmitter::emitBody(StringRef name) {
  if (failed(checkTypes()) || failed(checkPlaced(func, "cpu backend")))
    return failure();
  std::string prototype;
  llvm::raw_string_ostream proto(prototype);
  proto << "void " << name << "(tgc::StepIO &io, const int64_t *off";
  for (BlockArgument arg : func.getArguments()) {
    std::string n = "a" + std::to_string(arg.getArgNumber());
    names[arg] = n;
    declared.insert(arg);
    proto << ", " << cTypeOf(arg) << " *" << n;
  }
  proto << ")";
  os << "\n/// A layer body (tg-outline-layers): each layer that calls it "
        "passes its\n/// buffers and the arena offsets of its slots.\n"
     << "[[gnu::noinline]] " << prototype << " {\n"
     << "  char *arena = tgc_arena();\n  (void)arena;\n  (void)off;\n"
     << "  (void)io;\n  tgc::Trace *trace = io.trace;\n  double t0 = 0;\n"
     << "  (void)t0;\n";
  if (failed(walkStep(
          func, [&](Operation *op, StepPiece) { return emitTimedOp(*op); })))
    return failure();
  os << "}\n";
  return prototype;
}

LogicalResult FunctionEmitter::emitLayerCall(func::CallOp call) {
  auto offsets =
      call->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kSlotOffsetsAttr);
  if (!offsets)
    return call.emitError("cpu backend: the call of a layer body needs "
                          "tg.slot_offsets (run tg-outline-layers)");
  os << "  {\n    static const int64_t off[] = {";
  llvm::interleaveComma(offsets.asArrayRef(), os);
  if (offsets.empty())
    os << "0";
  if (!bodyNames || !bodyNames->count(call.getCallee()))
    return call.emitError("cpu backend: @")
           << call.getCallee() << " is no layer body of this module";
  os << "};\n    " << bodyNames->lookup(call.getCallee()) << "(io, off";
  for (Value v : call.getOperands())
    os << ", " << refOf(v);
  os << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitTimedOp(Operation &op) {
  if (stepPieceOf(&op) == StepPiece::Await)
    return success(); // the collective blocked where it stood
  bool timed = doesWork(&op);
  if (timed)
    os << "  if (trace)\n    t0 = trace->now();\n";
  if (failed(emitOp(&op)))
    return failure();
  if (!timed)
    return success();
  auto kernel = dyn_cast<KernelOp>(op);
  auto call = dyn_cast<func::CallOp>(op);
  std::string label = kernel && kernel.getName() ? kernel.getName()->str()
                      : call ? "layer " + call.getCallee().str()
                             : op.getName().stripDialect().str();
  std::string where = describeLoc(op.getLoc());
  if (!where.empty())
    label += " " + where;
  std::string quoted;
  for (char c : label)
    if (c != '"' && c != '\\')
      quoted += c;
  os << "  if (trace)\n    trace->op(\"" << quoted << "\", \""
     << (stepPieceOf(&op) == StepPiece::Collective ? "collective" : "kernel")
     << "\", t0);\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Parts
//===----------------------------------------------------------------------===//

// The host compiler's time on one function grows faster than the function
// (g++ -O3 on GPT-2 124M's step as one function: 1.7 s per added layer from
// 2 to 12 layers, 3.5 s from 24 to 48; in parts of 64 ops, 1.0 s throughout;
// bench/compile/run.sh --host-build), so a long step is emitted as parts of
// a bounded number of ops, noinline so that the compiler keeps them apart.
// Names are the same in every part (v17 is one value wherever it appears);
// each part declares the pointers it reads at its top, from the arena plan's
// offsets, and the constants that ops read from memory are defined once, at
// namespace scope, by an accessor each part calls.

LogicalResult FunctionEmitter::emitParts(StringRef name,
                                         ArrayRef<Operation *> ops,
                                         ResultBinder bindResult) {
  inParts = true;
  for (BlockArgument arg : func.getArguments())
    names[arg] = "a" + std::to_string(arg.getArgNumber());
  for (Operation *op : ops) {
    auto constant = dyn_cast<ConstantOp>(op);
    if (!constant)
      continue;
    Value v = constant.getResult();
    names[v] = "c" + std::to_string(counter++);
    auto storage = constantStorage(constant, "c");
    if (failed(storage))
      return failure();
    if (storage->pointerType.empty())
      continue; // read as a literal
    constantPointers[v] = storage->pointerType;
    if (external)
      externDeclarations +=
          storage->pointerType + name.str() + "_" + names[v] + "();\n";
    std::string where = describeLoc(op->getLoc());
    os << "\n/// " << names[v] << " of @" << func.getName() << " ("
       << op->getName() << (where.empty() ? "" : " " + where) << ").\n"
       << storage->pointerType << name << "_" << names[v] << "() {\n  "
       << storage->statement << "\n  return c;\n}\n";
  }

  // The ops in parts of at most opsPerFunction by weight, then the results
  // (a deep model has many parameters to hand over) in parts of as many.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  size_t numResults = ret.getNumOperands();
  SmallVector<size_t> opStarts{0};
  for (size_t i = 0, weight = 0; i < ops.size(); ++i) {
    size_t w = weightOf(ops[i]);
    if (weight > 0 && weight + w > opsPerFunction) {
      opStarts.push_back(i);
      weight = 0;
    }
    weight += w;
  }
  opStarts.push_back(ops.size());
  size_t opParts = opStarts.size() - 1;
  size_t numParts =
      opParts + (numResults + opsPerFunction - 1) / opsPerFunction;
  for (size_t p = 0; p < numParts; ++p) {
    bool results = p >= opParts;
    size_t first = results ? (p - opParts) * opsPerFunction : opStarts[p];
    size_t count = results
                       ? std::min<size_t>(opsPerFunction, numResults - first)
                       : opStarts[p + 1] - first;
    if (external) {
      os << kUnitBreak;
      externDeclarations += "void " + name.str() + "_part" +
                            std::to_string(p + 1) + "(tgc::StepIO &io);\n";
    }
    os << "\n/// @" << func.getName() << ", part " << p + 1 << " of "
       << numParts << ": " << (results ? "results " : "ops ") << first << "-"
       << first + count - 1;
    if (!results) {
      std::string from = describeLoc(ops[first]->getLoc());
      std::string to = describeLoc(ops[first + count - 1]->getLoc());
      if (!from.empty() && !to.empty())
        os << " (" << from << " .. " << to << ")";
    }
    os << ".\n[[gnu::noinline]] " << (external ? "" : "static ") << "void "
       << name << "_part" << p + 1 << "(tgc::StepIO &io) {\n"
       << "  char *arena = tgc_arena();\n  (void)arena;\n";
    // What the part reads from outside it (and the constants it reads),
    // declared up front. A splat that a loop reads is its literal, not a
    // pointer.
    declared.clear();
    if (results) {
      for (size_t r = first; r < first + count; ++r)
        if (failed(bindResult(*this, r, ret.getOperand(r))))
          return failure();
      os << "}\n";
      continue;
    }
    ArrayRef<Operation *> part = ops.slice(first, count);
    DenseSet<Operation *> inside(part.begin(), part.end());
    for (Operation *op : part)
      for (OpOperand &use : op->getOpOperands()) {
        Value v = use.get();
        Operation *def = v.getDefiningOp();
        if ((def && inside.contains(def) && !constantPointers.count(v)) ||
            (splatLiteral(v) && readsSplatAsLiteral(use)) ||
            isa<func::CallOp>(op))
          continue;
        declareInPart(v);
      }
    if (llvm::any_of(part, doesWork))
      os << "  tgc::Trace *trace = io.trace;\n  double t0 = 0;\n  (void)t0;\n";
    for (Operation *op : part)
      if (failed(emitTimedOp(*op)))
        return failure();
    os << "}\n";
  }

  if (external)
    os << kUnitBreak;
  os << "\n/// @" << func.getName() << ": " << arenaBytes_
     << " bytes of arena; its " << ops.size() << " ops and " << numResults
     << " results in " << numParts << " parts.\n"
     << (external ? "void " : "static void ") << name
     << "(tgc::StepIO &io) {\n";
  for (size_t p = 0; p < numParts; ++p)
    os << "  " << name << "_part" << p + 1 << "(io);\n";
  os << "}\n";
  return success();
}

void FunctionEmitter::declareInPart(Value v) {
  if (declared.contains(v))
    return;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    declared.insert(v);
    os << "  " << cTypeOf(v) << " *" << names[v] << " = (" << cTypeOf(v)
       << " *)" << bindArgument(arg.getArgNumber()) << ";\n";
    return;
  }
  if (auto it = constantPointers.find(v); it != constantPointers.end()) {
    declared.insert(v);
    os << "  " << it->second << names[v] << " = " << stepName << "_"
       << names[v] << "();\n";
    return;
  }
  if (Value viewed = plannedView(v))
    declareInPart(viewed);
  declarePointer(v);
}

/// A pipelined step's functions, each chunk's F, B and W and each stage's
/// update (PipelineTables.h binds them), then the PipelineDesc tables
/// (kPipeline). Returns the largest arena of the functions it printed.
FailureOr<int64_t>
emitPipelineFunctions(ModuleOp module, const StepSignature &sig,
                      llvm::raw_ostream &os, llvm::raw_ostream &tables,
                      unsigned opsPerFunction,
                      const llvm::StringMap<std::string> &bodyNames) {
  int64_t arena = 0;
  auto emitFunction = [&](const PipelineFunction &f) -> LogicalResult {
    FunctionEmitter emitter(f.func, os, opsPerFunction);
    emitter.bodyNames = &bodyNames;
    auto bindArg = [&](unsigned i) { return f.arguments[i]; };
    auto bindResult = [&](FunctionEmitter &e, unsigned r,
                          Value v) -> LogicalResult {
      std::string buf = e.refOf(v);
      const PipelineResult &result = f.results[r];
      if (result.kind == PipelineResult::Metric)
        e.out() << "  io." << result.field << " = " << buf << "[0];\n";
      else if (result.kind == PipelineResult::Grad)
        // W adds its part: the runtime zeroes the sums once a step.
        e.out() << "  tgc::cpu::add_into(" << result.target() << ", " << buf
                << ", " << numel(v) << ");\n";
      else
        e.out() << "  tgc::cpu::bind_result(" << result.target() << ", " << buf
                << ", " << numel(v) << " * sizeof(" << cTypeOf(v) << "));\n";
      return success();
    };
    if (failed(emitter.emit(f.func.getSymName().str(), bindArg, bindResult)))
      return failure();
    arena = std::max(arena, emitter.arenaBytes());
    return success();
  };
  if (failed(mlir::tg::emitPipeline(module, sig, "cpu backend", "&io.",
                                    emitFunction, tables)))
    return failure();
  return arena;
}

} // namespace

namespace {

/// The program in pieces: what every unit begins with, the layer bodies
/// (each a unit of its own when compiled apart), and the rest.
struct Program {
  std::string prelude;
  std::vector<CppUnit> bodies;
  /// Apart: @train_step's, @forward's and @forward_backward's functions,
  /// each a unit with the bodies' declarations.
  std::vector<CppUnit> steps;
  std::string main;
};

/// The program; `apart` for units compiled apart (emitCppUnits), else one
/// source.
LogicalResult emitProgram(ModuleOp module, const CppEmitOptions &options,
                          Program &program, bool apart) {
  auto analyzed = StepSignature::analyze(module, "cpu backend");
  if (failed(analyzed))
    return failure();
  // The executable runs on this machine (it is built with -march=native).
  int64_t memory = (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGE_SIZE);
  if (failed(checkTensorSizes(
          module, memory,
          llvm::formatv("this machine's memory ({0:f1} GiB)",
                        memory / double(1ll << 30))
              .str())))
    return failure();
  const StepSignature &sig = *analyzed;
  func::FuncOp forward = sig.forward, step = sig.trainStep;
  const std::string &model = sig.modelName;

  // The body first, into a string: the arena size goes above it.
  std::string body;
  llvm::raw_string_ostream bodyOs(body);

  // A pipelined module runs its chunks' functions (evaluation included):
  // the whole step's functions are left out.
  bool pipelined = module->hasAttr(TgDialect::kPipelineActionsAttr);

  // The layer bodies the step functions call (tg-outline-layers), each
  // named by its text, so that the same body is the same unit in any build.
  llvm::StringMap<std::string> bodyNames;
  std::string declarations;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto first = func->getAttrOfType<StringAttr>(TgDialect::kLayerBodyAttr);
    if (!first)
      continue;
    std::string text;
    llvm::raw_string_ostream textOs(text);
    constexpr StringLiteral placeholder = "TGC_LAYER_BODY";
    FailureOr<std::string> prototype =
        FunctionEmitter(func, textOs, options.opsPerFunction)
            .emitBody(placeholder);
    if (failed(prototype))
      return failure();
    std::string name =
        "tgc_body_" +
        llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                    /*LowerCase=*/true)
            .substr(0, 16);
    auto named = [&](std::string t) {
      size_t at = t.find(placeholder);
      return t.replace(at, placeholder.size(), name);
    };
    bodyNames[func.getSymName()] = name;
    declarations += "\n/// @" + func.getSymName().str() + " (" +
                    first.getValue().str() + " and the layers like it).\n" +
                    named(*prototype) + ";\n";
    // Bodies whose IR differs in what the C++ does not print (a sharding
    // annotation, what else they return) are one function.
    if (llvm::none_of(program.bodies,
                      [&](const CppUnit &b) { return b.name == name; }))
      program.bodies.push_back({name, named(text)});
  }

  // @train_step: params, state, inputs, step, base_lr.
  // Apart, each step function's text is a unit of its own.
  std::string trainText, evalText, gradText;
  llvm::raw_string_ostream trainOs(trainText), evalOs(evalText),
      gradOs(gradText);
  FunctionEmitter trainEmitter(step, apart ? trainOs : bodyOs,
                               options.opsPerFunction);
  trainEmitter.bodyNames = &bodyNames;
  trainEmitter.external = apart;
  auto bindTrainArg = [&](unsigned i) {
    return sig.trainArgumentOrScalar(i, "&io.");
  };
  auto bindTrainResult = [&](FunctionEmitter &e, unsigned r,
                             Value v) -> LogicalResult {
    StringRef field = sig.metricField(r);
    if (!field.empty()) {
      e.out() << "  io." << field << " = " << e.refOf(v) << "[0];\n";
      return success();
    }
    auto target = sig.updateTarget(r, "cpu backend");
    if (failed(target))
      return failure();
    // In-place updates already wrote there.
    e.out() << "  tgc::cpu::bind_result(" << *target << ", " << e.refOf(v)
            << ", " << numel(v) << " * sizeof(" << cTypeOf(v) << "));\n";
    return success();
  };
  // `io.step` is an int64_t, `io.baseLr` a float and `io.microBatches` an
  // int32_t, exactly the scalar tensors' element types.
  if (!pipelined &&
      failed(trainEmitter.emit("train_step", bindTrainArg, bindTrainResult)))
    return failure();

  // @forward: params and inputs in order.
  FunctionEmitter evalEmitter(forward, apart ? evalOs : bodyOs,
                              options.opsPerFunction);
  evalEmitter.bodyNames = &bodyNames;
  evalEmitter.external = apart;
  auto bindEvalArg = [&](unsigned i) -> std::string {
    return sig.forwardArgument(i);
  };
  auto bindEvalResult = [&](FunctionEmitter &e, unsigned r,
                            Value v) -> LogicalResult {
    if (r == 0)
      e.out() << "  io.loss = " << e.refOf(v) << "[0];\n";
    else
      e.out() << "  if (io.outputs)\n    std::memcpy(io.outputs[" << r - 1
              << "], " << e.refOf(v) << ", " << numel(v) << " * sizeof("
              << cTypeOf(v) << "));\n";
    return success();
  };
  if (!pipelined &&
      failed(evalEmitter.emit("eval_step", bindEvalArg, bindEvalResult)))
    return failure();

  // @forward_backward: params and inputs in order; gradients to io.grads,
  // written by the first micro-batch of a step and added by the others (so
  // the same function is the gradient check's gradStep and the
  // accumulation's accumulate).
  auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fb)
    return module.emitError("cpu backend: the module needs @forward_backward "
                            "(run tg-autodiff)");
  FunctionEmitter gradEmitter(fb, apart ? gradOs : bodyOs,
                              options.opsPerFunction);
  gradEmitter.bodyNames = &bodyNames;
  gradEmitter.external = apart;
  auto bindGradResult = [&](FunctionEmitter &e, unsigned r,
                            Value v) -> LogicalResult {
    if (r == 0)
      e.out() << "  io.loss = " << e.refOf(v) << "[0];\n";
    auto index = sig.gradResultIndex(fb, r, "cpu backend");
    if (failed(index))
      return failure();
    if (*index < 0)
      return success();
    e.out() << "  tgc::cpu::accumulate_grad(io.grads[" << *index << "], "
            << e.refOf(v) << ", " << numel(v) << ", io.microBatch == 0);\n";
    return success();
  };
  if (!pipelined &&
      failed(gradEmitter.emit("grad_step", bindEvalArg, bindGradResult)))
    return failure();

  // A pipelined step's functions and tables.
  std::string pipelineTables;
  llvm::raw_string_ostream pipelineOs(pipelineTables);
  int64_t pipelineArena = 0;
  if (pipelined) {
    FailureOr<int64_t> planned = emitPipelineFunctions(
        module, sig, bodyOs, pipelineOs, options.opsPerFunction, bodyNames);
    if (failed(planned))
      return failure();
    pipelineArena = *planned;
  }

  // What every unit begins with: the header, the runtime's headers, the
  // arena's accessor and the helpers generated code calls.
  llvm::raw_string_ostream prelude(program.prelude);
  prelude
      << "//===- Generated by tgc from " << options.sourceName << " - model \""
      << model << "\" ---===//\n"
      << "//\n// The training step of this model for the CPU runtime: "
         "@train_step (forward,\n// backward, optimizer update) and @forward "
         "(evaluation). Each block of code\n// is one tg op; the comment names "
         "the op and the model-file node it came from.\n//\n"
      << "//===---===//\n\n"
      << "#include \"runtime/comm/Comm.h\"\n"
      << "#include \"runtime/core/Error.h\"\n"
      << "#include \"runtime/core/Model.h\"\n"
      << "#include \"runtime/core/Trace.h\"\n"
      << "#include \"runtime/cpu/Kernels.h\"\n\n"
      << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
      << "#include <cstdlib>\n#include <cstring>\n#include <string>\n\n"
      << "/// Every intermediate of the steps lives in this one arena, placed "
         "by liveness.\nchar *tgc_arena();\n\nnamespace {\n\n"
      << "/// A splat constant an op needs in memory, filled once.\n"
         "template <typename T> T *tgc_splat(int64_t n, T value) {\n"
         "  T *p = static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + "
         "63) / 64 * 64));\n"
         "  if (!p)\n    throw tgc::Error(\"out of memory for a constant of \" "
         "+ std::to_string(n) + \" elements\");\n"
         "  std::fill_n(p, n, value);\n  return p;\n}\n\n"
      << "/// Index into a broadcast operand: `strides` is 0 along broadcast "
         "dims.\n[[maybe_unused]] inline int64_t tgc_bcast_index(int64_t i, "
         "int rank, const int64_t *shape,\n                               "
         "const int64_t *strides) {\n  int64_t index = 0;\n  for (int d = "
         "rank - 1; d >= 0; --d) {\n    index += (i % shape[d]) * "
         "strides[d];\n    i /= shape[d];\n  }\n  return index;\n}\n\n"
      << "} // namespace\n";

  // The rest: the bodies' declarations, the arena, the steps, the tables.
  llvm::raw_string_ostream os(program.main);
  int64_t arena = std::max({trainEmitter.arenaBytes(), evalEmitter.arenaBytes(),
                            gradEmitter.arenaBytes(), pipelineArena});
  // A step function in parts goes to units of about kUnitLines lines each,
  // which the host compiler takes side by side.
  constexpr size_t kUnitLines = 3000;
  for (auto [name, text, emitter] :
       {std::tuple{"train_step", &trainText, &trainEmitter},
        {"eval_step", &evalText, &evalEmitter},
        {"grad_step", &gradText, &gradEmitter}}) {
    if (text->empty())
      continue;
    os << "\nvoid " << name << "(tgc::StepIO &io);\n";
    SmallVector<StringRef> pieces;
    StringRef(*text).split(pieces, kUnitBreak);
    std::string header = declarations + "\n" + emitter->externDeclarations;
    std::string unit;
    size_t lines = 0, count = 0;
    auto flush = [&] {
      if (unit.empty())
        return;
      std::string unitName = name;
      if (count++ > 0)
        unitName += "." + std::to_string(count);
      program.steps.push_back({unitName, header + unit});
      unit.clear();
      lines = 0;
    };
    for (StringRef piece : pieces) {
      size_t n = piece.count('\n');
      if (lines > 0 && lines + n > kUnitLines)
        flush();
      unit += piece.str();
      lines += n;
    }
    flush();
  }
  os << declarations
     << "\nnamespace {\n\nconstexpr int64_t kArenaBytes = " << arena
     << ";\n\n} // namespace\n\nchar *tgc_arena() {\n"
     << "  static char *arena = static_cast<char *>(std::aligned_alloc(64, "
     << "kArenaBytes > 0 ? (kArenaBytes + 63) / 64 * 64 : 64));\n"
     << "  return arena;\n}\n\nnamespace {\n";
  os << body;

  // The model description.
  emitModelTables(sig, os);
  os << pipelineTables;
  os << "\n} // namespace\n\n";

  emitModelDesc(sig, module, /*deviceOps=*/"nullptr", /*flopsPerStep=*/"0",
                /*arenaBytes=*/"kArenaBytes", os, pipelined);
  return success();
}

} // namespace

LogicalResult mlir::tg::emitCpp(ModuleOp module, llvm::raw_ostream &os,
                                const CppEmitOptions &options) {
  Program program;
  if (failed(emitProgram(module, options, program, /*apart=*/false)))
    return failure();
  os << program.prelude;
  for (const CppUnit &body : program.bodies)
    os << body.text;
  os << program.main;
  return success();
}

LogicalResult mlir::tg::emitCppUnits(ModuleOp module,
                                     const CppEmitOptions &options,
                                     std::vector<CppUnit> &units) {
  Program program;
  if (failed(emitProgram(module, options, program, /*apart=*/true)))
    return failure();
  // The steps first: the largest units, which the bodies compile beside.
  units.clear();
  for (CppUnit &step : program.steps)
    units.push_back({step.name, program.prelude + step.text});
  units.push_back({"model", program.prelude + program.main});
  for (CppUnit &body : program.bodies)
    units.push_back({body.name, program.prelude + body.text});
  return success();
}

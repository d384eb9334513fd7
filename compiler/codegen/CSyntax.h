//===- CSyntax.h - tg attributes as C/C++ syntax ------------------*- C++
//-*-===//
//
// What both emitters print the same way, since both print C++ (host C++
// and CUDA C++): the operator of a comparison predicate, and the runtime's
// names for the optimizer and schedule kinds and the loss reductions
// (tgc::cpu and tgc::cuda spell their enums alike), the runtimes'
// Conv2dDims, Pool2dDims, ScheduleParams and OptimizerHyper initializers,
// a matmul's GEMM dims, the C types of elements, the elementwise ops'
// expressions and broadcast indexing's shapes.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_CSYNTAX_H
#define TGC_COMPILER_CODEGEN_CSYNTAX_H

#include "compiler/codegen/ModelDescription.h" // floatLiteral, intList
#include "dialects/tg/IR/TgOps.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>
#include <string>

namespace mlir::tg {

/// The C type of an element type both runtimes store alike, "" for the
/// others (bf16 is the CUDA backend's alone).
inline llvm::StringRef cElementType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isInteger(64))
    return "int64_t";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(1))
    return "uint8_t";
  return "";
}

/// The C++ operator of a tg.compare predicate.
inline llvm::StringRef comparisonOperator(ComparePredicate predicate) {
  switch (predicate) {
  case ComparePredicate::eq:
    return "==";
  case ComparePredicate::ne:
    return "!=";
  case ComparePredicate::lt:
    return "<";
  case ComparePredicate::le:
    return "<=";
  case ComparePredicate::gt:
    return ">";
  case ComparePredicate::ge:
    return ">=";
  }
  llvm_unreachable("unknown compare predicate");
}

/// The index of an operand shaped `in` for element `i` of a result shaped
/// `out` (numpy broadcasting) when it is one division or modulo by
/// constants: the same shape, a single element, a trailing block (a bias),
/// or leading dims followed by broadcast ones (a per-row value). Nothing in
/// the general case, which each backend indexes its own way.
inline std::optional<std::string>
simpleBroadcastIndex(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
                     llvm::StringRef i) {
  auto product = [](llvm::ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  if (in == out)
    return i.str();
  int64_t n = product(in);
  if (n == 1)
    return std::string("0");
  // Leading ones never change the index.
  while (!in.empty() && in.front() == 1)
    in = in.drop_front();
  if (out.take_back(in.size()) == in)
    return llvm::formatv("({0} % {1})", i, n).str();
  // [.., d, 1, 1] against [.., d, x, y]: i divided by the tail, wrapped
  // when the result has leading dims beyond the operand's rank.
  size_t lead = in.size();
  while (lead > 0 && in[lead - 1] == 1)
    --lead;
  size_t offset = out.size() - in.size();
  if (in.take_front(lead) == out.drop_front(offset).take_front(lead)) {
    int64_t tail = product(out.drop_front(offset + lead));
    if (offset == 0)
      return llvm::formatv("({0} / {1})", i, tail).str();
    return llvm::formatv("(({0} / {1}) % {2})", i, tail,
                         product(in.take_front(lead)))
        .str();
  }
  return std::nullopt;
}

/// The C expression of an elementwise op both backends spell alike, as a
/// formatv format of its operands ({0}, {1}, {2}); `math` spells a float
/// math function from its name ("std::{0}" on the host, "{0}f" in CUDA).
/// Nothing for the ops each backend spells its own way.
inline std::optional<std::string> elementwiseFormat(Operation *op,
                                                    llvm::StringRef math) {
  auto fn = [&](llvm::StringRef name) {
    return llvm::formatv(math.data(), name).str();
  };
  return llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case([&](AddOp) { return "{0} + {1}"; })
      .Case([&](SubOp) { return "{0} - {1}"; })
      .Case([&](MulOp) { return "{0} * {1}"; })
      .Case([&](DivOp) { return "{0} / {1}"; })
      .Case([&](MaximumOp) { return "({0} >= {1} ? {0} : {1})"; })
      .Case([&](MinimumOp) { return "({0} <= {1} ? {0} : {1})"; })
      .Case([&](SelectOp) { return "({0} ? {1} : {2})"; })
      .Case([&](NegOp) { return "-{0}"; })
      .Case([&](ExpOp) { return fn("exp") + "({0})"; })
      .Case([&](LogOp) { return fn("log") + "({0})"; })
      .Case([&](SqrtOp) { return fn("sqrt") + "({0})"; })
      .Case([&](RsqrtOp) { return "1.0f / " + fn("sqrt") + "({0})"; })
      .Case([&](TanhOp) { return fn("tanh") + "({0})"; })
      .Case([&](SinOp) { return fn("sin") + "({0})"; })
      .Case([&](CosOp) { return fn("cos") + "({0})"; })
      .Case([&](ReluOp) { return "({0} > 0.0f ? {0} : 0.0f)"; })
      .Case(
          [&](SigmoidOp) { return "1.0f / (1.0f + " + fn("exp") + "(-{0}))"; })
      .Case([&](SiluOp) { return "{0} / (1.0f + " + fn("exp") + "(-{0}))"; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The operand shape `in` aligned with a result shaped `out` for the
/// general broadcast case: leading ones dropped, then ones in front up to
/// the result's rank.
inline llvm::SmallVector<int64_t>
broadcastAligned(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  while (!in.empty() && in.front() == 1)
    in = in.drop_front();
  llvm::SmallVector<int64_t> padded(out.size() - in.size(), 1);
  padded.append(in.begin(), in.end());
  return padded;
}

/// `runtime`::Conv2dDims{...} (runtime: "tgc::cpu" or "tgc::cuda") of a
/// tg.conv2d or its gradients: NCHW input, OIHW weight, output.
inline std::string conv2dDims(llvm::StringRef runtime, Value input,
                              Value weight, Value output,
                              llvm::ArrayRef<int64_t> stride,
                              llvm::ArrayRef<int64_t> pad,
                              llvm::ArrayRef<int64_t> dil, int64_t groups) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  llvm::ArrayRef<int64_t> x = shape(input), w = shape(weight),
                          y = shape(output);
  return llvm::formatv("{0}::Conv2dDims{{{1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                       "{8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}}",
                       runtime, x[0], x[1], x[2], x[3], w[0], w[2], w[3], y[2],
                       y[3], stride[0], stride[1], pad[0], pad[1], dil[0],
                       dil[1], groups)
      .str();
}

/// `runtime`::Pool2dDims{...} of a 2-D pooling op (NCHW input and output).
inline std::string pool2dDims(llvm::StringRef runtime, Value input,
                              Value output, llvm::ArrayRef<int64_t> kernel,
                              llvm::ArrayRef<int64_t> stride,
                              llvm::ArrayRef<int64_t> pad) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  llvm::ArrayRef<int64_t> x = shape(input), y = shape(output);
  return llvm::formatv("{0}::Pool2dDims{{{1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                       "{8}, {9}, {10}, {11}, {12}}",
                       runtime, x[0], x[1], x[2], x[3], y[2], y[3], kernel[0],
                       kernel[1], stride[0], stride[1], pad[0], pad[1])
      .str();
}

/// The runtime's OptimizerKind case (tgc::cpu:: and tgc::cuda::).
inline llvm::StringRef runtimeOptimizerKind(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::sgd:
    return "SGD";
  case OptimizerKind::adam:
    return "Adam";
  case OptimizerKind::adamw:
    return "AdamW";
  case OptimizerKind::rmsprop:
    return "RMSprop";
  case OptimizerKind::adagrad:
    return "Adagrad";
  case OptimizerKind::lamb:
    return "LAMB";
  case OptimizerKind::lion:
    return "Lion";
  }
  llvm_unreachable("unknown optimizer kind");
}

/// The runtime's ScheduleKind case (tgc::cpu:: and tgc::cuda::).
inline llvm::StringRef runtimeScheduleKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::constant:
    return "Constant";
  case ScheduleKind::cosine:
    return "Cosine";
  case ScheduleKind::linear:
    return "Linear";
  case ScheduleKind::step:
    return "Step";
  case ScheduleKind::cyclic:
    return "Cyclic";
  case ScheduleKind::wsd:
    return "WSD";
  }
  llvm_unreachable("unknown schedule kind");
}

/// The runtime's Reduction case of a loss (tgc::cuda::Reduction; the CPU
/// runtime takes its position, 0, 1 or 2).
inline llvm::StringRef runtimeLossReduction(LossReduction reduction) {
  switch (reduction) {
  case LossReduction::mean:
    return "Mean";
  case LossReduction::sum:
    return "Sum";
  case LossReduction::none:
    return "None";
  }
  llvm_unreachable("unknown loss reduction");
}

/// A tg.matmul as both runtimes' matmul takes it: C[m, n] = A[m, k] B[k, n]
/// (A or B stored transposed), over batch dims broadcast numpy-style.
struct MatmulDims {
  int64_t m, n, k;
  bool transposeLhs, transposeRhs;
  /// Each operand's batch dims, with ones in front up to the result's.
  llvm::SmallVector<int64_t> aBatch, bBatch, cBatch;

  explicit MatmulDims(MatmulOp op) {
    auto a = cast<RankedTensorType>(op.getLhs().getType()),
         b = cast<RankedTensorType>(op.getRhs().getType()),
         c = cast<RankedTensorType>(op.getResult().getType());
    auto padBatch = [&](RankedTensorType t) {
      llvm::SmallVector<int64_t> dims(c.getRank() - t.getRank(), 1);
      llvm::append_range(dims, t.getShape().drop_back(2));
      return dims;
    };
    m = c.getShape()[c.getRank() - 2];
    n = c.getShape().back();
    transposeLhs = op.getTransposeLhs();
    transposeRhs = op.getTransposeRhs();
    k = transposeLhs ? a.getShape()[a.getRank() - 2] : a.getShape().back();
    aBatch = padBatch(a);
    bBatch = padBatch(b);
    cBatch = padBatch(c);
  }

  /// The batch arrays the call reads: "static const int64_t aBatch[] =
  /// {...}, bBatch[] = {...}, cBatch[] = {...};".
  std::string batchArrays() const {
    return "static const int64_t aBatch[] = " + intList(aBatch) +
           ", bBatch[] = " + intList(bBatch) +
           ", cBatch[] = " + intList(cBatch) + ";";
  }

  /// The call's arguments after its three pointers, up to the batch rank.
  std::string arguments() const {
    return llvm::formatv("{0}, {1}, {2}, {3}, {4}, aBatch, bBatch, cBatch, {5}",
                         m, n, k, transposeLhs ? "true" : "false",
                         transposeRhs ? "true" : "false", cBatch.size())
        .str();
  }
};

/// tg.attention's mask shape as the runtimes' AttentionMaskShape
/// initializer, [B', H', T', S'] with 1s in front of a lower-rank mask;
/// `{}` without a mask.
inline std::string attentionMaskShape(Value mask) {
  if (!mask)
    return "{}";
  llvm::ArrayRef<int64_t> shape =
      cast<RankedTensorType>(mask.getType()).getShape();
  llvm::SmallVector<int64_t, 4> dims(4 - shape.size(), 1);
  dims.append(shape.begin(), shape.end());
  return intList(dims);
}

/// The braced initializer of `runtime`::ScheduleParams of a tg.lr_schedule.
inline std::string scheduleParams(llvm::StringRef runtime, LrScheduleOp l) {
  return llvm::formatv("{{{0}::ScheduleKind::{1}, {2}, {3}, {4}, {5}, {6}, "
                       "{7}, {8}}",
                       runtime, runtimeScheduleKind(l.getKind()),
                       l.getWarmupSteps(), l.getTotalSteps(), l.getStepSize(),
                       l.getDecaySteps(),
                       floatLiteral(l.getMinLr().convertToDouble()),
                       floatLiteral(l.getGamma().convertToDouble()),
                       floatLiteral(l.getMaxLr().convertToDouble()))
      .str();
}

/// The braced initializer of the runtimes' OptimizerHyper of a
/// tg.optimizer_update.
inline std::string optimizerHyper(OptimizerUpdateOp u) {
  return llvm::formatv("{{{0}, {1}, {2}, {3}, {4}, {5}, {6}}",
                       floatLiteral(u.getBeta1().convertToDouble()),
                       floatLiteral(u.getBeta2().convertToDouble()),
                       floatLiteral(u.getEps().convertToDouble()),
                       floatLiteral(u.getWeightDecay().convertToDouble()),
                       floatLiteral(u.getMomentum().convertToDouble()),
                       floatLiteral(u.getAlpha().convertToDouble()),
                       u.getNesterov() ? "true" : "false")
      .str();
}

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_CSYNTAX_H

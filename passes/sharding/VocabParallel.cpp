//===- VocabParallel.cpp - Split vocabularies, as Megatron-LM ---*- C++ -*-===//
//
// An embedding whose table's rows are split over some mesh axes, and a
// cross-entropy (and its gradient) whose class dim is, cannot run as the op
// on the local pieces: each process holds a slice of the vocabulary, so a
// token it does not hold must look up zeros, and the softmax needs the
// maximum and the sum over all classes. tg-partition calls
// lowerVocabParallel for them; the results are what the sharding rules say
// (TgShardingRules.cpp): the embedding's and the loss's partial sums over
// the axes, the gradient split like the logits. The extra communication is
// one number per row: the row maxima gathered, the sums of exponentials
// all-reduced. The gradient of a split table (embeddingGradRows) is computed
// for each process's rows only, not whole and then sliced.
//
// Token ids and labels are compared as f32 (tg.iota counts in f32 here),
// which is exact below 2^24 classes.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Sharding.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

class Lowering {
public:
  Lowering(OpBuilder &b, Location loc, ArrayRef<StringRef> axes, MeshOp mesh,
           StringRef why)
      : b(b), loc(loc), axes(axes), mesh(mesh), why(why), f32(b.getF32Type()) {}

  /// Rows [..., V/n] of the table; indices [...]: each process looks up
  /// the rows it holds and zeros for the others.
  Value embedding(Value table, Value indices) {
    PieceIds ids = pieceIds(indices, shapeOf(table)[0]);
    Value found = EmbeddingOp::create(b, loc, table, ids.safe);
    return SelectOp::create(b, loc, lastDimOfOne(ids.inside), found,
                            scalar(0, elementOf(found)));
  }

  /// The gradient of this process's rows of a table: the tokens outside
  /// them add nothing.
  Value embeddingGradRows(EmbeddingGradOp grad, Value g, Value indices) {
    auto whole = cast<RankedTensorType>(grad.getType());
    int64_t parts = 1;
    for (StringRef axis : axes)
      parts *= mesh.axisSize(axis);
    SmallVector<int64_t> shape(whole.getShape());
    shape[0] /= parts;
    PieceIds ids = pieceIds(indices, shape[0]);
    Value kept = SelectOp::create(b, loc, lastDimOfOne(ids.inside), g,
                                  scalar(0, elementOf(g)));
    return EmbeddingGradOp::create(b, loc, whole.clone(shape), kept, ids.safe);
  }

  /// The loss on this process's classes: its share of minus the target
  /// logits, plus, on the axes' first process, the rows' log-sum-exp.
  Value crossEntropy(CrossEntropyOp op, Value logits, Value labels) {
    Softmax sm = softmax(logits);
    Value hit = targets(labels, sm.classes);
    int64_t last = shapeOf(logits).size() - 1;
    Value target = ReduceSumOp::create(
        b, loc, SelectOp::create(b, loc, hit, sm.x, scalar(0)).getResult(),
        b.getDenseI64ArrayAttr({last}), b.getBoolAttr(true));
    Value lse = AddOp::create(b, loc, LogOp::create(b, loc, sm.sum), sm.max);
    Value isFirst = CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq),
        piece(), scalar(0));
    Value row = sub(SelectOp::create(b, loc, isFirst, lse, scalar(0)), target);
    auto rowsType = RankedTensorType::get(shapeOf(labels), f32);
    row = ReshapeOp::create(b, loc, rowsType, row);
    Value valid = counted(op.getIgnoreIndex(), labels);
    row = SelectOp::create(b, loc, valid, row, scalar(0));
    switch (op.getReduction()) {
    case LossReduction::none:
      return row;
    case LossReduction::sum:
      return sumAll(row);
    case LossReduction::mean:
      return DivOp::create(b, loc, sumAll(row), count(valid));
    }
    llvm_unreachable("every reduction is handled");
  }

  /// softmax - one-hot of the labels on this process's classes, times the
  /// loss's gradient per row (its mean's share), zero for ignored rows.
  Value crossEntropyGrad(CrossEntropyGradOp op, Value grad, Value logits,
                         Value labels) {
    Softmax sm = softmax(logits);
    Value p = DivOp::create(b, loc, sm.exp, sm.sum);
    Value hit = targets(labels, sm.classes);
    Value oneHot = CastOp::create(
        b, loc, RankedTensorType::get(shapeOf(logits), f32), hit);
    Value d = sub(p, oneHot);
    Value valid = counted(op.getIgnoreIndex(), labels);
    Value scale = grad; // none: one per row
    if (op.getReduction() == LossReduction::mean)
      scale = DivOp::create(b, loc, grad, count(valid));
    if (op.getReduction() == LossReduction::none)
      scale = lastDimOfOne(scale);
    d = MulOp::create(b, loc, d, scale);
    d = SelectOp::create(b, loc, lastDimOfOne(valid), d, scalar(0));
    auto type = cast<RankedTensorType>(logits.getType());
    if (type.getElementType() != f32)
      d = CastOp::create(b, loc, type, d);
    return d;
  }

private:
  /// The logits in f32, their row maxima over all classes, exp(x - max)
  /// and its row sums over all classes ([..., 1] each); `classes` is this
  /// process's count.
  struct Softmax {
    Value x, max, exp, sum;
    int64_t classes;
  };

  Softmax softmax(Value logits) {
    Softmax sm;
    sm.x = toF32(logits);
    int64_t last = shapeOf(logits).size() - 1;
    sm.classes = shapeOf(logits)[last];
    auto lastDim = b.getDenseI64ArrayAttr({last});
    sm.max = ReduceMaxOp::create(b, loc, sm.x, lastDim, b.getBoolAttr(true));
    // Every process's maxima side by side, then their maximum.
    for (StringRef axis : axes) {
      SmallVector<int64_t> shape(shapeOf(sm.max));
      shape[last] *= mesh.axisSize(axis);
      auto gather =
          AllGatherOp::create(b, loc, RankedTensorType::get(shape, f32), sm.max,
                              b.getI64IntegerAttr(last), b.getStringAttr(axis));
      gather->setAttr(kReshardAttr,
                      b.getStringAttr(why + ": the rows' maxima"));
      sm.max = ReduceMaxOp::create(b, loc, gather.getResult(), lastDim,
                                   b.getBoolAttr(true));
    }
    sm.exp = ExpOp::create(b, loc, sub(sm.x, sm.max));
    sm.sum = ReduceSumOp::create(b, loc, sm.exp, lastDim, b.getBoolAttr(true));
    for (StringRef axis : axes) {
      auto reduce = AllReduceOp::create(
          b, loc, ValueRange{sm.sum},
          ReductionAttr::get(b.getContext(), Reduction::sum),
          b.getStringAttr(axis), IntegerAttr());
      reduce->setAttr(
          kReshardAttr,
          b.getStringAttr(why + ": the rows' sums of exponentials"));
      sm.sum = reduce.getResult(0);
    }
    return sm;
  }

  /// [..., classes]: whether class c of this process's piece is the label.
  Value targets(Value labels, int64_t classes) {
    auto classType = RankedTensorType::get({classes}, f32);
    Value first = offset(classes);
    Value iota = IotaOp::create(b, loc, classType, /*dimension=*/0,
                                llvm::APFloat(0.0), llvm::APFloat(1.0));
    Value ids = AddOp::create(b, loc, iota, first);
    Value rows = lastDimOfOne(toF32(labels));
    return CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq),
        rows, ids);
  }

  /// Whether each label counts (is not `ignoreIndex`).
  Value counted(int64_t ignoreIndex, Value labels) {
    return CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), ComparePredicate::ne),
        toF32(labels), scalar(static_cast<double>(ignoreIndex)));
  }

  Value count(Value valid) {
    return sumAll(CastOp::create(
        b, loc, RankedTensorType::get(shapeOf(valid), f32), valid));
  }

  /// tensor<1xf32>: this process's piece of the vocabulary, by its
  /// coordinates on the axes (major first); built once.
  Value piece() {
    if (pieceIndex)
      return pieceIndex;
    for (StringRef axis : axes) {
      Value at =
          axisCoordinate(b, loc, mesh, axis, why + ": this process's piece");
      if (pieceIndex)
        at = AddOp::create(
            b, loc,
            MulOp::create(b, loc, pieceIndex,
                          scalar(static_cast<double>(mesh.axisSize(axis))))
                .getResult(),
            at);
      pieceIndex = at;
    }
    return pieceIndex;
  }

  /// tensor<1xf32>: the first vocabulary row (class) of this process's
  /// piece of `pieceSize`.
  Value offset(int64_t pieceSize) {
    return MulOp::create(b, loc, piece(),
                         scalar(static_cast<double>(pieceSize)));
  }

  /// Token ids against this process's piece of `rows` table rows: whether
  /// each is one of them, and a row of the piece to read (its own when it
  /// is one; the reader masks the others).
  struct PieceIds {
    Value inside, safe;
  };

  PieceIds pieceIds(Value indices, int64_t rows) {
    Value first = offset(rows);
    Value local = sub(toF32(indices), first);
    Value clamped = clamp(local, rows);
    PieceIds ids;
    // The ids the piece holds are those the clamp leaves as they were.
    ids.inside = CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq),
        clamped, local);
    ids.safe = CastOp::create(b, loc, cast<RankedTensorType>(indices.getType()),
                              clamped);
    return ids;
  }

  /// The ids (f32, relative to the piece) moved into [0, rows).
  Value clamp(Value local, int64_t rows) {
    Value low = MaximumOp::create(b, loc, local, scalar(0));
    return MinimumOp::create(b, loc, low,
                             scalar(static_cast<double>(rows - 1)));
  }

  Value toF32(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == f32)
      return v;
    return CastOp::create(b, loc, type.clone(f32), v);
  }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value sumAll(Value x) {
    return ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr({}),
                               b.getBoolAttr(false));
  }
  /// [..., 1]: room for a dim the values broadcast along.
  Value lastDimOfOne(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.push_back(1);
    return ReshapeOp::create(b, loc, type.clone(shape), v);
  }
  Value scalar(double value, Type type = {}) {
    type = type ? type : f32;
    auto scalarType = RankedTensorType::get({}, type);
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(scalarType, b.getFloatAttr(type, value)));
  }
  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  static Type elementOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<StringRef> axes;
  MeshOp mesh;
  std::string why;
  Type f32;
  Value pieceIndex;
};

} // namespace

SmallVector<StringRef> mlir::tg::vocabAxes(Operation *op,
                                           const OpSharding &decision) {
  auto lastDim = [](ShardingAttr s) {
    return s && s.getRank() > 0 ? s.axesOf(s.getRank() - 1)
                                : SmallVector<StringRef>();
  };
  if (isa<EmbeddingOp>(op) && decision.operands[0])
    return decision.operands[0].axesOf(0);
  if (isa<CrossEntropyOp>(op))
    return lastDim(decision.operands[0]);
  if (isa<CrossEntropyGradOp>(op))
    return lastDim(decision.operands[1]);
  return {};
}

Value mlir::tg::lowerVocabParallel(OpBuilder &builder, Operation *op,
                                   ValueRange operands,
                                   ArrayRef<StringRef> axes, MeshOp mesh,
                                   StringRef why) {
  if (axes.empty())
    return {};
  Lowering lowering(builder, op->getLoc(), axes, mesh, why);
  if (isa<EmbeddingOp>(op))
    return lowering.embedding(operands[0], operands[1]);
  if (auto loss = dyn_cast<CrossEntropyOp>(op))
    return lowering.crossEntropy(loss, operands[0], operands[1]);
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return lowering.crossEntropyGrad(grad, operands[0], operands[1],
                                     operands[2]);
  return {};
}

Value mlir::tg::embeddingGradRows(OpBuilder &builder, EmbeddingGradOp grad,
                                  ArrayRef<StringRef> axes, MeshOp mesh,
                                  StringRef why) {
  Lowering lowering(builder, grad.getLoc(), axes, mesh, why);
  return lowering.embeddingGradRows(grad, grad.getGrad(), grad.getIndices());
}

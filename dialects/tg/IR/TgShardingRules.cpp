//===- TgShardingRules.cpp - How each tg op may be split --------*- C++ -*-===//
//
// ShardingRuleOpInterface for the tg ops, attached as external models so the
// rules of all ops read side by side: elementwise ops share every dim,
// a matmul has batch, row, column and contraction factors, reductions and
// gradients of weights sum over the factors their result lacks, and dims an
// op must see whole (a softmax or norm axis, a sliced dim, attention's
// sequence) are -1. The sharding passes read nothing else about an op,
// except that tg-partition runs an embedding with split rows and a
// cross-entropy with split classes in their vocabulary-parallel form
// (passes/sharding/VocabParallel.cpp), which the rules here describe.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Dims that must stay whole.
SmallVector<int64_t> whole(int64_t rank) {
  return SmallVector<int64_t>(rank, -1);
}

/// A factor per dim of `shape`.
SmallVector<int64_t> newFactors(ShardingRule &rule, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims;
  for (int64_t size : shape)
    dims.push_back(size > 1 ? rule.addFactor(size) : -1);
  return dims;
}

/// `operand` aligned to the back of `result` (numpy broadcasting): a dim of
/// the same size is the result dim's factor, a broadcast dim is whole.
SmallVector<int64_t> broadcastDims(ArrayRef<int64_t> operand,
                                   ArrayRef<int64_t> result,
                                   ArrayRef<int64_t> resultFactors) {
  SmallVector<int64_t> dims;
  int64_t offset = result.size() - operand.size();
  for (int64_t d = 0; d < (int64_t)operand.size(); ++d)
    dims.push_back(offset + d >= 0 && operand[d] == result[offset + d]
                       ? resultFactors[offset + d]
                       : -1);
  return dims;
}

/// Every operand broadcast against the first result.
ShardingRule elementwiseRule(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  SmallVector<int64_t> factors = newFactors(rule, out);
  for (Value operand : op->getOperands())
    rule.operandDims.push_back(broadcastDims(shapeOf(operand), out, factors));
  for (Value result : op->getResults())
    rule.resultDims.push_back(broadcastDims(shapeOf(result), out, factors));
  return rule;
}

/// Add, sub, mul, div, neg and cast: elementwise, and linear in the
/// operands a partial sum may pass through (a sum is a sum of operands).
ShardingRule arithmeticRule(Operation *op) {
  ShardingRule rule = elementwiseRule(op);
  if (isa<AddOp, SubOp>(op))
    rule.sumOfOperands = true;
  else if (isa<MulOp>(op))
    rule.linearOperands = {0, 1};
  else
    rule.linearOperands = {0};
  return rule;
}

/// Dropout: elementwise, but split along the batch only.
ShardingRule dropoutRule(DropoutOp dropout) {
  // A mask is drawn per element of the process's piece from its
  // micro-batch's random stream: only a split of the batch (dim 0) draws
  // the masks one process would.
  ShardingRule rule = elementwiseRule(dropout);
  for (int64_t d = 1; d < (int64_t)rule.resultDims[0].size(); ++d)
    rule.resultDims[0][d] = rule.operandDims[0][d] = -1;
  return rule;
}

/// A matmul: batch, row and column factors, and the contraction factor
/// both operands share.
ShardingRule matmulRule(MatmulOp matmul) {
  ShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(matmul.getResult());
  int64_t rank = out.size();
  SmallVector<int64_t> result = newFactors(rule, out);
  ArrayRef<int64_t> lhsShape = shapeOf(matmul.getLhs());
  ArrayRef<int64_t> rhsShape = shapeOf(matmul.getRhs());
  int64_t k = lhsShape[lhsShape.size() - (matmul.getTransposeLhs() ? 2 : 1)];
  int64_t kFactor = k > 1 ? rule.addFactor(k) : -1;
  auto operandDims = [&](ArrayRef<int64_t> shape, bool transposed, bool isLhs) {
    int64_t r = shape.size();
    SmallVector<int64_t> dims(r, -1);
    // Batch dims align to the back of the result's batch dims.
    for (int64_t d = 0; d < r - 2; ++d) {
      int64_t outDim = rank - 2 - (r - 2) + d;
      if (outDim >= 0 && shape[d] == out[outDim])
        dims[d] = result[outDim];
    }
    int64_t free = isLhs ? result[rank - 2] : result[rank - 1];
    int64_t rowDim = r - 2, colDim = r - 1;
    // lhs [M, K] / [K, M]; rhs [K, N] / [N, K].
    bool freeFirst = isLhs != transposed;
    dims[freeFirst ? rowDim : colDim] = free;
    dims[freeFirst ? colDim : rowDim] = kFactor;
    return dims;
  };
  rule.operandDims.push_back(
      operandDims(lhsShape, matmul.getTransposeLhs(), true));
  rule.operandDims.push_back(
      operandDims(rhsShape, matmul.getTransposeRhs(), false));
  rule.resultDims.push_back(result);
  rule.linearOperands = {0, 1};
  return rule;
}

/// reduce_sum, reduce_mean and reduce_max: the reduced dims' factors
/// leave the result (a mean's are scaled; a maximum's stay whole).
ShardingRule reductionRule(Operation *op) {
  ShardingRule rule;
  Value x = op->getOperand(0);
  SmallVector<int64_t> in = newFactors(rule, shapeOf(x));
  SmallVector<int64_t> reduced;
  if (auto sum = dyn_cast<ReduceSumOp>(op))
    reduced = sum.getReducedDims();
  else if (auto mean = dyn_cast<ReduceMeanOp>(op))
    reduced = mean.getReducedDims();
  else
    reduced = cast<ReduceMaxOp>(op).getReducedDims();
  bool keepdim = op->getAttrOfType<BoolAttr>("keepdim").getValue();
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < (int64_t)in.size(); ++d) {
    bool isReduced = llvm::is_contained(reduced, d);
    if (isReduced && isa<ReduceMaxOp>(op))
      in[d] = -1; // a partial maximum is no sum
    if (isReduced && isa<ReduceMeanOp>(op) && in[d] >= 0)
      rule.meanFactors.push_back(in[d]);
    if (!isReduced)
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(-1);
  }
  rule.operandDims.push_back(in);
  rule.resultDims.push_back(out);
  if (!isa<ReduceMaxOp>(op))
    rule.linearOperands = {0};
  return rule;
}

/// softmax and log_softmax: elementwise, their axis whole.
ShardingRule softmaxRule(Operation *op) {
  ShardingRule rule = elementwiseRule(op);
  int64_t rank = rule.resultDims[0].size();
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  axis = axis < 0 ? axis + rank : axis;
  rule.operandDims[0][axis] = rule.resultDims[0][axis] = -1;
  return rule;
}

/// layer_norm and rms_norm with their gradients: rows split, the
/// normalised last dim whole.
ShardingRule normRule(Operation *op) {
  // Normalised over the last dim; weight, bias and their gradients are
  // that dim alone, so the gradients sum over the others.
  ShardingRule rule;
  Value x =
      isa<LayerNormOp, RmsNormOp>(op) ? op->getOperand(0) : op->getOperand(1);
  SmallVector<int64_t> rows = newFactors(rule, shapeOf(x));
  rows.back() = -1;
  for (Value operand : op->getOperands())
    rule.operandDims.push_back(
        shapeOf(operand) == shapeOf(x) ? rows : whole(shapeOf(operand).size()));
  for (Value result : op->getResults())
    rule.resultDims.push_back(
        shapeOf(result) == shapeOf(x) ? rows : whole(shapeOf(result).size()));
  return rule;
}

/// A transpose: the input's factors, permuted.
ShardingRule transposeRule(TransposeOp transpose) {
  ShardingRule rule;
  SmallVector<int64_t> in = newFactors(rule, shapeOf(transpose.getX()));
  SmallVector<int64_t> out;
  for (int64_t p : transpose.getPerm())
    out.push_back(in[p]);
  rule.operandDims.push_back(in);
  rule.resultDims.push_back(out);
  rule.linearOperands = {0};
  return rule;
}

/// Gives input dim `inDim` and output dim `outDim` one new factor of `size`.
using ShareFactor =
    llvm::function_ref<void(size_t inDim, size_t outDim, int64_t size)>;

/// An op that moves its one operand's elements into its one result (linear
/// in it): every dim whole but the pairs of an input and an output dim
/// that `pairDims` (given both shapes) shares a factor between.
ShardingRule pairedDimsRule(
    Operation *op,
    llvm::function_ref<void(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                            ShareFactor share)>
        pairDims) {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  SmallVector<int64_t> inDims = whole(in.size()), outDims = whole(out.size());
  pairDims(in, out, [&](size_t inDim, size_t outDim, int64_t size) {
    inDims[inDim] = outDims[outDim] = rule.addFactor(size);
  });
  rule.operandDims.push_back(inDims);
  rule.resultDims.push_back(outDims);
  rule.linearOperands = {0};
  return rule;
}

/// reshape and flatten: a factor per group of dims with equal products.
ShardingRule reshapeRule(Operation *op) {
  // Groups of dims with equal products; in each, the leading dims share
  // a factor of the smaller size when one divides the other (a split of
  // the outer rows stays a split of the outer rows), the rest are whole.
  return pairedDimsRule(op, [](ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                               ShareFactor share) {
    size_t i = 0, o = 0;
    while (i < in.size() && o < out.size()) {
      if (in[i] == 1) {
        ++i;
        continue;
      }
      if (out[o] == 1) {
        ++o;
        continue;
      }
      int64_t small = std::min(in[i], out[o]), large = std::max(in[i], out[o]);
      if (large % small == 0 && small > 1)
        share(i, o, small);
      // Walk to the end of the group.
      int64_t pin = in[i], pout = out[o];
      ++i, ++o;
      while (pin != pout) {
        if (pin < pout && i < in.size())
          pin *= in[i++];
        else if (o < out.size())
          pout *= out[o++];
        else
          break;
      }
    }
  });
}

/// slice and its gradient: only the dims taken whole may be split.
ShardingRule sliceRule(Operation *op) {
  // A dim taken whole (start 0, limit its size, stride 1) may be split.
  return pairedDimsRule(
      op, [](ArrayRef<int64_t> in, ArrayRef<int64_t> out, ShareFactor share) {
        for (size_t d = 0; d < in.size(); ++d)
          if (in[d] == out[d] && in[d] > 1)
            share(d, d, in[d]);
      });
}

/// A concat: elementwise but for the concatenated axis, which stays whole.
ShardingRule concatRule(ConcatOp concat) {
  ShardingRule rule = elementwiseRule(concat);
  int64_t rank = rule.resultDims[0].size();
  // The accessor is unsigned; the attribute may count from the back.
  int64_t axis = static_cast<int64_t>(concat.getAxis());
  if (axis < 0)
    axis += rank;
  for (auto &dims : rule.operandDims)
    dims[axis] = -1;
  rule.resultDims[0][axis] = -1;
  rule.sumOfOperands = true;
  return rule;
}

/// An embedding lookup: split indices, width, or rows (vocabulary-parallel).
ShardingRule embeddingRule(EmbeddingOp embedding) {
  // Rows are gathered by index. Split rows (a vocabulary-parallel table)
  // give a partial sum: each process looks up the rows it holds and zeros
  // for the others (tg-partition lowers it so).
  ShardingRule rule;
  SmallVector<int64_t> idx = newFactors(rule, shapeOf(embedding.getIndices()));
  int64_t vocab = shapeOf(embedding.getTable())[0];
  int64_t v = vocab > 1 ? rule.addFactor(vocab) : -1;
  int64_t width = shapeOf(embedding.getTable())[1];
  int64_t f = width > 1 ? rule.addFactor(width) : -1;
  rule.operandDims.push_back({v, f});
  rule.operandDims.push_back(idx);
  SmallVector<int64_t> out = idx;
  out.push_back(f);
  rule.resultDims.push_back(out);
  return rule;
}

/// An embedding's gradient: sums over the split indices into whole rows.
ShardingRule embeddingGradRule(EmbeddingGradOp grad) {
  ShardingRule rule;
  SmallVector<int64_t> idx = newFactors(rule, shapeOf(grad.getIndices()));
  int64_t width = shapeOf(grad.getResult()).back();
  int64_t f = width > 1 ? rule.addFactor(width) : -1;
  SmallVector<int64_t> g = idx;
  g.push_back(f);
  rule.operandDims.push_back(g);
  rule.operandDims.push_back(idx);
  rule.resultDims.push_back({-1, f});
  rule.linearOperands = {0};
  return rule;
}

/// cross_entropy and its gradient: split rows, or split classes
/// (vocabulary-parallel).
ShardingRule crossEntropyRule(Operation *op) {
  // Rows (every dim but the classes) are independent; a mean over them
  // is scaled where they are split. Split classes (vocabulary-parallel,
  // lowered so by tg-partition) make the loss a partial sum and leave
  // its gradient split like the logits.
  auto reduction = op->getAttrOfType<LossReductionAttr>("reduction");
  bool isGrad = isa<CrossEntropyGradOp>(op);
  Value labels = op->getOperand(isGrad ? 2 : 1);
  ShardingRule rule;
  SmallVector<int64_t> rows = newFactors(rule, shapeOf(labels));
  SmallVector<int64_t> logits = rows;
  int64_t classes = shapeOf(op->getOperand(isGrad ? 1 : 0)).back();
  logits.push_back(classes > 1 ? rule.addFactor(classes) : -1);
  bool perRow = reduction && reduction.getValue() == LossReduction::none;
  if (isGrad)
    rule.operandDims.push_back(perRow ? rows : SmallVector<int64_t>());
  rule.operandDims.push_back(logits);
  rule.operandDims.push_back(rows);
  rule.resultDims.push_back(isGrad   ? logits
                            : perRow ? rows
                                     : SmallVector<int64_t>());
  if (!reduction || reduction.getValue() == LossReduction::mean)
    for (int64_t f : rows)
      if (f >= 0)
        rule.meanFactors.push_back(f);
  if (isGrad)
    rule.linearOperands = {0};
  return rule;
}

/// attention and its gradient: split batch and heads, unless masked.
ShardingRule attentionRule(Operation *op) {
  // Batch and heads are independent; each head sees its whole sequence
  // and head dim. With a mask (it may broadcast) everything stays whole.
  ShardingRule rule;
  bool hasMask = isa<AttentionOp>(op)
                     ? (bool)cast<AttentionOp>(op).getMask()
                     : (bool)cast<AttentionGradOp>(op).getMask();
  Value q = isa<AttentionOp>(op) ? op->getOperand(0) : op->getOperand(1);
  ArrayRef<int64_t> shape = shapeOf(q);
  int64_t b = -1, h = -1;
  if (!hasMask) {
    b = shape[0] > 1 ? rule.addFactor(shape[0]) : -1;
    h = shape[1] > 1 ? rule.addFactor(shape[1]) : -1;
  }
  auto dims = [&](Value v) {
    SmallVector<int64_t> d = whole(shapeOf(v).size());
    if (d.size() == 4 && !hasMask) {
      d[0] = b;
      d[1] = h;
    }
    return d;
  };
  for (Value operand : op->getOperands())
    rule.operandDims.push_back(dims(operand));
  for (Value result : op->getResults())
    rule.resultDims.push_back(dims(result));
  return rule;
}

/// The rule of a tg op: its family's.
ShardingRule ruleFor(Operation *op) {
  if (isa<AddOp, SubOp, MulOp, DivOp, NegOp, CastOp>(op))
    return arithmeticRule(op);
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return dropoutRule(dropout);
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return matmulRule(matmul);
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
    return reductionRule(op);
  if (isa<SoftmaxOp, LogSoftmaxOp>(op))
    return softmaxRule(op);
  if (isa<LayerNormOp, RmsNormOp, LayerNormGradOp, RmsNormGradOp>(op))
    return normRule(op);
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return transposeRule(transpose);
  if (isa<ReshapeOp, FlattenOp>(op))
    return reshapeRule(op);
  if (isa<SliceOp, SliceGradOp>(op))
    return sliceRule(op);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return concatRule(concat);
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    return embeddingRule(embedding);
  if (auto grad = dyn_cast<EmbeddingGradOp>(op))
    return embeddingGradRule(grad);
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
    return crossEntropyRule(op);
  if (isa<AttentionOp, AttentionGradOp>(op))
    return attentionRule(op);
  if (isa<OptimizerUpdateOp>(op))
    return elementwiseRule(op); // lr and step are scalars: nothing to split
  if (isa<CompareOp, SelectOp, PowOp, MaximumOp, MinimumOp, AbsOp, ExpOp, LogOp,
          SqrtOp, RsqrtOp, TanhOp, SinOp, CosOp, ReluOp, SiluOp, SigmoidOp,
          GeluOp, GeluGradOp>(op))
    return elementwiseRule(op);
  // Scalars only (the LR schedule): nothing to split.
  return elementwiseRule(op);
}

template <typename OpTy>
struct RuleModel
    : public ShardingRuleOpInterface::ExternalModel<RuleModel<OpTy>, OpTy> {
  ShardingRule getShardingRule(Operation *op) const { return ruleFor(op); }
};

template <typename... OpTys> void attachRules(MLIRContext *context) {
  (OpTys::template attachInterface<RuleModel<OpTys>>(*context), ...);
}

} // namespace

void TgDialect::registerShardingRules() {
  attachRules<AddOp, SubOp, MulOp, DivOp, NegOp, CastOp, DropoutOp, MatmulOp,
              ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp, LogSoftmaxOp,
              LayerNormOp, RmsNormOp, LayerNormGradOp, RmsNormGradOp,
              TransposeOp, ReshapeOp, FlattenOp, SliceOp, SliceGradOp, ConcatOp,
              EmbeddingOp, EmbeddingGradOp, CrossEntropyOp, CrossEntropyGradOp,
              AttentionOp, AttentionGradOp, OptimizerUpdateOp, LrScheduleOp,
              CompareOp, SelectOp, PowOp, MaximumOp, MinimumOp, AbsOp, ExpOp,
              LogOp, SqrtOp, RsqrtOp, TanhOp, SinOp, CosOp, ReluOp, SiluOp,
              SigmoidOp, GeluOp, GeluGradOp>(getContext());
}

//===- TgVJP.cpp - Vector-Jacobian products of the tg ops ---------*- C++ -*-===//
//
// Implements DifferentiableOpInterface for every differentiable tg op. Most
// VJPs are short compositions of forward ops; the rest use the gradient ops
// of TgGradOps.td. Gradients of broadcast operands are summed back to the
// operand's shape. Unneeded gradients may be built freely: they are pure and
// tg-autodiff erases what nothing uses.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Builder state shared by the VJPs of one op.
struct VJPBuilder {
  OpBuilder &b;
  Location loc;

  RankedTensorType typeOf(Value v) const {
    return cast<RankedTensorType>(v.getType());
  }

  Value scalar(Type elementType, double value) const {
    auto type = RankedTensorType::get({}, elementType);
    Attribute attr = isa<FloatType>(elementType)
                         ? Attribute(FloatAttr::get(elementType, value))
                         : Attribute(IntegerAttr::get(elementType,
                                                      (int64_t)value));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
  }
  Value scalarLike(Value v, double value) const {
    return scalar(typeOf(v).getElementType(), value);
  }

  Value add(Value x, Value y) const { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) const { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) const { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) const { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) const { return NegOp::create(b, loc, x); }
  Value mulScalar(Value x, double s) const { return mul(x, scalarLike(x, s)); }
  Value compare(ComparePredicate predicate, Value x, Value y) const {
    return CompareOp::create(b, loc, predicate, x, y);
  }
  Value select(Value c, Value t, Value f) const {
    return SelectOp::create(b, loc, c, t, f);
  }
  Value reshape(Value x, RankedTensorType type) const {
    if (x.getType() == type)
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keepdim) const {
    return ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr(dims),
                               b.getBoolAttr(keepdim));
  }

  /// Sums a gradient computed in a broadcast shape back to `target`.
  Value sumToShape(Value grad, RankedTensorType target) const {
    auto type = typeOf(grad);
    if (type.getShape() == target.getShape())
      return grad;
    int64_t gr = type.getRank(), tr = target.getRank();
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < gr; ++i) {
      int64_t j = i - (gr - tr);
      if (j < 0 || (target.getDimSize(j) == 1 && type.getDimSize(i) != 1))
        dims.push_back(i);
    }
    Value summed = dims.empty() ? grad : reduceSum(grad, dims, false);
    return reshape(summed,
                   RankedTensorType::get(target.getShape(),
                                         type.getElementType()));
  }
  Value sumTo(Value grad, Value operand) const {
    return sumToShape(grad, typeOf(operand));
  }

  /// `g`, reduced over `dims` (sorted, non-negative), broadcast back to
  /// `shape`.
  Value expandReduced(Value g, RankedTensorType full,
                      ArrayRef<int64_t> dims) const {
    SmallVector<int64_t> kept(full.getShape());
    for (int64_t d : dims)
      kept[d] = 1;
    Value r = reshape(g, RankedTensorType::get(kept, full.getElementType()));
    return BroadcastToOp::create(b, loc, full, r);
  }
};

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// Keeps only the gradients of float operands.
void setGrads(Operation *op, SmallVectorImpl<Value> &out,
              ArrayRef<Value> grads) {
  out.assign(grads.begin(), grads.end());
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!isFloatTensor(operand))
      out[i] = Value();
}

//===----------------------------------------------------------------------===//
// Per-op VJPs
//===----------------------------------------------------------------------===//

LogicalResult vjp(AddOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.sumTo(g, op.getLhs()), v.sumTo(g, op.getRhs())});
  return success();
}
LogicalResult vjp(SubOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.sumTo(g, op.getLhs()), v.sumTo(v.neg(g), op.getRhs())});
  return success();
}
LogicalResult vjp(MulOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.sumTo(v.mul(g, op.getRhs()), op.getLhs()),
                     v.sumTo(v.mul(g, op.getLhs()), op.getRhs())});
  return success();
}
LogicalResult vjp(DivOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  Value da = v.div(g, op.getRhs());
  Value db = v.neg(v.div(v.mul(g, op.getResult()), op.getRhs()));
  setGrads(op, out, {v.sumTo(da, op.getLhs()), v.sumTo(db, op.getRhs())});
  return success();
}
LogicalResult vjp(PowOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  Value a = op.getLhs(), e = op.getRhs();
  Value em1 = v.sub(e, v.scalarLike(e, 1.0));
  Value da = v.mul(g, v.mul(e, PowOp::create(v.b, v.loc, a, em1)));
  Value db = v.mul(g, v.mul(op.getResult(), LogOp::create(v.b, v.loc, a)));
  setGrads(op, out, {v.sumTo(da, a), v.sumTo(db, e)});
  return success();
}
template <typename OpTy>
LogicalResult vjpMinMax(OpTy op, VJPBuilder &v, Value g, ComparePredicate pred,
                        SmallVectorImpl<Value> &out) {
  Value mask = v.compare(pred, op.getLhs(), op.getRhs());
  Value zero = v.scalarLike(g, 0.0);
  setGrads(op, out, {v.sumTo(v.select(mask, g, zero), op.getLhs()),
                     v.sumTo(v.select(mask, zero, g), op.getRhs())});
  return success();
}
LogicalResult vjp(MaximumOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  return vjpMinMax(op, v, g, ComparePredicate::ge, out);
}
LogicalResult vjp(MinimumOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  return vjpMinMax(op, v, g, ComparePredicate::le, out);
}
LogicalResult vjp(SelectOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value zero = v.scalarLike(g, 0.0);
  setGrads(op, out,
           {Value(), v.sumTo(v.select(op.getCondition(), g, zero), op.getOnTrue()),
            v.sumTo(v.select(op.getCondition(), zero, g), op.getOnFalse())});
  return success();
}

LogicalResult vjp(NegOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.neg(g)});
  return success();
}
LogicalResult vjp(AbsOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  Value negative =
      v.compare(ComparePredicate::lt, op.getX(), v.scalarLike(op.getX(), 0.0));
  setGrads(op, out, {v.select(negative, v.neg(g), g)});
  return success();
}
LogicalResult vjp(ExpOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.mul(g, op.getResult())});
  return success();
}
LogicalResult vjp(LogOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.div(g, op.getX())});
  return success();
}
LogicalResult vjp(SqrtOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.div(g, v.mulScalar(op.getResult(), 2.0))});
  return success();
}
LogicalResult vjp(RsqrtOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  setGrads(op, out, {v.mulScalar(v.mul(g, v.mul(v.mul(y, y), y)), -0.5)});
  return success();
}
LogicalResult vjp(TanhOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  setGrads(op, out, {v.mul(g, v.sub(v.scalarLike(y, 1.0), v.mul(y, y)))});
  return success();
}
LogicalResult vjp(SinOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.mul(g, CosOp::create(v.b, v.loc, op.getX()))});
  return success();
}
LogicalResult vjp(CosOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.neg(v.mul(g, SinOp::create(v.b, v.loc, op.getX())))});
  return success();
}
LogicalResult vjp(ReluOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  Value positive =
      v.compare(ComparePredicate::gt, op.getX(), v.scalarLike(op.getX(), 0.0));
  setGrads(op, out, {v.select(positive, g, v.scalarLike(g, 0.0))});
  return success();
}
LogicalResult vjp(SigmoidOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  setGrads(op, out,
           {v.mul(g, v.mul(y, v.sub(v.scalarLike(y, 1.0), y)))});
  return success();
}
LogicalResult vjp(SiluOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  // d/dx x*s(x) = s + x*s*(1-s) = s * (1 + x*(1-s))
  Value x = op.getX();
  Value s = SigmoidOp::create(v.b, v.loc, x);
  Value one = v.scalarLike(x, 1.0);
  Value d = v.mul(s, v.add(one, v.mul(x, v.sub(one, s))));
  setGrads(op, out, {v.mul(g, d)});
  return success();
}
LogicalResult vjp(GeluOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {GeluGradOp::create(v.b, v.loc, g, op.getX(),
                                        op.getApproximateAttr())});
  return success();
}
LogicalResult vjp(CastOp op, VJPBuilder &v, Value g, SmallVectorImpl<Value> &out) {
  setGrads(op, out, {CastOp::create(v.b, v.loc, op.getX().getType(), g)});
  return success();
}

LogicalResult vjp(MatmulOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value a = op.getLhs(), w = op.getRhs();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  auto mm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return MatmulOp::create(v.b, v.loc, x, y, tx, ty);
  };
  RankedTensorType at = v.typeOf(a), wt = v.typeOf(w), gt = v.typeOf(g);
  // A [.., M, K] times a 2-D weight: fold the batch dims into M so the weight
  // gradient is one GEMM instead of a batched GEMM and a reduction.
  if (wt.getRank() == 2 && at.getRank() > 2 && !ta) {
    int64_t rows = at.getNumElements() / at.getShape().back();
    auto a2 = v.reshape(a, RankedTensorType::get({rows, at.getShape().back()},
                                                 at.getElementType()));
    auto g2 = v.reshape(g, RankedTensorType::get({rows, gt.getShape().back()},
                                                 gt.getElementType()));
    Value da = mm(g, w, false, !tb);
    Value dw = tb ? mm(g2, a2, true, false) : mm(a2, g2, true, false);
    setGrads(op, out, {da, dw});
    return success();
  }
  Value da, dw;
  if (!ta && !tb) {
    da = mm(g, w, false, true);
    dw = mm(a, g, true, false);
  } else if (!ta && tb) {
    da = mm(g, w, false, false);
    dw = mm(g, a, true, false);
  } else if (ta && !tb) {
    da = mm(w, g, false, true);
    dw = mm(a, g, false, false);
  } else {
    da = mm(w, g, true, true);
    dw = mm(g, a, true, true);
  }
  setGrads(op, out, {v.sumTo(da, a), v.sumTo(dw, w)});
  return success();
}

LogicalResult vjp(ReduceSumOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out,
           {v.expandReduced(g, op.getX().getType(), op.getReducedDims())});
  return success();
}
LogicalResult vjp(ReduceMeanOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  SmallVector<int64_t> dims = op.getReducedDims();
  RankedTensorType x = op.getX().getType();
  int64_t count = 1;
  for (int64_t d : dims)
    count *= x.getDimSize(d);
  Value dx = v.expandReduced(g, x, dims);
  setGrads(op, out, {v.mulScalar(dx, 1.0 / (double)count)});
  return success();
}
LogicalResult vjp(ReduceMaxOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  // Ties share the gradient evenly, as torch.amax does.
  SmallVector<int64_t> dims = op.getReducedDims();
  RankedTensorType x = op.getX().getType();
  Value maxFull = v.expandReduced(op.getResult(), x, dims);
  Value mask = CastOp::create(
      v.b, v.loc, x, v.compare(ComparePredicate::eq, op.getX(), maxFull));
  Value count = v.expandReduced(v.reduceSum(mask, dims, false), x, dims);
  Value dx = v.div(v.mul(v.expandReduced(g, x, dims), mask), count);
  setGrads(op, out, {dx});
  return success();
}

LogicalResult vjp(SoftmaxOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  int64_t axis = *normalizeAxis(op.getAxis(), op.getType().getRank());
  Value dot = v.reduceSum(v.mul(g, y), {axis}, true);
  setGrads(op, out, {v.mul(y, v.sub(g, dot))});
  return success();
}
LogicalResult vjp(LogSoftmaxOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value y = op.getResult();
  int64_t axis = *normalizeAxis(op.getAxis(), op.getType().getRank());
  Value sum = v.reduceSum(g, {axis}, true);
  setGrads(op, out,
           {v.sub(g, v.mul(ExpOp::create(v.b, v.loc, y), sum))});
  return success();
}

LogicalResult vjp(LayerNormOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  auto grad = LayerNormGradOp::create(
      v.b, v.loc,
      TypeRange{op.getType(), v.typeOf(op.getX()).clone({op.getType().getShape().back()}),
                v.typeOf(op.getX()).clone({op.getType().getShape().back()})},
      g, op.getX(), op.getWeight(), op.getEpsAttr());
  out.assign({grad.getDx()});
  if (op.getWeight())
    out.push_back(grad.getDweight());
  if (op.getBias())
    out.push_back(grad.getDbias());
  return success();
}
LogicalResult vjp(RmsNormOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  auto param = v.typeOf(op.getX()).clone({op.getType().getShape().back()});
  auto grad = RmsNormGradOp::create(v.b, v.loc, TypeRange{op.getType(), param},
                                    g, op.getX(), op.getWeight(),
                                    op.getEpsAttr());
  out.assign({grad.getDx()});
  if (op.getWeight())
    out.push_back(grad.getDweight());
  return success();
}
LogicalResult vjp(DropoutOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  // The mask is a function of (seed, step, index) only, so dropout of the
  // gradient with the same seed applies the same mask and scale.
  setGrads(op, out, {DropoutOp::create(v.b, v.loc, g, op.getPAttr(),
                                       op.getSeedAttr())});
  return success();
}
LogicalResult vjp(EmbeddingOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {EmbeddingGradOp::create(v.b, v.loc, op.getTable().getType(),
                                             g, op.getIndices()),
                     Value()});
  return success();
}
LogicalResult vjp(CrossEntropyOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out,
           {CrossEntropyGradOp::create(v.b, v.loc, op.getLogits().getType(), g,
                                       op.getLogits(), op.getLabels(),
                                       op.getIgnoreIndexAttr(),
                                       op.getReductionAttr()),
            Value()});
  return success();
}
LogicalResult vjp(AttentionOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  // The mask's gradient comes out of the kernel already summed over the
  // dims the mask broadcasts along; a mask that is not trained leaves it
  // unread and canonicalization drops it.
  Value mask = op.getMask();
  SmallVector<Type, 4> types = {op.getQuery().getType(), op.getKey().getType(),
                                op.getValue().getType()};
  if (mask)
    types.push_back(mask.getType());
  auto grad = AttentionGradOp::create(v.b, v.loc, types, g, op.getQuery(),
                                      op.getKey(), op.getValue(), mask,
                                      op.getCausalAttr(), op.getScaleAttr());
  SmallVector<Value, 4> grads = {grad.getDquery(), grad.getDkey(),
                                 grad.getDvalue()};
  if (mask)
    grads.push_back(grad.getDmask());
  setGrads(op, out, grads);
  return success();
}
LogicalResult vjp(Conv2dOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  Value dx = Conv2dGradInputOp::create(
      v.b, v.loc, op.getInput().getType(), g, op.getWeight(),
      op.getStrideAttr(), op.getPaddingAttr(), op.getDilationAttr(),
      op.getGroupsAttr());
  Value dw = Conv2dGradWeightOp::create(
      v.b, v.loc, op.getWeight().getType(), g, op.getInput(),
      op.getStrideAttr(), op.getPaddingAttr(), op.getDilationAttr(),
      op.getGroupsAttr());
  out.assign({dx, dw});
  if (op.getBias())
    out.push_back(v.reduceSum(g, {0, 2, 3}, false));
  return success();
}
LogicalResult vjp(MaxPool2dOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {MaxPool2dGradOp::create(
                        v.b, v.loc, op.getInput().getType(), g, op.getInput(),
                        op.getKernelSizeAttr(), op.getStrideAttr(),
                        op.getPaddingAttr())});
  return success();
}
LogicalResult vjp(AvgPool2dOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {AvgPool2dGradOp::create(
                        v.b, v.loc, op.getInput().getType(), g, op.getInput(),
                        op.getKernelSizeAttr(), op.getStrideAttr(),
                        op.getPaddingAttr())});
  return success();
}

LogicalResult vjp(FlattenOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.reshape(g, op.getX().getType())});
  return success();
}
LogicalResult vjp(ReshapeOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.reshape(g, op.getX().getType())});
  return success();
}
LogicalResult vjp(TransposeOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  setGrads(op, out, {TransposeOp::create(v.b, v.loc, g,
                                         v.b.getDenseI64ArrayAttr(inverse))});
  return success();
}
LogicalResult vjp(SliceOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {SliceGradOp::create(v.b, v.loc, op.getX().getType(), g,
                                         op.getStartAttr(), op.getLimitAttr(),
                                         op.getStrideAttr())});
  return success();
}
LogicalResult vjp(ConcatOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  RankedTensorType type = op.getType();
  int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
  SmallVector<Value> grads;
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    auto it = v.typeOf(input);
    SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape());
    start[axis] = offset;
    limit[axis] = offset + it.getDimSize(axis);
    offset = limit[axis];
    grads.push_back(SliceOp::create(v.b, v.loc, g,
                                    v.b.getDenseI64ArrayAttr(start),
                                    v.b.getDenseI64ArrayAttr(limit),
                                    DenseI64ArrayAttr()));
  }
  setGrads(op, out, grads);
  return success();
}
LogicalResult vjp(BroadcastToOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out, {v.sumTo(g, op.getX())});
  return success();
}

// A pinned value's gradient is pinned the same way: the backward of a
// split activation stays split.
LogicalResult vjp(ShardingConstraintOp op, VJPBuilder &v, Value g,
                  SmallVectorImpl<Value> &out) {
  setGrads(op, out,
           {ShardingConstraintOp::create(v.b, v.loc, g, op.getSharding())});
  return success();
}

/// Attaches DifferentiableOpInterface to OpTy through its `vjp` overload.
template <typename OpTy>
struct VJPModel
    : public DifferentiableOpInterface::ExternalModel<VJPModel<OpTy>, OpTy> {
  LogicalResult buildVJP(Operation *op, OpBuilder &builder,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    VJPBuilder v{builder, op->getLoc()};
    if (resultGrads.empty() || !resultGrads[0]) {
      operandGrads.assign(op->getNumOperands(), Value());
      return success();
    }
    return vjp(cast<OpTy>(op), v, resultGrads[0], operandGrads);
  }
};

template <typename... OpTys>
void attachVJPs(MLIRContext *context) {
  (OpTys::template attachInterface<VJPModel<OpTys>>(*context), ...);
}

} // namespace

#include "dialects/tg/IR/TgInterfaces.cpp.inc"

void TgDialect::registerVJPs() {
  attachVJPs<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, SelectOp,
             NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ReluOp, SinOp,
             CosOp, SigmoidOp, SiluOp, GeluOp, CastOp, MatmulOp, ReduceSumOp,
             ReduceMeanOp, ReduceMaxOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp,
             RmsNormOp, DropoutOp, EmbeddingOp, CrossEntropyOp, AttentionOp,
             Conv2dOp, MaxPool2dOp, AvgPool2dOp, FlattenOp, ReshapeOp,
             TransposeOp, SliceOp, ConcatOp, BroadcastToOp,
             ShardingConstraintOp>(getContext());
}

//===- TgOps.cpp - tg dialect operations --------------------------*- C++ -*-===//
//
// Verifiers for the ops whose result type is not inferred, folders for the
// obvious identities (x + -0.0, x * 1, reshape to the same type, transpose by
// the identity, ...), and small accessors. Shape inference is in
// TgShapeInference.cpp.
//
// Folders are exact for floating point, NaN, infinities and signed zeros
// included: x * 0 -> 0 and x - x -> 0 are wrong for NaN and infinity, and
// x + 0.0 -> x is wrong for x = -0.0, so none of them is here.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

#define GET_OP_CLASSES
#include "dialects/tg/IR/TgOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The element of a splat constant, or null when `attr` is not one.
static std::optional<APFloat> splatFloat(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

static std::optional<APInt> splatInt(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<IntegerType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APInt>();
}

/// A splat of 1 (1.0 for floats).
static bool isSplatOne(Attribute attr) {
  if (auto f = splatFloat(attr))
    return f->isExactlyValue(1.0);
  if (auto i = splatInt(attr))
    return i->isOne();
  return false;
}

/// A splat of integer 0 or of a float zero with the given sign. The sign of
/// zero matters for soundness: x + (-0.0) == x for every x, but
/// -0.0 + (+0.0) is +0.0; x - (+0.0) == x for every x, but
/// -0.0 - (-0.0) is +0.0.
static bool isSplatZero(Attribute attr, bool negative) {
  if (auto f = splatFloat(attr))
    return f->isZero() && f->isNegative() == negative;
  if (auto i = splatInt(attr))
    return i->isZero();
  return false;
}

/// `x` when it already has the result type, that is when no broadcasting
/// happened; folding `x OP identity` must not change the result's shape.
static OpFoldResult sameTypeOrNull(Value x, Type result) {
  if (x.getType() == result)
    return x;
  return {};
}

//===----------------------------------------------------------------------===//
// Constant and elementwise
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

int64_t IotaOp::getNormalizedDimension() {
  return *normalizeAxis(getDimension(), getType().getRank());
}

LogicalResult IotaOp::verify() {
  RankedTensorType type = getType();
  int64_t rank = type.getRank(), dimension = getDimension();
  if (rank == 0 || failed(normalizeAxis(dimension, rank)))
    return emitOpError() << "dimension " << dimension
                         << " is out of range for rank " << rank;
  double start = getStart().convertToDouble();
  double step = getStep().convertToDouble();
  for (auto [name, value] : {std::pair<StringRef, double>{"start", start},
                             {"step", step}})
    if (!std::isfinite(value))
      return emitOpError() << name << " must be finite, got "
                           << formatDouble(value);
  auto intType = dyn_cast<IntegerType>(type.getElementType());
  if (!intType)
    return success();
  for (auto [name, value] : {std::pair<StringRef, double>{"start", start},
                             {"step", step}})
    if (value != std::trunc(value))
      return emitOpError() << name << " must be a whole number for a "
                           << intType << " result, got "
                           << formatDouble(value);
  if (type.getNumElements() == 0)
    return success();
  // The values run from start to start + step * (size - 1); both ends must
  // fit (in double: exact while they are below 2^53).
  double last = start + step * (double)(type.getDimSize(
                                    getNormalizedDimension()) - 1);
  double limit = std::ldexp(1.0, intType.getWidth() - 1);
  for (double end : {start, last})
    if (end < -limit || end >= limit)
      return emitOpError() << "value " << formatDouble(end)
                           << " does not fit " << intType;
  return success();
}

// The additive identity is -0.0 for floats (see isSplatZero).
OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs(), /*negative=*/true))
    if (OpFoldResult r = sameTypeOrNull(getLhs(), getType()))
      return r;
  if (isSplatZero(adaptor.getLhs(), /*negative=*/true))
    return sameTypeOrNull(getRhs(), getType());
  return {};
}

namespace {
/// add(slice_grad(a), slice_grad(b)) -> slice_grad(concat(a, b)) when the
/// two unit-stride slices are the same box but for one axis, along which
/// they are adjacent: the zeros are written once and the add disappears.
/// Repeated, it turns the backward of a fused QKV projection (three
/// slice_grads and two full-size adds) into one concat (SliceGradOp's
/// folder drops the slice_grad that then covers everything).
struct MergeAdjacentSliceGrads : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto lhs = add.getLhs().getDefiningOp<SliceGradOp>();
    auto rhs = add.getRhs().getDefiningOp<SliceGradOp>();
    if (!lhs || !rhs || lhs == rhs || !lhs->hasOneUse() || !rhs->hasOneUse())
      return failure();
    if (lhs.getType() != add.getType() || rhs.getType() != add.getType())
      return failure();
    auto unitStride = [](SliceGradOp op) {
      return !op.getStride() ||
             llvm::all_of(*op.getStride(), [](int64_t s) { return s == 1; });
    };
    if (!unitStride(lhs) || !unitStride(rhs))
      return failure();
    ArrayRef<int64_t> ls = lhs.getStart(), ll = lhs.getLimit();
    ArrayRef<int64_t> rs = rhs.getStart(), rl = rhs.getLimit();
    int axis = -1;
    for (size_t d = 0; d < ls.size(); ++d) {
      if (ls[d] == rs[d] && ll[d] == rl[d])
        continue;
      if (axis >= 0)
        return failure();
      axis = static_cast<int>(d);
    }
    if (axis < 0)
      return failure();
    // First the slice that comes first along the axis.
    SliceGradOp first = lhs, second = rhs;
    if (rs[axis] < ls[axis])
      std::swap(first, second);
    if (first.getLimit()[axis] != second.getStart()[axis])
      return failure();
    // A gradient that is itself a concat along the axis (an earlier merge)
    // contributes its inputs: one concat, not a nest.
    SmallVector<Value> parts;
    for (Value grad : {first.getGrad(), second.getGrad()}) {
      auto concat = grad.getDefiningOp<ConcatOp>();
      if (concat && concat->hasOneUse() &&
          normalizeAxis(concat.getAxis(), concat.getType().getRank()) ==
              axis)
        llvm::append_range(parts, concat.getInputs());
      else
        parts.push_back(grad);
    }
    Location loc = rewriter.getFusedLoc({lhs.getLoc(), rhs.getLoc()});
    // Both compute for the sum's layer.
    std::string layer = layerOf(add).str();
    auto joined = ConcatOp::create(rewriter, loc, parts, axis);
    setLayer(joined, layer);
    SmallVector<int64_t> start(first.getStart()), limit(first.getLimit());
    limit[axis] = second.getLimit()[axis];
    auto merged = rewriter.replaceOpWithNewOp<SliceGradOp>(
        add, add.getType(), joined, rewriter.getDenseI64ArrayAttr(start),
        rewriter.getDenseI64ArrayAttr(limit), DenseI64ArrayAttr());
    setLayer(merged, layer);
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<MergeAdjacentSliceGrads>(context);
}

OpFoldResult SliceGradOp::fold(FoldAdaptor) {
  auto in = cast<RankedTensorType>(getGrad().getType());
  bool unitStride =
      !getStride() ||
      llvm::all_of(*getStride(), [](int64_t s) { return s == 1; });
  if (in == getType() && unitStride &&
      llvm::all_of(getStart(), [](int64_t s) { return s == 0; }))
    return getGrad();
  return {};
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs(), /*negative=*/false))
    return sameTypeOrNull(getLhs(), getType());
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    if (OpFoldResult r = sameTypeOrNull(getLhs(), getType()))
      return r;
  if (isSplatOne(adaptor.getLhs()))
    return sameTypeOrNull(getRhs(), getType());
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    return sameTypeOrNull(getLhs(), getType());
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  return {};
}

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs[0]);
  auto out = dyn_cast<RankedTensorType>(outputs[0]);
  return in && out && in.getShape() == out.getShape();
}

/// True when converting any value of `from` to `to` is exact, so that
/// converting back restores it: a float type into one that holds all its
/// values, or an integer into a wider one (i1, whose conversions are not
/// plain extensions, is left out).
static bool isExactConversion(Type from, Type to) {
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat)
    return APFloat::isRepresentableBy(fromFloat.getFloatSemantics(),
                                      toFloat.getFloatSemantics());
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toInt = dyn_cast<IntegerType>(to);
  return fromInt && toInt && fromInt.getWidth() > 1 &&
         fromInt.getWidth() <= toInt.getWidth();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  // cast(cast(x : A to B) : B to A) is x when A to B loses nothing.
  if (auto inner = getX().getDefiningOp<CastOp>())
    if (inner.getX().getType() == getType() &&
        isExactConversion(getType().getElementType(),
                          inner.getType().getElementType()))
      return inner.getX();
  return {};
}

//===----------------------------------------------------------------------===//
// Softmax, normalization, dropout
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, int64_t axis,
                                RankedTensorType type) {
  if (type.getRank() == 0 || failed(normalizeAxis(axis, type.getRank())))
    return op->emitOpError() << "axis " << axis << " is out of range for rank "
                             << type.getRank();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType());
}

/// Checks an optional affine parameter of a norm over the last dim.
static LogicalResult verifyNormParam(Operation *op, Value param,
                                     StringRef name, RankedTensorType x) {
  if (!param)
    return success();
  auto type = cast<RankedTensorType>(param.getType());
  int64_t last = x.getDimSize(x.getRank() - 1);
  if (type.getShape() != ArrayRef<int64_t>{last})
    return op->emitOpError()
           << name << " must have shape " << last << " (the last dim of x), got "
           << formatShape(type.getShape());
  if (type.getElementType() != x.getElementType())
    return op->emitOpError() << name << " has element type "
                             << type.getElementType() << ", x has "
                             << x.getElementType();
  return success();
}

template <typename OpTy>
static LogicalResult verifyNorm(OpTy op, ArrayRef<std::pair<Value, StringRef>>
                                             params) {
  RankedTensorType x = op.getX().getType();
  if (x.getRank() < 1)
    return op.emitOpError() << "x must have rank >= 1";
  if (op.getType() != x)
    return op.emitOpError() << "result type " << op.getType()
                            << " must match x type " << x;
  if (!(op.getEps().convertToDouble() > 0))
    return op.emitOpError() << "eps must be positive, got "
                            << formatDouble(op.getEps().convertToDouble());
  for (auto [value, name] : params)
    if (failed(verifyNormParam(op, value, name, x)))
      return failure();
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, {{getWeight(), "weight"}, {getBias(), "bias"}});
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, {{getWeight(), "weight"}});
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError() << "p must be in [0, 1), got " << formatDouble(p);
  return success();
}

int64_t AttentionOp::getStatisticsBytes() {
  ArrayRef<int64_t> q = cast<RankedTensorType>(getQuery().getType()).getShape();
  return q[0] * q[1] * q[2] * static_cast<int64_t>(sizeof(float));
}

double AttentionOp::getEffectiveScale() {
  if (auto scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt((double)getQuery().getType().getDimSize(3));
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element types differ: input has "
                         << in.getElementType() << ", result has "
                         << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "element counts differ: input "
                         << formatShape(in.getShape()) << " has "
                         << in.getNumElements() << ", result "
                         << formatShape(out.getShape()) << " has "
                         << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getX()))
    return dense.reshape(getType());
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

/// A splat constant given a new shape: transposing, slicing or broadcasting
/// a splat gives a splat.
static OpFoldResult resizeSplat(Attribute attr, RankedTensorType type) {
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(attr))
    return splat.resizeSplat(type);
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getX();
  if (OpFoldResult splat = resizeSplat(adaptor.getX(), getType()))
    return splat;
  // transpose(transpose(x, p), q) == transpose(x, p[q[i]]).
  if (auto inner = getX().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    setPerm(composed);
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  return resizeSplat(adaptor.getX(), getType());
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

LogicalResult BroadcastToOp::verify() {
  RankedTensorType in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element types differ: input has "
                         << in.getElementType() << ", result has "
                         << out.getElementType();
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != out.getShape())
    return emitOpError() << "input shape " << formatShape(in.getShape())
                         << " does not broadcast to "
                         << formatShape(out.getShape());
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (OpFoldResult splat = resizeSplat(adaptor.getX(), getType()))
    return splat;
  // broadcast_to(broadcast_to(x)) broadcasts x once.
  if (auto inner = getX().getDefiningOp<BroadcastToOp>()) {
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

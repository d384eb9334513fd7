//===- TgOps.cpp - tg dialect operations --------------------------*- C++ -*-===//
//
// Verifiers for the ops whose result type is not inferred, folders for the
// obvious identities (x + 0, x * 1, reshape to the same type, transpose by
// the identity, ...), and small accessors. Shape inference is in
// TgShapeInference.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
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

/// True when `attr` is a splat constant whose every element equals `value`.
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type type = splat.getElementType();
  if (isa<FloatType>(type))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(type))
    return (double)splat.getSplatValue<APInt>().getSExtValue() == value;
  return false;
}

/// Folds `x OP c` to `x` when `c` is the identity element and the result has
/// `x`'s type (no broadcasting happened).
static OpFoldResult foldIdentity(Value lhs, Attribute rhsConst, Type result,
                                 double identity) {
  if (lhs.getType() == result && isSplatOf(rhsConst, identity))
    return lhs;
  return {};
}

//===----------------------------------------------------------------------===//
// Constant and elementwise
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r =
          foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0))
    return r;
  return foldIdentity(getRhs(), adaptor.getLhs(), getType(), 0.0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r =
          foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0))
    return r;
  return foldIdentity(getRhs(), adaptor.getLhs(), getType(), 1.0);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0);
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  return {};
}

LogicalResult CompareOp::verify() {
  StringRef p = getPredicate();
  if (!llvm::is_contained({"eq", "ne", "lt", "le", "gt", "ge"}, p))
    return emitOpError() << "predicate must be one of eq, ne, lt, le, gt, ge, "
                         << "got \"" << p << "\"";
  return success();
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate must be \"none\" or \"tanh\", got \""
                         << getApproximate() << "\"";
  return success();
}

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs[0]);
  auto out = dyn_cast<RankedTensorType>(outputs[0]);
  return in && out && in.getShape() == out.getShape();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
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
                            << op.getEps().convertToDouble();
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
    return emitOpError() << "p must be in [0, 1), got " << p;
  return success();
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

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getX();
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

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
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

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

//===- TgShapeInference.cpp - Result types of tg ops --------------*- C++ -*-===//
//
// inferReturnTypes for every op whose result type follows from its operands
// and attributes. These run in the verifier (the declared result type must
// match) and in the model importer (which learns result types from here), so
// they must reject any operand or attribute combination with a diagnostic that
// states the facts, and never assume the op has been verified.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::tg;

//===----------------------------------------------------------------------===//
// Shared shape rules
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> mlir::tg::broadcastShapes(ArrayRef<int64_t> a,
                                                          ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return failure();
    result[rank - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

FailureOr<int64_t> mlir::tg::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

std::string mlir::tg::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

std::string mlir::tg::formatDouble(double value) {
  // The fewest significant digits that read back as `value`.
  char buffer[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (std::isnan(value) || std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

namespace {
/// Emits `'tg.OP' op MESSAGE` at `loc` when a location is given.
struct OpDiag {
  std::optional<Location> loc;
  StringRef opName;

  LogicalResult operator()(const Twine &message) const {
    return emitOptionalError(loc, "'", opName, "' op ", message);
  }
};
} // namespace

/// The type of `v` when it is a statically shaped tensor, else null.
static RankedTensorType tensorOf(Value v) {
  auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
  return type && type.hasStaticShape() ? type : RankedTensorType();
}

/// Checks that operands exist and are statically shaped tensors.
static LogicalResult requireTensors(const OpDiag &diag, ValueRange values,
                                    ArrayRef<StringRef> names) {
  if (values.size() < names.size())
    return diag(llvm::formatv("expects {0} operands, got {1}", names.size(),
                              values.size()));
  for (auto [value, name] : llvm::zip(values, names))
    if (!tensorOf(value))
      return diag("operand '" + name + "' must be a statically shaped tensor");
  return success();
}

static LogicalResult inferBroadcast(const OpDiag &diag, ArrayRef<Value> values,
                                    Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value v : values) {
    auto next = broadcastShapes(shape, tensorOf(v).getShape());
    if (failed(next))
      return diag(llvm::formatv("operand shapes do not broadcast: {0} and {1}",
                                formatShape(shape),
                                formatShape(tensorOf(v).getShape())));
    shape = *next;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// The binary elementwise ops share one rule: same element type, broadcast
/// shape.
template <typename OpTy>
static LogicalResult inferBinary(std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, OpTy::getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"lhs", "rhs"})))
    return failure();
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return diag(llvm::formatv("element types differ: lhs has '{0}', rhs has '{1}'",
                              lhs.getElementType(), rhs.getElementType()));
  return inferBroadcast(diag, {adaptor.getLhs(), adaptor.getRhs()},
                        lhs.getElementType(), inferred);
}

#define TG_INFER_BINARY(OP)                                                    \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferBinary<OP>(loc, adaptor, inferred);                            \
  }
TG_INFER_BINARY(AddOp)
TG_INFER_BINARY(SubOp)
TG_INFER_BINARY(MulOp)
TG_INFER_BINARY(DivOp)
TG_INFER_BINARY(PowOp)
TG_INFER_BINARY(MaximumOp)
TG_INFER_BINARY(MinimumOp)
#undef TG_INFER_BINARY

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"lhs", "rhs"})))
    return failure();
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return diag(llvm::formatv("element types differ: lhs has '{0}', rhs has '{1}'",
                              lhs.getElementType(), rhs.getElementType()));
  return inferBroadcast(diag, {adaptor.getLhs(), adaptor.getRhs()},
                        IntegerType::get(context, 1), inferred);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(),
                            {"condition", "on_true", "on_false"})))
    return failure();
  auto onTrue = tensorOf(adaptor.getOnTrue());
  auto onFalse = tensorOf(adaptor.getOnFalse());
  if (onTrue.getElementType() != onFalse.getElementType())
    return diag(llvm::formatv(
        "element types differ: on_true has '{0}', on_false has '{1}'",
        onTrue.getElementType(), onFalse.getElementType()));
  return inferBroadcast(
      diag, {adaptor.getCondition(), adaptor.getOnTrue(), adaptor.getOnFalse()},
      onTrue.getElementType(), inferred);
}

//===----------------------------------------------------------------------===//
// Matmul and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"lhs", "rhs"})))
    return failure();
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return diag(llvm::formatv(
        "operands must have rank >= 2, got lhs rank {0} and rhs rank {1}",
        lhs.getRank(), rhs.getRank()));
  if (lhs.getElementType() != rhs.getElementType())
    return diag(llvm::formatv("element types differ: lhs has '{0}', rhs has '{1}'",
                              lhs.getElementType(), rhs.getElementType()));
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t lr = ls.size(), rr = rs.size();
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = tl ? ls[lr - 1] : ls[lr - 2];
  int64_t kl = tl ? ls[lr - 2] : ls[lr - 1];
  int64_t kr = tr ? rs[rr - 1] : rs[rr - 2];
  int64_t n = tr ? rs[rr - 2] : rs[rr - 1];
  if (kl != kr)
    return diag(llvm::formatv("contracting dims differ: lhs has {0}, rhs has {1}",
                              kl, kr));
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (failed(batch))
    return diag(llvm::formatv("batch dims do not broadcast: {0} and {1}",
                              formatShape(ls.drop_back(2)),
                              formatShape(rs.drop_back(2))));
  SmallVector<int64_t> shape = *batch;
  shape.append({m, n});
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

/// Non-negative, sorted, unique reduced dims; all dims when `dims` is empty.
static FailureOr<SmallVector<int64_t>>
reducedDims(const OpDiag &diag, ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> result;
  if (dims.empty()) {
    result = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    return result;
  }
  for (auto [i, d] : llvm::enumerate(dims)) {
    auto n = normalizeAxis(d, rank);
    if (failed(n)) {
      (void)diag(llvm::formatv("dim {0} is out of range for rank {1}", d, rank));
      return failure();
    }
    auto *seen = llvm::find(result, *n);
    if (seen != result.end()) {
      int64_t earlier = dims[seen - result.begin()];
      (void)diag(earlier == d
                     ? llvm::formatv("dim {0} is listed twice", d).str()
                     : llvm::formatv("dims {0} and {1} both name dim {2}",
                                     earlier, d, *n)
                           .str());
      return failure();
    }
    result.push_back(*n);
  }
  llvm::sort(result);
  return result;
}

template <typename OpTy>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, OpTy::getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"x"})))
    return failure();
  auto x = tensorOf(adaptor.getX());
  auto dims = reducedDims(diag, adaptor.getDims(), x.getRank());
  if (failed(dims))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(x.getShape())) {
    if (!llvm::is_contained(*dims, (int64_t)i))
      shape.push_back(size);
    else if (adaptor.getKeepdim())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

#define TG_INFER_REDUCE(OP)                                                    \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduce<OP>(loc, adaptor, inferred);                            \
  }                                                                            \
  SmallVector<int64_t> OP::getReducedDims() {                                  \
    return *reducedDims(OpDiag{std::nullopt, getOperationName()}, getDims(),   \
                        getX().getType().getRank());                           \
  }
TG_INFER_REDUCE(ReduceSumOp)
TG_INFER_REDUCE(ReduceMeanOp)
TG_INFER_REDUCE(ReduceMaxOp)
#undef TG_INFER_REDUCE

//===----------------------------------------------------------------------===//
// Embedding, loss, attention
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"table", "indices"})))
    return failure();
  auto table = tensorOf(adaptor.getTable());
  auto indices = tensorOf(adaptor.getIndices());
  if (table.getRank() != 2)
    return diag(llvm::formatv("table must have rank 2, got rank {0}",
                              table.getRank()));
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

// The loss is f32 whatever the logits' float type: the softmax and the sums
// over classes and labels accumulate in f32, and bf16 logits are read as they
// are (a fused classifier), never widened to an f32 copy of the logits.
LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"logits", "labels"})))
    return failure();
  auto logits = tensorOf(adaptor.getLogits());
  auto labels = tensorOf(adaptor.getLabels());
  if (logits.getRank() < 1)
    return diag("logits must have rank >= 1");
  if (labels.getShape() != logits.getShape().drop_back())
    return diag(llvm::formatv(
        "labels shape {0} must be the logits shape {1} without its last dim",
        formatShape(labels.getShape()), formatShape(logits.getShape())));
  Type f32 = Float32Type::get(context);
  switch (adaptor.getReduction()) {
  case LossReduction::none:
    inferred.push_back(RankedTensorType::get(labels.getShape(), f32));
    break;
  case LossReduction::mean:
  case LossReduction::sum:
    inferred.push_back(RankedTensorType::get({}, f32));
    break;
  }
  return success();
}

static LogicalResult inferAttention(const OpDiag &diag,
                                    AttentionOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  if (failed(requireTensors(diag, adaptor.getOperands(),
                            {"query", "key", "value"})))
    return failure();
  auto q = tensorOf(adaptor.getQuery()), k = tensorOf(adaptor.getKey()),
       v = tensorOf(adaptor.getValue());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return diag(llvm::formatv("query, key and value must have rank 4 "
                              "[B, H, T, D], got ranks {0}, {1} and {2}",
                              q.getRank(), k.getRank(), v.getRank()));
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return diag(llvm::formatv(
        "element types differ: query has '{0}', key has '{1}', value has '{2}'",
        q.getElementType(), k.getElementType(), v.getElementType()));
  if (q.getDimSize(0) != k.getDimSize(0) || q.getDimSize(0) != v.getDimSize(0))
    return diag(llvm::formatv(
        "batch dims differ: query {0}, key {1}, value {2}",
        formatShape(q.getShape()), formatShape(k.getShape()),
        formatShape(v.getShape())));
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (v.getDimSize(1) != kvHeads)
    return diag(llvm::formatv(
        "key and value head counts differ: key has {0}, value has {1}",
        kvHeads, v.getDimSize(1)));
  // Grouped-query attention: query head h reads key/value head
  // h / (heads / kvHeads).
  if (kvHeads == 0 ? heads != 0 : heads % kvHeads != 0)
    return diag(llvm::formatv(
        "query has {0} heads, which {1} key/value heads do not divide", heads,
        kvHeads));
  if (q.getDimSize(3) != k.getDimSize(3))
    return diag(llvm::formatv("head dims differ: query has {0}, key has {1}",
                              q.getDimSize(3), k.getDimSize(3)));
  if (k.getDimSize(2) != v.getDimSize(2))
    return diag(llvm::formatv(
        "key and value lengths differ: key has {0}, value has {1}",
        k.getDimSize(2), v.getDimSize(2)));
  if (auto scale = adaptor.getScaleAttr(); scale && !(scale.getValueAsDouble() > 0))
    return diag("scale must be positive, got " +
                formatDouble(scale.getValueAsDouble()));
  if (Value maskValue = adaptor.getMask()) {
    auto mask = tensorOf(maskValue);
    if (!mask)
      return diag("operand 'mask' must be a statically shaped tensor");
    if (mask.getElementType() != q.getElementType())
      return diag(llvm::formatv(
          "element types differ: query has '{0}', mask has '{1}'",
          q.getElementType(), mask.getElementType()));
    // The kernels index the mask as [B', H', T', S'] with each dim 1 or the
    // scores' own: numpy broadcasting, but only ever of the mask.
    SmallVector<int64_t> scores = {q.getDimSize(0), heads, q.getDimSize(2),
                                   k.getDimSize(2)};
    ArrayRef<int64_t> shape = mask.getShape();
    bool broadcasts = shape.size() <= scores.size();
    for (size_t i = 0; broadcasts && i < shape.size(); ++i) {
      int64_t want = scores[scores.size() - shape.size() + i];
      broadcasts = shape[i] == 1 || shape[i] == want;
    }
    if (!broadcasts)
      return diag(llvm::formatv("mask shape {0} does not broadcast to the "
                                "scores [B, H, T, S] = {1}",
                                formatShape(shape), formatShape(scores)));
  }
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferAttention(OpDiag{loc, getOperationName()}, adaptor, inferred);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Output size of a window sliding over `size` elements; 0 when the window
/// does not fit, or when the sizes overflow int64_t (attributes are not
/// trusted here).
static int64_t windowOutput(int64_t size, int64_t kernel, int64_t stride,
                            int64_t pad, int64_t dilation) {
  if (kernel < 1)
    return 0;
  std::optional<int64_t> span = llvm::checkedMul(dilation, kernel - 1);
  std::optional<int64_t> twicePad = llvm::checkedMul<int64_t>(2, pad);
  std::optional<int64_t> padded =
      twicePad ? llvm::checkedAdd(size, *twicePad) : std::nullopt;
  if (!span || !padded || *padded <= *span)
    return 0;
  return (*padded - *span - 1) / stride + 1;
}

static LogicalResult checkWindowAttr(const OpDiag &diag, StringRef name,
                                     ArrayRef<int64_t> values, int64_t min) {
  if (values.size() != 2)
    return diag(llvm::formatv("{0} must have 2 values, got {1}", name,
                              values.size()));
  for (int64_t v : values)
    if (v < min)
      return diag(llvm::formatv("{0} values must be >= {1}, got {2}", name, min,
                                v));
  return success();
}

static LogicalResult inferConv2d(const OpDiag &diag, Conv2dOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  if (failed(requireTensors(diag, adaptor.getOperands(), {"input", "weight"})))
    return failure();
  auto x = tensorOf(adaptor.getInput()), w = tensorOf(adaptor.getWeight());
  if (x.getRank() != 4 || w.getRank() != 4)
    return diag(llvm::formatv("input and weight must have rank 4 (NCHW, OIHW), "
                              "got ranks {0} and {1}",
                              x.getRank(), w.getRank()));
  if (x.getElementType() != w.getElementType())
    return diag(llvm::formatv("element types differ: input has '{0}', weight "
                              "has '{1}'",
                              x.getElementType(), w.getElementType()));
  ArrayRef<int64_t> stride = adaptor.getStride(), pad = adaptor.getPadding(),
                    dil = adaptor.getDilation();
  if (failed(checkWindowAttr(diag, "stride", stride, 1)) ||
      failed(checkWindowAttr(diag, "padding", pad, 0)) ||
      failed(checkWindowAttr(diag, "dilation", dil, 1)))
    return failure();
  int64_t groups = adaptor.getGroups();
  int64_t c = x.getDimSize(1), o = w.getDimSize(0);
  if (groups < 1 || c % groups || o % groups)
    return diag(llvm::formatv("groups {0} must divide input channels {1} and "
                              "output channels {2}",
                              groups, c, o));
  if (w.getDimSize(1) * groups != c)
    return diag(llvm::formatv("weight has {0} input channels per group, input "
                              "has {1} channels in {2} groups",
                              w.getDimSize(1), c, groups));
  if (Value bias = adaptor.getBias()) {
    auto b = tensorOf(bias);
    if (!b)
      return diag("operand 'bias' must be a statically shaped tensor");
    if (b.getShape() != ArrayRef<int64_t>{o})
      return diag(llvm::formatv("bias must have shape {0} (the output "
                                "channels), got {1}",
                                o, formatShape(b.getShape())));
    if (b.getElementType() != x.getElementType())
      return diag(llvm::formatv("element types differ: input has '{0}', bias "
                                "has '{1}'",
                                x.getElementType(), b.getElementType()));
  }
  int64_t h = windowOutput(x.getDimSize(2), w.getDimSize(2), stride[0], pad[0],
                           dil[0]);
  int64_t wd = windowOutput(x.getDimSize(3), w.getDimSize(3), stride[1],
                            pad[1], dil[1]);
  if (h < 1 || wd < 1)
    return diag(llvm::formatv("kernel {0}x{1} with dilation {2}x{3} does not "
                              "fit the input {4}x{5} padded by {6}x{7}",
                              w.getDimSize(2), w.getDimSize(3), dil[0], dil[1],
                              x.getDimSize(2), x.getDimSize(3), pad[0],
                              pad[1]));
  inferred.push_back(RankedTensorType::get({x.getDimSize(0), o, h, wd},
                                           x.getElementType()));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferConv2d(OpDiag{loc, getOperationName()}, adaptor, inferred);
}

template <typename Adaptor>
static LogicalResult inferPool(const OpDiag &diag, Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
  if (failed(requireTensors(diag, adaptor.getOperands(), {"input"})))
    return failure();
  auto x = tensorOf(adaptor.getInput());
  if (x.getRank() != 4)
    return diag(llvm::formatv("input must have rank 4 (NCHW), got rank {0}",
                              x.getRank()));
  if (!adaptor.getKernelSizeAttr())
    return diag("requires attribute 'kernel_size'");
  ArrayRef<int64_t> kernel = adaptor.getKernelSize();
  ArrayRef<int64_t> stride =
      adaptor.getStrideAttr() ? adaptor.getStrideAttr().asArrayRef() : kernel;
  ArrayRef<int64_t> pad = adaptor.getPadding();
  if (failed(checkWindowAttr(diag, "kernel_size", kernel, 1)) ||
      failed(checkWindowAttr(diag, "stride", stride, 1)) ||
      failed(checkWindowAttr(diag, "padding", pad, 0)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (pad[i] > kernel[i] / 2)
      return diag(llvm::formatv("padding {0} must be at most half the kernel "
                                "size {1}",
                                pad[i], kernel[i]));
  int64_t h = windowOutput(x.getDimSize(2), kernel[0], stride[0], pad[0], 1);
  int64_t w = windowOutput(x.getDimSize(3), kernel[1], stride[1], pad[1], 1);
  if (h < 1 || w < 1)
    return diag(llvm::formatv("kernel {0}x{1} does not fit the input {2}x{3} "
                              "padded by {4}x{5}",
                              kernel[0], kernel[1], x.getDimSize(2),
                              x.getDimSize(3), pad[0], pad[1]));
  inferred.push_back(RankedTensorType::get(
      {x.getDimSize(0), x.getDimSize(1), h, w}, x.getElementType()));
  return success();
}

#define TG_INFER_POOL(OP)                                                      \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferPool(OpDiag{loc, getOperationName()}, adaptor, inferred);                              \
  }                                                                            \
  SmallVector<int64_t> OP::getEffectiveStride() {                              \
    return llvm::to_vector(getStride() ? *getStride() : getKernelSize());      \
  }
TG_INFER_POOL(MaxPool2dOp)
TG_INFER_POOL(AvgPool2dOp)
#undef TG_INFER_POOL

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"x"})))
    return failure();
  auto x = tensorOf(adaptor.getX());
  int64_t rank = std::max<int64_t>(x.getRank(), 1);
  auto start = normalizeAxis(adaptor.getStartDim(), rank);
  auto end = normalizeAxis(adaptor.getEndDim(), rank);
  if (failed(start) || failed(end) || *start > *end)
    return diag(llvm::formatv(
        "start_dim {0} and end_dim {1} do not name a dim range of rank {2}",
        adaptor.getStartDim(), adaptor.getEndDim(), x.getRank()));
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> in = x.getShape();
  if (in.empty()) {
    shape.push_back(1);
  } else {
    shape.append(in.begin(), in.begin() + *start);
    int64_t merged = 1;
    for (int64_t i = *start; i <= *end; ++i)
      merged *= in[i];
    shape.push_back(merged);
    shape.append(in.begin() + *end + 1, in.end());
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  if (failed(requireTensors(diag, adaptor.getOperands(), {"x"})))
    return failure();
  if (!adaptor.getPermAttr())
    return diag("requires attribute 'perm'");
  auto x = tensorOf(adaptor.getX());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return diag(llvm::formatv("perm has {0} entries for rank {1}", perm.size(),
                              x.getRank()));
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return diag(llvm::formatv("perm [{0}] is not a permutation of 0..{1}",
                                llvm::make_range(perm.begin(), perm.end()),
                                x.getRank() - 1));
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

static LogicalResult inferSlice(const OpDiag &diag, SliceOp::Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
  if (failed(requireTensors(diag, adaptor.getOperands(), {"x"})))
    return failure();
  if (!adaptor.getStartAttr() || !adaptor.getLimitAttr())
    return diag("requires attributes 'start' and 'limit'");
  auto x = tensorOf(adaptor.getX());
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit();
  SmallVector<int64_t> stride =
      adaptor.getStrideAttr()
          ? llvm::to_vector(adaptor.getStrideAttr().asArrayRef())
          : SmallVector<int64_t>(x.getRank(), 1);
  int64_t rank = x.getRank();
  if ((int64_t)start.size() != rank || (int64_t)limit.size() != rank ||
      (int64_t)stride.size() != rank)
    return diag(llvm::formatv("start, limit and stride need {0} entries (the "
                              "rank), got {1}, {2} and {3}",
                              rank, start.size(), limit.size(), stride.size()));
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > x.getDimSize(i) ||
        stride[i] < 1)
      return diag(llvm::formatv("dim {0}: slice [{1}:{2}:{3}] is not within "
                                "size {4}",
                                i, start[i], limit[i], stride[i],
                                x.getDimSize(i)));
    // ceil((limit - start) / stride), without overflow for a huge stride.
    shape.push_back(limit[i] == start[i]
                        ? 0
                        : (limit[i] - start[i] - 1) / stride[i] + 1);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferSlice(OpDiag{loc, getOperationName()}, adaptor, inferred);
}

SmallVector<int64_t> SliceOp::getEffectiveStride() {
  if (auto stride = getStride())
    return llvm::to_vector(*stride);
  return SmallVector<int64_t>(getX().getType().getRank(), 1);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, getOperationName()};
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return diag("needs at least one input");
  for (Value v : inputs)
    if (!tensorOf(v))
      return diag("inputs must be ranked tensors");
  auto first = tensorOf(inputs[0]);
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (failed(axis) || first.getRank() == 0)
    return diag(llvm::formatv("axis {0} is out of range for rank {1}",
                              adaptor.getAxis(), first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto t = tensorOf(v);
    if (t.getElementType() != first.getElementType())
      return diag(llvm::formatv("input {0} has element type '{1}', input 0 has '{2}'",
                                i + 1, t.getElementType(),
                                first.getElementType()));
    if (t.getRank() != first.getRank())
      return diag(llvm::formatv("input {0} has rank {1}, input 0 has {2}", i + 1,
                                t.getRank(), first.getRank()));
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (t.getDimSize(d) != first.getDimSize(d))
        return diag(llvm::formatv("input {0} has size {1} in dim {2}, input 0 "
                                  "has {3}",
                                  i + 1, t.getDimSize(d), d,
                                  first.getDimSize(d)));
    }
    shape[*axis] += t.getDimSize(*axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Forward types for the gradient ops' verifiers
//===----------------------------------------------------------------------===//

static OpDiag gradDiag(Operation *gradOp) {
  return OpDiag{gradOp->getLoc(), gradOp->getName().getStringRef()};
}

LogicalResult mlir::tg::inferForwardType(Operation *gradOp,
                                         AttentionOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferAttention(gradDiag(gradOp), adaptor, inferred);
}

LogicalResult mlir::tg::inferForwardType(Operation *gradOp,
                                         Conv2dOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferConv2d(gradDiag(gradOp), adaptor, inferred);
}

LogicalResult mlir::tg::inferForwardType(Operation *gradOp,
                                         MaxPool2dOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferPool(gradDiag(gradOp), adaptor, inferred);
}

LogicalResult mlir::tg::inferForwardType(Operation *gradOp,
                                         AvgPool2dOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferPool(gradDiag(gradOp), adaptor, inferred);
}

LogicalResult mlir::tg::inferForwardType(Operation *gradOp,
                                         SliceOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferSlice(gradDiag(gradOp), adaptor, inferred);
}

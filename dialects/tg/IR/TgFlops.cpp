//===- TgFlops.cpp - FLOPs and bytes of tg ops ------------------*- C++ -*-===//
//
// The bytes a tensor holds, and the arithmetic an op does, counted the way
// papers and MFU figures count it: a multiply-add is two FLOPs, GEMMs and
// attention exactly, the rest by the elements they touch. tg-remat weighs
// recomputation with it, the memory report and the CUDA executable's MFU print
// it.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

double elements(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? (double)t.getNumElements() : 0.0;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// 4*B*H*T*S*(Dq+Dv)/2 per pass over Q.K^T and P.V, halved when causal.
template <typename OpT> double attentionFlops(OpT op, double passes) {
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey()),
                    v = shapeOf(op.getValue());
  double f = passes * 2.0 * q[0] * q[1] * q[2] * k[2] * (q[3] + v[3]);
  return op.getCausal() ? f / 2 : f;
}

} // namespace

int64_t mlir::tg::tensorBytes(Type type) {
  auto t = cast<RankedTensorType>(type);
  Type e = t.getElementType();
  return t.getNumElements() *
         (e.isInteger(1) ? 1 : (int64_t)(e.getIntOrFloatBitWidth() + 7) / 8);
}

double mlir::tg::matmulFlops(MatmulOp op) {
  auto a = cast<RankedTensorType>(op.getLhs().getType());
  int64_t k = op.getTransposeLhs() ? a.getShape()[a.getRank() - 2]
                                   : a.getShape().back();
  return 2.0 * elements(op.getResult()) * k;
}

double mlir::tg::attentionFlops(Operation *op) {
  if (auto at = dyn_cast<AttentionOp>(op))
    return ::attentionFlops(at, 1.0);
  if (auto at = dyn_cast<AttentionGradOp>(op))
    return ::attentionFlops(at, 2.0);
  return 0.0;
}

double mlir::tg::flopCount(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op))
    return matmulFlops(mm);
  if (isa<AttentionOp, AttentionGradOp>(op))
    return attentionFlops(op);
  // A convolution: 2 FLOPs per output element per weight element feeding
  // it (the weight over its output channels); each gradient as much again.
  if (auto conv = dyn_cast<Conv2dOp>(op))
    return 2.0 * elements(conv.getResult()) * elements(conv.getWeight()) /
           shapeOf(conv.getWeight())[0];
  if (auto grad = dyn_cast<Conv2dGradInputOp>(op))
    return 2.0 * elements(grad.getGrad()) * elements(grad.getWeight()) /
           shapeOf(grad.getWeight())[0];
  if (auto grad = dyn_cast<Conv2dGradWeightOp>(op))
    return 2.0 * elements(grad.getGrad()) * elements(grad.getResult()) /
           shapeOf(grad.getResult())[0];
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    double sum = 0;
    kernel.getBody().walk([&](Operation *inner) {
      if (inner != op)
        sum += flopCount(inner);
    });
    return sum;
  }
  if (isDataMovementOp(op) ||
      isa<ConstantOp, IotaOp, EmbeddingOp, CastOp, YieldOp>(op) ||
      op->getNumResults() == 0)
    return 0.0;
  // The rest touch each element of their largest tensor a few times:
  // normalisations and the classifier about five (mean, variance or max,
  // exponent, scale), everything else once.
  double largest = 0;
  for (Value v : op->getOperands())
    largest = std::max(largest, elements(v));
  for (Value v : op->getResults())
    largest = std::max(largest, elements(v));
  if (isa<LayerNormOp, RmsNormOp, LayerNormGradOp, RmsNormGradOp,
          CrossEntropyOp, CrossEntropyGradOp>(op))
    return 5.0 * largest;
  return largest;
}

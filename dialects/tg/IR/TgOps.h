//===- TgOps.h - tg dialect operations ----------------------------*- C++ -*-===//
//
// Declares the tg ops and the shape rules they share (broadcasting, axis
// normalisation), which passes use as well.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGOPS_H
#define TGC_DIALECTS_TG_IR_TGOPS_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/tg/IR/TgOps.h.inc"

namespace mlir::tg {

/// The numpy broadcast of two shapes, or failure when a pair of dims is
/// neither equal nor 1.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);

/// Whether `op` computes each element of its result from the elements of
/// its operands at the same (broadcast) position alone: what a tg.kernel of
/// kind `elementwise` may hold and tg-fuse groups.
bool isElementwiseOp(Operation *op);

/// Whether `op` only moves elements (tg.transpose, tg.slice,
/// tg.slice_grad, tg.concat, and the views tg.reshape and tg.flatten): an
/// elementwise kernel that reads at remapped indices may compute it.
bool isDataMovementOp(Operation *op);

/// The one value of a dense constant that holds one (a splat, or a single
/// element): what generated kernels write as a literal. Nothing for any
/// other value.
std::optional<Attribute> literalValue(Value v);

/// Whether `v` is the literal 1.0: as a classifier's gradient seed, the
/// launch computes the logits' gradient without reading it.
bool isLiteralOne(Value v);

/// Whether running the owner of `use` reads the constant it holds from
/// memory. Not when the constant is a literal: one value read by an
/// elementwise op or an `elementwise` kernel, or a unit gradient seed of a
/// `classifier` kernel's tg.cross_entropy_grad (the launch computes it);
/// nor when a kernel's body never reads it. Every other reader, the return
/// and any reader of a view included, reads memory. tg-place-constants
/// places what this says is read; the CUDA emitter prints launches that
/// read no more.
bool readsConstantFromMemory(OpOperand &use);

/// The bytes a ranked tensor of `type` holds: its elements times their
/// bytes (i1 one byte, others their bit width rounded up to bytes).
int64_t tensorBytes(Type type);

/// The FLOPs `op` computes: 2*M*N*K for tg.matmul (batch dims included),
/// 4*B*H*T*S*D for tg.attention (twice that for its gradient, halved when
/// causal), 2 per multiply-add for convolutions, none for data movement,
/// casts and gathers, 5 per element of normalisations and the classifier,
/// 1 per element of the largest tensor of anything else; a tg.kernel the
/// sum of its ops.
double flopCount(Operation *op);
double matmulFlops(MatmulOp op);
/// tg.attention and tg.attention_grad's share of flopCount; 0 for others.
double attentionFlops(Operation *op);

/// `axis` counted from the back when negative; failure when out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Renders a shape as `4x8` (`scalar` for rank 0), for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

/// Renders a double as the shortest decimal that reads back as it (`0.02`,
/// `-1`, `1.0E-5`, `+Inf`, `NaN`), for diagnostics.
std::string formatDouble(double value);

/// The result type of a gradient op's forward op, for the gradient op's
/// verifier: the forward op's shape rule, with diagnostics that name
/// `gradOp` and point at it.
LogicalResult inferForwardType(Operation *gradOp, AttentionOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred);
LogicalResult inferForwardType(Operation *gradOp, Conv2dOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred);
LogicalResult inferForwardType(Operation *gradOp, MaxPool2dOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred);
LogicalResult inferForwardType(Operation *gradOp, AvgPool2dOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred);
LogicalResult inferForwardType(Operation *gradOp, SliceOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred);

} // namespace mlir::tg

#endif // TGC_DIALECTS_TG_IR_TGOPS_H

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
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
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

/// `axis` counted from the back when negative; failure when out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Renders a shape as `4x8` (`scalar` for rank 0), for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace mlir::tg

#endif // TGC_DIALECTS_TG_IR_TGOPS_H

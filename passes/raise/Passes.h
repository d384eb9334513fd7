//===- Passes.h - Raising spelled-out patterns to tg ops ---------*- C++
//-*-===//

#ifndef TGC_PASSES_RAISE_PASSES_H
#define TGC_PASSES_RAISE_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/raise/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/raise/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_RAISE_PASSES_H

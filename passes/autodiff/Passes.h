//===- Passes.h - Automatic differentiation passes ----------------*- C++ -*-===//

#ifndef TGC_PASSES_AUTODIFF_PASSES_H
#define TGC_PASSES_AUTODIFF_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/autodiff/Passes.h.inc"

/// "a, b, c" for the first `shown` names, then ", ... N in all": the
/// parameters or modules a diagnostic of tg-freeze or tg-lora lists.
std::string listNames(ArrayRef<StringRef> names, size_t shown = 8);

} // namespace mlir::tg

#endif // TGC_PASSES_AUTODIFF_PASSES_H

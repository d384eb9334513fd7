//===- Passes.h - Remat passes ----------------------------------*- C++ -*-===//

#ifndef TGC_PASSES_REMAT_PASSES_H
#define TGC_PASSES_REMAT_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/EnumOption.h"
#include "passes/fusion/Passes.h"

namespace mlir::tg {

/// tg-remat's `remat`: what the backward recomputes.
enum class RematPolicy { None, Selective, Full, Auto };
/// tg-remat's `solver` under remat=auto.
enum class RematSolver { Auto, Exact, MinCut };

/// As tgc's flags and the pass options spell them ("none", "selective",
/// "full", "auto"; "auto", "exact", "min-cut"), nothing for another.
std::optional<RematPolicy> parseRematPolicy(StringRef name);
StringRef rematPolicyName(RematPolicy policy);
std::optional<RematSolver> parseRematSolver(StringRef name);

} // namespace mlir::tg

TGC_ENUM_OPTION(::mlir::tg::RematPolicy)
TGC_ENUM_OPTION(::mlir::tg::RematSolver)

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/remat/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/remat/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_PASSES_H

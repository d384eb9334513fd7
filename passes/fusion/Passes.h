//===- Passes.h - Fusion passes -----------------------------------*- C++ -*-===//

#ifndef TGC_PASSES_FUSION_PASSES_H
#define TGC_PASSES_FUSION_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/EnumOption.h"

namespace mlir::tg {

/// tg-fuse's `fusion`: which rules apply.
enum class FusionRules { None, Elementwise, All };
/// tg-fuse's `target`: whose kernels it forms.
enum class FusionTarget { Cpu, Cuda };

/// The values as tgc's flags and the pass options spell them ("none",
/// "elementwise", "all"; "cpu", "cuda"), nothing for another.
std::optional<FusionRules> parseFusionRules(StringRef name);
std::optional<FusionTarget> parseFusionTarget(StringRef name);

} // namespace mlir::tg

namespace mlir::tg {

/// What fuseKernels formed.
struct FusionStats {
  unsigned kernels = 0, elementwise = 0, gemm = 0, reduction = 0,
           classifier = 0, optimizer = 0, fusedOps = 0, gradientScales = 0;
};

/// tg-fuse on one function: its ops grouped into tg.kernels by `fusion`'s
/// rules for `target` (tg-remat plans its candidates with it too).
FusionStats fuseKernels(func::FuncOp func, FusionRules fusion,
                        FusionTarget target);

} // namespace mlir::tg

TGC_ENUM_OPTION(::mlir::tg::FusionRules)
TGC_ENUM_OPTION(::mlir::tg::FusionTarget)

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/fusion/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_FUSION_PASSES_H

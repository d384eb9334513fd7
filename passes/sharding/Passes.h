//===- Passes.h - Sharding passes -------------------------------*- C++ -*-===//

#ifndef TGC_PASSES_SHARDING_PASSES_H
#define TGC_PASSES_SHARDING_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/EnumOption.h"
#include "planning/pipeline/PipelineSchedule.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/sharding/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/sharding/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_SHARDING_PASSES_H

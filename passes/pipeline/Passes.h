//===- Passes.h - Pipeline parallelism passes ---------------------*- C++
//-*-===//

#ifndef TGC_PASSES_PIPELINE_PASSES_H
#define TGC_PASSES_PIPELINE_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/EnumOption.h"
#include "planning/pipeline/PipelineSchedule.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/pipeline/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_PIPELINE_PASSES_H

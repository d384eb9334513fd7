//===- Passes.h - Schedule passes ---------------------------------*- C++ -*-===//

#ifndef TGC_PASSES_SCHEDULE_PASSES_H
#define TGC_PASSES_SCHEDULE_PASSES_H

#include "dialects/tg/IR/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tg {

/// What scheduleStep did.
struct ScheduleStats {
  unsigned hoisted = 0, buckets = 0;
};

/// tg-schedule on one function: gradient chains hoisted, all-reduces split
/// into buckets of `bucketBytes` (0 or more) and their tg.awaits placed
/// (tg-remat plans its candidates with it too).
ScheduleStats scheduleStep(func::FuncOp func, int64_t bucketBytes);

#define GEN_PASS_DECL
#include "passes/schedule/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/schedule/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_SCHEDULE_PASSES_H

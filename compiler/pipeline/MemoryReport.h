//===- MemoryReport.h - tgc --report=memory and --report-plot ------*- C++ -*-===//
//
// Reads the plan tg-plan-memory left in the IR (never an emitter's) and
// tells a person what the step needs: the arena's peak beside the lower
// bound, and the bytes by category.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_MEMORYREPORT_H
#define TGC_COMPILER_PIPELINE_MEMORYREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>

namespace mlir::tg {

/// Bytes as a person reads them: "21.67 MB", "532.4 kB" (powers of 1000).
std::string formatBytes(int64_t bytes);

/// Prints the report of a module after the memory phase; fails with a
/// diagnostic when a step function has no plan.
LogicalResult printMemoryReport(ModuleOp module, llvm::raw_ostream &os);

/// Draws the bytes live at each op of @train_step, with the arena's peak
/// and the lower bound, as an SVG picture; with `others` (the same step
/// compiled otherwise, such as under other remat policies, each with its
/// label), their curves on the same chart, each over its own ops.
LogicalResult writeMemoryPlot(ModuleOp module,
                              ArrayRef<std::pair<std::string, ModuleOp>> others,
                              llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_MEMORYREPORT_H

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
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::tg {

/// Bytes as a person reads them: "21.67 MB", "532.4 kB" (powers of 1000).
std::string formatBytes(int64_t bytes);

/// What one stage of a pipelined module (split, scheduled and planned:
/// tg-pipeline-split, tg-pipeline-schedule, tg-plan-memory) holds on its
/// device: the parameters, optimizer state and gradient sums its functions
/// read (each tensor once), its slots' buffers under the schedule, and the
/// largest arena among its functions.
struct StageMemory {
  int64_t params = 0, state = 0, sums = 0, slots = 0, arena = 0;
  /// The most bytes live at once in any of its functions.
  int64_t arenaBound = 0;
  int64_t numParams = 0, numState = 0, numSums = 0;
  /// Slot buffers, the slots that have any, and the most micro-batches one
  /// slot keeps at once.
  int64_t buffers = 0, usedSlots = 0, held = 0;
  /// The function whose arena is the largest.
  StringRef largest;

  int64_t arguments() const { return params + state + sums; }
  int64_t peak() const { return arguments() + slots + arena; }
  int64_t lowerBound() const { return arguments() + slots + arenaBound; }
};

/// Each stage's StageMemory, or an error that says what is missing.
llvm::Expected<std::vector<StageMemory>> stageMemoryOf(ModuleOp module);

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

//===- PipelineTables.h - A pipelined step's functions and tables -*- C++
//-*-===//
//
// Both emitters write a pipelined step (tg-pipeline-split,
// tg-pipeline-schedule) the same way: each chunk's F, B and W function (and
// its reduction of gradient sums, where it has one) and each stage's update as
// a step function `void NAME(tgc::StepIO &)` bound to StepIO by its arguments'
// and results' attributes, then the PipelineDesc tables of runtime/core/Model.h
// (kPipeline): the slots, the functions by chunk, the boundaries, each stage's
// actions and the slot buffers tg-pipeline-schedule planned. This file reads
// the schedule, checks it by playing it, binds the functions and writes the
// tables; the emitter writes each function's body.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_PIPELINETABLES_H
#define TGC_COMPILER_CODEGEN_PIPELINETABLES_H

#include "compiler/codegen/ModelDescription.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tg {

/// What one result of a pipelined function writes.
struct PipelineResult {
  enum Kind {
    Slot,    ///< io.slots[index]
    Metric,  ///< io.<field>: "loss", "gradNorm" or "lr"
    Grad,    ///< added into io.grads[index] (the runtime zeroes the sums)
    Param,   ///< io.params[index] (an update)
    State,   ///< io.state[index] (an update)
    Reduced, ///< io.grads[index]: the sum reduced (a chunk's reduce)
  } kind;
  int64_t index = 0;
  StringRef field;
  /// The StepIO buffer a Slot, Grad, Param or State result writes
  /// ("io.slots[2]").
  std::string target() const;
};

/// One function of a pipelined step, bound to StepIO.
struct PipelineFunction {
  mutable func::FuncOp func;
  /// "forward", "backward", "weight", "reduce" or "update"
  StringRef kind;
  int64_t stage = 0;
  /// Each argument's buffer ("io.params[0]", "io.inputs[1]",
  /// "io.slots[2]", "io.grads[3]") or scalar's address (`scalars` then
  /// "step", "baseLr" or "microBatches").
  SmallVector<std::string> arguments;
  SmallVector<PipelineResult> results;
};

/// Reads and checks the pipelined `module`'s schedule, calls `emitFunction`
/// for each of its functions (which writes `void NAME(tgc::StepIO &io)`,
/// NAME the function's symbol), then writes the PipelineDesc kPipeline to
/// `tables`. `backend` ("cpu backend") prefixes the diagnostics.
LogicalResult emitPipeline(
    ModuleOp module, const StepSignature &sig, StringRef backend,
    StringRef scalars,
    llvm::function_ref<LogicalResult(const PipelineFunction &)> emitFunction,
    llvm::raw_ostream &tables);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_PIPELINETABLES_H

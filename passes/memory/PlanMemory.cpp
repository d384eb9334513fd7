//===- PlanMemory.cpp - Arena offsets for every buffer ----------*- C++ -*-===//
//
// The buffers and their lives from StepLiveness, their offsets from
// placeBuffers (Placement.h), written into the IR.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Liveness.h"
#include "passes/memory/Passes.h"
#include "passes/memory/Placement.h"

#include "dialects/tg/IR/TgOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/memory/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct PlanMemoryPass : public tg::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("tg-plan-memory: @")
          << func.getName() << " must have a single block";
      return signalPassFailure();
    }
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      // The option's value: the Option itself streams as nothing.
      func.emitError("tg-plan-memory: alignment must be a power of two, got ")
          << (int64_t)alignment;
      return signalPassFailure();
    }
    MemoryRules rules;
    rules.alignment = alignment;
    rules.attentionStatistics = attentionStatistics;
    StepLiveness live = StepLiveness::analyze(func, rules);
    ArenaPlacement placement = placeBuffers(live.buffers, live.ops.size());

    MLIRContext *ctx = func.getContext();
    auto span = [&](unsigned buffer) {
      return SpanAttr::get(ctx, placement.offsets[buffer],
                           live.buffers[buffer].bytes);
    };
    for (Operation *op : live.ops) {
      if (auto it = live.bucketOf.find(op); it != live.bucketOf.end()) {
        op->setAttr(TgDialect::kBucketSpanAttr, span(it->second));
        ++numBuckets;
      }
      if (auto it = live.scratchOf.find(op); it != live.scratchOf.end())
        op->setAttr(TgDialect::kScratchAttr, span(it->second));
      // A constant is a literal of the code or in the module's constants
      // section (tg-place-constants), never in the arena.
      if (op->getNumResults() == 0 || isa<ConstantOp>(op))
        continue;
      SmallVector<ResultPlace> places;
      for (OpResult r : op->getResults()) {
        if (auto it = live.slotOf.find(r); it != live.slotOf.end()) {
          places.push_back(ResultPlace::arena(
              placement.offsets[it->second.buffer] + it->second.offset));
          ++numBuffers;
          continue;
        }
        // StepLiveness gives every result of an op other than a constant
        // bytes of its own unless it views an operand.
        Value viewed = viewedOperand(r);
        places.push_back(ResultPlace::view(
            llvm::find(op->getOperands(), viewed) - op->operand_begin()));
        ++numViews;
      }
      op->setAttr(TgDialect::kPlaceAttr, PlaceAttr::get(ctx, places));
    }
    func->setAttr(
        TgDialect::kArenaAttr,
        ArenaAttr::get(ctx, placement.peak, live.liveBound, alignment));
  }
};

} // namespace

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

    Builder builder(func.getContext());
    auto span = [&](unsigned buffer) {
      return builder.getDenseI64ArrayAttr(
          {placement.offsets[buffer], live.buffers[buffer].bytes});
    };
    for (Operation *op : live.ops) {
      if (auto it = live.bucketOf.find(op); it != live.bucketOf.end()) {
        op->setAttr(TgDialect::kBucketSpanAttr, span(it->second));
        ++numBuckets;
      }
      if (auto it = live.scratchOf.find(op); it != live.scratchOf.end())
        op->setAttr(TgDialect::kScratchAttr, span(it->second));
      if (op->getNumResults() == 0)
        continue;
      SmallVector<int64_t> offsets, views;
      bool anyView = false;
      for (OpResult r : op->getResults()) {
        auto it = live.slotOf.find(r);
        int64_t offset = -1, view = -1;
        if (it != live.slotOf.end()) {
          offset = placement.offsets[it->second.buffer] + it->second.offset;
          ++numBuffers;
        } else if (Value viewed = viewedOperand(r)) {
          for (OpOperand &operand : op->getOpOperands())
            if (operand.get() == viewed) {
              view = operand.getOperandNumber();
              break;
            }
          anyView = true;
          ++numViews;
        }
        offsets.push_back(offset);
        views.push_back(view);
      }
      op->setAttr(TgDialect::kOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
      if (anyView)
        op->setAttr(TgDialect::kViewsAttr, builder.getDenseI64ArrayAttr(views));
    }
    func->setAttr(TgDialect::kArenaAttr,
                  ArenaAttr::get(builder.getContext(), placement.peak,
                                 live.liveBound, alignment));
  }
};

} // namespace

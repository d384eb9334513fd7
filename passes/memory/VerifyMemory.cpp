//===- VerifyMemory.cpp - No two live buffers share bytes ----------*- C++ -*-===//
//
// Sweeps the buffers in the order they are defined, keeping the live ones
// ordered by offset: a new buffer only has to be checked against its
// neighbours there. O(n log n).
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Liveness.h"
#include "passes/memory/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include <map>
#include <queue>

namespace mlir::tg {
#define GEN_PASS_DEF_VERIFYMEMORYPASS
#include "passes/memory/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct VerifyMemoryPass
    : public tg::impl::VerifyMemoryPassBase<VerifyMemoryPass> {
  using VerifyMemoryPassBase::VerifyMemoryPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    auto arenaAttr = func->getAttrOfType<IntegerAttr>(TgDialect::kArenaBytesAttr);
    if (!arenaAttr) {
      func.emitError("tg-verify-memory: @")
          << func.getName() << " has no memory plan (run tg-plan-memory)";
      return signalPassFailure();
    }
    int64_t arenaBytes = arenaAttr.getInt();
    StepLiveness live = StepLiveness::analyze(func);
    SmallVector<int64_t> offsets(live.buffers.size());
    for (auto [i, b] : llvm::enumerate(live.buffers)) {
      auto r = cast<OpResult>(b.value);
      auto planned =
          r.getOwner()->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kOffsetsAttr);
      if (!planned || planned.size() != r.getOwner()->getNumResults() ||
          planned[r.getResultNumber()] < 0) {
        r.getOwner()->emitError("tg-verify-memory: result ")
            << r.getResultNumber() << " needs arena memory but has no offset";
        return signalPassFailure();
      }
      offsets[i] = planned[r.getResultNumber()];
      if (offsets[i] % kArenaAlignment != 0 ||
          offsets[i] + b.bytes > arenaBytes) {
        r.getOwner()->emitError("tg-verify-memory: result ")
            << r.getResultNumber() << " at bytes [" << offsets[i] << ", "
            << offsets[i] + b.bytes << ") is misaligned or outside the arena of "
            << arenaBytes << " bytes";
        return signalPassFailure();
      }
    }

    // Buffers are listed in the order they are defined.
    std::map<int64_t, unsigned> liveByOffset;
    using Expiry = std::pair<int64_t, unsigned>; // (last use, buffer)
    std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>>
        expiries;
    auto clash = [&](unsigned a, unsigned b) {
      InFlightDiagnostic diag =
          b < live.buffers.size()
              ? live.buffers[b].value.getDefiningOp()->emitError(
                    "tg-verify-memory: this result's bytes [")
              : func.emitError();
      diag << offsets[b] << ", " << offsets[b] + live.buffers[b].bytes
           << ") overlap those of a buffer live at the same time, at ["
           << offsets[a] << ", " << offsets[a] + live.buffers[a].bytes << ")";
      diag.attachNote(live.buffers[a].value.getLoc()) << "the other buffer";
      signalPassFailure();
    };
    for (auto [i, b] : llvm::enumerate(live.buffers)) {
      while (!expiries.empty() && expiries.top().first < b.def) {
        liveByOffset.erase(offsets[expiries.top().second]);
        expiries.pop();
      }
      auto next = liveByOffset.lower_bound(offsets[i]);
      if (next != liveByOffset.end() &&
          next->first < offsets[i] + b.bytes)
        return clash(next->second, i);
      if (next != liveByOffset.begin()) {
        auto prev = std::prev(next);
        if (offsets[prev->second] + live.buffers[prev->second].bytes >
            offsets[i])
          return clash(prev->second, i);
      }
      liveByOffset[offsets[i]] = i;
      expiries.push({b.lastUse, (unsigned)i});
    }
  }
};

} // namespace

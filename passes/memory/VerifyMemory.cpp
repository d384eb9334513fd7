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
    auto arenaAttr = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
    if (!arenaAttr) {
      func.emitError("tg-verify-memory: @")
          << func.getName() << " has no memory plan (run tg-plan-memory)";
      return signalPassFailure();
    }
    int64_t arenaBytes = arenaAttr.getBytes();
    MemoryRules rules = MemoryRules::of(func);
    StepLiveness live = StepLiveness::analyze(func, rules);

    // Each value's planned offset, -1 where it has none.
    auto plannedOffset = [](Value v) -> int64_t {
      auto r = dyn_cast<OpResult>(v);
      PlaceAttr place = r ? placeOf(r.getOwner()) : nullptr;
      return place ? place.arenaOffset(r.getResultNumber()).value_or(-1) : -1;
    };
    SmallVector<int64_t> offsets(live.buffers.size());
    for (auto [i, b] : llvm::enumerate(live.buffers)) {
      if (b.value) {
        offsets[i] = plannedOffset(b.value);
        if (offsets[i] < 0) {
          b.owner->emitError("tg-verify-memory: result ")
              << cast<OpResult>(b.value).getResultNumber()
              << " needs arena memory but has no offset";
          return signalPassFailure();
        }
      } else {
        bool bucket = live.bucketOf.count(b.owner);
        StringRef attr =
            bucket ? TgDialect::kBucketSpanAttr : TgDialect::kScratchAttr;
        auto span = b.owner->getAttrOfType<SpanAttr>(attr);
        if (!span || span.getBytes() != b.bytes) {
          b.owner->emitError("tg-verify-memory: no ")
              << attr << " of " << b.bytes << " bytes for its "
              << (bucket ? "bucket" : "statistics");
          return signalPassFailure();
        }
        offsets[i] = span.getOffset();
      }
      if (offsets[i] % rules.alignment != 0 ||
          offsets[i] + b.bytes > arenaBytes) {
        b.owner->emitError("tg-verify-memory: bytes [")
            << offsets[i] << ", " << offsets[i] + b.bytes
            << ") are misaligned or outside the arena of " << arenaBytes
            << " bytes";
        return signalPassFailure();
      }
    }
    // A bucket's gradients side by side, as one message.
    for (auto [v, slot] : live.slotOf) {
      int64_t planned = plannedOffset(v);
      if (planned != offsets[slot.buffer] + slot.offset) {
        v.getDefiningOp()->emitError("tg-verify-memory: result ")
            << cast<OpResult>(v).getResultNumber() << " is planned at "
            << planned << ", not at byte " << slot.offset
            << " of its all-reduce bucket at " << offsets[slot.buffer];
        return signalPassFailure();
      }
    }

    // Buffers are listed in the order they are defined.
    std::map<int64_t, unsigned> liveByOffset;
    using Expiry = std::pair<int64_t, unsigned>; // (last use, buffer)
    std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>>
        expiries;
    auto clash = [&](unsigned a, unsigned b) {
      InFlightDiagnostic diag = live.buffers[b].owner->emitError(
          "tg-verify-memory: this op's bytes [");
      diag << offsets[b] << ", " << offsets[b] + live.buffers[b].bytes
           << ") overlap those of a buffer live at the same time, at ["
           << offsets[a] << ", " << offsets[a] + live.buffers[a].bytes << ")";
      diag.attachNote(live.buffers[a].owner->getLoc()) << "the other buffer";
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

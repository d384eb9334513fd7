//===- ArenaPlan.cpp - Static arena placement by liveness ---------*- C++ -*-===//
//
// A linear scan over the ops in order with first-fit placement. An op's
// results are placed before its operands' bytes are released, so no kernel
// writes over its own inputs.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/ArenaPlan.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;

namespace {
constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

/// Live byte ranges, by offset.
class FreeList {
public:
  int64_t allocate(int64_t bytes) {
    bytes = alignUp(std::max<int64_t>(bytes, 1));
    int64_t offset = 0;
    for (auto [start, size] : live) {
      if (start - offset >= bytes)
        break;
      offset = std::max(offset, start + size);
    }
    live[offset] = bytes;
    peak = std::max(peak, offset + bytes);
    return offset;
  }
  void release(int64_t offset) { live.erase(offset); }
  int64_t peak = 0;

private:
  std::map<int64_t, int64_t> live;
};
} // namespace

ArenaPlan mlir::tg::planArena(func::FuncOp func,
                              llvm::function_ref<Value(OpResult)> aliasOf,
                              llvm::function_ref<bool(Value)> needsArena,
                              llvm::function_ref<int64_t(Value)> bytesOf) {
  ArenaPlan plan;
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> order;
  int64_t index = 0;
  for (Operation &op : block) {
    order[&op] = index++;
    for (OpResult r : op.getResults())
      if (Value a = aliasOf(r))
        plan.aliases[r] = a;
  }

  // The last op that reads each buffer, through any of its views. Returned
  // values live to the end.
  DenseMap<Value, int64_t> lastUse;
  auto touch = [&](Value v, int64_t at) {
    Value r = plan.root(v);
    lastUse[r] = std::max(lastUse.lookup(r), at);
  };
  for (Operation &op : block)
    for (Value v : op.getOperands())
      touch(v, op.hasTrait<OpTrait::IsTerminator>() ? index : order[&op]);
  for (auto [view, base] : plan.aliases)
    touch(base, lastUse.lookup(view));

  FreeList arena;
  std::multimap<int64_t, Value> releases;
  for (Operation &op : block) {
    int64_t at = order[&op];
    for (OpResult r : op.getResults()) {
      if (plan.aliases.count(r) || !needsArena(r))
        continue;
      plan.offsets[r] = arena.allocate(bytesOf(r));
      // A result nobody reads is released right after its op.
      releases.insert({std::max(lastUse.lookup(r), at), r});
    }
    auto [begin, end] = releases.equal_range(at);
    for (auto it = begin; it != end; ++it)
      arena.release(plan.offsets[it->second]);
    releases.erase(begin, end);
  }
  plan.peakBytes = arena.peak;
  return plan;
}

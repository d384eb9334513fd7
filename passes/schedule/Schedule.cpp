//===- Schedule.cpp - Kernel order and all-reduce buckets ---------*- C++
//-*-===//
//
// tg-schedule decides when the pieces of a step run: gradient chains move up
// to their producers, each gradient all-reduce is cut into buckets placed
// where their last gradient is ready, and a tg.await before the first reader
// of a bucket says where the step waits for it. The block order is the schedule
// the backends print.
//
//===----------------------------------------------------------------------===//

#include "passes/schedule/Passes.h"

#include "dialects/tg/IR/TgOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "passes/schedule/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Bytes of a tensor value, padded to 256 as a bucket buffer lays its
/// members out.
int64_t paddedBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t bytes =
      type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  return (bytes + 255) / 256 * 256;
}

/// Elementwise work a gradient chain is made of.
bool isElementwiseWork(Operation *op) {
  if (auto kernel = dyn_cast<KernelOp>(op))
    return kernel.getKind() == KernelKind::elementwise;
  return isElementwiseOp(op);
}

//===----------------------------------------------------------------------===//
// Gradient chains
//===----------------------------------------------------------------------===//

/// Where `v` may be read from: after its producer, or for a bucket's
/// result after the bucket's tg.await.
Operation *readyAfter(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto reduce = dyn_cast_or_null<AllReduceOp>(def);
      reduce && reduce.getBucket())
    for (Operation *user : reduce->getUsers())
      if (isa<AwaitOp>(user))
        return user;
  return def;
}

/// Moves every elementwise op whose results only feed all-reduces (directly
/// or through other such ops) to just after the producer of its last
/// operand (a bucket's tg.await for a bucket's result), or to the top when it
/// reads arguments only. Returns how many moved.
unsigned hoistGradientChains(Block &block) {
  // Backwards, so a chain's later ops are decided before its earlier ones.
  DenseSet<Operation *> feeds;
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (!isElementwiseWork(&op) || op.getNumResults() == 0)
      continue;
    bool onlyReductions = llvm::all_of(op.getResults(), [&](Value r) {
      return !r.use_empty() && llvm::all_of(r.getUsers(), [&](Operation *u) {
        return isa<AllReduceOp>(u) || feeds.contains(u);
      });
    });
    if (onlyReductions)
      feeds.insert(&op);
  }
  // Forwards: a chain's ops land in order after their producer, and after
  // anything already moved there. Positions are kept here, with room
  // between them for the ops moved in: MLIR's own order would be recomputed
  // over the whole block after nearly every move (quadratic in depth).
  constexpr uint64_t kStride = 1ull << 20;
  DenseMap<Operation *, uint64_t> position;
  auto renumber = [&] {
    uint64_t at = kStride;
    for (Operation &op : block) {
      position[&op] = at;
      at += kStride;
    }
  };
  renumber();
  // Places `op`'s position between its new neighbours.
  auto placed = [&](Operation *op) {
    Operation *prev = op->getPrevNode(), *next = op->getNextNode();
    uint64_t lo = prev ? position[prev] : 0, hi = position[next];
    if (hi - lo < 2)
      return renumber();
    position[op] = lo + (hi - lo) / 2;
  };
  DenseMap<Operation *, Operation *> lastPlacedAfter;
  unsigned moved = 0;
  for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
    if (!feeds.contains(&op))
      continue;
    Operation *producer = nullptr;
    for (Value v : op.getOperands()) {
      Operation *def = readyAfter(v);
      if (def && def->getBlock() == &block &&
          (!producer || position[producer] < position[def]))
        producer = def;
    }
    // An op of arguments alone (the micro-batch count's cast) goes to the
    // top, so the chains that read it can move up too.
    Operation *&anchor = lastPlacedAfter[producer];
    if (!anchor && !producer) {
      if (&op != &block.front()) {
        op.moveBefore(&block.front());
        placed(&op);
        ++moved;
      }
    } else {
      Operation *after = anchor ? anchor : producer;
      if (after->getNextNode() != &op) {
        op.moveAfter(after);
        placed(&op);
        ++moved;
      }
    }
    anchor = &op;
  }
  return moved;
}

//===----------------------------------------------------------------------===//
// Buckets
//===----------------------------------------------------------------------===//

struct Bucket {
  SmallVector<unsigned> members; ///< operand numbers of the all-reduce
  int64_t bytes = 0;
  Type elementType;
  /// The op after which every member exists (null: all are arguments).
  Operation *ready = nullptr;
};

/// Splits `reduce` into buckets numbered from `next`, each a tg.all_reduce
/// right after its last gradient's producer. Returns the new ops.
SmallVector<AllReduceOp> splitIntoBuckets(AllReduceOp reduce,
                                          int64_t bucketBytes, int64_t &next) {
  Block *block = reduce->getBlock();
  auto producerOf = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    return def ? block->findAncestorOpInBlock(*def) : nullptr;
  };
  auto before = [](Operation *a, Operation *b) {
    if (!a || !b)
      return !a && b;
    return a->isBeforeInBlock(b);
  };
  // The inputs in the order the step produces them.
  SmallVector<unsigned> order =
      llvm::to_vector(llvm::seq<unsigned>(0, reduce.getInputs().size()));
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return before(producerOf(reduce.getInputs()[a]),
                  producerOf(reduce.getInputs()[b]));
  });
  SmallVector<Bucket> buckets;
  for (unsigned i : order) {
    Value v = reduce.getInputs()[i];
    Type elementType = cast<RankedTensorType>(v.getType()).getElementType();
    if (buckets.empty() || buckets.back().bytes >= bucketBytes ||
        buckets.back().elementType != elementType)
      buckets.emplace_back();
    Bucket &b = buckets.back();
    b.members.push_back(i);
    b.bytes += paddedBytes(v);
    b.elementType = elementType;
    if (Operation *p = producerOf(v); before(b.ready, p))
      b.ready = p;
  }

  SmallVector<AllReduceOp> formed;
  OpBuilder builder(reduce.getContext());
  Operation *previous = nullptr;
  for (Bucket &b : buckets) {
    // Buckets go in ready order; two ready at once keep that order.
    Operation *after = before(b.ready, previous) || b.ready == previous
                           ? previous
                           : b.ready;
    if (after)
      builder.setInsertionPointAfter(after);
    else
      builder.setInsertionPointToStart(block);
    SmallVector<Value> inputs;
    for (unsigned m : b.members)
      inputs.push_back(reduce.getInputs()[m]);
    auto bucket = AllReduceOp::create(builder, reduce.getLoc(), inputs,
                                      reduce.getReductionAttr(),
                                      reduce.getMeshAxisAttr(),
                                      builder.getI64IntegerAttr(next++));
    setLayer(bucket, layerOf(reduce));
    for (auto [m, result] : llvm::zip(b.members, bucket.getResults()))
      reduce.getResults()[m].replaceAllUsesWith(result);
    // Why tg-partition reduces these values stays with them.
    if (Attribute why = reduce->getAttr("tg.reshard"))
      bucket->setAttr("tg.reshard", why);
    formed.push_back(bucket);
    previous = bucket;
  }
  reduce.erase();
  return formed;
}

/// Places each bucket's tg.await right before the first op that reads its
/// results (before the return when nothing does); an op that reads several
/// buckets waits for them in bucket order.
void placeAwaits(Block &block, ArrayRef<AllReduceOp> buckets) {
  llvm::MapVector<Operation *, SmallVector<AllReduceOp>> waitsBefore;
  for (AllReduceOp bucket : buckets) {
    Operation *first = nullptr;
    for (Operation *user : bucket->getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (top && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    waitsBefore[first ? first : block.getTerminator()].push_back(bucket);
  }
  for (auto &[reader, list] : waitsBefore) {
    llvm::sort(list, [](AllReduceOp a, AllReduceOp b) {
      return *a.getBucket() < *b.getBucket();
    });
    OpBuilder builder(reader);
    for (AllReduceOp bucket : list)
      AwaitOp::create(builder, bucket.getLoc(), bucket.getResults());
  }
}

} // namespace

ScheduleStats mlir::tg::scheduleStep(func::FuncOp func, int64_t bucketBytes) {
  ScheduleStats stats;
  if (!func.getBody().hasOneBlock())
    return stats;
  Block &block = func.getBody().front();

  stats.hoisted = hoistGradientChains(block);

  // Bucket numbers continue after any the function already has.
  int64_t next = 0;
  SmallVector<AllReduceOp> unbucketed;
  block.walk([&](AllReduceOp reduce) {
    if (auto b = reduce.getBucket())
      next = std::max<int64_t>(next, *b + 1);
    else if (reduce->getBlock() == &block)
      unbucketed.push_back(reduce);
  });
  SmallVector<AllReduceOp> formed;
  for (AllReduceOp reduce : unbucketed)
    llvm::append_range(formed, splitIntoBuckets(reduce, bucketBytes, next));
  stats.buckets = formed.size();
  placeAwaits(block, formed);
  return stats;
}

namespace {

struct SchedulePass : public tg::impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (bucketBytes < 0) {
      func.emitError("tg-schedule: bucket-bytes must be 0 or more, got ")
          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    ScheduleStats stats = scheduleStep(func, bucketBytes);
    numHoisted += stats.hoisted;
    numBuckets += stats.buckets;
  }
};

} // namespace

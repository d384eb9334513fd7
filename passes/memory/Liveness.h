//===- Liveness.h - The buffers of a step function and their lives -*- C++ -*-===//
//
// What the memory stage plans and checks, and what `tgc --report=memory`
// prints: which values own a buffer, which only view an operand's, how many
// bytes each takes and from which op to which op it lives. Two kinds of
// buffer hold no single value: an all-reduce bucket (its gradients side by
// side, one message) and the statistics a backend's attention keeps for
// its gradient.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORY_LIVENESS_H
#define TGC_PASSES_MEMORY_LIVENESS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tg {

/// What a backend needs of the arena beyond the IR's values.
struct MemoryRules {
  /// Offsets and sizes are multiples of this (64: a cache line, for the
  /// C++ backend's vector loops; 256: cuBLASLt's fastest kernels).
  int64_t alignment = 64;
  /// tg.attention keeps its output and its rows' log-sum-exp (f32, one per
  /// query row) for the tg.attention_grad on the same operands, which reads
  /// them instead of recomputing the softmax (the CUDA backend).
  bool attentionStatistics = false;

  /// The rules a planned function was planned with (its
  /// #tg.arena's alignment, and whether an attention holds tg.scratch).
  static MemoryRules of(func::FuncOp func);
};

/// The operand a result shares its memory with, or null when it needs its
/// own: a reshape's input; an all_reduce's input it reduces in place (an
/// op's result nothing else reads); an optimizer update's old parameter or
/// state; the logits a classifier kernel overwrites with their gradient
/// (when nothing else reads them); an optimizer kernel's old parameter or
/// state.
Value viewedOperand(OpResult result);

/// Where an all-reduce's operand travels: its input itself when reduced in
/// place, else its result (the input is copied in).
Value bucketSlot(Operation *allReduce, unsigned operand);

/// One buffer and its life: positions (in StepLiveness::ops) of the op that
/// takes it and of its last reader through any view; returned values live
/// to the terminator. `value` owns it, or is null for a bucket or a
/// scratch buffer, whose op is `owner`.
struct Buffer {
  Value value;
  Operation *owner;
  int64_t bytes;
  int64_t def, lastUse;
};

/// Where a value's bytes are: a buffer and the offset inside it (non-zero
/// for the gradients of a bucket after the first).
struct Slot {
  unsigned buffer;
  int64_t offset = 0;
};

struct StepLiveness {
  MemoryRules rules;
  /// The function's top-level ops in order, the terminator last; not the
  /// tg.awaits, which take no time (each reads at the next op's position).
  SmallVector<Operation *> ops;
  /// In the order they are taken (by `def`).
  SmallVector<Buffer> buffers;
  /// The slot of each value that has bytes of its own (not a view).
  DenseMap<Value, Slot> slotOf;
  /// The bucket buffer of each tg.all_reduce, the scratch buffer of each
  /// tg.attention that keeps statistics.
  DenseMap<Operation *, unsigned> bucketOf, scratchOf;
  /// Bytes live while each op runs (its results and everything still to be
  /// read), and their maximum: the lower bound of any arena.
  SmallVector<int64_t> liveBytes;
  int64_t liveBound = 0;

  /// The value whose slot `v` uses (itself when it has one).
  Value root(Value v) const;
  int64_t aligned(int64_t bytes) const {
    return (bytes + rules.alignment - 1) / rules.alignment * rules.alignment;
  }

  static StepLiveness analyze(func::FuncOp func, const MemoryRules &rules);
};

} // namespace mlir::tg

#endif // TGC_PASSES_MEMORY_LIVENESS_H

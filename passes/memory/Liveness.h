//===- Liveness.h - The buffers of a step function and their lives -*- C++ -*-===//
//
// What the memory stage plans and checks, and what `tgc --report=memory`
// prints: which values own a buffer, which only view an operand's, how many
// bytes each takes and from which op to which op it lives.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORY_LIVENESS_H
#define TGC_PASSES_MEMORY_LIVENESS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tg {

/// Arena offsets are multiples of this.
constexpr int64_t kArenaAlignment = 64;

/// The operand a result shares its memory with (a reshape's input, an
/// all_reduce's input nothing else reads, an optimizer update's old
/// parameter or state), or null when it needs its own.
Value viewedOperand(OpResult result);

/// One buffer: the value that owns it, its bytes (aligned), and the
/// positions (in StepLiveness::ops) of its defining op and its last reader
/// through any view; returned values live to the terminator.
struct Buffer {
  Value value;
  int64_t bytes;
  int64_t def, lastUse;
};

struct StepLiveness {
  /// The function's top-level ops in order, the terminator last.
  SmallVector<Operation *> ops;
  SmallVector<Buffer> buffers;
  /// The buffer each owning value has, by index into `buffers`.
  DenseMap<Value, unsigned> bufferOf;
  /// Bytes live while each op runs (its results and everything still to be
  /// read), and their maximum: the lower bound of any arena.
  SmallVector<int64_t> liveBytes;
  int64_t liveBound = 0;

  /// The value whose buffer `v` uses (itself when it owns one).
  Value root(Value v) const;

  static StepLiveness analyze(func::FuncOp func);
};

} // namespace mlir::tg

#endif // TGC_PASSES_MEMORY_LIVENESS_H

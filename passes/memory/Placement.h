//===- Placement.h - Offsets for buffers with known lives -------*- C++ -*-===//
//
// The arena placement of tg-plan-memory, apart from the IR so that it can
// be tested on lives made up for the purpose (test/unit/memory).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORY_PLACEMENT_H
#define TGC_PASSES_MEMORY_PLACEMENT_H

#include "passes/memory/Liveness.h"

namespace mlir::tg {

/// An offset per buffer, and the arena's size they need.
struct ArenaPlacement {
  SmallVector<int64_t> offsets;
  int64_t peak = 0;
};

/// Best fit in op order over `numPositions` positions; `buffers` are listed
/// by `def`, their sizes already aligned (offsets stay multiples of the
/// alignment).
ArenaPlacement placeInOrder(ArrayRef<Buffer> buffers, size_t numPositions);
/// Greedily in four orders (largest, biggest area, longest-lived, last to
/// die first), each buffer in the smallest gap that holds it among the
/// placed buffers whose lives overlap its own; the tightest of the four.
ArenaPlacement placeBySize(ArrayRef<Buffer> buffers);
/// The smaller peak of the two (by size only up to a thousand buffers: it
/// is quadratic). Buffers whose lives overlap never share a byte, and a
/// buffer's life includes the positions of its def and its last use.
ArenaPlacement placeBuffers(ArrayRef<Buffer> buffers, size_t numPositions);

} // namespace mlir::tg

#endif // TGC_PASSES_MEMORY_PLACEMENT_H

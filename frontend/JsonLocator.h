//===- JsonLocator.h - Where each value of a JSON text starts ---*- C++ -*-===//
//
// FlatBuffers' JSON parser turns text into a buffer and forgets where things
// were; diagnostics about a node or a parameter should still point at its line.
// JsonLocator rescans the text (after the parser accepted it) and records the
// line and column of every value under its path: "nodes[3]",
// "nodes[3].inputs[1]", "training.optimizer.kind". Of an array's scalars only
// the first 64 get their own (a path past them finds its array).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_JSONLOCATOR_H
#define TGC_FRONTEND_JSONLOCATOR_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <utility>

namespace mlir::tg {

class JsonLocator {
public:
  /// A 1-based line and column.
  using Position = std::pair<unsigned, unsigned>;

  /// Scans `text` in the JSON dialect FlatBuffers reads (unquoted keys and
  /// enum names, single or double quotes, `//` and `/* */` comments). Text it
  /// cannot follow ends the scan; what was seen until then stays recorded.
  explicit JsonLocator(llvm::StringRef text);

  /// Where the value at `path` starts, if the scan saw it.
  std::optional<Position> find(llvm::StringRef path) const;

private:
  llvm::StringMap<Position> positions;
};

} // namespace mlir::tg

#endif // TGC_FRONTEND_JSONLOCATOR_H

//===- JsonWriter.h - Model files as readable JSON --------------*- C++ -*-===//
//
// Writes a FlatBuffers table as JSON text by walking the schema, in the layout
// of the example model files (examples/gen_gpt2.py): one top-level key per
// line, one parameter, input or node per line, one training key per line.
// flatc's own text generator puts every vector element on a line of its own,
// which turns a GPT-2 into tens of thousands of lines.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_JSONWRITER_H
#define TGC_FRONTEND_JSONWRITER_H

#include "llvm/Support/raw_ostream.h"

namespace flatbuffers {
class Table;
struct StructDef;
} // namespace flatbuffers

namespace mlir::tg {

/// Writes `root`, a verified table of type `def`, as JSON that FlatBuffers'
/// parser reads back to the same fields. Only fields the buffer holds are
/// written. Non-finite doubles are written as `nan`, `inf` and `-inf`, which
/// FlatBuffers reads although strict JSON has no spelling for them.
void writeTableAsJson(const flatbuffers::Table &root,
                      const flatbuffers::StructDef &def, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_FRONTEND_JSONWRITER_H

//===- ModelFile.h - Model files to tg IR and back --------------*- C++ -*-===//
//
// The model file format is frontend/schema/model.fbs. Two encodings hold the
// same data: binary `.tgm` (FlatBuffers, file identifier "TGM1", checked with
// the FlatBuffers verifier before anything reads it) and its JSON text form
// (`.json`, parsed against the schema). Import builds a module with
// `func.func @forward(params..., inputs...) -> (loss, outputs...)` and the
// module attributes `tg.model` and `tg.training`, as TgDialect.td describes;
// export writes such a module back as a model file.
//
// Every error is a diagnostic that names the file and the place in it (the
// JSON path or node name, "nodes[3] 'fc1' (matmul)"); no input, however
// broken, crashes or hangs the importer.
//
// README.md in this folder states what an import guarantees: argument order,
// the keys of tg.training, how dims named "batch" and "seq" follow the
// training table, and the locations (NameLoc of the node around the
// FileLineColLoc of its JSON text).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_MODELFILE_H
#define TGC_FRONTEND_MODELFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::tg {

enum class ModelFileFormat { Json, Binary };

/// What a caller may choose in place of the model file.
struct ImportOptions {
  /// The micro-batch: dims named "batch" take it whatever the file says,
  /// and the training table's batch_size says it (tgc --batch-size).
  std::optional<int64_t> batchSize;
  /// The device mesh (tgc --mesh), replacing the training table's `mesh`:
  /// named axes with sizes. The batch dims then hold the micro-batch of
  /// every data replica (axes named "data" or "dp"): micro-batch x their
  /// sizes, which tg-partition splits back.
  std::optional<llvm::SmallVector<std::pair<std::string, int64_t>>> mesh;
  /// The mesh axis that takes its size from the process count at launch
  /// (tgc --mesh=data=auto; tg.mesh's `elastic`), "" for none. Its size in
  /// `mesh` is the one the plan is priced for.
  std::string elasticAxis;
};

/// The encoding of `path`: by extension (".json", ".tgm"), else by content
/// (the "TGM1" identifier at offset 4 means binary).
ModelFileFormat guessModelFileFormat(llvm::StringRef path,
                                     llvm::StringRef contents);

/// Imports a model from the bytes of a file named `path` (used only in
/// diagnostics and to resolve relative paths such as initializer files).
/// Returns null after emitting diagnostics on `context`'s handler.
OwningOpRef<ModuleOp> importModel(llvm::StringRef path,
                                  llvm::StringRef contents,
                                  ModelFileFormat format, MLIRContext *context,
                                  const ImportOptions &options = {});

/// Reads `path` and imports it; a missing or unreadable file is a diagnostic
/// too.
OwningOpRef<ModuleOp> importModelFile(llvm::StringRef path,
                                      MLIRContext *context,
                                      const ImportOptions &options = {});

/// Writes `module` (as importModel produces it: @forward with tg attributes)
/// as a model file in `format` to `os`; fails with a diagnostic on IR that a
/// model file cannot hold.
LogicalResult exportModel(ModuleOp module, ModelFileFormat format,
                          llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_FRONTEND_MODELFILE_H

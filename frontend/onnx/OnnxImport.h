//===- OnnxImport.h - ONNX models to tg IR ----------------------*- C++ -*-===//
//
// `tgc model.onnx` and `tg-translate --import-onnx`: the ONNX model is
// translated into a model file (OnnxTranslate.h says how) and imported as
// any model file is (ModelFile.h), so its IR, checks and diagnostics are
// those of a model file's. The parameters' initial values are written to a
// safetensors file, which the parameters' `tg.init` names.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_ONNX_ONNXIMPORT_H
#define TGC_FRONTEND_ONNX_ONNXIMPORT_H

#include "frontend/ModelFile.h"

#include <string>

namespace mlir::tg {

struct OnnxImportOptions {
  /// Where the parameters' values go ("": the model's path +
  /// ".safetensors").
  std::string weightsPath;
  /// "" (the graph computes its loss), "cross_entropy" or "mse", over the
  /// first output and the new batch input `labelInput`.
  std::string loss, labelInput;
  /// The training table, a JSON object in the model file's form.
  std::string trainingJson;
  /// When set, the translated model file is written here too.
  std::string modelOut;
  /// The mesh's data replicas, over which the exported batch is split.
  int64_t dataReplicas = 1;
};

/// Whether this build reads ONNX (libonnx-dev was found).
bool onnxImportAvailable();

/// True for a path ending in ".onnx".
bool isOnnxPath(llvm::StringRef path);

/// Translates the ONNX file at `path` and writes the model file
/// (`options.modelOut`, which must be set) and the weights; `batchSize`
/// fixes a dynamic batch dim. Failure after a diagnostic; `summary` says
/// what was translated.
LogicalResult translateOnnxFile(llvm::StringRef path, MLIRContext *context,
                                const OnnxImportOptions &options,
                                std::optional<int64_t> batchSize,
                                std::string *summary = nullptr);

/// Translates and imports the ONNX file at `path`; null after a diagnostic.
/// `importOptions.batchSize` fixes a dynamic batch dim.
OwningOpRef<ModuleOp> importOnnxFile(llvm::StringRef path, MLIRContext *context,
                                     const OnnxImportOptions &options,
                                     const ImportOptions &importOptions = {});

} // namespace mlir::tg

#endif // TGC_FRONTEND_ONNX_ONNXIMPORT_H

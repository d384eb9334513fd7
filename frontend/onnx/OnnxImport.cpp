//===- OnnxImport.cpp - ONNX models to tg IR --------------------*- C++ -*-===//

#include "frontend/onnx/OnnxImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#ifdef TGC_HAVE_ONNX
#include "frontend/onnx/OnnxTranslate.h"
#endif

using namespace mlir;
using namespace mlir::tg;

bool mlir::tg::onnxImportAvailable() {
#ifdef TGC_HAVE_ONNX
  return true;
#else
  return false;
#endif
}

bool mlir::tg::isOnnxPath(llvm::StringRef path) {
  return path.ends_with(".onnx");
}

/// The model file's JSON text, or none after a diagnostic.
static std::optional<std::string> translate(llvm::StringRef path,
                                            MLIRContext *context,
                                            const OnnxImportOptions &options,
                                            std::optional<int64_t> batchSize,
                                            std::string *summary) {
#ifndef TGC_HAVE_ONNX
  (void)options;
  (void)batchSize;
  (void)summary;
  emitError(FileLineColLoc::get(context, path, 0, 0))
      << "this tgc was built without ONNX support (install libonnx-dev, "
         "as scripts/setup.sh does, and rebuild)";
  return std::nullopt;
#else
  tgc::onnx::TranslateOptions translate;
  // The parameters' init names the weights by absolute path: later stages
  // need not know where the ONNX file was.
  llvm::SmallString<256> weights(options.weightsPath.empty()
                                     ? (path + ".safetensors").str()
                                     : options.weightsPath);
  llvm::sys::fs::make_absolute(weights);
  translate.weightsPath = weights.str().str();
  translate.loss = options.loss;
  translate.labelInput = options.labelInput;
  translate.trainingJson = options.trainingJson;
  translate.batchSize = batchSize.value_or(0);
  translate.dataReplicas = options.dataReplicas;
  tgc::onnx::Translation translation =
      tgc::onnx::translateOnnxFile(path.str(), translate);
  if (!translation.error.empty()) {
    // At the file when the message starts with it (as a binary model
    // file's errors are, file:0:0); a flag's error stands alone.
    llvm::StringRef message = translation.error;
    std::string prefix = (path + ": ").str();
    if (message.consume_front(prefix))
      emitError(FileLineColLoc::get(context, path, 0, 0)) << message;
    else
      emitError(UnknownLoc::get(context)) << message;
    return std::nullopt;
  }
  if (summary)
    *summary = std::to_string(translation.params) + " parameters (" +
               std::to_string(translation.paramBytes) + " bytes in " +
               translate.weightsPath + "), " +
               std::to_string(translation.nodes) + " ops, " +
               std::to_string(translation.constants) + " constants";
  return std::move(translation.modelJson);
#endif
}

/// The translated model file's text into `out`.
static LogicalResult writeModelFile(llvm::StringRef path, MLIRContext *context,
                                    llvm::StringRef out,
                                    const std::string &json) {
  std::error_code ec;
  llvm::raw_fd_ostream os(out, ec);
  if (ec)
    return emitError(FileLineColLoc::get(context, path, 0, 0))
           << "cannot write the translated model file " << out << ": "
           << ec.message();
  os << json << "\n";
  return success();
}

LogicalResult mlir::tg::translateOnnxFile(llvm::StringRef path,
                                          MLIRContext *context,
                                          const OnnxImportOptions &options,
                                          std::optional<int64_t> batchSize,
                                          std::string *summary) {
  std::optional<std::string> json =
      translate(path, context, options, batchSize, summary);
  return failure(
      !json || failed(writeModelFile(path, context, options.modelOut, *json)));
}

OwningOpRef<ModuleOp>
mlir::tg::importOnnxFile(llvm::StringRef path, MLIRContext *context,
                         const OnnxImportOptions &options,
                         const ImportOptions &importOptions) {
  std::optional<std::string> json =
      translate(path, context, options, importOptions.batchSize, nullptr);
  if (!json || (!options.modelOut.empty() &&
                failed(writeModelFile(path, context, options.modelOut, *json))))
    return nullptr;
  // Imported as a model file: its diagnostics name the translated nodes.
  return importModel((path + ".json").str(), *json, ModelFileFormat::Json,
                     context, importOptions);
}

//===- OnnxTranslate.h - ONNX models to tgc model files ----------*- C++
//-*-===//
//
// An ONNX ModelProto, as torch.onnx.export writes it at opsets 13 to 17, is
// translated into a tgc model file (the JSON form of
// frontend/schema/model.fbs), which frontend/Import.cpp then imports like any
// other:
//
//   - initializers that the loss reaches through differentiable inputs
//     become parameters, their values written to a safetensors file that
//     the parameters' `init` names (kind file); every other initializer
//     (masks, position ids: buffers) is a constant;
//   - graph inputs that are not initializers become batch inputs; a
//     dynamic dim is fixed by `batchSize` when it is the first, else it is
//     an error;
//   - ONNX's own shape inference gives every value its static shape, and
//     the nodes whose inputs are all constants (Shape -> Gather ->
//     Unsqueeze -> Concat -> Reshape chains, masks built from buffers) are
//     evaluated here; the others become tg ops named after their node
//     ("/h.0/attn/MatMul" is "h.0.attn.MatMul", so the layer is h.0);
//   - the loss is the graph's scalar float output (the module returned its
//     loss: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss, a
//     reduction), or `loss` (cross_entropy or mse) over the first output
//     and a new batch input `labelInput`.
//
// This file holds no MLIR: the translation runs protobuf and ONNX's shape
// inference, which report with exceptions, and returns plain data.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_ONNX_ONNXTRANSLATE_H
#define TGC_FRONTEND_ONNX_ONNXTRANSLATE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::onnx {

struct TranslateOptions {
  /// Where the parameters' initial values are written (safetensors).
  std::string weightsPath;
  /// "" (the graph computes its loss), "cross_entropy" or "mse".
  std::string loss;
  /// The label input the loss reads (with `loss`).
  std::string labelInput;
  /// The training table: a JSON object in the model file's form ("" for
  /// none), from a side file or built from flags.
  std::string trainingJson;
  /// Fixes a dynamic first dim of the inputs (0: leave them; then a
  /// dynamic dim is an error): the micro-batch of one data replica.
  int64_t batchSize = 0;
  /// The data replicas of the mesh (its axes named data or dp): the
  /// inputs hold all their micro-batches, and the training table's
  /// batch_size is one replica's.
  int64_t dataReplicas = 1;
};

struct Translation {
  std::string modelJson; ///< the model file, when `error` is empty
  std::string error;     ///< what is wrong, naming the node or tensor
  int64_t params = 0, paramBytes = 0, nodes = 0, constants = 0;
};

/// Reads and translates the ONNX file at `path`.
Translation translateOnnxFile(const std::string &path,
                              const TranslateOptions &options);

} // namespace tgc::onnx

#endif // TGC_FRONTEND_ONNX_ONNXTRANSLATE_H

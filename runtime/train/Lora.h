//===- Lora.h - LoRA adapters folded into their weights ---------*- C++ -*-===//
//
// What --save-final --merge-lora writes: the parameters of a model tgc
// --lora adapted, each adapted weight W replaced by W + scale * A @ B (its
// transpose added where the step reads W transposed) and the adapters left
// out, so that the file is the base model's parameters.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_LORA_H
#define TGC_RUNTIME_TRAIN_LORA_H

#include "runtime/core/Model.h"

#include <vector>

namespace tgc {

/// The base model's parameters: their descriptions and host tensors (whole,
/// in their file layout); the merged weights are held here.
struct MergedParams {
  std::vector<ParamDesc> params;
  std::vector<void *> data;
  std::vector<std::vector<float>> merged;
};

/// Folds `model`'s adapters into the weights among `params` (one whole host
/// tensor per parameter). Throws Error when an adapter names no parameter
/// of the model or its shapes do not fit its weight's.
MergedParams mergeLoraAdapters(const ModelDesc &model, void *const *params);

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_LORA_H

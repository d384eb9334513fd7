//===- HuggingFace.h - Hugging Face model directories ------------*- C++
//-*-===//
//
// A Hugging Face model directory, as `save_pretrained` writes it: config.json
// and the weights, one model.safetensors or shards listed by
// model.safetensors.index.json ({"metadata": {"total_size": N},
// "weight_map": {"<tensor>": "model-00001-of-00002.safetensors", ...}}).
// --init-from reads one, --save-final DIR --format=hf writes one.
//
// Tensor names map to ours by config.json's model_type:
//
//   gpt2              ours "X" is "transformer.X" (read without the prefix
//                     too, as the original checkpoints have it); Conv1D
//                     stores [in, out] as we do, and c_attn is fused in
//                     both. Skipped on reading: lm_head.weight (tied to
//                     wte) and the causal-mask buffers h.N.attn.bias and
//                     h.N.attn.masked_bias.
//   llama, mistral    the same names; nn.Linear stores [out, in], so every
//                     "*_proj.weight" and lm_head.weight is transposed.
//                     Skipped on reading: *.rotary_emb.inv_freq (the graph
//                     computes the rotary tables) and lm_head.weight when
//                     the model ties its head to model.embed_tokens.
//
// A tensor is read in any float dtype (F32, BF16, F16) and converted to the
// parameter's; it is written in the parameter's dtype.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CHECKPOINT_HUGGINGFACE_H
#define TGC_RUNTIME_CHECKPOINT_HUGGINGFACE_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <set>
#include <string>

namespace tgc {

/// Hugging Face's default max_shard_size for save_pretrained.
constexpr uint64_t kHfMaxShardBytes = 5000000000ull;

/// True when `path` is a directory with a config.json.
bool isHuggingFaceDir(const std::string &path);

/// A config.json: its text and what the name table needs from it.
struct HfConfig {
  std::string path;      ///< the config.json read
  std::string text;      ///< its contents
  std::string modelType; ///< "gpt2", "llama" or "mistral"
  bool llamaNames = false;
};

/// Reads `path`, a config.json or a directory holding one; throws Error
/// naming the file when it is missing, not JSON, or of a model_type without
/// a name table.
HfConfig readHfConfig(const std::string &path);

/// The Hugging Face name of parameter `ours` and whether the checkpoint
/// stores it transposed.
std::string hfTensorName(const HfConfig &config, const std::string &ours,
                         int rank, bool *transposed);

/// Loads every parameter of `model` from the Hugging Face directory `dir`
/// into `params` (whole host tensors). Parameters named in `optional` (LoRA
/// adapters) may be absent and are then left as they are. Throws one Error
/// listing the first mismatches (missing tensors, wrong shapes, tensors the
/// model does not have) when the checkpoint is not the model's; returns
/// the skipped tensors (comma separated), for a note.
std::string loadHuggingFaceParams(const std::string &dir,
                                  const ModelDesc &model, void **params,
                                  const std::set<std::string> &optional);

/// Writes `model`'s parameters to directory `dir` as Hugging Face names and
/// layouts, in shards of at most `maxShardBytes` (one model.safetensors
/// when they fit), with `config`'s config.json (its torch_dtype set to the
/// parameters' dtype). Every file is written atomically.
void saveHuggingFace(const std::string &dir, const ModelDesc &model,
                     void *const *params, const HfConfig &config,
                     uint64_t maxShardBytes = kHfMaxShardBytes);

} // namespace tgc

#endif // TGC_RUNTIME_CHECKPOINT_HUGGINGFACE_H

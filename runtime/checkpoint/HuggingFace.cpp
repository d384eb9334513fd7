//===- HuggingFace.cpp - Hugging Face model directories ----------*- C++
//-*-===//

#include "runtime/checkpoint/HuggingFace.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace tgc {

namespace {

constexpr const char *kSingleFile = "model.safetensors";
constexpr const char *kIndexFile = "model.safetensors.index.json";
constexpr const char *kGpt2Prefix = "transformer.";
/// How many mismatches an error lists.
constexpr size_t kListedMismatches = 8;

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string readText(const std::string &path, const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throwErrno(path, "cannot read " + what, errno);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json parseJson(const std::string &path, const std::string &text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr,
                                              /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    throw Error(path + ": not a JSON object");
  return json;
}

/// Row-major [rows, cols] of `size`-byte elements into [cols, rows].
void transpose(const uint8_t *src, int64_t rows, int64_t cols, size_t size,
               uint8_t *dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          std::memcpy(dst + (c * rows + r) * size, src + (r * cols + c) * size,
                      size);
}

/// The shape a Hugging Face file stores parameter `tensor` in.
std::vector<int64_t> hfShapeOf(const TensorDesc &tensor, bool transposed) {
  std::vector<int64_t> shape = fileShapeOf(tensor);
  if (transposed)
    std::reverse(shape.begin(), shape.end());
  return shape;
}

/// Tensors the checkpoint may hold that no parameter stands for.
bool skippable(const HfConfig &config, const ModelDesc &model,
               const std::string &name) {
  auto modelHas = [&](const std::string &ours) {
    for (int i = 0; i < model.numParams; ++i)
      if (ours == model.params[i].tensor.name)
        return true;
    return false;
  };
  if (!config.llamaNames)
    return name == "lm_head.weight" || endsWith(name, ".attn.bias") ||
           endsWith(name, ".attn.masked_bias");
  return endsWith(name, ".rotary_emb.inv_freq") ||
         (name == "lm_head.weight" && !modelHas("lm_head.weight"));
}

/// The weights of a Hugging Face directory, each tensor with its file.
class HfWeights {
public:
  explicit HfWeights(const std::string &dir) {
    std::string index = joinPath(dir, kIndexFile);
    if (isFile(index)) {
      nlohmann::json json =
          parseJson(index, readText(index, "the checkpoint's shard index"));
      auto map = json.find("weight_map");
      if (map == json.end() || !map->is_object())
        throw Error(index + ": no \"weight_map\" object");
      for (auto it = map->begin(); it != map->end(); ++it) {
        if (!it.value().is_string())
          throw Error(index + ": the weight_map entry of " + it.key() +
                      " is not a file name");
        std::string shard = it.value().get<std::string>();
        if (shard.empty() || shard.find('/') != std::string::npos)
          throw Error(index + ": tensor " + it.key() + " is in '" + shard +
                      "', not a file of this directory");
        const SafetensorsFile &file = open(joinPath(dir, shard));
        const SafetensorsTensor *tensor = file.find(it.key());
        if (!tensor)
          throw Error(index + " puts tensor " + it.key() + " in " +
                      file.path() + ", which does not hold it");
        tensors_[it.key()] = {&file, tensor};
      }
      return;
    }
    std::string single = joinPath(dir, kSingleFile);
    if (!isFile(single))
      throw Error(dir + ": a Hugging Face directory without weights (no " +
                  kSingleFile + " or " + kIndexFile + ")");
    const SafetensorsFile &file = open(single);
    for (const SafetensorsTensor &tensor : file.tensors())
      tensors_[tensor.name] = {&file, &tensor};
  }

  struct Found {
    const SafetensorsFile *file;
    const SafetensorsTensor *tensor;
  };
  const Found *find(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, Found> &tensors() const { return tensors_; }

private:
  const SafetensorsFile &open(const std::string &path) {
    std::unique_ptr<SafetensorsFile> &file = files_[path];
    if (!file)
      file = std::make_unique<SafetensorsFile>(path);
    return *file;
  }

  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Found> tensors_;
};

const char *torchDtypeName(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bfloat16";
  case DType::F16:
    return "float16";
  default:
    return "float32";
  }
}

} // namespace

bool isHuggingFaceDir(const std::string &path) {
  return isDirectory(path) && isFile(joinPath(path, "config.json"));
}

HfConfig readHfConfig(const std::string &path) {
  HfConfig config;
  config.path = isDirectory(path) ? joinPath(path, "config.json") : path;
  config.text = readText(config.path, "the Hugging Face config");
  nlohmann::json json = parseJson(config.path, config.text);
  auto type = json.find("model_type");
  if (type == json.end() || !type->is_string())
    throw Error(config.path + ": no \"model_type\" (gpt2, llama or mistral)");
  config.modelType = type->get<std::string>();
  if (config.modelType == "llama" || config.modelType == "mistral")
    config.llamaNames = true;
  else if (config.modelType != "gpt2")
    throw Error(config.path + ": model_type '" + config.modelType +
                "' has no tensor name table (tgc maps gpt2, llama and "
                "mistral)");
  return config;
}

std::string hfTensorName(const HfConfig &config, const std::string &ours,
                         int rank, bool *transposed) {
  if (!config.llamaNames) {
    *transposed = false;
    return kGpt2Prefix + ours;
  }
  *transposed =
      rank == 2 && (endsWith(ours, "_proj.weight") || ours == "lm_head.weight");
  return ours;
}

std::string loadHuggingFaceParams(const std::string &dir,
                                  const ModelDesc &model, void **params,
                                  const std::set<std::string> &optional) {
  HfConfig config = readHfConfig(dir);
  HfWeights weights(dir);
  // GPT-2 checkpoints saved from GPT2Model (the original ones) have no
  // "transformer." prefix; those from GPT2LMHeadModel have it.
  bool unprefixed = !config.llamaNames &&
                    !weights.find(std::string(kGpt2Prefix) + "wte.weight") &&
                    weights.find("wte.weight");
  auto nameOf = [&](const TensorDesc &tensor, bool *transposed) {
    std::string name =
        hfTensorName(config, tensor.name, tensor.rank, transposed);
    return unprefixed ? name.substr(std::strlen(kGpt2Prefix)) : name;
  };

  std::vector<std::string> mismatches;
  std::set<std::string> used;
  std::vector<const HfWeights::Found *> found(model.numParams, nullptr);
  for (int i = 0; i < model.numParams; ++i) {
    const TensorDesc &tensor = model.params[i].tensor;
    bool transposed = false;
    std::string name = nameOf(tensor, &transposed);
    std::vector<int64_t> want = hfShapeOf(tensor, transposed);
    found[i] = weights.find(name);
    if (!found[i]) {
      if (!optional.count(tensor.name))
        mismatches.push_back("missing " + name + " (the model's " +
                             tensor.name + ", " + shapeString(want) + ")");
      continue;
    }
    used.insert(name);
    if (found[i]->tensor->shape != want)
      mismatches.push_back(name + " is " + found[i]->tensor->shapeString() +
                           ", the model's " + tensor.name + " wants " +
                           shapeString(want) +
                           (transposed ? " (nn.Linear's [out, in])" : ""));
  }
  std::string skipped;
  for (const auto &[name, entry] : weights.tensors()) {
    if (used.count(name))
      continue;
    if (skippable(config, model, name)) {
      skipped += (skipped.empty() ? "" : ", ") + name;
      continue;
    }
    mismatches.push_back("unexpected " + name + " (" +
                         entry.tensor->shapeString() +
                         "): the model has no parameter for it");
  }
  if (!mismatches.empty()) {
    std::string message = dir + " (" + config.modelType +
                          ") does not fit model '" + model.name +
                          "': " + std::to_string(mismatches.size()) +
                          " mismatch" + (mismatches.size() == 1 ? "" : "es");
    if (mismatches.size() > kListedMismatches)
      message += ", the first " + std::to_string(kListedMismatches);
    for (size_t i = 0; i < std::min(mismatches.size(), kListedMismatches); ++i)
      message += "\n  " + mismatches[i];
    throw Error(message);
  }

  std::vector<uint8_t> buffer;
  for (int i = 0; i < model.numParams; ++i) {
    if (!found[i])
      continue;
    const TensorDesc &tensor = model.params[i].tensor;
    bool transposed = false;
    std::string name = nameOf(tensor, &transposed);
    const SafetensorsTensor &stored = *found[i]->tensor;
    if (!transposed) {
      loadFoundTensor(found[i]->file->path(), stored, name, tensor, params[i]);
      continue;
    }
    // The model's layout: [in, out] from nn.Linear's [out, in].
    buffer.resize(stored.end - stored.begin);
    transpose(stored.data, stored.shape[0], stored.shape[1],
              dtypeSize(stored.dtype), buffer.data());
    SafetensorsTensor view = stored;
    view.shape = {stored.shape[1], stored.shape[0]};
    view.begin = 0;
    view.end = buffer.size();
    view.data = buffer.data();
    loadFoundTensor(found[i]->file->path(), view, name, tensor, params[i]);
  }
  return skipped;
}

void saveHuggingFace(const std::string &dir, const ModelDesc &model,
                     void *const *params, const HfConfig &config,
                     uint64_t maxShardBytes) {
  prepareCheckpointDir(dir);
  // Shards fill in parameter order, as save_pretrained's do.
  std::vector<std::vector<TensorToWrite>> shards(1);
  std::vector<std::string> names;
  uint64_t shardBytes = 0, totalBytes = 0;
  for (int i = 0; i < model.numParams; ++i) {
    const TensorDesc &tensor = model.params[i].tensor;
    bool transposed = false;
    std::string name =
        hfTensorName(config, tensor.name, tensor.rank, &transposed);
    std::vector<int64_t> shape = hfShapeOf(tensor, transposed);
    uint64_t bytes = numElements(tensor) * dtypeSize(tensor.dtype);
    if (shardBytes > 0 && shardBytes + bytes > maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shardBytes += bytes;
    totalBytes += bytes;
    TensorToWrite out{name, tensor.dtype, shape, params[i]};
    if (transposed) {
      const auto *src = static_cast<const uint8_t *>(params[i]);
      int64_t rows = shape[1], cols = shape[0];
      size_t size = dtypeSize(tensor.dtype);
      out.data = nullptr;
      out.fill = [src, rows, cols, size](void *dst) {
        transpose(src, rows, cols, size, static_cast<uint8_t *>(dst));
      };
    }
    shards.back().push_back(std::move(out));
  }

  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  std::string index = joinPath(dir, kIndexFile),
              single = joinPath(dir, kSingleFile);
  if (shards.size() == 1) {
    writeSafetensors(single, shards[0], metadata);
    std::remove(index.c_str());
  } else {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
      char file[64];
      std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors",
                    s + 1, shards.size());
      writeSafetensors(joinPath(dir, file), shards[s], metadata);
      for (const TensorToWrite &tensor : shards[s])
        map[tensor.name] = file;
    }
    nlohmann::ordered_json json;
    json["metadata"] = {{"total_size", totalBytes}};
    json["weight_map"] = map;
    writeFileAtomically(index, json.dump(2) + "\n");
    std::remove(single.c_str());
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::parse(config.text);
  if (model.numParams > 0)
    out["torch_dtype"] = torchDtypeName(model.params[0].tensor.dtype);
  writeFileAtomically(joinPath(dir, "config.json"), out.dump(2) + "\n");
}

} // namespace tgc

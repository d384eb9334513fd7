//===- Lora.cpp - LoRA adapters folded into their weights -------*- C++ -*-===//

#include "runtime/train/Lora.h"

#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <map>
#include <string>

namespace tgc {

MergedParams mergeLoraAdapters(const ModelDesc &model, void *const *params) {
  std::map<std::string, int> index;
  for (int i = 0; i < model.numParams; ++i)
    index[model.params[i].tensor.name] = i;
  auto find = [&](const LoraDesc &lora, const char *name) {
    auto it = index.find(name);
    if (it == index.end())
      throw Error(std::string("--merge-lora: the adapters of '") + lora.base +
                  "' name '" + name + "', which is no parameter of model '" +
                  model.name + "'");
    if (model.params[it->second].tensor.dtype != DType::F32)
      throw Error(std::string("--merge-lora: '") + name +
                  "' is not f32; the adapters merge into f32 weights");
    return it->second;
  };

  MergedParams out;
  std::vector<bool> adapter(model.numParams, false);
  std::map<int, size_t> mergedOf;
  out.merged.reserve(model.numLoras);
  for (int l = 0; l < model.numLoras; ++l) {
    const LoraDesc &lora = model.loras[l];
    int w = find(lora, lora.base), a = find(lora, lora.a),
        b = find(lora, lora.b);
    adapter[a] = adapter[b] = true;
    std::vector<int64_t> aShape = fileShapeOf(model.params[a].tensor),
                         bShape = fileShapeOf(model.params[b].tensor);
    if (aShape.size() != 2 || bShape.size() != 2 || aShape[1] != bShape[0] ||
        numElements(model.params[w].tensor) != aShape[0] * bShape[1])
      throw Error(std::string("--merge-lora: the adapters of '") + lora.base +
                  "' do not fit its shape");
    int64_t in = aShape[0], rank = aShape[1], outDim = bShape[1];
    const float *wd = static_cast<const float *>(params[w]);
    const float *ad = static_cast<const float *>(params[a]);
    const float *bd = static_cast<const float *>(params[b]);
    std::vector<float> merged(wd, wd + in * outDim);
    // W [in, out] (or [out, in] when the step reads it transposed) plus
    // scale * A @ B, each element summed in double.
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < outDim; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < rank; ++k)
          sum += static_cast<double>(ad[i * rank + k]) * bd[k * outDim + j];
        float &at =
            lora.transposed ? merged[j * in + i] : merged[i * outDim + j];
        at = static_cast<float>(at + lora.scale * sum);
      }
    mergedOf[w] = out.merged.size();
    out.merged.push_back(std::move(merged));
  }
  for (int i = 0; i < model.numParams; ++i) {
    if (adapter[i])
      continue;
    auto it = mergedOf.find(i);
    out.params.push_back(model.params[i]);
    out.data.push_back(it == mergedOf.end() ? params[i]
                                            : out.merged[it->second].data());
  }
  return out;
}

} // namespace tgc

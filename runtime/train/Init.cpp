//===- Init.cpp - Parameter initialisation from InitSpec ----------*- C++ -*-===//

#include "runtime/train/Init.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/Rng.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace tgc {

Fans computeFans(const TensorDesc &tensor) {
  // The file shape: a view the compiler splits by heads ([768, 3, 768]) is
  // still the [in, out] matrix the model file describes.
  std::vector<int64_t> shape = fileShapeOf(tensor);
  size_t rank = shape.size();
  if (rank == 0)
    return {1, 1};
  if (rank == 1)
    return {shape[0], shape[0]};
  if (rank == 2)
    return {shape[0], shape[1]};
  int64_t receptive = 1;
  for (size_t d = 2; d < rank; ++d)
    receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

namespace {

enum class Draw { Normal, Uniform };

/// Fills values[i] = offset + scale * draw, chunk by chunk.
void fillRandom(std::vector<float> &values, Draw draw, double offset,
                double scale, uint64_t seed, const std::string &name) {
  constexpr int64_t kChunk = 65536;
  int64_t count = static_cast<int64_t>(values.size());
  int64_t chunks = (count + kChunk - 1) / kChunk;
  uint64_t stream = hashString(name);
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    Rng rng = Rng::forStream(seed, stream, static_cast<uint64_t>(chunk));
    int64_t end = std::min(count, (chunk + 1) * kChunk);
    for (int64_t i = chunk * kChunk; i < end; ++i) {
      double x = draw == Draw::Normal ? rng.normal() : rng.uniform();
      values[i] = static_cast<float>(offset + scale * x);
    }
  }
}

} // namespace

void initParam(const ParamDesc &param, void *dst, uint64_t seed) {
  const TensorDesc &tensor = param.tensor;
  const InitSpec &spec = param.init;
  int64_t count = numElements(tensor);
  int64_t bytes = count * dtypeSize(tensor.dtype);
  if (spec.kind == InitKind::Zeros) {
    std::memset(dst, 0, bytes);
    return;
  }
  if (spec.kind == InitKind::File) {
    if (!spec.file || !*spec.file)
      throw Error("parameter " + std::string(tensor.name) +
                  " is initialised from a file but names none");
    loadTensor(spec.file, spec.key && *spec.key ? spec.key : tensor.name,
               tensor, dst);
    return;
  }
  bool random = spec.kind != InitKind::Ones && spec.kind != InitKind::Constant;
  if (random && !isFloatDType(tensor.dtype))
    throw Error("parameter " + std::string(tensor.name) + " of dtype " +
                dtypeName(tensor.dtype) +
                " cannot have a random initialiser");
  std::vector<float> values(count);
  Fans fans = computeFans(tensor);
  double gain = spec.gain == 0 ? 1.0 : spec.gain;
  double fanIn = static_cast<double>(std::max<int64_t>(fans.fanIn, 1));
  double fanSum =
      static_cast<double>(std::max<int64_t>(fans.fanIn + fans.fanOut, 1));
  switch (spec.kind) {
  case InitKind::Ones:
    std::fill(values.begin(), values.end(), 1.0f);
    break;
  case InitKind::Constant:
    std::fill(values.begin(), values.end(), static_cast<float>(spec.value));
    break;
  case InitKind::Normal:
    fillRandom(values, Draw::Normal, spec.mean, spec.std, seed, tensor.name);
    break;
  case InitKind::Uniform:
    fillRandom(values, Draw::Uniform, spec.low, spec.high - spec.low, seed,
               tensor.name);
    break;
  case InitKind::XavierUniform: {
    double bound = gain * std::sqrt(6.0 / fanSum);
    fillRandom(values, Draw::Uniform, -bound, 2 * bound, seed, tensor.name);
    break;
  }
  case InitKind::XavierNormal:
    fillRandom(values, Draw::Normal, 0.0, gain * std::sqrt(2.0 / fanSum), seed,
               tensor.name);
    break;
  case InitKind::KaimingUniform: {
    double bound = gain * std::sqrt(3.0 / fanIn);
    fillRandom(values, Draw::Uniform, -bound, 2 * bound, seed, tensor.name);
    break;
  }
  case InitKind::KaimingNormal:
    fillRandom(values, Draw::Normal, 0.0, gain / std::sqrt(fanIn), seed,
               tensor.name);
    break;
  default:
    throw Error("parameter " + std::string(tensor.name) +
                " has an unknown init kind " +
                std::to_string(static_cast<int>(spec.kind)));
  }
  if (tensor.dtype == DType::I1) {
    auto *out = static_cast<uint8_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = values[i] != 0;
    return;
  }
  storeFloats(values.data(), count, tensor.dtype, dst);
}

} // namespace tgc

//===- DataPosition.cpp - Where a data loader is, for resume ------*- C++ -*-===//

#include "runtime/data/DataPosition.h"

#include "runtime/core/Error.h"
#include "runtime/core/Json.h"

namespace tgc {

std::string DataPosition::toJson() const {
  JsonValue value = JsonValue::object();
  value.set("samples", samples);
  value.set("epoch", epoch);
  value.set("epoch_samples", epochSamples);
  value.set("rng", rng);
  return writeJson(value);
}

DataPosition DataPosition::fromJson(const std::string &text) {
  JsonValue value;
  std::string error;
  if (!parseJson(text, value, error))
    throw Error("data position is not valid json: " + error);
  auto integer = [&](const char *key) -> const JsonValue * {
    const JsonValue *v = value.find(key);
    return v && v->isInteger() ? v : nullptr;
  };
  const JsonValue *epoch = integer("epoch");
  const JsonValue *samples = integer("samples");
  const JsonValue *cursor = integer("cursor");
  const JsonValue *rng = value.find("rng");
  if (!epoch || (!samples && !cursor) || !rng || !rng->isString())
    throw Error("data position '" + text +
                "' lacks an integer epoch, an integer samples (or a legacy "
                "cursor) or a string rng");
  DataPosition position;
  position.epoch = epoch->asInt();
  position.rng = rng->asString();
  if (samples) {
    position.samples = samples->asInt();
    if (position.samples < 0)
      throw Error("data position '" + text + "' has negative samples");
    if (const JsonValue *n = integer("epoch_samples"))
      position.epochSamples = n->asInt();
  } else {
    position.samples = -1;
    position.cursor = cursor->asInt();
  }
  return position;
}

} // namespace tgc

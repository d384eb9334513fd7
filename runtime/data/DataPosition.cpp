//===- DataPosition.cpp - Where a data loader is, for resume ------*- C++ -*-===//

#include "runtime/data/DataPosition.h"

#include "runtime/core/Error.h"
#include "runtime/core/Json.h"

namespace tgc {

std::string DataPosition::toJson() const {
  JsonValue value = JsonValue::object();
  value.set("epoch", epoch);
  value.set("cursor", cursor);
  value.set("rng", rng);
  return writeJson(value);
}

DataPosition DataPosition::fromJson(const std::string &text) {
  JsonValue value;
  std::string error;
  if (!parseJson(text, value, error))
    throw Error("data position is not valid json: " + error);
  const JsonValue *epoch = value.find("epoch");
  const JsonValue *cursor = value.find("cursor");
  const JsonValue *rng = value.find("rng");
  if (!epoch || !epoch->isInteger() || !cursor || !cursor->isInteger() ||
      !rng || !rng->isString())
    throw Error("data position '" + text +
                "' lacks an integer epoch, an integer cursor or a string rng");
  DataPosition position;
  position.epoch = epoch->asInt();
  position.cursor = cursor->asInt();
  position.rng = rng->asString();
  return position;
}

} // namespace tgc

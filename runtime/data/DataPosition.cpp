//===- DataPosition.cpp - Where a data loader is, for resume ------*- C++ -*-===//

#include "runtime/data/DataPosition.h"

#include "runtime/core/Error.h"
#include "runtime/core/JsonText.h"

namespace tgc {

std::string DataPosition::toJson() const {
  return writeJson({{"samples", samples},
                    {"epoch", epoch},
                    {"epoch_samples", epochSamples},
                    {"rng", rng}});
}

DataPosition DataPosition::fromJson(const std::string &text) {
  Json value;
  std::string error;
  if (!parseJson(text, value, error))
    throw Error("data position is not valid json: " + error);
  auto integer = [&](const char *key) -> const Json * {
    auto v = value.find(key);
    return v != value.end() && v->is_number_integer() ? &*v : nullptr;
  };
  const Json *epoch = integer("epoch");
  const Json *samples = integer("samples");
  const Json *cursor = integer("cursor");
  auto rng = value.find("rng");
  if (!epoch || (!samples && !cursor) || rng == value.end() ||
      !rng->is_string())
    throw Error("data position '" + text +
                "' lacks an integer epoch, an integer samples (or a legacy "
                "cursor) or a string rng");
  DataPosition position;
  position.epoch = epoch->get<int64_t>();
  position.rng = rng->get<std::string>();
  if (samples) {
    position.samples = samples->get<int64_t>();
    if (position.samples < 0)
      throw Error("data position '" + text + "' has negative samples");
    if (const Json *n = integer("epoch_samples"))
      position.epochSamples = n->get<int64_t>();
  } else {
    position.samples = -1;
    position.cursor = cursor->get<int64_t>();
  }
  return position;
}

} // namespace tgc

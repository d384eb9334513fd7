//===- JsonText.h - JSON files: nlohmann's, with tgc's errors ---*- C++ -*-===//
//
// Safetensors headers, checkpoint indexes, data positions, GPT-2
// vocabularies, the JSONL metrics log and Chrome traces are JSON, held as
// nlohmann::ordered_json (objects keep their insertion order, so written
// files are deterministic) and parsed and written by nlohmann's code. What
// tgc adds is what its files need and nlohmann does not do:
//   - parse errors as "line L, column C: problem", pointing at the start of
//     the token that is wrong (nlohmann counts where it stopped reading);
//   - a repeated key in an object is an error, not the last value winning;
//   - integers are int64 exactly, and objects of 50k keys (a vocabulary)
//     parse in linear time;
//   - floating-point numbers are written with the shortest %g digits
//     (FloatFormat.h), so a logged float32 loss reads back bit for bit and
//     the log and checkpoints read as they always have.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_JSONTEXT_H
#define TGC_RUNTIME_CORE_JSONTEXT_H

#include <nlohmann/json.hpp>

#include <string>

namespace tgc {

/// A JSON value; objects keep their insertion order.
using Json = nlohmann::ordered_json;

/// Parses `text` (one JSON value, surrounded by optional whitespace). On
/// failure returns false and sets `error` to "line L, column C: problem"
/// (L and C count from 1, C in bytes). Beyond nlohmann's checks, a key
/// repeated in an object and nesting deeper than 512 are errors. Every
/// integer in int64's range comes back as one (is_number_integer(),
/// get<int64_t>() exact); larger ones are doubles.
bool parseJson(const std::string &text, Json &value, std::string &error);

/// Compact JSON (no spaces): nlohmann's text, except that floating-point
/// numbers are written by formatDouble ("0.25", "2", "1e-05"), and as null
/// when not finite. Bytes of a string that are not UTF-8 become U+FFFD.
std::string writeJson(const Json &value);

/// A float32 for writeJson to write with the digits formatFloat gives it:
/// the double its shortest text reads as, whose own shortest text is the same.
Json jsonFloat(float value);

/// The kind of `value` in words, for messages: "an object", "a number"...
const char *jsonKindName(const Json &value);
/// The same for a kind; an integer kind is "an integer".
const char *jsonKindName(Json::value_t kind);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_JSONTEXT_H

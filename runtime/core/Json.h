//===- Json.h - A small JSON value, parser and writer -------------*- C++ -*-===//
//
// Enough JSON for safetensors headers, checkpoint metadata and the JSONL
// metrics log, without LLVM's json (the runtime links nothing from LLVM).
// Objects keep their insertion order so written files are deterministic.
// Integers are kept exactly (int64) when the text has no fraction or
// exponent; floats are written in the shortest form that reads back to the
// same value, so a logged float32 loss compares bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_JSON_H
#define TGC_RUNTIME_CORE_JSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Members = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default;
  JsonValue(bool value) : kind_(Kind::Bool), bool_(value) {}
  JsonValue(int value) : JsonValue(static_cast<int64_t>(value)) {}
  JsonValue(int64_t value)
      : kind_(Kind::Number), isInteger_(true), int_(value),
        number_(static_cast<double>(value)) {}
  JsonValue(double value) : kind_(Kind::Number), number_(value) {}
  /// Written with the shortest digits that read back to the same float.
  static JsonValue fromFloat(float value);
  JsonValue(const char *value) : kind_(Kind::String), string_(value) {}
  JsonValue(std::string value) : kind_(Kind::String), string_(std::move(value)) {}
  static JsonValue array() { return JsonValue(Kind::Array); }
  static JsonValue object() { return JsonValue(Kind::Object); }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  /// A number written without fraction or exponent that fits in int64.
  bool isInteger() const { return kind_ == Kind::Number && isInteger_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  // Accessors; each throws tgc::Error when the value is of another kind.
  bool asBool() const;
  double asNumber() const;
  int64_t asInt() const;
  const std::string &asString() const;
  const std::vector<JsonValue> &asArray() const;
  const Members &asObject() const;

  /// The member named `key` of an object, or null when absent (or when this
  /// is not an object).
  const JsonValue *find(const std::string &key) const;
  /// Adds or replaces a member (this must be an object).
  JsonValue &set(const std::string &key, JsonValue value);
  /// Adds a member without looking for an existing one with the same key.
  JsonValue &append(std::string key, JsonValue value);
  /// Appends an element (this must be an array).
  JsonValue &push(JsonValue value);

  static const char *kindName(Kind kind);

private:
  explicit JsonValue(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool isInteger_ = false;
  bool isFloat32_ = false;
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  Members object_;

  friend void writeJsonTo(const JsonValue &, std::string &);
};

/// Parses `text` (one JSON value, surrounded by optional whitespace). On
/// failure returns false and sets `error` to "line L, column C: problem".
/// Objects with a repeated key are rejected.
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

/// Compact JSON (no spaces). Non-finite numbers are written as null.
std::string writeJson(const JsonValue &value);
void writeJsonTo(const JsonValue &value, std::string &out);

/// The shortest decimal text that reads back to `value` ("%.Ng" style).
std::string formatDouble(double value);
std::string formatFloat(float value);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_JSON_H

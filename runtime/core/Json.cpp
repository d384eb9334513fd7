//===- Json.cpp - A small JSON value, parser and writer -----------*- C++ -*-===//

#include "runtime/core/Json.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace tgc {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonValue JsonValue::fromFloat(float value) {
  JsonValue result(static_cast<double>(value));
  result.isFloat32_ = true;
  return result;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

static Error kindError(const char *wanted, JsonValue::Kind got) {
  return Error(std::string("json value is ") + JsonValue::kindName(got) +
               ", expected " + wanted);
}

bool JsonValue::asBool() const {
  if (kind_ != Kind::Bool)
    throw kindError("a boolean", kind_);
  return bool_;
}

double JsonValue::asNumber() const {
  if (kind_ != Kind::Number)
    throw kindError("a number", kind_);
  return number_;
}

int64_t JsonValue::asInt() const {
  if (!isInteger())
    throw kindError("an integer", kind_);
  return int_;
}

const std::string &JsonValue::asString() const {
  if (kind_ != Kind::String)
    throw kindError("a string", kind_);
  return string_;
}

const std::vector<JsonValue> &JsonValue::asArray() const {
  if (kind_ != Kind::Array)
    throw kindError("an array", kind_);
  return array_;
}

const JsonValue::Members &JsonValue::asObject() const {
  if (kind_ != Kind::Object)
    throw kindError("an object", kind_);
  return object_;
}

const JsonValue *JsonValue::find(const std::string &key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const auto &member : object_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

JsonValue &JsonValue::set(const std::string &key, JsonValue value) {
  if (kind_ != Kind::Object)
    throw kindError("an object", kind_);
  for (auto &member : object_) {
    if (member.first == key) {
      member.second = std::move(value);
      return member.second;
    }
  }
  object_.emplace_back(key, std::move(value));
  return object_.back().second;
}

JsonValue &JsonValue::append(std::string key, JsonValue value) {
  if (kind_ != Kind::Object)
    throw kindError("an object", kind_);
  object_.emplace_back(std::move(key), std::move(value));
  return object_.back().second;
}

JsonValue &JsonValue::push(JsonValue value) {
  if (kind_ != Kind::Array)
    throw kindError("an array", kind_);
  array_.push_back(std::move(value));
  return array_.back();
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  bool parse(JsonValue &value, std::string &error) {
    skipSpace();
    bool ok = parseValue(value, 0);
    if (ok) {
      skipSpace();
      if (pos_ != text_.size())
        ok = fail("trailing characters");
    }
    if (!ok)
      error = location() + ": " + error_;
    return ok;
  }

private:
  static constexpr int kMaxDepth = 512;

  bool fail(const std::string &message) {
    if (error_.empty())
      error_ = message;
    return false;
  }

  std::string location() const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool literal(const char *word) {
    size_t start = pos_;
    for (const char *c = word; *c; ++c, ++pos_) {
      if (pos_ >= text_.size() || text_[pos_] != *c) {
        pos_ = start;
        return false;
      }
    }
    return true;
  }

  bool parseValue(JsonValue &value, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos_ >= text_.size())
      return fail("unexpected end of input");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(value, depth);
    if (c == '[')
      return parseArray(value, depth);
    if (c == '"') {
      std::string s;
      if (!parseString(s))
        return false;
      value = JsonValue(std::move(s));
      return true;
    }
    if (literal("true")) {
      value = JsonValue(true);
      return true;
    }
    if (literal("false")) {
      value = JsonValue(false);
      return true;
    }
    if (literal("null")) {
      value = JsonValue();
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(value);
    return fail(std::string("unexpected character '") + c + "'");
  }

  bool parseObject(JsonValue &value, int depth) {
    ++pos_; // '{'
    value = JsonValue::object();
    std::unordered_set<std::string> keys;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail("expected a string key");
      std::string key;
      if (!parseString(key))
        return false;
      if (!keys.insert(key).second)
        return fail("duplicate key \"" + key + "\"");
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':')
        return fail("expected ':' after a key");
      ++pos_;
      skipSpace();
      JsonValue member;
      if (!parseValue(member, depth + 1))
        return false;
      value.append(std::move(key), std::move(member));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &value, int depth) {
    ++pos_; // '['
    value = JsonValue::array();
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      JsonValue element;
      if (!parseValue(element, depth + 1))
        return false;
      value.push(std::move(element));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool hex4(uint32_t &code) {
    if (pos_ + 4 > text_.size())
      return fail("truncated \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= c - '0';
      else if (c >= 'a' && c <= 'f')
        code |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        code |= c - 'A' + 10;
      else
        return fail("bad hex digit in a \\u escape");
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (pos_ >= text_.size())
        return fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        return fail("unterminated string");
      char escape = text_[pos_++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t code;
        if (!hex4(code))
          return false;
        if (code >= 0xd800 && code < 0xdc00) {
          uint32_t low;
          if (pos_ + 2 > text_.size() || text_[pos_] != '\\' ||
              text_[pos_ + 1] != 'u')
            return fail("unpaired surrogate in a \\u escape");
          pos_ += 2;
          if (!hex4(low))
            return false;
          if (low < 0xdc00 || low >= 0xe000)
            return fail("unpaired surrogate in a \\u escape");
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        } else if (code >= 0xdc00 && code < 0xe000) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return fail(std::string("bad escape '\\") + escape + "'");
      }
    }
  }

  bool parseNumber(JsonValue &value) {
    size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-')
      ++pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ > first;
    };
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return fail("bad number");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (!digits())
        return fail("bad number: no digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (!digits())
        return fail("bad number: no digits in the exponent");
    }
    std::string token = text_.substr(start, pos_ - start);
    if (integral) {
      errno = 0;
      long long parsed = std::strtoll(token.c_str(), nullptr, 10);
      if (errno == 0) {
        value = JsonValue(static_cast<int64_t>(parsed));
        return true;
      }
      // Out of int64 range: keep it as a double.
    }
    value = JsonValue(std::strtod(token.c_str(), nullptr));
    return true;
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

bool parseJson(const std::string &text, JsonValue &value, std::string &error) {
  return Parser(text).parse(value, error);
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

std::string formatDouble(double value) {
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

std::string formatFloat(float value) {
  // printf spells a NaN with its sign bit as "-nan"; a NaN has no sign to
  // tell a reader.
  if (std::isnan(value))
    return "nan";
  char buffer[40];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision,
                  static_cast<double>(value));
    if (std::strtof(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

static void writeString(const std::string &s, std::string &out) {
  out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void writeJsonTo(const JsonValue &value, std::string &out) {
  switch (value.kind_) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += value.bool_ ? "true" : "false";
    return;
  case JsonValue::Kind::Number:
    if (value.isInteger_)
      out += std::to_string(value.int_);
    else if (!std::isfinite(value.number_))
      out += "null";
    else if (value.isFloat32_)
      out += formatFloat(static_cast<float>(value.number_));
    else
      out += formatDouble(value.number_);
    return;
  case JsonValue::Kind::String:
    writeString(value.string_, out);
    return;
  case JsonValue::Kind::Array: {
    out += '[';
    bool first = true;
    for (const JsonValue &element : value.array_) {
      if (!first)
        out += ',';
      first = false;
      writeJsonTo(element, out);
    }
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &member : value.object_) {
      if (!first)
        out += ',';
      first = false;
      writeString(member.first, out);
      out += ':';
      writeJsonTo(member.second, out);
    }
    out += '}';
    return;
  }
  }
}

std::string writeJson(const JsonValue &value) {
  std::string out;
  writeJsonTo(value, out);
  return out;
}

} // namespace tgc

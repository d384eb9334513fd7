//===- JsonText.cpp - JSON files: nlohmann's, with tgc's errors -*- C++ -*-===//
//
// nlohmann's parser drives a SAX handler that builds the ordered_json (so
// that repeated keys are caught and members are appended without a search)
// and turns nlohmann's parse errors into tgc's "line L, column C: problem".
// The writer walks the value and leaves all but floating-point numbers to
// nlohmann's serializer.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/JsonText.h"

#include "runtime/core/FloatFormat.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <unordered_set>
#include <vector>

namespace tgc {

//===----------------------------------------------------------------------===//
// Error positions
//===----------------------------------------------------------------------===//

namespace {

/// "line L, column C" of byte `offset` of `text`.
std::string location(const std::string &text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// The end of the JSON number that starts at byte `at` of `text`, or `at`
/// when none starts there.
size_t numberEnd(const std::string &text, size_t at) {
  size_t i = at;
  auto digits = [&] {
    size_t first = i;
    while (i < text.size() && isDigit(text[i]))
      ++i;
    return i > first;
  };
  if (i < text.size() && text[i] == '-')
    ++i;
  if (i < text.size() && text[i] == '0')
    ++i;
  else if (!digits())
    return at;
  if (i + 1 < text.size() && text[i] == '.' && isDigit(text[i + 1])) {
    ++i;
    digits();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t mark = i++;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (!digits())
      i = mark;
  }
  return i;
}

/// Where the token that ends at byte `last` of `text` starts; `token` is its
/// kind as nlohmann's messages name it ("string literal", "'}'"). nlohmann
/// reports where it stopped reading, the end of a token it did not expect.
size_t tokenStart(const std::string &text, size_t last,
                  const std::string &token) {
  if (token == "end of input")
    return text.size();
  if (token == "true literal" || token == "null literal")
    return last >= 3 ? last - 3 : 0;
  if (token == "false literal")
    return last >= 4 ? last - 4 : 0;
  if (token == "string literal") {
    // The opening quote is the nearest one not escaped: inside a string the
    // lexer accepted, every quote is.
    for (size_t i = last; i-- > 0;) {
      if (text[i] != '"')
        continue;
      size_t backslashes = 0;
      while (backslashes < i && text[i - 1 - backslashes] == '\\')
        ++backslashes;
      if (backslashes % 2 == 0)
        return i;
    }
    return last;
  }
  if (token == "number literal") {
    // The earliest start of a number that ends here: the bytes before it
    // can look like part of one ("1-2", the 'e' of "true1").
    size_t first = last;
    while (first > 0 && std::strchr("0123456789+-.eE", text[first - 1]))
      --first;
    for (size_t start = first; start < last; ++start)
      if (numberEnd(text, start) == last + 1)
        return start;
    return last;
  }
  // One character: '{', ']', ',', ':'...
  return last;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// The text as nlohmann's lexer reads it, byte by byte, keeping in `*read`
/// how far it has read: the SAX events carry no position, and a repeated
/// key or a bracket nested too deep is where the lexer has just read.
class TrackedText {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  TrackedText(const char *at, const char **read) : at_(at), read_(read) {}
  reference operator*() const { return *at_; }
  TrackedText &operator++() {
    *read_ = ++at_;
    return *this;
  }
  bool operator==(const TrackedText &other) const { return at_ == other.at_; }
  bool operator!=(const TrackedText &other) const { return at_ != other.at_; }

private:
  const char *at_;
  const char **read_;
};

/// Builds the value from nlohmann's SAX events, or records the first error.
class JsonBuilder final : public nlohmann::json_sax<Json> {
public:
  explicit JsonBuilder(const std::string &text)
      : text_(text), read_(text.data()) {}

  /// Parses the whole text; on failure error() says where and why.
  bool parse() {
    return Json::sax_parse(TrackedText(text_.data(), &read_),
                           TrackedText(text_.data() + text_.size(), &read_),
                           this) &&
           error_.empty();
  }
  Json &value() { return root_; }
  const std::string &error() const { return error_; }

  bool null() override { return add(nullptr); }
  bool boolean(bool value) override { return add(value); }
  bool number_integer(number_integer_t value) override { return add(value); }
  bool number_unsigned(number_unsigned_t value) override {
    // nlohmann reads a non-negative integer as a uint64; tgc's integers are
    // int64, and one beyond is a double (as it is to most JSON readers).
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return add(static_cast<double>(value));
    return add(static_cast<int64_t>(value));
  }
  bool number_float(number_float_t value, const string_t &) override {
    return add(value);
  }
  bool string(string_t &value) override { return add(std::move(value)); }
  // Only the binary formats (CBOR, MessagePack...) have these.
  bool binary(binary_t &) override { return add(nullptr); }

  bool start_object(std::size_t) override {
    if (!open(Json::object()))
      return false;
    keys_.emplace_back();
    return true;
  }
  bool key(string_t &key) override {
    if (!keys_.back().insert(key).second) {
      // The lexer has read up to the key's closing quote.
      size_t last = static_cast<size_t>(read_ - text_.data()) - 1;
      fail(tokenStart(text_, last, "string literal"),
           "duplicate key \"" + key + "\"");
      return false;
    }
    key_ = std::move(key);
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_array() override {
    open_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string &lastToken,
                   const Json::exception &e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 7:
    // syntax error while parsing value - invalid literal; last read: 'tx'":
    // the line and column are where the lexer stopped, and the lexer's
    // complaints echo the token, which can be the rest of a large file (an
    // unterminated string).
    std::string problem = e.what();
    size_t colon = problem.find(": ");
    if (colon != std::string::npos)
      problem.erase(0, colon + 2);
    std::string echo = "; last read: '" + lastToken + "'";
    size_t at = problem.find(echo);
    if (at != std::string::npos)
      problem.erase(at, echo.size());
    // `position` counts the bytes read, the last one being where the lexer
    // failed or where the token the parser did not expect ends.
    size_t offset = position > 0 ? position - 1 : 0;
    const std::string unexpected = "- unexpected ";
    size_t named = problem.find(unexpected);
    if (named != std::string::npos) {
      named += unexpected.size();
      size_t end = problem.find("; expected ", named);
      offset = tokenStart(text_, offset, problem.substr(named, end - named));
    }
    fail(offset, problem);
    return false;
  }

private:
  static constexpr size_t kMaxDepth = 512;

  void fail(size_t offset, const std::string &problem) {
    if (error_.empty())
      error_ = location(text_, offset) + ": " + problem;
  }

  /// Puts `value` where the next value goes: the root, the end of the open
  /// array, or the open object under the key just read.
  Json *place(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json &parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    // ordered_map's own insert looks for the key first, which takes seconds
    // for a 50k-token vocabulary; key() has made sure it is new.
    Json::object_t::Container &members = parent.get_ref<Json::object_t &>();
    members.emplace_back(std::move(key_), std::move(value));
    return &members.back().second;
  }
  bool add(Json value) {
    place(std::move(value));
    return true;
  }
  /// Places a new object or array; the values up to its end go into it.
  /// Values nest at most kMaxDepth deep, so that no reader recursing into
  /// them runs out of stack.
  bool open(Json container) {
    if (open_.size() == kMaxDepth) {
      fail(static_cast<size_t>(read_ - text_.data()) - 1,
           "nesting deeper than " + std::to_string(kMaxDepth));
      return false;
    }
    open_.push_back(place(std::move(container)));
    return true;
  }

  const std::string &text_;
  const char *read_;
  Json root_;
  std::vector<Json *> open_;
  std::vector<std::unordered_set<std::string>> keys_;
  std::string key_;
  std::string error_;
};

} // namespace

bool parseJson(const std::string &text, Json &value, std::string &error) {
  JsonBuilder builder(text);
  if (!builder.parse()) {
    error = builder.error();
    return false;
  }
  value = std::move(builder.value());
  return true;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static void writeJsonTo(const Json &value, std::string &out) {
  switch (value.type()) {
  case Json::value_t::object: {
    out += '{';
    const char *separator = "";
    for (const auto &[key, member] : value.items()) {
      out += separator;
      separator = ",";
      writeJsonTo(Json(key), out);
      out += ':';
      writeJsonTo(member, out);
    }
    out += '}';
    return;
  }
  case Json::value_t::array: {
    out += '[';
    const char *separator = "";
    for (const Json &element : value) {
      out += separator;
      separator = ",";
      writeJsonTo(element, out);
    }
    out += ']';
    return;
  }
  case Json::value_t::number_float: {
    // nlohmann writes 2.0 as "2.0" and 1e+02 as "100.0"; tgc's files have
    // always had printf's %g digits.
    double number = value.get<double>();
    out += std::isfinite(number) ? formatDouble(number) : "null";
    return;
  }
  default:
    out += value.dump(-1, ' ', /*ensure_ascii=*/false,
                      Json::error_handler_t::replace);
    return;
  }
}

std::string writeJson(const Json &value) {
  std::string out;
  writeJsonTo(value, out);
  return out;
}

Json jsonFloat(float value) {
  return std::strtod(formatFloat(value).c_str(), nullptr);
}

//===----------------------------------------------------------------------===//
// Kind names
//===----------------------------------------------------------------------===//

const char *jsonKindName(Json::value_t kind) {
  switch (kind) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::binary:
    return "binary data";
  case Json::value_t::discarded:
    break;
  }
  return "nothing";
}

const char *jsonKindName(const Json &value) {
  // A reader of a message sees 3 as a number as much as 3.5.
  return value.is_number() ? "a number" : jsonKindName(value.type());
}

} // namespace tgc

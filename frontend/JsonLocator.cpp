//===- JsonLocator.cpp - Where each value of a JSON text starts ---*- C++ -*-===//
//
// A small recursive-descent scanner over the JSON dialect FlatBuffers reads.
// It only runs on text the FlatBuffers parser accepted, so it can be lenient:
// anything unexpected stops the scan instead of reporting an error.
//
//===----------------------------------------------------------------------===//

#include "frontend/JsonLocator.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir::tg;

namespace {

class Scanner {
public:
  Scanner(llvm::StringRef text, llvm::StringMap<JsonLocator::Position> &out)
      : text(text), out(out) {}

  void run() {
    skipSpace();
    scanValue("", /*depth=*/0);
  }

private:
  // FlatBuffers stops at 64 levels of nesting; the scanner needs no more.
  static constexpr unsigned kMaxDepth = 64;
  /// Scalars of an array recorded under their own path.
  static constexpr unsigned kRecordedElements = 64;

  llvm::StringRef text;
  llvm::StringMap<JsonLocator::Position> &out;
  size_t pos = 0;
  unsigned line = 1;
  size_t lineStart = 0;
  bool failed = false;

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void advance() {
    if (text[pos] == '\n') {
      ++line;
      lineStart = pos + 1;
    }
    ++pos;
  }

  void skipSpace() {
    while (!atEnd()) {
      char c = text[pos];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (text.substr(pos).starts_with("//")) {
        while (!atEnd() && text[pos] != '\n')
          advance();
      } else if (text.substr(pos).starts_with("/*")) {
        advance();
        advance();
        while (!atEnd() && !text.substr(pos).starts_with("*/"))
          advance();
        if (!atEnd()) {
          advance();
          advance();
        }
      } else {
        return;
      }
    }
  }

  bool expect(char c) {
    skipSpace();
    if (peek() != c) {
      failed = true;
      return false;
    }
    advance();
    skipSpace();
    return true;
  }

  /// A quoted string (either quote) or a bare word; returns its text without
  /// quotes (escapes are kept as written: keys never contain any).
  llvm::StringRef scanToken() {
    char c = peek();
    if (c == '"' || c == '\'') {
      advance();
      size_t begin = pos;
      while (!atEnd() && text[pos] != c) {
        if (text[pos] == '\\' && pos + 1 < text.size())
          advance();
        advance();
      }
      if (atEnd()) {
        failed = true;
        return {};
      }
      llvm::StringRef token = text.slice(begin, pos);
      advance();
      return token;
    }
    size_t begin = pos;
    while (!atEnd() &&
           (llvm::isAlnum(text[pos]) || text[pos] == '_' || text[pos] == '-' ||
            text[pos] == '+' || text[pos] == '.'))
      advance();
    if (pos == begin)
      failed = true;
    return text.slice(begin, pos);
  }

  void record(const std::string &path) {
    out.try_emplace(path, line, (unsigned)(pos - lineStart + 1));
  }

  void scanValue(const std::string &path, unsigned depth) {
    if (failed || depth > kMaxDepth) {
      failed = true;
      return;
    }
    skipSpace();
    if (!path.empty())
      record(path);
    char c = peek();
    if (c == '{') {
      advance();
      skipSpace();
      while (!failed && peek() != '}') {
        llvm::StringRef key = scanToken();
        if (failed || !expect(':'))
          return;
        scanValue(path.empty() ? key.str() : path + "." + key.str(), depth + 1);
        skipSpace();
        if (peek() == ',') {
          advance();
          skipSpace();
        } else if (peek() != '}') {
          failed = true;
        }
      }
      if (!failed)
        advance();
    } else if (c == '[') {
      advance();
      skipSpace();
      for (unsigned index = 0; !failed && peek() != ']'; ++index) {
        // Past the first elements of a long array of numbers (a constant's
        // values), a diagnostic points at the array: recording millions of
        // paths would cost more than the import.
        char c = peek();
        if (index >= kRecordedElements && c != '{' && c != '[') {
          scanToken();
        } else {
          scanValue(path + "[" + std::to_string(index) + "]", depth + 1);
        }
        skipSpace();
        if (peek() == ',') {
          advance();
          skipSpace();
        } else if (peek() != ']') {
          failed = true;
        }
      }
      if (!failed)
        advance();
    } else {
      scanToken();
    }
  }
};

} // namespace

JsonLocator::JsonLocator(llvm::StringRef text) {
  Scanner(text, positions).run();
}

std::optional<JsonLocator::Position>
JsonLocator::find(llvm::StringRef path) const {
  auto it = positions.find(path);
  if (it == positions.end())
    return std::nullopt;
  return it->second;
}

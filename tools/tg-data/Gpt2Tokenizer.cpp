//===- Gpt2Tokenizer.cpp - GPT-2's byte-level BPE ---------------*- C++ -*-===//
//
// The BPE loop follows GPT-2's encoder.py exactly: while some adjacent pair
// of symbols has a merge, take the pair of lowest rank and merge all of its
// occurrences left to right, then look again. A heap of candidate pairs over
// a linked list makes a piece of n bytes cost O(n log n) instead of O(n^2),
// which matters for long runs without spaces (minified code, base64); pieces
// seen before come from a cache.
//
//===----------------------------------------------------------------------===//

#include "tools/tg-data/Gpt2Tokenizer.h"

#include "runtime/core/Error.h"
#include "runtime/core/Json.h"
#include "runtime/core/MappedFile.h"
#include "tools/tg-data/UnicodeClasses.h"
#include "tools/tg-data/Utf8.h"

#include <climits>
#include <cstdio>
#include <queue>

namespace tgc {
namespace data {

//===----------------------------------------------------------------------===//
// Pre-tokenization
//===----------------------------------------------------------------------===//

namespace {

/// Decodes the (valid) UTF-8 character at text[pos].
struct Char {
  uint32_t codePoint;
  size_t length;
  CharClass cls;
};

Char charAt(std::string_view text, size_t pos) {
  uint8_t lead = static_cast<uint8_t>(text[pos]);
  size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  uint32_t codePoint = decodeSequence(text, pos, length);
  return {codePoint, length, classifyCodePoint(codePoint)};
}

/// The end of the run of characters of class `cls` starting at `pos`.
size_t runEnd(std::string_view text, size_t pos, CharClass cls) {
  while (pos < text.size()) {
    Char c = charAt(text, pos);
    if (c.cls != cls)
      break;
    pos += c.length;
  }
  return pos;
}

/// The length of a contraction ('s 't 're 've 'm 'll 'd) at text[pos], or 0.
size_t contractionLength(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size())
    return 0;
  char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (pos + 2 < text.size()) {
    char b = text[pos + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
        (a == 'l' && b == 'l'))
      return 3;
  }
  return 0;
}

} // namespace

void splitGpt2Pieces(std::string_view text,
                     const std::function<void(std::string_view)> &piece) {
  // The alternatives of the regex, tried in order at each position:
  //   's|'t|'re|'ve|'m|'ll|'d     contractions
  //   ' ?\p{L}+' ' ?\p{N}+' ' ?[^\s\p{L}\p{N}]+'   a run of one class,
  //                               with at most one leading ASCII space
  //   \s+(?!\S)                   whitespace not followed by a non-space:
  //                               all of a run that ends the text, else the
  //                               run but its last character (which then
  //                               leads the next piece)
  //   \s+                         a single whitespace before a non-space
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    if (size_t length = contractionLength(text, pos)) {
      piece(text.substr(start, length));
      pos += length;
      continue;
    }
    Char c = charAt(text, pos);
    if (c.codePoint == ' ' && pos + 1 < text.size()) {
      Char next = charAt(text, pos + 1);
      if (next.cls != CharClass::Space) {
        size_t end = runEnd(text, pos + 1, next.cls);
        piece(text.substr(start, end - start));
        pos = end;
        continue;
      }
    }
    if (c.cls != CharClass::Space) {
      size_t end = runEnd(text, pos, c.cls);
      piece(text.substr(start, end - start));
      pos = end;
      continue;
    }
    // A whitespace run: find its end and where its last character starts.
    size_t last = pos, end = pos;
    while (end < text.size()) {
      Char s = charAt(text, end);
      if (s.cls != CharClass::Space)
        break;
      last = end;
      end += s.length;
    }
    if (end < text.size() && last > start)
      end = last;
    piece(text.substr(start, end - start));
    pos = end;
  }
}

//===----------------------------------------------------------------------===//
// Vocabulary files
//===----------------------------------------------------------------------===//

namespace {

/// GPT-2's bytes_to_unicode, inverted: the byte each of its 256 stand-in
/// characters means (-1 for other code points below 512).
struct ByteAlphabet {
  int16_t byteOf[512];
  ByteAlphabet() {
    for (int16_t &b : byteOf)
      b = -1;
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      byteOf[printable ? b : next++] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet &byteAlphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

/// The raw bytes a token written in GPT-2's alphabet stands for; false when
/// it holds another character (`bad` gets it).
bool decodeAlphabet(const std::string &symbol, std::string &bytes,
                    uint32_t &bad) {
  bytes.clear();
  size_t pos = 0, invalid = 0;
  while (pos < symbol.size()) {
    size_t length = validSequenceLength(symbol, pos, invalid);
    if (length == 0) {
      bad = static_cast<uint8_t>(symbol[pos]);
      return false;
    }
    uint32_t codePoint = decodeSequence(symbol, pos, length);
    int b = codePoint < 512 ? byteAlphabet().byteOf[codePoint] : -1;
    if (b < 0) {
      bad = codePoint;
      return false;
    }
    bytes.push_back(static_cast<char>(b));
    pos += length;
  }
  return true;
}

std::string codePointName(uint32_t codePoint) {
  char name[16];
  std::snprintf(name, sizeof(name), "U+%04X", codePoint);
  return name;
}

std::string readWholeFile(const std::string &path) {
  MappedFile file(path);
  return std::string(reinterpret_cast<const char *>(file.data()), file.size());
}

} // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const std::string &encoderPath,
                             const std::string &mergesPath)
    : encoderPath_(encoderPath) {
  loadEncoder(encoderPath);
  loadMerges(mergesPath);
}

void Gpt2Tokenizer::loadEncoder(const std::string &path) {
  JsonValue json;
  std::string error;
  if (!parseJson(readWholeFile(path), json, error))
    throw Error(path + ": not valid JSON: " + error);
  if (!json.isObject())
    throw Error(path + ": expected a JSON object mapping tokens to ids, got " +
                std::string(JsonValue::kindName(json.kind())));
  std::unordered_map<int64_t, const std::string *> tokenOfId;
  for (int &id : byteIds_)
    id = -1;
  bool haveEndOfText = false;
  for (const auto &[token, value] : json.asObject()) {
    if (!value.isInteger())
      throw Error(path + ": token \"" + token + "\" has id " +
                  writeJson(value) + ", expected an integer");
    int64_t id = value.asInt();
    if (id < 0 || id > 65535)
      throw Error(path + ": token \"" + token + "\" has id " +
                  std::to_string(id) +
                  ", outside [0, 65535]: token shards store uint16 tokens");
    auto [other, fresh] = tokenOfId.emplace(id, &token);
    if (!fresh)
      throw Error(path + ": tokens \"" + *other->second + "\" and \"" + token +
                  "\" have the same id " + std::to_string(id));
    if (token == "<|endoftext|>") {
      endOfText_ = static_cast<uint16_t>(id);
      haveEndOfText = true;
      vocabSize_ = std::max<int64_t>(vocabSize_, id + 1);
      continue;
    }
    std::string bytes;
    uint32_t bad = 0;
    if (!decodeAlphabet(token, bytes, bad))
      throw Error(path + ": token \"" + token + "\" has the character " +
                  codePointName(bad) +
                  ", which is not one of GPT-2's 256 byte characters");
    if (bytes.empty())
      throw Error(path + ": the empty token has id " + std::to_string(id));
    if (bytes.size() == 1)
      byteIds_[static_cast<uint8_t>(bytes[0])] = static_cast<int32_t>(id);
    ids_.emplace(std::move(bytes), static_cast<int32_t>(id));
    vocabSize_ = std::max<int64_t>(vocabSize_, id + 1);
  }
  if (!haveEndOfText)
    throw Error(path + ": no \"<|endoftext|>\" token, which tg-data puts "
                       "before every document");
}

void Gpt2Tokenizer::loadMerges(const std::string &path) {
  std::string text = readWholeFile(path);
  std::unordered_map<uint64_t, int64_t> lineOf;
  size_t start = 0;
  int64_t lineNumber = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string::npos)
      newline = text.size();
    std::string line = text.substr(start, newline - start);
    start = newline + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || (lineNumber == 1 && line.rfind("#version", 0) == 0))
      continue;
    std::string where = path + ":" + std::to_string(lineNumber) + ": ";
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw Error(where +
                  "expected a merge, two symbols separated by one "
                  "space, got '" +
                  line + "'");
    std::string parts[2] = {line.substr(0, space), line.substr(space + 1)};
    std::string bytes[2];
    int32_t partIds[2];
    for (int k = 0; k < 2; ++k) {
      uint32_t bad = 0;
      if (!decodeAlphabet(parts[k], bytes[k], bad))
        throw Error(where + "'" + parts[k] + "' has the character " +
                    codePointName(bad) +
                    ", which is not one of GPT-2's 256 byte characters");
      auto it = ids_.find(bytes[k]);
      if (it == ids_.end())
        throw Error(where + "merge '" + line + "': " + encoderPath_ +
                    " has no token \"" + parts[k] + "\"");
      partIds[k] = it->second;
    }
    auto result = ids_.find(bytes[0] + bytes[1]);
    if (result == ids_.end())
      throw Error(where + "merge '" + line + "': " + encoderPath_ +
                  " has no token \"" + parts[0] + parts[1] +
                  "\" for its result");
    uint64_t key = pairKey(partIds[0], partIds[1]);
    auto [earlier, fresh] = lineOf.emplace(key, lineNumber);
    if (!fresh)
      throw Error(where + "merge '" + line + "' repeats line " +
                  std::to_string(earlier->second));
    merges_.emplace(
        key, Merge{static_cast<int32_t>(merges_.size()), result->second});
  }
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

void Gpt2Tokenizer::encode(std::string_view text, std::vector<uint16_t> &out,
                           const std::string &source) {
  splitGpt2Pieces(
      text, [&](std::string_view piece) { encodePiece(piece, out, source); });
}

void Gpt2Tokenizer::encodePiece(std::string_view piece,
                                std::vector<uint16_t> &out,
                                const std::string &source) {
  std::string key(piece);
  auto cached = cache_.find(key);
  if (cached != cache_.end()) {
    out.insert(out.end(), cached->second.begin(), cached->second.end());
    return;
  }

  if (piece.size() > static_cast<size_t>(INT32_MAX))
    throw Error(source + ": a run of " + std::to_string(piece.size()) +
                " bytes without a word boundary is too long to tokenize");
  const int32_t n = static_cast<int32_t>(piece.size());
  std::vector<int32_t> ids(n), next(n), prev(n);
  for (int32_t k = 0; k < n; ++k) {
    uint8_t byte = static_cast<uint8_t>(piece[k]);
    ids[k] = byteIds_[byte];
    if (ids[k] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", byte);
      throw Error(source + ": byte " + hex + " has no token in " +
                  encoderPath_ +
                  " (a GPT-2 vocabulary has one for each of "
                  "the 256 bytes)");
    }
    prev[k] = k - 1;
    next[k] = k + 1 < n ? k + 1 : -1;
  }

  struct Candidate {
    int32_t rank, pos, left, right;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>,
                      std::greater<Candidate>>
      heap;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0)
      return;
    auto merge = merges_.find(pairKey(ids[pos], ids[next[pos]]));
    if (merge != merges_.end())
      heap.push({merge->second.rank, pos, ids[pos], ids[next[pos]]});
  };
  for (int32_t k = 0; k + 1 < n; ++k)
    consider(k);

  std::vector<Candidate> batch;
  while (!heap.empty()) {
    // All occurrences of the lowest-rank pair, left to right. A merge makes
    // pairs with its result, never the pair being merged, so the batch is
    // complete before any of it is applied (as in encoder.py).
    int32_t rank = heap.top().rank;
    batch.clear();
    while (!heap.empty() && heap.top().rank == rank) {
      batch.push_back(heap.top());
      heap.pop();
    }
    for (const Candidate &c : batch) {
      int32_t right = next[c.pos];
      if (ids[c.pos] != c.left || right < 0 || ids[right] != c.right)
        continue; // stale: the pair changed since it was pushed
      ids[c.pos] = merges_.find(pairKey(c.left, c.right))->second.result;
      ids[right] = -1;
      next[c.pos] = next[right];
      if (next[right] >= 0)
        prev[next[right]] = c.pos;
      consider(prev[c.pos]);
      consider(c.pos);
    }
  }

  std::vector<uint16_t> tokens;
  for (int32_t k = 0; k >= 0; k = next[k])
    tokens.push_back(static_cast<uint16_t>(ids[k]));
  out.insert(out.end(), tokens.begin(), tokens.end());
  if (cache_.size() >= (1u << 20))
    cache_.clear(); // bound the memory on corpora with many distinct pieces
  cache_.emplace(std::move(key), std::move(tokens));
}

} // namespace data
} // namespace tgc

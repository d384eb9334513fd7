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
#include "runtime/core/JsonText.h"
#include "runtime/core/MappedFile.h"
#include "tools/tg-data/Utf8.h"

#include <climits>
#include <cstdio>
#include <memory>
#include <new>
#include <queue>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace tgc {
namespace data {

//===----------------------------------------------------------------------===//
// Pre-tokenization
//===----------------------------------------------------------------------===//

namespace {

/// GPT-2's pre-tokenization regex (encoder.py),
///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
/// with \s written \p{White_Space} and \S \P{White_Space}. White_Space is
/// what \s means in the `regex` module GPT-2 ran it with (and in tiktoken),
/// so U+001C..U+001F, which Python's str.isspace() accepts, are not white
/// space. PCRE2's \s under PCRE2_UCP differs in one character: it also
/// matches U+180E MONGOLIAN VOWEL SEPARATOR, a format character since
/// Unicode 6.3, which would cut "!\u180E!" into three pieces. \p{L} and
/// \p{N} are general categories from PCRE2's tables (Unicode 14 in 10.42).
const char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d)"
    R"(| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+)"
    R"(|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

std::string pcre2Message(int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof(message));
  return reinterpret_cast<const char *>(message);
}

/// The pattern, compiled once (and JIT-compiled where PCRE2 has a JIT for
/// this machine; pcre2_match interprets it otherwise). It is anchored: every
/// character is a letter, a number, white space or none of these, so some
/// alternative matches wherever the previous piece ended, and the pieces
/// tile the text without a search for the next match.
const pcre2_code *gpt2Pattern() {
  static const std::unique_ptr<pcre2_code, void (*)(pcre2_code *)> pattern(
      [] {
        int error = 0;
        PCRE2_SIZE offset = 0;
        pcre2_code *code = pcre2_compile(
            reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
            PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &error, &offset, nullptr);
        if (!code)
          throw Error("PCRE2 cannot compile GPT-2's pre-tokenizer regex: " +
                      pcre2Message(error) + " (at character " +
                      std::to_string(offset) + ")");
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
        return code;
      }(),
      pcre2_code_free);
  return pattern.get();
}

} // namespace

void splitGpt2Pieces(std::string_view text,
                     const std::function<void(std::string_view)> &piece) {
  const pcre2_code *pattern = gpt2Pattern();
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data *)> match(
      pcre2_match_data_create_from_pattern(pattern, nullptr),
      pcre2_match_data_free);
  if (!match)
    throw std::bad_alloc();
  const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.get());
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The first match also checks that all of the text is UTF-8. The others
  // skip that check, which would rescan the rest of the text at every
  // piece, and where the pattern has JIT code they call it directly
  // (pcre2_jit_match, PCRE2's fast path without pcre2_match's checks).
  size_t jitSize = 0;
  pcre2_pattern_info(pattern, PCRE2_INFO_JITSIZE, &jitSize);
  auto matchNext = pcre2_match;
  uint32_t options = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int found = matchNext(pattern, subject, text.size(), pos, options,
                          match.get(), nullptr);
    if (found <= PCRE2_ERROR_UTF8_ERR1 && found >= PCRE2_ERROR_UTF8_ERR21)
      throw Error("the GPT-2 pre-tokenizer was given text that is not valid "
                  "UTF-8 at byte " +
                  std::to_string(pcre2_get_startchar(match.get())) + ": " +
                  pcre2Message(found));
    if (found < 0)
      throw Error("GPT-2's pre-tokenizer regex failed at byte " +
                  std::to_string(pos) + ": " + pcre2Message(found));
    piece(text.substr(pos, ovector[1] - pos));
    pos = ovector[1];
    options = PCRE2_NO_UTF_CHECK;
    if (jitSize > 0)
      matchNext = pcre2_jit_match;
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
  Json json;
  std::string error;
  if (!parseJson(readWholeFile(path), json, error))
    throw Error(path + ": not valid JSON: " + error);
  if (!json.is_object())
    throw Error(path + ": expected a JSON object mapping tokens to ids, got " +
                std::string(jsonKindName(json)));
  std::unordered_map<int64_t, const std::string *> tokenOfId;
  for (int &id : byteIds_)
    id = -1;
  bool haveEndOfText = false;
  for (const auto &[token, value] : json.items()) {
    if (!value.is_number_integer())
      throw Error(path + ": token \"" + token + "\" has id " +
                  writeJson(value) + ", expected an integer");
    int64_t id = value.get<int64_t>();
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

//===- Gpt2Tokenizer.h - GPT-2's byte-level BPE -----------------*- C++ -*-===//
//
// The tokenizer of GPT-2 (and llm.c's data): text is split into pieces by
// GPT-2's pre-tokenization regex (run by PCRE2), each piece's UTF-8 bytes
// start as one symbol per byte, and the merges of vocab.bpe are applied
// lowest rank first until none applies; the resulting symbols are looked up
// in encoder.json. Both files use GPT-2's printable stand-ins for bytes
// (bytes_to_unicode: space is "Ġ", newline "Ċ"), which are mapped back to
// raw bytes on load. "<|endoftext|>" in the input is ordinary text (as
// tiktoken's encode_ordinary, which llm.c uses); the tokenizer only emits
// the end-of-text token where a caller asks for it.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_GPT2TOKENIZER_H
#define TGC_TOOLS_TGDATA_GPT2TOKENIZER_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tgc {
namespace data {

/// Calls `piece` with each piece of GPT-2's pre-tokenization of `text`
/// (valid UTF-8), in order; the pieces concatenate to `text`. Throws
/// tgc::Error if `text` is not valid UTF-8 after all.
void splitGpt2Pieces(std::string_view text,
                     const std::function<void(std::string_view)> &piece);

class Gpt2Tokenizer {
public:
  /// Loads encoder.json (token -> id) and vocab.bpe (merges, one "A B" per
  /// line after an optional "#version" line). Throws tgc::Error naming the
  /// file, and the line for vocab.bpe, on malformed content: bad JSON, an id
  /// that is not an integer in [0, 65535] (token shards are uint16), two
  /// tokens with one id, a character outside GPT-2's byte alphabet, a merge
  /// that is not two symbols, repeats an earlier one, or whose parts or
  /// result encoder.json lacks, or no "<|endoftext|>" token.
  Gpt2Tokenizer(const std::string &encoderPath, const std::string &mergesPath);

  /// Appends the tokens of `text` (valid UTF-8) to `out`. Throws tgc::Error
  /// naming `source` when a byte has no token in encoder.json.
  void encode(std::string_view text, std::vector<uint16_t> &out,
              const std::string &source);

  uint16_t endOfText() const { return endOfText_; }
  /// The largest id in encoder.json plus one.
  int64_t vocabSize() const { return vocabSize_; }
  int64_t numMerges() const { return static_cast<int64_t>(merges_.size()); }

private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  void loadEncoder(const std::string &path);
  void loadMerges(const std::string &path);
  void encodePiece(std::string_view piece, std::vector<uint16_t> &out,
                   const std::string &source);

  std::string encoderPath_;
  std::unordered_map<std::string, int32_t> ids_; ///< raw bytes -> id
  int32_t byteIds_[256];                         ///< -1: not in the encoder
  std::unordered_map<uint64_t, Merge> merges_;
  std::unordered_map<std::string, std::vector<uint16_t>> cache_;
  uint16_t endOfText_ = 0;
  int64_t vocabSize_ = 0;
};

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_GPT2TOKENIZER_H

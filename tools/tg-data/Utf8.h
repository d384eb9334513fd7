//===- Utf8.h - UTF-8 validation and decoding -------------------*- C++ -*-===//
//
// The GPT-2 tokenizer works on valid UTF-8 text. A file that is not valid
// UTF-8 is an error by default (naming the byte offset and line), or, with
// --utf8-errors replace, each invalid sequence becomes U+FFFD exactly as
// Python's bytes.decode("utf-8", errors="replace") does (one U+FFFD per
// maximal invalid subpart, Unicode's recommended practice).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_UTF8_H
#define TGC_TOOLS_TGDATA_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tgc {
namespace data {

/// The length of the valid UTF-8 sequence starting at text[pos], or 0 when
/// the bytes there are not one; `invalidLength` gets the number of bytes of
/// the maximal invalid subpart (at least 1) in that case.
size_t validSequenceLength(std::string_view text, size_t pos,
                           size_t &invalidLength);

/// Decodes the valid sequence of `length` bytes at text[pos].
uint32_t decodeSequence(std::string_view text, size_t pos, size_t length);

enum class Utf8Errors { Error, Replace };

/// `text` itself when it is valid UTF-8. Otherwise throws tgc::Error naming
/// `path`, the byte offset, line and byte (Utf8Errors::Error), or returns the
/// text with every invalid sequence replaced by U+FFFD; `replaced` counts
/// the replacements.
std::string makeValidUtf8(std::string text, const std::string &path,
                          Utf8Errors mode, int64_t &replaced);

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_UTF8_H

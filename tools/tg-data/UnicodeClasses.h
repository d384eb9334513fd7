//===- UnicodeClasses.h - GPT-2's pre-tokenizer classes ---------*- C++ -*-===//
//
// GPT-2 splits text with the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// which sorts every code point into one of four classes. Letters and numbers
// are the Unicode general categories L* and N*, from tables generated out of
// Python's unicodedata (gen-unicode-tables.py, Unicode 14.0); whitespace is
// the Unicode White_Space property, as in the `regex` module GPT-2 used and in
// tiktoken (so U+001C..U+001F, which Python's str.isspace() accepts, are
// "other" here).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_UNICODECLASSES_H
#define TGC_TOOLS_TGDATA_UNICODECLASSES_H

#include <cstdint>

namespace tgc {
namespace data {

enum class CharClass : uint8_t { Other, Letter, Number, Space };

/// The class of a Unicode scalar value.
CharClass classifyCodePoint(uint32_t codePoint);

/// The Unicode version the letter and number tables come from.
const char *unicodeTablesVersion();

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_UNICODECLASSES_H

//===- UnicodeClasses.cpp - GPT-2's pre-tokenizer classes -------*- C++ -*-===//
//
// ASCII is classified inline; everything else by a binary search over the
// generated ranges in UnicodeTables.inc (788 ranges).
//
//===----------------------------------------------------------------------===//

#include "tools/tg-data/UnicodeClasses.h"

#include <algorithm>
#include <iterator>

namespace tgc {
namespace data {

namespace {
struct ClassRange {
  uint32_t first, last;
  CharClass cls;
};

const ClassRange kClassRanges[] = {
#include "tools/tg-data/UnicodeTables.inc"
};

bool isWhiteSpace(uint32_t c) {
  // The Unicode White_Space property (PropList.txt, unchanged since 6.3).
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
} // namespace

CharClass classifyCodePoint(uint32_t c) {
  if (c < 0x80) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      return CharClass::Letter;
    if (c >= '0' && c <= '9')
      return CharClass::Number;
    return isWhiteSpace(c) ? CharClass::Space : CharClass::Other;
  }
  if (isWhiteSpace(c))
    return CharClass::Space;
  const ClassRange *end = std::end(kClassRanges);
  const ClassRange *it =
      std::upper_bound(std::begin(kClassRanges), end, c,
                       [](uint32_t value, const ClassRange &range) {
                         return value < range.first;
                       });
  if (it == std::begin(kClassRanges))
    return CharClass::Other;
  --it;
  return c <= it->last ? it->cls : CharClass::Other;
}

const char *unicodeTablesVersion() { return TGC_UNICODE_VERSION; }

} // namespace data
} // namespace tgc

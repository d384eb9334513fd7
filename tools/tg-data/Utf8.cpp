//===- Utf8.cpp - UTF-8 validation and decoding -----------------*- C++ -*-===//

#include "tools/tg-data/Utf8.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cstdio>

namespace tgc {
namespace data {

size_t validSequenceLength(std::string_view text, size_t pos,
                           size_t &invalidLength) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  uint8_t lead = byte(pos);
  if (lead < 0x80)
    return 1;
  // The allowed range of the second byte and the sequence length (Unicode
  // table 3-7, "well-formed UTF-8 byte sequences").
  uint8_t low = 0x80, high = 0xBF;
  size_t length;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0)
      low = 0xA0; // no overlong forms
    else if (lead == 0xED)
      high = 0x9F; // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0)
      low = 0x90;
    else if (lead == 0xF4)
      high = 0x8F; // nothing above U+10FFFF
  } else {
    invalidLength = 1;
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    if (pos + k >= text.size()) {
      invalidLength = k;
      return 0;
    }
    uint8_t b = byte(pos + k);
    bool ok = k == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      invalidLength = k;
      return 0;
    }
  }
  return length;
}

uint32_t decodeSequence(std::string_view text, size_t pos, size_t length) {
  auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + i]));
  };
  switch (length) {
  case 1:
    return byte(0);
  case 2:
    return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
  case 3:
    return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) |
           (byte(2) & 0x3F);
  default:
    return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) |
           ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
}

std::string makeValidUtf8(std::string text, const std::string &path,
                          Utf8Errors mode, int64_t &replaced) {
  replaced = 0;
  size_t pos = 0, invalid = 0;
  // Fast path: most files are valid (and mostly ASCII).
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t length = validSequenceLength(text, pos, invalid);
    if (length == 0)
      break;
    pos += length;
  }
  if (pos == text.size())
    return text;

  if (mode == Utf8Errors::Error) {
    int64_t line = 1 + std::count(text.begin(), text.begin() + pos, '\n');
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<uint8_t>(text[pos]));
    throw Error(path + ": not valid UTF-8 at byte " + std::to_string(pos) +
                " (line " + std::to_string(line) + "): byte " + hex +
                " (use --utf8-errors replace to read it with U+FFFD "
                "replacement characters)");
  }

  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out(text, 0, pos);
  out.reserve(text.size() + 16);
  while (pos < text.size()) {
    size_t length = validSequenceLength(text, pos, invalid);
    if (length == 0) {
      out += kReplacement;
      ++replaced;
      pos += invalid;
    } else {
      out.append(text, pos, length);
      pos += length;
    }
  }
  return out;
}

} // namespace data
} // namespace tgc

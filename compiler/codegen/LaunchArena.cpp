//===- LaunchArena.cpp - Arena placement over a schedule of launches -*- C++ -*-===//
//
// A linear scan over positions with first-fit placement, as ArenaPlan.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/LaunchArena.h"

#include <algorithm>
#include <map>

using namespace mlir::tg;

int LaunchArena::addBuffer(int64_t bytes) {
  buffers.push_back({bytes});
  return static_cast<int>(buffers.size()) - 1;
}

void LaunchArena::touch(int buffer, int64_t position) {
  Buffer &b = buffers[buffer];
  b.first = b.first < 0 ? position : std::min(b.first, position);
  b.last = std::max(b.last, position);
}

void LaunchArena::plan(int64_t alignment) {
  auto alignUp = [&](int64_t n) {
    return (std::max<int64_t>(n, 1) + alignment - 1) / alignment * alignment;
  };
  // Buffers by first and by last position.
  std::multimap<int64_t, int> starts, ends;
  for (int i = 0; i < size(); ++i)
    if (buffers[i].first >= 0) {
      starts.insert({buffers[i].first, i});
      ends.insert({buffers[i].last, i});
    }
  std::map<int64_t, int64_t> live; // offset -> bytes
  peak = 0;
  auto startIt = starts.begin();
  auto endIt = ends.begin();
  while (startIt != starts.end() || endIt != ends.end()) {
    int64_t position = startIt != starts.end() ? startIt->first : INT64_MAX;
    if (endIt != ends.end())
      position = std::min(position, endIt->first);
    for (; startIt != starts.end() && startIt->first == position; ++startIt) {
      Buffer &b = buffers[startIt->second];
      int64_t size = alignUp(b.bytes);
      int64_t offset = 0;
      for (auto [start, bytes] : live) {
        if (start - offset >= size)
          break;
        offset = std::max(offset, start + bytes);
      }
      live[offset] = size;
      b.offset = offset;
      peak = std::max(peak, offset + size);
    }
    for (; endIt != ends.end() && endIt->first == position; ++endIt)
      live.erase(buffers[endIt->second].offset);
  }
}

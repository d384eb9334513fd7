//===- UsageProfile.cpp - Live memory per time segment ----------*- C++ -*-===//
//
// A segment tree without push-down: an add that covers a tree node's whole
// range stays in that node's `pending`, and a query adds the pending amounts
// on its way down.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/UsageProfile.h"

#include <algorithm>
#include <limits>

using namespace tg::shardsolve;

UsageProfile::UsageProfile(int32_t numSegments)
    : size(numSegments), top(4 * std::max(numSegments, 1), 0),
      pending(4 * std::max(numSegments, 1), 0) {}

void UsageProfile::add(int32_t first, int32_t last, int64_t amount) {
  if (first < last && amount != 0)
    add(1, 0, size, first, last, amount);
}

void UsageProfile::add(int32_t node, int32_t low, int32_t high, int32_t first,
                       int32_t last, int64_t amount) {
  if (first <= low && high <= last) {
    pending[node] += amount;
    top[node] += amount;
    return;
  }
  int32_t middle = (low + high) / 2;
  if (first < middle)
    add(2 * node, low, middle, first, last, amount);
  if (last > middle)
    add(2 * node + 1, middle, high, first, last, amount);
  top[node] = pending[node] + std::max(top[2 * node], top[2 * node + 1]);
}

int64_t UsageProfile::max(int32_t first, int32_t last) const {
  if (first >= last)
    return 0;
  return max(1, 0, size, first, last);
}

int64_t UsageProfile::max(int32_t node, int32_t low, int32_t high,
                          int32_t first, int32_t last) const {
  if (first <= low && high <= last)
    return top[node];
  int32_t middle = (low + high) / 2;
  int64_t best = std::numeric_limits<int64_t>::min();
  if (first < middle)
    best = std::max(best, max(2 * node, low, middle, first, last));
  if (last > middle)
    best = std::max(best, max(2 * node + 1, middle, high, first, last));
  return pending[node] + best;
}

int32_t UsageProfile::peakSegment() const {
  int32_t node = 1, low = 0, high = size;
  while (high - low > 1) {
    int32_t middle = (low + high) / 2;
    // The child that holds this node's maximum.
    if (top[2 * node] >= top[2 * node + 1]) {
      node = 2 * node;
      high = middle;
    } else {
      node = 2 * node + 1;
      low = middle;
    }
  }
  return low;
}

//===- UsageProfile.h - Live memory per time segment ------------*- C++ -*-===//
//
// The memory live in each time segment under the current choice, as a
// segment tree: adding a node's usage over its span and asking for the most
// memory in a span are both O(log segments), which is what a local search
// needs to test a move against the limit.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_USAGEPROFILE_H
#define TGC_PLANNING_SHARDSOLVE_USAGEPROFILE_H

#include <cstdint>
#include <vector>

namespace tg::shardsolve {

class UsageProfile {
public:
  explicit UsageProfile(int32_t numSegments);

  /// Adds `amount` to every segment in [first, last).
  void add(int32_t first, int32_t last, int64_t amount);
  /// The most memory live in one segment of [first, last); 0 when empty.
  int64_t max(int32_t first, int32_t last) const;
  /// The most memory live in any segment.
  int64_t peak() const { return size ? top[1] : 0; }
  /// A segment where the peak is reached.
  int32_t peakSegment() const;

private:
  void add(int32_t node, int32_t low, int32_t high, int32_t first, int32_t last,
           int64_t amount);
  int64_t max(int32_t node, int32_t low, int32_t high, int32_t first,
              int32_t last) const;

  int32_t size;
  /// Per tree node: the most in its range, counting its own pending adds
  /// but not its ancestors'.
  std::vector<int64_t> top;
  /// Per tree node: what was added to its whole range.
  std::vector<int64_t> pending;
};

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_USAGEPROFILE_H

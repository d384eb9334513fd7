//===- MemoryPrices.h - Lagrange multipliers of the memory rows -*- C++ -*-===//
//
// The memory limit relaxed into the objective: a price per byte for each
// time segment (a multiplier of that segment's memory row), so that a node
// pays its usage times the sum of prices over its live segments. Without
// the limit the priced problem is plain PBQP; subgradient steps raise the
// prices where the relaxed choice overflows and lower them where it does
// not, with Polyak's step length from the best valid cost known.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_MEMORYPRICES_H
#define TGC_PLANNING_SHARDSOLVE_MEMORYPRICES_H

#include "planning/shardsolve/SearchGraph.h"

namespace tg::shardsolve {

class MemoryPrices {
public:
  explicit MemoryPrices(const SearchGraph &graph);

  /// Per node, the price of one byte over its live segments.
  std::vector<double> nodePrices() const;
  /// The relaxation's value at the current prices for `choice`: the cost
  /// with usage priced, less the prices times the limit. A lower bound when
  /// `choice` minimises the priced cost.
  double dualValue(llvm::ArrayRef<int32_t> choice) const;
  llvm::ArrayRef<double> perSegment() const { return segmentPrices; }
  /// One subgradient step towards `choice`'s overflow, of Polyak's length
  /// `scale` x (target - dual) / |subgradient|^2. Returns false when the
  /// subgradient is zero (`choice` fits and all priced rows are tight).
  bool step(llvm::ArrayRef<int32_t> choice, double target, double dual,
            double scale);

  /// Once subgradient steps stall, prices move by factors instead: up by
  /// `raise` on each segment where `choice` overflows (from a floor of the
  /// mean positive price, or the cost scale per byte of the limit when no
  /// price is positive), else down by `lower`
  /// everywhere, so that the priced choice edges to the limit from both
  /// sides. Returns whether `choice` fits.
  bool adapt(llvm::ArrayRef<int32_t> choice, double raise, double lower);

private:
  std::vector<int64_t> loads(llvm::ArrayRef<int32_t> choice) const;

  const SearchGraph &graph;
  std::vector<double> segmentPrices;
};

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_MEMORYPRICES_H

//===- RematGraph.h - The forward pass as tg-remat's problem ----*- C++ -*-===//
//
// A step function's forward pass seen as a recomputation problem: the
// forward values the backward reads (each kept from the forward, or computed
// again), what each forward op costs to run again (tg::flopCount) and what
// each of its results costs to keep (its bytes). A choice is the set of
// forward ops run again; `evaluate` says what it keeps and adds, and
// `applyRemat` makes the copies.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_REMAT_REMATGRAPH_H
#define TGC_PASSES_REMAT_REMATGRAPH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"

#include <optional>
#include <string>

namespace mlir::tg {

struct RematGraph {
  struct Node {
    Operation *op;
    /// FLOPs to run it again.
    double flops;
    /// Whether it may run again: pure, computes nothing another layer
    /// reads (what leaves a layer is kept, so recomputation stays within
    /// a layer), and allowed by the policy.
    bool mayRecompute;
    /// Its layer (an index into `layers`), -1 outside every layer.
    int layer;
    /// The forward values it reads (indices into `values`); arguments and
    /// constants are always at hand and not listed.
    SmallVector<int> operands;
    /// Its results (indices into `values`).
    SmallVector<int> results;
  };
  struct ValueInfo {
    Value value;
    /// The node that computes it.
    int node;
    /// Its bytes; 0 for a value the function returns (kept to the end
    /// anyway).
    int64_t bytes;
    /// Read by an op of the backward pass (other than the return).
    bool needed;
    /// Whether it may be kept from the forward: allowed by the policy.
    bool mayKeep;
    /// Read by a forward op outside its own layer (a layer's output, or
    /// what the ops outside layers hand to a layer).
    bool leavesLayer;
  };

  func::FuncOp func;
  /// The last op of the forward pass.
  Operation *forwardEnd;
  /// Forward ops in order.
  SmallVector<Node> nodes;
  SmallVector<ValueInfo> values;
  /// Layer names ("h.0"), in the order their first op appears.
  SmallVector<std::string> layers;

  /// The forward pass of `func`: up to the last op a model output
  /// (tg.output) or the loss (tg.metric "loss") comes from. None for a
  /// function without a backward (no such result, or nothing after it).
  static std::optional<RematGraph> build(func::FuncOp func);

  /// Bytes the backward reads from the forward with nothing recomputed.
  int64_t neededBytes() const;
};

/// What a choice of ops to run again keeps and adds.
struct RematCost {
  /// Forward values held from the forward to the backward.
  int64_t keptBytes = 0;
  /// FLOPs of the ops run again.
  double addedFlops = 0;
  /// The ops that do run again: those chosen whose results are read, by
  /// the backward or by another op run again.
  llvm::BitVector recomputed;
  /// Forward values the backward has, kept or recomputed.
  llvm::BitVector available;
  /// Whether every value kept may be kept.
  bool allowed = true;
};

/// The cost of running `recompute` (a bit per node) again.
RematCost evaluate(const RematGraph &graph, const llvm::BitVector &recompute);

/// Runs the ops `cost.recomputed` again in the backward: each copy right
/// before the first backward op that reads it (or reads a copy that needs
/// it), every backward reader of a recomputed value reading the copy.
/// Returns the copies made.
SmallVector<Operation *> applyRemat(const RematGraph &graph,
                                    const RematCost &cost);

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_REMATGRAPH_H

//===- RematGraph.cpp - The forward pass as tg-remat's problem --*- C++ -*-===//
//
// Node and value tables over the forward ops in order, a reverse sweep for
// what a choice needs, and the copies.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/RematGraph.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tg;

std::optional<RematGraph> RematGraph::build(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return std::nullopt;
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : block)
    position[&op] = position.size();

  RematGraph graph;
  graph.func = func;
  int64_t end = -1;
  Operation *ret = block.getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto metric =
        func.getResultAttrOfType<StringAttr>(i, TgDialect::kMetricAttr);
    if (func.getResultAttr(i, TgDialect::kOutputAttr) ||
        (metric && metric.getValue() == "loss")) {
      Operation *def = v.getDefiningOp();
      // A sharded step sums its loss over the data axes at the end, with
      // the gradients: the forward ends at what that collective reads.
      while (isa_and_nonnull<AllReduceOp, AllGatherOp, ReduceScatterOp>(def))
        def = def->getOperand(0).getDefiningOp();
      if (def)
        end = std::max(end, position.lookup(def));
    }
  }
  if (end < 0 || end + 1 >= (int64_t)position.size() - 1)
    return std::nullopt;

  DenseMap<Value, int> valueIndex;
  llvm::StringMap<int> layerIndex;
  for (Operation &op : block) {
    if (position.lookup(&op) > end)
      break;
    graph.forwardEnd = &op;
    if (op.getNumResults() == 0 ||
        !llvm::all_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
      continue;
    Node node;
    node.op = &op;
    node.flops = flopCount(&op);
    node.mayRecompute = isMemoryEffectFree(&op) && op.getNumRegions() == 0 &&
                        !isa<ConstantOp>(op);
    std::string layer = layerOfName(layerOf(&op));
    node.layer = -1;
    if (!layer.empty()) {
      auto [it, inserted] = layerIndex.try_emplace(layer, graph.layers.size());
      if (inserted)
        graph.layers.push_back(layer);
      node.layer = it->second;
    }
    for (Value operand : op.getOperands())
      if (auto it = valueIndex.find(operand); it != valueIndex.end())
        if (!llvm::is_contained(node.operands, it->second))
          node.operands.push_back(it->second);
    int n = graph.nodes.size();
    for (Value result : op.getResults()) {
      int v = graph.values.size();
      valueIndex[result] = v;
      node.results.push_back(v);
      bool needed = false, leaves = false, returned = false;
      for (Operation *user : result.getUsers()) {
        Operation *top = block.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        if (top == ret)
          returned = true;
        else if (position.lookup(top) > end)
          needed = true;
        else if (top != &op && layerOfName(layerOf(top)) != layer)
          leaves = true;
      }
      // A constant is not an activation: always at hand, never kept.
      if (isa<ConstantOp>(op))
        needed = false;
      // A value the function returns (the loss, a model output) lives to
      // the end anyway: keeping it for the backward costs nothing.
      graph.values.push_back(
          {result, n, returned ? 0 : tensorBytes(result.getType()), needed,
           /*mayKeep=*/true, leaves});
    }
    graph.nodes.push_back(std::move(node));
  }
  // What leaves a layer is kept (a layer's output, the next layer's input,
  // and what the ops outside layers hand to a layer): recomputation stays
  // within a layer, so what a layer's backward recomputes lives through
  // that backward alone (recomputing a layer's output would recompute the
  // layers before it where the backward starts, and keep all of it to the
  // end), and each layer's choice is its own.
  if (!graph.layers.empty())
    for (const ValueInfo &value : graph.values)
      if (value.leavesLayer)
        graph.nodes[value.node].mayRecompute = false;
  // Constants are always at hand: readers do not depend on them.
  for (Node &node : graph.nodes)
    llvm::erase_if(node.operands, [&](int v) {
      return isa<ConstantOp>(graph.nodes[graph.values[v].node].op);
    });
  return graph;
}

int64_t RematGraph::neededBytes() const {
  int64_t bytes = 0;
  for (const ValueInfo &v : values)
    if (v.needed)
      bytes += v.bytes;
  return bytes;
}

RematCost mlir::tg::evaluate(const RematGraph &graph,
                             const llvm::BitVector &recompute) {
  RematCost cost;
  cost.recomputed.resize(graph.nodes.size());
  cost.available.resize(graph.values.size());
  for (auto [i, v] : llvm::enumerate(graph.values))
    if (v.needed)
      cost.available.set(i);
  // Readers come after what they read: one sweep from the back settles
  // which chosen ops are read and what they need in turn.
  for (int n = graph.nodes.size() - 1; n >= 0; --n) {
    const RematGraph::Node &node = graph.nodes[n];
    if (!recompute.test(n) || !node.mayRecompute ||
        llvm::none_of(node.results,
                      [&](int v) { return cost.available.test(v); }))
      continue;
    cost.recomputed.set(n);
    cost.addedFlops += node.flops;
    for (int v : node.operands)
      cost.available.set(v);
  }
  for (int v : cost.available.set_bits()) {
    const RematGraph::ValueInfo &value = graph.values[v];
    if (cost.recomputed.test(value.node))
      continue;
    cost.keptBytes += value.bytes;
    cost.allowed &= value.mayKeep;
  }
  return cost;
}

SmallVector<Operation *> mlir::tg::applyRemat(const RematGraph &graph,
                                              const RematCost &cost) {
  func::FuncOp func = graph.func;
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : block)
    position[&op] = position.size();
  int64_t end = position.lookup(graph.forwardEnd);

  // Where each copy goes: before the first backward op that reads one of
  // its results, or before the copy of a recomputed reader, whichever is
  // first; readers are settled first, from the back.
  DenseMap<int, Operation *> at;
  auto earlier = [&](Operation *a, Operation *b) {
    if (!a)
      return b;
    if (!b)
      return a;
    return position.lookup(a) < position.lookup(b) ? a : b;
  };
  DenseMap<int, SmallVector<int>> readers; // node -> recomputed readers
  for (int n : cost.recomputed.set_bits())
    for (int v : graph.nodes[n].operands)
      readers[graph.values[v].node].push_back(n);
  for (int n = graph.nodes.size() - 1; n >= 0; --n) {
    if (!cost.recomputed.test(n))
      continue;
    Operation *first = nullptr;
    for (Value r : graph.nodes[n].op->getResults())
      for (Operation *user : r.getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user))
          if (position.lookup(top) > end)
            first = earlier(first, top);
    for (int reader : readers.lookup(n))
      first = earlier(first, at.lookup(reader));
    at[n] = first;
  }

  // The copies, in forward order, each reading the copies of what it
  // reads; then every backward reader reads the copy.
  IRMapping mapping;
  SmallVector<Operation *> copies;
  for (int n : cost.recomputed.set_bits()) {
    Operation *op = graph.nodes[n].op;
    OpBuilder builder(at.lookup(n));
    Operation *copy = builder.clone(*op, mapping);
    // Marked: otherwise it is the forward op's common subexpression, and a
    // later cse (tgc's own pipeline, on this IR read back) would undo the
    // recomputation.
    copy->setAttr(TgDialect::kRecomputeAttr, UnitAttr::get(op->getContext()));
    copies.push_back(copy);
    for (auto [r, c] : llvm::zip(op->getResults(), copy->getResults()))
      r.replaceUsesWithIf(c, [&](OpOperand &use) {
        Operation *top = block.findAncestorOpInBlock(*use.getOwner());
        return top && top != copy && !top->hasTrait<OpTrait::IsTerminator>() &&
               position.count(top) && position.lookup(top) > end;
      });
  }
  return copies;
}

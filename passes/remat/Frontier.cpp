//===- Frontier.cpp - Layers solved once, then combined ---------*- C++ -*-===//
//
// A layer's signature prints each op's name, attributes and types and
// where its operands come from (an earlier op of the layer, by number, or
// from outside); equal signatures share a frontier. Combining frontiers
// keeps, for each sum of bytes, only sums of FLOPs that no smaller sum of
// bytes beats, with a pointer back to the two choices that made it.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Frontier.h"

#include "dialects/tg/IR/TgDialect.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tg;

Frontier mlir::tg::paretoFilter(SmallVector<FrontierPoint> points) {
  llvm::sort(points, [](const FrontierPoint &a, const FrontierPoint &b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.flops < b.flops;
  });
  // Least bytes first: a point stays when it adds fewer FLOPs than every
  // point that keeps less.
  Frontier kept;
  for (FrontierPoint &p : points)
    if (kept.empty() || p.flops < kept.back().flops)
      kept.push_back(std::move(p));
  std::reverse(kept.begin(), kept.end());
  return kept;
}

RematGraph mlir::tg::subgraph(const RematGraph &graph, ArrayRef<int> nodes) {
  RematGraph sub;
  sub.func = graph.func;
  sub.forwardEnd = graph.forwardEnd;
  DenseMap<int, int> valueMap;
  for (int n : nodes) {
    const RematGraph::Node &node = graph.nodes[n];
    RematGraph::Node copy = node;
    copy.layer = -1;
    copy.operands.clear();
    for (int v : node.operands)
      if (auto it = valueMap.find(v); it != valueMap.end())
        copy.operands.push_back(it->second);
    copy.results.clear();
    for (int v : node.results) {
      valueMap[v] = sub.values.size();
      copy.results.push_back(sub.values.size());
      RematGraph::ValueInfo value = graph.values[v];
      value.node = sub.nodes.size();
      sub.values.push_back(value);
    }
    sub.nodes.push_back(std::move(copy));
  }
  return sub;
}

std::string mlir::tg::layerSignature(const RematGraph &graph,
                                     ArrayRef<int> nodes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  DenseMap<int, int> local; // value -> its number in the layer
  for (int n : nodes) {
    const RematGraph::Node &node = graph.nodes[n];
    Operation *op = node.op;
    // Every attribute but the layer's name, which differs between layers
    // by design.
    os << op->getName() << " {";
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() != TgDialect::kLayerAttr)
        os << attr.getName() << "=" << attr.getValue() << ",";
    os << "} " << node.mayRecompute << " (";
    for (Value operand : op->getOperands())
      os << operand.getType() << ",";
    os << ") [";
    for (int v : node.operands) {
      auto it = local.find(v);
      os << (it == local.end() ? -1 : it->second) << ",";
    }
    os << "] ->";
    for (int v : node.results) {
      const RematGraph::ValueInfo &value = graph.values[v];
      os << " " << value.value.getType() << " " << value.needed
         << value.mayKeep;
      local[v] = local.size();
    }
    os << ";";
  }
  return text;
}

SmallVector<SmallVector<int>> mlir::tg::nodesByLayer(const RematGraph &graph) {
  SmallVector<SmallVector<int>> layers(graph.layers.size());
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    if (node.layer >= 0)
      layers[node.layer].push_back(n);
  return layers;
}

int mlir::tg::countDistinctLayers(const RematGraph &graph) {
  llvm::StringSet<> signatures;
  for (const SmallVector<int> &layer : nodesByLayer(graph))
    if (!layer.empty())
      signatures.insert(layerSignature(graph, layer));
  return signatures.size();
}

namespace {

/// A point of the combined frontier: its sums and the choices behind it.
struct Combined {
  int64_t bytes;
  double flops;
  int previous; // index into the previous level's points
  int choice;   // index into this level's layer frontier
};

} // namespace

llvm::BitVector mlir::tg::recomputeByLayers(
    const RematGraph &graph, int64_t budget,
    llvm::function_ref<Frontier(const RematGraph &)> frontierOf,
    int &distinctLayers) {
  // The groups: each layer, then the ops outside layers.
  SmallVector<SmallVector<int>> groups = nodesByLayer(graph);
  groups.emplace_back();
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    if (node.layer < 0)
      groups.back().push_back(n);
  llvm::erase_if(groups, [](const SmallVector<int> &g) { return g.empty(); });

  // Each distinct group's frontier, once.
  llvm::StringMap<int> bySignature;
  SmallVector<Frontier> frontiers;
  SmallVector<int> frontierOfGroup;
  for (const SmallVector<int> &group : groups) {
    auto [it, inserted] =
        bySignature.try_emplace(layerSignature(graph, group), frontiers.size());
    if (inserted)
      frontiers.push_back(frontierOf(subgraph(graph, group)));
    frontierOfGroup.push_back(it->second);
  }
  distinctLayers = frontiers.size();

  // Combined group after group, dominated sums dropped.
  SmallVector<SmallVector<Combined>> levels;
  SmallVector<Combined> current{{0, 0.0, -1, -1}};
  for (int g = 0, e = groups.size(); g < e; ++g) {
    const Frontier &frontier = frontiers[frontierOfGroup[g]];
    SmallVector<Combined> sums;
    sums.reserve(current.size() * frontier.size());
    for (auto [i, c] : llvm::enumerate(current))
      for (auto [j, p] : llvm::enumerate(frontier))
        sums.push_back({c.bytes + p.bytes, c.flops + p.flops, (int)i, (int)j});
    llvm::sort(sums, [](const Combined &a, const Combined &b) {
      return a.bytes != b.bytes ? a.bytes < b.bytes : a.flops < b.flops;
    });
    SmallVector<Combined> next;
    for (const Combined &c : sums)
      if (next.empty() || c.flops < next.back().flops)
        next.push_back(c);
    levels.push_back(next);
    current = std::move(next);
  }

  // The budget's point (least bytes first, so the last that fits adds the
  // fewest FLOPs), else the one that keeps least; then back to each
  // group's choice. A value a layer hands to another counts where it is
  // read, so the whole step's evaluation has the last word: a point whose
  // sum undercounted gives way to the next smaller.
  auto choiceOf = [&](int pick) {
    llvm::BitVector recompute(graph.nodes.size());
    for (int g = groups.size() - 1; g >= 0; --g) {
      const Combined &c = levels[g][pick];
      const FrontierPoint &p = frontiers[frontierOfGroup[g]][c.choice];
      for (int i : p.recompute.set_bits())
        recompute.set(groups[g][i]);
      pick = c.previous;
    }
    return recompute;
  };
  int pick = 0;
  for (int i = 0, e = current.size(); i < e; ++i)
    if (current[i].bytes <= budget)
      pick = i;
  llvm::BitVector recompute = choiceOf(pick);
  while (pick > 0 && evaluate(graph, recompute).keptBytes > budget)
    recompute = choiceOf(--pick);
  return recompute;
}

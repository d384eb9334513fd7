//===- AutoShard.cpp - Shardings chosen by cost, as pins --------*- C++ -*-===//
//
// tg-auto-shard: the shardings of @train_step as an optimisation problem (a
// strategy per argument and op, a resharding cost per operand, memory per
// device over the ops' order), solved by planning/shardsolve and written
// back as pins for tg-propagate-sharding. Strategies come from the ops'
// sharding rules through decideOpSharding, so the partitioner decides what
// the solver priced.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/Sharding.h"

#include "planning/cost/CostModel.h"
#include "planning/shardsolve/Solver.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::tg {
#define GEN_PASS_DEF_AUTOSHARDPASS
#include "passes/sharding/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// At most this many strategies per node: the ones whose op runs fastest
/// (most split), the whole one and the one that holds least always among
/// them.
constexpr size_t kMaxChoices = 48;

/// One strategy of a node: the shardings its operands need and its
/// results have (an argument's one sharding is results[0]).
struct Choice {
  SmallVector<ShardingAttr> operands;
  SmallVector<ShardingAttr> results;
  double seconds = 0;
  int64_t bytes = 0;
};

struct Node {
  Operation *op = nullptr;
  BlockArgument arg;
  SmallVector<Choice> choices;
  int64_t start = 0, end = 0;
};

/// The problem's costs are whole nanoseconds, as the contest's format has
/// integer costs (and tg-shard-solve's scorer reads them so).
double toNanoseconds(double seconds) {
  return seconds >= ::tg::shardsolve::kForbidden ? seconds
                                                 : std::round(seconds * 1e9);
}

int64_t pieces(ShardingAttr s, MeshOp mesh, bool withPartial = false) {
  int64_t n = 1;
  for (int64_t d = 0; d < s.getRank(); ++d)
    for (StringRef a : s.axesOf(d))
      n *= mesh.axisSize(a);
  if (withPartial)
    for (StringRef a : s.partialAxes())
      n *= mesh.axisSize(a);
  return n;
}

/// Whether each dim of `type` divides over the axes `s` puts on it.
bool divides(ShardingAttr s, Type type, MeshOp mesh) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != s.getRank())
    return false;
  for (int64_t d = 0; d < s.getRank(); ++d) {
    int64_t parts = 1;
    for (StringRef a : s.axesOf(d))
      parts *= mesh.axisSize(a);
    if (tensor.getDimSize(d) % parts != 0)
      return false;
  }
  return true;
}

int64_t localBytes(Type type, ShardingAttr s, MeshOp mesh) {
  return tensorBytes(type) / pieces(s, mesh);
}

/// The shardings built from `dimAxes` (per dim, the axes on it).
ShardingAttr shardingOf(MLIRContext *context, MeshOp mesh,
                        ArrayRef<SmallVector<StringRef>> dimAxes) {
  return ShardingAttr::get(context, mesh.getSymName(), dimAxes);
}

struct AutoShardPass : public mlir::tg::impl::AutoShardPassBase<AutoShardPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// The order of @train_step's ops: each op's place (from 1) and the
  /// place after the last, where the returned values are read.
  struct StepOrder {
    explicit StepOrder(func::FuncOp step);
    DenseMap<Operation *, int64_t> position;
    int64_t end = 1;
    Operation *terminator = nullptr;
    /// The place of `v`'s last reader (-1 when none).
    int64_t lastUse(Value v) const;
  };
  /// Per node: how many times a step counts its choice's seconds, the
  /// share of its bytes one device holds, and its choices' pipeline sends.
  struct NodeWeights {
    SmallVector<double> weight, holds;
    SmallVector<SmallVector<double>> sends;
  };

  LogicalResult readOptions(ModuleOp module);
  void addArgumentNodes(func::FuncOp step, const StepOrder &order,
                        llvm::StringMap<int64_t> &argNodeOf);
  void addOpNodes(func::FuncOp step, const StepOrder &order);
  void addEdges(func::FuncOp step, int64_t microBatches,
                const llvm::StringMap<int64_t> &argNodeOf);
  FailureOr<NodeWeights> weighNodes(ModuleOp module, func::FuncOp step,
                                    const StepOrder &order,
                                    int64_t microBatches);
  FailureOr<::tg::shardsolve::Problem> buildProblem(ModuleOp module,
                                                    const NodeWeights &weights,
                                                    int64_t &fixedBytes);
  FailureOr<::tg::shardsolve::Solution>
  solveOrPrice(ModuleOp module, func::FuncOp step,
               const ::tg::shardsolve::Problem &problem);
  void recordPlan(func::FuncOp step, const ::tg::shardsolve::Problem &problem,
                  const ::tg::shardsolve::Solution &solution,
                  int64_t fixedBytes);

  mutable MeshOp mesh;
  std::optional<CostModel> cost;
  std::optional<ClusterSpec> spec;
  SmallVector<StringRef> axes;
  bool allowZero = true, allowTp = false;
  /// The memory per device the plan must fit.
  int64_t limitBytes = 0;
  /// Nodes tied to the same role of the layer before.
  int64_t tiedNodes = 0;
  /// Per node: run again in the backward pass (remat=full).
  SmallVector<bool> recomputed;

  SmallVector<Node> nodes;
  /// The node (and result) that decides each value.
  DenseMap<Value, std::pair<int64_t, unsigned>> nodeOf;
  /// The axes some strategy of its node leaves each value a partial sum
  /// over: an op only takes a partial operand over those.
  DenseMap<Value, llvm::SmallSetVector<StringRef, 2>> mayBePartial;
  /// Values whose sharding is fixed: the batch, scalars, constants.
  DenseMap<Value, ShardingAttr> fixed;
  /// Pairs of nodes (lower first) and their costs, |S_lo| x |S_hi|.
  llvm::MapVector<std::pair<int64_t, int64_t>, std::vector<double>> edges;

  /// reshardSeconds' answers, by (from, to, type): repeated layers ask the
  /// same questions.
  mutable DenseMap<std::tuple<Attribute, Attribute, Type>, double> reshardCache;

  double reshardSeconds(ShardingAttr from, ShardingAttr to, Type type) const;
  double reshardSecondsUncached(ShardingAttr from, ShardingAttr to,
                                Type type) const;

  SmallVector<Choice> argChoices(BlockArgument arg);
  SmallVector<Choice> opChoices(Operation *op);
  /// Adds `times` the cost of resharding result `result` of node `u` into
  /// what node `v` wants, per pair of their choices.
  void addEdge(int64_t u, unsigned result, int64_t v,
               function_ref<ShardingAttr(const Choice &)> wanted, Type type,
               double times = 1);
  void tieRepeatedLayers(func::FuncOp step);
  /// The pipeline chunk of each node (on stage chunk mod P), or none when
  /// the step names too few repeated layers.
  std::optional<SmallVector<int64_t>> chunksOf(func::FuncOp step,
                                               PipelineStages pipeline);
  /// Fills `sends` with the pipeline's sends of activations between stages
  /// that each node's choices cost per step.
  void priceSends(func::FuncOp step, PipelineStages pipeline,
                  int64_t microBatches, int64_t forwardEnd,
                  ArrayRef<int64_t> chunks, const DenseSet<Value> &fromBatch,
                  SmallVector<SmallVector<double>> &sends);
  void assumeFullRemat(func::FuncOp step,
                       const DenseMap<Operation *, int64_t> &position);
  LogicalResult apply(func::FuncOp step, ArrayRef<int64_t> chosen);
  /// The node strategies the shardings on the step give; with `copy`, on
  /// the copy of the module it maps into (without warnings), and the count
  /// of nodes without one in `missing`.
  SmallVector<int64_t> currentChoices(const IRMapping *copy, int64_t &missing);
  std::vector<::tg::shardsolve::Start> presetStarts(ModuleOp module,
                                                    bool allowTp);
  LogicalResult writeBreakdown(func::FuncOp step,
                               const ::tg::shardsolve::Problem &problem,
                               ArrayRef<int64_t> chosen);
};

//===----------------------------------------------------------------------===//
// The cost of resharding
//===----------------------------------------------------------------------===//

/// The modelled time of the collectives tg-partition emits to turn `from`
/// into `to` (reshardSteps).
double AutoShardPass::reshardSeconds(ShardingAttr from, ShardingAttr to,
                                     Type type) const {
  if (from == to)
    return 0;
  auto [it, inserted] = reshardCache.try_emplace({from, to, type}, 0.0);
  if (inserted)
    it->second = reshardSecondsUncached(from, to, type);
  return it->second;
}

double AutoShardPass::reshardSecondsUncached(ShardingAttr from, ShardingAttr to,
                                             Type type) const {
  double bytes = (double)tensorBytes(type) / pieces(from, mesh);
  double seconds = 0;
  for (const ReshardStep &step : reshardSteps(from, to)) {
    int64_t size = mesh.axisSize(step.axis);
    switch (step.kind) {
    case ReshardStep::ReduceScatter:
      seconds += cost->collectiveSeconds(CollectiveKind::ReduceScatter,
                                         step.axis, bytes);
      bytes /= size;
      break;
    case ReshardStep::AllReduce:
      seconds +=
          cost->collectiveSeconds(CollectiveKind::AllReduce, step.axis, bytes);
      break;
    case ReshardStep::AllGather:
      bytes *= size;
      seconds +=
          cost->collectiveSeconds(CollectiveKind::AllGather, step.axis, bytes);
      break;
    case ReshardStep::AllSlice:
      // Each process copies the piece it keeps.
      bytes /= size;
      seconds += bytes / spec->memoryBandwidth;
      break;
    case ReshardStep::MakePartial:
      // Each process writes the value or zeros.
      seconds += 2 * bytes / spec->memoryBandwidth;
      break;
    }
  }
  return seconds;
}

//===----------------------------------------------------------------------===//
// Strategies
//===----------------------------------------------------------------------===//

/// Every way the mesh axes split the dims of an argument: each axis on one
/// dim (in the mesh's order) or none, where the dim divides.
SmallVector<Choice> AutoShardPass::argChoices(BlockArgument arg) {
  auto type = cast<RankedTensorType>(arg.getType());
  SmallVector<Choice> out;
  SmallVector<int64_t> dimOfAxis(axes.size(), -1);
  std::function<void(size_t)> visit = [&](size_t k) {
    if (k == axes.size()) {
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      for (auto [a, d] : llvm::zip(axes, dimOfAxis))
        if (d >= 0)
          dims[d].push_back(a);
      for (int64_t d = 0; d < type.getRank(); ++d) {
        int64_t parts = 1;
        for (StringRef a : dims[d])
          parts *= mesh.axisSize(a);
        if (type.getDimSize(d) % parts != 0)
          return;
      }
      Choice c;
      c.results.push_back(shardingOf(&getContext(), mesh, dims));
      c.bytes = localBytes(type, c.results[0], mesh);
      out.push_back(std::move(c));
      return;
    }
    dimOfAxis[k] = -1;
    visit(k + 1);
    if (isDataAxis(axes[k]) && !allowZero)
      return;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      dimOfAxis[k] = d;
      visit(k + 1);
    }
    dimOfAxis[k] = -1;
  };
  visit(0);
  return out;
}

/// Every way the mesh axes split the factors of `op`'s sharding rule, as
/// decideOpSharding runs it given operands split that way; duplicates
/// dropped. An op without a rule runs whole.
SmallVector<Choice> AutoShardPass::opChoices(Operation *op) {
  MLIRContext *context = &getContext();
  SmallVector<Choice> out;
  auto add = [&](const OpSharding &decision) {
    Choice c;
    c.operands = decision.operands;
    c.results = decision.results;
    // The axes that split the op's work: those on a dim of an operand or
    // result. A partial sum the op passes on is no split: each process
    // adds (or scales) its whole piece.
    llvm::SmallSetVector<StringRef, 4> used;
    for (ShardingAttr s : llvm::concat<ShardingAttr>(c.operands, c.results))
      for (int64_t d = 0; d < s.getRank(); ++d)
        for (StringRef a : s.axesOf(d))
          used.insert(a);
    double parts = 1;
    for (StringRef a : used)
      parts *= mesh.axisSize(a);
    c.seconds = cost->opSeconds(op, parts);
    // A cross-entropy over split classes runs vocabulary-parallel
    // (VocabParallel.cpp): its rows' maxima are gathered and their sums of
    // exponentials reduced over the axes that split the classes.
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(op)) {
      unsigned labels = isa<CrossEntropyOp>(op) ? 1 : 2;
      auto type = cast<RankedTensorType>(op->getOperand(labels).getType());
      double rowBytes = 4.0 * (double)type.getNumElements() /
                        (double)pieces(c.operands[labels], mesh);
      for (StringRef a : vocabAxes(op, decision)) {
        c.seconds += cost->collectiveSeconds(CollectiveKind::AllGather, a,
                                             rowBytes * mesh.axisSize(a));
        c.seconds +=
            cost->collectiveSeconds(CollectiveKind::AllReduce, a, rowBytes);
      }
    }
    // An update writes its parameter and state in place; a reshape is a
    // view of its operand.
    if (!isa<OptimizerUpdateOp, ReshapeOp, FlattenOp>(op))
      for (auto [v, s] : llvm::zip(op->getResults(), c.results))
        if (isa<RankedTensorType>(v.getType()))
          c.bytes += localBytes(v.getType(), s, mesh);
    out.push_back(std::move(c));
  };
  auto rankOf = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t ? t.getRank() : -1;
  };
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruleOp ||
      llvm::any_of(op->getOperands(), [&](Value v) { return rankOf(v) < 0; })) {
    add(decideOpSharding(op, SmallVector<ShardingAttr>(op->getNumOperands()),
                         mesh));
    return out;
  }
  ShardingRule rule = ruleOp.getShardingRule();
  SmallVector<StringRef> opAxes;
  for (StringRef a : axes)
    if (allowZero || !isDataAxis(a) || !isa<OptimizerUpdateOp>(op))
      opAxes.push_back(a);
  llvm::DenseSet<Attribute> seen;
  SmallVector<int64_t> factorOfAxis(opAxes.size(), -1);
  SmallVector<int64_t> parts(rule.factorSizes.size(), 1);
  // Decides the op's sharding given `operands` and keeps it, once, where
  // every value's dims divide.
  auto consider = [&](ArrayRef<ShardingAttr> operands) {
    OpSharding decision = decideOpSharding(op, operands, mesh);
    // A factor may divide where a dim it spans does not (a reshape that
    // merges dims, a grouped-query head count): such a choice is not one.
    for (auto [v, sharding] : llvm::zip(
             llvm::concat<Value>(op->getOperands(), op->getResults()),
             llvm::concat<ShardingAttr>(decision.operands, decision.results)))
      if (!divides(sharding, v.getType(), mesh))
        return;
    SmallVector<Attribute> key(decision.operands.begin(),
                               decision.operands.end());
    key.append(decision.results.begin(), decision.results.end());
    if (seen.insert(ArrayAttr::get(context, key)).second)
      add(decision);
  };
  std::function<void(size_t)> visit = [&](size_t k) {
    if (k == opAxes.size()) {
      SmallVector<ShardingAttr> operands;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        SmallVector<SmallVector<StringRef>> dims(rankOf(v));
        if (i < rule.operandDims.size() &&
            (int64_t)rule.operandDims[i].size() == rankOf(v))
          for (auto [d, f] : llvm::enumerate(rule.operandDims[i]))
            if (f >= 0)
              for (auto [a, g] : llvm::zip(opAxes, factorOfAxis))
                if (g == f)
                  dims[d].push_back(a);
        operands.push_back(shardingOf(context, mesh, dims));
      }
      consider(operands);
      // Partial sums passed on: over the axes no factor takes, each
      // linear operand alone partial (all of a sum's), so that a gradient
      // is reduced once after the ops that sum or view it (the backward's
      // sum over q, k and v; a weight gradient's cast and views into its
      // accumulator) rather than before each.
      // Only over axes an operand of the set may arrive partial over.
      SmallVector<SmallVector<unsigned>> partialSets;
      if (rule.sumOfOperands)
        partialSets.push_back(
            llvm::to_vector(llvm::seq<unsigned>(0, op->getNumOperands())));
      else
        for (unsigned i : rule.linearOperands)
          if (i < op->getNumOperands())
            partialSets.push_back({i});
      for (ArrayRef<unsigned> set : partialSets) {
        if (!llvm::all_of(set, [&](unsigned i) {
              auto type =
                  dyn_cast<RankedTensorType>(op->getOperand(i).getType());
              return type && isa<FloatType>(type.getElementType());
            }))
          continue;
        SmallVector<StringRef> free;
        for (auto [a, f] : llvm::zip(opAxes, factorOfAxis))
          if (f < 0 && llvm::any_of(set, [&](unsigned i) {
                return mayBePartial.lookup(op->getOperand(i)).contains(a);
              }))
            free.push_back(a);
        for (uint64_t mask = 1; mask < (uint64_t(1) << free.size()); ++mask) {
          SmallVector<StringRef> partial;
          for (auto [b, a] : llvm::enumerate(free))
            if (mask & (uint64_t(1) << b))
              partial.push_back(a);
          SmallVector<ShardingAttr> withPartial(operands);
          for (unsigned i : set) {
            SmallVector<SmallVector<StringRef>> dims;
            for (int64_t d = 0; d < operands[i].getRank(); ++d)
              dims.push_back(operands[i].axesOf(d));
            withPartial[i] =
                ShardingAttr::get(context, mesh.getSymName(), dims, partial);
          }
          consider(withPartial);
        }
      }
      return;
    }
    factorOfAxis[k] = -1;
    visit(k + 1);
    int64_t size = mesh.axisSize(opAxes[k]);
    for (int64_t f = 0; f < (int64_t)rule.factorSizes.size(); ++f) {
      if (rule.factorSizes[f] % (parts[f] * size) != 0)
        continue;
      factorOfAxis[k] = f;
      parts[f] *= size;
      visit(k + 1);
      parts[f] /= size;
    }
    factorOfAxis[k] = -1;
  };
  visit(0);
  if (out.size() > kMaxChoices) {
    // Keep the whole strategy (the first), the one that holds least (a
    // tight memory limit may need it) and the fastest others.
    auto least = std::min_element(
        out.begin() + 1, out.end(),
        [](const Choice &a, const Choice &b) { return a.bytes < b.bytes; });
    std::iter_swap(out.begin() + 1, least);
    std::stable_sort(
        out.begin() + 2, out.end(),
        [](const Choice &a, const Choice &b) { return a.seconds < b.seconds; });
    out.resize(kMaxChoices);
  }
  return out;
}

void AutoShardPass::addEdge(int64_t u, unsigned result, int64_t v,
                            function_ref<ShardingAttr(const Choice &)> wanted,
                            Type type, double times) {
  const Node &from = nodes[u], &to = nodes[v];
  bool flip = u > v;
  auto key = flip ? std::make_pair(v, u) : std::make_pair(u, v);
  size_t nu = from.choices.size(), nv = to.choices.size();
  std::vector<double> &costs = edges[key];
  if (costs.empty())
    costs.assign(nu * nv, 0.0);
  for (size_t su = 0; su < nu; ++su)
    for (size_t sv = 0; sv < nv; ++sv) {
      double c = times * reshardSeconds(from.choices[su].results[result],
                                        wanted(to.choices[sv]), type);
      size_t index = flip ? sv * nu + su : su * nv + sv;
      costs[index] = std::min(costs[index] + c, ::tg::shardsolve::kForbidden);
    }
}

//===----------------------------------------------------------------------===//
// Repeated layers
//===----------------------------------------------------------------------===//

/// The parameter, state or accumulator name of a step argument, and which.
std::pair<std::string, StringRef> argumentName(func::FuncOp step,
                                               BlockArgument arg) {
  for (StringRef attr :
       {TgDialect::kParamAttr, TgDialect::kStateAttr, TgDialect::kAccumAttr})
    if (auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr))
      return {name.str(), attr};
  return {};
}

/// A name in a repeated layer ("h.3.attn.q") as the layer's index and the
/// name with the index taken out ("h.#.attn.q"); nothing for other names.
std::optional<std::pair<int64_t, std::string>> repeatedName(StringRef name) {
  std::string layer = layerOfName(name);
  auto [stack, index] = StringRef(layer).rsplit('.');
  int64_t n;
  if (layer.empty() || index.getAsInteger(10, n))
    return std::nullopt;
  return std::make_pair(n,
                        (stack + ".#" + name.drop_front(layer.size())).str());
}

/// Whether two nodes have the same types and the same strategies in the
/// same order, so that "the same strategy" means the same sharding.
bool sameStrategies(const Node &a, const Node &b) {
  if (a.choices.size() != b.choices.size() || !a.op != !b.op)
    return false;
  if (a.op ? a.op->getOperandTypes() != b.op->getOperandTypes() ||
                 a.op->getResultTypes() != b.op->getResultTypes()
           : a.arg.getType() != b.arg.getType())
    return false;
  for (auto [x, y] : llvm::zip(a.choices, b.choices))
    if (x.operands != y.operands || x.results != y.results)
      return false;
  return true;
}

/// Ties each node of a repeated layer to the node in the same role of the
/// layer before it, by an edge that forbids unequal strategies. A role is
/// the op's tg.layer (or an argument's parameter, state or accumulator
/// name) with the layer's index taken out ("h.#", "h.#.attn.c_attn.weight"),
/// the op (or argument kind), and the node's rank among the layer's nodes
/// of that name and op: the k-th tg.matmul of h.N is tied to the k-th of
/// h.N-1. Only facts of the IR decide it, so IR printed without locations
/// ties as the model file does.
void AutoShardPass::tieRepeatedLayers(func::FuncOp step) {
  struct Member {
    int64_t layer, node;
  };
  std::map<std::string, SmallVector<Member>> roles;
  llvm::StringMap<int64_t> rank;
  // An op without a layer (the optimizer's ops on a parameter's gradient)
  // takes a name from an operand of its result's type: the parameter,
  // state or accumulator it reads, or the op that made it, best one with a
  // layer's name and a name of its own rather than one taken so.
  DenseMap<Operation *, std::pair<std::string, bool>> names;
  auto nameOf = [&](Value v) -> std::pair<std::string, bool> {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return {argumentName(step, arg).first, true};
    return names.lookup(v.getDefiningOp());
  };
  int64_t namedOps = 0, repeatedArgs = 0;
  for (auto [v, node] : llvm::enumerate(nodes)) {
    std::string name;
    StringRef kind;
    if (node.op) {
      kind = node.op->getName().getStringRef();
      name = layerOf(node.op).str();
      bool own = !name.empty();
      namedOps += own;
      if (!own && node.op->getNumResults() > 0) {
        int best = -1;
        for (Value operand : node.op->getOperands()) {
          if (operand.getType() != node.op->getResult(0).getType())
            continue;
          auto [from, fromOwn] = nameOf(operand);
          int score =
              from.empty() ? -1 : 2 * !layerOfName(from).empty() + fromOwn;
          if (score > best) {
            best = score;
            name = from;
          }
        }
      }
      names[node.op] = {name, own};
    } else {
      std::tie(name, kind) = argumentName(step, node.arg);
    }
    auto repeated = repeatedName(name);
    if (!repeated)
      continue;
    repeatedArgs += !node.op;
    auto &[n, pattern] = *repeated;
    std::string within = (pattern + "|" + Twine(n) + "|" + kind).str();
    std::string role =
        (pattern + "|" + kind + "|" + Twine(rank[within]++)).str();
    roles[role].push_back({n, (int64_t)v});
  }
  // Hand-written IR may give its ops no layers: then only
  // the parameters tie, and each layer's ops are planned alone.
  if (repeatedArgs > 0 && namedOps == 0)
    step.emitWarning()
        << "tg-auto-shard: the step's ops carry no tg.layer, so the "
           "repeated layers' ops are not tied: each layer is planned alone";
  for (auto &[role, members] : roles) {
    llvm::stable_sort(members, [](const Member &a, const Member &b) {
      return a.layer < b.layer;
    });
    for (auto [prev, next] :
         llvm::zip(members, ArrayRef(members).drop_front())) {
      if (prev.layer == next.layer ||
          !sameStrategies(nodes[prev.node], nodes[next.node]))
        continue;
      auto key = std::minmax(prev.node, next.node);
      size_t n = nodes[prev.node].choices.size();
      std::vector<double> &costs = edges[{key.first, key.second}];
      if (costs.empty())
        costs.assign(n * n, 0.0);
      for (size_t a = 0; a < n; ++a)
        for (size_t b = 0; b < n; ++b)
          if (a != b)
            costs[a * n + b] = ::tg::shardsolve::kForbidden;
      ++numTied;
      ++tiedNodes;
    }
  }
}

/// Where the compiled step's estimate (estimatePlan's stage map) places
/// each node under `pipeline`, as a chunk: the repeated layers, in the order
/// the forward pass first reaches them, in P x V consecutive chunks of equal
/// size, chunk c on stage c mod P; an op of a top-level module (its
/// tg.layer) on the first stage before the first layer, else on the last;
/// an op of none with what it reads (or follows); a parameter, its state
/// or accumulator with the layer of its name.
std::optional<SmallVector<int64_t>>
AutoShardPass::chunksOf(func::FuncOp step, PipelineStages pipeline) {
  int64_t chunks = pipeline.stages * pipeline.virtualStages;
  llvm::StringMap<int64_t> layerIndex;
  llvm::StringMap<bool> before;
  SmallVector<std::string> names(nodes.size());
  for (auto [i, node] : llvm::enumerate(nodes)) {
    names[i] =
        node.op ? layerOf(node.op).str() : argumentName(step, node.arg).first;
    std::string layer = layerOfName(names[i]);
    if (!node.op || names[i].empty())
      continue;
    if (!layer.empty())
      layerIndex.try_emplace(layer, layerIndex.size());
    else
      before.try_emplace(StringRef(names[i]).split('.').first,
                         layerIndex.empty());
  }
  int64_t layers = layerIndex.size();
  if (layers < chunks)
    return std::nullopt;
  auto chunkOfName = [&](StringRef name) -> std::optional<int64_t> {
    std::string layer = layerOfName(name);
    if (!layer.empty()) {
      auto it = layerIndex.find(layer);
      return it == layerIndex.end() ? chunks - 1 : it->second * chunks / layers;
    }
    auto it = before.find(name.split('.').first);
    if (it == before.end())
      return std::nullopt;
    return it->second ? 0 : chunks - 1;
  };
  SmallVector<int64_t> chunkOf(nodes.size(), 0);
  int64_t current = 0;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    std::optional<int64_t> chunk = chunkOfName(names[i]);
    if (!chunk && node.op)
      for (Value v : node.op->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          chunk = chunkOfName(argumentName(step, arg).first);
        } else if (auto it = nodeOf.find(v); it != nodeOf.end()) {
          chunk = chunkOf[it->second.first];
        }
        if (chunk)
          break;
      }
    if (!chunk)
      chunk = node.op ? current : 0;
    chunkOf[i] = *chunk;
    if (node.op)
      current = *chunk;
  }
  // An argument nothing names (a parameter outside the layers read after
  // them: the head's) goes with its first reader.
  for (auto [i, node] : llvm::enumerate(nodes))
    if (!node.op && !chunkOfName(names[i]))
      for (Operation *user : node.arg.getUsers())
        if (auto it = nodeOf.find(user->getResult(0));
            user->getNumResults() && it != nodeOf.end()) {
          chunkOf[i] = chunkOf[it->second.first];
          break;
        }
  return chunkOf;
}

/// The sends of a pipelined step, as the compiled step's estimate prices
/// them: each micro-batch's activations that cross from one chunk of
/// layers to the next, forward and (their gradients) backward,
/// 2 (P V - 1) + 2 V K times a step, at the bytes of one boundary (the
/// layers choose alike, so every boundary sends the same). The values
/// priced are those computed from the batch in the first chunk (or before
/// it) that the forward pass reads in a later one: the residual stream,
/// whose sharding (split over tp under sequence parallelism, or whole)
/// sets the bytes.
void AutoShardPass::priceSends(func::FuncOp step, PipelineStages pipeline,
                               int64_t microBatches, int64_t forwardEnd,
                               ArrayRef<int64_t> chunks,
                               const DenseSet<Value> &fromBatch,
                               SmallVector<SmallVector<double>> &sends) {
  if (forwardEnd < 0)
    return;
  int64_t p = pipeline.stages, v = pipeline.virtualStages;
  double times = (double)(2 * (p * v - 1) + 2 * v * microBatches);
  double perByte =
      (cost->stageSendSeconds(1e9, p) - cost->stageSendSeconds(0, p)) / 1e9;
  DenseMap<Operation *, int64_t> nodeOfOp;
  for (auto [i, node] : llvm::enumerate(nodes))
    if (node.op)
      nodeOfOp[node.op] = i;
  Operation *ret = step.getBody().front().getTerminator();
  for (auto [i, node] : llvm::enumerate(nodes)) {
    if (!node.op || chunks[i] != 0 || node.start > forwardEnd)
      continue;
    for (OpResult r : node.op->getResults()) {
      if (!fromBatch.contains(r) || !isa<RankedTensorType>(r.getType()))
        continue;
      bool crosses = llvm::any_of(r.getUsers(), [&](Operation *user) {
        auto it = nodeOfOp.find(user);
        return user != ret && it != nodeOfOp.end() &&
               nodes[it->second].start <= forwardEnd && chunks[it->second] > 0;
      });
      if (!crosses)
        continue;
      if (sends[i].empty())
        sends[i].assign(node.choices.size(), 0.0);
      for (auto [k, c] : llvm::enumerate(node.choices))
        sends[i][k] += times * perByte *
                       (double)localBytes(r.getType(),
                                          c.results[r.getResultNumber()], mesh);
    }
  }
}

//===----------------------------------------------------------------------===//
// Recomputation
//===----------------------------------------------------------------------===//

/// Prices tg-remat's `full` policy, which runs after tg-partition: a forward
/// op of a layer whose results no op of another layer reads is run again in
/// the backward pass instead of kept, so its results live only until its
/// last forward reader, and it costs twice (its copy in the backward reads
/// the same pieces), as do the reshardings into it (tg-remat runs a layer's
/// collectives again, keeping nothing they gathered). What leaves a layer
/// (the residual stream) is kept.
void AutoShardPass::assumeFullRemat(
    func::FuncOp step, const DenseMap<Operation *, int64_t> &position) {
  Operation *ret = step.getBody().front().getTerminator();
  Operation *loss = forwardEndOf(step);
  int64_t forwardEnd = loss ? position.lookup(loss) : -1;
  recomputed.assign(nodes.size(), false);
  if (forwardEnd < 0)
    return;
  for (Node &node : nodes) {
    Operation *op = node.op;
    if (!op || node.start > forwardEnd || !isMemoryEffectFree(op))
      continue;
    std::string layer = layerOfName(layerOf(op));
    if (layer.empty())
      continue;
    int64_t lastForward = node.start;
    bool leaves = false;
    for (Operation *user : op->getUsers()) {
      int64_t at = position.lookup(user);
      if (user == ret || layerOfName(layerOf(user)) != layer)
        leaves = true;
      else if (at <= forwardEnd)
        lastForward = std::max(lastForward, at);
    }
    if (leaves)
      continue;
    node.end = lastForward + 1;
    for (Choice &c : node.choices)
      c.seconds *= 2;
    recomputed[&node - nodes.data()] = true;
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

void AutoShardPass::runOnOperation() {
  ModuleOp module = getOperation();
  mesh = getModuleMesh(module);
  if (!mesh)
    return;
  func::FuncOp step;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.getSymName() == "train_step")
      step = func;
  if (!step) {
    module.emitError() << "tg-auto-shard plans @train_step, which this module "
                          "lacks: run it after tg-optimizer";
    return signalPassFailure();
  }
  if (failed(readOptions(module)))
    return signalPassFailure();

  // The micro-batches per step tg-optimizer built @train_step for (how
  // many the executable runs is its --batch-size's business).
  int64_t microBatches = 1;
  if (auto k = step->getAttrOfType<IntegerAttr>(TgDialect::kMicroBatchesAttr))
    microBatches = std::max<int64_t>(k.getInt(), 1);

  // Nodes: the parameters and their state, then the ops in order; edges
  // between them; what each weighs in a step.
  StepOrder order(step);
  llvm::StringMap<int64_t> argNodeOf;
  addArgumentNodes(step, order, argNodeOf);
  addOpNodes(step, order);
  if (remat == "full")
    assumeFullRemat(step, order.position);
  else if (remat != "none") {
    module.emitError() << "tg-auto-shard: remat '" << remat
                       << "' is not priced; expected none or full";
    return signalPassFailure();
  }
  addEdges(step, microBatches, argNodeOf);
  if (tieLayers)
    tieRepeatedLayers(step);
  FailureOr<NodeWeights> weights =
      weighNodes(module, step, order, microBatches);
  if (failed(weights))
    return signalPassFailure();

  int64_t fixedBytes = 0;
  FailureOr<::tg::shardsolve::Problem> problem =
      buildProblem(module, *weights, fixedBytes);
  if (failed(problem))
    return signalPassFailure();
  FailureOr<::tg::shardsolve::Solution> solution =
      solveOrPrice(module, step, *problem);
  if (failed(solution))
    return signalPassFailure();
  recordPlan(step, *problem, *solution, fixedBytes);
}

AutoShardPass::StepOrder::StepOrder(func::FuncOp step) {
  Block &body = step.getBody().front();
  terminator = body.getTerminator();
  for (Operation &op : body.without_terminator())
    position[&op] = end++;
}

int64_t AutoShardPass::StepOrder::lastUse(Value v) const {
  int64_t last = -1;
  for (Operation *user : v.getUsers())
    last = std::max(last, user == terminator ? end : position.lookup(user));
  return last;
}

/// The cluster, the strategies allowed and the starting presets, checked.
LogicalResult AutoShardPass::readOptions(ModuleOp module) {
  llvm::Expected<ClusterSpec> read = loadClusterSpec(cluster);
  if (!read) {
    module.emitError() << llvm::toString(read.takeError());
    return failure();
  }
  spec = std::move(*read);
  cost.emplace(*spec, mesh);
  allowZero = false;
  allowTp = false;
  for (StringRef kind : llvm::split(StringRef(allowStrategies), ',')) {
    kind = kind.trim();
    if (kind == "zero")
      allowZero = true;
    else if (kind == "tp")
      allowTp = true;
    else if (kind != "dp") {
      module.emitError() << "unknown strategy '" << kind
                         << "' in allow-strategies; expected dp, zero or tp";
      return failure();
    }
  }
  // An elastic data axis (tgc --mesh=data=auto) takes its size at launch:
  // nothing but the batch may be split over it, so no ZeRO.
  if (llvm::any_of(mesh.getAxisNames(),
                   [&](StringRef a) { return mesh.isElastic(a); }))
    allowZero = false;
  for (StringRef preset : llvm::split(StringRef(startPresets), ','))
    if (!preset.trim().empty() &&
        !llvm::is_contained(shardPresetNames(), preset.trim())) {
      module.emitError() << "unknown preset '" << preset.trim()
                         << "' in start-presets; expected "
                         << llvm::join(shardPresetNames(), ", ");
      return failure();
    }
  for (StringRef a : mesh.getAxisNames())
    if (allowTp || isDataAxis(a))
      axes.push_back(a);
  return success();
}

/// A node per parameter, optimizer state and accumulator argument of
/// `step` (its choices: argChoices, and for an accumulator also partial
/// sums); the other arguments' shardings are fixed. `argNodeOf` maps a
/// parameter's or state's name to its node.
void AutoShardPass::addArgumentNodes(func::FuncOp step, const StepOrder &order,
                                     llvm::StringMap<int64_t> &argNodeOf) {
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto param = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
    auto state = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
    auto accum = step.getArgAttrOfType<StringAttr>(i, TgDialect::kAccumAttr);
    // Pinned arguments are fixed, unless the pass prices the shardings
    // given: then every parameter, state and accumulator is a node.
    ShardingAttr pin = getSharding(arg);
    if (pin && !(priceCurrent && (param || state || accum))) {
      fixed[arg] = pin;
      continue;
    }
    if (!param && !state && !accum) {
      // The batch over the data axes (whole where it does not divide).
      ShardingAttr s = batchInputSharding(step, i, mesh);
      fixed[arg] = s ? s
                     : ShardingAttr::replicated(
                           &getContext(), mesh.getSymName(),
                           cast<RankedTensorType>(arg.getType()).getRank());
      continue;
    }
    Node node;
    node.arg = arg;
    node.choices = argChoices(arg);
    // A gradient accumulator may also hold partial sums over the data axes
    // its split leaves free: the micro-batches' gradients are added
    // unreduced and reduced once per step, as data parallelism does; or
    // over every free axis, as Megatron-LM does for the gradients sequence
    // parallelism leaves partial over tp (the norms', the row-parallel
    // biases'): reduced once per step, not once per micro-batch.
    if (accum) {
      SmallVector<StringRef> batchAxes = dataAxes(mesh);
      size_t n = node.choices.size();
      for (size_t k = 0; k < n; ++k) {
        ShardingAttr s = node.choices[k].results[0];
        SmallVector<StringRef> overData, overAll;
        for (StringRef a : axes)
          if (s.dimOf(a) < 0) {
            overAll.push_back(a);
            if (llvm::is_contained(batchAxes, a))
              overData.push_back(a);
          }
        SmallVector<SmallVector<StringRef>> dims;
        for (int64_t d = 0; d < s.getRank(); ++d)
          dims.push_back(s.axesOf(d));
        // overAll holds overData (every data axis is in `axes`).
        SmallVector<ArrayRef<StringRef>, 2> partials;
        if (!overData.empty())
          partials.push_back(overData);
        if (overAll.size() > overData.size())
          partials.push_back(overAll);
        for (ArrayRef<StringRef> partial : partials) {
          Choice c = node.choices[k];
          c.results[0] = ShardingAttr::get(&getContext(), mesh.getSymName(),
                                           dims, partial);
          node.choices.push_back(std::move(c));
        }
      }
      // The other micro-batches' gradients arrive from @forward_backward
      // and are brought to the accumulator's sharding each time: an edge
      // from the op that computes the gradient (below).
    }
    for (const Choice &c : node.choices)
      for (StringRef a : c.results[0].partialAxes())
        mayBePartial[arg].insert(a);
    node.start = 0;
    node.end = order.end + 1;
    if (!accum)
      argNodeOf[(param ? param : state).getValue()] = nodes.size();
    nodeOf[arg] = {(int64_t)nodes.size(), 0};
    nodes.push_back(std::move(node));
  }
}

/// A node per op of `step` with results (its choices: opChoices; a
/// tg.sharding_constraint's one), alive from its place to its results'
/// last reader; constants are fixed, replicated.
void AutoShardPass::addOpNodes(func::FuncOp step, const StepOrder &order) {
  for (Operation &op : step.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op) || op.getNumResults() == 0) {
      for (Value v : op.getResults())
        if (auto t = dyn_cast<RankedTensorType>(v.getType()))
          fixed[v] = ShardingAttr::replicated(&getContext(), mesh.getSymName(),
                                              t.getRank());
      continue;
    }
    Node node;
    node.op = &op;
    if (auto pin = dyn_cast<ShardingConstraintOp>(op)) {
      Choice c;
      c.operands = {pin.getSharding()};
      c.results = {pin.getSharding()};

      node.choices.push_back(std::move(c));
    } else {
      node.choices = opChoices(&op);
    }
    for (const Choice &c : node.choices)
      for (auto [v, r] : llvm::zip(op.getResults(), c.results))
        for (StringRef a : r.partialAxes())
          mayBePartial[v].insert(a);
    node.start = order.position.lookup(&op);
    node.end = node.start + 1;
    for (Value v : op.getResults())
      node.end = std::max(node.end, order.lastUse(v) + 1);
    for (auto [r, v] : llvm::enumerate(op.getResults()))
      nodeOf[v] = {(int64_t)nodes.size(), (unsigned)r};
    nodes.push_back(std::move(node));
  }
}

/// The edges: each operand from its producer's choice to its reader's,
/// the other micro-batches' gradients into their accumulators, and what
/// the step returns into what the next step reads.
void AutoShardPass::addEdges(func::FuncOp step, int64_t microBatches,
                             const llvm::StringMap<int64_t> &argNodeOf) {
  // Edges: each operand from its producer's choice to its reader's; the
  // fixed values' resharding goes into the reader's own cost.
  for (auto [v, node] : llvm::enumerate(nodes)) {
    Operation *op = node.op;
    if (!op || isa<GlobalNormOp>(op))
      continue; // global_norm sums each input's pieces as they are
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      auto wanted = [i = i](const Choice &c) { return c.operands[i]; };
      if (auto it = nodeOf.find(operand); it != nodeOf.end()) {
        addEdge(it->second.first, it->second.second, v, wanted,
                operand.getType());
        continue;
      }
      ShardingAttr have = fixed.lookup(operand);
      if (!have)
        continue;
      for (Choice &c : nodes[v].choices)
        c.seconds += reshardSeconds(have, c.operands[i], operand.getType());
    }
  }
  // Each micro-batch but the last adds its gradient into an accumulator
  // in @forward_backward, resharded from the sharding of the op that
  // computes it (its copy in @train_step, whose result @train_step adds to
  // the accumulator) to the accumulator's: (K - 1) times per step.
  double otherMicroBatches = std::max<int64_t>(microBatches, 2) - 1;
  for (auto [v, node] : llvm::enumerate(nodes)) {
    if (node.op ||
        !step.getArgAttr(node.arg.getArgNumber(), TgDialect::kAccumAttr))
      continue;
    for (Operation *user : node.arg.getUsers()) {
      if (!isa<AddOp>(user))
        continue;
      for (Value grad : user->getOperands()) {
        auto it = nodeOf.find(grad);
        if (grad == node.arg || it == nodeOf.end())
          continue;
        addEdge(
            it->second.first, it->second.second, v,
            [](const Choice &c) { return c.results[0]; }, grad.getType(),
            otherMicroBatches);
      }
    }
  }
  // What the step returns: new parameters and state in their arguments'
  // sharding for the next step, metrics and the loss whole, the rest
  // without partial sums.
  Operation *ret = step.getBody().front().getTerminator();
  for (auto [i, value] : llvm::enumerate(ret->getOperands())) {
    auto it = nodeOf.find(value);
    if (it == nodeOf.end() || !isa<RankedTensorType>(value.getType()))
      continue;
    auto [u, r] = it->second;
    if (auto update =
            step.getResultAttrOfType<StringAttr>(i, TgDialect::kUpdateAttr)) {
      auto arg = argNodeOf.find(update.getValue());
      if (arg != argNodeOf.end() && arg->second != u)
        addEdge(
            u, r, arg->second, [](const Choice &c) { return c.results[0]; },
            value.getType());
      continue;
    }
    for (Choice &c : nodes[u].choices) {
      ShardingAttr from = c.results[r];
      ShardingAttr to = resultTarget(step, i, from);
      c.seconds += reshardSeconds(from, to, value.getType());
    }
  }
}

/// What each node weighs in a step: how many times its choice's seconds
/// count (micro-batches, pipeline bubble), the share of its bytes one
/// device holds, and its choices' pipeline sends.
FailureOr<AutoShardPass::NodeWeights>
AutoShardPass::weighNodes(ModuleOp module, func::FuncOp step,
                          const StepOrder &order, int64_t microBatches) {
  // With gradient accumulation a step runs the forward and backward ops on
  // every micro-batch (@forward_backward on all but the last) and the
  // optimizer's once: the first weigh microBatches times, with the
  // reshardings between them and the parameters they read.
  //
  // With pipeline stages (modelled, not executable) a device runs its
  // stage's share of every op, a P-th, and the micro-batch ops once more
  // per bubble slot of the chosen schedule (the schedule's player,
  // playPipeline: (P - 1) / V under 1F1B and interleaving, (P - 1) / 3
  // under ZB-H1);
  // it holds a P-th of the parameters and
  // state, and the activations of its in-flight micro-batches, which for
  // the first stage is about one micro-batch of the whole model.
  PipelineStages pipeline = getPipelineStages(module);
  llvm::Expected<PipelinePlay> play =
      playPipeline(pipeline.stages, pipeline.virtualStages, microBatches,
                   pipeline::scheduleChoiceName(schedule));
  if (!play) {
    module.emitError() << "--pipeline-stages=" << pipeline.stages
                       << " --virtual-stages=" << pipeline.virtualStages
                       << ": " << llvm::toString(play.takeError());
    return failure();
  }
  double perMicroBatch = play->slots;
  SmallVector<double> weight(nodes.size(), 1.0);
  if (perMicroBatch > 1) {
    // Once per step: what reads an accumulator or the optimizer's state,
    // the updates and the global norm, and what reads those.
    DenseSet<Operation *> perStep;
    auto readsPerStep = [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return step.getArgAttr(arg.getArgNumber(), TgDialect::kStateAttr) ||
               step.getArgAttr(arg.getArgNumber(), TgDialect::kAccumAttr);
      return perStep.contains(v.getDefiningOp());
    };
    for (Operation &op : step.getBody().front().without_terminator())
      if (isa<OptimizerUpdateOp, GlobalNormOp>(op) ||
          llvm::any_of(op.getOperands(), readsPerStep))
        perStep.insert(&op);
    for (auto [i, node] : llvm::enumerate(nodes))
      if (node.op ? !perStep.contains(node.op)
                  : step.getArgAttr(node.arg.getArgNumber(),
                                    TgDialect::kParamAttr) != nullptr)
        weight[i] = perMicroBatch;
  }
  SmallVector<double> holds(nodes.size(), 1.0);
  // Per node and choice, seconds its choice adds outside the op: the
  // pipeline's sends between stages.
  SmallVector<SmallVector<double>> sends(nodes.size());
  if (pipeline.stages > 1) {
    double p = (double)pipeline.stages;
    double inFlight = play->inFlight[0];
    Operation *loss = forwardEndOf(step);
    int64_t forwardEnd = loss ? order.position.lookup(loss) : -1;
    // Each micro-batch in flight keeps its own activations (the values
    // computed from the batch), but not its own copy of what the weights
    // alone give (their bf16 casts), the same for every micro-batch (as
    // the compiled step's estimate counts them, estimatePlan).
    DenseSet<Value> fromBatch = valuesFromBatch(step);
    // How many copies of a node's results the stage keeps from the forward
    // pass for the backward: one per micro-batch in flight where computed
    // from the batch, one otherwise; none when it is not kept so.
    auto keptCopies = [&](const Node &node) -> std::optional<double> {
      if (!node.op || forwardEnd < 0 || node.start > forwardEnd ||
          node.end <= forwardEnd + 1)
        return std::nullopt;
      return llvm::any_of(node.op->getResults(),
                          [&](Value v) { return fromBatch.contains(v); })
                 ? inFlight
                 : 1.0;
    };
    std::optional<SmallVector<int64_t>> chunks = chunksOf(step, pipeline);
    if (chunks)
      priceSends(step, pipeline, microBatches, forwardEnd, *chunks, fromBatch,
                 sends);
    for (auto [i, node] : llvm::enumerate(nodes)) {
      weight[i] /= p;
      if (chunks) {
        // The memory of the first stage's device, as the compiled step's
        // estimate places the layers: its own layers' values and
        // parameters (and what comes before the first layer), those of
        // its in-flight micro-batches for what the backward pass reads.
        holds[i] = (*chunks)[i] % pipeline.stages != 0
                       ? 0.0
                       : keptCopies(node).value_or(1.0);
        continue;
      }
      // No layers named: a P-th of everything that lives long.
      if (!node.op)
        holds[i] = 1 / p;
      else if (std::optional<double> copies = keptCopies(node))
        holds[i] = *copies / p;
    }
  }
  return NodeWeights{std::move(weight), std::move(holds), std::move(sends)};
}

/// The solver's problem: per node its weighed costs and memory, the edges'
/// reshardings, the limit less what the fixed arguments hold (in
/// `fixedBytes`); written to dump-problem when asked.
FailureOr<::tg::shardsolve::Problem>
AutoShardPass::buildProblem(ModuleOp module, const NodeWeights &weights,
                            int64_t &fixedBytes) {
  // The problem, in the solver's terms.
  ::tg::shardsolve::Problem problem;
  problem.name =
      (module.getName() ? module.getName()->str() : "module") + "/train_step";
  fixedBytes = 0;
  for (auto [v, s] : fixed)
    if (isa<BlockArgument>(v))
      fixedBytes += localBytes(v.getType(), s, mesh);
  limitBytes = memoryLimit > 0 ? (int64_t)memoryLimit : spec->memoryBytes;
  problem.usageLimit = std::max<int64_t>(limitBytes - fixedBytes, 0);
  for (auto [i, node] : llvm::enumerate(nodes)) {
    problem.intervals.push_back({node.start, node.end});
    std::vector<double> costs;
    std::vector<int64_t> usages;
    for (auto [k, c] : llvm::enumerate(node.choices)) {
      costs.push_back(toNanoseconds(
          weights.weight[i] * c.seconds +
          (weights.sends[i].empty() ? 0.0 : weights.sends[i][k])));
      usages.push_back((int64_t)std::ceil(weights.holds[i] * (double)c.bytes));
    }
    problem.nodeCosts.push_back(std::move(costs));
    problem.usages.push_back(std::move(usages));
  }
  for (auto &[key, costs] : edges) {
    // Between two ops of every micro-batch (or one and a parameter it
    // reads), a resharding happens on each micro-batch.
    double w = std::min(weights.weight[key.first], weights.weight[key.second]);
    // Into an op run again in the backward pass, the resharding runs again
    // with it (tg-remat recomputes a layer's collectives).
    if (!recomputed.empty() && recomputed[key.second])
      w *= 2;
    for (double &c : costs)
      c = toNanoseconds(c < ::tg::shardsolve::kForbidden ? w * c : c);
    problem.edges.push_back({key.first, key.second, std::move(costs)});
  }
  numNodes = nodes.size();
  numEdges = problem.edges.size();
  if (!dumpProblem.empty())
    if (llvm::Error e = ::tg::shardsolve::writeProblem(problem, dumpProblem)) {
      module.emitError() << llvm::toString(std::move(e));
      return failure();
    }
  return problem;
}

/// The solver's strategies (or, with price-current, the shardings given,
/// priced), applied to the module as pins; the breakdown when asked.
FailureOr<::tg::shardsolve::Solution>
AutoShardPass::solveOrPrice(ModuleOp module, func::FuncOp step,
                            const ::tg::shardsolve::Problem &problem) {
  ::tg::shardsolve::Solution solution;
  if (priceCurrent) {
    int64_t missing = 0;
    SmallVector<int64_t> given = currentChoices(nullptr, missing);
    solution.strategies.assign(given.begin(), given.end());
    solution.evaluation =
        ::tg::shardsolve::evaluate(problem, solution.strategies);
    solution.method = "priced: the shardings given";
    if (!solution.evaluation.valid)
      step.emitWarning() << "the shardings given break the solver's "
                            "problem: "
                         << solution.evaluation.why;
  } else {
    ::tg::shardsolve::SolveOptions options;
    options.timeLimitSeconds = timeLimit;
    options.seed = seed;
    options.cbcPath = cbc;
    options.starts = presetStarts(module, allowTp);
    solution = ::tg::shardsolve::solve(problem, options);
    if (!solution.cbcFailure.empty())
      step.emitWarning() << "tg-auto-shard: " << solution.cbcFailure
                         << "; the plan was searched without CBC";
  }
  if (!breakdown.empty() &&
      failed(writeBreakdown(step, problem, solution.strategies)))
    return failure();
  if (!solution.evaluation.valid && !priceCurrent) {
    step.emitError() << "no sharding of @train_step over the mesh fits "
                     << limitBytes << " bytes per device ("
                     << solution.evaluation.why << ")";
    return failure();
  }
  if (!priceCurrent && failed(apply(step, solution.strategies)))
    return failure();
  return solution;
}

/// @train_step's tg.auto_shard: the cluster, the modelled cost and peak,
/// the limit, the method and the problem's size.
void AutoShardPass::recordPlan(func::FuncOp step,
                               const ::tg::shardsolve::Problem &problem,
                               const ::tg::shardsolve::Solution &solution,
                               int64_t fixedBytes) {
  Builder b(&getContext());
  step->setAttr(
      TgDialect::kAutoShardAttr,
      b.getDictionaryAttr({
          b.getNamedAttr("cluster", b.getStringAttr(spec->name)),
          b.getNamedAttr("modelled_seconds",
                         b.getF64FloatAttr(solution.evaluation.cost * 1e-9)),
          b.getNamedAttr(
              "peak_bytes",
              b.getI64IntegerAttr(solution.evaluation.peakUsage + fixedBytes)),
          b.getNamedAttr("memory_limit", b.getI64IntegerAttr(limitBytes)),
          b.getNamedAttr("method", b.getStringAttr(solution.method)),
          b.getNamedAttr("nodes", b.getI64IntegerAttr(problem.numNodes())),
          b.getNamedAttr("edges", b.getI64IntegerAttr(problem.edges.size())),
          b.getNamedAttr("tied_nodes", b.getI64IntegerAttr(tiedNodes)),
      }));
}

/// The strategy of each node that the shardings already on the step give
/// (price-current): an argument's own sharding; an op's results as
/// recorded, with the operands decideOpSharding wants given its operands'.
/// A node with no such strategy (pruned to kMaxChoices, or not one the
/// rules enumerate) keeps its first, with a warning.
SmallVector<int64_t> AutoShardPass::currentChoices(const IRMapping *copy,
                                                   int64_t &missing) {
  SmallVector<int64_t> chosen(nodes.size(), 0);
  missing = 0;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    Operation *op = copy && node.op ? copy->lookup(node.op) : node.op;
    Value arg =
        copy && !node.op ? copy->lookup(Value(node.arg)) : Value(node.arg);
    auto find = [&](auto matches) -> int64_t {
      for (auto [k, c] : llvm::enumerate(node.choices))
        if (matches(c))
          return k;
      return -1;
    };
    int64_t k = -1;
    std::string have;
    if (!op) {
      ShardingAttr s = getSharding(arg);
      k = find([&](const Choice &c) { return c.results[0] == s; });
      have = (s ? formatSharding(s) : "none") + " ";
    } else {
      SmallVector<ShardingAttr> operands;
      for (Value v : op->getOperands())
        operands.push_back(getSharding(v));
      OpSharding decision = decideOpSharding(op, operands, mesh);
      auto sameResults = [&](const Choice &c) {
        for (auto [v, s] : llvm::zip(op->getResults(), c.results))
          if (ShardingAttr r = getSharding(v); r && r != s)
            return false;
        return true;
      };
      k = find([&](const Choice &c) {
        return sameResults(c) && llvm::equal(c.operands, decision.operands);
      });
      if (k < 0)
        k = find(sameResults);
      for (Value v : op->getResults())
        if (ShardingAttr r = getSharding(v))
          have += formatSharding(r) + " ";
    }
    if (k < 0) {
      if (!copy && missing < 10)
        (node.op ? node.op->emitWarning() : emitWarning(node.arg.getLoc()))
            << "price-current: no strategy of the solver's gives " << have
            << "for "
            << (node.op ? (node.op->getName().getStringRef() + " (" +
                           nodeNameOf(node.op) + ")")
                              .str()
                        : describeValue(node.arg));
      ++missing;
      k = 0;
    }
    chosen[i] = k;
  }
  // At the step (the module has no location of its own).
  Operation *step = getOperation().lookupSymbol("train_step");
  if (!copy && missing > 10)
    (step ? step : getOperation().getOperation())->emitWarning()
        << "price-current: " << missing
        << " nodes in all have no strategy of the solver's for their "
           "shardings; each was priced at its first";
  return chosen;
}

/// The standard plans (tg-propagate-sharding's presets, each on a copy of
/// the module) as strategies of the problem's nodes, for the solver to start
/// from: its plan is then no worse, in its model, than any of them that
/// fits. Presets outside allow-strategies are left out.
std::vector<::tg::shardsolve::Start>
AutoShardPass::presetStarts(ModuleOp module, bool allowTp) {
  std::vector<::tg::shardsolve::Start> starts;
  for (StringRef preset : llvm::split(StringRef(startPresets), ',')) {
    preset = preset.trim();
    if (preset.empty())
      continue;
    bool zero = preset.starts_with("zero") || preset == "megatron";
    if ((zero && !allowZero) || (isTensorParallelPreset(preset) && !allowTp))
      continue;
    IRMapping map;
    OwningOpRef<ModuleOp> copy = cast<ModuleOp>(module->clone(map));
    PassManager pm = PassManager::on<ModuleOp>(&getContext());
    PropagateShardingPassOptions options;
    options.preset = preset.str();
    pm.addPass(createPropagateShardingPass(options));
    // A preset that does not apply here (its conflicts) is no start; the
    // user hears of it only through tgc's compiled presets.
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(pm.run(*copy)))
      continue;
    int64_t missing = 0;
    SmallVector<int64_t> chosen = currentChoices(&map, missing);
    starts.push_back({("preset " + preset).str(),
                      std::vector<int64_t>(chosen.begin(), chosen.end())});
  }
  return starts;
}

/// The role of a node for the breakdown: its op (or argument kind) and its
/// model-file name with the layer's index taken out ("h.#.attn.q").
std::string roleOf(func::FuncOp step, Operation *op, BlockArgument arg) {
  auto [name, kind] =
      op ? std::make_pair(nodeNameOf(op), op->getName().getStringRef())
         : argumentName(step, arg);
  if (auto repeated = repeatedName(name))
    name = repeated->second;
  return (kind + " " + (name.empty() ? "-" : name)).str();
}

/// Writes, per role, the nodes' weighted cost and the cost of the edges
/// into them (the later node of each), in nanoseconds, most first.
LogicalResult
AutoShardPass::writeBreakdown(func::FuncOp step,
                              const ::tg::shardsolve::Problem &problem,
                              ArrayRef<int64_t> chosen) {
  struct Row {
    int64_t count = 0;
    double node = 0, edge = 0;
    int64_t peakBytes = 0;
    std::string sharding;
  };
  // The time of the plan's peak (the first, when several): what each role
  // holds then says where the memory goes.
  int64_t horizon = 0;
  for (auto [start, end] : problem.intervals)
    horizon = std::max(horizon, end);
  std::vector<int64_t> delta(horizon + 1, 0);
  for (auto [i, interval] : llvm::enumerate(problem.intervals))
    if (interval.second > interval.first) {
      delta[interval.first] += problem.usages[i][chosen[i]];
      delta[interval.second] -= problem.usages[i][chosen[i]];
    }
  int64_t peakTime = 0, live = 0, most = -1;
  for (int64_t t = 0; t < horizon; ++t) {
    live += delta[t];
    if (live > most) {
      most = live;
      peakTime = t;
    }
  }
  std::map<std::string, Row> rows;
  SmallVector<std::string> roles;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    roles.push_back(roleOf(step, node.op, node.arg));
    Row &row = rows[roles.back()];
    ++row.count;
    double c = problem.nodeCosts[i][chosen[i]];
    row.node += c < ::tg::shardsolve::kForbidden ? c : 0;
    auto [start, end] = problem.intervals[i];
    if (start <= peakTime && peakTime < end)
      row.peakBytes += problem.usages[i][chosen[i]];
    if (row.sharding.empty()) {
      const Choice &choice = node.choices[chosen[i]];
      for (ShardingAttr s : choice.operands)
        row.sharding += formatSharding(s) + " ";
      row.sharding += "->";
      for (ShardingAttr s : choice.results)
        row.sharding += " " + formatSharding(s);
    }
  }
  for (const ::tg::shardsolve::Edge &e : problem.edges) {
    size_t nv = problem.nodeCosts[e.v].size();
    double c = e.costs[chosen[e.u] * nv + chosen[e.v]];
    rows[roles[std::max(e.u, e.v)]].edge +=
        c < ::tg::shardsolve::kForbidden ? c : 0;
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  llvm::stable_sort(sorted, [](const auto &a, const auto &b) {
    return a.second.node + a.second.edge > b.second.node + b.second.edge;
  });
  std::error_code ec;
  llvm::raw_fd_ostream out(breakdown, ec);
  if (ec)
    return getOperation().emitError() << "cannot write the breakdown to "
                                      << breakdown << ": " << ec.message();
  out << "role\tnodes\tnode_ns\tedge_ns\tpeak_bytes\tsharding (operands -> "
         "results)\n";
  for (const auto &[role, row] : sorted)
    out << role << "\t" << row.count << "\t"
        << llvm::formatv("{0:f0}", row.node) << "\t"
        << llvm::formatv("{0:f0}", row.edge) << "\t" << row.peakBytes << "\t"
        << row.sharding << "\n";
  return success();
}

/// Each op of @forward_backward and its copy in @train_step, which
/// tg-optimizer built by cloning @forward_backward's ops in order (constants
/// and pins aside): the pairs up to the first op that differs in kind or
/// types.
DenseMap<Operation *, Operation *> copiesInStep(func::FuncOp step,
                                                func::FuncOp fb) {
  DenseMap<Operation *, Operation *> twin;
  if (!fb)
    return twin;
  auto skip = [](Operation &op) {
    return isa<ConstantOp, ShardingConstraintOp>(op);
  };
  auto ours = step.getBody().front().without_terminator();
  auto it = ours.begin();
  for (Operation &op : fb.getBody().front().without_terminator()) {
    if (skip(op))
      continue;
    while (it != ours.end() && skip(*it))
      ++it;
    if (it == ours.end() || it->getName() != op.getName() ||
        it->getOperandTypes() != op.getOperandTypes() ||
        it->getResultTypes() != op.getResultTypes())
      break;
    twin[&*it++] = &op;
  }
  return twin;
}

/// Writes the chosen strategies: arguments' shardings as pins (a parameter
/// in every function that reads it; a gradient accumulator's also on the
/// gradient @forward_backward returns into it), and a
/// tg.sharding_constraint just before each op that reads a value in another
/// sharding than its producer's, in @train_step and the same before its
/// copy in @forward_backward (which runs the other micro-batches: without
/// them propagation there would decide alone).
LogicalResult AutoShardPass::apply(func::FuncOp step,
                                   ArrayRef<int64_t> chosen) {
  ModuleOp module = getOperation();
  DenseMap<Operation *, Operation *> twin =
      copiesInStep(step, module.lookupSymbol<func::FuncOp>("forward_backward"));
  llvm::StringMap<ShardingAttr> params, accumulators;
  SmallVector<ArgSharding> argPins;
  for (auto [node, s] : llvm::zip(nodes, chosen)) {
    if (node.op)
      continue;
    ShardingAttr sharding = node.choices[s].results[0];
    argPins.push_back({node.arg.getArgNumber(), sharding, "solver"});
    ++numPins;
    if (auto name = step.getArgAttrOfType<StringAttr>(node.arg.getArgNumber(),
                                                      TgDialect::kParamAttr))
      params[name.getValue()] = sharding;
    if (auto name = step.getArgAttrOfType<StringAttr>(node.arg.getArgNumber(),
                                                      TgDialect::kAccumAttr))
      accumulators[name.getValue()] = sharding;
  }
  setArgShardings(step, argPins);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func == step)
      continue;
    SmallVector<ArgSharding> same;
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        TgDialect::kParamAttr))
        if (ShardingAttr s = params.lookup(name.getValue()))
          same.push_back({arg.getArgNumber(), s, "solver"});
    setArgShardings(func, same);
    // The gradients added into an accumulator arrive in its sharding.
    Operation *ret = func.getBody().front().getTerminator();
    for (OpOperand &operand : ret->getOpOperands()) {
      auto name = func.getResultAttrOfType<StringAttr>(
          operand.getOperandNumber(), TgDialect::kGradAttr);
      ShardingAttr s = name ? accumulators.lookup(name.getValue()) : nullptr;
      if (!s)
        continue;
      OpBuilder builder(ret);
      auto pin = ShardingConstraintOp::create(builder, ret->getLoc(),
                                              operand.get(), s);
      pin->setAttr(kShardingOriginAttr,
                   builder.getArrayAttr({builder.getStringAttr(
                       "solver: the sharding of the accumulator in "
                       "@train_step")}));
      operand.set(pin.getResult());
      ++numPins;
    }
  }
  auto chosenOf = [&](Value v) -> ShardingAttr {
    if (auto it = nodeOf.find(v); it != nodeOf.end())
      return nodes[it->second.first]
          .choices[chosen[it->second.first]]
          .results[it->second.second];
    return fixed.lookup(v);
  };
  // The solver priced a resharding per operand edge and counted no memory
  // for its result. So a resharding that grows the value (a gather) beyond
  // a ten-thousandth of the memory limit is done again at each reader, just
  // before it: a weight gathered for the forward pass is not kept alive
  // until the backward pass reads it. Smaller ones are done once, before
  // the first reader, and shared: there the collective's latency is what
  // counts, not the memory.
  DenseMap<std::tuple<Value, Attribute, Operation *>, Value> pins;
  for (auto [node, s] : llvm::zip(nodes, chosen)) {
    Operation *op = node.op;
    if (!op || isa<GlobalNormOp, ShardingConstraintOp>(op))
      continue;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      ShardingAttr have = chosenOf(v);
      ShardingAttr wanted = node.choices[s].operands[use.getOperandNumber()];
      if (!have || !wanted || have == wanted)
        continue;
      int64_t bytes = localBytes(v.getType(), wanted, mesh);
      bool perReader = bytes > localBytes(v.getType(), have, mesh) &&
                       bytes > limitBytes / 10000;
      auto pinBefore = [&](Operation *reader, OpOperand &operand) {
        Value v = operand.get();
        Value &pin = pins[{v, wanted, perReader ? reader : nullptr}];
        if (!pin) {
          OpBuilder builder(reader);
          auto constraint = ShardingConstraintOp::create(
              builder, reader->getLoc(), v, wanted);
          setLayer(constraint, layerOf(reader));
          constraint->setAttr(
              kShardingOriginAttr,
              builder.getArrayAttr({builder.getStringAttr(
                  "solver: as " + reader->getName().getStringRef().str() +
                  " reads it")}));
          pin = constraint.getResult();
          ++numPins;
        }
        operand.set(pin);
      };
      if (Operation *copy = twin.lookup(op))
        pinBefore(copy, copy->getOpOperand(use.getOperandNumber()));
      pinBefore(op, use);
    }
  }
  return success();
}

} // namespace

//===- OutlineLayers.cpp - One function per distinct layer body --*- C++
//-*-===//
//
// tg-outline-layers cuts each planned function into runs of one layer's
// consecutive ops, turns each run into a candidate function whose arena
// offsets are slots of a table the caller passes, and replaces the runs
// whose candidate prints the same as another's by calls of one shared body.
// See Passes.td for the rules.
//
//===----------------------------------------------------------------------===//

#include "passes/layers/Passes.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::tg {
#define GEN_PASS_DEF_OUTLINELAYERSPASS
#include "passes/layers/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// One layer's consecutive ops in a planned function.
struct Run {
  func::FuncOp func;
  std::string layer;
  SmallVector<Operation *> ops;
};

/// A run as a function of its own, not yet in the module.
struct Candidate {
  Run run;
  func::FuncOp body;
  /// What the run reads from before it, in the order of the body's
  /// arguments; what is read after it, in the order of its results.
  SmallVector<Value> arguments, results;
  /// The arena offset of each slot of the body's table, for this run.
  SmallVector<int64_t> slotOffsets;
  /// Each result's place at the call: its arena offset, or the argument it
  /// is a view of.
  SmallVector<ResultPlace> resultPlaces;
};

/// Whether a body can hold `op`: every result has an arena offset or is a
/// view, and nothing about it is placed outside the arena plan's offsets
/// (buckets, their waits, attention scratch).
bool placeable(Operation *op) {
  if (isa<ConstantOp, func::CallOp, AwaitOp>(op))
    return false;
  if (op->getNumRegions() > 0 && !isa<KernelOp>(op))
    return false;
  if (op->hasAttr(TgDialect::kBucketSpanAttr) ||
      op->hasAttr(TgDialect::kScratchAttr))
    return false;
  // An attention's backward that reads what its forward kept in scratch (the
  // output and log-sum-exp, on the cuda target): in a body it would see no
  // forward and recompute them.
  WalkResult readsScratch = op->walk([](AttentionGradOp grad) {
    AttentionOp fwd = grad.getForward();
    return fwd && fwd->hasAttr(TgDialect::kScratchAttr)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (readsScratch.wasInterrupted())
    return false;
  // Every result has an offset or views an operand (the dialect checks
  // that tg.place places each).
  return placeOf(op) != nullptr;
}

/// The layer an op works for: its own (layerOfOp), else for an op without
/// a tg.layer the layer of a parameter's argument it reads (the sum of a
/// micro-batch's gradient into the accumulator), else the one layer all its
/// readers work for (the gradient clipping's multiply), or "".
std::string layerWorkedFor(Operation *op) {
  std::string own = layerOfOp(op);
  if (!layerOfName(own).empty() || !layerOf(op).empty())
    return own;
  // A parameter's, state's or accumulator's argument it reads (the
  // accumulation's sum of a gradient).
  auto func = op->getParentOfType<func::FuncOp>();
  for (Value v : op->getOperands())
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (arg.getOwner()->getParentOp() == func)
        if (StringAttr name = parameterNameOf(func, arg))
          if (!layerOfName(name.getValue()).empty())
            return layerOfName(name.getValue());
  std::string readers;
  Block *block = op->getBlock();
  for (Operation *user : op->getUsers()) {
    Operation *top = block->findAncestorOpInBlock(*user);
    std::string layer = top ? layerOfOp(top) : "";
    if (layerOfName(layer).empty() || (!readers.empty() && layer != readers))
      return own;
    readers = layer;
  }
  return readers.empty() ? own : readers;
}

/// The runs of `func`, in order.
SmallVector<Run> runsOf(func::FuncOp func) {
  SmallVector<Run> runs;
  Run current{func, "", {}};
  DenseSet<Operation *> inCurrent;
  auto close = [&] {
    if (!current.ops.empty())
      runs.push_back(current);
    current.ops.clear();
    current.layer.clear();
    inCurrent.clear();
  };
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    bool place = placeable(&op);
    // An op without a tg.layer that reads the run it follows (the sum of
    // a value's gradients that tg-autodiff adds) goes with that run.
    if (place && layerOf(&op).empty() &&
        llvm::any_of(op.getOperands(), [&](Value v) {
          return v.getDefiningOp() && inCurrent.contains(v.getDefiningOp());
        })) {
      current.ops.push_back(&op);
      inCurrent.insert(&op);
      continue;
    }
    std::string layer = place ? layerWorkedFor(&op) : "";
    if (layerOfName(layer).empty()) {
      close();
      continue;
    }
    if (layer != current.layer)
      close();
    current.layer = layer;
    current.ops.push_back(&op);
    inCurrent.insert(&op);
  }
  close();
  return runs;
}

/// `loc` with the layer's own name (`h.3`) written as its pattern (`h.*`).
Location generalize(Location loc, StringRef layer, StringRef pattern) {
  MLIRContext *ctx = loc.getContext();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef n = name.getName().getValue();
    std::string renamed = n.str();
    if (n == layer || n.starts_with((layer + ".").str()))
      renamed = (pattern + n.drop_front(layer.size())).str();
    return NameLoc::get(StringAttr::get(ctx, renamed),
                        generalize(name.getChildLoc(), layer, pattern));
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    SmallVector<Location> inner;
    for (Location l : fused.getLocations())
      inner.push_back(generalize(l, layer, pattern));
    return FusedLoc::get(ctx, inner, fused.getMetadata());
  }
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return CallSiteLoc::get(generalize(site.getCallee(), layer, pattern),
                            generalize(site.getCaller(), layer, pattern));
  return loc;
}

/// The run as a candidate body, or nothing when a result's storage cannot
/// be said at the call (a view of a constant).
std::optional<Candidate> candidateOf(const Run &run) {
  func::FuncOp func = run.func;
  Block &block = func.getBody().front();
  DenseSet<Operation *> members(run.ops.begin(), run.ops.end());
  MLIRContext *ctx = func.getContext();
  Candidate c;
  c.run = run;

  // Arguments and constants: what the run's ops (and the ops nested in
  // them) read from outside the run.
  llvm::SetVector<Value> arguments;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : run.ops)
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        if (op->isAncestor(v.getParentRegion()->getParentOp()) &&
            v.getParentRegion()->getParentOp() != func)
          continue; // a kernel's own block argument or intermediate
        Operation *def = v.getDefiningOp();
        Operation *top = def ? block.findAncestorOpInBlock(*def) : nullptr;
        if (top && members.contains(top))
          continue;
        if (def && isa<ConstantOp>(def))
          constants.insert(def);
        else
          arguments.insert(v);
      }
    });
  c.arguments.assign(arguments.begin(), arguments.end());

  // Results: what is read after the run.
  for (Operation *op : run.ops)
    for (OpResult r : op->getResults())
      if (llvm::any_of(r.getUses(), [&](OpOperand &use) {
            return !members.contains(
                block.findAncestorOpInBlock(*use.getOwner()));
          }))
        c.results.push_back(r);

  // Where each result is at the call: its own offset, its view chain's
  // root's, or the argument the chain ends at.
  for (Value r : c.results) {
    Value root = r;
    while (Value viewed = plannedView(root)) {
      root = viewed;
      if (!root.getDefiningOp() ||
          !members.contains(block.findAncestorOpInBlock(*root.getDefiningOp())))
        break;
    }
    auto result = dyn_cast<OpResult>(root);
    bool member = result && members.contains(result.getOwner());
    if (member) {
      c.resultPlaces.push_back(ResultPlace::arena(
          *placeOf(result.getOwner()).arenaOffset(result.getResultNumber())));
      continue;
    }
    const Value *at = llvm::find(c.arguments, root);
    if (at == c.arguments.end())
      return std::nullopt;
    c.resultPlaces.push_back(ResultPlace::view(at - c.arguments.begin()));
  }

  // The body.
  SmallVector<Type> inputs, outputs;
  for (Value v : c.arguments)
    inputs.push_back(v.getType());
  for (Value v : c.results)
    outputs.push_back(v.getType());
  Location loc = run.ops.front()->getLoc();
  c.body = func::FuncOp::create(loc, "body",
                                FunctionType::get(ctx, inputs, outputs));
  c.body.setPrivate();
  Block *entry = c.body.addEntryBlock();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(c.arguments, entry->getArguments()))
    map.map(v, arg);
  OpBuilder b = OpBuilder::atBlockEnd(entry);
  StringRef layer = run.layer;
  std::string pattern = (layer.rsplit('.').first + ".*").str();
  auto place = [&](Operation *copy, ArrayRef<ResultPlace> places) {
    copy->removeAttr(TgDialect::kPlaceAttr);
    // What a report says of the op names nodes: not the body's business.
    copy->removeAttr(kReshardAttr);
    copy->removeAttr(kShardingOriginAttr);
    if (!places.empty())
      copy->setAttr(TgDialect::kPlaceAttr, PlaceAttr::get(ctx, places));
    // Nor the layer it computes for: the call says that.
    copy->walk([&](Operation *inner) {
      inner->setLoc(generalize(inner->getLoc(), layer, pattern));
      inner->removeAttr(TgDialect::kLayerAttr);
    });
  };
  for (Operation *constant : constants)
    place(b.clone(*constant, map), {});
  for (Operation *op : run.ops) {
    Operation *copy = b.clone(*op, map);
    // An offset becomes the next slot of the body's table; a view stays.
    SmallVector<ResultPlace> places;
    for (ResultPlace entry : placeOf(op).getPlaces()) {
      if (entry.kind == ResultPlace::Kind::Arena) {
        places.push_back(ResultPlace::slot(c.slotOffsets.size()));
        c.slotOffsets.push_back(entry.value);
        continue;
      }
      places.push_back(entry);
    }
    place(copy, places);
  }
  SmallVector<Value> returned;
  for (Value v : c.results)
    returned.push_back(map.lookup(v));
  func::ReturnOp::create(b, loc, returned);
  return c;
}

/// The candidate's IR as text: equal texts, equal bodies.
std::string printed(func::FuncOp body) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Never the locations (they name the layer), whatever the command line
  // asks of the printer (-mlir-print-debuginfo), and every constant in full
  // (-mlir-elide-elementsattrs-if-larger would make two constants one).
  OpPrintingFlags flags;
  flags.enableDebugInfo(false)
      .elideLargeElementsAttrs(std::numeric_limits<int64_t>::max())
      .printLargeElementsAttrWithHex(-1);
  body.print(os, flags);
  return text;
}

/// Replaces the candidate's run by a call of `body`. `replaced` maps the
/// results of runs already replaced to their calls' results.
void replaceByCall(Candidate &c, func::FuncOp body,
                   DenseMap<Value, Value> &replaced) {
  OpBuilder b(c.run.ops.front());
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> arguments;
  for (Value v : c.arguments)
    arguments.push_back(replaced.lookup(v) ? replaced.lookup(v) : v);
  auto call = func::CallOp::create(
      b, NameLoc::get(StringAttr::get(ctx, c.run.layer)), body, arguments);
  setLayer(call, c.run.layer);
  call->setAttr(TgDialect::kSlotOffsetsAttr,
                b.getDenseI64ArrayAttr(c.slotOffsets));
  call->setAttr(TgDialect::kPlaceAttr, PlaceAttr::get(ctx, c.resultPlaces));
  for (auto [old, now] : llvm::zip(c.results, call.getResults())) {
    old.replaceAllUsesWith(now);
    replaced[old] = now;
  }
  for (Operation *op : llvm::reverse(c.run.ops))
    op->erase();
}

struct OutlineLayersPass
    : public tg::impl::OutlineLayersPassBase<OutlineLayersPass> {
  using OutlineLayersPassBase::OutlineLayersPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(TgDialect::kArenaAttr) &&
          !func->hasAttr(TgDialect::kLayerBodyAttr) &&
          func.getBody().hasOneBlock())
        funcs.push_back(func);

    // Every run's candidate, grouped by its text.
    std::vector<Candidate> candidates;
    llvm::MapVector<StringRef, SmallVector<size_t>> groups;
    std::vector<std::string> texts;
    for (func::FuncOp func : funcs)
      for (const Run &run : runsOf(func))
        if (std::optional<Candidate> c = candidateOf(run))
          candidates.push_back(std::move(*c));
    texts.reserve(candidates.size());
    for (Candidate &c : candidates)
      texts.push_back(printed(c.body));
    for (auto [i, text] : llvm::enumerate(texts))
      groups[text].push_back(i);

    // Bodies that enough runs share go into the module, before the
    // functions; the others are dropped and their runs stay inline.
    SymbolTable symbols(module);
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    unsigned next = 0;
    DenseSet<size_t> kept;
    DenseMap<Value, Value> replaced;
    for (auto &[text, members] : groups) {
      if (members.size() < minRepeats)
        continue;
      Candidate &first = candidates[members.front()];
      func::FuncOp body = first.body;
      std::string name;
      do
        name = "layer_body_" + std::to_string(next++);
      while (symbols.lookup(name));
      body.setSymName(name);
      body->setAttr(
          TgDialect::kLayerBodyAttr,
          b.getStringAttr(first.run.func.getSymName() + " " + first.run.layer));
      b.insert(body);
      symbols.insert(body);
      kept.insert(members.front());
      for (size_t i : members)
        replaceByCall(candidates[i], body, replaced);
    }
    for (auto [i, c] : llvm::enumerate(candidates))
      if (!kept.contains(i))
        c.body->erase();
    // Constants only the outlined runs read now live in the bodies.
    for (func::FuncOp func : funcs)
      for (auto constant :
           llvm::make_early_inc_range(func.getOps<ConstantOp>()))
        if (constant->use_empty())
          constant->erase();
  }
};

} // namespace

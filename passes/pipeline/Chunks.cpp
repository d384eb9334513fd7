//===- Chunks.cpp - Which chunk of a pipelined step an op is on -*- C++ -*-===//

#include "passes/pipeline/Chunks.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "planning/cost/ClusterSpec.h"
#include "planning/cost/CostModel.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;

std::string mlir::tg::layerOfOp(Operation *op) {
  Operation *update = op;
  if (op->getNumOperands() == 1 && !isa<OptimizerUpdateOp>(op))
    if (Operation *def = op->getOperand(0).getDefiningOp())
      update = def;
  if (auto u = dyn_cast<OptimizerUpdateOp>(update))
    if (auto arg = dyn_cast<BlockArgument>(u.getParam()))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        if (auto name = func.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TgDialect::kParamAttr))
          return groupOfName(name.getValue());
  return layerOf(op).str();
}

bool mlir::tg::isChunkless(Operation *op) {
  if (op->getNumOperands() == 0 && isMemoryEffectFree(op))
    return true;
  if (!isa<CastOp, AllGatherOp, AllSliceOp>(op))
    return false;
  // Of an argument, or of one of these of an argument (zero3 under bf16
  // gathers the bf16 copy of a parameter's piece).
  Value in = op->getOperand(0);
  if (isa<BlockArgument>(in))
    return true;
  Operation *def = in.getDefiningOp();
  return def && !isa<ConstantOp>(def) && isChunkless(def);
}

StringAttr mlir::tg::parameterNameOf(func::FuncOp func, BlockArgument arg) {
  for (StringRef kind :
       {TgDialect::kParamAttr, TgDialect::kStateAttr, TgDialect::kAccumAttr})
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kind))
      return name;
  return nullptr;
}

std::optional<int64_t> StageMap::chunkOfArgument(func::FuncOp func,
                                                 Value v) const {
  auto arg = dyn_cast<BlockArgument>(v);
  StringAttr name = arg ? parameterNameOf(func, arg) : nullptr;
  auto it = name ? chunkOfGroup.find(groupOfName(name.getValue()))
                 : chunkOfGroup.end();
  if (it == chunkOfGroup.end())
    return std::nullopt;
  return it->second;
}

std::optional<int64_t> StageMap::chunkOfGroupName(StringRef group) const {
  auto it = chunkOfGroup.find(group);
  if (it != chunkOfGroup.end())
    return it->second;
  if (!layerOfName(group).empty())
    return chunks() - 1;
  return std::nullopt;
}

SmallVector<int64_t> StageMap::chunksOf(func::FuncOp func) const {
  SmallVector<int64_t> out;
  DenseMap<Operation *, int64_t> chunkOfOp;
  int64_t current = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    std::string group = layerOfOp(&op);
    if (!group.empty()) {
      // A group the map lacks stays with its predecessor.
      if (std::optional<int64_t> chunk = chunkOfGroupName(group))
        current = *chunk;
    } else {
      // No name: the chunk of the parameter or state it reads (a fused
      // optimizer update), else of the op whose result it reads first.
      for (Value v : op.getOperands()) {
        std::optional<int64_t> from = chunkOfArgument(func, v);
        if (auto it = chunkOfOp.find(v.getDefiningOp());
            !from && it != chunkOfOp.end())
          from = it->second;
        if (from) {
          current = *from;
          break;
        }
      }
    }
    chunkOfOp[&op] = current;
    out.push_back(current);
  }
  return out;
}

/// The first layer of each chunk after the first: the model file's pins
/// (training.pipeline_cuts), else the cuts that make the slowest chunk
/// fastest by `seconds` per layer (the first chunk also runs `before`, the
/// last `after`), else equal counts.
static llvm::Expected<SmallVector<int64_t>>
chooseCuts(ModuleOp module, int64_t chunks, ArrayRef<double> seconds,
           double before, double after) {
  int64_t layers = seconds.size();
  auto training =
      module ? module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr)
             : DictionaryAttr();
  if (auto pins =
          training ? training.getAs<ArrayAttr>("pipeline_cuts") : ArrayAttr()) {
    SmallVector<int64_t> cuts;
    for (Attribute a : pins)
      if (auto i = dyn_cast<IntegerAttr>(a))
        cuts.push_back(i.getInt());
    bool ok = (int64_t)cuts.size() == chunks - 1 &&
              (int64_t)pins.size() == chunks - 1;
    for (size_t k = 0; ok && k < cuts.size(); ++k)
      ok =
          cuts[k] >= 1 && cuts[k] < layers && (k == 0 || cuts[k] > cuts[k - 1]);
    if (!ok) {
      std::string given;
      llvm::raw_string_ostream os(given);
      pins.print(os);
      return llvm::createStringError(
          llvm::formatv("training.pipeline_cuts {0}: expected {1} increasing "
                        "layer numbers between 1 and {2}, the first layer of "
                        "each of chunks 1..{1} ({3} chunks of {4} layers)",
                        given, chunks - 1, layers - 1, chunks, layers)
              .str());
    }
    return cuts;
  }
  SmallVector<int64_t> cuts;
  double total = before + after;
  for (double s : seconds)
    total += s;
  if (total <= 0) {
    for (int64_t c = 1; c < chunks; ++c)
      cuts.push_back((c * layers + chunks - 1) / chunks);
    return cuts;
  }
  // best[c][j]: the slowest of chunks 0..c-1 holding layers 0..j-1, at its
  // least; from[c][j] the first layer of chunk c - 1 there.
  SmallVector<double> prefix(layers + 1, 0);
  for (int64_t j = 0; j < layers; ++j)
    prefix[j + 1] = prefix[j] + seconds[j];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(chunks + 1,
                                        std::vector<double>(layers + 1, inf));
  std::vector<std::vector<int64_t>> from(chunks + 1,
                                         std::vector<int64_t>(layers + 1, 0));
  best[0][0] = 0;
  for (int64_t c = 1; c <= chunks; ++c)
    for (int64_t j = c; j <= layers; ++j)
      for (int64_t i = c - 1; i < j; ++i) {
        double cost = prefix[j] - prefix[i] + (c == 1 ? before : 0) +
                      (c == chunks ? after : 0);
        double worst = std::max(best[c - 1][i], cost);
        // Ties go to the earlier cut, so equal layers split evenly.
        if (worst < best[c][j] * (1 - 1e-9)) {
          best[c][j] = worst;
          from[c][j] = i;
        }
      }
  cuts.assign(chunks - 1, 0);
  for (int64_t c = chunks, j = layers; c > 1; --c) {
    j = from[c][j];
    cuts[c - 2] = j;
  }
  return cuts;
}

llvm::Expected<StageMap> mlir::tg::stageMapOf(func::FuncOp step,
                                              PipelineStages pipeline,
                                              const CostModel *cost) {
  StageMap map;
  map.pipeline = pipeline;
  SmallVector<std::string> layers;
  llvm::StringMap<bool> before; // other groups: before the first layer?
  // Other groups are placed by where the forward pass first computes them:
  // one named only in the backward (the widened gradient of a parameter
  // whose forward copy each reader makes itself, as zero3 under bf16
  // gathers it) goes where what it reads is.
  Operation *forwardEnd = forwardEndOf(step);
  bool inForward = true;
  for (Operation &op : step.getBody().front().without_terminator()) {
    bool forward = inForward;
    if (&op == forwardEnd)
      inForward = false;
    if (isChunkless(&op))
      continue;
    std::string group = layerOfOp(&op);
    if (group.empty() || map.chunkOfGroup.count(group) || before.count(group))
      continue;
    if (layerOfName(group).empty() && !forward && forwardEnd)
      continue;
    if (!layerOfName(group).empty()) {
      map.chunkOfGroup[group] = layers.size();
      layers.push_back(group);
    } else {
      before[group] = layers.empty();
    }
  }
  map.layers = layers.size();
  if (map.layers < map.chunks())
    return llvm::createStringError(
        llvm::formatv("{0} pipeline stages x {1} virtual stages need at least "
                      "{2} repeated layers (h.0.*, h.1.*, ... in the model "
                      "file); the model has {3}",
                      pipeline.stages, pipeline.virtualStages, map.chunks(),
                      map.layers)
            .str());
  // Each layer's time (and what runs before the first layer and after the
  // last) by the cost model, over every op of the step.
  SmallVector<double> seconds(layers.size(), 0);
  double head = 0, tail = 0;
  if (cost) {
    llvm::StringMap<size_t> index;
    for (auto [j, layer] : llvm::enumerate(layers))
      index[layer] = j;
    for (Operation &op : step.getBody().front().without_terminator()) {
      std::string group = layerOfOp(&op);
      if (group.empty())
        continue;
      double s = cost->opSeconds(&op);
      if (auto it = index.find(group); it != index.end())
        seconds[it->second] += s;
      else if (auto b = before.find(group); b != before.end())
        (b->second ? head : tail) += s;
    }
  }
  llvm::Expected<SmallVector<int64_t>> cuts = chooseCuts(
      step->getParentOfType<ModuleOp>(), map.chunks(), seconds, head, tail);
  if (!cuts)
    return cuts.takeError();
  for (auto [j, layer] : llvm::enumerate(layers))
    map.chunkOfGroup[layer] = llvm::count_if(
        *cuts, [&, j = (int64_t)j](int64_t cut) { return cut <= j; });
  for (auto &entry : before)
    map.chunkOfGroup[entry.getKey()] = entry.getValue() ? 0 : map.chunks() - 1;
  return map;
}

pipeline::Costs mlir::tg::pipelineFunctionCosts(ModuleOp module,
                                                const pipeline::Shape &shape,
                                                const CostModel &cost) {
  pipeline::Costs costs =
      pipeline::Costs::uniform(shape, 0, 0, 0, /*transfer=*/0);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto role =
        func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
    auto chunk = role ? role.getAs<IntegerAttr>("chunk") : nullptr;
    if (!chunk)
      continue;
    double seconds = 0;
    for (Operation &op : func.getBody().front().without_terminator()) {
      std::optional<double> comm = cost.collectiveOpSeconds(&op);
      seconds += comm ? *comm : cost.opSeconds(&op);
    }
    StringRef kind = role.getAs<StringAttr>("kind").getValue();
    if (kind == "reduce") {
      costs.reduce.resize(shape.chunks(), 0);
      costs.reduce[chunk.getInt()] = seconds;
      continue;
    }
    std::vector<double> &list = kind == "forward"    ? costs.forward
                                : kind == "backward" ? costs.backwardInput
                                                     : costs.backwardWeight;
    list[chunk.getInt()] = seconds;
  }
  costs.transfer =
      cost.stageSendSeconds((double)largestTransferBytes(module), shape.stages);
  return costs;
}

int64_t mlir::tg::largestTransferBytes(ModuleOp module) {
  SmallVector<Type> types = slotTypesOf(module);
  int64_t largest = 0;
  if (auto boundaries =
          module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineTransfersAttr))
    for (Attribute a : boundaries) {
      auto dict = cast<DictionaryAttr>(a);
      for (StringRef way : {"forward", "backward"}) {
        int64_t bytes = 0;
        if (auto list = dict.getAs<DenseI64ArrayAttr>(way))
          for (int64_t slot : list.asArrayRef())
            if (slot >= 0 && slot < (int64_t)types.size() && types[slot])
              bytes += tensorBytes(types[slot]);
        largest = std::max(largest, bytes);
      }
    }
  return largest;
}

pipeline::SlotUse mlir::tg::slotUseOf(ModuleOp module,
                                      const pipeline::Shape &shape) {
  pipeline::SlotUse use;
  use.functionSlots.assign(3 * shape.chunks(), {});
  auto note = [&](int64_t slot, std::vector<int64_t> &list) {
    list.push_back(slot);
    use.numSlots = std::max(use.numSlots, slot + 1);
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    auto role =
        func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
    auto chunk = role ? role.getAs<IntegerAttr>("chunk") : nullptr;
    if (!chunk || chunk.getInt() >= shape.chunks())
      continue;
    StringRef kind = role.getAs<StringAttr>("kind").getValue();
    if (kind == "reduce")
      continue; // the gradient sums, no slot
    std::vector<int64_t> &list =
        use.functionSlots[3 * chunk.getInt() + (kind == "forward"    ? 0
                                                : kind == "backward" ? 1
                                                                     : 2)];
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto slot =
              func.getArgAttrOfType<IntegerAttr>(i, TgDialect::kSlotAttr))
        note(slot.getInt(), list);
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      if (auto slot =
              func.getResultAttrOfType<IntegerAttr>(r, TgDialect::kSlotAttr))
        note(slot.getInt(), list);
  }
  if (auto boundaries =
          module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineTransfersAttr))
    for (Attribute a : boundaries) {
      auto dict = cast<DictionaryAttr>(a);
      for (StringRef way : {"forward", "backward"}) {
        std::vector<int64_t> moves;
        if (auto list = dict.getAs<DenseI64ArrayAttr>(way))
          for (int64_t slot : list.asArrayRef())
            note(slot, moves);
        (way == "forward" ? use.forward : use.backward)
            .push_back(std::move(moves));
      }
    }
  return use;
}

SmallVector<Type> mlir::tg::slotTypesOf(ModuleOp module) {
  SmallVector<Type> types;
  for (auto func : module.getOps<func::FuncOp>())
    for (auto [r, type] : llvm::enumerate(func.getResultTypes()))
      if (auto slot =
              func.getResultAttrOfType<IntegerAttr>(r, TgDialect::kSlotAttr)) {
        if ((int64_t)types.size() <= slot.getInt())
          types.resize(slot.getInt() + 1);
        types[slot.getInt()] = type;
      }
  return types;
}

ArrayAttr mlir::tg::slotPlansAttr(MLIRContext *context,
                                  ArrayRef<pipeline::SlotPlan> plans) {
  Builder b(context);
  SmallVector<Attribute> stages;
  for (const pipeline::SlotPlan &plan : plans) {
    SmallVector<int64_t> buffers, waits;
    for (const std::vector<int64_t> &row : plan.buffer)
      buffers.append(row.begin(), row.end());
    for (bool wait : plan.waitSends)
      waits.push_back(wait);
    stages.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("buffers", b.getDenseI64ArrayAttr(buffers)),
         b.getNamedAttr("counts", b.getDenseI64ArrayAttr(plan.count)),
         b.getNamedAttr("post_after", b.getDenseI64ArrayAttr(plan.postAfter)),
         b.getNamedAttr("wait_sends", b.getDenseI64ArrayAttr(waits))}));
  }
  return b.getArrayAttr(stages);
}

llvm::Expected<std::vector<pipeline::SlotPlan>>
mlir::tg::readSlotPlans(ModuleOp module, const pipeline::Shape &shape,
                        int64_t numSlots) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   kPipelineBuffersAttr + ": " + why);
  };
  auto stages = module->getAttrOfType<ArrayAttr>(kPipelineBuffersAttr);
  auto actions =
      module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineActionsAttr);
  if (!stages || !actions)
    return fail("missing (run tg-pipeline-schedule)");
  if ((int64_t)stages.size() != shape.stages || actions.size() != stages.size())
    return fail(llvm::formatv("{0} stages' plans for {1} stages", stages.size(),
                              shape.stages));
  std::vector<pipeline::SlotPlan> plans;
  for (auto [s, a] : llvm::enumerate(stages)) {
    auto dict = dyn_cast<DictionaryAttr>(a);
    auto get = [&](StringRef key) {
      return dict ? dict.getAs<DenseI64ArrayAttr>(key) : DenseI64ArrayAttr();
    };
    DenseI64ArrayAttr buffers = get("buffers"), counts = get("counts"),
                      post = get("post_after"), waits = get("wait_sends");
    int64_t n = cast<ArrayAttr>(actions[s]).size();
    if (!buffers || !counts || !post || !waits ||
        buffers.size() != shape.microBatches * numSlots ||
        counts.size() != numSlots || post.size() != n || waits.size() != n)
      return fail(llvm::formatv(
          "stage {0}'s plan must be {{buffers = [{1} x {2}], counts = [{2}], "
          "post_after = [{3}], wait_sends = [{3}]}",
          s, shape.microBatches, numSlots, n));
    pipeline::SlotPlan plan;
    for (int64_t m = 0; m < shape.microBatches; ++m)
      plan.buffer.emplace_back(buffers.asArrayRef().begin() + m * numSlots,
                               buffers.asArrayRef().begin() +
                                   (m + 1) * numSlots);
    plan.count.assign(counts.asArrayRef().begin(), counts.asArrayRef().end());
    plan.postAfter.assign(post.asArrayRef().begin(), post.asArrayRef().end());
    for (int64_t w : waits.asArrayRef())
      plan.waitSends.push_back(w != 0);
    for (int64_t k = 0; k < numSlots; ++k)
      for (int64_t m = 0; m < shape.microBatches; ++m)
        if (plan.buffer[m][k] < -1 || plan.buffer[m][k] >= plan.count[k])
          return fail(llvm::formatv("stage {0} puts micro-batch {1}'s slot "
                                    "{2} in buffer {3} of {4}",
                                    s, m, k, plan.buffer[m][k], plan.count[k]));
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::optional<PipelineCostModel> mlir::tg::pipelineCostModel(ModuleOp module,
                                                             StringRef cluster,
                                                             StringRef pass) {
  llvm::Expected<ClusterSpec> spec = loadClusterSpec(cluster);
  if (!spec) {
    module.emitError(pass) << ": " << llvm::toString(spec.takeError());
    return std::nullopt;
  }
  PipelineCostModel out;
  out.spec = std::make_unique<ClusterSpec>(std::move(*spec));
  out.model = std::make_unique<CostModel>(*out.spec,
                                          getModuleMesh(module.getOperation()));
  return out;
}

std::vector<char> mlir::tg::reducedChunksOf(ModuleOp module, int64_t chunks) {
  std::vector<char> reduced(chunks, 0);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto role =
        func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
    auto chunk = role ? role.getAs<IntegerAttr>("chunk") : nullptr;
    auto kind = role ? role.getAs<StringAttr>("kind") : nullptr;
    if (chunk && kind && kind.getValue() == "reduce" && chunk.getInt() >= 0 &&
        chunk.getInt() < chunks)
      reduced[chunk.getInt()] = 1;
  }
  return reduced;
}

llvm::Expected<pipeline::StageActions>
mlir::tg::readPipelineActions(ModuleOp module, pipeline::Shape &shape) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  };
  PipelineStages stages = getPipelineStages(module);
  auto actionsAttr =
      module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineActionsAttr);
  auto dict = module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr);
  auto micro = dict ? dict.getAs<IntegerAttr>("micro_batches") : nullptr;
  if (!actionsAttr || !micro)
    return fail("the pipelined module has no schedule (run "
                "tg-pipeline-split and tg-pipeline-schedule)");
  shape = pipeline::Shape{stages.stages, stages.virtualStages, micro.getInt()};
  shape.reduced = reducedChunksOf(module, shape.chunks());
  if ((int64_t)actionsAttr.size() != stages.stages)
    return fail("tg.pipeline_actions has " + llvm::Twine(actionsAttr.size()) +
                " stages, the pipeline " + llvm::Twine(stages.stages));
  pipeline::StageActions actions(stages.stages);
  for (auto [st, list] : llvm::enumerate(actionsAttr)) {
    auto texts = dyn_cast<ArrayAttr>(list);
    if (!texts)
      return fail("tg.pipeline_actions[" + llvm::Twine(st) +
                  "] is not a list of actions");
    for (Attribute a : texts) {
      auto text = dyn_cast<StringAttr>(a);
      if (!text)
        return fail("tg.pipeline_actions[" + llvm::Twine(st) +
                    "]: an action is no string");
      llvm::Expected<pipeline::Action> action =
          pipeline::parseAction(text.getValue(), shape, st);
      if (!action)
        return fail("tg.pipeline_actions: " +
                    llvm::toString(action.takeError()));
      actions[st].push_back(*action);
    }
  }
  return actions;
}

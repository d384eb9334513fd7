//===- ShardingReport.cpp - tgc --report=sharding ---------------*- C++ -*-===//
//
// Walks @train_step as it will run (kernels after fusion, collectives after
// scheduling, buffers after memory planning) and prices it with the cost
// model. Time is compute plus communication, less what the gradient buckets
// hide behind compute where the cluster runs them beside it: the step is
// played on two streams, a bucket starting where tg-schedule placed it and
// the compute stream waiting for it at its tg.await.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/ShardingReport.h"

#include "compiler/pipeline/MemoryReport.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;

namespace {

std::string formatSeconds(double s) {
  if (s >= 1)
    return llvm::formatv("{0:f2} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f2} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

func::FuncOp stepOf(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("train_step");
}

double peakFlops(ModuleOp module, const CostModel &cost) {
  StringRef type = appliedPrecision(module) == "bf16" ? "bf16" : "f32";
  return cost.spec().flopsFor(type) / cost.spec().flopsEfficiency;
}

/// Why `plan` loses to `chosen`, or "" when it does not.
std::string verdict(const PlanEstimate &plan, const PlanEstimate &chosen,
                    int64_t limit) {
  if (!plan.error.empty())
    return "not applicable: " + plan.error;
  if (plan.memoryBytes() > limit)
    return "does not fit: " + formatBytes(plan.memoryBytes()) + " > " +
           formatBytes(limit);
  if (plan.stepSeconds() > chosen.stepSeconds())
    return llvm::formatv("{0:f2}x slower",
                         plan.stepSeconds() / chosen.stepSeconds())
        .str();
  return "";
}

/// How many micro-batches one step of `module` runs: what tg-optimizer
/// built @train_step for (tg.micro_batches) where the module has
/// @forward_backward (the executable calls it for all but the last, which
/// @train_step computes), else 1.
int64_t microBatchesOf(ModuleOp module) {
  auto step = stepOf(module);
  auto k = step ? step->getAttrOfType<IntegerAttr>(TgDialect::kMicroBatchesAttr)
                : nullptr;
  if (!k || !module.lookupSymbol<func::FuncOp>("forward_backward"))
    return 1;
  return std::max<int64_t>(k.getInt(), 1);
}

/// One call of a function on one pipeline stage (the whole step without
/// stages).
struct StageTimes {
  double compute = 0, comm = 0, hidden = 0, flops = 0;
  double seconds() const { return compute + comm - hidden; }
};

/// The stages an op works for, each with its share of the op's time.
using StageShares = SmallVector<std::pair<int64_t, double>, 1>;

/// The stages each op of `func` works for, with the share of its time
/// and its results' bytes: its chunk's stage, but a kernel with no name
/// that reads parameters or state (the fused optimizer updates, which
/// span layers) works for the stages that hold them, by their bytes, and
/// another op with no name for the stages of the op it reads.
SmallVector<StageShares> sharesOf(const StageMap &map, func::FuncOp func,
                                  ArrayRef<int64_t> chunks) {
  SmallVector<StageShares> out;
  DenseMap<Operation *, size_t> index;
  for (auto [i, op] :
       llvm::enumerate(func.getBody().front().without_terminator())) {
    index[&op] = i;
    StageShares shares;
    if (layerOfOp(&op).empty()) {
      llvm::SmallMapVector<int64_t, double, 4> bytes;
      double all = 0;
      for (Value v : op.getOperands()) {
        std::optional<int64_t> chunk = map.chunkOfArgument(func, v);
        if (!chunk)
          continue;
        double b = (double)tensorBytes(v.getType());
        bytes[map.stageOf(*chunk)] += b;
        all += b;
      }
      for (auto [stage, b] : bytes)
        shares.push_back({stage, all > 0 ? b / all : 1.0 / bytes.size()});
      for (Value v : op.getOperands()) {
        auto it = index.find(v.getDefiningOp());
        if (!shares.empty() || it == index.end())
          continue;
        shares = out[it->second];
      }
    }
    if (shares.empty())
      shares.push_back({map.stageOf(chunks[i]), 1.0});
    out.push_back(std::move(shares));
  }
  return out;
}

/// Adds one call of `func` to `plan`, `weight` times (compute, collectives
/// listed when `listCollectives`, per-layer times, the communication the
/// schedule hides), and returns the call's times per stage: `shares`
/// gives each op's stages (empty: all on stage 0), each stage playing its
/// own ops.
SmallVector<StageTimes> addFunction(PlanEstimate &plan, func::FuncOp func,
                                    const CostModel &cost, double weight,
                                    bool listCollectives,
                                    ArrayRef<StageShares> shares = {},
                                    int64_t stages = 1) {
  // Ops without a name of their own (the optimizer's, a bucket's
  // collective) count toward the layer before them.
  std::string layer = "(step)";
  // Each stage's two streams' clocks: compute (and collectives in place),
  // and the buckets' when the cluster overlaps them.
  bool overlap = cost.spec().overlapsCommunication;
  struct Clocks {
    double compute = 0, comm = 0;
    llvm::DenseMap<int64_t, double> bucketDone;
  };
  SmallVector<Clocks> clocks(stages);
  SmallVector<StageTimes> times(stages);
  llvm::StringMap<size_t> layerIndex;
  for (auto [i, entry] : llvm::enumerate(plan.layers))
    layerIndex[std::get<0>(entry)] = i;
  for (auto [i, op] :
       llvm::enumerate(func.getBody().front().without_terminator())) {
    StageShares whole{{0, 1.0}};
    ArrayRef<std::pair<int64_t, double>> opShares =
        shares.empty() ? ArrayRef(whole) : ArrayRef(shares[i]);
    // The compute stream waits for a bucket at its tg.await.
    if (auto await = dyn_cast<AwaitOp>(op)) {
      int64_t bucket = *await.getBucketOp().getBucket();
      for (auto [stage, share] : opShares)
        clocks[stage].compute = std::max(
            clocks[stage].compute, clocks[stage].bucketDone.lookup(bucket));
      continue;
    }
    std::string named = layerOfOp(&op);
    if (!named.empty())
      layer = named;
    auto [it, inserted] = layerIndex.try_emplace(layer, plan.layers.size());
    if (inserted)
      plan.layers.push_back({layer, 0.0, 0.0});
    auto &[name, layerCompute, layerComm] = plan.layers[it->second];
    if (std::optional<double> seconds = cost.collectiveOpSeconds(&op);
        seconds && !isa<AllSliceOp>(op)) {
      if (listCollectives) {
        CollectiveEstimate c;
        c.kind = op.getName().stripDialect().str();
        if (auto axis = op.getAttrOfType<StringAttr>("mesh_axis"))
          c.axis = axis.getValue().str();
        for (Value v : op.getOperands())
          c.bytes += tensorBytes(v.getType());
        if (auto why = op.getAttrOfType<StringAttr>(kReshardAttr))
          c.cause = why.getValue().str();
        else if (op.hasAttr("bucket"))
          c.cause = "gradient bucket";
        c.layer = layer;
        c.seconds = *seconds;
        plan.collectives.push_back(std::move(c));
      }
      layerComm += weight * *seconds;
      auto bucket = op.getAttrOfType<IntegerAttr>("bucket");
      for (auto [stage, share] : opShares) {
        Clocks &clock = clocks[stage];
        double part = share * *seconds;
        times[stage].comm += part;
        if (overlap && bucket) {
          clock.comm = std::max(clock.comm, clock.compute) + part;
          clock.bucketDone[bucket.getInt()] = clock.comm;
        } else {
          clock.compute += part;
        }
      }
      continue;
    }
    double seconds = cost.opSeconds(&op);
    double flops = flopCount(&op);
    plan.flops += weight * flops;
    layerCompute += weight * seconds;
    for (auto [stage, share] : opShares) {
      Clocks &clock = clocks[stage];
      times[stage].compute += share * seconds;
      times[stage].flops += share * flops;
      clock.compute += share * seconds;
    }
  }
  for (auto [clock, time] : llvm::zip(clocks, times)) {
    double makespan = std::max(clock.compute, clock.comm);
    time.hidden = std::max(0.0, time.compute + time.comm - makespan);
    plan.computeSeconds += weight * time.compute;
    plan.commSeconds += weight * time.comm;
    plan.hiddenSeconds += weight * time.hidden;
  }
  return times;
}

/// What one micro-batch of `func` keeps from its forward pass for its
/// backward (values made up to the forward end and read after it), by
/// stage, of those computed from the batch (a weight's bf16 copy is not an
/// activation), and the most bytes of activations one chunk sends the next
/// in the forward pass. What is computed from parameters alone (a tied
/// embedding's copy for the head) each stage makes for itself.
struct StageActivations {
  SmallVector<int64_t> savedBytes;
  int64_t sendBytes = 0;
};
StageActivations activationsOf(func::FuncOp func, ArrayRef<int64_t> chunks,
                               const StageMap &map) {
  StageActivations out;
  out.savedBytes.assign(map.pipeline.stages, 0);
  Operation *end = forwardEndOf(func);
  if (!end)
    return out;
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> chunkOf;
  for (auto [i, op] : llvm::enumerate(body.without_terminator()))
    chunkOf[&op] = chunks[i];
  SmallVector<int64_t> crossing(map.chunks(), 0);
  // The last chunk that reads each activation (in the forward pass).
  DenseMap<Value, int64_t> furthestOf;
  DenseSet<Value> fromBatch = valuesFromBatch(func);
  for (Operation &op : body.without_terminator()) {
    if (end->isBeforeInBlock(&op))
      break;
    int64_t chunk = chunkOf.lookup(&op);
    for (Value v : op.getResults()) {
      bool activation = fromBatch.contains(v);
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      int64_t bytes = tensorBytes(v.getType()), furthest = chunk;
      bool kept = false;
      for (Operation *user : v.getUsers()) {
        if (user == body.getTerminator())
          continue;
        if (end->isBeforeInBlock(user))
          kept = true;
        else
          furthest = std::max(furthest, chunkOf.lookup(user));
      }
      if (kept && activation)
        out.savedBytes[map.stageOf(chunk)] += bytes;
      if (!activation)
        continue;
      furthestOf[v] = furthest;
      // A gathered value the next stage reads is sent as its pieces, which
      // that stage gathers: nothing more where the pieces cross anyway.
      Value pieces = isa<AllGatherOp>(op) ? op.getOperand(0) : Value();
      for (int64_t c = chunk; c < furthest; ++c)
        crossing[c] += !pieces ? bytes
                       : furthestOf.lookup(pieces) > c
                           ? 0
                           : tensorBytes(pieces.getType());
    }
  }
  out.sendBytes = *llvm::max_element(crossing);
  return out;
}

/// Prices `plan`'s step as a pipeline: each stage's time is its share of
/// @forward_backward on K - 1 micro-batches and of @train_step once; the
/// slowest stage's is the step's, plus the bubble the schedule's player
/// finds (playPipeline: (P - 1) / V of its micro-batch slots under 1F1B,
/// (P - 1) / 3 under ZB-H1) and, on the
/// critical path, the sends between stages
/// (2 (P V - 1) in the fill and drain, 2 V per micro-batch, none hidden).
/// A stage holds its layers' parameters and state, the batch, and the
/// activations of as many micro-batches as its schedule keeps in flight.
void estimatePipelined(PlanEstimate &plan, ModuleOp module,
                       const CostModel &cost, const StageMap &map,
                       pipeline::ScheduleChoice schedule) {
  const PipelineStages &pipeline = map.pipeline;
  int64_t p = pipeline.stages, v = pipeline.virtualStages,
          k = plan.microBatches;
  plan.stages = p;
  plan.virtualStages = v;
  llvm::Expected<PipelinePlay> play =
      playPipeline(p, v, k, pipeline::scheduleChoiceName(schedule));
  if (!play) {
    plan.error = llvm::toString(play.takeError());
    return;
  }
  func::FuncOp step = stepOf(module);
  auto fb = k > 1 ? module.lookupSymbol<func::FuncOp>("forward_backward")
                  : func::FuncOp();
  SmallVector<int64_t> stepChunks = map.chunksOf(step);
  SmallVector<StageShares> stepShares = sharesOf(map, step, stepChunks);
  SmallVector<StageTimes> last =
      addFunction(plan, step, cost, 1, /*listCollectives=*/true, stepShares, p);
  SmallVector<StageTimes> other(p);
  SmallVector<int64_t> fbChunks;
  SmallVector<StageShares> fbShares;
  if (fb) {
    fbChunks = map.chunksOf(fb);
    fbShares = sharesOf(map, fb, fbChunks);
    other = addFunction(plan, fb, cost, k - 1, /*listCollectives=*/false,
                        fbShares, p);
  }
  // The slowest stage sets the pace.
  auto total = [&](int64_t s) {
    return (k - 1) * other[s].seconds() + last[s].seconds();
  };
  int64_t slow = 0;
  for (int64_t s = 1; s < p; ++s)
    if (total(s) > total(slow))
      slow = s;
  plan.slowestStage = slow;
  plan.computeSeconds = (k - 1) * other[slow].compute + last[slow].compute;
  plan.commSeconds = (k - 1) * other[slow].comm + last[slow].comm;
  plan.hiddenSeconds = (k - 1) * other[slow].hidden + last[slow].hidden;
  plan.flops = (k - 1) * other[slow].flops + last[slow].flops;
  plan.trainStepSeconds = last[slow].seconds();
  // One micro-batch slot: @forward_backward's; with one micro-batch,
  // @train_step's whole (its update included: an upper bound).
  double slot = fb ? other[slow].seconds() : last[slow].seconds();
  plan.bubbleSeconds = (play->slots - (double)k) * slot;
  StageActivations stepActivations = activationsOf(step, stepChunks, map);
  plan.sendBytes = stepActivations.sendBytes;
  plan.sendSeconds = (double)(2 * (p * v - 1) + 2 * v * k) *
                     cost.stageSendSeconds(plan.sendBytes, p);

  // Memory: each stage's arguments and its share of the arena.
  // A parameter lives on each stage whose layers read it (a tied embedding
  // on the first and the last, as Megatron-LM keeps it), with its state
  // and accumulator ("h.0.fc.weight.exp_avg" is h.0.fc.weight's).
  llvm::StringMap<llvm::SmallSetVector<int64_t, 2>> readers;
  for (auto [i, op] :
       llvm::enumerate(step.getBody().front().without_terminator()))
    for (Value v : layerOfOp(&op).empty() ? ValueRange{} : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (auto name = step.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TgDialect::kParamAttr))
          readers[name.getValue()].insert(map.stageOf(stepChunks[i]));
  SmallVector<int64_t> argBytes(p, 0);
  for (BlockArgument arg : step.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      continue;
    int64_t bytes = tensorBytes(arg.getType());
    StringAttr name = parameterNameOf(step, arg);
    if (!name) { // the batch: every stage holds it (an upper bound)
      for (int64_t &b : argBytes)
        b += bytes;
      continue;
    }
    StringRef param = name.getValue();
    auto it = readers.find(param);
    if (it == readers.end())
      it = readers.find(param.rsplit('.').first);
    if (it != readers.end()) {
      for (int64_t s : it->second)
        argBytes[s] += bytes;
      continue;
    }
    auto chunk = map.chunkOfGroup.find(groupOfName(param));
    argBytes[map.stageOf(
        chunk == map.chunkOfGroup.end() ? 0 : chunk->second)] += bytes;
  }
  SmallVector<int64_t> arena(p, 0);
  auto addArena = [&](func::FuncOp func, ArrayRef<StageShares> shares,
                      const StageActivations &acts) {
    auto bytes = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
    if (!bytes)
      return;
    // Each stage's peak of live bytes over the step (a value's bytes go
    // to its defining op's stages, by their shares), scaled as the planned
    // arena exceeds the whole step's peak (views, alignment, fragmentation),
    // plus the activations of the stage's other micro-batches in flight.
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : body)
      position[&op] = position.size();
    std::map<int64_t, SmallVector<double>> delta; // position -> per stage
    auto change = [&](int64_t at, ArrayRef<std::pair<int64_t, double>> to,
                      double b) {
      auto &d = delta[at];
      if (d.empty())
        d.assign(p + 1, 0);
      for (auto [stage, share] : to)
        d[stage] += share * b;
      d[p] += b; // the whole step
    };
    for (auto [i, op] : llvm::enumerate(body.without_terminator())) {
      // What the memory plan placed in the arena (not views, not what
      // updates an argument in place).
      PlaceAttr place = placeOf(&op);
      for (OpResult r : op.getResults()) {
        if (!isa<RankedTensorType>(r.getType()) || r.use_empty() ||
            (place && !place.arenaOffset(r.getResultNumber())) ||
            isa<ConstantOp>(op))
          continue;
        int64_t last = position[&op];
        for (Operation *user : r.getUsers())
          last = std::max(last, position.lookup(user));
        double b = (double)tensorBytes(r.getType());
        change(position[&op], shares[i], b);
        change(last + 1, shares[i], -b);
      }
    }
    SmallVector<double> live(p + 1, 0), peak(p + 1, 0);
    for (auto &[at, d] : delta)
      for (int64_t s = 0; s <= p; ++s) {
        live[s] += d[s];
        peak[s] = std::max(peak[s], live[s]);
      }
    double scale = peak[p] > 0 ? (double)bytes.getBytes() / peak[p] : 1.0;
    for (int64_t s = 0; s < p; ++s)
      arena[s] = std::max(
          arena[s], (int64_t)std::ceil(
                        scale * (peak[s] + (play->inFlight[s] - 1) *
                                               (double)acts.savedBytes[s])));
  };
  addArena(step, stepShares, stepActivations);
  if (fb)
    addArena(fb, fbShares, activationsOf(fb, fbChunks, map));
  int64_t full = 0;
  for (int64_t s = 1; s < p; ++s)
    if (argBytes[s] + arena[s] > argBytes[full] + arena[full])
      full = s;
  plan.fullestStage = full;
  plan.argumentBytes = argBytes[full];
  plan.arenaBytes = arena[full];
}

/// Prices a pipelined module as it is built: tg-pipeline-schedule's
/// action lists played (pipeline::simulate) on the modelled time of each
/// of tg-pipeline-split's chunk functions (pipelineFunctionCosts, the
/// times the schedule pass chose and placed by), then each stage's update
/// once; the stage that finishes last sets the step. Its figures are that
/// stage's: its chunk functions on every micro-batch and its update, the
/// rest of the played step its idle time (the schedule's bubble and its
/// waits for transfers). The memory is the fullest stage's as
/// --report=memory counts it (stageMemoryOf: parameters, state, gradient
/// sums, the slots' buffers under the schedule, the largest arena).
void estimateBuiltPipeline(PlanEstimate &plan, ModuleOp module,
                           const CostModel &stepCost) {
  // The split module's mesh, its stages the axis pp: the sum of a tied
  // weight's gradient over pp is priced as the schedule pass prices it.
  CostModel cost(stepCost.spec(), getModuleMesh(module));
  llvm::Expected<BuiltPipeline> played = playBuiltPipeline(module, cost);
  if (!played) {
    plan.error = llvm::toString(played.takeError());
    return;
  }
  const pipeline::Shape &shape = played->shape;
  const pipeline::Timeline &timeline = played->timeline;
  int64_t p = shape.stages;
  plan.built = true;
  plan.stages = p;
  plan.virtualStages = shape.virtualStages;
  plan.microBatches = shape.microBatches;
  plan.schedule = played->schedule;
  // Per stage: its chunks' F, B and W (each micro-batch) and their
  // reductions (once a step).
  SmallVector<SmallVector<func::FuncOp>> chunkFuncs(p), reduceFuncs(p);
  SmallVector<func::FuncOp> updates(p);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto role =
        func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
    if (!role)
      continue;
    if (auto chunk = role.getAs<IntegerAttr>("chunk"))
      (role.getAs<StringAttr>("kind").getValue() == "reduce"
           ? reduceFuncs
           : chunkFuncs)[shape.stageOf(chunk.getInt())]
          .push_back(func);
    else if (auto stage = role.getAs<IntegerAttr>("stage");
             stage && stage.getInt() < p)
      updates[stage.getInt()] = func;
  }
  // Each stage's end: its last action, then its update.
  SmallVector<double> ends(p, 0);
  for (int64_t s = 0; s < p; ++s) {
    for (const pipeline::Timeline::Slot &slot : timeline.stages[s])
      ends[s] = std::max(ends[s], slot.end);
    PlanEstimate scratch;
    if (updates[s])
      ends[s] += addFunction(scratch, updates[s], cost, 1,
                             /*listCollectives=*/false)[0]
                     .seconds();
  }
  int64_t slow = std::max_element(ends.begin(), ends.end()) - ends.begin();
  plan.slowestStage = slow;
  for (func::FuncOp func : chunkFuncs[slow])
    addFunction(plan, func, cost, (double)shape.microBatches,
                /*listCollectives=*/true);
  for (func::FuncOp func : reduceFuncs[slow])
    addFunction(plan, func, cost, 1, /*listCollectives=*/true);
  if (updates[slow])
    plan.trainStepSeconds = addFunction(plan, updates[slow], cost, 1,
                                        /*listCollectives=*/true)[0]
                                .seconds();
  double working = plan.computeSeconds + plan.commSeconds - plan.hiddenSeconds;
  plan.bubbleSeconds = std::max(0.0, ends[slow] - working);
  plan.sendSeconds = 0;
  plan.sendBytes = largestTransferBytes(module);

  llvm::Expected<std::vector<StageMemory>> memory = stageMemoryOf(module);
  if (!memory) {
    plan.error = llvm::toString(memory.takeError());
    return;
  }
  int64_t full = 0;
  for (int64_t s = 1; s < p; ++s)
    if ((*memory)[s].peak() > (*memory)[full].peak())
      full = s;
  plan.fullestStage = full;
  plan.argumentBytes = (*memory)[full].arguments();
  plan.arenaBytes = (*memory)[full].slots + (*memory)[full].arena;
}

} // namespace

llvm::Expected<BuiltPipeline>
mlir::tg::playBuiltPipeline(ModuleOp module, const CostModel &stepCost) {
  CostModel cost(stepCost.spec(), getModuleMesh(module));
  BuiltPipeline out;
  llvm::Expected<pipeline::StageActions> actions =
      readPipelineActions(module, out.shape);
  if (!actions)
    return actions.takeError();
  out.actions = std::move(*actions);
  if (auto dict =
          module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr))
    if (auto schedule = dict.getAs<StringAttr>("schedule"))
      out.schedule = schedule.getValue().str();
  out.costs = pipelineFunctionCosts(module, out.shape, cost);
  llvm::Expected<pipeline::Timeline> timeline =
      pipeline::simulate(out.shape, out.actions, out.costs);
  if (!timeline)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tg.pipeline_actions: " +
                                       llvm::toString(timeline.takeError()));
  out.timeline = std::move(*timeline);
  return out;
}

llvm::Expected<pipeline::Costs>
mlir::tg::pipelineChunkCosts(ModuleOp module, const CostModel &cost) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  };
  func::FuncOp step = stepOf(module);
  if (!step)
    return fail("no @train_step");
  PipelineStages stages = getPipelineStages(module);
  // A step cut into chunks (tg-pipeline-split): the times of the very
  // functions the executable runs.
  if (module->hasAttr(TgDialect::kPipelineTransfersAttr))
    return pipelineFunctionCosts(
        module, pipeline::Shape{stages.stages, stages.virtualStages, 1}, cost);
  llvm::Expected<StageMap> map = stageMapOf(step, stages, &cost);
  if (!map)
    return map.takeError();
  func::FuncOp func = step;
  Operation *end = forwardEndOf(func);
  if (!end)
    return fail("@" + func.getSymName() + " has no forward pass to split");
  SmallVector<int64_t> chunks = map->chunksOf(func);
  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> index;
  for (Operation &op : func.getBody().front().without_terminator()) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }
  // The update and the gradient buckets run once a step, not per
  // micro-batch: neither counted nor followed.
  auto onceAStep = [](Operation *op) {
    return isa<OptimizerUpdateOp, GlobalNormOp, LrScheduleOp>(op) ||
           op->hasAttr("bucket");
  };
  // Backward ops from the last: B where a user is an earlier chunk's, or
  // its own chunk's B.
  SmallVector<bool> inputBackward(ops.size(), false);
  for (size_t i = ops.size(); i-- > 0;) {
    if (!end->isBeforeInBlock(ops[i]))
      break;
    for (Operation *user : ops[i]->getUsers()) {
      auto it = index.find(user);
      if (it != index.end() && !onceAStep(user) &&
          (chunks[it->second] < chunks[i] ||
           (chunks[it->second] == chunks[i] && inputBackward[it->second])))
        inputBackward[i] = true;
    }
  }
  pipeline::Shape shape{stages.stages, stages.virtualStages, 1};
  pipeline::Costs costs = pipeline::Costs::uniform(shape, 0, 0, 0);
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (onceAStep(op))
      continue;
    std::optional<double> comm = cost.collectiveOpSeconds(op);
    double seconds = comm ? *comm : cost.opSeconds(op);
    int64_t c = chunks[i];
    if (!end->isBeforeInBlock(op))
      costs.forward[c] += seconds;
    else if (inputBackward[i])
      costs.backwardInput[c] += seconds;
    else
      costs.backwardWeight[c] += seconds;
  }
  costs.transfer = cost.stageSendSeconds(
      (double)activationsOf(func, chunks, *map).sendBytes, stages.stages);
  return costs;
}

PlanEstimate mlir::tg::estimatePlan(ModuleOp module, const CostModel &cost,
                                    StringRef label,
                                    pipeline::ScheduleChoice schedule) {
  PlanEstimate plan;
  plan.label = label.str();
  func::FuncOp step = stepOf(module);
  if (!step) {
    plan.error = "no @train_step";
    return plan;
  }
  plan.microBatches = microBatchesOf(module);
  PipelineStages pipeline = getPipelineStages(module);
  if (module->hasAttr(TgDialect::kPipelineActionsAttr)) {
    estimateBuiltPipeline(plan, module, cost);
    return plan;
  }
  if (pipeline.stages > 1 || pipeline.virtualStages > 1) {
    llvm::Expected<StageMap> map = stageMapOf(step, pipeline, &cost);
    if (!map) {
      plan.error = llvm::toString(map.takeError());
      return plan;
    }
    estimatePipelined(plan, module, cost, *map, schedule);
    return plan;
  }
  for (Type t : step.getArgumentTypes())
    if (isa<RankedTensorType>(t))
      plan.argumentBytes += tensorBytes(t);
  if (auto arena = step->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
    plan.arenaBytes = arena.getBytes();
  // With gradient accumulation a step is @train_step on the last
  // micro-batch (its gradient sync, clipping and update once per step)
  // and @forward_backward on the others.
  addFunction(plan, step, cost, 1, /*listCollectives=*/true);
  plan.trainStepSeconds = plan.stepSeconds();
  if (plan.microBatches > 1) {
    auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
    addFunction(plan, fb, cost, plan.microBatches - 1,
                /*listCollectives=*/false);
    // The functions share one arena, as large as the larger peak.
    if (auto arena = fb->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
      plan.arenaBytes = std::max(plan.arenaBytes, arena.getBytes());
  }
  return plan;
}

static void printPlanRow(const PlanEstimate &plan, StringRef why,
                         llvm::raw_ostream &os) {
  // The chosen plan's row: its kind; the header says why.
  StringRef label = StringRef(plan.label).split(':').first;
  if (!plan.error.empty()) {
    os << llvm::formatv("  {0,-12} {1}\n", label, why);
    return;
  }
  os << llvm::formatv(
      "  {0,-12} {1,10} {2,10} {3,10} {4,11}  {5}\n", label,
      formatSeconds(plan.stepSeconds()), formatSeconds(plan.computeSeconds),
      formatSeconds(plan.commSeconds), formatBytes(plan.memoryBytes()), why);
}

void mlir::tg::printShardingReport(ModuleOp module, const PlanEstimate &chosen,
                                   ArrayRef<PlanEstimate> others,
                                   const CostModel &cost, int64_t limit,
                                   llvm::raw_ostream &os) {
  func::FuncOp step = stepOf(module);
  MeshOp mesh = getModuleMesh(module);
  const ClusterSpec &spec = cost.spec();
  os << "sharding report: @train_step";
  // The mesh of one stage: tg-pipeline-split adds the stages as axis pp.
  SmallVector<StringRef> axes;
  if (mesh)
    for (StringRef a : mesh.getAxisNames())
      if (!(chosen.stages > 1 && a == "pp"))
        axes.push_back(a);
  if (!axes.empty()) {
    os << " on mesh [";
    llvm::interleaveComma(
        axes, os, [&](StringRef a) { os << a << "=" << mesh.axisSize(a); });
    os << "]";
  }
  if (chosen.stages > 1)
    os << " x " << chosen.stages << " pipeline stages"
       << (chosen.built ? " (as built: schedule " + chosen.schedule + ")"
                        : std::string(" (modelled)"));
  os << ", cluster " << spec.name << " (" << spec.deviceName << ", "
     << spec.devicesPerNode << " per node)\n";
  os << "plan: " << chosen.label << "\n";
  if (auto auto_ =
          step->getAttrOfType<DictionaryAttr>(TgDialect::kAutoShardAttr)) {
    auto get = [&](StringRef key) { return auto_.get(key); };
    os << "  solver: " << cast<StringAttr>(get("method")).getValue() << ", "
       << cast<IntegerAttr>(get("nodes")).getInt() << " nodes, "
       << cast<IntegerAttr>(get("edges")).getInt() << " edges, its model "
       << formatSeconds(
              cast<FloatAttr>(get("modelled_seconds")).getValueAsDouble())
       << " before fusion\n";
  }

  os << "\nparameters and optimizer state: sharding, origin\n";
  // Each parameter with its state under it ("fc1.weight.exp_avg"), by layer.
  llvm::MapVector<StringRef, SmallVector<BlockArgument>> byParam;
  SmallVector<std::pair<StringRef, BlockArgument>> states;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr))
      byParam[p.getValue()].push_back(arg);
    else if (auto st =
                 step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr))
      states.push_back({st.getValue(), arg});
  }
  for (auto [name, arg] : states) {
    StringRef param = name.rsplit('.').first;
    byParam[byParam.count(param) ? param : name].push_back(arg);
  }
  std::string lastLayer;
  for (auto &[param, args] : byParam) {
    std::string layer = groupOfName(param);
    if (layer != lastLayer)
      os << "  " << layer << "\n";
    lastLayer = layer;
    for (BlockArgument arg : args) {
      unsigned i = arg.getArgNumber();
      auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      if (!name)
        name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
      ShardingAttr s = getSharding(arg);
      std::string sharding = s ? formatSharding(s) : "whole";
      llvm::erase(sharding, '"');
      std::string origin = s ? getShardingOrigin(arg).str() : "";
      // A fused QKV weight is split as the view the step holds it in.
      if (auto file = step.getArgAttrOfType<DenseI64ArrayAttr>(
              i, TgDialect::kFileShapeAttr)) {
        auto dims = [](ArrayRef<int64_t> shape) {
          std::string out;
          llvm::raw_string_ostream os(out);
          llvm::interleave(shape, os, "x");
          return out;
        };
        SmallVector<int64_t> view(
            cast<RankedTensorType>(arg.getType()).getShape());
        if (s && step->hasAttr(kPartitionedAttr))
          for (int64_t d = 0; d < s.getRank(); ++d)
            for (StringRef a : s.axesOf(d))
              view[d] *= mesh ? mesh.axisSize(a) : 1;
        origin += " (held as " + dims(view) + ", " + dims(file.asArrayRef()) +
                  " in files)";
      }
      os << llvm::formatv("    {0,-34} {1,-22} {2}\n", name.getValue(),
                          sharding, origin);
    }
  }

  if (chosen.built)
    os << "\ncollectives of stage " << chosen.slowestStage
       << "'s functions (its chunks' on each of " << chosen.microBatches
       << " micro-batches, its update's once): kind, axis, bytes, modelled "
          "time, cause\n";
  else if (chosen.microBatches > 1)
    os << "\ncollectives of @train_step (the last of " << chosen.microBatches
       << " micro-batches; the others run @forward_backward): kind, axis, "
          "bytes, modelled time, cause\n";
  else
    os << "\ncollectives per step: kind, axis, bytes, modelled time, cause\n";
  SmallVector<const CollectiveEstimate *> sorted;
  for (const CollectiveEstimate &c : chosen.collectives)
    sorted.push_back(&c);
  llvm::stable_sort(sorted,
                    [](auto *a, auto *b) { return a->seconds > b->seconds; });
  constexpr size_t kShown = 30;
  for (const CollectiveEstimate *c : ArrayRef(sorted).take_front(kShown)) {
    // A merged collective lists every cause; the JSON has them all.
    StringRef cause = c->cause;
    std::string shown = cause.size() > 120
                            ? (cause.take_front(117) + "...").str()
                            : cause.str();
    os << llvm::formatv("  {0,-15} {1,-5} {2,10} {3,10}  {4}: {5}\n", c->kind,
                        c->axis, formatBytes(c->bytes),
                        formatSeconds(c->seconds), c->layer, shown);
  }
  if (sorted.size() > kShown) {
    double rest = 0;
    for (const CollectiveEstimate *c : ArrayRef(sorted).drop_front(kShown))
      rest += c->seconds;
    os << "  ... and " << sorted.size() - kShown << " more, "
       << formatSeconds(rest) << "\n";
  }
  if (sorted.empty())
    os << "  none\n";

  os << "\nper layer: compute, communication\n";
  for (auto &[layer, compute, comm] : chosen.layers)
    os << llvm::formatv("  {0,-12} {1,10} {2,10}\n", layer,
                        formatSeconds(compute), formatSeconds(comm));

  double peak = peakFlops(module, cost);
  std::string overlap =
      cost.spec().overlapsCommunication
          ? "- hidden behind compute " + formatSeconds(chosen.hiddenSeconds)
          : "- hidden 0 (the cluster runs no collective beside compute)";
  if (chosen.microBatches > 1 && !chosen.built)
    os << llvm::formatv("\nstep of {0} micro-batches: @forward_backward {1} "
                        "times and @train_step ({2}) once",
                        chosen.microBatches, chosen.microBatches - 1,
                        formatSeconds(chosen.trainStepSeconds));
  std::string pipelineTerms;
  if (chosen.built) {
    os << llvm::formatv(
        "\npipeline as built: {0} stages x {1} chunks a stage, schedule {2} "
        "on {3} micro-batches, its action lists played on each chunk "
        "function's modelled time; stage {4} finishes last and sets the "
        "step (its update {5}); a boundary moves at most {6} per "
        "micro-batch",
        chosen.stages, chosen.virtualStages, chosen.schedule,
        chosen.microBatches, chosen.slowestStage,
        formatSeconds(chosen.trainStepSeconds), formatBytes(chosen.sendBytes));
    pipelineTerms = " + idle " + formatSeconds(chosen.bubbleSeconds) +
                    " (the bubble and waits for transfers)";
  } else if (chosen.stages > 1) {
    os << llvm::formatv(
        "\npipeline: {0} stages x {1} virtual; the slowest stage, {2}, "
        "sets the pace; it sends "
        "{3} per micro-batch to the next stage",
        chosen.stages, chosen.virtualStages, chosen.slowestStage,
        formatBytes(chosen.sendBytes));
    pipelineTerms = " + bubble " + formatSeconds(chosen.bubbleSeconds) +
                    " + sends " + formatSeconds(chosen.sendSeconds);
  }
  os << llvm::formatv(
      "\nstep: compute {0} + communication {1} {2}{3} = {4}; {5:e2} FLOP per "
      "device, MFU {6:f1}% of {7:e2} FLOP/s\n",
      formatSeconds(chosen.computeSeconds), formatSeconds(chosen.commSeconds),
      overlap, pipelineTerms, formatSeconds(chosen.stepSeconds()), chosen.flops,
      100.0 * chosen.flops / chosen.stepSeconds() / peak, peak);
  if (chosen.built)
    os << "memory of the fullest stage (" << chosen.fullestStage
       << ", as --report=memory counts it: parameters, state and gradient "
          "sums, then its slot buffers and largest arena): ";
  else if (chosen.stages > 1)
    os << "memory of the fullest stage (" << chosen.fullestStage
       << ", its in-flight micro-batches' activations counted): ";
  else
    os << "memory per device: ";
  os << "arguments " << formatBytes(chosen.argumentBytes) << " + arena peak "
     << formatBytes(chosen.arenaBytes) << " = "
     << formatBytes(chosen.memoryBytes()) << " of " << formatBytes(limit)
     << (chosen.memoryBytes() <= limit ? " (fits)" : " (does not fit)") << "\n";

  os << "\nplans compared (same model, mesh and cluster):\n";
  os << llvm::formatv("  {0,-12} {1,10} {2,10} {3,10} {4,11}\n", "plan", "step",
                      "compute", "comm", "memory");
  printPlanRow(chosen, "chosen", os);
  for (const PlanEstimate &plan : others) {
    std::string why = verdict(plan, chosen, limit);
    printPlanRow(plan, why.empty() ? "as fast or faster: not chosen" : why, os);
  }
}

llvm::json::Value mlir::tg::shardingReportJson(ModuleOp module,
                                               const PlanEstimate &chosen,
                                               ArrayRef<PlanEstimate> others,
                                               const CostModel &cost,
                                               int64_t limit) {
  func::FuncOp step = stepOf(module);
  auto planJson = [&](const PlanEstimate &plan) {
    llvm::json::Object o{{"plan", plan.label}};
    if (!plan.error.empty()) {
      o["error"] = plan.error;
      return o;
    }
    o["step_seconds"] = plan.stepSeconds();
    o["micro_batches"] = plan.microBatches;
    o["train_step_seconds"] = plan.trainStepSeconds;
    o["compute_seconds"] = plan.computeSeconds;
    o["communication_seconds"] = plan.commSeconds;
    o["hidden_seconds"] = plan.hiddenSeconds;
    o["memory_bytes"] = plan.memoryBytes();
    o["argument_bytes"] = plan.argumentBytes;
    o["arena_bytes"] = plan.arenaBytes;
    o["flops_per_device"] = plan.flops;
    if (plan.stages > 1)
      o["pipeline"] = llvm::json::Object{{"stages", plan.stages},
                                         {"virtual_stages", plan.virtualStages},
                                         {"built", plan.built},
                                         {"schedule", plan.schedule},
                                         {"bubble_seconds", plan.bubbleSeconds},
                                         {"send_seconds", plan.sendSeconds},
                                         {"send_bytes", plan.sendBytes},
                                         {"slowest_stage", plan.slowestStage},
                                         {"fullest_stage", plan.fullestStage}};
    o["fits"] = plan.memoryBytes() <= limit;
    return o;
  };
  llvm::json::Array tensors;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
    if (!name)
      name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
    ShardingAttr s = getSharding(arg);
    if (!name || !s)
      continue;
    tensors.push_back(
        llvm::json::Object{{"name", name.getValue()},
                           {"layer", groupOfName(name.getValue())},
                           {"sharding", formatSharding(s)},
                           {"origin", getShardingOrigin(arg)}});
  }
  llvm::json::Array collectives;
  for (const CollectiveEstimate &c : chosen.collectives)
    collectives.push_back(llvm::json::Object{{"kind", c.kind},
                                             {"axis", c.axis},
                                             {"bytes", c.bytes},
                                             {"seconds", c.seconds},
                                             {"layer", c.layer},
                                             {"cause", c.cause}});
  llvm::json::Array layers;
  for (auto &[layer, compute, comm] : chosen.layers)
    layers.push_back(llvm::json::Object{{"layer", layer},
                                        {"compute_seconds", compute},
                                        {"communication_seconds", comm}});
  llvm::json::Array compared;
  for (const PlanEstimate &plan : others) {
    llvm::json::Object o = planJson(plan);
    o["verdict"] = verdict(plan, chosen, limit);
    compared.push_back(std::move(o));
  }
  double peak = peakFlops(module, cost);
  llvm::json::Object out{{"cluster", cost.spec().name},
                         {"memory_limit", limit},
                         {"chosen", planJson(chosen)},
                         {"mfu", chosen.flops / chosen.stepSeconds() / peak},
                         {"tensors", std::move(tensors)},
                         {"collectives", std::move(collectives)},
                         {"layers", std::move(layers)},
                         {"compared", std::move(compared)}};
  if (auto solver =
          step->getAttrOfType<DictionaryAttr>(TgDialect::kAutoShardAttr))
    out["solver"] = llvm::json::Object{
        {"method", cast<StringAttr>(solver.get("method")).getValue()},
        {"nodes", cast<IntegerAttr>(solver.get("nodes")).getInt()},
        {"edges", cast<IntegerAttr>(solver.get("edges")).getInt()}};
  return llvm::json::Value(std::move(out));
}

void mlir::tg::printPlanComparison(ModuleOp a, const PlanEstimate &planA,
                                   ModuleOp b, const PlanEstimate &planB,
                                   const CostModel &cost, int64_t limit,
                                   llvm::raw_ostream &os) {
  os << "plans compared on cluster " << cost.spec().name << " (limit "
     << formatBytes(limit) << " per device)\n";
  os << llvm::formatv("  {0,-22} {1,-24} {2,-24}\n", "", "A: " + planA.label,
                      "B: " + planB.label);
  auto row = [&](StringRef what, std::string x, std::string y) {
    os << llvm::formatv("  {0,-22} {1,-24} {2,-24}\n", what, x, y);
  };
  row("step (modelled)", formatSeconds(planA.stepSeconds()),
      formatSeconds(planB.stepSeconds()));
  row("compute", formatSeconds(planA.computeSeconds),
      formatSeconds(planB.computeSeconds));
  row("communication", formatSeconds(planA.commSeconds),
      formatSeconds(planB.commSeconds));
  if (planA.stages > 1 || planB.stages > 1)
    row("bubble + sends",
        formatSeconds(planA.bubbleSeconds + planA.sendSeconds),
        formatSeconds(planB.bubbleSeconds + planB.sendSeconds));
  auto kinds = [](const PlanEstimate &plan) {
    std::map<std::string, int> count;
    for (const CollectiveEstimate &c : plan.collectives)
      ++count[c.kind];
    std::string out = std::to_string(plan.collectives.size());
    if (!count.empty()) {
      out += " (";
      bool first = true;
      for (auto &[kind, n] : count) {
        out += (first ? "" : ", ") + kind + " " + std::to_string(n);
        first = false;
      }
      out += ")";
    }
    return out;
  };
  row("collectives", kinds(planA), kinds(planB));
  row("memory per device", formatBytes(planA.memoryBytes()),
      formatBytes(planB.memoryBytes()));
  row("fits", planA.memoryBytes() <= limit ? "yes" : "no",
      planB.memoryBytes() <= limit ? "yes" : "no");
  if (planA.stepSeconds() > 0 && planB.stepSeconds() > 0)
    os << llvm::formatv("  B/A step time {0:f3}\n",
                        planB.stepSeconds() / planA.stepSeconds());

  // The shardings of each parameter and state, by name.
  auto shardings = [](ModuleOp module) {
    std::map<std::string, std::pair<std::string, std::string>> out;
    func::FuncOp step = stepOf(module);
    if (!step)
      return out;
    for (BlockArgument arg : step.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      if (!name)
        name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
      if (!name)
        continue;
      ShardingAttr s = getSharding(arg);
      std::string text = s ? formatSharding(s) : "whole";
      llvm::erase(text, '"');
      out[name.getValue().str()] = {text,
                                    s ? getShardingOrigin(arg).str() : ""};
    }
    return out;
  };
  auto inA = shardings(a), inB = shardings(b);
  int differ = 0;
  for (auto &[name, x] : inA) {
    auto it = inB.find(name);
    if (it != inB.end() && it->second.first == x.first)
      continue;
    if (differ++ == 0)
      os << "\nshardings that differ: name, A (origin), B (origin)\n";
    std::string y = it == inB.end()
                        ? "(absent)"
                        : it->second.first + " (" + it->second.second + ")";
    os << llvm::formatv("  {0,-34} {1,-30} {2}\n", name,
                        x.first + " (" + x.second + ")", y);
  }
  for (auto &[name, y] : inB)
    if (!inA.count(name)) {
      if (differ++ == 0)
        os << "\nshardings that differ: name, A (origin), B (origin)\n";
      os << llvm::formatv("  {0,-34} {1,-30} {2}\n", name, "(absent)",
                          y.first + " (" + y.second + ")");
    }
  if (differ == 0)
    os << "\nevery parameter and state is sharded alike\n";
}

void mlir::tg::writeShardingPlot(const PlanEstimate &chosen,
                                 ArrayRef<PlanEstimate> others, int64_t limit,
                                 llvm::raw_ostream &os) {
  // Left: per layer, compute and communication bars; right: memory per
  // device of each plan against the limit.
  const double width = 900, height = 420, top = 40, bottom = 360;
  const double leftW = 560, rightX = 620, rightW = 250;
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      width, height);
  os << "<text x=\"10\" y=\"20\" font-size=\"14\">" << chosen.label
     << ": modelled time per layer (compute blue, communication orange)"
     << "</text>\n";
  double most = 1e-12;
  for (auto &[layer, compute, comm] : chosen.layers)
    most = std::max(most, compute + comm);
  size_t n = std::max<size_t>(chosen.layers.size(), 1);
  double bar = leftW / n;
  for (auto [i, entry] : llvm::enumerate(chosen.layers)) {
    auto &[layer, compute, comm] = entry;
    double x = 40 + i * bar, hc = (bottom - top) * compute / most,
           hm = (bottom - top) * comm / most;
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"#4878cf\"/>\n",
                        x, bottom - hc, bar * 0.8, hc);
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"#ee854a\"/>\n",
                        x, bottom - hc - hm, bar * 0.8, hm);
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" transform=\"rotate(45 "
                        "{0:f1} {1})\">{2}</text>\n",
                        x, bottom + 12, layer);
  }
  os << llvm::formatv("<text x=\"40\" y=\"{0}\">0</text><text x=\"40\" "
                      "y=\"{1}\">{2}</text>\n",
                      bottom + 30, top - 4, formatSeconds(most));
  SmallVector<const PlanEstimate *> plans{&chosen};
  for (const PlanEstimate &p : others)
    if (p.error.empty())
      plans.push_back(&p);
  double maxBytes = (double)limit;
  for (const PlanEstimate *p : plans)
    maxBytes = std::max(maxBytes, (double)p->memoryBytes());
  double row = (bottom - top) / std::max<size_t>(plans.size(), 1);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">memory per device</text>\n",
                      rightX, top - 4);
  for (auto [i, p] : llvm::enumerate(plans)) {
    double w = rightW * p->memoryBytes() / maxBytes, y = top + i * row;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"{4}\"/>\n",
                        rightX, y, w, row * 0.6,
                        p->memoryBytes() <= limit ? "#6acc64" : "#d65f5f");
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\">{2} {3}</text>\n", rightX,
                        y + row * 0.6 + 11, p->label,
                        formatBytes(p->memoryBytes()));
  }
  double lx = rightX + rightW * limit / maxBytes;
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" "
                      "y2=\"{2}\" stroke=\"black\" stroke-dasharray=\"4\"/>\n"
                      "<text x=\"{0:f1}\" y=\"{3}\">limit</text>\n",
                      lx, top, bottom, bottom + 14);
  os << "</svg>\n";
}

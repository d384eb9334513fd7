//===- SplitPipeline.cpp - Cuts a step into pipeline chunks ------*- C++
//-*-===//
//
// tg-pipeline-split: @forward_backward as P x V chunks, each a forward (F),
// a backward for its inputs (B) and a backward for its weights (W), and
// @apply_gradients as one update per stage. Values that cross from one
// function to another become numbered slots (per-micro-batch buffers); the
// boundaries between consecutive chunks list the slots they move.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"
#include "planning/cost/CostModel.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::tg {
#define GEN_PASS_DEF_PIPELINESPLITPASS
#include "passes/pipeline/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

enum Role { Forward = 0, Backward = 1, Weight = 2 };
constexpr const char *kRoleNames[] = {"forward", "backward", "weight"};

/// One of the functions a chunk becomes.
struct Piece {
  SmallVector<Operation *> ops;
  /// @forward_backward's arguments it reads (parameters, batch inputs).
  llvm::SetVector<unsigned> fbArgs;
  /// Constants and parameter gathers it reads (cloned into it).
  llvm::SetVector<Operation *> constants;
  /// Slots it reads and writes.
  llvm::SetVector<Value> reads, writes;
  /// Parameter gradients it returns: the parameter's name and the values
  /// whose sum is this chunk's part of it.
  llvm::MapVector<StringAttr, SmallVector<Value>> grads;
  bool loss = false;
};

/// How @apply_gradients reduces one gradient sum over a mesh axis other
/// than pp before anything else reads it: scalings of the sum (a tg.div or
/// tg.mul by what the step's scalars and constants give), then one
/// tg.all_reduce or tg.reduce_scatter.
struct SumReduction {
  /// The scalings and the reduction, in order.
  SmallVector<Operation *> ops;
  /// What the update reads: the reduction's result for this sum.
  Value end;
  /// The chunk that reduces it on each stage that holds it.
  SmallVector<int64_t> chunks;
};

/// Whether `v` comes from the step's scalars and constants alone.
bool fromScalars(Value v, func::FuncOp func) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return func.getArgAttr(arg.getArgNumber(), TgDialect::kScalarAttr) !=
           nullptr;
  Operation *def = v.getDefiningOp();
  return def && llvm::all_of(def->getOperands(),
                             [&](Value in) { return fromScalars(in, func); });
}

/// The reduction of gradient sum `sum` (an argument of @apply_gradients),
/// if it is reduced so.
std::optional<SumReduction> reductionChainOf(BlockArgument sum) {
  auto func = cast<func::FuncOp>(sum.getOwner()->getParentOp());
  SumReduction chain;
  Value v = sum;
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    auto overMesh = [](StringRef axis) {
      return !axis.empty() && axis != "pp";
    };
    if (auto reduce = dyn_cast<AllReduceOp>(user)) {
      if (!overMesh(reduce.getMeshAxis()))
        return std::nullopt;
      chain.ops.push_back(user);
      for (auto [in, out] : llvm::zip(reduce.getInputs(), reduce.getResults()))
        if (in == v)
          chain.end = out;
      return chain;
    }
    if (auto scatter = dyn_cast<ReduceScatterOp>(user)) {
      if (!overMesh(scatter.getMeshAxis()))
        return std::nullopt;
      chain.ops.push_back(user);
      chain.end = scatter.getResult();
      return chain;
    }
    if (!isa<DivOp, MulOp>(user) || user->getOperand(0) != v ||
        user->getResult(0).getType() != v.getType() ||
        !fromScalars(user->getOperand(1), func))
      return std::nullopt;
    chain.ops.push_back(user);
    v = user->getResult(0);
  }
  return std::nullopt;
}

/// A function of the pipelined step, `name`, at `b`'s insertion point,
/// with arguments of `types` and `attrs`, its role ({kind = `kind`,
/// `indexName` = `index`}) and `from`'s tg.partitioned (cut from a
/// partitioned step, the types are each process's pieces); its entry block
/// made.
func::FuncOp createStepFunction(OpBuilder &b, Location loc, StringRef name,
                                ArrayRef<Type> types,
                                ArrayRef<DictionaryAttr> attrs,
                                func::FuncOp from, StringRef kind,
                                StringRef indexName, int64_t index) {
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  func.setAllArgAttrs(attrs);
  if (Attribute partitioned = from->getAttr(kPartitionedAttr))
    func->setAttr(kPartitionedAttr, partitioned);
  func->setAttr(TgDialect::kPipelineRoleAttr,
                b.getDictionaryAttr(
                    {b.getNamedAttr("kind", b.getStringAttr(kind)),
                     b.getNamedAttr(indexName, b.getI64IntegerAttr(index))}));
  func.addEntryBlock();
  return func;
}

/// Returns `results` (with `resultAttrs`) from `func`, whose type then
/// says so, and moves `b` past it.
void finishStepFunction(OpBuilder &b, func::FuncOp func, ValueRange results,
                        ArrayRef<DictionaryAttr> resultAttrs) {
  Block &block = func.getBody().front();
  OpBuilder body = OpBuilder::atBlockEnd(&block);
  func::ReturnOp::create(body, func.getLoc(), results);
  // What the function copied but nothing reads (an update's scaling of a
  // sum its chunk reduced already).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
  func.setFunctionType(
      b.getFunctionType(func.getArgumentTypes(), results.getTypes()));
  func.setAllResultAttrs(resultAttrs);
  b.setInsertionPointAfter(func);
}

struct Splitter {
  Splitter(ModuleOp module, func::FuncOp fb, func::FuncOp apply,
           PipelineStages stages, const CostModel *cost)
      : module(module), fb(fb), apply(apply), stages(stages), cost(cost) {}

  ModuleOp module;
  func::FuncOp fb, apply;
  PipelineStages stages;
  const CostModel *cost = nullptr;
  int64_t chunks = 0;

  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> index;
  SmallVector<int64_t> chunkOf;
  SmallVector<Role> roleOf;
  DenseSet<Operation *> dropped; // gradient sums split between chunks
  /// Each chunk's three functions: pieces[c][role].
  std::vector<std::array<Piece, 3>> pieces;
  /// Slot numbers, in the order they are first needed.
  llvm::MapVector<Value, int64_t> slots;
  /// Per boundary b (between chunks b and b + 1): the slots it moves.
  SmallVector<llvm::SetVector<int64_t>> forwardMoves, backwardMoves;
  /// Per trainable parameter name: the chunks that hold a part of its
  /// gradient.
  llvm::MapVector<StringAttr, llvm::SmallSetVector<int64_t, 2>> gradChunks;
  /// Per trainable parameter name: the type @forward_backward returns its
  /// gradient in.
  DenseMap<StringAttr, Type> gradTypes;
  /// Per trainable parameter name whose gradient @forward_backward reduces
  /// over a data axis (zero2, zero3: a reduce-scatter) after summing parts
  /// that chunks compute: the reduction, which each chunk applies to its
  /// own part (the sum over the data axis of a sum is the sum of the
  /// parts' sums), and the type the parts are summed in before it.
  DenseMap<StringAttr, Operation *> gradReduce;
  DenseMap<StringAttr, Type> sumTypes;

  int64_t stageOf(int64_t chunk) const { return chunk % stages.stages; }

  int64_t slotOf(Value v) {
    auto [it, inserted] = slots.try_emplace(v, (int64_t)slots.size());
    return it->second;
  }

  LogicalResult run();
  LogicalResult assign(const StageMap &map);
  LogicalResult splitGradients(const StageMap &map);
  LogicalResult connect();
  LogicalResult connectUse(Operation *user, Value v, int64_t chunk, Role role);
  void buildPieces(OpBuilder &b);
  LogicalResult buildUpdates(OpBuilder &b);
  void buildReductions(OpBuilder &b,
                       const DenseMap<unsigned, SumReduction> &reductions,
                       unsigned n, unsigned numState,
                       ArrayRef<StringAttr> names);
};


LogicalResult Splitter::assign(const StageMap &map) {
  Block &block = fb.getBody().front();
  // A reduction of several values (gradients that tg-partition bundled)
  // may mix chunks: one reduction per value, each going with its chunk.
  for (auto reduce : llvm::make_early_inc_range(block.getOps<AllReduceOp>())) {
    if (reduce.getInputs().size() < 2)
      continue;
    OpBuilder b(reduce);
    for (auto [input, result] :
         llvm::zip(reduce.getInputs(), reduce.getResults())) {
      // Named after what it reduces: it goes with that value's chunk.
      auto one = AllReduceOp::create(
          b, input.getLoc(), ValueRange{input}, reduce.getReductionAttr(),
          reduce.getMeshAxisAttr(), reduce.getBucketAttr());
      one->setDiscardableAttrs(reduce->getDiscardableAttrDictionary());
      result.replaceAllUsesWith(one.getResult(0));
    }
    reduce.erase();
  }
  for (Operation &op : block.without_terminator()) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }
  // The loss as this process computes it; on a mesh, its reduction over
  // the data axes stands at the end of the function, and belongs to the
  // last chunk's forward pass too.
  Operation *lossOp = block.getTerminator()->getOperand(0).getDefiningOp();
  DenseSet<Operation *> lossReductions;
  while (isa_and_nonnull<AllReduceOp>(lossOp) &&
         lossOp->getNumOperands() == 1) {
    lossReductions.insert(lossOp);
    lossOp = lossOp->getOperand(0).getDefiningOp();
  }
  if (!lossOp || !index.count(lossOp))
    return fb.emitError("tg-pipeline-split: @forward_backward's loss is not "
                        "computed in it");
  size_t forwardEnd = index[lossOp];
  chunkOf.assign(ops.size(), 0);
  roleOf.assign(ops.size(), Forward);
  // Each op: its group's chunk, or with no name (a sum of gradients, a
  // reshape the pass added) the latest chunk it reads from in the forward
  // pass and the earliest in the backward pass, so that values only move
  // forward in the one and backward in the other.
  for (auto [i, op] : llvm::enumerate(ops)) {
    bool forward = i <= forwardEnd || lossReductions.contains(op);
    roleOf[i] = forward ? Forward : Backward;
    if (isChunkless(op))
      continue;
    std::string group = layerOfOp(op);
    if (std::optional<int64_t> chunk =
            group.empty() ? std::nullopt : map.chunkOfGroupName(group)) {
      chunkOf[i] = *chunk;
      continue;
    }
    std::optional<int64_t> chosen;
    for (Value v : op->getOperands()) {
      std::optional<int64_t> from = map.chunkOfArgument(fb, v);
      Operation *def = v.getDefiningOp();
      if (def && !isChunkless(def) && index.count(def))
        from = chunkOf[index[def]];
      if (from)
        chosen = !chosen   ? *from
                 : forward ? std::max(*chosen, *from)
                           : std::min(*chosen, *from);
    }
    chunkOf[i] = chosen ? *chosen : (forward ? 0 : chunks - 1);
  }
  return success();
}

LogicalResult Splitter::splitGradients(const StageMap &map) {
  // A parameter used in several chunks (GPT-2's tied wte: the embedding and
  // the head) has its gradient summed from their parts. Each chunk keeps
  // its own part, the stages holding it add them once a step (Megatron-LM's
  // tied-embedding all-reduce), instead of sending a weight-sized gradient
  // between stages every micro-batch.
  auto *ret = fb.getBody().front().getTerminator();
  for (auto [r, v] : llvm::enumerate(ret->getOperands())) {
    auto name = fb.getResultAttrOfType<StringAttr>(r, TgDialect::kGradAttr);
    if (!name)
      continue;
    gradTypes[name] = v.getType();
    sumTypes[name] = v.getType();
    SmallVector<Value> work{v}, leaves;
    // A reduction over a data axis of the whole sum: looked through, so
    // that a tied weight's parts stay in their chunks (each reduced there)
    // rather than one chunk's part moving to the other's every
    // micro-batch while the other stage never updates its copy.
    Operation *reduce = v.getDefiningOp();
    auto overData = [](Operation *op) {
      if (auto rs = dyn_cast_or_null<ReduceScatterOp>(op))
        return rs.getMeshAxis() != "pp";
      auto ar = dyn_cast_or_null<AllReduceOp>(op);
      return ar && ar.getInputs().size() == 1 && !ar.getMeshAxis().empty() &&
             ar.getMeshAxis() != "pp";
    };
    if (overData(reduce) && v.hasOneUse() &&
        reduce->getOperand(0).hasOneUse()) {
      dropped.insert(reduce);
      gradReduce[name] = reduce;
      sumTypes[name] = reduce->getOperand(0).getType();
      work = {reduce->getOperand(0)};
    }
    while (!work.empty()) {
      Value g = work.pop_back_val();
      // A gradient computed in bf16 and widened (mixed precision): its
      // parts are widened where they are computed, and summed in the
      // gradient's type.
      if (auto cast = g.getDefiningOp<CastOp>();
          cast && g.hasOneUse() && cast->getOperand(0).hasOneUse()) {
        dropped.insert(cast);
        work.push_back(cast->getOperand(0));
        continue;
      }
      auto add = g.getDefiningOp<AddOp>();
      if (add && g.hasOneUse() && add.getLhs().getType() == add.getType() &&
          add.getRhs().getType() == add.getType()) {
        dropped.insert(add);
        work.push_back(add.getRhs());
        work.push_back(add.getLhs());
        continue;
      }
      leaves.push_back(g);
    }
    for (Value leaf : leaves) {
      Operation *def = leaf.getDefiningOp();
      int64_t chunk;
      if (def && !isChunkless(def))
        chunk = chunkOf[index[def]];
      else if (std::optional<int64_t> c = map.chunkOfArgument(fb, leaf))
        chunk = *c;
      else
        chunk = chunks - 1;
      pieces[chunk][Weight].grads[name].push_back(leaf);
      gradChunks[name].insert(chunk);
    }
    // Parts all in one chunk are summed (and widened) there, in the order
    // the autodiff graph added them.
  }
  return success();
}

LogicalResult Splitter::connect() {
  // Backward ops that some earlier chunk (or a B op of their own chunk)
  // reads are B; the rest, which lead only to parameter gradients, are W.
  for (size_t i = ops.size(); i-- > 0;) {
    if (roleOf[i] == Forward || isChunkless(ops[i]) || dropped.count(ops[i]))
      continue;
    bool input = false;
    for (Operation *user : ops[i]->getUsers()) {
      auto it = index.find(user);
      if (it == index.end() || dropped.count(user))
        continue;
      size_t u = it->second;
      if (roleOf[u] != Forward &&
          (chunkOf[u] < chunkOf[i] ||
           (chunkOf[u] == chunkOf[i] && roleOf[u] == Backward)))
        input = true;
    }
    roleOf[i] = input ? Backward : Weight;
  }
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (isChunkless(op) || dropped.count(op))
      continue;
    pieces[chunkOf[i]][roleOf[i]].ops.push_back(op);
    for (Value v : op->getOperands())
      if (failed(connectUse(op, v, chunkOf[i], roleOf[i])))
        return failure();
  }
  for (auto [c, piece] : llvm::enumerate(pieces))
    for (auto &entry : piece[Weight].grads)
      for (Value leaf : entry.second)
        if (failed(connectUse(nullptr, leaf, c, Weight)))
          return failure();
  Value loss = fb.getBody().front().getTerminator()->getOperand(0);
  if (failed(connectUse(nullptr, loss, chunks - 1, Forward)))
    return failure();
  pieces[chunks - 1][Forward].loss = true;
  return success();
}

LogicalResult Splitter::connectUse(Operation *user, Value v, int64_t chunk,
                                   Role role) {
  Piece &piece = pieces[chunk][role];
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    piece.fbArgs.insert(arg.getArgNumber());
    return success();
  }
  Operation *def = v.getDefiningOp();
  if (isChunkless(def)) {
    // The chain from the arguments, each op after what it reads.
    std::function<void(Operation *)> add = [&](Operation *op) {
      for (Value operand : op->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(operand))
          piece.fbArgs.insert(arg.getArgNumber());
        else
          add(operand.getDefiningOp());
      }
      piece.constants.insert(op);
    };
    add(def);
    return success();
  }
  size_t d = index[def];
  int64_t from = chunkOf[d];
  Role fromRole = roleOf[d];
  if (from == chunk && fromRole == role)
    return success();
  // The order a micro-batch runs in: F by increasing chunk, then B by
  // decreasing chunk, each chunk's W after its B.
  bool ordered = fromRole == Forward
                     ? (role != Forward || from < chunk)
                     : (fromRole == Backward && role != Forward &&
                        (from > chunk || (from == chunk && role == Weight)));
  if (!ordered) {
    InFlightDiagnostic diag =
        (user ? user : def)->emitError("tg-pipeline-split: ");
    diag << "the " << kRoleNames[role] << " pass of chunk " << chunk
         << " reads a value the " << kRoleNames[fromRole] << " pass of chunk "
         << from << " computes, which a pipeline runs after it";
    diag.attachNote(def->getLoc()) << "computed here";
    return failure();
  }
  int64_t slot = slotOf(v);
  pieces[from][fromRole].writes.insert(v);
  piece.reads.insert(v);
  for (int64_t b = from; b < chunk; ++b)
    forwardMoves[b].insert(slot);
  for (int64_t b = chunk; b < from; ++b)
    backwardMoves[b].insert(slot);
  return success();
}

void Splitter::buildPieces(OpBuilder &b) {
  MLIRContext *ctx = module.getContext();
  Block &fbBlock = fb.getBody().front();
  b.setInsertionPointAfter(apply);
  for (int64_t c = 0; c < chunks; ++c)
    for (int role : {Forward, Backward, Weight}) {
      Piece &piece = pieces[c][role];
      SmallVector<Type> argTypes;
      SmallVector<DictionaryAttr> argAttrs;
      for (unsigned i : piece.fbArgs) {
        argTypes.push_back(fb.getArgument(i).getType());
        argAttrs.push_back(fb.getArgAttrDict(i));
      }
      SmallVector<Value> reads(piece.reads.begin(), piece.reads.end());
      llvm::sort(reads, [&](Value x, Value y) {
        return slots.lookup(x) < slots.lookup(y);
      });
      for (Value v : reads) {
        argTypes.push_back(v.getType());
        argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            TgDialect::kSlotAttr, b.getI64IntegerAttr(slots.lookup(v)))));
      }
      std::string name = "chunk" + std::to_string(c) + "_" + kRoleNames[role];
      func::FuncOp func =
          createStepFunction(b, fb.getLoc(), name, argTypes, argAttrs, fb,
                             kRoleNames[role], "chunk", c);
      Block *entry = &func.getBody().front();
      OpBuilder body = OpBuilder::atBlockBegin(entry);
      IRMapping mapping;
      for (auto [k, i] : llvm::enumerate(piece.fbArgs))
        mapping.map(fb.getArgument(i), entry->getArgument(k));
      for (auto [k, v] : llvm::enumerate(reads))
        mapping.map(v, entry->getArgument(piece.fbArgs.size() + k));
      // Constants and gathers in their order in @forward_backward, then
      // the ops.
      for (Operation &op : fbBlock.without_terminator())
        if (piece.constants.contains(&op))
          body.clone(op, mapping);
      for (Operation *op : piece.ops)
        body.clone(*op, mapping);

      SmallVector<Value> results;
      SmallVector<DictionaryAttr> resultAttrs;
      SmallVector<Value> writes(piece.writes.begin(), piece.writes.end());
      llvm::sort(writes, [&](Value x, Value y) {
        return slots.lookup(x) < slots.lookup(y);
      });
      for (Value v : writes) {
        results.push_back(mapping.lookup(v));
        resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            TgDialect::kSlotAttr, b.getI64IntegerAttr(slots.lookup(v)))));
      }
      if (piece.loss) {
        results.push_back(
            mapping.lookup(fbBlock.getTerminator()->getOperand(0)));
        resultAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(TgDialect::kMetricAttr, b.getStringAttr("loss"))));
      }
      for (auto &[param, leaves] : piece.grads) {
        Type type = sumTypes.lookup(param);
        auto widened = [&](Value leaf) {
          Value v = mapping.lookup(leaf);
          return v.getType() == type
                     ? v
                     : CastOp::create(body, fb.getLoc(), type, v).getResult();
        };
        Value sum = widened(leaves.front());
        for (Value leaf : ArrayRef(leaves).drop_front())
          sum = AddOp::create(body, fb.getLoc(), sum, widened(leaf));
        if (Operation *reduce = gradReduce.lookup(param)) {
          IRMapping part;
          part.map(reduce->getOperand(0), sum);
          sum = body.clone(*reduce, part)->getResult(0);
        }
        results.push_back(sum);
        resultAttrs.push_back(
            b.getDictionaryAttr(b.getNamedAttr(TgDialect::kGradAttr, param)));
      }
      finishStepFunction(b, func, results, resultAttrs);
    }

  SmallVector<Attribute> boundaries;
  for (int64_t bd = 0; bd + 1 < chunks; ++bd) {
    auto list = [&](const llvm::SetVector<int64_t> &moves) {
      SmallVector<int64_t> sorted(moves.begin(), moves.end());
      llvm::sort(sorted);
      return DenseI64ArrayAttr::get(ctx, sorted);
    };
    boundaries.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("forward", list(forwardMoves[bd])),
         b.getNamedAttr("backward", list(backwardMoves[bd]))}));
  }
  module->setAttr(TgDialect::kPipelineTransfersAttr,
                  b.getArrayAttr(boundaries));
}

LogicalResult Splitter::buildUpdates(OpBuilder &b) {
  // @apply_gradients' arguments: n parameters, their state, n gradient
  // sums, then step, base_lr and micro_batches.
  unsigned n = 0;
  while (n < apply.getNumArguments() &&
         apply.getArgAttr(n, TgDialect::kParamAttr))
    ++n;
  unsigned numArgs = apply.getNumArguments();
  if (numArgs < 2 * n + 3)
    return apply.emitError("tg-pipeline-split: @apply_gradients has ")
           << numArgs << " arguments for " << n << " parameters";
  unsigned numState = numArgs - 2 * n - 3;
  unsigned slotsPer = n ? numState / n : 0;
  SmallVector<StringAttr> names;
  for (unsigned k = 0; k < n; ++k)
    names.push_back(
        apply.getArgAttrOfType<StringAttr>(k, TgDialect::kParamAttr));
  // The stages that hold each parameter: those of the chunks with a part of
  // its gradient; the first of them counts it in the gradient norm.
  SmallVector<SmallVector<int64_t, 2>> holders(n);
  SmallVector<unsigned> tied;
  DenseMap<StringAttr, ShardingAttr> gradShardings;
  for (unsigned r = 0; r < fb.getNumResults(); ++r)
    if (auto name = fb.getResultAttrOfType<StringAttr>(r, TgDialect::kGradAttr))
      gradShardings[name] =
          fb.getResultAttrOfType<ShardingAttr>(r, kShardingAttr);
  for (unsigned k = 0; k < n; ++k) {
    // The W passes add what @forward_backward returns (the process's piece
    // under tp, zero2 and zero3): the sums must be kept alike.
    ShardingAttr grad = gradShardings.lookup(names[k]);
    auto sum =
        apply.getArgAttrOfType<ShardingAttr>(n + numState + k, kShardingAttr);
    if (grad && sum && grad.withoutPartial() != sum.withoutPartial())
      return apply.emitError("tg-pipeline-split: the gradient of '")
             << names[k].getValue() << "' is summed as " << formatSharding(sum)
             << " in @apply_gradients, but @forward_backward returns it as "
             << formatSharding(grad)
             << ": the W passes could not add to the sum";
  }
  for (unsigned k = 0; k < n; ++k) {
    llvm::SmallSetVector<int64_t, 2> held;
    for (int64_t c : gradChunks.lookup(names[k]))
      held.insert(stageOf(c));
    holders[k].assign(held.begin(), held.end());
    llvm::sort(holders[k]);
    if (holders[k].empty())
      return apply.emitError("tg-pipeline-split: parameter '")
             << names[k].getValue() << "' has no gradient in any chunk";
    if (holders[k].size() > 1)
      tied.push_back(k);
  }

  MLIRContext *ctx = module.getContext();
  Location loc = apply.getLoc();
  Block &applyBlock = apply.getBody().front();
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());

  // Each gradient sum that @apply_gradients reduces over a mesh axis other
  // than pp before anything else reads it (a chain of scalings ending in an
  // all-reduce or reduce-scatter; dp, zero1, the distributed optimizer)
  // and that one chunk on each stage holding it adds to: that chunk's
  // @chunkC_reduce reduces it after the chunk's last W, and the update
  // reads the result. Sums, scalings and reductions are linear, so a tied
  // weight's parts may be reduced over the data axes before the stages add
  // them.
  DenseMap<unsigned, SumReduction> reductions;
  for (unsigned k = 0; k < n; ++k) {
    std::optional<SumReduction> chain =
        reductionChainOf(apply.getArgument(n + numState + k));
    if (!chain)
      continue;
    SmallVector<int64_t> chunksOfK;
    bool oneEach = true;
    for (int64_t s : holders[k]) {
      SmallVector<int64_t> here;
      for (int64_t c : gradChunks.lookup(names[k]))
        if (stageOf(c) == s)
          here.push_back(c);
      oneEach &= here.size() == 1;
      chunksOfK.append(here);
    }
    if (!oneEach)
      continue;
    chain->chunks = chunksOfK;
    reductions[k] = std::move(*chain);
  }
  buildReductions(b, reductions, n, numState, names);
  for (int64_t s = 0; s < stages.stages; ++s) {
    SmallVector<unsigned> held, args;
    for (unsigned k = 0; k < n; ++k)
      if (llvm::is_contained(holders[k], s))
        held.push_back(k);
    for (unsigned k : held)
      args.push_back(k);
    for (unsigned k : held)
      for (unsigned j = 0; j < slotsPer; ++j)
        args.push_back(n + k * slotsPer + j);
    for (unsigned k : held)
      if (!reductions.count(k))
        args.push_back(n + numState + k);
    for (unsigned j = 0; j < 3; ++j)
      args.push_back(numArgs - 3 + j);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    for (unsigned a : args) {
      types.push_back(apply.getArgument(a).getType());
      attrs.push_back(apply.getArgAttrDict(a));
    }
    // The sums its chunks reduced, as @chunkC_reduce returns them.
    SmallVector<unsigned> reducedHere;
    for (unsigned k : held)
      if (auto it = reductions.find(k); it != reductions.end()) {
        reducedHere.push_back(k);
        types.push_back(it->second.end.getType());
        attrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(TgDialect::kReducedAttr, names[k])));
      }
    func::FuncOp func =
        createStepFunction(b, loc, "stage" + std::to_string(s) + "_update",
                           types, attrs, apply, "update", "stage", s);
    Block *entry = &func.getBody().front();
    OpBuilder body = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    for (auto [i, a] : llvm::enumerate(args))
      mapping.map(apply.getArgument(a), entry->getArgument(i));
    for (auto [i, k] : llvm::enumerate(reducedHere))
      mapping.map(reductions[k].end, entry->getArgument(args.size() + i));
    // Tied parameters: every stage takes part in each sum over the
    // pipeline axis, in the same order; a stage without the parameter adds
    // zeros.
    for (unsigned k : tied) {
      auto reduced = reductions.find(k);
      Value grad = reduced != reductions.end()
                       ? reduced->second.end
                       : apply.getArgument(n + numState + k);
      bool mine = llvm::is_contained(held, k);
      Value part =
          mine ? mapping.lookup(grad)
               : ConstantOp::create(
                     body, loc,
                     DenseElementsAttr::get(
                         cast<ShapedType>(grad.getType()),
                         b.getFloatAttr(getElementTypeOrSelf(grad.getType()),
                                        0.0)))
                     .getResult();
      auto sum = AllReduceOp::create(body, loc, ValueRange{part},
                                     ReductionAttr::get(ctx, Reduction::sum),
                                     b.getStringAttr("pp"), IntegerAttr());
      if (mine)
        mapping.map(grad, sum.getResult(0));
    }
    auto mapped = [&](Value v) { return mapping.contains(v); };
    for (Operation &op : applyBlock.without_terminator()) {
      if (auto norm = dyn_cast<GlobalNormOp>(op)) {
        // This stage's share of the squared norm, summed over the stages.
        SmallVector<Value> counted;
        for (Value g : norm.getOperands()) {
          if (!mapped(g))
            continue;
          // The gradient argument behind a mean (tg.div of a sum) and the
          // reduction over the data axes.
          Value source = g;
          while (Operation *def = source.getDefiningOp()) {
            if (auto div = dyn_cast<DivOp>(def))
              source = div.getLhs();
            else if (auto reduce = dyn_cast<AllReduceOp>(def))
              source =
                  reduce.getInputs()[cast<OpResult>(source).getResultNumber()];
            else
              break;
          }
          auto arg = dyn_cast<BlockArgument>(source);
          unsigned k = arg ? arg.getArgNumber() - n - numState : 0;
          if (arg && k < n && holders[k].front() != s)
            continue;
          counted.push_back(mapping.lookup(g));
        }
        Value local =
            counted.empty()
                ? ConstantOp::create(
                      body, loc,
                      DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(0.0)))
                      .getResult()
                : GlobalNormOp::create(body, loc, f32Scalar, counted)
                      .getResult();
        Value square = MulOp::create(body, loc, local, local);
        auto total =
            AllReduceOp::create(body, loc, ValueRange{square},
                                ReductionAttr::get(ctx, Reduction::sum),
                                b.getStringAttr("pp"), IntegerAttr());
        mapping.map(norm.getResult(),
                    SqrtOp::create(body, loc, total.getResult(0)));
        continue;
      }
      if (auto reduce = dyn_cast<AllReduceOp>(op)) {
        // One reduction of many gradients: this stage's among them.
        SmallVector<Value> inputs;
        SmallVector<Value> results;
        for (auto [v, r] : llvm::zip(reduce.getInputs(), reduce.getResults()))
          if (mapped(v)) {
            inputs.push_back(mapping.lookup(v));
            results.push_back(r);
          }
        if (inputs.empty())
          continue;
        auto part = AllReduceOp::create(
            body, reduce.getLoc(), inputs, reduce.getReductionAttr(),
            reduce.getMeshAxisAttr(), reduce.getBucketAttr());
        part->setDiscardableAttrs(reduce->getDiscardableAttrDictionary());
        for (auto [r, v] : llvm::zip(results, part.getResults()))
          mapping.map(r, v);
        continue;
      }
      if (!llvm::all_of(op.getOperands(), mapped))
        continue;
      body.clone(op, mapping);
    }
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    for (auto [r, v] :
         llvm::enumerate(applyBlock.getTerminator()->getOperands())) {
      if (!mapped(v))
        continue;
      results.push_back(mapping.lookup(v));
      resultAttrs.push_back(apply.getResultAttrDict(r));
    }
    finishStepFunction(b, func, results, resultAttrs);
  }
  return success();
}

void Splitter::buildReductions(
    OpBuilder &b, const DenseMap<unsigned, SumReduction> &reductions,
    unsigned n, unsigned numState, ArrayRef<StringAttr> names) {
  Location loc = apply.getLoc();
  Block &applyBlock = apply.getBody().front();
  auto chainOf = [&](unsigned k) -> const SumReduction & {
    return reductions.find(k)->second;
  };
  for (int64_t c = 0; c < chunks; ++c) {
    SmallVector<unsigned> mine;
    for (unsigned k = 0; k < n; ++k)
      if (auto it = reductions.find(k);
          it != reductions.end() && llvm::is_contained(it->second.chunks, c))
        mine.push_back(k);
    if (mine.empty())
      continue;
    // Arguments: the sums, then the scalars the scalings read.
    SmallVector<Value> sources;
    for (unsigned k : mine)
      sources.push_back(apply.getArgument(n + numState + k));
    llvm::SetVector<Operation *> scalarOps;
    llvm::SetVector<unsigned> scalarArgs;
    std::function<void(Value)> needs = [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        scalarArgs.insert(arg.getArgNumber());
        return;
      }
      Operation *def = v.getDefiningOp();
      for (Value in : def->getOperands())
        needs(in);
      scalarOps.insert(def);
    };
    for (unsigned k : mine)
      for (Operation *op : ArrayRef(chainOf(k).ops).drop_back())
        for (Value in : op->getOperands().drop_front())
          needs(in);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    for (Value v : sources) {
      types.push_back(v.getType());
      attrs.push_back(
          apply.getArgAttrDict(cast<BlockArgument>(v).getArgNumber()));
    }
    for (unsigned a : scalarArgs) {
      types.push_back(apply.getArgument(a).getType());
      attrs.push_back(apply.getArgAttrDict(a));
    }
    func::FuncOp func =
        createStepFunction(b, loc, "chunk" + std::to_string(c) + "_reduce",
                           types, attrs, apply, "reduce", "chunk", c);
    Block *entry = &func.getBody().front();
    OpBuilder body = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    for (auto [i, v] : llvm::enumerate(sources))
      mapping.map(v, entry->getArgument(i));
    for (auto [i, a] : llvm::enumerate(scalarArgs))
      mapping.map(apply.getArgument(a), entry->getArgument(sources.size() + i));
    for (Operation &op : applyBlock.without_terminator())
      if (scalarOps.contains(&op))
        body.clone(op, mapping);
    // The scalings, then the reductions: the all-reduces of one kind over
    // one axis as one (a bucket of the chunk's gradients), each
    // reduce-scatter alone.
    llvm::MapVector<std::pair<Attribute, Attribute>, SmallVector<unsigned>>
        bundles;
    for (unsigned k : mine) {
      const SumReduction &chain = chainOf(k);
      for (Operation *op : ArrayRef(chain.ops).drop_back())
        body.clone(*op, mapping);
      if (auto reduce = dyn_cast<AllReduceOp>(chain.ops.back()))
        bundles[{reduce.getReductionAttr(), reduce.getMeshAxisAttr()}]
            .push_back(k);
      else
        body.clone(*chain.ops.back(), mapping);
    }
    for (auto &[key, members] : bundles) {
      SmallVector<Value> inputs;
      for (unsigned k : members) {
        auto reduce = cast<AllReduceOp>(chainOf(k).ops.back());
        for (auto [in, out] :
             llvm::zip(reduce.getInputs(), reduce.getResults()))
          if (out == chainOf(k).end)
            inputs.push_back(mapping.lookup(in));
      }
      auto first = cast<AllReduceOp>(chainOf(members[0]).ops.back());
      auto bundle = AllReduceOp::create(body, first.getLoc(), inputs,
                                        first.getReductionAttr(),
                                        first.getMeshAxisAttr(), IntegerAttr());
      // Why tg-partition reduced them (tg.reshard), bucket dropped: the
      // reduction runs where the list puts it.
      bundle->setDiscardableAttrs(first->getDiscardableAttrDictionary());
      for (auto [k, out] : llvm::zip(members, bundle.getResults()))
        mapping.map(chainOf(k).end, out);
    }
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned k : mine) {
      results.push_back(mapping.lookup(chainOf(k).end));
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(TgDialect::kReducedAttr, names[k])));
    }
    finishStepFunction(b, func, results, resultAttrs);
  }
}

LogicalResult Splitter::run() {
  chunks = stages.stages * stages.virtualStages;
  // Cut where the report prices it: by each layer's time in @train_step.
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  llvm::Expected<StageMap> map = stageMapOf(step ? step : fb, stages, cost);
  if (!map)
    return module.emitError("tg-pipeline-split: ")
           << llvm::toString(map.takeError());
  pieces.resize(chunks);
  forwardMoves.resize(std::max<int64_t>(chunks - 1, 0));
  backwardMoves.resize(std::max<int64_t>(chunks - 1, 0));
  if (failed(assign(*map)) || failed(splitGradients(*map)) || failed(connect()))
    return failure();
  OpBuilder b(module.getContext());
  buildPieces(b);
  if (failed(buildUpdates(b)))
    return failure();
  return success();
}

struct PipelineSplitPass
    : public tg::impl::PipelineSplitPassBase<PipelineSplitPass> {
  using PipelineSplitPassBase::PipelineSplitPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PipelineStages stages = getPipelineStages(module);
    if (!stages.pipelined())
      return;
    if (module->hasAttr(TgDialect::kPipelineTransfersAttr)) {
      module.emitError("tg-pipeline-split: the module is split already");
      return signalPassFailure();
    }
    OpBuilder b(module.getContext());
    auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
    auto apply = module.lookupSymbol<func::FuncOp>("apply_gradients");
    if (!fb) {
      module.emitError("tg-pipeline-split: a pipelined module needs "
                       "@forward_backward (run tg-autodiff first)");
      return signalPassFailure();
    }
    // Stages given to a step whose optimizer phase ran without them:
    // priced by the reports, not built.
    if (!apply)
      return;
    // The stages are the mesh's outermost axis: each stage a copy of the
    // mesh the step was sharded on (pp x dp x tp, as Megatron-LM orders its
    // ranks), whose collectives stay among the processes of one stage.
    SmallVector<StringRef> axes{"pp"};
    SmallVector<int64_t> sizes{stages.stages};
    StringRef meshName = "mesh";
    ArrayAttr elastic;
    if (MeshOp mesh = getModuleMesh(module.getOperation())) {
      if (llvm::is_contained(mesh.getAxes().getAsValueRange<StringAttr>(),
                             "pp")) {
        mesh.emitError("tg-pipeline-split: the mesh has an axis 'pp' "
                       "already; the pass adds it");
        return signalPassFailure();
      }
      for (auto [axis, size] : llvm::zip(
               mesh.getAxes().getAsValueRange<StringAttr>(), mesh.getShape())) {
        axes.push_back(axis);
        sizes.push_back(size);
      }
      meshName = mesh.getSymName();
      elastic = mesh.getElasticAttr();
      b.setInsertionPoint(mesh);
      MeshOp::create(b, mesh.getLoc(), meshName, b.getStrArrayAttr(axes),
                     b.getDenseI64ArrayAttr(sizes), elastic);
      mesh.erase();
    } else {
      b.setInsertionPointToStart(module.getBody());
      MeshOp::create(b, module.getLoc(), meshName, b.getStrArrayAttr(axes),
                     b.getDenseI64ArrayAttr(sizes), elastic);
    }
    std::optional<PipelineCostModel> cost =
        pipelineCostModel(module, cluster, "tg-pipeline-split");
    if (!cost)
      return signalPassFailure();
    Splitter splitter(module, fb, apply, stages, cost->model.get());
    if (failed(splitter.run()))
      return signalPassFailure();
    numChunks = splitter.chunks;
    numSlots = splitter.slots.size();
  }
};

} // namespace

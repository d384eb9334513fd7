//===- MemoryPlan.cpp - The CUDA step's arena -------------------*- C++ -*-===//
//
// Every buffer of a step function in one device arena, at the offsets
// tg-plan-memory wrote into the IR (256-byte aligned, with the attention
// log-sum-exp kept for the backward and each all-reduce bucket in one
// span): readPlan reads them, verifyPlan replays the launches over them to
// check that the emitter's launches keep to the plan, and ptr() names each
// value's pointer in the generated code.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

LogicalResult StepEmitter::readPlan() {
  // A layer body's ops say which slot of the caller's offset table holds
  // each result instead of its offset.
  if (!isBody) {
    FailureOr<int64_t> arenaBytes = plannedArenaBytes(func, kBackend);
    if (failed(arenaBytes))
      return failure();
    plannedBytes = *arenaBytes;
  }
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (auto span = op.getAttrOfType<SpanAttr>(TgDialect::kScratchAttr)) {
      // The launcher writes the statistics the op says; the plan's span
      // must hold them.
      auto attention = dyn_cast<AttentionOp>(op);
      if (!attention || span.getBytes() < attention.getStatisticsBytes())
        return op.emitError(kBackend)
               << ": " << describeOp(&op) << "'s " << TgDialect::kScratchAttr
               << " does not hold its attention statistics ("
               << (attention ? attention.getStatisticsBytes() : 0) << " bytes)";
      scratchOffset[&op] = span.getOffset();
    }
    if (op.getNumResults() == 0 || isa<ConstantOp>(op))
      continue;
    PlaceAttr place = placeOf(&op);
    if (!place)
      return op.emitError(kBackend)
             << ": " << describeOp(&op) << " has no " << TgDialect::kPlaceAttr
             << "; run tg-plan-memory"
             << (isBody ? " and tg-outline-layers" : "") << " last";
    for (OpResult r : op.getResults()) {
      unsigned n = r.getResultNumber();
      if (Value viewed = plannedView(r))
        alias[r] = viewed;
      else if (std::optional<int64_t> slot = place.slot(n))
        slotOf[r] = *slot;
      else if (std::optional<int64_t> offset = place.arenaOffset(n))
        offsetOf[r] = *offset;
    }
    if (auto call = dyn_cast<func::CallOp>(op))
      aliasCallResults(call);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The plan's check
//===----------------------------------------------------------------------===//

/// The arena as a replay of the schedule leaves it: disjoint byte ranges of
/// the planned region and the value in each (the log-sum-exp buffers owned
/// by their attention op). Every value a launch reads must still be in its
/// bytes (written earlier, not overwritten since).
class StepEmitter::ArenaReplay {
public:
  explicit ArenaReplay(StepEmitter &step) : step(step) {}

  /// Replays the step's launches in schedule order, then checks that its
  /// results are still there at the end.
  LogicalResult run();

private:
  /// An owner is a value of this function (context null), the log-sum-exp
  /// of an attention op, or a value inside a layer body's call (context the
  /// call: each call's values are its own).
  using Owner = std::pair<const void *, const void *>;
  static Owner own(const void *v) { return Owner{nullptr, v}; }

  /// Where a value of a layer body is at one call.
  struct Place {
    Value caller; ///< the call's operand, for the body's arguments
    int64_t start = 0, end = 0;
    Owner owner;
    bool planned = false;
  };

  /// Whether `v` has arena bytes (it is no argument and no constant).
  static bool isPlanned(Value v) {
    return !isa<BlockArgument>(v) && !v.getDefiningOp<ConstantOp>();
  }
  /// The bytes of a value of the step, and of an attention's log-sum-exp.
  std::pair<int64_t, int64_t> rangeOf(Value r) const {
    int64_t start = step.offsetOf.lookup(r);
    return {start, start + std::max<int64_t>(bytesOf(r), 1)};
  }
  std::pair<int64_t, int64_t> lseRange(AttentionOp fwd) const {
    int64_t start = step.scratchOffset.lookup(fwd);
    return {start, start + fwd.getStatisticsBytes()};
  }

  /// The arena itself: `owner` writes [start, end), and whether it still
  /// holds all of it.
  void write(int64_t start, int64_t end, Owner owner);
  bool holds(int64_t start, int64_t end, Owner owner) const;

  /// The steps of one launch: `v` still in its bytes when `l` reads it;
  /// all that `l` reads checked; what it writes recorded.
  LogicalResult check(Launch &l, Value v);
  LogicalResult checkReads(Launch &l);
  LogicalResult recordWrites(Launch &l);
  LogicalResult unplanned(Launch &l);

  /// A layer body's launches at the offsets of call `l`, and where the
  /// values of its body are at that call (`slotOffsets`).
  LogicalResult replayCall(Launch &l);
  FailureOr<Place> placeInCall(Launch &l, DenseI64ArrayAttr slotOffsets,
                               Value v);
  LogicalResult replayBodyLaunch(Launch &l, DenseI64ArrayAttr slotOffsets,
                                 Launch &inner);
  LogicalResult checkCallResults(Launch &l, DenseI64ArrayAttr slotOffsets);

  StepEmitter &step;
  std::map<int64_t, std::pair<int64_t, Owner>> owners;
};

void StepEmitter::ArenaReplay::write(int64_t start, int64_t end, Owner owner) {
  auto it = owners.lower_bound(start);
  if (it != owners.begin() && std::prev(it)->second.first > start)
    --it;
  std::vector<std::pair<int64_t, std::pair<int64_t, Owner>>> keep;
  while (it != owners.end() && it->first < end) {
    auto [s, rest] = *it;
    if (s < start)
      keep.push_back({s, {start, rest.second}});
    if (rest.first > end)
      keep.push_back({end, {rest.first, rest.second}});
    it = owners.erase(it);
  }
  for (auto &k : keep)
    owners[k.first] = k.second;
  owners[start] = {end, owner};
}

bool StepEmitter::ArenaReplay::holds(int64_t start, int64_t end,
                                     Owner owner) const {
  int64_t at = start;
  auto it = owners.upper_bound(start);
  if (it == owners.begin())
    return false;
  --it;
  for (; it != owners.end() && at < end; ++it) {
    if (it->first > at || it->second.second != owner)
      return false;
    at = it->second.first;
  }
  return at >= end;
}

LogicalResult StepEmitter::ArenaReplay::unplanned(Launch &l) {
  return l.op->emitError(kBackend)
         << ": internal error: " << describeOp(l.op)
         << " touches a value tg-plan-memory gave no bytes";
}

LogicalResult StepEmitter::ArenaReplay::check(Launch &l, Value v) {
  Value r = step.root(v);
  if (!isPlanned(r))
    return success();
  if (!step.offsetOf.count(r))
    return unplanned(l);
  auto [start, end] = rangeOf(r);
  if (holds(start, end, own(r.getAsOpaquePointer())))
    return success();
  return l.op->emitError(kBackend)
         << ": internal error: the arena plan overwrites an operand of "
         << describeOp(l.op) << " before it is read";
}

/// Its operands, the log-sum-exp an attention gradient reads, and the
/// buckets: nothing overwrote a bucket while the communication stream
/// reduced it.
LogicalResult StepEmitter::ArenaReplay::checkReads(Launch &l) {
  for (Value v : l.reads)
    if (failed(check(l, v)))
      return failure();
  if (auto grad = dyn_cast_or_null<AttentionGradOp>(l.op))
    if (AttentionOp fwd = step.forwardOf.lookup(grad)) {
      auto [start, end] = lseRange(fwd);
      if (!holds(start, end, own(fwd.getOperation())))
        return l.op->emitError(kBackend)
               << ": internal error: the attention LSE is overwritten";
    }
  if (l.kind == LaunchKind::AllReduceWait) {
    Bucket &b = step.buckets[l.bucket];
    for (auto [m, own] : llvm::enumerate(b.inPlace))
      if (failed(check(l, own ? b.op.getInputs()[m] : b.op.getResults()[m])))
        return failure();
  }
  if (l.kind == LaunchKind::Bucket) {
    Bucket &b = step.buckets[l.bucket];
    for (auto [m, own] : llvm::enumerate(b.inPlace))
      if (own && failed(check(l, b.op.getInputs()[m])))
        return failure();
  }
  return success();
}

/// Its results, and the log-sum-exp an attention keeps for its gradient.
LogicalResult StepEmitter::ArenaReplay::recordWrites(Launch &l) {
  for (Value v : l.writes) {
    Value r = step.root(v);
    if (!isPlanned(r))
      continue;
    if (!step.offsetOf.count(r))
      return unplanned(l);
    auto [start, end] = rangeOf(r);
    write(start, end, own(r.getAsOpaquePointer()));
  }
  if (auto fwd = dyn_cast_or_null<AttentionOp>(l.op))
    if (step.scratchOffset.count(fwd)) {
      auto [start, end] = lseRange(fwd);
      write(start, end, own(fwd.getOperation()));
    }
  return success();
}

/// A body's argument is the call's operand; its other values are at the
/// call's tg.slot_offsets, owned by the call (another call of the same body
/// has values of its own); a constant has no place.
FailureOr<StepEmitter::ArenaReplay::Place>
StepEmitter::ArenaReplay::placeInCall(Launch &l, DenseI64ArrayAttr slotOffsets,
                                      Value v) {
  StepEmitter &body = *l.body;
  func::CallOp call = l.call;
  Value r = body.root(v);
  Place p;
  if (auto arg = dyn_cast<BlockArgument>(r)) {
    p.caller = call.getOperand(arg.getArgNumber());
    return p;
  }
  if (r.getDefiningOp<ConstantOp>())
    return p;
  auto it = body.slotOf.find(r);
  if (it == body.slotOf.end() || it->second < 0 ||
      it->second >= (int64_t)slotOffsets.size())
    return call.emitError(kBackend)
           << ": internal error: a value of @" << call.getCallee()
           << " has no slot in the call's offset table";
  p.start = slotOffsets[it->second];
  p.end = p.start + std::max<int64_t>(bytesOf(r), 1);
  p.owner = {call.getOperation(), r.getAsOpaquePointer()};
  p.planned = true;
  return p;
}

/// One launch of a layer body at call `l`: what it reads checked, what it
/// writes recorded (an argument's write is the caller's value's).
LogicalResult StepEmitter::ArenaReplay::replayBodyLaunch(
    Launch &l, DenseI64ArrayAttr slotOffsets, Launch &inner) {
  func::CallOp call = l.call;
  for (Value v : inner.reads) {
    FailureOr<Place> p = placeInCall(l, slotOffsets, v);
    if (failed(p))
      return failure();
    if (p->caller) {
      if (failed(check(l, p->caller)))
        return failure();
    } else if (p->planned && !holds(p->start, p->end, p->owner)) {
      return call.emitError(kBackend)
             << ": internal error: at this call of @" << call.getCallee()
             << ", the arena plan overwrites an operand of "
             << describeOp(inner.op) << " before it is read";
    }
  }
  for (Value v : inner.writes) {
    FailureOr<Place> p = placeInCall(l, slotOffsets, v);
    if (failed(p))
      return failure();
    Value r = p->caller ? step.root(p->caller) : Value();
    if (r && isPlanned(r) && step.offsetOf.count(r)) {
      auto [start, end] = rangeOf(r);
      write(start, end, own(r.getAsOpaquePointer()));
    } else if (p->planned) {
      write(p->start, p->end, p->owner);
    }
  }
  return success();
}

/// What the body returns must be where the call's tg.place says, from
/// where on it is the call's result.
LogicalResult
StepEmitter::ArenaReplay::checkCallResults(Launch &l,
                                           DenseI64ArrayAttr slotOffsets) {
  func::CallOp call = l.call;
  Operation *ret = l.body->func.getBody().front().getTerminator();
  for (auto [result, inner] :
       llvm::zip(call.getResults(), ret->getOperands())) {
    FailureOr<Place> p = placeInCall(l, slotOffsets, inner);
    if (failed(p))
      return failure();
    if (!p->planned || step.alias.count(result))
      continue; // a view of an argument (in the call's tg.place) or of an
                // earlier result
    Value r = step.root(result);
    if (!step.offsetOf.count(r) || rangeOf(r).first != p->start ||
        !holds(p->start, p->end, p->owner))
      return call.emitError(kBackend)
             << ": internal error: @" << call.getCallee()
             << " returns a value that is not where the call's tg.place "
                "says";
    write(p->start, p->end, own(r.getAsOpaquePointer()));
  }
  return success();
}

/// A layer body's launches at one call's offsets: its arguments are the
/// call's operands, its values are at the call's tg.slot_offsets, and what
/// it returns becomes the call's results.
LogicalResult StepEmitter::ArenaReplay::replayCall(Launch &l) {
  auto slotOffsets =
      l.call->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kSlotOffsetsAttr);
  if (!slotOffsets)
    return l.call.emitError(kBackend)
           << ": the call of a layer body needs tg.slot_offsets (run "
              "tg-outline-layers)";
  for (Launch &inner : l.body->launches)
    if (failed(replayBodyLaunch(l, slotOffsets, inner)))
      return failure();
  return checkCallResults(l, slotOffsets);
}

LogicalResult StepEmitter::ArenaReplay::run() {
  for (Launch &l : step.launches) {
    if (failed(checkReads(l)))
      return failure();
    if (failed(l.kind == LaunchKind::Call ? replayCall(l) : recordWrites(l)))
      return failure();
  }
  Launch end;
  end.op = step.func;
  for (Value v : step.func.getBody().front().getTerminator()->getOperands())
    if (failed(check(end, v)))
      return failure();
  return success();
}

/// Replays the schedule over the arena (ArenaReplay). A failure is a
/// compiler bug (the launches disagree with the IR the plan was made for),
/// reported rather than emitted.
LogicalResult StepEmitter::verifyPlan() { return ArenaReplay(*this).run(); }

std::string StepEmitter::pointerExpr(Value v) {
  v = flat(v);
  if (declaredHere.contains(v))
    return names.lookup(v);
  Value r = root(v);
  StringRef type = storageOf(v);
  if (r != v)
    return storageOf(r) == type ? pointerExpr(r)
                                : "(" + type.str() + " *)" + pointerExpr(r);
  if (auto arg = dyn_cast<BlockArgument>(r))
    return "(" + type.str() + " *)" + bindArgument(arg.getArgNumber());
  if (r.getDefiningOp<ConstantOp>())
    return llvm::formatv("({0} *)(d.constants + {1})", type,
                         *constantOffsetOf(r))
        .str();
  if (isBody)
    return llvm::formatv("({0} *)(work + off[{1}])", type, slotOf.lookup(r))
        .str();
  return llvm::formatv("({0} *)(work + {1})", type, offsetOf.lookup(r)).str();
}

std::string StepEmitter::ptr(Value v) {
  v = flat(v);
  auto it = names.find(v);
  if (it != names.end()) {
    // Declared in an earlier part: again in this one.
    if (declaredHere.insert(v).second) {
      if (auto d = declarations.find(v); d != declarations.end())
        os << d->second;
      else
        ptr(root(v));
    }
    return it->second;
  }
  declaredHere.insert(v);
  Value r = root(v);
  StringRef type = storageOf(v);
  // A view of another value of the same type has that value's name.
  if (r != v && storageOf(r) == type) {
    std::string rootName = ptr(r);
    names[v] = rootName;
    return rootName;
  }
  std::string name;
  std::string expr;
  if (auto arg = dyn_cast<BlockArgument>(r)) {
    name = "a" + std::to_string(arg.getArgNumber());
    expr = "(" + type.str() + " *)" + bindArgument(arg.getArgNumber());
  } else if (r.getDefiningOp<ConstantOp>()) {
    name = "c" + std::to_string(valueCounter++);
    expr =
        llvm::formatv("({0} *)(d.constants + {1})", type, *constantOffsetOf(r))
            .str();
  } else if (isBody) {
    name = "v" + std::to_string(valueCounter++);
    expr =
        llvm::formatv("({0} *)(work + off[{1}])", type, slotOf.lookup(r)).str();
  } else {
    name = "v" + std::to_string(valueCounter++);
    expr = llvm::formatv("({0} *)(work + {1})", type, offsetOf.lookup(r)).str();
  }
  if (r != v) // a view with another element type (a bitcast reshape)
    name = "v" + std::to_string(valueCounter++);
  std::string &line = declarations[v];
  llvm::raw_string_ostream declaration(line);
  declaration << "  " << type << " *" << name << " = " << expr << ";";
  if (auto arg = dyn_cast<BlockArgument>(r)) {
    for (StringRef attr :
         {TgDialect::kParamAttr, TgDialect::kStateAttr, TgDialect::kInputAttr,
          TgDialect::kAccumAttr, TgDialect::kScalarAttr})
      if (auto s = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr))
        declaration << " // " << s.getValue();
  }
  declaration << "\n";
  os << line;
  names[v] = name;
  return name;
}

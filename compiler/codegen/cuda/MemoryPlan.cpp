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
  FailureOr<int64_t> arenaBytes = plannedArenaBytes(func, kBackend);
  if (failed(arenaBytes))
    return failure();
  plannedBytes = *arenaBytes;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (auto span =
            op.getAttrOfType<DenseI64ArrayAttr>(TgDialect::kScratchAttr))
      scratchOffset[&op] = span[0];
    if (op.getNumResults() == 0 || isa<ConstantOp>(op))
      continue;
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(TgDialect::kOffsetsAttr);
    auto views = op.getAttrOfType<DenseI64ArrayAttr>(TgDialect::kViewsAttr);
    for (OpResult r : op.getResults()) {
      unsigned n = r.getResultNumber();
      if (views && views[n] >= 0)
        alias[r] = op.getOperand(views[n]);
      else if (offsets[n] >= 0)
        offsetOf[r] = offsets[n];
    }
  }
  return success();
}

/// Replays the schedule over the arena: every value a launch reads must
/// still be in its bytes (written earlier, not overwritten since). A failure
/// is a compiler bug (the launches disagree with the IR the plan was made
/// for), reported rather than emitted.
LogicalResult StepEmitter::verifyPlan() {
  // Disjoint byte ranges of the planned region and the value in each; the
  // log-sum-exp buffers are owned by their attention op.
  std::map<int64_t, std::pair<int64_t, const void *>> owners;
  auto rangeOf = [&](Value r) -> std::pair<int64_t, int64_t> {
    int64_t start = offsetOf.lookup(r);
    return {start, start + std::max<int64_t>(bytesOf(r), 1)};
  };
  auto lseRange = [&](AttentionOp fwd) -> std::pair<int64_t, int64_t> {
    ArrayRef<int64_t> q = tensorType(fwd.getQuery()).getShape();
    int64_t start = scratchOffset.lookup(fwd);
    return {start, start + q[0] * q[1] * q[2] * 4};
  };
  auto write = [&](int64_t start, int64_t end, const void *owner) {
    auto it = owners.lower_bound(start);
    if (it != owners.begin() && std::prev(it)->second.first > start)
      --it;
    std::vector<std::pair<int64_t, std::pair<int64_t, const void *>>> keep;
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
  };
  auto holds = [&](int64_t start, int64_t end, const void *owner) {
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
  };
  auto planned = [&](Value v) {
    return !isa<BlockArgument>(v) && !v.getDefiningOp<ConstantOp>();
  };
  auto unplanned = [&](Launch &l) {
    return l.op->emitError(kBackend)
           << ": internal error: " << describeOp(l.op)
           << " touches a value tg-plan-memory gave no bytes";
  };
  auto check = [&](Launch &l, Value v) -> LogicalResult {
    Value r = root(v);
    if (!planned(r))
      return success();
    if (!offsetOf.count(r))
      return unplanned(l);
    auto [start, end] = rangeOf(r);
    if (holds(start, end, r.getAsOpaquePointer()))
      return success();
    return l.op->emitError(kBackend)
           << ": internal error: the arena plan overwrites an operand of "
           << describeOp(l.op) << " before it is read";
  };
  for (Launch &l : launches) {
    for (Value v : l.reads)
      if (failed(check(l, v)))
        return failure();
    if (auto grad = dyn_cast_or_null<AttentionGradOp>(l.op))
      if (AttentionOp fwd = forwardOf.lookup(grad)) {
        auto [start, end] = lseRange(fwd);
        if (!holds(start, end, fwd.getOperation()))
          return l.op->emitError(kBackend)
                 << ": internal error: the attention LSE is overwritten";
      }
    // Nothing overwrote a bucket while the communication stream reduced it.
    if (l.kind == LaunchKind::AllReduceWait) {
      Bucket &b = buckets[l.bucket];
      for (auto [m, own] : llvm::enumerate(b.inPlace))
        if (failed(check(l, own ? b.op.getInputs()[m] : b.op.getResults()[m])))
          return failure();
    }
    if (l.kind == LaunchKind::Bucket) {
      Bucket &b = buckets[l.bucket];
      for (auto [m, own] : llvm::enumerate(b.inPlace))
        if (own && failed(check(l, b.op.getInputs()[m])))
          return failure();
    }
    for (Value v : l.writes) {
      Value r = root(v);
      if (!planned(r))
        continue;
      if (!offsetOf.count(r))
        return unplanned(l);
      auto [start, end] = rangeOf(r);
      write(start, end, r.getAsOpaquePointer());
    }
    if (auto fwd = dyn_cast_or_null<AttentionOp>(l.op))
      if (scratchOffset.count(fwd)) {
        auto [start, end] = lseRange(fwd);
        write(start, end, fwd.getOperation());
      }
  }
  Launch end;
  end.op = func;
  for (Value v : func.getBody().front().getTerminator()->getOperands())
    if (failed(check(end, v)))
      return failure();
  return success();
}

std::string StepEmitter::ptr(Value v) {
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
    expr = llvm::formatv("({0} *)(d.constants + {1})", type,
                         constantOffset.lookup(r))
               .str();
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

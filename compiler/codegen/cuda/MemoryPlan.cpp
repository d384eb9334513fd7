//===- MemoryPlan.cpp - The CUDA step's arena -------------------*- C++ -*-===//
//
// Every buffer of a step function in one device arena, placed by liveness
// over the launch schedule (LaunchArena), 256-byte aligned: gradients that
// are reduced in place live inside their all-reduce bucket, a bucket stays
// taken until the compute stream waits for it, and the attention LSE lives
// from the forward to its gradient. verifyPlan replays the schedule to
// check the plan; ptr() names each value's pointer in the generated code.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

LogicalResult StepEmitter::planMemory() {
  // Buckets first: their members are placed inside them.
  for (Bucket &b : buckets) {
    b.buffer = arena.addBuffer(b.bytes);
    for (auto [m, offset] : llvm::enumerate(b.offsets)) {
      Value slot = b.inPlace[m] ? b.op.getInputs()[m] : b.op.getResults()[m];
      bufferOf[slot] = b.buffer;
      memberOffset[slot] = offset;
    }
  }
  auto bufferFor = [&](Value v) -> int {
    Value r = root(v);
    if (isa<BlockArgument>(r) || r.getDefiningOp<ConstantOp>())
      return -1;
    auto it = bufferOf.find(r);
    if (it != bufferOf.end())
      return it->second;
    int id = arena.addBuffer(bytesOf(r));
    bufferOf[r] = id;
    return id;
  };
  Launch returnLaunch;
  returnLaunch.kind = LaunchKind::Return;
  for (Value v : func.getBody().front().getTerminator()->getOperands())
    returnLaunch.reads.push_back(v);
  llvm::SmallPtrSet<Operation *, 16> differentiated; // attention forwards
  for (auto [grad, fwd] : forwardOf)
    differentiated.insert(fwd);
  for (auto [pos, l] : llvm::enumerate(launches)) {
    for (Value v : l.writes)
      if (int b = bufferFor(v); b >= 0)
        arena.touch(b, pos);
    for (Value v : l.reads)
      if (int b = bufferFor(v); b >= 0)
        arena.touch(b, pos);
    // A bucket is reduced on the communication stream until the compute
    // stream waits for it: its bytes stay taken until then.
    if (l.kind == LaunchKind::Bucket)
      arena.touch(buckets[l.bucket].buffer, pos);
    if (l.kind == LaunchKind::AllReduceWait)
      arena.touch(buckets[l.bucket].buffer, pos);
    // The attention LSE lives from the forward to its gradient.
    if (auto fwd = dyn_cast<AttentionOp>(l.op);
        fwd && l.kind == LaunchKind::Op && differentiated.contains(fwd)) {
      if (!lseBuffer.count(fwd)) {
        ArrayRef<int64_t> q = tensorType(fwd.getQuery()).getShape();
        lseBuffer[fwd] = arena.addBuffer(q[0] * q[1] * q[2] * 4);
      }
      arena.touch(lseBuffer[fwd], pos);
    }
    if (auto grad = dyn_cast<AttentionGradOp>(l.op))
      if (AttentionOp fwd = forwardOf.lookup(grad))
        arena.touch(lseBuffer.lookup(fwd), pos);
  }
  for (Value v : returnLaunch.reads)
    if (int b = bufferFor(v); b >= 0)
      arena.touch(b, launches.size());
  arena.plan(256);

  return verifyPlan();
}

/// Replays the schedule over the arena: every value a launch reads must
/// still be in its bytes (written earlier, not overwritten since). A failure
/// is a compiler bug, reported rather than emitted.
LogicalResult StepEmitter::verifyPlan() {
  // Disjoint byte ranges of the planned region and the value in each; the
  // LSE buffers are owned by their attention op.
  std::map<int64_t, std::pair<int64_t, const void *>> owners;
  auto rangeOf = [&](Value r) -> std::pair<int64_t, int64_t> {
    int64_t start = arena.offset(bufferOf.lookup(r)) + memberOffset.lookup(r);
    return {start, start + std::max<int64_t>(bytesOf(r), 1)};
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
    return !isa<BlockArgument>(v) && !v.getDefiningOp<ConstantOp>() &&
           bufferOf.count(v);
  };
  auto check = [&](Launch &l, Value v) -> LogicalResult {
    Value r = root(v);
    if (!planned(r))
      return success();
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
        int b = lseBuffer.lookup(fwd);
        if (!holds(arena.offset(b), arena.offset(b) + arena.bytes(b),
                   fwd.getOperation()))
          return l.op->emitError(kBackend)
                 << ": internal error: the attention LSE is overwritten";
      }
    if (l.kind == LaunchKind::Bucket) {
      Bucket &b = buckets[l.bucket];
      for (auto [m, own] : llvm::enumerate(b.inPlace))
        if (own && failed(check(l, b.op.getInputs()[m])))
          return failure();
    }
    for (Value v : l.writes) {
      Value r = root(v);
      if (planned(r)) {
        auto [start, end] = rangeOf(r);
        write(start, end, r.getAsOpaquePointer());
      }
    }
    if (auto fwd = dyn_cast_or_null<AttentionOp>(l.op))
      if (lseBuffer.count(fwd)) {
        int b = lseBuffer.lookup(fwd);
        write(arena.offset(b), arena.offset(b) + arena.bytes(b),
              fwd.getOperation());
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
    int64_t offset = arena.offset(bufferOf.lookup(r)) + memberOffset.lookup(r);
    expr = llvm::formatv("({0} *)(work + {1})", type, offset).str();
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

//===- PipelineSchedule.cpp - Pipeline schedules as action lists -*- C++
//-*-===//

#include "planning/pipeline/PipelineSchedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir::tg::pipeline;
using llvm::formatv;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Appends the actions of one forward or backward of micro-batch `m` on
/// chunk `c`: the receive of what it reads from another stage, the compute
/// and the send of what it writes for another stage.
class ListWriter {
public:
  ListWriter(const Shape &shape, StageActions &out) : shape(shape), out(out) {}

  void forward(int64_t m, int64_t c) {
    auto &list = out[shape.stageOf(c)];
    if (c > 0 && crosses(c - 1, c))
      list.push_back({ActionKind::RecvF, m, c});
    list.push_back({ActionKind::F, m, c});
    if (c + 1 < shape.chunks() && crosses(c, c + 1))
      list.push_back({ActionKind::SendF, m, c});
  }

  /// BW when `split` is false, else B alone (W comes where the caller
  /// puts it).
  void backward(int64_t m, int64_t c, bool split) {
    auto &list = out[shape.stageOf(c)];
    if (c + 1 < shape.chunks() && crosses(c, c + 1))
      list.push_back({ActionKind::RecvB, m, c});
    list.push_back({split ? ActionKind::B : ActionKind::BW, m, c});
    if (c > 0 && crosses(c - 1, c))
      list.push_back({ActionKind::SendB, m, c});
  }

  void weight(int64_t m, int64_t c) {
    out[shape.stageOf(c)].push_back({ActionKind::W, m, c});
  }

private:
  bool crosses(int64_t a, int64_t b) const {
    return shape.stageOf(a) != shape.stageOf(b);
  }
  const Shape &shape;
  StageActions &out;
};

/// GPipe: every forward, then every backward.
StageActions gpipe(const Shape &shape) {
  StageActions out(shape.stages);
  ListWriter write(shape, out);
  for (int64_t s = 0; s < shape.stages; ++s) {
    for (int64_t m = 0; m < shape.microBatches; ++m)
      write.forward(m, s);
    for (int64_t m = 0; m < shape.microBatches; ++m)
      write.backward(m, s, /*split=*/false);
  }
  return out;
}

/// One stage's `total` forwards and backwards in 1F1B's order: `warmup`
/// forwards, then a forward and a backward in turn, then the backwards
/// left.
template <typename Forward, typename Backward>
void inTurn(int64_t total, int64_t warmup, Forward forward, Backward backward) {
  for (int64_t k = 0; k < warmup; ++k)
    forward(k);
  for (int64_t k = warmup; k < total; ++k) {
    forward(k);
    backward(k - warmup);
  }
  for (int64_t k = total - warmup; k < total; ++k)
    backward(k);
}

/// 1F1B (PipeDream-Flush): P - s - 1 forwards to fill the pipeline, then
/// one forward and one backward in turn, then the backwards left.
StageActions oneFOneB(const Shape &shape) {
  StageActions out(shape.stages);
  ListWriter write(shape, out);
  int64_t p = shape.stages, n = shape.microBatches;
  for (int64_t s = 0; s < p; ++s)
    inTurn(
        n, std::min(p - s - 1, n), [&](int64_t m) { write.forward(m, s); },
        [&](int64_t m) { write.backward(m, s, /*split=*/false); });
  return out;
}

/// Megatron-LM's interleaved 1F1B: a stage's V chunks take groups of P
/// micro-batches in turn (the k-th forward of a stage is micro-batch
/// (k / PV) P + k mod P on its (k / P) mod V-th chunk; the backwards go
/// through the chunks in reverse), after a warm-up of 2 (P - s - 1) +
/// (V - 1) P forwards.
StageActions interleaved(const Shape &shape) {
  StageActions out(shape.stages);
  ListWriter write(shape, out);
  int64_t p = shape.stages, v = shape.virtualStages;
  int64_t total = shape.microBatches * v;
  auto microBatch = [&](int64_t k) { return k / (p * v) * p + k % p; };
  for (int64_t s = 0; s < p; ++s)
    inTurn(
        total, std::min(2 * (p - s - 1) + (v - 1) * p, total),
        [&](int64_t k) { write.forward(microBatch(k), (k / p) % v * p + s); },
        [&](int64_t k) {
          write.backward(microBatch(k), (v - 1 - (k / p) % v) * p + s,
                         /*split=*/false);
        });
  return out;
}

/// ZB-H1 (Qi et al.): 1F1B with each backward split into B and W, the W
/// passes deferred to where the stage would otherwise wait, at 1F1B's
/// memory: stage s holds at most P - s micro-batches between their F and
/// their B (1F1B's peak there), and those with the W passes it defers at
/// most P (1F1B's peak on the first stage), counting a deferred W as a
/// whole micro-batch although it keeps only part of one. Played on
/// `costs`: whenever a stage is free it runs the next F if its input has
/// arrived and memory allows, else the next B if its gradient has
/// arrived, else the oldest W, else it waits for the next arrival. With F,
/// B and W of equal cost this gives the paper's bubble of (P - 1) units
/// (1F1B's: 3 (P - 1)).
llvm::Expected<StageActions> zeroBubbleH1(const Shape &shape,
                                          const Costs &costs) {
  int64_t p = shape.stages, n = shape.microBatches;
  std::vector<std::vector<double>> fEnd(p, std::vector<double>(n, kNever)),
      bEnd = fEnd;
  std::vector<double> free(p, 0);
  // Whether a stage only stepped past the present (nothing it knows of
  // happens later): its `free` is no event the others may wait for.
  std::vector<char> waiting(p, 0);
  std::vector<int64_t> nextF(p, 0), nextB(p, 0), held(p, 0);
  std::vector<std::deque<int64_t>> pendingW(p);
  std::vector<std::vector<std::pair<ActionKind, int64_t>>> order(p);
  auto remaining = [&](int64_t s) {
    return nextF[s] < n || nextB[s] < n || !pendingW[s].empty();
  };
  auto inputArrives = [&](int64_t s, int64_t m) {
    return s == 0 ? 0.0 : fEnd[s - 1][m] + costs.transfer;
  };
  auto gradArrives = [&](int64_t s, int64_t m) {
    return s == p - 1 ? fEnd[s][m] : bEnd[s + 1][m] + costs.transfer;
  };
  while (true) {
    int64_t s = -1;
    for (int64_t t = 0; t < p; ++t)
      if (remaining(t) && (s < 0 || free[t] < free[s]))
        s = t;
    if (s < 0)
      break;
    double now = free[s];
    bool fits = nextF[s] < n && held[s] < p - s &&
                held[s] + (int64_t)pendingW[s].size() < p;
    bool canF = fits && inputArrives(s, nextF[s]) <= now;
    bool canB = nextB[s] < nextF[s] && gradArrives(s, nextB[s]) <= now;
    int64_t m;
    ActionKind kind;
    if (canF) {
      kind = ActionKind::F;
      m = nextF[s]++;
      fEnd[s][m] = now + costs.forward[s];
      free[s] = fEnd[s][m];
      ++held[s];
    } else if (canB) {
      kind = ActionKind::B;
      m = nextB[s]++;
      bEnd[s][m] = now + costs.backwardInput[s];
      free[s] = bEnd[s][m];
      pendingW[s].push_back(m);
      --held[s];
    } else if (!pendingW[s].empty()) {
      kind = ActionKind::W;
      m = pendingW[s].front();
      pendingW[s].pop_front();
      free[s] = now + costs.backwardWeight[s];
    } else {
      // Nothing to run: wait for the next arrival this stage knows of, or
      // else until another stage finishes what it runs.
      double next = kNever;
      if (nextB[s] < nextF[s] && gradArrives(s, nextB[s]) > now)
        next = std::min(next, gradArrives(s, nextB[s]));
      if (fits && inputArrives(s, nextF[s]) > now)
        next = std::min(next, inputArrives(s, nextF[s]));
      bool othersRun = false;
      for (int64_t t = 0; t < p; ++t)
        if (t != s && remaining(t) && !waiting[t]) {
          othersRun = true;
          if (free[t] > now)
            next = std::min(next, free[t]);
        }
      if (next == kNever) {
        // Another stage is free now: it goes first. With every stage
        // waiting on what none of them will send, the step cannot go on.
        if (!othersRun)
          return fail(formatv("zb-h1: every stage waits at {0} s with {1} "
                              "micro-batches to go on stage {2}: no "
                              "placement within 1F1B's memory",
                              now, n - nextB[s], s));
        next = std::nextafter(now, kNever);
        waiting[s] = 1;
      } else {
        waiting[s] = 0;
      }
      free[s] = next;
      continue;
    }
    waiting[s] = 0;
    order[s].push_back({kind, m});
  }
  StageActions out(p);
  ListWriter write(shape, out);
  for (int64_t s = 0; s < p; ++s)
    for (auto [kind, m] : order[s]) {
      if (kind == ActionKind::F)
        write.forward(m, s);
      else if (kind == ActionKind::B)
        write.backward(m, s, /*split=*/true);
      else
        write.weight(m, s);
    }
  return out;
}

/// What simulate knows of each micro-batch on each chunk.
struct ChunkState {
  double forward = kNever, backward = kNever, weight = kNever;
  /// When a send ran (kNever: not yet) and when the receive took it.
  double sentF = kNever, sentB = kNever, gotF = kNever, gotB = kNever;
  bool split = false; ///< its backward was a B (a W must follow)
};

/// Each chunk that `shape` reduces gets its Reduce after its last W (or
/// BW), and after the send of that backward's gradients, which then is not
/// held up by the reduction.
void placeReductions(const Shape &shape, StageActions &actions) {
  for (int64_t c = 0; c < shape.chunks(); ++c) {
    if (!shape.reduces(c))
      continue;
    std::vector<Action> &list = actions[shape.stageOf(c)];
    size_t at = list.size();
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].chunk == c &&
          (list[i].kind == ActionKind::W || list[i].kind == ActionKind::BW))
        at = i;
    if (at == list.size())
      continue; // no backward: simulate says so
    int64_t m = list[at].microBatch;
    ++at;
    if (at < list.size() && list[at].kind == ActionKind::SendB &&
        list[at].chunk == c && list[at].microBatch == m)
      ++at;
    list.insert(list.begin() + at, Action{ActionKind::Reduce, 0, c});
  }
}

} // namespace

std::optional<Schedule>
mlir::tg::pipeline::parseSchedule(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Schedule>>(name)
      .Case("gpipe", Schedule::GPipe)
      .Case("1f1b", Schedule::OneFOneB)
      .Case("interleaved", Schedule::Interleaved)
      .Case("zb-h1", Schedule::ZeroBubbleH1)
      .Default(std::nullopt);
}

llvm::StringRef mlir::tg::pipeline::scheduleName(Schedule schedule) {
  switch (schedule) {
  case Schedule::GPipe:
    return "gpipe";
  case Schedule::OneFOneB:
    return "1f1b";
  case Schedule::Interleaved:
    return "interleaved";
  case Schedule::ZeroBubbleH1:
    return "zb-h1";
  }
  return "";
}

std::optional<ScheduleChoice>
mlir::tg::pipeline::parseScheduleChoice(llvm::StringRef name) {
  if (name == "auto")
    return ScheduleChoice::Auto;
  std::optional<Schedule> schedule = parseSchedule(name);
  if (!schedule)
    return std::nullopt;
  switch (*schedule) {
  case Schedule::GPipe:
    return ScheduleChoice::GPipe;
  case Schedule::OneFOneB:
    return ScheduleChoice::OneFOneB;
  case Schedule::Interleaved:
    return ScheduleChoice::Interleaved;
  case Schedule::ZeroBubbleH1:
    return ScheduleChoice::ZeroBubbleH1;
  }
  return std::nullopt;
}

llvm::StringRef mlir::tg::pipeline::scheduleChoiceName(ScheduleChoice choice) {
  switch (choice) {
  case ScheduleChoice::Auto:
    return "auto";
  case ScheduleChoice::GPipe:
    return scheduleName(Schedule::GPipe);
  case ScheduleChoice::OneFOneB:
    return scheduleName(Schedule::OneFOneB);
  case ScheduleChoice::Interleaved:
    return scheduleName(Schedule::Interleaved);
  case ScheduleChoice::ZeroBubbleH1:
    return scheduleName(Schedule::ZeroBubbleH1);
  }
  return "";
}

Costs Costs::uniform(const Shape &shape, double f, double b, double w,
                     double transfer) {
  Costs costs;
  costs.forward.assign(shape.chunks(), f);
  costs.backwardInput.assign(shape.chunks(), b);
  costs.backwardWeight.assign(shape.chunks(), w);
  costs.transfer = transfer;
  return costs;
}

namespace {

/// buildSchedule's lists before the reductions are placed.
llvm::Expected<StageActions>
writeSchedule(Schedule schedule, const Shape &shape, const Costs &costs) {
  if ((int64_t)costs.forward.size() != shape.chunks() ||
      (int64_t)costs.backwardInput.size() != shape.chunks() ||
      (int64_t)costs.backwardWeight.size() != shape.chunks())
    return fail(formatv("the costs are for {0} chunks, the pipeline has {1}",
                        costs.forward.size(), shape.chunks()));
  if (schedule == Schedule::Interleaved) {
    if (shape.virtualStages < 2)
      return fail("the interleaved schedule runs several chunks a stage: "
                  "--virtual-stages must be at least 2");
    if (shape.microBatches % shape.stages != 0)
      return fail(formatv("the interleaved schedule takes micro-batches in "
                          "groups of the {0} stages; {1} micro-batches are "
                          "not a multiple of {0}",
                          shape.stages, shape.microBatches));
    return interleaved(shape);
  }
  if (shape.virtualStages != 1)
    return fail(formatv("the {0} schedule runs one chunk a stage; "
                        "--virtual-stages={1} needs the interleaved schedule",
                        scheduleName(schedule), shape.virtualStages));
  switch (schedule) {
  case Schedule::GPipe:
    return gpipe(shape);
  case Schedule::OneFOneB:
    return oneFOneB(shape);
  case Schedule::ZeroBubbleH1:
    // Its greedy placement assumes the warm-up fills every stage.
    if (shape.microBatches < shape.stages)
      return fail(formatv("zb-h1 needs at least one micro-batch per stage: "
                          "{0} micro-batches on {1} stages (use 1f1b, or "
                          "more micro-batches: tgc --grad-accum)",
                          shape.microBatches, shape.stages));
    return zeroBubbleH1(shape, costs);
  case Schedule::Interleaved:
    break;
  }
  return fail("unknown schedule");
}

} // namespace

llvm::Expected<StageActions>
mlir::tg::pipeline::buildSchedule(Schedule schedule, const Shape &shape,
                                  const Costs &costs) {
  if (shape.stages < 1 || shape.virtualStages < 1 || shape.microBatches < 1)
    return fail(formatv("a pipeline needs at least one stage, chunk a stage "
                        "and micro-batch, got {0} x {1} and {2}",
                        shape.stages, shape.virtualStages, shape.microBatches));
  llvm::Expected<StageActions> lists = writeSchedule(schedule, shape, costs);
  if (lists)
    placeReductions(shape, *lists);
  return lists;
}

std::string mlir::tg::pipeline::describe(const Action &action,
                                         const Shape &shape) {
  static const char *names[] = {"F",      "B",      "W",      "BW",    "send-F",
                                "recv-F", "send-B", "recv-B", "reduce"};
  std::string text = names[static_cast<int>(action.kind)];
  if (action.kind != ActionKind::Reduce)
    text += std::to_string(action.microBatch);
  if (shape.virtualStages > 1)
    text += "@" + std::to_string(action.chunk);
  return text;
}

llvm::Expected<Action> mlir::tg::pipeline::parseAction(llvm::StringRef text,
                                                       const Shape &shape,
                                                       int64_t stage) {
  static const std::pair<const char *, ActionKind> kinds[] = {
      {"reduce", ActionKind::Reduce},
      {"send-F", ActionKind::SendF},
      {"recv-F", ActionKind::RecvF},
      {"send-B", ActionKind::SendB},
      {"recv-B", ActionKind::RecvB},
      {"BW", ActionKind::BW},
      {"F", ActionKind::F},
      {"B", ActionKind::B},
      {"W", ActionKind::W}};
  llvm::StringRef rest = text;
  std::optional<ActionKind> kind;
  for (auto [prefix, k] : kinds)
    if (rest.consume_front(prefix)) {
      kind = k;
      break;
    }
  auto [number, chunkText] = rest.split('@');
  int64_t microBatch = 0, chunk = stage;
  // A Reduce runs once a step: no micro-batch number.
  bool ok = kind == ActionKind::Reduce
                ? number.empty()
                : kind && !number.getAsInteger(10, microBatch) &&
                      microBatch >= 0 && microBatch < shape.microBatches;
  if (ok && rest.contains('@'))
    ok = !chunkText.getAsInteger(10, chunk) && chunk >= 0 &&
         chunk < shape.chunks() && shape.stageOf(chunk) == stage;
  else if (ok && shape.virtualStages > 1)
    ok = false; // several chunks a stage: the chunk must be named
  if (!ok)
    return fail(formatv("stage {0}: '{1}' is no action of this pipeline ({2} "
                        "micro-batches, {3} chunks; F, B, W, BW, send-F, "
                        "recv-F, send-B or recv-B and a micro-batch number, "
                        "or reduce; with several chunks a stage @chunk)",
                        stage, text, shape.microBatches, shape.chunks()));
  return Action{*kind, microBatch, chunk};
}

std::string mlir::tg::pipeline::printActions(const StageActions &actions,
                                             const Shape &shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [s, list] : llvm::enumerate(actions)) {
    os << "stage " << s << ":";
    for (const Action &a : list)
      os << " " << describe(a, shape);
    os << "\n";
  }
  return text;
}

llvm::Expected<Timeline>
mlir::tg::pipeline::simulate(const Shape &shape, const StageActions &actions,
                             const Costs &costs) {
  int64_t p = shape.stages, chunks = shape.chunks(), n = shape.microBatches;
  if ((int64_t)actions.size() != p)
    return fail(formatv("the schedule lists {0} stages, the pipeline has {1}",
                        actions.size(), p));
  if ((int64_t)costs.forward.size() != chunks ||
      (int64_t)costs.backwardInput.size() != chunks ||
      (int64_t)costs.backwardWeight.size() != chunks)
    return fail(formatv("the costs are for {0} chunks, the pipeline has {1}",
                        costs.forward.size(), chunks));
  std::vector<std::vector<ChunkState>> state(n,
                                             std::vector<ChunkState>(chunks));
  Timeline timeline;
  timeline.stages.resize(p);
  timeline.busy.assign(p, 0);
  timeline.peakInFlight.assign(p, 0);
  timeline.peakDeferredW.assign(p, 0);
  timeline.peakHeld.assign(p, 0);
  std::vector<size_t> next(p, 0);
  std::vector<double> free(p, 0);
  std::vector<int64_t> held(p, 0), deferred(p, 0);
  std::vector<double> reducedAt(chunks, kNever);
  // Why each stage's next action cannot run yet (for the deadlock error).
  std::vector<std::string> waits(p);

  auto crosses = [&](int64_t a, int64_t b) {
    return shape.stageOf(a) != shape.stageOf(b);
  };
  auto where = [&](int64_t s, const Action &a) {
    return formatv("stage {0}: {1}", s, describe(a, shape)).str();
  };

  // Between two stages, transfers pair up in order (NCCL matches a send
  // with a receive by its place in each side's sequence, not by a tag):
  // a stage receives a peer's transfers in the order the peer sends them.
  // A transfer is named by its direction, micro-batch and the lower chunk
  // of its boundary.
  using Transfer = std::tuple<bool, int64_t, int64_t>;
  auto farChunk = [](const Action &a) {
    bool up = a.kind == ActionKind::SendF || a.kind == ActionKind::RecvB;
    return up ? a.chunk + 1 : a.chunk - 1;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Transfer>> sent, received;
  for (int64_t s = 0; s < p; ++s)
    for (const Action &a : actions[s]) {
      bool send = a.kind == ActionKind::SendF || a.kind == ActionKind::SendB;
      bool recv = a.kind == ActionKind::RecvF || a.kind == ActionKind::RecvB;
      if (!send && !recv)
        continue;
      int64_t far = farChunk(a);
      if (far < 0 || far >= chunks)
        continue; // the play says so
      int64_t peer = shape.stageOf(far);
      bool forward = a.kind == ActionKind::SendF || a.kind == ActionKind::RecvF;
      Transfer t{forward, a.microBatch, std::min(a.chunk, far)};
      if (send)
        sent[{s, peer}].push_back(t);
      else
        received[{peer, s}].push_back(t);
    }
  for (auto &[link, receives] : received) {
    const std::vector<Transfer> &sends = sent[link];
    for (size_t i = 0; i < std::min(sends.size(), receives.size()); ++i) {
      if (sends[i] == receives[i])
        continue;
      auto text = [&](const Transfer &t, bool send) {
        auto [forward, m, low] = t;
        ActionKind kind =
            send ? (forward ? ActionKind::SendF : ActionKind::SendB)
                 : (forward ? ActionKind::RecvF : ActionKind::RecvB);
        int64_t chunk = send == forward ? low : low + 1;
        return describe({kind, m, chunk}, shape);
      };
      return fail(formatv(
          "stage {0} receives {1} as its transfer {2} from stage {3}, which "
          "sends {4} there: a stage must receive a peer's transfers in the "
          "order the peer sends them",
          link.second, text(receives[i], false), i, link.first,
          text(sends[i], true)));
    }
  }

  // Runs stage s's next action if it can: 1 ran, 0 waits, an error when the
  // action is wrong whatever the other stages do.
  auto step = [&](int64_t s) -> llvm::Expected<bool> {
    const Action &a = actions[s][next[s]];
    if (a.microBatch < 0 || a.microBatch >= n || a.chunk < 0 ||
        a.chunk >= chunks)
      return fail(where(s, a) + formatv(": no such micro-batch or chunk "
                                        "({0} micro-batches, {1} chunks)",
                                        n, chunks));
    if (shape.stageOf(a.chunk) != s)
      return fail(where(s, a) + formatv(": chunk {0} runs on stage {1}",
                                        a.chunk, shape.stageOf(a.chunk)));
    ChunkState &c = state[a.microBatch][a.chunk];
    int64_t m = a.microBatch, k = a.chunk;
    auto twice = [&]() { return fail(where(s, a) + ": runs twice"); };
    auto later = [&](const std::string &what) {
      return fail(where(s, a) + ": reads " + what +
                  ", which this stage has not computed before it");
    };
    auto compute = [&](double ready, double seconds) {
      double start = std::max(free[s], ready);
      free[s] = start + seconds;
      timeline.busy[s] += seconds;
      timeline.stages[s].push_back({a, start, free[s]});
      return free[s];
    };
    switch (a.kind) {
    case ActionKind::F: {
      if (c.forward != kNever)
        return twice();
      double ready = 0;
      if (k > 0 && !crosses(k - 1, k)) {
        ready = state[m][k - 1].forward;
        if (ready == kNever)
          return later(describe({ActionKind::F, m, k - 1}, shape));
      } else if (k > 0) {
        ready = c.gotF;
        if (ready == kNever)
          return fail(
              where(s, a) + ": reads its input before it is received (no " +
              describe({ActionKind::RecvF, m, k}, shape) + " before it)");
      }
      c.forward = compute(ready, costs.forward[k]);
      timeline.peakInFlight[s] = std::max(timeline.peakInFlight[s], ++held[s]);
      timeline.peakHeld[s] =
          std::max(timeline.peakHeld[s], held[s] + deferred[s]);
      return true;
    }
    case ActionKind::B:
    case ActionKind::BW: {
      if (c.backward != kNever)
        return twice();
      if (c.forward == kNever)
        return later(describe({ActionKind::F, m, k}, shape));
      double ready = c.forward;
      if (k + 1 < chunks && !crosses(k, k + 1)) {
        ready = std::max(ready, state[m][k + 1].backward);
        if (state[m][k + 1].backward == kNever)
          return later("the gradient of " +
                       describe({ActionKind::B, m, k + 1}, shape));
      } else if (k + 1 < chunks) {
        if (c.gotB == kNever)
          return fail(where(s, a) +
                      ": reads its output's gradient before it is received "
                      "(no " +
                      describe({ActionKind::RecvB, m, k}, shape) +
                      " before it)");
        ready = std::max(ready, c.gotB);
      }
      double seconds = costs.backwardInput[k];
      if (a.kind == ActionKind::BW)
        seconds += costs.backwardWeight[k];
      c.backward = compute(ready, seconds);
      c.split = a.kind == ActionKind::B;
      --held[s];
      if (a.kind == ActionKind::BW)
        c.weight = c.backward;
      else
        timeline.peakDeferredW[s] =
            std::max(timeline.peakDeferredW[s], ++deferred[s]);
      return true;
    }
    case ActionKind::W: {
      if (c.weight != kNever)
        return twice();
      if (c.backward == kNever || !c.split)
        return later(describe({ActionKind::B, m, k}, shape));
      c.weight = compute(c.backward, costs.backwardWeight[k]);
      --deferred[s];
      return true;
    }
    case ActionKind::Reduce: {
      if (!shape.reduces(k))
        return fail(where(s, a) + formatv(": chunk {0} has no reduction of "
                                          "its own (tg-pipeline-split gave it "
                                          "none)",
                                          k));
      if (reducedAt[k] != kNever)
        return twice();
      // The gradient sums are whole once every micro-batch's W has run.
      double ready = 0;
      for (int64_t mb = 0; mb < n; ++mb) {
        if (state[mb][k].weight == kNever) {
          // Named as the list names it: W where it splits the backward.
          bool split =
              llvm::is_contained(actions[s], Action{ActionKind::W, mb, k});
          return fail(
              where(s, a) + ": reduces the gradient sums before " +
              describe({split ? ActionKind::W : ActionKind::BW, mb, k}, shape) +
              " adds to them");
        }
        ready = std::max(ready, state[mb][k].weight);
      }
      reducedAt[k] = compute(
          ready, k < (int64_t)costs.reduce.size() ? costs.reduce[k] : 0.0);
      return true;
    }
    case ActionKind::SendF:
    case ActionKind::SendB: {
      bool fwd = a.kind == ActionKind::SendF;
      int64_t peer = fwd ? k + 1 : k - 1;
      if (peer < 0 || peer >= chunks || !crosses(k, peer))
        return fail(where(s, a) + ": chunk " + std::to_string(peer) +
                    (peer < 0 || peer >= chunks ? " does not exist"
                                                : " is on this stage"));
      double &sent = fwd ? c.sentF : c.sentB;
      double done = fwd ? c.forward : c.backward;
      if (sent != kNever)
        return twice();
      if (done == kNever)
        return later(
            describe({fwd ? ActionKind::F : ActionKind::B, m, k}, shape));
      // A send does not hold the stage.
      sent = std::max(free[s], done);
      return true;
    }
    case ActionKind::RecvF:
    case ActionKind::RecvB: {
      bool fwd = a.kind == ActionKind::RecvF;
      int64_t peer = fwd ? k - 1 : k + 1;
      if (peer < 0 || peer >= chunks || !crosses(k, peer))
        return fail(where(s, a) + ": chunk " + std::to_string(peer) +
                    (peer < 0 || peer >= chunks ? " does not exist"
                                                : " is on this stage"));
      double &got = fwd ? c.gotF : c.gotB;
      if (got != kNever)
        return twice();
      double sent = fwd ? state[m][peer].sentF : state[m][peer].sentB;
      if (sent == kNever) {
        waits[s] =
            where(s, a) + " waits for " +
            describe({fwd ? ActionKind::SendF : ActionKind::SendB, m, peer},
                     shape) +
            " on stage " + std::to_string(shape.stageOf(peer));
        return false;
      }
      // The receive holds the stage until the data is there.
      got = std::max(free[s], sent + costs.transfer);
      free[s] = got;
      return true;
    }
    }
    return false;
  };

  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < p; ++s) {
      while (next[s] < actions[s].size()) {
        llvm::Expected<bool> ran = step(s);
        if (!ran)
          return ran.takeError();
        if (!*ran)
          break;
        ++next[s];
        waits[s].clear();
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int64_t s = 0; s < p; ++s)
    if (next[s] < actions[s].size())
      stuck += (stuck.empty() ? "" : "; ") + waits[s];
  if (!stuck.empty())
    return fail("the schedule deadlocks: " + stuck);
  // Everything ran once: each compute action, each transfer's two ends.
  for (int64_t m = 0; m < n; ++m)
    for (int64_t k = 0; k < chunks; ++k) {
      const ChunkState &c = state[m][k];
      int64_t s = shape.stageOf(k);
      auto missing = [&](ActionKind kind) {
        return fail(formatv("stage {0} never runs {1}", s,
                            describe({kind, m, k}, shape)));
      };
      if (c.forward == kNever)
        return missing(ActionKind::F);
      if (c.backward == kNever)
        return missing(ActionKind::BW);
      if (c.weight == kNever)
        return missing(ActionKind::W);
      if (k + 1 < chunks && crosses(k, k + 1) && state[m][k + 1].gotF == kNever)
        return missing(ActionKind::SendF);
      if (k > 0 && crosses(k - 1, k) && state[m][k - 1].gotB == kNever)
        return missing(ActionKind::SendB);
    }
  for (int64_t k = 0; k < chunks; ++k)
    if (shape.reduces(k) && reducedAt[k] == kNever)
      return fail(formatv("stage {0} never runs {1}", shape.stageOf(k),
                          describe({ActionKind::Reduce, 0, k}, shape)));
  for (int64_t s = 0; s < p; ++s)
    timeline.makespan = std::max(timeline.makespan, free[s]);
  return timeline;
}

llvm::Expected<ChosenSchedule>
mlir::tg::pipeline::chooseSchedule(llvm::StringRef name, const Shape &shape,
                                   const Costs &costs) {
  std::vector<Schedule> candidates;
  if (name == "auto") {
    if (shape.virtualStages > 1)
      candidates = {Schedule::Interleaved};
    else if (shape.microBatches < shape.stages)
      candidates = {Schedule::OneFOneB};
    else
      candidates = {Schedule::OneFOneB, Schedule::ZeroBubbleH1};
  } else if (std::optional<Schedule> chosen = parseSchedule(name)) {
    candidates = {*chosen};
  } else {
    return fail(formatv("unknown schedule '{0}'; expected gpipe, 1f1b, "
                        "interleaved, zb-h1 or auto",
                        name));
  }
  std::optional<ChosenSchedule> best;
  for (Schedule s : candidates) {
    auto actions = buildSchedule(s, shape, costs);
    if (!actions)
      return fail(scheduleName(s) + ": " + toString(actions.takeError()));
    auto timeline = simulate(shape, *actions, costs);
    if (!timeline)
      return fail(scheduleName(s) + ": " + toString(timeline.takeError()));
    if (!best || timeline->makespan < best->timeline.makespan)
      best = ChosenSchedule{s, std::move(*actions), std::move(*timeline)};
  }
  return std::move(*best);
}

std::string mlir::tg::pipeline::drawSvg(const Shape &shape,
                                        const Timeline &timeline,
                                        llvm::StringRef title) {
  constexpr double kLeft = 70, kWidth = 900, kRow = 26, kTop = 40;
  double scale = timeline.makespan > 0 ? kWidth / timeline.makespan : 0;
  std::string text;
  llvm::raw_string_ostream os(text);
  double height = kTop + kRow * shape.stages + 30;
  os << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                "height=\"{1}\" font-family=\"sans-serif\" font-size=\"11\">\n",
                kLeft + kWidth + 90, height);
  os << "<title>" << title << "</title>\n";
  os << formatv("<text x=\"{0}\" y=\"20\" font-size=\"13\">{1}</text>\n", kLeft,
                title);
  auto colour = [](ActionKind kind) {
    switch (kind) {
    case ActionKind::F:
      return "#8fb8de";
    case ActionKind::B:
      return "#f4b183";
    case ActionKind::W:
      return "#a9d18e";
    case ActionKind::Reduce:
      return "#bfbfbf";
    default:
      return "#d9a6c8";
    }
  };
  for (int64_t s = 0; s < shape.stages; ++s) {
    double y = kTop + kRow * s;
    os << formatv("<text x=\"4\" y=\"{0}\">stage {1}</text>\n", y + 17, s);
    os << formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                  "fill=\"white\" stroke=\"#ccc\"/>\n",
                  kLeft, y + 2, kWidth, kRow - 4);
    for (const Timeline::Slot &slot : timeline.stages[s]) {
      double x = kLeft + slot.start * scale,
             w = std::max(0.5, (slot.end - slot.start) * scale);
      os << formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                    "fill=\"{4}\" stroke=\"#555\" stroke-width=\"0.5\"><title>"
                    "{5}</title></rect>\n",
                    x, y + 2, w, kRow - 4, colour(slot.action.kind),
                    describe(slot.action, shape));
      if (w >= 14)
        os << formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">{2}"
                      "</text>\n",
                      x + w / 2, y + 17,
                      slot.action.kind == ActionKind::Reduce
                          ? std::string("R")
                          : std::to_string(slot.action.microBatch));
    }
    os << formatv("<text x=\"{0}\" y=\"{1}\">idle {2:F1}%</text>\n",
                  kLeft + kWidth + 6, y + 17, 100 * timeline.idleFraction(s));
  }
  double y = kTop + kRow * shape.stages + 18;
  double x = kLeft;
  for (auto [kind, name] :
       {std::pair{ActionKind::F, "F forward"},
        std::pair{ActionKind::B, "B backward (inputs)"},
        std::pair{ActionKind::W, "W backward (weights)"},
        std::pair{ActionKind::BW, "BW backward (both)"},
        std::pair{ActionKind::Reduce, "R gradients over data"}}) {
    os << formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"10\" "
                  "fill=\"{2}\" stroke=\"#555\" stroke-width=\"0.5\"/>"
                  "<text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                  x, y - 9, colour(kind), x + 16, y, name);
    x += 150;
  }
  os << "</svg>\n";
  return text;
}

std::vector<int64_t> mlir::tg::pipeline::slotsOf(const Action &action,
                                                 const SlotUse &use) {
  std::vector<int64_t> out;
  auto function = [&](int role) {
    const std::vector<int64_t> &list =
        use.functionSlots[3 * action.chunk + role];
    out.insert(out.end(), list.begin(), list.end());
  };
  auto boundary = [&](const std::vector<std::vector<int64_t>> &moves,
                      int64_t b) {
    out.insert(out.end(), moves[b].begin(), moves[b].end());
  };
  switch (action.kind) {
  case ActionKind::F:
    function(0);
    break;
  case ActionKind::B:
    function(1);
    break;
  case ActionKind::W:
    function(2);
    break;
  case ActionKind::BW:
    function(1);
    function(2);
    break;
  case ActionKind::SendF:
    boundary(use.forward, action.chunk);
    break;
  case ActionKind::RecvF:
    boundary(use.forward, action.chunk - 1);
    break;
  case ActionKind::SendB:
    boundary(use.backward, action.chunk - 1);
    break;
  case ActionKind::RecvB:
    boundary(use.backward, action.chunk);
    break;
  case ActionKind::Reduce:
    break; // the step's gradient sums, no slot
  }
  return out;
}

std::vector<SlotPlan> mlir::tg::pipeline::planSlots(const Shape &shape,
                                                    const StageActions &actions,
                                                    const SlotUse &use) {
  int64_t m = shape.microBatches, slots = use.numSlots;
  std::vector<SlotPlan> plans;
  for (const std::vector<Action> &list : actions) {
    int64_t n = list.size();
    // Each (micro-batch, slot)'s first and last action, and whether a send
    // reads it.
    std::vector<std::vector<int64_t>> first(m, std::vector<int64_t>(slots, -1)),
        last = first, previous = first;
    std::vector<std::vector<char>> sent(m, std::vector<char>(slots, 0));
    std::vector<std::vector<int64_t>> touched(n);
    for (int64_t i = 0; i < n; ++i) {
      const Action &a = list[i];
      touched[i] = slotsOf(a, use);
      for (int64_t k : touched[i]) {
        if (first[a.microBatch][k] < 0)
          first[a.microBatch][k] = i;
        last[a.microBatch][k] = i;
        if (a.kind == ActionKind::SendF || a.kind == ActionKind::SendB)
          sent[a.microBatch][k] = 1;
      }
    }
    SlotPlan plan;
    plan.buffer.assign(m, std::vector<int64_t>(slots, -1));
    plan.count.assign(slots, 0);
    for (int64_t k = 0; k < slots; ++k) {
      std::vector<int64_t> order;
      for (int64_t mb = 0; mb < m; ++mb)
        if (first[mb][k] >= 0)
          order.push_back(mb);
      std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return first[x][k] < first[y][k];
      });
      std::vector<int64_t> occupant; // per buffer, its latest micro-batch
      for (int64_t mb : order) {
        size_t b = 0;
        while (b < occupant.size() && last[occupant[b]][k] >= first[mb][k])
          ++b;
        if (b == occupant.size())
          occupant.push_back(-1);
        previous[mb][k] = occupant[b];
        occupant[b] = mb;
        plan.buffer[mb][k] = b;
      }
      plan.count[k] = occupant.size();
    }
    plan.postAfter.assign(n, -2);
    plan.waitSends.assign(n, false);
    for (int64_t i = 0; i < n; ++i) {
      const Action &a = list[i];
      bool receives =
          a.kind == ActionKind::RecvF || a.kind == ActionKind::RecvB;
      if (receives)
        plan.postAfter[i] = -1;
      for (int64_t k : touched[i]) {
        int64_t before = previous[a.microBatch][k];
        if (first[a.microBatch][k] != i || before < 0)
          continue; // not where it takes over a buffer another one used
        if (sent[before][k])
          plan.waitSends[i] = true;
        if (receives)
          plan.postAfter[i] = std::max(plan.postAfter[i], last[before][k]);
      }
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

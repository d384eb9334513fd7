//===- PipelineSchedule.h - Pipeline schedules as action lists --*- C++ -*-===//
//
// A pipelined step runs C = P x V chunks of the model on P stages, chunk c
// on stage c mod P (V > 1: Megatron-LM's interleaving, V chunks a stage).
// Each stage runs an ordered list of actions on micro-batches: F (a
// chunk's forward), B (its backward for the inputs: the activation
// gradients), W (its backward for the weights), or BW (both at once, where
// the schedule does not split them), and the sends and receives that move
// activations forward and gradients back between stages.
//
// This file writes the lists of GPipe, 1F1B, interleaved 1F1B and ZB-H1
// (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024: W passes
// deferred into the bubble at 1F1B's memory), checks any list, and plays
// it on a timeline of per-chunk costs: the step time, each stage's idle
// fraction (the bubble) and its peak of micro-batches in flight (the
// activations it holds). A send does not block its stage; a receive
// blocks it until the send has run and the transfer has taken its time.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_PIPELINE_PIPELINESCHEDULE_H
#define TGC_PLANNING_PIPELINE_PIPELINESCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tg::pipeline {

enum class Schedule { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };

/// "gpipe", "1f1b", "interleaved", "zb-h1".
std::optional<Schedule> parseSchedule(llvm::StringRef name);
llvm::StringRef scheduleName(Schedule schedule);

/// A schedule as options name it: one of them, or auto (the fastest that
/// suits the shape, chooseSchedule's "auto").
enum class ScheduleChoice { Auto, GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
/// "auto" or a schedule's name; nothing for another.
std::optional<ScheduleChoice> parseScheduleChoice(llvm::StringRef name);
llvm::StringRef scheduleChoiceName(ScheduleChoice choice);

/// Reduce: a chunk's gradient sums reduced over the data axes once its
/// last W has run (its own function, so that the reduction of one chunk's
/// gradients starts while the stage still computes another's, or waits
/// for a peer).
enum class ActionKind { F, B, W, BW, SendF, RecvF, SendB, RecvB, Reduce };

/// One action of a stage. For the sends and receives, `chunk` is the chunk
/// whose output moves (SendF from chunk c to c + 1, SendB from c to c - 1)
/// or that receives it (RecvF into chunk c from c - 1, RecvB into c from
/// c + 1). A Reduce is once a step: its micro-batch is 0.
struct Action {
  ActionKind kind;
  int64_t microBatch;
  int64_t chunk;
  bool operator==(const Action &other) const {
    return kind == other.kind && microBatch == other.microBatch &&
           chunk == other.chunk;
  }
};

struct Shape {
  int64_t stages = 1, virtualStages = 1, microBatches = 1;
  /// Per chunk (empty: none), whether it has a reduction of its gradient
  /// sums over the data axes of its own (tg-pipeline-split's
  /// @chunkC_reduce), which its stage runs once a step after the chunk's
  /// last W: a Reduce action.
  std::vector<char> reduced;
  int64_t chunks() const { return stages * virtualStages; }
  int64_t stageOf(int64_t chunk) const { return chunk % stages; }
  bool reduces(int64_t chunk) const {
    return chunk >= 0 && chunk < (int64_t)reduced.size() && reduced[chunk];
  }
};

/// Seconds per micro-batch of each chunk's F, B and W, and of one transfer
/// between stages.
struct Costs {
  std::vector<double> forward, backwardInput, backwardWeight;
  /// Per chunk, its Reduce (empty: free).
  std::vector<double> reduce;
  double transfer = 0;
  /// Every chunk the same: F, B and W of `f`, `b` and `w` seconds.
  static Costs uniform(const Shape &shape, double f, double b, double w,
                       double transfer = 0);
};

/// Per stage, its actions in order.
using StageActions = std::vector<std::vector<Action>>;

/// The action lists of `schedule` for `shape`. ZB-H1 places its W passes
/// by playing the step on `costs` (they go where the stage would wait);
/// the others do not depend on the costs. Each chunk that `shape.reduces`
/// gets its Reduce right after its last W (and the send of its last
/// backward, which then goes first). An error says why the shape does
/// not suit the schedule (interleaving needs V > 1 and micro-batches a
/// multiple of P; the others V = 1).
llvm::Expected<StageActions>
buildSchedule(Schedule schedule, const Shape &shape, const Costs &costs);

struct Timeline {
  struct Slot {
    Action action;
    double start = 0, end = 0;
  };
  /// Per stage, its compute actions as they ran.
  std::vector<std::vector<Slot>> stages;
  double makespan = 0;
  /// Per stage: the seconds it computed; the most micro-batches whose
  /// activations it held at once for their backward (F run, its B or BW
  /// not yet); and the most W passes it deferred at once (B run, W not
  /// yet: each keeps the inputs of the chunk's weight-gradient products
  /// and their output gradients, a part of the activations).
  std::vector<double> busy;
  std::vector<int64_t> peakInFlight, peakDeferredW;
  /// The most of both at once: micro-batches in flight and W deferred.
  std::vector<int64_t> peakHeld;
  /// The fraction of the step stage `s` stands idle: its bubble.
  double idleFraction(int64_t s) const {
    return makespan > 0 ? 1 - busy[s] / makespan : 0;
  }
};

/// Checks `actions` and plays them on `costs`. Every micro-batch has one F
/// and either one BW or one B and one W on each chunk, on the chunk's
/// stage; every transfer between stages is one send and one receive; and
/// the order completes; a chunk that `shape.reduces` has one Reduce, after
/// every one of its W passes: an error names the stage, the action that
/// cannot run and what it waits for (an input received later on the same stage,
/// a gradient not yet computed, a send that never comes or a cycle of
/// waiting stages).
llvm::Expected<Timeline>
simulate(const Shape &shape, const StageActions &actions, const Costs &costs);

/// The schedule `name` names ("gpipe", "1f1b", "interleaved", "zb-h1"), or
/// for "auto" the one of those that suit the shape (interleaved with
/// V > 1; else 1F1B, and ZB-H1 where the micro-batches fill the stages)
/// whose lists play fastest on `costs`: the schedule, its lists and their
/// play. An error names an unknown schedule, or the schedule and why it
/// does not take the shape.
struct ChosenSchedule {
  Schedule schedule;
  StageActions actions;
  Timeline timeline;
};
llvm::Expected<ChosenSchedule>
chooseSchedule(llvm::StringRef name, const Shape &shape, const Costs &costs);

/// What moves where: the slots (values crossing functions, numbered) each
/// chunk's F, B and W read or write (`functionSlots[3 * c + role]`, role 0
/// F, 1 B, 2 W), and those each boundary between chunks b and b + 1 moves
/// forward (`forward[b]`, after F of chunk b) and backward (`backward[b]`,
/// after B of chunk b + 1).
struct SlotUse {
  std::vector<std::vector<int64_t>> functionSlots;
  std::vector<std::vector<int64_t>> forward, backward;
  int64_t numSlots = 0;
};

/// How one stage keeps its slots under its action list: each micro-batch's
/// buffer of each slot (its micro-batches share a slot's buffers where
/// their uses, first action to last, do not overlap: the fewest buffers
/// the list allows, as interval colouring gives), and for each action when
/// its receives can be posted (after which action; -1 at the start of the
/// step, -2 for an action that receives nothing) and whether the sends in
/// flight must finish first (it reuses a buffer a send still reads).
struct SlotPlan {
  std::vector<std::vector<int64_t>> buffer; ///< [micro-batch][slot], -1 none
  std::vector<int64_t> count;               ///< buffers per slot
  std::vector<int64_t> postAfter;           ///< per action
  std::vector<bool> waitSends;              ///< per action
};

/// The slots action `action` reads, writes, sends or receives.
std::vector<int64_t> slotsOf(const Action &action, const SlotUse &use);

/// Each stage's plan for `actions` (checked already).
std::vector<SlotPlan> planSlots(const Shape &shape, const StageActions &actions,
                                const SlotUse &use);

/// "F3", "B3", "W3", "BW3", "send-F3", "recv-F3", ... with "@c" for the
/// chunk when the stages hold more than one (V > 1); "reduce" (or
/// "reduce@c") for a Reduce.
std::string describe(const Action &action, const Shape &shape);

/// The action `text` names on stage `stage` (describe's spelling; without
/// "@c" the chunk is the stage's only one), or an error that quotes it.
llvm::Expected<Action> parseAction(llvm::StringRef text, const Shape &shape,
                                   int64_t stage);

/// One line per stage: "stage 0: F0 send-F0 F1 send-F1 recv-B0 BW0 ...".
std::string printActions(const StageActions &actions, const Shape &shape);

/// The timeline as an SVG picture: one row per stage, a box per compute
/// action (F, B, W and BW in their colours, numbered by micro-batch), the
/// idle time white, and each stage's idle fraction at the end of its row.
std::string drawSvg(const Shape &shape, const Timeline &timeline,
                    llvm::StringRef title);

} // namespace mlir::tg::pipeline

#endif // TGC_PLANNING_PIPELINE_PIPELINESCHEDULE_H

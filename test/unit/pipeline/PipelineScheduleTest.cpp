//===- PipelineScheduleTest.cpp - Schedules, their checks, their bubbles --===//
//
// Every schedule plays through at every shape it accepts, with the peaks
// and bubbles the literature gives (GPipe and 1F1B: (P - 1) / (M + P - 1)
// idle; 1F1B holds P - s micro-batches on stage s, GPipe all M; ZB-H1 at
// most 1F1B's, with its deferred W passes within 1F1B's first-stage peak,
// and at most half its bubble; interleaving less bubble than 1F1B), and
// every broken list is refused with a message that names the
// stage, the action and what it waits for.
//
//===----------------------------------------------------------------------===//

#include "planning/pipeline/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace mlir::tg::pipeline;

namespace {

Timeline play(Schedule schedule, const Shape &shape, const Costs &costs) {
  auto actions = buildSchedule(schedule, shape, costs);
  EXPECT_TRUE(static_cast<bool>(actions))
      << llvm::toString(actions.takeError());
  auto timeline = simulate(shape, *actions, costs);
  EXPECT_TRUE(static_cast<bool>(timeline))
      << llvm::toString(timeline.takeError()) << "\n"
      << printActions(*actions, shape);
  return *timeline;
}

std::string errorOf(const Shape &shape, const StageActions &actions,
                    const Costs &costs) {
  auto timeline = simulate(shape, actions, costs);
  if (timeline)
    return "";
  return llvm::toString(timeline.takeError());
}

StageActions listOf(Schedule schedule, const Shape &shape,
                    const Costs &costs) {
  return llvm::cantFail(buildSchedule(schedule, shape, costs));
}

TEST(PipelineSchedule, GPipeAnd1F1BHaveTheTextbookBubbleAndPeaks) {
  for (int64_t p : {1, 2, 4})
    for (int64_t m : {1, 2, 4, 8}) {
      Shape shape{p, 1, m};
      Costs costs = Costs::uniform(shape, 1, 1, 1);
      for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
        Timeline t = play(schedule, shape, costs);
        SCOPED_TRACE(scheduleName(schedule).str() + " P=" +
                     std::to_string(p) + " M=" + std::to_string(m));
        EXPECT_DOUBLE_EQ(t.makespan, 3.0 * (m + p - 1));
        for (int64_t s = 0; s < p; ++s) {
          EXPECT_DOUBLE_EQ(t.busy[s], 3.0 * m);
          EXPECT_NEAR(t.idleFraction(s), double(p - 1) / (m + p - 1), 1e-12);
          EXPECT_EQ(t.peakInFlight[s], schedule == Schedule::GPipe
                                           ? m
                                           : std::min(p - s, m));
        }
      }
    }
}

TEST(PipelineSchedule, ZeroBubbleH1KeepsTheMemoryAndHalvesTheBubble) {
  for (int64_t p : {2, 4})
    for (int64_t m : {p, 2 * p, 4 * p}) {
      Shape shape{p, 1, m};
      Costs costs = Costs::uniform(shape, 1, 1, 1);
      Timeline zb = play(Schedule::ZeroBubbleH1, shape, costs);
      Timeline ofob = play(Schedule::OneFOneB, shape, costs);
      SCOPED_TRACE("P=" + std::to_string(p) + " M=" + std::to_string(m));
      EXPECT_LE(zb.makespan, ofob.makespan);
      for (int64_t s = 0; s < p; ++s) {
        EXPECT_LE(zb.peakInFlight[s], ofob.peakInFlight[s]);
        EXPECT_LE(zb.peakHeld[s], p);
        EXPECT_LE(zb.idleFraction(s), 0.5 * ofob.idleFraction(0) + 1e-12);
      }
    }
}

TEST(PipelineSchedule, ZeroBubbleH1PlaysOnUnevenCostsAndTransfers) {
  Shape shape{4, 1, 6};
  Costs costs = Costs::uniform(shape, 1.0, 1.5, 0.8, 0.2);
  costs.forward[3] = 2.0; // a slow last stage (the head and the loss)
  Timeline zb = play(Schedule::ZeroBubbleH1, shape, costs);
  Timeline ofob = play(Schedule::OneFOneB, shape, costs);
  EXPECT_LT(zb.makespan, ofob.makespan);
}

TEST(PipelineSchedule, ZeroBubbleH1PlaysOnFreeBackwardsAndSlowSends) {
  // A step whose backward sits on the first stage's W (the other stages'
  // B and W cost nothing) behind sends slower than the forwards: the
  // greedy placement must still finish.
  Shape shape{4, 1, 16};
  Costs costs;
  costs.forward = {14.6e-3, 14.4e-3, 14.4e-3, 15.6e-3};
  costs.backwardInput = {0, 0, 0, 0};
  costs.backwardWeight = {112.8e-3, 0, 0, 0};
  costs.transfer = 30.5e-3;
  Timeline zb = play(Schedule::ZeroBubbleH1, shape, costs);
  EXPECT_GT(zb.makespan, 0);
}

TEST(PipelineSchedule, SlotBuffersFollowTheSchedule) {
  // Two chunks: chunk 0's F keeps slot 0 for its W and sends slot 1;
  // chunk 1's B sends slot 2 back, which chunk 0's W reads; slot 3 stays
  // on the last stage between its F and its B.
  SlotUse use;
  use.functionSlots = {{0, 1}, {}, {0, 2}, {1, 3}, {3, 2}, {3}};
  use.forward = {{1}};
  use.backward = {{2}};
  use.numSlots = 4;
  Shape shape{2, 1, 4};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  for (Schedule schedule :
       {Schedule::GPipe, Schedule::OneFOneB, Schedule::ZeroBubbleH1}) {
    auto actions = buildSchedule(schedule, shape, costs);
    ASSERT_TRUE(static_cast<bool>(actions));
    std::vector<SlotPlan> plans = planSlots(shape, *actions, use);
    ASSERT_EQ(plans.size(), 2u);
    // Stage 0 keeps each micro-batch's activation from its F to its W:
    // GPipe all 4 at once, 1F1B and ZB-H1 P = 2.
    EXPECT_EQ(plans[0].count[0], schedule == Schedule::GPipe ? 4 : 2)
        << scheduleName(schedule).str();
    EXPECT_EQ(plans[0].count[3], 0); // the last stage's alone
    EXPECT_GE(plans[1].count[3], 1);
    for (const SlotPlan &plan : plans) {
      // No two micro-batches share a buffer while both use it.
      for (int64_t k = 0; k < use.numSlots; ++k)
        for (int64_t m = 0; m < shape.microBatches; ++m)
          EXPECT_LT(plan.buffer[m][k], std::max<int64_t>(plan.count[k], 0));
    }
    // The first receives are posted at the step's start.
    const std::vector<Action> &stage1 = (*actions)[1];
    ASSERT_EQ(stage1.front().kind, ActionKind::RecvF);
    EXPECT_EQ(plans[1].postAfter.front(), -1);
    for (size_t i = 0; i < stage1.size(); ++i) {
      if (stage1[i].kind != ActionKind::RecvF &&
          stage1[i].kind != ActionKind::RecvB) {
        EXPECT_EQ(plans[1].postAfter[i], -2);
      }
    }
  }
}

TEST(PipelineSchedule, InterleavingShrinksTheBubble) {
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        // The same model in P x V chunks: each a V-th of a stage's work.
        Shape shape{p, v, m};
        Costs costs = Costs::uniform(shape, 1.0 / v, 1.0 / v, 1.0 / v);
        Timeline t = play(Schedule::Interleaved, shape, costs);
        Shape flat{p, 1, m};
        Timeline ofob =
            play(Schedule::OneFOneB, flat, Costs::uniform(flat, 1, 1, 1));
        SCOPED_TRACE("P=" + std::to_string(p) + " V=" + std::to_string(v) +
                     " M=" + std::to_string(m));
        EXPECT_LT(t.makespan, ofob.makespan);
        for (int64_t s = 0; s < p; ++s)
          EXPECT_NEAR(t.busy[s], 3.0 * m, 1e-9);
      }
}

TEST(PipelineSchedule, PrintsEachStagesList) {
  Shape shape{2, 1, 3};
  EXPECT_EQ(printActions(listOf(Schedule::OneFOneB, shape,
                                Costs::uniform(shape, 1, 1, 1)),
                         shape),
            "stage 0: F0 send-F0 F1 send-F1 recv-B0 BW0 F2 send-F2 recv-B1 "
            "BW1 recv-B2 BW2\n"
            "stage 1: recv-F0 F0 BW0 send-B0 recv-F1 F1 BW1 send-B1 recv-F2 "
            "F2 BW2 send-B2\n");
  Shape interleaved{2, 2, 2};
  std::string text = printActions(
      listOf(Schedule::Interleaved, interleaved,
             Costs::uniform(interleaved, 1, 1, 1)),
      interleaved);
  EXPECT_NE(text.find("stage 0: F0@0 send-F0@0 F1@0 send-F1@0 recv-F0@2 "
                      "F0@2"),
            std::string::npos)
      << text;
}

TEST(PipelineSchedule, ShapesASchedulesDoesNotTakeAreRefused) {
  auto error = [](Schedule schedule, Shape shape) {
    auto actions =
        buildSchedule(schedule, shape, Costs::uniform(shape, 1, 1, 1));
    return actions ? std::string() : llvm::toString(actions.takeError());
  };
  EXPECT_NE(error(Schedule::Interleaved, {2, 1, 4}).find(
                "--virtual-stages must be at least 2"),
            std::string::npos);
  EXPECT_NE(error(Schedule::Interleaved, {4, 2, 6}).find(
                "6 micro-batches are not a multiple of 4"),
            std::string::npos);
  EXPECT_NE(error(Schedule::GPipe, {2, 2, 4}).find(
                "--virtual-stages=2 needs the interleaved schedule"),
            std::string::npos);
}

TEST(PipelineSchedule, ABackwardBeforeItsForwardIsRefused) {
  Shape shape{2, 1, 2};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions actions = listOf(Schedule::OneFOneB, shape, costs);
  // Stage 1: recv-F0 F0 BW0 ...: run BW0 first.
  std::swap(actions[1][1], actions[1][2]);
  EXPECT_EQ(errorOf(shape, actions, costs),
            "stage 1: BW0: reads F0, which this stage has not computed "
            "before it");
}

TEST(PipelineSchedule, AWeightGradientBeforeItsInputGradientIsRefused) {
  Shape shape{2, 1, 2};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions actions = listOf(Schedule::ZeroBubbleH1, shape, costs);
  auto &last = actions[1];
  auto b = std::find(last.begin(), last.end(), Action{ActionKind::B, 0, 1});
  auto w = std::find(last.begin(), last.end(), Action{ActionKind::W, 0, 1});
  ASSERT_TRUE(b != last.end() && w != last.end());
  std::iter_swap(b, w);
  EXPECT_EQ(errorOf(shape, actions, costs),
            "stage 1: W0: reads B0, which this stage has not computed "
            "before it");
}

TEST(PipelineSchedule, WaitingInACycleIsADeadlock) {
  Shape shape{2, 1, 1};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  // Stage 0 waits for the gradient before it sends its activation.
  StageActions actions = {
      {{ActionKind::F, 0, 0},
       {ActionKind::RecvB, 0, 0},
       {ActionKind::SendF, 0, 0},
       {ActionKind::BW, 0, 0}},
      {{ActionKind::RecvF, 0, 1},
       {ActionKind::F, 0, 1},
       {ActionKind::BW, 0, 1},
       {ActionKind::SendB, 0, 1}}};
  EXPECT_EQ(errorOf(shape, actions, costs),
            "the schedule deadlocks: stage 0: recv-B0 waits for send-B0 on "
            "stage 1; stage 1: recv-F0 waits for send-F0 on stage 0");
}

TEST(PipelineSchedule, ReceivesOutOfTheSendersOrderAreRefused) {
  // Stage 1 takes micro-batch 1 first: the play alone would run it, but
  // NCCL pairs a peer's sends with this stage's receives in order, so the
  // first receive would get micro-batch 0's activation.
  Shape shape{2, 1, 2};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions actions = listOf(Schedule::GPipe, shape, costs);
  std::vector<Action> &last = actions[1];
  auto f0 =
      std::find(last.begin(), last.end(), Action{ActionKind::RecvF, 0, 1});
  auto f1 =
      std::find(last.begin(), last.end(), Action{ActionKind::RecvF, 1, 1});
  ASSERT_TRUE(f0 + 2 == f1);
  std::rotate(f0, f1, f1 + 2);
  EXPECT_EQ(errorOf(shape, actions, costs),
            "stage 1 receives recv-F1 as its transfer 0 from stage 0, which "
            "sends send-F0 there: a stage must receive a peer's transfers in "
            "the order the peer sends them");
}

TEST(PipelineSchedule, AMissingSendIsADeadlockAndAMissingActionAnError) {
  Shape shape{2, 1, 2};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions noSend = listOf(Schedule::GPipe, shape, costs);
  noSend[0].erase(std::find(noSend[0].begin(), noSend[0].end(),
                            Action{ActionKind::SendF, 1, 0}));
  EXPECT_EQ(errorOf(shape, noSend, costs),
            "the schedule deadlocks: stage 0: recv-B0 waits for send-B0 on "
            "stage 1; stage 1: recv-F1 waits for send-F1 on stage 0");
  StageActions noBackward = listOf(Schedule::GPipe, shape, costs);
  noBackward[0].pop_back(); // BW1 of stage 0 (after recv-B1)
  EXPECT_EQ(errorOf(shape, noBackward, costs), "stage 0 never runs BW1");
}

TEST(PipelineSchedule, TwiceOrOnTheWrongStageIsRefused) {
  Shape shape{2, 1, 1};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions twice = listOf(Schedule::GPipe, shape, costs);
  twice[0].insert(twice[0].begin() + 1, {ActionKind::F, 0, 0});
  EXPECT_EQ(errorOf(shape, twice, costs), "stage 0: F0: runs twice");
  StageActions wrong = listOf(Schedule::GPipe, shape, costs);
  wrong[0].insert(wrong[0].begin(), {ActionKind::F, 0, 1});
  EXPECT_EQ(errorOf(shape, wrong, costs),
            "stage 0: F0: chunk 1 runs on stage 1");
}

TEST(PipelineSchedule, DrawsOneBoxPerComputeAction) {
  Shape shape{2, 1, 2};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  Timeline t = play(Schedule::ZeroBubbleH1, shape, costs);
  std::string svg = drawSvg(shape, t, "zb-h1, 2 stages, 2 micro-batches");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  size_t boxes = 0;
  for (size_t at = svg.find("<title>W"); at != std::string::npos;
       at = svg.find("<title>W", at + 1))
    ++boxes;
  EXPECT_EQ(boxes, 4u); // W0 and W1 on each stage
  EXPECT_NE(svg.find("idle"), std::string::npos);
}

TEST(PipelineSchedule, ParsesWhatItPrints) {
  // Every action of an interleaved list, printed and read back.
  Shape shape{2, 2, 4};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  auto actions = buildSchedule(Schedule::Interleaved, shape, costs);
  ASSERT_TRUE(static_cast<bool>(actions));
  for (auto [s, list] : llvm::enumerate(*actions))
    for (const Action &a : list) {
      auto read = parseAction(describe(a, shape), shape, s);
      ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
      EXPECT_EQ(*read, a);
    }
  // One chunk a stage: no "@c", the chunk is the stage.
  Shape plain{2, 1, 4};
  auto w = parseAction("recv-B3", plain, 1);
  ASSERT_TRUE(static_cast<bool>(w));
  EXPECT_EQ(*w, (Action{ActionKind::RecvB, 3, 1}));
}

TEST(PipelineSchedule, AWrongActionIsNamed) {
  Shape plain{2, 1, 4};
  for (const char *text : {"F4", "X1", "F", "BW-1", "F1@1"}) {
    auto read = parseAction(text, plain, 0);
    ASSERT_FALSE(static_cast<bool>(read)) << text;
    std::string why = llvm::toString(read.takeError());
    EXPECT_NE(why.find(std::string("'") + text + "'"), std::string::npos)
        << why;
  }
  // Several chunks a stage: the chunk must be named and be this stage's.
  Shape interleaved{2, 2, 4};
  auto bare = parseAction("F0", interleaved, 0);
  EXPECT_FALSE(static_cast<bool>(bare));
  llvm::consumeError(bare.takeError());
  auto other = parseAction("F0@1", interleaved, 0);
  EXPECT_FALSE(static_cast<bool>(other));
  llvm::consumeError(other.takeError());
}

} // namespace

TEST(PipelineSchedule, EachReducedChunkReducesAfterItsLastWeightPass) {
  // Every schedule, every chunk with a reduction: one Reduce, after the
  // chunk's last W (and the send of that backward), and the play waits
  // for every W of the chunk before it.
  struct Case {
    Schedule schedule;
    Shape shape;
  };
  for (Case c :
       {Case{Schedule::GPipe, {2, 1, 3}}, Case{Schedule::OneFOneB, {4, 1, 2}},
        Case{Schedule::ZeroBubbleH1, {2, 1, 4}},
        Case{Schedule::Interleaved, {2, 2, 4}}}) {
    Shape shape = c.shape;
    shape.reduced.assign(shape.chunks(), 1);
    Costs costs = Costs::uniform(shape, 1, 1, 1);
    costs.reduce.assign(shape.chunks(), 0.5);
    StageActions actions = listOf(c.schedule, shape, costs);
    SCOPED_TRACE(scheduleName(c.schedule).str());
    for (int64_t k = 0; k < shape.chunks(); ++k) {
      const std::vector<Action> &list = actions[shape.stageOf(k)];
      auto r =
          std::find(list.begin(), list.end(), Action{ActionKind::Reduce, 0, k});
      ASSERT_TRUE(r != list.end()) << printActions(actions, shape);
      EXPECT_EQ(std::count(list.begin(), list.end(), *r), 1);
      for (auto later = r + 1; later != list.end(); ++later)
        EXPECT_FALSE(later->chunk == k && (later->kind == ActionKind::W ||
                                           later->kind == ActionKind::BW ||
                                           later->kind == ActionKind::SendB))
            << describe(*later, shape) << " after reduce";
    }
    Timeline t = play(c.schedule, shape, costs);
    // A Reduce is a box of its own on the stage's row.
    for (int64_t s = 0; s < shape.stages; ++s)
      EXPECT_NEAR(t.busy[s],
                  3.0 * shape.microBatches * shape.virtualStages +
                      0.5 * shape.virtualStages,
                  1e-9);
    // Read back as printed.
    for (auto [s, list] : llvm::enumerate(actions))
      for (const Action &a : list) {
        auto read = parseAction(describe(a, shape), shape, s);
        ASSERT_TRUE(static_cast<bool>(read))
            << llvm::toString(read.takeError());
        EXPECT_EQ(*read, a);
      }
  }
  // Without reductions the lists are as before.
  Shape plain{2, 1, 2};
  StageActions none =
      listOf(Schedule::OneFOneB, plain, Costs::uniform(plain, 1, 1, 1));
  for (const std::vector<Action> &list : none)
    for (const Action &a : list)
      EXPECT_NE(a.kind, ActionKind::Reduce);
}

TEST(PipelineSchedule, AReduceBeforeAWeightPassOrMissingIsRefused) {
  Shape shape{2, 1, 2};
  shape.reduced = {1, 1};
  Costs costs = Costs::uniform(shape, 1, 1, 1);
  StageActions early = listOf(Schedule::ZeroBubbleH1, shape, costs);
  // Stage 1's reduce first: before any W has added to the sums.
  auto &last = early[1];
  auto r =
      std::find(last.begin(), last.end(), Action{ActionKind::Reduce, 0, 1});
  ASSERT_TRUE(r != last.end());
  std::rotate(last.begin(), r, r + 1);
  EXPECT_EQ(errorOf(shape, early, costs),
            "stage 1: reduce: reduces the gradient sums before W0 adds to "
            "them");
  StageActions missing = listOf(Schedule::OneFOneB, shape, costs);
  missing[0].erase(std::find(missing[0].begin(), missing[0].end(),
                             Action{ActionKind::Reduce, 0, 0}));
  EXPECT_EQ(errorOf(shape, missing, costs), "stage 0 never runs reduce");
  // A chunk with no reduction of its own.
  Shape without{2, 1, 2};
  without.reduced = {1, 0};
  StageActions extra = listOf(Schedule::OneFOneB, without, costs);
  extra[1].push_back({ActionKind::Reduce, 0, 1});
  EXPECT_EQ(errorOf(without, extra, costs),
            "stage 1: reduce: chunk 1 has no reduction of its own "
            "(tg-pipeline-split gave it none)");
  // Spelled without a micro-batch; "reduce0" is no action.
  auto bad = parseAction("reduce0", shape, 0);
  EXPECT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());
}

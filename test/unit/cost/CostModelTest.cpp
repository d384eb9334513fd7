//===- CostModelTest.cpp - The cost model's pipeline terms -----*- C++ -*-===//

#include "planning/cost/CostModel.h"

#include <gtest/gtest.h>

using namespace mlir::tg;

namespace {

double inFlight(int64_t stage, int64_t stages, int64_t virtualStages,
                int64_t microBatches) {
  return llvm::cantFail(
             playPipeline(stages, virtualStages, microBatches,
                          virtualStages > 1 ? "interleaved" : "1f1b"))
      .inFlight[stage];
}

// 1F1B: stage s of P holds min(P - s, K) micro-batches' activations, and
// the step is K + P - 1 micro-batch slots.
TEST(PlayPipeline, OneForwardOneBackward) {
  EXPECT_EQ(inFlight(0, 4, 1, 16), 4);
  EXPECT_EQ(inFlight(3, 4, 1, 16), 1);
  EXPECT_EQ(inFlight(0, 4, 1, 2), 2);
  EXPECT_EQ(inFlight(0, 1, 1, 16), 1);
  EXPECT_DOUBLE_EQ(llvm::cantFail(playPipeline(4, 1, 16, "1f1b")).slots,
                   16 + 3);
}

// ZB-H1: the bubble is a third of 1F1B's ((P - 1) / 3 slots: a unit of F,
// B or W each), the activations held at most 1F1B's; auto picks it where
// the micro-batches fill the stages, 1F1B where they do not; GPipe holds
// all K.
TEST(PlayPipeline, TheScheduleIsPriced) {
  PipelinePlay zb = llvm::cantFail(playPipeline(4, 1, 16, "zb-h1"));
  EXPECT_DOUBLE_EQ(zb.slots, 16 + 1);
  EXPECT_LE(zb.inFlight[0], 4);
  EXPECT_DOUBLE_EQ(llvm::cantFail(playPipeline(4, 1, 16)).slots, 16 + 1);
  EXPECT_DOUBLE_EQ(llvm::cantFail(playPipeline(4, 1, 2)).slots, 2 + 3);
  EXPECT_EQ(llvm::cantFail(playPipeline(4, 1, 16, "gpipe")).inFlight[0], 16);
  auto unknown = playPipeline(4, 1, 16, "pipedream");
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("unknown schedule"),
            std::string::npos);
}

// Interleaved (Megatron-LM's schedule): the warm-up's (P - s - 1) * 2 +
// (V - 1) * P chunks plus the one in flight, each a V-th of the stage's
// layers, at most K V chunks; the bubble (P - 1) / V slots; micro-batches
// a multiple of P.
TEST(PlayPipeline, Interleaved) {
  EXPECT_DOUBLE_EQ(inFlight(0, 4, 20, 64), (3 * 2 + 19 * 4 + 1) / 20.0);
  EXPECT_DOUBLE_EQ(inFlight(3, 4, 20, 64), (19 * 4 + 1) / 20.0);
  EXPECT_DOUBLE_EQ(inFlight(0, 4, 2, 4), 8 / 2.0); // all K V chunks
  EXPECT_NEAR(llvm::cantFail(playPipeline(4, 2, 8)).slots, 8 + 3 / 2.0,
              1e-12);
  auto refused = playPipeline(4, 2, 1, "interleaved");
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError())
                .find("1 micro-batches are not a multiple of 4"),
            std::string::npos);
}

ClusterSpec twoLevels() {
  ClusterSpec spec;
  spec.devicesPerNode = 8;
  spec.node.bandwidth = 400e9;
  spec.node.latency = 1e-6;
  LinkSpec network;
  network.bandwidth = 50e9;
  network.latency = 3e-6;
  spec.network = network;
  return spec;
}

// A stage's neighbour is the mesh's device count away: within the node
// while P stages of the mesh fit in one, over the network after.
TEST(StageSend, LinkTheStagesCross) {
  ClusterSpec spec = twoLevels();
  CostModel cost(spec, MeshOp()); // a mesh of one device
  EXPECT_EQ(cost.stageSendSeconds(1e6, 1), 0);
  EXPECT_DOUBLE_EQ(cost.stageSendSeconds(1e6, 8), 1e-6 + 1e6 / 400e9);
  EXPECT_DOUBLE_EQ(cost.stageSendSeconds(1e6, 16), 3e-6 + 1e6 / 50e9);
}

} // namespace

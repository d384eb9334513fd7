//===- CostModelTest.cpp - The cost model's pipeline terms -----*- C++ -*-===//

#include "compiler/cost/CostModel.h"

#include <gtest/gtest.h>

using namespace mlir::tg;

namespace {

// 1F1B: stage s of P holds min(P - s, K) micro-batches' activations.
TEST(PipelineInFlight, OneForwardOneBackward) {
  EXPECT_EQ(pipelineInFlight(0, 4, 1, 16), 4);
  EXPECT_EQ(pipelineInFlight(3, 4, 1, 16), 1);
  EXPECT_EQ(pipelineInFlight(0, 4, 1, 2), 2);
  EXPECT_EQ(pipelineInFlight(0, 1, 1, 16), 1);
}

// Interleaved (Megatron-LM's schedule): the warm-up's (P - s - 1) * 2 +
// (V - 1) * P chunks plus the one in flight, each a V-th of the stage's
// layers, at most K V chunks.
TEST(PipelineInFlight, Interleaved) {
  EXPECT_DOUBLE_EQ(pipelineInFlight(0, 4, 20, 64), (3 * 2 + 19 * 4 + 1) / 20.0);
  EXPECT_DOUBLE_EQ(pipelineInFlight(3, 4, 20, 64), (19 * 4 + 1) / 20.0);
  EXPECT_DOUBLE_EQ(pipelineInFlight(0, 4, 2, 1), 2 / 2.0);
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

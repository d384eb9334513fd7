//===- MeshLayoutTest.cpp - Where a process sits in an elastic mesh -------===//
//
// An elastic axis (tgc --mesh=data=auto) takes its size from the world size
// at launch, whichever launcher set it (mpirun or RANK/WORLD_SIZE): the
// layout is a function of the rank and the world size alone.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/Model.h"
#include "runtime/train/MeshLayout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace tgc;

namespace {

/// A model with no tensors on the mesh `axes` (the batch over "data").
struct MeshModel {
  explicit MeshModel(std::vector<MeshAxisDesc> axes) : axes(std::move(axes)) {
    model.name = "mesh";
    model.numMeshAxes = static_cast<int32_t>(this->axes.size());
    model.mesh = this->axes.data();
  }
  std::vector<MeshAxisDesc> axes;
  ModelDesc model{};
};

std::string errorOf(const ModelDesc &model, int rank, int world) {
  try {
    MeshLayout(model, rank, world);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(ElasticMesh, DataAxisTakesTheWorldSize) {
  MeshModel m({{"data", 2, 1, 1}});
  for (int world : {1, 2, 3, 4, 7}) {
    for (int rank = 0; rank < world; ++rank) {
      MeshLayout mesh(m.model, rank, world);
      EXPECT_EQ(mesh.sizes(), std::vector<int64_t>{world});
      EXPECT_EQ(mesh.replicas(), world);
      EXPECT_EQ(mesh.replica(), rank);
    }
  }
}

TEST(ElasticMesh, BesideAFixedTensorParallelAxis) {
  MeshModel m({{"data", 2, 1, 1}, {"tp", 2, 0, 0}});
  // 6 processes: 3 replicas of 2 tensor-parallel peers, tp fastest.
  for (int rank = 0; rank < 6; ++rank) {
    MeshLayout mesh(m.model, rank, 6);
    EXPECT_EQ(mesh.sizes(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(mesh.replicas(), 3);
    EXPECT_EQ(mesh.replica(), rank / 2);
  }
  EXPECT_EQ(MeshLayout(m.model, 0, 2).sizes(), (std::vector<int64_t>{1, 2}));
}

TEST(ElasticMesh, WorldThatTheFixedAxesDoNotDivideIsAnError) {
  MeshModel m({{"data", 2, 1, 1}, {"tp", 2, 0, 0}});
  std::string error = errorOf(m.model, 0, 3);
  EXPECT_NE(error.find("data=auto,tp=2"), std::string::npos) << error;
  EXPECT_NE(error.find("multiple of 2 processes"), std::string::npos) << error;
  EXPECT_NE(error.find("has 3"), std::string::npos) << error;
}

TEST(ElasticMesh, FixedMeshStillNeedsItsProcessCount) {
  MeshModel m({{"data", 2, 1, 0}});
  std::string error = errorOf(m.model, 0, 4);
  EXPECT_NE(error.find("compiled for mesh data=2 (2 processes)"),
            std::string::npos)
      << error;
}

} // namespace

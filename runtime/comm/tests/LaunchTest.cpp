//===- LaunchTest.cpp - Launch detection from the environment ---*- C++ -*-===//

#include "runtime/comm/Launch.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace tgc;
using namespace tgc::comm;

namespace {

LaunchInfo detect(const std::map<std::string, std::string> &vars) {
  return detectLaunch([&](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string errorOf(const std::map<std::string, std::string> &vars) {
  try {
    detect(vars);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Launch, NoVariablesIsOneProcess) {
  LaunchInfo info = detect({});
  EXPECT_EQ(info.launcher, Launcher::None);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.worldSize, 1);
  EXPECT_EQ(info.runId, "");
}

TEST(Launch, OpenMpi) {
  LaunchInfo info = detect({{"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(info.launcher, Launcher::OpenMpi);
  EXPECT_TRUE(info.mpiLaunch());
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.worldSize, 4);
  EXPECT_EQ(info.localRank, 1);
}

TEST(Launch, Hydra) {
  LaunchInfo info = detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(info.launcher, Launcher::Hydra);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.localRank, -1); // MPI will tell
}

TEST(Launch, Torchrun) {
  LaunchInfo info = detect({{"RANK", "5"},
                            {"WORLD_SIZE", "8"},
                            {"LOCAL_RANK", "1"},
                            {"TORCHELASTIC_RUN_ID", "abc"},
                            {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_EQ(info.launcher, Launcher::Torchrun);
  EXPECT_FALSE(info.mpiLaunch());
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.runId, "torchrun:abc.2");
}

TEST(Launch, TorchrunWithoutRendezvousIdHasNoRunId) {
  // torchrun's default rdzv id "none" is the same for every launch.
  LaunchInfo info = detect(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_EQ(info.runId, "");
}

TEST(Launch, TgcRunIdWins) {
  LaunchInfo info = detect({{"RANK", "0"},
                            {"WORLD_SIZE", "2"},
                            {"TGC_RUN_ID", "mine"},
                            {"TORCHELASTIC_RUN_ID", "abc"}});
  EXPECT_EQ(info.runId, "mine");
}

TEST(Launch, SlurmStep) {
  LaunchInfo info = detect({{"SLURM_PROCID", "6"},
                            {"SLURM_NTASKS", "16"},
                            {"SLURM_STEP_NUM_TASKS", "8"},
                            {"SLURM_LOCALID", "2"},
                            {"SLURM_JOB_ID", "1234"},
                            {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(info.launcher, Launcher::Slurm);
  EXPECT_EQ(info.worldSize, 8); // the step's tasks, not the allocation's
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.runId, "slurm:1234.0");
}

TEST(Launch, SlurmBatchScriptIsOneProcess) {
  LaunchInfo info = detect({{"SLURM_PROCID", "0"},
                            {"SLURM_NTASKS", "16"},
                            {"SLURM_JOB_ID", "1234"}});
  EXPECT_EQ(info.launcher, Launcher::None);
  EXPECT_EQ(info.worldSize, 1);
}

TEST(Launch, MpirunInsideSlurmIsMpirun) {
  LaunchInfo info = detect({{"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "2"},
                            {"SLURM_PROCID", "0"},
                            {"SLURM_NTASKS", "1"},
                            {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(info.launcher, Launcher::OpenMpi);
  EXPECT_EQ(info.worldSize, 2);
}

TEST(Launch, TorchrunUnderSrunIsTorchrun) {
  LaunchInfo info = detect({{"RANK", "9"},
                            {"WORLD_SIZE", "16"},
                            {"LOCAL_RANK", "1"},
                            {"SLURM_PROCID", "1"},
                            {"SLURM_NTASKS", "2"},
                            {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(info.launcher, Launcher::Torchrun);
  EXPECT_EQ(info.rank, 9);
}

TEST(Launch, Errors) {
  EXPECT_EQ(errorOf({{"WORLD_SIZE", "2"}, {"RANK", "5"}}),
            "WORLD_SIZE=2 but RANK=5: the rank must be below the world size");
  EXPECT_EQ(errorOf({{"WORLD_SIZE", "2"}, {"RANK", "2"}}),
            "WORLD_SIZE=2 but RANK=2: the rank must be below the world size");
  EXPECT_EQ(errorOf({{"WORLD_SIZE", "4"}}),
            "WORLD_SIZE=4 is set but RANK is not");
  EXPECT_EQ(errorOf({{"RANK", "1"}}), "RANK=1 is set but WORLD_SIZE is not");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "x2"}}),
            "WORLD_SIZE='x2' is not a positive integer");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
            "WORLD_SIZE='0' is not a positive integer");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}),
            "WORLD_SIZE='99999999999' is not a positive integer");
  EXPECT_EQ(errorOf({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}),
            "RANK=' 1' is not a non-negative integer");
  EXPECT_EQ(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}),
            "WORLD_SIZE=2 but LOCAL_RANK=2: the local rank must be below the "
            "world size");
  EXPECT_EQ(
      errorOf({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
      "OMPI_COMM_WORLD_SIZE=4 but OMPI_COMM_WORLD_RANK=4: the rank must "
      "be below the world size");
}

TEST(Launch, Timeouts) {
  auto env = [](const char *value) {
    return [value](const char *) -> const char * { return value; };
  };
  EXPECT_EQ(timeoutFromEnvironment("T", 300, env(nullptr)), 300);
  EXPECT_EQ(timeoutFromEnvironment("T", 300, env("2.5")), 2.5);
  EXPECT_EQ(timeoutFromEnvironment("T", 300, env("0")), 0);
  EXPECT_THROW(timeoutFromEnvironment("T", 300, env("-1")), Error);
  EXPECT_THROW(timeoutFromEnvironment("T", 300, env("5s")), Error);
  EXPECT_THROW(timeoutFromEnvironment("T", 300, env("inf")), Error);
}

} // namespace

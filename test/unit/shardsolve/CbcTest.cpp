//===- CbcTest.cpp - planning/lp's one way to run CBC -----------*- C++ -*-===//
//
// runCbc on programs whose answers are known: an optimum, a proven
// infeasible program, a start solution read, and a missing CBC named.
//
//===----------------------------------------------------------------------===//

#include "planning/lp/Cbc.h"

#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <map>

using namespace tg::lp;

namespace {

std::map<std::string, double> valuesOf(const CbcSolution &solution) {
  return {solution.values.begin(), solution.values.end()};
}

class Cbc : public ::testing::Test {
protected:
  void SetUp() override {
    if (!llvm::sys::findProgramByName("cbc"))
      GTEST_SKIP() << "no cbc on the PATH (Debian package coinor-cbc)";
  }
};

TEST_F(Cbc, FindsTheOptimum) {
  // Two of three items under a weight of 5: a (3, worth 4) and b (2, worth
  // 3), not c (4, worth 5).
  auto solution = runCbc(
      "cbc",
      [](llvm::raw_ostream &os) {
        os << "Maximize\n obj: 4 a + 3 b + 5 c\nSubject To\n w: 3 a + 2 b + "
              "4 c <= 5\nBinaries\n a b c\nEnd\n";
      },
      CbcRun());
  ASSERT_TRUE(static_cast<bool>(solution))
      << llvm::toString(solution.takeError());
  EXPECT_EQ(solution->status, CbcSolution::Status::Optimal)
      << solution->statusLine;
  std::map<std::string, double> values = valuesOf(*solution);
  EXPECT_DOUBLE_EQ(values["a"], 1);
  EXPECT_DOUBLE_EQ(values["b"], 1);
  EXPECT_EQ(values.count("c") ? values["c"] : 0.0, 0.0);
}

TEST_F(Cbc, SaysAProgramIsInfeasible) {
  auto solution = runCbc(
      "cbc",
      [](llvm::raw_ostream &os) {
        os << "Minimize\n obj: a\nSubject To\n c1: a + b >= 3\nBinaries\n a "
              "b\nEnd\n";
      },
      CbcRun());
  ASSERT_TRUE(static_cast<bool>(solution))
      << llvm::toString(solution.takeError());
  EXPECT_TRUE(solution->status == CbcSolution::Status::Infeasible ||
              solution->status == CbcSolution::Status::NoSolution)
      << solution->statusLine;
  EXPECT_TRUE(solution->values.empty());
}

TEST_F(Cbc, StartsFromAGivenSolution) {
  CbcRun run;
  run.start = "Stopped on time - objective value 0\n  0 a 1 0\n";
  run.elapsed = true;
  run.hardStopSeconds = 60;
  auto solution = runCbc(
      "cbc",
      [](llvm::raw_ostream &os) {
        os << "Minimize\n obj: a + 2 b\nSubject To\n c1: a + b >= 1\n"
              "Binaries\n a b\nEnd\n";
      },
      run);
  ASSERT_TRUE(static_cast<bool>(solution))
      << llvm::toString(solution.takeError());
  EXPECT_EQ(solution->status, CbcSolution::Status::Optimal);
  EXPECT_DOUBLE_EQ(valuesOf(*solution)["a"], 1);
}

TEST(CbcMissing, NamesTheProgram) {
  auto solution = runCbc(
      "/nonexistent/cbc", [](llvm::raw_ostream &) {}, CbcRun());
  ASSERT_FALSE(static_cast<bool>(solution));
  EXPECT_NE(llvm::toString(solution.takeError())
                .find("no CBC program '/nonexistent/cbc' (Debian package "
                      "coinor-cbc)"),
            std::string::npos);
}

} // namespace

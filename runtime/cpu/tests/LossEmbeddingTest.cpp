//===- LossEmbeddingTest.cpp - embedding and cross_entropy ---------*- C++ -*-===//
//
// Both index types, duplicate indices in the scatter-add, ignore_index with
// every reduction, and gradients against finite differences.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <cmath>
#include <cstring>
#include <string>
#include <gtest/gtest.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

template <typename Idx>
void checkEmbedding() {
  const int64_t rows = 11, d = 5;
  std::vector<Idx> ids{3, 0, 10, 3, 7, 3, 0, 1};
  int64_t n = (int64_t)ids.size();
  std::vector<float> table = randomVector(rows * d, 1);
  std::vector<float> out(n * d);
  embedding(table.data(), rows, d, ids.data(), n, out.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      EXPECT_EQ(out[i * d + j], table[ids[i] * d + j]);

  std::vector<float> g = randomVector(n * d, 2);
  std::vector<float> dtable(rows * d, 5.0f);
  embedding_grad(g.data(), ids.data(), n, rows, d, dtable.data());
  std::vector<double> want(rows * d, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      want[ids[i] * d + j] += g[i * d + j];
  expectClose(dtable, want, 1e-6, 1e-7, "embedding_grad");
  auto loss = [&] {
    embedding(table.data(), rows, d, ids.data(), n, out.data());
    return weightedSum(out, g);
  };
  expectGradientMatches(table, dtable, loss, 1e-2, 1e-3, 1e-4,
                        "embedding_grad");
}

} // namespace

TEST(Embedding, Int32AndInt64Indices) {
  checkEmbedding<int32_t>();
  checkEmbedding<int64_t>();
}

TEST(Embedding, OutOfRangeRowsAreZeroAndSkipped) {
  std::vector<float> table{1, 2, 3, 4};
  std::vector<int64_t> ids{1, 2, -1};
  std::vector<float> out(6, 9.0f);
  embedding(table.data(), 2, 2, ids.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 4, 0, 0, 0, 0}));
  std::vector<float> g{1, 1, 1, 1, 1, 1}, dt(4, 9.0f);
  embedding_grad(g.data(), ids.data(), 3, 2, 2, dt.data());
  EXPECT_EQ(dt, (std::vector<float>{0, 0, 1, 1}));
}

TEST(Embedding, LargeThreadedScatterIsExact) {
  const int64_t rows = 50, d = 512, n = 4000;
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i)
    ids[i] = (int32_t)((i * 7919) % rows);
  std::vector<float> g = randomVector(n * d, 3), dt(rows * d);
  embedding_grad(g.data(), ids.data(), n, rows, d, dt.data());
  // Same order as a sequential loop: bitwise equal to it.
  std::vector<float> want(rows * d, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      want[ids[i] * d + j] += g[i * d + j];
  EXPECT_EQ(dt, want);
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

namespace {

constexpr int kMean = 0, kSum = 1, kNone = 2;

template <typename Idx>
std::vector<double> naiveRowLosses(const std::vector<float> &logits,
                                   const std::vector<Idx> &labels,
                                   int64_t classes, int64_t ignore) {
  std::vector<double> loss(labels.size(), 0.0);
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] == ignore)
      continue;
    const float *x = logits.data() + r * classes;
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      mx = std::max(mx, (double)x[c]);
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(x[c] - mx);
    loss[r] = mx + std::log(sum) - x[labels[r]];
  }
  return loss;
}

template <typename Idx>
void checkCrossEntropy() {
  const int64_t rows = 7, classes = 6, ignore = -100;
  std::vector<Idx> labels{2, 0, -100, 5, 1, -100, 3};
  std::vector<float> logits = randomVector(rows * classes, 4, -4, 4);
  std::vector<double> rowLoss = naiveRowLosses(logits, labels, classes, ignore);
  double sum = 0;
  for (double v : rowLoss)
    sum += v;

  std::vector<float> perRow(rows, 9.0f);
  float mean = cross_entropy(logits.data(), labels.data(), rows, classes,
                             ignore, kMean, nullptr);
  EXPECT_NEAR(mean, sum / 5, 1e-5);
  float total = cross_entropy(logits.data(), labels.data(), rows, classes,
                              ignore, kSum, nullptr);
  EXPECT_NEAR(total, sum, 1e-5 * sum);
  cross_entropy(logits.data(), labels.data(), rows, classes, ignore, kNone,
                perRow.data());
  expectClose(perRow, rowLoss, 1e-5, 1e-6, "cross_entropy none");

  for (int reduction : {kMean, kSum, kNone}) {
    std::vector<float> g = reduction == kNone ? randomVector(rows, 5)
                                              : std::vector<float>{0.7f};
    std::vector<float> dlogits(logits.size(), 9.0f);
    cross_entropy_grad(g.data(), logits.data(), labels.data(), rows, classes,
                       ignore, reduction, dlogits.data());
    auto loss = [&] {
      std::vector<float> per(rows);
      float l = cross_entropy(logits.data(), labels.data(), rows, classes,
                              ignore, reduction, per.data());
      return reduction == kNone ? weightedSum(per, g) : (double)l * g[0];
    };
    expectGradientMatches(logits, dlogits, loss, 1e-2, 1e-2, 1e-3,
                          "cross_entropy_grad reduction " +
                              std::to_string(reduction));
    for (int64_t c = 0; c < classes; ++c)
      EXPECT_EQ(dlogits[2 * classes + c], 0.0f) << "ignored row";
  }
}

} // namespace

TEST(CrossEntropy, IgnoreIndexAndReductions) {
  checkCrossEntropy<int32_t>();
  checkCrossEntropy<int64_t>();
}

TEST(CrossEntropy, ManyClassesThreaded) {
  const int64_t rows = 64, classes = 5000;
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = (r * 997) % classes;
  labels[3] = 7; // a custom ignore index
  std::vector<float> logits = randomVector(rows * classes, 6, -10, 10);
  std::vector<double> rowLoss = naiveRowLosses(logits, labels, classes, 7);
  double sum = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    sum += rowLoss[r];
    counted += labels[r] != 7;
  }
  float mean = cross_entropy(logits.data(), labels.data(), rows, classes, 7,
                             kMean, nullptr);
  EXPECT_NEAR(mean, sum / counted, 1e-5 * sum / counted);
}

TEST(CrossEntropy, AllIgnoredMeanIsNan) {
  std::vector<float> logits{1, 2, 3, 4};
  std::vector<int32_t> labels{-100, -100};
  EXPECT_TRUE(std::isnan(
      cross_entropy(logits.data(), labels.data(), 2, 2, -100, kMean, nullptr)));
  EXPECT_EQ(
      cross_entropy(logits.data(), labels.data(), 2, 2, -100, kSum, nullptr),
      0.0f);
}

/// The fused classifier gives what cross_entropy and cross_entropy_grad
/// give, bit for bit: every reduction, an ignored row, an out-of-range
/// label, one thread and many rows of many classes on all threads.
TEST(CrossEntropy, WithGradMatchesTheTwoCallsBitForBit) {
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{7, 6}, {64, 5000}})
    for (int reduction : {kMean, kSum, kNone}) {
      std::vector<int64_t> labels(rows);
      for (int64_t r = 0; r < rows; ++r)
        labels[r] = (r * 7) % classes;
      labels[2] = -100;
      labels[4] = classes + 3; // out of range: NaN row
      std::vector<float> logits = randomVector(rows * classes, 11, -6, 6);
      std::vector<float> g = reduction == kNone ? randomVector(rows, 12)
                                                : std::vector<float>{0.7f};
      std::vector<float> perRow(rows), dlogits(rows * classes);
      float loss = cross_entropy(logits.data(), labels.data(), rows, classes,
                                 -100, reduction, perRow.data());
      cross_entropy_grad(g.data(), logits.data(), labels.data(), rows,
                         classes, -100, reduction, dlogits.data());
      std::vector<float> fusedRow(rows), fusedGrad(rows * classes);
      float fused = cross_entropy_with_grad(
          g.data(), logits.data(), labels.data(), rows, classes, -100,
          reduction, fusedRow.data(), fusedGrad.data());
      auto bits = [](const std::vector<float> &v) {
        std::vector<uint32_t> b(v.size());
        std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
        return b;
      };
      std::string what = std::to_string(rows) + "x" +
                         std::to_string(classes) + " reduction " +
                         std::to_string(reduction);
      EXPECT_EQ(bits({loss}), bits({fused})) << what;
      EXPECT_EQ(bits(perRow), bits(fusedRow)) << what;
      EXPECT_EQ(bits(dlogits), bits(fusedGrad)) << what;
    }
}

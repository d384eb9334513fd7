//===- LossEmbeddingTest.cpp - cross-entropy, fused classifier, embedding -*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

constexpr int64_t kIgnore = -100;

/// Labels in [0, classes) with every 7th ignored.
std::vector<int64_t> labelsWithIgnored(int64_t rows, int64_t classes,
                                       uint32_t seed) {
  std::vector<int64_t> labels = randomIndices(rows, seed, 0, classes);
  for (int64_t r = 0; r < rows; r += 7)
    labels[r] = kIgnore;
  return labels;
}

TEST(CudaCrossEntropy, ForwardAndGradMatchCpu) {
  TGC_REQUIRE_GPU();
  // GPT-2's odd vocabulary (rows not 16-byte aligned) and a small one.
  for (int64_t classes : {50257, 10}) {
    const int64_t rows = 37;
    std::vector<float> logits = randomVector(rows * classes, 1, -4.0f, 4.0f);
    std::vector<int64_t> labels = labelsWithIgnored(rows, classes, 2);
    DeviceBuffer<float> dlogits(logits), loss(1), perRow(rows),
        dgrad(rows * classes);
    DeviceBuffer<int64_t> dlabels(labels);
    Workspace ws(cross_entropy_workspace_bytes(rows));
    for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      std::string what =
          "classes " + std::to_string(classes) + " reduction " +
          std::to_string((int)red);
      std::vector<float> wantRows(rows);
      float want = tgc::cpu::cross_entropy(logits.data(), labels.data(), rows,
                                           classes, kIgnore, (int)red,
                                           wantRows.data());
      cross_entropy(dlogits.get(), dlabels.get(), rows, classes, kIgnore, red,
                    loss.get(), perRow.get(), ws.get(), nullptr);
      expectClose(loss.toHost(), {want}, 1e-5, 1e-6, what + " loss");
      expectClose(perRow.toHost(), wantRows, 1e-5, 1e-5, what + " rows");

      // The gradient for a loss gradient of 0.5 (or per-row ones).
      std::vector<float> g = red == Reduction::None ? randomVector(rows, 3)
                                                    : std::vector<float>{0.5f};
      DeviceBuffer<float> dg(g);
      std::vector<float> wantGrad(rows * classes);
      tgc::cpu::cross_entropy_grad(g.data(), logits.data(), labels.data(),
                                   rows, classes, kIgnore, (int)red,
                                   wantGrad.data());
      cross_entropy_grad(dg.get(), dlogits.get(), dlabels.get(), rows,
                         classes, kIgnore, red, dgrad.get(), ws.get(),
                         nullptr);
      expectClose(dgrad.toHost(), wantGrad, 1e-5, 1e-6, what + " grad");

      // Fused, in place over a copy of the logits.
      DeviceBuffer<float> inPlace(logits), fusedLoss(1), fusedRows(rows);
      fused_classifier(inPlace.get(), dlabels.get(), rows, classes, kIgnore,
                       red, dg.get(), fusedLoss.get(), fusedRows.get(),
                       inPlace.get(), ws.get(), nullptr);
      expectClose(fusedLoss.toHost(), {want}, 1e-5, 1e-6, what + " fused");
      expectClose(fusedRows.toHost(), wantRows, 1e-5, 1e-5,
                  what + " fused rows");
      expectClose(inPlace.toHost(), wantGrad, 1e-5, 1e-6,
                  what + " fused grad");
    }
  }
}

TEST(CudaCrossEntropy, Int32LabelsBadLabelsAndNoGradient) {
  TGC_REQUIRE_GPU();
  const int64_t rows = 16, classes = 100;
  std::vector<float> logits = randomVector(rows * classes, 4);
  std::vector<int64_t> labels64 = labelsWithIgnored(rows, classes, 5);
  labels64[3] = classes; // out of range: NaN for that row
  std::vector<int32_t> labels = toInt32(labels64);
  std::vector<float> wantRows(rows), wantGrad(rows * classes);
  float want = tgc::cpu::cross_entropy(logits.data(), labels.data(), rows,
                                       classes, kIgnore, 1, wantRows.data());
  float one = 1.0f;
  tgc::cpu::cross_entropy_grad(&one, logits.data(), labels.data(), rows,
                               classes, kIgnore, 1, wantGrad.data());
  DeviceBuffer<float> dlogits(logits), loss(1), perRow(rows),
      dgrad(rows * classes);
  DeviceBuffer<int32_t> dlabels(labels);
  Workspace ws(cross_entropy_workspace_bytes(rows));
  // g = null: a loss gradient of 1.
  fused_classifier(dlogits.get(), dlabels.get(), rows, classes, kIgnore,
                   Reduction::Sum, nullptr, loss.get(), perRow.get(),
                   dgrad.get(), ws.get(), nullptr);
  EXPECT_TRUE(std::isnan(want));
  EXPECT_TRUE(std::isnan(loss.toHost()[0]));
  expectClose(perRow.toHost(), wantRows, 1e-5, 1e-5, "rows");
  expectClose(dgrad.toHost(), wantGrad, 1e-5, 1e-6, "grad");
}

TEST(CudaCrossEntropy, Bf16Logits) {
  TGC_REQUIRE_GPU();
  const int64_t rows = 24, classes = 50257;
  std::vector<float> logits =
      roundToBf16(randomVector(rows * classes, 6, -4.0f, 4.0f));
  std::vector<int64_t> labels = labelsWithIgnored(rows, classes, 7);
  std::vector<float> wantRows(rows), wantGrad(rows * classes);
  float want = tgc::cpu::cross_entropy(logits.data(), labels.data(), rows,
                                       classes, kIgnore, 0, wantRows.data());
  float g = 1.0f;
  tgc::cpu::cross_entropy_grad(&g, logits.data(), labels.data(), rows,
                               classes, kIgnore, 0, wantGrad.data());
  DeviceBuffer<bf16> dlogits(toBf16(logits));
  DeviceBuffer<float> loss(1);
  DeviceBuffer<int64_t> dlabels(labels);
  Workspace ws(cross_entropy_workspace_bytes(rows));
  fused_classifier(dlogits.get(), dlabels.get(), rows, classes, kIgnore,
                   Reduction::Mean, nullptr, loss.get(), nullptr,
                   dlogits.get(), ws.get(), nullptr);
  // The loss is fp32 from bf16 inputs the CPU also sees.
  expectClose(loss.toHost(), {want}, 1e-5, 1e-5, "bf16 loss");
  expectClose(toFloat(dlogits.toHost()), wantGrad, 1e-2,
              1e-2 * maxAbs(wantGrad), "bf16 grad");
}

TEST(CudaEmbedding, ForwardAndDeterministicGrad) {
  TGC_REQUIRE_GPU();
  const int64_t rows = 50, d = 96, n = 300;
  std::vector<float> table = randomVector(rows * d, 8);
  // Repeated rows, and two out-of-range indices.
  std::vector<int64_t> idx = randomIndices(n, 9, 0, rows);
  idx[5] = -1;
  idx[17] = rows;
  std::vector<float> g = randomVector(n * d, 10);
  std::vector<float> want(n * d), wantGrad(rows * d);
  tgc::cpu::embedding(table.data(), rows, d, idx.data(), n, want.data());
  tgc::cpu::embedding_grad(g.data(), idx.data(), n, rows, d, wantGrad.data());

  DeviceBuffer<float> dtable(table), out(n * d), dg(g), grad(rows * d);
  DeviceBuffer<int64_t> didx(idx);
  DeviceBuffer<int32_t> didx32(toInt32(idx));
  Workspace ws(embedding_grad_workspace_bytes(n, rows));
  embedding(dtable.get(), rows, d, didx.get(), n, out.get(), nullptr);
  EXPECT_EQ(out.toHost(), want);
  embedding(dtable.get(), rows, d, didx32.get(), n, out.get(), nullptr);
  EXPECT_EQ(out.toHost(), want);
  // Summed in the CPU's order: bit for bit.
  embedding_grad(dg.get(), didx.get(), n, rows, d, grad.get(), ws.get(),
                 nullptr);
  EXPECT_EQ(grad.toHost(), wantGrad);
  embedding_grad(dg.get(), didx32.get(), n, rows, d, grad.get(), ws.get(),
                 nullptr);
  EXPECT_EQ(grad.toHost(), wantGrad);

  // bf16 table and gradient (d = 96 is a multiple of the pack size).
  std::vector<float> tb = roundToBf16(table), gb = roundToBf16(g);
  std::vector<float> wantB(n * d), wantGradB(rows * d);
  tgc::cpu::embedding(tb.data(), rows, d, idx.data(), n, wantB.data());
  tgc::cpu::embedding_grad(gb.data(), idx.data(), n, rows, d,
                           wantGradB.data());
  DeviceBuffer<bf16> btable(toBf16(tb)), bout(n * d), bg(toBf16(gb)),
      bgrad(rows * d);
  embedding(btable.get(), rows, d, didx.get(), n, bout.get(), nullptr);
  EXPECT_EQ(toFloat(bout.toHost()), wantB);
  embedding_grad(bg.get(), didx.get(), n, rows, d, bgrad.get(), ws.get(),
                 nullptr);
  EXPECT_EQ(toFloat(bgrad.toHost()), roundToBf16(wantGradB));
}

} // namespace

//===- Smoke.cpp - Run every CUDA kernel once and time it ---------*- C++ -*-===//
//
// tgc_cuda_smoke [device]: on GPT-2 124M shapes (B = 8, T = 1024, C = 768,
// 12 heads, vocabulary 50257, bf16 activations, fp32 master weights), runs
// each launcher once to warm up and then times a second run with CUDA
// events. Inputs are zeros: this checks that everything launches and how
// long it takes, not values; the tests check values.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Kernels.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

using namespace tgc;
using namespace tgc::cuda;

namespace {

constexpr int64_t B = 8, T = 1024, C = 768, H = 12, V = 50257, N = B * T;

/// A zero-filled device buffer, freed when the process exits.
template <typename E> E *buffer(int64_t count) {
  return static_cast<E *>(deviceOps()->alloc(count * (int64_t)sizeof(E)));
}

/// Runs `fn` twice and prints the second run's time; `flops` (when > 0)
/// adds the achieved TFLOP/s, `bytes` the achieved GB/s.
void timeIt(const char *name, double flops, double bytes,
            const std::function<void(cudaStream_t)> &fn) {
  cudaStream_t stream = Context::get().computeStream();
  fn(stream);
  cudaEvent_t start, stop;
  TGC_CUDA_CHECK(cudaEventCreate(&start));
  TGC_CUDA_CHECK(cudaEventCreate(&stop));
  TGC_CUDA_CHECK(cudaEventRecord(start, stream));
  fn(stream);
  TGC_CUDA_CHECK(cudaEventRecord(stop, stream));
  TGC_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  TGC_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("%-32s %9.3f ms", name, ms);
  if (flops > 0)
    std::printf("  %7.1f TFLOP/s", flops / (ms * 1e-3) / 1e12);
  if (bytes > 0)
    std::printf("  %7.1f GB/s", bytes / (ms * 1e-3) / 1e9);
  std::printf("\n");
  TGC_CUDA_CHECK(cudaEventDestroy(start));
  TGC_CUDA_CHECK(cudaEventDestroy(stop));
}

void run(int device) {
  std::printf("%s\n", deviceOps()->select(device));

  bf16 *x = buffer<bf16>(N * 4 * C), *y = buffer<bf16>(N * 4 * C),
       *aux = buffer<bf16>(N * 4 * C), *w = buffer<bf16>(4 * C * C),
       *bias = buffer<bf16>(4 * C);
  timeIt("matmul bf16 8192x3072x768 +gelu", 2.0 * N * 4 * C * C, 0,
         [&](cudaStream_t s) {
           MatmulOptions o;
           o.epilogue = Epilogue::BiasGelu;
           o.bias = bias;
           o.geluAux = aux;
           matmul(x, w, y, N, 4 * C, C, false, true, nullptr, nullptr,
                  nullptr, 0, o, s);
         });
  float *wgrad = buffer<float>(4 * C * C);
  timeIt("matmul bf16->f32 dW 3072x768x8192", 2.0 * N * 4 * C * C, 0,
         [&](cudaStream_t s) {
           MatmulOptions o;
           o.accumulate = true;
           matmul(y, x, wgrad, 4 * C, C, N, true, false, nullptr, nullptr,
                  nullptr, 0, o, s);
         });

  bf16 *ln = buffer<bf16>(C);
  timeIt("layer_norm bf16", 0, 2.0 * N * C * 2, [&](cudaStream_t s) {
    layer_norm(x, ln, ln, y, N, C, 1e-5f, s);
  });
  void *lnWs = buffer<char>(layer_norm_grad_workspace_bytes(N, C));
  timeIt("layer_norm_grad bf16", 0, 4.0 * N * C * 2, [&](cudaStream_t s) {
    layer_norm_grad(x, y, ln, aux, ln, ln, N, C, 1e-5f, lnWs, s);
  });
  timeIt("gelu bf16", 0, 2.0 * N * 4 * C * 2, [&](cudaStream_t s) {
    gelu(x, y, N * 4 * C, true, s);
  });

  bf16 *q = buffer<bf16>(N * C), *k = buffer<bf16>(N * C),
       *v = buffer<bf16>(N * C), *o = buffer<bf16>(N * C),
       *dq = buffer<bf16>(N * C), *dk = buffer<bf16>(N * C),
       *dv = buffer<bf16>(N * C);
  float *lse = buffer<float>(B * H * T);
  double attnFlops = 4.0 * B * H * T * T * (C / H) / 2; // causal
  timeIt("attention bf16 causal", attnFlops, 0, [&](cudaStream_t s) {
    attention(q, k, v, nullptr, {}, o, lse, B, H, H, T, T, C / H, C / H, true,
              0.125f, s);
  });
  void *attnWs =
      buffer<char>(attention_grad_workspace_bytes(B, H, T, T, false));
  timeIt("attention_grad bf16 causal", 2.5 * attnFlops, 0,
         [&](cudaStream_t s) {
           attention_grad(o, q, k, v, nullptr, {}, o, lse, dq, dk, dv,
                          nullptr, B, H, H, T, T, C / H, C / H, true, 0.125f,
                          attnWs, s);
         });

  bf16 *logits = buffer<bf16>(N * V);
  int32_t *labels = buffer<int32_t>(N);
  float *loss = buffer<float>(1);
  void *ceWs = buffer<char>(cross_entropy_workspace_bytes(N));
  timeIt("fused_classifier bf16 50257", 0, 2.0 * N * V * 2,
         [&](cudaStream_t s) {
           fused_classifier(logits, labels, N, V, -100, Reduction::Mean,
                            nullptr, loss, nullptr, logits, ceWs, s);
         });

  bf16 *wte = buffer<bf16>(V * C), *emb = buffer<bf16>(N * C);
  timeIt("embedding bf16", 0, 2.0 * N * C * 2, [&](cudaStream_t s) {
    embedding(wte, V, C, labels, N, emb, s);
  });
  void *embWs = buffer<char>(embedding_grad_workspace_bytes(N, V));
  timeIt("embedding_grad bf16", 0, (double)N * C * 2 + (double)V * C * 2,
         [&](cudaStream_t s) {
           embedding_grad(emb, labels, N, V, C, wte, embWs, s);
         });

  const int64_t params = 124'000'000;
  float *p = buffer<float>(params), *g = buffer<float>(params),
        *m = buffer<float>(params), *vv = buffer<float>(params),
        *lr = buffer<float>(1), *norm = buffer<float>(1),
        *scale = buffer<float>(1);
  int64_t *step = buffer<int64_t>(1);
  bf16 *copy = buffer<bf16>(params);
  int64_t one = 1;
  deviceOps()->upload(step, &one, sizeof(one));
  NormInput normInput{g, DType::F32, params};
  void *normWs = buffer<char>(global_norm_workspace_bytes(&normInput, 1));
  timeIt("global_norm 124M fp32", 0, 4.0 * params, [&](cudaStream_t s) {
    global_norm(&normInput, 1, norm, normWs, s);
    clip_factor(norm, 1.0f, scale, s);
  });
  float *state[] = {m, vv};
  OptimizerHyper hyper{0.9f, 0.95f, 1e-8f, 0.1f, 0.0f, 0.99f, false};
  timeIt("adamw 124M (+bf16 copy)", 0, 4.0 * params * 5 + 2.0 * params,
         [&](cudaStream_t s) {
           optimizer_update(OptimizerKind::AdamW, p, g, state, 2, params, lr,
                            step, scale, hyper, copy, nullptr, s);
         });
  TGC_CUDA_CHECK(cudaDeviceSynchronize());
}

} // namespace

int main(int argc, char **argv) {
  try {
    run(argc > 1 ? std::atoi(argv[1]) : 0);
  } catch (const Error &e) {
    std::fprintf(stderr, "tgc_cuda_smoke: %s\n", e.what());
    return 1;
  }
  return 0;
}

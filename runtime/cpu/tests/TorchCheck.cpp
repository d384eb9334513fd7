//===- TorchCheck.cpp - Runs kernels on inputs written by PyTorch --*- C++ -*-===//
//
// The C++ half of torch_reference.py: for each case directory given on the
// command line it reads `params` (the op and its attributes, "key value" per
// line) and the input tensors, runs the kernels, and writes the outputs next
// to them. A tensor file is int64 rank, int64 dims[rank], then the elements
// (float32, or int64 for labels).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace tgc::cpu;

namespace {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> f;
  std::vector<int64_t> i;
  int64_t dim(int k) const { return shape[k < 0 ? shape.size() + k : k]; }
};

class Case {
public:
  explicit Case(std::string dir) : dir(std::move(dir)) {
    std::ifstream in(this->dir + "/params");
    std::string key, value;
    while (in >> key >> value)
      params[key] = value;
  }

  std::string str(const std::string &key) const { return params.at(key); }
  double num(const std::string &key) const { return std::stod(params.at(key)); }
  int64_t integer(const std::string &key) const {
    return std::stoll(params.at(key));
  }

  Tensor read(const std::string &name, bool isInt = false) const {
    std::FILE *f = std::fopen((dir + "/" + name).c_str(), "rb");
    if (!f) {
      std::fprintf(stderr, "cannot open %s/%s\n", dir.c_str(), name.c_str());
      std::exit(2);
    }
    Tensor t;
    int64_t rank = 0;
    std::fread(&rank, sizeof(rank), 1, f);
    t.shape.resize(rank);
    if (rank > 0)
      std::fread(t.shape.data(), sizeof(int64_t), rank, f);
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (isInt) {
      t.i.resize(n);
      std::fread(t.i.data(), sizeof(int64_t), n, f);
    } else {
      t.f.resize(n);
      std::fread(t.f.data(), sizeof(float), n, f);
    }
    std::fclose(f);
    return t;
  }

  void write(const std::string &name, const std::vector<int64_t> &shape,
             const std::vector<float> &data) const {
    std::FILE *f = std::fopen((dir + "/" + name).c_str(), "wb");
    int64_t rank = (int64_t)shape.size();
    std::fwrite(&rank, sizeof(rank), 1, f);
    if (rank > 0)
      std::fwrite(shape.data(), sizeof(int64_t), rank, f);
    std::fwrite(data.data(), sizeof(float), data.size(), f);
    std::fclose(f);
  }

private:
  std::string dir;
  std::map<std::string, std::string> params;
};

void runAttention(const Case &c) {
  Tensor q = c.read("q"), k = c.read("k"), v = c.read("v"), g = c.read("g");
  int64_t B = q.dim(0), H = q.dim(1), Hkv = k.dim(1), T = q.dim(2),
          D = q.dim(3), S = k.dim(2), Dv = v.dim(3);
  bool causal = c.integer("causal");
  float scale = (float)c.num("scale");
  std::vector<float> out(B * H * T * Dv), dq(q.f.size()), dk(k.f.size()),
      dv(v.f.size());
  attention(q.f.data(), k.f.data(), v.f.data(), nullptr, {}, out.data(), B, H,
            Hkv, T, S, D, Dv, causal, scale);
  attention_grad(g.f.data(), q.f.data(), k.f.data(), v.f.data(), nullptr, {},
                 dq.data(), dk.data(), dv.data(), nullptr, B, H, Hkv, T, S, D,
                 Dv, causal, scale);
  c.write("out", {B, H, T, Dv}, out);
  c.write("dq", q.shape, dq);
  c.write("dk", k.shape, dk);
  c.write("dv", v.shape, dv);
}

void runLayerNorm(const Case &c) {
  Tensor x = c.read("x"), w = c.read("w"), b = c.read("b"), g = c.read("g");
  int64_t d = x.dim(-1), rows = (int64_t)x.f.size() / d;
  float eps = (float)c.num("eps");
  std::vector<float> y(x.f.size()), dx(x.f.size()), dw(d), db(d);
  layer_norm(x.f.data(), w.f.data(), b.f.data(), y.data(), rows, d, eps);
  layer_norm_grad(g.f.data(), x.f.data(), w.f.data(), dx.data(), dw.data(),
                  db.data(), rows, d, eps);
  c.write("y", x.shape, y);
  c.write("dx", x.shape, dx);
  c.write("dw", w.shape, dw);
  c.write("db", b.shape, db);
}

void runConv2d(const Case &c) {
  Tensor x = c.read("x"), w = c.read("w"), b = c.read("bias"), g = c.read("g");
  Conv2dDims d{x.dim(0),          x.dim(1),          x.dim(2),
               x.dim(3),          w.dim(0),          w.dim(2),
               w.dim(3),          g.dim(2),          g.dim(3),
               c.integer("stride"), c.integer("stride"), c.integer("pad"),
               c.integer("pad"),  c.integer("dil"),  c.integer("dil"),
               c.integer("groups")};
  std::vector<float> y(g.f.size()), dx(x.f.size()), dw(w.f.size());
  conv2d(x.f.data(), w.f.data(), b.f.data(), y.data(), d);
  conv2d_grad_input(g.f.data(), w.f.data(), dx.data(), d);
  conv2d_grad_weight(g.f.data(), x.f.data(), dw.data(), d);
  c.write("y", g.shape, y);
  c.write("dx", x.shape, dx);
  c.write("dw", w.shape, dw);
}

void runCrossEntropy(const Case &c) {
  Tensor logits = c.read("logits"), labels = c.read("labels", true),
         g = c.read("g");
  int64_t classes = logits.dim(-1), rows = (int64_t)labels.i.size();
  int reduction = (int)c.integer("reduction");
  int64_t ignore = c.integer("ignore_index");
  std::vector<float> perRow(rows), dlogits(logits.f.size());
  float loss = cross_entropy(logits.f.data(), labels.i.data(), rows, classes,
                             ignore, reduction, perRow.data());
  cross_entropy_grad(g.f.data(), logits.f.data(), labels.i.data(), rows,
                     classes, ignore, reduction, dlogits.data());
  if (reduction == 2)
    c.write("loss", labels.shape, perRow);
  else
    c.write("loss", {}, {loss});
  c.write("dlogits", logits.shape, dlogits);
}

void runPool(const Case &c) {
  Tensor x = c.read("x"), g = c.read("g");
  int64_t k = c.integer("kernel");
  Pool2dDims d{x.dim(0), x.dim(1), x.dim(2), x.dim(3), g.dim(2), g.dim(3),
               k,        k,        c.integer("stride"), c.integer("stride"),
               c.integer("pad"), c.integer("pad")};
  std::vector<float> y(g.f.size()), dx(x.f.size());
  if (c.str("kind") == "max") {
    max_pool2d(x.f.data(), y.data(), d);
    max_pool2d_grad(g.f.data(), x.f.data(), dx.data(), d);
  } else {
    avg_pool2d(x.f.data(), y.data(), d);
    avg_pool2d_grad(g.f.data(), dx.data(), d);
  }
  c.write("y", g.shape, y);
  c.write("dx", x.shape, dx);
}

void runGelu(const Case &c) {
  Tensor x = c.read("x"), g = c.read("g");
  bool tanhApprox = c.integer("tanh");
  int64_t n = (int64_t)x.f.size();
  std::vector<float> y(n), dx(n);
  gelu(x.f.data(), y.data(), n, tanhApprox);
  gelu_grad(g.f.data(), x.f.data(), dx.data(), n, tanhApprox);
  c.write("y", x.shape, y);
  c.write("dx", x.shape, dx);
}

void runSoftmax(const Case &c) {
  Tensor x = c.read("x");
  int64_t n = x.dim(-1), outer = (int64_t)x.f.size() / n;
  std::vector<float> y(x.f.size()), ly(x.f.size());
  softmax(x.f.data(), y.data(), outer, n, 1);
  log_softmax(x.f.data(), ly.data(), outer, n, 1);
  c.write("y", x.shape, y);
  c.write("logy", x.shape, ly);
}

void runOptimizer(const Case &c) {
  static const std::map<std::string, OptimizerKind> kinds = {
      {"sgd", OptimizerKind::SGD},         {"adam", OptimizerKind::Adam},
      {"adamw", OptimizerKind::AdamW},     {"rmsprop", OptimizerKind::RMSprop},
      {"adagrad", OptimizerKind::Adagrad}, {"lamb", OptimizerKind::LAMB},
      {"lion", OptimizerKind::Lion}};
  OptimizerKind kind = kinds.at(c.str("kind"));
  OptimizerHyper h{(float)c.num("beta1"),    (float)c.num("beta2"),
                   (float)c.num("eps"),      (float)c.num("weight_decay"),
                   (float)c.num("momentum"), (float)c.num("alpha"),
                   c.integer("nesterov") != 0};
  int numState = (int)c.integer("num_state");
  float lr = (float)c.num("lr");
  Tensor p = c.read("p");
  int64_t n = (int64_t)p.f.size();
  std::vector<std::vector<float>> state(numState, std::vector<float>(n, 0.0f));
  std::vector<float *> statePtrs;
  for (auto &s : state)
    statePtrs.push_back(s.data());
  int64_t steps = c.integer("steps");
  for (int64_t step = 1; step <= steps; ++step) {
    Tensor g = c.read("g" + std::to_string(step));
    optimizer_update(kind, p.f.data(), g.f.data(), statePtrs.data(), numState,
                     n, lr, step, h);
    c.write("p" + std::to_string(step), p.shape, p.f);
  }
  for (int s = 0; s < numState; ++s)
    c.write("state" + std::to_string(s), p.shape, state[s]);
}

} // namespace

int main(int argc, char **argv) {
  static const std::map<std::string, void (*)(const Case &)> ops = {
      {"attention", runAttention}, {"layer_norm", runLayerNorm},
      {"conv2d", runConv2d},       {"cross_entropy", runCrossEntropy},
      {"pool", runPool},           {"gelu", runGelu},
      {"softmax", runSoftmax},     {"optimizer", runOptimizer}};
  for (int i = 1; i < argc; ++i) {
    Case c(argv[i]);
    auto it = ops.find(c.str("op"));
    if (it == ops.end()) {
      std::fprintf(stderr, "unknown op %s\n", c.str("op").c_str());
      return 2;
    }
    it->second(c);
  }
  return 0;
}

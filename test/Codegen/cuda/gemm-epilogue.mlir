// GEMMs are cuBLASLt calls. A bias add [N] and a tanh GELU after a matmul
// whose value has no other use go into its epilogue (BiasGelu: the
// pre-activation is kept for the backward), a bias alone too (Bias); in the
// backward a GELU gradient of a matmul goes into GeluGrad. Other matmuls have
// no epilogue.
// RUN: tgc %s --emit=cuda --precision=fp32 -o %t
// RUN: FileCheck %s --input-file=%t/gemm-epilogue.cu

module attributes {tg.model = "mlp3", tg.training = {batch_size = 4 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w1: tensor<16x32xf32> {tg.param = "fc1.weight", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %b1: tensor<32xf32> {tg.param = "fc1.bias", tg.init = #tg.init<zeros>},
                     %w2: tensor<32x32xf32> {tg.param = "fc2.weight", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %b2: tensor<32xf32> {tg.param = "fc2.bias", tg.init = #tg.init<zeros>},
                     %w3: tensor<32x8xf32> {tg.param = "fc3.weight", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %x: tensor<4x16xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
                     %y: tensor<4xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    %h1 = tg.matmul %x, %w1 : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32> loc("fc1.matmul")
    %a1 = tg.add %h1, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32> loc("fc1")
    %g1 = tg.gelu %a1 {approximate = #tg<approximation tanh>} : tensor<4x32xf32> loc("act1")
    %h2 = tg.matmul %g1, %w2 : tensor<4x32xf32>, tensor<32x32xf32> -> tensor<4x32xf32> loc("fc2.matmul")
    %a2 = tg.add %b2, %h2 : tensor<32xf32>, tensor<4x32xf32> -> tensor<4x32xf32> loc("fc2")
    %h3 = tg.matmul %a2, %w3 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32> loc("fc3")
    %loss = tg.cross_entropy %h3, %y : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32> loc("loss")
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: static void train_step_launches(
// CHECK:      // tg.matmul (fc1.matmul)
// CHECK-NEXT: // tg.add (fc1)
// CHECK-NEXT: // tg.gelu (act1)
// CHECK-NEXT: //   (one cuBLASLt call, the BiasGelu epilogue)
// CHECK-DAG:  float *[[X:a[0-9]+]] = (float *)io.inputs[0]; // x
// CHECK-DAG:  float *[[W1:a[0-9]+]] = (float *)io.params[0]; // fc1.weight
// CHECK-DAG:  float *[[B1:a[0-9]+]] = (float *)io.params[1]; // fc1.bias
// CHECK-DAG:  float *[[PRE:v[0-9]+]] = (float *)(work + {{[0-9]+}});
// CHECK-DAG:  float *[[ACT:v[0-9]+]] = (float *)(work + {{[0-9]+}});
// CHECK:        options.epilogue = tgc::cuda::Epilogue::BiasGelu;
// CHECK-NEXT:   options.bias = [[B1]];
// CHECK-NEXT:   options.geluAux = [[PRE]];
// CHECK-NEXT:   tgc::cuda::matmul([[X]], [[W1]], [[ACT]], 4, 32, 16, false, false, aBatch, bBatch, cBatch, 0, options, stream);

// The bias may come first.
// CHECK:      // tg.matmul (fc2.matmul)
// CHECK-NEXT: // tg.add (fc2)
// CHECK-NEXT: //   (one cuBLASLt call, the Bias epilogue)
// CHECK:        options.epilogue = tgc::cuda::Epilogue::Bias;
// CHECK-NEXT:   options.bias = a{{[0-9]+}};
// CHECK-NEXT:   tgc::cuda::matmul([[ACT]], a{{[0-9]+}}, v{{[0-9]+}}, 4, 32, 32,

// CHECK:      // tg.matmul (fc3)
// CHECK-NOT:  epilogue
// CHECK:        tgc::cuda::matmul(v{{[0-9]+}}, a{{[0-9]+}}, v{{[0-9]+}}, 4, 8, 32, false, false,

// The backward: dx of fc2 times gelu'(pre-activation), one call.
// CHECK:      // tg.gelu_grad (act1)
// CHECK-NEXT: //   (one cuBLASLt call, the GeluGrad epilogue)
// CHECK:        options.epilogue = tgc::cuda::Epilogue::GeluGrad;
// CHECK-NEXT:   options.geluAux = [[PRE]];
// CHECK-NEXT:   tgc::cuda::matmul(v{{[0-9]+}}, a{{[0-9]+}}, v{{[0-9]+}}, 4, 32, 32, false, true,
// CHECK-NOT:  gelu_grad_k
// CHECK-LABEL: static void eval_step_launches(

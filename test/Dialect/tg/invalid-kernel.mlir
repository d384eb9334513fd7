// RUN: tg-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect
// (Unregistered ops stand for a terminator other than tg.yield.)

func.func @argument_type(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op body argument 0 is 'tensor<8xf32>', input 0 is 'tensor<4x8xf32>'}}
  %y = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<8xf32>):
    %r = tg.relu %x : tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @argument_count(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op body takes 2 arguments for 1 inputs}}
  %y = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>):
    tg.yield %x : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @yield_types(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %r = tg.relu %x : tensor<4x8xf32>
    // expected-error @+1 {{'tg.yield' op yields 'tensor<4x8xf32>', 'tensor<4x8xf32>' for kernel results 'tensor<4x8xf32>'}}
    tg.yield %r, %r : tensor<4x8xf32>, tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @no_results(%h: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.kernel' op computes nothing: a kernel has at least one result}}
  "tg.kernel"(%h) <{kind = #tg<kernel_kind elementwise>}> ({
  ^bb0(%x: tensor<4x8xf32>):
    "tg.yield"() : () -> ()
  }) : (tensor<4x8xf32>) -> ()
  return
}

// -----

func.func @not_elementwise(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel elementwise (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    // expected-error @+1 {{'tg.matmul' op is not elementwise: an elementwise kernel holds elementwise ops only}}
    %r = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @iteration_space(%h: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel elementwise (%h, %b : tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %c: tensor<8xf32>):
    // expected-error @+1 {{'tg.exp' op iterates over 8, the kernel over 4x8}}
    %e = tg.exp %c : tensor<8xf32>
    %r = tg.add %x, %e : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @outside_value(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %r = tg.add %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @gemm_without_matmul(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op a gemm kernel's body starts with tg.matmul, not tg.relu}}
  %y = tg.kernel gemm (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %r = tg.relu %x : tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @gemm_yields_input(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y:2 = tg.kernel gemm (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %r = tg.relu %p : tensor<4x8xf32>
    // expected-error @+1 {{'tg.yield' op yields neither the matmul's result nor an epilogue value}}
    tg.yield %r, %x : tensor<4x8xf32>, tensor<4x8xf32>
  } -> tensor<4x8xf32>, tensor<4x8xf32>
  return %y#1 : tensor<4x8xf32>
}

// -----

func.func @gemm_second_matmul(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel gemm (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // expected-error @+1 {{'tg.matmul' op is not elementwise: a gemm kernel's epilogue holds elementwise ops only}}
    %q = tg.matmul %p, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    tg.yield %q : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @gemm_epilogue_shape(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel gemm (%h, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>, %c: tensor<8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // expected-error @+1 {{'tg.exp' op iterates over 8, the gemm's result is 4x8}}
    %e = tg.exp %c : tensor<8xf32>
    %r = tg.add %p, %e : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @gemm_yields_input(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel gemm (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // expected-error @+1 {{'tg.yield' op yields neither the matmul's result nor an epilogue value}}
    tg.yield %x : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @reduction_without_reduction(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op a reduction kernel holds a tg.reduce_sum, tg.reduce_mean or tg.reduce_max}}
  %y = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %r = tg.relu %x : tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @reduction_twice(%h: tensor<4x8xf32>) -> tensor<f32> {
  %y = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tg.reduce_sum %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    // expected-error @+1 {{'tg.reduce_max' op is a second reduction: a reduction kernel holds one}}
    %m = tg.reduce_max %s : tensor<4xf32> -> tensor<f32>
    tg.yield %m : tensor<f32>
  } -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @reduction_two_results(%h: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.kernel' op a reduction kernel has one result, not 2}}
  %y:2 = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tg.reduce_sum %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    %e = tg.exp %s : tensor<4xf32>
    tg.yield %s, %e : tensor<4xf32>, tensor<4xf32>
  } -> tensor<4xf32>, tensor<4xf32>
  return %y#1 : tensor<4xf32>
}

// -----

func.func @reduction_two_passes(%h: tensor<2x4x8xf32>) -> tensor<4xf32> {
  %y = tg.kernel reduction (%h : tensor<2x4x8xf32>) {
  ^bb0(%x: tensor<2x4x8xf32>):
    // expected-error @+1 {{'tg.reduce_sum' op reduces dims that are not adjacent: a reduction kernel is one loop nest}}
    %s = tg.reduce_sum %x {dims = array<i64: 0, 2>} : tensor<2x4x8xf32> -> tensor<4xf32>
    tg.yield %s : tensor<4xf32>
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @reduction_prologue_not_elementwise(%h: tensor<4x8xf32>) -> tensor<8xf32> {
  %y = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    // expected-error @+1 {{'tg.softmax' op is not elementwise: a reduction kernel's prologue holds elementwise ops only}}
    %p = tg.softmax %x {axis = 1 : i64} : tensor<4x8xf32>
    %s = tg.reduce_sum %p {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    tg.yield %s : tensor<8xf32>
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @reduction_prologue_shape(%h: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %y = tg.kernel reduction (%h, %b : tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %c: tensor<8xf32>):
    // expected-error @+1 {{'tg.exp' op iterates over 8, the reduction's input is 4x8}}
    %e = tg.exp %c : tensor<8xf32>
    %p = tg.mul %x, %e : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %s = tg.reduce_sum %p {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    tg.yield %s : tensor<8xf32>
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @reduction_epilogue_shape(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tg.reduce_sum %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    // expected-error @+1 {{'tg.add' op iterates over 4x8, the reduction's result is 8}}
    %a = tg.add %x, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tg.yield %a : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @reduction_epilogue_not_elementwise(%h: tensor<4x8xf32>) -> tensor<8xf32> {
  %y = tg.kernel reduction (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tg.reduce_sum %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    // expected-error @+1 {{'tg.softmax' op is not elementwise: a reduction kernel's epilogue holds elementwise ops only}}
    %p = tg.softmax %s {axis = 0 : i64} : tensor<8xf32>
    tg.yield %p : tensor<8xf32>
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @reduction_yields_prologue(%h: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = tg.kernel reduction (%h : tensor<4x1xf32>) {
  ^bb0(%x: tensor<4x1xf32>):
    %e = tg.exp %x : tensor<4x1xf32>
    %s = tg.reduce_sum %e {dims = array<i64: 1>, keepdim = true} : tensor<4x1xf32> -> tensor<4x1xf32>
    // expected-error @+1 {{'tg.yield' op yields neither the reduction's result nor an epilogue value}}
    tg.yield %e : tensor<4x1xf32>
  } -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

func.func @reduction_epilogue_reads_prologue(%h: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = tg.kernel reduction (%h : tensor<4x1xf32>) {
  ^bb0(%x: tensor<4x1xf32>):
    %e = tg.exp %x : tensor<4x1xf32>
    %s = tg.reduce_sum %e {dims = array<i64: 1>, keepdim = true} : tensor<4x1xf32> -> tensor<4x1xf32>
    // expected-error @+1 {{'tg.add' op reads a prologue value: a reduction kernel's epilogue reads the reduced result, inputs and its own values}}
    %a = tg.add %s, %e : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
    tg.yield %a : tensor<4x1xf32>
  } -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

func.func @classifier_holds_loss_then_gradient(%l: tensor<8x10xf32>, %y: tensor<8xi64>) -> tensor<8x10xf32> {
  // expected-error @+1 {{'tg.kernel' op a classifier kernel holds tg.cross_entropy and then tg.cross_entropy_grad, nothing else}}
  %d = tg.kernel classifier (%l : tensor<8x10xf32>) {
  ^bb0(%x: tensor<8x10xf32>):
    %e = tg.exp %x : tensor<8x10xf32>
    tg.yield %e : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %d : tensor<8x10xf32>
}

// -----

func.func @classifier_same_logits(%l: tensor<8x10xf32>, %m: tensor<8x10xf32>, %y: tensor<8xi64>, %g: tensor<f32>) -> tensor<8x10xf32> {
  %d = tg.kernel classifier (%l, %m, %y, %g : tensor<8x10xf32>, tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %b: tensor<8x10xf32>, %labels: tensor<8xi64>, %one: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    // expected-error @+1 {{'tg.cross_entropy_grad' op differentiates other logits or labels than the classifier's tg.cross_entropy}}
    %grad = tg.cross_entropy_grad %one, %b, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %grad : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %d : tensor<8x10xf32>
}

// -----

func.func @classifier_incoming_gradient_is_an_input(%l: tensor<8x10xf32>, %y: tensor<8xi64>) -> tensor<8x10xf32> {
  %d = tg.kernel classifier (%l, %y : tensor<8x10xf32>, tensor<8xi64>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    // expected-error @+1 {{'tg.cross_entropy_grad' op reads its incoming gradient from inside the classifier kernel, not from an input}}
    %grad = tg.cross_entropy_grad %loss, %a, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %grad : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %d : tensor<8x10xf32>
}

// -----

func.func @classifier_same_attributes(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %g: tensor<f32>) -> tensor<8x10xf32> {
  %d = tg.kernel classifier (%l, %y, %g : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>, %one: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    // expected-error @+1 {{'tg.cross_entropy_grad' op has another ignore_index or reduction than the classifier's tg.cross_entropy}}
    %grad = tg.cross_entropy_grad %one, %a, %labels {ignore_index = 0 : i64} : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %grad : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %d : tensor<8x10xf32>
}

// -----

func.func @classifier_yields_the_gradient(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %g: tensor<f32>) -> tensor<f32> {
  %d = tg.kernel classifier (%l, %y, %g : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>, %one: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    %grad = tg.cross_entropy_grad %one, %a, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    // expected-error @+1 {{'tg.yield' op does not yield the gradient}}
    tg.yield %loss : tensor<f32>
  } -> tensor<f32>
  return %d : tensor<f32>
}

// -----

func.func @elementwise_with_matmul(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x4xf32> {
  %y = tg.kernel elementwise (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    // expected-error @+1 {{'tg.matmul' op is neither elementwise nor data movement: an elementwise kernel holds no other ops}}
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %t = tg.transpose %p {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    tg.yield %t : tensor<8x4xf32>
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @optimizer_without_update(%g: tensor<8xf32>, %s: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tg.kernel' op an optimizer kernel holds tg.optimizer_update ops, nothing else}}
  %y = tg.kernel optimizer (%g, %s : tensor<8xf32>, tensor<f32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<f32>):
    %m = tg.mul %a, %b : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
    tg.yield %m : tensor<8xf32>
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @optimizer_lanes_differ(%p: tensor<8xf32>, %g: tensor<8xf32>, %q: tensor<4xf32>, %h: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<8xf32>, tensor<4xf32>) {
  %y:2 = tg.kernel optimizer (%p, %g, %q, %h, %lr, %step : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>, %l: tensor<f32>, %s: tensor<i64>):
    %u = tg.optimizer_update sgd %a, %b, %l, %s : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64> -> tensor<8xf32>
    // expected-error @+1 {{'tg.optimizer_update' op differs from the optimizer kernel's first update in kind, hyperparameters, learning rate or step}}
    %v = tg.optimizer_update sgd %c, %d, %l, %s {weight_decay = 0.1 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
    tg.yield %u, %v : tensor<8xf32>, tensor<4xf32>
  } -> tensor<8xf32>, tensor<4xf32>
  return %y#0, %y#1 : tensor<8xf32>, tensor<4xf32>
}

// -----

// The epilogue a gemm kernel names must be its body.
func.func @gemm_epilogue_not_its_body(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op names the epilogue bias_gelu, but its body is not that epilogue}}
  %y = tg.kernel gemm (%h, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) attributes {epilogue = #tg<epilogue bias_gelu>} {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>, %c: tensor<8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %r = tg.add %p, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// An erf GELU is no cuBLASLt epilogue.
func.func @gemm_epilogue_erf_gelu(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op names the epilogue gelu, but its body is not that epilogue}}
  %y = tg.kernel gemm (%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) attributes {epilogue = #tg<epilogue gelu>} {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %g = tg.gelu %p : tensor<4x8xf32>
    tg.yield %g : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @epilogue_on_elementwise(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.kernel' op has an epilogue, which only a gemm kernel has}}
  %y = tg.kernel elementwise (%a : tensor<4xf32>) attributes {epilogue = #tg<epilogue bias>} {
  ^bb0(%x: tensor<4xf32>):
    %e = tg.exp %x : tensor<4xf32>
    %r = tg.neg %e : tensor<4xf32>
    tg.yield %r : tensor<4xf32>
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @body_ends_in_yield(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tg.kernel' op body must end in tg.yield}}
  %y = "tg.kernel"(%h) <{kind = #tg<kernel_kind elementwise>}> ({
  ^bb0(%x: tensor<4x8xf32>):
    %r = tg.relu %x : tensor<4x8xf32>
    "test.terminator"(%r) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @remap_results_differ(%h: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.kernel' op results iterate over}}
  %y:2 = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %r = tg.relu %x : tensor<4x8xf32>
    %t = tg.transpose %r {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    tg.yield %t, %r : tensor<8x4xf32>, tensor<4x8xf32>
  } -> tensor<8x4xf32>, tensor<4x8xf32>
  return %y#0, %y#1 : tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

func.func @classifier_yields_an_input(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %g: tensor<f32>) -> (tensor<8x10xf32>, tensor<f32>) {
  %d:2 = tg.kernel classifier (%l, %y, %g : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>, %one: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    %grad = tg.cross_entropy_grad %one, %a, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    // expected-error @+1 {{'tg.yield' op yields what is neither the loss nor its gradient}}
    tg.yield %grad, %one : tensor<8x10xf32>, tensor<f32>
  } -> tensor<8x10xf32>, tensor<f32>
  return %d#0, %d#1 : tensor<8x10xf32>, tensor<f32>
}

// -----

func.func @optimizer_yields_in_order(%p: tensor<8xf32>, %g: tensor<8xf32>, %q: tensor<4xf32>, %h: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<8xf32>) {
  %y:2 = tg.kernel optimizer (%p, %g, %q, %h, %lr, %step : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>, %l: tensor<f32>, %s: tensor<i64>):
    %u = tg.optimizer_update sgd %a, %b, %l, %s : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64> -> tensor<8xf32>
    %v = tg.optimizer_update sgd %c, %d, %l, %s : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
    // expected-error @+1 {{'tg.yield' op yields other values than the updates' new parameters and states, in order}}
    tg.yield %v, %u : tensor<4xf32>, tensor<8xf32>
  } -> tensor<4xf32>, tensor<8xf32>
  return %y#0, %y#1 : tensor<4xf32>, tensor<8xf32>
}

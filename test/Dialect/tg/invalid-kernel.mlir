// RUN: tg-opt %s -split-input-file -verify-diagnostics

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

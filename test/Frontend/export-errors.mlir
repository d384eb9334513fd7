// IR that a model file cannot hold is refused with a diagnostic at the op,
// argument or attribute in the way.
// RUN: not tg-translate --export-model --split-input-file %s 2>&1 | FileCheck %s

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: no @forward function with a body
module attributes {tg.model = "m"} {
}

// -----

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: the module has no tg.model name
module {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: argument 1 of @forward needs exactly one of tg.param and tg.input to be written to a model file
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}, %x: tensor<2xf32>) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: argument 1 has type 'tensor<2xf64>'; a model file holds statically shaped tensors of f32, bf16, f16, f8e4m3, f8e5m2, i32, i64, i1
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}, %x: tensor<2xf64> {tg.input = "x"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    // CHECK: export-errors.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'tg.gelu_grad' cannot be written to a model file: a model file holds the forward ops of the tg dialect
    %g = tg.gelu_grad %w, %w : tensor<2xf32>
    %l = tg.reduce_sum %g : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  func.func @forward(%x: tensor<2x4xf32> {tg.input = "x"}, %b: tensor<4xf32> {tg.param = "b"}) -> (tensor<f32> {tg.output = "loss"}) {
    // CHECK: export-errors.mlir:[[@LINE+1]]:{{[0-9]+}}: error: a layer_norm with a bias but no weight cannot be written to a model file (its inputs are positional: x, weight, bias)
    %y = tg.layer_norm %x bias %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %l = tg.reduce_sum %y : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    // CHECK: export-errors.mlir:[[@LINE+1]]:{{[0-9]+}}: error: attribute 'note' cannot be written to a model file
    %l = tg.reduce_sum %w {note = "mine"} : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: result 1 (tg.output = "x2") returns the tensor named 'w'; a model file names results by their tensors, so a tensor cannot be returned under another name or twice
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}, tensor<2xf32> {tg.output = "x2"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<2xf32>
  }
}

// -----

module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: result 0 of @forward has no tg.output name
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> tensor<f32> {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.optimizer.learning_rate: no such field in the model schema's Optimizer table (it has kind, lr, beta1, beta2, eps, weight_decay, momentum, nesterov, alpha, no_decay, clip_grad_norm)
module attributes {tg.model = "m", tg.training = {optimizer = {learning_rate = 1.0e-3}}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.batch_size: expected a 32-bit integer, got 4294967296 : i64
module attributes {tg.model = "m", tg.training = {batch_size = 4294967296 : i64}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.mesh[0].name: required field is missing
module attributes {tg.model = "m", tg.training = {mesh = [{size = 2 : i64}]}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Each field of tg.training has the kind its model-file field has: a bool,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.auto_batch: expected a bool, got 1 : i64
module attributes {tg.model = "m", tg.training = {auto_batch = 1 : i64}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// a float,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.optimizer.lr: expected a float, got "x"
module attributes {tg.model = "m", tg.training = {optimizer = {lr = "x"}}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// a string,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.precision: expected a string, got 1 : i64
module attributes {tg.model = "m", tg.training = {precision = 1 : i64}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// a dictionary (a table),
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.optimizer: expected a dictionary, got 1 : i64
module attributes {tg.model = "m", tg.training = {optimizer = 1 : i64}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// an array,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.mesh: expected an array, got "x"
module attributes {tg.model = "m", tg.training = {mesh = "x"}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// of dictionaries,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.mesh: expected dictionaries, got 1 : i64
module attributes {tg.model = "m", tg.training = {mesh = [1 : i64]}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// of strings,
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.optimizer.no_decay: expected strings, got 1 : i64
module attributes {tg.model = "m", tg.training = {optimizer = {no_decay = [1 : i64]}}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// of integers.
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.pipeline_cuts: expected integers, got "a"
module attributes {tg.model = "m", tg.training = {pipeline_cuts = ["a"]}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A model file names each tensor once.
module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: tensor name 'w' is used by two arguments
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}, %x: tensor<2xf32> {tg.input = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A model file's first result is its loss.
module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: @forward returns nothing; result 0 must be the loss
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) {
    return
  }
}

// -----

// A constant is written as its values: a resource blob is not.
module attributes {tg.model = "m"} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    // CHECK: export-errors.mlir:[[@LINE+1]]:10: error: only dense constants can be written to a model file
    %c = tg.constant dense_resource<blob> : tensor<2xf32>
    %a = tg.add %w, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    %l = tg.reduce_sum %a : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F0000803F"
    }
  }
#-}

// -----

// A 32-bit field's values must fit it.
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: tg.training.pipeline_cuts: expected a 32-bit integer, got 4294967296
module attributes {tg.model = "m", tg.training = {pipeline_cuts = [4294967296]}} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Results are named by tg.output: two tensors cannot take one name.
module attributes {tg.model = "m"} {
  // CHECK: export-errors.mlir:[[@LINE+1]]:3: error: tensor name 'w2' is used twice
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}, tensor<2xf32> {tg.output = "w2"}, tensor<2xf32> {tg.output = "w2"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    %n = tg.neg %w : tensor<2xf32>
    %e = tg.exp %w : tensor<2xf32>
    return %l, %n, %e : tensor<f32>, tensor<2xf32>, tensor<2xf32>
  }
}

// -----

// Every string of a model file is UTF-8; the diagnostic names the field.
// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: the model file's name would not be UTF-8; model files hold UTF-8 strings
module attributes {tg.model = "m\FF"} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK: export-errors.mlir:[[@LINE+1]]:1: error: the model file's params[0].name would not be UTF-8; model files hold UTF-8 strings
module attributes {tg.model = "m"} {
  func.func @forward(%w: tensor<2xf32> {tg.param = "w\C3"}) -> (tensor<f32> {tg.output = "loss"}) {
    %l = tg.reduce_sum %w : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

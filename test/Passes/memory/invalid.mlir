// RUN: tg-opt %s -tg-plan-memory -verify-diagnostics

// The arena plan follows one block's order: a function of two (here the
// second unreachable) is not planned.
// expected-error @+1 {{tg-plan-memory: @two must have a single block}}
func.func @two(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
^bb1:
  return %x : tensor<4xf32>
}

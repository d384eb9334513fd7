// RUN: tg-opt %s -tg-fuse=fusion=greedy -verify-diagnostics

// expected-error @+1 {{tg-fuse: unknown fusion 'greedy'; expected none, elementwise or all}}
func.func @bad_option(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// RUN: not tg-opt %s -tg-fuse=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: tg-fuse: unknown target 'tpu'; expected cpu or cuda

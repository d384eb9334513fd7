// RUN: tg-opt %s -split-input-file -verify-diagnostics -tg-schedule="bucket-bytes=-1"

// expected-error @+1 {{tg-schedule: bucket-bytes must be 0 or more, got -1}}
func.func @negative_bucket_bytes(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = tg.all_reduce %a : tensor<8xf32>
  return %r : tensor<8xf32>
}

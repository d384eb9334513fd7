// RUN: tg-opt %s -tg-partition -verify-diagnostics

// tg-partition cuts the values tg-propagate-sharding sharded: an argument
// without a sharding is refused, named.
tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{tg-partition: @train_step's argument 0 has no sharding; run tg-propagate-sharding first}}
func.func @train_step(%x: tensor<4x8xf32> {tg.input = "x"}) -> tensor<4x8xf32> {
  %y = tg.exp %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// RUN: tg-opt %s -split-input-file -tg-propagate-sharding -verify-diagnostics

// A parameter pinned one way in one function and another way in another is
// named with both pins: the functions share its one copy.
tg.mesh @mesh ["tp" = 2]
func.func @forward(%w: tensor<8x8xf32> {tg.param = "w", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x8xf32> {
  return %w : tensor<8x8xf32>
}
// expected-error @+1 {{parameter 'w' is pinned to}}
func.func @train_step(%w: tensor<8x8xf32> {tg.param = "w", tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x8xf32> {
  return %w : tensor<8x8xf32>
}

// -----

// A batch that the data axes cannot share evenly is refused, with the
// input, its rows and the processes.
tg.mesh @mesh ["data" = 4]
// expected-error @+1 {{batch input 'x' has 6 rows, which do not divide over the 4 processes of the data axes}}
func.func @forward(%x: tensor<6x8xf32> {tg.input = "x", tg.dim_names = ["batch", ""]}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

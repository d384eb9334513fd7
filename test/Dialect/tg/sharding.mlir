// RUN: tg-opt %s | tg-opt | FileCheck %s

// Meshes, shardings on arguments, results and ops, the sharding pin and the
// collectives print and parse back unchanged.

// CHECK: tg.mesh @mesh ["data" = 2, "tp" = 2]
tg.mesh @mesh ["data" = 2, "tp" = 2]
// CHECK: tg.mesh @elastic ["data" = 2 elastic, "tp" = 2]
tg.mesh @elastic ["data" = 2 elastic, "tp" = 2]

// CHECK-LABEL: func.func @shardings_round_trip
// CHECK-SAME: tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>
// CHECK-SAME: tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>
// CHECK-SAME: tg.sharding = #tg.sharding<@mesh, [{}, {}], partial = {"tp"}>
func.func @shardings_round_trip(
    %x: tensor<8x64xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>},
    %w: tensor<64x128xf32> {tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>,
                            tg.sharding_origin = "pin: fc.weight"})
    -> (tensor<8x128xf32> {tg.sharding = #tg.sharding<@mesh, [{}, {}], partial = {"tp"}>}) {
  // CHECK: tg.matmul
  // CHECK-SAME: tg.sharding = [#tg.sharding<@mesh, [{"data"}, {"tp"}]>]
  // CHECK-SAME: tg.sharding_origin = ["propagated"]
  %y = tg.matmul %x, %w {tg.sharding = [#tg.sharding<@mesh, [{"data"}, {"tp"}]>],
                         tg.sharding_origin = ["propagated"]}
      : tensor<8x64xf32>, tensor<64x128xf32> -> tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @pin_and_collectives
func.func @pin_and_collectives(%x: tensor<8x64xf32>, %s: tensor<f32>) -> tensor<8x64xf32> {
  // CHECK: tg.sharding_constraint %{{.*}} <@mesh, [{"data", "tp"}, {}]> : tensor<8x64xf32>
  %p = tg.sharding_constraint %x <@mesh, [{"data", "tp"}, {}]> : tensor<8x64xf32>
  // CHECK: tg.all_slice %{{.*}} {dim = 1 : i64, mesh_axis = "tp"} : tensor<8x64xf32> -> tensor<8x32xf32>
  %a = tg.all_slice %x {dim = 1 : i64, mesh_axis = "tp"} : tensor<8x64xf32> -> tensor<8x32xf32>
  // CHECK: tg.all_gather %{{.*}} {dim = 1 : i64, mesh_axis = "tp", tg.reshard = "why"} : tensor<8x32xf32> -> tensor<8x64xf32>
  %b = tg.all_gather %a {dim = 1 : i64, mesh_axis = "tp", tg.reshard = "why"} : tensor<8x32xf32> -> tensor<8x64xf32>
  // CHECK: tg.reduce_scatter %{{.*}} {dim = 0 : i64, mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<8x64xf32> -> tensor<4x64xf32>
  %c = tg.reduce_scatter %b {dim = 0 : i64, mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<8x64xf32> -> tensor<4x64xf32>
  // CHECK: tg.all_reduce %{{.*}} {mesh_axis = "tp"} : tensor<f32>
  %d = tg.all_reduce %s {mesh_axis = "tp"} : tensor<f32>
  return %p : tensor<8x64xf32>
}

// Point-to-point, as a pipeline's neighbouring stages use them.
// CHECK-LABEL: func.func @send_and_recv
func.func @send_and_recv(%h: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // CHECK: tg.send %{{.*}} {mesh_axis = "tp", offset = 1 : i64, tag = 3 : i64} : tensor<8x64xf32>
  tg.send %h {mesh_axis = "tp", offset = 1 : i64, tag = 3 : i64} : tensor<8x64xf32>
  // CHECK: tg.recv {mesh_axis = "tp", offset = -1 : i64, tag = 3 : i64} : tensor<8x64xf32>
  %g = tg.recv {mesh_axis = "tp", offset = -1 : i64, tag = 3 : i64} : tensor<8x64xf32>
  return %g : tensor<8x64xf32>
}

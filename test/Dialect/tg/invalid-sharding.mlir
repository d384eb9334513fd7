// RUN: tg-opt %s -split-input-file -verify-diagnostics

// Every diagnostic about meshes, shardings and the collectives, one broken
// input per case.

// expected-error @+1 {{'tg.mesh' op axis "data" appears twice}}
tg.mesh @mesh ["data" = 2, "data" = 2]

// -----

// expected-error @+1 {{'tg.mesh' op axis "tp" must have a size of at least 1, got 0}}
tg.mesh @mesh ["tp" = 0]

// -----

// expected-error @+1 {{'tg.mesh' op needs at least one axis}}
tg.mesh @mesh []

// -----

// expected-error @+1 {{'tg.mesh' op has 2 elastic axes; at most one takes its size from the process count}}
tg.mesh @mesh ["data" = 2 elastic, "dp" = 2 elastic]

// -----

// expected-error @+1 {{'tg.mesh' op elastic axis "tp" is not an axis}}
tg.mesh @mesh ["data" = 2] {elastic = ["tp"]}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{argument 0: unknown mesh axis "tp"; mesh @mesh has "data"}}
func.func @unknown_axis(%x: tensor<8x4xf32> {tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 4]
// expected-error @+1 {{argument 0: dimension 0 of size 6 does not divide into 4 pieces over "data"}}
func.func @axis_does_not_divide(%x: tensor<6x4xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{mesh axis "data" is used more than once}}
func.func @axis_used_twice(%x: tensor<8x4xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}, {"data"}]>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{mesh axis "data" is used more than once}}
func.func @split_and_partial(%x: tensor<8x4xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}, {}], partial = {"data"}>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{argument 0: sharding has 1 dimensions for a tensor of rank 2}}
func.func @rank_mismatch(%x: tensor<8x4xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}]>}) {
  return
}

// -----

// expected-error @+1 {{argument 0: sharding names mesh @nowhere, which the module does not define}}
func.func @no_such_mesh(%x: tensor<8x4xf32> {tg.sharding = #tg.sharding<@nowhere, [{}, {}]>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{result 0: dimension 0 of size 3 does not divide into 2 pieces over "data"}}
func.func @result_sharding(%x: tensor<3xf32>) -> (tensor<3xf32> {tg.sharding = #tg.sharding<@mesh, [{"data"}]>}) {
  return %x : tensor<3xf32>
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @op_sharding_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.sharding' must hold one entry per result (1)}}
  %0 = tg.relu %x {tg.sharding = []} : tensor<4xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @op_sharding_checked(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result 0: dimension 1 of size 3 does not divide into 2 pieces over "data"}}
  %0 = tg.relu %x {tg.sharding = [#tg.sharding<@mesh, [{}, {"data"}]>]} : tensor<4x3xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @constraint_checked(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'tg.sharding_constraint' op unknown mesh axis "tp"; mesh @mesh has "data"}}
  %0 = tg.sharding_constraint %x <@mesh, [{}, {"tp"}]> : tensor<4x3xf32>
  return
}

// -----

func.func @gather_needs_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_gather' op runs over mesh axis "data" but the module defines no tg.mesh}}
  %0 = tg.all_gather %x {dim = 0 : i64, mesh_axis = "data"} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @gather_unknown_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_gather' op runs over mesh axis "tp", which mesh @mesh does not have}}
  %0 = tg.all_gather %x {dim = 0 : i64, mesh_axis = "tp"} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @gather_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_gather' op result shape must be 8 over the 2 processes of "data", got 4}}
  %0 = tg.all_gather %x {dim = 0 : i64, mesh_axis = "data"} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 4]
func.func @scatter_divides(%x: tensor<6xf32>) {
  // expected-error @+1 {{'tg.reduce_scatter' op dim 0 of size 6 does not divide over the 4 processes of "data"}}
  %0 = tg.reduce_scatter %x {dim = 0 : i64, mesh_axis = "data"} : tensor<6xf32> -> tensor<2xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @slice_dim_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_slice' op dim 1 is out of range for rank 1}}
  %0 = tg.all_slice %x {dim = 1 : i64, mesh_axis = "data"} : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @slice_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_slice' op result 'tensor<2xbf16>' must have the input's rank and element type}}
  %0 = tg.all_slice %x {dim = 0 : i64, mesh_axis = "data"} : tensor<4xf32> -> tensor<2xbf16>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @all_reduce_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op runs over mesh axis "tp", which mesh @mesh does not have}}
  %0 = tg.all_reduce %x {mesh_axis = "tp"} : tensor<4xf32>
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @reshard_on_collective(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.reshard' belongs on a collective}}
  %0 = tg.relu %x {tg.reshard = "x"} : tensor<4xf32>
  return
}

// -----

func.func @send_needs_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.send' op runs over mesh axis "pp" but the module defines no tg.mesh}}
  tg.send %x {mesh_axis = "pp", offset = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

tg.mesh @mesh ["pp" = 2]
func.func @send_to_itself(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.send' op offset 0 names this process itself}}
  tg.send %x {mesh_axis = "pp", offset = 0 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

tg.mesh @mesh ["pp" = 2]
func.func @recv_past_the_axis() -> tensor<4xf32> {
  // expected-error @+1 {{'tg.recv' op offset -2 reaches past the 2 processes of "pp"}}
  %0 = tg.recv {mesh_axis = "pp", offset = -2 : i64, tag = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @recv_unknown_axis() -> tensor<4xf32> {
  // expected-error @+1 {{'tg.recv' op runs over mesh axis "pp", which mesh @mesh does not have}}
  %0 = tg.recv {mesh_axis = "pp", offset = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tg.mesh @mesh ["pp" = 2]
func.func @negative_tag(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.send' op attribute 'tag' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  tg.send %x {mesh_axis = "pp", offset = 1 : i64, tag = -1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'tg.mesh' op mesh axes are named by non-empty strings}}
tg.mesh @mesh ["" = 2]

// -----

// expected-error @+1 {{'tg.mesh' op has 1 axis names for 2 sizes}}
"tg.mesh"() {sym_name = "mesh", axes = ["data"], shape = array<i64: 2, 2>} : () -> ()

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{mesh axes are named by non-empty strings}}
func.func @empty_axis_name(%x: tensor<4xf32> {tg.sharding = #tg.sharding<@mesh, [{""}]>}) {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
// expected-error @+1 {{argument 0: only a ranked tensor can be sharded, not 'tensor<*xf32>'}}
func.func @unranked(%x: tensor<*xf32> {tg.sharding = #tg.sharding<@mesh, []>}) {
  return
}

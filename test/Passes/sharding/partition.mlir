// RUN: tg-opt %s -split-input-file -tg-propagate-sharding -tg-partition | FileCheck %s

// tg-partition on small functions: local shapes, and a collective exactly
// where a sharding changes, each saying why.

tg.mesh @mesh ["tp" = 2]

// Megatron's MLP: the first weight split by columns, the second by rows;
// the hidden activation stays split and one all-reduce makes the output
// whole.
// CHECK-LABEL: func.func @column_then_row_parallel
// CHECK-SAME: %[[X:.+]]: tensor<8x16xf32>
// CHECK-SAME: %[[W1:.+]]: tensor<16x16xf32> {{{.*}}tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>
// CHECK-SAME: %[[W2:.+]]: tensor<16x16xf32> {{{.*}}tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>
// CHECK-SAME: tg.partitioned
// CHECK: %[[H:.+]] = tg.matmul %[[X]], %[[W1]] : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[R:.+]] = tg.relu %[[H]] : tensor<8x16xf32>
// CHECK: %[[Y:.+]] = tg.matmul %[[R]], %[[W2]] : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[S:.+]] = tg.all_reduce %[[Y]] {mesh_axis = "tp", tg.reshard = "tg.matmul for result 0: [{}, {}], partial = {tp} -> [{}, {}]"}
// CHECK-NOT: tg.all_
// CHECK: return %[[S]]
func.func @column_then_row_parallel(
    %x: tensor<8x16xf32> {tg.input = "x"},
    %w1: tensor<16x32xf32> {tg.param = "w1", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>},
    %w2: tensor<32x16xf32> {tg.param = "w2", tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>})
    -> tensor<8x16xf32> {
  %h = tg.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %r = tg.relu %h : tensor<8x32xf32>
  %y = tg.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

tg.mesh @mesh ["tp" = 2]

// A pin in the middle: the split activation is gathered whole for it, and
// the op after it runs whole.
// CHECK-LABEL: func.func @pin_gathers
// CHECK: %[[H:.+]] = tg.matmul {{.*}} -> tensor<8x16xf32>
// CHECK: %[[G:.+]] = tg.all_gather %[[H]] {dim = 1 : i64, mesh_axis = "tp", tg.reshard = "tg.matmul for a sharding pin: [{}, {tp}] -> [{}, {}]"} : tensor<8x16xf32> -> tensor<8x32xf32>
// CHECK: tg.relu %[[G]] : tensor<8x32xf32>
func.func @pin_gathers(
    %x: tensor<8x16xf32> {tg.input = "x"},
    %w1: tensor<16x32xf32> {tg.param = "w1", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>})
    -> tensor<8x32xf32> {
  %h = tg.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %p = tg.sharding_constraint %h <@mesh, [{}, {}]> : tensor<8x32xf32>
  %r = tg.relu %p : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

tg.mesh @mesh ["data" = 2]

// A mean over a split batch: each process's mean of its half, halved, is
// its term of the whole mean.
// CHECK-LABEL: func.func @mean_over_split_batch
// CHECK-SAME: tensor<4x10xf32>
// CHECK: %[[L:.+]] = tg.cross_entropy {{.*}} : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
// CHECK: %[[HALF:.+]] = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[T:.+]] = tg.mul %[[L]], %[[HALF]]
// CHECK: %[[S:.+]] = tg.all_reduce %[[T]] {tg.reshard = "tg.cross_entropy for result 0: [], partial = {data} -> []"}
// CHECK: return %[[S]]
func.func @mean_over_split_batch(
    %logits: tensor<8x10xf32> {tg.input = "logits", tg.dim_names = ["batch", ""]},
    %labels: tensor<8xi64> {tg.input = "labels", tg.dim_names = ["batch"]})
    -> tensor<f32> {
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

tg.mesh @mesh ["data" = 2]

// A slice of a whole dim keeps its local limit on the split one. Result 0
// (the loss, by convention) is returned whole.
// CHECK-LABEL: func.func @slice_of_split_rows
// CHECK: %[[S:.+]] = tg.slice %{{.*}} {limit = array<i64: 4, 6>, start = array<i64: 0, 2>} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: tg.all_gather %[[S]] {dim = 0 : i64, mesh_axis = "data", tg.reshard = "tg.slice for result 0: [{data}, {}] -> [{}, {}]"} : tensor<4x4xf32> -> tensor<8x4xf32>
func.func @slice_of_split_rows(
    %x: tensor<8x8xf32> {tg.input = "x", tg.dim_names = ["batch", ""]})
    -> (tensor<8x4xf32> {tg.output = "y"}) {
  %s = tg.slice %x {start = array<i64: 0, 2>, limit = array<i64: 8, 6>} : tensor<8x8xf32> -> tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

tg.mesh @mesh ["data" = 2]

// A concatenation along its last dim (axis -1) keeps the split rows: each
// process concatenates its pieces.
// CHECK-LABEL: func.func @concat_of_split_rows
// CHECK: %[[C:.+]] = tg.concat %{{.+}}, %{{.+}} {axis = -1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: tg.all_gather %[[C]] {dim = 0 : i64
func.func @concat_of_split_rows(
    %a: tensor<8x3xf32> {tg.input = "a", tg.dim_names = ["batch", ""]},
    %b: tensor<8x5xf32> {tg.input = "b", tg.dim_names = ["batch", ""]})
    -> tensor<8x8xf32> {
  %c = tg.concat %a, %b {axis = -1 : i64} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

tg.mesh @mesh ["data" = 4]

// A whole value pinned as a partial sum over an axis: the axis' first
// process keeps it and the others hold zeros, so the sum is the value
// exactly. No communication: each process finds its coordinate by slicing
// [0, 4) over the axis.
// CHECK-LABEL: func.func @whole_to_partial
// CHECK: %[[I:.+]] = tg.iota : tensor<4xf32>
// CHECK: %[[K:.+]] = tg.all_slice %[[I]] {dim = 0 : i64, mesh_axis = "data", tg.reshard = "{{.*}}: [{}, {}] -> [{}, {}], partial = {data}"} : tensor<4xf32> -> tensor<1xf32>
// CHECK: %[[F:.+]] = tg.compare eq, %[[K]], %{{.+}} : tensor<1xf32>, tensor<1xf32> -> tensor<1xi1>
// CHECK: %[[P:.+]] = tg.select %[[F]], %{{.+}}, %{{.+}} : tensor<1xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK: tg.all_reduce %[[P]] {tg.reshard = "tg.sharding_constraint for a sharding pin: [{}, {}], partial = {data} -> [{}, {}]"}
func.func @whole_to_partial(%w: tensor<2x3xf32> {tg.param = "w"})
    -> tensor<2x3xf32> {
  %p = tg.sharding_constraint %w <@mesh, [{}, {}], partial = {"data"}> : tensor<2x3xf32>
  %r = tg.sharding_constraint %p <@mesh, [{}, {}]> : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

tg.mesh @mesh ["tp" = 2]

// Vocabulary-parallel embedding (Megatron-LM): the table split by rows;
// each process looks up the ids of its piece (found by its coordinate) and
// zeros for the others, and one all-reduce sums the pieces.
// CHECK-LABEL: func.func @vocab_parallel_embedding
// CHECK-SAME: %[[T:.+]]: tensor<4x4xf32> {{{.*}}tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>
// CHECK-SAME: %[[IDX:.+]]: tensor<2x3xi64>
// CHECK: %[[K:.+]] = tg.all_slice {{.*}}tg.reshard = "vocabulary-parallel tg.embedding: this process's piece"} : tensor<2xf32> -> tensor<1xf32>
// CHECK: %[[OFF:.+]] = tg.mul %[[K]], %{{.+}} : tensor<1xf32>, tensor<f32> -> tensor<1xf32>
// CHECK: %[[F:.+]] = tg.cast %[[IDX]] : tensor<2x3xi64> to tensor<2x3xf32>
// CHECK: %[[L:.+]] = tg.sub %[[F]], %[[OFF]]
// CHECK: %[[C:.+]] = tg.minimum
// CHECK: %[[IN:.+]] = tg.compare eq, %[[C]], %[[L]]
// CHECK: %[[SAFE:.+]] = tg.cast %[[C]] : tensor<2x3xf32> to tensor<2x3xi64>
// CHECK: %[[E:.+]] = tg.embedding %[[T]], %[[SAFE]] : tensor<4x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK: %[[IN3:.+]] = tg.reshape %[[IN]] : tensor<2x3xi1> -> tensor<2x3x1xi1>
// CHECK: %[[P:.+]] = tg.select %[[IN3]], %[[E]], %{{.+}}
// CHECK: tg.all_reduce %[[P]] {mesh_axis = "tp", tg.reshard = "tg.embedding for result 0: [{}, {}, {}], partial = {tp} -> [{}, {}, {}]"}
func.func @vocab_parallel_embedding(
    %t: tensor<8x4xf32> {tg.param = "wte", tg.sharding = #tg.sharding<@mesh, [{"tp"}, {}]>},
    %idx: tensor<2x3xi64> {tg.input = "idx"}) -> tensor<2x3x4xf32> {
  %e = tg.embedding %t, %idx : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return %e : tensor<2x3x4xf32>
}

// -----

tg.mesh @mesh ["tp" = 2]

// Vocabulary-parallel cross-entropy: the logits split by class; the row
// maxima are gathered and the sums of exponentials all-reduced, one number
// per row each. The loss is a partial sum: each process's share of minus
// the target logit, plus the log-sum-exp on the first process. Its gradient
// stays split like the logits.
// CHECK-LABEL: func.func @vocab_parallel_cross_entropy
// CHECK-SAME: %[[X:.+]]: tensor<6x4xf32> {{{.*}}tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>
// CHECK: %[[M:.+]] = tg.reduce_max %[[X]] {dims = array<i64: 1>, keepdim = true} : tensor<6x4xf32> -> tensor<6x1xf32>
// CHECK: %[[MS:.+]] = tg.all_gather %[[M]] {dim = 1 : i64, mesh_axis = "tp", tg.reshard = "vocabulary-parallel tg.cross_entropy: the rows' maxima"} : tensor<6x1xf32> -> tensor<6x2xf32>
// CHECK: %[[G:.+]] = tg.reduce_max %[[MS]]
// CHECK: %[[S:.+]] = tg.all_reduce %{{.+}} {mesh_axis = "tp", tg.reshard = "vocabulary-parallel tg.cross_entropy: the rows' sums of exponentials"} : tensor<6x1xf32>
// CHECK: %[[LOSS:.+]] = tg.div %{{.+}}, %{{.+}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: tg.all_gather {{.*}}"vocabulary-parallel tg.cross_entropy_grad: the rows' maxima"
// CHECK: tg.all_reduce {{.*}}"vocabulary-parallel tg.cross_entropy_grad: the rows' sums of exponentials"
// CHECK: %[[D:.+]] = tg.select {{.*}} -> tensor<6x4xf32>
// CHECK: %[[R:.+]] = tg.all_reduce %[[LOSS]] {mesh_axis = "tp", tg.reshard = "tg.cross_entropy for result 0: [], partial = {tp} -> []"}
// CHECK-NOT: tg.all_
// CHECK: return %[[R]], %[[D]]
func.func @vocab_parallel_cross_entropy(
    %x: tensor<6x8xf32> {tg.input = "logits", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>},
    %y: tensor<6xi64> {tg.input = "labels"}, %g: tensor<f32> {tg.input = "g"})
    -> (tensor<f32>, tensor<6x8xf32>) {
  %l = tg.cross_entropy %x, %y : tensor<6x8xf32>, tensor<6xi64> -> tensor<f32>
  %d = tg.cross_entropy_grad %g, %x, %y : tensor<f32>, tensor<6x8xf32>, tensor<6xi64> -> tensor<6x8xf32>
  return %l, %d : tensor<f32>, tensor<6x8xf32>
}

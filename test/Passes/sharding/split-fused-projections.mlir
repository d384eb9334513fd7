// RUN: tg-opt %s -split-input-file -verify-diagnostics -tg-split-fused-projections | FileCheck %s
// RUN: tg-opt %s -split-input-file -verify-diagnostics -tg-split-fused-projections -tg-propagate-sharding="preset=tp" -tg-partition | FileCheck %s --check-prefix=TP

// GPT-2's fused QKV projection on a tensor-parallel mesh: the weight is
// held as [K, 3, N] and the bias as [3, N], their shapes in files kept in
// tg.file_shape, and each block computed from its own view.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK-SAME: %[[W:[^:]+]]: tensor<8x3x8xf32> {tg.file_shape = array<i64: 8, 24>, tg.param = "c_attn.weight"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<3x8xf32> {tg.file_shape = array<i64: 24>, tg.param = "c_attn.bias"}
// CHECK-NOT: tensor<2x4x24xf32>
// The blocks' products side by side where the fused one was (tg-partition
// then reshards their common input once), each bias added after.
// CHECK: %[[WQ:.+]] = tg.slice %[[W]] {limit = array<i64: 8, 1, 8>, start = array<i64: 0, 0, 0>} : tensor<8x3x8xf32> -> tensor<8x1x8xf32>
// CHECK: %[[WQ2:.+]] = tg.reshape %[[WQ]] : tensor<8x1x8xf32> -> tensor<8x8xf32>
// CHECK: %[[WK:.+]] = tg.slice %[[W]] {limit = array<i64: 8, 2, 8>, start = array<i64: 0, 1, 0>}
// CHECK: %[[WK2:.+]] = tg.reshape %[[WK]]
// CHECK: %[[WV:.+]] = tg.slice %[[W]] {limit = array<i64: 8, 3, 8>, start = array<i64: 0, 2, 0>}
// CHECK: %[[WV2:.+]] = tg.reshape %[[WV]]
// CHECK: %[[Q:.+]] = tg.matmul %[[X]], %[[WQ2]] : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[K:.+]] = tg.matmul %[[X]], %[[WK2]]
// CHECK: %[[V:.+]] = tg.matmul %[[X]], %[[WV2]]
// CHECK: %[[BQ:.+]] = tg.slice %[[B]] {limit = array<i64: 1, 8>, start = array<i64: 0, 0>} : tensor<3x8xf32> -> tensor<1x8xf32>
// CHECK: %[[BQ2:.+]] = tg.reshape %[[BQ]] : tensor<1x8xf32> -> tensor<8xf32>
// CHECK: %[[QB:.+]] = tg.add %[[Q]], %[[BQ2]]
// CHECK: %[[KB:.+]] = tg.add %[[K]],
// CHECK: %[[VB:.+]] = tg.add %[[V]],
// CHECK: %[[QK:.+]] = tg.add %[[QB]], %[[KB]]
// CHECK: tg.add %[[QK]], %[[VB]]
// CHECK-NOT: tensor<2x4x24xf32>
// CHECK: return

// Under tp each process holds the same heads of q, k and v: the weight is
// split along the view's last dim, the blocks are computed on each
// process's heads, and nothing is gathered.
// TP-LABEL: func.func @forward
// TP-SAME: tensor<8x3x4xf32> {tg.file_shape = array<i64: 8, 24>, tg.param = "c_attn.weight", tg.sharding = #tg.sharding<@mesh, [{}, {}, {"tp"}]>, tg.sharding_origin = "preset tp: column-parallel for tg.matmul
// TP-SAME: tensor<3x4xf32> {tg.file_shape = array<i64: 24>, tg.param = "c_attn.bias", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>
// TP-NOT: tg.all_gather
// TP-COUNT-3: tg.matmul {{.*}} -> tensor<2x4x4xf32>
// TP: tg.all_gather {{.*}} tg.reshard = "tg.add for result 0
// TP: return
tg.mesh @mesh ["tp" = 2]
func.func @forward(%x: tensor<2x4x8xf32> {tg.input = "x"},
                   %w: tensor<8x24xf32> {tg.param = "c_attn.weight"},
                   %b: tensor<24xf32> {tg.param = "c_attn.bias"})
    -> tensor<2x4x8xf32> {
  %m = tg.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x24xf32> -> tensor<2x4x24xf32>
  %qkv = tg.add %m, %b : tensor<2x4x24xf32>, tensor<24xf32> -> tensor<2x4x24xf32>
  %q = tg.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %v = tg.slice %qkv {start = array<i64: 0, 0, 16>, limit = array<i64: 2, 4, 24>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %k = tg.slice %qkv {start = array<i64: 0, 0, 8>, limit = array<i64: 2, 4, 16>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %qk = tg.add %q, %k : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %qkv2 = tg.add %qk, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %qkv2 : tensor<2x4x8xf32>
}

// -----

// nn.Linear's layout, W [2N, K] read transposed, without a bias: held as
// [2, N, K], the blocks along the first dim.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<2x8x6xf32> {tg.file_shape = array<i64: 16, 6>, tg.param = "kv.weight"}
// CHECK: tg.slice %{{.*}} {limit = array<i64: 1, 8, 6>, start = array<i64: 0, 0, 0>} : tensor<2x8x6xf32> -> tensor<1x8x6xf32>
// CHECK: tg.reshape %{{.*}} : tensor<1x8x6xf32> -> tensor<8x6xf32>
// CHECK: tg.slice %{{.*}} {limit = array<i64: 2, 8, 6>, start = array<i64: 1, 0, 0>}
// CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<4x6xf32>, tensor<8x6xf32> -> tensor<4x8xf32>
// TP-LABEL: func.func @forward
// TP-SAME: tensor<2x4x6xf32> {tg.file_shape = array<i64: 16, 6>, tg.param = "kv.weight", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}, {}]>
// TP-NOT: tg.all_gather
// TP-COUNT-2: tg.matmul {{.*}} -> tensor<4x4xf32>
// TP: tg.all_gather {{.*}} tg.reshard = "tg.add for result 0
// TP: return
tg.mesh @mesh ["data" = 2, "tp" = 2]
func.func @forward(%x: tensor<4x6xf32> {tg.input = "x"},
                   %w: tensor<16x6xf32> {tg.param = "kv.weight"})
    -> tensor<4x8xf32> {
  %kv = tg.matmul %x, %w {transpose_rhs = true} : tensor<4x6xf32>, tensor<16x6xf32> -> tensor<4x16xf32>
  %k = tg.slice %kv {start = array<i64: 0, 0>, limit = array<i64: 4, 8>} : tensor<4x16xf32> -> tensor<4x8xf32>
  %v = tg.slice %kv {start = array<i64: 0, 8>, limit = array<i64: 4, 16>} : tensor<4x16xf32> -> tensor<4x8xf32>
  %kv2 = tg.add %k, %v : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %kv2 : tensor<4x8xf32>
}

// -----

// Left alone: on a mesh without a tp axis (nothing splits heads), ...
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<8x24xf32> {tg.param = "w"}
// CHECK: tg.matmul {{.*}} -> tensor<2x24xf32>
tg.mesh @mesh ["data" = 2]
func.func @forward(%x: tensor<2x8xf32> {tg.input = "x"},
                   %w: tensor<8x24xf32> {tg.param = "w"})
    -> (tensor<2x12xf32>, tensor<2x12xf32>) {
  %y = tg.matmul %x, %w : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %a = tg.slice %y {start = array<i64: 0, 0>, limit = array<i64: 2, 12>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %b = tg.slice %y {start = array<i64: 0, 12>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x12xf32>
  return %a, %b : tensor<2x12xf32>, tensor<2x12xf32>
}

// -----

// ... blocks of unequal widths, a product read whole as well, a weight
// read twice.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<8x24xf32> {tg.param = "unequal"}
// CHECK-SAME: tensor<8x24xf32> {tg.param = "read_whole"}
// CHECK-SAME: tensor<8x24xf32> {tg.param = "read_twice"}
// CHECK-NOT: tg.file_shape
tg.mesh @mesh ["tp" = 2]
func.func @forward(%x: tensor<2x8xf32> {tg.input = "x"},
                   %w1: tensor<8x24xf32> {tg.param = "unequal"},
                   %w2: tensor<8x24xf32> {tg.param = "read_whole"},
                   %w3: tensor<8x24xf32> {tg.param = "read_twice"})
    -> (tensor<2x8xf32>, tensor<2x16xf32>, tensor<2x24xf32>, tensor<2x12xf32>, tensor<8x24xf32>) {
  %y1 = tg.matmul %x, %w1 : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %a = tg.slice %y1 {start = array<i64: 0, 0>, limit = array<i64: 2, 8>} : tensor<2x24xf32> -> tensor<2x8xf32>
  %b = tg.slice %y1 {start = array<i64: 0, 8>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x16xf32>
  %y2 = tg.matmul %x, %w2 : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %c = tg.slice %y2 {start = array<i64: 0, 0>, limit = array<i64: 2, 12>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %d = tg.slice %y2 {start = array<i64: 0, 12>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %e = tg.add %y2, %y2 : tensor<2x24xf32>, tensor<2x24xf32> -> tensor<2x24xf32>
  %y3 = tg.matmul %x, %w3 : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %f = tg.slice %y3 {start = array<i64: 0, 0>, limit = array<i64: 2, 12>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %g = tg.slice %y3 {start = array<i64: 0, 12>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %h = tg.add %w3, %w3 : tensor<8x24xf32>, tensor<8x24xf32> -> tensor<8x24xf32>
  %s = tg.add %c, %f : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %t = tg.add %s, %d : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %u = tg.add %t, %g : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %a, %b, %e, %u, %h : tensor<2x8xf32>, tensor<2x16xf32>, tensor<2x24xf32>, tensor<2x12xf32>, tensor<8x24xf32>
}

// -----

// ... a weight whose own preset does not split matrices over tp ...
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<8x24xf32> {tg.param = "zero", tg.shard = #tg<shard zero3>}
// CHECK-NOT: tg.file_shape
tg.mesh @mesh ["data" = 2, "tp" = 2]
func.func @forward(%x: tensor<2x8xf32> {tg.input = "x"},
                   %w: tensor<8x24xf32> {tg.param = "zero", tg.shard = #tg<shard zero3>})
    -> tensor<2x12xf32> {
  %y = tg.matmul %x, %w : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %a = tg.slice %y {start = array<i64: 0, 0>, limit = array<i64: 2, 12>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %b = tg.slice %y {start = array<i64: 0, 12>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %c = tg.add %a, %b : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %c : tensor<2x12xf32>
}

// -----

// ... and a weight the model file pins (the pin splits [K, 2N]).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<8x24xf32> {tg.param = "pinned", tg.sharding
// CHECK-NOT: tg.file_shape
tg.mesh @mesh ["tp" = 2]
func.func @forward(%x: tensor<2x8xf32> {tg.input = "x"},
                   %w: tensor<8x24xf32> {tg.param = "pinned", tg.sharding = #tg.sharding<@mesh, [{}, {"tp"}]>})
    -> tensor<2x12xf32> {
  %y = tg.matmul %x, %w : tensor<2x8xf32>, tensor<8x24xf32> -> tensor<2x24xf32>
  %a = tg.slice %y {start = array<i64: 0, 0>, limit = array<i64: 2, 12>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %b = tg.slice %y {start = array<i64: 0, 12>, limit = array<i64: 2, 24>} : tensor<2x24xf32> -> tensor<2x12xf32>
  %c = tg.add %a, %b : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %c : tensor<2x12xf32>
}

// -----

// After tg-autodiff it is too late: the other functions read the weights
// in the shape @forward had.
tg.mesh @mesh ["tp" = 2]
func.func @forward(%x: tensor<2x8xf32> {tg.input = "x"}) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}
// expected-error @+1 {{tg-split-fused-projections runs before tg-autodiff, on @forward alone}}
func.func @forward_backward(%x: tensor<2x8xf32> {tg.input = "x"}) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}

// RUN: tg-opt %s -tg-test-cost-model="cluster=h100-sxm-8" | FileCheck %s

// The cost model op by op (planning/cost, h100-sxm-8: bf16 989 TFLOP/s and
// f32 67 TFLOP/s peak at 80% efficiency, HBM 3.35 TB/s, NVLink 450 GB/s
// per direction at 1.07 us a step):
// - a bf16 GEMM of 1024^3: 2.147e9 FLOPs over 791 TFLOP/s = 2.71 us against
//   6 MiB over 3.35 TB/s = 1.88 us: compute-bound;
// - an f32 add of 1M elements: 12 MiB = 3.76 us against 1M FLOPs at 53.6
//   TFLOP/s: memory-bound;
// - a reshape moves nothing;
// - an all-reduce of 4 MiB over 8 GPUs on NVLink: ring 2(p-1) steps of
//   1.07 us plus 2(p-1)/p x 4 MiB / 450 GB/s = 14.98 + 16.31 us.
tg.mesh @mesh ["data" = 8]
func.func @ops(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>,
               %x: tensor<1024x1024xf32>) -> (tensor<1024x1024xbf16>, tensor<1048576xf32>, tensor<1024x1024xf32>) {
  // CHECK: tg.matmul {{.*}}test.cost = {bound = "compute", bytes = 6291456 : i64, flops = 2147483648 : i64, seconds = 2.71{{[0-9]*}}E-6 : f64}
  %m = tg.matmul %a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  // CHECK: tg.add {{.*}}test.cost = {bound = "memory", bytes = 12582912 : i64, flops = 1048576 : i64, seconds = 3.75{{[0-9]*}}E-6 : f64}
  %e = tg.add %x, %x : tensor<1024x1024xf32>, tensor<1024x1024xf32> -> tensor<1024x1024xf32>
  // CHECK: tg.reshape {{.*}}test.cost = {bound = "none", bytes = 8388608 : i64, flops = 0 : i64, seconds = 0.000000e+00 : f64}
  %r = tg.reshape %e : tensor<1024x1024xf32> -> tensor<1048576xf32>
  // CHECK: tg.all_reduce {{.*}}test.cost = {bound = "communication", bytes = 8388608 : i64, flops = 1048576 : i64, seconds = 3.12{{[0-9]*}}E-5 : f64}
  %s = tg.all_reduce %x {mesh_axis = "data", reduction = #tg<reduction sum>} : tensor<1024x1024xf32>
  return %m, %r, %s : tensor<1024x1024xbf16>, tensor<1048576xf32>, tensor<1024x1024xf32>
}

// RUN: tg-opt %s -tg-precision="policy=bf16 fp32-ops=tg.conv2d,tg.max_pool2d" | FileCheck %s

// Ops named in fp32-ops compute in f32 (for a backend with only f32 kernels
// for them): the convolutions read the f32 input and weights directly, the
// ops after them stay f32 until a bf16 op reads their result, and the
// classifier is bf16 again.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[CW:[^:]+]]: tensor<4x1x3x3xf32> {tg.param = "conv.weight"}, %[[CB:[^:]+]]: tensor<4xf32> {tg.param = "conv.bias"}, %[[FW:[^:]+]]: tensor<16x10xf32> {tg.param = "fc.weight"}, %[[X:[^:]+]]: tensor<2x1x4x4xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<2xi64> {tg.input = "y"})
// CHECK-NEXT: %[[FWH:.+]] = tg.cast %[[FW]] {tg.layer = "fc"} : tensor<16x10xf32> to tensor<16x10xbf16>
// CHECK-NEXT: %[[C:.+]] = tg.conv2d %[[X]], %[[CW]], %[[CB]] {{.*}} : (tensor<2x1x4x4xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT: %[[R:.+]] = tg.relu %[[C]] : tensor<2x4x4x4xf32>
// CHECK-NEXT: %[[P:.+]] = tg.max_pool2d %[[R]] {{.*}} : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
// CHECK-NEXT: %[[F:.+]] = tg.flatten %[[P]] : tensor<2x4x2x2xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[FH:.+]] = tg.cast %[[F]] : tensor<2x16xf32> to tensor<2x16xbf16>
// CHECK-NEXT: %[[L:.+]] = tg.matmul %[[FH]], %[[FWH]] : tensor<2x16xbf16>, tensor<16x10xbf16> -> tensor<2x10xbf16>
// CHECK-NEXT: tg.cross_entropy %[[L]], %[[Y]] : tensor<2x10xbf16>, tensor<2xi64> -> tensor<f32>
func.func @forward(%cw: tensor<4x1x3x3xf32> {tg.param = "conv.weight"}, %cb: tensor<4xf32> {tg.param = "conv.bias"},
                   %fw: tensor<16x10xf32> {tg.param = "fc.weight"},
                   %x: tensor<2x1x4x4xf32> {tg.input = "x"}, %y: tensor<2xi64> {tg.input = "y"}) -> tensor<f32> {
  %c = tg.conv2d %x, %cw, %cb {padding = array<i64: 1, 1>} : (tensor<2x1x4x4xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %r = tg.relu %c : tensor<2x4x4x4xf32>
  %p = tg.max_pool2d %r {kernel_size = array<i64: 2, 2>} : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
  %f = tg.flatten %p : tensor<2x4x2x2xf32> -> tensor<2x16xf32>
  %l = tg.matmul %f, %fw : tensor<2x16xf32>, tensor<16x10xf32> -> tensor<2x10xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x10xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

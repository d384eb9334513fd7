// RUN: tg-opt %s -tg-precision=policy=bf16 -split-input-file | FileCheck %s

// An MLP under bf16: the parameters stay f32 arguments and are cast once at
// the top, in argument order, as is the float input; the integer labels are
// untouched; every op computes in bf16; the loss comes out of
// tg.cross_entropy as f32 from the bf16 logits, and the logits output is
// cast back to its declared f32.
// CHECK-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "fp32"}}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W1:[^:]+]]: tensor<64x128xf32> {tg.param = "fc1.weight"}, %[[B1:[^:]+]]: tensor<128xf32> {tg.param = "fc1.bias"}, %[[W2:[^:]+]]: tensor<128x10xf32> {tg.param = "fc2.weight"}, %[[B2:[^:]+]]: tensor<10xf32> {tg.param = "fc2.bias"}, %[[X:[^:]+]]: tensor<32x64xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<32xi64> {tg.input = "y"})
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<32x10xf32> {tg.output = "logits"})
// CHECK-NEXT: %[[W1H:.+]] = tg.cast %[[W1]] {tg.layer = "fc1"} : tensor<64x128xf32> to tensor<64x128xbf16>
// CHECK-NEXT: %[[B1H:.+]] = tg.cast %[[B1]] {tg.layer = "fc1"} : tensor<128xf32> to tensor<128xbf16>
// CHECK-NEXT: %[[W2H:.+]] = tg.cast %[[W2]] {tg.layer = "fc2"} : tensor<128x10xf32> to tensor<128x10xbf16>
// CHECK-NEXT: %[[B2H:.+]] = tg.cast %[[B2]] {tg.layer = "fc2"} : tensor<10xf32> to tensor<10xbf16>
// CHECK-NEXT: %[[XH:.+]] = tg.cast %[[X]] {tg.layer = "x"} : tensor<32x64xf32> to tensor<32x64xbf16>
// CHECK-NEXT: %[[H:.+]] = tg.matmul %[[XH]], %[[W1H]] : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xbf16>
// CHECK-NEXT: %[[HB:.+]] = tg.add %[[H]], %[[B1H]] : tensor<32x128xbf16>, tensor<128xbf16> -> tensor<32x128xbf16>
// CHECK-NEXT: %[[R:.+]] = tg.relu %[[HB]] : tensor<32x128xbf16>
// CHECK-NEXT: %[[O:.+]] = tg.matmul %[[R]], %[[W2H]] : tensor<32x128xbf16>, tensor<128x10xbf16> -> tensor<32x10xbf16>
// CHECK-NEXT: %[[LOGITS:.+]] = tg.add %[[O]], %[[B2H]] : tensor<32x10xbf16>, tensor<10xbf16> -> tensor<32x10xbf16>
// CHECK-NEXT: %[[OUT:.+]] = tg.cast %[[LOGITS]] : tensor<32x10xbf16> to tensor<32x10xf32>
// CHECK-NEXT: %[[LOSS:.+]] = tg.cross_entropy %[[LOGITS]], %[[Y]] : tensor<32x10xbf16>, tensor<32xi64> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]], %[[OUT]] : tensor<f32>, tensor<32x10xf32>
module attributes {tg.training = {precision = "fp32"}} {
  func.func @forward(%w1: tensor<64x128xf32> {tg.param = "fc1.weight"}, %b1: tensor<128xf32> {tg.param = "fc1.bias"},
                     %w2: tensor<128x10xf32> {tg.param = "fc2.weight"}, %b2: tensor<10xf32> {tg.param = "fc2.bias"},
                     %x: tensor<32x64xf32> {tg.input = "x"}, %y: tensor<32xi64> {tg.input = "y"})
      -> (tensor<f32> {tg.output = "loss"}, tensor<32x10xf32> {tg.output = "logits"}) {
    %h = tg.matmul %x, %w1 : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
    %hb = tg.add %h, %b1 : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    %r = tg.relu %hb : tensor<32x128xf32>
    %o = tg.matmul %r, %w2 : tensor<32x128xf32>, tensor<128x10xf32> -> tensor<32x10xf32>
    %logits = tg.add %o, %b2 : tensor<32x10xf32>, tensor<10xf32> -> tensor<32x10xf32>
    %loss = tg.cross_entropy %logits, %y : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<32x10xf32>
  }
}

// -----

// A frozen parameter is cast like the others (it computes in bf16 as well);
// a parameter nothing reads gets no cast.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8x4xf32> {tg.frozen, tg.param = "embed"}, %[[UNUSED:[^:]+]]: tensor<4xf32> {tg.param = "unused"}, %[[X:[^:]+]]: tensor<2x8xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<2xi32> {tg.input = "y"})
// CHECK-NEXT: %[[WH:.+]] = tg.cast %[[W]] {tg.layer = "embed"} : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK-NEXT: %[[XH:.+]] = tg.cast %[[X]] {tg.layer = "x"} : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK-NEXT: %[[L:.+]] = tg.matmul %[[XH]], %[[WH]] : tensor<2x8xbf16>, tensor<8x4xbf16> -> tensor<2x4xbf16>
// CHECK-NEXT: tg.cross_entropy %[[L]], %[[Y]] : tensor<2x4xbf16>, tensor<2xi32> -> tensor<f32>
func.func @forward(%w: tensor<8x4xf32> {tg.param = "embed", tg.frozen}, %unused: tensor<4xf32> {tg.param = "unused"},
                   %x: tensor<2x8xf32> {tg.input = "x"}, %y: tensor<2xi32> {tg.input = "y"}) -> tensor<f32> {
  %l = tg.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

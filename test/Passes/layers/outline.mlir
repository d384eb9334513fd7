// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-verify-memory -tg-outline-layers | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-outline-layers="min-repeats=4" | FileCheck %s --check-prefix=FOUR

// Layers h.0 and h.3 compute the same: one body, two calls, each with its
// layer's offsets for the body's slots and its weight. h.1 begins with a
// reshape and h.2 ends with exp: no other layer is like either, so they
// stay inline. The constant the layers read is copied into the body; the
// layer's result, a view of its tanh, is at the tanh's offset at the call.
// The head is no layer's. Layers are the ops' tg.layer; the body's ops
// leave theirs to the call, and their locations (the model file's names)
// name the layer as h.*.
// CHECK-LABEL: func.func private @layer_body_0
// CHECK-SAME:    (%[[X:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<8x64xf32>) -> tensor<512xf32>
// CHECK-SAME:    attributes {tg.layer_body = "step h.0"}
// CHECK-NEXT:    %[[C:.*]] = tg.constant dense<2.000000e+00>
// CHECK-NEXT:    %[[M:.*]] = tg.mul %[[X]], %[[W]] {tg.place = #tg.place<[slot 0]>}
// CHECK-NEXT:    %[[S:.*]] = tg.mul %[[M]], %[[C]] {tg.place = #tg.place<[slot 1]>}
// CHECK-NEXT:    %[[T:.*]] = tg.tanh %[[S]] {tg.place = #tg.place<[slot 2]>}
// CHECK-NEXT:    %[[R:.*]] = tg.reshape %[[T]] {tg.place = #tg.place<[view 0]>}
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func @step
// CHECK:         call @layer_body_0(%arg0, %arg1) {tg.layer = "h.0", tg.place = #tg.place<{{\[}}[[O0:[0-9]+]]]>, tg.slot_offsets = array<i64: {{[0-9]+}}, {{[0-9]+}}, [[O0]]>}
// CHECK:         tg.mul {{.*}}, %arg2
// CHECK:         tg.mul {{.*}}, %arg3
// CHECK:         tg.exp
// CHECK:         call @layer_body_0({{.*}}, %arg4) {tg.layer = "h.3", tg.place = #tg.place<{{\[}}[[O3:[0-9]+]]]>, tg.slot_offsets = array<i64: {{[0-9]+}}, {{[0-9]+}}, [[O3]]>}
// CHECK:         tg.neg
// CHECK-NOT:     call
// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-outline-layers -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// LOC:         tg.tanh {{.*}} loc(#[[ACT:loc[0-9]+]])
// LOC:         #[[ACT]] = loc("h.*.act")
// FOUR-NOT:    call
// FOUR-NOT:    tg.layer_body
func.func @step(%x: tensor<8x64xf32>, %w0: tensor<8x64xf32>, %w1: tensor<8x64xf32>, %w2: tensor<8x64xf32>, %w3: tensor<8x64xf32>) -> tensor<512xf32> {
  %c = tg.constant dense<2.0> : tensor<f32> loc("two")
  %m0 = tg.mul %x, %w0 {tg.layer = "h.0"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.0.in")
  %s0 = tg.mul %m0, %c {tg.layer = "h.0"} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32> loc("h.0.scale")
  %t0 = tg.tanh %s0 {tg.layer = "h.0"} : tensor<8x64xf32> loc("h.0.act")
  %r0 = tg.reshape %t0 {tg.layer = "h.0"} : tensor<8x64xf32> -> tensor<512xf32> loc("h.0.flat")
  %u0 = tg.reshape %r0 {tg.layer = "h.1"} : tensor<512xf32> -> tensor<8x64xf32> loc("h.1.unflat")
  %m1 = tg.mul %u0, %w1 {tg.layer = "h.1"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.1.in")
  %s1 = tg.mul %m1, %c {tg.layer = "h.1"} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32> loc("h.1.scale")
  %t1 = tg.tanh %s1 {tg.layer = "h.1"} : tensor<8x64xf32> loc("h.1.act")
  %r1 = tg.reshape %t1 {tg.layer = "h.1"} : tensor<8x64xf32> -> tensor<512xf32> loc("h.1.flat")
  %u1 = tg.reshape %r1 {tg.layer = "between"} : tensor<512xf32> -> tensor<8x64xf32> loc("between")
  %m2 = tg.mul %u1, %w2 {tg.layer = "h.2"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.2.in")
  %s2 = tg.mul %m2, %c {tg.layer = "h.2"} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32> loc("h.2.scale")
  %t2 = tg.exp %s2 {tg.layer = "h.2"} : tensor<8x64xf32> loc("h.2.act")
  %m3 = tg.mul %t2, %w3 {tg.layer = "h.3"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.3.in")
  %s3 = tg.mul %m3, %c {tg.layer = "h.3"} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32> loc("h.3.scale")
  %t3 = tg.tanh %s3 {tg.layer = "h.3"} : tensor<8x64xf32> loc("h.3.act")
  %r3 = tg.reshape %t3 {tg.layer = "h.3"} : tensor<8x64xf32> -> tensor<512xf32> loc("h.3.flat")
  %n = tg.neg %r3 {tg.layer = "head"} : tensor<512xf32> loc("head")
  return %n : tensor<512xf32>
}

// -----

// A layer whose intermediate is read after it (h.0's scale, by the head)
// returns it too: another body than h.1's and h.2's, and alone, inline.
// CHECK-LABEL: func.func private @layer_body_0
// CHECK-SAME:    -> tensor<8x64xf32>
// CHECK-SAME:    tg.layer_body = "step2 h.1"
// CHECK-LABEL: func.func @step2
// CHECK:         tg.mul %arg0, %arg1
// CHECK:         tg.tanh
// CHECK:         call @layer_body_0
// CHECK:         call @layer_body_0
// CHECK:         tg.add
func.func @step2(%x: tensor<8x64xf32>, %w0: tensor<8x64xf32>, %w1: tensor<8x64xf32>, %w2: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %m0 = tg.mul %x, %w0 {tg.layer = "h.0"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.0.in")
  %t0 = tg.tanh %m0 {tg.layer = "h.0"} : tensor<8x64xf32> loc("h.0.act")
  %m1 = tg.mul %t0, %w1 {tg.layer = "h.1"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.1.in")
  %t1 = tg.tanh %m1 {tg.layer = "h.1"} : tensor<8x64xf32> loc("h.1.act")
  %m2 = tg.mul %t1, %w2 {tg.layer = "h.2"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("h.2.in")
  %t2 = tg.tanh %m2 {tg.layer = "h.2"} : tensor<8x64xf32> loc("h.2.act")
  %a = tg.add %t2, %m0 {tg.layer = "head"} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32> loc("head")
  return %a : tensor<8x64xf32>
}

// -----

// Constants are part of a body: h.0 and h.2 scale by the same values and
// share one, h.1 scales by others and stays inline, even when the printer
// is told to elide large constants.
// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-outline-layers -mlir-elide-elementsattrs-if-larger=2 | FileCheck %s --check-prefix=CONST
// CONST:       func.func private @layer_body_0({{.*}}tg.layer_body = "consts h.0"
// CONST-LABEL: func.func @consts
// CONST:         call @layer_body_0(%arg0)
// CONST:         tg.mul {{.*}}, %{{.*}} {tg.layer = "h.1", tg.place
// CONST:         call @layer_body_0
func.func @consts(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("a")
  %b = tg.constant dense<[1.0, 2.0, 3.0, 5.0]> : tensor<4xf32> loc("b")
  %y0 = tg.mul %x, %a {tg.layer = "h.0"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.0.scale")
  %y1 = tg.mul %y0, %b {tg.layer = "h.1"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.1.scale")
  %y2 = tg.mul %y1, %a {tg.layer = "h.2"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("h.2.scale")
  return %y2 : tensor<4xf32>
}

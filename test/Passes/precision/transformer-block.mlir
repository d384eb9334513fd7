// RUN: tg-opt %s -tg-precision=policy=bf16 | FileCheck %s

// A GPT-2 block under bf16, as llm.c runs it: token ids stay i32, the
// embedding tables, norm parameters and weights are cast to bf16 once (the
// tied wte serves the embedding and the classifier through one cast), every
// activation is bf16 -- layer norm, attention, GELU, residuals, shape ops --
// and the loss is f32 straight from the bf16 logits, with no f32 copy of
// them.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[WTE:[^:]+]]: tensor<16x8xf32> {tg.param = "wte.weight"}, %[[WPE:[^:]+]]: tensor<4x8xf32> {tg.param = "wpe.weight"}, %[[LNW:[^:]+]]: tensor<8xf32> {tg.param = "h.0.ln_1.weight"}, %[[LNB:[^:]+]]: tensor<8xf32> {tg.param = "h.0.ln_1.bias"}, %[[QKV:[^:]+]]: tensor<8x24xf32> {tg.param = "h.0.attn.c_attn.weight"}, %[[PROJ:[^:]+]]: tensor<8x8xf32> {tg.param = "h.0.attn.c_proj.weight"}, %[[FC:[^:]+]]: tensor<8x32xf32> {tg.param = "h.0.mlp.c_fc.weight"}, %[[FCP:[^:]+]]: tensor<32x8xf32> {tg.param = "h.0.mlp.c_proj.weight"}, %[[IDX:[^:]+]]: tensor<2x4xi32> {tg.input = "idx"}, %[[TGT:[^:]+]]: tensor<2x4xi64> {tg.input = "targets"})
// CHECK-NEXT: %[[WTEH:.+]] = tg.cast %[[WTE]] {tg.layer = "wte"} : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT: %[[WPEH:.+]] = tg.cast %[[WPE]] {tg.layer = "wpe"} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[LNWH:.+]] = tg.cast %[[LNW]] {tg.layer = "h.0"} : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT: %[[LNBH:.+]] = tg.cast %[[LNB]] {tg.layer = "h.0"} : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT: %[[QKVH:.+]] = tg.cast %[[QKV]] {tg.layer = "h.0"} : tensor<8x24xf32> to tensor<8x24xbf16>
// CHECK-NEXT: %[[PROJH:.+]] = tg.cast %[[PROJ]] {tg.layer = "h.0"} : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[FCH:.+]] = tg.cast %[[FC]] {tg.layer = "h.0"} : tensor<8x32xf32> to tensor<8x32xbf16>
// CHECK-NEXT: %[[FCPH:.+]] = tg.cast %[[FCP]] {tg.layer = "h.0"} : tensor<32x8xf32> to tensor<32x8xbf16>
// CHECK-NEXT: %[[TOK:.+]] = tg.embedding %[[WTEH]], %[[IDX]] : tensor<16x8xbf16>, tensor<2x4xi32> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[POS:.+]] = tg.slice %[[WPEH]] {{.*}} : tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[EMB:.+]] = tg.add %[[TOK]], %[[POS]] : tensor<2x4x8xbf16>, tensor<4x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[LN:.+]] = tg.layer_norm %[[EMB]] weight %[[LNWH]] bias %[[LNBH]] : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[QKVO:.+]] = tg.matmul %[[LN]], %[[QKVH]] : tensor<2x4x8xbf16>, tensor<8x24xbf16> -> tensor<2x4x24xbf16>
// CHECK-NEXT: tg.slice %[[QKVO]] {{.*}} : tensor<2x4x24xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: tg.reshape %{{.+}} : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[Q:.+]] = tg.transpose %{{.+}} {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xbf16> -> tensor<2x2x4x4xbf16>
// CHECK: %[[ATT:.+]] = tg.attention %[[Q]], %{{.+}}, %{{.+}} {causal = true} : tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16> -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: tg.transpose %[[ATT]] {{.*}} : tensor<2x2x4x4xbf16> -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[MERGED:.+]] = tg.reshape %{{.+}} : tensor<2x4x2x4xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[A:.+]] = tg.matmul %[[MERGED]], %[[PROJH]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[R1:.+]] = tg.add %[[EMB]], %[[A]] : tensor<2x4x8xbf16>, tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[U:.+]] = tg.matmul %[[R1]], %[[FCH]] : tensor<2x4x8xbf16>, tensor<8x32xbf16> -> tensor<2x4x32xbf16>
// CHECK-NEXT: %[[G:.+]] = tg.gelu %[[U]] {approximate = #tg<approximation tanh>} : tensor<2x4x32xbf16>
// CHECK-NEXT: %[[D:.+]] = tg.matmul %[[G]], %[[FCPH]] : tensor<2x4x32xbf16>, tensor<32x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[R2:.+]] = tg.add %[[R1]], %[[D]] : tensor<2x4x8xbf16>, tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[LOGITS:.+]] = tg.matmul %[[R2]], %[[WTEH]] {transpose_rhs = true} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[LOSS:.+]] = tg.cross_entropy %[[LOGITS]], %[[TGT]] : tensor<2x4x16xbf16>, tensor<2x4xi64> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
func.func @forward(%wte: tensor<16x8xf32> {tg.param = "wte.weight"}, %wpe: tensor<4x8xf32> {tg.param = "wpe.weight"},
                   %lnw: tensor<8xf32> {tg.param = "h.0.ln_1.weight"}, %lnb: tensor<8xf32> {tg.param = "h.0.ln_1.bias"},
                   %wqkv: tensor<8x24xf32> {tg.param = "h.0.attn.c_attn.weight"}, %wproj: tensor<8x8xf32> {tg.param = "h.0.attn.c_proj.weight"},
                   %wfc: tensor<8x32xf32> {tg.param = "h.0.mlp.c_fc.weight"}, %wfcp: tensor<32x8xf32> {tg.param = "h.0.mlp.c_proj.weight"},
                   %idx: tensor<2x4xi32> {tg.input = "idx"}, %tgt: tensor<2x4xi64> {tg.input = "targets"}) -> tensor<f32> {
  %tok = tg.embedding %wte, %idx : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %pos = tg.slice %wpe {start = array<i64: 0, 0>, limit = array<i64: 4, 8>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %emb = tg.add %tok, %pos : tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  %ln = tg.layer_norm %emb weight %lnw bias %lnb : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = tg.matmul %ln, %wqkv : tensor<2x4x8xf32>, tensor<8x24xf32> -> tensor<2x4x24xf32>
  %q0 = tg.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %q1 = tg.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %q = tg.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %k0 = tg.slice %qkv {start = array<i64: 0, 0, 8>, limit = array<i64: 2, 4, 16>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %k1 = tg.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %k = tg.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %v0 = tg.slice %qkv {start = array<i64: 0, 0, 16>, limit = array<i64: 2, 4, 24>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %v1 = tg.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %v = tg.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %att = tg.attention %q, %k, %v {causal = true} : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
  %m0 = tg.transpose %att {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %m = tg.reshape %m0 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %a = tg.matmul %m, %wproj : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %r1 = tg.add %emb, %a : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %u = tg.matmul %r1, %wfc : tensor<2x4x8xf32>, tensor<8x32xf32> -> tensor<2x4x32xf32>
  %g = tg.gelu %u {approximate = #tg<approximation tanh>} : tensor<2x4x32xf32>
  %d = tg.matmul %g, %wfcp : tensor<2x4x32xf32>, tensor<32x8xf32> -> tensor<2x4x8xf32>
  %r2 = tg.add %r1, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %logits = tg.matmul %r2, %wte {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  %loss = tg.cross_entropy %logits, %tgt : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// RUN: tg-opt %s -split-input-file -verify-diagnostics

// The discardable attributes the passes write (and a hand-written module
// may carry) are checked where they sit: the kind of value and the op it
// belongs on. One case per rule of TgDialect's attribute verifiers.

// A pipeline slot is a value number.
// expected-error @+1 {{'tg.slot' must be a non-negative integer}}
func.func @negative_slot(%x: tensor<4xf32> {tg.slot = -1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'tg.sharding' on argument 0 must be a #tg.sharding}}
func.func @sharding_not_a_sharding(%x: tensor<4xf32> {tg.sharding = "data"}) {
  return
}

// -----

// expected-error @+1 {{'tg.sharding_origin' must be a string}}
func.func @argument_origin_not_a_string(%x: tensor<4xf32> {tg.sharding_origin = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'tg.sharding_origin' must be a string}}
func.func @result_origin_not_a_string(%x: tensor<4xf32>) -> (tensor<4xf32> {tg.sharding_origin = 1 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// A chunk function's role: its kind, and its chunk (or an update's stage).
// expected-error @+1 {{'tg.pipeline_role' must be {kind = "forward" | "backward" | "weight" | "reduce", chunk = N} or {kind = "update", stage = N} on a function}}
func.func @update_without_stage() attributes {tg.pipeline_role = {kind = "update", chunk = 0 : i64}} {
  return
}

// -----

// expected-error @+1 {{'tg.pipeline_actions' must be an array on the module}}
module attributes {tg.pipeline_actions = "F0"} {
}

// -----

// expected-error @+1 {{'tg.remat' must be a dictionary on a function}}
module attributes {tg.remat = {policy = "full"}} {
}

// -----

// expected-error @+1 {{'tg.layer_body' must be a string (the first layer) on a function}}
func.func @layer_body_not_a_string() attributes {tg.layer_body = 1 : i64} {
  return
}

// -----

func.func private @body(%x: tensor<4xf32>) -> tensor<4xf32>

func.func @negative_slot_offset(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.slot_offsets' must list arena offsets (non-negative i64s) on the func.call of a layer body}}
  %0 = func.call @body(%x) {tg.slot_offsets = array<i64: -64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Each result's place (#tg.place): one per result, of the right kind
// where it stands.
func.func @places_per_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.place' must place each result (1), not 2}}
  %0 = tg.relu %x {tg.place = #tg.place<[0, 64]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @place_is_typed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.place' must be a #tg.place on an op with results}}
  %0 = tg.relu %x {tg.place = array<i64: 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_offset(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{#tg.place: result 0 has offset -64, which is negative}}
  %0 = tg.relu %x {tg.place = #tg.place<[-64]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_place(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected integer value}}
  %0 = tg.relu %x {tg.place = #tg.place<[at 0]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @view_of_no_operand(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.place' makes result 0 a view of operand 1, but the op has 1 operands}}
  %0 = tg.relu %x {tg.place = #tg.place<[view 1]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Slots are a layer body's (tg-outline-layers), offsets the step's.
func.func @slot_outside_body(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.place' places result 0 in slot 0 outside a layer body (no tg.layer_body)}}
  %0 = tg.relu %x {tg.place = #tg.place<[slot 0]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @offset_in_body(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tg.layer_body = "step h.0"} {
  // expected-error @+1 {{'tg.place' places result 0 at offset 64 in a layer body, whose results are in slots}}
  %0 = tg.relu %x {tg.place = #tg.place<[64]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tg.arena' must be a #tg.arena on a function}}
func.func @arena_is_typed() attributes {tg.arena = 4096 : i64} {
  return
}

// -----

// expected-error @+1 {{#tg.arena needs 0 <= live <= bytes, got live = 5000, bytes = 4096}}
func.func @live_above_peak() attributes {tg.arena = #tg.arena<bytes = 4096, live = 5000, alignment = 64>} {
  return
}

// -----

// expected-error @+1 {{#tg.arena needs a power-of-two alignment, got 48}}
func.func @alignment_not_a_power_of_two() attributes {tg.arena = #tg.arena<bytes = 4096, live = 0, alignment = 48>} {
  return
}

// -----

// A result's bytes past the end of its function's arena.
func.func @offset_outside_arena(%x: tensor<8x64xf32>) -> tensor<8x64xf32> attributes {tg.arena = #tg.arena<bytes = 2048, live = 2048, alignment = 64>} {
  // expected-error @+1 {{'tg.place' places bytes [64, 2112) outside the arena of 2048 bytes}}
  %a = tg.exp %x {tg.place = #tg.place<[64]>} : tensor<8x64xf32>
  return %a : tensor<8x64xf32>
}

// -----

func.func @offset_misaligned(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tg.arena = #tg.arena<bytes = 2048, live = 16, alignment = 256>} {
  // expected-error @+1 {{'tg.place' places bytes at 64, not a multiple of the arena's alignment (256)}}
  %a = tg.exp %x {tg.place = #tg.place<[64]>} : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @span_outside_arena(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tg.arena = #tg.arena<bytes = 1024, live = 1024, alignment = 64>} {
  // expected-error @+1 {{'tg.bucket_span' places bytes [512, 1536) outside the arena of 1024 bytes}}
  %r = tg.all_reduce %x {bucket = 0 : i64, tg.bucket_span = #tg.span<offset = 512, bytes = 1024>} : tensor<4xf32>
  tg.await %r : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A bucket's span is on the all-reduce that sends it.
func.func @bucket_span_on_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.bucket_span' must be a #tg.span on a tg.all_reduce}}
  %0 = tg.relu %x {tg.bucket_span = #tg.span<offset = 0, bytes = 16>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @span_is_typed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.bucket_span' must be a #tg.span on a tg.all_reduce}}
  %r = tg.all_reduce %x {bucket = 0 : i64, tg.bucket_span = array<i64: 0, 16>} : tensor<4xf32>
  tg.await %r : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @empty_span(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{#tg.span needs offset >= 0 and bytes > 0, got offset = 0, bytes = 0}}
  %r = tg.all_reduce %x {bucket = 0 : i64, tg.bucket_span = #tg.span<offset = 0, bytes = 0>} : tensor<4xf32>
  tg.await %r : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tg.partitioned' must be a unit attribute on a function}}
func.func @partitioned_not_unit() attributes {tg.partitioned = true} {
  return
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @origin_not_strings(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.sharding_origin' must hold strings}}
  %0 = tg.relu %x {tg.sharding_origin = [1 : i64]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tg.mesh @mesh ["data" = 2]
func.func @sharding_not_shardings(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.sharding' must hold #tg.sharding}}
  %0 = tg.relu %x {tg.sharding = ["data"]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @recompute_not_unit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.recompute' must be a unit attribute on an op tg-remat copied into the backward}}
  %0 = tg.relu %x {tg.recompute = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tg.recompute' must be a unit attribute on an op tg-remat copied into the backward}}
func.func @recompute_on_function(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tg.recompute} {
  return %x : tensor<4xf32>
}

// -----

func.func @layer_not_a_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.layer' must name the model file's layer or module the op computes for, got 3 : i64}}
  %0 = tg.relu %x {tg.layer = 3} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @layer_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.layer' must name the model file's layer or module the op computes for, got ""}}
  %0 = tg.relu %x {tg.layer = ""} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A view fits in its operand's bytes.
func.func @view_larger_than_operand(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tg.place' makes result 0 (32 bytes) a view of operand 0, which has 16 bytes}}
  %0 = tg.add %x, %y {tg.place = #tg.place<[view 0]>} : tensor<4xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// IR an older tgc printed: the error says what replaced it.
// expected-error @+1 {{'tg.arena_bytes' is IR of an older tgc: it is now the function's tg.arena = #tg.arena<bytes, live, alignment>; compile from the model file again}}
func.func @old_arena() attributes {tg.arena_bytes = 4096 : i64} {
  return
}

// -----

func.func @old_waits(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.waits' is IR of an older tgc: it is now a tg.await op of each bucket; compile from the model file again}}
  %0 = tg.neg %x {tg.waits = array<i64: 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @old_offsets(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.offsets' is IR of an older tgc: it is now the op's tg.place = #tg.place<[...]>; compile from the model file again}}
  %0 = tg.neg %x {tg.offsets = array<i64: 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The constants section (tg-place-constants): on the module, a
// #tg.constants; each placed tg.constant aligned, inside, apart.
// expected-error @+1 {{'tg.constants' must be a #tg.constants on the module}}
func.func @section_on_function() attributes {tg.constants = #tg.constants<bytes = 0, alignment = 256>} {
  return
}

// -----

// expected-error @+1 {{#tg.constants needs a power-of-two alignment, got 100}}
module attributes {tg.constants = #tg.constants<bytes = 0, alignment = 100>} {
}

// -----

func.func @offset_on_other_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.constant_offset' must be a non-negative offset on a tg.constant}}
  %0 = tg.neg %x {tg.constant_offset = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @offset_without_section() -> tensor<4xf32> {
  // expected-error @+1 {{'tg.constant_offset' places a constant in a section the module does not have (no tg.constants)}}
  %0 = tg.constant {tg.constant_offset = 0 : i64} dense<1.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {tg.constants = #tg.constants<bytes = 512, alignment = 256>} {
  func.func @offset_misaligned() -> tensor<4xf32> {
    // expected-error @+1 {{'tg.constant_offset' places the constant at 64, not a multiple of the section's alignment (256)}}
    %0 = tg.constant {tg.constant_offset = 64 : i64} dense<1.0> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {tg.constants = #tg.constants<bytes = 256, alignment = 256>} {
  func.func @offset_outside() -> tensor<128xf32> {
    // expected-error @+1 {{'tg.constant_offset' places the constant's bytes [256, 768) outside the constants section of 256 bytes}}
    %0 = tg.constant {tg.constant_offset = 256 : i64} dense<1.0> : tensor<128xf32>
    return %0 : tensor<128xf32>
  }
}

// -----

module attributes {tg.constants = #tg.constants<bytes = 1024, alignment = 256>} {
  func.func @constants_overlap() -> (tensor<128xf32>, tensor<4xf32>) {
    %0 = tg.constant {tg.constant_offset = 0 : i64} dense<1.0> : tensor<128xf32>
    // expected-error @+1 {{'tg.constant_offset' places the constant at 256, inside the bytes [0, 512) of another constant}}
    %1 = tg.constant {tg.constant_offset = 256 : i64} dense<2.0> : tensor<4xf32>
    return %0, %1 : tensor<128xf32>, tensor<4xf32>
  }
}

// -----

// tg-lora's record of the adapters (tg.lora): an array of #tg.lora on the
// module, each with three distinct names and a positive scale, no weight
// twice.
// expected-error @+1 {{'tg.lora' must be an array of #tg.lora on the module}}
module attributes {tg.lora = #tg.lora<base = "fc.weight", a = "fc.lora_A", b = "fc.lora_B", scale = 2.0, transposed = false>} {
}

// -----

// expected-error @+1 {{#tg.lora needs three distinct parameter names, got base = 'fc.weight', a = 'fc.lora_A', b = 'fc.lora_A'}}
module attributes {tg.lora = [#tg.lora<base = "fc.weight", a = "fc.lora_A", b = "fc.lora_A", scale = 2.0, transposed = false>]} {
}

// -----

// expected-error @+1 {{#tg.lora needs a positive scale, got 0}}
module attributes {tg.lora = [#tg.lora<base = "fc.weight", a = "fc.lora_A", b = "fc.lora_B", scale = 0.0, transposed = false>]} {
}

// -----

// expected-error @+1 {{'tg.lora' adapts 'fc.weight' twice}}
module attributes {tg.lora = [#tg.lora<base = "fc.weight", a = "fc.lora_A", b = "fc.lora_B", scale = 2.0, transposed = false>, #tg.lora<base = "fc.weight", a = "fc.lora_C", b = "fc.lora_D", scale = 2.0, transposed = false>]} {
}

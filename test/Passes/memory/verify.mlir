// RUN: tg-opt %s -split-input-file -tg-verify-memory -verify-diagnostics

// Two buffers live at once at the same bytes.
func.func @overlap(%x: tensor<8x64xf32>) -> tensor<8x64xf32> attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>} {
  // expected-note @+1 {{the other buffer}}
  %a = tg.exp %x {tg.place = #tg.place<[0]>} : tensor<8x64xf32>
  // expected-error @+1 {{tg-verify-memory: this op's bytes [1024, 3072) overlap those of a buffer live at the same time, at [0, 2048)}}
  %b = tg.neg %x {tg.place = #tg.place<[1024]>} : tensor<8x64xf32>
  %c = tg.add %a, %b {tg.place = #tg.place<[2048]>} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  return %c : tensor<8x64xf32>
}

// -----

// A pass after planning added an op: the plan is stale.
func.func @stale(%x: tensor<8x64xf32>) -> tensor<8x64xf32> attributes {tg.arena = #tg.arena<bytes = 2048, live = 2048, alignment = 64>} {
  // expected-error @+1 {{tg-verify-memory: result 0 needs arena memory but has no offset}}
  %a = tg.exp %x : tensor<8x64xf32>
  return %a : tensor<8x64xf32>
}

// -----

// A buffer's padding (to the alignment) past the end of the arena.
func.func @outside(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tg.arena = #tg.arena<bytes = 2000, live = 16, alignment = 64>} {
  // expected-error @+1 {{tg-verify-memory: bytes [1984, 2048) are misaligned or outside the arena of 2000 bytes}}
  %a = tg.exp %x {tg.place = #tg.place<[1984]>} : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{tg-verify-memory: @unplanned has no memory plan (run tg-plan-memory)}}
func.func @unplanned(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  return %x : tensor<8x64xf32>
}

// -----

// A bucket of the gradient all-reduce (tg-schedule's) without its span.
func.func @no_bucket_span(%x: tensor<256xf32>) -> tensor<256xf32> attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>} {
  %a = tg.exp %x {tg.place = #tg.place<[0]>} : tensor<256xf32>
  // expected-error @+1 {{tg-verify-memory: no tg.bucket_span of 1024 bytes for its bucket}}
  %r = tg.all_reduce %a {bucket = 0 : i64, tg.place = #tg.place<[0]>} : tensor<256xf32>
  tg.await %r : tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

// A gradient of a bucket planned outside the bucket's bytes: the message
// would not be one.
func.func @outside_bucket(%x: tensor<256xf32>) -> tensor<256xf32> attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>} {
  // expected-error @+1 {{tg-verify-memory: result 0 is planned at 0, not at byte 0 of its all-reduce bucket at 1024}}
  %a = tg.exp %x {tg.place = #tg.place<[0]>} : tensor<256xf32>
  %r = tg.all_reduce %a {bucket = 0 : i64, tg.bucket_span = #tg.span<offset = 1024, bytes = 1024>, tg.place = #tg.place<[1024]>} : tensor<256xf32>
  tg.await %r : tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

// A bucket is being reduced until its tg.await, though nothing reads its
// result before: an op between them may not take its bytes.
func.func @bucket_until_await(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>} {
  %a = tg.exp %x {tg.place = #tg.place<[0]>} : tensor<256xf32>
  // expected-note @+1 {{the other buffer}}
  %r = tg.all_reduce %a {bucket = 0 : i64, tg.bucket_span = #tg.span<offset = 0, bytes = 1024>, tg.place = #tg.place<[view 0]>} : tensor<256xf32>
  // expected-error @+1 {{tg-verify-memory: this op's bytes [0, 1024) overlap those of a buffer live at the same time, at [0, 1024)}}
  %b = tg.neg %x {tg.place = #tg.place<[0]>} : tensor<256xf32>
  tg.await %r : tensor<256xf32>
  return %r, %b : tensor<256xf32>, tensor<256xf32>
}

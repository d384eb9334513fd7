//===- Scheduler.cpp - Blocks of fibers, barriers and warp collectives ----===//
//
// The device side of Simt.h. A grid runs block after block (in order, or in
// the seeded order TGC_SIMT_SEED asks for); a block's CUDA threads are
// fibers on the calling OS thread, switched by a few instructions of
// assembly (ucontext saves the signal mask with a system call per switch,
// which makes it several times slower). A round robin runs every fiber that
// is ready until it waits at a barrier or returns; a round in which none is
// ready while some have not returned is a deadlock, reported with where each
// thread waits.
//
// In a ThreadSanitizer build this file is compiled without TSan's
// instrumentation (TGC_SIMT_TSAN tells it to drive TSan's fiber API): its own
// bookkeeping, shared by every fiber, is then invisible to TSan, and the only
// happens-before edges between CUDA threads are those a GPU has: barriers
// (a release by every arriving thread, an acquire by every leaving one) and
// the end of a kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/Simt.h"

#include "runtime/cuda/simt/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TGC_SIMT_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(TGC_SIMT_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace tgc::simt {

ThreadCoords current;
dim3 currentBlockDim, currentGridDim;

namespace {

//===----------------------------------------------------------------------===//
// Fibers
//===----------------------------------------------------------------------===//

extern "C" void tgc_simt_switch(void **saveSp, void *toSp);
// Saves the callee-saved registers, MXCSR and the x87 control word on the
// current stack, stores the stack pointer in *saveSp, and resumes the stack
// toSp the same way.
asm(R"(
  .text
  .globl tgc_simt_switch
  .hidden tgc_simt_switch
  .type tgc_simt_switch,@function
tgc_simt_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tgc_simt_switch,.-tgc_simt_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");

/// Deep enough for a kernel's locals at -O0 (FlashAttention keeps a few KiB
/// of fragments); a guard page below it turns an overflow into a fault.
constexpr size_t kStackBytes = 256 * 1024;

enum class FiberState { Ready, AtBlockBarrier, AtWarp, AtActiveMask, Done };

struct Fiber {
  void *sp = nullptr;
  char *stack = nullptr; ///< kStackBytes above a guard page
  void *tsan = nullptr;
  uint3 tid{0, 0, 0};
  FiberState state = FiberState::Done;
  Site waitSite{nullptr, 0};
  const char *waitWhat = "";
  unsigned activeMask = 0; ///< what its __activemask returns
};

/// A warp collective that lanes have arrived at.
struct Collective {
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0, arrived = 0;
  int width = 32;
  bool isSigned = false;
  Site firstSite{nullptr, 0};
};

struct Warp {
  unsigned live = 0; ///< lanes that have not returned
  /// The collectives under way, of disjoint masks: lanes that diverged may
  /// meet in groups of their own (sm_70+), as `if (lane & 1)
  /// __shfl_sync(0xaaaaaaaa, ...) else __shfl_sync(0x55555555, ...)`. A
  /// fixed array: the heap is TSan's to see, and fibers would race on it.
  Collective pending[32];
  int pendingCount = 0;
  int arg[32];
  LaneWords in[32], out[32];
  char tsanSync[32] = {}; ///< by the lowest lane of a __syncwarp's mask
};

struct Grid {
  const char *kernel = "";
  const std::function<void()> *body = nullptr;
  std::vector<Fiber> *fibers = nullptr;
  int threads = 0;
  int running = -1;
  // The block's barrier.
  int live = 0, arrived = 0;
  Site barrierSite{nullptr, 0};
  char tsanBarrier[2] = {0, 0};
  unsigned long barrierGeneration = 0;
  char tsanKernelEnd = 0;
  std::vector<Warp> warps;
  int activeMaskWaiters = 0; ///< fibers at __activemask
  unsigned char *dynamicShared = nullptr;
  void *mainSp = nullptr;
  void *mainTsan = nullptr;
};

Grid *grid = nullptr;
std::vector<Fiber> fiberPool;

const char *opName(WarpOp op) {
  switch (op) {
  case WarpOp::Sync:
    return "__syncwarp";
  case WarpOp::ShuffleIdx:
    return "__shfl_sync";
  case WarpOp::ShuffleUp:
    return "__shfl_up_sync";
  case WarpOp::ShuffleDown:
    return "__shfl_down_sync";
  case WarpOp::ShuffleXor:
    return "__shfl_xor_sync";
  case WarpOp::Ballot:
    return "__ballot_sync";
  case WarpOp::ReduceAdd:
    return "__reduce_add_sync";
  case WarpOp::ReduceMin:
    return "__reduce_min_sync";
  case WarpOp::ReduceMax:
    return "__reduce_max_sync";
  case WarpOp::ReduceAnd:
    return "__reduce_and_sync";
  case WarpOp::ReduceOr:
    return "__reduce_or_sync";
  case WarpOp::ReduceXor:
    return "__reduce_xor_sync";
  case WarpOp::MmaM16n8k16Bf16:
    return "mma.sync.m16n8k16";
  }
  return "?";
}

std::string where(Site site) {
  if (!site.file)
    return "?";
  std::string file = site.file;
  // Paths relative to the repository read better than absolute ones.
  size_t cut = file.rfind("/runtime/");
  if (cut != std::string::npos)
    file = file.substr(cut + 1);
  return file + ":" + std::to_string(site.line);
}

std::string coords(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," +
         std::to_string(v.z) + ")";
}

std::string hex(unsigned v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

[[noreturn]] void kernelError(const std::string &what) {
  fatal("kernel " + std::string(grid ? grid->kernel : "?") + ", block " +
        coords(current.block) + ", thread " + coords(current.thread) + ": " +
        what);
}

void switchStacks(void **save, void *to, void *toTsan, const void *bottom,
                  size_t size, bool finishing, bool synchronize) {
#if TGC_SIMT_ASAN
  void *fakeStack = nullptr;
  __sanitizer_start_switch_fiber(finishing ? nullptr : &fakeStack, bottom,
                                 size);
#else
  (void)bottom, (void)size, (void)finishing;
#endif
#if defined(TGC_SIMT_TSAN)
  __tsan_switch_to_fiber(toTsan,
                         synchronize ? 0 : __tsan_switch_to_fiber_no_sync);
#else
  (void)toTsan, (void)synchronize;
#endif
  tgc_simt_switch(save, to);
#if TGC_SIMT_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, nullptr, nullptr);
#endif
}

/// Back to the block's round robin from the running fiber.
void yieldToScheduler(bool finishing = false) {
  Fiber &f = (*grid->fibers)[grid->running];
  switchStacks(&f.sp, grid->mainSp, grid->mainTsan, nullptr, 0, finishing,
               false);
}

void fiberEntry() {
#if TGC_SIMT_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  (*grid->body)();
#if defined(TGC_SIMT_TSAN)
  // The thread's last accesses happen before the kernel's end.
  __tsan_release(&grid->tsanKernelEnd);
#endif
  (*grid->fibers)[grid->running].state = FiberState::Done;
  yieldToScheduler(/*finishing=*/true);
  std::abort(); // a finished fiber is never resumed
}

void ensureFibers(int threads) {
  while ((int)fiberPool.size() < threads) {
    Fiber f;
    long page = sysconf(_SC_PAGESIZE);
    void *base = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
      fatal("cannot map a fiber stack of " + std::to_string(kStackBytes) +
            " bytes");
    mprotect(base, page, PROT_NONE);
    f.stack = static_cast<char *>(base) + page;
#if defined(TGC_SIMT_TSAN)
    f.tsan = __tsan_create_fiber(0);
#endif
    fiberPool.push_back(f);
  }
}

/// A fresh frame that tgc_simt_switch "returns" into fiberEntry from.
void resetStack(Fiber &f) {
#if TGC_SIMT_ASAN
  __asan_unpoison_memory_region(f.stack, kStackBytes); // old frames' redzones
#endif
  uintptr_t top = ((uintptr_t)f.stack + kStackBytes) & ~(uintptr_t)15;
  uint64_t *p = reinterpret_cast<uint64_t *>(top);
  *--p = 0; // keeps fiberEntry's frame aligned as after a call
  *--p = reinterpret_cast<uint64_t>(&fiberEntry);
  for (int r = 0; r < 6; ++r)
    *--p = 0; // rbp rbx r12-r15
  uint32_t csr[2];
  asm volatile("stmxcsr %0; fnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
  *--p = (uint64_t)csr[0] | (uint64_t)(csr[1] & 0xffff) << 32;
  f.sp = p;
}

Fiber &runningFiber() { return (*grid->fibers)[grid->running]; }

int laneOf(int linear) { return linear % 32; }

int runningLinear() { return grid->running; }

void releaseBlockBarrier() {
  for (int t = 0; t < grid->threads; ++t) {
    Fiber &f = (*grid->fibers)[t];
    if (f.state == FiberState::AtBlockBarrier)
      f.state = FiberState::Ready;
  }
  grid->arrived = 0;
  ++grid->barrierGeneration;
}

/// What lane `lane` of the completed collective gets back.
void completeWarp(Warp &w, const Collective &c) {
  unsigned mask = c.mask;
  auto participates = [&](int l) { return (mask >> l & 1) != 0; };
  switch (c.op) {
  case WarpOp::Sync:
    break;
  case WarpOp::ShuffleIdx:
  case WarpOp::ShuffleUp:
  case WarpOp::ShuffleDown:
  case WarpOp::ShuffleXor:
    for (int l = 0; l < 32; ++l) {
      if (!participates(l))
        continue;
      int width = c.width, segment = l & ~(width - 1), arg = w.arg[l];
      int src = l;
      switch (c.op) {
      case WarpOp::ShuffleIdx:
        src = segment + (arg & (width - 1));
        break;
      case WarpOp::ShuffleUp:
        src = l - arg >= segment ? l - arg : l;
        break;
      case WarpOp::ShuffleDown:
        src = l + arg < segment + width ? l + arg : l;
        break;
      default:
        src = (l ^ arg) < segment + width ? (l ^ arg) : l;
        break;
      }
      if (!participates(src)) {
        kernelError(std::string(opName(c.op)) + " at " + where(c.firstSite) +
                    ": lane " + std::to_string(l) + " reads lane " +
                    std::to_string(src) + ", which is not in the mask " +
                    hex(mask));
      }
      w.out[l] = w.in[src];
    }
    break;
  case WarpOp::Ballot: {
    uint64_t bits = 0;
    for (int l = 0; l < 32; ++l)
      if (participates(l) && w.in[l].w[0])
        bits |= 1ull << l;
    for (int l = 0; l < 32; ++l)
      if (participates(l)) // a disjoint group may be under way
        w.out[l].w[0] = bits;
    break;
  }
  case WarpOp::ReduceAdd:
  case WarpOp::ReduceMin:
  case WarpOp::ReduceMax:
  case WarpOp::ReduceAnd:
  case WarpOp::ReduceOr:
  case WarpOp::ReduceXor: {
    bool first = true;
    uint32_t acc = 0;
    for (int l = 0; l < 32; ++l) {
      if (!participates(l))
        continue;
      uint32_t v = (uint32_t)w.in[l].w[0];
      if (first) {
        acc = v, first = false;
        continue;
      }
      switch (c.op) {
      case WarpOp::ReduceAdd:
        acc += v;
        break;
      case WarpOp::ReduceMin:
        acc = c.isSigned ? (uint32_t)std::min((int32_t)acc, (int32_t)v)
                         : std::min(acc, v);
        break;
      case WarpOp::ReduceMax:
        acc = c.isSigned ? (uint32_t)std::max((int32_t)acc, (int32_t)v)
                         : std::max(acc, v);
        break;
      case WarpOp::ReduceAnd:
        acc &= v;
        break;
      case WarpOp::ReduceOr:
        acc |= v;
        break;
      default:
        acc ^= v;
        break;
      }
    }
    for (int l = 0; l < 32; ++l)
      if (participates(l))
        w.out[l].w[0] = acc;
    break;
  }
  case WarpOp::MmaM16n8k16Bf16: {
    // The PTX ISA's fragment layouts, lane = 4 g + t: A (16x16, row) in
    // registers a0 (row g, k 2t..2t+1), a1 (row g+8), a2 (row g, k+8), a3
    // (row g+8, k+8); B (16x8, col) in b0 (k 2t..2t+1, column g), b1 (k+8);
    // C and D (16x8): c0, c1 at row g, columns 2t, 2t+1; c2, c3 at row g+8.
    auto bf16At = [](uint64_t reg, int hi) {
      uint32_t bits = hi ? (uint32_t)reg & 0xffff0000u : (uint32_t)reg << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    };
    auto A = [&](int r, int k) {
      int g = r % 8, t = (k % 8) / 2, reg = (r >= 8) + 2 * (k >= 8);
      return bf16At(w.in[4 * g + t].w[reg], k & 1);
    };
    auto B = [&](int k, int n) {
      int t = (k % 8) / 2;
      return bf16At(w.in[4 * n + t].w[4 + (k >= 8)], k & 1);
    };
    for (int l = 0; l < 32; ++l) {
      int g = l / 4, t = l % 4;
      for (int i = 0; i < 4; ++i) {
        int r = g + 8 * (i >= 2), n = 2 * t + (i & 1);
        float s = 0;
        for (int k = 0; k < 16; ++k)
          s += A(r, k) * B(k, n);
        std::memcpy(&w.out[l].w[i], &s, 4);
      }
    }
    break;
  }
  }
}

/// Completes the __activemask calls of every warp none of whose lanes can
/// run: the lanes at one call site are the converged ones. Whether any was.
bool releaseActiveMasks() {
  if (!grid->activeMaskWaiters)
    return false;
  bool released = false;
  for (size_t w = 0; w < grid->warps.size(); ++w) {
    int first = (int)w * 32, last = std::min(first + 32, grid->threads);
    bool runnable = false, waiting = false;
    for (int t = first; t < last; ++t) {
      FiberState s = (*grid->fibers)[t].state;
      runnable |= s == FiberState::Ready;
      waiting |= s == FiberState::AtActiveMask;
    }
    if (runnable || !waiting)
      continue;
    for (int t = first; t < last; ++t) {
      Fiber &f = (*grid->fibers)[t];
      if (f.state != FiberState::AtActiveMask)
        continue;
      unsigned mask = 0;
      for (int u = first; u < last; ++u) {
        const Fiber &o = (*grid->fibers)[u];
        if (o.state == FiberState::AtActiveMask &&
            o.waitSite.file == f.waitSite.file &&
            o.waitSite.line == f.waitSite.line)
          mask |= 1u << laneOf(u);
      }
      f.activeMask = mask;
    }
    for (int t = first; t < last; ++t)
      if ((*grid->fibers)[t].state == FiberState::AtActiveMask) {
        (*grid->fibers)[t].state = FiberState::Ready;
        --grid->activeMaskWaiters;
      }
    released = true;
  }
  return released;
}

/// The deadlock report: who waits where.
[[noreturn]] void reportDeadlock() {
  std::map<std::string, std::vector<std::string>> waits;
  for (int t = 0; t < grid->threads; ++t) {
    Fiber &f = (*grid->fibers)[t];
    if (f.state == FiberState::Done)
      continue;
    waits[std::string(f.waitWhat) + " at " + where(f.waitSite)].push_back(
        coords(f.tid));
  }
  std::string text = "deadlock: no thread can go on;";
  for (auto &[site, threads] : waits) {
    text += " " + std::to_string(threads.size()) + " thread(s) wait at " +
            site + " (first " + threads.front() + ");";
  }
  int done = 0;
  for (int t = 0; t < grid->threads; ++t)
    done += (*grid->fibers)[t].state == FiberState::Done;
  text += " " + std::to_string(done) + " returned";
  fatal("kernel " + std::string(grid->kernel) + ", block " +
        coords(current.block) + ": " + text);
}

/// The lane's warp has lost it: a collective that waits for it can never
/// complete.
void laneExits(int linear) {
  Warp &w = grid->warps[linear / 32];
  int lane = laneOf(linear);
  w.live &= ~(1u << lane);
  for (int at = 0; at < w.pendingCount; ++at)
    if (const Collective &c = w.pending[at]; c.mask >> lane & 1)
      kernelError("returns while lanes " + hex(c.arrived) +
                  " of its warp wait for it at " + std::string(opName(c.op)) +
                  " at " + where(c.firstSite) + " (mask " + hex(c.mask) +
                  "): the lanes diverged");
}

} // namespace

//===----------------------------------------------------------------------===//
// Simt.h's interface
//===----------------------------------------------------------------------===//

void syncThreads(Site site) {
  if (!grid)
    fatal("__syncthreads called outside a kernel at " + where(site));
#if defined(TGC_SIMT_TSAN)
  char *sync = &grid->tsanBarrier[grid->barrierGeneration & 1];
  __tsan_release(sync);
#endif
  Fiber &f = runningFiber();
  if (++grid->arrived == grid->live) {
    releaseBlockBarrier();
  } else {
    f.state = FiberState::AtBlockBarrier;
    f.waitSite = site;
    f.waitWhat = "__syncthreads";
    yieldToScheduler();
  }
#if defined(TGC_SIMT_TSAN)
  __tsan_acquire(sync);
#endif
}

LaneWords warpCollective(WarpOp op, unsigned mask, const LaneWords &in, int arg,
                         int width, bool isSigned, Site site) {
  if (!grid)
    fatal(std::string(opName(op)) + " called outside a kernel at " +
          where(site));
  int linear = runningLinear(), lane = laneOf(linear);
  Warp &w = grid->warps[linear / 32];
  // Only the error paths spell it out (a string a call is a heap allocation
  // for every mma.sync).
  auto name = [op] { return std::string(opName(op)); };
  if (op == WarpOp::Sync)
    mask &= 0xffffffffu; // __syncwarp's default is the full warp
  if (!(mask >> lane & 1))
    kernelError(name() + " at " + where(site) + ": lane " +
                std::to_string(lane) + " is not in its own mask " + hex(mask));
  if (mask & ~w.live)
    kernelError(name() + " at " + where(site) + ": the mask " + hex(mask) +
                " names lanes " + hex(mask & ~w.live) +
                " that have returned (live lanes " + hex(w.live) + ")");
  if (width < 1 || width > 32 || (width & (width - 1)))
    kernelError(name() + " at " + where(site) + ": width " +
                std::to_string(width) + " is not a power of 2 up to 32");
  if (op == WarpOp::MmaM16n8k16Bf16 && mask != 0xffffffffu)
    kernelError(name() + " at " + where(site) +
                ": needs all 32 lanes of the warp, live lanes " + hex(w.live));
  // The collective this lane joins: the one under way whose mask overlaps
  // its own, which must be the same call, or a new one.
  int at = 0;
  while (at < w.pendingCount && !(w.pending[at].mask & mask))
    ++at;
  if (at < w.pendingCount) {
    const Collective &c = w.pending[at];
    if (c.op != op || c.mask != mask)
      kernelError("lanes diverged: lane " + std::to_string(lane) + " is at " +
                  name() + " at " + where(site) + " with mask " + hex(mask) +
                  " while lanes " + hex(c.arrived) + " wait at " +
                  opName(c.op) + " at " + where(c.firstSite) + " with mask " +
                  hex(c.mask));
  } else {
    Collective c;
    c.op = op;
    c.mask = mask;
    c.width = width;
    c.isSigned = isSigned;
    c.firstSite = site;
    w.pending[w.pendingCount++] = c;
  }
  Collective &c = w.pending[at];
  w.in[lane] = in;
  w.arg[lane] = arg;
  c.arrived |= 1u << lane;
#if defined(TGC_SIMT_TSAN)
  char *sync = &w.tsanSync[__builtin_ctz(mask)];
  if (op == WarpOp::Sync)
    __tsan_release(sync);
#endif
  if (c.arrived == c.mask) {
    completeWarp(w, c);
    w.pending[at] = w.pending[--w.pendingCount];
    for (int l = 0; l < 32; ++l) {
      int t = (linear / 32) * 32 + l;
      if ((mask >> l & 1) && t < grid->threads &&
          (*grid->fibers)[t].state == FiberState::AtWarp)
        (*grid->fibers)[t].state = FiberState::Ready;
    }
  } else {
    Fiber &f = runningFiber();
    f.state = FiberState::AtWarp;
    f.waitSite = site;
    f.waitWhat = opName(op);
    yieldToScheduler();
  }
#if defined(TGC_SIMT_TSAN)
  if (op == WarpOp::Sync)
    __tsan_acquire(sync);
#endif
  return w.out[lane];
}

void *dynamicShared() {
  if (!grid)
    fatal("dynamic shared memory used outside a kernel");
  return grid->dynamicShared;
}

unsigned activeMask(Site site) {
  if (!grid)
    fatal("__activemask called outside a kernel at " + where(site));
  // The lanes that have not returned would include those that diverged
  // and have yet to run (they return later, or wait elsewhere); a GPU
  // counts only the converged ones. So the lane waits until no lane of its
  // warp can run, and gets the lanes waiting at this same call
  // (releaseActiveMasks).
  Fiber &f = runningFiber();
  f.state = FiberState::AtActiveMask;
  f.waitSite = site;
  f.waitWhat = "__activemask";
  ++grid->activeMaskWaiters;
  yieldToScheduler();
  return runningFiber().activeMask;
}

namespace ptx {
void mma_sync_aligned_m16n8k16_row_col_f32_bf16_bf16_f32(
    float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1,
    uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1, float c0, float c1,
    float c2, float c3, Site site) {
  LaneWords in;
  in.w[0] = a0, in.w[1] = a1, in.w[2] = a2, in.w[3] = a3, in.w[4] = b0,
  in.w[5] = b1;
  LaneWords out = warpCollective(WarpOp::MmaM16n8k16Bf16, 0xffffffffu, in, 0,
                                 32, false, site);
  float ab[4];
  for (int i = 0; i < 4; ++i)
    std::memcpy(&ab[i], &out.w[i], 4);
  d0 = ab[0] + c0, d1 = ab[1] + c1, d2 = ab[2] + c2, d3 = ab[3] + c3;
}
} // namespace ptx

void runGrid(const char *kernel, dim3 gridSize, dim3 block, size_t sharedBytes,
             const std::function<void()> &threadBody) {
  if (grid)
    fatal("kernel " + std::string(kernel) + " launched from inside kernel " +
          grid->kernel + " (dynamic parallelism is not emulated)");
  int threads = (int)(block.x * block.y * block.z);
  int warps = (threads + 31) / 32;
  ensureFibers(threads);

  Grid g;
  g.kernel = kernel;
  g.body = &threadBody;
  g.fibers = &fiberPool;
  g.threads = threads;
  g.warps.resize(warps);
  // Exactly the launch's bytes: AddressSanitizer reports a read past them.
  std::unique_ptr<unsigned char[]> shared(
      new unsigned char[sharedBytes ? sharedBytes : 1]);
  g.dynamicShared = shared.get();
#if defined(TGC_SIMT_TSAN)
  g.mainTsan = __tsan_get_current_fiber();
#endif
  currentBlockDim = block;
  currentGridDim = gridSize;

  size_t blocks = (size_t)gridSize.x * gridSize.y * gridSize.z;
  std::vector<size_t> order;
  static const char *seedText = std::getenv("TGC_SIMT_SEED");
  static std::mt19937_64 shuffler(
      seedText ? std::strtoull(seedText, nullptr, 10) : 0);
  if (seedText) {
    order.resize(blocks);
    for (size_t i = 0; i < blocks; ++i)
      order[i] = i;
    std::shuffle(order.begin(), order.end(), shuffler);
  }

  grid = &g;
  for (size_t n = 0; n < blocks; ++n) {
    size_t i = seedText ? order[n] : n;
    current.block = {(unsigned)(i % gridSize.x),
                     (unsigned)(i / gridSize.x % gridSize.y),
                     (unsigned)(i / ((size_t)gridSize.x * gridSize.y))};
    std::memset(g.dynamicShared, 0xff, sharedBytes);
    g.live = threads;
    g.arrived = 0;
    for (int w = 0; w < warps; ++w) {
      int lanes = std::min(32, threads - 32 * w);
      g.warps[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
      g.warps[w].pendingCount = 0;
    }
    for (int t = 0; t < threads; ++t) {
      Fiber &f = fiberPool[t];
      f.tid = {(unsigned)(t % block.x), (unsigned)(t / block.x % block.y),
               (unsigned)(t / (block.x * block.y))};
      f.state = FiberState::Ready;
      resetStack(f);
    }
    for (int left = threads; left > 0;) {
      bool ran = false;
      for (int t = 0; t < threads; ++t) {
        Fiber &f = fiberPool[t];
        if (f.state != FiberState::Ready)
          continue;
        ran = true;
        g.running = t;
        current.thread = f.tid;
        switchStacks(&g.mainSp, f.sp, f.tsan, f.stack, kStackBytes, false,
                     true);
        if (f.state == FiberState::Done) {
          --left;
          laneExits(t);
          // A returned thread leaves the block barrier (sm_70+).
          if (--g.live > 0 && g.arrived == g.live)
            releaseBlockBarrier();
        }
      }
      // A warp's __activemask calls complete once none of its lanes can
      // run; only then may the block be stuck.
      if (!releaseActiveMasks() && !ran && left > 0)
        reportDeadlock();
    }
#if defined(TGC_SIMT_TSAN)
    __tsan_acquire(&g.tsanKernelEnd);
#endif
  }
  grid = nullptr;
  g.running = -1;
}

} // namespace tgc::simt

//===- SimtTest.cpp - The emulator against CUDA semantics -------*- C++ -*-===//
//
// runtime/cuda/simt's own tests: the kernels of SimtKernels.cu (compiled
// as runtime/cuda's are) run through Simt.h, Scheduler.cpp and Runtime.cpp,
// and each result is compared with what CUDA specifies, computed here
// independently (the shuffles from the PTX ISA's pseudo-code, the mma from
// a plain GEMM):
//  - the built-ins: coordinates in 1-D, 2-D and 3-D, __syncthreads with
//    returned threads, every shuffle, vote and warp reduction, atomics,
//    dynamic shared memory and its limits, launch configurations, mma.sync;
//  - the misuse the emulator stops a kernel for, as death tests;
//  - the runtime's execution model: work runs at synchronization, in
//    stream order, across streams only where an event orders it (the
//    latest-enqueued work first otherwise), the legacy default stream's
//    implicit ordering, pageable copies, work that completes after it
//    starts (enqueueAsync), graph capture and replay, and the errors CUDA
//    returns for each misuse.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/Runtime.h"
#include "runtime/cuda/simt/tests/SimtKernels.h"

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace tgc::simt::test {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A device array of T (filled with 0xff bytes, as cudaMalloc leaves it
/// here), freed on destruction.
template <typename T> class DeviceArray {
public:
  explicit DeviceArray(size_t count) : count(count) {
    EXPECT_EQ(cudaMalloc((void **)&data, bytes()), cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T> &host) : DeviceArray(host.size()) {
    upload(host);
  }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  T *get() const { return data; }
  size_t bytes() const { return count * sizeof(T); }
  void upload(const std::vector<T> &host) {
    ASSERT_EQ(host.size(), count);
    ASSERT_EQ(cudaMemcpy(data, host.data(), bytes(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  /// A synchronous copy back (after the legacy default stream and the
  /// blocking streams it waits for).
  std::vector<T> download() const {
    std::vector<T> host(count);
    EXPECT_EQ(cudaMemcpy(host.data(), data, bytes(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  /// What the device memory holds now, without synchronizing: device
  /// memory is host memory here, so this shows what has run.
  T peek(size_t i) const { return data[i]; }
  void zero() { ASSERT_EQ(cudaMemset(data, 0, bytes()), cudaSuccess); }

private:
  T *data = nullptr;
  size_t count;
};

/// A stream, destroyed at the end of the test.
struct Stream {
  explicit Stream(unsigned flags = cudaStreamDefault) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, flags), cudaSuccess);
  }
  ~Stream() { cudaStreamDestroy(stream); }
  operator cudaStream_t() const { return stream; }
  cudaStream_t stream = nullptr;
};

struct Event {
  explicit Event(unsigned flags = cudaEventDefault) {
    EXPECT_EQ(cudaEventCreateWithFlags(&event, flags), cudaSuccess);
  }
  ~Event() { cudaEventDestroy(event); }
  operator cudaEvent_t() const { return event; }
  cudaEvent_t event = nullptr;
};

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

//===----------------------------------------------------------------------===//
// Coordinates and barriers
//===----------------------------------------------------------------------===//

TEST(SimtBuiltins, CoordinatesInOneTwoAndThreeDimensions) {
  const dim3 shapes[][2] = {{dim3(3), dim3(5)},
                            {dim3(2, 3), dim3(4, 3)},
                            {dim3(2, 2, 3), dim3(3, 2, 4)},
                            {dim3(1, 1, 2), dim3(1, 1, 64)},
                            {dim3(2), dim3(1024)}};
  for (auto &shape : shapes) {
    dim3 g = shape[0], b = shape[1];
    SCOPED_TRACE(testing::Message()
                 << "grid (" << g.x << "," << g.y << "," << g.z << ") block ("
                 << b.x << "," << b.y << "," << b.z << ")");
    size_t blocks = (size_t)g.x * g.y * g.z, threads = (size_t)b.x * b.y * b.z;
    DeviceArray<unsigned> out(12 * blocks * threads);
    launchRecordCoordinates(g, b, out.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<unsigned> r = out.download();
    // Every (block, thread) writes its own record, so each record naming
    // its own coordinates means each thread ran once with the right ones.
    for (size_t blk = 0; blk < blocks; ++blk) {
      for (size_t t = 0; t < threads; ++t) {
        const unsigned *rec = &r[12 * (blk * threads + t)];
        unsigned expected[12] = {(unsigned)(t % b.x),
                                 (unsigned)(t / b.x % b.y),
                                 (unsigned)(t / (b.x * b.y)),
                                 (unsigned)(blk % g.x),
                                 (unsigned)(blk / g.x % g.y),
                                 (unsigned)(blk / (g.x * g.y)),
                                 b.x,
                                 b.y,
                                 b.z,
                                 g.x,
                                 g.y,
                                 g.z};
        for (int k = 0; k < 12; ++k)
          ASSERT_EQ(rec[k], expected[k])
              << "block " << blk << " thread " << t << " field " << k;
      }
    }
  }
}

TEST(SimtBuiltins, ReturnedThreadsLeaveTheBlockBarrier) {
  // 96 threads: the third warp partly returned; 1024: 31 of 32 warps.
  const int shapes[][2] = {{96, 70}, {1024, 33}, {64, 64}};
  for (auto &shape : shapes) {
    int threads = shape[0], stay = shape[1], blocks = 3;
    SCOPED_TRACE(testing::Message()
                 << threads << " threads, " << stay << " stay");
    DeviceArray<int> out(blocks * threads);
    out.zero();
    launchBarrierWithExits(blocks, threads, stay, out.get());
    std::vector<int> r = out.download();
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < threads; ++t) {
        int expected = 0;
        if (t < stay) {
          int n = (t + 1) % stay;
          expected = 10 * n + 1;
          if (t % 5 != 4 && n % 5 != 4)
            expected += 7 * n + 10 * ((n + 1) % stay) + 1;
        }
        ASSERT_EQ(r[b * threads + t], expected)
            << "block " << b << " thread " << t;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

/// The lane that lane `lane` reads, from the PTX ISA's shfl.sync pseudo-code
/// with the c operand CUDA's __shfl*_sync pass for `width`
/// ((32 - width) << 8, | 0x1f except for up).
int ptxShuffleSource(ShuffleKind kind, int lane, int width, int b) {
  int segmask = (32 - width) & 31, cval = kind == ShuffleUp ? 0 : 0x1f;
  int maxLane = (lane & segmask) | (cval & ~segmask);
  int minLane = lane & segmask;
  int bval = b & 31, j = lane;
  bool pval = false;
  switch (kind) {
  case ShuffleUp:
    j = lane - bval;
    pval = j >= maxLane;
    break;
  case ShuffleDown:
    j = lane + bval;
    pval = j <= maxLane;
    break;
  case ShuffleXor:
    j = lane ^ bval;
    pval = j <= maxLane;
    break;
  case ShuffleIdx:
    j = minLane | (bval & ~segmask & 31);
    pval = j <= maxLane;
    break;
  }
  return pval ? j : lane;
}

TEST(SimtWarp, EveryShuffleKindWidthAndMask) {
  const unsigned masks[] = {0xffffffffu, 0x0000ffffu, 0xffff0000u, 0x55555555u,
                            0x0f0f0f0fu, 0x00000100u, 0x80000001u, 0x000000ffu};
  const int args[4][8] = {{0, 1, 3, 17, 31, 45, -1, 6},
                          {0, 1, 2, 3, 7, 16, 31, 4},
                          {0, 1, 2, 3, 7, 16, 31, 4},
                          {0, 1, 2, 3, 8, 16, 31, 5}};
  std::vector<int> cases;
  int partial = 0;
  for (unsigned mask : masks)
    for (int kind = 0; kind < 4; ++kind)
      for (int width = 1; width <= 32; width *= 2)
        for (int arg : args[kind]) {
          // A lane reading one outside the mask is undefined on a GPU (and
          // an error here): only the cases where every source takes part.
          bool defined = true;
          for (int l = 0; l < 32; ++l)
            if (mask >> l & 1)
              defined &=
                  (mask >> ptxShuffleSource((ShuffleKind)kind, l, width, arg) &
                   1) != 0;
          if (!defined)
            continue;
          partial += mask != 0xffffffffu;
          cases.insert(cases.end(), {kind, width, arg, (int)mask});
        }
  int count = (int)cases.size() / 4;
  ASSERT_GT(partial, 300) << "too few partial-mask cases";

  DeviceArray<int> deviceCases(cases);
  DeviceArray<int> outInt(32 * count);
  DeviceArray<long long> outLong(32 * count);
  launchShuffleCases(count, deviceCases.get(), outInt.get(), outLong.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> ri = outInt.download();
  std::vector<long long> rl = outLong.download();
  static const char *kinds[] = {"__shfl_sync", "__shfl_up_sync",
                                "__shfl_down_sync", "__shfl_xor_sync"};
  for (int c = 0; c < count; ++c) {
    int kind = cases[4 * c], width = cases[4 * c + 1], arg = cases[4 * c + 2];
    unsigned mask = (unsigned)cases[4 * c + 3];
    for (int l = 0; l < 32; ++l) {
      if (!(mask >> l & 1))
        continue;
      int src = ptxShuffleSource((ShuffleKind)kind, l, width, arg);
      ASSERT_EQ(ri[32 * c + l], 1000 * c + src)
          << kinds[kind] << " mask " << std::hex << mask << std::dec
          << " width " << width << " arg " << arg << " lane " << l;
      ASSERT_EQ(rl[32 * c + l], (long long)(src + 1) << 40 | (64LL * c + src))
          << kinds[kind] << " (64-bit) mask " << std::hex << mask << std::dec
          << " width " << width << " arg " << arg << " lane " << l;
    }
  }
}

TEST(SimtWarp, BallotAnyAllAndReductions) {
  const unsigned masks[] = {0xffffffffu, 0x0000ffffu, 0x80000001u, 0xaaaaaaaau,
                            0x00000080u};
  const unsigned predicates[] = {0u, 0xffffffffu, 0x12345678u, 0x0000ffffu,
                                 0x80000000u};
  std::mt19937 rng(7);
  std::vector<unsigned> cases;
  std::vector<int> values;
  for (unsigned mask : masks)
    for (unsigned p : predicates) {
      cases.insert(cases.end(), {mask, p});
      for (int l = 0; l < 32; ++l)
        values.push_back((int)(rng() % 2000001) - 1000000);
    }
  // One case of values whose sum wraps and whose bits all differ.
  cases.insert(cases.end(), {0xffffffffu, 0x0f0f0f0fu});
  for (int l = 0; l < 32; ++l)
    values.push_back(l % 2 ? INT32_MIN + l : INT32_MAX - l);
  int count = (int)cases.size() / 2;

  DeviceArray<unsigned> deviceCases(cases);
  DeviceArray<int> deviceValues(values);
  DeviceArray<unsigned> out(32 * count * VoteResults);
  launchVoteCases(count, deviceCases.get(), deviceValues.get(), out.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<unsigned> r = out.download();
  static const char *names[] = {"ballot", "any",   "all",   "add",
                                "min u",  "min i", "max u", "max i",
                                "and",    "or",    "xor",   "activemask"};
  for (int c = 0; c < count; ++c) {
    unsigned mask = cases[2 * c], ballot = cases[2 * c + 1] & mask;
    unsigned expected[VoteResults] = {ballot,
                                      ballot != 0,
                                      ballot == mask,
                                      0,
                                      UINT32_MAX,
                                      (unsigned)INT32_MAX,
                                      0,
                                      (unsigned)INT32_MIN,
                                      UINT32_MAX,
                                      0,
                                      0,
                                      mask};
    for (int l = 0; l < 32; ++l) {
      if (!(mask >> l & 1))
        continue;
      int v = values[32 * c + l];
      unsigned u = (unsigned)v;
      expected[VoteAddU] += u;
      expected[VoteMinU] = std::min(expected[VoteMinU], u);
      expected[VoteMinI] = (unsigned)std::min((int)expected[VoteMinI], v);
      expected[VoteMaxU] = std::max(expected[VoteMaxU], u);
      expected[VoteMaxI] = (unsigned)std::max((int)expected[VoteMaxI], v);
      expected[VoteAnd] &= u;
      expected[VoteOr] |= u;
      expected[VoteXor] ^= u;
    }
    for (int l = 0; l < 32; ++l) {
      if (!(mask >> l & 1))
        continue;
      for (int k = 0; k < VoteResults; ++k)
        ASSERT_EQ(r[(32 * c + l) * VoteResults + k], expected[k])
            << names[k] << ", case " << c << " mask " << std::hex << mask
            << std::dec << " lane " << l;
    }
  }
}

TEST(SimtWarp, DivergedGroupsGetTheirOwnActiveMask) {
  // Lanes l % 3 == 0 call __activemask at one line, the other lanes below
  // 20 at another, the rest return: each group gets its own lanes (not the
  // lanes that have yet to return), and the two groups' reductions over
  // their interleaved masks are under way at once.
  unsigned thirds = 0, others = 0;
  for (int l = 0; l < 32; ++l) {
    if (l % 3 == 0)
      thirds |= 1u << l;
    else if (l < 20)
      others |= 1u << l;
  }
  DeviceArray<unsigned> out(64);
  out.zero();
  launchDivergentActiveMask(out.get());
  std::vector<unsigned> r = out.download();
  for (int l = 0; l < 32; ++l) {
    unsigned expected = thirds >> l & 1 ? thirds : others >> l & 1 ? others : 0;
    EXPECT_EQ(r[l], expected) << "lane " << l;
    EXPECT_EQ(r[32 + l], (unsigned)__builtin_popcount(expected))
        << "lane " << l;
  }
}

//===----------------------------------------------------------------------===//
// Atomics and shared memory
//===----------------------------------------------------------------------===//

TEST(SimtBuiltins, AtomicsFromManyBlocks) {
  const int blocks = 64, threads = 128, n = blocks * threads;
  DeviceArray<AtomicCounters> counters(1);
  counters.zero();
  DeviceArray<int> olds(n);
  launchAtomics(blocks, threads, counters.get(), olds.get());
  AtomicCounters c = counters.download()[0];
  EXPECT_EQ(c.floatSum, 0.5f * n);
  EXPECT_EQ(c.intSum, n);
  EXPECT_EQ(c.doubleSum, 0.125 * ((double)n * (n - 1) / 2));
  EXPECT_EQ(c.casCount, 2u * n);
  int intMax = 0;
  for (int id = 0; id < n; ++id)
    intMax = std::max(intMax, (int)((7919LL * id) % 10007));
  EXPECT_EQ(c.intMax, intMax);
  EXPECT_EQ(c.unsignedMax, (unsigned)n - 1);
  // atomicAdd returns the old value: each of 0..n-1 exactly once.
  std::vector<int> o = olds.download();
  std::sort(o.begin(), o.end());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(o[i], i);
}

TEST(SimtBuiltins, DynamicSharedMemoryIsPoisonedForEveryBlock) {
  // Each block fills its shared memory with its index (block 0 with
  // zeros): the next block must find 0xff again.
  for (size_t bytes : {(size_t)1, (size_t)48 * 1024, (size_t)100 * 1024}) {
    SCOPED_TRACE(testing::Message() << bytes << " bytes");
    const int blocks = 5;
    DeviceArray<unsigned> dirty(blocks);
    launchDynamicSharedPoison(blocks, bytes, dirty.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<unsigned> d = dirty.download();
    for (int b = 0; b < blocks; ++b)
      EXPECT_EQ(d[b], 0u) << "block " << b;
  }
}

TEST(SimtBuiltins, DynamicSharedMemoryLimits) {
  DeviceArray<int> ran(1);
  auto tryLaunch = [&](size_t bytes) {
    ran.zero();
    launchSharedProbe(bytes, ran.get());
    cudaError_t e = cudaGetLastError();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(ran.download()[0], e == cudaSuccess ? 1 : 0)
        << "a failed launch must run nothing";
    return e;
  };
  EXPECT_EQ(tryLaunch(48 * 1024), cudaSuccess);
  EXPECT_EQ(tryLaunch(48 * 1024 + 1), cudaErrorInvalidValue)
      << "over 48 KiB needs cudaFuncSetAttribute";
  EXPECT_EQ(setSharedProbeLimit(227 * 1024 + 1), cudaErrorInvalidValue)
      << "over 227 KiB is refused";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(tryLaunch(100 * 1024), cudaErrorInvalidValue);
  ASSERT_EQ(setSharedProbeLimit(227 * 1024), cudaSuccess);
  EXPECT_EQ(tryLaunch(100 * 1024), cudaSuccess);
  EXPECT_EQ(tryLaunch(227 * 1024), cudaSuccess);
  EXPECT_EQ(tryLaunch(227 * 1024 + 1), cudaErrorInvalidValue);
}

TEST(SimtBuiltins, InvalidLaunchConfigurations) {
  DeviceArray<unsigned> out(12 * 1024);
  const dim3 bad[][2] = {{dim3(0), dim3(32)},      {dim3(1, 0), dim3(32)},
                         {dim3(1), dim3(0)},       {dim3(1), dim3(1025)},
                         {dim3(1), dim3(32, 33)},  {dim3(1), dim3(1, 1, 65)},
                         {dim3(1, 65536), dim3(1)}};
  for (auto &config : bad) {
    dim3 g = config[0], b = config[1];
    SCOPED_TRACE(testing::Message()
                 << "grid (" << g.x << "," << g.y << "," << g.z << ") block ("
                 << b.x << "," << b.y << "," << b.z << ")");
    launchRecordCoordinates(g, b, out.get());
    EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error is not sticky";
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.peek(0), 0xffffffffu) << "a failed launch runs nothing";
  launchRecordCoordinates(dim3(1), dim3(1024), out.get());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

//===----------------------------------------------------------------------===//
// Tensor cores
//===----------------------------------------------------------------------===//

uint16_t toBf16(float f) {
  uint32_t b = bitsOf(f);
  return (uint16_t)((b + 0x7fff + (b >> 16 & 1)) >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(SimtWarp, MmaM16n8k16MatchesAPlainGemm) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    std::vector<uint16_t> a(16 * 16), b(16 * 8);
    std::vector<float> c(16 * 8);
    for (auto &x : a)
      x = toBf16(dist(rng));
    for (auto &x : b)
      x = toBf16(dist(rng));
    for (auto &x : c)
      x = dist(rng);
    DeviceArray<uint16_t> da(a), db(b);
    DeviceArray<float> dc(c), dd(16 * 8);
    launchMma(da.get(), db.get(), dc.get(), dd.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<float> d = dd.download();
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n) {
        // bf16 products are exact in fp32; only the order of the fp32 sum
        // differs from the tensor core's.
        double ref = c[r * 8 + n], magnitude = std::fabs(ref);
        for (int k = 0; k < 16; ++k) {
          double p = (double)fromBf16(a[r * 16 + k]) * fromBf16(b[k * 8 + n]);
          ref += p;
          magnitude += std::fabs(p);
        }
        EXPECT_NEAR(d[r * 8 + n], ref, 4e-6 * magnitude)
            << "seed " << seed << " row " << r << " column " << n;
      }
  }
}

//===----------------------------------------------------------------------===//
// Misuse: the emulator stops the program and names the kernel and line
//===----------------------------------------------------------------------===//

TEST(SimtMisuseDeathTest, LaneOutsideItsOwnMask) {
  EXPECT_DEATH(launchMisuse(Misuse::LaneOutsideItsMask),
               "kernel laneOutsideItsMask, block \\(0,0,0\\), thread "
               "\\(0,0,0\\): __shfl_sync at [^ ]*SimtKernels.cu:[0-9]+: lane "
               "0 is not in its own mask 0x00000002");
}

TEST(SimtMisuseDeathTest, MaskNamesAnExitedLane) {
  EXPECT_DEATH(launchMisuse(Misuse::MaskNamesExitedLane),
               "kernel maskNamesExitedLane, block \\(0,0,0\\), thread "
               "\\(16,0,0\\): __shfl_sync at [^ ]*SimtKernels.cu:[0-9]+: the "
               "mask 0xffffffff names lanes 0x0000ffff that have returned");
}

TEST(SimtMisuseDeathTest, LanesAtDifferentCollectives) {
  EXPECT_DEATH(launchMisuse(Misuse::DivergedLanes),
               "kernel divergedLanes, block \\(0,0,0\\), thread \\(1,0,0\\): "
               "lanes diverged: lane 1 is at __shfl_down_sync at "
               "[^ ]*SimtKernels.cu:[0-9]+ with mask 0xffffffff while lanes "
               "0x00000001 wait at __shfl_xor_sync at "
               "[^ ]*SimtKernels.cu:[0-9]+");
}

TEST(SimtMisuseDeathTest, LaneExitsWhileItsWarpWaits) {
  EXPECT_DEATH(launchMisuse(Misuse::LaneExitsWhileWaited),
               "kernel laneExitsWhileWaited, block \\(0,0,0\\), thread "
               "\\(16,0,0\\): returns while lanes 0x0000ffff of its warp "
               "wait for it at __syncwarp at [^ ]*SimtKernels.cu:[0-9]+");
}

TEST(SimtMisuseDeathTest, BlockDeadlock) {
  EXPECT_DEATH(
      launchMisuse(Misuse::BlockDeadlock),
      "kernel blockDeadlock, block \\(0,0,0\\): deadlock: no thread "
      "can go on; 63 thread\\(s\\) wait at __syncthreads at "
      "[^ ]*SimtKernels.cu:[0-9]+ \\(first \\(1,0,0\\)\\); 1 "
      "thread\\(s\\) wait at __syncwarp at [^ ]*SimtKernels.cu:[0-9]+");
}

TEST(SimtMisuseDeathTest, HostPointerPassedToAKernel) {
  std::vector<float> host(16);
  EXPECT_DEATH(launchFill(host.data(), 1.0f, 16),
               "kernel fill launched at [^ ]*SimtKernels.cu:[0-9]+: argument "
               "0 \\(0x[0-9a-f]+\\) points into no device allocation");
}

TEST(SimtMisuseDeathTest, DestroyedStream) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_DEATH(cudaStreamSynchronize(s),
               "cudaStreamSynchronize: stream 0x[0-9a-f]+ was never created "
               "or has been destroyed");
  DeviceArray<float> x(4);
  EXPECT_DEATH(launchFill(x.get(), 1.0f, 4, s),
               "fill: stream 0x[0-9a-f]+ was never created or has been "
               "destroyed");
}

TEST(SimtMisuseDeathTest, DestroyedEvent) {
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_DEATH(cudaEventRecord(e, nullptr),
               "cudaEventRecord: event 0x[0-9a-f]+ was never created or has "
               "been destroyed");
  EXPECT_DEATH(cudaStreamWaitEvent(nullptr, e, 0),
               "cudaStreamWaitEvent: event 0x[0-9a-f]+ was never created");
}

//===----------------------------------------------------------------------===//
// Streams: work runs when the host synchronizes, latest-enqueued first
//===----------------------------------------------------------------------===//

constexpr int kN = 300;

TEST(SimtStreams, WorkRunsOnlyAtSynchronization) {
  DeviceArray<float> x(kN);
  x.zero();
  Stream s;
  Event e;
  launchFill(x.get(), 3.0f, kN, s);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(x.peek(0), 0.0f) << "the kernel ran at its launch";
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_EQ(x.peek(0), 3.0f);
  EXPECT_EQ(x.peek(kN - 1), 3.0f);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
}

TEST(SimtStreams, StreamOrder) {
  DeviceArray<float> x(kN), y(kN);
  Stream s, t;
  launchFill(x.get(), 1.0f, kN, s);
  launchFill(y.get(), 2.0f, kN, t);
  for (int i = 0; i < 3; ++i) {
    launchAxpb(x.get(), x.get(), 2.0f, 1.0f, kN, s); // 1 -> 3 -> 7 -> 15
    launchAxpb(y.get(), y.get(), 3.0f, 0.0f, kN, t); // 2 -> 6 -> 18 -> 54
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(x.peek(kN / 2), 15.0f);
  EXPECT_EQ(y.peek(kN / 2), 54.0f);
}

TEST(SimtStreams, WaitEventOrdersAcrossStreams) {
  DeviceArray<float> x(kN), y(kN);
  Stream s1, s2;
  Event e(cudaEventDisableTiming);
  x.zero(), y.zero();
  launchFill(x.get(), 5.0f, kN, s1);
  ASSERT_EQ(cudaEventRecord(e, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
  launchAxpb(y.get(), x.get(), 2.0f, 1.0f, kN, s2);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(y.peek(0), 11.0f);
}

TEST(SimtStreams, MissingWaitReadsStaleData) {
  // The same work without cudaStreamWaitEvent: the latest-enqueued work
  // runs first, so s2 reads x before s1 filled it, as a GPU may.
  DeviceArray<float> x(kN), y(kN);
  Stream s1, s2;
  x.zero(), y.zero();
  launchFill(x.get(), 5.0f, kN, s1);
  launchAxpb(y.get(), x.get(), 2.0f, 1.0f, kN, s2);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(x.peek(0), 5.0f);
  EXPECT_EQ(y.peek(0), 1.0f) << "s2 read x after s1 wrote it: the emulation "
                                "does not expose the missing wait";
}

TEST(SimtStreams, LegacyDefaultStreamOrdering) {
  DeviceArray<float> x(kN), y(kN);
  Stream blocking, nonBlocking(cudaStreamNonBlocking);
  struct Case {
    const char *what;
    cudaStream_t writer, reader;
    float expected;
  } cases[] = {
      // The legacy stream waits for blocking streams, and they for it.
      {"blocking then legacy", blocking, nullptr, 7.0f},
      {"legacy then blocking", nullptr, blocking, 7.0f},
      {"cudaStreamLegacy then blocking", cudaStreamLegacy, blocking, 7.0f},
      // A non-blocking stream orders nothing with it: the reader, enqueued
      // last, runs first.
      {"non-blocking then legacy", nonBlocking, nullptr, 1.0f},
      {"legacy then non-blocking", nullptr, nonBlocking, 1.0f},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    x.zero(), y.zero();
    launchFill(x.get(), 3.0f, kN, c.writer);
    launchAxpb(y.get(), x.get(), 2.0f, 1.0f, kN, c.reader);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(x.peek(0), 3.0f);
    EXPECT_EQ(y.peek(0), c.expected);
  }
}

TEST(SimtStreams, PageableAsyncCopiesAreStaged) {
  DeviceArray<float> x(kN);
  Stream s;
  // From pageable memory: staged when the call returns.
  std::vector<float> pageable(kN, 1.0f);
  ASSERT_EQ(cudaMemcpyAsync(x.get(), pageable.data(), x.bytes(),
                            cudaMemcpyHostToDevice, s),
            cudaSuccess);
  std::fill(pageable.begin(), pageable.end(), 9.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(x.peek(0), 1.0f);
  // From pinned memory: read when the copy runs, as the GPU's DMA does.
  float *pinned = nullptr;
  ASSERT_EQ(cudaMallocHost((void **)&pinned, x.bytes()), cudaSuccess);
  std::fill(pinned, pinned + kN, 2.0f);
  ASSERT_EQ(
      cudaMemcpyAsync(x.get(), pinned, x.bytes(), cudaMemcpyHostToDevice, s),
      cudaSuccess);
  std::fill(pinned, pinned + kN, 8.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(x.peek(0), 8.0f);
  // Into pageable memory: the call returns when the copy is done.
  launchFill(x.get(), 4.0f, kN, s);
  ASSERT_EQ(cudaMemcpyAsync(pageable.data(), x.get(), x.bytes(),
                            cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  EXPECT_EQ(pageable[kN - 1], 4.0f);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// Work that waits for something outside the stream (NCCL's receive waits for
// a peer) keeps its stream busy while the others run.
TEST(SimtStreams, AsyncWorkKeepsItsStreamBusyWhileOthersRun) {
  DeviceArray<float> x(kN);
  x.zero();
  Stream s, t;
  Event after(cudaEventDisableTiming);
  bool released = false;
  int polls = 0;
  // The work on s completes once t's work has run, which is enqueued first
  // and so runs after s's work has started.
  enqueue(t, "release", [&] { released = true; });
  enqueueAsync(s, "wait for the release", [&]() -> Poll {
    return [&] {
      ++polls;
      return released;
    };
  });
  ASSERT_EQ(cudaEventRecord(after, s), cudaSuccess);
  launchFill(x.get(), 3.0f, kN, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(released);
  EXPECT_EQ(polls, 2) << "polled when it started, and once t's work ran";
  EXPECT_EQ(x.peek(0), 3.0f);
  EXPECT_EQ(cudaEventQuery(after), cudaSuccess);
}

TEST(SimtStreams, AsyncWorkInFlightHoldsBackWhatComesAfterIt) {
  DeviceArray<float> x(kN), y(kN);
  x.zero(), y.zero();
  Stream s, t;
  Event after(cudaEventDisableTiming);
  // Shared with the poll, which outlives the test if an assertion fails.
  auto released = std::make_shared<bool>(false);
  launchFill(y.get(), 2.0f, kN, t);
  enqueueAsync(s, "wait for the release", [released]() -> Poll {
    return [released] { return *released; };
  });
  ASSERT_EQ(cudaEventRecord(after, s), cudaSuccess);
  launchFill(x.get(), 3.0f, kN, s);
  // Synchronizing t starts s's work (the latest enqueued) too; t does not
  // wait for it to complete.
  ASSERT_EQ(cudaStreamSynchronize(t), cudaSuccess);
  EXPECT_EQ(y.peek(0), 2.0f);
  EXPECT_EQ(x.peek(0), 0.0f) << "work ran after an item still in flight";
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaEventQuery(after), cudaErrorNotReady);
  // Queries poll nothing: the work completes when the host synchronizes.
  *released = true;
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(after), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(x.peek(0), 3.0f);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
}

TEST(SimtGraphs, CapturedAsyncWorkCompletesInItsNode) {
  DeviceArray<float> x(kN);
  x.zero();
  Stream s;
  int polls = 0;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  enqueueAsync(s, "complete at the third poll",
               [&]() -> Poll { return [&] { return ++polls % 3 == 0; }; });
  launchFill(x.get(), 4.0f, kN, s);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(x.peek(0), 4.0f);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST(SimtMemory, CopyOutOfAnAllocationIsInvalidValue) {
  DeviceArray<float> x(16);
  std::vector<float> host(32);
  EXPECT_EQ(cudaMemcpy(host.data(), x.get(), 17 * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(x.get() + 8, host.data(), 9 * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(x.get() + 8, host.data(), 8 * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(host.data(), host.data() + 16, 4, cudaMemcpyDeviceToHost),
      cudaErrorInvalidValue)
      << "a device-to-host copy from host memory";
  EXPECT_EQ(cudaMemset(x.get(), 0, 17 * sizeof(float)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

/// Fork/join over two streams: x from the input on s1; s2 (after x) makes
/// y from x while s1 makes z from x; s1 (after y) mixes y and z into w.
struct ForkJoin {
  DeviceArray<float> in{kN}, x{kN}, y{kN}, z{kN}, w{kN};
  Stream s1, s2;
  Event fork{cudaEventDisableTiming}, join{cudaEventDisableTiming};

  void enqueue() {
    launchAxpb(x.get(), in.get(), 1.5f, 0.25f, kN, s1);
    ASSERT_EQ(cudaEventRecord(fork, s1), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(s2, fork, 0), cudaSuccess);
    launchMix(y.get(), x.get(), x.get(), kN, s2);
    launchAxpb(z.get(), x.get(), -0.5f, 2.0f, kN, s1);
    ASSERT_EQ(cudaEventRecord(join, s2), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(s1, join, 0), cudaSuccess);
    launchMix(w.get(), y.get(), z.get(), kN, s1);
  }
  void poison() {
    for (auto *a : {&x, &y, &z, &w})
      ASSERT_EQ(cudaMemset(a->get(), 0xff, a->bytes()), cudaSuccess);
  }
  std::vector<uint32_t> wBits() {
    std::vector<uint32_t> bits;
    for (float f : w.download())
      bits.push_back(bitsOf(f));
    return bits;
  }
};

std::vector<float> inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(kN);
  for (float &f : v)
    f = dist(rng);
  return v;
}

TEST(SimtGraphs, ForkJoinCaptureReplaysAsEager) {
  ForkJoin f;
  std::vector<uint32_t> eager[2];
  for (int i = 0; i < 2; ++i) {
    f.in.upload(inputs(i + 1));
    f.poison();
    f.enqueue();
    ASSERT_EQ(cudaStreamSynchronize(f.s1), cudaSuccess);
    eager[i] = f.wBits();
    ASSERT_NE(eager[i][0], 0xffffffffu);
  }

  f.poison();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(f.s1, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  f.enqueue();
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(f.s2, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive) << "s2 joined the capture";
  ASSERT_EQ(cudaStreamEndCapture(f.s1, &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  ASSERT_EQ(cudaStreamIsCapturing(f.s2, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bitsOf(f.w.peek(0)), 0xffffffffu)
      << "captured work ran before the graph was launched";

  // The graph reads its buffers when it runs: each input gives eager's bits.
  for (int i = 1; i >= 0; --i) {
    f.in.upload(inputs(i + 1));
    f.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, f.s1), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(f.s1), cudaSuccess);
    EXPECT_EQ(f.wBits(), eager[i]) << "replay of input " << i;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST(SimtGraphs, SynchronizingDuringCaptureInvalidatesIt) {
  DeviceArray<float> x(kN);
  std::vector<float> host(kN);
  Stream s;
  enum { StreamSync, DeviceSync, SyncCopy };
  for (int how : {StreamSync, DeviceSync, SyncCopy}) {
    SCOPED_TRACE(how);
    x.zero();
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
              cudaSuccess);
    launchFill(x.get(), 1.0f, kN, s);
    cudaError_t e = how == StreamSync ? cudaStreamSynchronize(s)
                    : how == DeviceSync
                        ? cudaDeviceSynchronize()
                        : cudaMemcpy(host.data(), x.get(), x.bytes(),
                                     cudaMemcpyDeviceToHost);
    EXPECT_EQ(e, cudaErrorStreamCaptureUnsupported);
    cudaStreamCaptureStatus status;
    ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
    EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
    cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(&host);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph),
              cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    // The captured fill never runs, and the stream works again.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(x.peek(0), 0.0f);
    launchFill(x.get(), 2.0f, kN, s);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(x.peek(0), 2.0f);
  }
}

TEST(SimtGraphs, UnjoinedForkIsRefused) {
  DeviceArray<float> x(kN), y(kN);
  Stream s1, s2;
  Event fork(cudaEventDisableTiming);
  ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  launchFill(x.get(), 1.0f, kN, s1);
  ASSERT_EQ(cudaEventRecord(fork, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2, fork, 0), cudaSuccess);
  launchFill(y.get(), 2.0f, kN, s2); // never joined back into s1
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s1, &graph), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(graph, nullptr);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(s2, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnjoined);
}

//===----------------------------------------------------------------------===//
// Events
//===----------------------------------------------------------------------===//

TEST(SimtEvents, ElapsedTimeRules) {
  DeviceArray<float> x(kN);
  Stream s;
  Event start, end, never, untimed(cudaEventDisableTiming);
  float ms = -1;
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  launchFill(x.get(), 1.0f, kN, s);
  ASSERT_EQ(cudaEventRecord(end, s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, end), cudaErrorNotReady)
      << "before the events completed";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  float back = 1;
  ASSERT_EQ(cudaEventElapsedTime(&back, end, start), cudaSuccess);
  EXPECT_EQ(back, -ms);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, never),
            cudaErrorInvalidResourceHandle)
      << "an event never recorded";
  ASSERT_EQ(cudaEventRecord(untimed, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed),
            cudaErrorInvalidResourceHandle)
      << "an event created with cudaEventDisableTiming";
  EXPECT_EQ(cudaEventElapsedTime(nullptr, start, end), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

} // namespace
} // namespace tgc::simt::test

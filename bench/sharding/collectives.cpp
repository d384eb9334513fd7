//===- collectives.cpp - Time the runtime's collectives and kernels -*- C++
//-*-===//
//
// The measurements behind planning/cost/clusters/cpu-local.json. Built and
// run by bench/sharding/calibrate.sh; not part of the main build.
//
// Default mode: the collectives generated CPU programs call (runtime/comm's
// allReduce, allGather and reduceScatter over mesh axis 0 of a one-axis mesh
// of every process, set up as the training loop sets it up:
// initFromEnvironment, then setMesh), for whole-tensor sizes from 1 KiB to
// 64 MiB. Each size is run once to warm up, then timed `--reps` times or
// more (more for small sizes, so each size takes about the same time), with
// a barrier before each run; a run's time is the slowest rank's, and the
// median of the runs is printed by rank 0 as a CSV line
//   kind,procs,bytes,seconds_median
// where bytes is the whole, unsharded tensor (what the cost model's formulas
// take): an all-gather's output, a reduce-scatter's input.
//
// --compute: what one process computes while every process of the run does
// the same (the setting of `mpirun -np 4 exe --threads 1`): OpenMP threads
// per process from --threads (default 1, as the multi-process tests run),
// sgemm through the runtime's tgc::cpu::gemm on a few shapes, and a STREAM
// triad (a[i] = b[i] + s * c[i], 3 x 4 bytes per element counted), each
// timed over blocks of back-to-back calls so the processes overlap. Without
// mpirun it measures one process alone (procs 1). Lines:
//   sgemm,procs,MxNxK,flops_per_second_median
//   triad,procs,bytes,bytes_per_second_median
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Comm.h"
#include "runtime/core/Error.h"
#include "runtime/cpu/BlasThreads.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <omp.h>
#include <string>
#include <vector>

using namespace tgc;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The slowest rank's time: a collective is done when the last rank is.
double slowest(Communicator *comm, double seconds) {
  int p = comm::worldSize(comm);
  std::vector<float> all(p);
  float mine = static_cast<float>(seconds);
  comm::allGather(comm, -1, &mine, all.data(), 1, DType::F32, nullptr);
  return *std::max_element(all.begin(), all.end());
}

/// Median over `reps` timed runs (after one warm-up) of the slowest rank's
/// time for `body`, a barrier before each run. Every rank returns it.
double timeMedian(Communicator *comm, int reps,
                  const std::function<void()> &body) {
  comm::barrier(comm);
  body();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    comm::barrier(comm);
    double t0 = now();
    body();
    times.push_back(slowest(comm, now() - t0));
  }
  return median(times);
}

/// More runs for small messages, whose times are short and noisy: about
/// 64 MiB moved per size, at least `minReps` runs, at most 200.
int repsFor(int64_t bytes, int minReps) {
  int64_t want = (int64_t(64) << 20) / bytes;
  return static_cast<int>(std::clamp<int64_t>(want, minReps, 200));
}

void collectives(Communicator *comm, int minReps, int64_t maxBytes) {
  int p = comm::worldSize(comm), rank = comm::rank(comm);
  // One mesh axis of every process, as a run with --mesh=data=P has.
  comm::setMesh(comm, {p});
  for (int64_t bytes = 1024; bytes <= maxBytes; bytes *= 4) {
    int64_t count = bytes / 4; // floats in the whole tensor
    int64_t piece = count / p; // floats per process
    std::vector<float> whole(count, 1.0f + rank), part(piece, 1.0f);
    int reps = repsFor(bytes, minReps);
    struct Kind {
      const char *name;
      std::function<void()> run;
    } kinds[] = {
        {"all_reduce",
         [&] {
           comm::allReduce(comm, 0, whole.data(), count, DType::F32,
                           comm::ReduceOp::Sum, nullptr);
         }},
        {"all_gather",
         [&] {
           comm::allGather(comm, 0, part.data(), whole.data(), piece,
                           DType::F32, nullptr);
         }},
        {"reduce_scatter",
         [&] {
           comm::reduceScatter(comm, 0, whole.data(), part.data(), piece,
                               DType::F32, comm::ReduceOp::Sum, nullptr);
         }},
    };
    for (Kind &kind : kinds) {
      // all_reduce sums in place: keep the values from growing without
      // bound (their size does not change the time, but infinities might).
      std::fill(whole.begin(), whole.end(), 1.0f + rank);
      double t = timeMedian(comm, reps, kind.run);
      if (rank == 0)
        std::printf("%s,%d,%lld,%.9g\n", kind.name, p, (long long)bytes, t);
      std::fflush(stdout);
    }
  }
}

/// Median over `reps` blocks (after one warm-up block) of the slowest
/// rank's time for `iterations` calls of `body` back to back: a block lasts
/// long enough (a few tenths of a second) that the processes really run side
/// by side and share the cores, as the steps of a multi-process run do; a
/// single call would often run while the others wait at the barrier.
double timeSustained(Communicator *comm, int reps, int64_t iterations,
                     const std::function<void()> &body) {
  return timeMedian(comm, reps, [&] {
    for (int64_t i = 0; i < iterations; ++i)
      body();
  }) / static_cast<double>(iterations);
}

/// Calls of `work` (FLOPs or bytes) that make a block of about `seconds` at
/// `rate`, a guess of this machine's per-process speed; at least one.
int64_t iterationsFor(double work, double rate, double seconds) {
  return std::max<int64_t>(1, static_cast<int64_t>(seconds * rate / work));
}

void compute(Communicator *comm, int minReps, int threads) {
  int p = comm::worldSize(comm), rank = comm::rank(comm);
  omp_set_num_threads(threads);
  // GPT-2 small's shapes (tokens x hidden x ...) and two square ones.
  struct Shape {
    int64_t m, n, k;
  } shapes[] = {{512, 512, 512}, {1024, 3072, 768}, {1024, 768, 3072},
                {1024, 768, 768}, {256, 256, 256}};
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f),
        c(s.m * s.n, 0.0f);
    double flops = 2.0 * s.m * s.n * s.k;
    double t = timeSustained(
        comm, minReps, iterationsFor(flops, 2e10, 0.3), [&] {
          cpu::gemm(CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f,
                    a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
        });
    if (rank == 0)
      std::printf("sgemm,%d,%lldx%lldx%lld,%.6g\n", p, (long long)s.m,
                  (long long)s.n, (long long)s.k, flops / t);
    std::fflush(stdout);
  }
  // Three arrays of 32 MiB each: far beyond every cache of the machine.
  int64_t n = int64_t(8) << 20;
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  const float scale = 3.0f;
  double bytes = 3.0 * 4.0 * n;
  double t = timeSustained(comm, minReps, iterationsFor(bytes, 4e9, 0.3), [&] {
    float *pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      pa[i] = pb[i] + scale * pc[i];
  });
  if (rank == 0)
    std::printf("triad,%d,%lld,%.6g\n", p, (long long)bytes, bytes / t);
  std::fflush(stdout);
}

[[noreturn]] void usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: mpirun -np P %s [--compute] [--reps N] "
               "[--max-bytes B] [--threads T]\n",
               argv0);
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  bool computeMode = false;
  int reps = 7, threads = 1;
  int64_t maxBytes = int64_t(64) << 20;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--compute")
      computeMode = true;
    else if (arg == "--reps" && i + 1 < argc)
      reps = std::max(5, std::atoi(argv[++i]));
    else if (arg == "--max-bytes" && i + 1 < argc)
      maxBytes = std::atoll(argv[++i]);
    else if (arg == "--threads" && i + 1 < argc)
      threads = std::max(1, std::atoi(argv[++i]));
    else
      usage(argv[0]);
  }
  Communicator *comm = nullptr;
  try {
    comm = comm::initFromEnvironment(CommBackend::Mpi, "");
    if (!comm && !computeMode)
      throw Error("run it under mpirun with 2 or more processes");
    if (computeMode)
      compute(comm, reps, threads);
    else
      collectives(comm, reps, maxBytes);
    comm::finalize(comm);
    return 0;
  } catch (const Error &e) {
    if (comm)
      comm::abortAll(comm, e.what());
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 1;
  }
}

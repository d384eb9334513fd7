//===- CommTest.cpp - Scenarios for the MPI backend -------------*- C++ -*-===//
//
// One program, one scenario per first argument; run_comm_test.sh launches it
// (under mpirun or alone, with chosen variables) and checks the exit code,
// the output and the time taken. A failed check ends every rank through
// abortAll, so a failure never turns into a hang.
//
//   collectives   every collective, values from every rank, on any world size
//   mesh          a 2x2 mesh (4 ranks): coordinates, and all-reduce,
//                 all-gather, reduce-scatter and slice over each axis
//   single        no launcher: null communicator, collectives are identities
//   abort         rank 2 (or the last) calls abortAll while the others wait
//   die           rank 1 exits 3 without finalize while the others reduce
//   hang          rank 1 sleeps while the others reduce (TGC_MPI_TIMEOUT)
//   error         a collective throws tgc::Error; the caller aborts the run
//   init          initFromEnvironment(Mpi) and report
//   init-nccl     initFromEnvironment(Nccl) and report
//   timeout       initFromEnvironment(Mpi), to read TGC_MPI_TIMEOUT
//   abort-alone   abortAll with a null communicator
//
// With TGC_TEST_PIDDIR set, each process writes <pid>.pid there, so the
// driver can check that no rank outlives the launcher.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Comm.h"
#include "runtime/core/Error.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tgc;

namespace {

std::string pidDir() {
  const char *dir = std::getenv("TGC_TEST_PIDDIR");
  return dir ? dir : "";
}

void writePidFile() {
  if (pidDir().empty())
    return;
  std::ofstream(pidDir() + "/" + std::to_string(::getpid()) + ".pid")
      << ::getpid() << "\n";
}

Communicator *init(CommBackend backend = CommBackend::Mpi) {
  return comm::initFromEnvironment(backend, "");
}

/// Ends every rank when a check fails.
void expect(Communicator *c, bool ok, const std::string &what) {
  if (!ok)
    comm::abortAll(c, "check failed: " + what);
}

int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

//===----------------------------------------------------------------------===//
// collectives
//===----------------------------------------------------------------------===//

/// Every rank ends with the same bytes as rank 0.
void expectSameEverywhere(Communicator *c, const std::vector<float> &data,
                          const std::string &what) {
  std::vector<float> root = data;
  comm::broadcast(c, root.data(), int64_t(root.size() * sizeof(float)), 0);
  expect(c, std::memcmp(root.data(), data.data(), data.size() * 4) == 0,
         what + ": rank " + std::to_string(comm::rank(c)) +
             " differs from rank 0 in its bits");
}

int collectives() {
  Communicator *c = init();
  const int r = comm::rank(c), n = comm::worldSize(c);
  std::string me = "rank " + std::to_string(r) + ": ";

  // Identity, as the launcher gave it.
  expect(c, c != nullptr, "a communicator for a multi-process launch");
  expect(c, n == envInt("OMPI_COMM_WORLD_SIZE", envInt("PMI_SIZE", n)),
         me + "world size " + std::to_string(n));
  expect(c, r == envInt("OMPI_COMM_WORLD_RANK", envInt("PMI_RANK", r)),
         me + "rank");
  expect(c,
         comm::localRank(c) ==
             envInt("OMPI_COMM_WORLD_LOCAL_RANK", comm::localRank(c)),
         me + "local rank " + std::to_string(comm::localRank(c)));
  expect(c, comm::deviceOrdinal(c) == -1, me + "MPI has no device");
  std::string description = comm::describe(c);
  expect(c,
         description.find("rank " + std::to_string(r) + " of " +
                          std::to_string(n)) == 0 &&
             description.find("over MPI") != std::string::npos,
         me + "describe() gave '" + description + "'");

  // Barrier: every rank's file exists once anyone is past it.
  std::string dir = pidDir();
  if (!dir.empty()) {
    std::ofstream(dir + "/arrived." + std::to_string(r)) << r;
    comm::barrier(c);
    for (int k = 0; k < n; ++k)
      expect(c,
             ::access((dir + "/arrived." + std::to_string(k)).c_str(), F_OK) ==
                 0,
             me + "past the barrier before rank " + std::to_string(k) +
                 " arrived");
    comm::barrier(c);
  }

  // Sums and means of small integers are exact: compare exactly.
  for (int64_t count : {int64_t(1), int64_t(1003), int64_t(1) << 20}) {
    std::vector<float> data(count);
    for (int64_t i = 0; i < count; ++i)
      data[i] = float(r * 1000 + i % 4096);
    comm::allReduceSum(c, data.data(), count);
    for (int64_t i = 0; i < count; ++i) {
      float want = float(1000 * n * (n - 1) / 2 + n * (i % 4096));
      if (data[i] != want)
        expect(c, false,
               me + "allReduceSum of " + std::to_string(count) + ": [" +
                   std::to_string(i) + "] is " + std::to_string(data[i]) +
                   ", want " + std::to_string(want));
    }
    for (int64_t i = 0; i < count; ++i)
      data[i] = float(n * (r + 1)) + float(i % 7);
    comm::allReduceMean(c, data.data(), count);
    for (int64_t i = 0; i < count; ++i) {
      float want = float(n * (n + 1) / 2) + float(i % 7);
      if (data[i] != want)
        expect(c, false,
               me + "allReduceMean of " + std::to_string(count) + ": [" +
                   std::to_string(i) + "] is " + std::to_string(data[i]) +
                   ", want " + std::to_string(want));
    }
  }

  // Rounding: every rank must end with the same bits (optimizers diverge
  // otherwise).
  std::vector<float> noisy(4099);
  for (size_t i = 0; i < noisy.size(); ++i)
    noisy[i] = std::sin(float(i * 7919 + r * 104729)) *
               std::pow(10.0f, float(i % 9) - 4);
  comm::allReduce(c, noisy.data(), int64_t(noisy.size()), DType::F32,
                  comm::ReduceOp::Sum, nullptr);
  expectSameEverywhere(c, noisy, "allReduce of rounded values");
  comm::allReduceMean(c, noisy.data(), int64_t(noisy.size()));
  expectSameEverywhere(c, noisy, "allReduceMean of rounded values");

  // Zero elements: nothing to do, no message.
  comm::allReduceSum(c, noisy.data(), 0);

  double total = comm::allReduceSum(c, double(r) + 0.25);
  expect(c, total == n * (n - 1) / 2.0 + 0.25 * n,
         me + "allReduceSum(double) is " + std::to_string(total));

  // Broadcast from the first and the last rank.
  for (int root : {0, n - 1}) {
    std::vector<unsigned char> bytes(100003);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = r == root ? (unsigned char)(i * 31 + root) : 0;
    comm::broadcast(c, bytes.data(), int64_t(bytes.size()), root);
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] != (unsigned char)(i * 31 + root))
        expect(c, false,
               me + "broadcast from " + std::to_string(root) + ": byte " +
                   std::to_string(i));
  }
  bool threw = false;
  try {
    comm::broadcast(c, &total, sizeof(total), n);
  } catch (const Error &e) {
    threw = std::string(e.what()).find("not one of the") != std::string::npos;
  }
  expect(c, threw, me + "broadcast from a rank that does not exist");

  comm::barrier(c);
  comm::finalize(c);
  if (r == 0)
    std::printf("collectives ok on %d ranks\n", n);
  return 0;
}

//===----------------------------------------------------------------------===//
// mesh
//===----------------------------------------------------------------------===//

int meshScenario() {
  Communicator *c = init();
  const int r = comm::rank(c);
  std::string me = "rank " + std::to_string(r) + ": ";
  bool threw = false;
  try {
    comm::setMesh(c, {3, 2});
  } catch (const Error &e) {
    threw = std::string(e.what()).find("has 6 processes but the run has 4") !=
            std::string::npos;
  }
  expect(c, threw, me + "a mesh of the wrong size is an error");
  comm::setMesh(c, {2, 2});
  expect(c, comm::meshAxes(c) == 2, me + "two axes");
  // Row-major: rank = 2 * row + column.
  const int row = comm::meshCoordinate(c, 0), col = comm::meshCoordinate(c, 1);
  expect(c, row == r / 2 && col == r % 2,
         me + "coordinates (" + std::to_string(row) + ", " +
             std::to_string(col) + ")");
  expect(c, comm::meshAxisSize(c, 0) == 2 && comm::meshAxisSize(c, -1) == 4,
         me + "axis sizes");

  for (int axis : {0, 1}) {
    const int at = axis == 0 ? row : col;
    // The group along `axis`: the ranks that share the other coordinate.
    auto peer = [&](int coordinate) {
      return axis == 0 ? coordinate * 2 + col : row * 2 + coordinate;
    };
    std::string on = me + "axis " + std::to_string(axis) + ": ";

    float value = float(r + 1);
    comm::allReduce(c, axis, &value, 1, DType::F32, comm::ReduceOp::Sum,
                    nullptr);
    expect(c, value == float(peer(0) + 1 + peer(1) + 1),
           on + "allReduce gives " + std::to_string(value));
    value = float(r + 1);
    comm::allReduce(c, axis, &value, 1, DType::F32, comm::ReduceOp::Mean,
                    nullptr);
    expect(c, value == float(peer(0) + 1 + peer(1) + 1) / 2,
           on + "allReduce mean gives " + std::to_string(value));

    // A 2x3 piece, gathered along dim 0 (one run) and along dim 1 (two
    // runs of 3: the whole is 2x6).
    std::vector<float> piece(6), whole(12);
    for (int i = 0; i < 6; ++i)
      piece[i] = float(r * 100 + i);
    comm::allGather(c, axis, piece.data(), whole.data(), 6, DType::F32,
                    nullptr);
    for (int i = 0; i < 12; ++i)
      expect(c, whole[i] == float(peer(i / 6) * 100 + i % 6),
             on + "allGather [" + std::to_string(i) + "]");
    comm::allGather(c, axis, piece.data(), whole.data(), 6, DType::F32, nullptr,
                    /*blocks=*/2);
    for (int i = 0; i < 12; ++i) {
      int rowOf = i / 6, column = i % 6;
      expect(c,
             whole[i] == float(peer(column / 3) * 100 + rowOf * 3 + column % 3),
             on + "allGather along dim 1 [" + std::to_string(i) + "]");
    }
    // slice is its inverse.
    std::vector<float> back(6);
    comm::slice(c, axis, whole.data(), back.data(), 6, DType::F32, 2);
    expect(c, back == piece, on + "slice undoes the gather along dim 1");

    // Reduce-scatter of a 2x4 (sum over the group; piece `at`).
    std::vector<float> full(8), mine(4);
    for (int i = 0; i < 8; ++i)
      full[i] = float(r * 10 + i);
    comm::reduceScatter(c, axis, full.data(), mine.data(), 4, DType::F32,
                        comm::ReduceOp::Sum, nullptr);
    for (int i = 0; i < 4; ++i)
      expect(c, mine[i] == float((peer(0) + peer(1)) * 10 + 2 * (at * 4 + i)),
             on + "reduceScatter [" + std::to_string(i) + "]");
    // Along dim 1: columns [2 * at, 2 * at + 2) of each row, as a mean.
    comm::reduceScatter(c, axis, full.data(), mine.data(), 4, DType::F32,
                        comm::ReduceOp::Mean, nullptr, /*blocks=*/2);
    for (int i = 0; i < 4; ++i) {
      int rowOf = i / 2, column = at * 2 + i % 2;
      expect(c,
             mine[i] ==
                 float((peer(0) + peer(1)) * 10 + 2 * (rowOf * 4 + column)) / 2,
             on + "reduceScatter mean along dim 1 [" + std::to_string(i) + "]");
    }
  }
  comm::barrier(c);
  comm::finalize(c);
  if (r == 0)
    std::printf("mesh collectives ok on 2x2\n");
  return 0;
}

//===----------------------------------------------------------------------===//
// p2p: a pipeline's transfers
//===----------------------------------------------------------------------===//

/// Two stages on a mesh axis of 2 trade 4 MB messages both ways at once
/// (above any eager limit: they move by rendezvous), the receives posted
/// before the sends, several tags in flight; a send to oneself is refused.
int p2pScenario() {
  Communicator *c = init();
  comm::setMesh(c, {2});
  const int me = comm::meshCoordinate(c, 0), peer = 1 - me;
  const int64_t n = 1 << 20;
  std::vector<std::vector<float>> out(3, std::vector<float>(n)),
      in(3, std::vector<float>(n, -1.0f));
  std::vector<int> handles;
  for (int t = 0; t < 3; ++t) {
    for (int64_t i = 0; i < n; ++i)
      out[t][i] = float(me * 1000 + t * 10) + float(i % 7);
    handles.push_back(
        comm::postRecv(c, 0, peer, in[t].data(), n * 4, /*tag=*/t));
  }
  // Sent in the other order: tags, not order, pair them.
  for (int t = 2; t >= 0; --t)
    comm::send(c, 0, peer, out[t].data(), n * 4, t);
  for (int t = 0; t < 3; ++t) {
    comm::waitRecv(c, handles[t]);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; ++i)
      ok = in[t][i] == float(peer * 1000 + t * 10) + float(i % 7);
    expect(c, ok,
           "message " + std::to_string(t) + " from coordinate " +
               std::to_string(peer));
  }
  comm::waitSends(c);
  bool threw = false;
  try {
    comm::send(c, 0, me, out[0].data(), 4, 0);
  } catch (const Error &e) {
    threw = std::string(e.what()).find("this process at") != std::string::npos;
  }
  expect(c, threw, "a send to oneself is an error");
  comm::finalize(c);
  if (me == 0)
    std::printf("p2p ok on 2 stages\n");
  return 0;
}

//===----------------------------------------------------------------------===//
// single
//===----------------------------------------------------------------------===//

int single() {
  Communicator *c = init();
  expect(c, c == nullptr, "no communicator for one process");
  expect(c,
         comm::rank(c) == 0 && comm::worldSize(c) == 1 &&
             comm::localRank(c) == 0 && comm::deviceOrdinal(c) == -1,
         "rank 0 of 1");
  float data[3] = {1.5f, -2, 3};
  comm::allReduceSum(c, data, 3);
  comm::allReduceMean(c, data, 3);
  comm::allReduce(c, data, 3, DType::BF16, comm::ReduceOp::Mean, nullptr);
  expect(c, data[0] == 1.5f && data[1] == -2 && data[2] == 3,
         "the identity on one process");
  expect(c, comm::allReduceSum(c, 2.5) == 2.5, "the double identity");
  comm::setMesh(c, {1, 1});
  float whole[3];
  comm::allGather(c, 0, data, whole, 3, DType::F32, nullptr);
  comm::reduceScatter(c, 1, whole, whole, 3, DType::F32, comm::ReduceOp::Mean,
                      nullptr);
  expect(c,
         whole[0] == 1.5f && whole[2] == 3 && comm::meshCoordinate(c, 0) == 0 &&
             comm::meshAxisSize(c, 1) == 1,
         "mesh collectives are copies on one process");
  comm::broadcast(c, data, sizeof(data), 0);
  comm::barrier(c);
  std::string description = comm::describe(c);
  comm::finalize(c);
  std::printf("single ok: %s\n", description.c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

/// The others keep reducing; they must be ended from outside.
[[noreturn]] void reduceForever(Communicator *c) {
  for (;;) {
    float x = 1;
    comm::allReduceSum(c, &x, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int abortScenario() {
  Communicator *c = init();
  comm::barrier(c);
  int culprit = std::min(2, comm::worldSize(c) - 1);
  if (comm::rank(c) == culprit)
    comm::abortAll(c, "test abort from rank " + std::to_string(culprit));
  reduceForever(c);
}

int dieScenario() {
  Communicator *c = init();
  comm::barrier(c);
  if (comm::rank(c) == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(3);
  }
  reduceForever(c);
}

int hangScenario() {
  Communicator *c = init();
  comm::barrier(c);
  if (comm::rank(c) == 1)
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(100));
  reduceForever(c);
}

int errorScenario() {
  Communicator *c = init();
  try {
    std::vector<uint16_t> halves(8);
    // Rank 0 alone makes the bad call; the others wait for it in a barrier.
    if (comm::rank(c) == 0)
      comm::allReduce(c, halves.data(), 8, DType::BF16, comm::ReduceOp::Sum,
                      nullptr);
    comm::barrier(c);
  } catch (const Error &e) {
    comm::abortAll(c, e.what());
  }
  comm::finalize(c);
  return 0;
}

int initScenario(CommBackend backend) {
  try {
    Communicator *c = init(backend);
    std::printf("init ok: %s\n", comm::describe(c).c_str());
    comm::finalize(c);
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

} // namespace

int main(int argc, char **argv) {
  writePidFile();
  std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "collectives")
    return collectives();
  if (scenario == "mesh")
    return meshScenario();
  if (scenario == "p2p")
    return p2pScenario();
  if (scenario == "single")
    return single();
  if (scenario == "abort")
    return abortScenario();
  if (scenario == "die")
    return dieScenario();
  if (scenario == "hang")
    return hangScenario();
  if (scenario == "error")
    return errorScenario();
  if (scenario == "init" || scenario == "timeout")
    return initScenario(CommBackend::Mpi);
  if (scenario == "init-nccl")
    return initScenario(CommBackend::Nccl);
  if (scenario == "abort-alone")
    comm::abortAll(nullptr, "alone");
  std::fprintf(stderr,
               "usage: %s collectives|mesh|p2p|single|abort|die|hang|error|"
               "init|init-nccl|timeout|abort-alone\n",
               argv[0]);
  return 2;
}

//===- Comm.cpp - Collectives between the processes of one run --*- C++ -*-===//
//
// Chooses the backend from the launch and the executable's kind, checks
// arguments, makes every collective the identity for a one-process run, and
// ends the run on abortAll. The backends are MpiComm.cpp and, in
// tgc_comm_nccl, NcclComm.cpp (see Backend.h for how it is found).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Comm.h"

#include "runtime/comm/Backend.h"
#include "runtime/comm/Launch.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace tgc {
namespace comm {

/// The rank abortAll names when it has no communicator (-1: not known yet).
static std::atomic<int> launchedRank{-1};

Communicator *initFromEnvironment(CommBackend backend,
                                  const std::string &rendezvous, int device) {
  LaunchInfo launch = detectLaunch();
  launchedRank = launch.rank;
  // A malformed timeout is reported on one process too, where it is tried.
  timeoutFromEnvironment(
      backend == CommBackend::Nccl ? "TGC_NCCL_TIMEOUT" : "TGC_MPI_TIMEOUT", 0);
  if (launch.worldSize == 1)
    return nullptr;
  std::string asks = launch.sizeVar + "=" + std::to_string(launch.worldSize) +
                     " asks for " + std::to_string(launch.worldSize) +
                     " processes";

  if (backend == CommBackend::Nccl) {
    if (!tgc_comm_create_nccl)
      throw Error(asks + ", but this executable was linked without the NCCL "
                         "backend (-Wl,-u,tgc_comm_create_nccl "
                         "-ltgc_comm_nccl)");
    detail::NcclRequest request{launch, rendezvous, device};
    return tgc_comm_create_nccl(&request);
  }

  if (!launch.mpiLaunch()) {
    if (!detail::mpiCompiled())
      throw Error(launch.rankVar + "/" + launch.sizeVar + " are set (" + asks +
                  "), but this CPU executable was built without MPI, "
                  "and CPU executables reduce over MPI");
    throw Error(launch.rankVar + "/" + launch.sizeVar + " are set (" + asks +
                "), but CPU executables reduce over MPI and need mpirun (or "
                "srun) for more than one process: run `mpirun -np " +
                std::to_string(launch.worldSize) +
                " <executable> ...` instead");
  }
  return detail::createMpiCommunicator(launch);
}

int rank(const Communicator *comm) { return comm ? comm->launch.rank : 0; }

int worldSize(const Communicator *comm) {
  return comm ? comm->launch.worldSize : 1;
}

int localRank(const Communicator *comm) {
  return comm ? comm->launch.localRank : 0;
}

int deviceOrdinal(const Communicator *comm) {
  return comm && comm->backend == CommBackend::Nccl ? comm->device : -1;
}

std::string describe(const Communicator *comm) {
  if (!comm)
    return "1 process";
  std::string text = "rank " + std::to_string(comm->launch.rank) + " of " +
                     std::to_string(comm->launch.worldSize) + " (local " +
                     std::to_string(comm->launch.localRank) + ") over ";
  text += comm->backend == CommBackend::Nccl
              ? "NCCL on CUDA device " + std::to_string(comm->device)
              : std::string("MPI");
  return text + ", launched by " + launcherName(comm->launch.launcher);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static bool skip(Communicator *comm, int64_t count, const char *what) {
  if (count < 0)
    throw Error(std::string(what) + " of a negative count (" +
                std::to_string(count) + ")");
  return !comm || count == 0;
}

void allReduceSum(Communicator *comm, float *data, int64_t count) {
  if (!skip(comm, count, "all-reduce"))
    comm->allReduceFloats(data, count, ReduceOp::Sum);
}

void allReduceMean(Communicator *comm, float *data, int64_t count) {
  if (!skip(comm, count, "all-reduce"))
    comm->allReduceFloats(data, count, ReduceOp::Mean);
}

double allReduceSum(Communicator *comm, double value) {
  return comm ? comm->allReduceSum(value) : value;
}

void allReduce(Communicator *comm, void *data, int64_t count, DType dtype,
               ReduceOp op, void *stream) {
  if (!skip(comm, count, "all-reduce"))
    comm->allReduce(data, count, dtype, op, stream);
}

//===----------------------------------------------------------------------===//
// The mesh
//===----------------------------------------------------------------------===//

static std::string meshText(const std::vector<int64_t> &sizes) {
  std::string text;
  for (int64_t size : sizes)
    text += (text.empty() ? "" : "x") + std::to_string(size);
  return text.empty() ? "[]" : text;
}

void setMesh(Communicator *comm, const std::vector<int64_t> &sizes) {
  int64_t processes = 1;
  for (int64_t size : sizes) {
    if (size <= 0)
      throw Error("mesh " + meshText(sizes) + " has an axis of size " +
                  std::to_string(size));
    processes *= size;
  }
  if (processes != worldSize(comm))
    throw Error("mesh " + meshText(sizes) + " has " +
                std::to_string(processes) + " processes but the run has " +
                std::to_string(worldSize(comm)));
  if (!comm)
    return;
  comm->meshSizes = sizes;
  comm->meshCoords.assign(sizes.size(), 0);
  // Row-major: the last axis varies fastest.
  int64_t rest = comm->launch.rank;
  for (size_t a = sizes.size(); a-- > 0;) {
    comm->meshCoords[a] = static_cast<int>(rest % sizes[a]);
    rest /= sizes[a];
  }
  comm->splitMesh();
}

int meshAxes(const Communicator *comm) {
  return comm ? static_cast<int>(comm->meshSizes.size()) : 0;
}

static void checkAxis(const Communicator *comm, int axis) {
  // One process (null) is any mesh of size-1 axes.
  if (axis < -1 || (comm && axis >= meshAxes(comm)))
    throw Error("mesh axis " + std::to_string(axis) + " does not exist (" +
                std::to_string(meshAxes(comm)) +
                " axes; was setMesh called with the step's mesh?)");
}

int meshCoordinate(const Communicator *comm, int axis) {
  checkAxis(comm, axis);
  if (!comm)
    return 0;
  return axis < 0 ? comm->launch.rank : comm->meshCoords[axis];
}

int meshAxisSize(const Communicator *comm, int axis) {
  checkAxis(comm, axis);
  if (!comm)
    return 1;
  return axis < 0 ? comm->launch.worldSize
                  : static_cast<int>(comm->meshSizes[axis]);
}

void allReduce(Communicator *comm, int axis, void *data, int64_t count,
               DType dtype, ReduceOp op, void *stream) {
  checkAxis(comm, axis);
  if (!skip(comm, count, "all-reduce"))
    comm->allReduceAxis(axis, data, count, dtype, op, stream);
}

static void checkBlocks(int64_t count, int64_t blocks, const char *what) {
  if (blocks <= 0 || count % blocks != 0)
    throw Error(std::string(what) + " of " + std::to_string(count) +
                " elements in " + std::to_string(blocks) +
                " runs: the runs must divide the piece");
}

void allGather(Communicator *comm, int axis, const void *in, void *out,
               int64_t count, DType dtype, void *stream, int64_t blocks) {
  checkAxis(comm, axis);
  checkBlocks(count, blocks, "all-gather");
  if (count < 0)
    throw Error("all-gather of a negative count");
  if (count == 0)
    return;
  if (!comm) {
    if (in != out)
      std::memmove(out, in, count * dtypeSize(dtype));
    return;
  }
  comm->allGather(axis, in, out, count, dtype, stream, blocks);
}

void reduceScatter(Communicator *comm, int axis, const void *in, void *out,
                   int64_t count, DType dtype, ReduceOp op, void *stream,
                   int64_t blocks) {
  checkAxis(comm, axis);
  checkBlocks(count, blocks, "reduce-scatter");
  if (count < 0)
    throw Error("reduce-scatter of a negative count");
  if (count == 0)
    return;
  if (!comm) {
    if (in != out)
      std::memmove(out, in, count * dtypeSize(dtype));
    return;
  }
  comm->reduceScatter(axis, in, out, count, dtype, op, stream, blocks);
}

void slice(const Communicator *comm, int axis, const void *in, void *out,
           int64_t count, DType dtype, int64_t blocks) {
  checkBlocks(count, blocks, "slice");
  int64_t size = meshAxisSize(comm, axis), at = meshCoordinate(comm, axis);
  int64_t run = count / blocks * dtypeSize(dtype);
  const char *src = static_cast<const char *>(in);
  char *dst = static_cast<char *>(out);
  // Run b of piece `at` is run b * size + at of the whole.
  for (int64_t b = 0; b < blocks; ++b)
    std::memcpy(dst + b * run, src + (b * size + at) * run, run);
}

void broadcast(Communicator *comm, void *data, int64_t bytes, int root) {
  if (skip(comm, bytes, "broadcast"))
    return;
  if (root < 0 || root >= comm->launch.worldSize)
    throw Error("broadcast from rank " + std::to_string(root) +
                ", which is not one of the " +
                std::to_string(comm->launch.worldSize) + " ranks");
  comm->broadcast(data, bytes, root);
}

/// Checks a point-to-point call's peer, size and tag.
static void checkPeer(Communicator *comm, int axis, int peer, int64_t bytes,
                      int tag, const char *what) {
  if (!comm)
    throw Error(std::string(what) + " needs a communicator: the run has one "
                                    "process");
  if (axis < 0 || axis >= static_cast<int>(comm->meshSizes.size()))
    throw Error(std::string(what) + " along mesh axis " + std::to_string(axis) +
                ", which the mesh does not have");
  if (peer < 0 || peer >= comm->meshSizes[axis] ||
      peer == comm->meshCoords[axis])
    throw Error(std::string(what) + " to coordinate " + std::to_string(peer) +
                " of mesh axis " + std::to_string(axis) + " (size " +
                std::to_string(comm->meshSizes[axis]) + ", this process at " +
                std::to_string(comm->meshCoords[axis]) + ")");
  if (bytes <= 0 || tag < 0)
    throw Error(std::string(what) + " of " + std::to_string(bytes) +
                " bytes with tag " + std::to_string(tag));
}

void openPointToPoint(Communicator *comm, int axis) {
  if (comm)
    comm->openPointToPoint(axis);
}

void send(Communicator *comm, int axis, int peer, const void *data,
          int64_t bytes, int tag) {
  checkPeer(comm, axis, peer, bytes, tag, "send");
  comm->send(axis, peer, data, bytes, tag);
}

void recv(Communicator *comm, int axis, int peer, void *data, int64_t bytes,
          int tag) {
  checkPeer(comm, axis, peer, bytes, tag, "receive");
  comm->waitRecv(comm->postRecv(axis, peer, data, bytes, tag));
}

int postRecv(Communicator *comm, int axis, int peer, void *data, int64_t bytes,
             int tag) {
  checkPeer(comm, axis, peer, bytes, tag, "receive");
  return comm->postRecv(axis, peer, data, bytes, tag);
}

void waitRecv(Communicator *comm, int handle) { comm->waitRecv(handle); }

void waitSends(Communicator *comm) {
  if (comm)
    comm->waitSends();
}

void barrier(Communicator *comm) {
  if (comm)
    comm->barrier();
}

//===----------------------------------------------------------------------===//
// Ending the run
//===----------------------------------------------------------------------===//

/// How long the teardown in abortAll may take before the process just exits.
static constexpr int kAbortGraceSeconds = 10;

void abortAll(Communicator *comm, const std::string &why) {
  // One thread takes the process down; any other that gets here (the main
  // thread failing while the watchdog aborts) waits for the exit.
  static std::atomic<bool> aborting{false};
  if (aborting.exchange(true))
    for (;;)
      ::pause();

  int who = comm ? comm->launch.rank : launchedRank.load();
  if (who < 0) {
    try {
      who = detectLaunch().rank;
    } catch (const Error &) {
      who = 0;
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "rank %d: %s\n", who, why.c_str());
  std::fflush(stderr);

  // Whatever the teardown below does (ncclCommAbort waiting on a wedged
  // device, MPI_Abort on a dead launcher), the process ends within the
  // grace period.
  try {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(kAbortGraceSeconds));
      ::_exit(1);
    }).detach();
  } catch (...) {
    ::alarm(kAbortGraceSeconds);
  }
  if (comm)
    comm->abortPeers(why);
  detail::mpiAbort(1);
  // _exit, not exit: static destructors and CUDA's teardown could block on
  // the very thing that failed.
  ::_exit(1);
}

void finalize(Communicator *comm) {
  if (comm) {
    comm->finalize();
    delete comm;
  }
  detail::mpiFinish();
}

} // namespace comm
} // namespace tgc

void tgc::Communicator::send(int, int, const void *, int64_t, int) {
  throw tgc::Error(
      "this communicator has no point-to-point transfers (pipeline "
      "stages need the MPI or the NCCL one)");
}

int tgc::Communicator::postRecv(int, int, void *, int64_t, int) {
  throw tgc::Error(
      "this communicator has no point-to-point transfers (pipeline "
      "stages need the MPI or the NCCL one)");
}

void tgc::Communicator::openPointToPoint(int) {}

void tgc::Communicator::waitRecv(int) {}

void tgc::Communicator::waitSends() {}

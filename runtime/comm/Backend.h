//===- Backend.h - What a collectives backend implements --------*- C++ -*-===//
//
// Internal to runtime/comm: Comm.cpp checks arguments, handles the null
// communicator and dispatches to a Communicator subclass: MpiCommunicator
// (MpiComm.cpp, in tgc_runtime when MPI was found) or NcclCommunicator
// (NcclComm.cpp, in the separate tgc_comm_nccl).
//
// tgc_runtime must build and link without CUDA, so it reaches the NCCL
// backend through a weak reference to tgc_comm_create_nccl: null unless the
// executable links tgc_comm_nccl *and* asks the linker to take that symbol
// (a weak reference alone does not pull an object out of a static archive):
//   -Wl,-u,tgc_comm_create_nccl -ltgc_comm_nccl -ltgc_runtime ...
// (nvcc: -Xlinker -u,tgc_comm_create_nccl). CMake consumers of
// tgc_comm_nccl get the -u through its link options.
//
// NcclComm.cpp must not need MPI's headers either: it bootstraps over MPI
// through the mpi* functions below, which exist in every tgc_runtime (they
// report MPI as unavailable when it was built without).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_COMM_BACKEND_H
#define TGC_RUNTIME_COMM_BACKEND_H

#include "runtime/comm/Comm.h"
#include "runtime/comm/Launch.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// One process's membership in the run's process group.
struct Communicator {
  explicit Communicator(CommBackend backend) : backend(backend) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  CommBackend backend;
  /// rank and worldSize as launched; localRank resolved (never -1).
  comm::LaunchInfo launch;
  int device = -1; ///< the CUDA device (Nccl)
  /// The mesh from setMesh (empty before): axis sizes and this process's
  /// coordinates.
  std::vector<int64_t> meshSizes;
  std::vector<int> meshCoords;

  // Arguments are checked (count > 0, root in range) before these are called.
  /// Complete on return; host memory (Mpi) or device memory (Nccl).
  virtual void allReduceFloats(float *data, int64_t count,
                               comm::ReduceOp op) = 0;
  virtual void allReduce(void *data, int64_t count, DType dtype,
                         comm::ReduceOp op, void *stream) = 0;
  virtual double allReduceSum(double value) = 0;
  /// The mesh: per-axis sub-communicators (meshSizes and meshCoords are
  /// set before the call). Collective over every rank.
  virtual void splitMesh() = 0;
  /// Over mesh axis `axis` (-1: the world); see Comm.h. Arguments checked.
  virtual void allReduceAxis(int axis, void *data, int64_t count, DType dtype,
                             comm::ReduceOp op, void *stream) = 0;
  virtual void allGather(int axis, const void *in, void *out, int64_t count,
                         DType dtype, void *stream, int64_t blocks) = 0;
  virtual void reduceScatter(int axis, const void *in, void *out, int64_t count,
                             DType dtype, comm::ReduceOp op, void *stream,
                             int64_t blocks) = 0;
  virtual void broadcast(void *data, int64_t bytes, int root) = 0;
  /// Makes ready what point-to-point along mesh axis `axis` needs (NCCL: a
  /// communicator and stream per direction and neighbour); collective over
  /// every rank. Nothing for MPI.
  virtual void openPointToPoint(int axis);
  /// Point-to-point along mesh axis `axis` (a pipeline's stages), the peer
  /// by its coordinate on it; arguments checked. A send starts and returns
  /// (its buffer must stay until waitSends); a receive returns with the
  /// bytes in place. Backends without them throw.
  virtual void send(int axis, int peer, const void *data, int64_t bytes,
                    int tag);
  /// Posts a receive and returns its handle for waitRecv.
  virtual int postRecv(int axis, int peer, void *data, int64_t bytes, int tag);
  virtual void waitRecv(int handle);
  /// Waits for every send started; receive handles end once nothing is in
  /// flight.
  virtual void waitSends();
  virtual void barrier() = 0;
  /// The backend's part of abortAll, after the message was printed: make
  /// the other ranks fail fast (NCCL: abort notice, ncclCommAbort). Called
  /// once, from any thread; MPI_Abort and the exit follow in Comm.cpp.
  virtual void abortPeers(const std::string &why) noexcept = 0;
  virtual void finalize() = 0;
};

namespace comm {
namespace detail {

/// Whether this tgc_runtime was built with MPI (TGC_HAVE_MPI).
bool mpiCompiled();
/// MPI_Init (once) for an MPI launch and checks that MPI's world agrees
/// with `launch`; fills in launch.localRank from the node's shared-memory
/// communicator when the launcher did not say. Throws tgc::Error.
void mpiStart(LaunchInfo &launch);
/// Whether mpiStart initialised MPI (and MPI_Finalize has not run).
bool mpiStarted();
/// MPI_Bcast over MPI_COMM_WORLD; throws tgc::Error.
void mpiBroadcast(void *data, int64_t bytes, int root);
/// MPI_Abort(MPI_COMM_WORLD, code) when MPI is started; returns otherwise.
void mpiAbort(int code) noexcept;
/// MPI_Finalize when mpiStart initialised MPI.
void mpiFinish() noexcept;

/// The MPI backend; throws tgc::Error when built without MPI.
Communicator *createMpiCommunicator(const LaunchInfo &launch);

/// What the NCCL factory gets.
struct NcclRequest {
  LaunchInfo launch;
  std::string rendezvous; ///< --rendezvous, or "" for TGC_RENDEZVOUS
  int device;             ///< -1: from the local rank
};

} // namespace detail
} // namespace comm
} // namespace tgc

/// Defined by tgc_comm_nccl; null when it is not linked in. (NcclComm.cpp,
/// which defines it, declares it strong: a definition after a weak
/// declaration would be weak too.)
#ifdef TGC_COMM_DEFINES_NCCL_FACTORY
extern "C" tgc::Communicator *
tgc_comm_create_nccl(const tgc::comm::detail::NcclRequest *request);
#else
extern "C" tgc::Communicator *
tgc_comm_create_nccl(const tgc::comm::detail::NcclRequest *request)
    __attribute__((weak));
#endif

#endif // TGC_RUNTIME_COMM_BACKEND_H

//===- Comm.h - Collectives between the processes of one run ----*- C++ -*-===//
//
// A training run is one process or many (data parallel). The processes find
// each other from the environment, as the launchers users know set it (the
// first that applies wins):
//   1. `mpirun` (Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK);
//   2. MPICH/Intel MPI's hydra (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID);
//   3. torchrun style: RANK, WORLD_SIZE and LOCAL_RANK;
//   4. `srun` (SLURM_PROCID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS,
//      SLURM_LOCALID; only inside a job step, where SLURM_STEP_ID is set, so
//      a program started directly from a batch script is one process).
// No variables, or a world size of 1: one process, and the communicator is
// null.
//
// CPU executables reduce host memory with MPI, so one of the MPI launchers
// (1, 2 or 4) must start them: RANK/WORLD_SIZE alone is an error for them.
// GPU executables reduce device memory with NCCL (tgc_comm_nccl, which
// needs no MPI: CUDA toolkit and NCCL only). Its unique id travels over
// MPI when an MPI launcher started the run and the runtime was built with MPI,
// otherwise through a rendezvous file (--rendezvous PATH or TGC_RENDEZVOUS,
// on a file system every rank sees): rank 0 publishes it there atomically,
// tagged with the run id (TGC_RUN_ID, else torchrun's TORCHELASTIC_RUN_ID and
// restart count, else Slurm's job and step id) and the world size; the others
// wait for a record of their own run (without a run id: one written no
// earlier than 30 s before the process started), and rank 0 removes the file
// once every rank has joined. See Rendezvous.h for the exact rules.
//
// Every call either completes on every rank or throws tgc::Error on the
// rank that saw the failure; abortAll then takes the whole job down with a
// non-zero exit within a bounded time, so a dead rank never leaves the
// others hanging. A collective that does not complete within TGC_MPI_TIMEOUT
// (MPI) or TGC_NCCL_TIMEOUT (NCCL) seconds, default 300, 0 for none, ends
// the run through abortAll on the rank that waited: a peer that died or hangs
// is reported, not waited for. A rank that runs ahead and waits for a slow one
// waits in a collective too, so anything one rank does alone (a checkpoint,
// an evaluation) must take less than that.
//
// Plain C++17: nothing here includes MPI, CUDA or NCCL headers (a CUDA stream
// is passed as void *), and nothing includes LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_COMM_COMM_H
#define TGC_RUNTIME_COMM_COMM_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// Where the buffers handed to the collectives live: Mpi reduces host
/// memory, Nccl device memory (one CUDA device per process).
enum class CommBackend { Mpi, Nccl };

namespace comm {

enum class ReduceOp { Sum, Mean };

/// Joins the run's process group. Returns null when the run has one process
/// (no launcher variables, or a world size of 1): every collective below
/// then is the identity. `rendezvous` is the --rendezvous path ("" to take
/// TGC_RENDEZVOUS; only the NCCL backend without MPI uses it). `device` is
/// the CUDA device of an NCCL communicator; -1 picks it from the local rank
/// (device 0 when the process sees a single device). Throws tgc::Error
/// naming the variable or file at fault. Call it once, early, on every rank.
Communicator *initFromEnvironment(CommBackend backend,
                                  const std::string &rendezvous,
                                  int device = -1);

int rank(const Communicator *comm);      ///< 0 for null
int worldSize(const Communicator *comm); ///< 1 for null
/// The rank among the processes of this node; 0 for null.
int localRank(const Communicator *comm);
/// The CUDA device an NCCL communicator uses (pass it to DeviceOps::select);
/// -1 for null and MPI.
int deviceOrdinal(const Communicator *comm);
/// For the log: "rank 1 of 4 (local 1) over MPI, launched by mpirun";
/// "1 process" for null.
std::string describe(const Communicator *comm);

/// In-place sum / mean over all ranks of `count` floats: host memory for
/// Mpi; device memory for Nccl, reduced after all work queued on the device
/// so far and complete on return. Null comm: nothing happens.
void allReduceSum(Communicator *comm, float *data, int64_t count);
void allReduceMean(Communicator *comm, float *data, int64_t count);
/// In-place sum of one double (host memory on every backend), e.g. a loss
/// for logging.
double allReduceSum(Communicator *comm, double value);

/// What generated code calls for gradient buckets. Nccl: `data` is device
/// memory (F32, BF16 or F16), and the reduction is enqueued on `stream` (a
/// cudaStream_t; null is the legacy default stream) and returns at once, so
/// the caller overlaps it with the backward pass and orders later work with
/// events on that stream; Mean is ncclAvg. It may be captured into a CUDA
/// graph (then the TGC_NCCL_TIMEOUT deadline does not watch it). Mpi: `data`
/// is host memory (F32 only), `stream` must be null, and the call completes
/// before returning. Null comm: nothing happens.
void allReduce(Communicator *comm, void *data, int64_t count, DType dtype,
               ReduceOp op, void *stream);

//===----------------------------------------------------------------------===//
// The device mesh
//===----------------------------------------------------------------------===//
//
// A step partitioned over a mesh (ModelDesc::mesh) runs its collectives
// over one mesh axis each: among the processes that differ only in their
// coordinate on that axis. Process r sits at the row-major coordinates of r
// (the last axis fastest). `axis` -1 is the whole world in every call below.

/// Arranges the run's processes as a mesh of `sizes` and builds one
/// sub-communicator per axis (MPI_Comm_split / ncclCommSplit: every rank
/// must call it, with the same sizes, before the axis collectives). Throws
/// tgc::Error when the product of the sizes is not the world size. A null
/// communicator takes any mesh of size-1 axes.
void setMesh(Communicator *comm, const std::vector<int64_t> &sizes);
/// The number of mesh axes set (0 before setMesh and for null).
int meshAxes(const Communicator *comm);
/// This process's coordinate on mesh axis `axis` (its rank for -1); 0 for
/// null.
int meshCoordinate(const Communicator *comm, int axis);
/// The number of processes along `axis` (the world size for -1); 1 for null.
int meshAxisSize(const Communicator *comm, int axis);

/// allReduce over the processes along mesh axis `axis` (-1: all).
void allReduce(Communicator *comm, int axis, void *data, int64_t count,
               DType dtype, ReduceOp op, void *stream);

/// Concatenates the processes' `count` elements along `axis` in the order of
/// their coordinates: `out` holds size(axis) * count elements, rank-major.
/// With `blocks` > 1 each process's piece is `blocks` runs of count /
/// blocks elements (a tensor split along a dim that is not its outermost),
/// and `out` interleaves them: run b of every process, then run b + 1. `in`
/// and `out` must not overlap. Memory and `stream` as for allReduce; Mpi
/// completes before returning, Nccl enqueues on `stream` (the rearrangement
/// for blocks > 1 goes through a scratch buffer on the same stream). Any
/// dtype: the bytes travel unchanged. Null comm: copies `in` to `out` (host
/// memory only: a device caller copies itself).
void allGather(Communicator *comm, int axis, const void *in, void *out,
               int64_t count, DType dtype, void *stream, int64_t blocks = 1);

/// The elementwise sum (or mean) of the processes' `in` along `axis`
/// (size(axis) * count elements each), of which the process at coordinate
/// i keeps piece i (`count` elements) in `out`. With `blocks` > 1 `in` is
/// `blocks` runs each holding every process's run of count / blocks
/// elements (the inverse of allGather's layout), and piece i is run i of
/// each, in order. F32, BF16 and F16 on Nccl, F32 on Mpi. Null comm: copies.
void reduceScatter(Communicator *comm, int axis, const void *in, void *out,
                   int64_t count, DType dtype, ReduceOp op, void *stream,
                   int64_t blocks = 1);

/// Keeps this process's piece of a host tensor that every process along
/// `axis` holds whole: the inverse of allGather's layout, without
/// communication. `count`, `blocks` as for allGather.
void slice(const Communicator *comm, int axis, const void *in, void *out,
           int64_t count, DType dtype, int64_t blocks = 1);

/// Copies `bytes` of host memory from `root` to every rank.
void broadcast(Communicator *comm, void *data, int64_t bytes, int root);

/// Point-to-point between the processes along mesh axis `axis` that differ
/// only there (a pipeline's stages). openPointToPoint comes first, on
/// every rank at once (NCCL makes a two-rank communicator and a stream per
/// direction and neighbour on the ring of the axis there, and then reaches
/// those neighbours only). `peer` is the other's coordinate on the axis.
/// MPI pairs a send with its receive by `tag` (and in order within a tag);
/// NCCL ignores the tag and pairs them in the order they are made, per
/// direction between two processes, so a receiver posts in its sender's
/// order. send starts the transfer and returns: `data` must be complete
/// (on a device, no queued work still writing it) and stay unchanged until
/// waitSends. recv returns once the bytes are in `data`. Host memory for
/// MPI, device memory for NCCL.
void openPointToPoint(Communicator *comm, int axis);
void send(Communicator *comm, int axis, int peer, const void *data,
          int64_t bytes, int tag);
void recv(Communicator *comm, int axis, int peer, void *data, int64_t bytes,
          int tag);
/// A receive posted ahead (the bytes arrive while this process computes)
/// and its wait; the handle is good until waitSends.
int postRecv(Communicator *comm, int axis, int peer, void *data, int64_t bytes,
             int tag);
void waitRecv(Communicator *comm, int handle);
/// Waits for every send this process started (its buffers may then be
/// reused); receive handles stay good until no transfer is in flight.
void waitSends(Communicator *comm);
void barrier(Communicator *comm);

/// Prints "rank N: why" to stderr and ends every process of the run with
/// exit code 1 within a bounded time: MPI_Abort when MPI was started;
/// for NCCL without MPI, an abort notice in the rendezvous file (the other
/// ranks' watchdogs read it within about a second) and ncclCommAbort. This
/// process exits within 10 s whatever the teardown does. Safe from any
/// thread, and with a null comm (then only this process exits, through
/// MPI_Abort when an MPI launch already started MPI). Never returns.
[[noreturn]] void abortAll(Communicator *comm, const std::string &why);

/// Leaves the group cleanly (after the last collective, on every rank) and
/// frees `comm`; null is fine.
void finalize(Communicator *comm);

} // namespace comm
} // namespace tgc

#endif // TGC_RUNTIME_COMM_COMM_H

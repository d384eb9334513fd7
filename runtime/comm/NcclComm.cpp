//===- NcclComm.cpp - Device-memory collectives over NCCL -------*- C++ -*-===//
//
// The GPU backend, in its own library (tgc_comm_nccl) so that tgc_runtime
// builds without CUDA. Plain C++ on the CUDA runtime API and NCCL; MPI, when
// the runtime has it, only carries the unique id (through Backend.h).
//
// One CUDA device per process, chosen by the local rank. Gradient
// all-reduces are enqueued on the caller's stream and return at once.
// Pipeline stages send and receive along their mesh axis
// (openPointToPoint): a two-rank communicator and a stream per direction
// between ring neighbours, so a send that waits for its receiver holds up
// nothing else; NCCL pairs each channel's sends and receives in order. The
// communicator is non-blocking (ncclConfig_t::blocking = 0), so no NCCL call
// can block the host for ever: a call that reports ncclInProgress is polled
// to completion against a deadline. A watchdog thread, every 100 ms:
//  - polls ncclCommGetAsyncError: a peer that died or a broken network is
//    an error there, which ends the run through abortAll;
//  - checks an event recorded after each collective: one that has not
//    completed TGC_NCCL_TIMEOUT seconds (default 300) after it was enqueued
//    ends the run through abortAll (the wait covers the collective and what
//    was queued before it on that stream);
//  - every second, reads the rendezvous file's abort notice, so one rank's
//    abortAll ends the others even where no launcher would.
// abortAll posts the notice, calls ncclCommAbort (which frees kernels waiting
// on dead peers) and exits 1.
//
//===----------------------------------------------------------------------===//

// This file defines the factory that Backend.h declares weak elsewhere.
#define TGC_COMM_DEFINES_NCCL_FACTORY 1
#include "runtime/comm/Backend.h"

#include "runtime/comm/Rendezvous.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tgc {
namespace comm {
namespace {

double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", value);
  return text;
}

std::string cudaText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" +
         cudaGetErrorString(error) + ")";
}

std::string visibleDevicesNote() {
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? std::string(" (CUDA_VISIBLE_DEVICES='") + visible + "')"
                 : std::string();
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator() : Communicator(CommBackend::Nccl) {}
  ~NcclCommunicator() override;

  /// Everything that can fail: device, unique id, communicator, watchdog.
  /// On a throw the destructor releases what was made.
  void start(const detail::NcclRequest &request);

  void allReduceFloats(float *data, int64_t count, ReduceOp op) override;
  void allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                 void *stream) override;
  double allReduceSum(double value) override;
  void splitMesh() override;
  void allReduceAxis(int axis, void *data, int64_t count, DType dtype,
                     ReduceOp op, void *stream) override;
  void allGather(int axis, const void *in, void *out, int64_t count,
                 DType dtype, void *stream, int64_t blocks) override;
  void reduceScatter(int axis, const void *in, void *out, int64_t count,
                     DType dtype, ReduceOp op, void *stream,
                     int64_t blocks) override;
  void broadcast(void *data, int64_t bytes, int root) override;
  void openPointToPoint(int axis) override;
  void send(int axis, int peer, const void *data, int64_t bytes,
            int tag) override;
  int postRecv(int axis, int peer, void *data, int64_t bytes, int tag) override;
  void waitRecv(int handle) override;
  void waitSends() override;
  void barrier() override;
  void abortPeers(const std::string &why) noexcept override;
  void finalize() override;

  /// After start() threw: tells the ranks that share the rendezvous (and
  /// are waiting for NCCL's init) through the abort notice, so they fail
  /// now rather than at their deadline.
  void announceFailedStart(const std::string &why) noexcept;

private:
  /// Without MPI: the rendezvous file from the flag or TGC_RENDEZVOUS.
  void prepareRendezvous(const std::string &flagPath);
  void chooseDevice(int requested);
  /// Rank 0: a fresh id. The others: rank 0's, from the rendezvous file.
  ncclUniqueId newUniqueId();
  ncclUniqueId awaitUniqueId();
  void createCommunicator(const ncclUniqueId &id);
  /// Polls a call that returned ncclInProgress until it settles; throws
  /// tgc::Error on an error or when the deadline passes.
  void settle(ncclResult_t result, const std::string &what);
  /// The same for a call on `comm` (a mesh axis's communicator).
  void settleOn(ncclComm_t comm, ncclResult_t result, const std::string &what);
  ncclComm_t axisComm(int axis) const {
    return axis < 0 ? nccl_ : axisNccl_[axis];
  }
  int64_t axisSize(int axis) const {
    return axis < 0 ? launch.worldSize : meshSizes[axis];
  }
  /// Device scratch for the mesh collectives' rearrangements (grows; its
  /// cudaFree waits for the device, so no queued use outlives it).
  void *scratch(size_t bytes);
  /// [pieces][blocks][run] -> [blocks][pieces][run] (toRunMajor) or back,
  /// on `stream`.
  void interleave(const void *from, void *to, int64_t pieces, int64_t blocks,
                  int64_t run, bool toRunMajor, cudaStream_t stream);
  void checkCuda(cudaError_t error, const std::string &what);
  /// An event from the spare ones (the watchdog's, done), else a new one.
  cudaEvent_t spareEvent();
  /// Records an event after `what` on `stream` for the watchdog's deadline.
  void track(cudaStream_t stream, const std::string &what);
  /// Waits for the internal stream; the watchdog bounds the wait.
  void waitInternal(const std::string &what);
  void *staging(size_t bytes);
  void watch();
  void stopWatchdog();

  ncclComm_t nccl_ = nullptr;
  /// One communicator per mesh axis (splitMesh), split from nccl_.
  std::vector<ncclComm_t> axisNccl_;
  void *scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  cudaStream_t stream_ = nullptr; ///< for the synchronous calls
  void *staging_ = nullptr;
  size_t stagingBytes_ = 0;
  double timeout_ = 300;
  std::unique_ptr<Rendezvous> rendezvous_;

  /// Point-to-point along a mesh axis (openPointToPoint): one two-rank
  /// communicator and stream per direction and neighbour, so that a send
  /// waiting for its receiver never holds up a transfer the other way
  /// (NCCL runs one communicator's operations in order).
  struct Channel {
    int peer = -1; ///< the neighbour's coordinate on the axis
    bool sending = false;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
  };
  int pointAxis_ = -1;
  std::vector<Channel> channels_;
  std::vector<cudaEvent_t> receives_; ///< by handle
  Channel &channel(int axis, int peer, bool sending, const char *what);
  /// Enqueues a send or receive on its channel; returns the channel's
  /// stream.
  cudaStream_t transfer(int axis, int peer, void *data, int64_t bytes,
                        bool sending);

  struct Pending {
    cudaEvent_t event;
    double deadline;
    std::string what;
  };
  std::thread watchdog_;
  /// The abort came from another rank's notice: do not post one.
  std::atomic<bool> peerAborted_{false};
  std::mutex mutex_; // guards what follows
  std::condition_variable wakeup_;
  bool stopping_ = false;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> spareEvents_;
};

//===----------------------------------------------------------------------===//
// Start-up
//===----------------------------------------------------------------------===//

void NcclCommunicator::start(const detail::NcclRequest &request) {
  launch = request.launch;
  timeout_ = timeoutFromEnvironment("TGC_NCCL_TIMEOUT", 300);
  bool overMpi = launch.mpiLaunch() && detail::mpiCompiled();
  // Configuration errors first, before anything touches a device.
  if (!overMpi)
    prepareRendezvous(request.rendezvous);
  else
    detail::mpiStart(launch); // also learns the local rank

  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (!rendezvous_) {
    chooseDevice(request.device);
    if (launch.rank == 0)
      id = newUniqueId();
    detail::mpiBroadcast(&id, sizeof(id), 0);
  } else if (launch.rank == 0) {
    try {
      chooseDevice(request.device);
      id = newUniqueId();
    } catch (const Error &e) {
      // The others would wait for a record until their deadline.
      rendezvous_->publishFailure(e.what());
      throw;
    }
    rendezvous_->publish(
        std::string(reinterpret_cast<const char *>(&id), sizeof(id)));
  } else {
    // The session first, so that a failure below reaches the other ranks
    // (announceFailedStart).
    id = awaitUniqueId();
    chooseDevice(request.device);
  }
  createCommunicator(id);
  // Every rank has joined (rank 0's init completes only then), so nobody
  // needs the record any more, and no later run may take it for its own.
  if (rendezvous_ && launch.rank == 0)
    rendezvous_->retire();
  checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
  watchdog_ = std::thread([this] { watch(); });
}

void NcclCommunicator::chooseDevice(int requested) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    throw Error("rank " + std::to_string(launch.rank) + " has no CUDA device" +
                visibleDevicesNote() +
                (error != cudaSuccess
                     ? ": cudaGetDeviceCount: " + cudaText(error)
                     : std::string()));
  if (requested >= 0) {
    device = requested;
    if (device >= count)
      throw Error("CUDA device " + std::to_string(device) +
                  " was asked for, but " + std::to_string(count) +
                  " are visible" + visibleDevicesNote());
  } else if (count == 1) {
    device = 0; // the launcher gave each process its own device
  } else if (launch.localRank >= 0) {
    device = launch.localRank;
    if (device >= count)
      throw Error(launch.localVar + "=" + std::to_string(launch.localRank) +
                  " but only " + std::to_string(count) +
                  " CUDA devices are visible" + visibleDevicesNote() +
                  ": start at most one process per device on a node");
  } else {
    device = launch.rank % count;
  }
  if (launch.localRank < 0)
    launch.localRank = device;
  checkCuda(cudaSetDevice(device),
            "cudaSetDevice(" + std::to_string(device) + ")");
}

void NcclCommunicator::prepareRendezvous(const std::string &flagPath) {
  std::string path = flagPath;
  if (path.empty())
    if (const char *env = std::getenv("TGC_RENDEZVOUS"))
      path = env;
  if (path.empty())
    throw Error(launch.sizeVar + "=" + std::to_string(launch.worldSize) +
                " asks for " + std::to_string(launch.worldSize) +
                " processes; without MPI" +
                (launch.mpiLaunch() ? " in this runtime" : "") +
                " they meet through a rendezvous file: pass --rendezvous PATH "
                "or set TGC_RENDEZVOUS to a path on a file system every rank "
                "sees");
  RendezvousOptions options;
  options.path = path;
  options.runId = launch.runId;
  options.worldSize = launch.worldSize;
  options.timeoutSeconds = timeout_;
  rendezvous_ = std::make_unique<Rendezvous>(options);
}

ncclUniqueId NcclCommunicator::newUniqueId() {
  ncclUniqueId id;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess)
    throw Error(std::string("ncclGetUniqueId failed: ") +
                ncclGetErrorString(result) + ": " + ncclGetLastError(nullptr));
  return id;
}

ncclUniqueId NcclCommunicator::awaitUniqueId() {
  ncclUniqueId id;
  std::string payload = rendezvous_->await();
  if (payload.size() != sizeof(id))
    throw Error(
        rendezvous_->path() + ": the rendezvous record holds " +
        std::to_string(payload.size()) + " bytes, not an NCCL unique id of " +
        std::to_string(sizeof(id)) + " (a different NCCL version on rank 0?)");
  std::memcpy(&id, payload.data(), sizeof(id));
  return id;
}

void NcclCommunicator::createCommunicator(const ncclUniqueId &id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result = ncclCommInitRankConfig(&nccl_, launch.worldSize, id,
                                               launch.rank, &config);
  double deadline = nowSeconds() + timeout_;
  double nextNoticePoll = nowSeconds() + 1;
  while (result == ncclInProgress && nccl_) {
    if (rendezvous_ && nowSeconds() >= nextNoticePoll) {
      nextNoticePoll = nowSeconds() + 1;
      std::string notice = rendezvous_->pollAbort();
      if (!notice.empty()) {
        ncclCommAbort(nccl_);
        nccl_ = nullptr;
        peerAborted_ = true;
        throw Error("NCCL initialisation on rank " +
                    std::to_string(launch.rank) +
                    " stopped: another rank failed (" + notice + ")");
      }
    }
    if (timeout_ > 0 && nowSeconds() > deadline) {
      ncclCommAbort(nccl_);
      nccl_ = nullptr;
      throw Error("NCCL initialisation on rank " + std::to_string(launch.rank) +
                  " did not complete within " + seconds(timeout_) +
                  " (TGC_NCCL_TIMEOUT): not all " +
                  std::to_string(launch.worldSize) +
                  " ranks joined (is every rank running, with the same "
                  "rendezvous, and can they reach each other?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ncclResult_t query = ncclCommGetAsyncError(nccl_, &result);
    if (query != ncclSuccess)
      result = query;
  }
  if (result != ncclSuccess) {
    std::string last = ncclGetLastError(nccl_);
    if (nccl_)
      ncclCommAbort(nccl_);
    nccl_ = nullptr;
    throw Error("NCCL initialisation on rank " + std::to_string(launch.rank) +
                " (CUDA device " + std::to_string(device) + ") failed: " +
                ncclGetErrorString(result) + (last.empty() ? "" : ": " + last) +
                (result == ncclInvalidUsage
                     ? " (two ranks on one device? check " + launch.localVar +
                           " and CUDA_VISIBLE_DEVICES)"
                     : std::string()) +
                "; NCCL_DEBUG=WARN says more");
  }
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

void NcclCommunicator::settle(ncclResult_t result, const std::string &what) {
  settleOn(nccl_, result, what);
}

void NcclCommunicator::settleOn(ncclComm_t comm, ncclResult_t result,
                                const std::string &what) {
  double deadline = nowSeconds() + timeout_;
  while (result == ncclInProgress) {
    if (timeout_ > 0 && nowSeconds() > deadline)
      throw Error("NCCL " + what + " was still in progress after " +
                  seconds(timeout_) +
                  " (TGC_NCCL_TIMEOUT): a peer is missing or the network "
                  "hangs");
    std::this_thread::yield();
    ncclResult_t query = ncclCommGetAsyncError(comm, &result);
    if (query != ncclSuccess)
      result = query;
  }
  if (result != ncclSuccess)
    throw Error("NCCL " + what + " failed on rank " +
                std::to_string(launch.rank) + ": " +
                ncclGetErrorString(result) + ": " + ncclGetLastError(comm));
}

void NcclCommunicator::checkCuda(cudaError_t error, const std::string &what) {
  if (error != cudaSuccess)
    throw Error(what + " failed on rank " + std::to_string(launch.rank) +
                " (CUDA device " + std::to_string(device) +
                "): " + cudaText(error));
}

void NcclCommunicator::track(cudaStream_t stream, const std::string &what) {
  if (timeout_ <= 0)
    return;
  // Enqueued into a CUDA graph being captured: the collective runs when the
  // graph is launched, and bounding that launch is the caller's business.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone)
    return;
  cudaEvent_t event = spareEvent();
  checkCuda(cudaEventRecord(event, stream), "cudaEventRecord after " + what);
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back({event, nowSeconds() + timeout_, what});
}

cudaEvent_t NcclCommunicator::spareEvent() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!spareEvents_.empty()) {
      cudaEvent_t event = spareEvents_.back();
      spareEvents_.pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
            "cudaEventCreateWithFlags");
  return event;
}

void NcclCommunicator::waitInternal(const std::string &what) {
  checkCuda(cudaStreamSynchronize(stream_), "waiting for NCCL " + what);
}

void *NcclCommunicator::staging(size_t bytes) {
  if (bytes > stagingBytes_) {
    if (staging_)
      cudaFree(staging_);
    staging_ = nullptr;
    stagingBytes_ = 0;
    checkCuda(cudaMalloc(&staging_, bytes),
              "cudaMalloc of " + std::to_string(bytes) + " staging bytes");
    stagingBytes_ = bytes;
  }
  return staging_;
}

static bool ncclType(DType dtype, ncclDataType_t &type) {
  switch (dtype) {
  case DType::F32:
    type = ncclFloat32;
    return true;
  case DType::BF16:
    type = ncclBfloat16;
    return true;
  case DType::F16:
    type = ncclFloat16;
    return true;
  default:
    return false;
  }
}

void NcclCommunicator::allReduce(void *data, int64_t count, DType dtype,
                                 ReduceOp op, void *stream) {
  ncclDataType_t type;
  if (!ncclType(dtype, type))
    throw Error("NCCL all-reduce of DType " +
                std::to_string(static_cast<int>(dtype)) +
                ": only f32, bf16 and f16 are reduced");
  std::string what = "all-reduce of " + std::to_string(count) + " " +
                     dtypeName(dtype) + " values";
  cudaStream_t cudaStream = static_cast<cudaStream_t>(stream);
  settle(ncclAllReduce(data, data, static_cast<size_t>(count), type,
                       op == ReduceOp::Mean ? ncclAvg : ncclSum, nccl_,
                       cudaStream),
         what);
  track(cudaStream, what);
}

void NcclCommunicator::allReduceFloats(float *data, int64_t count,
                                       ReduceOp op) {
  // The data may come from any stream: reduce what is there now.
  checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  allReduce(data, count, DType::F32, op, stream_);
  waitInternal("all-reduce");
}

double NcclCommunicator::allReduceSum(double value) {
  void *buffer = staging(sizeof(double));
  checkCuda(cudaMemcpyAsync(buffer, &value, sizeof(double),
                            cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync");
  settle(ncclAllReduce(buffer, buffer, 1, ncclFloat64, ncclSum, nccl_, stream_),
         "all-reduce of a double");
  track(stream_, "all-reduce of a double");
  checkCuda(cudaMemcpyAsync(&value, buffer, sizeof(double),
                            cudaMemcpyDeviceToHost, stream_),
            "cudaMemcpyAsync");
  waitInternal("all-reduce of a double");
  return value;
}

//===----------------------------------------------------------------------===//
// Mesh axes
//===----------------------------------------------------------------------===//

void NcclCommunicator::splitMesh() {
  std::vector<ncclComm_t> made;
  for (size_t a = 0; a < meshSizes.size(); ++a) {
    // As MPI_Comm_split: the group of the processes that share every other
    // coordinate, ordered by the coordinate on the axis.
    int color = 0;
    for (size_t b = 0; b < meshSizes.size(); ++b)
      if (b != a)
        color = color * static_cast<int>(meshSizes[b]) + meshCoords[b];
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t axis = nullptr;
    ncclResult_t result =
        ncclCommSplit(nccl_, color, meshCoords[a], &axis, &config);
    if (result != ncclSuccess && result != ncclInProgress) {
      for (ncclComm_t done : made)
        ncclCommAbort(done);
      settle(result, "split for mesh axis " + std::to_string(a));
    }
    made.push_back(axis);
    settleOn(axis, result, "split for mesh axis " + std::to_string(a));
  }
  // The watchdog reads the list.
  std::lock_guard<std::mutex> lock(mutex_);
  axisNccl_ = made;
}

void *NcclCommunicator::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    if (scratch_)
      cudaFree(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
    checkCuda(cudaMalloc(&scratch_, bytes),
              "cudaMalloc of " + std::to_string(bytes) + " scratch bytes");
    scratchBytes_ = bytes;
  }
  return scratch_;
}

void NcclCommunicator::interleave(const void *from, void *to, int64_t pieces,
                                  int64_t blocks, int64_t run, bool toRunMajor,
                                  cudaStream_t stream) {
  // One strided copy per piece: its `blocks` runs, `run` bytes each, lie
  // contiguous piece-major and `pieces` runs apart run-major.
  size_t width = static_cast<size_t>(run);
  for (int64_t p = 0; p < pieces; ++p) {
    const char *src = static_cast<const char *>(from);
    char *dst = static_cast<char *>(to);
    if (toRunMajor)
      checkCuda(cudaMemcpy2DAsync(dst + p * run, width * pieces,
                                  src + p * blocks * run, width, width,
                                  static_cast<size_t>(blocks),
                                  cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpy2DAsync");
    else
      checkCuda(cudaMemcpy2DAsync(dst + p * blocks * run, width, src + p * run,
                                  width * pieces, width,
                                  static_cast<size_t>(blocks),
                                  cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpy2DAsync");
  }
}

void NcclCommunicator::allReduceAxis(int axis, void *data, int64_t count,
                                     DType dtype, ReduceOp op, void *stream) {
  if (axis < 0)
    return allReduce(data, count, dtype, op, stream);
  ncclDataType_t type;
  if (!ncclType(dtype, type))
    throw Error("NCCL all-reduce of DType " +
                std::to_string(static_cast<int>(dtype)) +
                ": only f32, bf16 and f16 are reduced");
  std::string what = "all-reduce of " + std::to_string(count) + " " +
                     dtypeName(dtype) + " values over mesh axis " +
                     std::to_string(axis);
  cudaStream_t cudaStream = static_cast<cudaStream_t>(stream);
  settleOn(axisComm(axis),
           ncclAllReduce(data, data, static_cast<size_t>(count), type,
                         op == ReduceOp::Mean ? ncclAvg : ncclSum,
                         axisComm(axis), cudaStream),
           what);
  track(cudaStream, what);
}

void NcclCommunicator::allGather(int axis, const void *in, void *out,
                                 int64_t count, DType dtype, void *stream,
                                 int64_t blocks) {
  int64_t bytes = count * dtypeSize(dtype), size = axisSize(axis);
  cudaStream_t cudaStream = static_cast<cudaStream_t>(stream);
  void *gathered =
      blocks > 1 ? scratch(static_cast<size_t>(bytes * size)) : out;
  std::string what =
      "all-gather of " + std::to_string(bytes) + " bytes" +
      (axis < 0 ? "" : " over mesh axis " + std::to_string(axis));
  settleOn(axisComm(axis),
           ncclAllGather(in, gathered, static_cast<size_t>(bytes), ncclUint8,
                         axisComm(axis), cudaStream),
           what);
  if (blocks > 1)
    interleave(gathered, out, size, blocks, bytes / blocks,
               /*toRunMajor=*/true, cudaStream);
  track(cudaStream, what);
}

void NcclCommunicator::reduceScatter(int axis, const void *in, void *out,
                                     int64_t count, DType dtype, ReduceOp op,
                                     void *stream, int64_t blocks) {
  ncclDataType_t type;
  if (!ncclType(dtype, type))
    throw Error("NCCL reduce-scatter of DType " +
                std::to_string(static_cast<int>(dtype)) +
                ": only f32, bf16 and f16 are reduced");
  int64_t size = axisSize(axis), run = count / blocks * dtypeSize(dtype);
  cudaStream_t cudaStream = static_cast<cudaStream_t>(stream);
  const void *source = in;
  if (blocks > 1) {
    void *piecewise =
        scratch(static_cast<size_t>(count * size * dtypeSize(dtype)));
    interleave(in, piecewise, size, blocks, run, /*toRunMajor=*/false,
               cudaStream);
    source = piecewise;
  }
  std::string what =
      "reduce-scatter of " + std::to_string(count) + " " + dtypeName(dtype) +
      " values" + (axis < 0 ? "" : " over mesh axis " + std::to_string(axis));
  settleOn(axisComm(axis),
           ncclReduceScatter(source, out, static_cast<size_t>(count), type,
                             op == ReduceOp::Mean ? ncclAvg : ncclSum,
                             axisComm(axis), cudaStream),
           what);
  track(cudaStream, what);
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

void NcclCommunicator::openPointToPoint(int axis) {
  if (axis < 0 || axis >= static_cast<int>(meshSizes.size()))
    throw Error("point-to-point over mesh axis " + std::to_string(axis) +
                " of a mesh of " + std::to_string(meshSizes.size()) + " axes");
  if (pointAxis_ == axis)
    return;
  if (pointAxis_ >= 0)
    throw Error("NCCL point-to-point is open on mesh axis " +
                std::to_string(pointAxis_) + " already, not on " +
                std::to_string(axis));
  pointAxis_ = axis;
  int size = static_cast<int>(meshSizes[axis]);
  int self = static_cast<int>(meshCoords[axis]);
  if (size < 2)
    return;
  // The directed edges between neighbours on the ring of the axis: edge e
  // joins coordinates e and e + 1 (mod size), forward from e, backward to
  // it (with two coordinates, forward covers both ways). A split gives each
  // rank one communicator at most, so the edges of one direction go in
  // three splits: by the parity of e, and one for the edge that closes an
  // odd ring. In each two-rank communicator the sender is rank 0.
  for (int backward = 0; backward < (size > 2 ? 2 : 1); ++backward)
    for (int split = 0; split < 3; ++split) {
      int color = NCCL_SPLIT_NOCOLOR, key = 0;
      Channel made;
      for (int e = 0; e < size; ++e) {
        int edgeSplit = size % 2 == 1 && e == size - 1 ? 2 : e % 2;
        int from = backward ? (e + 1) % size : e;
        int to = backward ? e : (e + 1) % size;
        if (edgeSplit != split || (self != from && self != to))
          continue;
        color = e;
        made.sending = self == from;
        made.peer = made.sending ? to : from;
        key = made.sending ? 0 : 1;
      }
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      std::string what =
          "split for point-to-point on mesh axis " + std::to_string(axis);
      ncclResult_t result =
          ncclCommSplit(axisComm(axis), color, key, &made.comm, &config);
      settleOn(made.comm ? made.comm : axisComm(axis), result, what);
      if (color == NCCL_SPLIT_NOCOLOR)
        continue;
      checkCuda(cudaStreamCreateWithFlags(&made.stream, cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags");
      std::lock_guard<std::mutex> lock(mutex_); // abortPeers reads the list
      channels_.push_back(made);
    }
}

NcclCommunicator::Channel &
NcclCommunicator::channel(int axis, int peer, bool sending, const char *what) {
  if (axis == pointAxis_)
    for (Channel &c : channels_)
      if (c.peer == peer && c.sending == sending)
        return c;
  throw Error(std::string("NCCL ") + what + " to coordinate " +
              std::to_string(peer) + " on mesh axis " + std::to_string(axis) +
              ": only neighbours on the axis that openPointToPoint opened (" +
              std::to_string(pointAxis_) + ") are reached");
}

cudaStream_t NcclCommunicator::transfer(int axis, int peer, void *data,
                                        int64_t bytes, bool sending) {
  Channel &c = channel(axis, peer, sending, sending ? "send" : "receive");
  std::string what = std::string(sending ? "send" : "receive") + " of " +
                     std::to_string(bytes) + " bytes " +
                     (sending ? "to" : "from") + " coordinate " +
                     std::to_string(peer) + " on mesh axis " +
                     std::to_string(axis);
  // In the channel's communicator the sender is rank 0.
  size_t count = static_cast<size_t>(bytes);
  settleOn(c.comm,
           sending ? ncclSend(data, count, ncclUint8, 1, c.comm, c.stream)
                   : ncclRecv(data, count, ncclUint8, 0, c.comm, c.stream),
           what);
  track(c.stream, what);
  return c.stream;
}

void NcclCommunicator::send(int axis, int peer, const void *data, int64_t bytes,
                            int /*tag*/) {
  transfer(axis, peer, const_cast<void *>(data), bytes, /*sending=*/true);
}

int NcclCommunicator::postRecv(int axis, int peer, void *data, int64_t bytes,
                               int /*tag*/) {
  cudaStream_t stream = transfer(axis, peer, data, bytes, /*sending=*/false);
  cudaEvent_t done = spareEvent();
  checkCuda(cudaEventRecord(done, stream), "cudaEventRecord after a receive");
  receives_.push_back(done);
  return static_cast<int>(receives_.size()) - 1;
}

void NcclCommunicator::waitRecv(int handle) {
  if (handle < 0 || handle >= static_cast<int>(receives_.size()) ||
      !receives_[handle])
    throw Error("NCCL receive handle " + std::to_string(handle) +
                " is not one in flight");
  // The watchdog bounds the wait (track).
  checkCuda(cudaEventSynchronize(receives_[handle]), "waiting for a receive");
  std::lock_guard<std::mutex> lock(mutex_);
  spareEvents_.push_back(receives_[handle]);
  receives_[handle] = nullptr;
}

void NcclCommunicator::waitSends() {
  for (Channel &c : channels_)
    if (c.sending)
      checkCuda(cudaStreamSynchronize(c.stream), "waiting for NCCL sends");
  // Handles are numbered afresh once every receive has been waited for.
  bool open = false;
  for (cudaEvent_t e : receives_)
    open = open || e;
  if (!open)
    receives_.clear();
}

void NcclCommunicator::broadcast(void *data, int64_t bytes, int root) {
  size_t size = static_cast<size_t>(bytes);
  void *buffer = staging(size);
  if (launch.rank == root)
    checkCuda(
        cudaMemcpyAsync(buffer, data, size, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync");
  std::string what = "broadcast of " + std::to_string(bytes) +
                     " bytes from rank " + std::to_string(root);
  settle(ncclBroadcast(buffer, buffer, size, ncclUint8, root, nccl_, stream_),
         what);
  track(stream_, what);
  checkCuda(
      cudaMemcpyAsync(data, buffer, size, cudaMemcpyDeviceToHost, stream_),
      "cudaMemcpyAsync");
  waitInternal(what);
}

void NcclCommunicator::barrier() {
  void *buffer = staging(sizeof(float));
  checkCuda(cudaMemsetAsync(buffer, 0, sizeof(float), stream_),
            "cudaMemsetAsync");
  settle(ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, nccl_, stream_),
         "barrier");
  track(stream_, "barrier");
  waitInternal("barrier");
}

//===----------------------------------------------------------------------===//
// Watchdog, abort and shutdown
//===----------------------------------------------------------------------===//

void NcclCommunicator::watch() {
  cudaSetDevice(device);
  // The queries below must not break (or be refused by) a CUDA graph
  // capture that the main thread may have under way.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  double nextNoticePoll = 0;
  for (;;) {
    std::string failure;
    double now;
    std::vector<ncclComm_t> axes;
    {
      // Only the event list is shared: file and NCCL queries run unlocked,
      // so a slow file system never holds up the main thread's track().
      std::unique_lock<std::mutex> lock(mutex_);
      wakeup_.wait_for(lock, std::chrono::milliseconds(100));
      if (stopping_)
        return;
      axes = axisNccl_;
      now = nowSeconds();
      for (size_t i = 0; i < pending_.size() && failure.empty();) {
        cudaError_t status = cudaEventQuery(pending_[i].event);
        if (status == cudaSuccess) {
          spareEvents_.push_back(pending_[i].event);
          pending_[i] = pending_.back();
          pending_.pop_back();
          continue;
        }
        if (status != cudaErrorNotReady)
          failure = "CUDA error while NCCL " + pending_[i].what +
                    " was under way: " + cudaText(status);
        else if (now > pending_[i].deadline)
          failure = "NCCL " + pending_[i].what + " did not complete within " +
                    seconds(timeout_) +
                    " (TGC_NCCL_TIMEOUT): another rank died, hangs, or spent "
                    "that long elsewhere";
        ++i;
      }
    }

    ncclResult_t state = ncclSuccess;
    ncclResult_t queried = ncclCommGetAsyncError(nccl_, &state);
    if (queried != ncclSuccess)
      state = queried;
    for (ncclComm_t axis : axes) {
      if (!axis || (state != ncclSuccess && state != ncclInProgress))
        continue;
      queried = ncclCommGetAsyncError(axis, &state);
      if (queried != ncclSuccess)
        state = queried;
    }
    if (failure.empty() && state != ncclSuccess && state != ncclInProgress)
      failure = std::string("NCCL reported an error: ") +
                ncclGetErrorString(state) + ": " + ncclGetLastError(nccl_) +
                " (a peer died, or the network failed)";

    if (failure.empty() && rendezvous_ && now >= nextNoticePoll) {
      nextNoticePoll = now + 1;
      std::string notice = rendezvous_->pollAbort();
      if (!notice.empty()) {
        failure = "ending because " + notice;
        peerAborted_ = true;
      }
    }

    if (!failure.empty())
      abortAll(this, failure);
  }
}

void NcclCommunicator::abortPeers(const std::string &why) noexcept {
  if (rendezvous_ && !peerAborted_)
    rendezvous_->postAbort(launch.rank, why);
  for (Channel &c : channels_)
    if (c.comm)
      ncclCommAbort(c.comm);
  for (ncclComm_t axis : axisNccl_)
    if (axis)
      ncclCommAbort(axis);
  if (nccl_)
    ncclCommAbort(nccl_);
}

void NcclCommunicator::announceFailedStart(const std::string &why) noexcept {
  // The record stays: a rank that starts late still finds the session, and
  // with it this notice.
  if (rendezvous_ && !peerAborted_)
    rendezvous_->postAbort(launch.rank, why);
}

void NcclCommunicator::stopWatchdog() {
  if (!watchdog_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wakeup_.notify_all();
  watchdog_.join();
}

void NcclCommunicator::finalize() {
  if (!nccl_)
    return;
  // Flushes every queued collective; settles once all ranks have finished.
  for (Channel &c : channels_)
    settleOn(c.comm, ncclCommFinalize(c.comm),
             "finalize of a point-to-point "
             "channel");
  for (ncclComm_t axis : axisNccl_)
    if (axis)
      settleOn(axis, ncclCommFinalize(axis), "finalize of a mesh axis");
  settle(ncclCommFinalize(nccl_), "finalize");
  stopWatchdog();
  for (Channel &c : channels_) {
    ncclCommDestroy(c.comm);
    cudaStreamDestroy(c.stream);
  }
  channels_.clear();
  for (ncclComm_t &axis : axisNccl_)
    if (axis) {
      ncclCommDestroy(axis);
      axis = nullptr;
    }
  ncclCommDestroy(nccl_);
  nccl_ = nullptr;
}

NcclCommunicator::~NcclCommunicator() {
  stopWatchdog();
  for (Channel &c : channels_)
    if (c.comm)
      ncclCommAbort(c.comm);
  for (cudaEvent_t e : receives_)
    if (e)
      cudaEventDestroy(e);
  for (ncclComm_t axis : axisNccl_)
    if (axis)
      ncclCommAbort(axis);
  if (scratch_)
    cudaFree(scratch_);
  if (nccl_)
    ncclCommAbort(nccl_);
  for (const Pending &p : pending_)
    cudaEventDestroy(p.event);
  for (cudaEvent_t event : spareEvents_)
    cudaEventDestroy(event);
  if (staging_)
    cudaFree(staging_);
  if (stream_)
    cudaStreamDestroy(stream_);
}

} // namespace
} // namespace comm
} // namespace tgc

extern "C" tgc::Communicator *
tgc_comm_create_nccl(const tgc::comm::detail::NcclRequest *request) {
  auto comm = std::make_unique<tgc::comm::NcclCommunicator>();
  try {
    comm->start(*request);
  } catch (const tgc::Error &e) {
    comm->announceFailedStart(e.what());
    throw;
  }
  return comm.release();
}

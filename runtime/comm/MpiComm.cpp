//===- MpiComm.cpp - Host-memory collectives over MPI -----------*- C++ -*-===//
//
// The CPU backend, and MPI start-up for the NCCL backend's unique id. Built
// with MPI only when CMake found it (TGC_HAVE_MPI); without, the functions
// below say so, so a one-process run never needs MPI.
//
// MPI_COMM_WORLD gets MPI_ERRORS_RETURN, so a failed call is a tgc::Error on
// the rank that saw it (the caller then calls abortAll). A watchdog thread
// bounds each collective by TGC_MPI_TIMEOUT seconds: a peer that hangs
// without dying (which no launcher notices) ends the run instead of
// stalling it. A peer that dies is the launcher's to notice: mpirun ends the
// job when a process exits without MPI_Finalize.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Backend.h"

#include "runtime/core/Error.h"

#ifdef TGC_HAVE_MPI
// The C API only: Open MPI's and MPICH's C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "runtime/core/DType.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace tgc {
namespace comm {
namespace detail {

#ifndef TGC_HAVE_MPI

static std::string builtWithout() {
  return "this executable's runtime was built without MPI (install "
         "libopenmpi-dev, e.g. with scripts/setup.sh, and rebuild tgc)";
}

bool mpiCompiled() { return false; }
void mpiStart(LaunchInfo &) { throw Error(builtWithout()); }
bool mpiStarted() { return false; }
void mpiBroadcast(void *, int64_t, int) { throw Error(builtWithout()); }
void mpiAbort(int) noexcept {}
void mpiFinish() noexcept {}

Communicator *createMpiCommunicator(const LaunchInfo &launch) {
  throw Error(launch.sizeVar + "=" + std::to_string(launch.worldSize) +
              " asks for " + std::to_string(launch.worldSize) +
              " processes, but " + builtWithout());
}

#else // TGC_HAVE_MPI

//===----------------------------------------------------------------------===//
// Start-up
//===----------------------------------------------------------------------===//

static std::atomic<bool> started{false};
static bool initializedHere = false;
/// MPI took MPI_THREAD_SERIALIZED (a progress thread may test transfers);
/// true when the caller initialised MPI (then it is on them).
static bool serialized = true;

static std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

static void check(int code, const std::string &what) {
  if (code != MPI_SUCCESS)
    throw Error("mpi " + what + " failed: " + mpiErrorText(code));
}

bool mpiCompiled() { return true; }

void mpiStart(LaunchInfo &launch) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Serialized: the main thread makes the calls, a pipeline's progress
    // thread tests its transfers in between (one at a time, under a lock),
    // and the watchdog may call MPI_Abort while the main thread waits in a
    // collective.
    int provided = 0;
    int code =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS)
      throw Error(std::string("MPI_Init failed under ") +
                  launcherName(launch.launcher) + ": " + mpiErrorText(code));
    initializedHere = true;
    serialized = provided >= MPI_THREAD_SERIALIZED;
  }
  started = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (size != launch.worldSize)
    throw Error(
        launch.sizeVar + "=" + std::to_string(launch.worldSize) +
        " but MPI_COMM_WORLD has " + std::to_string(size) +
        " process(es): this MPI library cannot start from " +
        launcherName(launch.launcher) +
        (launch.launcher == Launcher::Slurm
             ? " (try srun --mpi=pmix, or mpirun inside the allocation)"
             : " (use the mpirun of the MPI the runtime was built with)"));
  if (rank != launch.rank)
    throw Error(launch.rankVar + "=" + std::to_string(launch.rank) +
                " but MPI_Comm_rank gives " + std::to_string(rank));

  // The node's ranks share memory: their order there is the local rank.
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                            MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (launch.localRank < 0)
    launch.localRank = local;
}

bool mpiStarted() { return started; }

static constexpr int64_t kMaxChunk = int64_t(1) << 30; // MPI counts are int

void mpiBroadcast(void *data, int64_t bytes, int root) {
  char *p = static_cast<char *>(data);
  for (int64_t done = 0; done < bytes; done += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
    check(MPI_Bcast(p + done, n, MPI_BYTE, root, MPI_COMM_WORLD),
          "broadcast of " + std::to_string(bytes) + " bytes from rank " +
              std::to_string(root));
  }
}

void mpiAbort(int code) noexcept {
  if (started)
    MPI_Abort(MPI_COMM_WORLD, code);
}

void mpiFinish() noexcept {
  if (!started)
    return;
  started = false;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initializedHere && !finalized)
    MPI_Finalize();
}

//===----------------------------------------------------------------------===//
// MpiCommunicator
//===----------------------------------------------------------------------===//

namespace {

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(const LaunchInfo &launchInfo, double timeoutSeconds)
      : Communicator(CommBackend::Mpi), timeoutSeconds_(timeoutSeconds) {
    launch = launchInfo;
    if (timeoutSeconds_ > 0)
      watchdog_ = std::thread([this] { watch(); });
  }
  ~MpiCommunicator() override {
    stopProgress();
    stopWatchdog();
  }

  void allReduceFloats(float *data, int64_t count, ReduceOp op) override {
    allReduceAxis(-1, data, count, DType::F32, op, nullptr);
  }

  void allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                 void *stream) override {
    allReduceAxis(-1, data, count, dtype, op, stream);
  }

  void allReduceAxis(int axis, void *data, int64_t count, DType dtype,
                     ReduceOp op, void *stream) override {
    checkHostFloats(dtype, stream);
    std::lock_guard<std::mutex> lock(mpiMutex_);
    Deadline deadline(*this, "all-reduce");
    float *floats = static_cast<float *>(data);
    // A reduce-scatter in rank order, then an all-gather: each element is
    // summed as tg.reduce_scatter sums it, so data parallel and ZeRO take
    // bit-identical steps.
    int64_t size = axisSize(axis);
    int64_t piece = (count + size - 1) / size;
    std::vector<float> padded(piece * size, 0.0f), mine(piece);
    std::copy(floats, floats + count, padded.begin());
    std::string what =
        "all-reduce of " + std::to_string(count) + " floats" + axisText(axis);
    sumInRankOrder(padded.data(), mine.data(), piece, axis, what);
    check(MPI_Allgather(mine.data(), messageBytes(piece * 4, "all-reduce"),
                        MPI_BYTE, padded.data(),
                        messageBytes(piece * 4, "all-reduce"), MPI_BYTE,
                        axisComm(axis)),
          what);
    std::copy(padded.begin(), padded.begin() + count, floats);
    if (op == ReduceOp::Mean) {
      // Division, not a multiplication by 1/n: the mean of n equal values
      // is that value, as in the one-process run.
      float n = static_cast<float>(axisSize(axis));
      for (int64_t i = 0; i < count; ++i)
        floats[i] /= n;
    }
  }

  void splitMesh() override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    freeAxisComms();
    for (size_t a = 0; a < meshSizes.size(); ++a) {
      // The processes that share every other coordinate form one group,
      // ordered by their coordinate on the axis.
      int color = 0;
      for (size_t b = 0; b < meshSizes.size(); ++b)
        if (b != a)
          color = color * static_cast<int>(meshSizes[b]) + meshCoords[b];
      MPI_Comm axis;
      check(MPI_Comm_split(MPI_COMM_WORLD, color, meshCoords[a], &axis),
            "MPI_Comm_split for mesh axis " + std::to_string(a));
      MPI_Comm_set_errhandler(axis, MPI_ERRORS_RETURN);
      axisComms_.push_back(axis);
    }
  }

  void allGather(int axis, const void *in, void *out, int64_t count,
                 DType dtype, void *stream, int64_t blocks) override {
    if (stream)
      throw Error("an MPI communicator gathers host memory: the stream "
                  "must be null");
    int64_t bytes = count * dtypeSize(dtype), size = axisSize(axis);
    int pieceBytes = messageBytes(bytes, "all-gather");
    std::vector<char> scratch(blocks > 1 ? bytes * size : 0);
    void *gathered = blocks > 1 ? scratch.data() : out;
    {
      std::lock_guard<std::mutex> lock(mpiMutex_);
      Deadline deadline(*this, "all-gather");
      check(MPI_Allgather(in, pieceBytes, MPI_BYTE, gathered, pieceBytes,
                          MPI_BYTE, axisComm(axis)),
            "all-gather of " + std::to_string(bytes) + " bytes" +
                axisText(axis));
    }
    if (blocks > 1)
      interleave(scratch.data(), static_cast<char *>(out), size, blocks,
                 bytes / blocks, /*toRunMajor=*/true);
  }

  void reduceScatter(int axis, const void *in, void *out, int64_t count,
                     DType dtype, ReduceOp op, void *stream,
                     int64_t blocks) override {
    checkHostFloats(dtype, stream);
    int64_t size = axisSize(axis);
    int n = messageBytes(count * 4, "reduce-scatter") / 4;
    std::vector<char> scratch(blocks > 1 ? count * size * 4 : 0);
    const void *source = in;
    if (blocks > 1) {
      interleave(static_cast<const char *>(in), scratch.data(), size, blocks,
                 count / blocks * 4, /*toRunMajor=*/false);
      source = scratch.data();
    }
    {
      std::lock_guard<std::mutex> lock(mpiMutex_);
      Deadline deadline(*this, "reduce-scatter");
      sumInRankOrder(static_cast<const float *>(source),
                     static_cast<float *>(out), n, axis,
                     "reduce-scatter of " + std::to_string(count) + " floats" +
                         axisText(axis));
    }
    if (op == ReduceOp::Mean) {
      float *floats = static_cast<float *>(out);
      for (int64_t i = 0; i < count; ++i)
        floats[i] /= static_cast<float>(size);
    }
  }

  /// `in` holds one piece of `piece` floats per process along `axis`, in
  /// order; `out` gets this process's piece summed over the processes in
  /// rank order ((x0 + x1) + x2 ...), whatever MPI's own algorithms would
  /// do: every reduction of the same values rounds the same way.
  void sumInRankOrder(const float *in, float *out, int64_t piece, int axis,
                      const std::string &what) {
    int64_t size = axisSize(axis);
    std::vector<float> pieces(piece * size);
    int bytes = messageBytes(piece * 4, "reduction");
    check(MPI_Alltoall(in, bytes, MPI_BYTE, pieces.data(), bytes, MPI_BYTE,
                       axisComm(axis)),
          what);
    std::copy(pieces.begin(), pieces.begin() + piece, out);
    for (int64_t r = 1; r < size; ++r)
      for (int64_t i = 0; i < piece; ++i)
        out[i] += pieces[r * piece + i];
  }

  double allReduceSum(double value) override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    Deadline deadline(*this, "all-reduce");
    check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM,
                        MPI_COMM_WORLD),
          "all-reduce of a double");
    return value;
  }

  void broadcast(void *data, int64_t bytes, int root) override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    Deadline deadline(*this, "broadcast");
    mpiBroadcast(data, bytes, root);
  }

  void send(int axis, int peer, const void *data, int64_t bytes,
            int tag) override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    MPI_Request request;
    check(MPI_Isend(data, messageBytes(bytes, "send"), MPI_BYTE, peer, tag,
                    axisComm(axis), &request),
          "send of " + std::to_string(bytes) + " bytes to coordinate " +
              std::to_string(peer) + axisText(axis));
    addTransfer(request, /*send=*/true);
  }

  int postRecv(int axis, int peer, void *data, int64_t bytes,
               int tag) override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    MPI_Request request;
    check(MPI_Irecv(data, messageBytes(bytes, "receive"), MPI_BYTE, peer, tag,
                    axisComm(axis), &request),
          "receive of " + std::to_string(bytes) + " bytes from coordinate " +
              std::to_string(peer) + axisText(axis));
    addTransfer(request, /*send=*/false);
    ++receivesToWait_;
    return static_cast<int>(transfers_.size()) - 1;
  }

  void waitRecv(int handle) override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    if (handle < 0 || handle >= static_cast<int>(transfers_.size()))
      throw Error("no receive " + std::to_string(handle) + " was posted");
    Deadline deadline(*this, "receive");
    check(MPI_Wait(&transfers_[handle], MPI_STATUS_IGNORE), "receive");
    --receivesToWait_;
  }

  void waitSends() override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    if (transfers_.empty())
      return;
    Deadline deadline(*this, "send");
    for (size_t i = 0; i < transfers_.size(); ++i)
      if (isSend_[i])
        check(MPI_Wait(&transfers_[i], MPI_STATUS_IGNORE), "send");
    // Handles end once nothing is in flight and every receive was waited
    // for (the progress thread completes requests the main thread has yet
    // to wait for).
    if (receivesToWait_ == 0 &&
        std::all_of(transfers_.begin(), transfers_.end(),
                    [](MPI_Request r) { return r == MPI_REQUEST_NULL; })) {
      transfers_.clear();
      isSend_.clear();
    }
  }

  void barrier() override {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    Deadline deadline(*this, "barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
  }

  void abortPeers(const std::string &) noexcept override {
    // MPI_Abort, which Comm.cpp calls next, reaches every rank.
  }

  void finalize() override {
    stopProgress();
    stopWatchdog();
    freeAxisComms();
  }

private:
  // Point-to-point transfers (a pipeline's stages). Over TCP a large
  // message moves only while both of its ends are inside MPI (its
  // rendezvous): a stage computing its next chunk would hold its peer
  // back. So a progress thread tests the pending transfers every 0.5 ms
  // between the main thread's calls, each MPI call under mpiMutex_.
  std::mutex mpiMutex_;
  std::vector<MPI_Request> transfers_; ///< MPI_REQUEST_NULL once done
  std::vector<char> isSend_;
  int receivesToWait_ = 0;
  std::thread progress_;
  std::condition_variable progressWake_;
  bool progressStop_ = false;

  /// Records a started transfer (under mpiMutex_) and wakes the thread.
  void addTransfer(MPI_Request request, bool send) {
    transfers_.push_back(request);
    isSend_.push_back(send);
    if (!serialized)
      return;
    if (!progress_.joinable())
      progress_ = std::thread([this] { progressLoop(); });
    progressWake_.notify_one();
  }

  void progressLoop() {
    std::unique_lock<std::mutex> lock(mpiMutex_);
    std::vector<int> done;
    while (!progressStop_) {
      bool pending =
          std::any_of(transfers_.begin(), transfers_.end(),
                      [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
      if (!pending) {
        progressWake_.wait(lock);
        continue;
      }
      // Errors surface in the main thread's wait.
      done.resize(transfers_.size());
      int count = 0;
      MPI_Testsome(static_cast<int>(transfers_.size()), transfers_.data(),
                   &count, done.data(), MPI_STATUSES_IGNORE);
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      lock.lock();
    }
  }

  void stopProgress() {
    if (!progress_.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mpiMutex_);
      progressStop_ = true;
    }
    progressWake_.notify_all();
    progress_.join();
  }

  MPI_Comm axisComm(int axis) const {
    return axis < 0 ? MPI_COMM_WORLD : axisComms_[axis];
  }
  int64_t axisSize(int axis) const {
    return axis < 0 ? launch.worldSize : meshSizes[axis];
  }
  std::string axisText(int axis) const {
    return axis < 0 ? std::string() : " over mesh axis " + std::to_string(axis);
  }
  static void checkHostFloats(DType dtype, void *stream) {
    if (stream)
      throw Error("an MPI communicator reduces host memory: the stream "
                  "must be null");
    if (dtype != DType::F32)
      throw Error("an MPI communicator reduces F32 host buffers only");
  }
  /// MPI counts are ints: one message holds at most 2 GiB.
  static int messageBytes(int64_t bytes, const char *what) {
    if (bytes > kMaxChunk)
      throw Error(std::string("mpi ") + what + " of " + std::to_string(bytes) +
                  " per process: more than one message holds");
    return static_cast<int>(bytes);
  }
  /// [pieces][blocks][run] <-> [blocks][pieces][run] (bytes).
  static void interleave(const char *from, char *to, int64_t pieces,
                         int64_t blocks, int64_t run, bool toRunMajor) {
    for (int64_t p = 0; p < pieces; ++p)
      for (int64_t b = 0; b < blocks; ++b) {
        int64_t pieceMajor = (p * blocks + b) * run;
        int64_t runMajor = (b * pieces + p) * run;
        if (toRunMajor)
          std::memcpy(to + runMajor, from + pieceMajor, run);
        else
          std::memcpy(to + pieceMajor, from + runMajor, run);
      }
  }
  void freeAxisComms() {
    for (MPI_Comm &axis : axisComms_)
      if (axis != MPI_COMM_NULL)
        MPI_Comm_free(&axis);
    axisComms_.clear();
  }

  std::vector<MPI_Comm> axisComms_;
  /// Marks the collective the main thread waits in, for the watchdog.
  class Deadline {
  public:
    Deadline(MpiCommunicator &comm, const char *what) : comm_(comm) {
      comm_.operation_ = what;
      comm_.since_ = nowNanoseconds();
    }
    ~Deadline() { comm_.since_ = 0; }

  private:
    MpiCommunicator &comm_;
  };

  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wakeup_.wait_for(lock, std::chrono::milliseconds(200));
      int64_t since = since_;
      if (stopping_ || since == 0 ||
          (nowNanoseconds() - since) * 1e-9 < timeoutSeconds_)
        continue;
      lock.unlock();
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", timeoutSeconds_);
      abortAll(this, std::string("mpi ") + operation_.load() +
                         " did not complete within " + seconds +
                         " s (TGC_MPI_TIMEOUT): another rank died, hangs, or "
                         "spent that long elsewhere");
    }
  }

  void stopWatchdog() {
    if (!watchdog_.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wakeup_.notify_all();
    watchdog_.join();
  }

  double timeoutSeconds_;
  std::atomic<const char *> operation_{""};
  std::atomic<int64_t> since_{0}; ///< 0: not in a collective
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable wakeup_;
  bool stopping_ = false;
};

} // namespace

Communicator *createMpiCommunicator(const LaunchInfo &launchInfo) {
  double timeout = timeoutFromEnvironment("TGC_MPI_TIMEOUT", 300);
  LaunchInfo launch = launchInfo;
  mpiStart(launch);
  return new MpiCommunicator(launch, timeout);
}

#endif // TGC_HAVE_MPI

} // namespace detail
} // namespace comm
} // namespace tgc

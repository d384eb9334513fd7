//===- Nccl.cpp - NCCL over MPI for the host CUDA runtime -------*- C++ -*-===//
//
// The NCCL functions that runtime/comm/NcclComm.cpp calls (and a few more),
// with nccl.h's exact signatures, for processes launched by `mpirun` on a
// host without GPUs: each collective checks its arguments as NCCL does, then
// enqueues an MPI exchange on the caller's stream (Runtime.h's enqueue, or
// enqueueAsync for sends and receives), so that it runs when the host
// synchronizes, in stream order, like the kernel NCCL would launch. Device
// memory is host memory, so MPI reads and writes the buffers directly.
//
// What is emulated, and how:
//  - A communicator is a pair of MPI communicators over its ranks: `data`
//    carries the stream work, `control` the host-side calls (ncclCommSplit),
//    so that a split never matches a collective still queued on a stream (as
//    NCCL's bootstrap network is apart from its channels).
//  - ncclCommInitRank joins the ranks that hold one unique id: each sends
//    its rank to the process that made the id (its world rank is in the id),
//    which answers with the id's world ranks in rank order; the ranks then
//    build the communicator with MPI_Comm_create_group, which is collective
//    over them only, so a communicator of some of MPI_COMM_WORLD's processes
//    works. (The join's messages use tags 4096 to 32095 on MPI_COMM_WORLD,
//    which the runtime's MPI backend uses for collectives only.) A one-rank
//    communicator needs no MPI at all.
//  - Reductions are deterministic and identical bit for bit on every rank:
//    element i is reduced by one rank (an MPI_Alltoall hands it every rank's
//    value), folding the values left to right in rank order
//    (((x0 op x1) op x2) ...), and an MPI_Allgather hands the result to the
//    others. ncclBfloat16 and ncclFloat16 are widened to float, folded in
//    float and rounded to nearest even once; ncclAvg folds a sum and divides
//    it by the number of ranks (integers: truncating). Integer sums and
//    products wrap. MPI's own reductions are not used: their order depends
//    on the algorithm MPI picks.
//  - In place (sendbuff == recvbuff, or NCCL's in-place offsets for
//    all-gather and reduce-scatter) works: every collective copies what it
//    sends before it writes anything.
//  - The non-blocking config (ncclConfig_t::blocking = 0) is accepted, but
//    every call completes before it returns: no call here returns
//    ncclInProgress, and ncclCommGetAsyncError reports ncclSuccess unless an
//    MPI call of a collective failed (then ncclSystemError; the
//    communicator's later collectives do nothing).
//  - Sends and receives complete asynchronously, as NCCL's kernels wait for
//    a peer beside other streams' work: the stream work posts MPI_Isend and
//    MPI_Irecv and leaves its stream busy (Runtime.h's enqueueAsync) until
//    MPI_Testall says they completed, and meanwhile the host runs the other
//    streams' work. So a send queued on one stream and a receive from the
//    same peer on another complete whichever stream the host synchronizes
//    first, on both ranks, as on GPUs. (Messages over MPI's eager limit,
//    about 64 KiB on TCP, complete only once the peer receives.)
//  - ncclGroupStart/End: the group's operations run as one unit of stream
//    work on the first operation's stream (the others are joined to it with
//    events), sends and receives posted non-blocking and waited for
//    together, so an exchange in either order completes. A group of sends
//    and receives only completes asynchronously, as one of them alone does;
//    a group with a collective blocks as a collective does.
//  - Captured into a CUDA graph, a send or receive blocks its node until it
//    completes: a replay runs its nodes one at a time.
//
// What is not:
//  - No GPU-direct transport and no timing, and collectives do not overlap
//    other work: a collective runs on the host thread that synchronizes,
//    and blocks it until every peer's host has synchronized past the same
//    collective. A rank that blocks in something else before it
//    synchronizes (a host-side MPI call) can thus deadlock where a GPU
//    would have run the collective on its own. Sends and receives overlap
//    the other streams' work, but make progress only while the host
//    synchronizes (cudaStreamQuery and cudaEventQuery poll nothing).
//  - The collectives of one communicator execute in the order the host
//    drains its streams, so a program must issue them in the same order on
//    every rank, as NCCL requires.
//  - Bootstrap without MPI (NCCL's sockets): more than one rank needs
//    mpirun. The process that called ncclGetUniqueId must be one of the
//    ranks (NCCL lets any process make the id).
//  - fp8 reductions, ncclRedOpCreatePreMulSum, ncclCommInitAll,
//    ncclCommShrink, buffer registration, and sends and receives on a
//    one-rank communicator without MPI.
//  - ncclCommAbort cannot interrupt a collective that waits in MPI for a
//    dead peer, nor a send or receive in flight; abortAll's MPI_Abort ends
//    that. The host runtime runs work (and polls work in flight) under its
//    lock, so meanwhile other threads' CUDA calls wait too (a watchdog's
//    cudaEventQuery): a dead peer is mpirun's to notice.
//
// MPI calls are made from the thread that synchronizes. The runtime
// initialises MPI with MPI_THREAD_FUNNELED, so that must be the main thread:
// a collective that a second thread drains, or a send or receive that it
// waits for, is a fatal() error.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/Runtime.h"

// The C API only: Open MPI's and MPICH's C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <unistd.h>
#include <vector>

/// The communicator behind an ncclComm_t.
struct ncclComm {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  bool blocking = true;
  /// The collectives, in stream order; MPI_COMM_NULL for one rank.
  MPI_Comm data = MPI_COMM_NULL;
  /// The host-side calls (split); MPI_COMM_NULL for one rank without MPI.
  MPI_Comm control = MPI_COMM_NULL;
  std::atomic<ncclResult_t> asyncError{ncclSuccess};
  std::atomic<bool> finalized{false};
  std::atomic<bool> aborted{false};
  std::atomic<bool> destroyed{false};
  /// Enqueued and not yet completed (a graph replays its work, so it may go
  /// below zero): ncclCommFinalize drains the device only when this is
  /// positive.
  std::atomic<int64_t> queued{0};
  std::mutex mutex; // guards asyncMessage
  std::string asyncMessage;
};

namespace {

using CommPtr = std::shared_ptr<ncclComm>;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::mutex errorMutex; // guards lastError
std::string lastError;

bool debugWarnings() {
  const char *level = std::getenv("NCCL_DEBUG");
  if (!level)
    return false;
  std::string text(level);
  for (char &c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text == "WARN" || text == "INFO" || text == "TRACE";
}

/// Records `message` for ncclGetLastError (and prints it under
/// NCCL_DEBUG=WARN, as NCCL does) and returns `code`.
ncclResult_t fail(ncclResult_t code, const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    lastError = message;
  }
  if (debugWarnings()) {
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    std::fprintf(stderr, "%s:%d NCCL WARN %s\n", host,
                 static_cast<int>(getpid()), message.c_str());
  }
  return code;
}

/// A collective's MPI call failed: the communicator is broken from now on,
/// as after a network error under NCCL.
void failAsync(ncclComm &comm, ncclResult_t code, const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    if (comm.asyncError == ncclSuccess) {
      comm.asyncMessage = message;
      comm.asyncError = code;
    }
  }
  fail(code, message);
}

std::string pointerText(const void *p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

/// Thrown inside a collective's stream work when an MPI call fails.
struct MpiFailure {
  std::string what;
};

void checkMpi(int code, const char *call) {
  if (code != MPI_SUCCESS)
    throw MpiFailure{std::string(call) + " failed: " + mpiErrorText(code)};
}

bool mpiUsable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return false;
  MPI_Finalized(&finalized);
  return !finalized;
}

/// MPI_THREAD_FUNNELED (the runtime's level) allows MPI calls from the main
/// thread only: a collective that another thread drains would corrupt MPI.
bool onMpiThread() {
  int provided = MPI_THREAD_SINGLE, isMain = 0;
  MPI_Query_thread(&provided);
  if (provided >= MPI_THREAD_SERIALIZED)
    return true;
  MPI_Is_thread_main(&isMain);
  return isMain != 0;
}

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

/// The live communicators, so that a destroyed or made-up ncclComm_t is an
/// error rather than a crash. Never destroyed: a watchdog thread may query a
/// communicator while static destructors run.
std::mutex registryMutex;
std::map<const ncclComm *, CommPtr> &registry() {
  static auto *comms = new std::map<const ncclComm *, CommPtr>();
  return *comms;
}

CommPtr lookup(const ncclComm *comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry().find(comm);
  return it == registry().end() ? nullptr : it->second;
}

ncclComm_t publish(const CommPtr &comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[comm.get()] = comm;
  return comm.get();
}

CommPtr retire(const ncclComm *comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry().find(comm);
  if (it == registry().end())
    return nullptr;
  CommPtr found = it->second;
  registry().erase(it);
  return found;
}

int currentDevice() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    device = 0;
  return device;
}

ncclResult_t checkConfig(const char *function, const ncclConfig_t *config) {
  if (!config)
    return ncclSuccess;
  if (config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument,
                std::string(function) +
                    ": the ncclConfig_t was not initialized with "
                    "NCCL_CONFIG_INITIALIZER (magic " +
                    std::to_string(config->magic) + ")");
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 &&
      config->blocking != 1)
    return fail(ncclInvalidArgument,
                std::string(function) + ": config blocking is " +
                    std::to_string(config->blocking) + ", not 0 or 1");
  return ncclSuccess;
}

bool blockingFrom(const ncclConfig_t *config, bool inherited) {
  if (!config || config->blocking == NCCL_CONFIG_UNDEF_INT)
    return inherited;
  return config->blocking != 0;
}

/// What ncclGetUniqueId puts in the id's 128 bytes.
struct UniqueId {
  char magic[16];
  uint64_t nonce;
  /// The MPI_COMM_WORLD rank of the process that made the id; -1 without
  /// MPI.
  int32_t creator;
};
static_assert(sizeof(UniqueId) <= sizeof(ncclUniqueId),
              "the stand-in's id must fit NCCL's");
constexpr char kIdMagic[16] = "tgc-simt-nccl";

/// A rank's part in joining an id's communicator, sent to the id's maker.
struct JoinRequest {
  uint64_t nonce;
  int32_t nranks;
  int32_t rank;
};

/// The maker's answer: ncclSuccess and the world ranks in rank order, or an
/// error every rank reports.
struct JoinReplyHeader {
  int32_t result;
  char message[256];
};

/// The tag of an id's join messages on MPI_COMM_WORLD (MPI_TAG_UB is at
/// least 32767): sequential joins of ids from one maker use different tags.
int joinTag(uint64_t nonce) { return 4096 + static_cast<int>(nonce % 28000); }

/// The world ranks of an id's communicator, in rank order, or an error.
ncclResult_t joinRanks(const UniqueId &id, int nranks, int rank,
                       std::vector<int> &worldOf) {
  const char *function = "ncclCommInitRank";
  int worldRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  int tag = joinTag(id.nonce);
  auto mpiFailed = [&](int code, const char *call) {
    return fail(ncclSystemError,
                std::string(function) + ": " + call + " while joining rank " +
                    std::to_string(rank) + " of " + std::to_string(nranks) +
                    " failed: " + mpiErrorText(code));
  };
  std::vector<char> reply(sizeof(JoinReplyHeader) + sizeof(int) * nranks);
  JoinReplyHeader header;
  std::memset(&header, 0, sizeof(header));

  if (worldRank != id.creator) {
    JoinRequest request{id.nonce, nranks, rank};
    if (int code = MPI_Send(&request, sizeof(request), MPI_BYTE, id.creator,
                            tag, MPI_COMM_WORLD))
      return mpiFailed(code, "MPI_Send");
    // The maker's nranks may differ from ours (then it says so).
    MPI_Status status;
    int bytes = 0;
    if (int code = MPI_Probe(id.creator, tag, MPI_COMM_WORLD, &status))
      return mpiFailed(code, "MPI_Probe");
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    reply.resize(std::max<size_t>(bytes, sizeof(header)));
    if (int code = MPI_Recv(reply.data(), bytes, MPI_BYTE, id.creator, tag,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE))
      return mpiFailed(code, "MPI_Recv");
    std::memcpy(&header, reply.data(), sizeof(header));
    header.message[sizeof(header.message) - 1] = 0;
    if (header.result != ncclSuccess)
      return fail(static_cast<ncclResult_t>(header.result), header.message);
    if (reply.size() != sizeof(header) + sizeof(int) * nranks)
      return fail(ncclInternalError,
                  std::string(function) + ": the join reply holds " +
                      std::to_string(reply.size()) + " bytes, not " +
                      std::to_string(sizeof(header) + sizeof(int) * nranks));
    worldOf.resize(nranks);
    std::memcpy(worldOf.data(), reply.data() + sizeof(header),
                sizeof(int) * nranks);
    return ncclSuccess;
  }

  // The maker: one request from each other rank, checked as NCCL's
  // bootstrap would find them.
  worldOf.assign(nranks, -1);
  worldOf[rank] = worldRank;
  std::string problem;
  std::vector<int> senders;
  for (int i = 1; i < nranks; ++i) {
    JoinRequest request;
    MPI_Status status;
    if (int code = MPI_Recv(&request, sizeof(request), MPI_BYTE, MPI_ANY_SOURCE,
                            tag, MPI_COMM_WORLD, &status))
      return mpiFailed(code, "MPI_Recv");
    senders.push_back(status.MPI_SOURCE);
    std::string who = "world rank " + std::to_string(status.MPI_SOURCE);
    if (!problem.empty())
      continue;
    if (request.nonce != id.nonce)
      problem = who + " joined with another unique id (two ids from one "
                      "process joined at once)";
    else if (request.nranks != nranks)
      problem = who + " passed nranks=" + std::to_string(request.nranks) +
                ", world rank " + std::to_string(worldRank) +
                " nranks=" + std::to_string(nranks);
    else if (worldOf[request.rank] >= 0)
      problem = "world ranks " + std::to_string(worldOf[request.rank]) +
                " and " + std::to_string(status.MPI_SOURCE) +
                " both passed rank=" + std::to_string(request.rank);
    else
      worldOf[request.rank] = status.MPI_SOURCE;
  }
  header.result = problem.empty() ? ncclSuccess : ncclInvalidUsage;
  std::string message = std::string(function) + ": " + problem;
  std::snprintf(header.message, sizeof(header.message), "%s", message.c_str());
  std::memcpy(reply.data(), &header, sizeof(header));
  std::memcpy(reply.data() + sizeof(header), worldOf.data(),
              sizeof(int) * nranks);
  for (int sender : senders)
    if (int code = MPI_Send(reply.data(), static_cast<int>(reply.size()),
                            MPI_BYTE, sender, tag, MPI_COMM_WORLD))
      return mpiFailed(code, "MPI_Send");
  if (!problem.empty())
    return fail(ncclInvalidUsage, message);
  return ncclSuccess;
}

/// `control`'s duplicate for the stream work; both return MPI errors.
ncclResult_t attachMpi(ncclComm &comm, MPI_Comm control, const char *function) {
  comm.control = control;
  MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  MPI_Comm_rank(control, &comm.rank);
  MPI_Comm_size(control, &comm.nranks);
  if (int code = MPI_Comm_dup(control, &comm.data))
    return fail(ncclSystemError,
                std::string(function) +
                    ": MPI_Comm_dup failed: " + mpiErrorText(code));
  MPI_Comm_set_errhandler(comm.data, MPI_ERRORS_RETURN);
  return ncclSuccess;
}

/// Frees the communicator's MPI side where MPI allows it now: the main
/// thread, MPI not finalized. Otherwise MPI_Finalize or the exit does.
void releaseMpi(ncclComm &comm) {
  if (!mpiUsable() || !onMpiThread())
    return;
  if (comm.data != MPI_COMM_NULL)
    MPI_Comm_free(&comm.data);
  if (comm.control != MPI_COMM_NULL)
    MPI_Comm_free(&comm.control);
}

//===----------------------------------------------------------------------===//
// Data types and reductions
//===----------------------------------------------------------------------===//

size_t typeSize(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

const char *typeName(ncclDataType_t type) {
  static const char *names[] = {
      "ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
      "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return type >= 0 && type < ncclNumTypes ? names[type] : "?";
}

const char *opName(ncclRedOp_t op) {
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < ncclNumOps ? names[op] : "?";
}

/// How a type is stored and folded: `Acc` is what the fold computes in.
template <typename T> struct Plain {
  using Storage = T;
  using Acc = T;
  static Acc load(Storage v) { return v; }
  static Storage store(Acc v) { return v; }
};

struct Half {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage v) {
    __half_raw raw;
    raw.x = v;
    return __half2float(__half(raw));
  }
  static Storage store(Acc v) {
    __half_raw raw = __float2half_rn(v);
    return raw.x;
  }
};

struct Bfloat16 {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage v) {
    __nv_bfloat16_raw raw;
    raw.x = v;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  static Storage store(Acc v) {
    __nv_bfloat16_raw raw = __float2bfloat16_rn(v);
    return raw.x;
  }
};

template <typename T> T combine(ncclRedOp_t op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case ncclProd:
      return a * b;
    case ncclMax:
      return std::fmax(a, b);
    case ncclMin:
      return std::fmin(a, b);
    default: // ncclSum, ncclAvg
      return a + b;
    }
  } else {
    // Sums and products wrap, as on the device (signed overflow would be
    // undefined in C++).
    using U = std::make_unsigned_t<T>;
    switch (op) {
    case ncclProd:
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    }
  }
}

/// `pieces` holds `nranks` runs of `count` values, run r from rank r; `out`
/// gets ((v0 op v1) op v2) ... per element, rounded once to the storage
/// type.
template <typename Type>
void foldInRankOrder(const char *pieces, char *out, size_t count, int nranks,
                     ncclRedOp_t op) {
  using Storage = typename Type::Storage;
  using Acc = typename Type::Acc;
  const Storage *in = reinterpret_cast<const Storage *>(pieces);
  std::vector<Acc> acc(count);
  for (size_t i = 0; i < count; ++i)
    acc[i] = Type::load(in[i]);
  for (int r = 1; r < nranks; ++r) {
    const Storage *run = in + static_cast<size_t>(r) * count;
    for (size_t i = 0; i < count; ++i)
      acc[i] = combine<Acc>(op, acc[i], Type::load(run[i]));
  }
  if (op == ncclAvg)
    for (size_t i = 0; i < count; ++i)
      acc[i] = acc[i] / static_cast<Acc>(nranks);
  Storage *result = reinterpret_cast<Storage *>(out);
  for (size_t i = 0; i < count; ++i)
    result[i] = Type::store(acc[i]);
}

using FoldFn = void (*)(const char *, char *, size_t, int, ncclRedOp_t);

/// Null for the types that are not reduced here (fp8).
FoldFn foldFor(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
    return foldInRankOrder<Plain<int8_t>>;
  case ncclUint8:
    return foldInRankOrder<Plain<uint8_t>>;
  case ncclInt32:
    return foldInRankOrder<Plain<int32_t>>;
  case ncclUint32:
    return foldInRankOrder<Plain<uint32_t>>;
  case ncclInt64:
    return foldInRankOrder<Plain<int64_t>>;
  case ncclUint64:
    return foldInRankOrder<Plain<uint64_t>>;
  case ncclFloat16:
    return foldInRankOrder<Half>;
  case ncclFloat32:
    return foldInRankOrder<Plain<float>>;
  case ncclFloat64:
    return foldInRankOrder<Plain<double>>;
  case ncclBfloat16:
    return foldInRankOrder<Bfloat16>;
  default:
    return nullptr;
  }
}

//===----------------------------------------------------------------------===//
// MPI exchanges, in messages of at most 1 GiB (MPI counts are ints)
//===----------------------------------------------------------------------===//

constexpr size_t kMaxMessage = size_t(1) << 30;

/// `in` holds nranks pieces of `count` elements (piece r for rank r);
/// `out` gets this rank's piece folded over the ranks. `in` and `out` do
/// not overlap.
void reduceScatterPieces(const ncclComm &comm, const char *in, char *out,
                         size_t count, size_t size, FoldFn fold,
                         ncclRedOp_t op) {
  size_t n = static_cast<size_t>(comm.nranks);
  size_t chunk = std::max<size_t>(1, kMaxMessage / size);
  std::vector<char> packed, gathered;
  for (size_t first = 0; first < count; first += chunk) {
    size_t m = std::min(chunk, count - first), bytes = m * size;
    const char *source = in;
    if (m != count) {
      packed.resize(n * bytes);
      for (size_t r = 0; r < n; ++r)
        std::memcpy(packed.data() + r * bytes, in + (r * count + first) * size,
                    bytes);
      source = packed.data();
    }
    gathered.resize(n * bytes);
    checkMpi(MPI_Alltoall(source, static_cast<int>(bytes), MPI_BYTE,
                          gathered.data(), static_cast<int>(bytes), MPI_BYTE,
                          comm.data),
             "MPI_Alltoall");
    fold(gathered.data(), out + first * size, m, comm.nranks, op);
  }
}

/// `out` gets every rank's `bytes` from `in`, in rank order. `in` and `out`
/// do not overlap.
void allGatherBytes(const ncclComm &comm, const char *in, char *out,
                    size_t bytes) {
  size_t n = static_cast<size_t>(comm.nranks);
  if (bytes <= kMaxMessage) {
    checkMpi(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                           static_cast<int>(bytes), MPI_BYTE, comm.data),
             "MPI_Allgather");
    return;
  }
  std::vector<char> gathered(n * kMaxMessage);
  for (size_t first = 0; first < bytes; first += kMaxMessage) {
    size_t m = std::min(kMaxMessage, bytes - first);
    checkMpi(MPI_Allgather(in + first, static_cast<int>(m), MPI_BYTE,
                           gathered.data(), static_cast<int>(m), MPI_BYTE,
                           comm.data),
             "MPI_Allgather");
    for (size_t r = 0; r < n; ++r)
      std::memcpy(out + r * bytes + first, gathered.data() + r * m, m);
  }
}

void broadcastBytes(const ncclComm &comm, char *data, size_t bytes, int root) {
  for (size_t first = 0; first < bytes; first += kMaxMessage)
    checkMpi(MPI_Bcast(data + first,
                       static_cast<int>(std::min(kMaxMessage, bytes - first)),
                       MPI_BYTE, root, comm.data),
             "MPI_Bcast");
}

//===----------------------------------------------------------------------===//
// Stream work and groups
//===----------------------------------------------------------------------===//

/// One call's stream work.
struct Op {
  CommPtr comm;
  std::string what;
  cudaStream_t stream;
  /// A collective: does all its work.
  std::function<void()> run;
  /// A send or receive: posts its requests, which the unit waits for
  /// together, so that an exchange in either order completes.
  std::function<void(std::vector<MPI_Request> &)> post;
};

thread_local int groupDepth = 0;
thread_local std::vector<Op> groupOps;

/// A unit's sends and receives under way.
struct InFlight {
  std::vector<MPI_Request> requests;
  /// The operations that posted them, which leave their communicator's
  /// `queued` count when the requests complete.
  std::vector<const Op *> posted;
};

/// Runs a unit's collectives and posts its sends and receives, in order.
void startOps(const std::vector<Op> &ops, InFlight &flight) {
  for (const Op &op : ops) {
    ncclComm &comm = *op.comm;
    if (comm.destroyed)
      tgc::simt::fatal(op.what +
                       " ran after ncclCommDestroy of its communicator "
                       "(replayed from a CUDA graph?)");
    // Aborted: the work is dropped, as NCCL's kernels exit. Failed: nothing
    // more goes through the broken communicator.
    if (comm.aborted || comm.asyncError != ncclSuccess) {
      --comm.queued;
      continue;
    }
    if (comm.nranks > 1 && !onMpiThread())
      tgc::simt::fatal(op.what +
                       " ran on a thread other than MPI's main thread, and "
                       "MPI was initialised without MPI_THREAD_SERIALIZED: "
                       "synchronize its stream on the main thread");
    try {
      if (op.post) {
        size_t before = flight.requests.size();
        op.post(flight.requests);
        if (flight.requests.size() != before) {
          flight.posted.push_back(&op);
          continue;
        }
      } else {
        op.run();
      }
    } catch (const MpiFailure &failure) {
      failAsync(comm, ncclSystemError, op.what + ": " + failure.what);
    }
    --comm.queued;
  }
}

/// The unit's requests completed, or `call` (MPI_Waitall, MPI_Testall)
/// failed with `code`.
void completeOps(const InFlight &flight, int code, const char *call) {
  for (const Op *op : flight.posted) {
    if (code != MPI_SUCCESS)
      failAsync(*op->comm, ncclSystemError,
                op->what + ": " + call + " failed: " + mpiErrorText(code));
    --op->comm->queued;
  }
}

/// Runs one unit of stream work to completion: one call, or one group.
void runOps(const std::vector<Op> &ops) {
  InFlight flight;
  startOps(ops, flight);
  int code = MPI_SUCCESS;
  if (!flight.requests.empty())
    code = MPI_Waitall(static_cast<int>(flight.requests.size()),
                       flight.requests.data(), MPI_STATUSES_IGNORE);
  completeOps(flight, code, "MPI_Waitall");
}

/// Starts a unit of sends and receives only: posts its requests and returns
/// the poll that tests them, so that its stream stays busy while the host
/// runs other streams (a receive queued on another stream, which the peer's
/// send may be waiting for).
tgc::simt::Poll startPointToPoint(std::shared_ptr<const std::vector<Op>> ops) {
  auto flight = std::make_shared<InFlight>();
  startOps(*ops, *flight);
  if (flight->requests.empty()) {
    completeOps(*flight, MPI_SUCCESS, "MPI_Testall");
    return nullptr;
  }
  // `ops` stays alive while `flight->posted` points into it.
  return [ops, flight] {
    if (!onMpiThread())
      tgc::simt::fatal(flight->posted.front()->what +
                       " was waited for on a thread other than MPI's main "
                       "thread, and MPI was initialised without "
                       "MPI_THREAD_SERIALIZED: synchronize its stream on the "
                       "main thread");
    int done = 0;
    int code = MPI_Testall(static_cast<int>(flight->requests.size()),
                           flight->requests.data(), &done, MPI_STATUSES_IGNORE);
    if (code == MPI_SUCCESS && !done)
      return false;
    completeOps(*flight, code, "MPI_Testall");
    return true;
  };
}

/// Enqueues one unit of stream work on `stream`. Sends and receives alone
/// complete asynchronously, as NCCL's kernels wait for a peer beside other
/// streams' work; a unit with a collective runs to completion when the
/// stream reaches it (every rank issues collectives in the same order).
void enqueueOps(cudaStream_t stream, const std::string &what,
                std::vector<Op> ops) {
  bool pointToPointOnly = std::all_of(
      ops.begin(), ops.end(), [](const Op &op) { return bool(op.post); });
  auto shared = std::make_shared<const std::vector<Op>>(std::move(ops));
  if (pointToPointOnly)
    tgc::simt::enqueueAsync(stream, what,
                            [shared] { return startPointToPoint(shared); });
  else
    tgc::simt::enqueue(stream, what, [shared] { runOps(*shared); });
}

/// Enqueues `op` on its stream, or keeps it for ncclGroupEnd.
ncclResult_t submit(Op op) {
  ++op.comm->queued;
  if (groupDepth > 0) {
    groupOps.push_back(std::move(op));
    return ncclSuccess;
  }
  cudaStream_t stream = op.stream;
  std::string what = op.what;
  std::vector<Op> ops;
  ops.push_back(std::move(op));
  enqueueOps(stream, what, std::move(ops));
  return ncclSuccess;
}

/// Makes `waiter` wait for the work enqueued on `stream` so far.
cudaError_t joinStream(cudaStream_t waiter, cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  cudaError_t error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (error == cudaSuccess)
    error = cudaEventRecord(event, stream);
  if (error == cudaSuccess)
    error = cudaStreamWaitEvent(waiter, event, 0);
  if (event)
    cudaEventDestroy(event);
  return error;
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

/// The checks every collective shares; fills `found` on success.
ncclResult_t checkCall(const char *function, ncclComm_t comm,
                       cudaStream_t stream, CommPtr &found) {
  if (!comm)
    return fail(ncclInvalidArgument, std::string(function) + ": comm is null");
  found = lookup(comm);
  if (!found)
    return fail(ncclInvalidArgument,
                std::string(function) + ": communicator " + pointerText(comm) +
                    " was destroyed or aborted, or never created");
  if (found->finalized)
    return fail(ncclInvalidUsage, std::string(function) +
                                      ": the communicator was finalized "
                                      "(ncclCommFinalize)");
  if (ncclResult_t error = found->asyncError) {
    std::lock_guard<std::mutex> lock(found->mutex);
    return fail(
        error, std::string(function) +
                   ": the communicator failed earlier: " + found->asyncMessage);
  }
  if (!tgc::simt::isStream(stream))
    return fail(ncclUnhandledCudaError,
                std::string(function) + ": stream " + pointerText(stream) +
                    " is not a CUDA stream (cudaErrorInvalidResourceHandle)");
  return ncclSuccess;
}

ncclResult_t checkType(const char *function, ncclDataType_t type) {
  if (type < 0 || type >= ncclNumTypes)
    return fail(ncclInvalidArgument, std::string(function) +
                                         ": invalid datatype " +
                                         std::to_string(type));
  return ncclSuccess;
}

ncclResult_t checkReduction(const char *function, ncclDataType_t type,
                            ncclRedOp_t op) {
  if (ncclResult_t error = checkType(function, type))
    return error;
  if (op < 0 || op >= ncclNumOps)
    return fail(ncclInvalidArgument,
                std::string(function) + ": invalid reduction operation " +
                    std::to_string(op) +
                    " (ncclRedOpCreatePreMulSum is not emulated)");
  if (!foldFor(type))
    return fail(ncclInvalidArgument, std::string(function) + ": " +
                                         typeName(type) +
                                         " is not reduced by the host NCCL "
                                         "stand-in");
  return ncclSuccess;
}

ncclResult_t checkRoot(const char *function, int root, const ncclComm &comm) {
  if (root < 0 || root >= comm.nranks)
    return fail(ncclInvalidArgument,
                std::string(function) + ": root " + std::to_string(root) +
                    " is not a rank of a communicator of " +
                    std::to_string(comm.nranks));
  return ncclSuccess;
}

/// `name` must be device memory with room for `count` elements of `type`
/// from `p` on.
ncclResult_t checkBuffer(const char *function, const char *name, const void *p,
                         size_t count, ncclDataType_t type) {
  size_t size = typeSize(type);
  if (count > SIZE_MAX / size)
    return fail(ncclInvalidArgument, std::string(function) + ": count " +
                                         std::to_string(count) +
                                         " overflows size_t");
  if (!p)
    return fail(ncclInvalidArgument,
                std::string(function) + ": " + name + " is null");
  size_t have = tgc::simt::bytesFrom(p), need = count * size;
  if (have == 0)
    return fail(ncclInvalidArgument,
                std::string(function) + ": " + name + " " + pointerText(p) +
                    " is not device memory (cudaMalloc or cudaHostAlloc)");
  if (have < need)
    return fail(ncclInvalidArgument,
                std::string(function) + ": " + name + " " + pointerText(p) +
                    " holds " + std::to_string(have) +
                    " bytes to the end of its allocation, but " +
                    std::to_string(count) + " " + typeName(type) +
                    " values need " + std::to_string(need));
  return ncclSuccess;
}

std::string describe(const char *function, size_t count, ncclDataType_t type,
                     const ncclComm &comm, const char *op = nullptr) {
  return std::string(function) + " of " + std::to_string(count) + " " +
         typeName(type) + (op ? std::string(" (") + op + ")" : "") +
         " on rank " + std::to_string(comm.rank) + " of " +
         std::to_string(comm.nranks);
}

/// A copy of what a collective sends, taken when it runs: the receive
/// buffer may be the send buffer.
std::vector<char> copyOf(const void *p, size_t bytes, size_t room = 0) {
  std::vector<char> copy(std::max(bytes, room));
  if (bytes)
    std::memcpy(copy.data(), p, bytes);
  return copy;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors and version
//===----------------------------------------------------------------------===//

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error";
  case ncclSystemError:
    return "unhandled system error";
  case ncclInternalError:
    return "internal error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm) {
  // The text must outlive the call: each thread keeps its last copy.
  thread_local std::string text;
  if (CommPtr found = comm ? lookup(comm) : nullptr) {
    std::lock_guard<std::mutex> lock(found->mutex);
    if (!found->asyncMessage.empty()) {
      text = found->asyncMessage;
      return text.c_str();
    }
  }
  std::lock_guard<std::mutex> lock(errorMutex);
  text = lastError;
  return text.c_str();
}

ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return fail(ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  if (!uniqueId)
    return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is null");
  UniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(id.magic, kIdMagic, sizeof(kIdMagic));
  std::random_device device;
  id.nonce =
      (uint64_t(device()) << 32 | device()) ^
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      uint64_t(getpid());
  id.creator = -1;
  if (mpiUsable())
    MPI_Comm_rank(MPI_COMM_WORLD, &id.creator);
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  std::memcpy(uniqueId->internal, &id, sizeof(id));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
  const char *function = "ncclCommInitRank";
  if (!comm)
    return fail(ncclInvalidArgument, std::string(function) + ": comm is null");
  *comm = nullptr;
  if (ncclResult_t error = checkConfig(function, config))
    return error;
  if (groupDepth > 0)
    return fail(ncclInvalidUsage,
                std::string(function) +
                    " inside ncclGroupStart/End is not emulated");
  if (nranks < 1)
    return fail(ncclInvalidArgument, std::string(function) + ": nranks " +
                                         std::to_string(nranks) +
                                         " is not positive");
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument,
                std::string(function) + ": rank " + std::to_string(rank) +
                    " is not in [0, nranks " + std::to_string(nranks) + ")");
  UniqueId id;
  std::memcpy(&id, commId.internal, sizeof(id));
  if (std::memcmp(id.magic, kIdMagic, sizeof(kIdMagic)) != 0)
    return fail(ncclInvalidArgument,
                std::string(function) +
                    ": the unique id was not made by ncclGetUniqueId (of the "
                    "host NCCL stand-in)");

  auto made = std::make_shared<ncclComm>();
  made->device = currentDevice();
  made->blocking = blockingFrom(config, true);
  if (nranks == 1) {
    *comm = publish(made);
    return ncclSuccess;
  }

  if (!mpiUsable())
    return fail(ncclSystemError,
                std::string(function) +
                    ": the host NCCL stand-in needs "
                    "mpirun for nranks " +
                    std::to_string(nranks) +
                    ": it joins ranks over MPI, and MPI is not initialised "
                    "in this process (NCCL's socket bootstrap is not "
                    "emulated; launch with mpirun -np " +
                    std::to_string(nranks) + ")");
  int worldSize = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (id.creator < 0)
    return fail(ncclSystemError, std::string(function) +
                                     ": the unique id was made before "
                                     "MPI_Init (or without MPI), so the "
                                     "host NCCL stand-in cannot join its " +
                                     std::to_string(nranks) + " ranks");
  if (nranks > worldSize || id.creator >= worldSize)
    return fail(ncclInvalidArgument,
                std::string(function) + ": nranks " + std::to_string(nranks) +
                    " (id from world rank " + std::to_string(id.creator) +
                    ") but MPI_COMM_WORLD has " + std::to_string(worldSize) +
                    " processes");
  if (!onMpiThread())
    return fail(ncclInvalidUsage,
                std::string(function) +
                    ": called off MPI's main thread, and MPI was initialised "
                    "without MPI_THREAD_SERIALIZED");

  std::vector<int> worldOf;
  if (ncclResult_t error = joinRanks(id, nranks, rank, worldOf))
    return error;
  MPI_Group world, members;
  MPI_Comm control = MPI_COMM_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int code = MPI_Group_incl(world, nranks, worldOf.data(), &members);
  if (code == MPI_SUCCESS) {
    code = MPI_Comm_create_group(MPI_COMM_WORLD, members, joinTag(id.nonce),
                                 &control);
    MPI_Group_free(&members);
  }
  MPI_Group_free(&world);
  if (code != MPI_SUCCESS)
    return fail(ncclSystemError,
                std::string(function) +
                    ": MPI_Comm_create_group failed: " + mpiErrorText(code));
  if (ncclResult_t error = attachMpi(*made, control, function)) {
    releaseMpi(*made);
    return error;
  }
  *comm = publish(made);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                              int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *config) {
  const char *function = "ncclCommSplit";
  if (!newcomm)
    return fail(ncclInvalidArgument,
                std::string(function) + ": newcomm is null");
  *newcomm = nullptr;
  CommPtr parent;
  if (ncclResult_t error = checkCall(function, comm, cudaStreamLegacy, parent))
    return error;
  if (ncclResult_t error = checkConfig(function, config))
    return error;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument,
                std::string(function) + ": color " + std::to_string(color) +
                    " is neither non-negative nor NCCL_SPLIT_NOCOLOR");
  if (groupDepth > 0)
    return fail(ncclInvalidUsage,
                std::string(function) +
                    " inside ncclGroupStart/End is not emulated");

  auto made = std::make_shared<ncclComm>();
  made->device = parent->device;
  made->blocking = blockingFrom(config, parent->blocking);
  if (parent->control == MPI_COMM_NULL) {
    // One rank without MPI: it is alone in its color.
    if (color != NCCL_SPLIT_NOCOLOR)
      *newcomm = publish(made);
    return ncclSuccess;
  }
  if (!onMpiThread())
    return fail(ncclInvalidUsage,
                std::string(function) +
                    ": called off MPI's main thread, and MPI was initialised "
                    "without MPI_THREAD_SERIALIZED");
  MPI_Comm control = MPI_COMM_NULL;
  if (int code = MPI_Comm_split(
          parent->control, color < 0 ? MPI_UNDEFINED : color, key, &control))
    return fail(ncclSystemError,
                std::string(function) +
                    ": MPI_Comm_split failed: " + mpiErrorText(code));
  if (control == MPI_COMM_NULL)
    return ncclSuccess;
  if (ncclResult_t error = attachMpi(*made, control, function)) {
    releaseMpi(*made);
    return error;
  }
  *newcomm = publish(made);
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  const char *function = "ncclCommFinalize";
  if (!comm)
    return fail(ncclInvalidArgument, std::string(function) + ": comm is null");
  CommPtr found = lookup(comm);
  if (!found)
    return fail(ncclInvalidArgument,
                std::string(function) + ": communicator " + pointerText(comm) +
                    " was destroyed or aborted, or never created");
  if (found->finalized)
    return fail(ncclInvalidUsage, std::string(function) +
                                      ": the communicator was finalized "
                                      "already");
  // NCCL's finalize completes the communicator's queued collectives.
  if (found->queued > 0) {
    cudaError_t error = cudaDeviceSynchronize();
    if (error != cudaSuccess)
      return fail(ncclUnhandledCudaError,
                  std::string(function) + ": cudaDeviceSynchronize failed: " +
                      cudaGetErrorName(error));
  }
  found->finalized = true;
  if (ncclResult_t error = found->asyncError) {
    std::lock_guard<std::mutex> lock(found->mutex);
    return fail(error, found->asyncMessage);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return ncclSuccess;
  CommPtr found = lookup(comm);
  if (!found)
    return fail(ncclInvalidArgument,
                "ncclCommDestroy: communicator " + pointerText(comm) +
                    " was destroyed or aborted, or never created");
  ncclResult_t result = ncclSuccess;
  if (!found->finalized)
    result = ncclCommFinalize(comm);
  retire(comm);
  found->destroyed = true;
  releaseMpi(*found);
  return result;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm)
    return ncclSuccess;
  CommPtr found = retire(comm);
  if (!found)
    return fail(ncclInvalidArgument,
                "ncclCommAbort: communicator " + pointerText(comm) +
                    " was destroyed or aborted, or never created");
  // Queued work is dropped when it comes to run. The MPI communicators stay
  // to MPI_Finalize or the exit: an abort may come from any thread (a
  // watchdog), and a peer may still be inside a collective with us.
  found->aborted = true;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  const char *function = "ncclCommGetAsyncError";
  if (!asyncError)
    return fail(ncclInvalidArgument,
                std::string(function) + ": asyncError is null");
  if (!comm)
    return fail(ncclInvalidArgument, std::string(function) + ": comm is null");
  CommPtr found = lookup(comm);
  if (!found)
    return fail(ncclInvalidArgument,
                std::string(function) + ": communicator " + pointerText(comm) +
                    " was destroyed or aborted, or never created");
  *asyncError = found->asyncError;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  CommPtr found = comm ? lookup(comm) : nullptr;
  if (!found || !count)
    return fail(ncclInvalidArgument,
                "ncclCommCount: comm or count is null or not a communicator");
  *count = found->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  CommPtr found = comm ? lookup(comm) : nullptr;
  if (!found || !rank)
    return fail(ncclInvalidArgument,
                "ncclCommUserRank: comm or rank is null or not a "
                "communicator");
  *rank = found->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  CommPtr found = comm ? lookup(comm) : nullptr;
  if (!found || !device)
    return fail(ncclInvalidArgument,
                "ncclCommCuDevice: comm or device is null or not a "
                "communicator");
  *device = found->device;
  return ncclSuccess;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  const char *function = "ncclAllReduce";
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkReduction(function, datatype, op))
    return error;
  if (count == 0)
    return ncclSuccess;
  if (ncclResult_t error =
          checkBuffer(function, "sendbuff", sendbuff, count, datatype))
    return error;
  if (ncclResult_t error =
          checkBuffer(function, "recvbuff", recvbuff, count, datatype))
    return error;
  size_t size = typeSize(datatype);
  FoldFn fold = foldFor(datatype);
  ncclComm *raw = c.get();
  auto run = [=] {
    size_t bytes = count * size;
    if (raw->nranks == 1) {
      // x / 1 and a rounding of a widened value are x again.
      std::memmove(recvbuff, sendbuff, bytes);
      return;
    }
    // A reduce-scatter of equal pieces (the last padded), then an
    // all-gather of the reduced pieces.
    size_t n = static_cast<size_t>(raw->nranks);
    size_t piece = (count + n - 1) / n;
    std::vector<char> padded = copyOf(sendbuff, bytes, piece * n * size);
    std::vector<char> mine(piece * size);
    reduceScatterPieces(*raw, padded.data(), mine.data(), piece, size, fold,
                        op);
    allGatherBytes(*raw, mine.data(), padded.data(), piece * size);
    std::memcpy(recvbuff, padded.data(), bytes);
  };
  return submit({c,
                 describe(function, count, datatype, *c, opName(op)),
                 stream,
                 run,
                 {}});
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  const char *function = "ncclReduceScatter";
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkReduction(function, datatype, op))
    return error;
  if (recvcount == 0)
    return ncclSuccess;
  size_t n = static_cast<size_t>(c->nranks);
  if (recvcount > SIZE_MAX / n)
    return fail(ncclInvalidArgument, std::string(function) + ": recvcount " +
                                         std::to_string(recvcount) +
                                         " times nranks overflows size_t");
  if (ncclResult_t error =
          checkBuffer(function, "sendbuff", sendbuff, recvcount * n, datatype))
    return error;
  if (ncclResult_t error =
          checkBuffer(function, "recvbuff", recvbuff, recvcount, datatype))
    return error;
  size_t size = typeSize(datatype);
  FoldFn fold = foldFor(datatype);
  ncclComm *raw = c.get();
  auto run = [=] {
    if (raw->nranks == 1) {
      std::memmove(recvbuff, sendbuff, recvcount * size);
      return;
    }
    std::vector<char> pieces = copyOf(sendbuff, recvcount * n * size);
    reduceScatterPieces(*raw, pieces.data(), static_cast<char *>(recvbuff),
                        recvcount, size, fold, op);
  };
  return submit({c,
                 describe(function, recvcount, datatype, *c, opName(op)),
                 stream,
                 run,
                 {}});
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  const char *function = "ncclAllGather";
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkType(function, datatype))
    return error;
  if (sendcount == 0)
    return ncclSuccess;
  size_t n = static_cast<size_t>(c->nranks);
  if (sendcount > SIZE_MAX / n)
    return fail(ncclInvalidArgument, std::string(function) + ": sendcount " +
                                         std::to_string(sendcount) +
                                         " times nranks overflows size_t");
  if (ncclResult_t error =
          checkBuffer(function, "sendbuff", sendbuff, sendcount, datatype))
    return error;
  if (ncclResult_t error =
          checkBuffer(function, "recvbuff", recvbuff, sendcount * n, datatype))
    return error;
  size_t bytes = sendcount * typeSize(datatype);
  ncclComm *raw = c.get();
  auto run = [=] {
    if (raw->nranks == 1) {
      std::memmove(recvbuff, sendbuff, bytes);
      return;
    }
    std::vector<char> mine = copyOf(sendbuff, bytes);
    allGatherBytes(*raw, mine.data(), static_cast<char *>(recvbuff), bytes);
  };
  return submit(
      {c, describe(function, sendcount, datatype, *c), stream, run, {}});
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  const char *function = "ncclBroadcast";
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkType(function, datatype))
    return error;
  if (ncclResult_t error = checkRoot(function, root, *c))
    return error;
  if (count == 0)
    return ncclSuccess;
  // As in NCCL, sendbuff is read on the root only.
  if (c->rank == root)
    if (ncclResult_t error =
            checkBuffer(function, "sendbuff", sendbuff, count, datatype))
      return error;
  if (ncclResult_t error =
          checkBuffer(function, "recvbuff", recvbuff, count, datatype))
    return error;
  size_t bytes = count * typeSize(datatype);
  ncclComm *raw = c.get();
  auto run = [=] {
    if (raw->rank == root && sendbuff != recvbuff)
      std::memmove(recvbuff, sendbuff, bytes);
    if (raw->nranks > 1)
      broadcastBytes(*raw, static_cast<char *>(recvbuff), bytes, root);
  };
  return submit({c,
                 describe(function, count, datatype, *c) + " from rank " +
                     std::to_string(root),
                 stream,
                 run,
                 {}});
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype,
                       int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  const char *function = "ncclReduce";
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkReduction(function, datatype, op))
    return error;
  if (ncclResult_t error = checkRoot(function, root, *c))
    return error;
  if (count == 0)
    return ncclSuccess;
  if (ncclResult_t error =
          checkBuffer(function, "sendbuff", sendbuff, count, datatype))
    return error;
  // As in NCCL, recvbuff is written on the root only.
  if (c->rank == root)
    if (ncclResult_t error =
            checkBuffer(function, "recvbuff", recvbuff, count, datatype))
      return error;
  size_t size = typeSize(datatype);
  FoldFn fold = foldFor(datatype);
  ncclComm *raw = c.get();
  auto run = [=] {
    size_t bytes = count * size;
    if (raw->nranks == 1) {
      std::memmove(recvbuff, sendbuff, bytes);
      return;
    }
    size_t n = static_cast<size_t>(raw->nranks);
    size_t chunk = std::max<size_t>(1, kMaxMessage / size);
    std::vector<char> mine = copyOf(sendbuff, bytes), gathered;
    for (size_t first = 0; first < count; first += chunk) {
      size_t m = std::min(chunk, count - first);
      if (raw->rank == root)
        gathered.resize(n * m * size);
      checkMpi(MPI_Gather(mine.data() + first * size,
                          static_cast<int>(m * size), MPI_BYTE, gathered.data(),
                          static_cast<int>(m * size), MPI_BYTE, root,
                          raw->data),
               "MPI_Gather");
      if (raw->rank == root)
        fold(gathered.data(), static_cast<char *>(recvbuff) + first * size, m,
             raw->nranks, op);
    }
  };
  return submit({c,
                 describe(function, count, datatype, *c, opName(op)) +
                     " to rank " + std::to_string(root),
                 stream,
                 run,
                 {}});
}

//===----------------------------------------------------------------------===//
// Point to point and groups
//===----------------------------------------------------------------------===//

namespace {

ncclResult_t pointToPoint(const char *function, bool sending, void *buff,
                          size_t count, ncclDataType_t datatype, int peer,
                          ncclComm_t comm, cudaStream_t stream) {
  CommPtr c;
  if (ncclResult_t error = checkCall(function, comm, stream, c))
    return error;
  if (ncclResult_t error = checkType(function, datatype))
    return error;
  if (peer < 0 || peer >= c->nranks)
    return fail(ncclInvalidArgument,
                std::string(function) + ": peer " + std::to_string(peer) +
                    " is not a rank of a communicator of " +
                    std::to_string(c->nranks));
  if (c->data == MPI_COMM_NULL)
    return fail(ncclInvalidUsage, std::string(function) +
                                      " on a one-rank communicator without "
                                      "MPI is not emulated");
  if (count == 0)
    return ncclSuccess;
  if (ncclResult_t error = checkBuffer(
          function, sending ? "sendbuff" : "recvbuff", buff, count, datatype))
    return error;
  size_t bytes = count * typeSize(datatype);
  ncclComm *raw = c.get();
  auto post = [=](std::vector<MPI_Request> &requests) {
    // MPI does not overtake between one pair on one tag, so the pieces of
    // a long message, and successive calls, match in order.
    char *p = static_cast<char *>(buff);
    for (size_t first = 0; first < bytes; first += kMaxMessage) {
      int m = static_cast<int>(std::min(kMaxMessage, bytes - first));
      MPI_Request request;
      checkMpi(
          sending
              ? MPI_Isend(p + first, m, MPI_BYTE, peer, 0, raw->data, &request)
              : MPI_Irecv(p + first, m, MPI_BYTE, peer, 0, raw->data, &request),
          sending ? "MPI_Isend" : "MPI_Irecv");
      requests.push_back(request);
    }
  };
  return submit({c,
                 describe(function, count, datatype, *c) +
                     (sending ? " to rank " : " from rank ") +
                     std::to_string(peer),
                 stream,
                 {},
                 post});
}

} // namespace

ncclResult_t ncclSend(const void *sendbuff, size_t count,
                      ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return pointToPoint("ncclSend", true, const_cast<void *>(sendbuff), count,
                      datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  return pointToPoint("ncclRecv", false, recvbuff, count, datatype, peer, comm,
                      stream);
}

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0)
    return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--groupDepth > 0 || groupOps.empty())
    return ncclSuccess;
  std::vector<Op> ops;
  ops.swap(groupOps);
  // One unit of work on the first stream, after the work queued so far on
  // every stream of the group, and before what comes next on any of them.
  cudaStream_t first = ops.front().stream;
  std::vector<cudaStream_t> others;
  for (const Op &op : ops)
    if (op.stream != first &&
        std::find(others.begin(), others.end(), op.stream) == others.end())
      others.push_back(op.stream);
  for (cudaStream_t other : others)
    if (cudaError_t error = joinStream(first, other))
      return fail(ncclUnhandledCudaError,
                  std::string("ncclGroupEnd: joining the group's streams "
                              "failed: ") +
                      cudaGetErrorName(error));
  std::string what = ops.size() == 1
                         ? ops.front().what
                         : "NCCL group of " + std::to_string(ops.size()) +
                               " operations, " + ops.front().what + " first";
  enqueueOps(first, what, std::move(ops));
  for (cudaStream_t other : others)
    if (cudaError_t error = joinStream(other, first))
      return fail(ncclUnhandledCudaError,
                  std::string("ncclGroupEnd: joining the group's streams "
                              "failed: ") +
                      cudaGetErrorName(error));
  return ncclSuccess;
}

//===- Runtime.cpp - The CUDA runtime API on the host ---------------------===//
//
// The calls of <cuda_runtime_api.h> that runtime/cuda, the generated .cu
// files and their tests make, for executables whose kernels run through
// Simt.h: device memory, streams, events, graph capture and replay, device
// properties and kernel attributes. See Runtime.h for the execution model:
// work runs when the host synchronizes, and among the work that may run, the
// most recently enqueued runs first, so that a missing cudaStreamWaitEvent
// reorders work the way a busy GPU might. Work enqueued with enqueueAsync
// (NCCL's sends and receives) may complete after it returns: its stream is
// busy until the work's poll says it completed, and meanwhile the host runs
// other streams' work, so that a stream waiting for a peer does not hold up
// the others, as on a GPU.
//
// Misuse that CUDA answers with an error code gets that code (an
// out-of-range copy, a bad launch configuration, a synchronous call while a
// stream is captured); misuse that is undefined or a fault on a GPU (a
// destroyed stream or event, a kernel argument in no allocation) ends the
// program through fatal() with the call that did it.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/simt/Runtime.h"

#include "runtime/cuda/simt/Simt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

/// A stream: work in order, each item after the dependencies it names.
struct CUstream_st {
  struct Item {
    uint64_t seq;
    std::string what;
    /// Runs the item, or starts it: returns null when it has completed, or
    /// a poll that says when it has (enqueueAsync).
    std::function<tgc::simt::Poll()> start;
    /// (stream, seq): that stream must have run everything up to seq.
    std::vector<std::pair<CUstream_st *, uint64_t>> after;
  };
  bool blocking = true; ///< synchronizes with the legacy default stream
  bool destroyed = false;
  std::deque<Item> pending;
  uint64_t lastEnqueued = 0, lastRun = 0;
  /// The item that started and has not completed (its poll has not said
  /// so yet): until it does, the stream is busy, later items wait for it,
  /// and lastRun stays below its seq, so that events recorded after it do
  /// too.
  tgc::simt::Poll inFlight;
  uint64_t inFlightSeq = 0;
  /// The graph this stream's work goes into while it is captured.
  struct CaptureState *capture = nullptr;
  /// While captured: the nodes the next node depends on.
  std::vector<size_t> captureTail;
};

struct CUevent_st {
  bool timing = true;
  bool destroyed = false;
  /// The last record: the stream and the item that records it (0: never
  /// recorded, or recorded on an idle stream).
  CUstream_st *stream = nullptr;
  uint64_t seq = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
  bool stamped = false;
  /// Recorded inside a capture: the graph nodes it stands for.
  struct CaptureState *capture = nullptr;
  std::vector<size_t> captureNodes;
};

struct GraphNode {
  std::string what;
  std::function<void()> work;
  std::vector<size_t> after;
};

struct CaptureState {
  CUstream_st *origin;
  std::vector<GraphNode> nodes;
  std::set<CUstream_st *> streams; ///< every stream that joined
  bool invalidated = false;
  std::string invalidReason;
};

struct CUgraph_st {
  std::vector<GraphNode> nodes;
};
struct CUgraphExec_st {
  std::vector<GraphNode> nodes;
};

namespace tgc::simt {
namespace {

struct Allocation {
  size_t bytes;
  bool pinned;
};

struct State {
  std::recursive_mutex mutex;
  std::map<uintptr_t, Allocation> allocations;
  CUstream_st legacy; ///< the legacy default stream
  std::set<CUstream_st *> streams;
  std::set<CUevent_st *> events;
  std::set<CUgraph_st *> graphs;
  std::set<CUgraphExec_st *> execs;
  std::map<const void *, size_t> sharedLimits;
  uint64_t seq = 0;
  cudaError_t lastError = cudaSuccess;
  int device = 0;
  size_t deviceBytesInUse = 0;
};

State &state() {
  static State *s = new State; // never destroyed: used from atexit handlers
  return *s;
}

using Lock = std::lock_guard<std::recursive_mutex>;

thread_local cudaStreamCaptureMode threadCaptureMode =
    cudaStreamCaptureModeGlobal;

/// The devices the host pretends to have: 8 (a node of H100s), or
/// TGC_SIMT_DEVICES; 0 is a machine without a GPU, as the CUDA runtime
/// reports one (cudaErrorNoDevice).
int deviceCount() {
  static int count = [] {
    const char *text = std::getenv("TGC_SIMT_DEVICES");
    int n = text ? std::atoi(text) : 8;
    return n >= 0 ? n : 8;
  }();
  return count;
}

std::string pointerText(const void *p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

/// The allocation `p` lies in (or ends at, when `orEnd`).
const std::pair<const uintptr_t, Allocation> *findAllocation(const void *p,
                                                             bool orEnd) {
  auto &allocations = state().allocations;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = allocations.upper_bound(a);
  if (it == allocations.begin())
    return nullptr;
  --it;
  if (a < it->first + it->second.bytes ||
      (orEnd && a == it->first + it->second.bytes))
    return &*it;
  return nullptr;
}

CUstream_st *resolve(cudaStream_t stream, const char *call) {
  State &s = state();
  if (stream == nullptr || stream == cudaStreamLegacy ||
      stream == cudaStreamPerThread)
    return &s.legacy;
  if (!s.streams.count(stream) || stream->destroyed)
    fatal(std::string(call) + ": stream " + pointerText(stream) +
          " was never created or has been destroyed");
  return stream;
}

CUevent_st *resolveEvent(cudaEvent_t event, const char *call) {
  if (!event || !state().events.count(event))
    fatal(std::string(call) + ": event " + pointerText(event) +
          " was never created or has been destroyed");
  return event;
}

bool anyCapture() {
  State &s = state();
  if (s.legacy.capture)
    return true;
  for (CUstream_st *st : s.streams)
    if (st->capture)
      return true;
  return false;
}

/// A synchronous call while a stream is captured in global mode invalidates
/// the capture, as CUDA does (cudaErrorStreamCaptureUnsupported).
bool refusedDuringCapture(const char *call) {
  if (threadCaptureMode == cudaStreamCaptureModeRelaxed || !anyCapture())
    return false;
  State &s = state();
  for (CUstream_st *st : s.streams)
    if (st->capture) {
      st->capture->invalidated = true;
      st->capture->invalidReason = call;
    }
  return true;
}

/// Runs (or starts) the first item of a stream that is not busy.
void runItem(CUstream_st *st) {
  CUstream_st::Item item = std::move(st->pending.front());
  st->pending.pop_front();
  Poll poll = item.start();
  if (poll && !poll()) {
    st->inFlight = std::move(poll);
    st->inFlightSeq = item.seq;
    return;
  }
  st->lastRun = item.seq;
}

bool anyInFlight() {
  State &s = state();
  if (s.legacy.inFlight)
    return true;
  for (CUstream_st *st : s.streams)
    if (st->inFlight)
      return true;
  return false;
}

/// Polls every busy stream's item once; true when one of them completed.
bool pollInFlight() {
  State &s = state();
  bool completed = false;
  auto poll = [&](CUstream_st *st) {
    if (!st->inFlight || !st->inFlight())
      return;
    st->inFlight = nullptr;
    st->lastRun = st->inFlightSeq;
    completed = true;
  };
  poll(&s.legacy);
  for (CUstream_st *st : s.streams)
    poll(st);
  return completed;
}

/// Runs an item to its completion, polling until it says so.
void runToCompletion(const std::function<Poll()> &start) {
  Poll poll = start();
  while (poll && !poll())
    std::this_thread::yield();
}

/// Nothing left to run on the stream, and nothing in flight.
bool streamIdle(CUstream_st *st) {
  return st->pending.empty() && !st->inFlight;
}

bool ready(const CUstream_st::Item &item) {
  for (auto &[other, seq] : item.after)
    if (other->lastRun < seq)
      return false;
  return true;
}

/// Runs work until `done()` holds: among the streams that are not busy and
/// whose first item may run, the most recently enqueued item first. When
/// none may run, it waits for the busy streams' items (a peer's message)
/// until one completes; some may still be in flight when it returns.
template <typename Done> void runUntil(Done done, const char *call) {
  State &s = state();
  while (!done()) {
    CUstream_st *pick = nullptr;
    auto consider = [&](CUstream_st *st) {
      if (st->inFlight || st->pending.empty() || !ready(st->pending.front()))
        return;
      if (!pick || st->pending.front().seq > pick->pending.front().seq)
        pick = st;
    };
    consider(&s.legacy);
    for (CUstream_st *st : s.streams)
      consider(st);
    if (pick) {
      runItem(pick);
      continue;
    }
    if (!anyInFlight())
      fatal(std::string(call) +
            ": waits for work that can never run (a stream waits for an "
            "event whose work never completes)");
    while (!pollInFlight())
      std::this_thread::yield();
  }
  // Destroyed streams leave once drained.
  for (auto it = s.streams.begin(); it != s.streams.end();) {
    if ((*it)->destroyed && streamIdle(*it)) {
      delete *it;
      it = s.streams.erase(it);
    } else {
      ++it;
    }
  }
}

bool deviceIdle() {
  State &s = state();
  if (!streamIdle(&s.legacy))
    return false;
  for (CUstream_st *st : s.streams)
    if (!streamIdle(st))
      return false;
  return true;
}

void synchronizeDevice(const char *call) { runUntil(deviceIdle, call); }

/// Appends to a stream (or its capture): after its own earlier work and the
/// legacy default stream's implicit ordering. `start` runs the work, or
/// starts it and returns a poll (enqueueAsync).
void appendAsync(CUstream_st *st, const std::string &what,
                 std::function<Poll()> start) {
  State &s = state();
  if (st->capture) {
    // A graph replays its nodes one at a time (runGraphNodes): work that
    // completes later is waited for in the node, blocking the replay.
    CaptureState *c = st->capture;
    c->nodes.push_back({what,
                        [start = std::move(start)] { runToCompletion(start); },
                        st->captureTail});
    st->captureTail = {c->nodes.size() - 1};
    return;
  }
  if (st == &s.legacy && anyCapture() &&
      threadCaptureMode != cudaStreamCaptureModeRelaxed) {
    for (CUstream_st *other : s.streams)
      if (other->capture) {
        other->capture->invalidated = true;
        other->capture->invalidReason =
            "work on the legacy default stream (" + what + ")";
      }
  }
  CUstream_st::Item item{++s.seq, what, std::move(start), {}};
  if (st == &s.legacy) {
    for (CUstream_st *other : s.streams)
      if (other->blocking && other->lastEnqueued)
        item.after.push_back({other, other->lastEnqueued});
  } else if (st->blocking && s.legacy.lastEnqueued) {
    item.after.push_back({&s.legacy, s.legacy.lastEnqueued});
  }
  st->lastEnqueued = item.seq;
  st->pending.push_back(std::move(item));
}

/// Appends work that has completed when it returns.
void append(CUstream_st *st, const std::string &what,
            std::function<void()> work) {
  appendAsync(st, what, [work = std::move(work)] {
    work();
    return Poll();
  });
}

/// A dependency of stream `st` on what `event` recorded.
void waitFor(CUstream_st *st, CUevent_st *e) {
  State &s = state();
  if (e->capture) {
    CaptureState *c = e->capture;
    if (st->capture && st->capture != c)
      fatal("cudaStreamWaitEvent: the stream is captured into another graph "
            "than the one the event was recorded in");
    if (!st->capture) { // the stream joins the capture
      st->capture = c;
      c->streams.insert(st);
      st->captureTail.clear();
    }
    for (size_t n : e->captureNodes)
      if (std::find(st->captureTail.begin(), st->captureTail.end(), n) ==
          st->captureTail.end())
        st->captureTail.push_back(n);
    return;
  }
  if (st->capture) {
    // An event from outside the capture orders nothing inside the graph.
    return;
  }
  if (!e->recorded || !e->stream)
    return;
  CUstream_st::Item item{
      ++s.seq, "wait for an event", [] { return Poll(); }, {}};
  item.after.push_back({e->stream, e->seq});
  if (st != &s.legacy && st->blocking && s.legacy.lastEnqueued)
    item.after.push_back({&s.legacy, s.legacy.lastEnqueued});
  st->lastEnqueued = item.seq;
  st->pending.push_back(std::move(item));
}

cudaError_t fail(cudaError_t error) {
  state().lastError = error;
  return error;
}

/// Checks a copy's device side against its allocation; host sides are the
/// caller's responsibility, as with CUDA.
bool fits(const void *p, size_t bytes) {
  if (bytes == 0)
    return true;
  auto *a = findAllocation(p, false);
  if (!a)
    return true; // host memory
  return reinterpret_cast<uintptr_t>(p) + bytes <= a->first + a->second.bytes;
}

bool isPinnedOrDevice(const void *p) { return findAllocation(p, false); }

void runGraphNodes(const std::vector<GraphNode> &nodes) {
  // Any topological order is one the GPU may run; the latest-captured ready
  // node goes first, as in runUntil.
  std::vector<char> done(nodes.size(), 0);
  for (size_t left = nodes.size(); left > 0; --left) {
    size_t pick = nodes.size();
    for (size_t i = nodes.size(); i-- > 0;) {
      if (done[i])
        continue;
      bool ok = true;
      for (size_t d : nodes[i].after)
        ok &= done[d] != 0;
      if (ok) {
        pick = i;
        break;
      }
    }
    if (pick == nodes.size())
      fatal("cudaGraphLaunch: the graph has a cycle");
    nodes[pick].work();
    done[pick] = 1;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Runtime.h
//===----------------------------------------------------------------------===//

void fatal(const std::string &what) {
  std::fprintf(stderr, "simt: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

size_t bytesFrom(const void *p) {
  Lock lock(state().mutex);
  auto *a = findAllocation(p, false);
  if (!a)
    return 0;
  return a->first + a->second.bytes - reinterpret_cast<uintptr_t>(p);
}

bool isStream(cudaStream_t stream) {
  Lock lock(state().mutex);
  return stream == nullptr || stream == cudaStreamLegacy ||
         stream == cudaStreamPerThread || state().streams.count(stream);
}

void enqueue(cudaStream_t stream, const std::string &what,
             std::function<void()> work) {
  Lock lock(state().mutex);
  append(resolve(stream, what.c_str()), what, std::move(work));
}

void enqueueAsync(cudaStream_t stream, const std::string &what,
                  std::function<Poll()> start) {
  Lock lock(state().mutex);
  appendAsync(resolve(stream, what.c_str()), what, std::move(start));
}

void setLastError(cudaError_t error) {
  Lock lock(state().mutex);
  state().lastError = error;
}

size_t maxDynamicSharedBytes(const void *kernel) {
  Lock lock(state().mutex);
  auto it = state().sharedLimits.find(kernel);
  return it == state().sharedLimits.end()
             ? kDefaultSharedBytes
             : std::max(kDefaultSharedBytes, it->second);
}

//===----------------------------------------------------------------------===//
// Simt.h's launch checks
//===----------------------------------------------------------------------===//

bool checkLaunch(const char *kernel, const void *address, const LaunchConfig &c,
                 const char *file, int line) {
  Lock lock(state().mutex);
  resolve(c.stream, kernel);
  uint64_t threads = (uint64_t)c.block.x * c.block.y * c.block.z;
  uint64_t blocks = (uint64_t)c.grid.x * c.grid.y * c.grid.z;
  bool ok = threads >= 1 && threads <= kMaxThreadsPerBlock &&
            c.block.x <= 1024 && c.block.y <= 1024 && c.block.z <= 64 &&
            blocks >= 1 && c.grid.x <= 0x7fffffffu && c.grid.y <= 65535 &&
            c.grid.z <= 65535;
  if (!ok) {
    state().lastError = cudaErrorInvalidConfiguration;
    return false;
  }
  size_t limit = maxDynamicSharedBytes(address);
  if (c.sharedBytes > limit) {
    std::fprintf(stderr,
                 "simt: kernel %s launched with %zu bytes of dynamic shared "
                 "memory, over its limit of %zu (%s:%d)\n",
                 kernel, c.sharedBytes, limit, file, line);
    state().lastError = cudaErrorInvalidValue;
    return false;
  }
  return true;
}

void checkPointerArgument(const char *kernel, int index, const void *p,
                          const char *file, int line) {
  if (!p)
    return;
  Lock lock(state().mutex);
  if (findAllocation(p, /*orEnd=*/true))
    return;
  fatal("kernel " + std::string(kernel) + " launched at " + file + ":" +
        std::to_string(line) + ": argument " + std::to_string(index) + " (" +
        pointerText(p) +
        ") points into no device allocation: the GPU would fault on it");
}

void enqueueKernel(const char *kernel, const LaunchConfig &c,
                   std::function<void()> threadBody) {
  dim3 grid = c.grid, block = c.block;
  size_t bytes = c.sharedBytes;
  enqueue(c.stream, std::string("kernel ") + kernel,
          [kernel, grid, block, bytes, body = std::move(threadBody)] {
            runGrid(kernel, grid, block, bytes, body);
          });
}

} // namespace tgc::simt

//===----------------------------------------------------------------------===//
// The CUDA runtime API
//===----------------------------------------------------------------------===//

using namespace tgc::simt;

extern "C" {

cudaError_t cudaGetLastError(void) {
  Lock lock(state().mutex);
  cudaError_t e = state().lastError;
  state().lastError = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  Lock lock(state().mutex);
  return state().lastError;
}

const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define NAME(E)                                                                \
  case E:                                                                      \
    return #E;
    NAME(cudaSuccess)
    NAME(cudaErrorInvalidValue)
    NAME(cudaErrorMemoryAllocation)
    NAME(cudaErrorInvalidConfiguration)
    NAME(cudaErrorInvalidDevice)
    NAME(cudaErrorInvalidResourceHandle)
    NAME(cudaErrorNotReady)
    NAME(cudaErrorStreamCaptureUnsupported)
    NAME(cudaErrorStreamCaptureInvalidated)
    NAME(cudaErrorStreamCaptureUnjoined)
    NAME(cudaErrorStreamCaptureImplicit)
    NAME(cudaErrorIllegalState)
    NAME(cudaErrorNoDevice)
    NAME(cudaErrorInvalidDeviceFunction)
#undef NAME
  default:
    return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorNotReady:
    return "device not ready";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorStreamCaptureUnjoined:
    return "capture was not joined to the origin stream";
  case cudaErrorStreamCaptureImplicit:
    return "operation would make the legacy stream depend on a capturing "
           "blocking stream";
  case cudaErrorIllegalState:
    return "the operation is not permitted in the current state";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  default:
    return "unknown error";
  }
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return fail(cudaErrorInvalidValue);
  *count = deviceCount();
  return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= deviceCount())
    return fail(cudaErrorInvalidDevice);
  Lock lock(state().mutex);
  state().device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  if (!device)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  *device = state().device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (!prop)
    return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= deviceCount())
    return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name,
                "tgc simt host emulation (H100 SXM limits)");
  prop->totalGlobalMem =
      (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  prop->sharedMemPerBlock = kDefaultSharedBytes;
  prop->sharedMemPerBlockOptin = kMaxSharedBytesOptIn;
  prop->sharedMemPerMultiprocessor = 228 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
  prop->maxThreadsDim[0] = 1024, prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff, prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 9, prop->minor = 0;
  prop->multiProcessorCount = kMultiprocessors;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->l2CacheSize = 50 * 1024 * 1024;
  prop->memoryBusWidth = 5120;
  prop->unifiedAddressing = 1;
  prop->pciDeviceID = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr,
                                   int device) {
  cudaDeviceProp p;
  if (!value)
    return fail(cudaErrorInvalidValue);
  if (cudaError_t e = cudaGetDeviceProperties(&p, device))
    return e;
  switch (attr) {
  case cudaDevAttrMaxThreadsPerBlock:
    *value = p.maxThreadsPerBlock;
    return cudaSuccess;
  case cudaDevAttrMultiProcessorCount:
    *value = p.multiProcessorCount;
    return cudaSuccess;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin:
    *value = (int)p.sharedMemPerBlockOptin;
    return cudaSuccess;
  case cudaDevAttrMaxSharedMemoryPerBlock:
    *value = (int)p.sharedMemPerBlock;
    return cudaSuccess;
  case cudaDevAttrComputeCapabilityMajor:
    *value = p.major;
    return cudaSuccess;
  case cudaDevAttrComputeCapabilityMinor:
    *value = p.minor;
    return cudaSuccess;
  case cudaDevAttrWarpSize:
    *value = 32;
    return cudaSuccess;
  default:
    return fail(cudaErrorInvalidValue);
  }
}

cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  if (!freeBytes || !totalBytes)
    return fail(cudaErrorInvalidValue);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  *totalBytes = (size_t)sysconf(_SC_PHYS_PAGES) * page;
  *freeBytes = (size_t)sysconf(_SC_AVPHYS_PAGES) * page;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  Lock lock(state().mutex);
  if (refusedDuringCapture("cudaDeviceSynchronize"))
    return fail(cudaErrorStreamCaptureUnsupported);
  synchronizeDevice("cudaDeviceSynchronize");
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version) {
  if (!version)
    return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
  return cudaDriverGetVersion(version);
}

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr,
                                 int value) {
  if (!func)
    return fail(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || (size_t)value > kMaxSharedBytesOptIn)
      return fail(cudaErrorInvalidValue);
    Lock lock(state().mutex);
    state().sharedLimits[func] = (size_t)value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout)
    return value >= -1 && value <= 100 ? cudaSuccess
                                       : fail(cudaErrorInvalidValue);
  return fail(cudaErrorInvalidValue);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static cudaError_t allocate(void **p, size_t bytes, bool pinned) {
  if (!p)
    return fail(cudaErrorInvalidValue);
  *p = nullptr;
  if (bytes == 0)
    return cudaSuccess;
  // More than the device has fails as on a GPU, before the host allocator
  // sees it: AddressSanitizer's aborts on requests over its maximum
  // (DeviceTest's 4 PiB allocation died under ASan).
  if (bytes > (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE))
    return fail(cudaErrorMemoryAllocation);
  void *memory = nullptr;
  // 256-byte aligned as cudaMalloc's; exactly `bytes` long, so that
  // AddressSanitizer reports the first byte past the end.
  if (posix_memalign(&memory, 256, bytes) != 0)
    return fail(cudaErrorMemoryAllocation);
  // Device memory starts with whatever was there: all ones reads as NaN.
  std::memset(memory, 0xff, bytes);
  Lock lock(state().mutex);
  state().allocations[reinterpret_cast<uintptr_t>(memory)] = {bytes, pinned};
  *p = memory;
  return cudaSuccess;
}

static cudaError_t release(void *p, bool pinned, const char *call) {
  if (!p)
    return cudaSuccess;
  Lock lock(state().mutex);
  auto &allocations = state().allocations;
  auto it = allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations.end() || it->second.pinned != pinned)
    fatal(std::string(call) + "(" + pointerText(p) + "): not the start of a " +
          (pinned ? "cudaHostAlloc" : "cudaMalloc") +
          " allocation (already freed?)");
  // cudaFree waits for the work that may still use the memory.
  if (!anyCapture())
    synchronizeDevice(call);
  allocations.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  return allocate(p, bytes, false);
}
cudaError_t cudaFree(void *p) { return release(p, false, "cudaFree"); }
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
  return allocate(p, bytes, true);
}
cudaError_t cudaMallocHost(void **p, size_t bytes) {
  return allocate(p, bytes, true);
}
cudaError_t cudaFreeHost(void *p) { return release(p, true, "cudaFreeHost"); }

/// A copy of `bytes`, checked against the device allocations it touches.
static cudaError_t copyAsync(void *dst, const void *src, size_t bytes,
                             cudaMemcpyKind kind, cudaStream_t stream,
                             const char *call, bool synchronous) {
  Lock lock(state().mutex);
  if (bytes == 0)
    return cudaSuccess;
  if (!dst || !src)
    return fail(cudaErrorInvalidValue);
  bool dstDevice =
      isPinnedOrDevice(dst) && !findAllocation(dst, false)->second.pinned;
  bool srcDevice =
      isPinnedOrDevice(src) && !findAllocation(src, false)->second.pinned;
  if (((kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) &&
       !dstDevice) ||
      ((kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) &&
       !srcDevice))
    return fail(cudaErrorInvalidValue);
  if (!fits(dst, bytes) || !fits(src, bytes))
    return fail(cudaErrorInvalidValue);
  CUstream_st *st = resolve(synchronous ? nullptr : stream, call);
  if (synchronous && refusedDuringCapture(call))
    return fail(cudaErrorStreamCaptureUnsupported);
  // A pageable source is staged when the call returns; a pinned or device
  // source is read when the copy runs.
  if (!isPinnedOrDevice(src) && !st->capture) {
    auto staged = std::make_shared<std::vector<char>>(
        (const char *)src, (const char *)src + bytes);
    append(st, call,
           [dst, staged, bytes] { std::memcpy(dst, staged->data(), bytes); });
  } else {
    append(st, call, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  }
  // A pageable destination makes the copy synchronous.
  if (synchronous || (!isPinnedOrDevice(dst) && !st->capture))
    runUntil([st] { return streamIdle(st); }, call);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind) {
  return copyAsync(dst, src, bytes, kind, nullptr, "cudaMemcpy", true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  return copyAsync(dst, src, bytes, kind, stream, "cudaMemcpyAsync", false);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidValue);
  if (height == 0 || width == 0)
    return cudaSuccess;
  Lock lock(state().mutex);
  if (!fits(dst, dpitch * (height - 1) + width) ||
      !fits(src, spitch * (height - 1) + width))
    return fail(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r)
    if (cudaError_t e =
            copyAsync((char *)dst + r * dpitch, (const char *)src + r * spitch,
                      width, kind, stream, "cudaMemcpy2DAsync", false))
      return e;
  return cudaSuccess;
}

static cudaError_t fill(void *dst, int value, size_t bytes, cudaStream_t stream,
                        const char *call, bool synchronous) {
  Lock lock(state().mutex);
  if (bytes == 0)
    return cudaSuccess;
  auto *a = findAllocation(dst, false);
  if (!a || !fits(dst, bytes))
    return fail(cudaErrorInvalidValue);
  CUstream_st *st = resolve(synchronous ? nullptr : stream, call);
  if (synchronous && refusedDuringCapture(call))
    return fail(cudaErrorStreamCaptureUnsupported);
  append(st, call, [dst, value, bytes] { std::memset(dst, value, bytes); });
  if (synchronous)
    runUntil([st] { return streamIdle(st); }, call);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
  return fill(dst, value, bytes, nullptr, "cudaMemset", true);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                            cudaStream_t stream) {
  return fill(dst, value, bytes, stream, "cudaMemsetAsync", false);
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream,
                                      unsigned int flags) {
  if (!stream)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  auto *st = new CUstream_st;
  st->blocking = !(flags & cudaStreamNonBlocking);
  state().streams.insert(st);
  *stream = st;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream,
                                         unsigned int flags, int) {
  return cudaStreamCreateWithFlags(stream, flags);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamDestroy");
  if (st == &state().legacy || st->destroyed)
    return fail(cudaErrorInvalidResourceHandle);
  if (st->capture)
    return fail(cudaErrorStreamCaptureUnsupported);
  // Work already enqueued still runs; the stream goes once it is drained
  // (runUntil).
  st->destroyed = true;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamSynchronize");
  if (st->capture) {
    st->capture->invalidated = true;
    st->capture->invalidReason = "cudaStreamSynchronize";
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (refusedDuringCapture("cudaStreamSynchronize"))
    return fail(cudaErrorStreamCaptureUnsupported);
  runUntil([st] { return streamIdle(st); }, "cudaStreamSynchronize");
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamQuery");
  // A query runs nothing and polls nothing (a watchdog thread may query,
  // and a poll may call MPI): work in flight completes while the host
  // synchronizes.
  return streamIdle(st) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned int) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamWaitEvent");
  CUevent_st *e = resolveEvent(event, "cudaStreamWaitEvent");
  waitFor(st, e);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode mode) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamBeginCapture");
  if (st == &state().legacy)
    return fail(cudaErrorStreamCaptureUnsupported);
  if (st->capture)
    return fail(cudaErrorIllegalState);
  auto *c = new CaptureState;
  c->origin = st;
  c->streams.insert(st);
  st->capture = c;
  st->captureTail.clear();
  threadCaptureMode = mode;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamEndCapture");
  if (!graph)
    return fail(cudaErrorInvalidValue);
  CaptureState *c = st->capture;
  if (!c || c->origin != st)
    return fail(cudaErrorIllegalState);
  // Every stream that joined must have been joined back: its last node must
  // be an ancestor of the origin's last nodes.
  std::set<size_t> reached;
  std::vector<size_t> todo = st->captureTail;
  while (!todo.empty()) {
    size_t n = todo.back();
    todo.pop_back();
    if (!reached.insert(n).second)
      continue;
    for (size_t d : c->nodes[n].after)
      todo.push_back(d);
  }
  bool unjoined = false;
  for (CUstream_st *other : c->streams) {
    if (other != st)
      for (size_t n : other->captureTail)
        unjoined |= !reached.count(n);
    other->capture = nullptr;
    other->captureTail.clear();
  }
  for (CUevent_st *e : state().events)
    if (e->capture == c)
      e->capture = nullptr, e->captureNodes.clear(), e->recorded = false;
  std::unique_ptr<CaptureState> owned(c);
  *graph = nullptr;
  if (c->invalidated) {
    std::fprintf(stderr, "simt: the capture was invalidated by %s\n",
                 c->invalidReason.c_str());
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  if (unjoined)
    return fail(cudaErrorStreamCaptureUnjoined);
  auto *g = new CUgraph_st;
  g->nodes = std::move(c->nodes);
  state().graphs.insert(g);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  cudaStreamCaptureStatus *status) {
  if (!status)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  CUstream_st *st = resolve(stream, "cudaStreamIsCapturing");
  *status = !st->capture               ? cudaStreamCaptureStatusNone
            : st->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                       : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode) {
  if (!mode)
    return fail(cudaErrorInvalidValue);
  std::swap(*mode, threadCaptureMode);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Events
//===----------------------------------------------------------------------===//

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  if (!event)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  auto *e = new CUevent_st;
  e->timing = !(flags & cudaEventDisableTiming);
  state().events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Lock lock(state().mutex);
  CUevent_st *e = resolveEvent(event, "cudaEventDestroy");
  state().events.erase(e);
  // Work enqueued to stamp it may still run: it holds no pointer to it
  // once destroyed (see cudaEventRecord), so the object can go.
  e->destroyed = true;
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Lock lock(state().mutex);
  CUevent_st *e = resolveEvent(event, "cudaEventRecord");
  CUstream_st *st = resolve(stream, "cudaEventRecord");
  if (st->capture) {
    e->capture = st->capture;
    e->captureNodes = st->captureTail;
    e->recorded = true;
    e->stream = nullptr;
    return cudaSuccess;
  }
  e->capture = nullptr;
  e->recorded = true;
  e->stamped = false;
  e->stream = st;
  // The stamp is taken when the work before it has run; the item finds the
  // event through the registry, so a destroyed event is skipped.
  append(st, "cudaEventRecord", [event] {
    if (!state().events.count(event))
      return;
    event->when = std::chrono::steady_clock::now();
    event->stamped = true;
  });
  e->seq = st->lastEnqueued;
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                     unsigned int) {
  return cudaEventRecord(event, stream);
}

static bool eventDone(CUevent_st *e) {
  return !e->recorded || !e->stream || e->stream->lastRun >= e->seq;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Lock lock(state().mutex);
  CUevent_st *e = resolveEvent(event, "cudaEventQuery");
  return eventDone(e) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Lock lock(state().mutex);
  CUevent_st *e = resolveEvent(event, "cudaEventSynchronize");
  runUntil([e] { return eventDone(e); }, "cudaEventSynchronize");
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  if (!ms)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  CUevent_st *a = resolveEvent(start, "cudaEventElapsedTime");
  CUevent_st *b = resolveEvent(end, "cudaEventElapsedTime");
  if (!a->timing || !b->timing)
    return fail(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded)
    return fail(cudaErrorInvalidResourceHandle);
  if (!eventDone(a) || !eventDone(b) || !a->stamped || !b->stamped)
    return fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  if (!exec)
    return fail(cudaErrorInvalidValue);
  Lock lock(state().mutex);
  if (!state().graphs.count(graph))
    fatal("cudaGraphInstantiate: graph " + pointerText(graph) +
          " was never captured or has been destroyed");
  auto *x = new CUgraphExec_st;
  x->nodes = graph->nodes;
  state().execs.insert(x);
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  Lock lock(state().mutex);
  if (!state().execs.count(exec))
    fatal("cudaGraphLaunch: executable graph " + pointerText(exec) +
          " was never instantiated or has been destroyed");
  CUstream_st *st = resolve(stream, "cudaGraphLaunch");
  auto nodes = std::make_shared<std::vector<GraphNode>>(exec->nodes);
  append(st, "cudaGraphLaunch", [nodes] { runGraphNodes(*nodes); });
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Lock lock(state().mutex);
  if (!state().graphs.erase(graph))
    fatal("cudaGraphDestroy: graph " + pointerText(graph) +
          " was never captured or has been destroyed");
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Lock lock(state().mutex);
  if (!state().execs.erase(exec))
    fatal("cudaGraphExecDestroy: executable graph " + pointerText(exec) +
          " was never instantiated or has been destroyed");
  delete exec;
  return cudaSuccess;
}

} // extern "C"

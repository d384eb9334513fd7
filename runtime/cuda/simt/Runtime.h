//===- Runtime.h - The host CUDA runtime's internal interface ---*- C++ -*-===//
//
// What the host stand-ins of runtime/cuda/simt share: the CUDA runtime
// (Runtime.cpp) owns device memory, streams, events and graphs; cuBLASLt
// (CublasLt.cpp), cub and NCCL (Nccl.cpp) enqueue their work on its streams
// and check pointers against its allocations, as the real libraries would
// fault on them.
//
// Device memory is host memory, so a kernel, a library call and the host can
// all touch it; what keeps the emulation honest is *when* work runs. Nothing
// enqueued on a stream runs at once: it runs when the host synchronizes
// (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, a
// synchronous cudaMemcpy), in an order that respects stream order, events
// (cudaStreamWaitEvent) and the legacy default stream, and otherwise prefers
// the most recently enqueued work. A host read without a synchronization, or
// a second stream that reads before a missing cudaStreamWaitEvent, then sees
// stale data here as it might on a GPU.
//
// Most work completes when it returns. Work that waits for something outside
// the process (NCCL's sends and receives, for a peer) is enqueued with
// enqueueAsync: it starts, and its stream stays busy until its poll says it
// completed, while the host runs the other streams' work, as a GPU runs
// other streams' kernels beside a kernel that waits for the network. So a
// send queued on one stream does not keep a receive on another from running.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_SIMT_RUNTIME_H
#define TGC_RUNTIME_CUDA_SIMT_RUNTIME_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

namespace tgc::simt {

/// Misuse that the real library would turn into a fault or undefined
/// behaviour: prints "simt: <what>" on stderr and aborts, so that a test
/// fails at the call that did it.
[[noreturn]] void fatal(const std::string &what);

/// Bytes from `p` to the end of the device allocation (cudaMalloc) or pinned
/// host allocation (cudaHostAlloc, cudaMallocHost) that holds it; 0 when `p`
/// is in none (a host pointer, a freed or a null pointer).
size_t bytesFrom(const void *p);

/// Whether `stream` is the legacy default stream (nullptr,
/// cudaStreamLegacy), cudaStreamPerThread or a stream that was created and
/// not destroyed.
bool isStream(cudaStream_t stream);

/// Enqueues `work` on `stream` (after everything enqueued on it before), or
/// records it into the graph that `stream` is capturing. `what` names the
/// work in diagnostics ("kernel fooKernel", "cublasLtMatmul"). Aborts
/// through fatal() on a stream that is not one.
void enqueue(cudaStream_t stream, const std::string &what,
             std::function<void()> work);

/// Says whether work that an item started has completed; asked again until
/// it says so. A poll runs under the runtime's lock, on a thread that
/// synchronizes: once when the work starts, then whenever no other work may
/// run. It must not enqueue work or synchronize.
using Poll = std::function<bool()>;

/// Enqueues work that may complete after it returns: when the stream
/// reaches it, `start` runs and returns a poll, or null when the work has
/// completed already. Until the poll returns true the stream is busy: its
/// later work, events recorded after it and streams that wait for those
/// events wait, and cudaStreamQuery and cudaEventQuery say
/// cudaErrorNotReady; the other streams run. Captured into a graph, the
/// node polls until the work completes before the replay goes on (a graph
/// replays its nodes one at a time).
void enqueueAsync(cudaStream_t stream, const std::string &what,
                  std::function<Poll()> start);

/// Sets the error that the next cudaGetLastError/cudaPeekAtLastError
/// returns (a bad launch configuration).
void setLastError(cudaError_t error);

/// The device's limits, as an H100 SXM reports them.
constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kDefaultSharedBytes = 48 * 1024;
constexpr size_t kMaxSharedBytesOptIn = 227 * 1024;
constexpr int kMultiprocessors = 132;

/// The dynamic shared memory a kernel may use: 48 KiB unless raised with
/// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize).
size_t maxDynamicSharedBytes(const void *kernel);

} // namespace tgc::simt

#endif // TGC_RUNTIME_CUDA_SIMT_RUNTIME_H

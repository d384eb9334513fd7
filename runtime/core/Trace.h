//===- Trace.h - A Chrome trace of a training run ------------------*- C++ -*-===//
//
// --profile FILE records what a run spends its time on: every op of the
// compiled step (kernels on a GPU, kernel calls on the CPU), the collectives,
// and the runtime's own phases (data, evaluation, checkpoints). The file is
// the Chrome trace event format (a JSON array of "X" events with name,
// category, ts and dur in microseconds, pid and tid), which chrome://tracing
// and Perfetto open.
//
// Generated code reports through the StepIO's trace pointer, which is null
// unless --profile is on, so an unprofiled step pays one branch per op.
//
// Plain C++17: nothing here may include LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_TRACE_H
#define TGC_RUNTIME_CORE_TRACE_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

class Trace {
public:
  /// Timelines (Chrome's "threads") the events go on.
  enum Lane : int32_t { Host = 0, Compute = 1, Comm = 2 };

  explicit Trace(int rank = 0);

  /// Microseconds since the trace started.
  double now() const;

  /// A finished event: `name` (e.g. "matmul fc1") in `category` (e.g.
  /// "kernel", "collective", "data"), from `startUs` for `durUs`.
  void complete(const std::string &name, const char *category, Lane lane,
                double startUs, double durUs);

  /// What generated code records for each op: `name` (a literal, so that
  /// no std::string is built where the op runs) in `category` on the host
  /// lane, from `startUs` until now.
  void op(const char *name, const char *category, double startUs);

  /// Writes the events collected so far to `path` atomically; throws
  /// tgc::Error naming the file when it cannot.
  void write(const std::string &path) const;

  size_t size() const { return events_.size(); }

private:
  struct Event {
    std::string name;
    const char *category;
    Lane lane;
    double start, duration;
  };
  std::chrono::steady_clock::time_point origin_;
  int rank_;
  std::vector<Event> events_;
};

/// Times a host-side scope into `trace` (nothing when it is null).
class TraceScope {
public:
  TraceScope(Trace *trace, const char *name, const char *category)
      : trace_(trace), name_(name), category_(category),
        start_(trace ? trace->now() : 0) {}
  ~TraceScope() {
    if (trace_)
      trace_->complete(name_, category_, Trace::Host, start_,
                       trace_->now() - start_);
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;

private:
  Trace *trace_;
  const char *name_;
  const char *category_;
  double start_;
};

} // namespace tgc

#endif // TGC_RUNTIME_CORE_TRACE_H

//===- Progress.h - Progress bar, progress lines and the JSONL log -*- C++ -*-===//
//
// On a terminal, training shows one live line on stderr (a bar, step/steps,
// loss, throughput, ETA) that messages scroll above; otherwise it prints a
// plain line every N steps on stdout, which logs and CI keep readable. The
// metrics log is JSON Lines, one object per step and per evaluation, flushed
// line by line so a killed run keeps everything it logged.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_PROGRESS_H
#define TGC_RUNTIME_TRAIN_PROGRESS_H

#include "runtime/core/JsonText.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace tgc {

class ProgressReporter {
public:
  /// `printEvery` <= 0 picks about 20 lines per run; `unit` is "tok/s" or
  /// "samples/s".
  ProgressReporter(int64_t totalSteps, int64_t firstStep, bool quiet,
                   int64_t printEvery, std::string unit);
  ~ProgressReporter();

  /// After each step: `elapsed` seconds since the first step of this run.
  void step(int64_t step, float loss, double throughput, double elapsed);
  /// A line that stays (evaluations, checkpoints); the bar is redrawn below.
  void message(const std::string &line);
  /// Ends the bar's line.
  void finish();

  bool isTty() const { return tty_; }

private:
  void clearBar();

  int64_t totalSteps_, firstStep_;
  bool quiet_, tty_;
  int64_t printEvery_;
  std::string unit_;
  std::string bar_;
  double lastDraw_ = -1;
};

/// "1.23k", "45.6M": three significant digits with a metric suffix.
std::string humanCount(double value);
/// "1h02m", "3m20s", "12s".
std::string humanDuration(double seconds);

class MetricsLog {
public:
  MetricsLog() = default;
  ~MetricsLog();
  /// Opens `path` (truncating, or appending when resuming); throws
  /// tgc::Error naming the path when it cannot.
  void open(const std::string &path, bool append);
  void write(const Json &entry);
  bool isOpen() const { return file_ != nullptr; }

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_PROGRESS_H

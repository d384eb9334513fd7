//===- Progress.cpp - Progress bar, progress lines and the JSONL log -*- C++ -*-===//

#include "runtime/train/Progress.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cmath>
#include <unistd.h>

namespace tgc {

std::string humanCount(double value) {
  const char *suffixes[] = {"", "k", "M", "G", "T"};
  int index = 0;
  while (std::fabs(value) >= 1000 && index < 4) {
    value /= 1000;
    ++index;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer),
                std::fabs(value) >= 100 ? "%.0f%s"
                : std::fabs(value) >= 10 ? "%.1f%s"
                                         : "%.2f%s",
                value, suffixes[index]);
  return buffer;
}

std::string humanDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  long total = static_cast<long>(seconds + 0.5);
  char buffer[32];
  if (total >= 3600)
    std::snprintf(buffer, sizeof(buffer), "%ldh%02ldm", total / 3600,
                  (total / 60) % 60);
  else if (total >= 60)
    std::snprintf(buffer, sizeof(buffer), "%ldm%02lds", total / 60, total % 60);
  else
    std::snprintf(buffer, sizeof(buffer), "%lds", total);
  return buffer;
}

ProgressReporter::ProgressReporter(int64_t totalSteps, int64_t firstStep,
                                   bool quiet, int64_t printEvery,
                                   std::string unit)
    : totalSteps_(totalSteps), firstStep_(firstStep), quiet_(quiet),
      tty_(!quiet && ::isatty(STDERR_FILENO)), printEvery_(printEvery),
      unit_(std::move(unit)) {
  if (printEvery_ <= 0)
    printEvery_ = std::max<int64_t>(1, (totalSteps - firstStep + 1) / 20);
}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::clearBar() {
  if (tty_ && !bar_.empty()) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

void ProgressReporter::step(int64_t step, float loss, double throughput,
                            double elapsed) {
  if (quiet_)
    return;
  int64_t done = step - firstStep_ + 1;
  double eta = done > 0 ? elapsed / done * (totalSteps_ - step) : 0;
  char text[256];
  if (tty_) {
    // Redraw at most 10 times a second: terminals are slow.
    if (step != totalSteps_ && lastDraw_ >= 0 && elapsed - lastDraw_ < 0.1)
      return;
    lastDraw_ = elapsed;
    constexpr int kWidth = 24;
    int filled = totalSteps_ > 0
                     ? static_cast<int>(kWidth * step / totalSteps_)
                     : kWidth;
    std::string bar(filled, '#');
    bar.append(kWidth - filled, '.');
    std::snprintf(text, sizeof(text),
                  "[%s] %lld/%lld | loss %.4f | %s %s | ETA %s", bar.c_str(),
                  static_cast<long long>(step),
                  static_cast<long long>(totalSteps_), loss,
                  humanCount(throughput).c_str(), unit_.c_str(),
                  humanDuration(eta).c_str());
    bar_ = text;
    std::fprintf(stderr, "\r\033[K%s", bar_.c_str());
    std::fflush(stderr);
    return;
  }
  if (step % printEvery_ != 0 && step != totalSteps_ && step != firstStep_)
    return;
  std::snprintf(text, sizeof(text),
                "step %lld/%lld | loss %.4f | %s %s | ETA %s",
                static_cast<long long>(step),
                static_cast<long long>(totalSteps_), loss,
                humanCount(throughput).c_str(), unit_.c_str(),
                humanDuration(eta).c_str());
  std::printf("%s\n", text);
  std::fflush(stdout);
}

void ProgressReporter::message(const std::string &line) {
  if (quiet_)
    return;
  clearBar();
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (tty_ && !bar_.empty()) {
    std::fprintf(stderr, "%s", bar_.c_str());
    std::fflush(stderr);
  }
}

void ProgressReporter::finish() {
  if (tty_ && !bar_.empty()) {
    std::fputs("\n", stderr);
    std::fflush(stderr);
  }
  bar_.clear();
}

MetricsLog::~MetricsLog() {
  if (file_)
    std::fclose(file_);
}

void MetricsLog::open(const std::string &path, bool append) {
  path_ = path;
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    throwErrno(path, "cannot open the metrics log", errno);
}

void MetricsLog::write(const Json &entry) {
  if (!file_)
    return;
  std::string line = writeJson(entry);
  line += '\n';
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    throwErrno(path_, "cannot write the metrics log", errno);
}

} // namespace tgc

//===- Trace.cpp - A Chrome trace of a training run ----------------*- C++ -*-===//

#include "runtime/core/Trace.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/JsonText.h"

namespace tgc {

Trace::Trace(int rank)
    : origin_(std::chrono::steady_clock::now()), rank_(rank) {}

double Trace::now() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - origin_)
      .count();
}

void Trace::complete(const std::string &name, const char *category, Lane lane,
                     double startUs, double durUs) {
  events_.push_back({name, category, lane, startUs, durUs});
}

void Trace::op(const char *name, const char *category, double startUs) {
  complete(name, category, Host, startUs, now() - startUs);
}

void Trace::write(const std::string &path) const {
  static const char *laneNames[] = {"host", "compute", "communication"};
  Json events = Json::array();
  for (int lane = Host; lane <= Comm; ++lane)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", rank_},
                      {"tid", lane},
                      {"args", {{"name", laneNames[lane]}}}});
  for (const Event &e : events_)
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start},
                      {"dur", e.duration},
                      {"pid", rank_},
                      {"tid", static_cast<int>(e.lane)}});
  writeFileAtomically(path, writeJson(events) + "\n");
}

} // namespace tgc

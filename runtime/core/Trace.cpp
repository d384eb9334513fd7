//===- Trace.cpp - A Chrome trace of a training run ----------------*- C++ -*-===//

#include "runtime/core/Trace.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/Json.h"

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
  JsonValue events = JsonValue::array();
  for (int lane = Host; lane <= Comm; ++lane) {
    JsonValue meta = JsonValue::object();
    meta.set("name", "thread_name");
    meta.set("ph", "M");
    meta.set("pid", rank_);
    meta.set("tid", lane);
    JsonValue args = JsonValue::object();
    args.set("name", laneNames[lane]);
    meta.set("args", args);
    events.push(meta);
  }
  for (const Event &e : events_) {
    JsonValue event = JsonValue::object();
    event.set("name", e.name);
    event.set("cat", e.category);
    event.set("ph", "X");
    event.set("ts", e.start);
    event.set("dur", e.duration);
    event.set("pid", rank_);
    event.set("tid", static_cast<int>(e.lane));
    events.push(event);
  }
  writeFileAtomically(path, writeJson(events) + "\n");
}

} // namespace tgc

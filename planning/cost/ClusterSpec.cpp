//===- ClusterSpec.cpp - Reading cluster specs ------------------*- C++ -*-===//
//
// The JSON of a cluster spec, checked field by field: a missing or
// non-positive number is an error naming the file and the field, never a
// silent zero that would make a plan look free.
//
//===----------------------------------------------------------------------===//

#include "planning/cost/ClusterSpec.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::tg;

llvm::StringRef mlir::tg::collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  }
  return "";
}

LinkSpec::Fit LinkSpec::forKind(CollectiveKind kind) const {
  auto it = collectives.find(collectiveName(kind));
  if (it != collectives.end())
    return it->second;
  return {bandwidth, latency};
}

double ClusterSpec::flopsFor(llvm::StringRef elementType) const {
  auto it = peakFlops.find(elementType);
  if (it == peakFlops.end())
    it = peakFlops.find("f32");
  return it->second * flopsEfficiency;
}

namespace {

/// Reads fields of one JSON object, remembering the first error.
class FieldReader {
public:
  FieldReader(llvm::StringRef file, std::string path,
              const llvm::json::Object *object, std::string &error)
      : file(file), path(std::move(path)), object(object), error(error) {}

  double positive(llvm::StringRef key, bool required = true,
                  double fallback = 0) {
    const llvm::json::Value *v = object ? object->get(key) : nullptr;
    if (!v) {
      if (required)
        fail(key, "is missing");
      return fallback;
    }
    std::optional<double> d = v->getAsNumber();
    if (!d || !(*d > 0)) {
      fail(key, "must be a positive number");
      return fallback;
    }
    return *d;
  }
  double nonNegative(llvm::StringRef key, double fallback) {
    const llvm::json::Value *v = object ? object->get(key) : nullptr;
    if (!v)
      return fallback;
    std::optional<double> d = v->getAsNumber();
    if (!d || *d < 0) {
      fail(key, "must be a number >= 0");
      return fallback;
    }
    return *d;
  }
  bool boolean(llvm::StringRef key, bool fallback) {
    const llvm::json::Value *v = object ? object->get(key) : nullptr;
    if (!v)
      return fallback;
    if (std::optional<bool> b = v->getAsBoolean())
      return *b;
    fail(key, "must be true or false");
    return fallback;
  }
  std::string string(llvm::StringRef key, bool required = true) {
    const llvm::json::Value *v = object ? object->get(key) : nullptr;
    if (!v) {
      if (required)
        fail(key, "is missing");
      return "";
    }
    if (std::optional<llvm::StringRef> s = v->getAsString())
      return s->str();
    fail(key, "must be a string");
    return "";
  }
  const llvm::json::Object *object_(llvm::StringRef key, bool required) {
    const llvm::json::Value *v = object ? object->get(key) : nullptr;
    if (!v) {
      if (required)
        fail(key, "is missing");
      return nullptr;
    }
    if (const llvm::json::Object *o = v->getAsObject())
      return o;
    fail(key, "must be an object");
    return nullptr;
  }
  std::string at(llvm::StringRef key) const {
    return path.empty() ? key.str() : path + "." + key.str();
  }
  void fail(llvm::StringRef key, llvm::StringRef what) {
    if (error.empty())
      error = llvm::formatv("{0}: {1} {2}", file, at(key), what).str();
  }

private:
  llvm::StringRef file;
  std::string path;
  const llvm::json::Object *object;
  std::string &error;
};

LinkSpec readLink(llvm::StringRef file, llvm::StringRef key,
                  const llvm::json::Object *object, std::string &error) {
  std::string path = ("links." + key).str();
  FieldReader read(file, path, object, error);
  LinkSpec link;
  link.name = read.string("name", /*required=*/false);
  link.bandwidth = read.positive("bandwidth");
  link.latency = read.nonNegative("latency", 0);
  if (const llvm::json::Object *kinds =
          read.object_("collectives", /*required=*/false))
    for (const auto &[name, value] : *kinds) {
      llvm::StringRef kind = name;
      if (kind != "all_reduce" && kind != "all_gather" &&
          kind != "reduce_scatter" && kind != "all_to_all") {
        read.fail(("collectives." + kind).str(),
                  "is not a collective (all_reduce, all_gather, "
                  "reduce_scatter, all_to_all)");
        continue;
      }
      FieldReader fit(file, path + ".collectives." + kind.str(),
                      value.getAsObject(), error);
      if (!value.getAsObject()) {
        read.fail(("collectives." + kind).str(), "must be an object");
        continue;
      }
      link.collectives[kind] = {fit.positive("bandwidth"),
                                fit.nonNegative("latency", 0)};
    }
  return link;
}

} // namespace

namespace {

struct ShippedCluster {
  llvm::StringRef name, text;
};

const ShippedCluster kShippedClusters[] = {
#include "planning/cost/ShippedClusters.inc"
};

} // namespace

std::vector<std::string> mlir::tg::shippedClusterSpecs() {
  std::vector<std::string> names;
  for (const ShippedCluster &cluster : kShippedClusters)
    names.push_back(cluster.name.str());
  return names;
}

llvm::Expected<ClusterSpec> mlir::tg::loadClusterSpec(llvm::StringRef name) {
  if (name.contains('/') || name.ends_with(".json")) {
    auto buffer = llvm::MemoryBuffer::getFile(name);
    if (!buffer)
      return llvm::createStringError(
          buffer.getError(), "cannot read cluster spec '%s': %s",
          name.str().c_str(), buffer.getError().message().c_str());
    return parseClusterSpec((*buffer)->getBuffer(), name);
  }
  for (const ShippedCluster &cluster : kShippedClusters)
    if (cluster.name == name)
      return parseClusterSpec(cluster.text, cluster.name);
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "no shipped cluster spec is named '%s' (shipped: %s; or give a JSON "
      "file's path)",
      name.str().c_str(), llvm::join(shippedClusterSpecs(), ", ").c_str());
}

llvm::Expected<ClusterSpec> mlir::tg::parseClusterSpec(llvm::StringRef text,
                                                       llvm::StringRef path) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: not JSON: %s", path.str().c_str(),
                                   llvm::toString(json.takeError()).c_str());
  std::string error;
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: a cluster spec is a JSON object",
                                   path.str().c_str());
  FieldReader read(path, "", root, error);
  ClusterSpec spec;
  spec.name = read.string("name");
  spec.description = read.string("description", /*required=*/false);
  spec.devicesPerNode = (int64_t)read.positive("devices_per_node");
  FieldReader device(path, "device", read.object_("device", true), error);
  spec.deviceName = device.string("name", /*required=*/false);
  spec.memoryBytes = (int64_t)device.positive("memory_bytes");
  spec.flopsEfficiency = device.positive("flops_efficiency", false, 1.0);
  if (spec.flopsEfficiency > 1)
    device.fail("flops_efficiency", "must be at most 1");
  spec.memoryBandwidth = device.positive("memory_bandwidth");
  spec.kernelOverhead = device.nonNegative("kernel_overhead", 0);
  spec.overlapsCommunication = device.boolean("overlaps_communication", false);
  FieldReader peaks(path, "device.peak_flops",
                    device.object_("peak_flops", true), error);
  if (const llvm::json::Object *o = device.object_("peak_flops", true)) {
    for (const auto &entry : *o)
      spec.peakFlops[entry.first] = peaks.positive(entry.first);
    if (!spec.peakFlops.count("f32"))
      peaks.fail("f32", "is missing");
  }
  const llvm::json::Object *links = read.object_("links", true);
  FieldReader linkReader(path, "links", links, error);
  if (const llvm::json::Object *node = linkReader.object_("node", true))
    spec.node = readLink(path, "node", node, error);
  if (const llvm::json::Object *network =
          linkReader.object_("network", /*required=*/false))
    spec.network = readLink(path, "network", network, error);
  if (!error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   error.c_str());
  return spec;
}

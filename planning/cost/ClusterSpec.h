//===- ClusterSpec.h - What a cluster of devices can do ---------*- C++ -*-===//
//
// A cluster spec (planning/cost/clusters/*.json, documented in the README
// there) says what one device computes and holds and how fast its links
// move bytes: NVLink within a node, the network between nodes. The cost
// model reads only this, so a new cluster is a new file.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_COST_CLUSTERSPEC_H
#define TGC_PLANNING_COST_CLUSTERSPEC_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

/// The collectives the cost model times.
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll };
llvm::StringRef collectiveName(CollectiveKind kind);

/// One level of links (within a node, between nodes): bytes per second
/// per device and direction, seconds per ring step, and where measurement
/// showed the kinds differ, each kind's own pair.
struct LinkSpec {
  std::string name;
  double bandwidth = 0;
  double latency = 0;
  struct Fit {
    double bandwidth = 0, latency = 0;
  };
  llvm::StringMap<Fit> collectives;

  /// The bandwidth and latency collectives of `kind` see.
  Fit forKind(CollectiveKind kind) const;
};

struct ClusterSpec {
  std::string name;
  std::string description;
  int64_t devicesPerNode = 1;
  std::string deviceName;
  int64_t memoryBytes = 0;
  /// Dense peak FLOP/s per element type name ("f32", "bf16", "f16").
  llvm::StringMap<double> peakFlops;
  /// The fraction of peak large GEMMs reach.
  double flopsEfficiency = 1.0;
  /// Bytes per second between the device and its memory.
  double memoryBandwidth = 0;
  /// Seconds each kernel (or op on a CPU) costs besides its work.
  double kernelOverhead = 0;
  /// Whether a gradient bucket's all-reduce runs beside compute (a GPU's
  /// communication stream) rather than in its place (the CPU runtime's
  /// blocking MPI calls).
  bool overlapsCommunication = false;
  LinkSpec node;
  std::optional<LinkSpec> network;

  /// The FLOP/s an op computing in `elementType` ("f32", "bf16") reaches:
  /// its peak times the efficiency; f32's for a type the spec lacks.
  double flopsFor(llvm::StringRef elementType) const;
};

/// The spec `name` names: a shipped one (h100-sxm-8, cpu-local, ...: the
/// files of planning/cost/clusters, compiled in), or a JSON file when `name`
/// is a path (has a '/' or ends in .json). Errors name the file (or the
/// shipped spec) and the field.
llvm::Expected<ClusterSpec> loadClusterSpec(llvm::StringRef name);

/// Checks the JSON text of a spec; `path` names it in errors.
llvm::Expected<ClusterSpec> parseClusterSpec(llvm::StringRef text,
                                             llvm::StringRef path);

/// The names of the shipped specs, sorted.
std::vector<std::string> shippedClusterSpecs();

} // namespace mlir::tg

#endif // TGC_PLANNING_COST_CLUSTERSPEC_H

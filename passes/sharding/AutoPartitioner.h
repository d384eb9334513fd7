//===- AutoPartitioner.h - Automatic partitioners by name -------*- C++ -*-===//
//
// `tgc --auto-shard` plans the shardings with an automatic partitioner,
// chosen by name (`--auto-partitioner`, default `tgc`: tg-auto-shard). A
// partitioner is a function that adds passes to a pass manager, as Shardy's
// auto-partitioner registry holds them, so a solver of one's own plugs in
// without editing tgc: a pass plugin (`tgc --load-pass-plugin=lib.so`, or
// tg-opt's flag of the same name) registers it from its
// `mlirGetPassPluginInfo` callbacks.
//
// The contract: the passes run on the module after tg-optimizer (the step's
// parameters, optimizer state and updates exist, with their `tg.param` and
// `tg.state` names) and before tg-propagate-sharding, on a module with a
// `tg.mesh`. They write what they decide as pins: `tg.sharding` (with a
// `tg.sharding_origin` saying who chose it) on @train_step's arguments,
// and `tg.sharding_constraint` ops where a value must be read in a given
// sharding. tg-propagate-sharding completes the shardings from the pins,
// tg-partition carries them out, and tgc prices the result beside the
// standard plans as it prices tg-auto-shard's.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_SHARDING_AUTOPARTITIONER_H
#define TGC_PASSES_SHARDING_AUTOPARTITIONER_H

#include "planning/pipeline/PipelineSchedule.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mlir::tg {

/// What tgc tells a partitioner, from its flags (tg-auto-shard's options).
struct AutoPartitionerOptions {
  /// The cluster spec the plan is priced on: a shipped name or a JSON file
  /// (planning/cost/ClusterSpec.h: loadClusterSpec).
  std::string cluster = "cpu-local";
  /// Bytes one device may hold; 0: the cluster's device memory.
  int64_t memoryLimit = 0;
  /// What the plan may use, comma separated: dp, zero, tp.
  std::string allowStrategies = "dp,zero,tp";
  uint64_t seed = 0;
  /// Seconds a search may take.
  double timeLimit = 10;
  /// Whether repeated layers must choose alike.
  bool tieLayers = true;
  /// The pipeline schedule a pipelined step will run.
  pipeline::ScheduleChoice schedule = pipeline::ScheduleChoice::Auto;
  /// Whether tg-remat will recompute each layer's activations (remat=full).
  bool rematFull = false;
};

/// Adds a partitioner's passes to `pm` (a module pass manager).
using AutoPartitionerBuilder =
    std::function<void(OpPassManager &pm, const AutoPartitionerOptions &)>;

struct AutoPartitioner {
  std::string name;
  std::string description;
  AutoPartitionerBuilder build;
};

/// Registers `name`. Returns false, registering nothing, when the name is
/// taken.
bool registerAutoPartitioner(llvm::StringRef name, llvm::StringRef description,
                             AutoPartitionerBuilder build);

/// The partitioner registered as `name`, or null.
const AutoPartitioner *lookupAutoPartitioner(llvm::StringRef name);

/// Every registered partitioner, sorted by name (tgc's own included).
std::vector<const AutoPartitioner *> registeredAutoPartitioners();

/// Registers tg-auto-shard as `tgc` (once; later calls do nothing).
void registerTgAutoPartitioner();

} // namespace mlir::tg

#endif // TGC_PASSES_SHARDING_AUTOPARTITIONER_H

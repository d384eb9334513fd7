//===- AutoPartitioner.cpp - Automatic partitioners by name -----*- C++ -*-===//

#include "passes/sharding/AutoPartitioner.h"

#include "passes/sharding/Passes.h"

#include "llvm/ADT/StringMap.h"

#include <mutex>

using namespace mlir;
using namespace mlir::tg;

namespace {

struct Registry {
  std::mutex mutex;
  llvm::StringMap<AutoPartitioner> byName;
};

Registry &registry() {
  static Registry instance;
  return instance;
}

} // namespace

bool mlir::tg::registerAutoPartitioner(llvm::StringRef name,
                                       llvm::StringRef description,
                                       AutoPartitionerBuilder build) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.byName
      .try_emplace(name, AutoPartitioner{name.str(), description.str(),
                                         std::move(build)})
      .second;
}

const AutoPartitioner *mlir::tg::lookupAutoPartitioner(llvm::StringRef name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byName.find(name);
  return it == r.byName.end() ? nullptr : &it->second;
}

std::vector<const AutoPartitioner *> mlir::tg::registeredAutoPartitioners() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const AutoPartitioner *> all;
  for (const auto &entry : r.byName)
    all.push_back(&entry.second);
  llvm::sort(all, [](const AutoPartitioner *a, const AutoPartitioner *b) {
    return a->name < b->name;
  });
  return all;
}

void mlir::tg::registerTgAutoPartitioner() {
  registerAutoPartitioner(
      "tgc",
      "tg-auto-shard: the cost model and the solver over every node's "
      "strategies",
      [](OpPassManager &pm, const AutoPartitionerOptions &options) {
        AutoShardPassOptions opt;
        opt.cluster = options.cluster;
        opt.memoryLimit = options.memoryLimit;
        opt.allowStrategies = options.allowStrategies;
        opt.seed = options.seed;
        opt.timeLimit = options.timeLimit;
        opt.tieLayers = options.tieLayers;
        opt.schedule = options.schedule;
        opt.remat = options.rematFull ? "full" : "none";
        pm.addPass(createAutoShardPass(opt));
      });
}

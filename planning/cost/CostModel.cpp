//===- CostModel.cpp - Modelled time of ops and collectives -----*- C++ -*-===//
//
// Roofline for ops, ring alpha-beta for collectives. The numbers come from
// the cluster spec only; how well they predict measured steps is checked
// by bench/sharding/calibrate.sh.
//
//===----------------------------------------------------------------------===//

#include "planning/cost/CostModel.h"

#include "dialects/tg/IR/TgOps.h"
#include "planning/pipeline/PipelineSchedule.h"

using namespace mlir;
using namespace mlir::tg;

CostModel::CostModel(const ClusterSpec &spec, MeshOp mesh) : cluster(spec) {
  if (!mesh)
    return;
  int64_t stride = 1;
  SmallVector<StringRef> names;
  for (StringRef name : mesh.getAxisNames())
    names.push_back(name);
  for (StringRef name : llvm::reverse(names)) {
    int64_t size = mesh.axisSize(name);
    axes[name] = {size, stride};
    stride *= size;
  }
  meshDevices = stride;
}

bool CostModel::crossesNodes(StringRef axis) const {
  auto it = axes.find(axis);
  if (it == axes.end())
    return false;
  auto [size, stride] = it->second;
  return size * stride > cluster.devicesPerNode;
}

const LinkSpec &CostModel::linkOf(StringRef axis) const {
  if (crossesNodes(axis) && cluster.network)
    return *cluster.network;
  return cluster.node;
}

double CostModel::collectiveSeconds(CollectiveKind kind, StringRef axis,
                                    double wholeBytes) const {
  auto it = axes.find(axis);
  double p = it == axes.end() ? 1 : (double)it->second.first;
  if (p <= 1)
    return 0;
  LinkSpec::Fit fit = linkOf(axis).forKind(kind);
  double steps = p - 1, share = (p - 1) / p;
  if (kind == CollectiveKind::AllReduce) {
    steps *= 2;
    share *= 2;
  }
  return steps * fit.latency + share * wholeBytes / fit.bandwidth;
}

StringRef mlir::tg::computeTypeName(Operation *op) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      if (t.getElementType().isBF16())
        return "bf16";
      if (t.getElementType().isF16())
        return "f16";
    }
  return "f32";
}

double CostModel::opSeconds(Operation *op, double parts) const {
  if (isa<ConstantOp>(op) || op->getNumResults() == 0)
    return 0;
  double bytes = 0;
  for (Value v : op->getOperands())
    if (isa<RankedTensorType>(v.getType()))
      bytes += tensorBytes(v.getType());
  for (Value v : op->getResults())
    if (isa<RankedTensorType>(v.getType()))
      bytes += tensorBytes(v.getType());
  // A reshape of a contiguous tensor moves nothing.
  if (isa<ReshapeOp, FlattenOp, ShardingConstraintOp>(op))
    bytes = 0;
  double flops = flopCount(op);
  double seconds = std::max(flops / cluster.flopsFor(computeTypeName(op)),
                            bytes / cluster.memoryBandwidth);
  return seconds / std::max(parts, 1.0) + cluster.kernelOverhead;
}

std::optional<double> CostModel::collectiveOpSeconds(Operation *op) const {
  auto bytesOf = [](Value v) { return (double)tensorBytes(v.getType()); };
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    double bytes = 0;
    for (Value v : ar.getInputs())
      bytes += bytesOf(v);
    return collectiveSeconds(CollectiveKind::AllReduce, ar.getMeshAxis(),
                             bytes);
  }
  if (auto ag = dyn_cast<AllGatherOp>(op))
    return collectiveSeconds(CollectiveKind::AllGather, ag.getMeshAxis(),
                             bytesOf(ag.getResult()));
  if (auto rs = dyn_cast<ReduceScatterOp>(op))
    return collectiveSeconds(CollectiveKind::ReduceScatter, rs.getMeshAxis(),
                             bytesOf(rs.getInput()));
  if (isa<AllSliceOp>(op))
    return opSeconds(op);
  return std::nullopt;
}

double CostModel::stageSendSeconds(double bytes, int64_t stages) const {
  if (stages <= 1)
    return 0;
  // On a split module's mesh the stages are its axis pp, already counted.
  int64_t devices = axes.count("pp") ? meshDevices : meshDevices * stages;
  const LinkSpec &link = devices > cluster.devicesPerNode && cluster.network
                             ? *cluster.network
                             : cluster.node;
  return link.latency + bytes / link.bandwidth;
}

llvm::Expected<PipelinePlay> mlir::tg::playPipeline(int64_t stages,
                                                    int64_t virtualStages,
                                                    int64_t microBatches,
                                                    StringRef schedule) {
  pipeline::Shape shape{std::max<int64_t>(stages, 1),
                        std::max<int64_t>(virtualStages, 1),
                        std::max<int64_t>(microBatches, 1)};
  int64_t v = shape.virtualStages;
  // A micro-batch slot is 3 units: F, B and W of a V-th each per chunk.
  pipeline::Costs costs =
      pipeline::Costs::uniform(shape, 1.0 / v, 1.0 / v, 1.0 / v);
  auto chosen = pipeline::chooseSchedule(schedule, shape, costs);
  if (!chosen)
    return chosen.takeError();
  PipelinePlay play;
  play.slots = chosen->timeline.makespan / 3;
  for (int64_t held : chosen->timeline.peakHeld)
    play.inFlight.push_back((double)held / (double)v);
  return play;
}

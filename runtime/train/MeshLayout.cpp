//===- MeshLayout.cpp - Where this process sits in the mesh -----*- C++ -*-===//

#include "runtime/train/MeshLayout.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace tgc {

MeshLayout::MeshLayout(const ModelDesc &model, int rank, int worldSize)
    : model_(model), rank_(rank) {
  for (int a = 0; a < model.numMeshAxes; ++a) {
    names_.push_back(model.mesh[a].name);
    sizes_.push_back(model.mesh[a].size);
    splitsBatch_.push_back(model.mesh[a].splitsBatch != 0);
  }
  if (!hasMesh()) {
    if (worldSize > 1)
      throw Error("this executable was compiled for one process (no --mesh) "
                  "but the run has " +
                  std::to_string(worldSize) +
                  "; recompile with --mesh=data=" + std::to_string(worldSize));
    replica_ = rank;
    replicas_ = worldSize;
    return;
  }
  // An elastic axis takes what the other axes leave of the world.
  int elastic = -1;
  int64_t fixed = 1;
  for (int a = 0; a < model.numMeshAxes; ++a) {
    if (model.mesh[a].elastic)
      elastic = a;
    else
      fixed *= sizes_[a];
  }
  if (elastic >= 0) {
    if (worldSize % fixed != 0)
      throw Error("this executable was compiled for mesh " + describe(elastic) +
                  ": the run needs a multiple of " + std::to_string(fixed) +
                  " processes, but it has " + std::to_string(worldSize));
    sizes_[elastic] = worldSize / fixed;
  }
  int64_t processes = 1;
  for (int64_t size : sizes_)
    processes *= size;
  if (processes != worldSize)
    throw Error(
        "this executable was compiled for mesh " + describe() + " (" +
        std::to_string(processes) + " process" + (processes == 1 ? "" : "es") +
        ") but the run has " + std::to_string(worldSize) + "; start it with " +
        std::to_string(processes) + " processes or recompile with --mesh");
  // The replica: the coordinates on the batch axes, row-major among them.
  std::vector<int> at = coordinates(rank);
  replica_ = 0;
  replicas_ = 1;
  for (size_t a = 0; a < sizes_.size(); ++a) {
    if (splitsBatch_[a]) {
      replica_ = replica_ * sizes_[a] + at[a];
      replicas_ *= sizes_[a];
    } else if (at[a] != 0) {
      leadsReplica_ = false;
    }
  }
}

std::string MeshLayout::describe(int autoAxis) const {
  std::string text;
  for (size_t a = 0; a < sizes_.size(); ++a)
    text += (a ? "," : "") + names_[a] + "=" +
            (static_cast<int>(a) == autoAxis ? std::string("auto")
                                             : std::to_string(sizes_[a]));
  return text;
}

std::vector<int> MeshLayout::coordinates(int rank) const {
  std::vector<int> at(sizes_.size(), 0);
  int64_t rest = rank;
  for (size_t a = sizes_.size(); a-- > 0;) {
    at[a] = static_cast<int>(rest % sizes_[a]);
    rest /= sizes_[a];
  }
  return at;
}

bool MeshLayout::isSplit(const TensorDesc &tensor) {
  for (int d = 0; d < tensor.rank; ++d)
    if (tensor.splitAxes[d])
      return true;
  return false;
}

void MeshLayout::pieces(const TensorDesc &tensor, int rank, int64_t *count,
                        int64_t *index) const {
  std::vector<int> at = coordinates(rank);
  for (int d = 0; d < tensor.rank; ++d) {
    // Mixed radix over the dim's axes, in mesh order (major first).
    count[d] = 1;
    index[d] = 0;
    for (size_t a = 0; a < sizes_.size(); ++a)
      if (tensor.splitAxes[d] & (1 << a)) {
        index[d] = index[d] * sizes_[a] + at[a];
        count[d] *= sizes_[a];
      }
  }
}

TensorDesc MeshLayout::local(const TensorDesc &tensor) const {
  TensorDesc out = tensor;
  if (!hasMesh())
    return out;
  int64_t count[kMaxRank], index[kMaxRank];
  pieces(tensor, rank_, count, index);
  for (int d = 0; d < tensor.rank; ++d) {
    if (tensor.shape[d] % count[d] != 0)
      throw Error(std::string("tensor ") + tensor.name + " of shape " +
                  shapeString(tensor) + ": dim " + std::to_string(d) +
                  " does not split into " + std::to_string(count[d]) +
                  " pieces");
    out.shape[d] = tensor.shape[d] / count[d];
  }
  return out;
}

void MeshLayout::region(const TensorDesc &tensor, int rank,
                        std::vector<int64_t> &offset,
                        std::vector<int64_t> &shape) const {
  int64_t count[kMaxRank], index[kMaxRank];
  pieces(tensor, rank, count, index);
  offset.assign(tensor.rank, 0);
  shape.assign(tensor.rank, 0);
  for (int d = 0; d < tensor.rank; ++d) {
    shape[d] = tensor.shape[d] / count[d];
    offset[d] = index[d] * shape[d];
  }
}

void MeshLayout::copy(const TensorDesc &tensor, const void *from, void *to,
                      int rank, bool toPiece) const {
  int64_t count[kMaxRank], index[kMaxRank];
  pieces(tensor, rank, count, index);
  const int n = tensor.rank;
  int64_t size = dtypeSize(tensor.dtype);
  if (n == 0) {
    std::memcpy(to, from, size);
    return;
  }
  int64_t localShape[kMaxRank], stride[kMaxRank];
  for (int d = 0; d < n; ++d)
    localShape[d] = tensor.shape[d] / count[d];
  stride[n - 1] = 1;
  for (int d = n - 1; d > 0; --d)
    stride[d - 1] = stride[d] * tensor.shape[d];
  int64_t localCount = 1;
  for (int d = 0; d < n; ++d)
    localCount *= localShape[d];
  if (localCount == 0)
    return;
  // Runs of the innermost dim, one per index of the outer local dims.
  int64_t run = localShape[n - 1] * size;
  int64_t runs = localCount / localShape[n - 1];
  int64_t j[kMaxRank] = {0};
  const char *src = static_cast<const char *>(from);
  char *dst = static_cast<char *>(to);
  for (int64_t r = 0; r < runs; ++r) {
    int64_t offset = index[n - 1] * localShape[n - 1];
    for (int d = 0; d < n - 1; ++d)
      offset += (index[d] * localShape[d] + j[d]) * stride[d];
    if (toPiece)
      std::memcpy(dst + r * run, src + offset * size, run);
    else
      std::memcpy(dst + offset * size, src + r * run, run);
    for (int d = n - 2; d >= 0; --d) {
      if (++j[d] < localShape[d])
        break;
      j[d] = 0;
    }
  }
}

void MeshLayout::cut(const TensorDesc &tensor, const void *whole, void *piece,
                     int rank) const {
  copy(tensor, whole, piece, rank, /*toPiece=*/true);
}

void MeshLayout::paste(const TensorDesc &tensor, const void *piece, void *whole,
                       int rank) const {
  copy(tensor, piece, whole, rank, /*toPiece=*/false);
}

int64_t MeshLayout::processes() const {
  int64_t count = 1;
  for (int64_t size : sizes_)
    count *= size;
  return count;
}

std::vector<std::vector<int>>
MeshLayout::pieceHolders(const TensorDesc &tensor) const {
  std::map<std::vector<int64_t>, size_t> pieceOf;
  std::vector<std::vector<int>> holders;
  for (int r = 0; r < processes(); ++r) {
    int64_t count[kMaxRank], index[kMaxRank];
    pieces(tensor, r, count, index);
    auto [it, added] = pieceOf.try_emplace(
        std::vector<int64_t>(index, index + tensor.rank), holders.size());
    if (added)
      holders.emplace_back();
    holders[it->second].push_back(r);
  }
  return holders;
}

std::vector<int> MeshLayout::pieceOwners(const TensorDesc &tensor) const {
  std::vector<int> owners;
  for (const std::vector<int> &holders : pieceHolders(tensor))
    owners.push_back(holders.front());
  return owners;
}

std::vector<std::vector<std::string>>
MeshLayout::splitNames(const TensorDesc &tensor) const {
  std::vector<std::vector<std::string>> names(tensor.rank);
  for (int d = 0; d < tensor.rank; ++d)
    for (size_t a = 0; a < sizes_.size(); ++a)
      if (tensor.splitAxes[d] & (1 << a))
        names[d].push_back(names_[a]);
  return names;
}

std::string MeshLayout::metadataJson(const ModelDesc &model) const {
  ShardedLayout layout = checkpointLayout(model);
  return consolidatedShardingJson(layout.mesh, layout.tensors);
}

ShardedLayout MeshLayout::checkpointLayout(const ModelDesc &model) const {
  ShardedLayout layout;
  // Bytes each process writes so far: a shared piece goes to the holder
  // with the fewest, so replicated tensors spread over the replicas.
  std::vector<int64_t> written(processes(), 0);
  for (size_t a = 0; a < sizes_.size(); ++a)
    layout.mesh.push_back({names_[a], sizes_[a]});
  auto add = [&](const std::string &name, const TensorDesc &tensor) {
    ShardedTensor entry;
    entry.name = name;
    entry.dtype = tensor.dtype;
    entry.shape = shapeOf(tensor);
    entry.fileShape = fileShapeOf(tensor);
    if (entry.fileShape == entry.shape)
      entry.fileShape.clear();
    entry.split = splitNames(tensor);
    for (const std::vector<int> &holders : pieceHolders(tensor)) {
      ShardPiece piece;
      region(tensor, holders.front(), piece.offset, piece.shape);
      piece.rank = holders.front();
      for (int r : holders)
        if (written[r] < written[piece.rank])
          piece.rank = r;
      int64_t bytes = dtypeSize(tensor.dtype);
      for (int64_t dim : piece.shape)
        bytes *= dim;
      written[piece.rank] += bytes;
      entry.pieces.push_back(std::move(piece));
    }
    layout.tensors.push_back(std::move(entry));
  };
  for (int i = 0; i < model.numParams; ++i)
    add(model.params[i].tensor.name, model.params[i].tensor);
  for (int i = 0; i < model.numState; ++i)
    add(stateTensorName(model.state[i]), model.state[i].tensor);
  return layout;
}

} // namespace tgc

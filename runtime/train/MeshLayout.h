//===- MeshLayout.h - Where this process sits in the mesh -------*- C++ -*-===//
//
// A step compiled for a device mesh (ModelDesc::mesh) runs on as many
// processes as the mesh has, each at the row-major coordinates of its rank.
// MeshLayout answers what the runtime needs from that outside the compiled
// step:
//  - the data replicas: processes that differ on an axis that splits the
//    batch train on different micro-batches; processes that differ only on
//    other axes (tensor-parallel peers) read the same ones;
//  - the pieces of split tensors (TensorDesc::splitAxes): which piece of a
//    parameter or optimizer state this process holds, to cut it from the
//    whole tensor (initialisation, --init-from, --resume), to write it into
//    a sharded checkpoint, and to put the pieces back together for a
//    consolidated one.
// Without a mesh every process is its own data replica and holds every
// tensor whole.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_MESHLAYOUT_H
#define TGC_RUNTIME_TRAIN_MESHLAYOUT_H

#include "runtime/checkpoint/ShardedCheckpoint.h"
#include "runtime/core/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

class MeshLayout {
public:
  /// The mesh of `model` for the process `rank` of `worldSize`. Throws
  /// tgc::Error, naming the mesh and both process counts, when the run has
  /// a different number of processes than the step was compiled for (an
  /// elastic axis takes the size the world size leaves it).
  MeshLayout(const ModelDesc &model, int rank, int worldSize);

  bool hasMesh() const { return !sizes_.empty(); }
  const std::vector<int64_t> &sizes() const { return sizes_; }
  /// "data=2,tp=2" (axis `autoAxis` as "data=auto").
  std::string describe(int autoAxis = -1) const;

  /// This process's data replica and the number of replicas (the rank and
  /// the world size without a mesh).
  int64_t replica() const { return replica_; }
  int64_t replicas() const { return replicas_; }
  /// Whether this process is the first of its replica (coordinate 0 on
  /// every axis that does not split the batch): it alone counts the
  /// replica's metrics.
  bool leadsReplica() const { return leadsReplica_; }

  /// Whether `tensor` is split over any mesh axis.
  static bool isSplit(const TensorDesc &tensor);
  /// What one process holds of `tensor`: the shape divided by the pieces.
  TensorDesc local(const TensorDesc &tensor) const;
  /// Where process `rank`'s piece of `tensor` lies in it: `offset` and
  /// `shape` per dim.
  void region(const TensorDesc &tensor, int rank, std::vector<int64_t> &offset,
              std::vector<int64_t> &shape) const;
  /// Copies process `rank`'s piece of the whole `tensor` at `whole` to
  /// `piece` (dense, the local shape).
  void cut(const TensorDesc &tensor, const void *whole, void *piece,
           int rank) const;
  /// The inverse: writes `piece`, process `rank`'s, into `whole`.
  void paste(const TensorDesc &tensor, const void *piece, void *whole,
             int rank) const;
  /// The processes holding each distinct piece of `tensor`, in rank order
  /// (pieces in the order of their first holder).
  std::vector<std::vector<int>> pieceHolders(const TensorDesc &tensor) const;
  /// The processes whose pieces of `tensor` make up the whole, one per
  /// piece (the lowest rank holding it).
  std::vector<int> pieceOwners(const TensorDesc &tensor) const;
  /// For checkpoint metadata: the mesh and each split as JSON,
  /// {"mesh":{"data":2},"layout":"consolidated"}.
  std::string metadataJson(const ModelDesc &model) const;
  /// What a sharded checkpoint of `model` holds: the parameters, then the
  /// optimizer state, each as its pieces (boxes of TensorDesc::shape; the
  /// file shape, where it differs, goes with them). A piece several
  /// processes hold is written by the one of them that has the fewest bytes
  /// to write so far, which spreads replicated tensors over the replicas.
  ShardedLayout checkpointLayout(const ModelDesc &model) const;

private:
  std::vector<int> coordinates(int rank) const;
  int64_t processes() const;
  /// The names of the mesh axes that split each dim of `tensor`.
  std::vector<std::vector<std::string>>
  splitNames(const TensorDesc &tensor) const;
  /// Per dim of `tensor`: the pieces it is cut into and process `rank`'s.
  void pieces(const TensorDesc &tensor, int rank, int64_t *count,
              int64_t *index) const;
  void copy(const TensorDesc &tensor, const void *from, void *to, int rank,
            bool toPiece) const;

  const ModelDesc &model_;
  int rank_;
  std::vector<std::string> names_;
  std::vector<int64_t> sizes_;
  std::vector<bool> splitsBatch_;
  int64_t replica_ = 0, replicas_ = 1;
  bool leadsReplica_ = true;
};

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_MESHLAYOUT_H

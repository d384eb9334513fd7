//===- ShardedCheckpoint.h - Checkpoints every rank writes ------*- C++ -*-===//
//
// A run over a mesh of several processes checkpoints without gathering:
// every process writes the pieces of the parameters and optimizer state it
// holds, and one index says how the pieces make up the whole tensors. The
// checkpoint is a directory
//
//   step_00000042/
//     index.json              {"format": "tgc-checkpoint-sharded-1",
//                              "model": "gpt2-tiny",
//                              "mesh": {"data": 2, "tp": 2},
//                              "metadata": {"step": "42", ...},
//                              "files": ["rank_00000.safetensors", ...],
//                              "tensors": {"fc1.weight": {
//                                 "dtype": "F32", "shape": [64, 256],
//                                 "split": [[], ["tp"]],
//                                 "pieces": [{"file": 0, "offset": [0, 0],
//                                             "shape": [64, 128]}, ...]},
//                               "h.0.attn.c_attn.weight": {
//                                 "dtype": "F32", "shape": [768, 3, 768],
//                                 "file_shape": [768, 2304],
//                                 "split": [[], [], ["tp"]], "pieces": ...},
//                               ...}}
//     rank_00000.safetensors  rank 0's pieces, each under its tensor's name,
//     rank_00001.safetensors  with their offsets in its metadata ("offsets")
//     ...
//
// "shape" is the shape the step held the tensor in (TensorDesc::shape):
// "split" and the pieces are in its coordinates. "file_shape", present only
// when it differs, is the shape files show (TensorDesc::fileShape), a
// row-major view of the same elements: tg-ckpt consolidate writes the
// tensor in it. A model that holds the tensor in another view of it (a run
// on one process holds c_attn.weight as [768, 2304]) still loads it: read
// whole, the bytes are the same; a box of the other view is cut from the
// whole tensor put together in memory (readBoxInView).
//
// A piece that several processes hold (a replicated tensor, or a tensor
// split over some axes only) is written once, by one of them, chosen so that
// the writing is spread over the ranks (MeshLayout::checkpointLayout).
//
// The directory appears whole or not at all: the ranks write into
// ".step_00000042.partial", and rank 0 renames it once every file and the
// index are on disk (commitShardedCheckpoint). A crash leaves the partial
// directory, which nothing reads and the next save of that step replaces.
//
// Reading does not care which mesh wrote the checkpoint: ShardedCheckpoint
// puts any tensor together from its pieces, so one process, or a run on
// another mesh, loads it (loadCheckpoint in Checkpoint.h takes either
// layout), and tg-ckpt consolidates it into one safetensors file.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H
#define TGC_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/core/Model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

constexpr const char *kShardedCheckpointFormat = "tgc-checkpoint-sharded-1";
constexpr const char *kShardedIndexName = "index.json";

/// One piece of a tensor: the box [offset, offset + shape) of the whole,
/// written by process `rank` (in a layout to write) or found in file
/// `file` of ShardedCheckpoint::files() (read back).
struct ShardPiece {
  int rank = -1;
  int file = -1;
  std::vector<int64_t> offset, shape;
};

/// A tensor of a sharded checkpoint: its whole shape, the mesh axes that
/// split each dim (for people and tg-ckpt; reading needs only the pieces),
/// and the pieces, which tile the whole exactly.
struct ShardedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The shape files show the tensor in, a row-major view of `shape` with
  /// the same elements; empty when it is `shape`.
  std::vector<int64_t> fileShape;
  std::vector<std::vector<std::string>> split;
  std::vector<ShardPiece> pieces;
};

/// What a mesh run writes: the mesh's axes in order, and the tensors.
struct ShardedLayout {
  std::vector<std::pair<std::string, int64_t>> mesh;
  std::vector<ShardedTensor> tensors;
};

/// The "sharding" metadata of a consolidated checkpoint of tensors that had
/// been split over `mesh`, for people: {"mesh":{"data":2},
/// "layout":"consolidated","split":{"fc1.weight":[[],["data"]],...}}
/// (split tensors only), and, when a split tensor was held in another view
/// than its file shape, the view its split refers to:
/// "views":{"h.0.attn.c_attn.weight":[768,3,768]}.
std::string consolidatedShardingJson(
    const std::vector<std::pair<std::string, int64_t>> &mesh,
    const std::vector<ShardedTensor> &tensors);

/// "<dir>/step_00000042".
std::string shardedCheckpointPath(const std::string &dir, int64_t step);
/// "<dir>/.step_00000042.partial", where the ranks write before the commit.
std::string partialCheckpointPath(const std::string &dir, int64_t step);
/// "rank_00003.safetensors".
std::string shardFileName(int rank);

/// Whether `path` is a directory holding an index.json.
bool isShardedCheckpoint(const std::string &path);

/// Empties (or creates) the partial directory; rank 0 calls it before the
/// ranks write.
void preparePartialCheckpoint(const std::string &partial);

/// Writes process `rank`'s pieces into `<partial>/rank_NNNNN.safetensors`:
/// `local[i]` is this process's copy of tensor i of the layout (its piece:
/// the tensor whole when unsplit). Writes nothing when the rank writes no
/// piece.
void writeCheckpointShard(const std::string &partial,
                          const ShardedLayout &layout, int rank,
                          const std::vector<const void *> &local,
                          const std::string &model);

/// Rank 0, after every rank wrote its shard: writes the index and renames
/// `partial` to `target` (replacing an older checkpoint of that step).
void commitShardedCheckpoint(
    const std::string &partial, const std::string &target,
    const ShardedLayout &layout, const std::string &model,
    const std::map<std::string, std::string> &metadata);

/// Removes a sharded checkpoint directory (its index and shard files).
void removeShardedCheckpoint(const std::string &path);

/// A sharded checkpoint opened for reading. The constructor checks the
/// index (format, JSON fields, dtypes, that each tensor's pieces lie inside
/// it and tile it without gaps or overlaps) and throws tgc::Error naming the
/// file and the problem; the shard files are opened, and each piece checked
/// against its entry, when a tensor is read.
class ShardedCheckpoint {
public:
  explicit ShardedCheckpoint(const std::string &dir);
  ~ShardedCheckpoint();

  const std::string &path() const { return dir_; }
  const std::string &indexPath() const { return indexPath_; }
  const std::string &model() const { return model_; }
  const std::vector<std::pair<std::string, int64_t>> &mesh() const {
    return mesh_;
  }
  /// The index's metadata, plus "format" and "model".
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  const std::vector<std::string> &files() const { return files_; }
  /// In the index's order (the model's: parameters, then state).
  const std::vector<ShardedTensor> &tensors() const { return tensors_; }
  const ShardedTensor *find(const std::string &name) const;

  /// Puts `tensor` together into `whole` (its dtype, row-major, the whole
  /// shape).
  void read(const ShardedTensor &tensor, void *whole) const;
  /// The box [offset, offset + shape) of `tensor` into `dst` (dense): only
  /// the shard files holding a part of it are read.
  void readBox(const ShardedTensor &tensor, const std::vector<int64_t> &offset,
               const std::vector<int64_t> &shape, void *dst) const;
  /// readBox with `offset` and `shape` in the coordinates of `view`, a
  /// row-major view of the tensor's elements (the shape a model holds it
  /// in, which may differ from the shape it was written in). The whole view
  /// reads the pieces as they are (same bytes); a box of another view is
  /// copied out of the whole tensor, put together in a temporary buffer.
  /// Throws tgc::Error naming the tensor when `view` does not hold as many
  /// elements.
  void readBoxInView(const ShardedTensor &tensor,
                     const std::vector<int64_t> &view,
                     const std::vector<int64_t> &offset,
                     const std::vector<int64_t> &shape, void *dst) const;

private:
  /// Shard file `index` of files(), opened on first use.
  const SafetensorsFile &file(size_t index) const;
  /// Where the piece of `name` in shard file `file` sits (its "offsets"
  /// metadata); empty when the file does not say.
  std::vector<int64_t> pieceOffset(size_t file, const std::string &name) const;

  std::string dir_, indexPath_, model_;
  std::vector<std::pair<std::string, int64_t>> mesh_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::string> files_;
  std::vector<ShardedTensor> tensors_;
  std::map<std::string, size_t> byName_;
  mutable std::vector<std::unique_ptr<SafetensorsFile>> opened_;
  mutable std::vector<std::map<std::string, std::vector<int64_t>>> offsets_;
};

/// Copies the part of the dense box `src` (at `srcOffset` of a tensor,
/// shape `srcShape`) that lies in the dense box `dst` (at `dstOffset`,
/// shape `dstShape`) into it; elements of `elementSize` bytes.
void copyBox(const void *src, const std::vector<int64_t> &srcOffset,
             const std::vector<int64_t> &srcShape, void *dst,
             const std::vector<int64_t> &dstOffset,
             const std::vector<int64_t> &dstShape, int64_t elementSize);

} // namespace tgc

#endif // TGC_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H

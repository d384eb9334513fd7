//===- Checkpoint.h - Model checkpoints as safetensors ----------*- C++ -*-===//
//
// A checkpoint is one safetensors file holding every parameter under its
// ModelDesc name and every optimizer state buffer as "<param>.<slot>", plus
// metadata strings:
//
//   format         "tgc-checkpoint-1"
//   model          ModelDesc::name
//   step           the last step taken
//   data_position  the training loader's DataPosition as JSON
//   sharding       JSON: {"world_size":1,"rank":0,"layout":"replicated"};
//                  for a step partitioned over a mesh, the mesh and how
//                  each split tensor was split there:
//                  {"mesh":{"data":2},"layout":"consolidated",
//                   "split":{"fc1.weight":[[],["data"]],...}}
//                  Tensors are always whole (rank 0 writes them once the
//                  pieces are gathered), so any mesh, or one process,
//                  loads them.
//   ...            whatever else the caller adds (seed, batch size, the
//                  first validation loss)
//
// Files are named "<dir>/step_<8 digits>.safetensors" so the latest sorts
// last. A run over several processes writes a sharded checkpoint instead,
// the directory "<dir>/step_<8 digits>" (ShardedCheckpoint.h): each rank its
// pieces, plus an index. Loading takes either layout onto any mesh (or one
// process), checks every tensor against the model and names the file, the
// tensor and both shapes on a mismatch.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define TGC_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/core/Model.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

using Metadata = std::map<std::string, std::string>;

constexpr const char *kCheckpointFormat = "tgc-checkpoint-1";

/// "<param>.<slot>", the checkpoint name of an optimizer state buffer.
std::string stateTensorName(const StateDesc &state);

/// Writes params and optimizer state with `metadata` (format and model are
/// added) to `path` atomically.
void saveCheckpoint(const std::string &path, const ModelDesc &model,
                    void *const *params, void *const *state,
                    const Metadata &metadata);

/// Where loadCheckpoint puts one tensor: `data` holds the box [offset,
/// offset + shape) of it, dense (a process's piece), or the whole tensor
/// when `shape` is empty.
struct LoadTarget {
  void *data = nullptr;
  std::vector<int64_t> offset, shape;
};

/// Loads a checkpoint written by saveCheckpoint, or a sharded one written
/// on any mesh, into `params` and `state` (one target per tensor of the
/// model) and returns its metadata. From a sharded checkpoint only the
/// shard files that hold a part of a target are read. Every param and
/// state tensor must be there with the model's shape and dtype, and
/// nothing else may be; otherwise throws an Error naming the file and the
/// first difference.
Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        const std::vector<LoadTarget> &params,
                        const std::vector<LoadTarget> &state);

/// loadCheckpoint into the model's whole buffers.
/// Every param and state tensor must be there with the model's shape and dtype,
/// and nothing else may be; otherwise throws an Error naming the file and the
/// first difference.
Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        void **params, void **state);

/// Loads only the parameters (--init-from: weights from PyTorch or another
/// run). Every parameter must be present with the model's shape; float
/// tensors are converted between F32, BF16 and F16. Tensors the model does
/// not have are skipped and returned in `ignored` (comma separated).
void loadParams(const std::string &path, const ModelDesc &model,
                void **params, std::string *ignored = nullptr);

/// Loads one tensor `key` of `path` into `dst` described by `tensor`
/// (InitKind::File), converting float dtypes.
void loadTensor(const std::string &path, const std::string &key,
                const TensorDesc &tensor, void *dst);

/// "<dir>/step_00000042.safetensors".
std::string checkpointPath(const std::string &dir, int64_t step);

/// The checkpoints (files and sharded directories) in `dir` by step, lowest
/// first; throws when `dir` cannot be read.
std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &dir);

/// The checkpoint (file or sharded directory) with the highest step in
/// `dir`, or "" when there is none; throws when `dir` cannot be read.
std::string latestCheckpoint(const std::string &dir);

/// --resume takes a checkpoint directory (its latest checkpoint), a
/// sharded checkpoint or a file.
std::string resolveResumePath(const std::string &dirOrFile);

/// Creates `dir` (and its parents) and checks that a file can be created in
/// it, so a bad --checkpoint-dir fails before training, not after an hour.
void prepareCheckpointDir(const std::string &dir);

} // namespace tgc

#endif // TGC_RUNTIME_CHECKPOINT_CHECKPOINT_H

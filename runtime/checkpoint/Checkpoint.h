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
//                  loads them. A split tensor the step held in another
//                  view than its file shape is listed under "views" with
//                  that view, which its "split" refers to.
//   ...            whatever else the caller adds (seed, batch size, the
//                  first validation loss)
//
// Every tensor is stored in its file shape (TensorDesc::fileShape: GPT-2's
// c_attn.weight is [768, 2304] even where the step holds it as
// [768, 3, 768]), so a checkpoint of a tensor-parallel run and one of a
// single process look the same. Loading accepts a tensor stored in either
// the file shape or the model's own (row-major views of the same elements);
// a process's piece is a box of the model's shape.
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
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

using Metadata = std::map<std::string, std::string>;

struct SafetensorsTensor;

constexpr const char *kCheckpointFormat = "tgc-checkpoint-1";

/// "<param>.<slot>", the checkpoint name of an optimizer state buffer.
std::string stateTensorName(const StateDesc &state);

/// Writes params and optimizer state, each in its file shape, with
/// `metadata` (format and model are added) to `path` atomically.
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
/// model; a target's box is in the coordinates of TensorDesc::shape) and
/// returns its metadata. From a sharded checkpoint only the shard files
/// that hold a part of a target are read (all of them for a box of a
/// tensor written in another view). Every param and state tensor must be
/// there with the model's dtype and its shape or file shape, and nothing
/// else may be; otherwise throws an Error naming the file and the first
/// difference.
Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        const std::vector<LoadTarget> &params,
                        const std::vector<LoadTarget> &state);

/// loadCheckpoint into the model's whole buffers.
Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        void **params, void **state);

/// Loads only the parameters (--init-from: weights from PyTorch or another
/// run). Every parameter must be present with the model's shape or file
/// shape; float tensors are converted between F32, BF16 and F16. Tensors
/// the model does not have are skipped and returned in `ignored` (comma
/// separated). Parameters named in `optional` (LoRA adapters, which a base
/// model's weights lack) may be absent and are then left as they are.
void loadParams(const std::string &path, const ModelDesc &model, void **params,
                std::string *ignored = nullptr,
                const std::set<std::string> &optional = {});

/// Loads one tensor `key` of `path` into `dst` described by `tensor`
/// (InitKind::File), stored in its shape or file shape, converting float
/// dtypes.
void loadTensor(const std::string &path, const std::string &key,
                const TensorDesc &tensor, void *dst);

/// Loads `found` (a tensor read from `path`, under the name `name` there)
/// into `dst` described by `tensor`: its shape must be the model's shape or
/// file shape, float dtypes are converted, and a NaN or an infinity is an
/// error naming the file and the tensor.
void loadFoundTensor(const std::string &path, const SafetensorsTensor &found,
                     const std::string &name, const TensorDesc &tensor,
                     void *dst);

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

//===- Init.h - Parameter initialisation from InitSpec ------------*- C++ -*-===//
//
// Fills a parameter as its InitSpec says, with a seeded Rng so a run is
// reproducible. Each parameter draws from its own stream keyed by the seed
// and its name, in chunks of 65536 elements with a stream each, so the
// values depend neither on the order of the parameters nor on the number of
// threads. The whole tensor is drawn in row-major element order, which a
// view of it (TensorDesc::fileShape) shares: a parameter gets the same
// values whether the step holds it as [768, 2304] or as [768, 3, 768], and
// a process's piece is cut from them.
//
// Fans (PyTorch's conventions, adapted to tgc's [in, out] matrices), of the
// file shape:
//   rank 1            fan_in = fan_out = shape[0]
//   rank 2 [in, out]  fan_in = in, fan_out = out
//   rank >= 3 [O, I, k...] (convolutions)
//                     fan_in = I * prod(k), fan_out = O * prod(k)
// Kinds:
//   normal            mean + std * N(0, 1)
//   uniform           U(low, high)
//   xavier_uniform    U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))
//   xavier_normal     std = gain * sqrt(2 / (fan_in + fan_out))
//   kaiming_uniform   U(-b, b), b = gain * sqrt(3 / fan_in)
//   kaiming_normal    std = gain / sqrt(fan_in)
//   file              tensor `key` of the safetensors file `file`, in the
//                     parameter's file shape or its own
// A gain of 0 means "unset" and is taken as 1.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_INIT_H
#define TGC_RUNTIME_TRAIN_INIT_H

#include "runtime/core/Model.h"

#include <cstdint>

namespace tgc {

struct Fans {
  int64_t fanIn, fanOut;
};

Fans computeFans(const TensorDesc &tensor);

/// Initialises one parameter into `dst` (numElements x dtypeSize bytes).
/// Throws tgc::Error for a random init of an integer parameter or a file
/// that lacks the tensor.
void initParam(const ParamDesc &param, void *dst, uint64_t seed);

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_INIT_H

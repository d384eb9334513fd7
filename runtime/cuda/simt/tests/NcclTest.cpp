//===- NcclTest.cpp - The host NCCL stand-in under mpirun -------*- C++ -*-===//
//
// Checks runtime/cuda/simt/Nccl.cpp on the host CUDA runtime: every
// collective, in fp32, bf16 and a few more types, in place and out of place,
// against values computed here by folding every rank's inputs in rank order
// (so a pass also shows that every rank got the same bits); sends and
// receives in a group, and each on its own stream, the sending stream
// synchronized first; split communicators (the axes of a 2x2 mesh on four
// ranks); and the argument errors NCCL reports. Scenarios:
//
//   all (default)  collectives, streams, split and errors
//   collectives    every collective over the world communicator
//   streams        a send on one stream and a receive on another, between
//                  pairs of ranks (0 and 1, 2 and 3, ...)
//   split          ncclCommSplit, and collectives over the parts
//   errors         argument errors and their ncclGetLastError messages
//   needs-mpirun   run without mpirun: a two-rank init fails, naming mpirun
//
// Run alone (one rank, no MPI at all) or under mpirun with the flags of
// runtime/comm/tests/run_comm_test.sh:
//   mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo
//     --mca oob_tcp_if_include lo [--allow-run-as-root] -np 4 NcclTest all
// Rank 0 prints "nccl stand-in ok on N ranks" and every rank exits 0; a
// mismatch prints "rank R: ..." and ends the job with a non-zero exit.
//
// Build (plain C++: no kernels are launched):
//   g++ -std=c++17 -I. -I/usr/local/cuda/include $(mpicxx --showme:compile)
//     runtime/cuda/simt/tests/NcclTest.cpp runtime/cuda/simt/Nccl.cpp
//     runtime/cuda/simt/Runtime.cpp runtime/cuda/simt/Scheduler.cpp
//     $(mpicxx --showme:link)
//
//===----------------------------------------------------------------------===//

// The C API only: Open MPI's and MPICH's C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

int worldRank = 0, worldSize = 1;
bool underMpi = false;

[[noreturn]] void failTest(const std::string &what) {
  std::fprintf(stderr, "rank %d: %s\n", worldRank, what.c_str());
  std::fflush(stderr);
  if (underMpi)
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

void expect(bool ok, const std::string &what) {
  if (!ok)
    failTest("check failed: " + what);
}

void checkNccl(ncclResult_t result, const std::string &call) {
  if (result != ncclSuccess)
    failTest(call + " returned " + ncclGetErrorString(result) + ": " +
             ncclGetLastError(nullptr));
}

void checkCuda(cudaError_t error, const std::string &call) {
  if (error != cudaSuccess)
    failTest(call + ": " + cudaGetErrorName(error));
}

/// `call` must fail with `code`, and ncclGetLastError must mention `words`.
void expectError(ncclResult_t result, ncclResult_t code, const char *words,
                 const std::string &call) {
  std::string last = ncclGetLastError(nullptr);
  if (result != code)
    failTest(call + " returned " + ncclGetErrorString(result) + ", not " +
             ncclGetErrorString(code) + " (last error: " + last + ")");
  if (last.find(words) == std::string::npos)
    failTest(call + ": the last error '" + last + "' does not mention '" +
             words + "'");
}

//===----------------------------------------------------------------------===//
// Types and the reference fold
//===----------------------------------------------------------------------===//

uint64_t mix(uint64_t x) { // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Values with a full mantissa's worth of bits, so that a different
/// summation order would round differently.
double sample(int rank, size_t i, uint64_t salt) {
  uint64_t h = mix(salt * 1000003u + uint64_t(rank) * 7919u + i);
  return (double(h % 20001) - 10000.0) / 1024.0 *
         (1.0 + double(h >> 40) / double(1 << 24));
}

uint16_t bf16FromFloat(float value) { // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float floatFromBf16(uint16_t half) {
  uint32_t bits = uint32_t(half) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

struct F32 {
  using T = float;
  using Acc = float;
  static constexpr ncclDataType_t type = ncclFloat32;
  static constexpr const char *name = "f32";
  static T make(double v) { return static_cast<float>(v); }
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};

struct F64 {
  using T = double;
  using Acc = double;
  static constexpr ncclDataType_t type = ncclFloat64;
  static constexpr const char *name = "f64";
  static T make(double v) { return v; }
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};

/// Folded in float, rounded to bf16 once.
struct BF16 {
  using T = uint16_t;
  using Acc = float;
  static constexpr ncclDataType_t type = ncclBfloat16;
  static constexpr const char *name = "bf16";
  static T make(double v) { return bf16FromFloat(static_cast<float>(v)); }
  static Acc load(T v) { return floatFromBf16(v); }
  static T store(Acc v) { return bf16FromFloat(v); }
};

struct F16 {
  using T = uint16_t;
  using Acc = float;
  static constexpr ncclDataType_t type = ncclFloat16;
  static constexpr const char *name = "f16";
  static T make(double v) { return store(static_cast<float>(v)); }
  static Acc load(T v) {
    __half_raw raw;
    raw.x = v;
    return __half2float(__half(raw));
  }
  static T store(Acc v) {
    __half_raw raw = __float2half_rn(v);
    return raw.x;
  }
};

template <typename Int, ncclDataType_t Type> struct Integer {
  using T = Int;
  using Acc = Int;
  static constexpr ncclDataType_t type = Type;
  static constexpr const char *name = "int";
  static T make(double v) {
    // Small values, negative ones for signed types: sums stay in range,
    // products wrap as on the device.
    long long whole = static_cast<long long>(std::floor(v));
    if (std::is_unsigned_v<Int>)
      whole = (whole + 20) * 3;
    return static_cast<T>(whole);
  }
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};
using I32 = Integer<int32_t, ncclInt32>;
using I64 = Integer<int64_t, ncclInt64>;
using U8 = Integer<uint8_t, ncclUint8>;
using I8 = Integer<int8_t, ncclInt8>;

template <typename Acc> Acc combine(ncclRedOp_t op, Acc a, Acc b) {
  if constexpr (std::is_floating_point_v<Acc>) {
    if (op == ncclProd)
      return a * b;
    if (op == ncclMax)
      return std::fmax(a, b);
    if (op == ncclMin)
      return std::fmin(a, b);
    return a + b;
  } else {
    using U = std::make_unsigned_t<Acc>;
    if (op == ncclProd)
      return static_cast<Acc>(static_cast<U>(a) * static_cast<U>(b));
    if (op == ncclMax)
      return std::max(a, b);
    if (op == ncclMin)
      return std::min(a, b);
    return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(b));
  }
}

template <typename C>
std::vector<typename C::T> inputs(int rank, size_t count, uint64_t salt) {
  std::vector<typename C::T> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = C::make(sample(rank, i, salt));
  return values;
}

/// Element `offset + i` of the members' inputs, folded in member order.
template <typename C>
std::vector<typename C::T> folded(const std::vector<int> &members, size_t total,
                                  size_t offset, size_t count, ncclRedOp_t op,
                                  uint64_t salt) {
  std::vector<typename C::Acc> acc(count);
  for (size_t m = 0; m < members.size(); ++m) {
    std::vector<typename C::T> in = inputs<C>(members[m], total, salt);
    for (size_t i = 0; i < count; ++i)
      acc[i] = m == 0 ? C::load(in[offset + i])
                      : combine(op, acc[i], C::load(in[offset + i]));
  }
  std::vector<typename C::T> result(count);
  for (size_t i = 0; i < count; ++i)
    result[i] = C::store(
        op == ncclAvg ? acc[i] / static_cast<typename C::Acc>(members.size())
                      : acc[i]);
  return result;
}

template <typename C>
void compare(const std::vector<typename C::T> &got,
             const std::vector<typename C::T> &want, const std::string &what) {
  expect(got.size() == want.size(), what + ": sizes differ");
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(got[i])) != 0)
      failTest(what + ": element " + std::to_string(i) + " is " +
               std::to_string(double(C::load(got[i]))) + ", expected " +
               std::to_string(double(C::load(want[i]))) + " (bits differ)");
}

//===----------------------------------------------------------------------===//
// Device buffers
//===----------------------------------------------------------------------===//

constexpr unsigned char kSentinel = 0xa5;

/// cudaMalloc'd bytes, filled with kSentinel.
struct Buffer {
  explicit Buffer(size_t bytes) : bytes(bytes) {
    checkCuda(cudaMalloc(&data, std::max<size_t>(bytes, 1)), "cudaMalloc");
    checkCuda(cudaMemset(data, kSentinel, std::max<size_t>(bytes, 1)),
              "cudaMemset");
  }
  ~Buffer() { cudaFree(data); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  template <typename T>
  void upload(const std::vector<T> &values, size_t offsetElems = 0) {
    checkCuda(cudaMemcpy(static_cast<T *>(data) + offsetElems, values.data(),
                         values.size() * sizeof(T), cudaMemcpyHostToDevice),
              "cudaMemcpy to the device");
  }
  template <typename T>
  std::vector<T> download(size_t count, size_t offsetElems = 0) const {
    std::vector<T> values(count);
    checkCuda(cudaMemcpy(values.data(), static_cast<T *>(data) + offsetElems,
                         count * sizeof(T), cudaMemcpyDeviceToHost),
              "cudaMemcpy to the host");
    return values;
  }
  template <typename T> T *at(size_t offsetElems = 0) const {
    return static_cast<T *>(data) + offsetElems;
  }
  /// Reads the first byte without synchronizing (device memory is host
  /// memory here): the collective must not have run yet.
  void expectNotRunYet(const std::string &what) const {
    expect(*static_cast<const unsigned char *>(data) == kSentinel,
           what + " wrote its output before the stream was synchronized");
  }

  void *data = nullptr;
  size_t bytes;
};

/// A communicator and which world ranks it holds, in its rank order.
struct Group {
  ncclComm_t comm = nullptr;
  std::vector<int> members;
  int index = 0; ///< this process's rank in it
  std::string name;
};

std::string caseName(const char *collective, const char *type, size_t count,
                     bool inPlace, const Group &g, const char *op = "") {
  return std::string(collective) + " " + type + (op[0] ? " " : "") + op +
         " of " + std::to_string(count) + (inPlace ? " in place" : "") +
         " over " + g.name;
}

const char *opName(ncclRedOp_t op) {
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return names[op];
}

void sync(cudaStream_t stream) {
  checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// The collectives
//===----------------------------------------------------------------------===//

uint64_t nextSalt = 1;

template <typename C>
void allReduce(const Group &g, ncclRedOp_t op, size_t count, bool inPlace,
               cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  std::string what =
      caseName("ncclAllReduce", C::name, count, inPlace, g, opName(op));
  Buffer send(count * sizeof(T)), separate(inPlace ? 0 : count * sizeof(T));
  Buffer &recv = inPlace ? send : separate;
  send.upload(inputs<C>(worldRank, count, salt));
  checkNccl(
      ncclAllReduce(send.data, recv.data, count, C::type, op, g.comm, stream),
      what);
  if (!inPlace)
    recv.expectNotRunYet(what);
  sync(stream);
  compare<C>(recv.template download<T>(count),
             folded<C>(g.members, count, 0, count, op, salt), what);
}

template <typename C>
void reduceScatter(const Group &g, ncclRedOp_t op, size_t count, bool inPlace,
                   cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  size_t n = g.members.size(), total = count * n;
  std::string what =
      caseName("ncclReduceScatter", C::name, count, inPlace, g, opName(op));
  Buffer send(total * sizeof(T)), separate(inPlace ? 0 : count * sizeof(T));
  // In place, as NCCL defines it: recvbuff is this rank's piece of sendbuff.
  T *recv = inPlace ? send.at<T>(g.index * count) : separate.at<T>();
  send.upload(inputs<C>(worldRank, total, salt));
  checkNccl(
      ncclReduceScatter(send.data, recv, count, C::type, op, g.comm, stream),
      what);
  if (!inPlace)
    separate.expectNotRunYet(what);
  sync(stream);
  std::vector<T> got(count);
  checkCuda(
      cudaMemcpy(got.data(), recv, count * sizeof(T), cudaMemcpyDeviceToHost),
      "cudaMemcpy");
  compare<C>(got, folded<C>(g.members, total, g.index * count, count, op, salt),
             what);
}

template <typename C>
void allGather(const Group &g, size_t count, bool inPlace,
               cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  size_t n = g.members.size();
  std::string what = caseName("ncclAllGather", C::name, count, inPlace, g);
  Buffer recv(count * n * sizeof(T)), separate(inPlace ? 0 : count * sizeof(T));
  // In place: sendbuff is this rank's piece of recvbuff.
  T *send = inPlace ? recv.at<T>(g.index * count) : separate.at<T>();
  std::vector<T> mine = inputs<C>(worldRank, count, salt);
  checkCuda(
      cudaMemcpy(send, mine.data(), count * sizeof(T), cudaMemcpyHostToDevice),
      "cudaMemcpy");
  checkNccl(ncclAllGather(send, recv.data, count, C::type, g.comm, stream),
            what);
  if (g.index != 0 || !inPlace)
    recv.expectNotRunYet(what);
  sync(stream);
  std::vector<T> want;
  for (int member : g.members) {
    std::vector<T> piece = inputs<C>(member, count, salt);
    want.insert(want.end(), piece.begin(), piece.end());
  }
  compare<C>(recv.template download<T>(count * n), want, what);
}

template <typename C>
void broadcast(const Group &g, int root, size_t count, bool inPlace,
               cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  std::string what = caseName("ncclBroadcast", C::name, count, inPlace, g) +
                     " from rank " + std::to_string(root);
  Buffer recv(count * sizeof(T)), separate(inPlace ? 0 : count * sizeof(T));
  bool isRoot = g.index == root;
  // Out of place, sendbuff is read on the root only: the others pass null.
  void *send = inPlace ? recv.data : isRoot ? separate.data : nullptr;
  if (isRoot) {
    std::vector<T> mine = inputs<C>(worldRank, count, salt);
    checkCuda(cudaMemcpy(send, mine.data(), count * sizeof(T),
                         cudaMemcpyHostToDevice),
              "cudaMemcpy");
  }
  checkNccl(
      ncclBroadcast(send, recv.data, count, C::type, root, g.comm, stream),
      what);
  if (!isRoot)
    recv.expectNotRunYet(what);
  sync(stream);
  compare<C>(recv.template download<T>(count),
             inputs<C>(g.members[root], count, salt), what);
}

template <typename C>
void reduce(const Group &g, ncclRedOp_t op, int root, size_t count,
            bool inPlace, cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  std::string what =
      caseName("ncclReduce", C::name, count, inPlace, g, opName(op)) +
      " to rank " + std::to_string(root);
  Buffer send(count * sizeof(T)), separate(inPlace ? 0 : count * sizeof(T));
  Buffer &recv = inPlace ? send : separate;
  std::vector<T> mine = inputs<C>(worldRank, count, salt);
  send.upload(mine);
  checkNccl(ncclReduce(send.data, recv.data, count, C::type, op, root, g.comm,
                       stream),
            what);
  sync(stream);
  std::vector<T> got = recv.template download<T>(count);
  if (g.index == root) {
    compare<C>(got, folded<C>(g.members, count, 0, count, op, salt), what);
  } else if (inPlace) {
    compare<C>(got, mine, what + " (a non-root's buffer)");
  } else {
    std::vector<unsigned char> bytes(count * sizeof(T));
    std::memcpy(bytes.data(), got.data(), bytes.size());
    expect(std::all_of(bytes.begin(), bytes.end(),
                       [](unsigned char b) { return b == kSentinel; }),
           what + ": a non-root's recvbuff was written");
  }
}

/// A ring: each rank sends to the next and receives from the previous, the
/// receive first on odd ranks, in one group.
template <typename C>
void sendRecvRing(const Group &g, size_t count, cudaStream_t stream) {
  using T = typename C::T;
  uint64_t salt = nextSalt++;
  int n = static_cast<int>(g.members.size());
  int next = (g.index + 1) % n, previous = (g.index + n - 1) % n;
  std::string what = std::string("ncclSend/ncclRecv ring of ") +
                     std::to_string(count) + " " + C::name + " over " + g.name;
  Buffer send(count * sizeof(T)), recv(count * sizeof(T));
  send.upload(inputs<C>(worldRank, count, salt));
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  if (g.index % 2) {
    checkNccl(ncclRecv(recv.data, count, C::type, previous, g.comm, stream),
              what);
    checkNccl(ncclSend(send.data, count, C::type, next, g.comm, stream), what);
  } else {
    checkNccl(ncclSend(send.data, count, C::type, next, g.comm, stream), what);
    checkNccl(ncclRecv(recv.data, count, C::type, previous, g.comm, stream),
              what);
  }
  checkNccl(ncclGroupEnd(), "ncclGroupEnd");
  recv.expectNotRunYet(what);
  sync(stream);
  compare<C>(recv.template download<T>(count),
             inputs<C>(g.members[previous], count, salt), what);
}

/// Two all-reduces on two streams in one group: one unit of work.
void groupOnTwoStreams(const Group &g, cudaStream_t a, cudaStream_t b) {
  uint64_t salt = nextSalt++;
  size_t count = 300;
  Buffer x(count * 4), y(count * 2);
  x.upload(inputs<F32>(worldRank, count, salt));
  y.upload(inputs<BF16>(worldRank, count, salt + 1000));
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  checkNccl(
      ncclAllReduce(x.data, x.data, count, ncclFloat32, ncclSum, g.comm, a),
      "ncclAllReduce in a group");
  checkNccl(
      ncclAllReduce(y.data, y.data, count, ncclBfloat16, ncclAvg, g.comm, b),
      "ncclAllReduce in a group");
  checkNccl(ncclGroupEnd(), "ncclGroupEnd");
  sync(b); // the group joined the streams: b waits for the unit on a
  compare<BF16>(y.download<uint16_t>(count),
                folded<BF16>(g.members, count, 0, count, ncclAvg, salt + 1000),
                "bf16 avg in a group on two streams");
  sync(a);
  compare<F32>(x.download<float>(count),
               folded<F32>(g.members, count, 0, count, ncclSum, salt),
               "f32 sum in a group on two streams");
}

template <typename C>
void everyCollective(const Group &g, const std::vector<size_t> &counts,
                     const std::vector<ncclRedOp_t> &ops, cudaStream_t stream) {
  int n = static_cast<int>(g.members.size());
  for (bool inPlace : {false, true})
    for (size_t count : counts) {
      for (ncclRedOp_t op : ops) {
        allReduce<C>(g, op, count, inPlace, stream);
        reduceScatter<C>(g, op, count, inPlace, stream);
        reduce<C>(g, op, count % n, count, inPlace, stream);
      }
      allGather<C>(g, count, inPlace, stream);
      broadcast<C>(g, (count + 1) % n, count, inPlace, stream);
    }
}

void collectives(const Group &world) {
  cudaStream_t stream, other;
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
  checkCuda(cudaStreamCreate(&other), "cudaStreamCreate");
  const std::vector<size_t> counts = {1, 3, 7, 1000, 4099};
  const std::vector<ncclRedOp_t> all = {ncclSum, ncclProd, ncclMax, ncclMin,
                                        ncclAvg};
  everyCollective<F32>(world, counts, all, stream);
  everyCollective<BF16>(world, counts, all, stream);
  // The legacy default stream, and the other types.
  everyCollective<F16>(world, {5, 1000}, {ncclSum, ncclAvg}, nullptr);
  everyCollective<F64>(world, {5, 1000}, {ncclSum, ncclMax}, stream);
  everyCollective<I32>(world, {5, 100}, {ncclSum, ncclProd, ncclAvg}, stream);
  everyCollective<I64>(world, {5}, {ncclSum, ncclMin}, stream);
  everyCollective<U8>(world, {5, 100}, {ncclSum, ncclMax, ncclProd}, stream);
  everyCollective<I8>(world, {5}, {ncclSum, ncclMin}, stream);
  // More than a megabyte, in place, as NcclComm reduces gradient buckets.
  allReduce<F32>(world, ncclSum, (size_t(1) << 20) + 3, true, stream);
  allReduce<BF16>(world, ncclAvg, (size_t(1) << 19) + 5, true, stream);

  // Count 0 is no work, whatever the buffers.
  checkNccl(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, world.comm,
                          stream),
            "ncclAllReduce of 0 elements");
  checkNccl(
      ncclAllGather(nullptr, nullptr, 0, ncclBfloat16, world.comm, stream),
      "ncclAllGather of 0 elements");

  if (world.members.size() > 1) {
    sendRecvRing<F32>(world, 1001, stream);
    sendRecvRing<BF16>(world, 77, stream);
  }
  groupOnTwoStreams(world, stream, other);

  // Several collectives queued before one synchronization run in order.
  uint64_t salt = nextSalt++;
  size_t count = 64;
  Buffer x(count * 4);
  x.upload(inputs<F32>(worldRank, count, salt));
  for (int i = 0; i < 3; ++i)
    checkNccl(ncclAllReduce(x.data, x.data, count, ncclFloat32, ncclSum,
                            world.comm, stream),
              "queued ncclAllReduce");
  sync(stream);
  // The second and third fold n equal values in rank order.
  std::vector<float> want =
      folded<F32>(world.members, count, 0, count, ncclSum, salt);
  for (int i = 0; i < 2; ++i)
    for (float &v : want) {
      float sum = v;
      for (size_t r = 1; r < world.members.size(); ++r)
        sum += v;
      v = sum;
    }
  compare<F32>(x.download<float>(count), want, "three queued all-reduces");

  ncclResult_t state = ncclInProgress;
  checkNccl(ncclCommGetAsyncError(world.comm, &state), "ncclCommGetAsyncError");
  expect(state == ncclSuccess, "the async error after the collectives is " +
                                   std::string(ncclGetErrorString(state)));
  cudaStreamDestroy(stream);
  cudaStreamDestroy(other);
}

//===----------------------------------------------------------------------===//
// Sends and receives on two streams
//===----------------------------------------------------------------------===//

/// Each rank of a pair sends to the other on stream `a` and receives from it
/// on stream `b`, each call its own unit of stream work (no group), then
/// synchronizes `a` first. The messages (8 MiB) are far over MPI's eager
/// limit, so a send completes only once the peer receives: hosts that each
/// blocked in whichever call they ran first (both sends, or both receives)
/// would wait for each other forever, where GPUs run both streams and
/// complete the exchange.
void sendRecvOnTwoStreams(const Group &world, bool receiveFirst, cudaStream_t a,
                          cudaStream_t b) {
  uint64_t salt = nextSalt++;
  size_t count = size_t(2) << 20; // 8 MiB of f32
  int peer = worldRank ^ 1;
  std::string what = std::string("ncclSend on one stream and ncclRecv on "
                                 "another, ") +
                     (receiveFirst ? "the receive enqueued first"
                                   : "the send enqueued first") +
                     ", with rank " + std::to_string(peer);
  Buffer send(count * 4), recv(count * 4);
  send.upload(inputs<F32>(worldRank, count, salt));
  auto enqueueSend = [&] {
    checkNccl(ncclSend(send.data, count, ncclFloat32, peer, world.comm, a),
              what);
  };
  auto enqueueRecv = [&] {
    checkNccl(ncclRecv(recv.data, count, ncclFloat32, peer, world.comm, b),
              what);
  };
  if (receiveFirst) {
    enqueueRecv();
    enqueueSend();
  } else {
    enqueueSend();
    enqueueRecv();
  }
  recv.expectNotRunYet(what);
  sync(a);
  sync(b);
  compare<F32>(recv.download<float>(count), inputs<F32>(peer, count, salt),
               what);
}

void streams(const Group &world) {
  // Pairs need an even number of ranks.
  if (worldSize % 2 != 0)
    return;
  cudaStream_t a, b;
  checkCuda(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
  checkCuda(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
  sendRecvOnTwoStreams(world, /*receiveFirst=*/false, a, b);
  sendRecvOnTwoStreams(world, /*receiveFirst=*/true, a, b);
  ncclResult_t state = ncclInProgress;
  checkNccl(ncclCommGetAsyncError(world.comm, &state), "ncclCommGetAsyncError");
  expect(state == ncclSuccess, "the async error after the sends is " +
                                   std::string(ncclGetErrorString(state)));
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

//===----------------------------------------------------------------------===//
// Split communicators
//===----------------------------------------------------------------------===//

ncclComm_t splitOf(const Group &world, int color, int key) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t part = nullptr;
  checkNccl(ncclCommSplit(world.comm, color, key, &part, &config),
            "ncclCommSplit(color " + std::to_string(color) + ", key " +
                std::to_string(key) + ")");
  return part;
}

void expectShape(const Group &g) {
  int count = -1, rank = -1;
  checkNccl(ncclCommCount(g.comm, &count), "ncclCommCount");
  checkNccl(ncclCommUserRank(g.comm, &rank), "ncclCommUserRank");
  expect(count == static_cast<int>(g.members.size()) && rank == g.index,
         g.name + ": rank " + std::to_string(rank) + " of " +
             std::to_string(count) + ", expected " + std::to_string(g.index) +
             " of " + std::to_string(g.members.size()));
}

void overGroup(const Group &g, cudaStream_t stream) {
  expectShape(g);
  for (bool inPlace : {false, true}) {
    allReduce<F32>(g, ncclSum, 1001, inPlace, stream);
    allReduce<BF16>(g, ncclAvg, 1001, inPlace, stream);
    reduceScatter<BF16>(g, ncclSum, 100, inPlace, stream);
    allGather<F32>(g, 100, inPlace, stream);
    broadcast<BF16>(g, 0, 100, inPlace, stream);
  }
}

void split(const Group &world) {
  cudaStream_t stream;
  checkCuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  int n = worldSize;
  if (n == 4) {
    // The axes of a 2x2 mesh, as NcclComm's splitMesh makes them: the
    // processes that share the other coordinate, ordered by this one.
    int coords[2] = {worldRank / 2, worldRank % 2};
    for (int axis = 0; axis < 2; ++axis) {
      Group g;
      g.comm = splitOf(world, coords[1 - axis], coords[axis]);
      g.index = coords[axis];
      for (int c = 0; c < 2; ++c)
        g.members.push_back(axis == 0 ? c * 2 + coords[1] : coords[0] * 2 + c);
      g.name = "mesh axis " + std::to_string(axis);
      overGroup(g, stream);
      checkNccl(ncclCommFinalize(g.comm), "ncclCommFinalize");
      checkNccl(ncclCommDestroy(g.comm), "ncclCommDestroy");
    }
  }
  // Two colors, each ordered by descending world rank (the key).
  {
    Group g;
    g.comm = splitOf(world, worldRank % 2, n - worldRank);
    for (int r = n - 1; r >= 0; --r)
      if (r % 2 == worldRank % 2) {
        if (r == worldRank)
          g.index = static_cast<int>(g.members.size());
        g.members.push_back(r);
      }
    g.name = "the ranks of parity " + std::to_string(worldRank % 2);
    overGroup(g, stream);
    checkNccl(ncclCommDestroy(g.comm), "ncclCommDestroy");
  }
  // The last rank stays out.
  {
    // The inputs' salts must agree on every rank after the cases that the
    // last rank skips.
    uint64_t resume = nextSalt + 1000;
    bool out = worldRank == n - 1;
    ncclComm_t part = splitOf(world, out ? NCCL_SPLIT_NOCOLOR : 7, worldRank);
    expect(out == (part == nullptr),
           "NCCL_SPLIT_NOCOLOR gives a null communicator, and only it");
    if (part) {
      Group g;
      g.comm = part;
      for (int r = 0; r < n - 1; ++r)
        g.members.push_back(r);
      g.index = worldRank;
      g.name = "all ranks but the last";
      overGroup(g, stream);
      checkNccl(ncclCommDestroy(part), "ncclCommDestroy");
    }
    nextSalt = resume;
  }
  cudaStreamDestroy(stream);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

void errors(const Group &world) {
  ncclComm_t comm = world.comm;
  cudaStream_t stream = nullptr;
  Buffer buffer(64);
  void *d = buffer.data;
  float host[16] = {0};

  expectError(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, nullptr, stream),
              ncclInvalidArgument, "comm is null", "ncclAllReduce(comm null)");
  expectError(ncclAllReduce(d, d, 4, static_cast<ncclDataType_t>(ncclNumTypes),
                            ncclSum, comm, stream),
              ncclInvalidArgument, "invalid datatype 12",
              "ncclAllReduce(datatype 12)");
  expectError(ncclAllReduce(d, d, 4, ncclFloat32,
                            static_cast<ncclRedOp_t>(ncclNumOps), comm, stream),
              ncclInvalidArgument, "invalid reduction operation 5",
              "ncclAllReduce(op 5)");
  expectError(ncclAllReduce(d, d, 4, ncclFloat8e4m3, ncclSum, comm, stream),
              ncclInvalidArgument, "ncclFloat8e4m3 is not reduced",
              "ncclAllReduce(fp8)");
  expectError(ncclAllReduce(host, d, 4, ncclFloat32, ncclSum, comm, stream),
              ncclInvalidArgument, "sendbuff", "ncclAllReduce(host sendbuff)");
  expectError(ncclAllReduce(host, d, 4, ncclFloat32, ncclSum, comm, stream),
              ncclInvalidArgument, "is not device memory",
              "ncclAllReduce(host sendbuff)");
  expectError(ncclAllReduce(d, d, 17, ncclFloat32, ncclSum, comm, stream),
              ncclInvalidArgument, "holds 64 bytes",
              "ncclAllReduce(17 floats in 64 bytes)");
  expectError(ncclAllReduce(d, nullptr, 4, ncclFloat32, ncclSum, comm, stream),
              ncclInvalidArgument, "recvbuff is null",
              "ncclAllReduce(recvbuff null)");
  expectError(ncclAllReduce(static_cast<char *>(d) + 60, d, 2, ncclFloat32,
                            ncclSum, comm, stream),
              ncclInvalidArgument, "holds 4 bytes",
              "ncclAllReduce(sendbuff 4 bytes before the end)");
  expectError(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm,
                            reinterpret_cast<cudaStream_t>(0x1234)),
              ncclUnhandledCudaError, "is not a CUDA stream",
              "ncclAllReduce(a made-up stream)");
  expectError(ncclAllGather(d, d, 16, ncclFloat32, comm, stream),
              worldSize > 1 ? ncclInvalidArgument : ncclSuccess,
              worldSize > 1 ? "recvbuff" : "",
              "ncclAllGather(recvbuff for one rank's piece)");
  if (worldSize == 1)
    sync(stream);
  expectError(ncclReduceScatter(d, d, 16, ncclBfloat16, ncclSum, comm, stream),
              worldSize > 2 ? ncclInvalidArgument : ncclSuccess,
              worldSize > 2 ? "sendbuff" : "",
              "ncclReduceScatter(sendbuff of 32 bf16)");
  sync(stream);
  expectError(ncclBroadcast(d, d, 4, ncclFloat32, worldSize, comm, stream),
              ncclInvalidArgument,
              ("root " + std::to_string(worldSize) + " is not a rank").c_str(),
              "ncclBroadcast(root = nranks)");
  expectError(ncclReduce(d, d, 4, ncclFloat32, ncclSum, -1, comm, stream),
              ncclInvalidArgument, "root -1", "ncclReduce(root -1)");
  expectError(ncclSend(d, 4, ncclFloat32, worldSize, comm, stream),
              ncclInvalidArgument, "peer", "ncclSend(peer = nranks)");
  expectError(ncclGroupEnd(), ncclInvalidUsage, "without ncclGroupStart",
              "ncclGroupEnd()");
  expectError(ncclCommGetAsyncError(nullptr, nullptr), ncclInvalidArgument,
              "null", "ncclCommGetAsyncError(null)");

  // Communicators.
  ncclUniqueId id;
  checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ncclComm_t made = nullptr;
  expectError(ncclCommInitRank(&made, 0, id, 0), ncclInvalidArgument,
              "nranks 0 is not positive", "ncclCommInitRank(nranks 0)");
  expectError(ncclCommInitRank(&made, 2, id, 2), ncclInvalidArgument,
              "rank 2 is not in [0, nranks 2)",
              "ncclCommInitRank(rank 2 of 2)");
  ncclUniqueId zeros;
  std::memset(&zeros, 0, sizeof(zeros));
  expectError(ncclCommInitRank(&made, 1, zeros, 0), ncclInvalidArgument,
              "not made by ncclGetUniqueId", "ncclCommInitRank(zero id)");
  ncclConfig_t config;
  std::memset(&config, 0, sizeof(config));
  expectError(ncclCommInitRankConfig(&made, 1, id, 0, &config),
              ncclInvalidArgument, "NCCL_CONFIG_INITIALIZER",
              "ncclCommInitRankConfig(zeroed config)");
  expectError(ncclCommSplit(comm, -2, 0, &made, nullptr), ncclInvalidArgument,
              "color -2", "ncclCommSplit(color -2)");
  expect(made == nullptr, "a failed init or split leaves a null communicator");
  // A one-rank communicator needs no peers, and a destroyed one is refused.
  checkNccl(ncclCommInitRank(&made, 1, id, 0), "ncclCommInitRank(1 rank)");
  checkNccl(ncclCommDestroy(made), "ncclCommDestroy");
  expectError(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, made, stream),
              ncclInvalidArgument, "was destroyed",
              "ncclAllReduce(a destroyed communicator)");
  checkNccl(ncclCommDestroy(nullptr), "ncclCommDestroy(null)");
  checkNccl(ncclCommAbort(nullptr), "ncclCommAbort(null)");

  if (worldSize > 1) {
    // Every rank claims rank 0: the id's maker refuses, and all ranks hear.
    ncclUniqueId shared;
    if (worldRank == 0)
      checkNccl(ncclGetUniqueId(&shared), "ncclGetUniqueId");
    MPI_Bcast(&shared, sizeof(shared), MPI_BYTE, 0, MPI_COMM_WORLD);
    expectError(ncclCommInitRank(&made, worldSize, shared, 0), ncclInvalidUsage,
                "both passed rank=0", "ncclCommInitRank(every rank 0)");
  }

  // None of this broke the communicator.
  ncclResult_t state = ncclInProgress;
  checkNccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
  expect(state == ncclSuccess, "argument errors left an async error");
  allReduce<F32>(world, ncclSum, 10, true, nullptr);
}

/// Without mpirun: more than one rank cannot join, and says why.
void needsMpirun() {
  ncclUniqueId id;
  checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  expectError(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclSystemError,
              "needs mpirun", "ncclCommInitRankConfig(2 ranks without MPI)");
  std::printf("%s\n", ncclGetLastError(nullptr));
}

} // namespace

int main(int argc, char **argv) {
  std::string scenario = argc > 1 ? argv[1] : "all";
  if (scenario != "all" && scenario != "collectives" && scenario != "streams" &&
      scenario != "split" && scenario != "errors" &&
      scenario != "needs-mpirun") {
    std::fprintf(
        stderr,
        "usage: %s [all|collectives|streams|split|errors|needs-mpirun]\n",
        argv[0]);
    return 2;
  }
  underMpi = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
             std::getenv("PMIX_RANK");
  if (scenario == "needs-mpirun") {
    if (underMpi)
      failTest("run needs-mpirun without mpirun");
    needsMpirun();
    std::printf("needs-mpirun ok\n");
    return 0;
  }
  if (underMpi) {
    // As the runtime starts MPI (runtime/comm/MpiComm.cpp).
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  }

  // The world communicator, as NcclComm.cpp makes it: rank 0's id over MPI,
  // a non-blocking config.
  Group world;
  ncclUniqueId id;
  if (worldRank == 0)
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (underMpi)
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result =
      ncclCommInitRankConfig(&world.comm, worldSize, id, worldRank, &config);
  expect(result == ncclSuccess,
         std::string("a non-blocking init returns ncclSuccess, not ") +
             ncclGetErrorString(result) + ": " + ncclGetLastError(nullptr));
  for (int r = 0; r < worldSize; ++r)
    world.members.push_back(r);
  world.index = worldRank;
  world.name = "the world";
  expectShape(world);
  int device = -1;
  checkNccl(ncclCommCuDevice(world.comm, &device), "ncclCommCuDevice");

  if (scenario == "all" || scenario == "collectives")
    collectives(world);
  if (scenario == "all" || scenario == "streams")
    streams(world);
  if (scenario == "all" || scenario == "split")
    split(world);
  if (scenario == "all" || scenario == "errors")
    errors(world);

  checkNccl(ncclCommFinalize(world.comm), "ncclCommFinalize");
  checkNccl(ncclCommDestroy(world.comm), "ncclCommDestroy");
  if (underMpi) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
  if (worldRank == 0)
    std::printf("nccl stand-in ok on %d rank%s\n", worldSize,
                worldSize == 1 ? "" : "s");
  return 0;
}

//===- device_radix_sort.cuh - cub's DeviceRadixSort on the host -*- C++
//-*-===//
//
// Found before the CUDA toolkit's cub when runtime/cuda is built for the
// host (runtime/cuda/simt/include is first on the include path). SortPairs
// and SortKeys as cub documents them: a first call with d_temp_storage null
// only reports the temporary bytes; the sort is stable, orders keys by bits
// [begin_bit, end_bit) as unsigned, and runs on the stream. The checks cub's
// kernels would fault on are made here: buffers that do not hold num_items
// elements, and temporary storage smaller than the reported size.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_SIMT_CUB_DEVICE_RADIX_SORT_CUH
#define TGC_RUNTIME_CUDA_SIMT_CUB_DEVICE_RADIX_SORT_CUH

#include "runtime/cuda/simt/Runtime.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  /// What SortPairs asks for: one byte per item, so that a caller that
  /// skips the size query or carves too little is caught.
  static size_t tempBytes(int numItems) {
    return 256 + (size_t)std::max(numItems, 0);
  }

  template <typename Key, typename Value>
  static cudaError_t
  SortPairs(void *dTempStorage, size_t &tempStorageBytes, const Key *dKeysIn,
            Key *dKeysOut, const Value *dValuesIn, Value *dValuesOut,
            int numItems, int beginBit = 0, int endBit = sizeof(Key) * 8,
            cudaStream_t stream = 0) {
    static_assert(std::is_integral_v<Key>, "integer keys only");
    if (!dTempStorage) {
      tempStorageBytes = tempBytes(numItems);
      return cudaSuccess;
    }
    if (numItems < 0 || beginBit < 0 || endBit > (int)sizeof(Key) * 8 ||
        beginBit >= endBit)
      return cudaErrorInvalidValue;
    check(dTempStorage, tempBytes(numItems), tempStorageBytes, "temporary");
    check(dKeysIn, sizeof(Key) * numItems, 0, "keys in");
    check(dKeysOut, sizeof(Key) * numItems, 0, "keys out");
    if (dValuesIn || dValuesOut) {
      check(dValuesIn, sizeof(Value) * numItems, 0, "values in");
      check(dValuesOut, sizeof(Value) * numItems, 0, "values out");
    }
    tgc::simt::enqueue(stream, "cub::DeviceRadixSort::SortPairs", [=] {
      using U = std::make_unsigned_t<Key>;
      U keyMask = endBit - beginBit >= (int)sizeof(Key) * 8
                      ? ~U(0)
                      : (U)((U(1) << (endBit - beginBit)) - 1);
      auto digits = [&](Key k) { return (U)((U)k >> beginBit) & keyMask; };
      std::vector<int> order(numItems);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return digits(dKeysIn[a]) < digits(dKeysIn[b]);
      });
      std::vector<Key> keys(numItems);
      std::vector<Value> values(dValuesIn ? numItems : 0);
      for (int i = 0; i < numItems; ++i) {
        keys[i] = dKeysIn[order[i]];
        if (dValuesIn)
          values[i] = dValuesIn[order[i]];
      }
      std::copy(keys.begin(), keys.end(), dKeysOut);
      if (dValuesIn)
        std::copy(values.begin(), values.end(), dValuesOut);
    });
    return cudaSuccess;
  }

  template <typename Key>
  static cudaError_t SortKeys(void *dTempStorage, size_t &tempStorageBytes,
                              const Key *dKeysIn, Key *dKeysOut, int numItems,
                              int beginBit = 0, int endBit = sizeof(Key) * 8,
                              cudaStream_t stream = 0) {
    return SortPairs<Key, char>(dTempStorage, tempStorageBytes, dKeysIn,
                                dKeysOut, nullptr, nullptr, numItems, beginBit,
                                endBit, stream);
  }

private:
  /// `p` must hold `bytes` (and the caller must say it has `given`, when
  /// nonzero) of device memory.
  static void check(const void *p, size_t bytes, size_t given,
                    const char *what) {
    if (bytes == 0)
      return;
    size_t have = tgc::simt::bytesFrom(p);
    if (have < bytes || (given && given < bytes))
      tgc::simt::fatal(std::string("cub::DeviceRadixSort: the ") + what +
                       " buffer holds " + std::to_string(have) +
                       " bytes of device memory (" + std::to_string(given) +
                       " passed), the sort needs " + std::to_string(bytes));
  }
};

} // namespace cub

#endif // TGC_RUNTIME_CUDA_SIMT_CUB_DEVICE_RADIX_SORT_CUH

//===- ParamPacking.h - Kernel parameter buffer from metadata --*- C++ -*-===//
//
// Turns the metadata's parameter list and validated arguments into the
// void** array cuLaunchKernel takes. TMA descriptors (by value) and device
// copies of them (tma_ptr) are produced through callbacks so that the packing
// itself stays testable without a driver.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_PARAMPACKING_H
#define FLASHC_RUNTIME_PARAMPACKING_H

#include "flashc/Runtime/ArgValidation.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace flashc::rt {

/// What a TMA descriptor must describe: a tensor viewed as 2-D
/// [rows = B*H*N, cols = D] with row stride `rowStrideBytes`.
struct TmaRequest {
  TensorId tensor;
  uint64_t base;
  DType dtype;
  uint64_t rows, cols;
  uint64_t rowStrideBytes;
  uint32_t boxRows, boxCols;
  unsigned swizzle;
};

/// Size of CUtensorMap (128 bytes, 64-byte aligned).
constexpr unsigned kTmaDescriptorBytes = 128;

using TmaEncoder =
    llvm::function_ref<llvm::Error(const TmaRequest &, void *descriptor)>;

/// What a strided descriptor (tma of rank 3 or 4, by value, or tma_ptr)
/// must describe: a map over the tensor viewed as [B*H, N, D] (rank 3) or
/// [B, H, N, D] (rank 4). Arrays are innermost first, as
/// cuTensorMapEncodeTiled takes them. Interleave none, L2 promotion 256 B
/// and OOB fill NONE (reads past N give zeros) are fixed.
struct TensorMapRequest {
  TensorId tensor = TensorId::Q; ///< for messages; not part of the key
  uint64_t base = 0;
  DType dtype = DType::BF16;
  unsigned rank = 3;
  uint64_t dims[4] = {0, 0, 0, 0};     ///< D, N, B*H; or D, N, H, B
  uint64_t strideBytes[3] = {0, 0, 0}; ///< of N and of B*H; or of N, H, B
  uint32_t box[4] = {0, 0, 0, 0};      ///< cols, rows, 1[, 1]
  unsigned swizzle = 0;

  /// Everything the encoded map depends on.
  auto key() const {
    return std::make_tuple(base, dtype, rank, dims[0], dims[1], dims[2],
                           dims[3], strideBytes[0], strideBytes[1],
                           strideBytes[2], box[0], box[1], box[2], box[3],
                           swizzle);
  }
};

/// Encodes a 3-D descriptor into the 128 bytes at `descriptor`.
using TensorMapEncoder =
    llvm::function_ref<llvm::Error(const TensorMapRequest &, void *descriptor)>;

/// The request for parameter `p` (a 3-D tma or a tma_ptr) over a validated
/// tensor `t`.
/// Strides of dimensions of size 1 are never used by the copies, so they are
/// replaced by ones the encoder accepts (multiples of 16 bytes).
TensorMapRequest makeTensorMapRequest(const ParamSpec &p, const TensorArg &t);

/// Returns the device address of a 64-byte aligned CUtensorMap encoding the
/// request, valid at least until the launch has run.
using TmaPtrProvider =
    llvm::function_ref<llvm::Expected<uint64_t>(const TensorMapRequest &)>;

/// Returns the device address of the launch's tile counter (see
/// ParamSpec::Kind::TileCounter).
using TileCounterProvider = llvm::function_ref<llvm::Expected<uint64_t>()>;

/// Entries a loaded kernel keeps before it frees them all.
constexpr size_t kTmaPtrCacheCapacity = 4096;

/// The bookkeeping of a kernel's device copies of tensor maps: one
/// immutable entry per distinct request. Allocation, copying and freeing go
/// through callbacks (the driver in Kernel.cpp, fakes in the tests); this
/// class is not thread-safe, the kernel's launch mutex guards it.
class TmaPtrCache {
public:
  using Create =
      llvm::function_ref<llvm::Expected<uint64_t>(const TensorMapRequest &)>;

  explicit TmaPtrCache(size_t capacity = kTmaPtrCacheCapacity)
      : capacity(capacity) {}
  TmaPtrCache(const TmaPtrCache &) = delete;

  /// The entry for `r`; on a miss `create` makes one, which is kept.
  llvm::Expected<uint64_t> get(const TensorMapRequest &r, Create create);
  /// True if `n` new entries might not fit (the caller clears first).
  bool wouldOverflow(size_t n) const { return entries.size() + n > capacity; }
  size_t size() const { return entries.size(); }
  /// Passes every entry to `release` and forgets them all.
  void clear(llvm::function_ref<void(uint64_t)> release);

private:
  struct KeyLess {
    bool operator()(const TensorMapRequest &a,
                    const TensorMapRequest &b) const {
      return a.key() < b.key();
    }
  };
  std::map<TensorMapRequest, uint64_t, KeyLess> entries;
  size_t capacity;
};

/// The kernel parameters of one launch; keeps its storage alive.
class ParamBuffer {
public:
  /// Zeroed storage for parameters of `sizes` bytes, each aligned to its
  /// size (16-byte cap) and tensor maps to 64.
  static std::unique_ptr<ParamBuffer> allocate(llvm::ArrayRef<unsigned> sizes);
  /// Where parameter `i` goes.
  uint8_t *slot(size_t i) { return static_cast<uint8_t *>(pointerArray[i]); }
  void **pointers() { return pointerArray.data(); }
  size_t size() const { return pointerArray.size(); }
  /// Bytes of parameter `i`, for tests.
  llvm::ArrayRef<uint8_t> bytes(size_t i) const {
    return {static_cast<const uint8_t *>(pointerArray[i]), sizes[i]};
  }

private:
  std::unique_ptr<uint8_t[]> storage;
  llvm::SmallVector<void *, 32> pointerArray;
  llvm::SmallVector<size_t, 32> sizes;
};

/// Builds the parameter buffer; checks TMA-viewability of tensors. A kernel
/// with tma_ptr parameters needs `provideTmaPtr`, one with a tile counter
/// `provideTileCounter`, one with 3-D tma parameters `encodeTensorMap` (an
/// error without).
/// MLIR's expanded memref descriptor of `t` (allocated and aligned
/// pointer, offset 0, its first `rank` sizes and strides) into `buf`'s
/// slots from `slot`; returns the slot after it.
unsigned putMemrefDescriptor(ParamBuffer &buf, unsigned slot,
                             const TensorArg &t, unsigned rank);

llvm::Expected<std::unique_ptr<ParamBuffer>>
packParams(const KernelMetadata &meta, const LaunchArgs &args,
           const ProblemShape &shape, TmaEncoder encodeTma,
           TmaPtrProvider provideTmaPtr = {},
           TileCounterProvider provideTileCounter = {},
           TensorMapEncoder encodeTensorMap = {});

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_PARAMPACKING_H

//===- ParamPacking.h - Kernel parameter buffer from metadata --*- C++ -*-===//
//
// Turns the metadata's parameter list and validated arguments into the
// void** array cuLaunchKernel takes. TMA descriptors are produced through a
// callback so that the packing itself stays testable without a driver.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_PARAMPACKING_H
#define FLASHC_RUNTIME_PARAMPACKING_H

#include "flashc/Runtime/ArgValidation.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>

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

/// The kernel parameters of one launch; keeps its storage alive.
class ParamBuffer {
public:
  void **pointers() { return pointerArray.data(); }
  size_t size() const { return pointerArray.size(); }
  /// Bytes of parameter `i`, for tests.
  llvm::ArrayRef<uint8_t> bytes(size_t i) const {
    return {static_cast<const uint8_t *>(pointerArray[i]), sizes[i]};
  }

private:
  friend llvm::Expected<std::unique_ptr<ParamBuffer>>
  packParams(const KernelMetadata &, const LaunchArgs &, const ProblemShape &,
             TmaEncoder);
  std::unique_ptr<uint8_t[]> storage;
  llvm::SmallVector<void *, 32> pointerArray;
  llvm::SmallVector<size_t, 32> sizes;
};

/// Builds the parameter buffer; checks TMA-viewability of tensors.
llvm::Expected<std::unique_ptr<ParamBuffer>>
packParams(const KernelMetadata &meta, const LaunchArgs &args,
           const ProblemShape &shape, TmaEncoder encodeTma);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_PARAMPACKING_H

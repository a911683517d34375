//===- ArgValidation.h - Launch arguments vs the kernel contract -*- C++
//-*-===//
//
// A pure function of (metadata, argument descriptors): no driver, no GPU, so
// every rule is unit-tested in CI. The launch path runs it before touching
// the GPU, so a bad argument is an error naming it, never a fault.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_ARGVALIDATION_H
#define FLASHC_RUNTIME_ARGVALIDATION_H

#include "flashc/Runtime/KernelMetadata.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace flashc::rt {

/// A strided tensor as the caller passes it. `data` == 0 means absent.
struct TensorArg {
  uint64_t data = 0;
  DType dtype = DType::BF16;
  unsigned rank = 0;
  int64_t sizes[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0}; ///< in elements
  int device = 0;
  bool present() const { return data != 0; }
};

struct LaunchArgs {
  TensorArg tensors[kNumTensors]; ///< indexed by TensorId
  /// Packed sequences (a kernel with a "packed" grid): cu_seqlens_q and
  /// cu_seqlens_k, rank-1 int32 prefix sums (sequence s is rows
  /// [cu[s], cu[s + 1]) of q/o and of k/v), one entry per sequence plus
  /// one, and the longest query sequence, which sizes the grid (a longer
  /// one is computed only up to this length from its end). q/k/v/o are then
  /// [1, H, T, D] views of the packed rows, lse [1, H, T_q].
  TensorArg cuSeqlensQ, cuSeqlensK;
  int64_t maxSeqlenQ = 0;
  /// The kernel's captures (KernelMetadata::captures), in order: the mods'
  /// memrefs and the attention sinks, each a dense row-major device tensor.
  llvm::SmallVector<TensorArg, 4> captures;
  TensorArg &operator[](TensorId id) { return tensors[unsigned(id)]; }
  const TensorArg &operator[](TensorId id) const {
    return tensors[unsigned(id)];
  }
};

/// The problem a valid launch solves.
struct ProblemShape {
  int64_t batch = 0, heads = 0, seqQ = 0, seqK = 0, headDim = 0;
  /// K and V's heads: H_q is a multiple of it (grouped-query attention).
  int64_t kvHeads = 0;
  /// Packed sequences: their number and the longest query sequence (seqQ
  /// and seqK are then the packed tensors' rows).
  int64_t sequences = 0, maxSeqQ = 0;
  /// A decoding call: its splits S, the cache's pages (B when contiguous)
  /// and the page table's columns (0 when contiguous).
  int64_t numSplits = 0, numPages = 0, pageTableCols = 0;

  /// Query heads per K/V head.
  int64_t kvGroup() const { return kvHeads > 0 ? heads / kvHeads : 1; }
};

/// Grid limits of the CUDA launch (x up to 2^31-1, y and z up to 65535).
constexpr int64_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;

/// Limits of cuTensorMapEncodeTiled: each dimension <= 2^32 elements, each
/// stride < 2^40 bytes.
constexpr int64_t kMaxTmaDim = int64_t(1) << 32;
constexpr int64_t kMaxTmaStrideBytes = int64_t(1) << 40;

/// Checks every argument against the kernel's contract. `device` is the
/// device the kernel was loaded on (-1: don't check). All violations are
/// reported, one per line.
/// The integer an i32 or i64 parameter receives: the problem's value it
/// names, or (a stride) `tensor`'s stride along the dimension it names.
int64_t integerParamValue(const ParamSpec &p, const ProblemShape &shape,
                          const TensorArg &tensor);

llvm::Expected<ProblemShape> validateLaunchArgs(const KernelMetadata &meta,
                                                const LaunchArgs &args,
                                                int device = -1);

/// The launch grid for a problem; `numSMs` is used by persistent kernels.
llvm::Error computeGrid(const KernelMetadata &meta, const ProblemShape &shape,
                        int numSMs, unsigned grid[3]);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_ARGVALIDATION_H

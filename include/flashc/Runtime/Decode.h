//===- Decode.h - the decoding pass's launches ------------------*- C++ -*-===//
//
// A decoding kernel (kernel.json "pass": "decode") is two launches of one
// module over a step's queries and a K/V cache, paged or contiguous:
// "split" (each row's keys split over S programs, each writing its output
// and LSE to the workspace) and "combine" (the splits merged by their
// LSEs into O and LSE). These are the pure parts of launching them: the
// arguments' checks, the split count's rule, the workspace's layout, each
// launch's grid and parameters. Kernel::launchDecode drives them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_DECODE_H
#define FLASHC_RUNTIME_DECODE_H

#include "flashc/Runtime/ArgValidation.h"
#include "flashc/Runtime/Backward.h"
#include "flashc/Runtime/ParamPacking.h"

#include <memory>

namespace flashc::rt {

/// A decoding call's tensors. q and o are B x H x Sq x D; kCache and
/// vCache the cache as the kernel reads it, "B x H x N x D" views: paged,
/// [num_pages, H_kv, P, D] (vLLM's num_pages x P x H_kv x D pages
/// permuted), else [B, H_kv, Nk, D], any strides; lse (when the kernel
/// writes one) f32 dense B x H x Sq. With a paged cache, pageTable (int32
/// B x max_pages, dense) names each batch's pages in order and cacheSeqlens
/// (int32 [B]) its keys; both live on the device and are never read here.
struct DecodeArgs {
  TensorArg q, kCache, vCache, o, lse, pageTable, cacheSeqlens;
  /// S >= 1, or 0 for the runtime's rule (decodeNumSplits).
  int64_t numSplits = 0;
  /// The kernel's captures (KernelMetadata::captures), in order.
  llvm::SmallVector<TensorArg, 4> captures;
  /// A question about the call (its workspace, its splits), which the
  /// captures do not change: they are not checked (the launch does).
  bool capturesUnchecked = false;

  /// The tensor a parameter names (k: kCache, v: vCache); the backward
  /// pass's tensors are none of a decoding call's (an absent tensor).
  const TensorArg &operator[](TensorId id) const;
};

/// The SM count validateDecodeArgs assumes without a device (an H100's).
constexpr int kDefaultDecodeSMs = 132;

/// The most splits the runtime's rule picks.
constexpr int64_t kMaxRuleSplits = 128;

/// The runtime's split count (FlashAttention's efficiency-of-waves rule):
/// `programs` programs of one split each (row blocks x B x heads), each
/// row's keys `keyTiles` tiles, `numSMs` SMs. A pure function.
int64_t decodeNumSplits(int64_t programs, int64_t keyTiles, int numSMs);

/// A program's rows R (G * Sq packed, else Sq) and the heads along grid.y
/// Hx (H_kv packed, else H).
int64_t decodeRows(const KernelMetadata &meta, const ProblemShape &shape);
int64_t decodeHeads(const KernelMetadata &meta, const ProblemShape &shape);

/// Checks `args` against a decoding kernel's metadata; on success the
/// problem's shape (seqK is k_cache's sizes[2]: P paged, Nk contiguous),
/// with shape.numSplits the call's S (args.numSplits, or the rule's for
/// `numSMs`). Every problem is one line of the error, naming the argument.
/// `device` >= 0 also checks every tensor is on that device.
llvm::Expected<ProblemShape> validateDecodeArgs(const KernelMetadata &meta,
                                                const DecodeArgs &args,
                                                int numSMs = kDefaultDecodeSMs,
                                                int device = -1);

/// partial_out (f32, S x B x H x Sq x D) then partial_lse (f32, S x B x H
/// x Sq), each 256-byte aligned in one allocation.
WorkspaceLayout decodeWorkspaceLayout(const KernelMetadata &meta,
                                      const ProblemShape &shape);

/// The grid of `launch`: (ceil(R / block_m), B x Hx, S or 1).
void decodeGrid(const KernelMetadata &meta, const LaunchSpec &launch,
                const ProblemShape &shape, unsigned grid[3]);

/// The 4-D map of a "group_rows" tma of q: q viewed as [B, H_kv, G * Sq,
/// D], dims innermost first (D, G * Sq, H_kv, B), byte strides (rs, G *
/// stride_h, stride_b) * element size, rs being stride_n when Sq > 1
/// (validation made stride_h = Sq * stride_n) and stride_h when Sq == 1.
/// Strides of dimensions of size 1 are replaced by dense ones (the copies
/// never use them), as makeTensorMapRequest does.
TensorMapRequest makeGroupRowsRequest(const ParamSpec &p, const TensorArg &q,
                                      int64_t kvHeads);

/// The parameters of `launch`: tensors from `args`, workspaces inside the
/// allocation at `workspace` (laid out by decodeWorkspaceLayout), rank-4
/// tensor maps through `encodeTensorMap`.
llvm::Expected<std::unique_ptr<ParamBuffer>>
packDecodeParams(const KernelMetadata &meta, const LaunchSpec &launch,
                 const DecodeArgs &args, const ProblemShape &shape,
                 uint64_t workspace, TensorMapEncoder encodeTensorMap);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_DECODE_H

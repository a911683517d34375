//===- BackwardKernels.h - the backward tile program on the GPU -*- C++ -*-===//
//
// The three grids `-flash-tile` writes for flash.attention_backward become
// three kernels of one gpu.module (docs/backward.md):
//
//   <name>_pre   per (query tile, batch x head): delta = rowsum(dO * O) and
//                the tile's rows of the f32 dQ accumulator (and, in the
//                deterministic mode, its turn counter) cleared;
//   <name>       per (key tile, batch x K/V head): K and V stay in shared
//                memory while the Q and dO tiles of the group's heads
//                stream through a two-slot TMA ring; the five products are
//                wgmma, S^T and dP^T with the keys as M so that P^T and
//                dS^T are A operands in registers, dS^T goes through shared
//                memory for dQ = dS K, whose partial is added into the
//                accumulator (in key-tile order under `deterministic`);
//   <name>_post  per (query tile, batch x head): dQ = scale x accumulator.
//
// With attention sinks, the pre kernel also sums each warp's rows of
// -exp(sink - lse) delta into the `sink_partials` workspace, and the post
// kernel's first block of each head adds them up, in a fixed order, into
// dsinks.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOGPU_BACKWARDKERNELS_H
#define FLASHC_LIB_CONVERSION_FLASHTOGPU_BACKWARDKERNELS_H

#include "CaptureArgs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <optional>
#include <string>

namespace mlir::flash::gpu_lowering {

/// What the backward tile program asks for.
struct BackwardSpec {
  std::string name;
  Type elementType; // bf16 or f16
  int64_t headDim;  // 64 or 128
  int64_t blockM;   // query rows per tile (64)
  int64_t blockN;   // keys per block (64: one warpgroup's M)
  bool causal;
  bool deterministic;
  double scale; // natural softmax scale
  /// The forward's score and mask mods (the tile program's
  /// flash.mod_scores regions; null: none), applied to the recomputed
  /// logits, dS carried back through the score mod's derivative.
  Region *scoreMod = nullptr, *maskMod = nullptr;
  /// The mask_mod hides keys more than this many behind the query
  /// (MaskAnalysis.h): a key tile's query tiles end at its last key + W.
  std::optional<int64_t> keyWindow;
  /// The mask_mod keeps each query within its chunk of this many positions
  /// (MaskAnalysis.h): a key tile's query tiles are those of its chunk;
  /// when the chunk is the whole mask (maskIsKeyChunk) a query tile inside
  /// the key tile's chunk skips the mask_mod.
  std::optional<int64_t> keyChunk;
  bool maskIsKeyChunk = false;
  /// The forward's key_ranges: a key tile's query tiles run from the
  /// first entry whose [lo, hi) reaches it to the last (not under
  /// `deterministic`); with full ranges a query tile inside the key tile's
  /// full range skips the mask_mod.
  std::optional<KeyRanges> keyRanges;
  /// The memref arguments the kernels take whole (CaptureArgs.h): the
  /// mods' captures (the main kernel's), the sinks and their gradient
  /// (the pre and post kernels'); the sinks' indices, when there are some.
  SmallVector<CaptureArg> captures;
  std::optional<unsigned> sinkCapture, sinkGradCapture;

  /// One 64-row tile of Q, dO, K or V: D/64 boxes of 64 x 64 16-bit
  /// elements (128-byte rows, 128-byte swizzle).
  int64_t boxBytes() const { return 64 * 128; }
  int64_t tileBytes() const { return 64 * headDim * 2; }
  /// Shared memory from the window's 1 KiB-aligned start: K, V, two Q
  /// slots, two dO slots, dS^T (64 x 64).
  int64_t offK() const { return 0; }
  int64_t offV() const { return tileBytes(); }
  int64_t offQ() const { return 2 * tileBytes(); }
  int64_t offDO() const { return 4 * tileBytes(); }
  int64_t offDS() const { return 6 * tileBytes(); }
  int64_t sharedMemoryBytes() const { return offDS() + boxBytes() + 1024; }
  /// The mbarriers: K, V, then Q and dO of each slot.
  static constexpr int64_t kBarK = 0, kBarV = 1, kBarQ = 2, kBarDO = 4;
  static constexpr int64_t kNumBarriers = 6;
};

/// Whether `func` holds a backward tile program (flash.softmax_grad).
bool isBackwardTileProgram(func::FuncOp func);

/// Checks that `func` is the tile program `-flash-tile -flash-fuse` write
/// for flash.attention_backward and that the kernels implement it; reads
/// its parameters. Errors name the first thing they do not implement.
FailureOr<BackwardSpec> matchBackwardTileProgram(func::FuncOp func);

/// Builds `gpu.module @<name>_kernels` with the three kernels next to
/// `func`, each with its `flash.launch`.
FailureOr<gpu::GPUModuleOp> buildBackwardKernelModule(func::FuncOp func,
                                                      const BackwardSpec &spec);

} // namespace mlir::flash::gpu_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHTOGPU_BACKWARDKERNELS_H

//===- FlashToGPU.h - pieces of -convert-flash-to-gpu -----------*- C++ -*-===//
//
// Internal interface of -flash-gpu-schedule and -convert-flash-to-gpu: the
// kernel description the matcher extracts from a canonical attention tile
// program (with the schedule of its #flash.schedule applied), the kernel's
// context both roles share (KernelContext), and the roles (ProducerRole,
// ConsumerRole) that lower their share of the tile program with patterns
// and are those patterns' context; inline PTX is ../InlinePtx.cpp's.
// The kernel is warp specialised (one producer warpgroup, one consumer
// warpgroup per 64 query rows) with intra-warpgroup S/PV overlap,
// two-consumer ping-pong and split K/V slot release where the schedule says
// so; `persistent` makes it one block per SM walking the tiles
// (TileSchedule.cpp). docs/gpu-kernel.md tells where the design came from.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOGPU_FLASHTOGPU_H
#define FLASHC_LIB_CONVERSION_FLASHTOGPU_FLASHTOGPU_H

#include "../InlinePtx.h"
#include "CaptureArgs.h"
#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "Flash/FlashTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Support/LLVM.h"
#include <optional>

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace mlir::flash::gpu_lowering {

/// Shared memory an sm_90a block may opt in to (227 KiB).
constexpr int64_t kMaxSharedMemory = 232448;

/// K and V bytes of the heads of one section of the tile order (persistent
/// schedules and the "sections" grid): a third of the H100/H200 L2 (50 MiB),
/// leaving room for Q, O and the next section's first loads.
constexpr int64_t kSectionBytes = 16 << 20;

/// A packed grid ranks batches of up to this many sequences longest first
/// (flash.wg.packed_tile): each block loops once over the batch.
constexpr int64_t kPackedLongFirstLimit = 32;

/// What the canonical tile program asks for, and the resources the kernel
/// that implements it uses. Everything the roles need is derived here.
struct KernelSpec {
  std::string name;
  Type elementType;   // bf16 or f16
  int64_t headDim;    // 64, 128 or 256
  /// Query and K/V heads where the memref types fix them (0: at launch).
  int64_t heads = 0, kvHeads = 0;
  int64_t blockM;     // query rows per block = 64 * warpgroups
  int64_t blockN;     // keys per iteration
  int64_t stages;     // K/V ring depth
  int64_t warpgroups; // consumer warpgroups
  bool causal;
  bool hasLse;
  /// Packed sequences (cu_seqlens): a packed grid, one block per query
  /// block of a (sequence, head), each with its sequence's lengths.
  bool packed = false;
  /// The tile program's key loops (scf.for over key offsets): the masked
  /// tiles', after the unmasked ones' where the program has split them.
  /// The serial schedule lowers them (KeyLoopToWarpgroup.cpp); they belong
  /// to the function being converted.
  SmallVector<Operation *, 2> keyLoops;
  /// What follows them: flash.finalize, O's arith.truncf and the
  /// flash.store_tile ops, in program order.
  SmallVector<Operation *, 4> epilogueOps;
  /// The program's load of the Q tile.
  Operation *qLoad = nullptr;
  double scale;    // natural softmax scale
  float scaleLog2; // scale * log2(e), as the tile program has it
  /// The key loops apply flash.mod_scores (score and mask mods): the
  /// logits are scaled there, by the scale_log2 parameter over log2(e),
  /// and the softmax takes them with log2(e) alone.
  bool mods = false;
  /// The mask_mod hides every key more than this many behind its query
  /// (MaskAnalysis.h): a tile's key tiles start at kLo (TileValues), the
  /// tiles before it neither loaded nor computed.
  std::optional<int64_t> keyWindow;
  /// The mask_mod is that window and nothing else (keyWindowExactly): a
  /// key tile every row sees from within its window skips the mask_mod.
  bool maskIsKeyWindow = false;
  /// The mask_mod keeps each query within its chunk of this many positions
  /// (MaskAnalysis.h): a tile's key tiles run from its first row's chunk to
  /// its last row's.
  std::optional<int64_t> keyChunk;
  /// The mask_mod is that chunk and nothing else (keyChunkExactly): a key
  /// tile inside the chunk of the thread's rows skips the mask_mod.
  bool maskIsKeyChunk = false;
  /// Split-KV decoding (flash.attention's splits, flash.split_kv): grid z
  /// is the split, a block walks its split's share of its key tiles and
  /// stores O (normalised, f32) and LSE to the partial scratch; a second
  /// kernel of the module combines the splits (DecodeCombine.cpp).
  bool decode = false;
  /// GQA packing (flash.pack_gqa): a program's rows are its K/V head's G
  /// query heads' seq_q queries, row r query r % seq_q of head r / seq_q.
  bool packGqa = false;
  /// A paged K/V cache's page size (flash.paged; 0: K and V contiguous).
  /// A key tile lies in one page, or spans block_n / page_size whole ones.
  int64_t pageSize = 0;
  /// Rows of the K and V tensor maps' box: a tile's, or a page's where a
  /// tile spans several pages (one box per page).
  int64_t kvBoxRows() const {
    return pageSize && pageSize < blockN ? pageSize : blockN;
  }
  /// The memref arguments the kernel takes whole, after all others: the
  /// mods' captures and the sinks (whose index is sinkCapture).
  SmallVector<CaptureArg> captures;
  std::optional<unsigned> sinkCapture;
  /// flash.attention's key_ranges: outside a block's [lo, hi) its key
  /// tiles are neither loaded nor computed; inside its full range they
  /// skip the mask_mod.
  std::optional<KeyRanges> keyRanges;
  bool fullKeyRanges() const { return keyRanges && keyRanges->full; }

  /// The schedule (#flash.schedule, chosen by -flash-gpu-schedule): the
  /// switches of include/flashc/Config/ScheduleSwitches.def as applied,
  /// then what the schedule derived from them.
  flashc::ScheduleSwitches sw;
  /// Softmax.cpp: a row's running max may lag the true max by up to 2^8.
  bool lagMax = false;
  /// Wgmma.cpp: Q's per-k-step descriptors rebuilt in every key tile.
  bool rematQDescriptors = false;
  /// KeyLoopToWarpgroup.cpp: only the unmasked key tiles overlapped.
  bool serialMaskedTiles = false;
  /// Q buffers in shared memory (2: the next tile's Q loads early).
  int64_t qBuffers = 1;
  /// TileSchedule.cpp: L2 prefetch of the next block's first loads.
  bool prefetchNextBlock = false;
  /// ProbeStamps.cpp: clock64 records over the LSE buffer.
  bool probeStamps = false;
  /// Registers per thread after setmaxnreg.
  int64_t producerRegCount = 24;
  int64_t consumerRegCount = 240;

  int64_t producerRegs() const { return producerRegCount; }
  int64_t consumerRegs() const { return consumerRegCount; }
  /// Registers per thread at launch: what ptxas gives every thread of a
  /// maxntid-sized block with one block per SM.
  int64_t launchRegs() const;

  /// Causal with block_n < block_m: a key tile can start after one
  /// consumer's last row and before the block's, so each consumer walks its
  /// own key range (ConsumerRole::emitOwnKeyRange). With block_n >=
  /// block_m that happens only for lengths off the tile grid, so those
  /// kernels keep one range (the D64 and D128 causal bm128 bn128 picks
  /// would compile without spills with two; not timed).
  bool ownKeyRanges() const {
    return causal && blockN < blockM && !keyWindow && !keyRanges && !decode;
  }

  int64_t threads() const { return 128 * (warpgroups + 1); }
  /// Keys whose K and V fill kSectionBytes: a section holds
  /// max(1, sectionKeys() / seq_k) heads.
  int64_t sectionKeys() const { return kSectionBytes / (headDim * 2 * 2); }
  /// How blocks map onto tiles. A persistent kernel: one block per SM. A
  /// causal kernel with one block per tile launches a "sections" grid (x:
  /// head in section, y: query block from the last, z: section), so the
  /// hardware's x-fastest block order is the persistent one. Without the
  /// mask, one block per tile: the "tiles" grid (x: query block, y:
  /// batch*head).
  GridKind gridKind() const {
    if (decode)
      return GridKind::Tiles;
    if (packed)
      return GridKind::Packed;
    if (sw.persistent)
      return GridKind::Persistent;
    return causal ? GridKind::Sections : GridKind::Tiles;
  }
  bool sectionsGrid() const { return gridKind() == GridKind::Sections; }
  bool tilesGrid() const { return gridKind() == GridKind::Tiles; }
  /// 64-column (128-byte) boxes per tile row.
  int64_t boxesPerRow() const { return headDim / 64; }
  int64_t qBoxBytes() const { return blockM * 128; }
  int64_t kvBoxBytes() const { return blockN * 128; }
  int64_t stageBytes() const { return boxesPerRow() * kvBoxBytes(); }
  /// One Q buffer: boxesPerRow() boxes; buffer i starts at i * qBytes().
  int64_t qBytes() const { return boxesPerRow() * qBoxBytes(); }
  int64_t offK() const { return qBuffers * qBytes(); }
  int64_t offV() const { return offK() + stages * stageBytes(); }
  /// dynamicSchedule: the claimed tile of each Q buffer (query block, -1
  /// when the work ran out, and head; i32 each), after the K/V ring.
  int64_t offTileIds() const { return offV() + stages * stageBytes(); }
  int64_t tileIdBytes() const { return sw.dynamicSchedule ? 8 * qBuffers : 0; }
  /// packed: the sequence a block's rank names (i32), after the tile ids.
  int64_t offPackedSequence() const { return offTileIds() + tileIdBytes(); }
  int64_t packedSequenceBytes() const { return packed ? 16 : 0; }
  /// Dynamic shared memory: the tiles plus 1 KiB to align the base by hand.
  int64_t sharedMemoryBytes() const {
    return offPackedSequence() + packedSequenceBytes() + 1024;
  }
  /// All the shared memory a block holds: the dynamic window and, before
  /// it, the static mbarriers (8 B each). kMaxSharedMemory bounds this.
  int64_t blockSharedMemoryBytes() const {
    return sharedMemoryBytes() + 8 * numBarriers();
  }
  /// mbarrier indices: full_k[s], full_v[s], empty[s] (V, or K and V when
  /// not split), empty_k[s] (split only), q[b], q_empty[b] (persistent
  /// only: buffer b may take a new Q once every consumer's last S on it
  /// retired).
  int64_t barFullK() const { return 0; }
  int64_t barFullV() const { return stages; }
  int64_t barEmpty() const { return 2 * stages; }
  int64_t barEmptyK() const { return 3 * stages; }
  int64_t barQ() const { return (sw.splitRelease ? 4 : 3) * stages; }
  int64_t barQEmpty() const { return barQ() + qBuffers; }
  int64_t numBarriers() const {
    return barQ() + (sw.persistent ? 2 * qBuffers : 1);
  }
  /// Arrivals that free a Q buffer: every consumer thread after its last S,
  /// or with tmaStoreO one thread per consumer once O's store read it.
  int64_t qEmptyArrivals() const {
    return sw.tmaStoreO ? warpgroups : 128 * warpgroups;
  }
  /// The TMA box of O: one consumer's 64 rows of one 64-column box.
  int64_t oBoxBytes() const { return 64 * 128; }
  /// f32 accumulator registers per thread of S and of O.
  int64_t sRegs() const { return blockN / 2; }
  int64_t oRegs() const { return headDim / 2; }
  /// Accumulator registers a consumer thread keeps live at once: O and S,
  /// and with overlap P_j (bf16 pairs) beside S_{j+1}. flash-tune prunes
  /// configs where this cannot fit consumerRegs().
  int64_t liveAccumulatorRegs() const {
    return oRegs() + sRegs() + (sw.overlap ? sRegs() / 2 : 0);
  }
};

/// Checks a decoding program's second grid (flash.split_kv), which
/// combines the splits into `o` and `lse` (null: none), adding the sinks
/// of `sinks` (null: none): the combine kernel implements it
/// (DecodeCombine.cpp). matchAttentionTileProgram checks the first as it
/// checks any one grid.
LogicalResult matchCombineGrid(func::FuncOp func, Value o, Value lse,
                               Value sinks);
/// The memref a view (subview, reinterpret_cast of its metadata,
/// expand_shape) reads, through every view on the way.
Value viewedMemref(Value view);

/// Recognises the tile program `-flash-tile -flash-fuse` produce in `func`
/// (one flash.grid, the Q load, one or two key loops, finalize, stores) and
/// returns its description, or emits an error naming what is unsupported.
FailureOr<KernelSpec> matchAttentionTileProgram(func::FuncOp func);

/// Whether `func` holds any op of the flash dialect (the functions both
/// passes work on; others are left alone).
bool holdsFlashOps(func::FuncOp func);

/// `spec` (as the matcher read it) with `schedule` applied.
void applySchedule(KernelSpec &spec, ScheduleAttr schedule);
/// The #flash.schedule that records what `spec` applies.
ScheduleAttr scheduleAttrOf(MLIRContext *ctx, const KernelSpec &spec);
/// Checks that `schedule`, applied in `spec`, fits its program and the
/// target (consumers, grid, shared memory, registers, the switches'
/// preconditions), with an error on `func` otherwise.
LogicalResult verifySchedule(func::FuncOp func, const KernelSpec &spec,
                             ScheduleAttr schedule);

class ConsumerRole;
class ProducerRole;

/// The patterns that rewrite a key loop of the tile program, cloned into a
/// consumer, into the serial or overlapped schedule's wgmma steps and ring
/// operations, with `consumer` as their context (its descriptors, ring,
/// bounds and rows). KeyLoopToWarpgroup.cpp.
void populateKeyLoopToWarpgroupPatterns(RewritePatternSet &patterns,
                                        ConsumerRole &consumer);
/// Which of a key loop's iter_args carries O, the running max and the row
/// sums (read from its flash.rescale and flash.softmax_update).
struct KeyLoopRoles {
  unsigned o, m, l;
};
FailureOr<KeyLoopRoles> keyLoopRoles(scf::ForOp loop);
/// The patterns that rewrite the tile program's epilogue (flash.finalize,
/// O's rounding, flash.store_tile) on a consumer. Epilogue.cpp.
void populateEpilogueToWarpgroupPatterns(RewritePatternSet &patterns,
                                         ConsumerRole &consumer);
/// The patterns that rewrite the producer's share of the tile program (the Q
/// load, the key loops' K and V loads) into its TMA loads on the rings.
/// ProducerLoads.cpp.
void populateProducerLoadPatterns(RewritePatternSet &patterns,
                                  ProducerRole &producer);
/// Attribute marking a cloned program loop for those patterns.
constexpr llvm::StringLiteral kKeyLoopAttrName = "flash.key_loop";
/// Attribute marking a rewritten serial key loop while its ops are
/// rewritten: its induction variable is the key tile index.
constexpr llvm::StringLiteral kKeyTileLoopAttrName = "flash.key_tile_loop";

/// The kernel's launch contract (`flash.launch`).
DictionaryAttr buildLaunchAttr(MLIRContext *ctx, const KernelSpec &spec);
/// A dictionary of a launch contract from its entries, in order.
DictionaryAttr launchDict(Builder &b,
                          ArrayRef<std::pair<StringRef, Attribute>> entries);

/// One tile of the schedule as a role walks it: which query block of which
/// (batch, head), where its key tiles sit in the K/V ring, its Q buffer and
/// its key-tile bounds. A block with one tile has it from the start
/// (flash.wg.block_tile); a persistent one gets each from its tile loop's
/// region (KernelContext::forEachTile).
struct TileValues {
  /// The query block (i32), batch * head (index) and the query blocks per
  /// head (i32).
  Value blockX32, blockY, numQueryBlocks;
  /// Packed only: the sequence's first query and key rows in the packed
  /// tensors (index; null: 0), and whether the block has a tile of it (i1).
  Value qRow0, kRow0, inSequence;
  /// Persistent only: the ring position of the tile's first key tile (null:
  /// 0). The tile's `!flash.ring_slot` of the Q buffers' ring (also set for
  /// a one-tile consumer) and, with two buffers, that slot's index.
  Value kvBase, qSlot, qBuf;
  /// The bounds (flash.wg.tile_bounds), i32 and index: m0, the block's first
  /// row (negative in a causal first block), the key tiles without the mask
  /// and those the block's rows see.
  Value m0, nFull, nHi, m0Idx, nFullIdx, nHiIdx;
  /// With KernelSpec::keyWindow the first key tile the tile's rows see
  /// (index; null: 0). The loops count key tiles from it: loop tile j is
  /// key tile kLo + j, and nFull and nHi above are counts from it.
  Value kLoIdx;
  /// KernelSpec::keyRanges with full ranges: the keys [fullLo, fullHi)
  /// (i32) the mask_mod keeps for every row of the tile.
  Value fullLo, fullHi;
  /// Decoding: the batch and the program's head (index; a K/V head with
  /// packGqa) and the partial scratch's block of the tile's rows,
  /// split * B * Hx + batch * Hx + head (i32).
  Value batch, programHead, partialBlock;
  /// Decoding: the position in the cache of the step's first query,
  /// max(seq_k - seq_q, 0) (i32): the step's queries are the cache's last.
  Value firstQuery;

  /// Position of key tile j in the K/V ring: kvBase + j.
  Value ringPosition(ImplicitLocOpBuilder &b, Value j) const;
  /// The first key of loop tile j: (kLo + j) * block_n (index).
  Value firstKey(ImplicitLocOpBuilder &b, Value j, Value cBlockN) const;
};

/// Tile program ops cloned at a builder's insertion point for patterns to
/// rewrite: what they read from the rest of the program is mapped to kernel
/// values (constants, the tensor maps of Q, K and V) or to placeholders that
/// must end up unused.
class KernelContext;
struct ProgramClone {
  ProgramClone(KernelContext &k, StringRef role, ArrayRef<Operation *> ops);
  /// Clones `op` (a key loop marked for the patterns), mapping its results
  /// for the ops cloned after it.
  Operation *clone(Operation *op);
  /// Gives `value` a user outside the patterns' reach until they ran, so
  /// the driver does not erase what computes it as dead.
  void keepAlive(Value value);
  /// Applies `patterns` to the clones; fails with an error at the first
  /// program op or value left unlowered, and erases what became dead.
  LogicalResult lower(FrozenRewritePatternSet patterns);

  KernelContext &k;
  /// "producer" or "consumer", for the errors.
  StringRef role;
  Block *block;
  Operation *before = nullptr;
  IRMapping map;
  SmallVector<Operation *> placeholders, worklist, sinks;
};

/// The kernel both roles are built into: the builder, the spec, the types,
/// the arguments, and what the block shares (the shared-memory window, the
/// mbarriers, a one-tile block's tile). Constants are hoisted to the entry
/// block, one per value. KernelContext.cpp; the shared memory and the
/// bounds are SharedMemory.cpp's, the tile loops TileSchedule.cpp's.
class KernelContext {
public:
  KernelContext(ImplicitLocOpBuilder &b, const KernelSpec &spec, Block *entry);

  //===--- constants (hoisted to the entry block, one per value) ----------===//
  Value cIndex(int64_t v);
  Value cI32(int64_t v);
  Value cI64(int64_t v);
  Value cF32(float v);

  //===--- control flow helpers ------------------------------------------===//
  /// scf.for lb..ub step 1 carrying `inits`; `body` returns the yielded values.
  SmallVector<Value>
  forLoop(Value lb, Value ub, ValueRange inits,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// scf.if without results.
  void ifThen(Value cond, function_ref<void()> thenFn);
  /// scf.if with results: `thenFn` yields, the else branch yields `elseVals`.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenFn,
                                ValueRange elseVals);
  /// scf.if with results built by both branches.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenFn,
                                function_ref<SmallVector<Value>()> elseFn);

  //===--- SharedMemory.cpp: the window, the mbarriers, the bounds --------===//
  /// The shared-memory window, the thread index and the mbarriers; a
  /// one-tile block's tile (blockTile) from its block index.
  void emitSharedMemoryAndBarriers();
  /// `tile`'s bounds (flash.wg.tile_bounds) from its query block.
  void emitTileBounds(TileValues &tile);
  /// Decoding: `tile`'s batch, head, split and bounds: the cache's length
  /// for its batch (seqK from here on), its split's share of the key tiles
  /// (kLo on), and those every row sees whole (nFull).
  void emitDecodeTileBounds(TileValues &tile);
  /// KernelSpec::keyRanges: the [lo, hi) keys of `tile`'s rows, the
  /// smallest lo and largest hi of the table's entries that cover them
  /// (i32; every index clamped into the table), and with full ranges
  /// tile.fullLo and fullHi, the largest full_lo and smallest full_hi.
  std::pair<Value, Value> blockKeyRange(TileValues &tile);
  /// Causal: the key tiles that rows below `rowsEnd` see
  /// (flash.wg.key_tiles_seen).
  Value keyTilesSeenBelow(Value rowsEnd);
  /// Byte offset in smem of `tile`'s Q buffer.
  Value qBufferStart(const TileValues &tile);
  /// A tile's batch * head (index) as its batch and head (index), the
  /// planes of the [B, H, N, D] tensor maps.
  std::pair<Value, Value> batchAndHead(Value batchHead);

  //===--- TileSchedule.cpp: which tiles a block computes -----------------===//
  /// Runs `body` for each (query block, batch*head) tile of this block with
  /// `tile` set: once, for the block's own tile, or (persistent) over the
  /// block's share of the tile schedule. Producer and consumers walk the
  /// same tiles. With dynamicSchedule the producer (`producer`) claims each
  /// tile and waits for its Q buffer; the consumers wait for that Q and read
  /// the claim, so their bodies skip those waits.
  void forEachTile(TileValues &tile, bool producer, function_ref<void()> body);

  //===--- ProbeStamps.cpp ----------------------------------------------===//
  /// Where a consumer reads clock64 under KernelSpec::probeStamps; the
  /// value is the stamp's slot in the record.
  enum ProbePoint : int64_t {
    ConsumerStart,
    BlockQArrived,
    TileStart,
    TileQArrived,
    FirstSoftmaxDone,
    KeyLoopsDone,
    EpilogueDone,
    NumProbePoints
  };
  void probeStamp(ProbePoint point);

  /// Records the failure of a part lowered by patterns (the error is
  /// emitted).
  void fail() { status = failure(); }
  LogicalResult result() const { return status; }

private:
  Value constant(TypedAttr attr);
  LogicalResult status = success();

public:
  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  MLIRContext *ctx;
  OpBuilder constBuilder;
  DenseMap<Attribute, Value> constants;

  // Types.
  Type f32, i32, i64, i1, indexTy;
  // The fragments of the warp-specialised level: S (64 x block_n) and O
  // (64 x D) accumulators, the row vectors of their statistics.
  FragmentType sType, oType, rowsF32Type, rowsI32Type, rowPartialsType;
  nvgpu::MBarrierGroupType barType;
  /// A slot of the K/V ring (spec.stages slots) and of the Q buffers'
  /// (spec.qBuffers slots, one per tile of a block).
  RingSlotType kvSlotType, qSlotType;
  nvgpu::TensorMapDescriptorType tmQType, tmKVType, tmOType;
  MemRefType qBoxType, kvBoxType, oBoxType;

  // Kernel arguments (after the casts of the tensor-map pointers).
  // O comes as a pointer (outPtr) or, with tmaStoreO, a tensor map (tmO).
  // seqQ and seqK are the lengths a tile's bounds and mask use: in a packed
  // kernel its sequence's (the arguments are the packed tensors' rows,
  // totalQ and totalK).
  Value tmQ, tmK, tmV, tmO, outPtr, lsePtr, seqQ, seqK, scaleLog2;
  Value totalQ, totalK;
  // Packed only: cu_seqlens_q, cu_seqlens_k and O's head and row strides
  // (i64, elements).
  Value cuSeqlensQ, cuSeqlensK, oStrideH, oStrideN;
  // Query heads per K/V head (i32): K and V have H / kvGroup heads.
  Value kvGroup;
  // Decoding (KernelSpec::decode): the partial O and LSE scratch, a paged
  // cache's page table and lengths (!llvm.ptr<1>), its pages and the
  // table's columns (i32); the rows and heads of a program (i32: G x seq_q
  // and H_kv with packGqa, else seq_q and H).
  Value partialOut, partialLse, pageTable, cacheLens, numPages, tableCols;
  Value programRows, programHeads;
  /// The captures (KernelSpec::captures), memref arguments of the kernel.
  SmallVector<Value> captures;
  // The Q, K and V tensor-map pointers as passed (!llvm.ptr), for the NVVM
  // prefetch op, which takes no nvgpu descriptor.
  Value qMapPtr, kMapPtr, vMapPtr;
  // The query heads (i32); persistent only: the batch; with
  // dynamicSchedule the global i32 the blocks claim tiles from.
  Value batchArg, headsArg, tileCounter;

  // The block's values.
  Value smem, shift, baseDesc, tid, tid32, bar, isThread0;
  // A block with one tile: that tile, shared by the roles.
  TileValues blockTile;
  // The probe's stack slots, one i64 per ProbePoint (probeStamps only).
  Value probeSlots;
};

/// The producer warpgroup: one thread issues, per tile, the TMA loads of Q
/// and of the K/V tiles into the ring, from the tile program's loads
/// (ProducerLoads.cpp). Producer.cpp.
class ProducerRole {
public:
  explicit ProducerRole(KernelContext &k);
  /// The role's body: the tiles' loads and, in a tiles grid, the next
  /// block's L2 prefetch.
  void emit();

  /// Waits until the consumers freed the Q buffer of the tile about to load
  /// (persistent).
  void waitQBufferFree();
  void issueQ();
  /// TMA of key tile j into the slot of its ring position: K and V, or
  /// only K / only V.
  enum class KV { Both, K, V };
  /// Where key tile j lies in the K and V maps: its first row and its
  /// batch plane (a paged cache's: the page, from the table, and the row
  /// in it), and where the tile spans several pages, the other pages' row
  /// and planes (wg.tma_load_tile's gather). Taken once per tile, for both
  /// its loads.
  struct KeyTile {
    Value row, plane;
    SmallVector<Value> gather;
  };
  KeyTile keyTileAt(Value j);
  void issueKV(Value j, KV which, const KeyTile &at);
  /// Waits until ring position pos's slot (released for pos - stages) is
  /// free.
  void waitEmpty(Value pos, int64_t baseBarrier);
  /// The tile's batch, head and K/V head (index), from its batch * head.
  void setPlanes();

  KernelContext &k;
  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  TileValues tile;
  /// The tile's planes of the [B, H, N, D] maps (setPlanes).
  Value batch, head, kvHead;

private:
  /// The producer's share of the tile program: its Q load and the key
  /// loops' K and V loads (KernelSpec::qLoad, keyLoops), cloned here and
  /// rewritten by the patterns of ProducerLoads.cpp into this tile's TMA
  /// loads.
  LogicalResult lowerProgram();
  /// In a tiles grid (KernelSpec::prefetchNextBlock): L2 prefetch of the Q
  /// box and first K/V tile of the block nsmid places after this one in
  /// the hardware's x-fastest block order.
  void prefetchNextBlockInputs();
};

/// A consumer warpgroup: its 64 query rows of each tile, the tile program's
/// key loops and epilogue rewritten by patterns (KeyLoopToWarpgroup.cpp,
/// Epilogue.cpp) with this as their context. Consumer.cpp; the wgmma side
/// is Wgmma.cpp's, the softmax Softmax.cpp's.
class ConsumerRole {
public:
  /// `consumerIdx` and `threadInGroup` are the role region's arguments.
  ConsumerRole(KernelContext &k, Value consumerIdx, Value threadInGroup);
  /// The role's body: the thread's rows, the descriptors, the wait for Q,
  /// the first ping-pong turn's order, then each tile's program.
  void emit();

  Value cIndex(int64_t v) { return k.cIndex(v); }
  Value cI32(int64_t v) { return k.cI32(v); }
  Value cI64(int64_t v) { return k.cI64(v); }
  Value cF32(float v) { return k.cF32(v); }

  /// Key tile j's `!flash.ring_slot` and the offset (in 16 B) of its K and
  /// V in their regions, for the descriptors.
  struct Slot {
    Value slot, descOffset;
  };
  Slot slotInfo(Value j);
  /// Waits until the fill of `slot` completed on the ring barriers from
  /// `baseBarrier` (full_k or full_v).
  void waitFull(int64_t baseBarrier, Value slot);
  /// Ping-pong (flash.wg.pingpong_turn): `body` runs in this consumer's
  /// turn and its values are returned; without ping-pong it just runs.
  SmallVector<Value> inTurn(TypeRange types,
                            function_ref<SmallVector<Value>()> body);
  /// A turn with nothing in it, so the two consumers' turns stay paired.
  void skipTurn() {
    inTurn(TypeRange(), [] { return SmallVector<Value>(); });
  }
  /// S_j = Q K_j^T issued in this consumer's turn and waited for; its K
  /// slot (and after the last key tile, Q) released. Returns S's values.
  SmallVector<Value> waitedS(const Slot &s, Value j);
  /// Persistent: frees Q once the tile's last S (key tile j) retired.
  void releaseQAfterLastS(Value j);

  //===--- Wgmma.cpp: descriptors and both products ----------------------===//
  struct SOperands {
    SmallVector<Value> a, b;
  };
  SOperands prepS(const Slot &s);
  Value emitS(const SOperands &ops, bool fence = true);
  /// The registers of a wgmma accumulator struct, each behind an operand
  /// fence so nothing reads them before the wait.
  SmallVector<Value> fencedValues(Value acc, int64_t count);
  SmallVector<Value> sValues(Value sAcc) {
    return fencedValues(sAcc, spec.sRegs());
  }
  /// Waits for key tile j's V (its slot `s`) and returns its descriptors.
  SmallVector<Value> prepPV(const Slot &s, Value j);
  /// A paged cache: the rows of key tile j's V past the cache's end, which
  /// its last page holds as they are, zeroed before P V reads them.
  void zeroValuesPastEnd(const Slot &s, Value j);
  Value emitPV(ArrayRef<Value> packedP, ArrayRef<Value> acc,
               ArrayRef<Value> vDescs, bool fence = true);
  SmallVector<Value> oValues(Value oAcc) {
    return fencedValues(oAcc, spec.oRegs());
  }
  void wgWait(int64_t pending);
  void release(Value slot);
  /// split: the K slot is free as soon as S = Q K^T retired.
  void releaseK(Value slot);

  //===--- Softmax.cpp: online softmax on the accumulator layout ---------===//
  /// flash.wg.mask_keys: the fragment `scores` of key tile j masked on this
  /// thread's query rows.
  Value maskKeys(Value scores, Value j, bool causal);
  /// flash.wg.mod_scores: `op`'s mods (its regions, cloned) on the
  /// fragment `scores` of key tile j, for this thread's query rows.
  Value modScores(Value scores, Value j, ModScoresOp op);
  /// Key tile j's first key (i32) and the thread's two query rows as a
  /// `#flash.wgmma_rows` fragment: what mask_keys and mod_scores take.
  std::pair<Value, Value> firstKeyAndRows(Value j);
  /// flash.wg.softmax_update of S's fragment `scores` on the running max
  /// `m` (rows) and sums `l` (row partials), with the schedule's rule for
  /// the max. `firstTile`: m is the literal -inf of a tile program's first
  /// key tile, so there is nothing to speculate on.
  WgSoftmaxUpdateOp softmaxUpdate(Value scores, Value m, Value l,
                                  bool firstTile);
  /// O *= alpha on fragments (flash.wg.scale_rows), skipped per warp where
  /// `moved` is given and false.
  Value scaleRows(Value o, Value alpha, Value moved);

  //===--- Epilogue.cpp -----------------------------------------------===//
  /// O through this warpgroup's rows of the Q buffer and TMA (tmaStoreO);
  /// `o16` is O normalised and rounded (flash.wg.truncf).
  void storeOViaTma(Value o16);

  KernelContext &k;
  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  TileValues tile;
  /// The role region's arguments: which consumer, and the thread in it
  /// (which elects the TMA store's thread).
  Value consumerIdx, threadInGroup;
  /// The query rows of this thread's accumulator registers.
  Value row0, row1;
  /// GQA packing: the two rows in the tile of the group's rows (row0 and
  /// row1 being their queries).
  Value groupRow0, groupRow1;
  /// The end of this consumer's own key range (emitOwnKeyRange).
  Value ownHi, ownHiIdx;
  /// The descriptors, !flash.smem_descriptor values: qDescBuffer0 addresses
  /// Q buffer 0, qDesc this tile's buffer; with rematQDescriptors Q's also
  /// as its i64 bits (qBitsBuffer0, qBits).
  Value qDescBuffer0, qDesc, kDesc0, vDesc0, qBitsBuffer0, qBits;

private:
  /// The tile program's key loops and epilogue (KernelSpec::keyLoops and
  /// epilogueOps), cloned here and rewritten by the patterns of
  /// KeyLoopToWarpgroup.cpp (the serial or the overlapped schedule) and
  /// Epilogue.cpp, with `afterKeyLoops` emitting what comes between them.
  /// A masked key loop alone is cloned twice, the first time without its
  /// mask, for the tiles that need none. Fails after an error at the
  /// program's op left unlowered.
  LogicalResult lowerTileProgram(function_ref<void()> afterKeyLoops);
  /// ownHi: the key tiles this consumer's own 64 rows see (causal: a
  /// warpgroup above the block's last rows may end a tile or more before
  /// nHi; otherwise nHi).
  void emitOwnKeyRange();
  /// After the key loops: the tiles [ownHi, nHi) this consumer's rows do not
  /// see, waited for and released without a GEMM, with the ping-pong turns
  /// the other consumer spends on them, so the ring and the turns stay
  /// paired.
  void skipUnseenKeyTiles();
  /// Persistent: arrives on q_empty when `cond` holds; at once when the tile
  /// has no key tiles.
  void releaseQ(Value cond);
  void releaseQIfNoKeyTiles();
  void emitDescriptors();
  /// qDesc for this tile's Q buffer (persistent, two buffers).
  void selectQBuffer();
  /// The K-major descriptor whose low word is `low + offset` and whose high
  /// word is the 128B swizzle and 1024 B stride every operand here uses.
  Value descriptorFromLow(Value low, int64_t offset);
  /// Thread 0 of the consumer writes this tile program's probe record
  /// (ProbeStamps.cpp).
  void writeProbeRecord();
};

/// Decoding's second kernel, into the entry block of a gpu.func: each
/// block combines the splits' partial O and LSE of 64 rows of one
/// (batch, program head) and writes O and LSE. DecodeCombine.cpp.
void emitCombineKernel(ImplicitLocOpBuilder &b, const KernelSpec &spec,
                       Block *entry);
/// The combine kernel's arguments and launch contract.
SmallVector<Type> combineKernelArgs(MLIRContext *ctx, const KernelSpec &spec);
DictionaryAttr buildCombineLaunchAttr(MLIRContext *ctx, const KernelSpec &spec);
/// A decoding program's rows and heads (i32) from seq_q, the query heads
/// and the group: G x seq_q and H_kv with GQA packing, else seq_q and H.
std::pair<Value, Value> decodeProgramShape(ImplicitLocOpBuilder &b,
                                           const KernelSpec &spec, Value seqQ,
                                           Value heads, Value kvGroup);
/// Threads of a combine block: 4 warps, 16 rows each.
constexpr int64_t kCombineThreads = 128;
/// `v` combined over groups of `lanes` lanes (a power of two up to 32) by a
/// butterfly of xor shuffles, every lane of a group getting the same value
/// in the same order of operations. DecodeCombine.cpp.
Value warpButterfly(ImplicitLocOpBuilder &b, Value v, int64_t lanes,
                    function_ref<Value(Value, Value)> combine);

/// Builds the kernel into the entry block of a gpu.func: the block's shared
/// memory and barriers, then the roles (flash.wg.warp_specialize), ending
/// with gpu.return. Fails (with an error at the program's op) where a part
/// of the tile program could not be lowered. KernelBody.cpp.
LogicalResult emitKernel(KernelContext &k);

} // namespace mlir::flash::gpu_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHTOGPU_FLASHTOGPU_H

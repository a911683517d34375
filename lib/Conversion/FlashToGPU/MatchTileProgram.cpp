//===- MatchTileProgram.cpp - recognise the canonical attention tile program //
//
// The GPU kernel is not derived op by op: it is one hand-scheduled kernel
// (TMA ring, warp specialisation, wgmma, register softmax) parameterised by
// what the tile program says. This file checks that a function is the tile
// program `-flash-tile -flash-fuse` produce and extracts those parameters,
// with an error naming the first thing the kernel does not implement:
//
//   func @f(%q, %k, %v, %o[, %lse]) attributes {flash.config = ...} {
//     flash.grid %query_tiles, %batch_heads {
//       %qt = flash.load_tile %q[...]
//       scf.for (unmasked keys) { load K, V; dot transpose_b; softmax_update
//                                 base2; rescale; truncf; dot }
//       scf.for (masked keys)   { ... flash.mask [causal] ... }
//       (each key loop may scale and mod S first: flash.mod_scores)
//       %o, %lse = flash.finalize ... base2
//       flash.store_tile (truncf %o), %o[...]; [flash.store_tile %lse, ...]
//     }
//   }
//
// A decoding program (flash.split_kv) has the same first grid, over
// (query tiles, batch x heads, splits), reading Q through a view of a
// group of heads and K/V through views of pages, storing O unrounded and
// LSE to views of the splits' scratch; its second grid combines the
// splits (matchCombineGrid).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "flashc/Transforms/MaskAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;


namespace {

/// Checks one key loop's body: K and V loads, S = Q K^T, optional mask,
/// base-2 softmax update, rescale, P cast, O += P V.
struct LoopInfo {
  MaskOp mask;
  ModScoresOp mods;
  SoftmaxUpdateOp softmax;
};

} // namespace

Value mlir::flash::gpu_lowering::viewedMemref(Value view) {
  while (true) {
    if (auto subview = view.getDefiningOp<memref::SubViewOp>())
      view = subview.getSource();
    else if (auto cast = view.getDefiningOp<memref::ReinterpretCastOp>())
      view = cast.getSource();
    else if (auto meta = view.getDefiningOp<memref::ExtractStridedMetadataOp>())
      view = meta.getSource();
    else if (auto expand = view.getDefiningOp<memref::ExpandShapeOp>())
      view = expand.getSrc();
    else
      return view;
  }
}

/// The scalar reads a decoding program's key loops and grid body make of
/// its memrefs' shapes and of a paged cache's table: what -flash-tile
/// writes to address a page or a group of heads, which the kernel
/// re-derives from its own arguments.
static bool isDecodeAddressing(Operation &op) {
  return isa<memref::DimOp, memref::LoadOp, memref::SubViewOp,
             memref::ReinterpretCastOp, memref::ExtractStridedMetadataOp,
             memref::ExpandShapeOp>(op);
}

static FailureOr<LoopInfo> matchKeyLoop(scf::ForOp loop, Value q, Value k,
                                        Value v, const KernelSpec &spec) {
  LoopInfo info;
  int numLoads = 0, numDots = 0, numRescales = 0, numTruncs = 0;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<LoadTileOp>(op)) {
      Value source =
          spec.decode ? viewedMemref(load.getSource()) : load.getSource();
      if (source != k && source != v)
        return load.emitError("flash-to-gpu: a key loop may load only K and "
                              "V tiles");
      auto type = cast<RankedTensorType>(load.getType());
      if (type.getShape() != ArrayRef<int64_t>{spec.blockN, spec.headDim})
        return load.emitError("flash-to-gpu: K/V tiles must be block_n x "
                              "head_dim = ")
               << spec.blockN << "x" << spec.headDim << ", got " << type;
      ++numLoads;
    } else if (isa<DotOp>(op)) {
      ++numDots;
    } else if (auto mask = dyn_cast<MaskOp>(op)) {
      if (info.mask)
        return mask.emitError("flash-to-gpu: more than one flash.mask in a "
                              "key loop");
      info.mask = mask;
    } else if (auto mods = dyn_cast<ModScoresOp>(op)) {
      if (info.mods)
        return mods.emitError("flash-to-gpu: more than one flash.mod_scores "
                              "in a key loop");
      info.mods = mods;
    } else if (auto sm = dyn_cast<SoftmaxUpdateOp>(op)) {
      if (info.softmax)
        return sm.emitError("flash-to-gpu: more than one "
                            "flash.softmax_update in a key loop");
      if (!sm.getBase2())
        return sm.emitError("flash-to-gpu: the GPU kernel needs the base-2 "
                            "online softmax (run -flash-fuse)");
      info.softmax = sm;
    } else if (isa<RescaleOp>(op)) {
      ++numRescales;
    } else if (isa<arith::TruncFOp>(op)) {
      ++numTruncs;
    } else if (spec.decode && isDecodeAddressing(op)) {
    } else if (!isa<arith::ArithDialect>(op.getDialect()) ||
               !llvm::all_of(op.getResultTypes(),
                             [](Type t) { return t.isIntOrIndexOrFloat(); })) {
      return op.emitError("flash-to-gpu: unsupported op in a key loop of the "
                          "tile program: ")
             << op.getName();
    }
  }
  if (numLoads != 2 || numDots != 2 || !info.softmax || numRescales != 1 ||
      numTruncs != 1 || loop.getNumRegionIterArgs() != 3)
    return loop.emitError(
        "flash-to-gpu: not a canonical key loop (expected load K, load V, "
        "dot transpose_b, [mask], softmax_update, rescale, truncf, dot "
        "carrying acc, max, sum)");
  if (failed(keyLoopRoles(loop)))
    return failure();
  // S = Q K^T must read the Q tile.
  for (DotOp dot : loop.getBody()->getOps<DotOp>())
    if (dot.getTransposeB() && dot.getA() != q)
      return dot.emitError("flash-to-gpu: S = Q K^T must read the Q tile");
  return info;
}

FailureOr<KernelSpec>
mlir::flash::gpu_lowering::matchAttentionTileProgram(func::FuncOp func) {
  // Split-KV's tile program is two grids, the splits and their combine:
  // the decoding kernels. GQA packing and a paged cache come with it.
  const bool decode = func->hasAttr("flash.split_kv");
  if (!decode && func->hasAttr("flash.pack_gqa"))
    return func.emitError(
        "flash-to-gpu: pack_gqa is lowered to the GPU as "
        "a decoding kernel: give flash.attention splits(...)");
  if (!decode && func->hasAttr("flash.paged"))
    return func.emitError("flash-to-gpu: a paged K/V cache is lowered to the "
                          "GPU as a decoding kernel: give flash.attention "
                          "splits(...)");
  auto grids = llvm::to_vector(func.getOps<GridOp>());
  GridOp combineGrid;
  if (decode && grids.size() == 2)
    combineGrid = grids.pop_back_val();
  if (grids.size() != 1) {
    if (grids.empty()) {
      WalkResult r = func.walk([](AttentionOp op) {
        op.emitError("flash-to-gpu: flash.attention must be tiled first "
                     "(run -flash-tile -flash-fuse)");
        return WalkResult::interrupt();
      });
      if (r.wasInterrupted())
        return failure();
    }
    return func.emitError("flash-to-gpu: expected exactly one flash.grid in "
                          "the function, found ")
           << grids.size();
  }
  GridOp grid = grids.front();
  // The mods' captures and the sinks are memref arguments after the
  // tensors; the kernel takes each whole (CaptureArgs.h).
  SmallVector<CaptureUse> captureUses;
  grid.walk([&](Operation *op) {
    if (auto mods = dyn_cast<ModScoresOp>(op))
      for (Value capture : mods.getCaptures())
        captureUses.push_back({op, capture, CaptureRole::Capture});
    if (auto finalize = dyn_cast<FinalizeOp>(op);
        finalize && finalize.getSink())
      if (auto load = finalize.getSink().getDefiningOp<memref::LoadOp>())
        captureUses.push_back({op, load.getMemRef(), CaptureRole::Sinks});
  });
  // A decoding program adds the sinks in its combine: in the finalize, or
  // with GQA packing as a split of its own read through a view of them.
  if (combineGrid)
    combineGrid.walk([&](Operation *op) {
      if (auto finalize = dyn_cast<FinalizeOp>(op);
          finalize && finalize.getSink())
        if (auto load = finalize.getSink().getDefiningOp<memref::LoadOp>())
          captureUses.push_back({op, load.getMemRef(), CaptureRole::Sinks});
      if (auto load = dyn_cast<LoadTileOp>(op)) {
        Value source = viewedMemref(load.getSource());
        auto type = dyn_cast<MemRefType>(source.getType());
        if (type && type.getRank() == 1)
          captureUses.push_back({op, source, CaptureRole::Sinks});
      }
    });
  // -flash-tile guards a packed sequences' program with its sequence's
  // bounds (scf.if) and views its rows (memref.subview); the program proper
  // is the guarded block.
  Block *body = &grid.getBody().front();
  auto guards = llvm::to_vector(body->getOps<scf::IfOp>());
  scf::IfOp guard;
  if (!guards.empty()) {
    if (guards.size() != 1 || guards.front().elseBlock())
      return guards.front().emitError(
          "flash-to-gpu: a tile program takes at most one guard, the packed "
          "sequence's (scf.if without else)");
    guard = guards.front();
    body = guard.thenBlock();
  }

  auto config = func->getAttrOfType<ConfigAttr>("flash.config");
  if (!config)
    return func.emitError(
        "flash-to-gpu: missing the flash.config tile configuration");

  if (guard && !captureUses.empty())
    return captureUses.front().user->emitError(
        "flash-to-gpu: captures and sinks with packed sequences are not "
        "lowered to the GPU yet (the CPU path runs them)");
  FailureOr<SmallVector<CaptureArg>> captures =
      collectCaptureArgs(func, captureUses);
  if (failed(captures))
    return failure();

  // Arguments: q, k, v, o [, lse], the captures, and for packed sequences
  // cu_seqlens_q, cu_seqlens_k and max_seqlen_q. A decoding program's
  // page table, lengths and partial scratch are found where it reads them.
  unsigned numTensors =
      func.getNumArguments() - (guard ? 3 : 0) - captures->size();
  if (decode) {
    auto isLse = [](Type type) {
      auto memref = dyn_cast<MemRefType>(type);
      return memref && memref.getRank() == 3 && memref.getElementType().isF32();
    };
    numTensors =
        func.getNumArguments() > 4 && isLse(func.getArgument(4).getType()) ? 5
                                                                           : 4;
  }
  if (numTensors != 4 && numTensors != 5)
    return func.emitError("flash-to-gpu: expected arguments (q, k, v, o[, "
                          "lse]")
           << (guard ? ", cu_seqlens_q, cu_seqlens_k, max_seqlen_q" : "")
           << "), got " << func.getNumArguments();
  if (guard) {
    for (unsigned i = numTensors; i < numTensors + 2; ++i) {
      auto type = dyn_cast<MemRefType>(func.getArgument(i).getType());
      if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32))
        return func.emitError("flash-to-gpu: argument #")
               << i << " (cu_seqlens) must be a rank-1 i32 memref";
    }
    if (!func.getArgument(numTensors + 2).getType().isIndex())
      return func.emitError("flash-to-gpu: argument #")
             << numTensors + 2 << " (max_seqlen_q) must be an index";
  }
  SmallVector<MemRefType> types;
  for (BlockArgument arg : func.getArguments().take_front(numTensors)) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return func.emitError("flash-to-gpu: argument #")
             << arg.getArgNumber() << " is not a memref";
    types.push_back(type);
  }
  for (int i = 0; i < 4; ++i)
    if (types[i].getRank() != 4)
      return func.emitError("flash-to-gpu: q, k, v and o must be rank-4 "
                            "(batch x heads x seq x head_dim), argument #")
             << i << " is " << types[i];

  KernelSpec spec;
  spec.name = func.getSymName().str();
  spec.elementType = types[0].getElementType();
  if (spec.elementType.isF32())
    return func.emitError("flash-to-gpu: f32 attention is not supported: "
                          "the wgmma kernel takes bf16 or f16 operands");
  if (!isa<BFloat16Type, Float16Type>(spec.elementType))
    return func.emitError("flash-to-gpu: element type ")
           << spec.elementType << " is not supported (bf16 or f16)";
  spec.headDim = types[0].getDimSize(3);
  if (spec.headDim != 64 && spec.headDim != 128 && spec.headDim != 256)
    return func.emitError("flash-to-gpu: head dim ")
           << (ShapedType::isDynamic(spec.headDim)
                   ? std::string("?")
                   : std::to_string(spec.headDim))
           << " is not supported (64, 128 or 256: whole 128-byte TMA boxes)";
  for (int i = 1; i < 4; ++i)
    if (types[i].getElementType() != spec.elementType ||
        types[i].getDimSize(3) != spec.headDim)
      return func.emitError("flash-to-gpu: q, k, v and o must share element "
                            "type and head dim, argument #")
             << i << " is " << types[i];
  if (types.size() == 5 &&
      (types[4].getRank() != 3 || !types[4].getElementType().isF32()))
    return func.emitError("flash-to-gpu: lse must be a rank-3 f32 memref, "
                          "got ")
           << types[4];

  auto staticDim = [](MemRefType type, unsigned dim) -> int64_t {
    return type.isDynamicDim(dim) ? 0 : type.getDimSize(dim);
  };
  spec.heads = staticDim(types[0], 1);
  spec.kvHeads = staticDim(types[1], 1);
  spec.blockM = config.getBlockM();
  spec.blockN = config.getBlockN();
  spec.stages = config.getStages();
  spec.warpgroups = config.getWarpgroups();
  // What the config asks for; -flash-gpu-schedule decides what applies.
  spec.sw = config.getSwitches();
  if (spec.blockM != 64 * spec.warpgroups)
    return func.emitError("flash-to-gpu: block_m = ")
           << spec.blockM << " with warpgroups = " << spec.warpgroups
           << " is not supported: each consumer warpgroup owns 64 query rows "
              "(block_m = 64 * warpgroups)";
  spec.packed = static_cast<bool>(guard);
  spec.decode = decode;
  spec.packGqa = func->hasAttr("flash.pack_gqa");
  if (func->hasAttr("flash.paged")) {
    spec.pageSize = types[1].getDimSize(2);
    // A tile in one page, or whole pages of a multiple of 8 rows (the
    // 128-byte swizzle's period) gathered into one tile.
    if (ShapedType::isDynamic(spec.pageSize) ||
        (spec.pageSize % spec.blockN != 0 &&
         (spec.blockN % spec.pageSize != 0 || spec.pageSize % 8 != 0)))
      return func.emitError("flash-to-gpu: a paged cache's page size must be "
                            "static and a multiple of block_n = ")
             << spec.blockN << ", or a multiple of 8 dividing it, got "
             << types[1];
  }
  // Key tiles of 64 and more (smaller pages gathered into one tile).
  if (decode && spec.blockN % 64 != 0)
    return func.emitError("flash-to-gpu: a decoding kernel's block_n must be "
                          "a multiple of 64, got ")
           << spec.blockN;
  if (decode && spec.warpgroups != 1)
    return func.emitError("flash-to-gpu: a decoding kernel has one consumer "
                          "warpgroup (block_m = 64), got ")
           << spec.warpgroups;
  spec.captures = std::move(*captures);
  spec.sinkCapture = findCapture(spec.captures, CaptureRole::Sinks);
  // The grid body, reading the arguments or (packed) the guard's views of
  // the sequence's rows of them.
  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), o = func.getArgument(3);
  Value lse = types.size() == 5 ? func.getArgument(4) : Value();
  if (guard) {
    auto viewOf = [&](Value arg) -> Value {
      for (auto view : body->getOps<memref::SubViewOp>())
        if (view.getSource() == arg)
          return view;
      return {};
    };
    for (Value *tensor : {&q, &k, &v, &o, &lse}) {
      if (!*tensor)
        continue;
      Value view = viewOf(*tensor);
      if (!view)
        return guard.emitError("flash-to-gpu: the packed sequence's guard "
                               "must view each tensor's rows "
                               "(memref.subview)");
      *tensor = view;
    }
  }
  // A decoding program stores O and LSE into its splits' scratch.
  if (decode) {
    auto scratch = [&](unsigned rank) -> Value {
      for (BlockArgument arg : func.getArguments()) {
        auto type = dyn_cast<MemRefType>(arg.getType());
        if (type && type.getRank() == rank && type.getElementType().isF32())
          return arg;
      }
      return {};
    };
    o = scratch(5);
    lse = scratch(4);
    if (!o || !lse)
      return func.emitError("flash-to-gpu: a decoding program needs its "
                            "partial O (rank 5) and LSE (rank 4) scratch");
  }
  auto sourceOf = [&](Value view) {
    return decode ? viewedMemref(view) : view;
  };
  LoadTileOp qLoad;
  SmallVector<scf::ForOp> loops;
  FinalizeOp finalize;
  StoreTileOp oStore, lseStore;
  for (Operation &op : *body) {
    if (auto load = dyn_cast<LoadTileOp>(op)) {
      if (qLoad || sourceOf(load.getSource()) != q)
        return load.emitError("flash-to-gpu: outside the key loops only the "
                              "Q tile may be loaded");
      auto type = cast<RankedTensorType>(load.getType());
      if (type.getShape() != ArrayRef<int64_t>{spec.blockM, spec.headDim})
        return load.emitError("flash-to-gpu: the Q tile must be block_m x "
                              "head_dim = ")
               << spec.blockM << "x" << spec.headDim << ", got " << type;
      qLoad = load;
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      loops.push_back(loop);
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      if (finalize)
        return fin.emitError("flash-to-gpu: more than one flash.finalize");
      finalize = fin;
    } else if (auto store = dyn_cast<StoreTileOp>(op)) {
      if (sourceOf(store.getDest()) == o && !oStore) {
        oStore = store;
      } else if (lse && sourceOf(store.getDest()) == lse && !lseStore) {
        lseStore = store;
      } else {
        return store.emitError("flash-to-gpu: unexpected flash.store_tile "
                               "(one store of O and at most one of LSE)");
      }
    } else if (auto load = dyn_cast<memref::LoadOp>(op);
               load && spec.sinkCapture &&
               load.getMemRef() ==
                   func.getArgument(
                       spec.captures[*spec.sinkCapture].argNumber)) {
      // The head's sink, which the epilogue loads for the kernel's head.
    } else if (!isa<ProgramIdOp, scf::YieldOp>(op) &&
               !(guard && isa<memref::SubViewOp, memref::DimOp>(op)) &&
               !(decode && isDecodeAddressing(op)) &&
               !isa<arith::ArithDialect>(op.getDialect())) {
      return op.emitError("flash-to-gpu: unsupported op in the tile "
                          "program: ")
             << op.getName();
    }
  }
  if (!qLoad || loops.empty() || loops.size() > 2 || !finalize || !oStore)
    return grid.emitError(
        "flash-to-gpu: not a canonical attention tile program (expected a Q "
        "load, one or two key loops, flash.finalize and the store of O)");

  std::optional<bool> maskCausal;
  std::optional<float> scaleLog2, modScale;
  std::optional<bool> mods;
  for (auto [index, loop] : llvm::enumerate(loops)) {
    FailureOr<LoopInfo> info = matchKeyLoop(loop, qLoad, k, v, spec);
    if (failed(info))
      return failure();
    // The kernel walks the key tiles without the mask first, then those
    // with it (the ragged tail, the causal diagonal): -flash-fuse's split,
    // or one masked loop it splits itself.
    const bool wantMask = index + 1 == loops.size();
    if (static_cast<bool>(info->mask) != wantMask)
      return loop.emitError("flash-to-gpu: expected a key loop with "
                            "flash.mask last, after at most one without "
                            "(the split of -flash-fuse)");
    if (info->mask) {
      if (maskCausal && *maskCausal != info->mask.getCausal())
        return info->mask.emitError(
            "flash-to-gpu: the key loops disagree on causal masking");
      maskCausal = info->mask.getCausal();
    }
    if (mods && *mods != static_cast<bool>(info->mods))
      return loop.emitError("flash-to-gpu: the key loops disagree on the "
                            "score and mask mods");
    mods = static_cast<bool>(info->mods);
    if (info->mods) {
      if (spec.packed)
        return info->mods.emitError(
            "flash-to-gpu: score and mask mods with packed sequences are not "
            "lowered to the GPU yet (the CPU path runs them)");
      Value modded = info->mods.getResult();
      bool feedsSoftmax = info->softmax.getScores() == modded;
      bool feedsMask = info->mask && info->mask.getScores() == modded &&
                       info->softmax.getScores() == info->mask.getResult();
      if (!feedsSoftmax && !feedsMask)
        return info->mods.emitError(
            "flash-to-gpu: flash.mod_scores must feed the key loop's "
            "[flash.mask and] flash.softmax_update");
      std::optional<int64_t> window = keyWindowBehind(info->mods.getMaskMod());
      if (modScale && window != spec.keyWindow)
        return info->mods.emitError(
            "flash-to-gpu: the key loops disagree on the mask's window");
      spec.keyWindow = window;
      spec.maskIsKeyWindow =
          window && keyWindowExactly(info->mods.getMaskMod()) == window;
      std::optional<int64_t> chunk = keyChunk(info->mods.getMaskMod());
      if (modScale && chunk != spec.keyChunk)
        return info->mods.emitError(
            "flash-to-gpu: the key loops disagree on the mask's chunk");
      spec.keyChunk = chunk;
      spec.maskIsKeyChunk =
          chunk && keyChunkExactly(info->mods.getMaskMod()) == chunk;
      spec.keyRanges = keyRangesOf(info->mods, spec.captures);
      if (decode && spec.keyRanges)
        return info->mods.emitError(
            "flash-to-gpu: key_ranges (a block mask) with decoding is not "
            "lowered to the GPU yet (the CPU path runs it)");
      float scale = info->mods.getScale().convertToFloat();
      if (modScale && *modScale != scale)
        return info->mods.emitError(
            "flash-to-gpu: the key loops disagree on the logit scale");
      modScale = scale;
    }
    float scale = info->softmax.getScale().convertToFloat();
    if (scaleLog2 && *scaleLog2 != scale)
      return info->softmax.emitError(
          "flash-to-gpu: the key loops disagree on the softmax scale");
    scaleLog2 = scale;
  }
  if (finalize.getSink() && !spec.sinkCapture)
    return finalize.emitError("flash-to-gpu: the sink must be loaded from "
                              "the sinks argument (memref.load)");
  if (!finalize.getBase2())
    return finalize.emitError("flash-to-gpu: the GPU kernel needs the base-2 "
                              "flash.finalize (run -flash-fuse)");
  spec.causal = maskCausal.value_or(false);
  spec.scaleLog2 = *scaleLog2;
  spec.scale = double(spec.scaleLog2) / M_LOG2E;
  if (mods.value_or(false)) {
    // The logits are scaled before the mods; the softmax must take them as
    // they are (log2(e) alone in base 2), as -flash-tile writes it.
    if (std::abs(spec.scaleLog2 - float(M_LOG2E)) > 1e-6f)
      return grid.emitError("flash-to-gpu: with flash.mod_scores the "
                            "softmax's scale must be log2(e) (the logits are "
                            "scaled by flash.mod_scores), got ")
             << spec.scaleLog2;
    spec.mods = true;
    spec.scale = *modScale;
    spec.scaleLog2 = static_cast<float>(*modScale * M_LOG2E);
  }

  // O is the finalized output cast to the element type (a split's, f32 as
  // it is); LSE, if stored, is finalize's second result.
  auto trunc = oStore.getValue().getDefiningOp<arith::TruncFOp>();
  if (decode && oStore.getValue() != finalize.getOutput())
    return oStore.emitError("flash-to-gpu: a split's O must be the output of "
                            "flash.finalize");
  if (!decode && (!trunc || trunc.getIn() != finalize.getOutput()))
    return oStore.emitError("flash-to-gpu: O must be the truncated output of "
                            "flash.finalize");
  if (lseStore && lseStore.getValue() != finalize.getLse())
    return lseStore.emitError("flash-to-gpu: LSE must be flash.finalize's "
                              "lse result");
  if (lse && !lseStore)
    return func.emitError("flash-to-gpu: the lse argument is never stored");
  spec.hasLse = static_cast<bool>(lseStore);
  // A decoding program's split always stores its LSE; the call's own LSE
  // is the combine's.
  if (decode)
    spec.hasLse = types.size() == 5;
  spec.keyLoops.assign(loops.begin(), loops.end());
  spec.qLoad = qLoad;
  for (Operation &op : *body)
    if (&op == finalize.getOperation() ||
        (trunc && &op == trunc.getOperation()) ||
        &op == oStore.getOperation() || &op == lseStore.getOperation())
      spec.epilogueOps.push_back(&op);
  if (decode &&
      failed(matchCombineGrid(
          func, func.getArgument(3),
          types.size() == 5 ? func.getArgument(4) : Value(),
          spec.sinkCapture
              ? func.getArgument(spec.captures[*spec.sinkCapture].argNumber)
              : Value())))
    return failure();
  return spec;
}

LogicalResult mlir::flash::gpu_lowering::matchCombineGrid(func::FuncOp func,
                                                          Value o, Value lse,
                                                          Value sinks) {
  auto grids = llvm::to_vector(func.getOps<GridOp>());
  if (grids.size() != 2)
    return func.emitError("flash-to-gpu: a decoding program has two grids, "
                          "the splits and their combine; found ")
           << grids.size();
  GridOp grid = grids.back();
  // The combine: one loop merging the splits (flash.merge_split), one
  // flash.finalize, O rounded and stored, LSE stored.
  scf::ForOp loop;
  FinalizeOp finalize;
  bool storesO = false;
  for (Operation &op : grid.getBody().front()) {
    if (auto forOp = dyn_cast<scf::ForOp>(op)) {
      if (loop || forOp.getBody()->getOps<MergeSplitOp>().empty())
        return op.emitError("flash-to-gpu: the combine grid takes one loop "
                            "over the splits (flash.merge_split)");
      loop = forOp;
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      auto sinkLoad = fin.getSink()
                          ? fin.getSink().getDefiningOp<memref::LoadOp>()
                          : memref::LoadOp();
      if (fin.getSink() && (!sinkLoad || sinkLoad.getMemRef() != sinks))
        return fin.emitError("flash-to-gpu: the combine's sink must be "
                             "loaded from the sinks argument (memref.load)");
      finalize = fin;
    } else if (auto store = dyn_cast<StoreTileOp>(op)) {
      Value dest = viewedMemref(store.getDest());
      if (dest == o)
        storesO = true;
      else if (!lse || dest != lse)
        return store.emitError("flash-to-gpu: the combine grid stores O and "
                               "LSE only");
    } else if (auto load = dyn_cast<LoadTileOp>(op)) {
      // GQA packing's sinks: each row's head's sink, merged as a split of
      // output 0.
      if (!sinks || viewedMemref(load.getSource()) != sinks)
        return op.emitError("flash-to-gpu: outside its loop the combine "
                            "grid reads only the sinks");
    } else if (auto merge = dyn_cast<MergeSplitOp>(op)) {
      auto sinkLoad = merge.getPartialLse().getDefiningOp<LoadTileOp>();
      if (!sinkLoad || !sinks || viewedMemref(sinkLoad.getSource()) != sinks)
        return op.emitError("flash-to-gpu: outside its loop the combine "
                            "grid merges only the sinks");
    } else if (!isa<ProgramIdOp, scf::YieldOp>(op) && !isDecodeAddressing(op) &&
               !isa<arith::ArithDialect>(op.getDialect())) {
      return op.emitError("flash-to-gpu: unsupported op in the combine "
                          "grid: ")
             << op.getName();
    }
  }
  if (!loop || !finalize || !storesO)
    return grid.emitError("flash-to-gpu: not a split-KV combine (expected a "
                          "loop of flash.merge_split, flash.finalize and the "
                          "store of O)");
  return success();
}

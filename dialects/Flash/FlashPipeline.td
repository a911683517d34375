//===- FlashPipeline.td - TMA tiles and mbarrier rings ------*- tablegen -*-===//
//
// Level 3 of the dialect (DESIGN.md "The dialect, three levels"), the
// producer's side: a whole tile brought into shared memory by TMA and
// completed on an mbarrier, and the ring discipline of multi-stage buffers
// (which slot a ring position uses, in which phase its barriers complete,
// when a slot may be refilled). Each op is lowered by a pattern of its own
// in lib/Conversion/FlashWarpgroupToNVVM/ to upstream nvgpu and arith ops.
//
// The barriers stay one `!nvgpu.mbarrier.group` per kernel, created and
// initialised by `flash.wg.init_barriers` with the arrival count of each:
// the ops here name the part of that group a ring uses (a base index)
// rather than allocate barriers of their own, so the kernel's barrier
// layout stays the schedule's choice. A single arrival or wait that follows
// no ring discipline is the upstream op itself.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_PIPELINE_TD
#define FLASH_PIPELINE_TD

include "FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// The upstream types the ops take, by their C++ classes: NVGPUTypes.td
// brings NVGPU.td's definitions with it, which changes the builders
// generated for this dialect's other ops.
def Flash_TensorMapDescriptor : Type<
    CPred<"::llvm::isa<::mlir::nvgpu::TensorMapDescriptorType>($_self)">,
    "TMA tensor map descriptor", "::mlir::nvgpu::TensorMapDescriptorType">;
def Flash_MBarrierGroup : Type<
    CPred<"::llvm::isa<::mlir::nvgpu::MBarrierGroupType>($_self)">,
    "mbarrier group", "::mlir::nvgpu::MBarrierGroupType">;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Flash_RingSlotType : TypeDef<Flash_Dialect, "RingSlot"> {
  let mnemonic = "ring_slot";
  let summary = "A slot of a ring of shared-memory buffers, and its phase";
  let description = [{
    A ring of `stages` buffers, each with its own mbarriers, is filled in
    order: ring position `pos` uses slot `pos % stages` in round
    `pos / stages`. Each round completes each of the slot's barriers once
    more, so the phase a consumer waits for is the round's parity,
    `(pos / stages) & 1`. A value of this type is that pair, the slot index
    and the phase, computed once (`flash.wg.ring_slot`) and used by every
    wait, release and address of the slot.

    Example:

    ```mlir
    !flash.ring_slot<stages = 2>
    ```
  }];
  let parameters = (ins "int64_t":$stages);
  let assemblyFormat = "`<` `stages` `=` $stages `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

def Flash_WgSharedWindowOp : Flash_Op<"wg.shared_window", [Pure]> {
  let summary = "The block's dynamic shared memory, from its first aligned "
                "byte";
  let description = [{
    The kernel's dynamic shared memory (`gpu.dynamic_shared_memory`) is
    only 16-byte aligned, but TMA's 128-byte-swizzled boxes and the wgmma
    descriptors of their tiles want their base aligned to 1024 bytes. The
    kernel asks for `align` bytes more than its tiles need and lays them
    out from the first aligned byte: `shift` is that byte's offset in
    `window` (in [0, align)), and `field` the wgmma descriptor's
    start-address field of it (bits 4..17 of its shared-memory address,
    `(address & 0x3FFFF) >> 4`), from which `flash.wg.make_descriptor`
    builds each tile's descriptor. `align` is a power of two from 16 to
    1024.

    Example:

    ```mlir
    %window, %shift, %field = flash.wg.shared_window align 1024
        : memref<?xi8, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins I64Attr:$align);
  let results = (outs MemRefRankOf<[I8], [1]>:$window, Index:$shift,
                 I64:$field);
  let assemblyFormat = [{
    `align` $align attr-dict `:` type($window)
  }];
  let hasVerifier = 1;
}

def Flash_WgInitBarriersOp
    : Flash_Op<"wg.init_barriers", [MemoryEffects<[MemAlloc, MemWrite]>]> {
  let summary = "The block's mbarriers, each initialised with its arrival "
                "count";
  let description = [{
    Creates the block's group of mbarriers (`nvgpu.mbarrier.create`), has
    thread 0 initialise barrier `i` to expect `counts[i]` arrivals, and
    makes the initialisation visible to the whole block (a block barrier)
    before any warpgroup waits on or arrives at one of them. The rings'
    ops name their barriers by index in this group: for example a ring of
    S stages whose fills complete on one TMA arrival and whose slots free
    once every consumer thread arrived takes S barriers of count 1 and S
    of count 128 x consumers. A count is from 1 to 2^20 - 1 (the
    mbarrier's arrival counter), one per barrier of the group.

    Example:

    ```mlir
    %bar = flash.wg.init_barriers counts [1, 1, 256, 256, 1]
        : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 5>
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$counts);
  let results = (outs Flash_MBarrierGroup:$barriers);
  let assemblyFormat = [{
    `counts` $counts attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def Flash_WgTmaLoadTileOp
    : Flash_Op<"wg.tma_load_tile", [AttrSizedOperandSegments]> {
  let summary = "TMA of a rows x columns tile into shared memory";
  let description = [{
    Loads the tile whose first row is `row` of plane `planes` of the tensor
    behind `tensor_map`, `columns` wide, as `columns / 64` boxes of the
    tensor map's box (1 x rows x 64 or 1 x 1 x rows x 64 elements of 16
    bits, 128-byte rows with the 128-byte swizzle), box `c` holding
    columns `64c .. 64c + 63` at byte `start + c * rows * 128` of `smem`.
    `window` is where the kernel's (aligned) tiles begin in `smem`, and the
    tile starts there (`smem[window]`), a ring slot's bytes and a constant
    region offset after it (`smem[window + offset + 49152]`), or in buffer
    `buffer` of equal buffers (`smem[window + buffer * 32768]`).
    The copies complete on mbarrier `barriers[barrier]`, on which the op
    first arrives expecting the tile's bytes (`rows * columns * 2`), so a
    wait for that barrier's phase returns once the whole tile has landed.

    The lowering computes each box's offset after the expect, beside its
    load, adding the terms as the form writes them: LLVM reassociates the
    sums by where their terms are defined, so this placement is what keeps
    the kernels' PTX as it was when the emitter wrote these sums itself.

    The op issues the copies from the thread that runs it; the kernel runs
    it in one thread of the producer. Where the tile goes is the caller's
    (a ring slot's or a buffer's place in shared memory), so Q, K and V
    tiles, of any ring, use the same op.

    A plane is named by one coordinate per dimension of the tensor map
    beyond its rows and columns: a rank-3 map over [B * H, N, D] takes the
    batch * head, a rank-4 map over [B, H, N, D] with any strides (B x H x N
    x D or B x N x H x D storage) the head and the batch.

    With `gather [...]` the tile is several chunks of the box's rows, one
    after another, each from its own place: chunk 0 at `row` of `planes`,
    chunk i at the i-th group of `gather` (a row, then one coordinate per
    plane); so a key tile spans several pages of a paged cache. Box `c` of
    chunk `i` lands at byte `start + (c * chunks + i) * rows * 128`, where
    one box of the tile's whole rows would put those rows: the chunks are
    multiples of 8 rows (the 128-byte swizzle's 1024-byte period), so the
    swizzled layout is that one box's. The barrier expects the whole
    tile's bytes once.

    Lowering: `nvgpu.mbarrier.arrive.expect_tx` of the tile's bytes, then
    per box (and chunk) its offset, a `memref.view` of `smem` there and an
    `nvgpu.tma.async.load` at coordinates (64c, row, planes...).

    Example:

    ```mlir
    // A 128 x 128 bf16 tile into Q buffer %buffer (32 KiB each): two boxes
    // of 128 x 64, 16 KiB apart.
    flash.wg.tma_load_tile %map[%row, %plane], %smem[%window + %buffer * 32768],
        %barriers[%barrier] columns 128
        : !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>,
            swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>,
          memref<?xi8, #gpu.address_space<workgroup>>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
    ```
  }];
  let arguments = (ins
    Flash_TensorMapDescriptor:$tensorMap,
    Index:$row,
    Variadic<Index>:$planes,
    Variadic<Index>:$gather,
    MemRefRankOf<[I8], [1]>:$smem,
    Index:$window,
    Optional<Index>:$offset,
    Optional<Index>:$buffer,
    Flash_MBarrierGroup:$barriers,
    Index:$barrier,
    I64Attr:$columns,
    OptionalAttr<I64Attr>:$offsetBytes,
    OptionalAttr<I64Attr>:$bufferBytes
  );
  let assemblyFormat = [{
    $tensorMap `[` $row `,` $planes `]` (`gather` `[` $gather^ `]`)? `,`
    $smem `[` custom<TileStart>($window, $offset, $buffer, $offsetBytes,
                                $bufferBytes) `]` `,`
    $barriers `[` $barrier `]` `columns` $columns attr-dict `:`
    qualified(type($tensorMap)) `,` type($smem) `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The box the tensor map copies: 1 x rows x 64 (or 1 x 1 x rows x 64)
    /// 16-bit elements.
    ::mlir::MemRefType getBoxType();
    /// Rows of each box (of each chunk).
    int64_t getRows() {
      return getBoxType().getDimSize(getBoxType().getRank() - 2);
    }
    /// Chunks of rows the tile is made of: 1 + those of `gather`.
    int64_t getNumChunks() {
      return 1 + int64_t(getGather().size()) /
                     (getBoxType().getRank() - 1);
    }
    /// Boxes of each chunk: columns / 64.
    int64_t getNumBoxes();
    /// Bytes of one box in shared memory, and of the whole tile.
    int64_t getBoxBytes();
    int64_t getTileBytes() {
      return getNumChunks() * getNumBoxes() * getBoxBytes();
    }
  }];
}

def Flash_WgRingSlotOp : Flash_Op<"wg.ring_slot", [Pure]> {
  let summary = "The slot and phase of a ring position";
  let description = [{
    The slot of ring position `position` (counting every fill of the ring,
    from 0) in a ring of the result type's `stages`: slot
    `position % stages`, phase `(position / stages) & 1`.

    The position is an index (the K/V ring, counted by the key loops) or an
    i32 (the Q buffers, counted by the tile schedule in i32); an i32
    position needs a power-of-two number of stages and lowers to a mask and
    a shift.

    Example:

    ```mlir
    %slot = flash.wg.ring_slot %position : index -> !flash.ring_slot<stages = 2>
    %q = flash.wg.ring_slot %tiles : i32 -> !flash.ring_slot<stages = 2>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Index, I32]>:$position);
  let results = (outs Flash_RingSlotType:$slot);
  let assemblyFormat = [{
    $position attr-dict `:` type($position) `->` qualified(type($slot))
  }];
  let hasVerifier = 1;
}

def Flash_WgRingSlotIndexOp : Flash_Op<"wg.ring_slot_index", [Pure]> {
  let summary = "Which of the ring's buffers a slot is";
  let description = [{
    The index of `slot` in its ring, `0 .. stages - 1`: what the slot's
    place in shared memory (and a descriptor's start address) is computed
    from.

    Example:

    ```mlir
    %index = flash.wg.ring_slot_index %slot : !flash.ring_slot<stages = 2>
    ```
  }];
  let arguments = (ins Flash_RingSlotType:$slot);
  let results = (outs Index:$index);
  let assemblyFormat = "$slot attr-dict `:` qualified(type($slot))";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$slot), [{
      build($_builder, $_state, $_builder.getIndexType(), slot);
    }]>
  ];
}

def Flash_WgRingWaitFullOp : Flash_Op<"wg.ring_wait_full"> {
  let summary = "Waits until a ring slot's fill has landed";
  let description = [{
    Blocks the calling thread until barrier `barriers[base + index]`
    (`index` the slot's) completes the slot's phase: the fill of this ring
    position (a `flash.wg.tma_load_tile` completing on that barrier) has
    landed. The ring's full barriers are `barriers[base .. base + stages)`.

    Lowering: `nvgpu.mbarrier.try_wait.parity` on the slot's barrier with
    the slot's phase.

    Example:

    ```mlir
    flash.wg.ring_wait_full %slot, %barriers[0]
        : !flash.ring_slot<stages = 2>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
    ```
  }];
  let arguments = (ins Flash_RingSlotType:$slot,
                       Flash_MBarrierGroup:$barriers, I64Attr:$base);
  let assemblyFormat = [{
    $slot `,` $barriers `[` $base `]` attr-dict `:` qualified(type($slot))
    `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def Flash_WgRingReleaseOp : Flash_Op<"wg.ring_release"> {
  let summary = "Arrives on a ring slot's empty barrier";
  let description = [{
    The calling thread is done with the slot's buffer in this round: it
    arrives on `barriers[base + index]` (`index` the slot's). The ring's
    empty barriers are `barriers[base .. base + stages)`, each initialised
    with the number of threads that release a slot; once all arrived the
    slot may be refilled (`flash.wg.ring_wait_empty`).

    Lowering: `nvgpu.mbarrier.arrive` on the slot's barrier.

    Example:

    ```mlir
    flash.wg.ring_release %slot, %barriers[4]
        : !flash.ring_slot<stages = 2>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
    ```
  }];
  let arguments = (ins Flash_RingSlotType:$slot,
                       Flash_MBarrierGroup:$barriers, I64Attr:$base);
  let assemblyFormat = [{
    $slot `,` $barriers `[` $base `]` attr-dict `:` qualified(type($slot))
    `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def Flash_WgRingWaitEmptyOp : Flash_Op<"wg.ring_wait_empty"> {
  let summary = "Waits until the slot of a ring position may be refilled";
  let description = [{
    Before ring position `position` refills its slot, every release of the
    slot's previous use (position `position - stages`, one round earlier)
    must have arrived on the slot's empty barrier
    `barriers[base + position % stages]`. Positions of the first round
    (`position < stages`) find their slot unused and do not wait; later
    ones wait for the previous round's phase, `((position / stages) - 1) & 1`.
    The ring's geometry is the type's.

    The producer of the K/V ring runs this op with the ring position: it
    tests for the first round and waits for the phase of the round before
    the position's. Where the producer holds the slot instead (the Q
    buffers), `flash.wg.ring_wait_released` says the same with the slot's
    phase.

    Lowering: an `scf.if` on `position >= stages` around
    `nvgpu.mbarrier.try_wait.parity`.

    Example:

    ```mlir
    flash.wg.ring_wait_empty %position, %barriers[4]
        : !flash.ring_slot<stages = 2>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
    ```
  }];
  let arguments = (ins Index:$position, Flash_MBarrierGroup:$barriers,
                       I64Attr:$base, TypeAttrOf<Flash_RingSlotType>:$ring);
  let assemblyFormat = [{
    $position `,` $barriers `[` $base `]` attr-dict `:` $ring `,`
    qualified(type($barriers))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getStages() {
      return ::mlir::cast<RingSlotType>(getRing()).getStages();
    }
  }];
}

def Flash_WgRingWaitReleasedOp : Flash_Op<"wg.ring_wait_released"> {
  let summary = "Waits until a ring slot's previous round was released";
  let description = [{
    Before the slot is refilled in its round, every release of its previous
    round must have arrived on its empty barrier
    `barriers[base + index]` (`index` the slot's): the op waits for the
    phase before the slot's, `phase ^ 1`. In the first round that is the
    phase before the barrier's first, which an mbarrier counts as complete,
    so the first fill of each slot does not wait.

    Lowering: `nvgpu.mbarrier.try_wait.parity` on the slot's barrier with
    the other phase.

    Example:

    ```mlir
    flash.wg.ring_wait_released %slot, %barriers[6]
        : !flash.ring_slot<stages = 2>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>
    ```
  }];
  let arguments = (ins Flash_RingSlotType:$slot,
                       Flash_MBarrierGroup:$barriers, I64Attr:$base);
  let assemblyFormat = [{
    $slot `,` $barriers `[` $base `]` attr-dict `:` qualified(type($slot))
    `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

#endif // FLASH_PIPELINE_TD

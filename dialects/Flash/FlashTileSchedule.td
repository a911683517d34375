//===- FlashTileSchedule.td - which tiles a block computes --*- tablegen -*-===//
//
// Level 3 of the dialect (DESIGN.md "The dialect, three levels"), the
// block's side of the schedule: which (query block, head) tiles a block of
// the grid computes, and which key tiles a tile, or one consumer's rows of
// it, sees under the mask. A block that owns one tile takes it from its
// block index (`flash.wg.block_tile`); a persistent block walks its share
// of the tiles (`flash.wg.tile_loop`, or `flash.wg.claimed_tile_loop`
// where blocks claim tiles from a global counter). The key-tile bounds are
// `flash.wg.tile_bounds` and `flash.wg.key_tiles_seen`, so a kernel that
// walks another range (the backward pass's query tiles, a split of the
// keys) takes its bounds through ops of its own beside these rather than
// through a kernel-wide emitter. Each op is lowered by a pattern of its own
// in lib/Conversion/FlashWarpgroupToNVVM/ to scf, arith, gpu and nvvm.
//
// Rows and key counts are i32 (the kernel's seq_q and seq_k arguments), a
// head (batch * heads + head) an index, as the TMA coordinates take it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_TILE_SCHEDULE_TD
#define FLASH_TILE_SCHEDULE_TD

include "FlashDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Flash_WgBlockTileOp : Flash_WgOp<"block_tile", [Pure]> {
  let summary = "The tile a block of a one-tile-per-block grid computes";
  let description = [{
    Reads this block's (query block, head) from its block index, in the
    grid the runtime launches (kernel.json's `grid.kind`):

    * a `tiles` grid: x the query block, y the head (batch * heads + head);
    * with `sections`, a `sections` grid: x the head within a section, y
      the query block counted from the last, z the section of `gridDim.x`
      heads, so that the hardware's x-fastest block order starts the
      longest causal tiles first, a section of heads at a time.

    `query_blocks` is the number of query blocks of a head (`gridDim.x` of
    a tiles grid, `gridDim.y` of a sections grid). A persistent grid has no
    tile per block: its blocks walk tiles with `flash.wg.tile_loop`.

    Example:

    ```mlir
    %query_block, %head, %query_blocks = flash.wg.block_tile sections
    ```
  }];
  let arguments = (ins UnitAttr:$sections);
  let results = (outs I32:$query_block, Index:$head, I32:$query_blocks);
  let assemblyFormat = "(`sections` $sections^)? attr-dict";
}

def Flash_WgPackedTileOp : Flash_WgOp<"packed_tile"> {
  let summary = "The tile a block of a packed-sequences grid computes";
  let description = [{
    Reads this block's tile of packed sequences (`cu_seqlens`, as
    FlashAttention's varlen API takes them) from its block index in a
    `packed` grid: y is the sequence's rank times `heads` plus the head, x
    the query block counted from the sequence's last, `gridDim.x` being the
    longest sequence's query blocks. Every thread of the block must run it.

    With `long_first_limit` = L, a batch of at most L sequences is ranked
    longest query length first (ties in sequence order): every thread of
    the first `sequences` ranks one sequence against the others, the one of
    this block's rank writes it into the 4 bytes at `offset` of `smem`, and
    a block barrier publishes it. So the hardware's block order, x-fastest
    then y, starts the longest sequences' heads first and ends on the
    shortest ones. Larger batches keep their order (ranking costs each block
    a loop over the batch).

    Results: the query block (negative for a block past its sequence's
    last, which must do nothing), the head (index), the sequence's query
    blocks, its first query row and first key row in the packed tensors,
    and its query and key lengths. A sequence's rows are clamped to
    `[0, total_q)` and `[0, total_k)`, so a malformed `cu_seqlens` cannot
    move a store out of the tensors.

    Example:

    ```mlir
    %qb, %head, %qbs, %q0, %k0, %lq, %lk = flash.wg.packed_tile
        %cu_q, %cu_k, %heads, %total_q, %total_k, %smem[%off]
        block_m = 128 long_first_limit = 64
        : !llvm.ptr<1>, !llvm.ptr<1>, memref<?xi8, 3>
    ```
  }];
  let arguments = (ins Flash_LLVMPointer:$cu_seqlens_q,
                   Flash_LLVMPointer:$cu_seqlens_k, I32:$heads, I32:$total_q,
                   I32:$total_k, MemRefRankOf<[I8], [1]>:$smem, Index:$offset,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_m,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$long_first_limit);
  let results = (outs I32:$query_block, Index:$head, I32:$query_blocks,
                 I32:$q_start, I32:$k_start, I32:$len_q, I32:$len_k);
  let assemblyFormat = [{
    $cu_seqlens_q `,` $cu_seqlens_k `,` $heads `,` $total_q `,` $total_k `,`
    $smem `[` $offset `]` `block_m` `=` $block_m
    `long_first_limit` `=` $long_first_limit attr-dict `:`
    qualified(type($cu_seqlens_q)) `,` qualified(type($cu_seqlens_k)) `,`
    type($smem)
  }];
}

def Flash_WgTileLoopOp : Flash_WgOp<"tile_loop", [RecursiveMemoryEffects]> {
  let summary = "A persistent block's static share of the tiles";
  let description = [{
    Runs its region once per tile of this block's share of the
    `batch * heads * ceil(seq_q / block_m)` tiles, one block per SM: in
    round `r` block `c` takes work item `r * gridDim.x + c`. The region's
    arguments are the tile's query block, its head, the query blocks per
    head, the ring position of the tile's first key tile (`kv_base`: the
    K/V ring runs on across a block's tiles) and the tile's slot in the
    ring of Q buffers (the block's `n`-th tile takes position `n`). The
    region yields the number of key tiles the tile took from the K/V ring,
    which moves `kv_base` on for the next.

    Without `sections`, a work item is one query block, taken head by head
    (a head's query blocks one after another, so the blocks running at once
    read few heads' K and V). With `sections = keys` (the causal mask), a
    work item is a pair of query blocks, the i-th from the end and the i-th
    from the start (the middle one alone for an odd count), the longer
    first, so every item sees about numM + 1 blocks of keys and a static
    round robin balances; items are taken section by section (as many
    heads as have K and V of `keys` keys together, at least one) and level
    by level within a section, so the blocks running at once read the same
    keys.

    The producer and the consumers of a block each run the same loop, and
    so walk the same tiles.

    Example:

    ```mlir
    flash.wg.tile_loop %seq_q, %seq_k, %batch, %heads block_m = 128
        sections = 32768 {
    ^bb0(%query_block: i32, %head: index, %query_blocks: i32,
         %kv_base: index, %q_slot: !flash.ring_slot<stages = 2>):
      // the tile's loads or its key loops and epilogue
      flash.wg.yield %key_tiles : index
    }
    ```
  }];
  let arguments = (ins I32:$seq_q, I32:$seq_k, I32:$batch, I32:$heads,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_m,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$sections);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $seq_q `,` $seq_k `,` $batch `,` $heads `block_m` `=` $block_m
    (`sections` `=` $sections^)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Flash_WgClaimedTileLoopOp
    : Flash_WgOp<"claimed_tile_loop", [RecursiveMemoryEffects]> {
  let summary = "A persistent block's tiles, claimed from a global counter";
  let description = [{
    Like `flash.wg.tile_loop` under the causal mask (sections of heads,
    level by level), but a work item is one query block, longest first,
    and a block takes the next item from `counter` (the runtime's
    `tile_counter`, zero at launch) when it frees up: the longest tiles go
    first and the shortest fill the tail.

    With `counter` (the producer's form) the loop claims one tile ahead,
    so the atomic's round trip passes under the current tile's loads;
    before each tile it waits until the tile's Q buffer was released
    (`q_empty`, a `flash.wg.ring_wait_released`), and publishes the claim
    in the claims, two i32 per Q buffer at byte `window + claims_offset` of
    `smem` (query block at 2 x buffer, -1 once the work ran out; head at
    2 x buffer + 1) before the tile's Q load arrives on its barrier; with
    no work left it arrives there itself. The block's last claim, the
    `items + gridDim.x`-th of the launch, sets the counter back to zero for
    the next launch on the stream. Without `counter` (the consumers' form)
    the loop waits for the tile's Q (`q_full`, `flash.wg.ring_wait_full`)
    and reads the claim. So the consumers' region runs after Q arrived,
    and the producer's before Q is loaded.

    The region's arguments and result are `flash.wg.tile_loop`'s.

    Example:

    ```mlir
    flash.wg.claimed_tile_loop %seq_q, %seq_k, %batch, %heads
        counter %counter : !llvm.ptr<1>
        claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8]
        block_m = 128 sections = 32768
        : memref<?xi8, #gpu.address_space<workgroup>>,
          !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10> {
    ^bb0(%query_block: i32, %head: index, %query_blocks: i32,
         %kv_base: index, %q_slot: !flash.ring_slot<stages = 2>):
      flash.wg.yield %key_tiles : index
    }
    ```
  }];
  let arguments = (ins I32:$seq_q, I32:$seq_k, I32:$batch, I32:$heads,
                   Optional<Flash_LLVMPointer>:$counter,
                   MemRefRankOf<[I8], [1]>:$smem, Index:$window,
                   I64Attr:$claims_offset,
                   Flash_MBarrierGroup:$barriers,
                   I64Attr:$q_full, I64Attr:$q_empty,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_m,
                   ConfinedAttr<I64Attr, [IntPositive]>:$sections);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $seq_q `,` $seq_k `,` $batch `,` $heads
    (`counter` $counter^ `:` qualified(type($counter)))?
    `claims` $smem `[` $window `+` $claims_offset `]` `,`
    $barriers `[` `q_full` `=` $q_full `,` `q_empty` `=` $q_empty `]`
    `block_m` `=` $block_m `sections` `=` $sections attr-dict-with-keyword
    `:` type($smem) `,` qualified(type($barriers)) $body
  }];
  let hasVerifier = 1;
}

def Flash_WgTileBoundsOp : Flash_WgOp<"tile_bounds", [Pure]> {
  let summary = "A tile's first query row and the key tiles its rows see";
  let description = [{
    For the tile of query block `query_block` (of `query_blocks` per head)
    returns its first query row `m0`, the key tiles of `block_n` keys no
    row of it needs masked (`n_full`) and the key tiles its rows see
    (`n_hi`); tiles `[n_full, n_hi)` need `flash.mask`.

    Query block x starts at row `x * block_m`, or with `align_to_end` at
    `seq_q - (query_blocks - x) * block_m`: the blocks then end at seq_q,
    and the rows that do not exist (before row 0: no key, no store) fall in
    the first block, whose rows see the fewest keys, where aligned at row 0
    they fell in the last, which walks every key for them.

    Without `causal` every row sees all seq_k keys. With it the mask is
    bottom-right aligned: row i sees keys up to i + seq_k - seq_q, so
    `n_hi` is `flash.wg.key_tiles_seen` of the block's rows and `n_full`
    the tiles wholly at or before its first row's last key.

    Example:

    ```mlir
    %m0, %n_full, %n_hi = flash.wg.tile_bounds %x of %num_m, %seq_q, %seq_k
        block_m = 128 block_n = 128 causal align_to_end
    ```
  }];
  let arguments = (ins I32:$query_block, I32:$query_blocks, I32:$seq_q,
                   I32:$seq_k,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_m,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_n,
                   UnitAttr:$causal, UnitAttr:$align_to_end);
  let results = (outs I32:$m0, I32:$n_full, I32:$n_hi);
  let assemblyFormat = [{
    $query_block `of` $query_blocks `,` $seq_q `,` $seq_k
    `block_m` `=` $block_m `block_n` `=` $block_n
    (`causal` $causal^)? (`align_to_end` $align_to_end^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Flash_WgKeyTilesSeenOp : Flash_WgOp<"key_tiles_seen", [Pure]> {
  let summary = "The key tiles the rows before a row see under the causal mask";
  let description = [{
    Under the bottom-right aligned causal mask (row i sees keys up to
    i + seq_k - seq_q), the number of key tiles of `block_n` keys that rows
    below `rows_end` see: `ceil(clamp(rows_end + seq_k - seq_q, 0, seq_k) /
    block_n)`. A consumer warpgroup's own range ends there for its last row
    (the rows above a block's last can end a tile or more before the
    block's `n_hi`), and so do the tiles it must release unseen.

    Example:

    ```mlir
    %tiles = flash.wg.key_tiles_seen %rows_end, %seq_q, %seq_k block_n = 64
    ```
  }];
  let arguments = (ins I32:$rows_end, I32:$seq_q, I32:$seq_k,
                   ConfinedAttr<I64Attr, [IntPositive]>:$block_n);
  let results = (outs I32:$tiles);
  let assemblyFormat = [{
    $rows_end `,` $seq_q `,` $seq_k `block_n` `=` $block_n attr-dict
  }];
}

def Flash_WgWarpUniformOp : Flash_WgOp<"warp_uniform", [Pure]> {
  let summary = "Lane 0's value, which ptxas then knows is warp-uniform";
  let description = [{
    Every lane of the warp gets lane 0's `value` (`shfl.sync.idx` from lane
    0 over the full mask). The value does not change where the caller
    already knows it is the same in every lane (a consumer's loop bound
    computed from its warpgroup index); what changes is what ptxas knows:
    a bound derived from the thread index looks divergent to it, and the
    loop's address arithmetic then leaves the uniform datapath. CUTLASS's
    `canonical_warp_group_idx` does the same.

    Example:

    ```mlir
    %uniform = flash.wg.warp_uniform %tiles : i32
    ```
  }];
  let arguments = (ins I32:$value);
  let results = (outs I32:$result);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // FLASH_TILE_SCHEDULE_TD

//===- FlashOps.td - flash dialect operations ---------------*- tablegen -*-===//
//
// Kernel-level `flash.attention` and the tile-level ops that `-flash-tile`
// lowers it to. Verifiers live in FlashOps.cpp so their messages can name the
// operand and the dimension at fault.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_OPS_TD
#define FLASH_OPS_TD

include "FlashDialect.td"
include "FlashAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

def Flash_AttentionOp : Flash_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention over memrefs";
  let description = [{
    Computes `O = softmax(scale * Q K^T + mask) V` for every batch and head,
    and, when an `lse` operand is given, the log-sum-exp of each row of the
    masked, scaled logits (natural log).

    Operands are memrefs of shape batch x heads x seq x head_dim; any stride
    is allowed, dimensions may be dynamic except the head dim. Q and O have
    `seq_q` rows and H_q heads, K and V `seq_k` rows and H_kv heads (both may
    differ from Q's). H_q must be a multiple G * H_kv: grouped-query
    attention, query head h reading K/V head h / G (G = H_q: multi-query
    attention; G = 1: multi-head). The optional `lse` is an f32 memref of
    shape batch x H_q x seq_q.

    Attributes:
    - `scale` (f32): multiplies the logits; defaults to 1/sqrt(head_dim).
    - `causal` (unit): query row i sees key j only when
      j <= i + seq_k - seq_q (the mask is aligned to the bottom-right corner,
      as in FlashAttention 2.1 and later; for seq_q == seq_k this is the usual
      lower triangle). A row that sees no key gets O = 0 and LSE = -inf.
    - `config` (`#flash.config`): the tile configuration; when absent the
      lowering picks a default for the head dim.
    - `key_ranges` (`array<i64: c, rows>`): block sparsity the mask_mod's
      data decides (FlexAttention's BlockMask, as a range per block):
      capture `c` is an i32 [B, ceil(seq_q / rows), 2] table whose entry
      (b, i) = [lo, hi) bounds the keys any query row of rows
      [i * rows, (i + 1) * rows) of batch b sees. The caller promises that
      the mask_mod (with `causal`) hides every key outside it; the GPU
      kernel then neither loads nor computes the key tiles outside, and the
      CPU path, which computes them all, gives the same result. A table
      that breaks the promise gives wrong rows, as a wrong block mask does.
      A table of [B, blocks, 4] adds [full_lo, full_hi): keys the mask_mod
      keeps for every row of the block (its full blocks), on which the GPU
      kernel does not evaluate it.

    Example:

    ```mlir
    flash.attention %q, %k, %v -> %o, lse %lse
        {causal, config = #flash.config<block_m = 128, block_n = 128>}
        : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
          memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>,
          memref<?x?x?xf32>
    ```

    Grouped-query attention, 32 query heads over 8 K/V heads:

    ```mlir
    flash.attention %q, %k, %v -> %o
        : memref<?x32x?x128xbf16>, memref<?x8x?x128xbf16>,
          memref<?x8x?x128xbf16> -> memref<?x32x?x128xbf16>
    ```

    Packed sequences (FlashAttention's varlen form): with `packed`, Q and O
    hold the queries of every sequence one after another along their seq
    dimension (batch 1), K and V their keys, and `cu_seqlens_q` /
    `cu_seqlens_k` (rank-1 i32, the prefix sums of the lengths: sequence s
    is rows [cu[s], cu[s + 1])) delimit them; `max_seqlen_q` bounds the
    query lengths. Each sequence is its own attention problem (the causal
    mask aligned to its own bottom-right corner); a sequence of length 0
    gives nothing, and one without keys gives O = 0 and LSE = -inf.

    ```mlir
    flash.attention %q, %k, %v -> %o
        packed(%cu_q : memref<?xi32>, %cu_k : memref<?xi32>, max_q %max)
        {causal}
        : memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>,
          memref<1x?x?x128xbf16> -> memref<1x?x?x128xbf16>
    ```

    A paged K/V cache (decoding, as FlashAttention's `k_cache` with a
    `page_table` and vLLM's block table): with `paged`, K and V are the
    cache's pages viewed as num_pages x H_kv x page_size x head_dim (the
    storage num_pages x page_size x H_kv x D is that view with its
    strides; the page size must be static), `page_table` (rank-2 i32,
    batch x max_pages) names batch b's pages in order and `cache_lens`
    (rank-1 i32, one per batch) its number of cached keys: key j of batch
    b is row j % page_size of page page_table[b, j / page_size]. Q and O
    are batch x H_q x seq_q x D as usual (seq_q: the step's new tokens),
    and the causal mask is aligned to the cache's end (query i sees keys
    j <= i + cache_lens[b] - seq_q); the score and mask mods see each
    query at its position in the cache, q_idx = i + max(cache_lens[b] -
    seq_q, 0), so that a window or a chunk counts from it as in
    decoding. A length past the table's pages, or a
    page index outside the cache, is clamped into it: wrong numbers for a
    wrong table, never a read outside.

    ```mlir
    flash.attention %q, %k_cache, %v_cache -> %o, lse %lse
        paged(%page_table : memref<?x?xi32>, %cache_lens : memref<?xi32>)
        {causal}
        : memref<?x32x?x128xbf16>,
          memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>,
          memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>
        -> memref<?x32x?x128xbf16>, memref<?x32x?xf32>
    ```

    Split-KV (flash-decoding): with `splits`, each row's keys are split
    into S ranges of whole key tiles, S being the first dimension of the
    f32 scratch `partial_out` (S x batch x H_q x seq_q x head_dim) and
    `partial_lse` (S x batch x H_q x seq_q). Split s attends to its range
    alone and writes its normalised output and LSE there (a split without
    keys writes 0 and -inf); a second step combines them weighted by their
    LSEs into `o` and `lse`, and adds the sink there, once. The scratch is
    the caller's, so a call allocates nothing: a decoding step fits in a
    CUDA graph. Not with packed sequences.

    ```mlir
    flash.attention %q, %k_cache, %v_cache -> %o, lse %lse
        paged(%page_table : memref<?x?xi32>, %cache_lens : memref<?xi32>)
        splits(%o_part : memref<?x?x32x?x128xf32>,
               %lse_part : memref<?x?x32x?xf32>)
        {causal}
        : memref<?x32x?x128xbf16>,
          memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>,
          memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>
        -> memref<?x32x?x128xbf16>, memref<?x32x?xf32>
    ```

    GQA packing (`pack_gqa`, for decoding): one program computes the
    G = H_q / H_kv query heads of a K/V head together, their G x seq_q rows
    one tile, so that each K and V byte is read once per K/V head instead
    of once per query head. The result is the same; a decoding step with
    few new tokens fills its tile with them. Not with packed sequences yet;
    the GPU lowering does not take it yet.

    Score and mask mods (FlexAttention's `score_mod` and `mask_mod`): the
    optional region `score_mod` maps each scaled logit to a new one, and
    `mask_mod` says whether query `q_idx` may see key `kv_idx`:

        score_mod(score: f32, b, h, q_idx, kv_idx: index) -> f32
        mask_mod(b, h, q_idx, kv_idx: index) -> i1

    so that `O = softmax(S') V` with `S'[i, j] = score_mod(scale * (Q
    K^T)[i, j], b, h, i, j)` where `mask_mod(b, h, i, j)` holds (and
    `causal` allows), -inf elsewhere. `b` is the batch (with packed
    sequences, the sequence), `h` the query head, `q_idx` and `kv_idx` the
    rows within the sequence. After these arguments each region takes the
    `captures`, memrefs it may read with `memref.load` (ALiBi slopes,
    document ids, a bias); the body is `arith` and `math` ops and such
    loads, ended by `flash.yield`, and uses nothing defined outside it. The
    regions are evaluated only for q_idx < seq_q and kv_idx < seq_k, so a
    capture needs only those rows.

    ```mlir
    // Logit soft-capping at 30 and a sliding window of 256 keys.
    flash.attention %q, %k, %v -> %o {causal}
        : !t, !t, !t -> !t
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %cap = arith.constant 30.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %r = arith.mulf %t, %cap : f32
        flash.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %w = arith.constant 256 : index
        %d = arith.subi %qi, %kv : index
        %in = arith.cmpi slt, %d, %w : index
        flash.yield %in : i1
      }
    ```

    Attention sinks (as gpt-oss uses them): `sinks` is an f32 memref of
    H_q logits, one per query head, that join every row's softmax
    denominator and add nothing to the output:

        O[i] = sum_j exp(S'[i, j] - LSE[i]) V[j]
        LSE[i] = log(exp(sink[h]) + sum_j exp(S'[i, j]))

    The sink logit is taken as it is (neither scaled nor modded). A row
    that sees no key gets O = 0 and LSE = sink[h].

    ```mlir
    flash.attention %q, %k, %v -> %o, lse %lse
        sinks(%s : memref<32xf32>) {causal}
        : !q, !kv, !kv -> !q, memref<?x32x?xf32>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "queries", [MemRead]>:$q,
    Arg<AnyMemRef, "keys", [MemRead]>:$k,
    Arg<AnyMemRef, "values", [MemRead]>:$v,
    Arg<AnyMemRef, "output", [MemWrite]>:$o,
    Arg<Optional<AnyMemRef>, "row log-sum-exp output", [MemWrite]>:$lse,
    Arg<Optional<AnyMemRef>, "query sequence starts (packed)", [MemRead]>:$cuSeqlensQ,
    Arg<Optional<AnyMemRef>, "key sequence starts (packed)", [MemRead]>:$cuSeqlensK,
    Optional<Index>:$maxSeqlenQ,
    Arg<Variadic<AnyMemRef>, "memrefs the score and mask mods read", [MemRead]>:$captures,
    Arg<Optional<AnyMemRef>, "per-head sink logits", [MemRead]>:$sinks,
    Arg<Optional<AnyMemRef>, "each batch's cache pages (paged)", [MemRead]>:$pageTable,
    Arg<Optional<AnyMemRef>, "each batch's cached keys (paged)", [MemRead]>:$cacheLens,
    Arg<Optional<AnyMemRef>, "each split's normalised output (split-KV)", [MemRead, MemWrite]>:$partialOut,
    Arg<Optional<AnyMemRef>, "each split's row log-sum-exp (split-KV)", [MemRead, MemWrite]>:$partialLse,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<Flash_ConfigAttr>:$config,
    OptionalAttr<DenseI64ArrayAttr>:$key_ranges,
    UnitAttr:$pack_gqa
  );
  let regions = (region AnyRegion:$scoreMod, AnyRegion:$maskMod);
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $o (`,` `lse` $lse^)?
    (`packed` `(` $cuSeqlensQ^ `:` type($cuSeqlensQ) `,` $cuSeqlensK `:`
      type($cuSeqlensK) `,` `max_q` $maxSeqlenQ `)`)?
    (`paged` `(` $pageTable^ `:` type($pageTable) `,` $cacheLens `:`
      type($cacheLens) `)`)?
    (`splits` `(` $partialOut^ `:` type($partialOut) `,` $partialLse `:`
      type($partialLse) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    attr-dict `:`
    type($q) `,` type($k) `,` type($v) `->` type($o) (`,` type($lse)^)?
    (`score_mod` $scoreMod^)? (`mask_mod` $maskMod^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension shared by Q, K, V and O.
    int64_t getHeadDim();
    /// The logit scale: the `scale` attribute, else 1/sqrt(head_dim).
    float getEffectiveScale();
    /// Whether Q, K, V and O hold packed sequences (cu_seqlens given).
    bool isPacked() { return static_cast<bool>(getCuSeqlensQ()); }
    /// Whether K and V are a paged cache (page table and lengths given).
    bool isPaged() { return static_cast<bool>(getPageTable()); }
    /// Whether each row's keys are split over programs (split-KV).
    bool isSplit() { return static_cast<bool>(getPartialOut()); }
    /// Whether a score or a mask mod is given.
    bool hasMods() { return !getScoreMod().empty() || !getMaskMod().empty(); }
  }];
}

def Flash_AttentionBackwardOp : Flash_Op<"attention_backward",
    [AttrSizedOperandSegments]> {
  let summary = "Gradients of scaled dot-product attention over memrefs";
  let description = [{
    The backward pass of `flash.attention`: from the forward's inputs Q, K,
    V, its output O and row log-sum-exp LSE, and dO (the loss's gradient
    with respect to O), computes dQ, dK and dV. With P = softmax(scale * Q
    K^T + mask) recomputed from LSE (never stored), delta = rowsum(dO * O):

        dV = P^T dO
        dP = dO V^T
        dS = P * (dP - delta)
        dQ = scale * dS K
        dK = scale * dS^T Q

    Shapes, layouts, grouped-query heads, packed sequences and the
    attributes are the forward's, and must be the ones the forward ran with:
    Q, O, dO and dQ are batch x H_q x seq_q x head_dim, K, V, dK and dV
    batch x H_kv x seq_k x head_dim (any strides), LSE is the f32 batch x
    H_q x seq_q the forward wrote. dK and dV of a K/V head sum the
    gradients of every query head of its group. A query row that saw no key
    (LSE = -inf) contributes nothing; its dQ row is 0.

    Packed sequences take the forward's `cu_seqlens_q` / `cu_seqlens_k` and
    `max_seqlen_q`, and `max_seqlen_k` (the longest key sequence) too.

    The forward's score and mask mods and their captures are given again,
    with the same regions: P is recomputed through them, and the gradient
    of a raw logit is `scale * score_mod'(x) * dS'` with `dS'` the
    gradient of the modded logit. The compiler derives `score_mod'` from
    the region's `arith` and `math` body by the chain rule; the verifier
    names an op it has no derivative for. The forward's `sinks` come with
    `dsinks`, an f32 memref of H_q that receives the sink logits'
    gradients, `dsink[h] = -sum_{b, i} exp(sink[h] - LSE[b, h, i]) *
    delta[b, h, i]` (summed over the batch and the rows).

    `key_ranges` is the forward's, with the same table among the captures:
    on the GPU each key tile's blocks run only over the query rows whose
    entries' [lo, hi) reach it (the table's transpose, taken per key tile
    when the kernel starts), and with 4 columns a (query, key) tile pair
    inside the query rows' full range skips the mask_mod. Not under
    `deterministic`, whose dQ turns count every key tile.

    ```mlir
    flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
        sinks(%s : memref<?xf32> -> %ds : memref<?xf32>) {causal}
        : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
      score_mod {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 50.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %r = arith.mulf %t, %c : f32
        flash.yield %r : f32
      }
    ```

    The gradients are accumulated in f32 and rounded once to the operands'
    element type. Many key tiles add into each row of dQ; `deterministic`
    asks for a fixed order of those additions, so that every run gives the
    same bits (the CPU path's order is always fixed; on the GPU it costs
    some speed).

    Example:

    ```mlir
    flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
        {causal}
        : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
          memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
          memref<?x?x?x128xbf16>, memref<?x?x?xf32>
        -> memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
           memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "queries", [MemRead]>:$q,
    Arg<AnyMemRef, "keys", [MemRead]>:$k,
    Arg<AnyMemRef, "values", [MemRead]>:$v,
    Arg<AnyMemRef, "forward output", [MemRead]>:$o,
    Arg<AnyMemRef, "output gradient", [MemRead]>:$dO,
    Arg<AnyMemRef, "forward row log-sum-exp", [MemRead]>:$lse,
    Arg<AnyMemRef, "query gradient", [MemWrite]>:$dQ,
    Arg<AnyMemRef, "key gradient", [MemWrite]>:$dK,
    Arg<AnyMemRef, "value gradient", [MemWrite]>:$dV,
    Arg<Optional<AnyMemRef>, "query sequence starts (packed)", [MemRead]>:$cuSeqlensQ,
    Arg<Optional<AnyMemRef>, "key sequence starts (packed)", [MemRead]>:$cuSeqlensK,
    Optional<Index>:$maxSeqlenQ,
    Optional<Index>:$maxSeqlenK,
    Arg<Variadic<AnyMemRef>, "memrefs the score and mask mods read", [MemRead]>:$captures,
    Arg<Optional<AnyMemRef>, "per-head sink logits", [MemRead]>:$sinks,
    Arg<Optional<AnyMemRef>, "sink logit gradient", [MemWrite]>:$dSinks,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    UnitAttr:$deterministic,
    OptionalAttr<Flash_ConfigAttr>:$config,
    OptionalAttr<DenseI64ArrayAttr>:$key_ranges
  );
  let regions = (region AnyRegion:$scoreMod, AnyRegion:$maskMod);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $dO `,` $lse `->` $dQ `,` $dK `,` $dV
    (`packed` `(` $cuSeqlensQ^ `:` type($cuSeqlensQ) `,` $cuSeqlensK `:`
      type($cuSeqlensK) `,` `max_q` $maxSeqlenQ `,` `max_k` $maxSeqlenK `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `->` $dSinks `:` type($dSinks) `)`)?
    attr-dict `:`
    type($q) `,` type($k) `,` type($v) `,` type($o) `,` type($dO) `,`
    type($lse) `->` type($dQ) `,` type($dK) `,` type($dV)
    (`score_mod` $scoreMod^)? (`mask_mod` $maskMod^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension shared by every operand but LSE.
    int64_t getHeadDim();
    /// The logit scale: the `scale` attribute, else 1/sqrt(head_dim).
    float getEffectiveScale();
    /// Whether the operands hold packed sequences (cu_seqlens given).
    bool isPacked() { return static_cast<bool>(getCuSeqlensQ()); }
    /// Whether a score or a mask mod is given.
    bool hasMods() { return !getScoreMod().empty() || !getMaskMod().empty(); }
  }];
}

//===----------------------------------------------------------------------===//
// Tile level
//===----------------------------------------------------------------------===//

def Flash_GridOp : Flash_Op<"grid", [SingleBlock, NoTerminator,
    RecursiveMemoryEffects]> {
  let summary = "Run a tile program once for every point of a launch grid";
  let description = [{
    The body is one program; it runs once for every point of the grid whose
    extents are the operands (one to three), in no particular order and with
    no communication between programs. Inside, `flash.program_id` reads the
    coordinates. On the GPU a program is a thread block and the grid the
    launch grid; on the CPU reference path the grid becomes a loop nest.

    Example:

    ```mlir
    flash.grid %query_tiles, %batch_heads {
      %tile = flash.program_id 0
      ...
    }
    ```
  }];
  let arguments = (ins Variadic<Index>:$sizes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sizes attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "ValueRange":$sizes)>
  ];
}

def Flash_ProgramIdOp : Flash_Op<"program_id", [Pure]> {
  let summary = "Index of this program along one launch-grid axis";
  let description = [{
    One program computes one tile of the output. The launch grid has up to
    three axes; the attention tile program uses axis 0 for the query tile
    and axis 1 for the (batch, head) pair, as Triton does. Inside a
    `flash.grid` the axis must be one of the grid's; outside one (a kernel
    function written by hand) the launcher defines the grid.

    Example:

    ```mlir
    %tile = flash.program_id 0
    ```
  }];
  let arguments = (ins I64Attr:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$axis attr-dict";
  let builders = [
    OpBuilder<(ins "int64_t":$axis), [{
      build($_builder, $_state, $_builder.getIndexType(), axis);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_LoadTileOp : Flash_Op<"load_tile", [AttrSizedOperandSegments]> {
  let summary = "Load a block of rows of one (batch, head), zero past the end";
  let description = [{
    Reads rows `[row, row + R)` of `source[b, h]` into an R x D tile, where
    the source is a batch x heads x seq x D memref and the indices are
    `[b, h, row]`, or into an R-vector from a batch x heads x seq memref
    (the LSE, the backward pass's deltas). Rows at or past `dim(source, 2)`
    read as zero: this is the boundary masking that lets sequence lengths be
    any value.

    With `grouped` the source has one more dimension, batch x heads x group
    x seq [x D] (the query heads of grouped-query attention split as K/V
    heads x G), and the tile's rows run through the G heads' rows one head
    after another: row r is `source[b, h, r / seq, r % seq]`, zero from
    r = G * seq on. The G x seq rows of one K/V head are one tile that
    way, whatever the layout.

    With `pages(%table, %keys)` the source is a paged K/V cache, pages x
    heads x page_size x D, and the indices `[b, h, key]` name keys
    `[key, key + R)` of sequence `b` through its row of the page table
    (`i32`, sequences x pages): row r is key k = key + r, read from row
    `k % page_size` of page `table[b, k / page_size]` (clamped into the
    cache), zero from k = `keys` on. The tile may span several pages
    (a page smaller than the tile); `keys` must not exceed the table's
    pages x page_size, so that every key read has a table entry.

    Example:

    ```mlir
    %q_tile = flash.load_tile %q[%b, %h, %row]
        : memref<?x?x?x128xbf16> -> tensor<128x128xbf16>
    // Keys %col.. of sequence %b over pages of 16 rows: eight pages.
    %k_tile = flash.load_tile %k_cache[%b, %kv_head, %col]
        pages(%table : memref<?x?xi32>, %keys)
        : memref<?x8x16x128xbf16> -> tensor<128x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "source", [MemRead]>:$source,
                       Variadic<Index>:$indices, UnitAttr:$grouped,
                       Optional<MemRefRankOf<[I32], [2]>>:$pageTable,
                       Optional<Index>:$keys);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` (`grouped` $grouped^)?
    (`pages` `(` $pageTable^ `:` type($pageTable) `,` $keys `)`)? attr-dict
    `:` type($source) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$source,
                   "::mlir::ValueRange":$indices,
                   CArg<"bool", "false">:$grouped), [{
      build($_builder, $_state, result, source, indices, grouped,
            /*pageTable=*/::mlir::Value(), /*keys=*/::mlir::Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_StoreTileOp : Flash_Op<"store_tile"> {
  let summary = "Store a tile of rows of one (batch, head), dropping rows past the end";
  let description = [{
    Writes an R x D tile to rows `[row, row + R)` of `dest[b, h]` (a
    batch x heads x seq x D memref), or an R-vector to `dest[b, h, row:]` of
    a batch x heads x seq memref (the LSE). Rows at or past `dim(dest, 2)`
    are not written. With `grouped`, rows run through a group of heads as
    `flash.load_tile`'s do: row r goes to `dest[b, h, r / seq, r % seq]`
    and rows from G * seq on are not written.

    With `accumulate` the tile is added to what `dest` holds (f32 only):
    the backward pass's dQ, to which every key tile contributes. Programs
    may add into the same rows; each addition is atomic, in whatever order
    the programs run.

    Example:

    ```mlir
    flash.store_tile %o_tile, %o[%b, %h, %row]
        : tensor<128x128xbf16> -> memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value,
                       Arg<AnyMemRef, "destination", [MemRead, MemWrite]>:$dest,
                       Variadic<Index>:$indices, UnitAttr:$accumulate,
                       UnitAttr:$grouped);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` (`accumulate` $accumulate^)?
    (`grouped` $grouped^)? attr-dict `:` type($value) `->` type($dest)
  }];
  let hasVerifier = 1;
}

def Flash_DotOp : Flash_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Tile matrix product accumulated in f32";
  let description = [{
    `result = acc + a * b`, with `a` read transposed (`a^T`) under
    `transpose_a` and `b` under `transpose_b`. `a` is M x K (K x M when
    transposed), `b` is K x N (N x K when transposed), `acc` and the result
    are M x N f32. `a` and `b` share one element type (bf16, f16 or f32).
    On sm_90a it becomes `wgmma`; `transpose_b` is the form of S = Q K^T,
    `transpose_a` that of the backward pass's dV = P^T dO and dK = dS^T Q.

    Example:

    ```mlir
    %s = flash.dot %q_tile, %k_tile, %zero transpose_b
        : tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       AnyRankedTensor:$acc, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:`
    type($a) `,` type($b) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Value":$a, "Value":$b, "Value":$acc,
                   "bool":$transposeB), [{
      build($_builder, $_state, acc.getType(), a, b, acc,
            /*transpose_a=*/false, transposeB);
    }]>,
    OpBuilder<(ins "Value":$a, "Value":$b, "Value":$acc, "bool":$transposeA,
                   "bool":$transposeB), [{
      build($_builder, $_state, acc.getType(), a, b, acc, transposeA,
            transposeB);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_MaskOp : Flash_Op<"mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "Set out-of-range and (optionally) causally hidden logits to -inf";
  let description = [{
    `scores` is the M x N logit tile whose row 0 is query `row_start` and
    whose column 0 is key `col_start`. Entries whose key index is at or past
    `seq_k` become -inf; with `causal`, so do entries whose key index j
    exceeds `i + seq_k - seq_q` for query index i (the bottom-right aligned
    mask of `flash.attention`). Other entries pass through. With
    `grouped_rows` the tile's rows are the queries of several heads one
    head after another (a `grouped` load's): row r is query `r % seq_q`.

    Example:

    ```mlir
    %masked = flash.mask %s, %row, %col, %seq_q, %seq_k causal
        : tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$row_start,
                       Index:$col_start, Index:$seq_q, Index:$seq_k,
                       UnitAttr:$causal, UnitAttr:$grouped_rows);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $scores `,` $row_start `,` $col_start `,` $seq_q `,` $seq_k
    (`causal` $causal^)? (`grouped_rows` $grouped_rows^)? attr-dict `:`
    type($scores)
  }];
  let builders = [
    OpBuilder<(ins "Value":$scores, "Value":$rowStart, "Value":$colStart,
                   "Value":$seqQ, "Value":$seqK, "bool":$causal), [{
      build($_builder, $_state, scores.getType(), scores, rowStart, colStart,
            seqQ, seqK, causal);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_SoftmaxUpdateOp : Flash_Op<"softmax_update", [Pure,
    AllTypesMatch<["scores", "p"]>,
    AllTypesMatch<["row_max", "row_sum", "new_max", "new_sum", "alpha"]>]> {
  let summary = "One online-softmax step over a tile of logits";
  let description = [{
    With `x = scale * scores` (M x N) and the running row max `m` and row sum
    `l` (M-vectors) from the tiles before:

        m_new = max(m, rowmax(x))
        alpha = exp(m - m_new)
        p     = exp(x - m_new)
        l_new = l * alpha + rowsum(p)

    A row whose logits are all -inf so far (m_new = -inf) gets p = 0,
    alpha = 0 and l_new = 0, never NaN. Start with m = -inf and l = 0.

    With `base2` the running max is kept in base-2 units, as the GPU's exp2
    wants: `scale` already includes log2(e), `x = scale * scores` is one
    multiply-add with the max, and `exp` above reads `exp2`. p, alpha and
    l_new are unchanged; m and m_new are log2(e) times larger. The
    `flash.finalize` that consumes such a max must have `base2` too.

    Example:

    ```mlir
    %p, %m_new, %l_new, %alpha = flash.softmax_update %s, %m, %l
        {scale = 0.0883883461 : f32} : tensor<128x64xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, AnyRankedTensor:$row_max,
                       AnyRankedTensor:$row_sum,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       UnitAttr:$base2);
  let results = (outs AnyRankedTensor:$p, AnyRankedTensor:$new_max,
                      AnyRankedTensor:$new_sum, AnyRankedTensor:$alpha);
  let assemblyFormat = [{
    $scores `,` $row_max `,` $row_sum (`base2` $base2^)? attr-dict `:`
    type($scores) `,` type($row_max)
  }];
  let builders = [
    OpBuilder<(ins "Value":$scores, "Value":$rowMax, "Value":$rowSum,
                   "FloatAttr":$scale), [{
      Type rowType = rowMax.getType();
      build($_builder, $_state, scores.getType(), rowType, rowType, rowType,
            scores, rowMax, rowSum, scale, /*base2=*/UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_RescaleOp : Flash_Op<"rescale", [Pure,
    AllTypesMatch<["acc", "result"]>]> {
  let summary = "Scale each row of the accumulator by the softmax correction";
  let description = [{
    `result[i, j] = acc[i, j] * alpha[i]`: the accumulator's rows were summed
    against an older row max, and `alpha` from `flash.softmax_update` brings
    them to the new one.

    Example:

    ```mlir
    %acc1 = flash.rescale %acc, %alpha : tensor<128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$alpha);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $acc `,` $alpha attr-dict `:` type($acc) `,` type($alpha)
  }];
  let builders = [
    OpBuilder<(ins "Value":$acc, "Value":$alpha), [{
      build($_builder, $_state, acc.getType(), acc, alpha);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_FinalizeOp : Flash_Op<"finalize", [Pure,
    AllTypesMatch<["acc", "output"]>,
    AllTypesMatch<["row_max", "row_sum", "lse"]>]> {
  let summary = "Normalise the accumulator and form the row log-sum-exp";
  let description = [{
    After the last tile: `output = acc / l` and `lse = m + log(l)` per row.
    A row that saw no key (l = 0) gets output 0 and lse -inf. With `base2`
    the max is in base-2 units (see `flash.softmax_update`) and
    `lse = (m + log2(l)) * ln(2)`: the LSE is always in natural log.

    With a `sink` (an attention sink's logit, natural units, the same for
    every row) the sink joins each row's denominator as one more key with
    no value: with `m' = max(m, sink)` and `l' = l * exp(m - m') +
    exp(sink - m')`, `output = acc * exp(m - m') / l'` and `lse = m' +
    log(l')`; a row that saw no key gets output 0 and lse = sink.

    Example:

    ```mlir
    %out, %lse = flash.finalize %acc, %m, %l
        : tensor<128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$row_max,
                       AnyRankedTensor:$row_sum, Optional<F32>:$sink,
                       UnitAttr:$base2);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$lse);
  let assemblyFormat = [{
    $acc `,` $row_max `,` $row_sum (`sink` $sink^)? (`base2` $base2^)?
    attr-dict `:` type($acc) `,` type($row_max)
  }];
  let builders = [
    OpBuilder<(ins "Value":$acc, "Value":$rowMax, "Value":$rowSum), [{
      build($_builder, $_state, acc.getType(), rowMax.getType(), acc, rowMax,
            rowSum, /*sink=*/Value(), /*base2=*/false);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_MergeSplitOp : Flash_Op<"merge_split", [Pure,
    AllTypesMatch<["acc", "partial", "new_acc"]>,
    AllTypesMatch<["row_max", "row_sum", "partial_lse", "new_max",
                   "new_sum"]>]> {
  let summary = "Fold one split's normalised output into a running combine";
  let description = [{
    Split-KV's combine step: `partial` (M x D) and `partial_lse` (M) are
    one split's normalised output and row log-sum-exp, and `acc`, `m`,
    `l` the splits folded so far (natural log units, as `flash.finalize`
    without `base2` takes them):

        m_new = max(m, partial_lse)
        alpha = exp(m - m_new)
        w     = exp(partial_lse - m_new)
        l_new = l * alpha + w
        acc_new = acc * alpha + partial * w

    so that after the last split `flash.finalize` gives the output and LSE
    of all keys together. A split that saw no key (LSE -inf) weighs 0; a
    row no split saw stays at m = -inf, l = 0. Start with acc = 0,
    m = -inf and l = 0.

    Example:

    ```mlir
    %acc1, %m1, %l1 = flash.merge_split %part, %part_lse into %acc, %m, %l
        : tensor<16x128xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$partial, AnyRankedTensor:$partial_lse,
                       AnyRankedTensor:$acc, AnyRankedTensor:$row_max,
                       AnyRankedTensor:$row_sum);
  let results = (outs AnyRankedTensor:$new_acc, AnyRankedTensor:$new_max,
                      AnyRankedTensor:$new_sum);
  let assemblyFormat = [{
    $partial `,` $partial_lse `into` $acc `,` $row_max `,` $row_sum attr-dict
    `:` type($partial) `,` type($partial_lse)
  }];
  let builders = [
    OpBuilder<(ins "Value":$partial, "Value":$partialLse, "Value":$acc,
                   "Value":$rowMax, "Value":$rowSum), [{
      Type rowType = rowMax.getType();
      build($_builder, $_state, acc.getType(), rowType, rowType, partial,
            partialLse, acc, rowMax, rowSum);
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_ModScoresOp : Flash_Op<"mod_scores", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["scores", "result"]>]> {
  let summary = "Scale a logit tile and apply the score and mask mods";
  let description = [{
    `scores` is the M x N tile of Q K^T whose row 0 is query `row_start`
    and column 0 key `col_start`, of batch `batch` and query head `head`.
    For each element, with `i = row_start + r` and `j = col_start + c`:

        result[r, c] = mask_mod(batch, head, i, j)
                     ? score_mod(scale * scores[r, c], batch, head, i, j)
                     : -inf

    (a missing region is the identity / always true). The regions are
    `flash.attention`'s, with the same arguments and captures. They run
    only on rows below `seq_q` and keys below `seq_k`: elements past either
    end are unspecified here, and the `flash.mask` after this op hides the
    keys past the end. `key_ranges` is `flash.attention`'s, for the
    lowering that skips key tiles by it (the op itself does not read it).

    With `grouped(%rows_per_head, %group_size)` the tile's rows run
    through the queries of G = `group_size` heads, R = `rows_per_head`
    each (a `grouped` load's tile, GQA packing): row i is query
    `i % R + seq_q - R` of head `head + i / R`, and the rows from G * R on
    are unspecified (seq_q - R is a paged cache's offset of the step's
    queries, 0 otherwise).

    Example:

    ```mlir
    %x = flash.mod_scores %s, %b, %h, %row, %col, %seq_q, %seq_k
        {scale = 0.0883883461 : f32} : tensor<128x64xf32>
      mask_mod {
      ^bb0(%bb: index, %hh: index, %i: index, %j: index):
        %ok = arith.cmpi uge, %i, %j : index
        flash.yield %ok : i1
      }
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$batch, Index:$head,
                       Index:$row_start, Index:$col_start, Index:$seq_q,
                       Index:$seq_k,
                       Arg<Variadic<AnyMemRef>, "captures", [MemRead]>:$captures,
                       Optional<Index>:$rows_per_head,
                       Optional<Index>:$group_size,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       OptionalAttr<DenseI64ArrayAttr>:$key_ranges);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region AnyRegion:$scoreMod, AnyRegion:$maskMod);
  let assemblyFormat = [{
    $scores `,` $batch `,` $head `,` $row_start `,` $col_start `,` $seq_q `,`
    $seq_k (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`grouped` `(` $rows_per_head^ `,` $group_size `)`)? attr-dict `:`
    type($scores) (`score_mod` $scoreMod^)? (`mask_mod` $maskMod^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Flash_ModScoresGradOp : Flash_Op<"mod_scores_grad", [Pure,
    AllTypesMatch<["grad", "scores", "result"]>]> {
  let summary = "Carry a modded logit tile's gradient back through the score mod";
  let description = [{
    The backward of `flash.mod_scores`'s score mod: `grad` is the gradient
    of the loss with respect to the modded logits of the tile whose raw
    logits are `scores` (the tile of Q K^T at `row_start`, `col_start`, as
    for `flash.mod_scores`). With `x = scale * scores[r, c]`:

        result[r, c] = grad[r, c] == 0 ? 0
                     : grad[r, c] * d score_mod(x, batch, head, i, j) / dx

    the gradient with respect to the scaled logit (the caller multiplies
    by `scale` once more for the raw one). The derivative is formed from
    the region's body by the chain rule, op by op. An element whose
    gradient is 0 (a masked key, whose probability is 0) gives 0 even
    where the derivative is not finite.

    Example:

    ```mlir
    %g = flash.mod_scores_grad %ds, %s, %b, %h, %row, %col, %seq_q, %seq_k
        {scale = 0.0883883461 : f32} : tensor<64x64xf32>
      score_mod {
      ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
        %t = math.tanh %x : f32
        flash.yield %t : f32
      }
    ```
  }];
  let arguments = (ins AnyRankedTensor:$grad, AnyRankedTensor:$scores,
                       Index:$batch, Index:$head, Index:$row_start,
                       Index:$col_start, Index:$seq_q, Index:$seq_k,
                       Arg<Variadic<AnyMemRef>, "captures", [MemRead]>:$captures,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$scoreMod);
  let assemblyFormat = [{
    $grad `,` $scores `,` $batch `,` $head `,` $row_start `,` $col_start `,`
    $seq_q `,` $seq_k (`captures` `(` $captures^ `:` type($captures) `)`)?
    attr-dict `:` type($scores) `score_mod` $scoreMod
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Flash_SinkGradOp : Flash_Op<"sink_grad", [Pure,
    AllTypesMatch<["lse", "delta"]>]> {
  let summary = "One query tile's share of an attention sink's gradient";
  let description = [{
    `result = -sum_r exp(sink - lse[r]) * delta[r]` over the rows `r` with
    `row_start + r < seq_q`: the sink's probability in row r times the
    row's delta = rowsum(dO * O), the gradient of the sink logit from this
    tile's rows (rows past the end add nothing).

    Example:

    ```mlir
    %g = flash.sink_grad %lse, %delta, %sink, %row, %seq_q
        : tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lse, AnyRankedTensor:$delta, F32:$sink,
                       Index:$row_start, Index:$seq_q);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $lse `,` $delta `,` $sink `,` $row_start `,` $seq_q attr-dict `:`
    type($lse)
  }];
  let hasVerifier = 1;
}

def Flash_YieldOp : Flash_Op<"yield", [Pure, Terminator,
    ParentOneOf<["AttentionOp", "AttentionBackwardOp", "ModScoresOp",
                 "ModScoresGradOp", "WgModScoresOp"]>]> {
  let summary = "The value of a score or mask mod";
  let description = [{
    Ends `score_mod` (one f32: the new logit) and `mask_mod` (one i1: the
    key is seen), on `flash.attention`, `flash.mod_scores` and
    `flash.wg.mod_scores`.

    ```mlir
    flash.yield %r : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

//===----------------------------------------------------------------------===//
// Warp-specialised level
//===----------------------------------------------------------------------===//

include "FlashWarpgroup.td"
include "FlashPipeline.td"
include "FlashTileSchedule.td"

def Flash_RowDotOp : Flash_Op<"row_dot", [Pure, AllTypesMatch<["a", "b"]>]> {
  let summary = "Dot product of each row of one tile with the same row of another";
  let description = [{
    `result[i] = sum_j a[i, j] * b[i, j]`, products and sum in f32: the
    backward pass's delta = rowsum(dO * O).

    Example:

    ```mlir
    %delta = flash.row_dot %do_tile, %o_tile
        : tensor<128x128xbf16> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Flash_SoftmaxRecomputeOp : Flash_Op<"softmax_recompute", [Pure,
    AllTypesMatch<["scores", "p"]>]> {
  let summary = "The softmax probabilities of a logit tile from the row log-sum-exp";
  let description = [{
    `p = exp(scale * scores - lse)` per row: the forward's probabilities,
    recomputed by the backward pass from the LSE the forward stored instead
    of the whole matrix. `p` is 0 where a logit is -inf (masked) and in a
    row whose `lse` is -inf (it saw no key), never NaN.

    With `base2`, `scale` includes log2(e), `lse` is in natural log as the
    forward wrote it, and `exp` reads `exp2(scale * scores - lse *
    log2(e))`: the same `p`.

    Example:

    ```mlir
    %p = flash.softmax_recompute %s, %lse {scale = 0.0883883461 : f32}
        : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, AnyRankedTensor:$lse,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       UnitAttr:$base2);
  let results = (outs AnyRankedTensor:$p);
  let assemblyFormat = [{
    $scores `,` $lse (`base2` $base2^)? attr-dict `:` type($scores) `,`
    type($lse)
  }];
  let hasVerifier = 1;
}

def Flash_SoftmaxGradOp : Flash_Op<"softmax_grad", [Pure,
    AllTypesMatch<["p", "dp", "ds"]>]> {
  let summary = "The gradient of the softmax's input from its output's";
  let description = [{
    `ds[i, j] = p[i, j] * (dp[i, j] - delta[i])`: with `p` the softmax
    probabilities, `dp` the loss's gradient with respect to them and
    `delta[i] = sum_j p[i, j] * dp[i, j]` over the whole row (the backward
    pass computes it as rowsum(dO * O)), `ds` is the gradient with respect
    to the scaled logits.

    Example:

    ```mlir
    %ds = flash.softmax_grad %p, %dp, %delta
        : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$p, AnyRankedTensor:$dp,
                       AnyRankedTensor:$delta);
  let results = (outs AnyRankedTensor:$ds);
  let assemblyFormat = [{
    $p `,` $dp `,` $delta attr-dict `:` type($p) `,` type($delta)
  }];
  let hasVerifier = 1;
}

#endif // FLASH_OPS_TD

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
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<Flash_ConfigAttr>:$config
  );
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $o (`,` `lse` $lse^)?
    (`packed` `(` $cuSeqlensQ^ `:` type($cuSeqlensQ) `,` $cuSeqlensK `:`
      type($cuSeqlensK) `,` `max_q` $maxSeqlenQ `)`)?
    attr-dict `:`
    type($q) `,` type($k) `,` type($v) `->` type($o) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension shared by Q, K, V and O.
    int64_t getHeadDim();
    /// The logit scale: the `scale` attribute, else 1/sqrt(head_dim).
    float getEffectiveScale();
    /// Whether Q, K, V and O hold packed sequences (cu_seqlens given).
    bool isPacked() { return static_cast<bool>(getCuSeqlensQ()); }
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

def Flash_LoadTileOp : Flash_Op<"load_tile"> {
  let summary = "Load a block of rows of one (batch, head), zero past the end";
  let description = [{
    Reads rows `[row, row + R)` of `source[b, h]` into an R x D tile, where
    the source is a batch x heads x seq x D memref and the indices are
    `[b, h, row]`. Rows at or past `dim(source, 2)` read as zero: this is the
    boundary masking that lets sequence lengths be any value.

    Example:

    ```mlir
    %q_tile = flash.load_tile %q[%b, %h, %row]
        : memref<?x?x?x128xbf16> -> tensor<128x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "source", [MemRead]>:$source,
                       Variadic<Index>:$indices);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Flash_StoreTileOp : Flash_Op<"store_tile"> {
  let summary = "Store a tile of rows of one (batch, head), dropping rows past the end";
  let description = [{
    Writes an R x D tile to rows `[row, row + R)` of `dest[b, h]` (a
    batch x heads x seq x D memref), or an R-vector to `dest[b, h, row:]` of
    a batch x heads x seq memref (the LSE). Rows at or past `dim(dest, 2)`
    are not written.

    Example:

    ```mlir
    flash.store_tile %o_tile, %o[%b, %h, %row]
        : tensor<128x128xbf16> -> memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value,
                       Arg<AnyMemRef, "destination", [MemWrite]>:$dest,
                       Variadic<Index>:$indices);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` attr-dict `:` type($value) `->` type($dest)
  }];
  let hasVerifier = 1;
}

def Flash_DotOp : Flash_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Tile matrix product accumulated in f32";
  let description = [{
    `result = acc + a * b`, or `acc + a * b^T` with `transpose_b`. `a` is
    M x K, `b` is K x N (N x K when transposed), `acc` and the result are
    M x N f32. `a` and `b` share one element type (bf16, f16 or f32).
    On sm_90a it becomes `wgmma`; `transpose_b` is the form of S = Q K^T.

    Example:

    ```mlir
    %s = flash.dot %q_tile, %k_tile, %zero transpose_b
        : tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       AnyRankedTensor:$acc, UnitAttr:$transpose_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_b` $transpose_b^)? attr-dict `:`
    type($a) `,` type($b) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Value":$a, "Value":$b, "Value":$acc,
                   "bool":$transposeB), [{
      build($_builder, $_state, acc.getType(), a, b, acc, transposeB);
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
    mask of `flash.attention`). Other entries pass through.

    Example:

    ```mlir
    %masked = flash.mask %s, %row, %col, %seq_q, %seq_k causal
        : tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$scores, Index:$row_start,
                       Index:$col_start, Index:$seq_q, Index:$seq_k,
                       UnitAttr:$causal);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $scores `,` $row_start `,` $col_start `,` $seq_q `,` $seq_k
    (`causal` $causal^)? attr-dict `:` type($scores)
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

    Example:

    ```mlir
    %out, %lse = flash.finalize %acc, %m, %l
        : tensor<128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$acc, AnyRankedTensor:$row_max,
                       AnyRankedTensor:$row_sum, UnitAttr:$base2);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$lse);
  let assemblyFormat = [{
    $acc `,` $row_max `,` $row_sum (`base2` $base2^)? attr-dict `:`
    type($acc) `,` type($row_max)
  }];
  let builders = [
    OpBuilder<(ins "Value":$acc, "Value":$rowMax, "Value":$rowSum), [{
      build($_builder, $_state, acc.getType(), rowMax.getType(), acc, rowMax,
            rowSum, /*base2=*/false);
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warp-specialised level
//===----------------------------------------------------------------------===//

include "FlashWarpgroup.td"
include "FlashPipeline.td"
include "FlashTileSchedule.td"

#endif // FLASH_OPS_TD

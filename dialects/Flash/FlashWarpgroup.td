//===- FlashWarpgroup.td - the warp-specialised level -------*- tablegen -*-===//
//
// Level 3 of the dialect (DESIGN.md "The dialect, three levels"): what one
// warpgroup of a Hopper kernel holds and issues. Here the warpgroup MMA
// family: register fragments whose distribution over the 128 threads is a
// layout attribute on their type, shared-memory matrix descriptors whose
// layout is their type, and `flash.wg.mma`. Each op is lowered by a pattern
// of its own in lib/Conversion/FlashWarpgroupToNVVM/.
//
// The wgmma fence, commit and wait have no op here: `nvvm.wgmma.fence.aligned`,
// `nvvm.wgmma.commit.group.sync.aligned` and
// `nvvm.wgmma.wait.group.sync.aligned` say exactly that, take no operand of a
// flash type, and DESIGN.md asks for upstream ops wherever they exist. A
// wrapper would be a rename; and the synchronisation of another target's MMA
// (sm_100's tcgen05 commits to an mbarrier) would not fit a wait_group
// wrapper anyway.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_WARPGROUP_TD
#define FLASH_WARPGROUP_TD

include "FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Fragment layouts
//===----------------------------------------------------------------------===//

def Flash_WgmmaAccumulatorLayoutAttr
    : AttrDef<Flash_Dialect, "WgmmaAccumulatorLayout"> {
  let mnemonic = "wgmma_accumulator";
  let summary = "The D (and C) layout of a warpgroup m64nNk16 MMA";
  let description = [{
    The distribution of a 64 x N f32 tile over the 128 threads of a
    warpgroup that `wgmma.mma_async` reads as C and writes as D: warp w owns
    rows 16w..16w+15; thread t of the warp holds, for each group of 8
    columns g, the pairs (row 16w + t/4, columns 8g + 2(t%4) + {0,1}) and
    (row 16w + t/4 + 8, the same columns). That is N/2 f32 per thread, in
    the order (g, row half, column), which is the order of the registers in
    the PTX instruction and of the values of `flash.wg.fragment_values`.

    Example:

    ```mlir
    !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    ```
  }];
}

def Flash_WgmmaOperandALayoutAttr
    : AttrDef<Flash_Dialect, "WgmmaOperandALayout"> {
  let mnemonic = "wgmma_operand_a";
  let summary = "The register A operand of one warpgroup k16 MMA step";
  let description = [{
    A 64 x 16 tile of 16-bit floats as `wgmma.mma_async` takes A from
    registers: the accumulator layout of a 64 x 16 tile, with each pair of
    neighbouring columns packed into one b32 (low half the even column).
    That is 4 x b32 per thread. An accumulator of 64 x N, rounded to 16 bits
    and packed in pairs, is N/16 such fragments in order, which is how P
    becomes the A operand of P V without leaving registers.

    Example:

    ```mlir
    !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
    ```
  }];
}

def Flash_WgmmaRowsLayoutAttr
    : AttrDef<Flash_Dialect, "WgmmaRowsLayout"> {
  let mnemonic = "wgmma_rows";
  let summary = "One value per row of a warpgroup accumulator";
  let description = [{
    A 64-vector laid out as the rows of a `#flash.wgmma_accumulator`: the
    thread that holds row r of the accumulator holds element r. Thread t of
    warp w holds rows 16w + t/4 and 16w + t/4 + 8, so each thread has 2
    registers, and the four threads of a quad (t/4 equal) hold the same
    values. Row statistics of the online softmax (the running max, the
    rescale factor, a mask's per-row column limit) have this layout, so an
    op that combines a row value with every element of that row (for example
    `flash.wg.scale_rows`) needs no data movement.

    Example:

    ```mlir
    !flash.fragment<64xf32, #flash.wgmma_rows>
    !flash.fragment<64xi32, #flash.wgmma_rows>
    ```
  }];
}

def Flash_WgmmaRowPartialsLayoutAttr
    : AttrDef<Flash_Dialect, "WgmmaRowPartialsLayout"> {
  let mnemonic = "wgmma_row_partials";
  let summary = "Each thread's part of a row reduction of an accumulator";
  let description = [{
    A 64-vector of which each thread holds, for its two rows, the reduction
    over only the columns it holds (a quarter of them); the row's value is
    the reduction of its quad's four parts. The online softmax keeps its row
    sums this way through the key loop and combines the quad once, after
    it, with `flash.wg.row_sum`.

    Example:

    ```mlir
    !flash.fragment<64xf32, #flash.wgmma_row_partials>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Flash_Type<string name, string typeMnemonic>
    : TypeDef<Flash_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Flash_FragmentType : Flash_Type<"Fragment", "fragment"> {
  let summary = "A tile held in the registers of one warpgroup";
  let description = [{
    A tile of `elementType` spread over the 128 threads of a warpgroup as
    `layout` says. The layout fixes how many registers each thread holds and
    of which type; the verifier checks that the shape and element type are
    ones `wgmma` and the row ops have:

    - `#flash.wgmma_accumulator`: 64 x N f32, N a multiple of 8 in
      [8, 256]; N/2 f32 per thread.
    - `#flash.wgmma_operand_a`: 64 x K bf16 or f16, K a multiple of 16 in
      [16, 256]; K/4 x i32 per thread (K/16 k-steps of 4). `flash.wg.mma`
      takes one k-step, 64 x 16.
    - `#flash.wgmma_rows`, `#flash.wgmma_row_partials`: a 64-vector of f32
      or i32 (the rows of an accumulator); 2 registers per thread.

    Example:

    ```mlir
    !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
    !flash.fragment<64xf32, #flash.wgmma_rows>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::Type":$elementType,
    "::mlir::Attribute":$layout
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isAccumulator() const {
      return ::mlir::isa<WgmmaAccumulatorLayoutAttr>(getLayout());
    }
    bool isOperandA() const {
      return ::mlir::isa<WgmmaOperandALayoutAttr>(getLayout());
    }
    /// One value per accumulator row (`#flash.wgmma_rows` or
    /// `#flash.wgmma_row_partials`).
    bool isRows() const {
      return ::mlir::isa<WgmmaRowsLayoutAttr, WgmmaRowPartialsLayoutAttr>(
          getLayout());
    }
    /// Lowered to its registers one by one (1:N), not to a struct: only the
    /// accumulator is a struct, the form nvvm.wgmma.mma_async carries.
    bool isRegisterList() const { return !isAccumulator(); }
    /// Registers each thread of the warpgroup holds.
    int64_t getNumRegisters() const;
    /// The type of each register: f32 for an accumulator, i32 (a packed
    /// pair of 16-bit floats) for an A operand.
    ::mlir::Type getRegisterType() const;
  }];
}

def Flash_SmemDescriptorType
    : Flash_Type<"SmemDescriptor", "smem_descriptor"> {
  let summary = "A wgmma shared-memory matrix descriptor and its layout";
  let description = [{
    The 64-bit descriptor through which `wgmma.mma_async` reads an operand
    from shared memory, with the layout it encodes made part of the type:

    - the element type of the matrix (bf16 or f16);
    - `major`: `k` when the K dimension is contiguous (A as M x K row-major,
      B as N x K, i.e. not transposed), `mn` when M (of A) or N (of B) is
      (the operand is transposed);
    - `swizzle`: the shared-memory swizzle in bytes (0 for none, 32, 64 or
      128);
    - `lbo`, `sbo`: the leading and stride byte offsets, multiples of 16
      below 2^18, as the descriptor's 14-bit fields hold them shifted by 4.

    The value is an i64 whose bits say all this:
    `flash.wg.make_descriptor` ors the type's layout fields into a tile's
    start address and `flash.wg.advance_descriptor` moves it through shared
    memory; the type records the layout so that `flash.wg.mma` can take the
    transposition from it and tests can see it.

    Example:

    ```mlir
    !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
    !flash.smem_descriptor<f16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
    ```
  }];
  let parameters = (ins
    "::mlir::Type":$elementType,
    "bool":$mnMajor,
    "int64_t":$swizzle,
    "int64_t":$lbo,
    "int64_t":$sbo
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The descriptor's fields other than the start address: the swizzle
    /// mode (bits 62-63: 1 for 128 B, 2 for 64 B, 3 for 32 B), the stride
    /// byte offset >> 4 (bits 32-45) and the leading byte offset >> 4
    /// (bits 16-29).
    uint64_t getLayoutBits() const;
  }];
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

class Flash_WgOp<string mnemonic, list<Trait> traits = []>
    : Flash_Op<"wg." # mnemonic, traits>;

def Flash_WgSmemDescriptorOp : Flash_WgOp<"smem_descriptor", [Pure]> {
  let summary = "Gives an i64 wgmma descriptor its layout type";
  let description = [{
    Declares that `descriptor`, a wgmma shared-memory matrix descriptor
    computed with integer arithmetic, encodes the layout of the result type.
    Nothing is checked at run time and nothing is emitted. Descriptors of
    tiles are built with `flash.wg.make_descriptor` and
    `flash.wg.advance_descriptor`; this op is for bits computed otherwise
    (the D = 256 kernels rebuild Q's from a 32-bit low word each key tile,
    to keep fewer registers live across the loop).

    Example:

    ```mlir
    %d = flash.wg.smem_descriptor %bits
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
    ```
  }];
  let arguments = (ins I64:$descriptor);
  let results = (outs Flash_SmemDescriptorType:$result);
  let assemblyFormat = "$descriptor attr-dict `:` qualified(type($result))";
}

def Flash_WgMakeDescriptorOp : Flash_WgOp<"make_descriptor", [Pure]> {
  let summary = "The descriptor of a tile from its shared-memory address";
  let description = [{
    The wgmma descriptor of the tile whose shared-memory address, shifted
    right by 4, is `address` (an i64 below 2^14: shared memory is 228 KiB):
    that start address field with the layout fields of the result type (its
    swizzle, LBO and SBO) or-ed in.

    Lowering: `arith.ori` of the address and the type's layout bits.

    Example:

    ```mlir
    // A K-major bf16 tile with the 128-byte swizzle at address 16 * %a.
    %d = flash.wg.make_descriptor %a
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
    ```
  }];
  let arguments = (ins I64:$address);
  let results = (outs Flash_SmemDescriptorType:$result);
  let assemblyFormat = "$address attr-dict `:` qualified(type($result))";
}

def Flash_WgAdvanceDescriptorOp
    : Flash_WgOp<"advance_descriptor", [Pure, AllTypesMatch<["base", "result"]>]> {
  let summary = "A descriptor moved on through shared memory";
  let description = [{
    The descriptor of the same layout as `base` for the tile `bytes`
    (a multiple of 16) and, when given, `units` x 16 bytes further on in
    shared memory: a k-step within a tile, the next box of a tile, a ring
    slot. The start address field is the address >> 4, so the offset is
    added to the descriptor as `units + bytes / 16`; the address must stay
    below 2^18 bytes, so that the sum does not reach the layout fields.

    Lowering: one `arith.addi` per term, the run-time units first.

    Example:

    ```mlir
    // Slot %slot of a ring of 32 KiB stages (%units = %slot * 2048), then
    // the second 16-element k-step (32 bytes) of that tile.
    %k = flash.wg.advance_descriptor %k0 units %units
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
    %k1 = flash.wg.advance_descriptor %k bytes 32
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
    ```
  }];
  let arguments = (ins Flash_SmemDescriptorType:$base, Optional<I64>:$units,
                   DefaultValuedAttr<I64Attr, "0">:$bytes);
  let results = (outs Flash_SmemDescriptorType:$result);
  let assemblyFormat = [{
    $base (`units` $units^)? (`bytes` $bytes^)? attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Flash_WgFragmentFromValuesOp
    : Flash_WgOp<"fragment_from_values", [Pure]> {
  let summary = "Makes a fragment of each thread's registers";
  let description = [{
    The fragment whose registers in this thread are `values`, in the order
    of the fragment's layout: N/2 f32 for a 64 x N accumulator, 4 x i32 for
    an A operand. Their number and type follow from the result type, so the
    syntax names only that.

    Example:

    ```mlir
    %p = flash.wg.fragment_from_values %r0, %r1, %r2, %r3
        : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
    ```
  }];
  let arguments = (ins Variadic<AnyTypeOf<[F32, I32]>>:$values);
  let results = (outs Flash_FragmentType:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Flash_WgFragmentValuesOp : Flash_WgOp<"fragment_values", [Pure]> {
  let summary = "The registers of a fragment in this thread";
  let description = [{
    The inverse of `flash.wg.fragment_from_values`: this thread's registers
    of `fragment`, in the order of its layout.

    The fragment of an asynchronous `flash.wg.mma` may be read only after
    the `nvvm.wgmma.wait.group.sync.aligned` that retires it; the lowering
    does not move the reads, so they stay where they are written.

    Example:

    ```mlir
    %v:4 = flash.wg.fragment_values %acc
        : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$fragment);
  let results = (outs Variadic<AnyTypeOf<[F32, I32]>>:$values);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$fragment)>];
}

def Flash_WgMmaOp : Flash_WgOp<"mma", [
    OptionalTypesMatchWith<"C has D's type", "d", "c", "$_self">]> {
  let summary = "One warpgroup m64nNk16 MMA step: D = A B (+ C)";
  let description = [{
    Issues one `wgmma.mma_async` of shape m64nNk16 for the warpgroup:
    `D = A * B + C`, or `D = A * B` when `c` is absent (the instruction's
    scale-d is 0; the first k step of a product).

    - `a`: a `#flash.wgmma_operand_a` fragment (64 x 16 in registers), or a
      `!flash.smem_descriptor` of a 64 x 16 matrix in shared memory.
    - `b`: a `!flash.smem_descriptor` of a 16 x N matrix in shared memory.
    - `c`, `d`: `#flash.wgmma_accumulator` fragments of 64 x N f32.

    The transpositions come from the descriptors' `major`: a `k`-major
    operand is read as is, an `mn`-major one transposed. An A in registers
    is never transposed. Operand element types (bf16 or f16) must agree.

    The op is asynchronous: it needs an `nvvm.wgmma.fence.aligned` before
    the first MMA that reads registers written since the last fence, and
    its result exists only after the `nvvm.wgmma.commit.group.sync.aligned`
    of its group and a `nvvm.wgmma.wait.group.sync.aligned` that retires
    that group. It has side effects, so it is never moved across them.

    Lowering: with A in shared memory, `nvvm.wgmma.mma_async`; with A in
    registers, inline PTX (MLIR 22's wgmma op takes A only as a
    descriptor).

    Example:

    ```mlir
    // S = Q K^T, first and later k steps, both operands in shared memory.
    %s0 = flash.wg.mma %q0, %k0
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>,
          !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
        -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    %s1 = flash.wg.mma %q1, %k1, %s0
        : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>,
          !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
        -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    // O += P V, P in registers, V transposed (MN-major).
    %o1 = flash.wg.mma %p, %v, %o0
        : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>,
          !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
        -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    ```
  }];
  let arguments = (ins
    AnyTypeOf<[Flash_FragmentType, Flash_SmemDescriptorType]>:$a,
    Flash_SmemDescriptorType:$b,
    Optional<Flash_FragmentType>:$c
  );
  let results = (outs Flash_FragmentType:$d);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` qualified(type($a)) `,`
    qualified(type($b)) `->` qualified(type($d))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether A is read from shared memory (else from registers).
    bool isSharedA() {
      return ::mlir::isa<SmemDescriptorType>(getA().getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// The online softmax on accumulator fragments
//===----------------------------------------------------------------------===//

def Flash_WgMaskColumnsOp : Flash_WgOp<"mask_columns", [Pure,
    AllTypesMatch<["scores", "result"]>]> {
  let summary = "Sets the scores at or past a per-row column limit to -inf";
  let description = [{
    `result[r, c] = scores[r, c]` where `first + c < limit[r]`, else -inf:
    `first` is the key index of the tile's column 0 and `limit` (a
    `#flash.wgmma_rows` vector of i32) the first key row r may not see.
    The key-length bound and the causal diagonal are both such a limit
    (`min(seq_k, row + seq_k - seq_q + 1)`), so one compare and one select
    per score apply both; tiles that need neither do not carry the op.
    Lowered with each register's column from the accumulator layout and the
    thread index.

    Example:

    ```mlir
    %masked = flash.wg.mask_columns %s, %limit, %first
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xi32, #flash.wgmma_rows>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$scores, Flash_FragmentType:$limit,
                   I32:$first);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $scores `,` $limit `,` $first attr-dict `:` qualified(type($scores)) `,`
    qualified(type($limit))
  }];
  let hasVerifier = 1;
}

def Flash_WgModScoresOp : Flash_WgOp<"mod_scores", [Pure,
    AllTypesMatch<["scores", "result"]>, AttrSizedOperandSegments]> {
  let summary = "flash.mod_scores on an accumulator fragment";
  let description = [{
    The score and mask mods on the scores of a 64 x N tile of keys
    `first_key`.. for the query rows `rows` (a `#flash.wgmma_rows` vector of
    i32, as `flash.wg.mask_keys` takes it) of batch `batch` and query head
    `head`: each score is multiplied by `scale`, then `score_mod` and
    `mask_mod` (the regions of `flash.attention`) run on it with the
    register's row and column and the `captures` (the kernel's memref
    arguments), a key the mask hides becoming -inf. Rows at or past `seq_q`
    and keys at or past `seq_k` are clamped to the last one before the
    regions see them (their scores are masked or never stored), and each
    index of a `memref.load` from a capture is clamped into the capture's
    bounds, so a capture of the wrong shape gives wrong scores, never a
    read outside it. Lowered register by register, the regions' ops
    inlined. `Pure` although the regions may read the captures: they are
    inputs no kernel writes.

    `whole`, when given and true for a thread, says that the mask_mod holds
    on every element of the thread's registers (a tile inside a sliding
    window): the mask_mod is then not evaluated there.

    `heads`, when given (a `#flash.wgmma_rows` vector of i32), is each
    row's query head, and `head` is not used: the rows of a decoding tile
    with GQA packing run through the query heads of one K/V head.

    Example:

    ```mlir
    %x = flash.wg.mod_scores %s, %rows, %first_key, %seq_q, %seq_k, %b, %h,
        %scale : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
        !flash.fragment<64xi32, #flash.wgmma_rows>
      score_mod {
      ^bb0(%v: f32, %bb: index, %hh: index, %i: index, %j: index):
        %t = math.tanh %v : f32
        flash.yield %t : f32
      }
    ```
  }];
  let arguments = (ins Flash_FragmentType:$scores, Flash_FragmentType:$rows,
                   I32:$first_key, I32:$seq_q, I32:$seq_k, I32:$batch,
                   I32:$head, F32:$scale, Optional<I1>:$whole,
                   Optional<Flash_FragmentType>:$heads,
                   Variadic<AnyMemRef>:$captures);
  let results = (outs Flash_FragmentType:$result);
  let regions = (region AnyRegion:$scoreMod, AnyRegion:$maskMod);
  let assemblyFormat = [{
    $scores `,` $rows `,` $first_key `,` $seq_q `,` $seq_k `,` $batch `,`
    $head `,` $scale (`whole` $whole^)?
    (`heads` $heads^ `:` qualified(type($heads)))?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    attr-dict `:` qualified(type($scores)) `,`
    qualified(type($rows)) (`score_mod` $scoreMod^)? (`mask_mod` $maskMod^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Flash_WgMaskKeysOp : Flash_WgOp<"mask_keys", [Pure,
    AllTypesMatch<["scores", "result"]>]> {
  let summary = "flash.mask on an accumulator fragment: keys past the end "
                "or the causal diagonal to -inf";
  let description = [{
    The scores of a 64 x N tile of keys `first_key`.. for the query rows
    `rows` (a `#flash.wgmma_rows` vector of i32: each of the thread's two
    rows' index in the sequence) with the keys a row may not see set to
    -inf: key c is visible to row r iff c < seq_k and, with `causal`,
    c <= r + seq_k - seq_q (the diagonal aligned to the sequences' ends, as
    `flash.mask` has it). A row past seq_q may see keys no real row sees;
    its scores are never stored. Rewritten into each row's limit and
    `flash.wg.mask_columns`.

    Example:

    ```mlir
    %masked = flash.wg.mask_keys %s, %rows, %first_key, %seq_q, %seq_k causal
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xi32, #flash.wgmma_rows>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$scores, Flash_FragmentType:$rows,
                   I32:$first_key, I32:$seq_q, I32:$seq_k, UnitAttr:$causal);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $scores `,` $rows `,` $first_key `,` $seq_q `,` $seq_k
    (`causal` $causal^)? attr-dict `:` qualified(type($scores)) `,`
    qualified(type($rows))
  }];
  let hasVerifier = 1;
}

class Flash_WgRowReduceOp<string mnemonic, string what>
    : Flash_WgOp<mnemonic, [Pure]> {
  let summary = "The " # what # " of each row of an accumulator fragment";
  let arguments = (ins Flash_FragmentType:$input);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Flash_WgRowMaxOp : Flash_WgRowReduceOp<"row_max", "maximum"> {
  let description = [{
    The maximum of each row of a `#flash.wgmma_accumulator` fragment (NaN
    ignored, as `arith.maxnumf`), as a `#flash.wgmma_rows` vector: a tree
    over the thread's registers of the row, then two butterfly shuffles
    across its quad. With a `#flash.wgmma_row_partials` result the shuffles
    are left out.

    Example:

    ```mlir
    %m = flash.wg.row_max %s
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
        -> !flash.fragment<64xf32, #flash.wgmma_rows>
    ```
  }];
}

def Flash_WgRowSumOp : Flash_WgRowReduceOp<"row_sum", "sum"> {
  let description = [{
    The sum of each row, in three forms given by the types:

    - accumulator -> `#flash.wgmma_row_partials`: each thread sums its own
      registers of the row (a tree of adds, no shuffle). The online softmax
      keeps its row sums this way through the key loop.
    - accumulator -> `#flash.wgmma_rows`: the same, then two butterfly
      shuffles across the quad.
    - `#flash.wgmma_row_partials` -> `#flash.wgmma_rows`: only the quad's
      shuffles, once, after the key loop.

    Example:

    ```mlir
    %part = flash.wg.row_sum %p
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
        -> !flash.fragment<64xf32, #flash.wgmma_row_partials>
    %l = flash.wg.row_sum %part
        : !flash.fragment<64xf32, #flash.wgmma_row_partials>
        -> !flash.fragment<64xf32, #flash.wgmma_rows>
    ```
  }];
}

def Flash_WgScaledExp2Op : Flash_WgOp<"scaled_exp2", [Pure,
    AllTypesMatch<["scores", "result"]>]> {
  let summary = "p = 2^(s * scale + bias[row]) for each score";
  let description = [{
    The exponentials of the base-2 online softmax on an accumulator
    fragment: one fma and one `ex2.approx.ftz` per score. `bias` is a
    `#flash.wgmma_rows` vector (the negated running max, in log2 units),
    `scale` the softmax scale times log2(e). Inputs below 2^-126 of the row
    maximum flush to 0 (they add nothing to an f32 row sum); a score of
    -inf gives 0.

    Example:

    ```mlir
    %p = flash.wg.scaled_exp2 %s, %neg_m, %scale_log2
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xf32, #flash.wgmma_rows>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$scores, Flash_FragmentType:$bias,
                   F32:$scale);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $scores `,` $bias `,` $scale attr-dict `:` qualified(type($scores)) `,`
    qualified(type($bias))
  }];
  let hasVerifier = 1;
}

def Flash_WgScaleRowsOp : Flash_WgOp<"scale_rows", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Multiplies each row of an accumulator by a row factor";
  let description = [{
    `result[r, c] = input[r, c] * factor[r]`, `factor` a `#flash.wgmma_rows`
    vector: the online softmax's rescale of O by alpha = 2^(m_old - m_new),
    and the epilogue's division of O by the row sums.

    With `if_moved %moved` (an i1, `flash.wg.softmax_update`'s `moved`) a
    warp multiplies only when one of its lanes' `moved` holds, and
    otherwise returns `input`: where no row of the warp moved its running
    max, every factor is 1. The vote makes the branch warp-uniform, so the
    `flash.wg.mma` that reads the result stays convergent.

    Example:

    ```mlir
    %o2 = flash.wg.scale_rows %o, %alpha
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xf32, #flash.wgmma_rows>
    %o3 = flash.wg.scale_rows %o, %alpha if_moved %moved
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xf32, #flash.wgmma_rows>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$input, Flash_FragmentType:$factor,
                   Optional<I1>:$moved);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $input `,` $factor (`if_moved` $moved^)? attr-dict `:`
    qualified(type($input)) `,` qualified(type($factor))
  }];
  let hasVerifier = 1;
}

def Flash_WgSoftmaxUpdateOp : Flash_WgOp<"softmax_update", [Pure,
    AllTypesMatch<["m_old", "m_new", "alpha"]>,
    AllTypesMatch<["l_old", "l_new"]>]> {
  let summary = "One key tile's online-softmax update on accumulator fragments";
  let description = [{
    `flash.softmax_update` (base 2) for the S tile a warpgroup holds in a
    `#flash.wgmma_accumulator` fragment, with its operands' layouts: the
    running max `m` a `#flash.wgmma_rows` vector in log2 units, the row sum
    `l` kept per thread (`#flash.wgmma_row_partials`, reduced across the
    quad once after the key loop), `scale` the softmax scale times log2(e).
    With m_new the reference the rows move to:

    - `p = 2^(scores * scale - m_new)`, rounded to the 16-bit A operand of
      O += P V (`#flash.wgmma_operand_a`);
    - `alpha = 2^(m_old - m_new)`, the factor O is rescaled by;
    - `l_new = l_old * alpha + (this thread's part of the row sum of p)`.

    A row that saw no key yet (m = -inf) subtracts 0 instead, so nothing
    becomes NaN. How m_new follows the tile's max is the schedule's choice:

    - by default, exactly: `m_new = max(m_old, rowmax(scores) * scale)`;
    - `lag_max`: the reference moves to the tile's max only when that
      passes it by more than 8 (log2 units), so p stays <= 2^8 and most
      tiles keep alpha = 1;
    - `speculative`: p is first computed against m_old with no max of the
      tile; a warp takes the tile's max and computes p again (a
      warp-uniform branch) only where one of its threads' partial row sums
      passes a bound that a 16-bit p must stay under, or a row saw no key.

    `moved` (i1) says whether one of this thread's rows may have alpha != 1:
    always with the exact reference; with `lag_max` or `speculative` only
    where a row moved. `flash.wg.scale_rows ... if_moved` takes it.

    Example:

    ```mlir
    %p, %m, %l, %alpha, %moved = flash.wg.softmax_update %s, %m0, %l0, %scale
        lag_max
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>,
          !flash.fragment<64xf32, #flash.wgmma_rows>,
          !flash.fragment<64xf32, #flash.wgmma_row_partials>
        -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$scores, Flash_FragmentType:$m_old,
                   Flash_FragmentType:$l_old, F32:$scale, UnitAttr:$lag_max,
                   UnitAttr:$speculative);
  let results = (outs Flash_FragmentType:$p, Flash_FragmentType:$m_new,
                 Flash_FragmentType:$l_new, Flash_FragmentType:$alpha,
                 I1:$moved);
  let assemblyFormat = [{
    $scores `,` $m_old `,` $l_old `,` $scale (`lag_max` $lag_max^)?
    (`speculative` $speculative^)? attr-dict `:` qualified(type($scores))
    `,` qualified(type($m_old)) `,` qualified(type($l_old)) `->`
    qualified(type($p))
  }];
  let hasVerifier = 1;
}

def Flash_WgTruncFOp : Flash_WgOp<"truncf", [Pure]> {
  let summary = "Rounds an accumulator to 16-bit pairs: the A operand layout";
  let description = [{
    Rounds each f32 of a 64 x N `#flash.wgmma_accumulator` fragment to the
    result's element type (bf16 or f16, round to nearest even) and packs
    neighbouring columns in pairs: a 64 x N `#flash.wgmma_operand_a`
    fragment, one `cvt.rn.{bf16,f16}x2.f32` per pair. Its N/16 k-steps are
    the register A operands of `flash.wg.mma` (P of O += P V), and the same
    words are what the epilogue stores of O.

    Example:

    ```mlir
    %p16 = flash.wg.truncf %p
        : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
        -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$input);
  let results = (outs Flash_FragmentType:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The epilogue: fragments to memory
//===----------------------------------------------------------------------===//

def Flash_LLVMPointer : Type<
    CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
    "LLVM pointer", "::mlir::LLVM::LLVMPointerType">;

def Flash_WgStoreGlobalOp
    : Flash_WgOp<"store_global", [AttrSizedOperandSegments]> {
  let summary = "Stores a fragment's rows into a row-major global tensor";
  let description = [{
    Writes the rows of `value` into the row-major tensor at `base` whose
    rows are `num_rows` long blocks per `head`: fragment row r goes to row
    `first_row + r` of block `head`, and rows outside `[0, num_rows)` are
    not written (a tile's rows past the sequence's end, or before its
    start).

    - A 64 x K 16-bit `#flash.wgmma_operand_a` fragment (an accumulator
      rounded by `flash.wg.truncf`): `base` holds K 16-bit elements per row;
      each thread stores its pairs as 4-byte words.
    - A 64 x f32 `#flash.wgmma_rows` vector: `base` holds one f32 per row,
      written by the first thread of each quad (the log-sum-exp of the
      softmax).
    - A 64 x K f32 `#flash.wgmma_accumulator` fragment (a decoding split's
      O): `base` holds K f32 per row; each thread stores its registers.

    With `strides`, the tensor is not dense: row r of the fragment goes to
    element `head * head_stride + (row_base + first_row + r) * row_stride`
    (strides in elements; `row_base`, the first row of a packed sequence,
    is added after the bound check, so `num_rows` is the sequence's
    length). Without them a head holds `num_rows` rows of K elements (or
    of one f32), one after another.

    Example:

    ```mlir
    flash.wg.store_global %o16, %out[%head, %first_row], %seq_q
        : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, !llvm.ptr<1>
    flash.wg.store_global %lse, %lse_out[%head, %first_row], %seq_q
        : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>
    // A packed sequence's rows of a [T, H, D] output.
    flash.wg.store_global %o16, %out[%head, %first_row], %len_q
        strides(%stride_h, %stride_n) row_base %q_start
        : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, !llvm.ptr<1>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$value, Flash_LLVMPointer:$base,
                   I32:$head, I32:$first_row, I32:$num_rows,
                   Optional<I64>:$head_stride, Optional<I64>:$row_stride,
                   Optional<I32>:$row_base);
  let assemblyFormat = [{
    $value `,` $base `[` $head `,` $first_row `]` `,` $num_rows
    (`strides` `(` $head_stride^ `,` $row_stride `)`)?
    (`row_base` $row_base^)? attr-dict `:`
    qualified(type($value)) `,` qualified(type($base))
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$value, "::mlir::Value":$base,
                   "::mlir::Value":$head, "::mlir::Value":$firstRow,
                   "::mlir::Value":$numRows), [{
      build($_builder, $_state, value, base, head, firstRow, numRows,
            ::mlir::Value(), ::mlir::Value(), ::mlir::Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Flash_WgStoreSharedOp : Flash_WgOp<"store_shared"> {
  let summary = "Writes a fragment into 128B-swizzled TMA boxes in shared memory";
  let description = [{
    Writes a 64 x K 16-bit `#flash.wgmma_operand_a` fragment into shared
    memory laid out as a TMA load or store with the 128-byte swizzle sees
    it: K/64 boxes of 64-column (128-byte) rows, box b at byte
    `offset + b * box_stride` of `buffer`, fragment row r at row r of each
    box, and in row r the 16-byte chunk c stored at chunk c ^ (r % 8).
    `offset` must be 1024-byte aligned relative to the swizzle's pattern
    (the boxes start on 1024-byte boundaries), as TMA requires. A warp's
    32 stores of one column group then fall into 32 different banks.

    The stores are ordinary shared-memory stores: a TMA store that reads
    the boxes needs a `nvvm.fence.proxy` (async shared) and a barrier of
    the writing threads first.

    Example:

    ```mlir
    flash.wg.store_shared %o16, %smem[%offset] {box_stride = 16384}
        : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>,
          memref<?xi8, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins Flash_FragmentType:$value,
                   MemRefRankOf<[I8], [1]>:$buffer, Index:$offset,
                   ConfinedAttr<I64Attr, [IntPositive]>:$box_stride);
  let assemblyFormat = [{
    $value `,` $buffer `[` $offset `]` attr-dict `:` qualified(type($value))
    `,` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

def Flash_WgWarpSpecializeOp : Flash_WgOp<"warp_specialize", [
    SingleBlockImplicitTerminator<"WgYieldOp">, RecursiveMemoryEffects]> {
  let summary = "Splits a block into a producer warpgroup and consumer warpgroups";
  let description = [{
    The block's warpgroups take roles: warpgroup 0 runs the `producer`
    region and warpgroups 1 .. `consumers` run the `consumer` region, each
    after `setmaxnreg` moves its registers to `producer_regs` (released) or
    `consumer_regs` (claimed) per thread. The block must have
    128 x (1 + consumers) threads. The producer region's argument is the
    thread's index within its warpgroup (0..127); the consumer region's are
    the consumer's index (0 .. consumers - 1, warpgroup - 1) and the same
    thread index. The regions communicate through shared memory and
    mbarriers only.

    Register counts are what `setmaxnreg` takes: multiples of 8 in
    [24, 256], and the block's registers must cover them
    (producer_regs + consumers x consumer_regs <= 64K / 128 per thread
    group; `-flash-gpu-schedule` chooses counts that fit).

    Example:

    ```mlir
    flash.wg.warp_specialize consumers = 2, producer_regs = 24,
        consumer_regs = 240
    producer {
    ^bb0(%thread: i32):
      // TMA loads into the K/V ring
    } consumer {
    ^bb0(%consumer: i32, %thread: i32):
      // wgmma, the online softmax, the epilogue
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$consumers,
                   I64Attr:$producer_regs, I64Attr:$consumer_regs);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  let assemblyFormat = [{
    `consumers` `=` $consumers `,` `producer_regs` `=` $producer_regs `,`
    `consumer_regs` `=` $consumer_regs attr-dict-with-keyword
    `producer` $producer `consumer` $consumer
  }];
  let hasVerifier = 1;
}

// Not RecursiveMemoryEffects: a turn waits on and arrives at named barriers
// even when its region is empty (a turn skipped to keep the two consumers
// paired), so it must not be erased as dead.
def Flash_WgPingpongTurnOp : Flash_WgOp<"pingpong_turn", [
    SingleBlockImplicitTerminator<"WgYieldOp">,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Runs its region in this consumer's turn of a two-consumer ping-pong";
  let description = [{
    Two consumer warpgroups take turns issuing their wgmmas, so that one's
    softmax runs while the other's GEMMs hold the tensor cores
    (FlashAttention-3's ping-pong). The region runs once consumer
    `consumer` (0 or 1) has the turn, and the turn passes to the other
    consumer when it ends: a named barrier of both consumers' 256 threads,
    1 + consumer, waited for before, and the other's, 2 - consumer,
    arrived at after. Consumer 1 must arrive at barrier 1 once before its
    first turn, so that consumer 0 goes first. The turns pair up only if
    both consumers take the same number of them.

    The region yields the values it produces (the wgmma accumulators,
    which only a later wait makes readable); the op returns them.

    Example:

    ```mlir
    %s = flash.wg.pingpong_turn %consumer
        -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator> {
      nvvm.wgmma.fence.aligned
      %d = flash.wg.mma %q, %k : ... -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
      nvvm.wgmma.commit.group.sync.aligned
      flash.wg.yield %d : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    }
    ```
  }];
  let arguments = (ins I32:$consumer);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $consumer (`->` type($results)^)? $body attr-dict
  }];
  let hasVerifier = 1;
}

def Flash_WgYieldOp : Flash_WgOp<"yield", [Pure, Terminator,
    ParentOneOf<["WgWarpSpecializeOp", "WgPingpongTurnOp", "WgTileLoopOp",
                 "WgClaimedTileLoopOp"]>]> {
  let summary = "Ends a role's region, a turn or a tile";
  let description = [{
    The terminator of `flash.wg.warp_specialize`'s regions (no operands,
    implied in its syntax: a role's threads leave the region and end the
    kernel), of `flash.wg.pingpong_turn`'s (the values the turn gives
    back) and of the tile loops' (the key tiles the tile took from the
    K/V ring).
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{
    build($_builder, $_state, ::mlir::ValueRange());
  }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // FLASH_WARPGROUP_TD

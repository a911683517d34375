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
    A `rows x cols` tile of `elementType` spread over the 128 threads of a
    warpgroup as `layout` says (`#flash.wgmma_accumulator` or
    `#flash.wgmma_operand_a`). The layout fixes how many registers each
    thread holds and of which type; the verifier checks that the shape and
    element type are ones `wgmma` has:

    - `#flash.wgmma_accumulator`: 64 x N f32, N a multiple of 8 in
      [8, 256]; N/2 f32 per thread.
    - `#flash.wgmma_operand_a`: 64 x 16 bf16 or f16; 4 x i32 per thread.

    Example:

    ```mlir
    !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
    !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
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

    The value is an i64 whose bits already say all this (the start address
    and the fields are computed where the tiles are laid out, see
    `flash.wg.smem_descriptor`); the type records the layout so that
    `flash.wg.mma` can take the transposition from it and tests can see it.

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
    Nothing is checked at run time and nothing is emitted: the kernel builds
    its descriptors by adding offsets to a few base values (which keeps them
    cheap in registers), so the bits are computed there and named here.

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

#endif // FLASH_WARPGROUP_TD

//===- FlashDialect.td - the flash dialect ------------------*- tablegen -*-===//
//
// The `flash` dialect: attention at the kernel level, its tiles at the tile
// level, and the warpgroup parts of the GPU kernel at the warp-specialised
// level (DESIGN.md section 2).
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_TD
#define FLASH_DIALECT_TD

include "mlir/IR/OpBase.td"

def Flash_Dialect : Dialect {
  let name = "flash";
  let cppNamespace = "::mlir::flash";
  let summary = "Tiled FlashAttention: kernel, tile and warpgroup levels";
  let description = [{
    The `flash` dialect describes scaled dot-product attention at three
    levels.

    The kernel level has one op, `flash.attention`, on memrefs of shape
    batch x heads x seq x head_dim. It is what users write.

    The tile level (produced by `-flash-tile`, also writable by hand) is a
    Triton-style program: program ids, tile loads and stores with boundary
    masking, `flash.dot`, and the online-softmax ops `flash.softmax_update`,
    `flash.rescale` and `flash.finalize`, used inside `scf.for` loops whose
    iter_args carry the accumulator and the running max and sum. Tiles are
    ranked tensors (values in registers); memory is memrefs.

    The warp-specialised level (GPU only; `flash.wg.*`) holds what one
    warpgroup of the Hopper kernel issues: `flash.wg.mma` on register
    fragments (`!flash.fragment`, whose layout attribute says how the tile
    is spread over the 128 threads) and shared-memory descriptors
    (`!flash.smem_descriptor`, whose type is the layout they encode), and
    the producer's side: `flash.wg.tma_load_tile` (a tile of swizzled TMA
    boxes completing on an mbarrier) and the ring ops on
    `!flash.ring_slot` (which slot and phase a ring position uses, waiting
    for a slot to fill or empty, releasing it).
    `-convert-flash-wg-to-nvvm` lowers it, one pattern per op.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Flash_Op<string mnemonic, list<Trait> traits = []>
    : Op<Flash_Dialect, mnemonic, traits>;

#endif // FLASH_DIALECT_TD

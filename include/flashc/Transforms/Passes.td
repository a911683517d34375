//===- Passes.td - flashc transforms ------------------------*- tablegen -*-===//
//
// Passes that stay within the flash dialect: kernel level -> tile level ->
// fused tile program.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TRANSFORMS_PASSES_TD
#define FLASHC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashTile : Pass<"flash-tile", "func::FuncOp"> {
  let summary = "Tile flash.attention into an online-softmax tile program";
  let description = [{
    Replaces each `flash.attention` by a `flash.grid` over (query tiles,
    batch * heads) whose body is one program: load a block_m x D query tile,
    loop over key/value tiles of block_n rows carrying (acc, m, l) through
    `scf.for` iter_args with `flash.dot`, `flash.mask`,
    `flash.softmax_update`, `flash.rescale`, then `flash.finalize` and store
    O (and LSE). With `causal` the loop stops after the last key any row of
    the tile can see. Every tile is masked here; `-flash-fuse` removes the
    masks that cannot fire.

    The tile sizes come from the op's `#flash.config`; the options override
    it (flashc's --block-m, --block-n, --stages, --warpgroups), and a default
    applies when neither gives one. Each schedule switch of
    include/flashc/Config/ScheduleSwitches.def is an `int` option too, named
    as flashc's flag (`overlap`, `split-release`, ...): 1 turns it on, 0 off,
    -1 (the default) keeps the config's. The chosen config is recorded on
    the enclosing function as `flash.config`.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", "0",
           "Query rows per program (0: from the op's config or default)">,
    Option<"blockN", "block-n", "int64_t", "0",
           "Keys per loop iteration (0: from the op's config or default)">,
    Option<"stages", "stages", "int64_t", "0",
           "K/V pipeline depth (0: from the op's config or default)">,
    Option<"warpgroups", "warpgroups", "int64_t", "0",
           "Consumer warpgroups (0: from the op's config or default)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::flash::FlashDialect"
  ];
}

def FlashFuse : Pass<"flash-fuse", "func::FuncOp"> {
  let summary = "Fold the softmax scale into exp2 and peel masks off the loop";
  let description = [{
    Two rewrites of the tile program that the GPU code depends on:

    1. exp2: every `flash.softmax_update` and `flash.finalize` of a function
       moves to base 2 (`base2`, scale multiplied by log2(e)), so each
       exponent is one multiply-add and one exp2. It applies only when every
       running max reaching a finalize comes from a softmax_update or the
       -inf start value, so the units cannot mix.
    2. Masked-loop split: a key loop `for j = 0 to end step block_n` whose
       body masks the logits of tile j becomes two loops: the tiles every
       row of the query tile sees whole (below the diagonal and inside
       seq_k) run without `flash.mask`; the rest (the causal diagonal and the
       ragged tail) keep it. Tiles above the diagonal were already dropped
       by `-flash-tile`, so no work is left on fully masked tiles. The
       backward pass's query loop (one key tile, `for row = first to seq_q
       step block_m`) is split the other way: the query tiles with a row
       that does not see the whole key tile keep the mask, the later ones
       drop it (all keep it where the key tile runs past seq_k).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::flash::FlashDialect"
  ];
}

def FlashDeriveBackward : Pass<"flash-derive-backward", "ModuleOp"> {
  let summary = "Add the backward function of each forward attention function";
  let description = [{
    For every function whose body is one `flash.attention` that writes the
    LSE (and the return), adds `@<name>_backward` taking

        (q, k, v, o, do, lse, dq, dk, dv, captures..., [sinks, dsinks])

    (types as the forward's; dq as q, dk and dv as k and v) and holding
    `flash.attention_backward` with the forward's scale, causal mask,
    captures, sinks and its score and mask mod regions cloned, so that a
    user's own mods train without writing the backward by hand: the score
    mod's derivative is the compiler's (`flash.mod_scores_grad`). A
    forward without the LSE gets an error at the op (the backward
    recomputes the probabilities from it); the forward's tile config is
    not carried over (the backward has its own tiles). With `replace` the
    forward functions are erased, leaving only their backward (what
    `flashc --backward` compiles).
  }];
  let options = [
    Option<"replace", "replace", "bool", "false",
           "Erase the forward functions, keeping their backward only">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::flash::FlashDialect"
  ];
}

#endif // FLASHC_TRANSFORMS_PASSES_TD

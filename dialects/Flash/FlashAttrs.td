//===- FlashAttrs.td - flash dialect attributes -------------*- tablegen -*-===//
//
// The tile configuration attribute, the knob that flash-tune searches.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_ATTRS_TD
#define FLASH_ATTRS_TD

include "FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"

// A schedule switch of #flash.config: written `true` or `false`, elided
// when printed at its default.
class Flash_ScheduleFlag<string desc, string default = "true">
    : AttrParameter<"bool", desc> {
  let defaultValue = default;
  let parser = [{ ::mlir::flash::parseScheduleFlag($_parser) }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}

def Flash_ConfigAttr : AttrDef<Flash_Dialect, "Config"> {
  let mnemonic = "config";
  let summary = "Tile configuration of an attention kernel";
  let description = [{
    How a kernel is tiled and scheduled:

    - `block_m`: query rows per program; a positive multiple of 64 (the M of
      one warpgroup's `wgmma`) times `warpgroups`.
    - `block_n`: keys per inner-loop iteration; a positive multiple of 16
      (the K of the second matmul) and at most 256 (the largest `wgmma` N).
    - `stages`: depth of the shared-memory pipeline for K and V, 1 to 8.
    - `warpgroups`: consumer warpgroups per program, 1 to 4.

    The schedule of the GPU kernel (`true` or `false`, default `true`):

    - `overlap`: issue S_{j+1} = Q K_{j+1}^T before P_j V_j, so a
      warpgroup's softmax overlaps its own matmuls (FA3's intra-warpgroup
      overlap). Costs P's registers beside the next S; the lowering applies
      it for head dims up to 128, and with one stage only with
      `split_release`.
    - `pingpong`: order the matmuls of two consumer warpgroups so one's
      softmax runs under the other's matmuls (applies with 2 warpgroups).
    - `split_release`: free a K slot once S retired and a V slot once P V
      retired, rather than both after P V.
    - `persistent` (default `false`): launch one program per SM, each
      walking a share of the tiles (longest first, heads grouped so their
      K and V stay in L2) with its K/V pipeline running on from one tile to
      the next, instead of one program per tile.
    - `tma_store_o`: write O into shared memory (over the tile's Q buffer)
      and store it with TMA, rather than with 4-byte global stores from
      the accumulator registers. Not applied in a persistent kernel that
      has room for only one Q buffer (its next Q load would wait on the
      store).
    - `dynamic_schedule`: in a persistent kernel under a causal mask,
      programs claim query blocks one at a time, longest first, from a
      counter the runtime passes, instead of walking a static share of
      (longer, shorter) pairs. Ignored elsewhere.
    - `speculative_exp` (default `false`): in every key tile after the
      first, compute P against the running max without waiting for the
      tile's own max, and take that max and P again only when a row sum
      shows the reference must move. Keeps S live through the exps, so
      most configs spill with it; and rows whose scores spread widely keep
      moving their max, so it is slower on them (README).

    Everything but `block_m` and `block_n` may be omitted (defaults: 2
    stages, 1 warpgroup, every switch but `persistent` and
    `speculative_exp` on).

    Example:

    ```mlir
    #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>
    #flash.config<block_m = 256, block_n = 96, stages = 1, warpgroups = 4,
                  overlap = false>
    #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2,
                  persistent = true>
    #flash.config<block_m = 256, block_n = 64, stages = 2, warpgroups = 4,
                  overlap = false, tma_store_o = false>
    ```
  }];
  let parameters = (ins
    "int64_t":$block_m,
    "int64_t":$block_n,
    DefaultValuedParameter<"int64_t", "2">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$warpgroups,
    Flash_ScheduleFlag<"S/PV overlap within a warpgroup">:$overlap,
    Flash_ScheduleFlag<"ping-pong of two consumer warpgroups">:$pingpong,
    Flash_ScheduleFlag<"separate K and V slot release">:$split_release,
    Flash_ScheduleFlag<"one program per SM over the tiles", "false">:$persistent,
    Flash_ScheduleFlag<"O stored by TMA from shared memory">:$tma_store_o,
    Flash_ScheduleFlag<"causal tiles claimed from a counter">:$dynamic_schedule,
    Flash_ScheduleFlag<"P before the tile's max, redone if it moves",
                       "false">:$speculative_exp
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The M extent of one warpgroup-wide MMA: a warpgroup owns this many rows.
    static constexpr int64_t kMmaM = 64;
    /// The K extent of one MMA instruction for 16-bit operands.
    static constexpr int64_t kMmaK = 16;
    /// The largest N extent of one warpgroup-wide MMA.
    static constexpr int64_t kMaxMmaN = 256;
    /// The config the lowering uses when a kernel names none: two consumer
    /// warpgroups of 64 rows, and key tiles that keep K, V and S in budget.
    static ConfigAttr getDefault(::mlir::MLIRContext *context,
                                 int64_t headDim);
  }];
}

#endif // FLASH_ATTRS_TD

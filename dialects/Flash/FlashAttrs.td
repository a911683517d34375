//===- FlashAttrs.td - flash dialect attributes -------------*- tablegen -*-===//
//
// The tile configuration attribute, the knob that flash-tune searches, and
// the GPU schedule -flash-gpu-schedule chooses from it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_ATTRS_TD
#define FLASH_ATTRS_TD

include "FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"

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
  // The schedule switches are declared once, in
  // include/flashc/Config/ScheduleSwitches.def: the syntax above is parsed
  // and printed from that table (FlashAttrs.cpp), and so are the accessors
  // get<Switch>() below.
  let parameters = (ins
    "int64_t":$block_m,
    "int64_t":$block_n,
    DefaultValuedParameter<"int64_t", "2">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$warpgroups,
    "::flashc::ScheduleSwitches":$switches
  );
  let hasCustomAssemblyFormat = 1;
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
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
    bool get##Name() const { return getSwitches().field; }
#include "flashc/Config/ScheduleSwitches.def"
  }];
}

def Flash_ScheduleAttr : AttrDef<Flash_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "The GPU schedule chosen for a tile program";
  let description = [{
    What `-flash-gpu-schedule` chose for one tile program on one target,
    from its `#flash.config`, its shape (head dim, causal mask, LSE) and the
    target's limits; `-convert-flash-to-gpu` lowers exactly this and decides
    nothing of its own. It is recorded on the function as `flash.schedule`.

    - The schedule switches of `#flash.config` as applied (a switch the
      config asks for may not apply: ping-pong needs two consumers, overlap
      with one stage needs split release, claimed tiles need a persistent
      causal kernel, the TMA store of O a second Q buffer when persistent).
    - Warp roles: one producer warpgroup (TMA) and `consumers` consumer
      warpgroups of 64 query rows, with the registers each keeps after
      `setmaxnreg` (`producer_regs`, `consumer_regs`).
    - `q_buffers`: Q buffers in shared memory (2: a persistent kernel loads
      the next tile's Q while the current one runs).
    - `grid`: `tiles` (one block per query tile, x fastest), `sections`
      (causal: heads grouped so their K and V stay in L2, longest query
      block first) or `persistent` (one block per SM).
    - `lag_max`: a row's running max may lag the true max by up to 2^8,
      and O is rescaled only when some row of the warp moved it (kernels
      without the causal mask).
    - `remat_q_descriptors`, `serial_masked_tiles`: what keeps head dim 256
      within the consumers' registers (Q's wgmma descriptors rebuilt per
      key tile; only the unmasked key tiles overlapped).
    - `prefetch_next_block`: a tiles grid's producer prefetches into L2 the
      first loads of the block that starts when this one ends.
    - `probe_stamps`: the developer probe's clock64 records over the LSE
      buffer.

    Every parameter is printed.

    Example:

    ```mlir
    #flash.schedule<overlap = true, pingpong = true, split_release = true,
                    persistent = false, tma_store_o = true,
                    dynamic_schedule = false, speculative_exp = false,
                    consumers = 2, producer_regs = 24, consumer_regs = 240,
                    q_buffers = 1, grid = tiles, lag_max = true,
                    remat_q_descriptors = false, serial_masked_tiles = false,
                    prefetch_next_block = true, probe_stamps = false>
    ```
  }];
  let parameters = (ins
    "::flashc::ScheduleSwitches":$switches,
    "int64_t":$consumers,
    "int64_t":$producer_regs,
    "int64_t":$consumer_regs,
    "int64_t":$q_buffers,
    "::mlir::flash::GridKind":$grid,
    "bool":$lag_max,
    "bool":$remat_q_descriptors,
    "bool":$serial_masked_tiles,
    "bool":$prefetch_next_block,
    "bool":$probe_stamps
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
    bool get##Name() const { return getSwitches().field; }
#include "flashc/Config/ScheduleSwitches.def"
  }];
}

#endif // FLASH_ATTRS_TD

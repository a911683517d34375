//===- Patterns.h - the pattern families of flash.wg lowering -*- C++ -*-===//
//
// One populate function per file of this folder; the pass and the public
// populateFlashWarpgroupToNVVMPatterns collect them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_PATTERNS_H
#define FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_PATTERNS_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::flash::wg_lowering {

/// MmaToNVVM.cpp: flash.wg.mma.
void populateMmaPatterns(const TypeConverter &converter,
                         RewritePatternSet &patterns);
/// FragmentToLLVM.cpp: flash.wg.fragment_from_values and fragment_values.
void populateFragmentPatterns(const TypeConverter &converter,
                              RewritePatternSet &patterns);
/// SmemDescriptorToLLVM.cpp: flash.wg.smem_descriptor, make_descriptor and
/// advance_descriptor.
void populateSmemDescriptorPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
/// InitBarriersToNVGPU.cpp: flash.wg.init_barriers.
void populateInitBarriersPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
/// SharedWindowToGPU.cpp: flash.wg.shared_window.
void populateSharedWindowPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
/// TmaLoadTileToNVGPU.cpp: flash.wg.tma_load_tile.
void populateTmaLoadTilePatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// RingToNVGPU.cpp: flash.wg.ring_slot, ring_slot_index, ring_wait_full,
/// ring_release and ring_wait_empty.
void populateRingPatterns(const TypeConverter &converter,
                          RewritePatternSet &patterns);

/// RowReduceToNVVM.cpp: flash.wg.row_max and flash.wg.row_sum.
void populateRowReducePatterns(const TypeConverter &converter,
                               RewritePatternSet &patterns);
/// RowwiseToLLVM.cpp: flash.wg.mask_columns, scaled_exp2 and scale_rows.
void populateRowwisePatterns(const TypeConverter &converter,
                             RewritePatternSet &patterns);
/// flash.wg.mod_scores: the score and mask mods register by register.
void populateModScoresPatterns(const TypeConverter &converter,
                               RewritePatternSet &patterns);
/// MaskKeysToMaskColumns.cpp: flash.wg.mask_keys, into mask_columns.
void populateMaskKeysPatterns(const TypeConverter &converter,
                              RewritePatternSet &patterns);
/// SoftmaxUpdateToRowOps.cpp: flash.wg.softmax_update and the guarded
/// flash.wg.scale_rows, into the ops above.
void populateSoftmaxUpdatePatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns);
/// TruncFToLLVM.cpp: flash.wg.truncf.
void populateTruncFPatterns(const TypeConverter &converter,
                            RewritePatternSet &patterns);

/// StoreGlobalToLLVM.cpp: flash.wg.store_global.
void populateStoreGlobalPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// StoreSharedToLLVM.cpp: flash.wg.store_shared.
void populateStoreSharedPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);

/// TileLoopToSCF.cpp: flash.wg.block_tile and flash.wg.tile_loop.
void populateTileLoopPatterns(const TypeConverter &converter,
                              RewritePatternSet &patterns);
/// PackedTileToSCF.cpp: flash.wg.packed_tile.
void populatePackedTilePatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns);
/// ClaimedTileLoopToSCF.cpp: flash.wg.claimed_tile_loop.
void populateClaimedTileLoopPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);
/// TileBoundsToArith.cpp: flash.wg.tile_bounds and key_tiles_seen.
void populateTileBoundsPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns);
/// WarpUniformToNVVM.cpp: flash.wg.warp_uniform.
void populateWarpUniformPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);

/// PingpongTurnToNVVM.cpp: flash.wg.pingpong_turn.
void populatePingpongTurnPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
/// WarpSpecializeToSCF.cpp: flash.wg.warp_specialize.
void populateWarpSpecializePatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);

} // namespace mlir::flash::wg_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_PATTERNS_H

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

/// The constant `attr` from the entry block of the function around `op`,
/// where the kernel's emitter keeps one of each constant: reusing it there
/// leaves the kernel's IR what it was when the emitter built these ops.
Value entryConstant(ConversionPatternRewriter &rewriter, Operation *op,
                    TypedAttr attr);

/// MmaToNVVM.cpp: flash.wg.mma.
void populateMmaPatterns(const TypeConverter &converter,
                         RewritePatternSet &patterns);
/// FragmentToLLVM.cpp: flash.wg.fragment_from_values and fragment_values.
void populateFragmentPatterns(const TypeConverter &converter,
                              RewritePatternSet &patterns);
/// SmemDescriptorToLLVM.cpp: flash.wg.smem_descriptor.
void populateSmemDescriptorPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
/// TmaLoadTileToNVGPU.cpp: flash.wg.tma_load_tile.
void populateTmaLoadTilePatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// RingToNVGPU.cpp: flash.wg.ring_slot, ring_slot_index, ring_wait_full,
/// ring_release and ring_wait_empty.
void populateRingPatterns(const TypeConverter &converter,
                          RewritePatternSet &patterns);

} // namespace mlir::flash::wg_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_PATTERNS_H

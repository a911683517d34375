//===- FlashAttrs.cpp - flash dialect attributes --------------------------===//
//
// Verifier of `#flash.config`: every tile size must map onto the MMA shapes
// the GPU lowering uses, so a bad config fails here and not in ptxas.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashAttrs.h"

using namespace mlir;
using namespace mlir::flash;

FailureOr<bool> mlir::flash::parseScheduleFlag(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t blockM, int64_t blockN, int64_t stages,
                                 int64_t warpgroups, bool overlap,
                                 bool pingpong, bool splitRelease,
                                 bool persistent, bool tmaStoreO,
                                 bool dynamicSchedule, bool speculativeExp) {
  if (warpgroups < 1 || warpgroups > 4)
    return emitError() << "warpgroups must be between 1 and 4, got "
                       << warpgroups;
  int64_t rowsPerProgram = kMmaM * warpgroups;
  if (blockM <= 0 || blockM % rowsPerProgram != 0)
    return emitError() << "block_m must be a positive multiple of "
                       << rowsPerProgram << " (" << kMmaM
                       << " rows per warpgroup x " << warpgroups
                       << " warpgroups), got " << blockM;
  if (blockN <= 0 || blockN % kMmaK != 0)
    return emitError() << "block_n must be a positive multiple of " << kMmaK
                       << ", got " << blockN;
  if (blockN > kMaxMmaN)
    return emitError() << "block_n must be at most " << kMaxMmaN << ", got "
                       << blockN;
  if (stages < 1 || stages > 8)
    return emitError() << "stages must be between 1 and 8, got " << stages;
  return success();
}

ConfigAttr ConfigAttr::getDefault(MLIRContext *context, int64_t headDim) {
  int64_t blockN = headDim <= 128 ? 128 : 64;
  return ConfigAttr::get(context, /*block_m=*/128, blockN, /*stages=*/2,
                         /*warpgroups=*/2, /*overlap=*/true,
                         /*pingpong=*/true, /*split_release=*/true,
                         /*persistent=*/false, /*tma_store_o=*/true,
                         /*dynamic_schedule=*/true,
                         /*speculative_exp=*/false);
}

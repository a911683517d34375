//===- InitAll.h - what every flashc tool registers -------------*- C++ -*-===//
//
// One place that lists the dialects and passes the tools know, so flash-opt,
// flashc and flash-tune accept the same IR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_INITALL_H
#define FLASHC_INITALL_H

#include "Flash/FlashDialect.h"
#include "flashc/Conversion/Passes.h"
#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

namespace flashc {

/// Registers the flash dialect and the upstream dialects with their
/// external models (bufferization, lowering to LLVM, the NVVM target): the
/// pipelines cross many dialects, and a missing model fails far from its
/// cause ("op was not bufferized").
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::flash::FlashDialect>();
}

/// Registers flashc's passes and named pipelines.
inline void registerAllPasses() {
  mlir::flash::registerFlashTransformsPasses();
  mlir::flash::registerFlashConversionPasses();
  registerPipelines();
}

} // namespace flashc

#endif // FLASHC_INITALL_H

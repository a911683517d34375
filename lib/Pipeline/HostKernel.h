//===- HostKernel.h - compileKernel's CPU target (private) ------*- C++ -*-===//

#ifndef FLASHC_LIB_PIPELINE_HOSTKERNEL_H
#define FLASHC_LIB_PIPELINE_HOSTKERNEL_H

#include "flashc/Pipeline/CompileKernel.h"

namespace flashc {

/// compileKernel for TargetKind::Cpu: the same tile program through the CPU
/// reference pipeline, to the LLVM dialect, LLVM IR or a shared library
/// whose entry point is the kernel function's C interface.
llvm::Expected<CompiledKernel>
compileHostKernel(mlir::ModuleOp module, const KernelCompileOptions &options);

} // namespace flashc

#endif // FLASHC_LIB_PIPELINE_HOSTKERNEL_H

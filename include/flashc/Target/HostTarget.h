//===- HostTarget.h - LLVM dialect -> host shared library -------*- C++ -*-===//
//
// The target layer of the CPU path: a module the CPU reference pipeline
// lowered to the LLVM dialect is translated to LLVM IR, optimized and
// compiled to an object for the host with LLVM's TargetMachine, and linked
// into a shared library by the system's C compiler driver.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_HOSTTARGET_H
#define FLASHC_TARGET_HOSTTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace flashc {

struct HostTargetOptions {
  /// The target triple; empty: the host's (LLVM's default triple).
  std::string triple;
  /// "generic" is the baseline of the triple's architecture (x86-64: SSE2),
  /// so that one library in a cache shared by several hosts runs on each;
  /// "native" is this host's CPU with the features it reports (x86-64: F16C
  /// makes f16 conversions instructions rather than libgcc calls); else an
  /// LLVM CPU name.
  std::string cpu = "generic";
  unsigned optLevel = 2;
  /// The C compiler driver that links the object (`<linker> -shared`),
  /// looked up on PATH unless it is a path.
  std::string linker = "cc";
};

/// The triple `options` compiles for.
std::string hostTriple(const HostTargetOptions &options);

/// The LLVM CPU name `options` compiles for ("native" resolved).
std::string hostCpu(const HostTargetOptions &options);

/// Translates `module` (LLVM dialect only) to LLVM IR in `context` for the
/// host triple and optimizes it at `options.optLevel`. The result also
/// defines (hidden) the compiler-rt builtin the backend calls for bf16
/// truncation, which GCC 12's libgcc lacks.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateForHost(mlir::ModuleOp module, llvm::LLVMContext &context,
                 const HostTargetOptions &options);

/// Compiles `module` (translateForHost's result) to a relocatable,
/// position-independent object file; returns its bytes.
llvm::Expected<std::string> emitHostObject(llvm::Module &module,
                                           const HostTargetOptions &options);

/// Links `object` into a shared library with `<linker> -shared` (libm for
/// the math the kernel calls); returns the library's bytes. The error
/// carries the linker's own message.
llvm::Expected<std::string> linkSharedLibrary(llvm::StringRef object,
                                              const HostTargetOptions &options);

} // namespace flashc

#endif // FLASHC_TARGET_HOSTTARGET_H

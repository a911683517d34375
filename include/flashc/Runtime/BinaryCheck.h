//===- BinaryCheck.h - Kernel binary vs metadata, before the driver -*- C++
//-*-===//
//
// Reads what a cubin (ELF) or PTX file says about itself (machine, SM,
// symbols) and compares it with the metadata, so that a cubin for another
// arch or a missing symbol is named precisely rather than left to the
// driver's generic error.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_BINARYCHECK_H
#define FLASHC_RUNTIME_BINARYCHECK_H

#include "flashc/Runtime/KernelMetadata.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace flashc::rt {

/// Arch of a cubin, "sm_90a" or "sm_80"; error if it is not a CUDA ELF.
llvm::Expected<std::string> cubinArch(llvm::StringRef bytes);

/// Compares the parameter sizes a binary declares (in order) with the
/// metadata's list after memref expansion.
llvm::Error checkParamSizes(const KernelMetadata &meta,
                            llvm::ArrayRef<unsigned> have);

/// Checks format, arch, kernel symbol and (cubin) parameter layout of
/// `bytes` against `meta`.
llvm::Error checkBinary(const KernelMetadata &meta, llvm::StringRef bytes);

/// Can code for `arch` run on a device of compute capability major.minor?
/// Cubins need the same major and minor <= device (sm_XXa: exactly equal);
/// PTX is JIT-compiled for newer devices too (sm_XXa PTX: exactly equal).
llvm::Error checkArchRunsOn(llvm::StringRef arch, BinaryFormat format,
                            int ccMajor, int ccMinor);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_BINARYCHECK_H

//===- LaunchAttr.h - the name of a kernel's launch contract ----*- C++ -*-===//
//
// The GPU conversion writes a kernel's launch contract (docs/
// kernel-metadata.md minus provenance) as this attribute of its gpu.func;
// the tensor-map pass, the target's kernel.json writer and the tuner read
// it. Header-only, LLVM Support only, so Conversion and Target share the
// name without depending on each other.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONFIG_LAUNCHATTR_H
#define FLASHC_CONFIG_LAUNCHATTR_H

#include "llvm/ADT/StringRef.h"

namespace flashc {

/// The name of the gpu.func attribute holding the launch contract.
constexpr llvm::StringLiteral kLaunchAttrName = "flash.launch";

} // namespace flashc

#endif // FLASHC_CONFIG_LAUNCHATTR_H

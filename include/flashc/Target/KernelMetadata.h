//===- KernelMetadata.h - the kernel.json written beside binaries -*- C++
//-*-===//
//
// The compiler side of docs/kernel-metadata.md: the GPU conversion records
// a kernel's launch contract as the `flash.launch` attribute of its
// gpu.func; this turns it, plus provenance, into the JSON the runtime reads.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_KERNELMETADATA_H
#define FLASHC_TARGET_KERNELMETADATA_H

#include "flashc/Config/LaunchAttr.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace flashc {

/// What the metadata says about the artefact itself.
struct ArtefactInfo {
  std::string binaryFileName; ///< e.g. "kernel.cubin", relative to the JSON
  std::string binaryFormat;   ///< "cubin", "ptx" or "so" (host library)
  std::string arch;           ///< e.g. "sm_90a"; a host library's triple
  std::string sourceHash;     ///< hashSource() of the kernel's source text
};

/// The hex SHA-256 of a kernel's source text: the key of tuning databases.
std::string hashSource(llvm::StringRef source);

/// The metadata of the one kernel (gpu.func with `flash.launch`) in
/// `module`; emits a diagnostic and fails when there is none or several.
mlir::FailureOr<llvm::json::Object>
buildKernelMetadata(mlir::ModuleOp module, const ArtefactInfo &artefact);

/// `contract` (what the kernel computes and takes) with the provenance
/// fields every kernel.json has: format, versions, source hash, the entry
/// `symbol`, the binary and the arch. buildKernelMetadata's last step, and
/// the whole metadata of a host (CPU) library, whose contract the CPU path
/// reads from the kernel-level op.
llvm::json::Object withProvenance(llvm::json::Object contract,
                                  llvm::StringRef symbol,
                                  const ArtefactInfo &artefact);

/// Any attribute flash.launch may hold, as JSON (ints, floats, bools,
/// strings, arrays, dictionaries); fails on anything else.
mlir::FailureOr<llvm::json::Value> attributeToJson(mlir::Attribute attr);

} // namespace flashc

#endif // FLASHC_TARGET_KERNELMETADATA_H

//===- KernelMetadata.cpp - flash.launch -> kernel.json -------------------===//
//
// Provenance (format, versions, hash, symbol, binary) is added here; the
// launch contract itself is copied from the attribute the GPU conversion
// wrote, so the two cannot drift apart.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/KernelMetadata.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <optional>

using namespace mlir;

namespace flashc {

/// Bumped with every change to what the compiler emits.
constexpr llvm::StringLiteral kFlashcVersion = "0.1.0";

std::string hashSource(llvm::StringRef source) {
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(llvm::ArrayRef(
      reinterpret_cast<const uint8_t *>(source.data()), source.size()));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

FailureOr<llvm::json::Value> attributeToJson(Attribute attr) {
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return llvm::json::Value(boolean.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return llvm::json::Value(integer.getInt());
  if (auto real = dyn_cast<FloatAttr>(attr))
    return llvm::json::Value(real.getValueAsDouble());
  if (auto string = dyn_cast<StringAttr>(attr))
    return llvm::json::Value(string.getValue().str());
  if (auto dense = dyn_cast<DenseI64ArrayAttr>(attr)) {
    llvm::json::Array array;
    for (int64_t value : dense.asArrayRef())
      array.push_back(value);
    return llvm::json::Value(std::move(array));
  }
  if (auto list = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array array;
    for (Attribute element : list) {
      FailureOr<llvm::json::Value> value = attributeToJson(element);
      if (failed(value))
        return failure();
      array.push_back(std::move(*value));
    }
    return llvm::json::Value(std::move(array));
  }
  if (auto dictionary = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dictionary) {
      FailureOr<llvm::json::Value> value = attributeToJson(entry.getValue());
      if (failed(value))
        return failure();
      object[entry.getName().getValue()] = std::move(*value);
    }
    return llvm::json::Value(std::move(object));
  }
  return failure();
}

/// The launch contract of `kernel` as JSON, or a located error.
static FailureOr<llvm::json::Object> launchContract(gpu::GPUFuncOp kernel) {
  auto launch = dyn_cast<DictionaryAttr>(kernel->getAttr(kLaunchAttrName));
  FailureOr<llvm::json::Value> contract =
      launch ? attributeToJson(launch) : FailureOr<llvm::json::Value>();
  if (failed(contract))
    return kernel.emitOpError()
           << "'" << kLaunchAttrName
           << "' must be a dictionary of integers, floats, booleans, "
              "strings, arrays and dictionaries";
  return std::move(*contract->getAsObject());
}

/// A pass of several kernels (the backward pass's roles pre, main and post;
/// decoding's split and combine): the `mainRole` kernel's contract at the
/// top, as a forward kernel's, and each launch in order under "launches"
/// (docs/kernel-metadata.md).
static FailureOr<llvm::json::Object>
buildLaunchesMetadata(ModuleOp module, ArrayRef<gpu::GPUFuncOp> kernels,
                      ArrayRef<StringRef> roles, StringRef mainRole,
                      const ArtefactInfo &artefact) {
  std::optional<llvm::json::Object> main;
  StringRef mainSymbol;
  llvm::json::Array launches;
  for (llvm::StringRef role : roles) {
    auto found = llvm::find_if(kernels, [&](gpu::GPUFuncOp k) {
      auto launch = k->getAttrOfType<DictionaryAttr>(kLaunchAttrName);
      auto name = launch ? launch.getAs<StringAttr>("role") : StringAttr();
      return name && name.getValue() == role;
    });
    if (found == kernels.end())
      return module.emitError()
             << "expected the kernels' roles " << llvm::join(roles, ", ")
             << "; found no '" << role << "'";
    gpu::GPUFuncOp kernel = *found;
    FailureOr<llvm::json::Object> contract = launchContract(kernel);
    if (failed(contract))
      return failure();
    llvm::json::Object launch;
    launch["role"] = role.str();
    launch["kernel"] = kernel.getName().str();
    for (llvm::StringRef key :
         {"block", "shared_memory_bytes", "programmatic", "grid", "params"})
      if (llvm::json::Value *value = contract->get(key))
        launch[key] = *value;
    launches.push_back(std::move(launch));
    if (role == mainRole) {
      main = std::move(*contract);
      mainSymbol = kernel.getName();
    }
  }
  (*main)["launches"] = std::move(launches);
  return withProvenance(std::move(*main), mainSymbol, artefact);
}

FailureOr<llvm::json::Object>
buildKernelMetadata(ModuleOp module, const ArtefactInfo &artefact) {
  SmallVector<gpu::GPUFuncOp> kernels;
  module.walk([&](gpu::GPUFuncOp func) {
    if (func->hasAttr(kLaunchAttrName))
      kernels.push_back(func);
  });
  if (kernels.size() == 3)
    return buildLaunchesMetadata(module, kernels, {"pre", "main", "post"},
                                 "main", artefact);
  if (kernels.size() == 2)
    return buildLaunchesMetadata(module, kernels, {"split", "combine"}, "split",
                                 artefact);
  if (kernels.size() != 1)
    return module.emitError()
           << "expected exactly one gpu.func with a '" << kLaunchAttrName
           << "' launch contract, found " << kernels.size();
  gpu::GPUFuncOp kernel = kernels.front();
  FailureOr<llvm::json::Object> contract = launchContract(kernel);
  if (failed(contract))
    return failure();
  return withProvenance(std::move(*contract), kernel.getName(), artefact);
}

llvm::json::Object withProvenance(llvm::json::Object contract,
                                  llvm::StringRef symbol,
                                  const ArtefactInfo &artefact) {
  contract["format"] = "flashc-kernel";
  contract["format_version"] = 1;
  contract["flashc_version"] = kFlashcVersion;
  contract["source_hash"] = artefact.sourceHash;
  contract["kernel"] = symbol.str();
  contract["binary"] = artefact.binaryFileName;
  contract["binary_format"] = artefact.binaryFormat;
  contract["arch"] = artefact.arch;
  return contract;
}

} // namespace flashc

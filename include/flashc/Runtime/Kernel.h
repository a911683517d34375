//===- Kernel.h - A loaded flashc kernel -----------------------*- C++ -*-===//
//
// The C++ entry point of libflashrt: load a kernel (binary + metadata) on a
// device, then launch it on a caller's stream with validated arguments.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_KERNEL_H
#define FLASHC_RUNTIME_KERNEL_H

#include "flashc/Runtime/ArgValidation.h"
#include "flashc/Runtime/Backward.h"
#include "flashc/Runtime/Decode.h"
#include "flashc/Runtime/Driver.h"
#include "flashc/Runtime/KernelMetadata.h"
#include "flashc/Runtime/ParamPacking.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace flashc::rt {

/// Metadata path for a binary path: "k.cubin" -> "k.json"; "k.json" as is.
std::string metadataPathFor(llvm::StringRef path);

/// Reads and parses the metadata file for `path` (binary or .json).
llvm::Expected<KernelMetadata> loadMetadataFile(llvm::StringRef path);

class Kernel {
public:
  /// Loads `path` (a .cubin/.ptx with its .json beside it, or the .json) on
  /// device `ordinal`, checking binary, arch, symbol and parameter layout.
  static llvm::Expected<std::unique_ptr<Kernel>> load(llvm::StringRef path,
                                                      int ordinal);

  ~Kernel();

  const KernelMetadata &getMetadata() const { return meta; }
  const DeviceInfo &getDevice() const { return device; }
  CUcontext getContext() const { return context->get(); }

  /// Validates `args`, encodes TMA descriptors and launches on `stream`
  /// (asynchronous; nothing is synchronised, except when a tma_ptr
  /// descriptor is new: its copy to the device is waited for, and once per
  /// kTmaPtrCacheCapacity of them the context, see evictTmaPtrs; and the
  /// first launch on a stream of a kernel with a tile counter, which waits
  /// for the counter's zeroing).
  llvm::Error launch(const LaunchArgs &args, CUstream stream);

  /// A backward kernel's three launches on `stream`, after validating
  /// `args`. `workspace` (device memory of at least workspaceBytes(args)
  /// bytes, 256-byte aligned) holds their scratch; without one (0) it is
  /// allocated and freed in stream order (cuMemAllocAsync). Asynchronous.
  llvm::Error launchBackward(const BackwardArgs &args, uint64_t workspace,
                             uint64_t workspaceBytes, CUstream stream);
  /// The workspace bytes launchBackward needs for `args`.
  llvm::Expected<uint64_t> backwardWorkspaceBytes(const BackwardArgs &args);

  /// A decoding kernel's two launches (split, then combine) on `stream`,
  /// after validating `args` (args.numSplits 0: the rule's for this
  /// device's SMs). `workspace` (device memory of at least
  /// decodeWorkspaceBytes(args) bytes, 256-byte aligned) holds the splits'
  /// outputs; without one (0) it is allocated and freed in stream order
  /// (cuMemAllocAsync), which a CUDA graph capture cannot hold: a captured
  /// call passes its own. Asynchronous.
  llvm::Error launchDecode(const DecodeArgs &args, uint64_t workspace,
                           uint64_t workspaceBytes, CUstream stream);
  /// The workspace bytes launchDecode needs for `args` (its splits).
  llvm::Expected<uint64_t> decodeWorkspaceBytes(const DecodeArgs &args);
  /// The splits launchDecode would use for `args`.
  llvm::Expected<int64_t> decodeNumSplits(const DecodeArgs &args);

  /// Device tensor maps this kernel holds (tma_ptr parameters), for tests.
  size_t numCachedTmaPtrs();

private:
  Kernel(KernelMetadata meta, DeviceInfo device, PrimaryContext context)
      : meta(std::move(meta)), device(std::move(device)),
        context(std::move(context)) {}
  llvm::Error checkPointers(const LaunchArgs &args);
  /// `t` (when present) is device memory of this kernel's device; the
  /// error names it `name`.
  llvm::Error checkPointer(llvm::StringRef name, const TensorArg &t);
  llvm::Error checkCapturePointers(llvm::ArrayRef<TensorArg> captures);
  /// Encodes `r` into the CUtensorMap at `out` (a parameter by value).
  llvm::Error encodeTensorMap(const TensorMapRequest &r, void *out);
  /// Encodes `r` and copies it to a new device allocation (cache miss).
  llvm::Expected<uint64_t> createTmaPtr(const TensorMapRequest &r);
  /// A new device allocation of `bytes` (aligned to `align`) holding a copy
  /// of `data`, complete before it is returned; `what` names it in errors.
  llvm::Expected<uint64_t> copyToNewAllocation(const void *data, size_t bytes,
                                               size_t align,
                                               const llvm::Twine &what);
  /// Waits for the context to be idle and frees every device tensor map.
  llvm::Error evictTmaPtrs();
  /// The tile counter of launches on `stream`, made (zeroed) on first use.
  llvm::Expected<uint64_t> tileCounterFor(CUstream stream);

  KernelMetadata meta;
  DeviceInfo device;
  std::optional<PrimaryContext> context;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  /// A backward or decoding kernel's launches, in meta.launches' order.
  llvm::SmallVector<CUfunction, 3> launchFunctions;
  unsigned numTmaPtrParams = 0;
  bool hasTileCounter = false;
  /// Serialises launches of this kernel: from the first lookup in tmaPtrs to
  /// the launch's submission, no other thread may free an entry.
  std::mutex launchMutex;
  /// Device copies of encoded tensor maps (tma_ptr); immutable once made.
  TmaPtrCache tmaPtrs;
  /// A private non-blocking stream for the copies into tmaPtrs and the
  /// zeroing of tile counters.
  CUstream copyStream = nullptr;
  /// One tile counter per stream: launches on one stream run one after
  /// another and each leaves its counter zero for the next, while launches
  /// on different streams may overlap and must not share one. Guarded by
  /// launchMutex.
  std::map<CUstream, uint64_t> tileCounters;
};

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_KERNEL_H

//===- Driver.h - CUDA driver API loaded at run time -----------*- C++ -*-===//
//
// libflashrt reaches the CUDA driver only through this table, filled from
// libcuda.so.1 with dlopen on first use. On a machine with no driver every
// entry point of the runtime then fails cleanly with "no CUDA driver".
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_DRIVER_H
#define FLASHC_RUNTIME_DRIVER_H

#include "flashc/Runtime/Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cuda.h>

#include <string>

namespace flashc::rt {

/// Driver entry points; see DriverSymbols.def.
struct DriverApi {
#define FLASHRT_CU_REQUIRED(name) decltype(&::name) name = nullptr;
#include "flashc/Runtime/DriverSymbols.def"
  int version = 0; ///< cuDriverGetVersion, e.g. 13000.
};

/// Loads libcuda.so.1 (or $FLASHRT_CUDA_LIBRARY) and calls cuInit once per
/// process; later calls return the same table or the same error.
llvm::Expected<const DriverApi *> getDriver();

/// Turns a failed driver call into an error naming the call and the driver's
/// own name and description of the result.
llvm::Error checkCu(CUresult result, const llvm::Twine &call,
                    ErrorCode code = ErrorCode::Cuda);

/// What the runtime needs to know about one GPU.
struct DeviceInfo {
  int ordinal = 0;
  CUdevice device = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int numSMs = 0;
  int maxSharedOptin =
      0; ///< bytes of dynamic shared memory a block may opt in to.
};

/// Queries device `ordinal`, with clear errors for no GPU / bad ordinal.
llvm::Expected<DeviceInfo> getDeviceInfo(int ordinal);

/// Holds a device's primary context (the one PyTorch uses too) for its
/// lifetime.
class PrimaryContext {
public:
  static llvm::Expected<PrimaryContext> retain(const DeviceInfo &device);
  PrimaryContext(PrimaryContext &&other);
  PrimaryContext &operator=(PrimaryContext &&) = delete;
  ~PrimaryContext();
  CUcontext get() const { return context; }

private:
  PrimaryContext(CUdevice device, CUcontext context)
      : device(device), context(context) {}
  CUdevice device;
  CUcontext context;
};

/// Makes a context current for a scope.
class ScopedContext {
public:
  explicit ScopedContext(CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;

private:
  bool pushed = false;
};

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_DRIVER_H

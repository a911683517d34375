//===- Driver.cpp - dlopen of libcuda.so.1 and device helpers -------------===//
//
// Fills the DriverApi table (DriverSymbols.def) once per process and wraps
// device queries and the primary context. libcuda is never linked.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Driver.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace llvm;

namespace flashc::rt {

#define FLASHRT_STR2(x) #x
#define FLASHRT_STR(x) FLASHRT_STR2(x)

namespace {
struct DriverState {
  DriverApi api;
  ErrorCode code = ErrorCode::NoDriver;
  std::string error; ///< empty if loaded
};

DriverState loadDriver() {
  DriverState state;
  const char *path = std::getenv("FLASHRT_CUDA_LIBRARY");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    state.error = formatv("no CUDA driver: cannot load {0} ({1})", path,
                          why ? why : "unknown reason");
    return state;
  }
  // The symbol names are the macro-expanded ones (cuMemAlloc_v2), which are
  // the functions whose signatures cuda.h declares under the API names.
#define FLASHRT_CU_REQUIRED(name)                                              \
  state.api.name = reinterpret_cast<decltype(state.api.name)>(                 \
      dlsym(handle, FLASHRT_STR(name)));                                       \
  if (!state.api.name) {                                                       \
    state.error = formatv("CUDA driver {0} lacks {1} (driver too old?)", path, \
                          FLASHRT_STR(name));                                  \
    return state;                                                              \
  }
#define FLASHRT_CU_OPTIONAL(name)                                              \
  state.api.name = reinterpret_cast<decltype(state.api.name)>(                 \
      dlsym(handle, FLASHRT_STR(name)));
#include "flashc/Runtime/DriverSymbols.def"
  // The handle stays open for the life of the process.
  CUresult res = state.api.cuInit(0);
  if (res != CUDA_SUCCESS) {
    const char *name = nullptr;
    state.api.cuGetErrorName(res, &name);
    state.code =
        res == CUDA_ERROR_NO_DEVICE ? ErrorCode::NoDevice : ErrorCode::NoDriver;
    state.error = formatv("{0}: cuInit failed with {1}",
                          res == CUDA_ERROR_NO_DEVICE ? "no GPU"
                                                      : "no usable CUDA driver",
                          name ? name : "an unknown error");
    return state;
  }
  state.api.cuDriverGetVersion(&state.api.version);
  return state;
}
} // namespace

Expected<const DriverApi *> getDriver() {
  static const DriverState state = loadDriver();
  if (!state.error.empty())
    return makeError(state.code, state.error);
  return &state.api;
}

Error checkCu(CUresult result, const Twine &call, ErrorCode code) {
  if (result == CUDA_SUCCESS)
    return Error::success();
  const char *name = nullptr, *text = nullptr;
  if (auto drv = getDriver()) {
    (*drv)->cuGetErrorName(result, &name);
    (*drv)->cuGetErrorString(result, &text);
  } else {
    consumeError(drv.takeError());
  }
  return makeError(code, formatv("{0} failed: {1} ({2})", call.str(),
                                 name ? name : "unknown CUresult",
                                 text ? text : "no description"));
}

Expected<DeviceInfo> getDeviceInfo(int ordinal) {
  auto drv = getDriver();
  if (!drv)
    return drv.takeError();
  const DriverApi &cu = **drv;
  int count = 0;
  if (Error err = checkCu(cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return std::move(err);
  if (count == 0)
    return makeError(ErrorCode::NoDevice,
                     "no GPU: the CUDA driver sees 0 devices");
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::NoDevice,
                     formatv("no GPU {0}: the CUDA driver sees {1} device(s)",
                             ordinal, count));
  DeviceInfo info;
  info.ordinal = ordinal;
  if (Error err = checkCu(cu.cuDeviceGet(&info.device, ordinal), "cuDeviceGet"))
    return std::move(err);
  char name[256] = {0};
  if (Error err = checkCu(cu.cuDeviceGetName(name, sizeof(name), info.device),
                          "cuDeviceGetName"))
    return std::move(err);
  info.name = name;
  struct {
    CUdevice_attribute attr;
    int *out;
  } queries[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.ccMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.ccMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.numSMs},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedOptin},
  };
  for (auto &q : queries)
    if (Error err = checkCu(cu.cuDeviceGetAttribute(q.out, q.attr, info.device),
                            "cuDeviceGetAttribute"))
      return std::move(err);
  return info;
}

Expected<PrimaryContext> PrimaryContext::retain(const DeviceInfo &device) {
  auto drv = getDriver();
  if (!drv)
    return drv.takeError();
  CUcontext context = nullptr;
  if (Error err =
          checkCu((*drv)->cuDevicePrimaryCtxRetain(&context, device.device),
                  "cuDevicePrimaryCtxRetain"))
    return std::move(err);
  return PrimaryContext(device.device, context);
}

PrimaryContext::PrimaryContext(PrimaryContext &&other)
    : device(other.device), context(other.context) {
  other.context = nullptr;
}

PrimaryContext::~PrimaryContext() {
  if (!context)
    return;
  if (auto drv = getDriver())
    (*drv)->cuDevicePrimaryCtxRelease(device);
  else
    consumeError(drv.takeError());
}

ScopedContext::ScopedContext(CUcontext context) {
  auto drv = getDriver();
  if (!drv) {
    consumeError(drv.takeError());
    return;
  }
  pushed = (*drv)->cuCtxPushCurrent(context) == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (!pushed)
    return;
  CUcontext popped;
  if (auto drv = getDriver())
    (*drv)->cuCtxPopCurrent(&popped);
  else
    consumeError(drv.takeError());
}

} // namespace flashc::rt

//===- CApi.cpp - The flashrt_* C API over the C++ runtime ----------------===//
//
// Converts C descriptors to LaunchArgs, runs the C++ calls, and records the
// message of a failure in a thread-local string for flashrt_last_error().
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Kernel.h"
#include "flashc/Runtime/flashrt.h"

#include <cstring>
#include <string>

using namespace flashc::rt;

struct flashrt_kernel {
  std::unique_ptr<Kernel> impl;
};

namespace {
thread_local std::string lastError;

flashrt_status fail(llvm::Error err) {
  int code = takeErrorMessage(std::move(err), lastError);
  return flashrt_status(code);
}

flashrt_status fail(flashrt_status status, const char *message) {
  lastError = message;
  return status;
}

/// Stands in for the null data pointer of an empty tensor (PyTorch gives
/// numel() == 0 tensors address 0) so that validation names the empty
/// dimension instead of calling the tensor missing. An empty tensor never
/// passes validation, so this address never reaches the GPU.
constexpr uint64_t kEmptyTensorAddress = 256;

bool isEmpty(const flashrt_tensor *in) {
  for (int i = 0; i < in->rank && i < 4; ++i)
    if (in->sizes[i] == 0)
      return true;
  return false;
}

bool toTensor(const flashrt_tensor *in, const char *name, TensorArg &out) {
  if (!in || (!in->data && !isEmpty(in)))
    return true; // absent
  if (in->dtype < FLASHRT_DTYPE_BF16 || in->dtype > FLASHRT_DTYPE_I32) {
    lastError = std::string("invalid launch arguments:\n  ") + name +
                " has an unknown dtype code " + std::to_string(in->dtype);
    return false;
  }
  if (in->rank < 0 || in->rank > 4) {
    lastError = std::string("invalid launch arguments:\n  ") + name +
                " has rank " + std::to_string(in->rank) + " (at most 4)";
    return false;
  }
  out.data =
      in->data ? reinterpret_cast<uint64_t>(in->data) : kEmptyTensorAddress;
  out.dtype = in->dtype == FLASHRT_DTYPE_BF16  ? DType::BF16
              : in->dtype == FLASHRT_DTYPE_F16 ? DType::F16
              : in->dtype == FLASHRT_DTYPE_I32 ? DType::I32
                                               : DType::F32;
  out.rank = unsigned(in->rank);
  for (int i = 0; i < in->rank; ++i) {
    out.sizes[i] = in->sizes[i];
    out.strides[i] = in->strides[i];
  }
  out.device = in->device;
  return true;
}

bool toArgs(const flashrt_tensor *q, const flashrt_tensor *k,
            const flashrt_tensor *v, const flashrt_tensor *o,
            const flashrt_tensor *lse, LaunchArgs &args) {
  return toTensor(q, "q", args[TensorId::Q]) &&
         toTensor(k, "k", args[TensorId::K]) &&
         toTensor(v, "v", args[TensorId::V]) &&
         toTensor(o, "o", args[TensorId::O]) &&
         toTensor(lse, "lse", args[TensorId::LSE]);
}

/// args's tensors and packed sequences.
bool toVarlenArgs(const flashrt_varlen_args *in, LaunchArgs &args) {
  if (!toArgs(in->q, in->k, in->v, in->o, in->lse, args) ||
      !toTensor(in->cu_seqlens_q, "cu_seqlens_q", args.cuSeqlensQ) ||
      !toTensor(in->cu_seqlens_k, "cu_seqlens_k", args.cuSeqlensK))
    return false;
  args.maxSeqlenQ = in->max_seqlen_q;
  return true;
}

/// A backward launch's nine tensors.
bool toBackwardArgs(const flashrt_backward_args *in, BackwardArgs &args) {
  const flashrt_tensor *tensors[kNumBackwardTensors] = {
      in->q, in->k, in->v, in->o, in->lse, in->dout, in->dq, in->dk, in->dv};
  for (unsigned i = 0; i < kNumBackwardTensors; ++i) {
    TensorId id = TensorId(i);
    std::string name = tensorName(id).str();
    if (!toTensor(tensors[i], name.c_str(), args[id]))
      return false;
  }
  return true;
}

/// A decoding call's tensors and splits.
bool toDecodeArgs(const flashrt_decode_args *in, DecodeArgs &args) {
  if (!toTensor(in->q, "q", args.q) ||
      !toTensor(in->k_cache, "k_cache", args.kCache) ||
      !toTensor(in->v_cache, "v_cache", args.vCache) ||
      !toTensor(in->o, "o", args.o) || !toTensor(in->lse, "lse", args.lse) ||
      !toTensor(in->page_table, "page_table", args.pageTable) ||
      !toTensor(in->cache_seqlens, "cache_seqlens", args.cacheSeqlens))
    return false;
  args.numSplits = in->num_splits;
  return true;
}

/// The captures, named "capture <i>" in errors; none when `in` is NULL.
bool toCaptures(const flashrt_captures *in,
                llvm::SmallVectorImpl<TensorArg> &out) {
  if (!in)
    return true;
  if (in->count < 0 || in->count > int32_t(kMaxCaptures) ||
      (in->count && !in->tensors)) {
    lastError =
        "invalid launch arguments:\n  captures: " + std::to_string(in->count) +
        " tensors at " + (in->tensors ? "an address" : "NULL") + " (at most " +
        std::to_string(kMaxCaptures) + ")";
    return false;
  }
  out.resize(size_t(in->count));
  for (int32_t i = 0; i < in->count; ++i) {
    std::string name = "capture " + std::to_string(i);
    if (!toTensor(&in->tensors[i], name.c_str(), out[size_t(i)]))
      return false;
  }
  return true;
}

/// Checks `launch` against the metadata file at `path` (no driver).
flashrt_status validateFile(const char *path, const LaunchArgs &launch) {
  auto meta = loadMetadataFile(path);
  if (!meta)
    return fail(meta.takeError());
  auto shape = validateLaunchArgs(*meta, launch);
  if (!shape)
    return fail(shape.takeError());
  return FLASHRT_OK;
}

int32_t dtypeCode(DType t) {
  return t == DType::BF16  ? FLASHRT_DTYPE_BF16
         : t == DType::F16 ? FLASHRT_DTYPE_F16
         : t == DType::I32 ? FLASHRT_DTYPE_I32
                           : FLASHRT_DTYPE_F32;
}
} // namespace

extern "C" {

int flashrt_abi_version(void) { return FLASHRT_ABI_VERSION; }

const char *flashrt_last_error(void) { return lastError.c_str(); }

const char *flashrt_status_string(flashrt_status status) {
  switch (status) {
  case FLASHRT_OK:
    return "ok";
  case FLASHRT_ERROR_NO_DRIVER:
    return "no CUDA driver";
  case FLASHRT_ERROR_NO_DEVICE:
    return "no suitable GPU";
  case FLASHRT_ERROR_INVALID_KERNEL:
    return "invalid kernel";
  case FLASHRT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case FLASHRT_ERROR_CUDA:
    return "CUDA error";
  case FLASHRT_ERROR_IO:
    return "I/O error";
  }
  return "unknown status";
}

flashrt_status flashrt_device_count(int *count) {
  if (!count)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "count is NULL");
  auto drv = getDriver();
  if (!drv)
    return fail(drv.takeError());
  if (llvm::Error err =
          checkCu((*drv)->cuDeviceGetCount(count), "cuDeviceGetCount"))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status flashrt_kernel_load(const char *path, int device,
                                   flashrt_kernel **kernel) {
  if (!path || !kernel)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "path or kernel is NULL");
  *kernel = nullptr;
  auto loaded = Kernel::load(path, device);
  if (!loaded)
    return fail(loaded.takeError());
  *kernel = new flashrt_kernel{std::move(*loaded)};
  return FLASHRT_OK;
}

void flashrt_kernel_destroy(flashrt_kernel *kernel) { delete kernel; }

flashrt_status flashrt_kernel_get_info(const flashrt_kernel *kernel,
                                       flashrt_kernel_info *info) {
  if (!kernel || !info)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel or info is NULL");
  const KernelMetadata &m = kernel->impl->getMetadata();
  std::memset(info, 0, sizeof(*info));
  info->dtype = dtypeCode(m.dtype);
  info->head_dim = int32_t(m.headDim);
  info->causal = m.causal;
  info->has_lse = m.hasLse;
  info->scale = m.scale;
  info->device = kernel->impl->getDevice().ordinal;
  std::strncpy(info->kernel, m.kernel.c_str(), sizeof(info->kernel) - 1);
  std::strncpy(info->arch, m.arch.c_str(), sizeof(info->arch) - 1);
  info->backward = m.backward;
  info->deterministic = m.deterministic;
  info->num_captures = int32_t(m.captures.size());
  info->decode = m.decode;
  return FLASHRT_OK;
}

flashrt_status flashrt_launch_decode(flashrt_kernel *kernel,
                                     const flashrt_decode_args *args,
                                     const flashrt_captures *captures) {
  if (!kernel || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel or args is NULL");
  DecodeArgs launch;
  if (!toDecodeArgs(args, launch) || !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  if (llvm::Error err = kernel->impl->launchDecode(
          launch, reinterpret_cast<uint64_t>(args->workspace),
          args->workspace_bytes, static_cast<CUstream>(args->stream)))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status flashrt_decode_workspace_bytes(flashrt_kernel *kernel,
                                              const flashrt_decode_args *args,
                                              uint64_t *bytes) {
  if (!kernel || !args || !bytes)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "kernel, args or bytes is NULL");
  DecodeArgs launch;
  if (!toDecodeArgs(args, launch))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  launch.capturesUnchecked = true;
  auto needed = kernel->impl->decodeWorkspaceBytes(launch);
  if (!needed)
    return fail(needed.takeError());
  *bytes = *needed;
  return FLASHRT_OK;
}

flashrt_status flashrt_decode_num_splits(flashrt_kernel *kernel,
                                         const flashrt_decode_args *args,
                                         int32_t *splits) {
  if (!kernel || !args || !splits)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "kernel, args or splits is NULL");
  DecodeArgs launch;
  if (!toDecodeArgs(args, launch))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  launch.capturesUnchecked = true;
  auto n = kernel->impl->decodeNumSplits(launch);
  if (!n)
    return fail(n.takeError());
  *splits = int32_t(*n);
  return FLASHRT_OK;
}

flashrt_status flashrt_validate_decode(const char *metadata_path,
                                       const flashrt_decode_args *args,
                                       const flashrt_captures *captures) {
  if (!metadata_path || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "metadata_path or args is NULL");
  DecodeArgs launch;
  if (!toDecodeArgs(args, launch) || !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  auto meta = loadMetadataFile(metadata_path);
  if (!meta)
    return fail(meta.takeError());
  auto shape = validateDecodeArgs(*meta, launch);
  if (!shape)
    return fail(shape.takeError());
  return FLASHRT_OK;
}

flashrt_status flashrt_launch_backward(flashrt_kernel *kernel,
                                       const flashrt_backward_args *args) {
  return flashrt_launch_backward_with_captures(kernel, args, nullptr);
}

flashrt_status
flashrt_launch_backward_with_captures(flashrt_kernel *kernel,
                                      const flashrt_backward_args *args,
                                      const flashrt_captures *captures) {
  if (!kernel || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel or args is NULL");
  BackwardArgs launch;
  if (!toBackwardArgs(args, launch) || !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  if (llvm::Error err = kernel->impl->launchBackward(
          launch, reinterpret_cast<uint64_t>(args->workspace),
          args->workspace_bytes, static_cast<CUstream>(args->stream)))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status
flashrt_backward_workspace_bytes(flashrt_kernel *kernel,
                                 const flashrt_backward_args *args,
                                 uint64_t *bytes) {
  return flashrt_backward_workspace_bytes_with_captures(kernel, args, nullptr,
                                                        bytes);
}

flashrt_status flashrt_backward_workspace_bytes_with_captures(
    flashrt_kernel *kernel, const flashrt_backward_args *args,
    const flashrt_captures *captures, uint64_t *bytes) {
  if (!kernel || !args || !bytes)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "kernel, args or bytes is NULL");
  BackwardArgs launch;
  if (!toBackwardArgs(args, launch) || !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  auto needed = kernel->impl->backwardWorkspaceBytes(launch);
  if (!needed)
    return fail(needed.takeError());
  *bytes = *needed;
  return FLASHRT_OK;
}

flashrt_status flashrt_launch(flashrt_kernel *kernel, const flashrt_tensor *q,
                              const flashrt_tensor *k, const flashrt_tensor *v,
                              const flashrt_tensor *o,
                              const flashrt_tensor *lse, void *stream) {
  if (!kernel)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel is NULL");
  LaunchArgs args;
  if (!toArgs(q, k, v, o, lse, args))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  if (llvm::Error err =
          kernel->impl->launch(args, static_cast<CUstream>(stream)))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status flashrt_launch_packed(flashrt_kernel *kernel,
                                     const flashrt_launch_args *args) {
  if (!args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "args is NULL");
  return flashrt_launch(kernel, args->q, args->k, args->v, args->o, args->lse,
                        args->stream);
}

flashrt_status flashrt_launch_with_captures(flashrt_kernel *kernel,
                                            const flashrt_launch_args *args,
                                            const flashrt_captures *captures) {
  if (!kernel || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel or args is NULL");
  LaunchArgs launch;
  if (!toArgs(args->q, args->k, args->v, args->o, args->lse, launch) ||
      !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  if (llvm::Error err =
          kernel->impl->launch(launch, static_cast<CUstream>(args->stream)))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status
flashrt_validate_with_captures(const char *metadata_path,
                               const flashrt_launch_args *args,
                               const flashrt_captures *captures) {
  if (!metadata_path || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "metadata_path or args is NULL");
  LaunchArgs launch;
  if (!toArgs(args->q, args->k, args->v, args->o, args->lse, launch) ||
      !toCaptures(captures, launch.captures))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  return validateFile(metadata_path, launch);
}

flashrt_status flashrt_launch_varlen(flashrt_kernel *kernel,
                                     const flashrt_varlen_args *args) {
  if (!kernel || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "kernel or args is NULL");
  LaunchArgs launch;
  if (!toVarlenArgs(args, launch))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  if (llvm::Error err =
          kernel->impl->launch(launch, static_cast<CUstream>(args->stream)))
    return fail(std::move(err));
  return FLASHRT_OK;
}

flashrt_status flashrt_validate_varlen(const char *metadata_path,
                                       const flashrt_varlen_args *args) {
  if (!metadata_path || !args)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT,
                "metadata_path or args is NULL");
  LaunchArgs launch;
  if (!toVarlenArgs(args, launch))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  return validateFile(metadata_path, launch);
}

flashrt_status
flashrt_validate(const char *metadata_path, const flashrt_tensor *q,
                 const flashrt_tensor *k, const flashrt_tensor *v,
                 const flashrt_tensor *o, const flashrt_tensor *lse) {
  if (!metadata_path)
    return fail(FLASHRT_ERROR_INVALID_ARGUMENT, "metadata_path is NULL");
  LaunchArgs args;
  if (!toArgs(q, k, v, o, lse, args))
    return FLASHRT_ERROR_INVALID_ARGUMENT;
  return validateFile(metadata_path, args);
}

} // extern "C"

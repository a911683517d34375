//===- Kernel.cpp - Load and launch a flashc kernel -----------------------===//
//
// Load: metadata -> binary checks -> device/arch check -> module, function,
// shared-memory opt-in and parameter-layout check. Launch: pure validation,
// pointer checks through the driver, TMA encoding, cuLaunchKernel(Ex).
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Kernel.h"
#include "flashc/Runtime/BinaryCheck.h"
#include "flashc/Runtime/ParamPacking.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace flashc::rt {

std::string metadataPathFor(StringRef path) {
  if (path.ends_with(".json"))
    return path.str();
  SmallString<256> p(path);
  sys::path::replace_extension(p, ".json");
  return std::string(p);
}

static Expected<std::unique_ptr<MemoryBuffer>> readFile(StringRef path,
                                                        StringRef what) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/true);
  if (!buf)
    return makeError(ErrorCode::IO, formatv("cannot read {0} '{1}': {2}", what,
                                            path, buf.getError().message()));
  return std::move(*buf);
}

Expected<KernelMetadata> loadMetadataFile(StringRef path) {
  std::string jsonPath = metadataPathFor(path);
  auto buf = readFile(jsonPath, "kernel metadata");
  if (!buf)
    return buf.takeError();
  auto meta = parseKernelMetadata((*buf)->getBuffer());
  if (!meta) {
    std::string msg;
    int code = takeErrorMessage(meta.takeError(), msg);
    return makeError(ErrorCode(code), jsonPath + ": " + msg);
  }
  return meta;
}

Expected<std::unique_ptr<Kernel>> Kernel::load(StringRef path, int ordinal) {
  auto meta = loadMetadataFile(path);
  if (!meta)
    return meta.takeError();
  // The binary the metadata names, next to the metadata file.
  SmallString<256> binPath(sys::path::parent_path(metadataPathFor(path)));
  sys::path::append(binPath, meta->binary);
  if (!path.ends_with(".json") &&
      sys::path::filename(path) != sys::path::filename(binPath))
    return makeError(ErrorCode::InvalidKernel,
                     formatv("{0}: metadata names binary '{1}', not '{2}'",
                             metadataPathFor(path), meta->binary,
                             sys::path::filename(path)));
  auto bin = readFile(binPath, "kernel binary");
  if (!bin)
    return bin.takeError();
  StringRef bytes = (*bin)->getBuffer();
  if (Error err = checkBinary(*meta, bytes)) {
    std::string msg;
    int code = takeErrorMessage(std::move(err), msg);
    return makeError(ErrorCode(code), binPath + ": " + msg);
  }

  auto info = getDeviceInfo(ordinal);
  if (!info)
    return info.takeError();
  if (Error err = checkArchRunsOn(meta->arch, meta->binaryFormat, info->ccMajor,
                                  info->ccMinor)) {
    std::string msg;
    takeErrorMessage(std::move(err), msg);
    return makeError(ErrorCode::NoDevice, binPath + ": " + msg + " (device " +
                                              Twine(ordinal) + ": " +
                                              info->name + ")");
  }
  if (meta->sharedMemoryBytes > unsigned(info->maxSharedOptin))
    return makeError(ErrorCode::NoDevice,
                     formatv("kernel needs {0} bytes of shared memory; {1} "
                             "allows {2}",
                             meta->sharedMemoryBytes, info->name,
                             info->maxSharedOptin));
  auto ctx = PrimaryContext::retain(*info);
  if (!ctx)
    return ctx.takeError();
  const DriverApi &cu = **getDriver();
  std::unique_ptr<Kernel> kernel(
      new Kernel(std::move(*meta), std::move(*info), std::move(*ctx)));
  const KernelMetadata &m = kernel->meta;
  ScopedContext scope(kernel->getContext());

  // PTX must be NUL-terminated; the buffer is.
  if (Error err = checkCu(cu.cuModuleLoadDataEx(&kernel->module, bytes.data(),
                                                0, nullptr, nullptr),
                          "cuModuleLoadData(" + binPath.str() + ")",
                          ErrorCode::InvalidKernel))
    return std::move(err);
  if (Error err = checkCu(
          cu.cuModuleGetFunction(&kernel->function, kernel->module,
                                 m.kernel.c_str()),
          "cuModuleGetFunction(" + m.kernel + ")", ErrorCode::InvalidKernel))
    return std::move(err);

  int maxThreads = 0;
  if (Error err =
          checkCu(cu.cuFuncGetAttribute(&maxThreads,
                                        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                        kernel->function),
                  "cuFuncGetAttribute"))
    return std::move(err);
  unsigned threads = m.block[0] * m.block[1] * m.block[2];
  if (threads > unsigned(maxThreads))
    return makeError(ErrorCode::InvalidKernel,
                     formatv("metadata block has {0} threads but kernel {1} "
                             "can run at most {2} per block (registers)",
                             threads, m.kernel, maxThreads));
  if (m.sharedMemoryBytes > 48 * 1024)
    if (Error err =
            checkCu(cu.cuFuncSetAttribute(
                        kernel->function,
                        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        int(m.sharedMemoryBytes)),
                    "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))
      return std::move(err);

  // The parameter layout the binary declares must be the metadata's. For a
  // cubin checkBinary already compared it offline (.nv.info); for PTX ask
  // the driver, for the listed parameters only (probing past the last one
  // is an API error that sanitizers report), so extra trailing parameters
  // of a PTX kernel go unnoticed.
  if (cu.cuFuncGetParamInfo && m.binaryFormat == BinaryFormat::Ptx) {
    SmallVector<unsigned, 32> want = m.paramSizes(), have;
    for (unsigned i = 0; i < want.size(); ++i) {
      size_t offset = 0, size = 0;
      if (cu.cuFuncGetParamInfo(kernel->function, i, &offset, &size) !=
          CUDA_SUCCESS)
        break;
      have.push_back(unsigned(size));
    }
    if (Error err = checkParamSizes(m, have))
      return std::move(err);
  }
  // A backward or decoding kernel's launches: their functions, and the
  // shared memory each opts in to.
  for (const LaunchSpec &launch : m.launches) {
    CUfunction fn = nullptr;
    if (Error err = checkCu(
            cu.cuModuleGetFunction(&fn, kernel->module, launch.kernel.c_str()),
            "cuModuleGetFunction(" + launch.kernel + ")",
            ErrorCode::InvalidKernel))
      return std::move(err);
    if (launch.sharedMemoryBytes > unsigned(kernel->device.maxSharedOptin))
      return makeError(ErrorCode::NoDevice,
                       formatv("launch {0} needs {1} bytes of shared memory; "
                               "{2} allows {3}",
                               launch.kernel, launch.sharedMemoryBytes,
                               kernel->device.name,
                               kernel->device.maxSharedOptin));
    if (launch.sharedMemoryBytes > 48 * 1024)
      if (Error err =
              checkCu(cu.cuFuncSetAttribute(
                          fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          int(launch.sharedMemoryBytes)),
                      "cuFuncSetAttribute(" + launch.kernel + ")"))
        return std::move(err);
    kernel->launchFunctions.push_back(fn);
  }
  if (m.cluster[0] * m.cluster[1] * m.cluster[2] > 1 && !cu.cuLaunchKernelEx)
    return makeError(ErrorCode::NoDriver,
                     "kernel uses clusters but the CUDA driver has no "
                     "cuLaunchKernelEx (driver too old)");
  for (const ParamSpec &p : m.params) {
    if (p.isTma() && !cu.cuTensorMapEncodeTiled)
      return makeError(ErrorCode::NoDriver,
                       "kernel uses TMA but the CUDA driver has no "
                       "cuTensorMapEncodeTiled (driver too old)");
    if (p.kind == ParamSpec::Kind::TmaPtr)
      ++kernel->numTmaPtrParams;
    if (p.kind == ParamSpec::Kind::TileCounter)
      kernel->hasTileCounter = true;
  }
  if (kernel->numTmaPtrParams || kernel->hasTileCounter)
    if (Error err = checkCu(
            cu.cuStreamCreate(&kernel->copyStream, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate(private copies)"))
      return std::move(err);
  return std::move(kernel);
}

Kernel::~Kernel() {
  if (!module && !copyStream)
    return;
  auto drv = getDriver();
  if (!drv) {
    llvm::consumeError(drv.takeError());
    return;
  }
  const DriverApi &cu = **drv;
  ScopedContext scope(getContext());
  if (tmaPtrs.size() || !tileCounters.empty()) {
    // Launches still in flight may read the tensor maps and counters;
    // unloading waits for them (the module itself must not be in use
    // either).
    cu.cuCtxSynchronize();
    tmaPtrs.clear([&](uint64_t ptr) { cu.cuMemFree(CUdeviceptr(ptr)); });
    for (const auto &entry : tileCounters)
      cu.cuMemFree(CUdeviceptr(entry.second));
  }
  if (copyStream)
    cu.cuStreamDestroy(copyStream);
  if (module)
    cu.cuModuleUnload(module);
}

Error Kernel::checkPointer(StringRef name, const TensorArg &t) {
  if (!t.present())
    return Error::success();
  const DriverApi &cu = **getDriver();
  int ordinal = -1;
  CUresult r = cu.cuPointerGetAttribute(
      &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CUdeviceptr(t.data));
  if (r != CUDA_SUCCESS)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  {0} data pointer "
                             "{1:x} is not memory the CUDA driver knows "
                             "(host memory?)",
                             name, t.data));
  if (ordinal != device.ordinal)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  {0} lives on "
                             "device {1} but the kernel was loaded on "
                             "device {2}",
                             name, ordinal, device.ordinal));
  return Error::success();
}

Error Kernel::checkPointers(const LaunchArgs &args) {
  for (unsigned i = 0; i < kNumTensors; ++i)
    if (Error err = checkPointer(tensorName(TensorId(i)), args.tensors[i]))
      return err;
  if (Error err = checkPointer("cu_seqlens_q", args.cuSeqlensQ))
    return err;
  if (Error err = checkPointer("cu_seqlens_k", args.cuSeqlensK))
    return err;
  return checkCapturePointers(args.captures);
}

Error Kernel::checkCapturePointers(ArrayRef<TensorArg> captures) {
  for (auto [i, capture] : llvm::enumerate(captures))
    if (Error err = checkPointer(formatv("capture {0}", i).str(), capture))
      return err;
  return Error::success();
}

static CUtensorMapDataType tmaType(DType t) {
  switch (t) {
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

static CUtensorMapSwizzle tmaSwizzle(unsigned bytes) {
  switch (bytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  default:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

/// One cuTensorMapEncodeTiled with what every flashc map shares (no
/// interleave, 256-byte L2 promotion, no OOB fill, element strides 1);
/// dims, strides and box innermost first. `call` names it in errors.
static Error encodeTiled(void *out, DType dtype, unsigned rank, uint64_t base,
                         const cuuint64_t *dims, const cuuint64_t *strides,
                         const cuuint32_t *box, unsigned swizzle,
                         const Twine &call) {
  static_assert(sizeof(CUtensorMap) == kTmaDescriptorBytes &&
                    alignof(CUtensorMap) >= 64,
                "CUtensorMap is 128 bytes, 64-byte aligned");
  const cuuint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  return checkCu((*getDriver())->cuTensorMapEncodeTiled(
                     static_cast<CUtensorMap *>(out), tmaType(dtype), rank,
                     reinterpret_cast<void *>(base), dims, strides, box,
                     elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     tmaSwizzle(swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 call, ErrorCode::InvalidArgument);
}

Error Kernel::encodeTensorMap(const TensorMapRequest &r, void *out) {
  cuuint64_t dims[4] = {r.dims[0], r.dims[1], r.dims[2], r.dims[3]};
  cuuint64_t strides[3] = {r.strideBytes[0], r.strideBytes[1],
                           r.strideBytes[2]};
  cuuint32_t box[4] = {r.box[0], r.box[1], r.box[2], r.box[3]};
  return encodeTiled(out, r.dtype, r.rank, r.base, dims, strides, box,
                     r.swizzle,
                     "cuTensorMapEncodeTiled(" + tensorName(r.tensor) + ", " +
                         Twine(r.rank) + "-D)");
}

Expected<uint64_t> Kernel::createTmaPtr(const TensorMapRequest &r) {
  CUtensorMap map;
  if (Error err = encodeTensorMap(r, &map))
    return std::move(err);
  // cuMemAlloc aligns to at least 256 bytes; the kernel needs 64.
  return copyToNewAllocation(&map, sizeof(CUtensorMap), /*align=*/64,
                             "tensor map of " + tensorName(r.tensor));
}

Expected<uint64_t> Kernel::copyToNewAllocation(const void *data, size_t bytes,
                                               size_t align,
                                               const Twine &what) {
  const DriverApi &cu = **getDriver();
  CUdeviceptr ptr = 0;
  if (Error err =
          checkCu(cu.cuMemAlloc(&ptr, bytes), "cuMemAlloc(" + what.str() + ")"))
    return std::move(err);
  if (ptr % align) {
    cu.cuMemFree(ptr);
    return makeError(ErrorCode::Cuda,
                     formatv("cuMemAlloc returned {0:x}, not {1}-byte aligned",
                             uint64_t(ptr), align));
  }
  // A plain cuMemcpyHtoD from pageable memory may return before the DMA
  // lands, ordered only with the legacy default stream; a launch on a
  // non-blocking stream (PyTorch's) could then read a half-written copy,
  // and so could a later launch on any stream that uses it. Copying on a
  // private stream and waiting for it makes the allocation complete before
  // it is ever handed out, whatever stream uses it.
  Error err = checkCu(cu.cuMemcpyHtoDAsync(ptr, data, bytes, copyStream),
                      "cuMemcpyHtoDAsync(" + what.str() + ")");
  if (!err)
    err = checkCu(cu.cuStreamSynchronize(copyStream),
                  "cuStreamSynchronize(copy of " + what.str() + ")");
  if (err) {
    cu.cuMemFree(ptr);
    return std::move(err);
  }
  return uint64_t(ptr);
}

Error Kernel::evictTmaPtrs() {
  const DriverApi &cu = **getDriver();
  // Kernels already submitted, on any stream of any thread, may still read
  // any entry, and we keep no per-entry record of where it was used (that
  // would need an event per launch). The only moment every entry is
  // provably unused is when the whole context is idle, so wait for that and
  // free them all at once. This happens once per kTmaPtrCacheCapacity new
  // (pointer, shape, stride) combinations, so the stall is amortised; the
  // cap exists so a caller who never repeats a tensor does not leak device
  // memory without bound.
  if (Error err = checkCu(cu.cuCtxSynchronize(),
                          "cuCtxSynchronize(before freeing tensor maps)"))
    return err;
  tmaPtrs.clear([&](uint64_t ptr) { cu.cuMemFree(CUdeviceptr(ptr)); });
  return Error::success();
}

Expected<uint64_t> Kernel::tileCounterFor(CUstream stream) {
  auto it = tileCounters.find(stream);
  if (it != tileCounters.end())
    return it->second;
  // Zeroed like a tensor map is copied, so the first launch on `stream`
  // cannot overtake it.
  static const uint32_t zero = 0;
  Expected<uint64_t> ptr = copyToNewAllocation(
      &zero, sizeof(zero), alignof(uint32_t), "tile counter");
  if (ptr)
    tileCounters.emplace(stream, *ptr);
  return ptr;
}

size_t Kernel::numCachedTmaPtrs() {
  std::lock_guard<std::mutex> lock(launchMutex);
  return tmaPtrs.size();
}

Expected<uint64_t> Kernel::backwardWorkspaceBytes(const BackwardArgs &args) {
  auto shape = validateBackwardArgs(meta, args, device.ordinal);
  if (!shape)
    return shape.takeError();
  return backwardWorkspaceLayout(meta, *shape).bytes;
}

/// cuLaunchKernelEx of `fn` with the one launch attribute `attr`.
static CUresult launchWithAttribute(const DriverApi &cu, CUfunction fn,
                                    const unsigned grid[3],
                                    const unsigned block[3],
                                    unsigned sharedMemoryBytes, CUstream stream,
                                    const CUlaunchAttribute &attr,
                                    void **params) {
  CUlaunchConfig config = {};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block[0];
  config.blockDimY = block[1];
  config.blockDimZ = block[2];
  config.sharedMemBytes = sharedMemoryBytes;
  config.hStream = stream;
  CUlaunchAttribute copy = attr;
  config.attrs = &copy;
  config.numAttrs = 1;
  return cu.cuLaunchKernelEx(&config, fn, params, nullptr);
}

/// Runs `launches` (the loaded `functions`) in order on `stream`, each with
/// its grid from `gridOf` (false: nothing to launch) and its parameters
/// from `pack`, in the workspace at `workspace`; where that is 0 and the
/// launches need `bytes`, in an allocation on `stream` freed after them.
/// `pass` ("backward", "decoding") names the launches in messages.
static Error runWorkspaceLaunches(
    const DriverApi &cu, ArrayRef<LaunchSpec> launches,
    ArrayRef<CUfunction> functions, uint64_t workspace, uint64_t bytes,
    StringRef pass, CUstream stream,
    function_ref<bool(const LaunchSpec &, unsigned grid[3])> gridOf,
    function_ref<Expected<std::unique_ptr<ParamBuffer>>(const LaunchSpec &,
                                                        uint64_t workspace)>
        pack) {
  CUdeviceptr owned = 0;
  if (!workspace && bytes) {
    if (!cu.cuMemAllocAsync || !cu.cuMemFreeAsync)
      return makeError(ErrorCode::NoDriver,
                       "the CUDA driver has no cuMemAllocAsync: pass the " +
                           pass + " launches a workspace");
    if (Error err = checkCu(cu.cuMemAllocAsync(&owned, bytes, stream),
                            "cuMemAllocAsync(" + pass + " workspace)"))
      return err;
    workspace = uint64_t(owned);
  }
  Error result = Error::success();
  for (auto [launch, fn] : llvm::zip_equal(launches, functions)) {
    unsigned grid[3];
    if (!gridOf(launch, grid))
      continue;
    auto params = pack(launch, workspace);
    if (!params) {
      result = params.takeError();
      break;
    }
    // A programmatic dependent waits for the previous launch itself
    // (griddepcontrol.wait): a driver without cuLaunchKernelEx launches it
    // in stream order, the wait then returning at once.
    CUresult launched;
    if (launch.programmatic && cu.cuLaunchKernelEx) {
      CUlaunchAttribute attr = {};
      attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr.value.programmaticStreamSerializationAllowed = 1;
      launched = launchWithAttribute(cu, fn, grid, launch.block,
                                     launch.sharedMemoryBytes, stream, attr,
                                     (*params)->pointers());
    } else {
      launched = cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2],
                                   launch.block[0], launch.block[1],
                                   launch.block[2], launch.sharedMemoryBytes,
                                   stream, (*params)->pointers(), nullptr);
    }
    if (Error err =
            checkCu(launched, "cuLaunchKernel(" + launch.kernel + ")")) {
      result = std::move(err);
      break;
    }
  }
  if (owned)
    if (Error err = checkCu(cu.cuMemFreeAsync(owned, stream),
                            "cuMemFreeAsync(" + pass + " workspace)"))
      result = joinErrors(std::move(result), std::move(err));
  return result;
}

Error Kernel::launchBackward(const BackwardArgs &args, uint64_t workspace,
                             uint64_t workspaceBytes, CUstream stream) {
  auto shape = validateBackwardArgs(meta, args, device.ordinal);
  if (!shape)
    return shape.takeError();
  WorkspaceLayout layout = backwardWorkspaceLayout(meta, *shape);
  if (workspace && (workspaceBytes < layout.bytes || workspace % 256))
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  workspace of {0} "
                             "bytes at {1:x}: the launches need {2} bytes, "
                             "256-byte aligned",
                             workspaceBytes, workspace, layout.bytes));
  ScopedContext scope(getContext());
  const DriverApi &cu = **getDriver();
  for (unsigned i = 0; i < kNumBackwardTensors; ++i)
    if (Error err = checkPointer(tensorName(TensorId(i)), args.tensors[i]))
      return err;
  if (Error err = checkCapturePointers(args.captures))
    return err;
  auto encode = [&](const TensorMapRequest &r, void *out) {
    return encodeTensorMap(r, out);
  };
  return runWorkspaceLaunches(
      cu, meta.launches, launchFunctions, workspace, layout.bytes, "backward",
      stream,
      [&](const LaunchSpec &launch, unsigned grid[3]) {
        backwardGrid(launch, *shape, grid);
        return grid[0] && grid[1];
      },
      [&](const LaunchSpec &launch, uint64_t workspace) {
        return packBackwardParams(meta, launch, args, *shape, workspace,
                                  encode);
      });
}

Expected<uint64_t> Kernel::decodeWorkspaceBytes(const DecodeArgs &args) {
  auto shape = validateDecodeArgs(meta, args, device.numSMs, device.ordinal);
  if (!shape)
    return shape.takeError();
  return decodeWorkspaceLayout(meta, *shape).bytes;
}

Expected<int64_t> Kernel::decodeNumSplits(const DecodeArgs &args) {
  auto shape = validateDecodeArgs(meta, args, device.numSMs, device.ordinal);
  if (!shape)
    return shape.takeError();
  return shape->numSplits;
}

Error Kernel::launchDecode(const DecodeArgs &args, uint64_t workspace,
                           uint64_t workspaceBytes, CUstream stream) {
  auto shape = validateDecodeArgs(meta, args, device.numSMs, device.ordinal);
  if (!shape)
    return shape.takeError();
  WorkspaceLayout layout = decodeWorkspaceLayout(meta, *shape);
  if (workspace && workspaceBytes < layout.bytes)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  workspace is {0} "
                             "bytes; this call needs {1} ({2} splits)",
                             workspaceBytes, layout.bytes, shape->numSplits));
  if (workspace % 256)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  workspace at {0:x} "
                             "is not 256-byte aligned",
                             workspace));
  ScopedContext scope(getContext());
  const DriverApi &cu = **getDriver();
  for (TensorId id :
       {TensorId::Q, TensorId::K, TensorId::V, TensorId::O, TensorId::LSE,
        TensorId::PageTable, TensorId::CacheSeqlens}) {
    StringRef name = id == TensorId::K   ? "k_cache"
                     : id == TensorId::V ? "v_cache"
                                         : tensorName(id);
    if (Error err = checkPointer(name, args[id]))
      return err;
  }
  if (Error err = checkCapturePointers(args.captures))
    return err;
  auto encode = [&](const TensorMapRequest &r, void *out) {
    return encodeTensorMap(r, out);
  };
  return runWorkspaceLaunches(
      cu, meta.launches, launchFunctions, workspace, layout.bytes, "decoding",
      stream,
      // Both launches, in order: validation refused every empty problem.
      [&](const LaunchSpec &launch, unsigned grid[3]) {
        decodeGrid(meta, launch, *shape, grid);
        return true;
      },
      [&](const LaunchSpec &launch, uint64_t workspace) {
        return packDecodeParams(meta, launch, args, *shape, workspace, encode);
      });
}

Error Kernel::launch(const LaunchArgs &args, CUstream stream) {
  if (meta.backward)
    return makeError(ErrorCode::InvalidArgument,
                     "kernel " + meta.kernel +
                         " is a backward pass: launch it with its gradients "
                         "(flashrt_launch_backward)");
  auto shape = validateLaunchArgs(meta, args, device.ordinal);
  if (!shape)
    return shape.takeError();
  unsigned grid[3];
  if (Error err = computeGrid(meta, *shape, device.numSMs, grid))
    return err;
  // Packed sequences that are all empty: nothing to compute, and no rows to
  // encode tensor maps over (nor memory behind an empty tensor's address).
  if (meta.packed() &&
      (grid[0] == 0 || grid[1] == 0 || shape->seqQ == 0 || shape->seqK == 0))
    return Error::success();
  ScopedContext scope(getContext());
  if (Error err = checkPointers(args))
    return err;
  const DriverApi &cu = **getDriver();

  auto encode = [&](const TmaRequest &r, void *out) -> Error {
    cuuint64_t dims[2] = {r.cols, r.rows};
    cuuint64_t strides[1] = {r.rowStrideBytes};
    cuuint32_t box[2] = {r.boxCols, r.boxRows};
    return encodeTiled(out, r.dtype, 2, r.base, dims, strides, box, r.swizzle,
                       "cuTensorMapEncodeTiled(" + tensorName(r.tensor) + ")");
  };
  // Held until the launch is submitted: the tensor maps it packs must not
  // be freed by another thread's eviction before then.
  std::lock_guard<std::mutex> lock(launchMutex);
  // Make room first, never while packing: an eviction between two tma_ptr
  // parameters would free the first one's map.
  if (numTmaPtrParams && tmaPtrs.wouldOverflow(numTmaPtrParams))
    if (Error err = evictTmaPtrs())
      return err;
  auto provide = [&](const TensorMapRequest &r) -> Expected<uint64_t> {
    return tmaPtrs.get(
        r, [&](const TensorMapRequest &miss) { return createTmaPtr(miss); });
  };
  auto counter = [&] { return tileCounterFor(stream); };
  auto encode3d = [&](const TensorMapRequest &r, void *out) {
    return encodeTensorMap(r, out);
  };
  auto params =
      packParams(meta, args, *shape, encode, provide, counter, encode3d);
  if (!params)
    return params.takeError();

  unsigned clusterSize = meta.cluster[0] * meta.cluster[1] * meta.cluster[2];
  if (clusterSize <= 1)
    return checkCu(cu.cuLaunchKernel(function, grid[0], grid[1], grid[2],
                                     meta.block[0], meta.block[1],
                                     meta.block[2], meta.sharedMemoryBytes,
                                     stream, (*params)->pointers(), nullptr),
                   "cuLaunchKernel(" + meta.kernel + ")");
  CUlaunchAttribute attr = {};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = meta.cluster[0];
  attr.value.clusterDim.y = meta.cluster[1];
  attr.value.clusterDim.z = meta.cluster[2];
  return checkCu(launchWithAttribute(cu, function, grid, meta.block,
                                     meta.sharedMemoryBytes, stream, attr,
                                     (*params)->pointers()),
                 "cuLaunchKernelEx(" + meta.kernel + ")");
}

} // namespace flashc::rt

//===- ParamPacking.cpp - Kernel parameter buffer from metadata -----------===//
//
// Lays out every parameter the metadata lists (memrefs expanded, CUtensorMap
// 64-byte aligned) in one buffer and builds the pointer array for
// cuLaunchKernel.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/ParamPacking.h"
#include "flashc/Runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>

using namespace llvm;

namespace flashc::rt {

std::unique_ptr<ParamBuffer> ParamBuffer::allocate(ArrayRef<unsigned> sizes) {
  // Offsets: each parameter aligned to its size (16-byte cap), TMA to 64.
  SmallVector<size_t, 32> offsets;
  size_t total = 0;
  for (unsigned s : sizes) {
    size_t align = s == kTmaDescriptorBytes ? 64 : std::min(s, 16u);
    total = alignTo(total, align);
    offsets.push_back(total);
    total += s;
  }
  auto buf = std::make_unique<ParamBuffer>();
  // Over-allocate so the base can be 64-byte aligned.
  buf->storage = std::make_unique<uint8_t[]>(total + 64);
  uint8_t *base = reinterpret_cast<uint8_t *>(
      alignTo(reinterpret_cast<uintptr_t>(buf->storage.get()), 64));
  std::memset(base, 0, total);
  for (unsigned i = 0; i < sizes.size(); ++i) {
    buf->pointerArray.push_back(base + offsets[i]);
    buf->sizes.push_back(sizes[i]);
  }
  return buf;
}

unsigned putMemrefDescriptor(ParamBuffer &buf, unsigned slot,
                             const TensorArg &t, unsigned rank) {
  auto put64 = [&](int64_t v) { std::memcpy(buf.slot(slot++), &v, 8); };
  put64(int64_t(t.data)); // allocated
  put64(int64_t(t.data)); // aligned
  put64(0);               // offset
  for (unsigned d = 0; d < rank; ++d)
    put64(t.sizes[d]);
  for (unsigned d = 0; d < rank; ++d)
    put64(t.strides[d]);
  return slot;
}

Expected<std::unique_ptr<ParamBuffer>>
packParams(const KernelMetadata &meta, const LaunchArgs &args,
           const ProblemShape &shape, TmaEncoder encodeTma,
           TmaPtrProvider provideTmaPtr, TileCounterProvider provideTileCounter,
           TensorMapEncoder encodeTensorMap) {
  std::unique_ptr<ParamBuffer> buf = ParamBuffer::allocate(meta.paramSizes());
  unsigned slot = 0;
  auto put64 = [&](int64_t v) { std::memcpy(buf->slot(slot++), &v, 8); };
  auto put32 = [&](int32_t v) { std::memcpy(buf->slot(slot++), &v, 4); };
  auto putF = [&](float v) { std::memcpy(buf->slot(slot++), &v, 4); };
  auto scalar = [&](const ParamSpec &p) {
    return integerParamValue(p, shape, args[p.tensor]);
  };

  for (const ParamSpec &p : meta.params) {
    const TensorArg &t = args[p.tensor];
    switch (p.kind) {
    case ParamSpec::Kind::Ptr:
      put64(int64_t(t.data));
      break;
    case ParamSpec::Kind::Seqlens:
      put64(int64_t(p.keys ? args.cuSeqlensK.data : args.cuSeqlensQ.data));
      break;
    case ParamSpec::Kind::I32:
      put32(int32_t(scalar(p)));
      break;
    case ParamSpec::Kind::I64:
      put64(scalar(p));
      break;
    case ParamSpec::Kind::F32:
      putF(p.scalar == ScalarKind::ScaleLog2 ? float(meta.scale * M_LOG2E)
                                             : float(meta.scale));
      break;
    case ParamSpec::Kind::Memref:
      slot = putMemrefDescriptor(*buf, slot, t, p.rank);
      break;
    case ParamSpec::Kind::Capture:
      slot = putMemrefDescriptor(*buf, slot, args.captures[p.capture], p.rank);
      break;
    case ParamSpec::Kind::Tma: {
      if (p.isStridedTensorMap()) {
        if (!encodeTensorMap)
          return makeError(ErrorCode::InvalidKernel,
                           formatv("kernel {0} takes a 3-D tma descriptor of "
                                   "{1} but no encoder of them was given",
                                   meta.kernel, tensorName(p.tensor)));
        if (Error err =
                encodeTensorMap(makeTensorMapRequest(p, t), buf->slot(slot++)))
          return std::move(err);
        break;
      }
      TmaRequest req;
      req.tensor = p.tensor;
      req.base = t.data;
      req.dtype = t.dtype;
      req.rows = uint64_t(t.sizes[0] * t.sizes[1] * t.sizes[2]);
      req.cols = uint64_t(t.sizes[3]);
      req.rowStrideBytes = uint64_t(t.strides[2]) * dtypeSize(t.dtype);
      req.boxRows = uint32_t(p.box[0]);
      req.boxCols = uint32_t(p.box[1]);
      req.swizzle = p.swizzle;
      if (req.rowStrideBytes >= (uint64_t(1) << 40))
        return makeError(ErrorCode::InvalidArgument,
                         formatv("{0}: row stride of {1} bytes is beyond the "
                                 "TMA limit of 2^40",
                                 tensorName(p.tensor), req.rowStrideBytes));
      if (req.rows >= (uint64_t(1) << 32))
        return makeError(ErrorCode::InvalidArgument,
                         formatv("{0}: {1} rows (B*H*N) are beyond the TMA "
                                 "limit of 2^32",
                                 tensorName(p.tensor), req.rows));
      if (Error err = encodeTma(req, buf->slot(slot++)))
        return std::move(err);
      break;
    }
    case ParamSpec::Kind::TmaPtr: {
      if (!provideTmaPtr)
        return makeError(ErrorCode::InvalidKernel,
                         formatv("kernel {0} takes a tma_ptr descriptor of "
                                 "{1} but no provider of device tensor maps "
                                 "was given",
                                 meta.kernel, tensorName(p.tensor)));
      Expected<uint64_t> ptr = provideTmaPtr(makeTensorMapRequest(p, t));
      if (!ptr)
        return ptr.takeError();
      if (*ptr % 64)
        return makeError(ErrorCode::Cuda,
                         formatv("tensor map of {0} at {1:x} is not 64-byte "
                                 "aligned",
                                 tensorName(p.tensor), *ptr));
      put64(int64_t(*ptr));
      break;
    }
    case ParamSpec::Kind::Workspace:
      return makeError(ErrorCode::InvalidKernel,
                       formatv("kernel {0}: a workspace parameter belongs to "
                               "a backward launch",
                               meta.kernel));
    case ParamSpec::Kind::TileCounter: {
      if (!provideTileCounter)
        return makeError(ErrorCode::InvalidKernel,
                         formatv("kernel {0} takes a tile counter but no "
                                 "provider of one was given",
                                 meta.kernel));
      Expected<uint64_t> ptr = provideTileCounter();
      if (!ptr)
        return ptr.takeError();
      put64(int64_t(*ptr));
      break;
    }
    }
  }
  return std::move(buf);
}

TensorMapRequest makeTensorMapRequest(const ParamSpec &p, const TensorArg &t) {
  uint64_t elem = dtypeSize(t.dtype);
  int64_t b = t.sizes[0], h = t.sizes[1], n = t.sizes[2], d = t.sizes[3];
  // Validation made every stride of a dimension longer than 1 a multiple of
  // 16 bytes (and, for rank 3, B and H mergeable); strides of size-1
  // dimensions are arbitrary there, so use the dense ones (D * elem is a
  // multiple of 16: D % 8 == 0).
  int64_t strideN = n > 1 ? t.strides[2] : d;
  TensorMapRequest r;
  r.tensor = p.tensor;
  r.base = t.data;
  r.dtype = t.dtype;
  r.rank = p.rank;
  r.dims[0] = uint64_t(d);
  r.dims[1] = uint64_t(n);
  r.strideBytes[0] = uint64_t(strideN) * elem;
  r.box[0] = uint32_t(p.box[1]);
  r.box[1] = uint32_t(p.box[0]);
  r.box[2] = 1;
  if (p.rank == 4) {
    int64_t strideH = h > 1 ? t.strides[1] : n * strideN;
    int64_t strideB = b > 1 ? t.strides[0] : h * strideH;
    r.dims[2] = uint64_t(h);
    r.dims[3] = uint64_t(b);
    r.strideBytes[1] = uint64_t(strideH) * elem;
    r.strideBytes[2] = uint64_t(strideB) * elem;
    r.box[3] = 1;
  } else {
    int64_t strideBH = h > 1   ? t.strides[1]
                       : b > 1 ? t.strides[0]
                               : n * strideN;
    r.dims[2] = uint64_t(b * h);
    r.strideBytes[1] = uint64_t(strideBH) * elem;
  }
  r.swizzle = p.swizzle;
  return r;
}

Expected<uint64_t> TmaPtrCache::get(const TensorMapRequest &r, Create create) {
  auto it = entries.find(r);
  if (it != entries.end())
    return it->second;
  Expected<uint64_t> ptr = create(r);
  if (!ptr)
    return ptr.takeError();
  entries.emplace(r, *ptr);
  return *ptr;
}

void TmaPtrCache::clear(function_ref<void(uint64_t)> release) {
  for (const auto &entry : entries)
    release(entry.second);
  entries.clear();
}

} // namespace flashc::rt

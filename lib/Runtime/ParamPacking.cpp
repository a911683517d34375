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

Expected<std::unique_ptr<ParamBuffer>> packParams(const KernelMetadata &meta,
                                                  const LaunchArgs &args,
                                                  const ProblemShape &shape,
                                                  TmaEncoder encodeTma) {
  SmallVector<unsigned, 32> sizes = meta.paramSizes();
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

  unsigned slot = 0;
  auto put64 = [&](int64_t v) { std::memcpy(base + offsets[slot++], &v, 8); };
  auto put32 = [&](int32_t v) { std::memcpy(base + offsets[slot++], &v, 4); };
  auto putF = [&](float v) { std::memcpy(base + offsets[slot++], &v, 4); };
  auto scalar = [&](const ParamSpec &p) -> int64_t {
    switch (p.scalar) {
    case ScalarKind::Batch:
      return shape.batch;
    case ScalarKind::Heads:
      return shape.heads;
    case ScalarKind::SeqQ:
      return shape.seqQ;
    case ScalarKind::SeqK:
      return shape.seqK;
    case ScalarKind::HeadDim:
      return shape.headDim;
    case ScalarKind::Stride:
      return args[p.tensor].strides[p.strideDim];
    default:
      return 0;
    }
  };

  for (const ParamSpec &p : meta.params) {
    const TensorArg &t = args[p.tensor];
    switch (p.kind) {
    case ParamSpec::Kind::Ptr:
      put64(int64_t(t.data));
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
      put64(int64_t(t.data)); // allocated
      put64(int64_t(t.data)); // aligned
      put64(0);               // offset
      for (unsigned d = 0; d < p.rank; ++d)
        put64(t.sizes[d]);
      for (unsigned d = 0; d < p.rank; ++d)
        put64(t.strides[d]);
      break;
    case ParamSpec::Kind::Tma: {
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
      if (Error err = encodeTma(req, base + offsets[slot++]))
        return std::move(err);
      break;
    }
    }
  }
  return std::move(buf);
}

} // namespace flashc::rt

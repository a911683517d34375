//===- ParamPackingTest.cpp - Kernel parameter buffer layout --------------===//
//
// The bytes handed to cuLaunchKernel for each parameter kind, checked
// without a driver (TMA through a fake encoder, tma_ptr through a fake
// provider and cache callbacks).
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/Error.h"
#include "flashc/Runtime/ParamPacking.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

template <typename T> T read(ArrayRef<uint8_t> bytes) {
  EXPECT_EQ(bytes.size(), sizeof(T));
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

Error noTma(const TmaRequest &, void *) {
  ADD_FAILURE() << "no TMA parameter expected";
  return Error::success();
}

TEST(ParamPacking, ReferenceKernelLayout) {
  KernelMetadata meta = validMetadata();
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_TRUE(bool(shape));
  auto buf = packParams(meta, args, *shape, noTma);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  ParamBuffer &b = **buf;
  ASSERT_EQ(b.size(), 23u);
  EXPECT_EQ(read<uint64_t>(b.bytes(0)), args[TensorId::Q].data);
  EXPECT_EQ(read<uint64_t>(b.bytes(4)), args[TensorId::LSE].data);
  EXPECT_EQ(read<int32_t>(b.bytes(5)), 100);           // seq_q
  EXPECT_EQ(read<int32_t>(b.bytes(6)), 77);            // seq_k
  EXPECT_EQ(read<int32_t>(b.bytes(7)), 4);             // heads
  EXPECT_EQ(read<int64_t>(b.bytes(8)), 4 * 100 * 128); // stride_q_b
  EXPECT_EQ(read<int64_t>(b.bytes(12)), 77 * 128);     // stride_k_h
  EXPECT_EQ(read<int64_t>(b.bytes(20)), 4 * 100);      // stride_lse_b
  float scaleLog2 = read<float>(b.bytes(22));
  EXPECT_FLOAT_EQ(scaleLog2, float(0.08838834764831845 * M_LOG2E));
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.pointers()[i]) %
                  std::min<size_t>(b.bytes(i).size(), 16),
              0u)
        << "parameter " << i << " misaligned";
}

TEST(ParamPacking, KvGroupIsQueryHeadsPerKvHead) {
  KernelMetadata meta = validMetadata();
  meta.params.clear();
  meta.hasLse = false;
  ParamSpec group;
  group.kind = ParamSpec::Kind::I32;
  group.scalar = ScalarKind::KvGroup;
  meta.params = {group};
  LaunchArgs args = validArgs(meta, 2, 32, 100, 77);
  ProblemShape shape{2, 32, 100, 77, 128, /*kvHeads=*/8};
  auto buf = packParams(meta, args, shape, noTma);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  EXPECT_EQ(read<int32_t>((*buf)->bytes(0)), 4);
  shape.kvHeads = 32;
  buf = packParams(meta, args, shape, noTma);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  EXPECT_EQ(read<int32_t>((*buf)->bytes(0)), 1);
}

TEST(ParamPacking, MemrefAndTma) {
  KernelMetadata meta = validMetadata();
  meta.params.clear();
  meta.hasLse = false;
  ParamSpec memref;
  memref.kind = ParamSpec::Kind::Memref;
  memref.tensor = TensorId::V;
  memref.rank = 4;
  ParamSpec i32;
  i32.kind = ParamSpec::Kind::I32;
  i32.scalar = ScalarKind::Batch;
  ParamSpec tma;
  tma.kind = ParamSpec::Kind::Tma;
  tma.tensor = TensorId::K;
  tma.box[0] = 128;
  tma.box[1] = 64;
  tma.swizzle = 128;
  meta.params = {i32, memref, tma};
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  ProblemShape shape{2, 4, 100, 77, 128};
  int calls = 0;
  auto encoder = [&](const TmaRequest &r, void *out) -> Error {
    ++calls;
    EXPECT_EQ(r.tensor, TensorId::K);
    EXPECT_EQ(r.base, args[TensorId::K].data);
    EXPECT_EQ(r.rows, uint64_t(2 * 4 * 77));
    EXPECT_EQ(r.cols, 128u);
    EXPECT_EQ(r.rowStrideBytes, 256u);
    EXPECT_EQ(r.boxRows, 128u);
    EXPECT_EQ(r.boxCols, 64u);
    EXPECT_EQ(r.swizzle, 128u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out) % 64, 0u);
    std::memset(out, 0xab, kTmaDescriptorBytes);
    return Error::success();
  };
  auto buf = packParams(meta, args, shape, encoder);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  ParamBuffer &b = **buf;
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(b.size(), 1u + 11u + 1u);
  EXPECT_EQ(read<int32_t>(b.bytes(0)), 2);
  EXPECT_EQ(read<uint64_t>(b.bytes(1)), args[TensorId::V].data); // allocated
  EXPECT_EQ(read<uint64_t>(b.bytes(2)), args[TensorId::V].data); // aligned
  EXPECT_EQ(read<int64_t>(b.bytes(3)), 0);                       // offset
  EXPECT_EQ(read<int64_t>(b.bytes(4)), 2);                       // sizes
  EXPECT_EQ(read<int64_t>(b.bytes(6)), 77);
  EXPECT_EQ(read<int64_t>(b.bytes(7)), 128);
  EXPECT_EQ(read<int64_t>(b.bytes(8)), 4 * 77 * 128); // strides
  EXPECT_EQ(read<int64_t>(b.bytes(11)), 1);
  EXPECT_EQ(b.bytes(12).size(), 128u);
  EXPECT_EQ(b.bytes(12)[0], 0xab);
}

TEST(ParamPacking, EncoderErrorPropagates) {
  KernelMetadata meta = validMetadata();
  ParamSpec tma;
  tma.kind = ParamSpec::Kind::Tma;
  tma.tensor = TensorId::Q;
  tma.box[0] = 64;
  tma.box[1] = 64;
  meta.params.push_back(tma);
  LaunchArgs args = validArgs(meta, 1, 1, 64, 64);
  ProblemShape shape{1, 1, 64, 64, 128};
  auto encoder = [](const TmaRequest &, void *) -> Error {
    return makeError(ErrorCode::InvalidArgument, "encode failed for q");
  };
  auto buf = packParams(meta, args, shape, encoder);
  ASSERT_FALSE(bool(buf));
  EXPECT_EQ(toString(buf.takeError()), "encode failed for q");
}

ParamSpec tmaPtrSpec(TensorId tensor, int64_t rows, int64_t cols,
                     unsigned swizzle) {
  ParamSpec p = tensorMapSpec(ParamSpec::Kind::TmaPtr, tensor, rows, cols, 3);
  p.swizzle = swizzle;
  return p;
}

TEST(ParamPacking, TmaPtrSlotHoldsProvidedPointer) {
  KernelMetadata meta = validMetadata();
  meta.hasLse = false;
  ParamSpec seqQ;
  seqQ.kind = ParamSpec::Kind::I32;
  seqQ.scalar = ScalarKind::SeqQ;
  meta.params = {tmaPtrSpec(TensorId::Q, 128, 64, 128),
                 tmaPtrSpec(TensorId::K, 64, 64, 128), seqQ};
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  ProblemShape shape{2, 4, 100, 77, 128};
  SmallVector<TensorMapRequest, 2> seen;
  auto provider = [&](const TensorMapRequest &r) -> Expected<uint64_t> {
    seen.push_back(r);
    return uint64_t(0x7e0000000000) + 0x100 * seen.size();
  };
  auto buf = packParams(meta, args, shape, noTma, provider);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  ParamBuffer &b = **buf;
  ASSERT_EQ(b.size(), 3u);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(b.bytes(0).size(), 8u);
  EXPECT_EQ(b.bytes(1).size(), 8u);
  EXPECT_EQ(read<uint64_t>(b.bytes(0)), 0x7e0000000100u);
  EXPECT_EQ(read<uint64_t>(b.bytes(1)), 0x7e0000000200u);
  EXPECT_EQ(read<int32_t>(b.bytes(2)), 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.pointers()[1]) % 8, 0u);

  // The request: 3-D over [B*H, N, D], innermost first.
  const TensorMapRequest &q = seen[0], &k = seen[1];
  EXPECT_EQ(q.tensor, TensorId::Q);
  EXPECT_EQ(q.base, args[TensorId::Q].data);
  EXPECT_EQ(q.dtype, DType::BF16);
  EXPECT_EQ(q.dims[0], 128u);                  // D
  EXPECT_EQ(q.dims[1], 100u);                  // Nq
  EXPECT_EQ(q.dims[2], 2u * 4);                // B*H
  EXPECT_EQ(q.strideBytes[0], 128u * 2);       // stride_n
  EXPECT_EQ(q.strideBytes[1], 100u * 128 * 2); // stride_h
  EXPECT_EQ(q.box[0], 64u);                    // cols
  EXPECT_EQ(q.box[1], 128u);                   // rows
  EXPECT_EQ(q.box[2], 1u);
  EXPECT_EQ(q.swizzle, 128u);
  EXPECT_EQ(k.tensor, TensorId::K);
  EXPECT_EQ(k.dims[1], 77u);
  EXPECT_EQ(k.box[1], 64u);
}

TEST(ParamPacking, Tma3dIsEncodedInPlace) {
  // The same [B*H, N, D] map as a tma_ptr's, by value in the parameter
  // buffer: 128 bytes, 64-byte aligned, written by the 3-D encoder.
  KernelMetadata meta = validMetadata();
  meta.hasLse = false;
  ParamSpec seqQ;
  seqQ.kind = ParamSpec::Kind::I32;
  seqQ.scalar = ScalarKind::SeqQ;
  ParamSpec q = tmaPtrSpec(TensorId::Q, 128, 64, 128);
  q.kind = ParamSpec::Kind::Tma;
  ParamSpec k = tmaPtrSpec(TensorId::K, 64, 64, 128);
  k.kind = ParamSpec::Kind::Tma;
  meta.params = {q, k, seqQ};
  EXPECT_TRUE(meta.usesStridedTensorMap(TensorId::Q));
  EXPECT_FALSE(meta.usesTma(TensorId::Q)); // not the 2-D view
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  ProblemShape shape{2, 4, 100, 77, 128};
  SmallVector<TensorMapRequest, 2> seen;
  auto encoder3d = [&](const TensorMapRequest &r, void *out) -> Error {
    seen.push_back(r);
    std::memset(out, 0xc0 + int(seen.size()), kTmaDescriptorBytes);
    return Error::success();
  };
  auto buf = packParams(meta, args, shape, noTma, {}, {}, encoder3d);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  ParamBuffer &b = **buf;
  ASSERT_EQ(b.size(), 3u);
  ASSERT_EQ(seen.size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(b.bytes(i).size(), 128u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.pointers()[i]) % 64, 0u);
    EXPECT_EQ(b.bytes(i)[0], 0xc1 + i);
    EXPECT_EQ(b.bytes(i)[127], 0xc1 + i);
  }
  EXPECT_EQ(read<int32_t>(b.bytes(2)), 100);
  EXPECT_EQ(seen[0].dims[1], 100u); // Nq
  EXPECT_EQ(seen[0].dims[2], 2u * 4);
  EXPECT_EQ(seen[0].box[1], 128u);
  EXPECT_EQ(seen[1].dims[1], 77u); // Nk

  // Without an encoder the launch is refused, naming the parameter.
  auto none = packParams(meta, args, shape, noTma);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(toString(none.takeError()).find("3-D tma descriptor of q"),
            std::string::npos);
}

TEST(ParamPacking, TileCounterSlotHoldsProvidedPointer) {
  KernelMetadata meta = validMetadata();
  meta.hasLse = false;
  ParamSpec heads;
  heads.kind = ParamSpec::Kind::I32;
  heads.scalar = ScalarKind::Heads;
  ParamSpec counter;
  counter.kind = ParamSpec::Kind::TileCounter;
  meta.params = {tmaPtrSpec(TensorId::Q, 128, 64, 128), heads, counter};
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  ProblemShape shape{2, 4, 100, 77, 128};
  auto tmaPtr = [](const TensorMapRequest &) -> Expected<uint64_t> {
    return uint64_t(0x7e0000000100);
  };
  unsigned asked = 0;
  auto provider = [&]() -> Expected<uint64_t> {
    ++asked;
    return uint64_t(0x7f0000000040);
  };
  auto buf = packParams(meta, args, shape, noTma, tmaPtr, provider);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  ParamBuffer &b = **buf;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(asked, 1u);
  EXPECT_EQ(read<int32_t>(b.bytes(1)), 4);
  EXPECT_EQ(read<uint64_t>(b.bytes(2)), 0x7f0000000040u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.pointers()[2]) % 8, 0u);

  // No provider: an error naming the kernel, not a null counter.
  auto none = packParams(meta, args, shape, noTma, tmaPtr);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(toString(none.takeError())
                .find("takes a tile counter but no "
                      "provider of one was given"),
            std::string::npos);
  // The provider's failure is the launch's.
  auto failing = [&]() -> Expected<uint64_t> {
    return makeError(ErrorCode::Cuda, "cuMemAlloc(tile counter): out of "
                                      "memory");
  };
  auto failed = packParams(meta, args, shape, noTma, tmaPtr, failing);
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(toString(failed.takeError()),
            "cuMemAlloc(tile counter): out of memory");
}

TEST(ParamPacking, TensorMapRequestOfPaddedAndSizeOneDims) {
  KernelMetadata meta = validMetadata();
  ParamSpec p = tmaPtrSpec(TensorId::K, 64, 64, 128);
  // Heads padded apart: the B*H stride is stride_h, not N * stride_n.
  LaunchArgs args = validArgs(meta, 2, 3, 10, 10);
  TensorArg &k = args[TensorId::K];
  k.strides[1] = 16 * 128;
  k.strides[0] = 3 * 16 * 128;
  TensorMapRequest r = makeTensorMapRequest(p, k);
  EXPECT_EQ(r.strideBytes[0], 256u);
  EXPECT_EQ(r.strideBytes[1], 16u * 128 * 2);
  // H == 1: B*H steps by stride_b.
  args = validArgs(meta, 5, 1, 10, 10);
  args[TensorId::K].strides[1] = 3; // meaningless for a size-1 dim
  r = makeTensorMapRequest(p, args[TensorId::K]);
  EXPECT_EQ(r.dims[2], 5u);
  EXPECT_EQ(r.strideBytes[1], 10u * 128 * 2);
  // B == H == N == 1: every stride is unused; dense ones stand in (TMA wants
  // multiples of 16 bytes).
  args = validArgs(meta, 1, 1, 1, 1);
  TensorArg &one = args[TensorId::K];
  one.strides[0] = one.strides[1] = one.strides[2] = 1;
  r = makeTensorMapRequest(p, one);
  EXPECT_EQ(r.dims[1], 1u);
  EXPECT_EQ(r.dims[2], 1u);
  EXPECT_EQ(r.strideBytes[0], 256u);
  EXPECT_EQ(r.strideBytes[1], 256u);
}

TEST(ParamPacking, Rank4TensorMapRequestKeepsEveryStride) {
  KernelMetadata meta = validMetadata();
  ParamSpec p = tensorMapSpec(ParamSpec::Kind::Tma, TensorId::Q, 128, 64, 4);
  // B x N x H x D storage: stride_n = H * D, stride_h = D, stride_b = N*H*D.
  LaunchArgs args = validArgs(meta, 2, 3, 10, 10);
  TensorArg &q = args[TensorId::Q];
  q.strides[0] = 10 * 3 * 128;
  q.strides[1] = 128;
  q.strides[2] = 3 * 128;
  TensorMapRequest r = makeTensorMapRequest(p, q);
  EXPECT_EQ(r.rank, 4u);
  EXPECT_EQ(r.dims[0], 128u);
  EXPECT_EQ(r.dims[1], 10u);
  EXPECT_EQ(r.dims[2], 3u);
  EXPECT_EQ(r.dims[3], 2u);
  EXPECT_EQ(r.strideBytes[0], 3u * 128 * 2);
  EXPECT_EQ(r.strideBytes[1], 128u * 2);
  EXPECT_EQ(r.strideBytes[2], 10u * 3 * 128 * 2);
  EXPECT_EQ(r.box[0], 64u);
  EXPECT_EQ(r.box[1], 128u);
  EXPECT_EQ(r.box[2], 1u);
  EXPECT_EQ(r.box[3], 1u);
  // Size-1 batch and heads: dense strides stand in for the unused ones.
  args = validArgs(meta, 1, 1, 10, 10);
  args[TensorId::Q].strides[0] = args[TensorId::Q].strides[1] = 1;
  r = makeTensorMapRequest(p, args[TensorId::Q]);
  EXPECT_EQ(r.strideBytes[1], 10u * 128 * 2);
  EXPECT_EQ(r.strideBytes[2], 10u * 128 * 2);
}

TEST(ParamPacking, TmaPtrNeedsProvider) {
  KernelMetadata meta = validMetadata();
  meta.params.push_back(tmaPtrSpec(TensorId::Q, 64, 64, 128));
  LaunchArgs args = validArgs(meta, 1, 1, 64, 64);
  ProblemShape shape{1, 1, 64, 64, 128};
  auto buf = packParams(meta, args, shape, noTma);
  ASSERT_FALSE(bool(buf));
  EXPECT_NE(toString(buf.takeError()).find("tma_ptr descriptor of q"),
            std::string::npos);
}

TEST(ParamPacking, TmaPtrProviderErrorAndAlignment) {
  KernelMetadata meta = validMetadata();
  meta.params.push_back(tmaPtrSpec(TensorId::V, 64, 64, 128));
  LaunchArgs args = validArgs(meta, 1, 1, 64, 64);
  ProblemShape shape{1, 1, 64, 64, 128};
  auto failing = [](const TensorMapRequest &) -> Expected<uint64_t> {
    return makeError(ErrorCode::Cuda, "cuMemAlloc failed for v");
  };
  auto buf = packParams(meta, args, shape, noTma, failing);
  ASSERT_FALSE(bool(buf));
  EXPECT_EQ(toString(buf.takeError()), "cuMemAlloc failed for v");
  auto misaligned = [](const TensorMapRequest &) -> Expected<uint64_t> {
    return uint64_t(0x7e0000000020);
  };
  buf = packParams(meta, args, shape, noTma, misaligned);
  ASSERT_FALSE(bool(buf));
  EXPECT_NE(toString(buf.takeError()).find("not 64-byte aligned"),
            std::string::npos);
}

TEST(TmaPtrCache, OneEntryPerDistinctRequest) {
  KernelMetadata meta = validMetadata();
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  TmaPtrCache cache(8);
  int creates = 0;
  auto create = [&](const TensorMapRequest &) -> Expected<uint64_t> {
    return uint64_t(0x1000) * ++creates;
  };
  ParamSpec p = tmaPtrSpec(TensorId::K, 64, 64, 128);
  TensorMapRequest r = makeTensorMapRequest(p, args[TensorId::K]);
  auto a = cache.get(r, create);
  ASSERT_TRUE(bool(a));
  auto again = cache.get(r, create);
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(*a, *again);
  EXPECT_EQ(creates, 1);
  // The tensor a request came from is not part of the key: v laid out like k
  // at k's address is the same map.
  TensorMapRequest asV = r;
  asV.tensor = TensorId::V;
  EXPECT_EQ(*cache.get(asV, create), *a);
  EXPECT_EQ(creates, 1);
  // Anything the encoding depends on is.
  TensorMapRequest other[6] = {r, r, r, r, r, r};
  other[0].base += 256;
  other[1].dims[1] += 1;
  other[2].strideBytes[1] += 16;
  other[3].swizzle = 64;
  other[4].box[1] = 128;
  other[5].dtype = DType::F16;
  for (const TensorMapRequest &o : other)
    EXPECT_NE(*cache.get(o, create), *a);
  EXPECT_EQ(creates, 7);
  EXPECT_EQ(cache.size(), 7u);
  EXPECT_FALSE(cache.wouldOverflow(1));
  EXPECT_TRUE(cache.wouldOverflow(2));
  SmallVector<uint64_t, 8> released;
  cache.clear([&](uint64_t ptr) { released.push_back(ptr); });
  EXPECT_EQ(released.size(), 7u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(*cache.get(r, create), uint64_t(0x8000)); // made anew
}

TEST(TmaPtrCache, FailedCreateKeepsNothing) {
  TmaPtrCache cache;
  TensorMapRequest r;
  auto failing = [](const TensorMapRequest &) -> Expected<uint64_t> {
    return makeError(ErrorCode::Cuda, "out of memory");
  };
  auto ptr = cache.get(r, failing);
  ASSERT_FALSE(bool(ptr));
  consumeError(ptr.takeError());
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.wouldOverflow(kTmaPtrCacheCapacity));
  EXPECT_TRUE(cache.wouldOverflow(kTmaPtrCacheCapacity + 1));
}

} // namespace

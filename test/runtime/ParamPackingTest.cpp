//===- ParamPackingTest.cpp - Kernel parameter buffer layout --------------===//
//
// The bytes handed to cuLaunchKernel for each parameter kind, checked
// without a driver (TMA through a fake encoder).
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

} // namespace

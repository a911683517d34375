//===- CapturesTest.cpp - kernels that take captures, without a GPU -------===//
//
// kernel.json's "captures" (the score and mask mods' memrefs, the
// attention sinks, the backward's dsinks: test/Conversion/
// flash-to-gpu-captures.mlir has what flashc writes), the checks of the
// tensors a call passes for them and their memref descriptors' bytes.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/ParamPacking.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

/// The fixture with an f32 rank-1 capture (ALiBi's slopes) and an i32
/// rank-2 one (document ids), or the sinks, as memref parameters at the end.
json::Object capturesJson(bool sinks = false) {
  json::Object m = validMetadataJson();
  json::Array captures, *params = m.getArray("params");
  if (sinks) {
    captures.push_back(
        json::Object{{"role", "sinks"}, {"dtype", "f32"}, {"rank", 1}});
  } else {
    captures.push_back(
        json::Object{{"role", "capture"}, {"dtype", "f32"}, {"rank", 1}});
    captures.push_back(json::Object{{"role", "capture"},
                                    {"dtype", "i32"},
                                    {"rank", 2},
                                    {"shape", json::Array{-1, 100}}});
  }
  for (size_t i = 0; i < captures.size(); ++i)
    params->push_back(
        json::Object{{"kind", "memref"},
                     {"capture", int64_t(i)},
                     {"rank", *captures[i].getAsObject()->getInteger("rank")}});
  m["captures"] = std::move(captures);
  return m;
}

KernelMetadata parse(const json::Object &m) {
  auto meta = parseKernelMetadata(toText(m));
  EXPECT_TRUE(bool(meta)) << toString(meta.takeError());
  return meta ? std::move(*meta) : KernelMetadata();
}

std::string parseError(const json::Object &m) {
  auto meta = parseKernelMetadata(toText(m));
  return meta ? "<ok>" : toString(meta.takeError());
}

TensorArg dense(DType dtype, std::initializer_list<int64_t> sizes,
                uint64_t data) {
  TensorArg t;
  t.data = data;
  t.dtype = dtype;
  t.rank = unsigned(sizes.size());
  std::copy(sizes.begin(), sizes.end(), t.sizes);
  int64_t stride = 1;
  for (int d = int(t.rank) - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.sizes[d];
  }
  return t;
}

std::string validationError(const KernelMetadata &meta,
                            const LaunchArgs &args) {
  auto shape = validateLaunchArgs(meta, args);
  return shape ? "<ok>" : toString(shape.takeError());
}

TEST(Captures, MetadataParses) {
  KernelMetadata m = parse(capturesJson());
  ASSERT_EQ(m.captures.size(), 2u);
  EXPECT_EQ(m.captures[1].dtype, DType::I32);
  EXPECT_EQ(m.captures[1].rank, 2u);
  const ParamSpec &last = m.params.back();
  EXPECT_EQ(last.kind, ParamSpec::Kind::Capture);
  EXPECT_EQ(last.capture, 1u);
  // Each memref expands to allocated, aligned, offset, sizes, strides.
  KernelMetadata plain = validMetadata();
  EXPECT_EQ(m.paramSizes().size(), plain.paramSizes().size() + 5 + 7);
  EXPECT_EQ(parse(capturesJson(true)).findCapture(CaptureRole::Sinks), 0u);
}

TEST(Captures, MetadataErrorsNameTheField) {
  auto broken = [](auto edit) {
    json::Object m = capturesJson();
    edit(m);
    return parseError(m);
  };
  auto captureAt = [](json::Object &m, unsigned i) {
    return (*m.getArray("captures"))[i].getAsObject();
  };
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 0))["role"] = "bias";
            }).find("captures[0].role: must be \"capture\""),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 1))["dtype"] = "i64";
            }).find("captures[1].dtype"),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 1))["rank"] = 5;
            }).find("captures[1].rank: must be 1 to 4, got 5"),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 1))["shape"] = json::Array{-1};
            }).find("captures[1].shape: must be an array of 2 sizes"),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 0))["role"] = "sinks";
              (*captureAt(m, 1))["role"] = "sinks";
              (*captureAt(m, 1))["dtype"] = "f32";
              (*captureAt(m, 1))["rank"] = 1;
              captureAt(m, 1)->erase("shape");
              auto &last = *m.getArray("params")->back().getAsObject();
              last["rank"] = 1;
            }).find("a second sinks"),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              (*captureAt(m, 1))["role"] = "dsinks";
            }).find("the dsinks are a rank-1 f32 vector"),
            std::string::npos);
  // A parameter names a capture that is not there, or with another rank.
  EXPECT_NE(broken([&](json::Object &m) {
              auto &last = *m.getArray("params")->back().getAsObject();
              last["capture"] = 2;
            }).find("2 is not a capture (the kernel has 2)"),
            std::string::npos);
  EXPECT_NE(broken([&](json::Object &m) {
              auto &last = *m.getArray("params")->back().getAsObject();
              last["rank"] = 1;
            }).find("capture 1 has rank 2, not 1"),
            std::string::npos);
  // A capture no parameter passes.
  EXPECT_NE(broken([&](json::Object &m) {
              m.getArray("params")->pop_back();
            }).find("no parameter passes capture 1"),
            std::string::npos);
}

TEST(Captures, ArgumentsAreChecked) {
  KernelMetadata m = parse(capturesJson());
  LaunchArgs args = validArgs(m, 2, 4, 100, 100);
  args.captures = {dense(DType::F32, {4}, 0x9000000),
                   dense(DType::I32, {2, 100}, 0x9100000)};
  EXPECT_EQ(validationError(m, args), "<ok>");

  LaunchArgs none = args;
  none.captures.clear();
  EXPECT_NE(validationError(m, none).find(
                "0 captures were given; kernel ref_attention_bf16_d128_full "
                "takes 2: capture (f32, rank 1), capture (i32, rank 2)"),
            std::string::npos);
  LaunchArgs wrong = args;
  wrong.captures[1].dtype = DType::F32;
  EXPECT_NE(validationError(m, wrong).find(
                "capture 1 (capture) is f32 of rank 2; kernel "
                "ref_attention_bf16_d128_full takes i32 of rank 2"),
            std::string::npos);
  LaunchArgs strided = args;
  strided.captures[1].strides[0] = 128;
  EXPECT_NE(validationError(m, strided)
                .find("capture 1 (capture) strides (128, 1): captures are read "
                      "dense row-major"),
            std::string::npos);
  LaunchArgs empty = args;
  empty.captures[0].sizes[0] = 0;
  EXPECT_NE(validationError(m, empty).find("capture 0 (capture) [0] is empty"),
            std::string::npos);
  LaunchArgs missing = args;
  missing.captures[0].data = 0;
  EXPECT_NE(validationError(m, missing)
                .find("capture 0 (capture) is missing (null data pointer)"),
            std::string::npos);
  LaunchArgs narrow = args;
  narrow.captures[1].sizes[1] = 99;
  narrow.captures[1].strides[0] = 99;
  EXPECT_NE(validationError(m, narrow).find(
                "capture 1 (capture) [2, 99]: kernel "
                "ref_attention_bf16_d128_full takes 100 along dimension 1"),
            std::string::npos);
  LaunchArgs elsewhere = args;
  elsewhere.captures[1].device = 1;
  EXPECT_NE(validationError(m, elsewhere)
                .find("capture 1 (capture) is on device 1; the kernel runs on "
                      "device 0"),
            std::string::npos);

  // The sinks are one f32 per query head.
  KernelMetadata s = parse(capturesJson(true));
  LaunchArgs sinks = validArgs(s, 2, 4, 100, 100);
  sinks.captures = {dense(DType::F32, {4}, 0x9000000)};
  EXPECT_EQ(validationError(s, sinks), "<ok>");
  sinks.captures[0].sizes[0] = 3;
  EXPECT_NE(validationError(s, sinks).find(
                "capture 0 (sinks) has 3 entries; expected one per query "
                "head (4)"),
            std::string::npos);
}

TEST(Captures, DescriptorBytes) {
  KernelMetadata m = parse(capturesJson());
  LaunchArgs args = validArgs(m, 2, 4, 100, 100);
  args.captures = {dense(DType::F32, {4}, 0x9000000),
                   dense(DType::I32, {2, 100}, 0x9100000)};
  auto shape = validateLaunchArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  auto noTma = [](const TmaRequest &, void *) { return Error::success(); };
  auto buf = packParams(m, args, *shape, noTma);
  ASSERT_TRUE(bool(buf)) << toString(buf.takeError());
  size_t first = validMetadata().paramSizes().size();
  auto at = [&](size_t i) {
    int64_t v;
    EXPECT_EQ((*buf)->bytes(i).size(), 8u);
    std::memcpy(&v, (*buf)->bytes(i).data(), 8);
    return v;
  };
  // slopes: ptr, ptr, 0, [4], [1]; documents: ptr, ptr, 0, [2, 100],
  // [100, 1].
  std::vector<int64_t> want = {0x9000000, 0x9000000, 0, 4,   1,   0x9100000,
                               0x9100000, 0,         2, 100, 100, 1};
  ASSERT_EQ((*buf)->size(), first + want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(at(first + i), want[i]) << "slot " << first + i;
}

} // namespace

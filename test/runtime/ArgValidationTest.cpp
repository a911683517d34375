//===- ArgValidationTest.cpp - Launch arguments vs the kernel contract ----===//
//
// Every rule of validateLaunchArgs, checked without a driver or GPU: each
// broken argument is refused with a message naming it.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/ArgValidation.h"

#include "gtest/gtest.h"

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

class ArgValidation : public ::testing::Test {
protected:
  KernelMetadata meta = validMetadata();
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);

  /// The error text of validating `args`, or "<ok>".
  std::string error(int device = -1) {
    auto shape = validateLaunchArgs(meta, args, device);
    if (shape)
      return "<ok>";
    return toString(shape.takeError());
  }
  void expectError(const char *text, int device = -1) {
    std::string err = error(device);
    EXPECT_NE(err.find(text), std::string::npos)
        << "expected '" << text << "' in '" << err << "'";
  }
};

TEST_F(ArgValidation, AcceptsValid) {
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->batch, 2);
  EXPECT_EQ(shape->heads, 4);
  EXPECT_EQ(shape->seqQ, 100);
  EXPECT_EQ(shape->seqK, 77);
  EXPECT_EQ(shape->headDim, 128);
}

TEST_F(ArgValidation, AcceptsStridedBshd) {
  // B x N x H x D storage viewed as B x H x N x D.
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O}) {
    TensorArg &t = args[id];
    t.strides[0] = t.sizes[2] * t.sizes[1] * 128;
    t.strides[1] = 128;
    t.strides[2] = t.sizes[1] * 128;
  }
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(ArgValidation, WrongDtype) {
  args[TensorId::K].dtype = DType::F16;
  expectError(
      "k has dtype f16; kernel ref_attention_bf16_d128_full takes bf16");
}

TEST_F(ArgValidation, WrongLseDtype) {
  args[TensorId::LSE].dtype = DType::BF16;
  expectError("lse has dtype bf16");
}

TEST_F(ArgValidation, WrongHeadDim) {
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O})
    args[id].sizes[3] = 64;
  expectError("q has head dim 64; kernel ref_attention_bf16_d128_full is "
              "compiled for head dim 128");
}

TEST_F(ArgValidation, WrongRank) {
  args[TensorId::V].rank = 3;
  expectError("v has rank 3; expected 4");
}

TEST_F(ArgValidation, LastDimNotContiguous) {
  args[TensorId::Q].strides[3] = 2;
  expectError("q strides (51200, 12800, 128, 2): the last dimension must be "
              "contiguous");
}

TEST_F(ArgValidation, Misaligned) {
  args[TensorId::O].data += 8;
  expectError("o data pointer");
  expectError("is not 16-byte aligned");
}

TEST_F(ArgValidation, LseNeedsOnlyNaturalAlignment) {
  args = validArgs(meta, 2, 3, 77, 50); // lse strides 231, 77: 924, 308 bytes
  args[TensorId::LSE].data += 4;
  EXPECT_EQ(error(), "<ok>");
  args[TensorId::LSE].data += 2;
  expectError("lse data pointer");
  expectError("is not 4-byte aligned");
}

TEST_F(ArgValidation, StrideNotMultipleOf16Bytes) {
  args[TensorId::K].strides[2] = 130; // 260 bytes
  expectError("k stride 130 of dimension 2 (seq) is 260 bytes, not a multiple "
              "of 16");
}

TEST_F(ArgValidation, NegativeStride) {
  args[TensorId::V].strides[1] = -128;
  expectError("v has negative stride -128 in dimension 1");
}

TEST_F(ArgValidation, ZeroSeqQ) {
  args[TensorId::Q].sizes[2] = 0;
  args[TensorId::O].sizes[2] = 0;
  args[TensorId::LSE].sizes[2] = 0;
  expectError("has seq_q = 0");
}

TEST_F(ArgValidation, ZeroSeqK) {
  args[TensorId::K].sizes[2] = 0;
  args[TensorId::V].sizes[2] = 0;
  expectError("has seq_k = 0");
}

TEST_F(ArgValidation, GridYLimit) {
  args = validArgs(meta, 1024, 65, 16, 16); // B*H = 66560
  expectError("batch * heads = 1024 * 65 = 66560 exceeds the grid.y limit of "
              "65535");
}

TEST_F(ArgValidation, GridYAtLimitIsFine) {
  args = validArgs(meta, 65535, 1, 16, 16);
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(ArgValidation, ShapeMismatch) {
  args[TensorId::K].sizes[0] = 3;
  expectError("k [3, 4, 77, 128] does not match q [2, 4, 100, 128] in batch "
              "or head dim");
  args = validArgs(meta, 2, 4, 100, 77);
  args[TensorId::V].sizes[2] = 78;
  expectError("v [2, 4, 78, 128] does not match k [2, 4, 77, 128]");
  args = validArgs(meta, 2, 4, 100, 77);
  args[TensorId::O].sizes[2] = 99;
  expectError("o [2, 4, 99, 128] does not match q [2, 4, 100, 128]");
  args = validArgs(meta, 2, 4, 100, 77);
  args[TensorId::LSE].sizes[2] = 77;
  expectError("lse [2, 4, 77] does not match q");
}

/// K and V with `kvHeads` heads (each strided as a dense tensor).
void setKvHeads(LaunchArgs &args, int64_t kvHeads) {
  for (TensorId id : {TensorId::K, TensorId::V}) {
    TensorArg &t = args[id];
    t.sizes[1] = kvHeads;
    t.strides[0] = kvHeads * t.strides[1];
  }
}

/// The reference kernel's metadata with a kv_group parameter at the end.
KernelMetadata groupedMetadata() {
  KernelMetadata meta = validMetadata();
  ParamSpec group;
  group.kind = ParamSpec::Kind::I32;
  group.scalar = ScalarKind::KvGroup;
  group.text = "kv_group";
  meta.params.push_back(group);
  return meta;
}

TEST_F(ArgValidation, GroupedKvHeadsNeedAKvGroupParameter) {
  setKvHeads(args, 2);
  expectError("k has 2 heads and q 4: kernel ref_attention_bf16_d128_full "
              "takes as many K/V heads as query heads (it has no kv_group "
              "parameter");
}

TEST_F(ArgValidation, GroupedKvHeads) {
  meta = groupedMetadata();
  args = validArgs(meta, 2, 32, 100, 77);
  for (int64_t kvHeads : {32, 8, 1}) {
    setKvHeads(args, kvHeads);
    auto shape = validateLaunchArgs(meta, args);
    ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
    EXPECT_EQ(shape->heads, 32);
    EXPECT_EQ(shape->kvHeads, kvHeads);
    EXPECT_EQ(shape->kvGroup(), 32 / kvHeads);
  }
  setKvHeads(args, 6);
  expectError("k has 6 heads, which do not divide q's 32");
  setKvHeads(args, 8);
  args[TensorId::V].sizes[1] = 4;
  expectError("v [2, 4, 77, 128] does not match k [2, 8, 77, 128]");
}

TEST_F(ArgValidation, MissingTensor) {
  args[TensorId::V].data = 0;
  expectError("v is missing");
}

TEST_F(ArgValidation, MissingLse) {
  args[TensorId::LSE] = TensorArg();
  expectError("lse is missing: kernel ref_attention_bf16_d128_full writes the "
              "log-sum-exp");
}

TEST_F(ArgValidation, LseGivenButNotWritten) {
  meta.hasLse = false;
  expectError("lse was given but kernel ref_attention_bf16_d128_full does not "
              "write one");
}

TEST_F(ArgValidation, DifferentDevices) {
  args[TensorId::V].device = 1;
  expectError("v is on device 1 but q is on device 0");
}

TEST_F(ArgValidation, WrongDeviceForKernel) {
  for (TensorArg &t : args.tensors)
    t.device = 1;
  expectError("q is on device 1 but the kernel was loaded on device 0", 0);
}

TEST_F(ArgValidation, ReportsAllProblems) {
  args[TensorId::K].dtype = DType::F16;
  args[TensorId::O].data += 2;
  std::string err = error();
  EXPECT_NE(err.find("k has dtype"), std::string::npos) << err;
  EXPECT_NE(err.find("o data pointer"), std::string::npos) << err;
}

TEST_F(ArgValidation, TmaNeedsRowView) {
  ParamSpec tma;
  tma.kind = ParamSpec::Kind::Tma;
  tma.tensor = TensorId::K;
  tma.box[0] = 64;
  tma.box[1] = 64;
  meta.params.push_back(tma);
  EXPECT_EQ(error(), "<ok>");
  // B x N x H x D storage cannot be one [B*H*N, D] row view.
  TensorArg &k = args[TensorId::K];
  k.strides[1] = 128;
  k.strides[2] = 4 * 128;
  expectError("kernel reads k through TMA as rows of [B*H*N, D], so stride_h "
              "must be N * stride_n");
}

class TmaPtrValidation : public ArgValidation {
protected:
  void SetUp() override {
    meta.params.push_back(
        tensorMapSpec(ParamSpec::Kind::TmaPtr, TensorId::K, 128, 64, 3));
  }
};

TEST_F(TmaPtrValidation, AcceptsContiguousAndPaddedHeads) {
  EXPECT_EQ(error(), "<ok>");
  // Heads padded apart (stride_h > N * stride_n): fine for a [B*H, N, D]
  // view, unlike the by-value tma kind's [B*H*N, D] rows.
  TensorArg &k = args[TensorId::K];
  k.strides[1] = 80 * 128;
  k.strides[0] = 4 * k.strides[1];
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(TmaPtrValidation, RefusesUnmergeableBatchAndHeads) {
  // B x N x H x D storage viewed as B x H x N x D: stride_b = N*H*D but
  // H * stride_h = H*D.
  TensorArg &k = args[TensorId::K];
  k.strides[0] = 77 * 4 * 128;
  k.strides[1] = 128;
  k.strides[2] = 4 * 128;
  std::string err = error();
  EXPECT_NE(err.find("k strides (39424, 128, 512, 1): kernel reads k through "
                     "a TMA descriptor as [B*H, N, D], so stride_b must be "
                     "H * stride_h = 4 * 128 = 512, not 39424"),
            std::string::npos)
      << err;
  // Only k is read through the descriptor; the same layout of q is fine.
  EXPECT_EQ(err.find("q strides"), std::string::npos) << err;
}

TEST_F(ArgValidation, Rank4TensorMapTakesAnyStrides) {
  meta.params.push_back(
      tensorMapSpec(ParamSpec::Kind::Tma, TensorId::K, 128, 64, 4));
  // B x N x H x D storage viewed as B x H x N x D, which a 3-D map refuses
  // (RefusesUnmergeableBatchAndHeads): a 4-D map keeps each stride.
  TensorArg &k = args[TensorId::K];
  k.strides[0] = 77 * 4 * 128;
  k.strides[1] = 128;
  k.strides[2] = 4 * 128;
  EXPECT_EQ(error(), "<ok>");
  // Some heads of a tensor with more (batch stride of 8 heads).
  k = validArgs(meta, 2, 4, 100, 77)[TensorId::K];
  k.strides[0] = 8 * 77 * 128;
  EXPECT_EQ(error(), "<ok>");
  // Its limits stay: strides of 16-byte multiples below 2^40 bytes.
  k.strides[1] = 77 * 128 + 4;
  expectError("k stride 9860 of dimension 1 (heads) is 19720 bytes, not a "
              "multiple of 16");
}

TEST_F(TmaPtrValidation, SizeOneDimensionsImposeNothing) {
  args = validArgs(meta, 1, 4, 100, 77);
  args[TensorId::K].strides[0] = 12345 * 8; // B == 1: never used
  EXPECT_EQ(error(), "<ok>");
  args = validArgs(meta, 2, 1, 100, 77);
  args[TensorId::K].strides[1] = 8; // H == 1: B*H uses stride_b
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(TmaPtrValidation, KeepsGeneralRules) {
  // stride_d != 1 and strides that are not multiples of 16 bytes are
  // refused for every tensor, these included.
  args[TensorId::K].strides[3] = 2;
  expectError("k strides (39424, 9856, 128, 2): the last dimension must be "
              "contiguous");
  args = validArgs(meta, 2, 4, 100, 77);
  args[TensorId::K].strides[2] = 132;
  args[TensorId::K].strides[1] = 77 * 132;
  args[TensorId::K].strides[0] = 4 * 77 * 132;
  expectError("k stride 132 of dimension 2 (seq) is 264 bytes, not a "
              "multiple of 16");
}

TEST_F(TmaPtrValidation, TmaLimits) {
  TensorArg &k = args[TensorId::K];
  k.strides[1] = int64_t(1) << 39; // 2^40 bytes of bf16
  k.strides[0] = 4 * k.strides[1];
  expectError("k stride 549755813888 of dimension 1 (heads) is "
              "1099511627776 bytes, beyond the TMA limit of 2^40");
}

TEST(Grid, Tiles) {
  KernelMetadata meta = validMetadata();
  ProblemShape shape{2, 3, 100, 50, 128};
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(meta, shape, 132, grid)));
  EXPECT_EQ(grid[0], 2u); // ceil(100 / 64)
  EXPECT_EQ(grid[1], 6u);
  EXPECT_EQ(grid[2], 1u);
}

TEST(Grid, TilesRoundUpToClusters) {
  KernelMetadata meta = validMetadata();
  meta.cluster[0] = 2;
  ProblemShape shape{1, 1, 130, 130, 128}; // 3 tiles -> 4
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(meta, shape, 132, grid)));
  EXPECT_EQ(grid[0], 4u);
}

KernelMetadata sectionsMetadata(int64_t sectionKeys) {
  KernelMetadata meta = validMetadata();
  meta.gridKind = GridKind::Sections;
  meta.gridSectionKeys = sectionKeys;
  return meta;
}

TEST(Grid, Sections) {
  // 8 heads of 1000 keys; 4096 keys fit 4 heads: (4, ceil(300 / 64), 2).
  ProblemShape shape{2, 4, 300, 1000, 128};
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(sectionsMetadata(4096), shape, 132, grid)));
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 5u);
  EXPECT_EQ(grid[2], 2u);
}

TEST(Grid, SectionsDivideTheHeads) {
  // 4 heads would fit, but 4 does not divide 2 * 3: sections of 3.
  ProblemShape shape{2, 3, 64, 1000, 128};
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(sectionsMetadata(4096), shape, 132, grid)));
  EXPECT_EQ(grid[0], 3u);
  EXPECT_EQ(grid[2], 2u);
  // A prime head count falls back to a head per section.
  shape = ProblemShape{1, 7, 64, 1000, 128};
  ASSERT_FALSE(bool(computeGrid(sectionsMetadata(4096), shape, 132, grid)));
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[2], 7u);
  // Keys longer than a section: one head each; more heads than fit: all.
  shape = ProblemShape{1, 4, 64, 100000, 128};
  ASSERT_FALSE(bool(computeGrid(sectionsMetadata(4096), shape, 132, grid)));
  EXPECT_EQ(grid[0], 1u);
  shape = ProblemShape{1, 4, 64, 10, 128};
  ASSERT_FALSE(bool(computeGrid(sectionsMetadata(4096), shape, 132, grid)));
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[2], 1u);
}

TEST(Grid, SectionsLimitQueryBlocks) {
  // Query blocks run along grid.y (at most 65535).
  ProblemShape shape{1, 1, 65536 * 64 + 1, 64, 128};
  unsigned grid[3];
  Error err = computeGrid(sectionsMetadata(4096), shape, 132, grid);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("beyond the grid.y limit of 65535"),
            std::string::npos);
}

TEST(Grid, Persistent) {
  KernelMetadata meta = validMetadata();
  meta.gridKind = GridKind::Persistent;
  meta.cluster[0] = 2;
  ProblemShape shape{4, 16, 4096, 4096, 128};
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(meta, shape, 133, grid)));
  EXPECT_EQ(grid[0], 132u);
  EXPECT_EQ(grid[1], 1u);
}

} // namespace

namespace {

/// A kernel that gets O and LSE as plain pointers (as flashc's Hopper
/// kernels do) and Q, K, V with explicit strides.
KernelMetadata pointerOnlyOutputs() {
  json::Object obj = validMetadataJson();
  json::Array params;
  for (const json::Value &p : *obj.getArray("params")) {
    const json::Object *entry = p.getAsObject();
    std::optional<StringRef> value = entry->getString("value");
    // Drop o's and lse's stride parameters; keep everything else.
    if (value &&
        (value->starts_with("stride_o_") || value->starts_with("stride_lse_")))
      continue;
    params.push_back(p);
  }
  obj["params"] = std::move(params);
  auto meta = parseKernelMetadata(toText(obj));
  EXPECT_TRUE(bool(meta)) << toString(meta.takeError());
  return *meta;
}

TEST(DenseLayout, PointerOnlyTensorsMustBeDense) {
  KernelMetadata meta = pointerOnlyOutputs();
  EXPECT_TRUE(meta.assumesDenseLayout(TensorId::O));
  EXPECT_FALSE(meta.assumesDenseLayout(TensorId::Q));

  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  EXPECT_TRUE(bool(validateLaunchArgs(meta, args)));

  // B x N x H x D storage of O: right sizes, wrong layout for this kernel.
  TensorArg &o = args[TensorId::O];
  o.strides[0] = 100 * 4 * 128;
  o.strides[1] = 128;
  o.strides[2] = 4 * 128;
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_FALSE(bool(shape));
  std::string err = toString(shape.takeError());
  EXPECT_NE(err.find("o strides"), std::string::npos) << err;
  EXPECT_NE(err.find("as a plain pointer and indexes it as a dense B x H x N "
                     "x D tensor"),
            std::string::npos)
      << err;
}

TEST(DenseLayout, SizeOneDimensionsImposeNothing) {
  KernelMetadata meta = pointerOnlyOutputs();
  LaunchArgs args = validArgs(meta, 1, 4, 100, 77);
  args[TensorId::O].strides[0] = 12345 * 16; // batch of 1: never used
  EXPECT_TRUE(bool(validateLaunchArgs(meta, args)));
}

} // namespace

namespace {

/// The parameters flashc's GPU conversion emits (buildLaunchAttr): q, k, v
/// as tma_ptr descriptors, o as one too with tma_store_o (the default) or
/// as a plain pointer without (the shipped D=64 kernels), lse as a plain
/// pointer. The layouts python/flashc's docstring promises for them.
class FlashcKernelLayouts : public ArgValidation {
protected:
  static KernelMetadata metadata(bool tmaStoreO) {
    json::Object obj = validMetadataJson();
    auto tmaPtr = [](const char *tensor, int rows) {
      return json::Object{{"kind", "tma_ptr"},
                          {"tensor", tensor},
                          {"box", json::Array{rows, 64}},
                          {"swizzle", 128},
                          {"rank", 3}};
    };
    auto ptr = [](const char *tensor) {
      return json::Object{{"kind", "ptr"}, {"tensor", tensor}};
    };
    json::Array params{tmaPtr("q", 128), tmaPtr("k", 128), tmaPtr("v", 128),
                       tmaStoreO ? tmaPtr("o", 64) : ptr("o"), ptr("lse")};
    params.push_back(json::Object{{"kind", "i32"}, {"value", "seq_q"}});
    params.push_back(json::Object{{"kind", "i32"}, {"value", "seq_k"}});
    params.push_back(json::Object{{"kind", "f32"}, {"value", "scale_log2"}});
    obj["params"] = std::move(params);
    auto meta = parseKernelMetadata(toText(obj));
    EXPECT_TRUE(bool(meta)) << toString(meta.takeError());
    return *meta;
  }
  /// x.view(B, N, H, D).transpose(1, 2): B x N x H x D storage.
  static void bshd(TensorArg &t) {
    t.strides[0] = t.sizes[2] * t.sizes[1] * t.sizes[3];
    t.strides[1] = t.sizes[3];
    t.strides[2] = t.sizes[1] * t.sizes[3];
  }
  void SetUp() override {
    meta = metadata(true);
    args = validArgs(meta, 2, 3, 100, 77);
  }
};

TEST_F(FlashcKernelLayouts, AcceptsContiguousSlicedAndPadded) {
  EXPECT_EQ(error(), "<ok>");
  // q = qkv[..., :D] of a B x H x N x 3D tensor: rows spaced apart.
  TensorArg &q = args[TensorId::Q];
  q.strides[2] = 3 * 128;
  q.strides[1] = 100 * q.strides[2];
  q.strides[0] = 3 * q.strides[1];
  // k = big[:, :, :77] of a B x H x 300 x D tensor: heads padded apart.
  TensorArg &k = args[TensorId::K];
  k.strides[1] = 300 * 128;
  k.strides[0] = 3 * k.strides[1];
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(FlashcKernelLayouts, BshdViewsOnlyWhereBatchOrHeadsIsOne) {
  bshd(args[TensorId::Q]);
  expectError("q strides (38400, 128, 384, 1): kernel reads q through a TMA "
              "descriptor as [B*H, N, D], so stride_b must be H * stride_h = "
              "3 * 128 = 384, not 38400");
  args = validArgs(meta, 1, 3, 100, 77);
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O})
    bshd(args[id]);
  EXPECT_EQ(error(), "<ok>");
  args = validArgs(meta, 2, 1, 100, 77);
  bshd(args[TensorId::K]);
  EXPECT_EQ(error(), "<ok>");
}

TEST_F(FlashcKernelLayouts, SomeHeadsOfMoreRefusedWithBatches) {
  // x[:, :3] of a B x 8 x N x D tensor.
  TensorArg &v = args[TensorId::V];
  v.strides[0] = 8 * v.strides[1];
  expectError("v strides (78848, 9856, 128, 1): kernel reads v through a TMA "
              "descriptor as [B*H, N, D], so stride_b must be H * stride_h");
}

TEST_F(FlashcKernelLayouts, PlainStoreOutputsMustBeContiguous) {
  // A B x N x H x D O of one batch: fine by TMA, refused by plain stores.
  args = validArgs(meta, 1, 3, 100, 77);
  bshd(args[TensorId::O]);
  EXPECT_EQ(error(), "<ok>");
  meta = metadata(false);
  expectError("o strides (38400, 128, 384, 1): kernel "
              "ref_attention_bf16_d128_full gets o as a plain pointer and "
              "indexes it as a dense B x H x N x D tensor; pass a contiguous "
              "one");
  args = validArgs(meta, 1, 3, 100, 77);
  args[TensorId::LSE].strides[1] = 128;
  expectError("lse strides (300, 128, 1): kernel ref_attention_bf16_d128_full "
              "gets lse as a plain pointer");
}

} // namespace

namespace {

/// Packed sequences (a kernel with a packed grid): lengths 0, 1, 127, 128,
/// 129 and 3000, keys as long, 4 heads.
class PackedArgs : public ::testing::Test {
protected:
  KernelMetadata meta = packedMetadata();
  std::vector<int64_t> lens = {0, 1, 127, 128, 129, 3000};
  LaunchArgs args = packedArgs(meta, 4, lens, lens);

  std::string error() {
    auto shape = validateLaunchArgs(meta, args);
    if (shape)
      return "<ok>";
    return toString(shape.takeError());
  }
  void expectError(const char *text) {
    std::string err = error();
    EXPECT_NE(err.find(text), std::string::npos)
        << "expected '" << text << "' in '" << err << "'";
  }
};

} // namespace

TEST_F(PackedArgs, AcceptsValid) {
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->batch, 1);
  EXPECT_EQ(shape->seqQ, 3385);
  EXPECT_EQ(shape->sequences, 6);
  EXPECT_EQ(shape->maxSeqQ, 3000);
  // x: the longest sequence's query blocks; y: sequences * heads.
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(meta, *shape, 132, grid)));
  EXPECT_EQ(grid[0], 24u); // ceil(3000 / 128)
  EXPECT_EQ(grid[1], 24u); // 6 * 4
  EXPECT_EQ(grid[2], 1u);
}

TEST_F(PackedArgs, AllEmptyIsValid) {
  // Zero-length sequences give nothing and break nothing.
  args = packedArgs(meta, 4, {0, 0}, {0, 0});
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  unsigned grid[3];
  ASSERT_FALSE(bool(computeGrid(meta, *shape, 132, grid)));
  EXPECT_EQ(grid[0], 0u);
}

TEST_F(PackedArgs, NeedsBatchOne) {
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O})
    args[id].sizes[0] = 2;
  args[TensorId::LSE].sizes[0] = 2;
  expectError("kernel ref_attention_bf16_d128_full takes packed sequences, "
              "so q must be [1, H, T, D]");
}

TEST_F(PackedArgs, MissingSeqlens) {
  args.cuSeqlensK = TensorArg();
  expectError("cu_seqlens_k is missing: kernel ref_attention_bf16_d128_full "
              "takes packed sequences");
}

TEST_F(PackedArgs, SeqlensWrongType) {
  args.cuSeqlensQ.dtype = DType::F32;
  expectError("cu_seqlens_q has dtype f32; expected i32");
}

TEST_F(PackedArgs, SeqlensWrongRank) {
  args.cuSeqlensQ.rank = 2;
  args.cuSeqlensQ.sizes[1] = 1;
  expectError("cu_seqlens_q has rank 2; expected 1");
}

TEST_F(PackedArgs, SeqlensStrided) {
  args.cuSeqlensK.strides[0] = 2;
  expectError("cu_seqlens_k has stride 2; expected a contiguous vector");
}

TEST_F(PackedArgs, SeqlensDisagree) {
  args.cuSeqlensK.sizes[0] = 3;
  expectError("cu_seqlens_q has 7 entries and cu_seqlens_k 3");
}

TEST_F(PackedArgs, MaxSeqlenOutsideRows) {
  args.maxSeqlenQ = 4000;
  expectError("max_seqlen_q = 4000 is outside [0, 3385]");
  args.maxSeqlenQ = -1;
  expectError("max_seqlen_q = -1 is outside [0, 3385]");
}

TEST_F(PackedArgs, TooManySequencesForTheGrid) {
  args.cuSeqlensQ.sizes[0] = args.cuSeqlensK.sizes[0] = 20000;
  expectError("sequences * heads = 19999 * 4 = 79996 exceeds the grid.y "
              "limit of 65535");
}

TEST(PackedArgsDense, DenseKernelRefusesSeqlens) {
  KernelMetadata meta = validMetadata();
  LaunchArgs args = validArgs(meta, 2, 4, 100, 77);
  args.cuSeqlensQ = packedArgs(packedMetadata(), 4, {1}, {1}).cuSeqlensQ;
  auto shape = validateLaunchArgs(meta, args);
  ASSERT_FALSE(bool(shape));
  std::string err = toString(shape.takeError());
  EXPECT_NE(err.find("cu_seqlens was given but kernel "
                     "ref_attention_bf16_d128_full takes no packed sequences"),
            std::string::npos)
      << err;
}

TEST(StaticHeads, KernelHoldsLaunchesToItsHeads) {
  // A kernel whose source fixes 4 query and 2 K/V heads.
  json::Object obj = validMetadataJson();
  obj["heads"] = 4;
  obj["kv_heads"] = 2;
  obj.getArray("params")->push_back(
      json::Object{{"kind", "i32"}, {"value", "kv_group"}});
  auto meta = parseKernelMetadata(toText(obj));
  ASSERT_TRUE(bool(meta)) << toString(meta.takeError());
  EXPECT_EQ(meta->heads, 4);
  EXPECT_EQ(meta->kvHeads, 2);
  LaunchArgs args = validArgs(*meta, 2, 4, 100, 77);
  for (TensorId id : {TensorId::K, TensorId::V})
    args[id].sizes[1] = 2, args[id].strides[0] /= 2;
  auto shape = validateLaunchArgs(*meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  // Other head counts are refused, naming the tensor.
  args = validArgs(*meta, 2, 8, 100, 77);
  shape = validateLaunchArgs(*meta, args);
  ASSERT_FALSE(bool(shape));
  std::string err = toString(shape.takeError());
  EXPECT_NE(err.find("q has 8 heads; kernel ref_attention_bf16_d128_full is "
                     "compiled for 4"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("k has 8 heads; kernel ref_attention_bf16_d128_full is "
                     "compiled for 2 K/V heads"),
            std::string::npos)
      << err;
  // kv_heads must divide heads.
  obj["kv_heads"] = 3;
  auto bad = parseKernelMetadata(toText(obj));
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(toString(bad.takeError()).find("3 does not divide heads = 4"),
            std::string::npos);
}

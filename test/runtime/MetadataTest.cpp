//===- MetadataTest.cpp - kernel.json parsing and consistency checks ------===//
//
// Each malformed or inconsistent metadata document is refused with an error
// naming the field.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/KernelMetadata.h"

#include "gtest/gtest.h"

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

std::string parseError(const json::Object &obj) {
  auto meta = parseKernelMetadata(toText(obj));
  if (meta)
    return "<parsed>";
  return toString(meta.takeError());
}

TEST(Metadata, ParsesValid) {
  KernelMetadata m = validMetadata();
  EXPECT_EQ(m.kernel, "ref_attention_bf16_d128_full");
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.headDim, 128);
  EXPECT_TRUE(m.hasLse);
  EXPECT_EQ(m.sharedMemoryBytes, 74240u);
  EXPECT_EQ(m.gridKind, GridKind::Tiles);
  EXPECT_EQ(m.gridBlockM, 64);
  EXPECT_EQ(m.config.at("block_n"), 32);
  ASSERT_EQ(m.params.size(), 23u);
  EXPECT_EQ(m.params[5].scalar, ScalarKind::SeqQ);
  EXPECT_EQ(m.params[8].scalar, ScalarKind::Stride);
  EXPECT_EQ(m.params[8].tensor, TensorId::Q);
  EXPECT_EQ(m.params[8].strideDim, 0u);
  EXPECT_EQ(m.paramSizes().size(), 23u);
}

TEST(Metadata, ParsesSectionsGrid) {
  json::Object obj = validMetadataJson();
  obj["grid"] = json::Object{
      {"kind", "sections"}, {"block_m", 128}, {"section_keys", 32768}};
  auto m = parseKernelMetadata(toText(obj));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  EXPECT_EQ(m->gridKind, GridKind::Sections);
  EXPECT_EQ(m->gridBlockM, 128);
  EXPECT_EQ(m->gridSectionKeys, 32768);
  // The kernel maps (x, y, z) to tiles itself: no clusters.
  obj["cluster"] = json::Array{2, 1, 1};
  EXPECT_NE(parseError(obj).find("a \"sections\" grid takes no clusters"),
            std::string::npos);
}

TEST(Metadata, RejectsBadJson) {
  auto meta = parseKernelMetadata("{\"format\": ");
  ASSERT_FALSE(meta);
  EXPECT_NE(toString(meta.takeError()).find("not valid JSON"),
            std::string::npos);
}

struct Case {
  const char *key;
  json::Value value;
  const char *expected;
};

TEST(Metadata, RejectsBadFields) {
  Case cases[] = {
      {"format", "other", "format: expected \"flashc-kernel\""},
      {"format_version", 2, "version 2 is not supported"},
      {"dtype", "f8", "dtype: must be \"bf16\" or \"f16\""},
      {"head_dim", 100, "head_dim: 100 is not a multiple of 8"},
      {"binary_format", "fatbin", "binary_format: must be"},
      {"arch", "gfx90a", "arch: expected sm_<NN>[a]"},
      {"block", json::Array{2048, 1, 1}, "more than 1024 threads"},
      {"cluster", json::Array{1, 2, 1}, "clusters along x only"},
      {"scale", -1.0, "scale: must be a positive number"},
      {"causal", "yes", "causal: must be true or false"},
      {"grid", json::Object{{"kind", "tiles"}}, "grid.block_m: missing"},
      {"grid", json::Object{{"kind", "spiral"}}, "grid.kind: must be"},
      {"grid", json::Object{{"kind", "sections"}, {"block_m", 64}},
       "grid.section_keys: missing"},
      {"grid",
       json::Object{{"kind", "sections"}, {"block_m", 64}, {"section_keys", 0}},
       "grid.section_keys: must be positive"},
      {"has_lse", false, "has_lse: is false but a parameter passes lse"},
  };
  for (Case &c : cases) {
    json::Object obj = validMetadataJson();
    obj[c.key] = c.value;
    std::string err = parseError(obj);
    EXPECT_NE(err.find(c.expected), std::string::npos)
        << c.key << ": got '" << err << "'";
  }
}

TEST(Metadata, RejectsMissingField) {
  for (const char *key : {"kernel", "binary", "arch", "dtype", "head_dim",
                          "params", "grid", "shared_memory_bytes"}) {
    json::Object obj = validMetadataJson();
    obj.erase(key);
    std::string err = parseError(obj);
    EXPECT_NE(err.find(std::string(key) + ": missing"), std::string::npos)
        << key << ": got '" << err << "'";
  }
}

json::Object withParams(json::Array params) {
  json::Object obj = validMetadataJson();
  obj["params"] = std::move(params);
  obj["has_lse"] = false;
  return obj;
}

json::Array basicPtrs() {
  json::Array a;
  for (const char *t : {"q", "k", "v", "o"})
    a.push_back(json::Object{{"kind", "ptr"}, {"tensor", t}});
  return a;
}

TEST(Metadata, RejectsBadParams) {
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "i32"}, {"value", "sq"}});
    EXPECT_NE(parseError(withParams(std::move(a)))
                  .find("params[4].value: unknown value 'sq'"),
              std::string::npos);
  }
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "i32"}, {"value", "scale"}});
    EXPECT_NE(parseError(withParams(std::move(a)))
                  .find("'scale' cannot be passed as i32"),
              std::string::npos);
  }
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "vec"}, {"tensor", "q"}});
    EXPECT_NE(parseError(withParams(std::move(a))).find("unknown kind 'vec'"),
              std::string::npos);
  }
  {
    json::Array a;
    for (const char *t : {"q", "k", "v"})
      a.push_back(json::Object{{"kind", "ptr"}, {"tensor", t}});
    EXPECT_NE(parseError(withParams(std::move(a)))
                  .find("no parameter passes tensor o"),
              std::string::npos);
  }
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "memref"}, {"tensor", "q"}, {"rank", 2}});
    EXPECT_NE(parseError(withParams(std::move(a))).find("rank"),
              std::string::npos);
  }
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "tma"},
                             {"tensor", "k"},
                             {"box", json::Array{64, 128}},
                             {"swizzle", 128}});
    EXPECT_NE(parseError(withParams(std::move(a)))
                  .find("rows of 256 bytes, more than its 128-byte swizzle"),
              std::string::npos);
  }
  {
    json::Array a = basicPtrs();
    a.push_back(json::Object{{"kind", "tma"},
                             {"tensor", "k"},
                             {"box", json::Array{64, 64}},
                             {"swizzle", 96}});
    EXPECT_NE(parseError(withParams(std::move(a)))
                  .find("swizzle: must be 0, 32, 64 or 128"),
              std::string::npos);
  }
}

TEST(Metadata, HasLseNeedsParam) {
  json::Object obj = withParams(basicPtrs());
  obj["has_lse"] = true;
  EXPECT_NE(
      parseError(obj).find("has_lse: is true but no parameter passes lse"),
      std::string::npos);
}

TEST(Metadata, MemrefAndTmaSizes) {
  json::Array a = basicPtrs();
  a.push_back(json::Object{{"kind", "memref"}, {"tensor", "q"}, {"rank", 4}});
  a.push_back(json::Object{{"kind", "tma"},
                           {"tensor", "k"},
                           {"box", json::Array{64, 64}},
                           {"swizzle", 128}});
  auto m = parseKernelMetadata(toText(withParams(std::move(a))));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  auto sizes = m->paramSizes();
  // 4 ptrs + memref (3 + 2*4) + tma
  ASSERT_EQ(sizes.size(), 4u + 11u + 1u);
  EXPECT_EQ(sizes.back(), 128u);
  EXPECT_TRUE(m->usesTma(TensorId::K));
  EXPECT_FALSE(m->usesTma(TensorId::Q));
}

/// The parameter list flashc's Hopper kernels use: q, k, v through tma_ptr
/// descriptors, o and lse as pointers (docs/gpu-kernel.md, "Kernel
/// interface").
json::Array tmaPtrParams(json::Object qEntry) {
  json::Array a;
  a.push_back(std::move(qEntry));
  for (const char *t : {"k", "v"})
    a.push_back(json::Object{{"kind", "tma_ptr"},
                             {"tensor", t},
                             {"box", json::Array{128, 64}},
                             {"swizzle", 128},
                             {"rank", 3}});
  a.push_back(json::Object{{"kind", "ptr"}, {"tensor", "o"}});
  a.push_back(json::Object{{"kind", "i32"}, {"value", "seq_q"}});
  a.push_back(json::Object{{"kind", "f32"}, {"value", "scale_log2"}});
  return a;
}

json::Object tmaPtrEntry(const char *tensor, int64_t rows, int64_t cols,
                         int64_t swizzle, int64_t rank) {
  return json::Object{{"kind", "tma_ptr"},
                      {"tensor", tensor},
                      {"box", json::Array{rows, cols}},
                      {"swizzle", swizzle},
                      {"rank", rank}};
}

TEST(Metadata, TmaPtrParses) {
  auto m = parseKernelMetadata(
      toText(withParams(tmaPtrParams(tmaPtrEntry("q", 128, 64, 128, 3)))));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  ASSERT_EQ(m->params.size(), 6u);
  const ParamSpec &q = m->params[0];
  EXPECT_EQ(q.kind, ParamSpec::Kind::TmaPtr);
  EXPECT_TRUE(q.isTma());
  EXPECT_EQ(q.tensor, TensorId::Q);
  EXPECT_EQ(q.box[0], 128);
  EXPECT_EQ(q.box[1], 64);
  EXPECT_EQ(q.swizzle, 128u);
  EXPECT_EQ(q.rank, 3u);
  // A pointer: 8 bytes, not a 128-byte descriptor.
  auto sizes = m->paramSizes();
  ASSERT_EQ(sizes.size(), 6u);
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_EQ(sizes[i], 8u) << "param " << i;
  EXPECT_TRUE(m->usesStridedTensorMap(TensorId::Q));
  EXPECT_TRUE(m->usesStridedTensorMap(TensorId::V));
  EXPECT_FALSE(m->usesStridedTensorMap(TensorId::O));
  EXPECT_FALSE(m->usesTma(TensorId::Q)); // not the by-value kind
}

TEST(Metadata, Tma3dParses) {
  // The 3-D [B*H, N, D] map by value: a 128-byte parameter.
  json::Object q = tmaPtrEntry("q", 128, 64, 128, 3);
  q["kind"] = "tma";
  auto m = parseKernelMetadata(toText(withParams(tmaPtrParams(std::move(q)))));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  const ParamSpec &p = m->params[0];
  EXPECT_EQ(p.kind, ParamSpec::Kind::Tma);
  EXPECT_EQ(p.rank, 3u);
  EXPECT_TRUE(p.isStridedTensorMap());
  EXPECT_EQ(m->paramSizes()[0], 128u);
  EXPECT_TRUE(m->usesStridedTensorMap(TensorId::Q));
  EXPECT_FALSE(m->usesTma(TensorId::Q));

  EXPECT_TRUE(m->mergesBatchAndHeads(TensorId::Q));

  // Without a rank, the 2-D [B*H*N, D] view; 4 is [B, H, N, D] with any
  // strides; 5 is none.
  json::Object flat = tmaPtrEntry("q", 128, 64, 128, 3);
  flat["kind"] = "tma";
  flat.erase("rank");
  auto m2 =
      parseKernelMetadata(toText(withParams(tmaPtrParams(std::move(flat)))));
  ASSERT_TRUE(bool(m2)) << toString(m2.takeError());
  EXPECT_EQ(m2->params[0].rank, 2u);
  EXPECT_TRUE(m2->usesTma(TensorId::Q));
  json::Object four = tmaPtrEntry("q", 128, 64, 128, 4);
  four["kind"] = "tma";
  auto m4 =
      parseKernelMetadata(toText(withParams(tmaPtrParams(std::move(four)))));
  ASSERT_TRUE(bool(m4)) << toString(m4.takeError());
  EXPECT_EQ(m4->params[0].rank, 4u);
  EXPECT_TRUE(m4->usesStridedTensorMap(TensorId::Q));
  EXPECT_FALSE(m4->mergesBatchAndHeads(TensorId::Q));
  EXPECT_EQ(m4->paramSizes()[0], 128u);
  json::Object bad = tmaPtrEntry("q", 128, 64, 128, 5);
  bad["kind"] = "tma";
  EXPECT_NE(parseError(withParams(tmaPtrParams(std::move(bad))))
                .find("params[0].rank: a tma descriptor is 2-D over "
                      "[B*H*N, D] (rank 2), 3-D over [B*H, N, D] (rank 3) or "
                      "4-D over [B, H, N, D] (rank 4), not rank 5"),
            std::string::npos);
}

TEST(Metadata, TmaPtrRefusals) {
  struct {
    json::Object entry;
    const char *expected;
  } cases[] = {
      {tmaPtrEntry("q", 128, 64, 128, 2),
       "params[0].rank: a tma_ptr descriptor is 3-D over [B*H, N, D] "
       "(rank 3), not rank 2"},
      {tmaPtrEntry("q", 128, 64, 128, 4), "(rank 3), not rank 4"},
      {json::Object{{"kind", "tma_ptr"},
                    {"tensor", "q"},
                    {"box", json::Array{128, 64}},
                    {"swizzle", 128}},
       "params[0].rank: missing"},
      // A value of the wrong type is named by its path too.
      {json::Object{{"kind", "tma_ptr"},
                    {"tensor", "q"},
                    {"box", json::Array{128, 64}},
                    {"swizzle", 128},
                    {"rank", "3"}},
       "params[0].rank: must be an integer"},
      {tmaPtrEntry("q", 128, 128, 128, 3),
       "TMA box over q has rows of 256 bytes, more than its 128-byte "
       "swizzle span"},
      {tmaPtrEntry("q", 128, 4, 0, 3),
       "TMA box over q: row of 8 bytes is not a multiple of 16"},
      {tmaPtrEntry("q", 128, 64, 96, 3),
       "params[0].swizzle: must be 0, 32, 64 or 128"},
      {tmaPtrEntry("q", 512, 64, 128, 3),
       "params[0].box: each box dimension must be an integer in [1, 256]"},
      {json::Object{{"kind", "tma_ptr"},
                    {"tensor", "q"},
                    {"box", json::Array{128}},
                    {"rank", 3}},
       "params[0].box: must be [rows, cols]"},
      {tmaPtrEntry("lse", 128, 64, 128, 3),
       "TMA descriptors over lse are not supported"},
  };
  for (auto &c : cases) {
    std::string err = parseError(withParams(tmaPtrParams(c.entry)));
    EXPECT_NE(err.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << err << "'";
  }
  // cols <= head_dim: a 64-column box over a head_dim 32 kernel.
  json::Object obj = withParams(tmaPtrParams(tmaPtrEntry("q", 64, 64, 128, 3)));
  obj["head_dim"] = 32;
  EXPECT_NE(parseError(obj).find("TMA box over q is 64 columns wide but "
                                 "head_dim is 32"),
            std::string::npos)
      << parseError(obj);
}

TEST(Metadata, TileCounterParses) {
  json::Array params = tmaPtrParams(tmaPtrEntry("q", 128, 64, 128, 3));
  params.push_back(json::Object{{"kind", "i32"}, {"value", "batch"}});
  params.push_back(json::Object{{"kind", "tile_counter"}});
  auto m = parseKernelMetadata(toText(withParams(std::move(params))));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  ASSERT_EQ(m->params.size(), 8u);
  EXPECT_EQ(m->params.back().kind, ParamSpec::Kind::TileCounter);
  EXPECT_FALSE(m->params.back().isTma());
  // A device address: 8 bytes, after a 4-byte i32.
  auto sizes = m->paramSizes();
  ASSERT_EQ(sizes.size(), 8u);
  EXPECT_EQ(sizes[6], 4u);
  EXPECT_EQ(sizes[7], 8u);
}

TEST(Metadata, ParseArch) {
  unsigned sm;
  bool specific;
  EXPECT_TRUE(parseArch("sm_90a", sm, specific));
  EXPECT_EQ(sm, 90u);
  EXPECT_TRUE(specific);
  EXPECT_TRUE(parseArch("sm_80", sm, specific));
  EXPECT_FALSE(specific);
  EXPECT_FALSE(parseArch("compute_90", sm, specific));
}

} // namespace

TEST(Metadata, PackedGridParses) {
  json::Object obj = packedMetadataJson();
  auto m = parseKernelMetadata(toText(obj));
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  EXPECT_TRUE(m->packed());
  EXPECT_EQ(m->gridBlockM, 128);
  size_t n = m->params.size();
  EXPECT_EQ(m->params[n - 2].kind, ParamSpec::Kind::Seqlens);
  EXPECT_FALSE(m->params[n - 2].keys);
  EXPECT_EQ(m->params[n - 1].kind, ParamSpec::Kind::Seqlens);
  EXPECT_TRUE(m->params[n - 1].keys);
  // Device addresses: 8 bytes each.
  auto sizes = m->paramSizes();
  EXPECT_EQ(sizes[sizes.size() - 1], 8u);
  EXPECT_EQ(sizes[sizes.size() - 2], 8u);
  // A packed grid needs both, and only a packed grid takes them.
  json::Object missing = packedMetadataJson();
  missing.getArray("params")->pop_back();
  EXPECT_NE(parseError(missing).find(
                "a \"packed\" grid needs a parameter passing cu_seqlens_k"),
            std::string::npos);
  json::Object tiles = packedMetadataJson();
  tiles["grid"] = json::Object{{"kind", "tiles"}, {"block_m", 128}};
  EXPECT_NE(parseError(tiles).find(
                "cu_seqlens_q is passed but the grid is not \"packed\""),
            std::string::npos);
  obj["cluster"] = json::Array{2, 1, 1};
  EXPECT_NE(parseError(obj).find("a \"packed\" grid takes no clusters"),
            std::string::npos);
}

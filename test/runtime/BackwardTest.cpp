//===- BackwardTest.cpp - the backward pass's launches, without a GPU -----===//
//
// kernel.json's "pass": "backward" with its three launches (as flashc writes
// it: test/Target/flashc-backward.mlir), the checks of a backward call's
// nine tensors, the shared workspace and each launch's parameter bytes.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/Backward.h"

#include "llvm/Support/MathExtras.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

json::Object param(StringRef kind, StringRef key, StringRef value) {
  return json::Object{{"kind", kind.str()}, {key.str(), value.str()}};
}

json::Array stridesOf(StringRef tensor) {
  json::Array out;
  for (const char *d : {"b", "h", "n"})
    out.push_back(param("i64", "value", ("stride_" + tensor + "_" + d).str()));
  return out;
}

void append(json::Array &to, json::Array more) {
  for (json::Value &v : more)
    to.push_back(std::move(v));
}

json::Object launch(StringRef role, StringRef kernel, StringRef gridKind,
                    StringRef sizeKey, int64_t smem, json::Array params,
                    bool headsFastest = false) {
  json::Object grid{{"kind", gridKind.str()}, {sizeKey.str(), 64}};
  if (headsFastest)
    grid["heads_fastest"] = true;
  return json::Object{{"role", role.str()},
                      {"kernel", kernel.str()},
                      {"block", json::Array{128, 1, 1}},
                      {"shared_memory_bytes", smem},
                      {"grid", std::move(grid)},
                      {"params", std::move(params)}};
}

/// What flashc writes for a bf16 D = 128 backward (deterministic: with the
/// dQ turns).
json::Object backwardMetadataJson(bool deterministic) {
  json::Array pre{param("ptr", "tensor", "o"), param("ptr", "tensor", "do"),
                  param("workspace", "name", "delta"),
                  param("workspace", "name", "dq_accum")};
  if (deterministic)
    pre.push_back(param("workspace", "name", "dq_turns"));
  append(pre, json::Array{param("i32", "value", "seq_q"),
                          param("i32", "value", "heads")});
  append(pre, stridesOf("o"));
  append(pre, stridesOf("do"));

  json::Array main;
  for (const char *t : {"q", "k", "v", "do"})
    main.push_back(json::Object{{"kind", "tma"},
                                {"tensor", t},
                                {"box", json::Array{64, 64}},
                                {"swizzle", 128},
                                {"rank", 4}});
  append(main, json::Array{param("ptr", "tensor", "lse"),
                           param("workspace", "name", "delta"),
                           param("workspace", "name", "dq_accum"),
                           param("ptr", "tensor", "dk"),
                           param("ptr", "tensor", "dv")});
  if (deterministic)
    main.push_back(param("workspace", "name", "dq_turns"));
  append(main, json::Array{param("i32", "value", "seq_q"),
                           param("i32", "value", "seq_k"),
                           param("f32", "value", "scale_log2"),
                           param("i32", "value", "kv_group"),
                           param("i32", "value", "heads")});
  append(main, stridesOf("dk"));
  append(main, stridesOf("dv"));

  json::Array post{param("workspace", "name", "dq_accum"),
                   param("ptr", "tensor", "dq"), param("i32", "value", "seq_q"),
                   param("i32", "value", "heads"),
                   param("f32", "value", "scale")};
  append(post, stridesOf("dq"));

  json::Object m = validMetadataJson();
  m["kernel"] = "attention_backward";
  m["binary"] = "attention_backward.cubin";
  m["pass"] = "backward";
  m["deterministic"] = deterministic;
  m["block"] = json::Array{128, 1, 1};
  m["shared_memory_bytes"] = 107520;
  m["grid"] = json::Object{{"kind", "key_tiles"}, {"block_n", 64}};
  m["params"] = json::Array(main);
  m["launches"] =
      json::Array{launch("pre", "attention_backward_pre", "tiles", "block_m", 0,
                         std::move(pre)),
                  launch("main", "attention_backward", "key_tiles", "block_n",
                         107520, std::move(main), deterministic),
                  launch("post", "attention_backward_post", "tiles", "block_m",
                         0, std::move(post))};
  return m;
}

KernelMetadata backwardMetadata(bool deterministic = false) {
  auto meta = parseKernelMetadata(toText(backwardMetadataJson(deterministic)));
  EXPECT_TRUE(bool(meta)) << toString(meta.takeError());
  return std::move(*meta);
}

std::string parseError(const json::Object &m) {
  auto meta = parseKernelMetadata(toText(m));
  if (meta)
    return "";
  return toString(meta.takeError());
}

/// Dense B x H x N x D tensors (K/V with hkv heads), each at its own
/// 256-byte aligned fake address.
BackwardArgs backwardArgs(int64_t b, int64_t h, int64_t hkv, int64_t nq,
                          int64_t nk, int64_t d = 128) {
  BackwardArgs args;
  uint64_t next = 0x100000;
  for (unsigned i = 0; i < kNumBackwardTensors; ++i) {
    TensorId id = TensorId(i);
    TensorArg &t = args[id];
    bool keys = id == TensorId::K || id == TensorId::V || id == TensorId::DK ||
                id == TensorId::DV;
    int64_t heads = keys ? hkv : h, rows = keys ? nk : nq;
    t.data = next;
    next += 1 << 24;
    if (id == TensorId::LSE) {
      t.dtype = DType::F32;
      t.rank = 3;
      int64_t sizes[3] = {b, h, nq}, strides[3] = {h * nq, nq, 1};
      std::copy(sizes, sizes + 3, t.sizes);
      std::copy(strides, strides + 3, t.strides);
      continue;
    }
    t.dtype = DType::BF16;
    t.rank = 4;
    int64_t sizes[4] = {b, heads, rows, d},
            strides[4] = {heads * rows * d, rows * d, d, 1};
    std::copy(sizes, sizes + 4, t.sizes);
    std::copy(strides, strides + 4, t.strides);
  }
  return args;
}

template <typename T> T read(ArrayRef<uint8_t> bytes) {
  EXPECT_EQ(bytes.size(), sizeof(T));
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

TEST(Backward, MetadataHasThreeLaunches) {
  KernelMetadata m = backwardMetadata();
  EXPECT_TRUE(m.backward);
  EXPECT_FALSE(m.deterministic);
  EXPECT_EQ(m.gridKind, GridKind::KeyTiles);
  ASSERT_EQ(m.launches.size(), 3u);
  EXPECT_EQ(m.launches[0].role, "pre");
  EXPECT_EQ(m.launches[0].gridKind, GridKind::Tiles);
  EXPECT_EQ(m.launches[1].kernel, "attention_backward");
  EXPECT_EQ(m.launches[1].sharedMemoryBytes, 107520u);
  EXPECT_EQ(m.launches[1].params[0].kind, ParamSpec::Kind::Tma);
  EXPECT_EQ(m.launches[1].params[3].tensor, TensorId::DO);
  EXPECT_EQ(m.launches[1].params[5].kind, ParamSpec::Kind::Workspace);
  EXPECT_EQ(m.launches[1].params[5].workspace, Workspace::Delta);
  EXPECT_EQ(m.launches[2].params[4].scalar, ScalarKind::Scale);
  // The main launch's parameters are the top level's, for the binary check.
  EXPECT_EQ(m.params.size(), m.launches[1].params.size());
  EXPECT_TRUE(backwardMetadata(true).deterministic);
}

TEST(Backward, MetadataErrorsNameTheField) {
  json::Object m = backwardMetadataJson(false);
  m.erase("launches");
  EXPECT_NE(parseError(m).find("launches"), std::string::npos) << parseError(m);

  m = backwardMetadataJson(false);
  json::Array *launches = m.getArray("launches");
  std::swap((*launches)[0], (*launches)[2]);
  EXPECT_NE(parseError(m).find("launches[0].role: must be \"pre\""),
            std::string::npos)
      << parseError(m);

  // No launch writes dv.
  m = backwardMetadataJson(false);
  json::Array *mainParams =
      (*m.getArray("launches"))[1].getAsObject()->getArray("params");
  mainParams->erase(mainParams->begin() + 8);
  EXPECT_NE(parseError(m).find("no launch passes tensor dv"), std::string::npos)
      << parseError(m);

  m = backwardMetadataJson(false);
  (*m.getArray("launches"))[1].getAsObject()->getArray("params")->push_back(
      param("workspace", "name", "scratch"));
  EXPECT_NE(parseError(m).find("unknown workspace 'scratch'"),
            std::string::npos)
      << parseError(m);

  // A forward kernel cannot take the backward pass's tensors.
  json::Object f = validMetadataJson();
  f.getArray("params")->push_back(param("ptr", "tensor", "do"));
  EXPECT_NE(parseError(f).find("'do' is a parameter of the backward pass"),
            std::string::npos)
      << parseError(f);
  // Nor a key_tiles grid.
  f = validMetadataJson();
  f["grid"] = json::Object{{"kind", "key_tiles"}, {"block_n", 64}};
  EXPECT_NE(parseError(f).find("grid.kind"), std::string::npos)
      << parseError(f);
}

TEST(Backward, ValidArgsGiveTheShape) {
  KernelMetadata m = backwardMetadata();
  BackwardArgs args = backwardArgs(2, 8, 2, 300, 700);
  auto shape = validateBackwardArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->batch, 2);
  EXPECT_EQ(shape->heads, 8);
  EXPECT_EQ(shape->kvHeads, 2);
  EXPECT_EQ(shape->kvGroup(), 4);
  EXPECT_EQ(shape->seqQ, 300);
  EXPECT_EQ(shape->seqK, 700);
  unsigned grid[3];
  backwardGrid(m.launches[0], *shape, grid);
  EXPECT_EQ(grid[0], 5u); // ceil(300 / 64) query tiles
  EXPECT_EQ(grid[1], 16u);
  backwardGrid(m.launches[1], *shape, grid);
  EXPECT_EQ(grid[0], 11u); // ceil(700 / 64) key tiles
  EXPECT_EQ(grid[1], 4u);  // B x H_kv
  // The deterministic kernel's grid runs heads fastest.
  KernelMetadata det = backwardMetadata(true);
  EXPECT_TRUE(det.launches[1].headsFastest);
  backwardGrid(det.launches[1], *shape, grid);
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 11u);
}

TEST(Backward, BadArgsAreNamed) {
  KernelMetadata m = backwardMetadata();
  auto errorOf = [&](const BackwardArgs &args) {
    auto shape = validateBackwardArgs(m, args);
    return shape ? std::string() : toString(shape.takeError());
  };
  BackwardArgs args = backwardArgs(1, 4, 4, 128, 128);
  args[TensorId::DQ].data = 0;
  EXPECT_NE(errorOf(args).find("dq is missing"), std::string::npos);

  args = backwardArgs(1, 4, 4, 128, 128);
  args[TensorId::DK].sizes[2] = 127;
  EXPECT_NE(errorOf(args).find("dk has shape [1, 4, 127, 128]; expected [1, "
                               "4, 128, 128], the shape of k"),
            std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 3, 128, 128);
  EXPECT_NE(errorOf(args).find("k has 3 heads, which does not divide q's 4"),
            std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 4, 128, 128);
  args[TensorId::LSE].strides[1] = 256;
  args[TensorId::LSE].strides[0] = 1024;
  EXPECT_NE(errorOf(args).find("lse has strides"), std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 4, 128, 128);
  args[TensorId::DO].dtype = DType::F16;
  EXPECT_NE(errorOf(args).find("do has dtype f16"), std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 4, 128, 128);
  args[TensorId::O].strides[2] = 100; // 200 bytes: not a multiple of 16
  EXPECT_NE(errorOf(args).find("o stride 100 of dimension 2"),
            std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 4, 128, 128, 64);
  EXPECT_NE(errorOf(args).find("q has head_dim 64"), std::string::npos)
      << errorOf(args);

  args = backwardArgs(1, 4, 4, 0, 128);
  EXPECT_NE(errorOf(args).find("q [1, 4, 0, 128] is empty"), std::string::npos)
      << errorOf(args);
  args = backwardArgs(1, 4, 4, 128, 0);
  EXPECT_NE(errorOf(args).find("k [1, 4, 0, 128] has seq_k = 0"),
            std::string::npos)
      << errorOf(args);

  // A forward kernel has no backward launches.
  auto shape =
      validateBackwardArgs(validMetadata(), backwardArgs(1, 4, 4, 8, 8));
  ASSERT_FALSE(bool(shape));
  EXPECT_NE(toString(shape.takeError()).find("is a forward kernel"),
            std::string::npos);
}

TEST(Backward, WorkspaceLayout) {
  ProblemShape shape;
  shape.batch = 2;
  shape.heads = 3;
  shape.seqQ = 100;
  shape.headDim = 128;
  WorkspaceLayout plain = backwardWorkspaceLayout(backwardMetadata(), shape);
  EXPECT_EQ(plain.offset[unsigned(Workspace::Delta)], 0u);
  // delta: 600 f32 = 2400 bytes, rounded up to 256.
  EXPECT_EQ(plain.offset[unsigned(Workspace::DqAccum)], 2560u);
  EXPECT_EQ(plain.bytes, 2560u + 600u * 128u * 4u);
  WorkspaceLayout det = backwardWorkspaceLayout(backwardMetadata(true), shape);
  // Two query tiles per (batch, head): 12 turn words.
  EXPECT_EQ(det.offset[unsigned(Workspace::DqTurns)], plain.bytes);
  EXPECT_EQ(det.bytes, plain.bytes + 256u);
}

TEST(Backward, ParamBytes) {
  KernelMetadata m = backwardMetadata(true);
  BackwardArgs args = backwardArgs(2, 8, 2, 300, 700);
  auto shape = validateBackwardArgs(m, args);
  ASSERT_TRUE(bool(shape));
  WorkspaceLayout layout = backwardWorkspaceLayout(m, *shape);
  const uint64_t workspace = 0x7000000;
  std::vector<TensorId> encoded;
  auto encode = [&](const TensorMapRequest &r, void *out) {
    encoded.push_back(r.tensor);
    EXPECT_EQ(r.rank, 4u);
    EXPECT_EQ(r.box[0], 64u);
    EXPECT_EQ(r.box[1], 64u);
    std::memset(out, 0xab, kTmaDescriptorBytes);
    return Error::success();
  };

  auto pre =
      packBackwardParams(m, m.launches[0], args, *shape, workspace, encode);
  ASSERT_TRUE(bool(pre)) << toString(pre.takeError());
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(0)), args[TensorId::O].data);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(1)), args[TensorId::DO].data);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(2)), workspace);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(3)),
            workspace + layout.offset[unsigned(Workspace::DqAccum)]);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(4)),
            workspace + layout.offset[unsigned(Workspace::DqTurns)]);
  EXPECT_EQ(read<int32_t>((*pre)->bytes(5)), 300);           // seq_q
  EXPECT_EQ(read<int32_t>((*pre)->bytes(6)), 8);             // heads
  EXPECT_EQ(read<int64_t>((*pre)->bytes(7)), 8 * 300 * 128); // stride_o_b
  EXPECT_EQ(read<int64_t>((*pre)->bytes(12)), 128);          // stride_do_n
  EXPECT_TRUE(encoded.empty());

  auto main =
      packBackwardParams(m, m.launches[1], args, *shape, workspace, encode);
  ASSERT_TRUE(bool(main)) << toString(main.takeError());
  EXPECT_EQ(encoded, (std::vector<TensorId>{TensorId::Q, TensorId::K,
                                            TensorId::V, TensorId::DO}));
  EXPECT_EQ((*main)->bytes(0).size(), kTmaDescriptorBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*main)->pointers()[0]) % 64, 0u);
  EXPECT_EQ(read<uint64_t>((*main)->bytes(4)), args[TensorId::LSE].data);
  EXPECT_EQ(read<uint64_t>((*main)->bytes(7)), args[TensorId::DK].data);
  EXPECT_EQ(read<int32_t>((*main)->bytes(11)), 700); // seq_k
  EXPECT_FLOAT_EQ(read<float>((*main)->bytes(12)),
                  float(m.scale * M_LOG2E));                   // scale_log2
  EXPECT_EQ(read<int32_t>((*main)->bytes(13)), 4);             // kv_group
  EXPECT_EQ(read<int64_t>((*main)->bytes(15)), 2 * 700 * 128); // stride_dk_b
  EXPECT_EQ(read<int64_t>((*main)->bytes(16)), 700 * 128);     // stride_dk_h

  auto post =
      packBackwardParams(m, m.launches[2], args, *shape, workspace, encode);
  ASSERT_TRUE(bool(post)) << toString(post.takeError());
  EXPECT_EQ(read<uint64_t>((*post)->bytes(1)), args[TensorId::DQ].data);
  EXPECT_FLOAT_EQ(read<float>((*post)->bytes(4)), float(m.scale));
}

} // namespace

namespace {

/// backwardMetadataJson with attention sinks, as flashc writes it: the pre
/// launch also takes lse, the sink_partials workspace and the sinks, the
/// post launch sink_partials and dsinks.
json::Object sinksBackwardJson() {
  json::Object m = backwardMetadataJson(false);
  m["captures"] = json::Array{
      json::Object{{"role", "sinks"}, {"dtype", "f32"}, {"rank", 1}},
      json::Object{{"role", "dsinks"}, {"dtype", "f32"}, {"rank", 1}}};
  json::Array &launches = *m.getArray("launches");
  auto memref = [](int64_t capture) {
    return json::Object{{"kind", "memref"}, {"capture", capture}, {"rank", 1}};
  };
  append(*launches[0].getAsObject()->getArray("params"),
         json::Array{param("ptr", "tensor", "lse"),
                     param("workspace", "name", "sink_partials"), memref(0)});
  append(*launches[2].getAsObject()->getArray("params"),
         json::Array{param("workspace", "name", "sink_partials"), memref(1)});
  return m;
}

TEST(Backward, SinksTakeTheirGradientAndAWorkspace) {
  auto meta = parseKernelMetadata(toText(sinksBackwardJson()));
  ASSERT_TRUE(bool(meta)) << toString(meta.takeError());
  BackwardArgs args = backwardArgs(2, 8, 2, 300, 700);
  TensorArg sinks;
  sinks.data = 0x9000000;
  sinks.dtype = DType::F32;
  sinks.rank = 1;
  sinks.sizes[0] = 8;
  sinks.strides[0] = 1;
  TensorArg dsinks = sinks;
  dsinks.data = 0x9100000;
  args.captures = {sinks, dsinks};
  auto shape = validateBackwardArgs(*meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());

  // 2 x 8 heads x 5 query tiles x 4 warps of partials after dQ's
  // accumulator.
  WorkspaceLayout layout = backwardWorkspaceLayout(*meta, *shape);
  WorkspaceLayout plain = backwardWorkspaceLayout(backwardMetadata(), *shape);
  EXPECT_EQ(layout.offset[unsigned(Workspace::SinkPartials)], plain.bytes);
  EXPECT_EQ(layout.bytes, plain.bytes + alignTo(2 * 8 * 5 * 4 * 4, 256));

  const uint64_t workspace = 0x7000000;
  auto encode = [](const TensorMapRequest &, void *) {
    return Error::success();
  };
  auto pre = packBackwardParams(*meta, meta->launches[0], args, *shape,
                                workspace, encode);
  ASSERT_TRUE(bool(pre)) << toString(pre.takeError());
  // o, do, delta, dq_accum, seq_q, heads, 6 strides, lse, partials, then
  // the sinks' descriptor: ptr, ptr, 0, [8], [1].
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(12)), args[TensorId::LSE].data);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(13)),
            workspace + layout.offset[unsigned(Workspace::SinkPartials)]);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(14)), sinks.data);
  EXPECT_EQ(read<uint64_t>((*pre)->bytes(15)), sinks.data);
  EXPECT_EQ(read<int64_t>((*pre)->bytes(16)), 0);
  EXPECT_EQ(read<int64_t>((*pre)->bytes(17)), 8);
  EXPECT_EQ(read<int64_t>((*pre)->bytes(18)), 1);
  EXPECT_EQ((*pre)->size(), 19u);
  auto post = packBackwardParams(*meta, meta->launches[2], args, *shape,
                                 workspace, encode);
  ASSERT_TRUE(bool(post)) << toString(post.takeError());
  EXPECT_EQ(read<uint64_t>((*post)->bytes(9)), dsinks.data);

  // dsinks must be there, one per query head.
  args.captures.pop_back();
  auto missing = validateBackwardArgs(*meta, args);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(toString(missing.takeError())
                .find("1 captures were given; kernel attention_backward "
                      "takes 2: sinks (f32, rank 1), dsinks (f32, rank 1)"),
            std::string::npos);
  // Sinks without their gradient is not a backward pass flashc writes.
  json::Object half = sinksBackwardJson();
  half.getArray("captures")->pop_back();
  half.getArray("launches")
      ->back()
      .getAsObject()
      ->getArray("params")
      ->pop_back();
  EXPECT_NE(parseError(half).find("takes both the sinks and their gradient"),
            std::string::npos);
}

} // namespace

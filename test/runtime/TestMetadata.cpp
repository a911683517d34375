//===- TestMetadata.cpp - Metadata fixtures for runtime unit tests --------===//
//
// Builds the fixture metadata and argument sets shared by the unit tests.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>

using namespace llvm;

namespace flashc::rt::test {

json::Object validMetadataJson() {
  json::Array params;
  for (const char *t : {"q", "k", "v", "o", "lse"})
    params.push_back(json::Object{{"kind", "ptr"}, {"tensor", t}});
  for (const char *v : {"seq_q", "seq_k", "heads"})
    params.push_back(json::Object{{"kind", "i32"}, {"value", v}});
  for (const char *t : {"q", "k", "v", "o"})
    for (const char *d : {"b", "h", "n"})
      params.push_back(json::Object{
          {"kind", "i64"}, {"value", std::string("stride_") + t + "_" + d}});
  params.push_back(json::Object{{"kind", "i64"}, {"value", "stride_lse_b"}});
  params.push_back(json::Object{{"kind", "i64"}, {"value", "stride_lse_h"}});
  params.push_back(json::Object{{"kind", "f32"}, {"value", "scale_log2"}});
  return json::Object{
      {"format", "flashc-kernel"},
      {"format_version", 1},
      {"flashc_version", "0.1.0"},
      {"source_hash", "abc123"},
      {"kernel", "ref_attention_bf16_d128_full"},
      {"binary", "ref_attention_bf16_d128_full.cubin"},
      {"binary_format", "cubin"},
      {"arch", "sm_90a"},
      {"dtype", "bf16"},
      {"head_dim", 128},
      {"causal", false},
      {"scale", 0.08838834764831845},
      {"has_lse", true},
      {"block", json::Array{64, 1, 1}},
      {"cluster", json::Array{1, 1, 1}},
      {"shared_memory_bytes", 74240},
      {"grid", json::Object{{"kind", "tiles"}, {"block_m", 64}}},
      {"config", json::Object{{"block_m", 64}, {"block_n", 32}}},
      {"params", std::move(params)},
  };
}

std::string toText(const json::Object &obj) {
  std::string s;
  raw_string_ostream os(s);
  os << json::Value(json::Object(obj));
  return s;
}

KernelMetadata validMetadata() {
  auto meta = parseKernelMetadata(toText(validMetadataJson()));
  if (!meta) {
    errs() << "fixture metadata does not parse: " << toString(meta.takeError())
           << "\n";
    std::abort();
  }
  return std::move(*meta);
}

json::Object packedMetadataJson() {
  json::Object obj = validMetadataJson();
  obj["grid"] = json::Object{{"kind", "packed"}, {"block_m", 128}};
  json::Array *params = obj.getArray("params");
  params->push_back(json::Object{{"kind", "ptr"}, {"tensor", "cu_seqlens_q"}});
  params->push_back(json::Object{{"kind", "ptr"}, {"tensor", "cu_seqlens_k"}});
  return obj;
}

KernelMetadata packedMetadata() {
  auto meta = parseKernelMetadata(toText(packedMetadataJson()));
  if (!meta) {
    errs() << "packed fixture metadata does not parse: "
           << toString(meta.takeError()) << "\n";
    std::abort();
  }
  return std::move(*meta);
}

namespace {
json::Object param(StringRef kind, StringRef key, StringRef value) {
  return json::Object{{"kind", kind.str()}, {key.str(), value.str()}};
}

json::Object tma(StringRef tensor, bool groupRows = false) {
  json::Object p{{"kind", "tma"},
                 {"tensor", tensor.str()},
                 {"box", json::Array{64, 64}},
                 {"swizzle", 128},
                 {"rank", 4}};
  if (groupRows)
    p["view"] = "group_rows";
  return p;
}
} // namespace

json::Object decodeMetadataJson(int64_t pageSize, bool packGqa) {
  json::Array split{tma("q", packGqa), tma("k"), tma("v")};
  if (pageSize)
    for (const char *t : {"page_table", "cache_seqlens"})
      split.push_back(param("ptr", "tensor", t));
  for (const char *w : {"partial_out", "partial_lse"})
    split.push_back(param("workspace", "name", w));
  for (const char *v : {"seq_q", "seq_k", "heads", "kv_group", "batch",
                        "num_splits", "num_pages", "page_table_cols"})
    split.push_back(param("i32", "value", v));
  split.push_back(param("i64", "value", "stride_k_b"));
  split.push_back(param("f32", "value", "scale_log2"));
  json::Array combine{param("workspace", "name", "partial_out"),
                      param("workspace", "name", "partial_lse"),
                      param("ptr", "tensor", "o"),
                      param("ptr", "tensor", "lse"),
                      param("i32", "value", "num_splits"),
                      param("i32", "value", "seq_q"),
                      param("i32", "value", "heads")};
  for (const char *d : {"b", "h", "n"})
    combine.push_back(param("i64", "value", std::string("stride_o_") + d));
  auto launch = [](StringRef role, StringRef kernel, bool splits, int64_t smem,
                   json::Array params) {
    json::Object l{
        {"role", role.str()},
        {"kernel", kernel.str()},
        {"block", json::Array{splits ? 256 : 128, 1, 1}},
        {"shared_memory_bytes", smem},
        {"grid",
         json::Object{{"kind", "decode"}, {"block_m", 64}, {"splits", splits}}},
        {"params", std::move(params)}};
    // The combine waits for the splits itself, as flashc's does.
    if (!splits)
      l["programmatic"] = true;
    return l;
  };
  json::Object m = validMetadataJson();
  m["kernel"] = "attention_decode";
  m["binary"] = "attention_decode.cubin";
  m["pass"] = "decode";
  m["pack_gqa"] = packGqa;
  m["page_size"] = pageSize;
  m["block"] = json::Array{256, 1, 1};
  m["shared_memory_bytes"] = 98304;
  m["grid"] =
      json::Object{{"kind", "decode"}, {"block_m", 64}, {"splits", true}};
  m["config"] = json::Object{
      {"block_m", 64}, {"block_n", 128}, {"stages", 2}, {"warpgroups", 1}};
  m["params"] = json::Array(split);
  m["launches"] = json::Array{
      launch("split", "attention_decode", true, 98304, std::move(split)),
      launch("combine", "attention_decode_combine", false, 0,
             std::move(combine))};
  return m;
}

KernelMetadata decodeMetadata(int64_t pageSize, bool packGqa) {
  auto meta =
      parseKernelMetadata(toText(decodeMetadataJson(pageSize, packGqa)));
  if (!meta) {
    errs() << "decoding fixture metadata does not parse: "
           << toString(meta.takeError()) << "\n";
    std::abort();
  }
  return std::move(*meta);
}

LaunchArgs packedArgs(const KernelMetadata &meta, int64_t h,
                      const std::vector<int64_t> &lensQ,
                      const std::vector<int64_t> &lensK) {
  int64_t tq = 0, tk = 0, longest = 0;
  for (int64_t n : lensQ) {
    tq += n;
    longest = std::max(longest, n);
  }
  for (int64_t n : lensK)
    tk += n;
  LaunchArgs args = validArgs(meta, 1, h, tq, tk);
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O}) {
    TensorArg &t = args[id];
    t.strides[0] = t.sizes[2] * h * 128;
    t.strides[1] = 128;
    t.strides[2] = h * 128;
  }
  uint64_t address = 0x7f0000000000 + 5 * 0x10000000;
  for (auto [arg, lens] : {std::pair{&args.cuSeqlensQ, &lensQ},
                           std::pair{&args.cuSeqlensK, &lensK}}) {
    arg->data = address;
    address += 0x10000;
    arg->dtype = DType::I32;
    arg->rank = 1;
    arg->sizes[0] = int64_t(lens->size()) + 1;
    arg->strides[0] = 1;
  }
  args.maxSeqlenQ = longest;
  return args;
}

ParamSpec tensorMapSpec(ParamSpec::Kind kind, TensorId tensor, int64_t rows,
                        int64_t cols, unsigned rank) {
  ParamSpec p;
  p.kind = kind;
  p.tensor = tensor;
  p.box[0] = rows;
  p.box[1] = cols;
  p.swizzle = 128;
  p.rank = rank;
  return p;
}

LaunchArgs validArgs(const KernelMetadata &meta, int64_t b, int64_t h,
                     int64_t nq, int64_t nk) {
  LaunchArgs args;
  int64_t d = meta.headDim;
  uint64_t base = 0x7f0000000000;
  for (unsigned i = 0; i < 4; ++i) {
    TensorArg &t = args.tensors[i];
    int64_t n = (i == 1 || i == 2) ? nk : nq;
    t.data = base + i * 0x10000000;
    t.dtype = meta.dtype;
    t.rank = 4;
    int64_t sizes[4] = {b, h, n, d}, strides[4] = {h * n * d, n * d, d, 1};
    for (unsigned k = 0; k < 4; ++k)
      t.sizes[k] = sizes[k], t.strides[k] = strides[k];
  }
  if (meta.hasLse) {
    TensorArg &t = args[TensorId::LSE];
    t.data = base + 4 * 0x10000000;
    t.dtype = DType::F32;
    t.rank = 3;
    int64_t sizes[3] = {b, h, nq}, strides[3] = {h * nq, nq, 1};
    for (unsigned k = 0; k < 3; ++k)
      t.sizes[k] = sizes[k], t.strides[k] = strides[k];
  }
  return args;
}

} // namespace flashc::rt::test

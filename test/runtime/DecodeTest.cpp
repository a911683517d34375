//===- DecodeTest.cpp - the decoding pass's launches, without a GPU -------===//
//
// kernel.json's "pass": "decode" (TestMetadata's decodeMetadataJson: a
// split and a combine launch over a paged or contiguous cache, with or
// without GQA packing), the checks of a decoding call's tensors, the split
// count's rule, the workspace and each launch's parameter bytes, the
// "group_rows" map of q among them.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/Decode.h"

#include "llvm/Support/MathExtras.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

std::string parseError(const json::Object &m) {
  auto meta = parseKernelMetadata(toText(m));
  return meta ? "<ok>" : toString(meta.takeError());
}

json::Array &launchParams(json::Object &m, unsigned launch) {
  return *(*m.getArray("launches"))[launch].getAsObject()->getArray("params");
}

TensorArg tensor(DType dtype, ArrayRef<int64_t> sizes,
                 ArrayRef<int64_t> strides, uint64_t data) {
  TensorArg t;
  t.data = data;
  t.dtype = dtype;
  t.rank = unsigned(sizes.size());
  std::copy(sizes.begin(), sizes.end(), t.sizes);
  std::copy(strides.begin(), strides.end(), t.strides);
  return t;
}

/// q, o dense B x H x Sq x 128 bf16, lse dense B x H x Sq.
DecodeArgs queries(int64_t b, int64_t h, int64_t sq) {
  const int64_t d = 128;
  DecodeArgs args;
  args.q = tensor(DType::BF16, {b, h, sq, d}, {h * sq * d, sq * d, d, 1},
                  0x10000000);
  args.o = tensor(DType::BF16, {b, h, sq, d}, {h * sq * d, sq * d, d, 1},
                  0x20000000);
  args.lse = tensor(DType::F32, {b, h, sq}, {h * sq, sq, 1}, 0x30000000);
  return args;
}

/// A paged call: vLLM's num_pages x P x H_kv x 128 pages viewed [num_pages,
/// H_kv, P, 128], a dense B x max_pages table and B lengths.
DecodeArgs pagedArgs(int64_t b, int64_t h, int64_t hkv, int64_t sq,
                     int64_t numPages, int64_t page, int64_t maxPages) {
  const int64_t d = 128;
  DecodeArgs args = queries(b, h, sq);
  int64_t strides[4] = {page * hkv * d, d, hkv * d, 1};
  args.kCache =
      tensor(DType::BF16, {numPages, hkv, page, d}, strides, 0x40000000);
  args.vCache =
      tensor(DType::BF16, {numPages, hkv, page, d}, strides, 0x50000000);
  args.pageTable = tensor(DType::I32, {b, maxPages}, {maxPages, 1}, 0x60000000);
  args.cacheSeqlens = tensor(DType::I32, {b}, {1}, 0x60100000);
  return args;
}

/// A contiguous call: flash_attn_with_kvcache's B x Nk x H_kv x 128 cache
/// viewed [B, H_kv, Nk, 128].
DecodeArgs contiguousArgs(int64_t b, int64_t h, int64_t hkv, int64_t sq,
                          int64_t nk) {
  const int64_t d = 128;
  DecodeArgs args = queries(b, h, sq);
  int64_t strides[4] = {nk * hkv * d, d, hkv * d, 1};
  args.kCache = tensor(DType::BF16, {b, hkv, nk, d}, strides, 0x40000000);
  args.vCache = tensor(DType::BF16, {b, hkv, nk, d}, strides, 0x50000000);
  return args;
}

std::string errorOf(const KernelMetadata &m, const DecodeArgs &args) {
  auto shape = validateDecodeArgs(m, args);
  return shape ? "<ok>" : toString(shape.takeError());
}

template <typename T> T read(ArrayRef<uint8_t> bytes) {
  EXPECT_EQ(bytes.size(), sizeof(T));
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

#define EXPECT_HAS(haystack, needle)                                           \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << haystack

TEST(Decode, MetadataHasTwoLaunches) {
  KernelMetadata m = decodeMetadata(64, true);
  EXPECT_TRUE(m.decode);
  EXPECT_FALSE(m.backward);
  EXPECT_TRUE(m.packGqa);
  EXPECT_EQ(m.pageSize, 64);
  EXPECT_EQ(m.gridKind, GridKind::Decode);
  EXPECT_EQ(m.gridBlockM, 64);
  ASSERT_EQ(m.launches.size(), 2u);
  const LaunchSpec &split = m.launches[0], &combine = m.launches[1];
  EXPECT_EQ(split.role, "split");
  EXPECT_EQ(split.kernel, "attention_decode");
  EXPECT_EQ(split.gridKind, GridKind::Decode);
  EXPECT_EQ(split.gridBlock, 64);
  EXPECT_TRUE(split.splits);
  EXPECT_EQ(split.sharedMemoryBytes, 98304u);
  EXPECT_EQ(combine.role, "combine");
  EXPECT_EQ(combine.kernel, "attention_decode_combine");
  EXPECT_FALSE(combine.splits);
  EXPECT_FALSE(split.programmatic);
  EXPECT_TRUE(combine.programmatic);
  EXPECT_EQ(combine.block[0], 128u);
  // q through the group view, k and v as today's rank-4 maps.
  EXPECT_EQ(split.params[0].kind, ParamSpec::Kind::Tma);
  EXPECT_TRUE(split.params[0].groupRows);
  EXPECT_EQ(split.params[0].rank, 4u);
  EXPECT_FALSE(split.params[1].groupRows);
  EXPECT_EQ(split.params[1].tensor, TensorId::K);
  EXPECT_EQ(split.params[3].kind, ParamSpec::Kind::Ptr);
  EXPECT_EQ(split.params[3].tensor, TensorId::PageTable);
  EXPECT_EQ(split.params[4].tensor, TensorId::CacheSeqlens);
  EXPECT_EQ(split.params[5].kind, ParamSpec::Kind::Workspace);
  EXPECT_EQ(split.params[5].workspace, Workspace::PartialOut);
  EXPECT_EQ(split.params[6].workspace, Workspace::PartialLse);
  EXPECT_EQ(split.params[12].scalar, ScalarKind::NumSplits);
  EXPECT_EQ(split.params[13].scalar, ScalarKind::NumPages);
  EXPECT_EQ(split.params[14].scalar, ScalarKind::PageTableCols);
  EXPECT_EQ(combine.params[3].tensor, TensorId::LSE);
  // The top level's parameters are the split launch's, for the binary
  // check.
  EXPECT_EQ(m.params.size(), split.params.size());

  KernelMetadata contiguous = decodeMetadata(0, false);
  EXPECT_EQ(contiguous.pageSize, 0);
  EXPECT_FALSE(contiguous.packGqa);
  EXPECT_FALSE(contiguous.launches[0].params[0].groupRows);
}

TEST(Decode, MetadataErrorsNameTheField) {
  json::Object m = decodeMetadataJson(64, true);
  m.getArray("launches")->pop_back();
  EXPECT_HAS(parseError(m), "launches: must be an array of 2 launches (split, "
                            "combine)");
  m = decodeMetadataJson(64, true);
  m.erase("launches");
  EXPECT_HAS(parseError(m), "launches: missing");

  m = decodeMetadataJson(64, true);
  std::swap((*m.getArray("launches"))[0], (*m.getArray("launches"))[1]);
  EXPECT_HAS(parseError(m), "launches[0].role: must be \"split\"");

  // The group view is q's, in a pack_gqa kernel.
  m = decodeMetadataJson(64, true);
  (*launchParams(m, 0)[1].getAsObject())["view"] = "group_rows";
  EXPECT_HAS(parseError(m), "params[1].view: \"group_rows\" is a rank-4 tma "
                            "of q's only, not of k");
  m = decodeMetadataJson(64, false);
  (*launchParams(m, 0)[0].getAsObject())["view"] = "group_rows";
  EXPECT_HAS(parseError(m), "a decoding kernel's with pack_gqa");
  m = decodeMetadataJson(64, true);
  (*launchParams(m, 0)[0].getAsObject())["view"] = "rows";
  EXPECT_HAS(parseError(m), "params[0].view: must be \"group_rows\"");
  json::Object f = validMetadataJson();
  f.getArray("params")->push_back(json::Object{{"kind", "tma"},
                                               {"tensor", "q"},
                                               {"box", json::Array{64, 64}},
                                               {"rank", 4},
                                               {"view", "group_rows"}});
  EXPECT_HAS(parseError(f), "a decoding kernel's with pack_gqa");

  m = decodeMetadataJson(8, false);
  EXPECT_HAS(parseError(m), "page_size: 8 is neither 0");
  m = decodeMetadataJson(64, false);
  m.erase("pack_gqa");
  EXPECT_HAS(parseError(m), "pack_gqa: missing");
  // A paged kernel reads the page table; a contiguous one none.
  m = decodeMetadataJson(64, false);
  launchParams(m, 0).erase(launchParams(m, 0).begin() + 3);
  EXPECT_HAS(parseError(m), "page_size is 64 but no launch passes page_table");
  m = decodeMetadataJson(0, false);
  launchParams(m, 1).push_back(
      json::Object{{"kind", "ptr"}, {"tensor", "cache_seqlens"}});
  EXPECT_HAS(parseError(m), "a launch passes cache_seqlens but page_size is 0");
  m = decodeMetadataJson(64, false);
  (*launchParams(m, 0)[3].getAsObject())["kind"] = "memref";
  EXPECT_HAS(parseError(m), "page_table is passed by pointer");

  // Only a launch after another can be its programmatic dependent.
  m = decodeMetadataJson(64, false);
  (*(*m.getArray("launches"))[0].getAsObject())["programmatic"] = true;
  EXPECT_HAS(parseError(m), "launches[0].programmatic: the pass's first "
                            "launch has no launch before it");
  m = decodeMetadataJson(64, false);
  (*(*m.getArray("launches"))[1].getAsObject())["programmatic"] = 1;
  EXPECT_HAS(parseError(m), "launches[1].programmatic: must be true or false");

  // The split launch's z is the splits, the combine's 1.
  m = decodeMetadataJson(64, false);
  (*(*m.getArray("launches"))[1].getAsObject()->getObject("grid"))["splits"] =
      true;
  EXPECT_HAS(parseError(m), "launches[1].grid.splits: must be false");
  m = decodeMetadataJson(64, false);
  (*m.getArray("launches"))[0].getAsObject()->getObject("grid")->erase(
      "splits");
  EXPECT_HAS(parseError(m), "launches[0].grid.splits: must be true");
  m = decodeMetadataJson(64, false);
  (*(*m.getArray("launches"))[0].getAsObject()->getObject("grid"))["kind"] =
      "tiles";
  EXPECT_HAS(parseError(m), "launches[0].grid.kind: must be \"decode\"");
  m = decodeMetadataJson(64, false);
  m["grid"] = json::Object{{"kind", "tiles"}, {"block_m", 64}};
  EXPECT_HAS(parseError(m), "a decoding kernel's grid is \"decode\"");
  m = decodeMetadataJson(64, false);
  m.getObject("config")->erase("block_n");
  EXPECT_HAS(parseError(m), "config.block_n");
  // Rank-2 and 3 maps need B and H (and N) to merge: not a cache's view.
  m = decodeMetadataJson(64, false);
  (*launchParams(m, 0)[1].getAsObject())["rank"] = 3;
  EXPECT_HAS(parseError(m), "launches[0].params[1]: a decoding launch takes");
  m = decodeMetadataJson(64, false);
  launchParams(m, 1).push_back(
      json::Object{{"kind", "workspace"}, {"name", "dq_accum"}});
  EXPECT_HAS(parseError(m), "'dq_accum' is a parameter of the backward pass");
  m = decodeMetadataJson(64, false);
  launchParams(m, 1).pop_back();
  launchParams(m, 1).pop_back();
  launchParams(m, 1).pop_back();
  launchParams(m, 1).erase(launchParams(m, 1).begin() + 2);
  EXPECT_HAS(parseError(m), "no launch passes tensor o");
  m = decodeMetadataJson(64, false);
  m["has_lse"] = false;
  EXPECT_HAS(parseError(m), "has_lse: is false but a launch passes lse");

  // The decoding pass's tensors, workspaces and values are its own.
  for (json::Object p :
       {json::Object{{"kind", "ptr"}, {"tensor", "page_table"}},
        json::Object{{"kind", "workspace"}, {"name", "partial_lse"}},
        json::Object{{"kind", "i32"}, {"value", "num_splits"}},
        json::Object{{"kind", "i64"}, {"value", "page_table_cols"}}}) {
    f = validMetadataJson();
    f.getArray("params")->push_back(std::move(p));
    EXPECT_HAS(parseError(f), "is a parameter of the decoding pass");
  }
  f = validMetadataJson();
  f.getArray("params")->push_back(
      json::Object{{"kind", "i64"}, {"value", "stride_page_table_b"}});
  EXPECT_HAS(parseError(f), "unknown value 'stride_page_table_b'");
  f = validMetadataJson();
  f["pass"] = "decoding";
  EXPECT_HAS(parseError(f), "pass: must be \"forward\", \"backward\" or "
                            "\"decode\"");
}

TEST(Decode, ValidPagedArgs) {
  KernelMetadata m = decodeMetadata(64, true);
  // B = 3, 32 query heads over 8 K/V heads, 4 new tokens, 100 pages of 64,
  // 5 pages a batch at most.
  DecodeArgs args = pagedArgs(3, 32, 8, 4, 100, 64, 5);
  args.numSplits = 3;
  auto shape = validateDecodeArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->batch, 3);
  EXPECT_EQ(shape->heads, 32);
  EXPECT_EQ(shape->kvHeads, 8);
  EXPECT_EQ(shape->kvGroup(), 4);
  EXPECT_EQ(shape->seqQ, 4);
  EXPECT_EQ(shape->seqK, 64); // the page's rows
  EXPECT_EQ(shape->numSplits, 3);
  EXPECT_EQ(shape->numPages, 100);
  EXPECT_EQ(shape->pageTableCols, 5);
  // Packed: R = G * Sq = 16 rows of 32 K/V heads' programs.
  EXPECT_EQ(decodeRows(m, *shape), 16);
  EXPECT_EQ(decodeHeads(m, *shape), 8);
  unsigned grid[3];
  decodeGrid(m, m.launches[0], *shape, grid);
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[1], 24u);
  EXPECT_EQ(grid[2], 3u);
  decodeGrid(m, m.launches[1], *shape, grid);
  EXPECT_EQ(grid[2], 1u);
  // Without packing: R = Sq, B x H programs.
  KernelMetadata plain = decodeMetadata(64, false);
  shape = validateDecodeArgs(plain, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  decodeGrid(plain, plain.launches[0], *shape, grid);
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[1], 96u);
  EXPECT_EQ(grid[2], 3u);
  // 65 rows a program: two row blocks of 64.
  shape = validateDecodeArgs(plain, pagedArgs(1, 2, 2, 65, 10, 64, 3));
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  decodeGrid(plain, plain.launches[0], *shape, grid);
  EXPECT_EQ(grid[0], 2u);
}

TEST(Decode, ValidContiguousArgs) {
  KernelMetadata m = decodeMetadata(0, true);
  DecodeArgs args = contiguousArgs(2, 32, 1, 1, 5000);
  args.numSplits = 7;
  auto shape = validateDecodeArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->seqK, 5000);
  EXPECT_EQ(shape->numPages, 2); // B
  EXPECT_EQ(shape->pageTableCols, 0);
  EXPECT_EQ(shape->kvGroup(), 32);
  unsigned grid[3];
  decodeGrid(m, m.launches[0], *shape, grid);
  EXPECT_EQ(grid[0], 1u); // 32 rows
  EXPECT_EQ(grid[1], 2u);
  EXPECT_EQ(grid[2], 7u);
}

TEST(Decode, BadArgsAreNamed) {
  KernelMetadata paged = decodeMetadata(64, false);
  DecodeArgs args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  ASSERT_EQ(errorOf(paged, args), "<ok>");

  args.pageTable = tensor(DType::I32, {2, 5}, {5, 1}, 0x60000000);
  EXPECT_HAS(errorOf(paged, args),
             "page_table is int32 [2, 5]; the kernel needs int32 [B=3, "
             "max_pages]");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.pageTable.dtype = DType::F32;
  EXPECT_HAS(errorOf(paged, args), "page_table is float32 [3, 5]");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.pageTable.strides[0] = 8; // rows padded apart
  EXPECT_HAS(errorOf(paged, args), "page_table strides (8, 1): the kernel "
                                   "reads page_table dense row-major");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.pageTable.data = 0;
  EXPECT_HAS(errorOf(paged, args), "page_table is missing: kernel "
                                   "attention_decode reads a paged cache");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.cacheSeqlens = tensor(DType::I32, {4}, {1}, 0x60100000);
  EXPECT_HAS(errorOf(paged, args),
             "cache_seqlens is int32 [4]; the kernel needs int32 [B=3]");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.cacheSeqlens.data = 0x60100002;
  EXPECT_HAS(errorOf(paged, args), "cache_seqlens data pointer 0x60100002 is "
                                   "not 4-byte aligned");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.cacheSeqlens.data = 0;
  EXPECT_HAS(errorOf(paged, args), "cache_seqlens is missing");

  // The cache's pages are the kernel's.
  args = pagedArgs(3, 8, 2, 1, 40, 32, 5);
  EXPECT_HAS(errorOf(paged, args), "k_cache is [40, 2, 32, 128]; kernel "
                                   "attention_decode reads pages of 64 rows");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.vCache.sizes[0] = 39;
  EXPECT_HAS(errorOf(paged, args), "v_cache has shape [39, 2, 64, 128]; "
                                   "expected [40, 2, 64, 128], the shape of "
                                   "k_cache");
  args = pagedArgs(3, 8, 3, 1, 40, 64, 5);
  EXPECT_HAS(errorOf(paged, args), "k_cache has 3 heads, which do not divide "
                                   "q's 8");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.kCache.strides[0] = 64 * 2 * 128 + 4; // 8 bytes off
  EXPECT_HAS(errorOf(paged, args), "k_cache stride 16388 of dimension 0");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.kCache.dtype = DType::F16;
  EXPECT_HAS(errorOf(paged, args), "k_cache has dtype f16");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.kCache.data = 0;
  EXPECT_HAS(errorOf(paged, args), "k_cache is missing");

  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.o.sizes[2] = 2;
  EXPECT_HAS(errorOf(paged, args), "o has shape [3, 8, 2, 128]; expected "
                                   "[3, 8, 1, 128], the shape of q");
  args = pagedArgs(3, 8, 2, 2, 40, 64, 5);
  args.lse.strides[1] = 4;
  args.lse.strides[0] = 32;
  EXPECT_HAS(errorOf(paged, args), "lse has strides (32, 4, 1); the kernel "
                                   "writes it dense, (16, 2, 1)");
  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.lse.data = 0;
  EXPECT_HAS(errorOf(paged, args), "lse is missing");
  args = pagedArgs(3, 8, 2, 0, 40, 64, 5);
  EXPECT_HAS(errorOf(paged, args), "q [3, 8, 0, 128] is empty");

  args = pagedArgs(3, 8, 2, 1, 40, 64, 5);
  args.numSplits = -1;
  EXPECT_HAS(errorOf(paged, args), "num_splits = -1; it must be at least 1");
  args.numSplits = 70000;
  EXPECT_HAS(errorOf(paged, args), "num_splits = 70000 is more than the "
                                   "grid's 65535 splits");
  // B x H programs along y.
  args = pagedArgs(3000, 32, 8, 1, 40, 64, 5);
  EXPECT_HAS(errorOf(paged, args), "batch x heads = 3000 x 32 = 96000 is "
                                   "more than the grid's 65535 rows");
  // Packed, B x H_kv: the same call fits.
  EXPECT_EQ(errorOf(decodeMetadata(64, true), args), "<ok>");

  // A contiguous cache is B x H_kv x Nk x D and takes no table.
  KernelMetadata contiguous = decodeMetadata(0, false);
  DecodeArgs flat = contiguousArgs(2, 8, 2, 1, 300);
  ASSERT_EQ(errorOf(contiguous, flat), "<ok>");
  flat.pageTable = tensor(DType::I32, {2, 5}, {5, 1}, 0x60000000);
  EXPECT_HAS(errorOf(contiguous, flat),
             "page_table was given but kernel attention_decode reads a "
             "contiguous cache (page_size 0)");
  flat = contiguousArgs(2, 8, 2, 1, 300);
  flat.cacheSeqlens = tensor(DType::I32, {2}, {1}, 0x60100000);
  EXPECT_HAS(errorOf(contiguous, flat), "cache_seqlens was given");
  flat = contiguousArgs(2, 8, 2, 1, 300);
  flat.kCache.sizes[0] = flat.vCache.sizes[0] = 3;
  EXPECT_HAS(errorOf(contiguous, flat), "k_cache is [3, 2, 300, 128]; the "
                                        "contiguous cache is [B=2, H_kv, Nk, "
                                        "D]");
  flat = contiguousArgs(2, 8, 2, 1, 0);
  EXPECT_HAS(errorOf(contiguous, flat), "holds no keys (Nk = 0)");

  // Other kernels and other calls.
  auto shape =
      validateDecodeArgs(validMetadata(), pagedArgs(1, 2, 2, 1, 4, 64, 2));
  ASSERT_FALSE(bool(shape));
  EXPECT_HAS(toString(shape.takeError()), "is no decoding kernel");
  auto forward = validateLaunchArgs(paged, validArgs(paged, 1, 2, 1, 64));
  ASSERT_FALSE(bool(forward));
  EXPECT_HAS(toString(forward.takeError()),
             "kernel attention_decode is a decoding pass: launch it with its "
             "K/V cache (flashrt_launch_decode)");
  BackwardArgs backward;
  auto grads = validateBackwardArgs(paged, backward);
  ASSERT_FALSE(bool(grads));
  EXPECT_HAS(toString(grads.takeError()), "flashrt_launch_decode");
}

TEST(Decode, GroupRowsViewNeedsOneRunOfRows) {
  KernelMetadata m = decodeMetadata(64, true);
  // Sq = 4: dense B x H x Sq x D has stride_h = Sq * stride_n.
  DecodeArgs args = pagedArgs(2, 8, 2, 4, 40, 64, 5);
  ASSERT_EQ(errorOf(m, args), "<ok>");
  // vLLM's queries, B x Sq x H x D viewed B x H x Sq x D: stride_h = D,
  // stride_n = H * D, so a group's rows are no run of one stride.
  args.q.strides[0] = 4 * 8 * 128;
  args.q.strides[1] = 128;
  args.q.strides[2] = 8 * 128;
  EXPECT_HAS(errorOf(m, args),
             "q strides (4096, 128, 1024, 1): kernel attention_decode reads "
             "each K/V head's 4 query heads as one run of G * Sq = 16 rows "
             "(pack_gqa), so stride_h must be Sq * stride_n = 4 * 1024 = "
             "4096, not 128");
  // The same q without packing takes any strides.
  EXPECT_EQ(errorOf(decodeMetadata(64, false), args), "<ok>");
  // One new token: the group's rows are its heads, any layout.
  args = pagedArgs(2, 8, 2, 1, 40, 64, 5);
  args.q.strides[0] = 8 * 128;
  args.q.strides[1] = 128;
  args.q.strides[2] = 2 * 8 * 128;
  EXPECT_EQ(errorOf(m, args), "<ok>");
  // One query head per K/V head: its rows are one head's.
  args = pagedArgs(2, 2, 2, 4, 40, 64, 5);
  args.q.strides[0] = 4 * 2 * 128;
  args.q.strides[1] = 128;
  args.q.strides[2] = 2 * 128;
  EXPECT_EQ(errorOf(m, args), "<ok>");
}

TEST(Decode, GroupRowsMap) {
  ParamSpec p = tensorMapSpec(ParamSpec::Kind::Tma, TensorId::Q, 64, 64, 4);
  p.groupRows = true;
  // B = 3, H = 32 over H_kv = 8, Sq = 4, dense: rows of one stride
  // (stride_n = D), a K/V head's group G * stride_h apart.
  TensorArg q = tensor(DType::BF16, {3, 32, 4, 128},
                       {32 * 4 * 128, 4 * 128, 128, 1}, 0x10000000);
  TensorMapRequest r = makeGroupRowsRequest(p, q, 8);
  EXPECT_EQ(r.rank, 4u);
  EXPECT_EQ(r.base, 0x10000000u);
  EXPECT_EQ(r.dims[0], 128u);
  EXPECT_EQ(r.dims[1], 16u); // G * Sq
  EXPECT_EQ(r.dims[2], 8u);  // H_kv
  EXPECT_EQ(r.dims[3], 3u);  // B
  EXPECT_EQ(r.strideBytes[0], 128u * 2);
  EXPECT_EQ(r.strideBytes[1], 4u * 4 * 128 * 2); // G * stride_h
  EXPECT_EQ(r.strideBytes[2], 32u * 4 * 128 * 2);
  EXPECT_EQ(r.box[0], 64u);
  EXPECT_EQ(r.box[1], 64u);
  EXPECT_EQ(r.box[2], 1u);
  EXPECT_EQ(r.box[3], 1u);
  EXPECT_EQ(r.swizzle, 128u);
  // Sq = 1 in vLLM's layout (B x 1 x H x D viewed B x H x 1 x D): the
  // rows are the heads, stride_h apart.
  q = tensor(DType::BF16, {3, 32, 1, 128}, {32 * 128, 128, 32 * 128, 1},
             0x10000000);
  r = makeGroupRowsRequest(p, q, 8);
  EXPECT_EQ(r.dims[1], 4u);
  EXPECT_EQ(r.strideBytes[0], 128u * 2);
  EXPECT_EQ(r.strideBytes[1], 4u * 128 * 2);
  EXPECT_EQ(r.strideBytes[2], 32u * 128 * 2);
  // One K/V head and one batch: their strides are never used and taken
  // dense (here the caller's are not multiples of 16 bytes).
  q = tensor(DType::BF16, {1, 32, 1, 128}, {3, 128, 5, 1}, 0x10000000);
  r = makeGroupRowsRequest(p, q, 1);
  EXPECT_EQ(r.dims[1], 32u);
  EXPECT_EQ(r.dims[2], 1u);
  EXPECT_EQ(r.strideBytes[1], 32u * 128 * 2);
  EXPECT_EQ(r.strideBytes[2], 32u * 128 * 2);
}

TEST(Decode, SplitRule) {
  // B = 1, H_kv = 8, packed 4 rows (G = 4, Sq = 1) of block_m 64: 8
  // programs on 132 SMs; 4k, 32k and 128k keys of block_n 128.
  EXPECT_EQ(decodeNumSplits(8, 4096 / 128, 132), 16);
  EXPECT_EQ(decodeNumSplits(8, 32768 / 128, 132), 14);
  EXPECT_EQ(decodeNumSplits(8, 131072 / 128, 132), 14);
  // B = 1, 32 heads unpacked: 32 programs, 4 splits fill 128 of 132 SMs.
  EXPECT_EQ(decodeNumSplits(32, 256, 132), 4);
  // 4k keys: 14 and 15 splits hold 3 tiles each, as 13 do; 16 is the
  // first within 85% of the best with a share of its own.
  EXPECT_EQ(decodeNumSplits(8, 32, 132), 16);
  // Programs that nearly fill the SMs (>= 0.8 x 132 = 105.6) are not split.
  EXPECT_EQ(decodeNumSplits(106, 256, 132), 1);
  EXPECT_EQ(decodeNumSplits(132, 256, 132), 1);
  EXPECT_EQ(decodeNumSplits(105, 256, 132), 5);
  // No more splits than key tiles.
  EXPECT_EQ(decodeNumSplits(8, 1, 132), 1);
  EXPECT_EQ(decodeNumSplits(8, 3, 132), 3);
  // At most 128: one program on 1000 SMs is best at 128 splits (12.8% of
  // a wave), and 109 is the first within 85% of that.
  EXPECT_EQ(decodeNumSplits(1, 100000, 1000), 109);
  // Degenerate inputs take one split.
  EXPECT_EQ(decodeNumSplits(0, 10, 132), 1);
  EXPECT_EQ(decodeNumSplits(8, 0, 132), 1);
}

TEST(Decode, RuleSplitsWhenNumSplitsIsZero) {
  KernelMetadata m = decodeMetadata(64, true);
  // B = 1, 32 query heads over 8, one new token; a table of 512 pages of
  // 64 (32k keys, 256 tiles of 128): 8 programs, 14 splits.
  DecodeArgs args = pagedArgs(1, 32, 8, 1, 600, 64, 512);
  auto shape = validateDecodeArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->numSplits, 14);
  // On a device of 8 SMs the programs fill it.
  shape = validateDecodeArgs(m, args, 8);
  ASSERT_TRUE(bool(shape));
  EXPECT_EQ(shape->numSplits, 1);
  // A caller's count wins.
  args.numSplits = 5;
  shape = validateDecodeArgs(m, args);
  ASSERT_TRUE(bool(shape));
  EXPECT_EQ(shape->numSplits, 5);
  // Contiguous: Nk's tiles (4096 keys: 32).
  KernelMetadata flat = decodeMetadata(0, true);
  shape = validateDecodeArgs(flat, contiguousArgs(1, 32, 8, 1, 4096));
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  EXPECT_EQ(shape->numSplits, 16);
}

TEST(Decode, WorkspaceLayout) {
  KernelMetadata m = decodeMetadata(64, true);
  ProblemShape shape;
  shape.batch = 3;
  shape.heads = 5;
  shape.seqQ = 2;
  shape.headDim = 128;
  shape.numSplits = 7;
  WorkspaceLayout layout = decodeWorkspaceLayout(m, shape);
  // partial_out: 7 x 3 x 5 x 2 rows of 128 f32 (a multiple of 256);
  // partial_lse: 210 f32 = 840 bytes, rounded up to 1024.
  EXPECT_EQ(layout.offset[unsigned(Workspace::PartialOut)], 0u);
  EXPECT_EQ(layout.offset[unsigned(Workspace::PartialLse)], 210u * 128 * 4);
  EXPECT_EQ(layout.bytes, 210u * 128 * 4 + 1024);
  shape.headDim = 8; // 210 x 8 x 4 = 6720 bytes: 6912 after alignment
  layout = decodeWorkspaceLayout(m, shape);
  EXPECT_EQ(layout.offset[unsigned(Workspace::PartialLse)], 6912u);
  EXPECT_EQ(layout.bytes, 6912u + 1024);
}

TEST(Decode, ParamBytes) {
  KernelMetadata m = decodeMetadata(64, true);
  DecodeArgs args = pagedArgs(3, 32, 8, 1, 100, 64, 5);
  args.numSplits = 4;
  auto shape = validateDecodeArgs(m, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  WorkspaceLayout layout = decodeWorkspaceLayout(m, *shape);
  const uint64_t workspace = 0x7000000;
  std::vector<TensorMapRequest> encoded;
  auto encode = [&](const TensorMapRequest &r, void *out) {
    encoded.push_back(r);
    std::memset(out, 0xab, kTmaDescriptorBytes);
    return Error::success();
  };
  auto split =
      packDecodeParams(m, m.launches[0], args, *shape, workspace, encode);
  ASSERT_TRUE(bool(split)) << toString(split.takeError());
  ASSERT_EQ(encoded.size(), 3u);
  // q through its group view: [B, H_kv, G * Sq, D] of vLLM's layout.
  EXPECT_EQ(encoded[0].tensor, TensorId::Q);
  EXPECT_EQ(encoded[0].dims[1], 4u);
  EXPECT_EQ(encoded[0].dims[2], 8u);
  EXPECT_EQ(encoded[0].strideBytes[0], 128u * 2); // stride_h (Sq = 1)
  EXPECT_EQ(encoded[0].strideBytes[1], 4u * 128 * 2);
  // k_cache as its [num_pages, H_kv, P, D] view, strides as given.
  EXPECT_EQ(encoded[1].tensor, TensorId::K);
  EXPECT_EQ(encoded[1].base, args.kCache.data);
  EXPECT_EQ(encoded[1].dims[1], 64u);
  EXPECT_EQ(encoded[1].dims[2], 8u);
  EXPECT_EQ(encoded[1].dims[3], 100u);
  EXPECT_EQ(encoded[1].strideBytes[0], 8u * 128 * 2);      // a page's rows
  EXPECT_EQ(encoded[1].strideBytes[1], 128u * 2);          // its heads
  EXPECT_EQ(encoded[1].strideBytes[2], 64u * 8 * 128 * 2); // pages
  EXPECT_EQ(encoded[2].base, args.vCache.data);
  EXPECT_EQ((*split)->bytes(0).size(), kTmaDescriptorBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*split)->pointers()[0]) % 64, 0u);
  EXPECT_EQ(read<uint64_t>((*split)->bytes(3)), args.pageTable.data);
  EXPECT_EQ(read<uint64_t>((*split)->bytes(4)), args.cacheSeqlens.data);
  EXPECT_EQ(read<uint64_t>((*split)->bytes(5)), workspace);
  EXPECT_EQ(read<uint64_t>((*split)->bytes(6)),
            workspace + layout.offset[unsigned(Workspace::PartialLse)]);
  EXPECT_EQ(read<int32_t>((*split)->bytes(7)), 1);    // seq_q
  EXPECT_EQ(read<int32_t>((*split)->bytes(8)), 64);   // seq_k: P
  EXPECT_EQ(read<int32_t>((*split)->bytes(9)), 32);   // heads
  EXPECT_EQ(read<int32_t>((*split)->bytes(10)), 4);   // kv_group
  EXPECT_EQ(read<int32_t>((*split)->bytes(11)), 3);   // batch
  EXPECT_EQ(read<int32_t>((*split)->bytes(12)), 4);   // num_splits
  EXPECT_EQ(read<int32_t>((*split)->bytes(13)), 100); // num_pages
  EXPECT_EQ(read<int32_t>((*split)->bytes(14)), 5);   // page_table_cols
  EXPECT_EQ(read<int64_t>((*split)->bytes(15)), 64 * 8 * 128); // stride_k_b
  EXPECT_FLOAT_EQ(read<float>((*split)->bytes(16)), float(m.scale * M_LOG2E));

  auto combine =
      packDecodeParams(m, m.launches[1], args, *shape, workspace, encode);
  ASSERT_TRUE(bool(combine)) << toString(combine.takeError());
  EXPECT_EQ(encoded.size(), 3u);
  EXPECT_EQ(read<uint64_t>((*combine)->bytes(0)), workspace);
  EXPECT_EQ(read<uint64_t>((*combine)->bytes(2)), args.o.data);
  EXPECT_EQ(read<uint64_t>((*combine)->bytes(3)), args.lse.data);
  EXPECT_EQ(read<int32_t>((*combine)->bytes(4)), 4);
  EXPECT_EQ(read<int64_t>((*combine)->bytes(7)), 32 * 128); // stride_o_b

  // Contiguous: num_pages is B, page_table_cols 0.
  KernelMetadata flat = decodeMetadata(0, false);
  DecodeArgs cargs = contiguousArgs(2, 8, 2, 1, 300);
  cargs.numSplits = 2;
  shape = validateDecodeArgs(flat, cargs);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  encoded.clear();
  auto csplit = packDecodeParams(flat, flat.launches[0], cargs, *shape,
                                 workspace, encode);
  ASSERT_TRUE(bool(csplit)) << toString(csplit.takeError());
  // q's own rank-4 map (no group view); k's over [B, H_kv, Nk, D].
  EXPECT_EQ(encoded[0].dims[1], 1u);
  EXPECT_EQ(encoded[0].dims[2], 8u);
  EXPECT_EQ(encoded[1].dims[1], 300u);
  EXPECT_EQ(encoded[1].strideBytes[0], 2u * 128 * 2);
  EXPECT_EQ(read<int32_t>((*csplit)->bytes(6)), 300); // seq_k: Nk
  EXPECT_EQ(read<int32_t>((*csplit)->bytes(11)), 2);  // num_pages: B
  EXPECT_EQ(read<int32_t>((*csplit)->bytes(12)), 0);  // page_table_cols
}

TEST(Decode, CapturesPassedByTheirLaunch) {
  // The sinks, added once by the combine launch.
  json::Object j = decodeMetadataJson(64, true);
  j["captures"] = json::Array{
      json::Object{{"role", "sinks"}, {"dtype", "f32"}, {"rank", 1}}};
  launchParams(j, 1).push_back(
      json::Object{{"kind", "memref"}, {"capture", 0}, {"rank", 1}});
  auto meta = parseKernelMetadata(toText(j));
  ASSERT_TRUE(bool(meta)) << toString(meta.takeError());
  DecodeArgs args = pagedArgs(2, 8, 2, 1, 40, 64, 5);
  args.numSplits = 2;
  EXPECT_HAS(errorOf(*meta, args), "0 captures were given; kernel "
                                   "attention_decode takes 1: sinks");
  // A question about the workspace or the splits does not need them.
  args.capturesUnchecked = true;
  EXPECT_EQ(errorOf(*meta, args), "<ok>");
  args.capturesUnchecked = false;
  args.captures = {tensor(DType::F32, {8}, {1}, 0x9000000)};
  auto shape = validateDecodeArgs(*meta, args);
  ASSERT_TRUE(bool(shape)) << toString(shape.takeError());
  auto encode = [](const TensorMapRequest &, void *) {
    return Error::success();
  };
  auto combine = packDecodeParams(*meta, meta->launches[1], args, *shape,
                                  0x7000000, encode);
  ASSERT_TRUE(bool(combine)) << toString(combine.takeError());
  // 10 parameters, then the sinks' descriptor: ptr, ptr, 0, [8], [1].
  EXPECT_EQ((*combine)->size(), 15u);
  EXPECT_EQ(read<uint64_t>((*combine)->bytes(10)), 0x9000000u);
  EXPECT_EQ(read<int64_t>((*combine)->bytes(13)), 8);
  // No launch passing it is refused.
  launchParams(j, 1).pop_back();
  EXPECT_HAS(parseError(j), "no launch passes capture 0");
}

} // namespace

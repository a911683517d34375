//===- CpuPagedTest.cpp - decoding over a paged K/V cache on the CPU ------===//
//
// flash.attention with `paged(page_table, cache_lens)` through the CPU
// reference pipeline: K and V are a cache of pages in vLLM's storage order
// (num_pages x page_size x H_kv x D, viewed as num_pages x H_kv x page_size
// x D), each batch's pages scattered through it by a shuffled page table,
// the slots past each cache's length poisoned with NaN. O and LSE are
// compared with the float64 reference over each batch's keys gathered in
// order: one to eight new tokens against caches of 0 to 70000 keys that are
// no multiple of the page, pages of 16, 64 and 256 (key tiles within a
// page, and spanning several as the GPU reads small pages), grouped-query heads
// (32/8, 32/1), the causal mask aligned to the cache's end (rows it hides
// entirely give O = 0, LSE = -inf), logits near 1e3, and a sliding window
// mask_mod counted from each query's position in the cache.
//
//===----------------------------------------------------------------------===//

#include "CpuTestSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

using flashc::rt::DType;
using namespace flashc::cputest;

namespace {

struct PagedCase {
  const char *name;
  int64_t heads, kvHeads, seqQ, pageSize, blockN;
  /// One cached length per batch.
  std::vector<int32_t> lengths;
  bool causal;
  float hotRowFactor = 1.0f;
  /// A mask_mod hiding keys more than this many behind the query (0: none).
  int64_t window = 0;
  int64_t headDim = 128;
  /// Split-KV: the number of splits (0: none).
  int64_t splits = 0;
  /// Per-head sink logits (as the kernel's `sinks`) where true.
  bool sinks = false;
  /// GQA packing: each program computes a K/V head's query heads together.
  bool packGqa = false;
  /// A score_mod adding (kv_idx - q_idx) / (h + 1): ALiBi-like, so that
  /// each row must see its own head and position.
  bool headBias = false;
};

std::ostream &operator<<(std::ostream &os, const PagedCase &c) {
  return os << c.name;
}

/// The kernel: a function @paged with the C interface over the case's
/// static head counts, page size and head dim.
std::string pagedSource(const PagedCase &c) {
  std::ostringstream s;
  std::string q = "memref<?x" + std::to_string(c.heads) + "x?x" +
                  std::to_string(c.headDim) + "xbf16>";
  std::string kv = "memref<?x" + std::to_string(c.kvHeads) + "x" +
                   std::to_string(c.pageSize) + "x" +
                   std::to_string(c.headDim) + "xbf16, strided<[?, ?, ?, 1]>>";
  std::string lse = "memref<?x" + std::to_string(c.heads) + "x?xf32>";
  std::string partialOut = "memref<?x?x" + std::to_string(c.heads) + "x?x" +
                           std::to_string(c.headDim) + "xf32>";
  std::string partialLse = "memref<?x?x" + std::to_string(c.heads) + "x?xf32>";
  std::string sinks = "memref<" + std::to_string(c.heads) + "xf32>";
  s << "func.func @paged(%q: " << q << ", %k: " << kv << ", %v: " << kv
    << ", %o: " << q << ", %lse: " << lse
    << ", %table: memref<?x?xi32>, %lens: memref<?xi32>, %po: " << partialOut
    << ", %pl: " << partialLse << ", %sinks: " << sinks << ")"
    << " attributes {llvm.emit_c_interface} {\n"
    << "  flash.attention %q, %k, %v -> %o, lse %lse\n"
    << "      paged(%table : memref<?x?xi32>, %lens : memref<?xi32>)\n";
  if (c.splits)
    s << "      splits(%po : " << partialOut << ", %pl : " << partialLse
      << ")\n";
  if (c.sinks)
    s << "      sinks(%sinks : " << sinks << ")\n";
  std::vector<std::string> attrs;
  if (c.causal)
    attrs.push_back("causal");
  if (c.packGqa)
    attrs.push_back("pack_gqa");
  s << "      {" << llvm::join(attrs, ", ") << "}\n"
    << "      : " << q << ", " << kv << ", " << kv << " -> " << q << ", " << lse
    << "\n";
  if (c.headBias)
    s << "    score_mod {\n"
      << "    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):\n"
      << "      %one = arith.constant 1 : index\n"
      << "      %h1 = arith.addi %h, %one : index\n"
      << "      %h1i = arith.index_cast %h1 : index to i64\n"
      << "      %h1f = arith.sitofp %h1i : i64 to f32\n"
      << "      %kvi = arith.index_cast %kv : index to i64\n"
      << "      %qii = arith.index_cast %qi : index to i64\n"
      << "      %di = arith.subi %kvi, %qii : i64\n"
      << "      %d = arith.sitofp %di : i64 to f32\n"
      << "      %bias = arith.divf %d, %h1f : f32\n"
      << "      %r = arith.addf %s, %bias : f32\n"
      << "      flash.yield %r : f32\n"
      << "    }\n";
  if (c.window)
    s << "    mask_mod {\n"
      << "    ^bb0(%b: index, %h: index, %qi: index, %kv: index):\n"
      << "      %w = arith.constant " << c.window << " : index\n"
      << "      %reach = arith.addi %kv, %w : index\n"
      << "      %in = arith.cmpi uge, %reach, %qi : index\n"
      << "      flash.yield %in : i1\n"
      << "    }\n";
  s << "  return\n}\n";
  return s.str();
}

/// The cache: every batch's pages, shuffled among a few spare ones, with
/// the K and V bits of its keys (their doubles in order, per batch and K/V
/// head, for the reference) and NaN in every other slot.
struct PagedCache {
  int64_t numPages = 0, maxPages = 0;
  std::vector<uint16_t> k, v; ///< num_pages x page_size x H_kv x D
  std::vector<int32_t> table; ///< batch x max_pages
  /// [b][kvh]: that batch's keys (values) of that head, len x D, in order.
  std::vector<std::vector<std::vector<double>>> keys, values;
};

PagedCache makeCache(const PagedCase &c, std::mt19937 &rng) {
  const int64_t batch = c.lengths.size(), P = c.pageSize, D = c.headDim;
  PagedCache cache;
  std::vector<int64_t> pagesOf(batch);
  int64_t used = 0;
  for (int64_t b = 0; b < batch; ++b) {
    pagesOf[b] = (c.lengths[b] + P - 1) / P;
    used += pagesOf[b];
    cache.maxPages = std::max(cache.maxPages, pagesOf[b]);
  }
  // A table row at least one page long, and spare pages nobody owns.
  cache.maxPages = std::max<int64_t>(cache.maxPages, 1) + 1;
  cache.numPages = used + 3;
  std::vector<int32_t> order(cache.numPages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const uint16_t nan = flashc::ref::halfNaNBits(DType::BF16);
  cache.k.assign(cache.numPages * P * c.kvHeads * D, nan);
  cache.v.assign(cache.k.size(), nan);
  // Past each batch's pages the table names pages the kernel must not
  // read (owned by others, or outside the cache: the length bounds it).
  cache.table.assign(batch * cache.maxPages, 1 << 30);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  int64_t next = 0;
  cache.keys.resize(batch);
  cache.values.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t p = 0; p < pagesOf[b]; ++p)
      cache.table[b * cache.maxPages + p] = order[next++];
    cache.keys[b].assign(c.kvHeads, std::vector<double>());
    cache.values[b].assign(c.kvHeads, std::vector<double>());
    for (int64_t h = 0; h < c.kvHeads; ++h) {
      cache.keys[b][h].resize(c.lengths[b] * D);
      cache.values[b][h].resize(c.lengths[b] * D);
    }
    for (int64_t j = 0; j < c.lengths[b]; ++j) {
      int64_t page = cache.table[b * cache.maxPages + j / P];
      for (int64_t h = 0; h < c.kvHeads; ++h)
        for (int64_t d = 0; d < D; ++d) {
          int64_t at = ((page * P + j % P) * c.kvHeads + h) * D + d;
          for (auto [bits, doubles] : {std::pair{&cache.k, &cache.keys[b][h]},
                                       {&cache.v, &cache.values[b][h]}}) {
            (*bits)[at] =
                flashc::ref::floatToHalfBits(uniform(rng), DType::BF16);
            (*doubles)[j * D + d] =
                flashc::ref::halfBitsToFloat((*bits)[at], DType::BF16);
          }
        }
    }
  }
  return cache;
}

/// The num_pages x H_kv x page_size x D view of vLLM's page storage.
StridedMemRefType<uint16_t, 4> cacheView(std::vector<uint16_t> &bits,
                                         const PagedCase &c, int64_t pages) {
  StridedMemRefType<uint16_t, 4> m;
  m.basePtr = m.data = bits.data();
  m.offset = 0;
  int64_t sizes[4] = {pages, c.kvHeads, c.pageSize, c.headDim};
  int64_t strides[4] = {c.pageSize * c.kvHeads * c.headDim, c.headDim,
                        c.kvHeads * c.headDim, 1};
  for (int i = 0; i < 4; ++i) {
    m.sizes[i] = sizes[i];
    m.strides[i] = strides[i];
  }
  return m;
}

class CpuPagedTest : public ::testing::TestWithParam<PagedCase> {};

TEST_P(CpuPagedTest, MatchesFloat64Reference) {
  const PagedCase &c = GetParam();
  const int64_t batch = c.lengths.size(), D = c.headDim;
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(pagedSource(c), context.get());
  ASSERT_TRUE(module) << pagedSource(c);
  flashc::TileOverrides tiles;
  tiles.blockM = 64;
  tiles.blockN = c.blockN;
  tiles.warpgroups = 1;
  auto engine = jitCompileModule(*module, tiles);
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto symbol = (*engine)->lookup("_mlir_ciface_paged");
  ASSERT_TRUE(static_cast<bool>(symbol)) << llvm::toString(symbol.takeError());

  std::mt19937 rng(977 + c.seqQ * 31 + c.pageSize);
  Case shape{c.name, batch,    c.heads,     c.seqQ,        /*seqK=*/0,
             D,      c.causal, DType::BF16, c.hotRowFactor};
  HostTensor q = randomTensor(rng, shape, c.heads, c.seqQ, c.hotRowFactor);
  PagedCache cache = makeCache(c, rng);
  std::vector<uint16_t> o(batch * c.heads * c.seqQ * D,
                          flashc::ref::halfNaNBits(DType::BF16));
  std::vector<float> lse(batch * c.heads * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());
  std::vector<int32_t> lengths = c.lengths;
  auto qView = view4(q.bits, shape, c.heads, c.seqQ),
       oView = view4(o, shape, c.heads, c.seqQ);
  auto kView = cacheView(cache.k, c, cache.numPages),
       vView = cacheView(cache.v, c, cache.numPages);
  auto lseView = view3(lse, shape);
  StridedMemRefType<int32_t, 2> table{cache.table.data(),
                                      cache.table.data(),
                                      0,
                                      {batch, cache.maxPages},
                                      {cache.maxPages, 1}};
  auto lensView = view1(lengths);
  // Split-KV's scratch, poisoned: every row a split covers is written.
  const int64_t splits = std::max<int64_t>(c.splits, 1);
  std::vector<float> partialOut(splits * batch * c.heads * c.seqQ * D,
                                std::numeric_limits<float>::quiet_NaN());
  std::vector<float> partialLse(splits * batch * c.heads * c.seqQ,
                                std::numeric_limits<float>::quiet_NaN());
  StridedMemRefType<float, 5> partialOutView{
      partialOut.data(),
      partialOut.data(),
      0,
      {splits, batch, c.heads, c.seqQ, D},
      {batch * c.heads * c.seqQ * D, c.heads * c.seqQ * D, c.seqQ * D, D, 1}};
  StridedMemRefType<float, 4> partialLseView{
      partialLse.data(),
      partialLse.data(),
      0,
      {splits, batch, c.heads, c.seqQ},
      {batch * c.heads * c.seqQ, c.heads * c.seqQ, c.seqQ, 1}};
  std::vector<float> sinks(c.heads);
  std::uniform_real_distribution<float> sinkLogits(-4.0f, 4.0f);
  for (float &sink : sinks)
    sink = sinkLogits(rng);
  StridedMemRefType<float, 1> sinksView{
      sinks.data(), sinks.data(), 0, {c.heads}, {1}};
  using P = void *;
  reinterpret_cast<void (*)(P, P, P, P, P, P, P, P, P, P)> (*symbol)(
      &qView, &kView, &vView, &oView, &lseView, &table, &lensView,
      &partialOutView, &partialLseView, &sinksView);

  const double scale = 1.0 / std::sqrt(double(D));
  const int64_t group = c.heads / c.kvHeads;
  double errSq = 0, refSq = 0, lseErrSq = 0, lseRefSq = 0, worstRow = 0;
  int64_t maskedRows = 0;
  std::vector<double> expected(D), scratch;
  flashc::ref::RowMods mods;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      mods.hasSink = c.sinks;
      mods.sink = sinks[h];
      // The mods see each query at its position in the cache.
      if (c.headBias) {
        int64_t offset = std::max<int64_t>(c.lengths[b] - c.seqQ, 0);
        double slope = 1.0 / double(h + 1);
        mods.score = [slope, offset](double x, int64_t i, int64_t j) {
          return x + slope * double(j - (i + offset));
        };
      }
      if (c.window) {
        int64_t w = c.window,
                offset = std::max<int64_t>(c.lengths[b] - c.seqQ, 0);
        mods.mask = [w, offset](int64_t i, int64_t j) {
          return j + w >= i + offset;
        };
      }
      const std::vector<double> &keys = cache.keys[b][h / group];
      const std::vector<double> &values = cache.values[b][h / group];
      int64_t bh = b * c.heads + h;
      flashc::ref::HeadView head{q.values.data() + bh * c.seqQ * D, keys.data(),
                                 values.data()};
      for (int64_t i = 0; i < c.seqQ; ++i) {
        double want =
            flashc::ref::referenceRow(head, i, c.seqQ, c.lengths[b], D, scale,
                                      c.causal, expected.data(), scratch, mods);
        float gotLse = lse[bh * c.seqQ + i];
        const uint16_t *row = o.data() + (bh * c.seqQ + i) * D;
        std::string where = "b " + std::to_string(b) + " h " +
                            std::to_string(h) + " row " + std::to_string(i);
        // The causal mask aligned to the cache's end hides every key from
        // the rows before it (the window here hides none).
        bool seesNoKey =
            c.lengths[b] == 0 || (c.causal && i < c.seqQ - c.lengths[b]);
        if (!c.sinks) {
          ASSERT_EQ(seesNoKey, std::isinf(want)) << where;
        }
        if (seesNoKey) {
          ++maskedRows;
          if (c.sinks)
            ASSERT_EQ(gotLse, sinks[h])
                << "fully masked " << where << " has LSE " << gotLse;
          else
            ASSERT_TRUE(std::isinf(gotLse) && gotLse < 0)
                << "fully masked " << where << " has LSE " << gotLse;
          for (int64_t d = 0; d < D; ++d)
            ASSERT_EQ(flashc::ref::halfBitsToFloat(row[d], DType::BF16), 0.0f)
                << "fully masked " << where;
          continue;
        }
        ASSERT_TRUE(std::isfinite(gotLse)) << where << " has LSE " << gotLse;
        lseErrSq += (gotLse - want) * (gotLse - want);
        lseRefSq += want * want;
        double rowErr = 0, rowRef = 0;
        for (int64_t d = 0; d < D; ++d) {
          float got = flashc::ref::halfBitsToFloat(row[d], DType::BF16);
          ASSERT_TRUE(std::isfinite(got)) << where << " column " << d;
          rowErr += (got - expected[d]) * (got - expected[d]);
          rowRef += expected[d] * expected[d];
        }
        errSq += rowErr;
        refSq += rowRef;
        worstRow = std::max(worstRow, std::sqrt(rowErr / rowRef));
      }
    }
  double relErr = std::sqrt(errSq / std::max(refSq, 1e-300));
  double lseRelErr = std::sqrt(lseErrSq / std::max(lseRefSq, 1e-300));
  std::cout << "[ numerics ] " << c.name << ": rel err O " << relErr
            << " (worst row " << worstRow << "), LSE " << lseRelErr
            << ", fully masked rows " << maskedRows << "\n";
  EXPECT_LT(relErr, 1e-2);
  EXPECT_LT(worstRow, 3e-2);
  EXPECT_LT(lseRelErr, 1e-5);
  // Rows the causal mask leaves without a key: those past a cache shorter
  // than the step, per head (the window hides none here).
  int64_t expectMasked = 0;
  for (int32_t length : c.lengths)
    expectMasked += c.causal ? c.heads * std::max<int64_t>(c.seqQ - length, 0)
                             : (length == 0 ? c.heads * c.seqQ : 0);
  EXPECT_EQ(maskedRows, expectMasked);
}

INSTANTIATE_TEST_SUITE_P(
    Decoding, CpuPagedTest,
    ::testing::Values(
        // One new token, 32 query heads over 8 K/V heads, pages of 16: a
        // cache of one key, one of 37 (a partial third page) and one of
        // 300.
        PagedCase{"gqa_32_8_page16", 32, 8, 1, 16, 16, {1, 37, 300}, true},
        // Key tiles larger than the page, as the GPU reads pages of 16
        // and 32: each tile gathered from 8 pages of 16 through the table
        // (the last tile's pages past the cache's length unread), packed
        // GQA in 3 splits; then 4 pages of 32 a tile, four new tokens
        // with logits near 1e3 and a window of 100.
        PagedCase{"gathered_page16_tile128_splits3",
                  32,
                  8,
                  1,
                  16,
                  128,
                  {1, 37, 300, 1000},
                  true,
                  1.0f,
                  0,
                  128,
                  /*splits=*/3,
                  false,
                  /*packGqa=*/true},
        PagedCase{"gathered_page32_tile128_window",
                  8,
                  2,
                  4,
                  32,
                  128,
                  {777, 90, 2},
                  true,
                  /*hotRowFactor=*/3000.0f,
                  /*window=*/100},
        // Chunked prefill with packing: 100 new tokens of each of 4 query
        // heads are 400 rows of a K/V head, so a row block starts
        // mid-head and its rows restart at query 0 (the masked part
        // starts where query 0 stops seeing whole tiles); a cache of
        // exactly the chunk beside longer ones, in 3 splits.
        PagedCase{"chunked_prefill_pack_gqa_qlen100",
                  32,
                  8,
                  100,
                  16,
                  128,
                  {1000, 333, 100},
                  true,
                  1.0f,
                  0,
                  128,
                  /*splits=*/3,
                  false,
                  /*packGqa=*/true},
        // Eight new tokens (a speculative step), 32 query heads over one
        // K/V head, pages of 64 read as two key tiles of 32: a cache of 5
        // keys leaves its first 3 rows without one (O = 0, LSE = -inf).
        PagedCase{"mqa_32_1_page64_qlen8", 32, 1, 8, 64, 32, {5, 1000}, true},
        // 70000 cached keys (no multiple of 256) in pages of 256, four
        // query heads on one K/V head, four new tokens with logits near
        // 1e3.
        PagedCase{"page256_70000_keys",
                  4,
                  1,
                  4,
                  256,
                  64,
                  {70000},
                  true,
                  /*hotRowFactor=*/3000.0f},
        // Without causal: an empty cache (every row masked) beside one of
        // 129 keys; logits near 1e3.
        PagedCase{"noncausal_empty_cache",
                  8,
                  2,
                  3,
                  64,
                  64,
                  {0, 129},
                  false,
                  /*hotRowFactor=*/3000.0f},
        // A sliding window of 100 keys behind each query over a cache of
        // 777, in pages of 16.
        PagedCase{"window_page16",
                  8,
                  2,
                  5,
                  16,
                  16,
                  {777, 90},
                  true,
                  1.0f,
                  /*window=*/100},
        // Split-KV: 70000 keys in pages of 256 over 64 splits (about
        // four key tiles each), a cache of 3 keys beside it (most splits
        // get none: LSE -inf, weight 0), logits near 1e3.
        PagedCase{"splits64_page256",
                  8,
                  2,
                  2,
                  256,
                  64,
                  {70000, 3},
                  true,
                  /*hotRowFactor=*/3000.0f,
                  0,
                  128,
                  /*splits=*/64},
        // Two splits of caches no multiple of the page, GQA 32/8, eight
        // new tokens and per-head sinks (added once, in the combine): the
        // cache of 5 leaves three rows without a key (O = 0, LSE = sink).
        PagedCase{"splits2_sinks_qlen8",
                  32,
                  8,
                  8,
                  64,
                  32,
                  {1000, 5, 131},
                  true,
                  1.0f,
                  0,
                  128,
                  /*splits=*/2,
                  /*sinks=*/true},
        // Seven splits (no divisor of the key tiles) with a sliding window
        // of 100: most splits' keys are all hidden from the step's rows.
        PagedCase{"splits7_window_page16",
                  8,
                  1,
                  3,
                  16,
                  16,
                  {777, 20},
                  true,
                  1.0f,
                  /*window=*/100,
                  128,
                  /*splits=*/7},
        // GQA packing: the 4 query heads of each of 8 K/V heads as one
        // tile, one new token (4 rows); then eight new tokens (32 rows of
        // a tile of 64) with a cache shorter than the step.
        PagedCase{"pack_gqa_32_8_qlen1",
                  32,
                  8,
                  1,
                  16,
                  16,
                  {1, 37, 300},
                  true,
                  /*hotRowFactor=*/3000.0f,
                  0,
                  128,
                  0,
                  false,
                  /*packGqa=*/true},
        PagedCase{"pack_gqa_32_8_qlen8",
                  32,
                  8,
                  8,
                  64,
                  32,
                  {5, 1000},
                  true,
                  1.0f,
                  0,
                  128,
                  0,
                  false,
                  /*packGqa=*/true},
        // 32 query heads on one K/V head, three new tokens: 96 grouped
        // rows over two query tiles of 64, with 16 splits.
        PagedCase{"pack_gqa_32_1_splits16",
                  32,
                  1,
                  3,
                  256,
                  64,
                  {70000, 2},
                  true,
                  1.0f,
                  0,
                  128,
                  /*splits=*/16,
                  false,
                  /*packGqa=*/true},
        // Sinks with packing: each grouped row's sink is its head's (a
        // stride-0 view of the sinks), folded in as one more split; a
        // cache of 5 leaves three of eight new tokens without a key (O =
        // 0, LSE = the sink). Unsplit, then split in 3.
        PagedCase{"pack_gqa_sinks_qlen8",
                  32,
                  8,
                  8,
                  64,
                  32,
                  {1000, 5},
                  true,
                  1.0f,
                  0,
                  128,
                  0,
                  /*sinks=*/true,
                  /*packGqa=*/true},
        PagedCase{"pack_gqa_sinks_splits3",
                  8,
                  2,
                  3,
                  16,
                  16,
                  {300, 1},
                  true,
                  /*hotRowFactor=*/3000.0f,
                  0,
                  128,
                  /*splits=*/3,
                  /*sinks=*/true,
                  /*packGqa=*/true},
        // Mods with packing: each grouped row sees its own head (a bias of
        // (kv - q) / (h + 1)) and its position in the cache (a window of
        // 100), four new tokens, 8 query heads on 2 K/V heads, unsplit
        // and in 3 splits.
        PagedCase{"pack_gqa_head_bias_window",
                  8,
                  2,
                  4,
                  16,
                  16,
                  {777, 90},
                  true,
                  1.0f,
                  /*window=*/100,
                  128,
                  0,
                  false,
                  /*packGqa=*/true,
                  /*headBias=*/true},
        PagedCase{"pack_gqa_head_bias_window_splits3",
                  8,
                  2,
                  4,
                  16,
                  16,
                  {777, 90},
                  true,
                  1.0f,
                  /*window=*/100,
                  128,
                  /*splits=*/3,
                  false,
                  /*packGqa=*/true,
                  /*headBias=*/true},
        // Without causal, an empty cache beside one of 129, 5 splits.
        PagedCase{"pack_gqa_noncausal_splits5",
                  8,
                  2,
                  3,
                  64,
                  64,
                  {0, 129},
                  false,
                  1.0f,
                  0,
                  128,
                  /*splits=*/5,
                  false,
                  /*packGqa=*/true},
        // One split: the combine alone, over 32 query heads on one K/V
        // head, one new token.
        PagedCase{"splits1_mqa",
                  32,
                  1,
                  1,
                  64,
                  64,
                  {4097},
                  false,
                  1.0f,
                  0,
                  128,
                  /*splits=*/1}),
    [](const ::testing::TestParamInfo<PagedCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

//===- Decode.cpp - the decoding pass's arguments, splits, params ---------===//

#include "flashc/Runtime/Decode.h"
#include "Checker.h"
#include "WorkspaceParams.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace llvm;

namespace flashc::rt {

const TensorArg &DecodeArgs::operator[](TensorId id) const {
  static const TensorArg absent;
  switch (id) {
  case TensorId::Q:
    return q;
  case TensorId::K:
    return kCache;
  case TensorId::V:
    return vCache;
  case TensorId::O:
    return o;
  case TensorId::LSE:
    return lse;
  case TensorId::PageTable:
    return pageTable;
  case TensorId::CacheSeqlens:
    return cacheSeqlens;
  default:
    return absent;
  }
}

int64_t decodeNumSplits(int64_t programs, int64_t keyTiles, int numSMs) {
  // FlashAttention's num_splits_heuristic (flash_api.cpp) is the model.
  // Splitting a row's keys over s programs runs programs * s of them, in
  // waves of numSMs; the last wave's idle SMs are the waste. Where the
  // programs already fill most of the SMs, splitting only adds the combine.
  // Else take the fewest splits whose wave efficiency (the filled share of
  // the waves they run) is within 85% of the best, fewer splits meaning
  // fewer partial outputs to write and merge. A split count whose splits
  // hold as many key tiles as one fewer splits' (ceil(tiles / s) ==
  // ceil(tiles / (s - 1))) leaves its last split(s) idle, so it is never
  // taken.
  if (programs < 1 || keyTiles < 1 || numSMs < 1)
    return 1;
  if (double(programs) >= 0.8 * double(numSMs))
    return 1;
  int64_t most = std::min(kMaxRuleSplits, keyTiles);
  auto eligible = [&](int64_t s) {
    return s == 1 || divideCeil(keyTiles, s) != divideCeil(keyTiles, s - 1);
  };
  auto efficiency = [&](int64_t s) {
    double waves = double(programs * s) / double(numSMs);
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (int64_t s = 1; s <= most; ++s)
    if (eligible(s))
      best = std::max(best, efficiency(s));
  for (int64_t s = 1; s <= most; ++s)
    if (eligible(s) && efficiency(s) >= 0.85 * best)
      return s;
  return 1;
}

int64_t decodeRows(const KernelMetadata &meta, const ProblemShape &shape) {
  return meta.packGqa ? shape.kvGroup() * shape.seqQ : shape.seqQ;
}

int64_t decodeHeads(const KernelMetadata &meta, const ProblemShape &shape) {
  return meta.packGqa ? shape.kvHeads : shape.heads;
}

namespace {

/// "int32" and "float32" as the messages about the page table and the
/// lengths write them; the element types otherwise.
std::string typeName(DType t) {
  if (t == DType::I32)
    return "int32";
  if (t == DType::F32)
    return "float32";
  return dtypeName(t).str();
}

/// Checks the page table or the lengths: int32, of `want` sizes (-1: any
/// positive size), dense, 4-byte aligned, on `device`.
void checkIndexTensor(Checker &c, StringRef name, const TensorArg &t,
                      ArrayRef<int64_t> want, StringRef wantText, int device,
                      int qDevice) {
  bool shaped = t.rank == want.size();
  for (unsigned d = 0; shaped && d < want.size(); ++d)
    shaped = want[d] < 0 ? t.sizes[d] >= 1 : t.sizes[d] == want[d];
  if (t.dtype != DType::I32 || !shaped) {
    c.add(formatv("{0} is {1} {2}; the kernel needs int32 {3}", name,
                  typeName(t.dtype), shapeString(t), wantText));
    return;
  }
  if (!isDenseRowMajor(t))
    c.add(formatv("{0} strides {1}: the kernel reads {0} dense row-major; "
                  "pass a contiguous one",
                  name, stridesString(t)));
  if (t.data % 4)
    c.add(
        formatv("{0} data pointer {1:x} is not 4-byte aligned", name, t.data));
  int wantDevice = device >= 0 ? device : qDevice;
  if (t.device != wantDevice)
    c.add(formatv("{0} is on device {1}; the kernel runs on device {2}", name,
                  t.device, wantDevice));
}

/// Every parameter of every launch.
template <typename F> void forEachParam(const KernelMetadata &meta, F f) {
  for (const LaunchSpec &launch : meta.launches)
    for (const ParamSpec &p : launch.params)
      f(p);
}

} // namespace

Expected<ProblemShape> validateDecodeArgs(const KernelMetadata &meta,
                                          const DecodeArgs &args, int numSMs,
                                          int device) {
  if (!meta.decode)
    return makeError(
        ErrorCode::InvalidArgument,
        "kernel " + meta.kernel + " is no decoding kernel (kernel.json's " +
            "\"pass\" is not \"decode\"): launch it with " +
            (meta.backward ? "flashrt_launch_backward" : "flashrt_launch"));
  auto blockN = meta.config.find("block_n");
  if (meta.launches.size() != 2 || blockN == meta.config.end() ||
      blockN->second < 1)
    return makeError(ErrorCode::InvalidKernel,
                     "kernel " + meta.kernel +
                         ": a decoding kernel has two launches and a "
                         "config.block_n (parseKernelMetadata checks both)");
  Checker c;
  bool paged = meta.pageSize > 0;
  const TensorArg &q = args.q, &k = args.kCache, &v = args.vCache, &o = args.o,
                  &lse = args.lse;
  struct Named {
    TensorId id;
    const TensorArg &t;
    const char *name;
  };
  Named tensors[] = {{TensorId::Q, q, "q"},
                     {TensorId::K, k, "k_cache"},
                     {TensorId::V, v, "v_cache"},
                     {TensorId::O, o, "o"},
                     {TensorId::LSE, lse, "lse"}};
  bool usable[5] = {};
  for (auto [i, n] : llvm::enumerate(tensors)) {
    if (n.id == TensorId::LSE && !meta.hasLse) {
      if (n.t.present())
        c.add("lse was given but kernel " + meta.kernel +
              " does not write one (has_lse is false)");
      continue;
    }
    if (!n.t.present()) {
      c.add(formatv("{0} is missing (null data pointer){1}", n.name,
                    n.id == TensorId::LSE ? ": the kernel writes the "
                                            "log-sum-exp (has_lse is true)"
                                          : ""));
      continue;
    }
    usable[i] = checkTensorArg(c, meta, n.id, n.t, device, n.name);
    if (device < 0 && n.t.device != q.device)
      c.add(formatv("{0} is on device {1} but q is on device {2}: all tensors "
                    "must be on one device",
                    n.name, n.t.device, q.device));
  }
  ProblemShape shape;
  if (usable[0]) {
    shape.batch = q.sizes[0];
    shape.heads = q.sizes[1];
    shape.seqQ = q.sizes[2];
    shape.headDim = q.sizes[3];
    if (shape.headDim != meta.headDim)
      c.add(formatv("q has head_dim {0}; kernel {1} is compiled for {2}",
                    shape.headDim, meta.kernel, meta.headDim));
    if (meta.heads && shape.heads != meta.heads)
      c.add(formatv("q has {0} heads; kernel {1} is compiled for {2}",
                    shape.heads, meta.kernel, meta.heads));
    if (shape.batch == 0 || shape.heads == 0 || shape.seqQ == 0)
      c.add("q " + shapeString(q) +
            " is empty (batch, heads and seq_q must be at least 1)");
  }
  if (usable[3] && usable[0] && !std::equal(o.sizes, o.sizes + 4, q.sizes))
    c.add(formatv("o has shape {0}; expected {1}, the shape of q",
                  shapeString(o), shapeString(q)));
  if (usable[1]) {
    shape.kvHeads = k.sizes[1];
    shape.seqK = k.sizes[2];
    if (meta.kvHeads && shape.kvHeads != meta.kvHeads)
      c.add(formatv("k_cache has {0} heads; kernel {1} is compiled for {2} "
                    "K/V heads",
                    shape.kvHeads, meta.kernel, meta.kvHeads));
    if (paged) {
      shape.numPages = k.sizes[0];
      if (k.sizes[2] != meta.pageSize)
        c.add(formatv("k_cache is {0}; kernel {1} reads pages of {2} rows, "
                      "so k_cache must be [num_pages, H_kv, {2}, D] (vLLM's "
                      "num_pages x {2} x H_kv x D pages, permuted)",
                      shapeString(k), meta.kernel, meta.pageSize));
      if (k.sizes[0] < 1)
        c.add("k_cache " + shapeString(k) + " has no pages");
    } else {
      shape.numPages = shape.batch;
      if (usable[0] && k.sizes[0] != shape.batch)
        c.add(formatv("k_cache is {0}; the contiguous cache is [B={1}, H_kv, "
                      "Nk, D]",
                      shapeString(k), shape.batch));
      if (k.sizes[2] < 1)
        c.add("k_cache " + shapeString(k) + " holds no keys (Nk = 0)");
    }
    if (usable[0]) {
      if (k.sizes[3] != shape.headDim)
        c.add(formatv("k_cache is {0}; its head_dim must be q's {1}",
                      shapeString(k), shape.headDim));
      if (shape.kvHeads < 1 || shape.heads % shape.kvHeads)
        c.add(formatv("k_cache has {0} heads, which do not divide q's {1}: "
                      "grouped-query attention needs H = G * H_kv",
                      shape.kvHeads, shape.heads));
    }
  }
  if (usable[2] && usable[1] && !std::equal(v.sizes, v.sizes + 4, k.sizes))
    c.add(formatv("v_cache has shape {0}; expected {1}, the shape of k_cache",
                  shapeString(v), shapeString(k)));
  if (usable[4] && usable[0]) {
    if (lse.sizes[0] != shape.batch || lse.sizes[1] != shape.heads ||
        lse.sizes[2] != shape.seqQ)
      c.add(formatv("lse has shape {0}; expected [{1}, {2}, {3}] (B x H x "
                    "Sq)",
                    shapeString(lse), shape.batch, shape.heads, shape.seqQ));
    else if (!isDenseRowMajor(lse))
      c.add(formatv("lse has strides {0}; the kernel writes it dense, ({1}, "
                    "{2}, 1)",
                    stridesString(lse), shape.heads * shape.seqQ, shape.seqQ));
  }
  // The page table and the lengths: on the device, never read here (the
  // kernel clamps the lengths to the table and each page into the cache).
  std::string b = usable[0] ? formatv("[B={0}", shape.batch).str() : "[B";
  for (auto [name, t, want, text] :
       {std::tuple{"page_table", &args.pageTable,
                   SmallVector<int64_t, 2>{usable[0] ? shape.batch : -1, -1},
                   b + ", max_pages]"},
        std::tuple{"cache_seqlens", &args.cacheSeqlens,
                   SmallVector<int64_t, 2>{usable[0] ? shape.batch : -1},
                   b + "]"}}) {
    if (!paged) {
      if (t->present())
        c.add(formatv("{0} was given but kernel {1} reads a contiguous cache "
                      "(page_size 0): every batch's Nk keys",
                      name, meta.kernel));
      continue;
    }
    if (!t->present()) {
      c.add(formatv("{0} is missing: kernel {1} reads a paged cache (pages "
                    "of {2} rows)",
                    name, meta.kernel, meta.pageSize));
      continue;
    }
    checkIndexTensor(c, name, *t, want, text, device, q.device);
  }
  if (paged && args.pageTable.present() && args.pageTable.rank == 2)
    shape.pageTableCols = args.pageTable.sizes[1];
  // A "group_rows" map views q as [B, H_kv, G * Sq, D]: the group's rows
  // one run of stride rs, which needs stride_h = Sq * stride_n where both
  // the group (G > 1) and the queries (Sq > 1) are several.
  bool groupRows = false;
  forEachParam(meta, [&](const ParamSpec &p) { groupRows |= p.groupRows; });
  if (groupRows && usable[0] && usable[1] && shape.kvHeads >= 1 &&
      shape.heads % shape.kvHeads == 0) {
    int64_t g = shape.kvGroup(), sq = shape.seqQ;
    if (g > 1 && sq > 1 && q.strides[1] != sq * q.strides[2])
      c.add(formatv("q strides {0}: kernel {1} reads each K/V head's {2} "
                    "query heads as one run of G * Sq = {3} rows "
                    "(pack_gqa), so stride_h must be Sq * stride_n = {4} * "
                    "{5} = {6}, not {7}",
                    stridesString(q), meta.kernel, g, g * sq, sq, q.strides[2],
                    sq * q.strides[2], q.strides[1]));
    if (g * sq > kMaxTmaDim)
      c.add(formatv("q: G * Sq = {0} rows per K/V head are beyond the TMA "
                    "limit of 2^32",
                    g * sq));
    if (shape.kvHeads > 1 &&
        g * q.strides[1] * int64_t(dtypeSize(q.dtype)) >= kMaxTmaStrideBytes)
      c.add(formatv("q: a K/V head's group of {0} heads spans {1} bytes, "
                    "beyond the TMA limit of 2^40",
                    g, g * q.strides[1] * int64_t(dtypeSize(q.dtype))));
  }
  // Every 4-D map: N <= 2^32 and strides below 2^40 bytes.
  bool mapped[4] = {};
  forEachParam(meta, [&](const ParamSpec &p) {
    if (p.isTma() && unsigned(p.tensor) < 4)
      mapped[unsigned(p.tensor)] = true;
  });
  for (unsigned i = 0; i < 4; ++i) {
    if (!mapped[i] || !usable[i])
      continue;
    const TensorArg &t = tensors[i].t;
    if (t.sizes[2] > kMaxTmaDim)
      c.add(formatv("{0} has {1} rows per head, beyond the TMA limit of 2^32",
                    tensors[i].name, t.sizes[2]));
    for (unsigned d = 0; d < 3; ++d)
      if (t.sizes[d] > 1 &&
          t.strides[d] * int64_t(dtypeSize(t.dtype)) >= kMaxTmaStrideBytes)
        c.add(formatv("{0} stride {1} of dimension {2} is {3} bytes, beyond "
                      "the TMA limit of 2^40",
                      tensors[i].name, t.strides[d], d,
                      t.strides[d] * int64_t(dtypeSize(t.dtype))));
  }
  if (!args.capturesUnchecked)
    checkCaptures(c, meta, args.captures, shape.heads, device, q.device);
  if (args.numSplits < 0)
    c.add(formatv("num_splits = {0}; it must be at least 1 (0: the "
                  "runtime's rule)",
                  args.numSplits));
  else if (args.numSplits > kMaxGridYZ)
    c.add(formatv("num_splits = {0} is more than the grid's {1} splits",
                  args.numSplits, kMaxGridYZ));
  if (!c.ok())
    return c.take();

  int64_t programsY = shape.batch * decodeHeads(meta, shape);
  if (programsY > kMaxGridYZ)
    c.add(formatv("batch x {0} = {1} x {2} = {3} is more than the grid's "
                  "{4} rows",
                  meta.packGqa ? "kv_heads" : "heads", shape.batch,
                  decodeHeads(meta, shape), programsY, kMaxGridYZ));
  shape.numSplits = args.numSplits;
  if (shape.numSplits == 0) {
    int64_t keys = paged ? shape.pageTableCols * meta.pageSize : shape.seqK;
    int64_t programs =
        divideCeil(decodeRows(meta, shape), meta.launches[0].gridBlock) *
        programsY;
    shape.numSplits =
        decodeNumSplits(programs, divideCeil(keys, blockN->second), numSMs);
  }
  // Values the kernels receive as i32 must fit.
  forEachParam(meta, [&](const ParamSpec &p) {
    if (p.kind != ParamSpec::Kind::I32)
      return;
    int64_t value = integerParamValue(p, shape, args[p.tensor]);
    if (value > INT32_MAX)
      c.add(formatv("{0} = {1} does not fit the kernel's 32-bit parameter",
                    p.text, value));
  });
  if (!c.ok())
    return c.take();
  return shape;
}

WorkspaceLayout decodeWorkspaceLayout(const KernelMetadata &meta,
                                      const ProblemShape &shape) {
  (void)meta;
  uint64_t rows = uint64_t(shape.numSplits) * uint64_t(shape.batch) *
                  uint64_t(shape.heads) * uint64_t(shape.seqQ);
  WorkspaceLayout layout;
  for (auto [w, bytes] :
       {std::pair{Workspace::PartialOut, rows * uint64_t(shape.headDim) * 4},
        std::pair{Workspace::PartialLse, rows * 4}}) {
    layout.offset[unsigned(w)] = layout.bytes;
    layout.bytes = alignTo(layout.bytes + bytes, 256);
  }
  return layout;
}

void decodeGrid(const KernelMetadata &meta, const LaunchSpec &launch,
                const ProblemShape &shape, unsigned grid[3]) {
  grid[0] = unsigned(divideCeil(decodeRows(meta, shape), launch.gridBlock));
  grid[1] = unsigned(shape.batch * decodeHeads(meta, shape));
  grid[2] = launch.splits ? unsigned(shape.numSplits) : 1;
}

TensorMapRequest makeGroupRowsRequest(const ParamSpec &p, const TensorArg &q,
                                      int64_t kvHeads) {
  uint64_t elem = dtypeSize(q.dtype);
  int64_t b = q.sizes[0], h = q.sizes[1], sq = q.sizes[2], d = q.sizes[3];
  int64_t g = kvHeads > 0 ? h / kvHeads : 1, rows = g * sq;
  // Row r of a group is query r % Sq of head r / Sq: one stride when the
  // heads are Sq rows apart (validated), or the heads' when Sq is 1.
  int64_t rowStride = rows <= 1 ? d : sq > 1 ? q.strides[2] : q.strides[1];
  int64_t groupStride = kvHeads > 1 ? g * q.strides[1] : rows * rowStride;
  int64_t batchStride = b > 1 ? q.strides[0] : kvHeads * groupStride;
  TensorMapRequest r;
  r.tensor = p.tensor;
  r.base = q.data;
  r.dtype = q.dtype;
  r.rank = 4;
  r.dims[0] = uint64_t(d);
  r.dims[1] = uint64_t(rows);
  r.dims[2] = uint64_t(kvHeads);
  r.dims[3] = uint64_t(b);
  r.strideBytes[0] = uint64_t(rowStride) * elem;
  r.strideBytes[1] = uint64_t(groupStride) * elem;
  r.strideBytes[2] = uint64_t(batchStride) * elem;
  r.box[0] = uint32_t(p.box[1]);
  r.box[1] = uint32_t(p.box[0]);
  r.box[2] = r.box[3] = 1;
  r.swizzle = p.swizzle;
  return r;
}

Expected<std::unique_ptr<ParamBuffer>>
packDecodeParams(const KernelMetadata &meta, const LaunchSpec &launch,
                 const DecodeArgs &args, const ProblemShape &shape,
                 uint64_t workspace, TensorMapEncoder encodeTensorMap) {
  auto request = [&](const ParamSpec &p) {
    return p.groupRows ? makeGroupRowsRequest(p, args.q, shape.kvHeads)
                       : makeTensorMapRequest(p, args[p.tensor]);
  };
  return packWorkspaceLaunchParams(
      meta, launch, [&](TensorId t) -> const TensorArg & { return args[t]; },
      args.captures, shape, workspace, decodeWorkspaceLayout(meta, shape),
      request, encodeTensorMap, /*memrefs=*/true, "decoding");
}

} // namespace flashc::rt

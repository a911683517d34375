//===- ArgValidation.cpp - Launch arguments vs the kernel contract --------===//
//
// Pure checks of the caller's tensors against a kernel's metadata. Each
// violated rule adds one line naming the argument, what it is and what the
// kernel needs; all lines are returned together as one InvalidArgument error.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/ArgValidation.h"
#include "Checker.h"
#include "flashc/Runtime/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace llvm;

namespace flashc::rt {

std::string shapeString(const TensorArg &t) {
  std::string s = "[";
  for (unsigned i = 0; i < t.rank && i < 4; ++i)
    s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  return s + "]";
}

std::string stridesString(const TensorArg &t) {
  std::string s = "(";
  for (unsigned i = 0; i < t.rank && i < 4; ++i)
    s += (i ? ", " : "") + std::to_string(t.strides[i]);
  return s + ")";
}

namespace {

const char *kDimNames[] = {"batch", "heads", "seq", "head_dim"};

} // namespace

bool checkTensorArg(Checker &c, const KernelMetadata &meta, TensorId id,
                    const TensorArg &t, int device, StringRef name) {
  if (name.empty())
    name = tensorName(id);
  bool isLse = id == TensorId::LSE;
  unsigned wantRank = isLse ? 3 : 4;
  DType wantType = isLse ? DType::F32 : meta.dtype;
  bool good = true;
  if (t.rank != wantRank) {
    c.add(formatv("{0} has rank {1}; expected {2} ({3})", name, t.rank,
                  wantRank, isLse ? "B x H x Nq" : "B x H x N x D"));
    return false;
  }
  if (t.dtype != wantType) {
    c.add(formatv("{0} has dtype {1}; kernel {2} takes {3}", name,
                  dtypeName(t.dtype), meta.kernel, dtypeName(wantType)));
    good = false;
  }
  for (unsigned d = 0; d < t.rank; ++d) {
    if (t.sizes[d] < 0) {
      c.add(formatv("{0} has negative size {1} in dimension {2}", name,
                    t.sizes[d], d));
      good = false;
    }
    if (t.strides[d] < 0) {
      c.add(formatv("{0} has negative stride {1} in dimension {2}", name,
                    t.strides[d], d));
      good = false;
    }
  }
  if (t.strides[t.rank - 1] != 1 && t.sizes[t.rank - 1] > 1) {
    c.add(formatv("{0} strides {1}: the last dimension must be contiguous "
                  "(stride 1)",
                  name, stridesString(t)));
    good = false;
  }
  unsigned elem = dtypeSize(t.dtype);
  // LSE is written one f32 per row: natural alignment is enough there.
  unsigned align = isLse ? 4 : 16;
  if (t.data % align)
    c.add(formatv("{0} data pointer {1:x} is not {2}-byte aligned", name,
                  t.data, align));
  for (unsigned d = 0; d + 1 < t.rank && !isLse; ++d) {
    if (t.sizes[d] > 1 && (t.strides[d] * elem) % 16) {
      c.add(formatv("{0} stride {1} of dimension {2} ({3}) is {4} bytes, "
                    "not a multiple of 16",
                    name, t.strides[d], d, kDimNames[d], t.strides[d] * elem));
      good = false;
    }
  }
  if (device >= 0 && t.device != device)
    c.add(formatv("{0} is on device {1} but the kernel was loaded on "
                  "device {2}",
                  name, t.device, device));
  return good;
}

int64_t integerParamValue(const ParamSpec &p, const ProblemShape &shape,
                          const TensorArg &tensor) {
  switch (p.scalar) {
  case ScalarKind::Batch:
    return shape.batch;
  case ScalarKind::Heads:
    return shape.heads;
  case ScalarKind::SeqQ:
    return shape.seqQ;
  case ScalarKind::SeqK:
    return shape.seqK;
  case ScalarKind::HeadDim:
    return shape.headDim;
  case ScalarKind::KvGroup:
    return shape.kvGroup();
  case ScalarKind::NumSplits:
    return shape.numSplits;
  case ScalarKind::NumPages:
    return shape.numPages;
  case ScalarKind::PageTableCols:
    return shape.pageTableCols;
  case ScalarKind::Stride:
    return tensor.rank > p.strideDim ? tensor.strides[p.strideDim] : 0;
  case ScalarKind::Scale:
  case ScalarKind::ScaleLog2:
    break;
  }
  return 0;
}

/// cu_seqlens_q, cu_seqlens_k and max_seqlen_q of a packed launch. Their
/// contents live on the device and are not read here: the kernel clamps
/// each sequence's rows into the tensors, so bad prefix sums give wrong
/// rows, never an access outside them.
static void checkSeqlens(Checker &c, const KernelMetadata &meta,
                         const LaunchArgs &args, ProblemShape &shape) {
  int64_t entries[2] = {-1, -1};
  for (bool keys : {false, true}) {
    const TensorArg &t = keys ? args.cuSeqlensK : args.cuSeqlensQ;
    StringRef name = keys ? "cu_seqlens_k" : "cu_seqlens_q";
    if (!t.present()) {
      c.add(name + " is missing: kernel " + meta.kernel +
            " takes packed sequences");
      continue;
    }
    bool good = true;
    if (t.rank != 1) {
      c.add(formatv("{0} has rank {1}; expected 1 (one int32 per sequence, "
                    "plus one)",
                    name, t.rank));
      good = false;
    }
    if (t.dtype != DType::I32) {
      c.add(
          formatv("{0} has dtype {1}; expected i32", name, dtypeName(t.dtype)));
      good = false;
    }
    if (t.rank == 1 && t.sizes[0] > 1 && t.strides[0] != 1) {
      c.add(formatv("{0} has stride {1}; expected a contiguous vector", name,
                    t.strides[0]));
      good = false;
    }
    if (t.rank == 1 && t.sizes[0] < 1) {
      c.add(name + " is empty: it holds one entry per sequence plus one");
      good = false;
    }
    if (t.data % 4)
      c.add(formatv("{0} data pointer {1:x} is not 4-byte aligned", name,
                    t.data));
    if (t.device != args[TensorId::Q].device)
      c.add(formatv("{0} is on device {1} but q is on device {2}", name,
                    t.device, args[TensorId::Q].device));
    if (good)
      entries[keys] = t.sizes[0];
  }
  if (entries[0] >= 0 && entries[1] >= 0 && entries[0] != entries[1])
    c.add(formatv("cu_seqlens_q has {0} entries and cu_seqlens_k {1}: both "
                  "hold one per sequence plus one",
                  entries[0], entries[1]));
  shape.sequences = std::max<int64_t>(entries[0] - 1, 0);
  shape.maxSeqQ = args.maxSeqlenQ;
  if (args.maxSeqlenQ < 0 || args.maxSeqlenQ > shape.seqQ)
    c.add(formatv("max_seqlen_q = {0} is outside [0, {1}] (q's rows)",
                  args.maxSeqlenQ, shape.seqQ));
}

bool isDenseRowMajor(const TensorArg &t) {
  int64_t dense = 1;
  for (int d = int(t.rank) - 1; d >= 0; --d) {
    if (t.sizes[d] > 1 && t.strides[d] != dense)
      return false;
    dense *= t.sizes[d];
  }
  return true;
}

void checkCaptures(Checker &c, const KernelMetadata &meta,
                   ArrayRef<TensorArg> captures, int64_t heads, int device,
                   int qDevice) {
  if (captures.size() != meta.captures.size()) {
    std::string want;
    for (auto [i, spec] : llvm::enumerate(meta.captures))
      want +=
          formatv("{0}{1} ({2}, rank {3})", i ? ", " : "",
                  captureRoleName(spec.role), dtypeName(spec.dtype), spec.rank);
    c.add(formatv("{0} captures were given; kernel {1} takes {2}{3}{4}",
                  captures.size(), meta.kernel, meta.captures.size(),
                  want.empty() ? "" : ": ", want));
    return;
  }
  for (auto [i, pair] : llvm::enumerate(llvm::zip(captures, meta.captures))) {
    auto [t, spec] = pair;
    std::string name =
        formatv("capture {0} ({1})", i, captureRoleName(spec.role));
    if (!t.present()) {
      c.add(name + " is missing (null data pointer)");
      continue;
    }
    if (t.dtype != spec.dtype || t.rank != spec.rank) {
      c.add(formatv("{0} is {1} of rank {2}; kernel {3} takes {4} of rank {5}",
                    name, dtypeName(t.dtype), t.rank, meta.kernel,
                    dtypeName(spec.dtype), spec.rank));
      continue;
    }
    int want = device >= 0 ? device : qDevice;
    if (t.device != want)
      c.add(formatv("{0} is on device {1}; the kernel runs on device {2}", name,
                    t.device, want));
    // The kernel clamps each index into the sizes, so an empty dimension
    // would leave nothing to read; it indexes row-major.
    bool empty = llvm::any_of(ArrayRef<int64_t>(t.sizes, t.rank),
                              [](int64_t size) { return size < 1; });
    for (auto [d, size] : llvm::enumerate(spec.shape))
      if (size >= 0 && t.sizes[d] != size)
        c.add(formatv("{0} {1}: kernel {2} takes {3} along dimension {4}", name,
                      shapeString(t), meta.kernel, size, d));
    if (empty)
      c.add(name + " " + shapeString(t) + " is empty");
    else if (!isDenseRowMajor(t))
      c.add(formatv("{0} strides {1}: captures are read dense row-major; "
                    "pass a contiguous one",
                    name, stridesString(t)));
    if (spec.role != CaptureRole::Capture && heads > 0 && t.sizes[0] != heads)
      c.add(formatv("{0} has {1} entries; expected one per query head ({2})",
                    name, t.sizes[0], heads));
  }
}

Expected<ProblemShape> validateLaunchArgs(const KernelMetadata &meta,
                                          const LaunchArgs &args, int device) {
  if (meta.decode)
    return makeError(ErrorCode::InvalidArgument,
                     "kernel " + meta.kernel +
                         " is a decoding pass: launch it with its K/V cache "
                         "(flashrt_launch_decode)");
  Checker c;
  // Presence, rank, dtype, layout and alignment of each tensor on its own.
  bool usable[kNumTensors] = {};
  for (unsigned i = 0; i < kNumTensors; ++i) {
    TensorId id = TensorId(i);
    const TensorArg &t = args[id];
    StringRef name = tensorName(id);
    bool isLse = id == TensorId::LSE;
    if (isLse && !meta.hasLse) {
      if (t.present())
        c.add("lse was given but kernel " + meta.kernel +
              " does not write one (has_lse is false)");
      continue;
    }
    if (!t.present()) {
      if (isLse)
        c.add("lse is missing: kernel " + meta.kernel +
              " writes the log-sum-exp (has_lse is true)");
      else
        c.add(name + " is missing (null data pointer)");
      continue;
    }
    usable[i] = checkTensorArg(c, meta, id, t, device);
  }

  // All tensors on one device.
  int firstDevice = -1;
  for (unsigned i = 0; i < kNumTensors; ++i) {
    const TensorArg &t = args.tensors[i];
    if (!t.present() || (TensorId(i) == TensorId::LSE && !meta.hasLse))
      continue;
    if (firstDevice < 0)
      firstDevice = t.device;
    else if (t.device != firstDevice && device < 0)
      c.add(formatv("{0} is on device {1} but q is on device {2}: all tensors "
                    "must be on one device",
                    tensorName(TensorId(i)), t.device, firstDevice));
  }

  const TensorArg &q = args[TensorId::Q], &k = args[TensorId::K],
                  &v = args[TensorId::V], &o = args[TensorId::O];
  auto ranked = [&](TensorId id) {
    return args[id].present() &&
           args[id].rank == (id == TensorId::LSE ? 3u : 4u);
  };
  ProblemShape shape;
  if (ranked(TensorId::Q)) {
    shape.batch = q.sizes[0];
    shape.heads = q.sizes[1];
    shape.seqQ = q.sizes[2];
    shape.headDim = q.sizes[3];
    if (q.sizes[3] != meta.headDim)
      c.add(formatv("q has head dim {0}; kernel {1} is compiled for head dim "
                    "{2}",
                    q.sizes[3], meta.kernel, meta.headDim));
    if (meta.heads && shape.heads != meta.heads)
      c.add(formatv("q has {0} heads; kernel {1} is compiled for {2}",
                    shape.heads, meta.kernel, meta.heads));
    if (meta.packed() && shape.batch != 1)
      c.add("q " + shapeString(q) + ": kernel " + meta.kernel +
            " takes packed sequences, so q must be [1, H, T, D] (every "
            "sequence's rows one after another)");
    if (shape.batch == 0 || shape.heads == 0)
      c.add("q " + shapeString(q) + " has an empty batch or head dimension");
    // Packed sequences may all be empty.
    if (shape.seqQ == 0 && !meta.packed())
      c.add("q " + shapeString(q) + " has seq_q = 0 (N must be at least 1)");
  }
  if (ranked(TensorId::K)) {
    shape.seqK = k.sizes[2];
    shape.kvHeads = k.sizes[1];
    if (meta.kvHeads && shape.kvHeads != meta.kvHeads)
      c.add(formatv("k has {0} heads; kernel {1} is compiled for {2} K/V "
                    "heads",
                    shape.kvHeads, meta.kernel, meta.kvHeads));
    if (shape.seqK == 0 && !(meta.packed() && shape.seqQ == 0))
      c.add("k " + shapeString(k) + " has seq_k = 0 (N must be at least 1)");
    if (ranked(TensorId::Q) &&
        (k.sizes[0] != q.sizes[0] || k.sizes[3] != q.sizes[3]))
      c.add("k " + shapeString(k) + " does not match q " + shapeString(q) +
            " in batch or head dim");
    // Grouped-query attention: each K/V head serves H_q / H_kv query heads.
    bool grouped = llvm::any_of(meta.params, [](const ParamSpec &p) {
      return p.kind == ParamSpec::Kind::I32 && p.scalar == ScalarKind::KvGroup;
    });
    if (ranked(TensorId::Q) && k.sizes[1] != q.sizes[1]) {
      if (!grouped)
        c.add(formatv("k has {0} heads and q {1}: kernel {2} takes as many "
                      "K/V heads as query heads (it has no kv_group "
                      "parameter; recompile it for grouped-query attention)",
                      k.sizes[1], q.sizes[1], meta.kernel));
      else if (k.sizes[1] == 0 || q.sizes[1] % k.sizes[1] != 0)
        c.add(formatv("k has {0} heads, which do not divide q's {1}: "
                      "grouped-query attention needs H_q = G * H_kv",
                      k.sizes[1], q.sizes[1]));
    }
  }
  if (ranked(TensorId::V) && ranked(TensorId::K)) {
    if (v.sizes[0] != k.sizes[0] || v.sizes[1] != k.sizes[1] ||
        v.sizes[2] != k.sizes[2] || v.sizes[3] != k.sizes[3])
      c.add("v " + shapeString(v) + " does not match k " + shapeString(k));
  }
  if (ranked(TensorId::O) && ranked(TensorId::Q)) {
    if (o.sizes[0] != q.sizes[0] || o.sizes[1] != q.sizes[1] ||
        o.sizes[2] != q.sizes[2] || o.sizes[3] != q.sizes[3])
      c.add("o " + shapeString(o) + " does not match q " + shapeString(q));
  }
  if (meta.hasLse && ranked(TensorId::LSE) && ranked(TensorId::Q)) {
    const TensorArg &lse = args[TensorId::LSE];
    if (lse.sizes[0] != q.sizes[0] || lse.sizes[1] != q.sizes[1] ||
        lse.sizes[2] != q.sizes[2])
      c.add("lse " + shapeString(lse) + " does not match q " + shapeString(q) +
            " (expected [B, H, Nq])");
  }
  checkCaptures(c, meta, args.captures, shape.heads, device,
                args[TensorId::Q].device);
  if (meta.packed())
    checkSeqlens(c, meta, args, shape);
  else if (args.cuSeqlensQ.present() || args.cuSeqlensK.present())
    c.add("cu_seqlens was given but kernel " + meta.kernel +
          " takes no packed sequences (its grid is not \"packed\")");
  // Values the kernel receives as i32 must fit.
  for (const ParamSpec &p : meta.params) {
    if (p.kind != ParamSpec::Kind::I32)
      continue;
    int64_t value = integerParamValue(p, shape, args[p.tensor]);
    if (value > INT32_MAX)
      c.add(formatv("{0} = {1} does not fit the kernel's 32-bit parameter",
                    p.text, value));
  }
  // A tensor the kernel gets only as a pointer is indexed as dense
  // row-major: any other layout would be read or written in the wrong
  // places, silently. Dimensions of size 1 impose nothing.
  for (unsigned i = 0; i < kNumTensors; ++i) {
    TensorId id = TensorId(i);
    if (!usable[i] || !meta.assumesDenseLayout(id))
      continue;
    const TensorArg &t = args[id];
    if (!isDenseRowMajor(t))
      c.add(formatv("{0} strides {1}: kernel {2} gets {0} as a plain pointer "
                    "and indexes it as a dense {3} tensor; pass a "
                    "contiguous one",
                    tensorName(id), stridesString(t), meta.kernel,
                    id == TensorId::LSE ? "B x H x Nq" : "B x H x N x D"));
  }
  // Tensors read through TMA are viewed as [(B*H*N), D] rows.
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O}) {
    if (!meta.usesTma(id) || !usable[unsigned(id)])
      continue;
    const TensorArg &t = args[id];
    if (t.strides[1] != t.sizes[2] * t.strides[2] && t.sizes[1] > 1)
      c.add(formatv("{0} strides {1}: kernel reads {0} through TMA as rows of "
                    "[B*H*N, D], so stride_h must be N * stride_n",
                    tensorName(id), stridesString(t)));
    if (t.strides[0] != t.sizes[1] * t.strides[1] && t.sizes[0] > 1)
      c.add(formatv("{0} strides {1}: kernel reads {0} through TMA as rows of "
                    "[B*H*N, D], so stride_b must be H * stride_h",
                    tensorName(id), stridesString(t)));
  }
  // Tensors read through a 3-D descriptor (tma of rank 3, tma_ptr) are
  // viewed as [B*H, N, D]: N keeps its own stride (heads may be padded
  // apart), but B and H must merge into one dimension. A 4-D descriptor
  // keeps every stride (B x H x N x D or B x N x H x D storage alike). A
  // dimension of size 1 imposes nothing (its stride is never used; see
  // makeTensorMapRequest). Stride 1 along D and 16-byte strides are the
  // rules above, which every q/k/v/o already meets.
  for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O}) {
    if (!meta.usesStridedTensorMap(id) || !usable[unsigned(id)])
      continue;
    const TensorArg &t = args[id];
    StringRef name = tensorName(id);
    if (meta.mergesBatchAndHeads(id) && t.sizes[0] > 1 && t.sizes[1] > 1 &&
        t.strides[0] != t.sizes[1] * t.strides[1])
      c.add(formatv("{0} strides {1}: kernel reads {0} through a TMA "
                    "descriptor as [B*H, N, D], so stride_b must be H * "
                    "stride_h = {2} * {3} = {4}, not {5}",
                    name, stridesString(t), t.sizes[1], t.strides[1],
                    t.sizes[1] * t.strides[1], t.strides[0]));
    if (t.sizes[2] > kMaxTmaDim)
      c.add(formatv("{0} has {1} rows per head, beyond the TMA limit of 2^32",
                    name, t.sizes[2]));
    unsigned elem = dtypeSize(t.dtype);
    for (unsigned d = 0; d < 3; ++d)
      if (t.sizes[d] > 1 && t.strides[d] * elem >= kMaxTmaStrideBytes)
        c.add(formatv("{0} stride {1} of dimension {2} ({3}) is {4} bytes, "
                      "beyond the TMA limit of 2^40",
                      name, t.strides[d], d, kDimNames[d],
                      t.strides[d] * elem));
  }
  if (!c.ok())
    return c.take();
  unsigned grid[3];
  if (Error err = computeGrid(meta, shape, 1, grid))
    return std::move(err);
  return shape;
}

Error computeGrid(const KernelMetadata &meta, const ProblemShape &shape,
                  int numSMs, unsigned grid[3]) {
  unsigned cx = meta.cluster[0];
  if (meta.packed()) {
    // x: the longest sequence's query blocks, y: sequences * heads, in the
    // order the kernel ranks them (flash.wg.packed_tile).
    int64_t y = shape.sequences * shape.heads;
    if (y > kMaxGridYZ)
      return makeError(ErrorCode::InvalidArgument,
                       formatv("invalid launch arguments:\n  sequences * "
                               "heads = {0} * {1} = {2} exceeds the grid.y "
                               "limit of {3}",
                               shape.sequences, shape.heads, y, kMaxGridYZ));
    grid[0] = unsigned((shape.maxSeqQ + meta.gridBlockM - 1) / meta.gridBlockM);
    grid[1] = unsigned(y);
    grid[2] = 1;
    return Error::success();
  }
  if (meta.gridKind == GridKind::Persistent) {
    // One block per SM, rounded down to whole clusters.
    unsigned sms = unsigned(std::max(numSMs, 1));
    grid[0] = std::max(cx, sms / cx * cx);
    grid[1] = grid[2] = 1;
    return Error::success();
  }
  int64_t blocks = (shape.seqQ + meta.gridBlockM - 1) / meta.gridBlockM;
  int64_t heads = shape.batch * shape.heads;
  if (meta.gridKind == GridKind::Sections) {
    // (heads per section, query blocks, sections): the most heads whose
    // keys fit section_keys, at least one, that divide batch * heads, so
    // that every block has a tile.
    int64_t fit =
        std::clamp<int64_t>(meta.gridSectionKeys / shape.seqK, 1, heads);
    while (heads % fit)
      --fit;
    int64_t sections = heads / fit;
    if (blocks > kMaxGridYZ)
      return makeError(ErrorCode::InvalidArgument,
                       formatv("invalid launch arguments:\n  seq_q = {0} "
                               "needs {1} blocks of {2} rows, beyond the "
                               "grid.y limit of {3}",
                               shape.seqQ, blocks, meta.gridBlockM,
                               kMaxGridYZ));
    if (sections > kMaxGridYZ)
      return makeError(ErrorCode::InvalidArgument,
                       formatv("invalid launch arguments:\n  batch * heads = "
                               "{0} * {1} = {2} needs {3} sections of {4} "
                               "heads, beyond the grid.z limit of {5}",
                               shape.batch, shape.heads, heads, sections, fit,
                               kMaxGridYZ));
    grid[0] = unsigned(fit);
    grid[1] = unsigned(blocks);
    grid[2] = unsigned(sections);
    return Error::success();
  }
  // grid.x is rounded up to whole clusters; the kernel sees blocks whose
  // rows start at or beyond seq_q and must do nothing in them.
  int64_t x = (blocks + cx - 1) / cx * cx;
  int64_t y = heads;
  if (y > kMaxGridYZ)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  batch * heads = {0} "
                             "* {1} = {2} exceeds the grid.y limit of {3}",
                             shape.batch, shape.heads, y, kMaxGridYZ));
  if (x > kMaxGridX)
    return makeError(ErrorCode::InvalidArgument,
                     formatv("invalid launch arguments:\n  seq_q = {0} needs "
                             "{1} blocks, beyond the grid.x limit",
                             shape.seqQ, x));
  grid[0] = unsigned(x);
  grid[1] = unsigned(y);
  grid[2] = 1;
  return Error::success();
}

} // namespace flashc::rt

//===- KernelMetadata.cpp - Parse and check kernel.json -------------------===//
//
// Reads the metadata document with llvm::json and checks that it is
// complete and self-consistent (e.g. has_lse agrees with the parameters).
// Errors name the field: "kernel.json: params[3].value: unknown value 'sq'".
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/KernelMetadata.h"
#include "flashc/Runtime/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace llvm;

namespace flashc::rt {

StringRef dtypeName(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  }
  return "?";
}

unsigned dtypeSize(DType dtype) {
  return dtype == DType::F32 || dtype == DType::I32 ? 4 : 2;
}

StringRef tensorName(TensorId id) {
  static const char *names[] = {
      "q",  "k",  "v",  "o",          "lse",          "do",
      "dq", "dk", "dv", "page_table", "cache_seqlens"};
  return names[unsigned(id)];
}

StringRef workspaceName(Workspace w) {
  static const char *names[] = {"delta",         "dq_accum",    "dq_turns",
                                "sink_partials", "partial_out", "partial_lse"};
  return names[unsigned(w)];
}

StringRef captureRoleName(CaptureRole role) {
  static const char *names[] = {"capture", "sinks", "dsinks"};
  return names[unsigned(role)];
}

std::optional<unsigned> KernelMetadata::findCapture(CaptureRole role) const {
  for (auto [i, capture] : llvm::enumerate(captures))
    if (capture.role == role)
      return unsigned(i);
  return std::nullopt;
}

bool parseArch(StringRef arch, unsigned &sm, bool &archSpecific) {
  if (!arch.consume_front("sm_"))
    return false;
  archSpecific = arch.consume_back("a");
  return !arch.getAsInteger(10, sm) && sm >= 30;
}

bool KernelMetadata::usesTma(TensorId id) const {
  for (const ParamSpec &p : params)
    if (p.kind == ParamSpec::Kind::Tma && !p.isStridedTensorMap() &&
        p.tensor == id)
      return true;
  return false;
}

bool KernelMetadata::usesStridedTensorMap(TensorId id) const {
  for (const ParamSpec &p : params)
    if (p.isStridedTensorMap() && p.tensor == id)
      return true;
  return false;
}

bool KernelMetadata::mergesBatchAndHeads(TensorId id) const {
  for (const ParamSpec &p : params)
    if (p.isTma() && p.rank == 3 && p.tensor == id)
      return true;
  return false;
}

bool KernelMetadata::assumesDenseLayout(TensorId id) const {
  bool byPointer = false;
  for (const ParamSpec &p : params) {
    bool names = p.tensor == id;
    if (p.kind == ParamSpec::Kind::Ptr && names)
      byPointer = true;
    else if ((p.kind == ParamSpec::Kind::Memref || p.isTma()) && names)
      return false;
    else if ((p.kind == ParamSpec::Kind::I32 ||
              p.kind == ParamSpec::Kind::I64) &&
             p.scalar == ScalarKind::Stride && names)
      return false;
  }
  return byPointer;
}

SmallVector<unsigned, 32> KernelMetadata::paramSizes() const {
  return paramSizes(params);
}

SmallVector<unsigned, 32>
KernelMetadata::paramSizes(ArrayRef<ParamSpec> params) {
  SmallVector<unsigned, 32> sizes;
  for (const ParamSpec &p : params) {
    switch (p.kind) {
    case ParamSpec::Kind::Workspace:
    case ParamSpec::Kind::Ptr:
    case ParamSpec::Kind::I64:
    case ParamSpec::Kind::TmaPtr:
    case ParamSpec::Kind::TileCounter:
    case ParamSpec::Kind::Seqlens:
      sizes.push_back(8);
      break;
    case ParamSpec::Kind::I32:
    case ParamSpec::Kind::F32:
      sizes.push_back(4);
      break;
    case ParamSpec::Kind::Memref:
    case ParamSpec::Kind::Capture:
      // allocated, aligned, offset, sizes[rank], strides[rank]
      sizes.append(3 + 2 * p.rank, 8);
      break;
    case ParamSpec::Kind::Tma:
      sizes.push_back(128);
      break;
    }
  }
  return sizes;
}

namespace {
enum class Pass { Forward, Backward, Decode };

/// Collects errors while walking the document.
class Parser {
public:
  explicit Parser(const json::Object &root) : root(root) {}

  Error fail(const Twine &field, const Twine &why) {
    return makeError(ErrorCode::InvalidKernel,
                     "kernel metadata: " + field + ": " + why);
  }

  /// "key" at the root, "path.key" inside an object.
  static std::string fieldPath(const Twine &path, StringRef key) {
    return path.isTriviallyEmpty() ? key.str() : (path + "." + key).str();
  }

  Expected<const json::Value *> get(const json::Object &obj, StringRef key,
                                    const Twine &path) {
    const json::Value *v = obj.get(key);
    if (!v)
      return fail(fieldPath(path, key), "missing");
    return v;
  }

  Error getString(const json::Object &obj, StringRef key, std::string &out,
                  const Twine &path = "") {
    auto v = get(obj, key, path);
    if (!v)
      return v.takeError();
    auto s = (*v)->getAsString();
    if (!s)
      return fail(fieldPath(path, key), "must be a string");
    out = s->str();
    return Error::success();
  }

  Error getInt(const json::Object &obj, StringRef key, int64_t &out,
               const Twine &path = "") {
    auto v = get(obj, key, path);
    if (!v)
      return v.takeError();
    auto i = (*v)->getAsInteger();
    if (!i)
      return fail(fieldPath(path, key), "must be an integer");
    out = *i;
    return Error::success();
  }

  Error getDims(StringRef key, unsigned out[3]) {
    return getDims(root, key, out, "");
  }
  Error getDims(const json::Object &obj, StringRef key, unsigned out[3],
                const Twine &path) {
    auto v = get(obj, key, path);
    if (!v)
      return v.takeError();
    std::string field = fieldPath(path, key);
    const json::Array *a = (*v)->getAsArray();
    if (!a || a->size() != 3)
      return fail(field, "must be an array of 3 integers");
    for (unsigned i = 0; i < 3; ++i) {
      auto d = (*a)[i].getAsInteger();
      if (!d || *d < 1 || *d > 65535)
        return fail(field,
                    formatv("element {0} must be an integer in [1, 65535]", i));
      out[i] = unsigned(*d);
    }
    return Error::success();
  }

  Error parseParam(const json::Object &obj, unsigned index, ParamSpec &p);
  Expected<KernelMetadata> parse();
  /// A backward kernel's "launches": pre, main and post.
  Expected<KernelMetadata> parseLaunches(KernelMetadata &m);
  /// A decoding kernel's "launches": split and combine.
  Expected<KernelMetadata> parseDecodeLaunches(KernelMetadata &m);
  /// "launches": an array of one launch per role of `roles`, in order.
  Expected<const json::Array *> getLaunches(ArrayRef<StringRef> roles);
  /// A launch's object and its grid's.
  struct LaunchObjects {
    const json::Object *launch, *grid;
  };
  /// The fields every pass's launches have, of `v` (launches[i], named
  /// `field`): its role, which must be `role`; its kernel, m.kernel for
  /// the pass's `main` launch; block; shared memory; "programmatic" (never
  /// on the pass's `first` launch); and its grid, of kind `kind`
  /// (`gridKind`) with blocks of `sizeKey` rows. Returns the objects that
  /// hold the pass's own keys.
  Expected<LaunchObjects> parseLaunch(const KernelMetadata &m,
                                      const json::Value &v,
                                      const std::string &field, StringRef role,
                                      bool first, bool main, StringRef kind,
                                      GridKind gridKind, StringRef sizeKey,
                                      LaunchSpec &l);
  /// The "params" of launch `lo` (named `field`) into l.params, each one of
  /// `pass`: those `refused` refuses fail with `refusal`. Marks the tensors
  /// they pass in `tensorSeen`.
  Error parseLaunchParams(const json::Object &lo, const std::string &field,
                          Pass pass,
                          function_ref<bool(const ParamSpec &)> refused,
                          StringRef refusal, bool tensorSeen[], LaunchSpec &l);
  /// Every capture of `m` is passed by some launch.
  Error checkLaunchCaptures(const KernelMetadata &m);
  /// "pack_gqa" and "page_size" of a decoding kernel.
  Error parseDecodeFields(KernelMetadata &m);
  /// The box of every tma and tma_ptr of `params` against the dtype and
  /// head_dim; errors name `field`.
  Error checkTmaBoxes(const KernelMetadata &m, ArrayRef<ParamSpec> params,
                      const Twine &field);
  /// "captures" (optional) into m.captures.
  Error parseCaptures(KernelMetadata &m);

private:
  const json::Object &root;
  /// The kernel's captures, which "memref" parameters may name.
  ArrayRef<CaptureSpec> captures;
  /// A decoding kernel with pack_gqa: a tma of q may take "view":
  /// "group_rows".
  bool groupRowsAllowed = false;
};

std::optional<TensorId> parseTensor(StringRef name) {
  return StringSwitch<std::optional<TensorId>>(name)
      .Case("q", TensorId::Q)
      .Case("k", TensorId::K)
      .Case("v", TensorId::V)
      .Case("o", TensorId::O)
      .Case("lse", TensorId::LSE)
      .Case("do", TensorId::DO)
      .Case("dq", TensorId::DQ)
      .Case("dk", TensorId::DK)
      .Case("dv", TensorId::DV)
      .Case("page_table", TensorId::PageTable)
      .Case("cache_seqlens", TensorId::CacheSeqlens)
      .Default(std::nullopt);
}

/// The pass `p` belongs to where it is not `pass`'s ("the backward pass
/// (...)"): a tensor, workspace or value that only another pass has.
std::optional<StringRef> otherPassParam(const ParamSpec &p, Pass pass) {
  static constexpr StringRef backward =
      "backward pass (\"pass\": \"backward\")";
  static constexpr StringRef decode = "decoding pass (\"pass\": \"decode\")";
  bool integer =
      p.kind == ParamSpec::Kind::I32 || p.kind == ParamSpec::Kind::I64;
  bool namesTensor = p.kind == ParamSpec::Kind::Ptr ||
                     p.kind == ParamSpec::Kind::Memref || p.isTma() ||
                     (integer && p.scalar == ScalarKind::Stride);
  if (namesTensor && isBackwardTensor(p.tensor) && pass != Pass::Backward)
    return backward;
  if (namesTensor && isDecodeTensor(p.tensor) && pass != Pass::Decode)
    return decode;
  if (p.kind == ParamSpec::Kind::Workspace) {
    if (isDecodeWorkspace(p.workspace))
      return pass == Pass::Decode ? std::nullopt
                                  : std::optional<StringRef>(decode);
    return pass == Pass::Backward ? std::nullopt
                                  : std::optional<StringRef>(backward);
  }
  if (integer && isDecodeScalar(p.scalar) && pass != Pass::Decode)
    return decode;
  return std::nullopt;
}

Error Parser::parseParam(const json::Object &obj, unsigned index,
                         ParamSpec &p) {
  std::string field = formatv("params[{0}]", index);
  std::string kind;
  if (Error err = getString(obj, "kind", kind, field))
    return err;
  auto k = StringSwitch<std::optional<ParamSpec::Kind>>(kind)
               .Case("ptr", ParamSpec::Kind::Ptr)
               .Case("i32", ParamSpec::Kind::I32)
               .Case("i64", ParamSpec::Kind::I64)
               .Case("f32", ParamSpec::Kind::F32)
               .Case("memref", ParamSpec::Kind::Memref)
               .Case("tma", ParamSpec::Kind::Tma)
               .Case("tma_ptr", ParamSpec::Kind::TmaPtr)
               .Case("tile_counter", ParamSpec::Kind::TileCounter)
               .Case("workspace", ParamSpec::Kind::Workspace)
               .Default(std::nullopt);
  if (!k)
    return fail(field + ".kind",
                "unknown kind '" + kind +
                    "' (ptr, i32, i64, f32, memref, tma, tma_ptr, "
                    "tile_counter, workspace)");
  p.kind = *k;
  if (p.kind == ParamSpec::Kind::Workspace) {
    if (Error err = getString(obj, "name", p.text, field))
      return err;
    auto w = StringSwitch<std::optional<Workspace>>(p.text)
                 .Case("delta", Workspace::Delta)
                 .Case("dq_accum", Workspace::DqAccum)
                 .Case("dq_turns", Workspace::DqTurns)
                 .Case("sink_partials", Workspace::SinkPartials)
                 .Case("partial_out", Workspace::PartialOut)
                 .Case("partial_lse", Workspace::PartialLse)
                 .Default(std::nullopt);
    if (!w)
      return fail(field + ".name",
                  "unknown workspace '" + p.text +
                      "' (delta, dq_accum, dq_turns, sink_partials, "
                      "partial_out, partial_lse)");
    p.workspace = *w;
    return Error::success();
  }
  if (p.kind == ParamSpec::Kind::TileCounter) {
    p.text = "tile_counter";
    return Error::success();
  }
  if (p.kind == ParamSpec::Kind::Memref && obj.get("capture")) {
    int64_t index, rank;
    if (Error err = getInt(obj, "capture", index, field))
      return err;
    if (index < 0 || size_t(index) >= captures.size())
      return fail(field + ".capture",
                  formatv("{0} is not a capture (the kernel has {1})", index,
                          captures.size()));
    if (Error err = getInt(obj, "rank", rank, field))
      return err;
    if (rank != captures[index].rank)
      return fail(field + ".rank", formatv("capture {0} has rank {1}, not {2}",
                                           index, captures[index].rank, rank));
    p.kind = ParamSpec::Kind::Capture;
    p.capture = unsigned(index);
    p.rank = unsigned(rank);
    p.text = formatv("capture {0} ({1})", index,
                     captureRoleName(captures[index].role));
    return Error::success();
  }

  if (p.kind == ParamSpec::Kind::I32 || p.kind == ParamSpec::Kind::I64 ||
      p.kind == ParamSpec::Kind::F32) {
    if (Error err = getString(obj, "value", p.text, field))
      return err;
    StringRef v = p.text;
    auto s = StringSwitch<std::optional<ScalarKind>>(v)
                 .Case("batch", ScalarKind::Batch)
                 .Case("heads", ScalarKind::Heads)
                 .Case("seq_q", ScalarKind::SeqQ)
                 .Case("seq_k", ScalarKind::SeqK)
                 .Case("head_dim", ScalarKind::HeadDim)
                 .Case("kv_group", ScalarKind::KvGroup)
                 .Case("scale", ScalarKind::Scale)
                 .Case("scale_log2", ScalarKind::ScaleLog2)
                 .Case("num_splits", ScalarKind::NumSplits)
                 .Case("num_pages", ScalarKind::NumPages)
                 .Case("page_table_cols", ScalarKind::PageTableCols)
                 .Default(std::nullopt);
    if (!s && v.consume_front("stride_")) {
      auto [t, d] = v.rsplit('_');
      auto tensor = parseTensor(t);
      unsigned dim = StringSwitch<unsigned>(d)
                         .Case("b", 0)
                         .Case("h", 1)
                         .Case("n", 2)
                         .Case("d", 3)
                         .Default(~0u);
      // The page table and the lengths are dense vectors: no strides.
      if (tensor && dim != ~0u && !isDecodeTensor(*tensor) &&
          !(*tensor == TensorId::LSE && dim == 3)) {
        s = ScalarKind::Stride;
        p.tensor = *tensor;
        p.strideDim = dim;
      }
    }
    if (!s)
      return fail(
          field + ".value",
          "unknown value '" + p.text +
              "' (batch, heads, seq_q, seq_k, head_dim, kv_group, scale, "
              "scale_log2, num_splits, num_pages, page_table_cols, "
              "stride_<q|k|v|o|lse|do|dq|dk|dv>_<b|h|n|d>)");
    p.scalar = *s;
    bool isFloat =
        p.scalar == ScalarKind::Scale || p.scalar == ScalarKind::ScaleLog2;
    if (isFloat != (p.kind == ParamSpec::Kind::F32))
      return fail(field, "'" + p.text + "' cannot be passed as " + kind);
    return Error::success();
  }

  if (Error err = getString(obj, "tensor", p.text, field))
    return err;
  if (p.kind == ParamSpec::Kind::Ptr &&
      (p.text == "cu_seqlens_q" || p.text == "cu_seqlens_k")) {
    p.kind = ParamSpec::Kind::Seqlens;
    p.keys = p.text == "cu_seqlens_k";
    return Error::success();
  }
  auto tensor = parseTensor(p.text);
  if (!tensor)
    return fail(field + ".tensor",
                "unknown tensor '" + p.text +
                    "' (q, k, v, o, lse, do, dq, dk, dv, page_table, "
                    "cache_seqlens)");
  p.tensor = *tensor;
  if (isDecodeTensor(p.tensor) && p.kind != ParamSpec::Kind::Ptr)
    return fail(field, p.text + " is passed by pointer (\"ptr\") only");
  if (p.kind == ParamSpec::Kind::Memref) {
    int64_t rank;
    if (Error err = getInt(obj, "rank", rank, field))
      return err;
    int64_t want = p.tensor == TensorId::LSE ? 3 : 4;
    if (rank != want)
      return fail(field + ".rank", formatv("tensor {0} has rank {1}, not {2}",
                                           p.text, want, rank));
    p.rank = unsigned(rank);
  }
  if (p.kind == ParamSpec::Kind::TmaPtr) {
    // The map is 3-D over the tensor viewed as [B*H, N, D]; nothing else is
    // implemented (the kernel's loads assume that coordinate order).
    int64_t rank;
    if (Error err = getInt(obj, "rank", rank, field))
      return err;
    if (rank != 3)
      return fail(field + ".rank",
                  formatv("a tma_ptr descriptor is 3-D over [B*H, N, D] "
                          "(rank 3), not rank {0}",
                          rank));
    p.rank = 3;
  }
  if (p.kind == ParamSpec::Kind::Tma) {
    // 2-D over [B*H*N, D] (the default), 3-D over [B*H, N, D] like
    // tma_ptr's but passed by value (a __grid_constant__ parameter), or 4-D
    // over [B, H, N, D] with any strides.
    int64_t rank = 2;
    if (obj.get("rank"))
      if (Error err = getInt(obj, "rank", rank, field))
        return err;
    if (rank < 2 || rank > 4)
      return fail(field + ".rank",
                  formatv("a tma descriptor is 2-D over [B*H*N, D] (rank 2), "
                          "3-D over [B*H, N, D] (rank 3) or 4-D over [B, H, "
                          "N, D] (rank 4), not rank {0}",
                          rank));
    p.rank = unsigned(rank);
  }
  if (const json::Value *view = obj.get("view")) {
    // The one view: a decoding kernel's q with pack_gqa, [B, H_kv, G * Sq,
    // D].
    std::optional<StringRef> name = view->getAsString();
    if (!name || *name != "group_rows")
      return fail(field + ".view", "must be \"group_rows\"");
    if (p.kind != ParamSpec::Kind::Tma || p.rank != 4 ||
        p.tensor != TensorId::Q)
      return fail(field + ".view",
                  "\"group_rows\" is a rank-4 tma of q's only, not of " +
                      p.text);
    if (!groupRowsAllowed)
      return fail(field + ".view",
                  "\"group_rows\" is a decoding kernel's with pack_gqa");
    p.groupRows = true;
  }
  if (p.isTma()) {
    if (p.tensor == TensorId::LSE)
      return fail(field, "TMA descriptors over lse are not supported");
    const json::Value *box = obj.get("box");
    const json::Array *a = box ? box->getAsArray() : nullptr;
    if (!a || a->size() != 2)
      return fail(field + ".box", "must be [rows, cols]");
    for (unsigned i = 0; i < 2; ++i) {
      auto d = (*a)[i].getAsInteger();
      if (!d || *d < 1 || *d > 256)
        return fail(field + ".box",
                    "each box dimension must be an integer in [1, 256]");
      p.box[i] = *d;
    }
    int64_t swizzle = 0;
    if (obj.get("swizzle"))
      if (Error err = getInt(obj, "swizzle", swizzle, field))
        return err;
    if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
      return fail(field + ".swizzle", "must be 0, 32, 64 or 128");
    p.swizzle = unsigned(swizzle);
  }
  return Error::success();
}

Error Parser::parseCaptures(KernelMetadata &m) {
  const json::Value *value = root.get("captures");
  if (!value)
    return Error::success();
  const json::Array *list = value->getAsArray();
  if (!list || list->size() > kMaxCaptures)
    return fail("captures",
                formatv("must be an array of at most {0}", kMaxCaptures));
  for (auto [i, entry] : llvm::enumerate(*list)) {
    std::string field = formatv("captures[{0}]", i);
    const json::Object *obj = entry.getAsObject();
    if (!obj)
      return fail(field, "must be an object");
    CaptureSpec capture;
    std::string s;
    if (Error err = getString(*obj, "role", s, field))
      return err;
    std::optional<CaptureRole> role;
    for (CaptureRole r :
         {CaptureRole::Capture, CaptureRole::Sinks, CaptureRole::SinksGrad})
      if (s == captureRoleName(r))
        role = r;
    if (!role)
      return fail(field + ".role",
                  "must be \"capture\", \"sinks\" or \"dsinks\", got \"" + s +
                      "\"");
    capture.role = *role;
    if (Error err = getString(*obj, "dtype", s, field))
      return err;
    auto dtype = StringSwitch<std::optional<DType>>(s)
                     .Case("f32", DType::F32)
                     .Case("i32", DType::I32)
                     .Case("bf16", DType::BF16)
                     .Case("f16", DType::F16)
                     .Default(std::nullopt);
    if (!dtype)
      return fail(field + ".dtype",
                  "must be \"f32\", \"i32\", \"bf16\" or \"f16\", got \"" + s +
                      "\"");
    capture.dtype = *dtype;
    int64_t rank;
    if (Error err = getInt(*obj, "rank", rank, field))
      return err;
    if (rank < 1 || rank > 4)
      return fail(field + ".rank", formatv("must be 1 to 4, got {0}", rank));
    capture.rank = unsigned(rank);
    if (const json::Value *shape = obj->get("shape")) {
      const json::Array *sizes = shape->getAsArray();
      if (!sizes || sizes->size() != capture.rank)
        return fail(field + ".shape",
                    formatv("must be an array of {0} sizes", capture.rank));
      for (const json::Value &size : *sizes) {
        std::optional<int64_t> n = size.getAsInteger();
        if (!n || *n < -1)
          return fail(field + ".shape",
                      "each size must be an integer >= 0, or -1 (any)");
        capture.shape.push_back(*n);
      }
    }
    if (capture.role != CaptureRole::Capture &&
        (capture.rank != 1 || capture.dtype != DType::F32))
      return fail(field, "the " + captureRoleName(capture.role) +
                             " are a rank-1 f32 vector, one per head");
    if (capture.role != CaptureRole::Capture && m.findCapture(capture.role))
      return fail(field, "a second " + captureRoleName(capture.role));
    if (capture.role == CaptureRole::SinksGrad && !m.backward)
      return fail(field, "dsinks belong to the backward pass");
    m.captures.push_back(capture);
  }
  if (m.backward && m.findCapture(CaptureRole::Sinks).has_value() !=
                        m.findCapture(CaptureRole::SinksGrad).has_value())
    return fail("captures", "a backward pass takes both the sinks and their "
                            "gradient (dsinks), or neither");
  captures = m.captures;
  return Error::success();
}

/// The first capture of `m` that no parameter of `lists` passes.
static std::optional<unsigned>
captureNotPassed(const KernelMetadata &m, ArrayRef<ArrayRef<ParamSpec>> lists) {
  for (unsigned i = 0; i < m.captures.size(); ++i) {
    bool passed = false;
    for (ArrayRef<ParamSpec> params : lists)
      passed |= llvm::any_of(params, [&](const ParamSpec &p) {
        return p.kind == ParamSpec::Kind::Capture && p.capture == i;
      });
    if (!passed)
      return i;
  }
  return std::nullopt;
}

Expected<KernelMetadata> Parser::parse() {
  KernelMetadata m;
  std::string s;
  if (Error err = getString(root, "format", s))
    return std::move(err);
  if (s != "flashc-kernel")
    return fail("format", "expected \"flashc-kernel\", got \"" + s + "\"");
  int64_t version;
  if (Error err = getInt(root, "format_version", version))
    return std::move(err);
  if (version != 1)
    return fail("format_version",
                formatv("version {0} is not supported (this runtime reads 1)",
                        version));
  m.formatVersion = int(version);
  if (root.get("flashc_version"))
    if (Error err = getString(root, "flashc_version", m.flashcVersion))
      return std::move(err);
  if (root.get("source_hash"))
    if (Error err = getString(root, "source_hash", m.sourceHash))
      return std::move(err);
  if (Error err = getString(root, "kernel", m.kernel))
    return std::move(err);
  if (m.kernel.empty())
    return fail("kernel", "empty symbol name");
  if (Error err = getString(root, "binary", m.binary))
    return std::move(err);
  if (Error err = getString(root, "binary_format", s))
    return std::move(err);
  if (s == "cubin")
    m.binaryFormat = BinaryFormat::Cubin;
  else if (s == "ptx")
    m.binaryFormat = BinaryFormat::Ptx;
  else
    return fail("binary_format",
                "must be \"cubin\" or \"ptx\", got \"" + s + "\"");
  if (Error err = getString(root, "arch", m.arch))
    return std::move(err);
  unsigned sm;
  bool archSpecific;
  if (!parseArch(m.arch, sm, archSpecific))
    return fail("arch", "expected sm_<NN>[a], got \"" + m.arch + "\"");
  if (Error err = getString(root, "dtype", s))
    return std::move(err);
  if (s == "bf16")
    m.dtype = DType::BF16;
  else if (s == "f16")
    m.dtype = DType::F16;
  else
    return fail("dtype", "must be \"bf16\" or \"f16\", got \"" + s + "\"");
  if (Error err = getInt(root, "head_dim", m.headDim))
    return std::move(err);
  if (m.headDim < 8 || m.headDim > 512 || m.headDim % 8)
    return fail("head_dim",
                formatv("{0} is not a multiple of 8 in [8, 512]", m.headDim));
  for (auto [key, out] : {std::pair<StringRef, int64_t *>{"heads", &m.heads},
                          {"kv_heads", &m.kvHeads}}) {
    if (!root.get(key))
      continue;
    if (Error err = getInt(root, key, *out))
      return std::move(err);
    if (*out < 1)
      return fail(key, formatv("must be positive, got {0}", *out));
  }
  if (m.heads && m.kvHeads && m.heads % m.kvHeads)
    return fail("kv_heads",
                formatv("{0} does not divide heads = {1}", m.kvHeads, m.heads));
  auto getBool = [&](StringRef key, bool &out) -> Error {
    auto v = get(root, key, "");
    if (!v)
      return v.takeError();
    auto b = (*v)->getAsBoolean();
    if (!b)
      return fail(key, "must be true or false");
    out = *b;
    return Error::success();
  };
  if (Error err = getBool("causal", m.causal))
    return std::move(err);
  if (Error err = getBool("has_lse", m.hasLse))
    return std::move(err);
  {
    auto v = get(root, "scale", "");
    if (!v)
      return v.takeError();
    auto d = (*v)->getAsNumber();
    if (!d || !(*d > 0))
      return fail("scale", "must be a positive number");
    m.scale = *d;
  }
  if (Error err = getDims("block", m.block))
    return std::move(err);
  if (uint64_t(m.block[0]) * m.block[1] * m.block[2] > 1024)
    return fail("block", "more than 1024 threads per block");
  if (root.get("cluster")) {
    if (Error err = getDims("cluster", m.cluster))
      return std::move(err);
    if (m.cluster[0] * m.cluster[1] * m.cluster[2] > 16)
      return fail("cluster", "more than 16 blocks per cluster");
  }
  int64_t smem = 0;
  if (Error err = getInt(root, "shared_memory_bytes", smem))
    return std::move(err);
  if (smem < 0 || smem > (1 << 20))
    return fail("shared_memory_bytes", formatv("{0} is out of range", smem));
  m.sharedMemoryBytes = unsigned(smem);

  if (root.get("pass")) {
    if (Error err = getString(root, "pass", s))
      return std::move(err);
    if (s != "forward" && s != "backward" && s != "decode")
      return fail("pass", "must be \"forward\", \"backward\" or "
                          "\"decode\", got \"" +
                              s + "\"");
    m.backward = s == "backward";
    m.decode = s == "decode";
  }
  if (m.backward)
    if (Error err = getBool("deterministic", m.deterministic))
      return std::move(err);
  if (m.decode)
    if (Error err = parseDecodeFields(m))
      return std::move(err);
  if (Error err = parseCaptures(m))
    return std::move(err);

  auto grid = get(root, "grid", "");
  if (!grid)
    return grid.takeError();
  const json::Object *g = (*grid)->getAsObject();
  if (!g)
    return fail("grid", "must be an object");
  if (Error err = getString(*g, "kind", s, "grid"))
    return std::move(err);
  if (m.decode && s != "decode")
    return fail("grid.kind", "a decoding kernel's grid is \"decode\", got "
                             "\"" +
                                 s + "\"");
  if (s == "tiles" || s == "sections" || s == "packed") {
    m.gridKind = s == "tiles"      ? GridKind::Tiles
                 : s == "sections" ? GridKind::Sections
                                   : GridKind::Packed;
    if (Error err = getInt(*g, "block_m", m.gridBlockM, "grid"))
      return std::move(err);
    if (m.gridBlockM < 1)
      return fail("grid.block_m", "must be positive");
    if (m.gridKind == GridKind::Sections) {
      if (Error err = getInt(*g, "section_keys", m.gridSectionKeys, "grid"))
        return std::move(err);
      if (m.gridSectionKeys < 1)
        return fail("grid.section_keys", "must be positive");
      if (m.cluster[0] != 1 || m.cluster[1] != 1 || m.cluster[2] != 1)
        return fail("cluster", "a \"sections\" grid takes no clusters");
    } else if (m.gridKind == GridKind::Packed &&
               (m.cluster[0] != 1 || m.cluster[1] != 1 || m.cluster[2] != 1)) {
      return fail("cluster", "a \"packed\" grid takes no clusters");
    } else if (m.cluster[1] != 1 || m.cluster[2] != 1) {
      return fail("cluster", "a \"tiles\" grid takes clusters along x only");
    }
  } else if (s == "persistent") {
    m.gridKind = GridKind::Persistent;
  } else if (s == "key_tiles" && m.backward) {
    m.gridKind = GridKind::KeyTiles;
  } else if (s == "decode" && m.decode) {
    // The split launch's; parseDecodeLaunches reads each launch's.
    m.gridKind = GridKind::Decode;
    if (Error err = getInt(*g, "block_m", m.gridBlockM, "grid"))
      return std::move(err);
    if (m.gridBlockM < 1)
      return fail("grid.block_m", "must be positive");
  } else {
    return fail("grid.kind", "must be \"tiles\", \"sections\", "
                             "\"persistent\" or \"packed\", got \"" +
                                 s + "\"");
  }

  if (const json::Value *c = root.get("config")) {
    const json::Object *co = c->getAsObject();
    if (!co)
      return fail("config", "must be an object");
    for (const auto &kv : *co) {
      auto i = kv.second.getAsInteger();
      if (!i)
        return fail("config." + kv.first.str(), "must be an integer");
      m.config[kv.first.str()] = *i;
    }
  }

  auto params = get(root, "params", "");
  if (!params)
    return params.takeError();
  const json::Array *pa = (*params)->getAsArray();
  if (!pa || pa->empty())
    return fail("params", "must be a non-empty array");
  bool tensorSeen[kNumTensorIds] = {};
  for (unsigned i = 0; i < pa->size(); ++i) {
    const json::Object *po = (*pa)[i].getAsObject();
    if (!po)
      return fail(formatv("params[{0}]", i).str(), "must be an object");
    ParamSpec p;
    if (Error err = parseParam(*po, i, p))
      return std::move(err);
    if (p.kind == ParamSpec::Kind::Ptr || p.kind == ParamSpec::Kind::Memref ||
        p.isTma())
      tensorSeen[unsigned(p.tensor)] = true;
    m.params.push_back(std::move(p));
  }
  if (m.backward)
    return parseLaunches(m);
  if (m.decode)
    return parseDecodeLaunches(m);
  for (const ParamSpec &p : m.params) {
    if (std::optional<StringRef> pass = otherPassParam(p, Pass::Forward))
      return fail("params", "'" + p.text + "' is a parameter of the " + *pass);
  }
  if (m.hasLse != tensorSeen[unsigned(TensorId::LSE)])
    return fail("has_lse", m.hasLse ? "is true but no parameter passes lse"
                                    : "is false but a parameter passes lse");
  for (TensorId t : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O})
    if (!tensorSeen[unsigned(t)])
      return fail("params", "no parameter passes tensor " + tensorName(t));
  if (std::optional<unsigned> i = captureNotPassed(m, {m.params}))
    return fail("params", formatv("no parameter passes capture {0}", *i));
  // A packed grid's blocks find their sequences through cu_seqlens, and
  // only they can use them.
  for (bool keys : {false, true}) {
    bool passed = llvm::any_of(m.params, [&](const ParamSpec &p) {
      return p.kind == ParamSpec::Kind::Seqlens && p.keys == keys;
    });
    StringRef name = keys ? "cu_seqlens_k" : "cu_seqlens_q";
    if (m.packed() && !passed)
      return fail("params",
                  "a \"packed\" grid needs a parameter passing " + name);
    if (!m.packed() && passed)
      return fail("params", name + " is passed but the grid is not "
                                   "\"packed\"");
  }
  if (Error err = checkTmaBoxes(m, m.params, "params"))
    return std::move(err);
  return m;
}

Error Parser::checkTmaBoxes(const KernelMetadata &m, ArrayRef<ParamSpec> params,
                            const Twine &field) {
  for (const ParamSpec &p : params) {
    if (!p.isTma())
      continue;
    unsigned rowBytes = unsigned(p.box[1]) * dtypeSize(m.dtype);
    if (p.swizzle && rowBytes > p.swizzle)
      return fail(field, formatv("TMA box over {0} has rows of {1} bytes, "
                                 "more than its {2}-byte swizzle span",
                                 tensorName(p.tensor), rowBytes, p.swizzle));
    if (p.box[1] > m.headDim)
      return fail(field, formatv("TMA box over {0} is {1} columns wide but "
                                 "head_dim is {2}",
                                 tensorName(p.tensor), p.box[1], m.headDim));
    if (rowBytes % 16)
      return fail(field, formatv("TMA box over {0}: row of {1} bytes is "
                                 "not a multiple of 16",
                                 tensorName(p.tensor), rowBytes));
  }
  return Error::success();
}
Expected<const json::Array *> Parser::getLaunches(ArrayRef<StringRef> roles) {
  auto launches = get(root, "launches", "");
  if (!launches)
    return launches.takeError();
  const json::Array *la = (*launches)->getAsArray();
  if (!la || la->size() != roles.size())
    return fail("launches", formatv("must be an array of {0} launches ({1})",
                                    roles.size(), join(roles, ", ")));
  return la;
}

Expected<Parser::LaunchObjects>
Parser::parseLaunch(const KernelMetadata &m, const json::Value &v,
                    const std::string &field, StringRef role, bool first,
                    bool main, StringRef kind, GridKind gridKind,
                    StringRef sizeKey, LaunchSpec &l) {
  const json::Object *lo = v.getAsObject();
  if (!lo)
    return fail(field, "must be an object");
  if (Error err = getString(*lo, "role", l.role, field))
    return std::move(err);
  if (l.role != role)
    return fail(field + ".role",
                formatv("must be \"{0}\", got \"{1}\"", role, l.role));
  if (Error err = getString(*lo, "kernel", l.kernel, field))
    return std::move(err);
  if (l.kernel.empty())
    return fail(field + ".kernel", "empty symbol name");
  if (main && l.kernel != m.kernel)
    return fail(field + ".kernel", "the " + role +
                                       " launch's kernel must be \"" +
                                       m.kernel + "\"");
  if (Error err = getDims(*lo, "block", l.block, field))
    return std::move(err);
  if (uint64_t(l.block[0]) * l.block[1] * l.block[2] > 1024)
    return fail(field + ".block", "more than 1024 threads per block");
  int64_t smem = 0;
  if (Error err = getInt(*lo, "shared_memory_bytes", smem, field))
    return std::move(err);
  if (smem < 0 || smem > (1 << 20))
    return fail(field + ".shared_memory_bytes",
                formatv("{0} is out of range", smem));
  l.sharedMemoryBytes = unsigned(smem);
  if (const json::Value *dependent = lo->get("programmatic")) {
    std::optional<bool> flag = dependent->getAsBoolean();
    if (!flag)
      return fail(field + ".programmatic", "must be true or false");
    if (*flag && first)
      return fail(field + ".programmatic",
                  "the pass's first launch has no launch before it to "
                  "depend on");
    l.programmatic = *flag;
  }
  const json::Value *grid = lo->get("grid");
  const json::Object *g = grid ? grid->getAsObject() : nullptr;
  if (!g)
    return fail(field + ".grid", "must be an object");
  std::string k;
  if (Error err = getString(*g, "kind", k, field + ".grid"))
    return std::move(err);
  if (k != kind)
    return fail(field + ".grid.kind",
                formatv("must be \"{0}\", got \"{1}\"", kind, k));
  l.gridKind = gridKind;
  if (Error err = getInt(*g, sizeKey, l.gridBlock, field + ".grid"))
    return std::move(err);
  if (l.gridBlock < 1)
    return fail(field + ".grid." + sizeKey, "must be positive");
  return LaunchObjects{lo, g};
}

Error Parser::parseLaunchParams(const json::Object &lo,
                                const std::string &field, Pass pass,
                                function_ref<bool(const ParamSpec &)> refused,
                                StringRef refusal, bool tensorSeen[],
                                LaunchSpec &l) {
  const json::Value *params = lo.get("params");
  const json::Array *pa = params ? params->getAsArray() : nullptr;
  if (!pa || pa->empty())
    return fail(field + ".params", "must be a non-empty array");
  for (unsigned j = 0; j < pa->size(); ++j) {
    std::string pfield = formatv("{0}.params[{1}]", field, j);
    const json::Object *po = (*pa)[j].getAsObject();
    if (!po)
      return fail(pfield, "must be an object");
    ParamSpec p;
    if (Error err = parseParam(*po, j, p))
      return err;
    if (refused(p))
      return fail(pfield, refusal);
    if (std::optional<StringRef> other = otherPassParam(p, pass))
      return fail(pfield, "'" + p.text + "' is a parameter of the " + *other);
    if (p.kind == ParamSpec::Kind::Ptr || p.kind == ParamSpec::Kind::Memref ||
        p.isTma())
      tensorSeen[unsigned(p.tensor)] = true;
    l.params.push_back(std::move(p));
  }
  return Error::success();
}

Error Parser::checkLaunchCaptures(const KernelMetadata &m) {
  SmallVector<ArrayRef<ParamSpec>, 3> lists;
  for (const LaunchSpec &l : m.launches)
    lists.push_back(l.params);
  if (std::optional<unsigned> i = captureNotPassed(m, lists))
    return fail("launches", formatv("no launch passes capture {0}", *i));
  return Error::success();
}

Expected<KernelMetadata> Parser::parseLaunches(KernelMetadata &m) {
  static const StringRef roles[] = {"pre", "main", "post"};
  auto la = getLaunches(roles);
  if (!la)
    return la.takeError();
  bool tensorSeen[kNumTensorIds] = {};
  for (unsigned i = 0; i < 3; ++i) {
    std::string field = formatv("launches[{0}]", i);
    bool main = i == 1;
    LaunchSpec l;
    auto objects = parseLaunch(m, (**la)[i], field, roles[i], i == 0, main,
                               main ? "key_tiles" : "tiles",
                               main ? GridKind::KeyTiles : GridKind::Tiles,
                               main ? "block_n" : "block_m", l);
    if (!objects)
      return objects.takeError();
    if (const json::Value *order = objects->grid->get("heads_fastest")) {
      std::optional<bool> fastest = order->getAsBoolean();
      if (!fastest || !main)
        return fail(field + ".grid.heads_fastest",
                    "is a key_tiles grid's, true or false");
      l.headsFastest = *fastest;
    }
    auto refused = [](const ParamSpec &p) {
      return p.kind == ParamSpec::Kind::Memref ||
             p.kind == ParamSpec::Kind::TmaPtr ||
             p.kind == ParamSpec::Kind::TileCounter ||
             p.kind == ParamSpec::Kind::Seqlens ||
             (p.kind == ParamSpec::Kind::Tma && p.rank != 4);
    };
    if (Error err = parseLaunchParams(
            *objects->launch, field, Pass::Backward, refused,
            "a backward launch takes pointers, workspaces, scalars, "
            "captures and rank-4 tma descriptors only",
            tensorSeen, l))
      return std::move(err);
    m.launches.push_back(std::move(l));
  }
  for (unsigned t = 0; t < kNumBackwardTensors; ++t)
    if (!tensorSeen[t])
      return fail("launches",
                  "no launch passes tensor " + tensorName(TensorId(t)));
  if (Error err = checkLaunchCaptures(m))
    return std::move(err);
  return std::move(m);
}

Error Parser::parseDecodeFields(KernelMetadata &m) {
  auto packGqa = get(root, "pack_gqa", "");
  if (!packGqa)
    return packGqa.takeError();
  std::optional<bool> pack = (*packGqa)->getAsBoolean();
  if (!pack)
    return fail("pack_gqa", "must be true or false");
  m.packGqa = *pack;
  if (Error err = getInt(root, "page_size", m.pageSize))
    return err;
  // 0: a contiguous cache. A key tile lies in one page, and the page is
  // the third dimension of the cache's view: up to 1024 rows.
  if (m.pageSize != 0 &&
      (m.pageSize < 16 || m.pageSize > 1024 || m.pageSize % 16))
    return fail("page_size",
                formatv("{0} is neither 0 (a contiguous cache) nor a "
                        "multiple of 16 from 16 to 1024",
                        m.pageSize));
  if (m.cluster[0] * m.cluster[1] * m.cluster[2] != 1)
    return fail("cluster", "a decoding kernel takes no clusters");
  groupRowsAllowed = m.packGqa;
  return Error::success();
}

Expected<KernelMetadata> Parser::parseDecodeLaunches(KernelMetadata &m) {
  static const StringRef roles[] = {"split", "combine"};
  auto la = getLaunches(roles);
  if (!la)
    return la.takeError();
  auto blockN = m.config.find("block_n");
  if (blockN == m.config.end() || blockN->second < 1)
    return fail("config.block_n", "a decoding kernel's config needs its key "
                                  "tile (the split rule counts key tiles)");
  bool tensorSeen[kNumTensorIds] = {};
  for (unsigned i = 0; i < 2; ++i) {
    std::string field = formatv("launches[{0}]", i);
    LaunchSpec l;
    auto objects = parseLaunch(m, (**la)[i], field, roles[i], i == 0, i == 0,
                               "decode", GridKind::Decode, "block_m", l);
    if (!objects)
      return objects.takeError();
    // The split launch runs one program per split, the combine one per
    // row block: a z of S for the combine would merge every row S times.
    const json::Value *splitsKey = objects->grid->get("splits");
    std::optional<bool> splits =
        splitsKey ? splitsKey->getAsBoolean() : std::nullopt;
    if (!splits || *splits != (i == 0))
      return fail(field + ".grid.splits",
                  i == 0 ? "must be true (the split launch's z is the "
                           "splits)"
                         : "must be false (the combine launch's z is 1)");
    l.splits = *splits;
    // A paged cache's view is no [B*H, N, D] nor [B*H*N, D] tensor: its
    // maps are 4-D over the strides as given.
    auto refused = [](const ParamSpec &p) {
      return p.kind == ParamSpec::Kind::TmaPtr ||
             p.kind == ParamSpec::Kind::TileCounter ||
             p.kind == ParamSpec::Kind::Seqlens ||
             (p.kind == ParamSpec::Kind::Tma && p.rank != 4);
    };
    if (Error err = parseLaunchParams(
            *objects->launch, field, Pass::Decode, refused,
            "a decoding launch takes pointers, memrefs, workspaces, scalars, "
            "captures and rank-4 tma descriptors only",
            tensorSeen, l))
      return std::move(err);
    if (Error err = checkTmaBoxes(m, l.params, field + ".params"))
      return std::move(err);
    m.launches.push_back(std::move(l));
  }
  for (TensorId t : {TensorId::Q, TensorId::K, TensorId::V, TensorId::O})
    if (!tensorSeen[unsigned(t)])
      return fail("launches", "no launch passes tensor " + tensorName(t));
  if (m.hasLse != tensorSeen[unsigned(TensorId::LSE)])
    return fail("has_lse", m.hasLse ? "is true but no launch passes lse"
                                    : "is false but a launch passes lse");
  for (TensorId t : {TensorId::PageTable, TensorId::CacheSeqlens}) {
    if (m.pageSize > 0 && !tensorSeen[unsigned(t)])
      return fail("launches", formatv("page_size is {0} but no launch "
                                      "passes {1}",
                                      m.pageSize, tensorName(t)));
    if (m.pageSize == 0 && tensorSeen[unsigned(t)])
      return fail("launches", "a launch passes " + tensorName(t) +
                                  " but page_size is 0 (a contiguous cache)");
  }
  if (Error err = checkLaunchCaptures(m))
    return std::move(err);
  return std::move(m);
}

} // namespace

Expected<KernelMetadata> parseKernelMetadata(StringRef text) {
  Expected<json::Value> doc = json::parse(text);
  if (!doc) {
    std::string why = toString(doc.takeError());
    return makeError(ErrorCode::InvalidKernel,
                     "kernel metadata: not valid JSON: " + why);
  }
  const json::Object *root = doc->getAsObject();
  if (!root)
    return makeError(ErrorCode::InvalidKernel,
                     "kernel metadata: top level must be an object");
  return Parser(*root).parse();
}

} // namespace flashc::rt

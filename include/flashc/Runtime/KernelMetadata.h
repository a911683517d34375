//===- KernelMetadata.h - The kernel.json contract -------------*- C++ -*-===//
//
// The metadata file the compiler writes beside every kernel binary, parsed
// and checked for internal consistency. docs/kernel-metadata.md is the
// normative description of the format.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_KERNELMETADATA_H
#define FLASHC_RUNTIME_KERNELMETADATA_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace flashc::rt {

enum class DType { BF16, F16, F32, I32 };
llvm::StringRef dtypeName(DType dtype);
unsigned dtypeSize(DType dtype);

/// The tensors a kernel sees, all B x H x N x D except LSE (B x H x Nq, f32).
/// A forward kernel sees the first kNumTensors; the backward pass's kernels
/// (kernel.json's "pass": "backward") also dO, dQ, dK and dV; a decoding
/// kernel ("pass": "decode") q, k and v (the K/V cache, "k_cache" and
/// "v_cache" in messages), o and lse, and with a paged cache the page
/// table (int32 B x max_pages) and the cache's lengths (int32 [B]).
enum class TensorId {
  Q = 0,
  K,
  V,
  O,
  LSE,
  DO,
  DQ,
  DK,
  DV,
  PageTable,
  CacheSeqlens
};
constexpr unsigned kNumTensors = 5;
constexpr unsigned kNumBackwardTensors = 9;
/// Every TensorId.
constexpr unsigned kNumTensorIds = 11;
llvm::StringRef tensorName(TensorId id);
/// The backward pass's own tensors (dO, dQ, dK, dV) and the decoding
/// pass's (the page table and the cache's lengths).
inline bool isBackwardTensor(TensorId id) {
  return id >= TensorId::DO && id <= TensorId::DV;
}
inline bool isDecodeTensor(TensorId id) {
  return id == TensorId::PageTable || id == TensorId::CacheSeqlens;
}

/// Scratch the backward pass's launches share, which the runtime provides
/// (sizes in backwardWorkspaceLayout): delta (f32, B x H x Nq), the dQ
/// accumulator (f32, B x H x Nq x D, cleared by the first launch) and, for
/// the deterministic mode, the dQ turns (i32, B x H x ceil(Nq / 64)); with
/// attention sinks, each warp's share of their gradient (f32, B x H x
/// ceil(Nq / 64) x 4). A decoding pass's launches share each split's
/// output and LSE (sizes in decodeWorkspaceLayout): partial_out (f32, S x B
/// x H x Sq x D) and partial_lse (f32, S x B x H x Sq).
enum class Workspace {
  Delta = 0,
  DqAccum,
  DqTurns,
  SinkPartials,
  PartialOut,
  PartialLse
};
constexpr unsigned kNumWorkspaces = 6;
llvm::StringRef workspaceName(Workspace w);
/// The decoding pass's workspaces (the rest are the backward pass's).
inline bool isDecodeWorkspace(Workspace w) {
  return w == Workspace::PartialOut || w == Workspace::PartialLse;
}

/// A memref argument a kernel takes whole, after its tensors (kernel.json's
/// "captures"): a score or mask mod's capture, which the kernel reads; the
/// attention sinks (f32 [H], one logit per query head); or, in the
/// backward pass, their gradient (f32 [H], written).
enum class CaptureRole { Capture, Sinks, SinksGrad };
llvm::StringRef captureRoleName(CaptureRole role);
struct CaptureSpec {
  CaptureRole role = CaptureRole::Capture;
  DType dtype = DType::F32;
  unsigned rank = 1; ///< 1 to 4
  /// The sizes the kernel's source fixes, -1 where any (empty: none given).
  llvm::SmallVector<int64_t, 4> shape;
};
/// How many captures a kernel may take.
constexpr unsigned kMaxCaptures = 8;

/// A scalar a kernel parameter carries; strides name a tensor and dimension.
enum class ScalarKind {
  Batch,
  Heads,
  SeqQ,
  SeqK,
  HeadDim,
  Scale,     ///< softmax scale
  ScaleLog2, ///< scale * log2(e), for exp2-based kernels
  Stride,    ///< stride_<tensor>_<b|h|n|d>, in elements
  KvGroup,   ///< query heads per K/V head, H_q / H_kv (grouped-query attention)
  // The decoding pass's:
  NumSplits,     ///< S, the splits of each row's keys
  NumPages,      ///< the paged cache's pages (k_cache's sizes[0]); else B
  PageTableCols, ///< max_pages, the page table's columns; 0 when contiguous
};
/// The values only a decoding kernel takes.
inline bool isDecodeScalar(ScalarKind s) {
  return s == ScalarKind::NumSplits || s == ScalarKind::NumPages ||
         s == ScalarKind::PageTableCols;
}

/// One kernel parameter, in launch order.
struct ParamSpec {
  /// Tma: a CUtensorMap by value, 2-D over [B*H*N, D] or (rank 3) 3-D over
  /// [B*H, N, D]. TmaPtr: the 8-byte device address of a CUtensorMap the
  /// runtime keeps in global memory (3-D over [B*H, N, D]).
  /// TileCounter: the 8-byte device address of a 32-bit word that is zero
  /// when the launch starts and that no launch running at the same time
  /// uses; the kernel claims work from it and leaves it zero.
  /// Seqlens: the 8-byte device address of cu_seqlens_q or cu_seqlens_k
  /// (int32 prefix sums of the packed sequences' lengths).
  /// Workspace: the 8-byte device address of one of the backward or the
  /// decoding pass's workspaces.
  /// Capture: capture `capture` of the kernel's "captures", as MLIR's
  /// expanded memref descriptor (kernel.json: a "memref" with "capture").
  enum class Kind {
    Ptr,
    I32,
    I64,
    F32,
    Memref,
    Tma,
    TmaPtr,
    TileCounter,
    Seqlens,
    Workspace,
    Capture
  };
  Kind kind;
  std::string text; ///< value name or tensor name as written, for messages
  TensorId tensor = TensorId::Q;         ///< Ptr, Memref, Tma, TmaPtr
  ScalarKind scalar = ScalarKind::Batch; ///< I32, I64, F32
  unsigned strideDim = 0;                ///< Stride: 0=b 1=h 2=n 3=d
  bool keys = false; ///< Seqlens: cu_seqlens_k (else cu_seqlens_q)
  Workspace workspace = Workspace::Delta; ///< Workspace
  unsigned rank = 0;    ///< Memref, Capture; Tma (2, 3 or 4); TmaPtr (3)
  unsigned capture = 0; ///< Capture: index into KernelMetadata::captures
  int64_t box[2] = {0, 0};               ///< Tma, TmaPtr: rows, cols
  unsigned swizzle = 0; ///< Tma, TmaPtr: 0, 32, 64 or 128 bytes
  /// Tma of q in a decoding kernel with pack_gqa ("view": "group_rows"):
  /// the 4-D map views q as [B, H_kv, G * Sq, D], each K/V head's G query
  /// heads' rows one run of rows (makeGroupRowsRequest).
  bool groupRows = false;

  bool isTma() const { return kind == Kind::Tma || kind == Kind::TmaPtr; }
  /// A map over the tensor viewed as [B*H, N, D] (rank 3, by value or in
  /// device memory) or as [B, H, N, D] with any strides (rank 4, by value).
  bool isStridedTensorMap() const {
    return isTma() && (rank == 3 || rank == 4);
  }
};

enum class BinaryFormat { Cubin, Ptx };
/// How the launch grid follows from the problem shape
/// (docs/kernel-metadata.md).
/// KeyTiles: the backward pass's main launch, x the key tiles
/// (ceil(seq_k / block_n)), y B x H_kv (or, heads_fastest, the other way
/// round). Decode: a decoding pass's launches, x the blocks of block_m of
/// a program's R rows, y B x its heads, z the splits or 1 (decodeGrid).
enum class GridKind { Tiles, Sections, Persistent, Packed, KeyTiles, Decode };

/// One launch of a kernel made of several (the backward pass: "pre",
/// "main" and "post", in that order; the decoding pass: "split" and
/// "combine").
struct LaunchSpec {
  std::string role;
  std::string kernel; ///< symbol
  unsigned block[3] = {1, 1, 1};
  unsigned sharedMemoryBytes = 0;
  GridKind gridKind = GridKind::Tiles;
  int64_t gridBlock = 0; ///< Tiles, Decode: block_m; KeyTiles: block_n
  /// KeyTiles: x = B x H_kv and y = the key tiles instead.
  bool headsFastest = false;
  /// Decode: grid z is the call's number of splits (else 1).
  bool splits = false;
  /// Launched as the previous launch's programmatic dependent (PDL): the
  /// kernel may start before that launch ends and waits for it
  /// (griddepcontrol.wait) before reading what it wrote.
  bool programmatic = false;
  llvm::SmallVector<ParamSpec, 24> params;
};

struct KernelMetadata {
  int formatVersion = 0;
  std::string flashcVersion, sourceHash;
  std::string kernel; ///< symbol
  std::string binary; ///< file name, relative to the metadata file
  BinaryFormat binaryFormat = BinaryFormat::Cubin;
  std::string arch; ///< e.g. sm_90a
  DType dtype = DType::BF16;
  int64_t headDim = 0;
  /// Query and K/V heads the kernel is compiled for (0: chosen at launch).
  int64_t heads = 0, kvHeads = 0;
  bool causal = false;
  double scale = 0;
  bool hasLse = false;
  unsigned block[3] = {1, 1, 1};
  unsigned cluster[3] = {1, 1, 1};
  unsigned sharedMemoryBytes = 0; ///< dynamic shared memory per block
  GridKind gridKind = GridKind::Tiles;
  int64_t gridBlockM = 0;      ///< Tiles, Sections, Packed
  int64_t gridSectionKeys = 0; ///< Sections
  std::map<std::string, int64_t> config;
  llvm::SmallVector<ParamSpec, 16> params;
  /// The memref arguments after the tensors, in the source's order; the
  /// caller passes one tensor for each.
  llvm::SmallVector<CaptureSpec, 4> captures;
  /// The backward pass: dQ, dK and dV from Q, K, V, O, dO and LSE in the
  /// three launches of `launches`; `deterministic` orders dQ's additions.
  /// The fields above are the main launch's.
  bool backward = false;
  bool deterministic = false;
  llvm::SmallVector<LaunchSpec, 3> launches;
  /// The decoding pass ("pass": "decode"): a step's queries over a K/V
  /// cache, paged (pageSize rows a page) or contiguous (0), each row's keys
  /// split over S programs (the "split" launch) whose outputs the
  /// "combine" launch merges; packGqa computes a K/V head's query heads
  /// as one run of rows. The fields above are the split launch's.
  bool decode = false;
  bool packGqa = false;
  int64_t pageSize = 0;

  /// Packed sequences: the kernel takes cu_seqlens_q / cu_seqlens_k and
  /// launches a packed grid (x: the longest sequence's query blocks, y:
  /// sequences * heads); q/k/v/o are [1, H, T, D] views of every
  /// sequence's rows.
  bool packed() const { return gridKind == GridKind::Packed; }
  /// True if some parameter is a 2-D TMA descriptor (by value) over `id`.
  bool usesTma(TensorId id) const;
  /// True if some parameter is a 3-D or 4-D TMA descriptor over `id`, by
  /// value or through a pointer.
  bool usesStridedTensorMap(TensorId id) const;
  /// True if some parameter is a 3-D TMA descriptor over `id`, which views
  /// it as [B*H, N, D]: B and H must merge into one dimension.
  bool mergesBatchAndHeads(TensorId id) const;
  /// True if the kernel gets `id` only as a plain pointer, with no stride
  /// parameter, memref or TMA descriptor for it: it then indexes the tensor
  /// as dense row-major (B x H x N x D; LSE B x H x Nq).
  bool assumesDenseLayout(TensorId id) const;
  /// The capture with `role`, if the kernel takes one.
  std::optional<unsigned> findCapture(CaptureRole role) const;
  /// Bytes each kernel parameter occupies, after memref expansion.
  llvm::SmallVector<unsigned, 32> paramSizes() const;
  /// The same for any parameter list (a backward launch's).
  static llvm::SmallVector<unsigned, 32>
  paramSizes(llvm::ArrayRef<ParamSpec> params);
};

/// Parses and checks a metadata document; errors name the field.
llvm::Expected<KernelMetadata> parseKernelMetadata(llvm::StringRef json);

/// Parses an architecture name "sm_90a" into (90, true). False if malformed.
bool parseArch(llvm::StringRef arch, unsigned &sm, bool &archSpecific);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_KERNELMETADATA_H

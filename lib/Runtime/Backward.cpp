//===- Backward.cpp - the backward pass's arguments, workspace, params ----===//

#include "flashc/Runtime/Backward.h"
#include "Checker.h"
#include "WorkspaceParams.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>
#include <utility>

using namespace llvm;

namespace flashc::rt {

namespace {

/// The query tiles the pre and post launches and the dQ turns count.
int64_t queryTiles(const ProblemShape &shape) { return (shape.seqQ + 63) / 64; }

} // namespace

WorkspaceLayout backwardWorkspaceLayout(const KernelMetadata &meta,
                                        const ProblemShape &shape) {
  uint64_t rows = uint64_t(shape.batch * shape.heads * shape.seqQ);
  uint64_t tiles = uint64_t(shape.batch * shape.heads * queryTiles(shape));
  bool sinks = meta.findCapture(CaptureRole::Sinks).has_value();
  uint64_t bytes[kNumWorkspaces] = {
      rows * 4, rows * uint64_t(shape.headDim) * 4,
      meta.deterministic ? tiles * 4 : 0,
      // One partial of dsinks per warp of each pre block (4 warps).
      sinks ? tiles * 4 * 4 : 0};
  WorkspaceLayout layout;
  for (unsigned w = 0; w < kNumWorkspaces; ++w) {
    layout.offset[w] = layout.bytes;
    layout.bytes = alignTo(layout.bytes + bytes[w], 256);
  }
  return layout;
}

Expected<ProblemShape> validateBackwardArgs(const KernelMetadata &meta,
                                            const BackwardArgs &args,
                                            int device) {
  Checker c;
  if (meta.decode)
    return makeError(ErrorCode::InvalidArgument,
                     "kernel " + meta.kernel +
                         " is a decoding pass: launch it with its K/V cache "
                         "(flashrt_launch_decode)");
  if (!meta.backward)
    return makeError(ErrorCode::InvalidKernel,
                     "kernel " + meta.kernel +
                         " is a forward kernel: it has no backward launches");
  bool usable[kNumBackwardTensors] = {};
  for (unsigned i = 0; i < kNumBackwardTensors; ++i) {
    TensorId id = TensorId(i);
    const TensorArg &t = args[id];
    if (!t.present()) {
      c.add(tensorName(id) + " is missing (null data pointer)");
      continue;
    }
    usable[i] = checkTensorArg(c, meta, id, t, device);
    if (device < 0 && t.device != args[TensorId::Q].device)
      c.add(formatv("{0} is on device {1} but q is on device {2}: all tensors "
                    "must be on one device",
                    tensorName(id), t.device, args[TensorId::Q].device));
  }
  ProblemShape shape;
  const TensorArg &q = args[TensorId::Q], &k = args[TensorId::K];
  if (usable[unsigned(TensorId::Q)]) {
    shape.batch = q.sizes[0];
    shape.heads = q.sizes[1];
    shape.seqQ = q.sizes[2];
    shape.headDim = q.sizes[3];
    if (shape.headDim != meta.headDim)
      c.add(formatv("q has head_dim {0}; kernel {1} is compiled for {2}",
                    shape.headDim, meta.kernel, meta.headDim));
    // As the forward: an empty problem is refused, not launched (the
    // tensor maps of an empty tensor do not encode).
    if (shape.batch == 0 || shape.heads == 0 || shape.seqQ == 0)
      c.add("q " + shapeString(q) +
            " is empty (batch, heads and seq_q must be at least 1)");
  }
  if (usable[unsigned(TensorId::K)]) {
    shape.kvHeads = k.sizes[1];
    shape.seqK = k.sizes[2];
    if (shape.seqK == 0)
      c.add("k " + shapeString(k) + " has seq_k = 0 (N must be at least 1)");
    if (usable[unsigned(TensorId::Q)]) {
      if (k.sizes[0] != shape.batch || k.sizes[3] != shape.headDim)
        c.add(formatv("k has shape {0}; expected [{1}, H_kv, Nk, {2}] (q's "
                      "batch and head_dim)",
                      shapeString(k), shape.batch, shape.headDim));
      if (shape.kvHeads < 1 || shape.heads % shape.kvHeads)
        c.add(formatv("k has {0} heads, which does not divide q's {1}",
                      shape.kvHeads, shape.heads));
    }
  }
  // O, dO and dQ are Q's shape; V, dK and dV K's.
  for (auto [id, like] : {std::pair{TensorId::O, TensorId::Q},
                          {TensorId::DO, TensorId::Q},
                          {TensorId::DQ, TensorId::Q},
                          {TensorId::V, TensorId::K},
                          {TensorId::DK, TensorId::K},
                          {TensorId::DV, TensorId::K}}) {
    const TensorArg &t = args[id], &ref = args[like];
    if (!usable[unsigned(id)] || !usable[unsigned(like)])
      continue;
    if (!std::equal(t.sizes, t.sizes + 4, ref.sizes))
      c.add(formatv("{0} has shape {1}; expected {2}, the shape of {3}",
                    tensorName(id), shapeString(t), shapeString(ref),
                    tensorName(like)));
  }
  const TensorArg &lse = args[TensorId::LSE];
  if (usable[unsigned(TensorId::LSE)] && usable[unsigned(TensorId::Q)]) {
    if (lse.sizes[0] != shape.batch || lse.sizes[1] != shape.heads ||
        lse.sizes[2] != shape.seqQ)
      c.add(formatv("lse has shape {0}; expected [{1}, {2}, {3}] (B x H x "
                    "Nq)",
                    shapeString(lse), shape.batch, shape.heads, shape.seqQ));
    // The kernel reads row (b * H + h) * Nq + q.
    int64_t dense[3] = {shape.heads * shape.seqQ, shape.seqQ, 1};
    for (unsigned d = 0; d < 3; ++d)
      if (lse.sizes[d] > 1 && lse.strides[d] != dense[d]) {
        c.add(formatv("lse has strides ({0}, {1}, {2}); the backward kernels "
                      "read it dense, ({3}, {4}, 1)",
                      lse.strides[0], lse.strides[1], lse.strides[2], dense[0],
                      dense[1]));
        break;
      }
  }
  checkCaptures(c, meta, args.captures, shape.heads, device,
                args[TensorId::Q].device);
  if (!c.ok())
    return c.take();
  if (shape.seqQ > INT32_MAX || shape.seqK > INT32_MAX)
    c.add(formatv("seq_q = {0} and seq_k = {1} must fit the kernels' 32-bit "
                  "parameters",
                  shape.seqQ, shape.seqK));
  int64_t keyTiles = (shape.seqK + 63) / 64;
  if (keyTiles > kMaxGridX || queryTiles(shape) > kMaxGridX)
    c.add(formatv("seq_q = {0} or seq_k = {1} needs more than {2} blocks",
                  shape.seqQ, shape.seqK, kMaxGridX));
  if (shape.batch * shape.heads > kMaxGridYZ)
    c.add(formatv("batch x heads = {0} is more than the grid's {1} rows",
                  shape.batch * shape.heads, kMaxGridYZ));
  if (meta.launches.size() == 3 && meta.launches[1].headsFastest &&
      keyTiles > kMaxGridYZ)
    c.add(formatv("seq_k = {0}: {1} key tiles are more than the "
                  "deterministic grid's {2} rows",
                  shape.seqK, keyTiles, kMaxGridYZ));
  if (!c.ok())
    return c.take();
  return shape;
}

void backwardGrid(const LaunchSpec &launch, const ProblemShape &shape,
                  unsigned grid[3]) {
  bool keys = launch.gridKind == GridKind::KeyTiles;
  int64_t rows = keys ? shape.seqK : shape.seqQ;
  grid[0] = unsigned((rows + launch.gridBlock - 1) / launch.gridBlock);
  grid[1] = unsigned(shape.batch * (keys ? shape.kvHeads : shape.heads));
  grid[2] = 1;
  if (launch.headsFastest)
    std::swap(grid[0], grid[1]);
}

Expected<std::unique_ptr<ParamBuffer>> packWorkspaceLaunchParams(
    const KernelMetadata &meta, const LaunchSpec &launch,
    function_ref<const TensorArg &(TensorId)> tensor,
    ArrayRef<TensorArg> captures, const ProblemShape &shape, uint64_t workspace,
    const WorkspaceLayout &layout,
    function_ref<TensorMapRequest(const ParamSpec &)> tensorMapRequest,
    TensorMapEncoder encodeTensorMap, bool memrefs, StringRef pass) {
  std::unique_ptr<ParamBuffer> buf =
      ParamBuffer::allocate(KernelMetadata::paramSizes(launch.params));
  unsigned next = 0;
  for (auto [i, p] : enumerate(launch.params)) {
    uint8_t *slot = buf->slot(next++);
    auto put = [&](auto v) { std::memcpy(slot, &v, sizeof(v)); };
    switch (p.kind) {
    case ParamSpec::Kind::Capture:
      next = putMemrefDescriptor(*buf, next - 1, captures[p.capture], p.rank);
      break;
    case ParamSpec::Kind::Ptr:
      put(uint64_t(tensor(p.tensor).data));
      break;
    case ParamSpec::Kind::Workspace:
      put(workspace + layout.offset[unsigned(p.workspace)]);
      break;
    case ParamSpec::Kind::Tma:
      if (Error err = encodeTensorMap(tensorMapRequest(p), slot))
        return std::move(err);
      break;
    case ParamSpec::Kind::F32:
      put(p.scalar == ScalarKind::ScaleLog2 ? float(meta.scale * M_LOG2E)
                                            : float(meta.scale));
      break;
    case ParamSpec::Kind::I32:
    case ParamSpec::Kind::I64: {
      int64_t v = integerParamValue(p, shape, tensor(p.tensor));
      if (p.kind == ParamSpec::Kind::I32)
        put(int32_t(v));
      else
        put(v);
      break;
    }
    case ParamSpec::Kind::Memref:
      if (memrefs) {
        next = putMemrefDescriptor(*buf, next - 1, tensor(p.tensor), p.rank);
        break;
      }
      [[fallthrough]];
    default:
      return makeError(ErrorCode::InvalidKernel,
                       formatv("{0} launch {1}: parameter {2} ('{3}') "
                               "has a kind these launches do not take",
                               pass, launch.kernel, i, p.text));
    }
  }
  return std::move(buf);
}

Expected<std::unique_ptr<ParamBuffer>>
packBackwardParams(const KernelMetadata &meta, const LaunchSpec &launch,
                   const BackwardArgs &args, const ProblemShape &shape,
                   uint64_t workspace, TensorMapEncoder encodeTensorMap) {
  return packWorkspaceLaunchParams(
      meta, launch, [&](TensorId t) -> const TensorArg & { return args[t]; },
      args.captures, shape, workspace, backwardWorkspaceLayout(meta, shape),
      [&](const ParamSpec &p) {
        return makeTensorMapRequest(p, args[p.tensor]);
      },
      encodeTensorMap, /*memrefs=*/false, "backward");
}

} // namespace flashc::rt

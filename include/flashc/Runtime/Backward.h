//===- Backward.h - the backward pass's launches ---------------*- C++ -*-===//
//
// A backward kernel (kernel.json "pass": "backward") is three launches of
// one module: pre (delta, the cleared dQ accumulator), main (per key tile:
// dK, dV and dQ's partials) and post (dQ rounded). These are the pure parts
// of launching them: the arguments' checks, the shared workspace's layout,
// each launch's grid and parameters. Kernel::launchBackward drives them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_BACKWARD_H
#define FLASHC_RUNTIME_BACKWARD_H

#include "flashc/Runtime/ArgValidation.h"
#include "flashc/Runtime/ParamPacking.h"

#include <memory>

namespace flashc::rt {

/// Q, K, V, O, LSE, dO, dQ, dK and dV, indexed by TensorId. Q, O, dO and dQ
/// are B x H x Nq x D, K, V, dK and dV B x H_kv x Nk x D, with any strides
/// along B, H and N; LSE is the forward's (f32, dense B x H x Nq, natural
/// log).
struct BackwardArgs {
  TensorArg tensors[kNumBackwardTensors];
  /// The kernel's captures (KernelMetadata::captures), in order: the mods'
  /// memrefs, the sinks and dsinks (which the launches write).
  llvm::SmallVector<TensorArg, 4> captures;
  TensorArg &operator[](TensorId id) { return tensors[unsigned(id)]; }
  const TensorArg &operator[](TensorId id) const {
    return tensors[unsigned(id)];
  }
};

/// Where each workspace lies in the one allocation the launches share.
struct WorkspaceLayout {
  uint64_t offset[kNumWorkspaces] = {0, 0, 0, 0};
  uint64_t bytes = 0;
};

/// The workspace the backward launches of `meta` need for `shape`.
WorkspaceLayout backwardWorkspaceLayout(const KernelMetadata &meta,
                                        const ProblemShape &shape);

/// Checks `args` against a backward kernel's metadata; on success the
/// problem's shape. Every problem is one line of the error, naming the
/// argument. `device` >= 0 also checks every tensor is on that device.
llvm::Expected<ProblemShape> validateBackwardArgs(const KernelMetadata &meta,
                                                  const BackwardArgs &args,
                                                  int device = -1);

/// The grid of `launch` for `shape` (x may be 0: nothing to launch).
void backwardGrid(const LaunchSpec &launch, const ProblemShape &shape,
                  unsigned grid[3]);

/// The parameters of `launch`: tensors from `args`, workspaces inside the
/// allocation at `workspace` (laid out by backwardWorkspaceLayout), rank-4
/// tensor maps through `encodeTensorMap`.
llvm::Expected<std::unique_ptr<ParamBuffer>>
packBackwardParams(const KernelMetadata &meta, const LaunchSpec &launch,
                   const BackwardArgs &args, const ProblemShape &shape,
                   uint64_t workspace, TensorMapEncoder encodeTensorMap);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_BACKWARD_H

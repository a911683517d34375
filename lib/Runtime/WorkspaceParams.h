//===- WorkspaceParams.h - parameters of launches with a workspace -*- C++ -*-//
//
// The parameter packing the backward and the decoding pass share: their
// launches take tensors, captures, slices of one workspace allocation,
// rank-4 tensor maps and scalars alike.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_RUNTIME_WORKSPACEPARAMS_H
#define FLASHC_LIB_RUNTIME_WORKSPACEPARAMS_H

#include "flashc/Runtime/Backward.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

namespace flashc::rt {

/// The parameters of `launch`, one launch of a pass with a workspace:
/// tensors through `tensor`, `captures`, workspaces at `layout`'s offsets
/// inside the allocation at `workspace`, tensor maps of `tensorMapRequest`
/// through `encodeTensorMap`, and memref descriptors where `memrefs` (a
/// memref parameter is otherwise refused). Refusals name the launch as a
/// `pass` one ("backward", "decoding").
llvm::Expected<std::unique_ptr<ParamBuffer>> packWorkspaceLaunchParams(
    const KernelMetadata &meta, const LaunchSpec &launch,
    llvm::function_ref<const TensorArg &(TensorId)> tensor,
    llvm::ArrayRef<TensorArg> captures, const ProblemShape &shape,
    uint64_t workspace, const WorkspaceLayout &layout,
    llvm::function_ref<TensorMapRequest(const ParamSpec &)> tensorMapRequest,
    TensorMapEncoder encodeTensorMap, bool memrefs, llvm::StringRef pass);

} // namespace flashc::rt

#endif // FLASHC_LIB_RUNTIME_WORKSPACEPARAMS_H

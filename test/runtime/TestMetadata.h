//===- TestMetadata.h - Metadata fixtures for runtime unit tests -*- C++
//-*-===//
//
// A valid kernel.json (the hand-written reference kernel's shape) that the
// tests copy and break one field at a time.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TEST_RUNTIME_TESTMETADATA_H
#define FLASHC_TEST_RUNTIME_TESTMETADATA_H

#include "flashc/Runtime/ArgValidation.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace flashc::rt::test {

/// The metadata of ref_attention_bf16_d128_full (with LSE) as JSON.
llvm::json::Object validMetadataJson();

/// Serialises `obj`.
std::string toText(const llvm::json::Object &obj);

/// Parses validMetadataJson(); aborts the test binary if it does not parse.
KernelMetadata validMetadata();

/// The fixture with a packed grid (block_m 128) taking cu_seqlens_q and
/// cu_seqlens_k.
llvm::json::Object packedMetadataJson();
KernelMetadata packedMetadata();

/// Packed sequences of these query and key lengths for `meta`: q/k/v/o
/// [1, h, T, 128] views of T x h x 128 storage, lse [1, h, Tq], the
/// cu_seqlens vectors at made-up device addresses.
LaunchArgs packedArgs(const KernelMetadata &meta, int64_t h,
                      const std::vector<int64_t> &lensQ,
                      const std::vector<int64_t> &lensK);

/// A tensor-map parameter (Tma or TmaPtr) of `tensor` with the 128-byte
/// swizzle, a rows x cols box and `rank`.
ParamSpec tensorMapSpec(ParamSpec::Kind kind, TensorId tensor, int64_t rows,
                        int64_t cols, unsigned rank);

/// A decoding kernel's kernel.json ("pass": "decode"), bf16 D = 128, as
/// docs/kernel-metadata.md's decoding section describes what flashc
/// writes: a split launch reading q (a "group_rows" map with pack_gqa), k
/// and v through rank-4 maps, the page table and the lengths (paged),
/// writing partial_out and partial_lse, and a combine launch writing o
/// and lse; `pageSize` 0 is a contiguous cache.
llvm::json::Object decodeMetadataJson(int64_t pageSize, bool packGqa);
KernelMetadata decodeMetadata(int64_t pageSize, bool packGqa);

/// Valid contiguous BHND arguments for `meta` with the given shape.
LaunchArgs validArgs(const KernelMetadata &meta, int64_t b, int64_t h,
                     int64_t nq, int64_t nk);

} // namespace flashc::rt::test

#endif

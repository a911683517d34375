/*===- flashrt.h - C API of the flashc runtime ------------------*- C -*-===*\
|*                                                                          *|
|* A C interface over libflashrt for ctypes and other foreign callers.      *|
|* Every call returns a flashrt_status; on failure flashrt_last_error()     *|
|* gives this thread's message naming what was wrong.                       *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef FLASHC_RUNTIME_FLASHRT_H
#define FLASHC_RUNTIME_FLASHRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FLASHRT_API __attribute__((visibility("default")))
#else
#define FLASHRT_API
#endif

#define FLASHRT_ABI_VERSION 5

typedef enum flashrt_status {
  FLASHRT_OK = 0,
  FLASHRT_ERROR_NO_DRIVER = 1,
  FLASHRT_ERROR_NO_DEVICE = 2,
  FLASHRT_ERROR_INVALID_KERNEL = 3,
  FLASHRT_ERROR_INVALID_ARGUMENT = 4,
  FLASHRT_ERROR_CUDA = 5,
  FLASHRT_ERROR_IO = 6,
} flashrt_status;

typedef enum flashrt_dtype {
  FLASHRT_DTYPE_BF16 = 0,
  FLASHRT_DTYPE_F16 = 1,
  FLASHRT_DTYPE_F32 = 2,
  FLASHRT_DTYPE_I32 = 3, /* cu_seqlens, page_table, cache_seqlens */
} flashrt_dtype;

/* A strided device tensor: B x H x N x D (rank 4) or B x H x N (LSE, rank 3);
 * rank 1 or 2 for cu_seqlens, page tables and lengths. Strides are in
 * elements. data == NULL means "not given". */
typedef struct flashrt_tensor {
  void *data;
  int32_t dtype; /* flashrt_dtype */
  int32_t rank;
  int64_t sizes[4];
  int64_t strides[4];
  int32_t device; /* CUDA device ordinal */
} flashrt_tensor;

typedef struct flashrt_kernel_info {
  int32_t dtype; /* flashrt_dtype */
  int32_t head_dim;
  int32_t causal;
  int32_t has_lse;
  double scale;
  int32_t device;
  char kernel[128]; /* symbol, truncated */
  char arch[16];
  int32_t backward;      /* 1: the backward pass (flashrt_launch_backward) */
  int32_t deterministic; /* backward: dQ added in a fixed order */
  int32_t num_captures;  /* tensors the *_with_captures calls must pass */
  int32_t decode;        /* 1: the decoding pass (flashrt_launch_decode) */
} flashrt_kernel_info;

typedef struct flashrt_kernel flashrt_kernel;

FLASHRT_API int flashrt_abi_version(void);

/* This thread's message for the last failed call ("" if none). */
FLASHRT_API const char *flashrt_last_error(void);

FLASHRT_API const char *flashrt_status_string(flashrt_status status);

/* Number of CUDA devices; fails with NO_DRIVER where there is none. */
FLASHRT_API flashrt_status flashrt_device_count(int *count);

/* Loads `path` (kernel.cubin / kernel.ptx with kernel.json beside it, or the
 * .json) on device `device`. */
FLASHRT_API flashrt_status flashrt_kernel_load(const char *path, int device,
                                               flashrt_kernel **kernel);

FLASHRT_API void flashrt_kernel_destroy(flashrt_kernel *kernel);

FLASHRT_API flashrt_status flashrt_kernel_get_info(const flashrt_kernel *kernel,
                                                   flashrt_kernel_info *info);

/* Launches O = attention(Q, K, V) (and LSE when the kernel writes one) on
 * `stream` (a CUstream; NULL is the legacy default stream). Asynchronous. */
FLASHRT_API flashrt_status flashrt_launch(
    flashrt_kernel *kernel, const flashrt_tensor *q, const flashrt_tensor *k,
    const flashrt_tensor *v, const flashrt_tensor *o, const flashrt_tensor *lse,
    void *stream);

/* flashrt_launch's arguments in one struct, for callers whose per-call cost
 * is the call itself (Python's ctypes converts each argument of a call:
 * one pointer is cheaper than seven). */
typedef struct flashrt_launch_args {
  const flashrt_tensor *q, *k, *v, *o, *lse;
  void *stream;
} flashrt_launch_args;

/* flashrt_launch(kernel, args->q, ..., args->lse, args->stream). */
FLASHRT_API flashrt_status
flashrt_launch_packed(flashrt_kernel *kernel, const flashrt_launch_args *args);

/* Packed sequences, for a kernel whose grid is "packed" (FlashAttention's
 * varlen API): q, k, v and o are [1, H, T, D] views of every sequence's
 * rows one after another (T x H x D storage: strides (T*H*D, D, H*D, 1)),
 * lse [1, H, T_q]; sequence s is rows [cu_seqlens_q[s], cu_seqlens_q[s+1])
 * of q and o and rows [cu_seqlens_k[s], cu_seqlens_k[s+1]) of k and v
 * (rank-1 int32 device vectors, one entry per sequence plus one);
 * max_seqlen_q is the longest query sequence (it sizes the grid). */
typedef struct flashrt_varlen_args {
  const flashrt_tensor *q, *k, *v, *o, *lse;
  const flashrt_tensor *cu_seqlens_q, *cu_seqlens_k;
  int64_t max_seqlen_q;
  void *stream;
} flashrt_varlen_args;

FLASHRT_API flashrt_status
flashrt_launch_varlen(flashrt_kernel *kernel, const flashrt_varlen_args *args);

/* The backward pass (a kernel whose kernel.json says "pass": "backward"):
 * dq, dk and dv from q, k, v, the forward's o and lse, and dout (dO), with
 * q, o, dout, dq B x H x Nq x D, k, v, dk, dv B x H_kv x Nk x D (any strides
 * along B, H and N, 16-byte aligned), lse dense f32 B x H x Nq. Three
 * launches on `stream` share `workspace` (device memory of at least
 * flashrt_backward_workspace_bytes, 256-byte aligned); with workspace NULL
 * the runtime allocates it in stream order. Asynchronous. */
typedef struct flashrt_backward_args {
  const flashrt_tensor *q, *k, *v, *o, *dout, *lse, *dq, *dk, *dv;
  void *workspace;
  uint64_t workspace_bytes;
  void *stream;
} flashrt_backward_args;

FLASHRT_API flashrt_status flashrt_launch_backward(
    flashrt_kernel *kernel, const flashrt_backward_args *args);

/* The workspace bytes flashrt_launch_backward needs for args's tensors
 * (args->workspace and args->stream are not used). */
FLASHRT_API flashrt_status flashrt_backward_workspace_bytes(
    flashrt_kernel *kernel, const flashrt_backward_args *args, uint64_t *bytes);

/* A kernel whose kernel.json lists "captures" (the score and mask mods'
 * memrefs, the attention sinks, the backward's dsinks: the kernel source's
 * arguments after its tensors) takes them here, in that order: `count`
 * dense row-major device tensors of rank 1 to 4 (only the first `rank`
 * sizes and strides are read). The sinks and dsinks are f32 [H]. The
 * calls without captures refuse such a kernel. */
typedef struct flashrt_captures {
  const flashrt_tensor *tensors;
  int32_t count;
} flashrt_captures;

FLASHRT_API flashrt_status flashrt_launch_with_captures(
    flashrt_kernel *kernel, const flashrt_launch_args *args,
    const flashrt_captures *captures);

FLASHRT_API flashrt_status flashrt_launch_backward_with_captures(
    flashrt_kernel *kernel, const flashrt_backward_args *args,
    const flashrt_captures *captures);

FLASHRT_API flashrt_status flashrt_backward_workspace_bytes_with_captures(
    flashrt_kernel *kernel, const flashrt_backward_args *args,
    const flashrt_captures *captures, uint64_t *bytes);

FLASHRT_API flashrt_status flashrt_validate_with_captures(
    const char *metadata_path, const flashrt_launch_args *args,
    const flashrt_captures *captures);

/* The decoding pass (a kernel whose kernel.json says "pass": "decode"): O
 * (and LSE) of a step's queries q (B x H x Sq x D) over a K/V cache. The
 * cache is given as the kernel reads it, "B x H x N x D" views with any
 * strides (16-byte aligned, stride 1 along D): with a paged kernel
 * (kernel.json page_size P > 0) k_cache and v_cache are [num_pages, H_kv,
 * P, D] (vLLM stores num_pages x P x H_kv x D pages: pass the permuted
 * view), page_table int32 [B, max_pages] (dense) names each batch's pages
 * in order and cache_seqlens int32 [B] (dense) its keys; with a contiguous
 * one (page_size 0) they are [B, H_kv, Nk, D], every batch Nk keys, and
 * page_table and cache_seqlens are NULL. H is a multiple of H_kv; o is q's
 * shape, lse (given exactly when the kernel writes one) float32 dense B x
 * H x Sq. The runtime never reads page_table or cache_seqlens (device
 * memory): the kernel clamps them.
 *
 * Each row's keys are split over num_splits programs (0: the runtime's
 * rule for this device's SMs, flashrt_decode_num_splits) whose outputs a
 * second launch combines; both run on `stream` in order. They share
 * `workspace` (device memory of at least flashrt_decode_workspace_bytes,
 * 256-byte aligned); with workspace NULL the runtime allocates it in
 * stream order (cuMemAllocAsync), which a CUDA graph capture cannot keep:
 * a captured call passes its own workspace (and a fixed num_splits, or the
 * rule's, which depends only on the shapes). `captures` is NULL when the
 * kernel has none. Asynchronous. */
typedef struct flashrt_decode_args {
  const flashrt_tensor *q, *k_cache, *v_cache, *o, *lse;
  const flashrt_tensor *page_table, *cache_seqlens;
  int32_t num_splits;
  void *workspace;
  uint64_t workspace_bytes;
  void *stream;
} flashrt_decode_args;

FLASHRT_API flashrt_status
flashrt_launch_decode(flashrt_kernel *kernel, const flashrt_decode_args *args,
                      const flashrt_captures *captures);

/* The workspace bytes flashrt_launch_decode needs for args's tensors and
 * the splits it would use (args->workspace and args->stream are not used). */
FLASHRT_API flashrt_status flashrt_decode_workspace_bytes(
    flashrt_kernel *kernel, const flashrt_decode_args *args, uint64_t *bytes);

/* The splits flashrt_launch_decode would use: args->num_splits when > 0,
 * else the runtime's rule for the shapes and the device's SM count. */
FLASHRT_API flashrt_status flashrt_decode_num_splits(
    flashrt_kernel *kernel, const flashrt_decode_args *args, int32_t *splits);

/* flashrt_launch_decode's checks against a metadata file only (no driver;
 * the rule assumes 132 SMs). */
FLASHRT_API flashrt_status flashrt_validate_decode(
    const char *metadata_path, const flashrt_decode_args *args,
    const flashrt_captures *captures);

/* Checks arguments against a metadata file only: no driver, no GPU. */
FLASHRT_API flashrt_status flashrt_validate(const char *metadata_path,
                                            const flashrt_tensor *q,
                                            const flashrt_tensor *k,
                                            const flashrt_tensor *v,
                                            const flashrt_tensor *o,
                                            const flashrt_tensor *lse);

/* flashrt_validate for packed sequences (args->stream is not used). */
FLASHRT_API flashrt_status flashrt_validate_varlen(
    const char *metadata_path, const flashrt_varlen_args *args);

#ifdef __cplusplus
}
#endif

#endif /* FLASHC_RUNTIME_FLASHRT_H */

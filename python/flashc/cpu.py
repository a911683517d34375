"""The CPU path: attention on host memory, compiled on first use. No torch.

`flashc --target=cpu` compiles a variant's generated source (the same
source, config and tile program as the GPU kernel's) into a host shared
library, kernel.so, whose entry point is the kernel function's MLIR C
interface (`_mlir_ciface_<kernel>`, kernel.json's "kernel"): it takes one
pointer per argument to a memref descriptor {allocated pointer, aligned
pointer, offset, sizes[rank], strides[rank]} (offset and strides in
elements), for q, k, v, o (B x H x N x D) and lse (B x H x Nq, float32),
in that order (the backward pass's library: q, k, v, o, do, lse, dq, dk,
dv), then the variant's captures (ALiBi's slopes, document ids, prefix
lengths, block-mask tables: kernel.json's "captures"), the attention sinks
and, in the backward pass, their gradient (dsinks), each a descriptor of
its own rank. The library goes into the on-disk cache like a cubin
(cache.py; arch "cpu", so keys never collide with a GPU entry; the key
includes `cc --version`, which links it), found there by later calls in any
process. FLASHC_CACHE_DIR and FLASHC_COMPILER work as for the GPU path;
FLASHC_LIBRARY (prebuilt cubins) does not apply.

It is slow: the tile program runs as scalar loops on one core, built for
the architecture's baseline CPU (x86-64: SSE2) so that a cache shared by
hosts serves all of them. It exists for tests and machines without a GPU.

Three ways in:
  - attention(q, k, v, ...) on numpy arrays: float16 for f16, uint16
    holding bfloat16's bits for bf16 (numpy has no bfloat16), and
    attention_backward(q, k, v, o, lse, do, ...) for the gradients;
  - kernel_for(dtype, head_dim, causal, scale).run(...) on raw addresses of
    contiguous buffers, which flashc.attention uses for CPU torch tensors;
  - load("kernel.so") for a library flashc --target=cpu wrote.
"""

import ctypes
import json
import os
import threading

from . import FlashcError
from . import cache
from .variants import (BACKWARD_CONFIG, Variant, VariantError,
                       canonical_config, generate_backward_source)

__all__ = ["attention", "attention_backward", "varlen_attention",
           "varlen_attention_backward", "attention_with_kvcache", "kernel_for",
           "backward_kernel_for", "load", "compile_variant", "CpuKernel"]

_lock = threading.Lock()
_kernels = {}  # (Variant, backward) -> CpuKernel
_loaded = {}   # kernel.so path -> CpuKernel


def _memref_type(rank):
    class MemRef(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p),
                    ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    MemRef.__name__ = f"MemRef{rank}"
    return MemRef


_MEMREF = {rank: _memref_type(rank) for rank in (1, 2, 3, 4, 5)}


def _strided_memref(address, sizes, strides):
    """The descriptor of a buffer at `address` with `sizes` and `strides`
    (in elements)."""
    rank = len(sizes)
    return _MEMREF[rank](address, address, 0, (ctypes.c_int64 * rank)(*sizes),
                         (ctypes.c_int64 * rank)(*strides))


def _contiguous_memref(address, sizes):
    """The descriptor of a row-major buffer at `address` with `sizes`."""
    rank = len(sizes)
    strides = [1] * rank
    for i in range(rank - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return _strided_memref(address, sizes, strides)


_BACKWARD_PARAMS = ["q", "k", "v", "o", "do", "lse", "dq", "dk", "dv"]


class CpuKernel:
    """A kernel.so that flashc --target=cpu wrote, with kernel.json beside
    it (its dtype, head dim, causal, scale, has_lse and parameters): the
    forward pass (run) or, where kernel.json says "pass": "backward", the
    backward pass (run_backward)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        meta_path = os.path.splitext(self.path)[0] + ".json"
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except (OSError, ValueError) as e:
            raise FlashcError(None, f"{meta_path}: {e}") from None
        if (meta.get("format") != "flashc-kernel"
                or meta.get("binary_format") != "so"
                or meta.get("binary") != os.path.basename(self.path)):
            raise FlashcError(None, f"{meta_path} does not describe a host "
                              f"library {os.path.basename(self.path)} "
                              "(flashc --target=cpu writes one)")
        self.name = meta["kernel"]
        self.dtype = meta["dtype"]
        self.head_dim = meta["head_dim"]
        self.causal = bool(meta["causal"])
        self.scale = meta["scale"]
        self.has_lse = bool(meta["has_lse"])
        self.backward = meta.get("pass", "forward") == "backward"
        # Decoding (run_paged): a paged cache, split-KV's scratch.
        self.page_size = meta.get("page_size")
        self.splits = bool(meta.get("splits", False))
        expected = (_BACKWARD_PARAMS if self.backward else
                    ["q", "k", "v", "o"] + (["lse"] if self.has_lse else [])
                    + (["page_table", "cache_seqlens"] if self.page_size else [])
                    + (["partial_out", "partial_lse"] if self.splits else []))
        params = meta["params"]
        self.params = [p.get("tensor") for p in params[:len(expected)]]
        if self.params != expected:
            raise FlashcError(None, f"{meta_path}: parameters {self.params}, "
                              f"expected {expected}")
        # The arguments after the attention tensors: the captures (and
        # sinks, dsinks) in the source function's order, by rank.
        self.capture_ranks = [p.get("rank") for p in params[len(expected):]]
        if any(r not in _MEMREF for r in self.capture_ranks):
            raise FlashcError(None, f"{meta_path}: capture ranks "
                              f"{self.capture_ranks}; the CPU path passes "
                              "memrefs of rank 1 to 4")
        if self.dtype not in ("bf16", "f16"):
            raise FlashcError(None, f"{meta_path}: dtype {self.dtype}")
        try:
            self._library = ctypes.CDLL(self.path)
            self._entry = getattr(self._library, self.name)
        except (OSError, AttributeError) as e:
            raise FlashcError(None, f"cannot load {self.path}: {e}") from None
        self._entry.argtypes = [ctypes.c_void_p] * len(params)
        self._entry.restype = None

    def _shape(self, batch, heads, seq_q, seq_k, kv_heads):
        """The query and K/V sides' sizes, checked; kv_heads None: heads."""
        kv_heads = heads if kv_heads is None else kv_heads
        for name, n in (("batch", batch), ("heads", heads), ("seq_q", seq_q),
                        ("seq_k", seq_k), ("kv_heads", kv_heads)):
            if int(n) < 1:
                raise FlashcError(4, f"{name} is {n}; flashc takes at least 1")
        if heads % kv_heads:
            raise FlashcError(4, f"kv_heads {kv_heads} does not divide heads "
                              f"{heads}")
        d = self.head_dim
        return (batch, heads, seq_q, d), (batch, kv_heads, seq_k, d)

    def _capture_memrefs(self, captures):
        """The descriptors of `captures`, (address, sizes) pairs of
        row-major buffers, checked against the kernel's count and ranks."""
        captures = list(captures)
        if [len(sizes) for _, sizes in captures] != self.capture_ranks:
            raise FlashcError(4, f"{self.name} takes captures of ranks "
                              f"{self.capture_ranks}; got "
                              f"{[len(sizes) for _, sizes in captures]}")
        return [_contiguous_memref(address, sizes)
                for address, sizes in captures]

    def run(self, q, k, v, o, lse, batch, heads, seq_q, seq_k,
            kv_heads=None, captures=()):
        """Runs the kernel on row-major buffers given by address (int): q
        and o batch x heads x seq_q x head_dim, k and v batch x kv_heads x
        seq_k x head_dim (kv_heads divides heads; default heads), of the
        kernel's dtype; lse float32 batch x heads x seq_q (required where
        has_lse); `captures`, (address, sizes) of each row-major capture
        buffer in kernel.json's order (the sinks last). The caller keeps
        them alive and checks their sizes and dtypes; this checks only the
        shape's numbers and the captures' ranks."""
        if self.backward:
            raise FlashcError(4, f"{self.name} is a backward pass: call "
                              "run_backward")
        if self.page_size:
            raise FlashcError(4, f"{self.name} reads a paged cache: call "
                              "run_paged")
        qs, kvs = self._shape(batch, heads, seq_q, seq_k, kv_heads)
        descriptors = [_contiguous_memref(q, qs), _contiguous_memref(k, kvs),
                       _contiguous_memref(v, kvs), _contiguous_memref(o, qs)]
        if self.has_lse:
            if not lse:
                raise FlashcError(4, "lse: the kernel writes LSE; give a "
                                  "float32 batch x heads x seq_q buffer")
            descriptors.append(_contiguous_memref(lse, (batch, heads, seq_q)))
        descriptors += self._capture_memrefs(captures)
        self._entry(*[ctypes.addressof(m) for m in descriptors])

    def run_paged(self, q, k_cache, v_cache, o, lse, page_table, cache_lens,
                  batch, heads, seq_q, kv_heads, num_pages, max_pages,
                  partial_out=0, partial_lse=0, splits=1, captures=()):
        """Runs a decoding kernel on buffers given by address (int): q and
        o batch x heads x seq_q x head_dim row-major; k_cache and v_cache
        row-major num_pages x page_size x kv_heads x head_dim (vLLM's
        pages); lse float32 batch x heads x seq_q; page_table int32 batch
        x max_pages; cache_lens int32 [batch]; where the kernel splits the
        keys, partial_out float32 splits x batch x heads x seq_q x
        head_dim and partial_lse float32 splits x batch x heads x seq_q
        (scratch); `captures` as run's. The caller keeps them alive and
        checks their sizes; this checks the shape's numbers."""
        if not self.page_size:
            raise FlashcError(4, f"{self.name} reads no paged cache: call run")
        qs, _ = self._shape(batch, heads, seq_q, 1, kv_heads)
        for name, n in (("num_pages", num_pages), ("max_pages", max_pages),
                        ("splits", splits)):
            if int(n) < 1:
                raise FlashcError(4, f"{name} is {n}; flashc takes at least 1")
        if int(splits) != 1 and not self.splits:
            raise FlashcError(4, f"splits is {splits}; {self.name} does not "
                              "split the keys")
        p, d = self.page_size, self.head_dim
        # The pages viewed num_pages x kv_heads x page_size x head_dim.
        cache = ((num_pages, kv_heads, p, d),
                 (p * kv_heads * d, d, kv_heads * d, 1))
        descriptors = [_contiguous_memref(q, qs),
                       _strided_memref(k_cache, *cache),
                       _strided_memref(v_cache, *cache),
                       _contiguous_memref(o, qs),
                       _contiguous_memref(lse, (batch, heads, seq_q)),
                       _contiguous_memref(page_table, (batch, max_pages)),
                       _contiguous_memref(cache_lens, (batch,))]
        if self.splits:
            if not partial_out or not partial_lse:
                raise FlashcError(4, "partial_out, partial_lse: the kernel "
                                  "splits the keys; give its float32 scratch")
            descriptors += [
                _contiguous_memref(partial_out, (splits,) + qs),
                _contiguous_memref(partial_lse,
                                   (splits, batch, heads, seq_q))]
        descriptors += self._capture_memrefs(captures)
        self._entry(*[ctypes.addressof(m) for m in descriptors])

    def run_backward(self, q, k, v, o, do, lse, dq, dk, dv, batch, heads,
                     seq_q, seq_k, kv_heads=None, captures=()):
        """Runs a backward-pass kernel on row-major buffers given by address
        (int): q, o, do and dq batch x heads x seq_q x head_dim, k, v, dk
        and dv batch x kv_heads x seq_k x head_dim, of the kernel's dtype,
        and the forward's lse (float32 batch x heads x seq_q); `captures`
        as run's, then the sinks and dsinks (float32 [heads]) where the
        forward has sinks. Writes dq, dk, dv (and dsinks). The caller
        keeps the buffers alive and checks their sizes; this checks only
        the shape's numbers and the captures' ranks."""
        if not self.backward:
            raise FlashcError(4, f"{self.name} is a forward pass: call run")
        qs, kvs = self._shape(batch, heads, seq_q, seq_k, kv_heads)
        descriptors = [
            _contiguous_memref(q, qs), _contiguous_memref(k, kvs),
            _contiguous_memref(v, kvs), _contiguous_memref(o, qs),
            _contiguous_memref(do, qs),
            _contiguous_memref(lse, (batch, heads, seq_q)),
            _contiguous_memref(dq, qs), _contiguous_memref(dk, kvs),
            _contiguous_memref(dv, kvs)]
        descriptors += self._capture_memrefs(captures)
        self._entry(*[ctypes.addressof(m) for m in descriptors])

    def __repr__(self):
        return (f"flashc.cpu.CpuKernel({self.name!r}, {self.dtype}, "
                f"D={self.head_dim}, causal={self.causal}, "
                + ("backward" if self.backward else f"lse={self.has_lse}")
                + ")")


def load(path):
    """The CpuKernel of kernel.so (kernel.json beside it), loaded once."""
    path = os.path.abspath(os.fspath(path))
    with _lock:
        kern = _loaded.get(path)
        if kern is None:
            kern = CpuKernel(path)
            _loaded[path] = kern
        return kern


def compile_variant(variant, config=None, toolchain=None):
    """Compiles (or finds in the cache) the variant's CPU library, from the
    source the GPU path compiles (default: the shipped kernel's config);
    returns (entry directory, compiled: bool)."""
    config = config or variant.default_config()
    return cache.get_entry(variant.source(config), canonical_config(config),
                           cache.CPU_ARCH, toolchain=toolchain,
                           info={"variant": variant.name, "tuning": None})


def _cached_kernel(dtype, head_dim, causal, scale, backward, **mods):
    try:
        variant = Variant(dtype, head_dim, causal, scale, **mods)
    except VariantError as e:
        raise FlashcError(4, str(e)) from None
    memo = (variant, backward)
    kern = _kernels.get(memo)
    if kern is not None:
        return kern
    what = "backward pass" if backward else "kernel"
    try:
        toolchain = cache.Toolchain(cpu=True)
    except cache.CompileError as e:
        raise cache.CompileError(
            f"flashc: cannot build the CPU {what} of {variant.name}: {e}"
        ) from None
    if backward:
        entry, _ = cache.get_entry(
            generate_backward_source(variant),
            canonical_config(BACKWARD_CONFIG), cache.CPU_ARCH,
            toolchain=toolchain,
            info={"variant": variant.name, "pass": "backward",
                  "tuning": None})
    else:
        entry, _ = compile_variant(variant, toolchain=toolchain)
    kern = load(os.path.join(entry, cache.CPU_BINARY))
    _kernels[memo] = kern
    return kern


def kernel_for(dtype, head_dim, causal=False, scale=None, softcap=None,
               window=None, chunk_size=None, **mods):
    """The CpuKernel of the variant (dtype "bf16" or "f16", with the
    soft-capping, sliding window and chunks of Variant, and its alibi,
    document, prefix_lm and sinks flags in `mods`), compiled on first use
    through the cache."""
    return _cached_kernel(dtype, head_dim, causal, scale, backward=False,
                          softcap=softcap, window=window,
                          chunk_size=chunk_size, **mods)


def backward_kernel_for(dtype, head_dim, causal=False, scale=None,
                        softcap=None, window=None, chunk_size=None, **mods):
    """The CpuKernel of the variant's backward pass (flash.attention_backward
    over the variant's mask, scale, mods and sinks), compiled on first use
    through the cache."""
    return _cached_kernel(dtype, head_dim, causal, scale, backward=True,
                          softcap=softcap, window=window,
                          chunk_size=chunk_size, **mods)


# --- numpy ------------------------------------------------------------------

def _numpy_dtype_name(np, array, name):
    if array.dtype == np.float16:
        return "f16"
    if array.dtype == np.uint16:
        return "bf16"
    raise FlashcError(4, f"{name} has dtype {array.dtype}; the CPU path takes "
                      "float16, or uint16 holding bfloat16's bits")


def check_shapes(q_shape, k_shape, v_shape):
    """What the kernel needs of the shapes; raises FlashcError naming the
    argument."""
    for n, s in (("q", q_shape), ("k", k_shape), ("v", v_shape)):
        if len(s) != 4:
            raise FlashcError(4, f"{n} has {len(s)} dimensions; flashc takes "
                              "batch x heads x seq x head_dim")
        if min(s) < 1:
            raise FlashcError(4, f"{n} is {tuple(s)}; flashc takes sizes of at "
                              "least 1")
    if tuple(k_shape) != tuple(v_shape):
        raise FlashcError(4, f"k is {tuple(k_shape)} but v is "
                          f"{tuple(v_shape)}")
    if (q_shape[0], q_shape[3]) != (k_shape[0], k_shape[3]):
        raise FlashcError(4, f"q is {tuple(q_shape)} and k {tuple(k_shape)}: "
                          "batch and head_dim must agree")
    if q_shape[1] % k_shape[1]:
        raise FlashcError(4, f"q has {q_shape[1]} heads and k {k_shape[1]}: "
                          "grouped-query attention needs the query heads to "
                          "be a multiple of the K/V heads")


def _output_buffer(given, name, shape, dt):
    """`given` where it is a writeable C-contiguous array of `shape` and
    `dt` (the kernels write it in place), a new one where it is None."""
    import numpy as np
    if given is None:
        return np.empty(shape, dtype=dt)
    if (not isinstance(given, np.ndarray) or given.shape != shape
            or given.dtype != dt or not given.flags.c_contiguous
            or not given.flags.writeable):
        raise FlashcError(4, f"{name} must be a writeable C-contiguous "
                          f"{np.dtype(dt).name} array of shape {shape}")
    return given


def attention(q, k, v, *, causal=False, scale=None, out=None, lse=None,
              return_lse=False, softcap=None, window=None, chunk_size=None):
    """Attention on numpy arrays on the CPU, compiled on first use.

    q is B x H x Nq x D, k and v B x Hkv x Nk x D (H a multiple of Hkv:
    grouped-query attention, query head h reading K/V head h / (H / Hkv)),
    all float16, or all uint16 holding bfloat16's bits; D 64, 128 or 256. `causal` is aligned to the
    bottom-right corner when Nq != Nk: a row that sees no key gets O = 0
    and LSE = -inf. `scale` defaults to 1/sqrt(D). `softcap` maps each
    scaled logit s to softcap * tanh(s / softcap); `window` hides the keys
    more than that many behind their query (kv_idx + window < q_idx), as
    kernels/attention_softcap.mlir and attention_sliding_window.mlir do;
    `chunk_size` hides the keys outside their query's chunk of that many
    positions (q_idx / chunk_size != kv_idx / chunk_size), as
    attention_chunked.mlir does.
    Returns O (q's dtype,
    B x H x Nq x D), or (O, LSE) with return_lse (float32 B x H x Nq).
    Inputs of any layout are copied to row-major where they are not;
    out= and lse= must be C-contiguous of the right shape and dtype."""
    import numpy as np
    arrays = []
    for n, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, np.ndarray):
            raise FlashcError(4, f"{n} is a {type(t).__name__}, not a numpy "
                              "array")
        arrays.append(t)
    dtype = _numpy_dtype_name(np, arrays[0], "q")
    for n, t in zip("kv", arrays[1:]):
        if t.dtype != arrays[0].dtype:
            raise FlashcError(4, f"{n} is {t.dtype} but q is {arrays[0].dtype}")
    check_shapes(q.shape, k.shape, v.shape)
    q, k, v = (np.ascontiguousarray(t) for t in arrays)
    b, h, nq, d = q.shape
    nk = k.shape[2]

    o = _output_buffer(out, "out", q.shape, q.dtype)
    lse_buf = _output_buffer(lse, "lse", (b, h, nq), np.float32)
    kern = kernel_for(dtype, d, causal, scale, softcap, window, chunk_size)
    kern.run(q.ctypes.data, k.ctypes.data, v.ctypes.data, o.ctypes.data,
             lse_buf.ctypes.data, b, h, nq, nk, kv_heads=k.shape[1])
    return (o, lse_buf) if return_lse else o


def attention_backward(q, k, v, o, lse, do, *, causal=False, scale=None,
                       softcap=None, window=None, chunk_size=None):
    """The gradients of attention() on numpy arrays on the CPU: from its
    inputs q, k, v, its outputs O and LSE (return_lse=True) and do, the
    loss's gradient with respect to O, returns (dq, dk, dv) in q's dtype
    and shapes of q, k and v. P is recomputed from LSE tile by tile
    (flash.attention_backward's tile program); dk and dv of a grouped K/V
    head sum its query heads'. `causal`, `scale`, `softcap`, `window` and
    `chunk_size` must be the forward's.
    Rows that saw no key get dq = 0."""
    import numpy as np
    arrays = []
    for n, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do)):
        if not isinstance(t, np.ndarray):
            raise FlashcError(4, f"{n} is a {type(t).__name__}, not a numpy "
                              "array")
        arrays.append(t)
    dtype = _numpy_dtype_name(np, arrays[0], "q")
    for n, t in zip(("k", "v", "o", "do"), arrays[1:]):
        if t.dtype != arrays[0].dtype:
            raise FlashcError(4, f"{n} is {t.dtype} but q is {arrays[0].dtype}")
    check_shapes(q.shape, k.shape, v.shape)
    for n, t in (("o", o), ("do", do)):
        if t.shape != q.shape:
            raise FlashcError(4, f"{n} is {t.shape} but q is {q.shape}")
    b, h, nq, d = q.shape
    if (not isinstance(lse, np.ndarray) or lse.shape != (b, h, nq)
            or lse.dtype != np.float32):
        raise FlashcError(4, f"lse must be the forward's float32 array of "
                          f"shape {(b, h, nq)}")
    q, k, v, o, do, lse = (np.ascontiguousarray(t)
                           for t in (q, k, v, o, do, lse))
    dq = np.empty_like(q)
    dk = np.empty_like(k)
    dv = np.empty_like(v)
    kern = backward_kernel_for(dtype, d, causal, scale, softcap, window,
                               chunk_size)
    kern.run_backward(*(t.ctypes.data for t in (q, k, v, o, do, lse, dq, dk,
                                                 dv)),
                      b, h, nq, k.shape[2], kv_heads=k.shape[1])
    return dq, dk, dv


def _packed_sequences(np, q, k, v, cu_seqlens_q, cu_seqlens_k):
    """cu_seqlens_q and cu_seqlens_k as numpy vectors, after checking them
    and q, k, v (total x heads x head_dim); FlashcError names what is
    wrong."""
    for n, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, np.ndarray) or t.ndim != 3:
            raise FlashcError(4, f"{n} must be a total x heads x head_dim "
                              "numpy array")
    cus = []
    for n, cu, total in (("cu_seqlens_q", cu_seqlens_q, q.shape[0]),
                         ("cu_seqlens_k", cu_seqlens_k, k.shape[0])):
        cu = np.asarray(cu)
        if cu.ndim != 1 or cu.size < 1 or cu.dtype.kind not in "iu":
            raise FlashcError(4, f"{n} must be a rank-1 integer vector of "
                              "one entry per sequence plus one")
        if cu[0] != 0 or np.any(np.diff(cu) < 0) or cu[-1] > total:
            raise FlashcError(4, f"{n} must rise from 0 to at most the "
                              f"tensor's {total} rows")
        cus.append(cu)
    if cus[0].size != cus[1].size:
        raise FlashcError(4, f"cu_seqlens_q has {cus[0].size} entries and "
                          f"cu_seqlens_k {cus[1].size}")
    if k.shape != v.shape:
        raise FlashcError(4, f"k is {k.shape} but v is {v.shape}")
    return cus


def _sequence_view(t, start, end):
    """Rows [start, end) of a total x heads x head_dim array as the
    1 x heads x rows x head_dim problem of one sequence."""
    return t[start:end].transpose(1, 0, 2)[None]


def check_kvcache(q_shape, k_shape, v_shape, lens_shape, table_shape):
    """What a decoding call needs of the shapes (q B x H x Sq x D, the
    caches num_pages x page_size x H_kv x D, cache_seqlens [B], page_table
    B x max_pages); raises FlashcError naming the argument."""
    if len(q_shape) != 4 or min(q_shape) < 1:
        raise FlashcError(4, f"q is {tuple(q_shape)}; flashc takes batch x "
                          "heads x seq_q x head_dim, sizes of at least 1")
    for n, shape in (("k_cache", k_shape), ("v_cache", v_shape)):
        if len(shape) != 4 or min(shape) < 1:
            raise FlashcError(4, f"{n} is {tuple(shape)}; flashc takes "
                              "num_pages x page_size x kv_heads x head_dim")
    if tuple(k_shape) != tuple(v_shape):
        raise FlashcError(4, f"k_cache is {tuple(k_shape)} but v_cache is "
                          f"{tuple(v_shape)}")
    if k_shape[3] != q_shape[3]:
        raise FlashcError(4, f"k_cache's head_dim {k_shape[3]} is not q's "
                          f"{q_shape[3]}")
    if q_shape[1] % k_shape[2]:
        raise FlashcError(4, f"q has {q_shape[1]} heads and k_cache "
                          f"{k_shape[2]}: grouped-query attention needs the "
                          "query heads to be a multiple of the K/V heads")
    if tuple(lens_shape) != (q_shape[0],):
        raise FlashcError(4, f"cache_seqlens is {tuple(lens_shape)}; it takes "
                          f"one length per batch, ({q_shape[0]},)")
    if len(table_shape) != 2 or table_shape[0] != q_shape[0] \
            or table_shape[1] < 1:
        raise FlashcError(4, f"page_table is {tuple(table_shape)}; it takes "
                          f"batch x max_pages, ({q_shape[0]}, >= 1)")


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens, page_table, *,
                           causal=False, scale=None, num_splits=1,
                           pack_gqa=None, softcap=None, window=None,
                           chunk_size=None, sinks=None, out=None,
                           return_lse=False):
    """A decoding step over a paged K/V cache on numpy arrays on the CPU,
    compiled on first use (docs/decoding.md).

    q is B x H x Sq x D (the step's Sq new tokens, bf16 bits as uint16 or
    float16); k_cache and v_cache vLLM's pages, num_pages x page_size x
    Hkv x D of q's dtype (page_size a multiple of 16 up to 1024);
    page_table int32 B x max_pages names each batch's pages in order and
    cache_seqlens int32 [B] its number of cached keys (the step's own
    keys included: they are the cache's last positions). `causal` aligns
    the mask to the cache's end. num_splits > 1 splits each row's keys
    over that many programs and combines them (split-KV, float32 scratch
    allocated here); pack_gqa computes a K/V head's query heads as one
    tile (default: where there are several). softcap, window and
    chunk_size as attention()'s, counted from each query's position in
    the cache, and `sinks` (float32 [H]) as flashc.attention's. Returns O (B x H x Sq x D), or
    (O, LSE) with return_lse. A length past the table's pages or a page
    outside the cache is clamped: wrong numbers, never a read outside."""
    import numpy as np
    for n, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                 ("cache_seqlens", cache_seqlens), ("page_table", page_table)):
        if not isinstance(t, np.ndarray):
            raise FlashcError(4, f"{n} is a {type(t).__name__}, not a numpy "
                              "array")
    dtype = _numpy_dtype_name(np, q, "q")
    for n, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != q.dtype:
            raise FlashcError(4, f"{n} is {t.dtype} but q is {q.dtype}")
    for n, t in (("cache_seqlens", cache_seqlens), ("page_table", page_table)):
        if t.dtype != np.int32:
            raise FlashcError(4, f"{n} is {t.dtype}; it takes int32")
    check_kvcache(q.shape, k_cache.shape, v_cache.shape, cache_seqlens.shape,
                  page_table.shape)
    if (isinstance(num_splits, bool) or int(num_splits) != num_splits
            or int(num_splits) < 1):
        raise FlashcError(4, f"num_splits must be an int >= 1, got "
                          f"{num_splits!r}")
    num_splits = int(num_splits)
    b, h, nq, d = q.shape
    num_pages, page_size, kv_heads, _ = k_cache.shape
    q, k_cache, v_cache, cache_seqlens, page_table = (
        np.ascontiguousarray(t)
        for t in (q, k_cache, v_cache, cache_seqlens, page_table))
    captures = []
    if sinks is not None:
        if (not isinstance(sinks, np.ndarray) or sinks.dtype != np.float32
                or sinks.shape != (h,)):
            raise FlashcError(4, f"sinks must be a float32 array of shape "
                              f"({h},)")
        sinks = np.ascontiguousarray(sinks)
        captures.append((sinks.ctypes.data, sinks.shape))
    out = _output_buffer(out, "out", q.shape, q.dtype)
    lse = np.empty((b, h, nq), dtype=np.float32)
    if pack_gqa is None:
        # Each K/V byte read once for its G query heads.
        pack_gqa = h > kv_heads
    kern = kernel_for(dtype, d, causal, scale, softcap, window, chunk_size,
                      sinks=sinks is not None, page_size=page_size,
                      splits=num_splits > 1, pack_gqa=bool(pack_gqa))
    partial_out = partial_lse = None
    if num_splits > 1:
        partial_out = np.empty((num_splits, b, h, nq, d), dtype=np.float32)
        partial_lse = np.empty((num_splits, b, h, nq), dtype=np.float32)
    kern.run_paged(q.ctypes.data, k_cache.ctypes.data, v_cache.ctypes.data,
                   out.ctypes.data, lse.ctypes.data, page_table.ctypes.data,
                   cache_seqlens.ctypes.data, b, h, nq, kv_heads, num_pages,
                   page_table.shape[1],
                   partial_out.ctypes.data if partial_out is not None else 0,
                   partial_lse.ctypes.data if partial_lse is not None else 0,
                   num_splits, captures=captures)
    return (out, lse) if return_lse else out


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, *, causal=False,
                     scale=None, out=None, lse=None, return_lse=False):
    """Packed sequences on numpy arrays on the CPU (FlashAttention's varlen
    form): q total_q x H x D, k and v total_k x Hkv x D, every sequence's
    rows one after another, sequence s being rows [cu_seqlens_q[s],
    cu_seqlens_q[s + 1]) of q and O and [cu_seqlens_k[s], cu_seqlens_k[s +
    1]) of k and v (integer vectors of one entry per sequence plus one).
    Each sequence is its own problem, causal at its own bottom-right
    corner; a zero-length one gives nothing. The CPU target compiles no
    packed program, so this runs attention() (the dense program's CPU path)
    once per sequence. Returns O (total_q x H x D), or (O, LSE) with
    return_lse (float32 H x total_q)."""
    import numpy as np
    cus = _packed_sequences(np, q, k, v, cu_seqlens_q, cu_seqlens_k)
    h, d = q.shape[1], q.shape[2]
    o = out if out is not None else np.zeros(q.shape, dtype=q.dtype)
    if o.shape != q.shape or o.dtype != q.dtype:
        raise FlashcError(4, f"out must be {q.dtype} of shape {q.shape}")
    lse_buf = lse if lse is not None else np.empty((h, q.shape[0]),
                                                   dtype=np.float32)
    for s in range(cus[0].size - 1):
        q0, q1 = int(cus[0][s]), int(cus[0][s + 1])
        k0, k1 = int(cus[1][s]), int(cus[1][s + 1])
        if q1 == q0:
            continue
        if k1 == k0:  # no key: O = 0, LSE = -inf
            o[q0:q1] = 0
            lse_buf[:, q0:q1] = -np.inf
            continue
        view = _sequence_view
        so, slse = attention(view(q, q0, q1), view(k, k0, k1),
                             view(v, k0, k1), causal=causal, scale=scale,
                             return_lse=True)
        o[q0:q1] = so[0].transpose(1, 0, 2)
        lse_buf[:, q0:q1] = slse[0]
    return (o, lse_buf) if return_lse else o


def varlen_attention_backward(q, k, v, o, lse, do, cu_seqlens_q,
                              cu_seqlens_k, *, causal=False, scale=None):
    """The gradients of varlen_attention() on numpy arrays on the CPU: from
    its inputs, its outputs O (total_q x H x D) and LSE (H x total_q,
    return_lse=True) and do, returns (dq, dk, dv) shaped as q, k and v.
    Each sequence's gradients are its own problem's (attention_backward on
    its rows, as varlen_attention runs each sequence); rows outside every
    sequence, and the key rows of a sequence without queries, get 0."""
    import numpy as np
    cus = _packed_sequences(np, q, k, v, cu_seqlens_q, cu_seqlens_k)
    h = q.shape[1]
    for n, t, shape in (("o", o, q.shape), ("do", do, q.shape),
                        ("lse", lse, (h, q.shape[0]))):
        if not isinstance(t, np.ndarray) or t.shape != shape:
            raise FlashcError(4, f"{n} must be a numpy array of shape {shape}")
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    view = _sequence_view
    for s in range(cus[0].size - 1):
        q0, q1 = int(cus[0][s]), int(cus[0][s + 1])
        k0, k1 = int(cus[1][s]), int(cus[1][s + 1])
        if q1 == q0 or k1 == k0:
            continue  # no query row, or none that sees a key: all zero
        sdq, sdk, sdv = attention_backward(
            view(q, q0, q1), view(k, k0, k1), view(v, k0, k1),
            view(o, q0, q1), np.ascontiguousarray(lse[None, :, q0:q1]),
            view(do, q0, q1), causal=causal, scale=scale)
        dq[q0:q1] = sdq[0].transpose(1, 0, 2)
        dk[k0:k1] = sdk[0].transpose(1, 0, 2)
        dv[k0:k1] = sdv[0].transpose(1, 0, 2)
    return dq, dk, dv


# --- torch (flashc.attention on CPU tensors) --------------------------------

def _torch_captures(captures):
    """(contiguous tensors, [(address, sizes)]) of CPU capture tensors
    (ops._captures checked their dtypes, shapes and device)."""
    held = [t.contiguous() for t in captures]
    return held, [(t.data_ptr(), tuple(t.shape)) for t in held]


def torch_attention(q, k, v, causal, scale, out, softcap=None, window=None,
                    chunk_size=None, mods=None, captures=()):
    """flashc.attention's CPU launch: (O, LSE) for CPU torch tensors that
    ops._check accepted. `mods`: the Variant's alibi, document, prefix_lm
    and sinks flags; `captures`: their tensors in the kernel's order (the
    sinks last). Inputs are made contiguous (copies where they are not); a
    non-contiguous out= receives a copy."""
    import torch
    dtype = {torch.bfloat16: "bf16", torch.float16: "f16"}[q.dtype]
    for n, t in (("k", k), ("v", v)):
        if t.device.type != "cpu":
            raise FlashcError(4, f"{n} is on {t.device} but q is on the CPU")
    if out is not None and (out.device.type != "cpu" or out.dtype != q.dtype
                            or tuple(out.shape) != tuple(q.shape)):
        raise FlashcError(4, f"out must be a CPU {q.dtype} tensor of shape "
                          f"{tuple(q.shape)}")
    q, k, v = (t.contiguous() for t in (q, k, v))
    b, h, nq, d = q.shape
    kern = kernel_for(dtype, d, causal, scale, softcap, window, chunk_size,
                      **(mods or {}))
    o = out if out is not None and out.is_contiguous() else torch.empty(
        q.shape, dtype=q.dtype)
    lse = torch.empty((b, h, nq), dtype=torch.float32)
    held, passed = _torch_captures(captures)
    kern.run(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
             lse.data_ptr(), b, h, nq, k.shape[2], kv_heads=k.shape[1],
             captures=passed)
    if out is not None and o is not out:
        out.copy_(o)
        o = out
    return o, lse


def torch_attention_backward(q, k, v, o, lse, do, causal, scale,
                             softcap=None, window=None, chunk_size=None,
                             mods=None, captures=()):
    """flashc.attention's CPU gradients: (dq, dk, dv, dsinks) for CPU torch
    tensors that ops._check accepted, from the forward's O and LSE and do;
    `mods` and `captures` as torch_attention's (the sinks last), dsinks
    (float32 [heads]) None where there are no sinks. Inputs are made
    contiguous (copies where they are not)."""
    import torch
    dtype = {torch.bfloat16: "bf16", torch.float16: "f16"}[q.dtype]
    for n, t in (("k", k), ("v", v), ("o", o), ("lse", lse), ("do", do)):
        if t.device.type != "cpu":
            raise FlashcError(4, f"{n} is on {t.device} but q is on the CPU")
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    lse = lse.to(torch.float32).contiguous()
    b, h, nq, d = q.shape
    dq, dk, dv = (torch.empty(t.shape, dtype=t.dtype) for t in (q, k, v))
    mods = mods or {}
    kern = backward_kernel_for(dtype, d, causal, scale, softcap, window,
                               chunk_size, **mods)
    dsinks = torch.empty(h, dtype=torch.float32) if mods.get("sinks") else None
    held, passed = _torch_captures(
        list(captures) + ([dsinks] if dsinks is not None else []))
    kern.run_backward(*(t.data_ptr() for t in (q, k, v, o, do, lse, dq, dk,
                                                dv)),
                      b, h, nq, k.shape[2], kv_heads=k.shape[1],
                      captures=passed)
    return dq, dk, dv, dsinks

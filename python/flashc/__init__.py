"""flashc: run flashc attention kernels on PyTorch tensors.

flashc.attention(q, k, v, causal=..., scale=...) compiles the kernel it
needs on first use and caches it (see its docstring, cache.py, library.py
and README's "From PyTorch"). Below it, a ctypes wrapper over libflashrt's
C API (include/flashc/Runtime/flashrt.h) loads and launches a given kernel;
no build step. Usage::

    import flashc
    attn = flashc.load("kernel.cubin")       # kernel.json beside it
    o = attn(q, k, v)                        # or (o, lse) if the kernel has LSE

    varlen = flashc.load("attention_varlen.cubin")   # packed sequences
    o, lse = varlen.varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q)

q is B x H x Nq x D, k and v are B x Hkv x Nk x D (same B and D; H a
multiple of Hkv: grouped-query attention, query head h reading K/V head
h / (H / Hkv); B, H, N at least 1), CUDA tensors on q's device, of the kernel's dtype (bfloat16 or
float16) and head dim D. The launch goes on torch's current stream of q's
device. libflashrt.so is found through $FLASHC_RUNTIME_LIB, next to this
package, or in the usual build directories.

Packed sequences (a kernel compiled from a `packed(...)` program, whose
kernel.json grid kind is "packed": FlashAttention's varlen form) take
Kernel.varlen instead: q total_q x H x D and k, v total_k x Hkv x D, every
sequence's rows one after another, sequence s being rows
[cu_seqlens_q[s], cu_seqlens_q[s + 1]) of q and O and
[cu_seqlens_k[s], cu_seqlens_k[s + 1]) of k and v (int32 CUDA vectors of
one entry per sequence plus one), each sequence its own problem with its
own causal corner; flashc.varlen_attention compiles one on demand.

Layouts. flashc's kernels read q, k and v (and write O) through 4-D TMA
tensor maps over [B, H, N, D] with the tensor's own strides, and the runtime
(lib/Runtime/ArgValidation.cpp, docs/kernel-metadata.md) accepts exactly
the strides such a map can express:

  - stride 1 along D;
  - a 16-byte aligned data pointer; the batch, head and sequence strides
    multiples of 16 bytes, non-negative and below 2^40 bytes.

So a contiguous tensor, a B x S x H x D tensor viewed as B x H x S x D
(x.transpose(1, 2), what transformers passes), a range of its batches,
heads or rows, heads padded apart and rows spaced apart (q = qkv[..., :D]
of a B x H x N x 3D tensor) are all taken as they are. O is returned in a
new contiguous tensor, LSE (float32, B x H x Nq) likewise. A caller's out=
follows q's rules where the kernel stores O by TMA (tma_store_o, the
default) and must be contiguous where it does not (tma_store_o = false, as
in the shipped D = 64 kernels); a caller's lse= must be contiguous.

Errors. A refused argument raises flashc.FlashcError (.status 4,
FLASHRT_ERROR_INVALID_ARGUMENT) before anything is launched, its message
naming each offending argument and rule, one per line, e.g. "q strides
(51200, 12800, 128, 2): the last dimension must be contiguous (stride 1)". Every
other error of the runtime is raised as FlashcError too, with the runtime's
message. (Other kernels' kernel.json may ask for other layouts; the runtime
checks each against its own.)

Gradients. flashc.attention is differentiable: loss.backward() runs the
variant's backward kernels (compiled on first use like the forward's;
deterministic=True adds dQ's partials in a fixed order, so that gradients
are bitwise the same run to run). A kernel loaded by hand (flashc.load) and
packed sequences on CUDA are forward only: where q, k or v requires grad
their O (and LSE) carry a backward that raises FlashcError, so that
loss.backward() fails instead of silently dropping attention's gradients.
"""

import ctypes
import ctypes.util
import operator
import os
import threading

__all__ = ["attention", "varlen_attention", "attention_with_kvcache",
           "scaled_dot_product_attention",
           "load", "Kernel", "FlashcError", "runtime_library",
           "document_key_ranges", "prefix_lm_key_ranges"]

_DTYPE_BF16, _DTYPE_F16, _DTYPE_F32, _DTYPE_I32 = 0, 1, 2, 3


class FlashcError(RuntimeError):
    """A failure reported by libflashrt; .status is the flashrt_status code
    (None for the missing backward pass, which no runtime call reports)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("sizes", ctypes.c_int64 * 4),
                ("strides", ctypes.c_int64 * 4), ("device", ctypes.c_int32)]


class _LaunchArgs(ctypes.Structure):
    _fields_ = [("q", ctypes.POINTER(_Tensor)), ("k", ctypes.POINTER(_Tensor)),
                ("v", ctypes.POINTER(_Tensor)), ("o", ctypes.POINTER(_Tensor)),
                ("lse", ctypes.POINTER(_Tensor)), ("stream", ctypes.c_void_p)]


class _VarlenArgs(ctypes.Structure):
    _fields_ = [("q", ctypes.POINTER(_Tensor)), ("k", ctypes.POINTER(_Tensor)),
                ("v", ctypes.POINTER(_Tensor)), ("o", ctypes.POINTER(_Tensor)),
                ("lse", ctypes.POINTER(_Tensor)),
                ("cu_seqlens_q", ctypes.POINTER(_Tensor)),
                ("cu_seqlens_k", ctypes.POINTER(_Tensor)),
                ("max_seqlen_q", ctypes.c_int64), ("stream", ctypes.c_void_p)]


class _BackwardArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.POINTER(_Tensor)) for n in
                ("q", "k", "v", "o", "dout", "lse", "dq", "dk", "dv")] + [
        ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_uint64),
        ("stream", ctypes.c_void_p)]


class _DecodeArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.POINTER(_Tensor)) for n in
                ("q", "k_cache", "v_cache", "o", "lse", "page_table",
                 "cache_seqlens")] + [
        ("num_splits", ctypes.c_int32), ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_uint64), ("stream", ctypes.c_void_p)]


class _Info(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("head_dim", ctypes.c_int32),
                ("causal", ctypes.c_int32), ("has_lse", ctypes.c_int32),
                ("scale", ctypes.c_double), ("device", ctypes.c_int32),
                ("kernel", ctypes.c_char * 128), ("arch", ctypes.c_char * 16),
                ("backward", ctypes.c_int32), ("deterministic", ctypes.c_int32),
                ("num_captures", ctypes.c_int32), ("decode", ctypes.c_int32)]


class _Captures(ctypes.Structure):
    _fields_ = [("tensors", ctypes.POINTER(_Tensor)), ("count", ctypes.c_int32)]


# flashrt.h's FLASHRT_ABI_VERSION, which the structs above follow.
_ABI_VERSION = 5

_lib = None
_lib_lock = threading.Lock()


def _candidates():
    env = os.environ.get("FLASHC_RUNTIME_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libflashrt.so")
    root = os.path.dirname(os.path.dirname(here))
    for build in ("build", "build-runtime", "build-release"):
        yield os.path.join(root, build, "lib", "libflashrt.so")
    found = ctypes.util.find_library("flashrt")
    if found:
        yield found


def runtime_library():
    """Loads libflashrt.so once and declares its functions."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if not os.path.sep in path or os.path.exists(path):
                try:
                    lib = ctypes.CDLL(path)
                    break
                except OSError as e:
                    tried.append(f"{path}: {e}")
            else:
                tried.append(f"{path}: not found")
        else:
            raise FlashcError(6, "cannot find libflashrt.so (set "
                              "FLASHC_RUNTIME_LIB); tried:\n  " +
                              "\n  ".join(tried))
        P = ctypes.POINTER
        lib.flashrt_last_error.restype = ctypes.c_char_p
        lib.flashrt_abi_version.restype = ctypes.c_int
        lib.flashrt_kernel_load.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                            P(ctypes.c_void_p)]
        lib.flashrt_kernel_destroy.argtypes = [ctypes.c_void_p]
        lib.flashrt_kernel_destroy.restype = None
        lib.flashrt_kernel_get_info.argtypes = [ctypes.c_void_p, P(_Info)]
        lib.flashrt_launch.argtypes = [ctypes.c_void_p] + [P(_Tensor)] * 5 + [
            ctypes.c_void_p]
        lib.flashrt_launch_packed.argtypes = [ctypes.c_void_p,
                                              ctypes.c_void_p]
        lib.flashrt_launch_varlen.argtypes = [ctypes.c_void_p,
                                              P(_VarlenArgs)]
        lib.flashrt_validate_varlen.argtypes = [ctypes.c_char_p,
                                                P(_VarlenArgs)]
        lib.flashrt_device_count.argtypes = [P(ctypes.c_int)]
        lib.flashrt_launch_backward.argtypes = [ctypes.c_void_p,
                                                P(_BackwardArgs)]
        lib.flashrt_backward_workspace_bytes.argtypes = [
            ctypes.c_void_p, P(_BackwardArgs), P(ctypes.c_uint64)]
        lib.flashrt_launch_with_captures.argtypes = [
            ctypes.c_void_p, P(_LaunchArgs), P(_Captures)]
        lib.flashrt_launch_backward_with_captures.argtypes = [
            ctypes.c_void_p, P(_BackwardArgs), P(_Captures)]
        lib.flashrt_backward_workspace_bytes_with_captures.argtypes = [
            ctypes.c_void_p, P(_BackwardArgs), P(_Captures),
            P(ctypes.c_uint64)]
        lib.flashrt_launch_decode.argtypes = [ctypes.c_void_p, P(_DecodeArgs),
                                              P(_Captures)]
        lib.flashrt_decode_workspace_bytes.argtypes = [
            ctypes.c_void_p, P(_DecodeArgs), P(ctypes.c_uint64)]
        lib.flashrt_decode_num_splits.argtypes = [
            ctypes.c_void_p, P(_DecodeArgs), P(ctypes.c_int32)]
        lib.flashrt_validate_decode.argtypes = [ctypes.c_char_p,
                                                P(_DecodeArgs), P(_Captures)]
        if lib.flashrt_abi_version() != _ABI_VERSION:
            raise FlashcError(6, f"libflashrt ABI {lib.flashrt_abi_version()}"
                              f" is not the {_ABI_VERSION} this wrapper "
                              "speaks")
        _lib = lib
        return lib


def _check(status):
    if status != 0:
        msg = runtime_library().flashrt_last_error().decode(errors="replace")
        raise FlashcError(status, msg)


_I64x4 = ctypes.c_int64 * 4
_dtype_codes = None


def _integer(name, value):
    """operator.index(value), or FlashcError naming the argument `name`."""
    try:
        return operator.index(value)
    except TypeError:
        raise FlashcError(4, f"{name} is a {type(value).__name__}, not an "
                          "integer") from None


def _describe(name, t):
    global _dtype_codes
    import torch
    if not isinstance(t, torch.Tensor):
        raise FlashcError(4, f"{name} is a {type(t).__name__}, not a tensor")
    device = t.device
    if device.type != "cuda":
        raise FlashcError(4, f"{name} is on {device}; flashc kernels take "
                          "CUDA tensors")
    if _dtype_codes is None:
        _dtype_codes = {torch.bfloat16: _DTYPE_BF16, torch.float16: _DTYPE_F16,
                        torch.float32: _DTYPE_F32, torch.int32: _DTYPE_I32}
    code = _dtype_codes.get(t.dtype)
    if code is None:
        raise FlashcError(4, f"{name} has dtype {t.dtype}; flashc kernels "
                          "take bfloat16/float16 (float32 for lse, int32 for "
                          "cu_seqlens, page tables and cache lengths)")
    rank = t.dim()
    if rank > 4:
        raise FlashcError(4, f"{name} has {rank} dimensions")
    # One constructor call: filling the fields one by one costs about half
    # as much again per call (ctypes).
    return _Tensor(t.data_ptr(), code, rank, _I64x4(*t.shape),
                   _I64x4(*t.stride()), device.index)


def _capture_descriptors(captures):
    """The runtime's flashrt_captures of a sequence of tensors (the array
    it points to is kept alive by the struct's _keep)."""
    import torch
    if isinstance(captures, torch.Tensor):
        captures = (captures,)
    descs = [_describe(f"capture {i}", t) for i, t in enumerate(captures)]
    array = (_Tensor * max(len(descs), 1))(*descs)
    held = _Captures(ctypes.cast(array, ctypes.POINTER(_Tensor)), len(descs))
    held._keep = array
    return held


def _current_stream_of(index):
    """A function giving the raw handle of torch's current stream on device
    `index`: torch's own accessor of it where this torch has one (what
    Triton's launcher calls), else torch.cuda.current_stream."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return lambda: raw(index)
    return lambda: torch.cuda.current_stream(index).cuda_stream


def _metadata_path(path):
    """kernel.json of kernel.cubin / kernel.ptx (or the .json itself)."""
    root, ext = os.path.splitext(path)
    return path if ext == ".json" else root + ".json"


def _grid_kind(path):
    """The "grid" kind kernel.json names ("packed" for packed sequences), or
    None where it cannot be read (the runtime has the last word)."""
    import json
    try:
        with open(_metadata_path(path)) as f:
            grid = json.load(f).get("grid")
        return grid.get("kind") if isinstance(grid, dict) else None
    except (OSError, ValueError):
        return None


def _sequence_view(name, t, rows_name):
    """A total x heads x D tensor as the runtime's [1, H, total, D] view."""
    import torch
    if not isinstance(t, torch.Tensor):
        raise FlashcError(4, f"{name} is a {type(t).__name__}, not a tensor")
    if t.dim() != 3:
        raise FlashcError(4, f"{name} has {t.dim()} dimensions; packed "
                          f"sequences take {rows_name} x heads x head_dim")
    return t.transpose(0, 1).unsqueeze(0)


class Kernel:
    """A flashc kernel, loaded lazily on each device it is called on.

    .packed: whether it takes packed sequences (kernel.json's grid kind
    "packed"): call .varlen(...) on it rather than the kernel itself.
    .decode_pass: whether it is a decoding pass (kernel.json's "pass":
    "decode"): call .decode(...) on it."""

    packed = False
    decode_pass = False

    def __init__(self, path, device=None):
        self.path = os.fspath(path)
        self._handles = {}
        self._lock = threading.Lock()
        lib = runtime_library()
        if device is None:
            import torch
            device = torch.cuda.current_device()
        handle = self._handle(device)
        info = _Info()
        _check(lib.flashrt_kernel_get_info(handle, ctypes.byref(info)))
        self.name = info.kernel.decode()
        self.arch = info.arch.decode()
        self.head_dim = info.head_dim
        self.causal = bool(info.causal)
        self.has_lse = bool(info.has_lse)
        self.scale = info.scale
        self._dtype_code = info.dtype
        self.packed = _grid_kind(self.path) == "packed"
        self.backward_pass = bool(info.backward)
        self.deterministic = bool(info.deterministic)
        self.num_captures = info.num_captures
        self.decode_pass = bool(info.decode)

    @property
    def dtype(self):
        import torch
        return {_DTYPE_BF16: torch.bfloat16, _DTYPE_F16: torch.float16}[
            self._dtype_code]

    def _handle(self, device):
        with self._lock:
            h = self._handles.get(device)
            if h is None:
                h = ctypes.c_void_p()
                _check(runtime_library().flashrt_kernel_load(
                    self.path.encode(), device, ctypes.byref(h)))
                self._handles[device] = h
            return h

    def __call__(self, q, k, v, out=None, lse=None, captures=()):
        """Returns O (B x H x Nq x D), or (O, LSE) if the kernel writes LSE.

        `captures` are the tensors of the kernel source's arguments after
        its tensors (kernel.json's "captures": the score and mask mods'
        memrefs, the attention sinks), in that order: contiguous CUDA
        tensors of the source's dtype and rank (the sinks float32 [H]).

        Forward only (flashc.attention is the differentiable call). Where
        q, k or v requires grad (and grad mode is on), the outputs come
        from a torch.autograd.Function whose backward raises FlashcError
        ("flashc has no backward pass for this call"), so that a
        loss.backward() through them fails instead of silently dropping
        attention's gradients; the forward runs as usual. Otherwise no
        autograd node is made.

        Layouts (the module docstring has the details): q, k, v B x H x N x D
        (k and v may have fewer heads: grouped-query attention) with stride
        1 along D, a 16-byte aligned pointer and strides multiples of 16
        bytes, so a B x S x H x D tensor's transpose(1, 2) is taken as it
        is; anything else raises FlashcError naming the argument. O (and
        LSE) are new contiguous tensors unless out= (lse=) is given.
        """
        import torch
        def launch(q, k, v, out, lse):
            return self._launch(q, k, v, out, lse, captures)
        if torch.is_grad_enabled() and any(
                getattr(t, "requires_grad", False) for t in (q, k, v)):
            return _forward_only().apply(launch, q, k, v, out, lse)
        return launch(q, k, v, out, lse)

    def varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
               out=None, lse=None):
        """Packed sequences on a kernel compiled from a packed program:
        returns O (total_q x H x D), or (O, LSE) if the kernel writes LSE
        (float32 H x total_q, natural log; -inf on a row that sees no key,
        whose O is 0).

        q is total_q x H x D and k, v total_k x Hkv x D (H a multiple of
        Hkv), every sequence's rows one after another: sequence s is rows
        [cu_seqlens_q[s], cu_seqlens_q[s + 1]) of q and O and rows
        [cu_seqlens_k[s], cu_seqlens_k[s + 1]) of k and v, its own problem
        (causal: bottom-right aligned in it); a sequence of no query rows
        produces nothing, and rows outside every sequence are not written.
        cu_seqlens_q and cu_seqlens_k are int32 CUDA vectors of one entry
        per sequence plus one; max_seqlen_q (an int) is at least the
        longest query sequence (it sizes the grid: rows past it are not
        computed). The runtime checks every argument and raises
        FlashcError naming what it refuses (layouts as __call__'s: stride
        1 along D, 16-byte strides), but it does not read cu_seqlens (on
        the device): prefix sums that are not non-decreasing or run past
        the tensors give wrong rows (the kernel clamps them into the
        tensors; nothing outside is read or written).

        O is a new contiguous total_q x H x D tensor unless out= (any
        strides with the last dimension contiguous) is given; lse= is a
        contiguous float32 H x total_q tensor. Forward only, as __call__:
        where q, k or v requires grad the outputs carry a backward that
        raises FlashcError.
        """
        import torch

        def launch(q, k, v, out, lse):
            return self._launch_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                       max_seqlen_q, out, lse)
        if torch.is_grad_enabled() and any(
                getattr(t, "requires_grad", False) for t in (q, k, v)):
            return _forward_only().apply(launch, q, k, v, out, lse)
        return launch(q, k, v, out, lse)

    def _launch_varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k,
                       max_seqlen_q, out, lse):
        """The runtime call of .varlen; (out, lse) or out."""
        import torch
        if not self.packed:
            raise FlashcError(4, f"kernel {self.name} takes no packed "
                              "sequences (its grid is not \"packed\"): call "
                              "it as kernel(q, k, v)")
        max_q = _integer("max_seqlen_q", max_seqlen_q)
        views = [_sequence_view(n, t, rows) for n, t, rows in (
            ("q", q, "total_q"), ("k", k, "total_k"), ("v", v, "total_k"))]
        descs = [_describe(n, t) for n, t in zip("qkv", views)]
        if out is None:
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        descs.append(_describe("o", _sequence_view("out", out, "total_q")))
        if self.has_lse and lse is None:
            lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32,
                              device=q.device)
        if lse is not None:
            if not isinstance(lse, torch.Tensor) or lse.dim() != 2:
                raise FlashcError(4, "lse must be a float32 heads x total_q "
                                  "tensor")
            descs.append(_describe("lse", lse.unsqueeze(0)))
        else:
            descs.append(None)
        cu = [_describe(n, t) for n, t in (("cu_seqlens_q", cu_seqlens_q),
                                           ("cu_seqlens_k", cu_seqlens_k))]
        ptrs = [ctypes.pointer(d) if d is not None else None
                for d in descs + cu]
        args = _VarlenArgs(*ptrs, max_q,
                           torch.cuda.current_stream(q.device).cuda_stream)
        _check(runtime_library().flashrt_launch_varlen(
            self._handle(q.device.index), ctypes.byref(args)))
        return (out, lse) if self.has_lse else out

    def _launch(self, q, k, v, out, lse, captures=()):
        """The runtime call; (out, lse) or out as __call__ returns."""
        import torch
        if self.packed:
            raise FlashcError(4, f"kernel {self.name} takes packed sequences "
                              "(its grid is \"packed\"): call its .varlen("
                              "q, k, v, cu_seqlens_q, cu_seqlens_k, "
                              "max_seqlen_q)")
        if self.decode_pass:
            raise FlashcError(4, f"kernel {self.name} is a decoding pass: "
                              "call its .decode(q, k_cache, v_cache, "
                              "cache_seqlens, page_table)")
        descs = [_describe(n, t) for n, t in (("q", q), ("k", k), ("v", v))]
        if out is None:
            # Contiguous, not empty_like(q): a kernel that stores O with
            # plain stores refuses any other layout, even q's.
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        descs.append(_describe("o", out))
        if self.has_lse and lse is None:
            lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        lse_desc = _describe("lse", lse) if lse is not None else None
        args = _LaunchArgs(*(ctypes.pointer(d) for d in descs))
        if lse_desc is not None:
            args.lse = ctypes.pointer(lse_desc)
        args.stream = torch.cuda.current_stream(q.device).cuda_stream
        # A kernel without captures takes none: the same call.
        held = _capture_descriptors(captures)
        _check(runtime_library().flashrt_launch_with_captures(
            self._handle(q.device.index), ctypes.byref(args),
            ctypes.byref(held)))
        return (out, lse) if self.has_lse else out

    def _prepare(self, q, k, v):
        """A launch for later calls whose q, k and v have these tensors'
        shapes, strides, dtypes and device: run(q, k, v) -> (o, lse or
        None). Their descriptors are built here, once, and a call only sets
        the data pointers, allocates O (and LSE) and launches; the runtime
        still validates every launch (pointers, alignment) as _launch's do.
        Not thread-safe: one thread's calls share the descriptors."""
        import torch
        shape, dtype, device = q.shape, q.dtype, q.device
        lse_shape = shape[:3]
        o = torch.empty(shape, dtype=dtype, device=device)
        descs = [_describe(n, t) for n, t in
                 (("q", q), ("k", k), ("v", v), ("o", o))]
        lse_desc = None
        if self.has_lse:
            lse_desc = _describe("lse", torch.empty(
                lse_shape, dtype=torch.float32, device=device))
        dq, dk, dv, do = descs
        # One struct of every argument: ctypes converts each argument of a
        # call, so one address costs less than seven.
        args = _LaunchArgs(*(ctypes.pointer(d) for d in descs))
        if lse_desc is not None:
            args.lse = ctypes.pointer(lse_desc)
        args_address = ctypes.addressof(args)
        handle = self._handle(device.index)
        launch = runtime_library().flashrt_launch_packed
        stream = _current_stream_of(device.index)
        f32 = torch.float32

        def run(q, k, v):
            # q.new_empty skips torch.empty's argument parsing (3.6 against
            # 4.6 us an allocation on an H100 host; bench/log/2026-12-06.md).
            o = q.new_empty(shape)
            dq.data, dk.data, dv.data = q.data_ptr(), k.data_ptr(), v.data_ptr()
            do.data = o.data_ptr()
            lse = None
            if lse_desc is not None:
                lse = q.new_empty(lse_shape, dtype=f32)
                lse_desc.data = lse.data_ptr()
            args.stream = stream()
            status = launch(handle, args_address)
            if status:
                _check(status)
            return o, lse
        return run

    def backward(self, q, k, v, o, lse, do, dq=None, dk=None, dv=None,
                 captures=()):
        """A backward kernel's gradients: (dq, dk, dv) of attention(q, k,
        v) (the forward this kernel was compiled for: mask, scale) from the
        forward's O and LSE (float32 B x H x Nq, dense) and do, the loss's
        gradient with respect to O. q, o, do and dq are B x H x Nq x D, k,
        v, dk and dv B x Hkv x Nk x D, with any strides along B, H and N
        (stride 1 along D, 16-byte aligned); dq, dk, dv are new contiguous
        tensors unless given. `captures` are the kernel's (as __call__'s;
        with attention sinks: the sinks, then dsinks, float32 [H], which
        it writes). The scratch the three launches share comes from
        torch's allocator on the current stream. Not differentiable
        itself."""
        import torch
        if not self.backward_pass:
            raise FlashcError(4, f"kernel {self.name} is a forward kernel: "
                              "it has no backward launches")
        dq = torch.empty(q.shape, dtype=q.dtype, device=q.device) \
            if dq is None else dq
        dk = torch.empty(k.shape, dtype=k.dtype, device=k.device) \
            if dk is None else dk
        dv = torch.empty(v.shape, dtype=v.dtype, device=v.device) \
            if dv is None else dv
        descs = [_describe(n, t) for n, t in (
            ("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("lse", lse),
            ("dq", dq), ("dk", dk), ("dv", dv))]
        lib = runtime_library()
        handle = self._handle(q.device.index)
        args = _BackwardArgs(*(ctypes.pointer(d) for d in descs))
        held = _capture_descriptors(captures)
        need = ctypes.c_uint64()
        _check(lib.flashrt_backward_workspace_bytes_with_captures(
            handle, ctypes.byref(args), ctypes.byref(held),
            ctypes.byref(need)))
        workspace = torch.empty(need.value, dtype=torch.uint8, device=q.device)
        args.workspace = workspace.data_ptr()
        args.workspace_bytes = need.value
        args.stream = torch.cuda.current_stream(q.device).cuda_stream
        _check(lib.flashrt_launch_backward_with_captures(
            handle, ctypes.byref(args), ctypes.byref(held)))
        return dq, dk, dv

    def _decode_args(self, q, k_cache, v_cache, cache_seqlens, page_table,
                     out, lse, num_splits):
        """(args, out, lse) of a decoding call: the runtime's
        flashrt_decode_args over the kernel's views of the caches (args
        keeps their descriptors alive); out and lse allocated where
        None."""
        import torch
        if not self.decode_pass:
            raise FlashcError(4, f"kernel {self.name} is no decoding kernel "
                              "(kernel.json's \"pass\" is not \"decode\"): "
                              "call it as kernel(q, k, v)")
        splits = _integer("num_splits", num_splits)
        for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
            if not isinstance(t, torch.Tensor):
                raise FlashcError(4, f"{name} is a {type(t).__name__}, not a "
                                  "tensor")
            if t.dim() != 4:
                what = ("batch x heads x seq_q x head_dim" if name == "q" else
                        "num_pages x page_size x kv_heads x head_dim (paged) "
                        "or batch x seq_k x kv_heads x head_dim")
                raise FlashcError(4, f"{name} has {t.dim()} dimensions; "
                                  f"flashc takes {what}")
        # vLLM's pages (num_pages x P x H_kv x D) and flash_attn's contiguous
        # cache (B x Nk x H_kv x D) alike, as the kernel's [., H_kv, ., D]
        # views: no copy.
        views = [("q", q), ("k_cache", k_cache.transpose(1, 2)),
                 ("v_cache", v_cache.transpose(1, 2))]
        if out is None:
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        views.append(("o", out))
        if self.has_lse and lse is None:
            lse = torch.empty(q.shape[:3], dtype=torch.float32,
                              device=q.device)
        views.append(("lse", lse))
        views += [("page_table", page_table),
                  ("cache_seqlens", cache_seqlens)]
        descs = [None if t is None else _describe(n, t) for n, t in views]
        args = _DecodeArgs(*(None if d is None else ctypes.pointer(d)
                             for d in descs))
        args.num_splits = splits
        args._keep = descs
        return args, out, lse

    def _prepare_decode(self, q, k_cache, v_cache, cache_seqlens,
                        page_table, num_splits, captures=()):
        """A decoding launch for later calls whose tensors have these ones'
        shapes, strides, dtypes and devices (and the same num_splits and
        captures' layouts): run(q, k_cache, v_cache, cache_seqlens,
        page_table, captures) -> (o, lse or None), as .decode without out=,
        lse= or workspace=. As _prepare: the descriptors, and the
        workspace's size (through the runtime, which validates the
        arguments here, raising FlashcError as .decode does), are worked out
        once; a call sets the data pointers, allocates O, LSE and the
        workspace on the current stream (so that a CUDA graph capture
        allocates them from its pool) and makes one runtime call, which
        still validates the launch (pointers, devices, alignment). Not
        thread-safe: one thread's calls share the descriptors."""
        import torch
        args, o, lse = self._decode_args(q, k_cache, v_cache, cache_seqlens,
                                         page_table, None, None, num_splits)
        lib = runtime_library()
        handle = self._handle(q.device.index)
        need = ctypes.c_uint64()
        _check(lib.flashrt_decode_workspace_bytes(handle, ctypes.byref(args),
                                                  ctypes.byref(need)))
        need = need.value
        held = _capture_descriptors(captures)
        dq, dk, dv, do, dlse, dtable, dlens = args._keep
        dcaps = [held._keep[i] for i in range(held.count)]
        shape, lse_shape = q.shape, q.shape[:3]
        f32, u8 = torch.float32, torch.uint8
        args_ref, held_ref = ctypes.byref(args), ctypes.byref(held)
        launch = lib.flashrt_launch_decode
        stream = _current_stream_of(q.device.index)

        def run(q, k_cache, v_cache, cache_seqlens, page_table, captures):
            # q.new_empty: torch.empty's argument parsing skipped (_prepare).
            o = q.new_empty(shape)
            dq.data, do.data = q.data_ptr(), o.data_ptr()
            # The caches' transposed views start where the caches do.
            dk.data, dv.data = k_cache.data_ptr(), v_cache.data_ptr()
            lse = None
            if dlse is not None:
                lse = q.new_empty(lse_shape, dtype=f32)
                dlse.data = lse.data_ptr()
            if dtable is not None:
                dtable.data = page_table.data_ptr()
            if dlens is not None:
                dlens.data = cache_seqlens.data_ptr()
            for d, t in zip(dcaps, captures):
                d.data = t.data_ptr()
            # Freed on return: the caching allocator hands it out again
            # only after this stream's launches (or within the capture).
            workspace = q.new_empty((need,), dtype=u8) if need else None
            args.workspace = workspace.data_ptr() if need else None
            args.workspace_bytes = need
            args.stream = stream()
            status = launch(handle, args_ref, held_ref)
            if status:
                _check(status)
            return o, lse
        return run

    def decode_workspace_bytes(self, q, k_cache, v_cache, cache_seqlens=None,
                               page_table=None, num_splits=0):
        """The bytes of workspace .decode needs for these tensors and
        num_splits (0: the runtime's rule); the tensors' contents are not
        read."""
        args, _, _ = self._decode_args(q, k_cache, v_cache, cache_seqlens,
                                       page_table, None, None, num_splits)
        need = ctypes.c_uint64()
        _check(runtime_library().flashrt_decode_workspace_bytes(
            self._handle(q.device.index), ctypes.byref(args),
            ctypes.byref(need)))
        return need.value

    def decode_num_splits(self, q, k_cache, v_cache, cache_seqlens=None,
                          page_table=None, num_splits=0):
        """The splits .decode uses: num_splits where > 0, else the
        runtime's rule for the shapes and the device's SM count."""
        args, _, _ = self._decode_args(q, k_cache, v_cache, cache_seqlens,
                                       page_table, None, None, num_splits)
        n = ctypes.c_int32()
        _check(runtime_library().flashrt_decode_num_splits(
            self._handle(q.device.index), ctypes.byref(args),
            ctypes.byref(n)))
        return n.value

    def decode(self, q, k_cache, v_cache, cache_seqlens=None,
               page_table=None, out=None, lse=None, num_splits=0,
               workspace=None, captures=()):
        """A decoding kernel's step (kernel.json "pass": "decode"): returns
        O (B x H x Sq x D), or (O, LSE) if the kernel writes LSE (float32
        B x H x Sq, natural log).

        q is B x H x Sq x D, the step's Sq new tokens, their keys already
        the cache's last positions. A paged kernel takes vLLM's pages,
        k_cache and v_cache num_pages x P x H_kv x D (P the kernel's page
        size), with page_table (int32 B x max_pages, contiguous: batch b's
        key j is in page page_table[b, j // P]) and cache_seqlens (int32
        [B], contiguous: its keys); a contiguous kernel takes
        flash_attn_with_kvcache's B x Nk x H_kv x D cache, every batch Nk
        keys, and neither (None). H is a multiple of H_kv. The caches are
        passed as the kernel's views of them (a transpose, no copy): any
        strides with D contiguous and 16-byte aligned. The runtime does not
        read page_table or cache_seqlens (on the device): the kernel clamps
        them.

        num_splits (>= 1) splits each row's keys over that many programs,
        whose outputs a second launch combines; 0 lets the runtime choose
        from the shapes and the SM count (decode_num_splits). `workspace`
        (a CUDA tensor of at least decode_workspace_bytes bytes) holds the
        splits' outputs; without one it is allocated here (torch.empty on
        q's device, in the current stream's order). A CUDA graph capturing
        the call should pass one allocated before the capture, so that
        replays reuse it. O and LSE are new contiguous tensors unless out=
        (q's rules) and lse= (contiguous) are given; `captures` as
        __call__'s. Launched on torch's current stream of q's device. Not
        differentiable.
        """
        import torch
        args, out, lse = self._decode_args(q, k_cache, v_cache, cache_seqlens,
                                           page_table, out, lse, num_splits)
        lib = runtime_library()
        handle = self._handle(q.device.index)
        if workspace is None:
            need = ctypes.c_uint64()
            _check(lib.flashrt_decode_workspace_bytes(
                handle, ctypes.byref(args), ctypes.byref(need)))
            workspace = torch.empty(need.value, dtype=torch.uint8,
                                    device=q.device)
        elif not isinstance(workspace, torch.Tensor):
            raise FlashcError(4, f"workspace is a {type(workspace).__name__}"
                              ", not a tensor")
        elif workspace.device != q.device or not workspace.is_contiguous():
            raise FlashcError(4, f"workspace must be a contiguous tensor on "
                              f"q's device {q.device}")
        args.workspace = workspace.data_ptr() or None
        args.workspace_bytes = workspace.numel() * workspace.element_size()
        args.stream = torch.cuda.current_stream(q.device).cuda_stream
        held = _capture_descriptors(captures)
        _check(lib.flashrt_launch_decode(handle, ctypes.byref(args),
                                         ctypes.byref(held)))
        return (out, lse) if self.has_lse else out

    def __repr__(self):
        return (f"flashc.Kernel({self.name!r}, {self.arch}, D={self.head_dim}"
                f", causal={self.causal}, lse={self.has_lse})")

    def __del__(self):
        lib = _lib
        for h in getattr(self, "_handles", {}).values():
            if lib is not None:
                lib.flashrt_kernel_destroy(h)


_NO_BACKWARD = (
    "flashc has no backward pass for this call: the attention output was "
    "computed from q, k or v that require grad by a kernel loaded by hand "
    "(flashc.load) or over packed sequences, whose gradients flashc does not "
    "compute; use flashc.attention (differentiable), detach q, k, v (or run "
    "under torch.no_grad()) for inference, or use "
    "torch.nn.functional.scaled_dot_product_attention")

_forward_only_class = None


def _forward_only():
    """The torch.autograd.Function __call__ (and .varlen, and
    varlen_attention on the CPU) uses where an input needs grad: its
    forward is the launch, its backward raises (built on first use, so
    that importing flashc does not import torch)."""
    global _forward_only_class
    if _forward_only_class is None:
        import torch

        class FlashcAttention(torch.autograd.Function):
            @staticmethod
            def forward(ctx, launch, q, k, v, out, lse):
                # launch(q, k, v, out, lse): a kernel's _launch, or a packed
                # launch with its cu_seqlens bound.
                res = launch(q, k, v, out, lse)
                # Caller-given buffers are written in place: they become this
                # node's outputs (as an in-place op's result would).
                given = [t for t in (out, lse) if t is not None]
                if given:
                    ctx.mark_dirty(*given)
                return res

            @staticmethod
            def backward(ctx, *grads):
                raise FlashcError(None, _NO_BACKWARD)

        _forward_only_class = FlashcAttention
    return _forward_only_class


def load(path, device=None):
    """Loads kernel.cubin / kernel.ptx (kernel.json beside it) or kernel.json."""
    return Kernel(path, device)


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              out=None, deterministic=False, softcap=None, window=None,
              chunk_size=None, alibi_slopes=None, sinks=None,
              document_ids=None, prefix_lengths=None):
    """Attention on CUDA or CPU tensors, compiled on first use and cached.

    q is B x H x Nq x D, k and v B x Hkv x Nk x D (Nq may differ from Nk;
    H a multiple of Hkv: grouped-query attention, query head h reading K/V
    head h / (H / Hkv), without copies),
    bfloat16 or float16, D 64, 128 or 256, laid out as the module docstring
    says. Returns O (B x H x Nq x D, q's dtype), or (O, LSE) with
    return_lse (LSE: float32 B x H x Nq, natural log). `scale` defaults to
    1/sqrt(D). `causal` is aligned to the bottom-right corner when Nq != Nk
    (FlashAttention 2.1+; SDPA's is_causal aligns to the top-left): a row
    that sees no key gets O = 0 and LSE = -inf. `out` receives O.
    `softcap` maps each scaled logit s to softcap * tanh(s / softcap)
    (Gemma 2's logit soft-capping); `window` hides from each query the keys
    more than that many behind it (kv_idx + window < q_idx: a sliding
    window, FlashAttention's window_size=(window, 0) with causal), whose
    key tiles the kernel skips; `chunk_size` (an int >= 1) lets each query
    see only the keys of its own chunk of that many positions (q_idx //
    chunk_size == kv_idx // chunk_size, both counted from the top-left:
    chunked local attention, Llama 4's attention_chunk_size; with causal
    too where causal=True, and within the window where both are given),
    the key tiles outside a tile's chunks skipped. They are score and mask
    mods of the dialect (kernels/attention_softcap.mlir,
    attention_sliding_window.mlir, attention_chunked.mlir).
    Their gradients (autograd) come from the backward the compiler derives
    from the same regions (the cap's derivative by the chain rule), on CUDA
    and CPU tensors alike.

    Four more take tensors on q's device, which reach the kernel as its
    captures (kernels/attention_alibi.mlir, attention_sink.mlir,
    attention_document.mlir, attention_prefix_lm.mlir):
    `alibi_slopes` (float32 [H]) adds slopes[h] * (kv_idx - q_idx) to each
    scaled logit of head h (ALiBi; the distance counted from the top-left,
    as the kernel's score_mod writes it; not with softcap); `sinks`
    (float32 [H]) joins one learned logit per head to every row's softmax
    denominator (gpt-oss's attention sinks: a row that sees no key gets O =
    0 and LSE = the sink), and has a gradient (sinks.grad);
    `document_ids` (int32 [B, N], seq_q == seq_k == N) lets query i see
    key j only where ids[b, i] == ids[b, j] (with causal too where
    causal=True); `prefix_lengths` (int32 [B]) is the prefix-LM mask: every
    query sees the keys below prefix[b] and, past them, those up to itself
    (top-left aligned; with causal=False, the mask being causal itself;
    negative lengths count as 0). The last two build their block mask
    (flashc.masks, rows of 128) on every call, so the GPU kernel skips the
    key tiles no row of a block sees; neither combines with the other,
    with window or with chunk_size. The slopes, ids and lengths get no
    gradient.

    The variant (dtype, D, causal, scale, softcap, window, chunk_size, and
    which of the four tensors are given) and the config
    (a tuning database's entry for this GPU and shape bucket, else the
    shipped kernel's) pick a kernel; the first call compiles it by running the
    flashc binary (FLASHC_COMPILER) into the cache (FLASHC_CACHE_DIR,
    default ~/.cache/flashc), or takes it from a prebuilt library
    (FLASHC_LIBRARY; python -m flashc build-library). Later calls, in this
    process or another, load it from there.

    On CPU tensors the same call compiles the CPU path of the same tiled
    program (flashc --target=cpu: a host shared library, cached the same
    way, FLASHC_LIBRARY aside) and runs it: slow, single-threaded loops for
    tests and machines without a GPU (flashc.cpu; it also takes numpy
    arrays without torch). Any layout is taken there (inputs are copied to
    contiguous ones where they are not).

    The call is the custom op torch.ops.flashc.attention where
    torch.compile traces it or an input requires grad, and a direct launch
    otherwise. Its gradients (loss.backward()) come from the variant's
    backward kernels (torch.ops.flashc.attention_backward; on CPU tensors
    the CPU path's), compiled or found the same way; `deterministic` makes
    them bitwise reproducible (dQ's partials added in key order). A loss
    through the returned LSE has no gradient flashc computes: that raises
    FlashcError.
    """
    global _ops
    if _ops is None:
        from . import ops as _ops
    return _ops.attention(q, k, v, causal=causal, scale=scale,
                          return_lse=return_lse, out=out,
                          deterministic=deterministic, softcap=softcap,
                          window=window, chunk_size=chunk_size,
                          alibi_slopes=alibi_slopes,
                          sinks=sinks, document_ids=document_ids,
                          prefix_lengths=prefix_lengths)


_ops = None  # flashc.ops, imported (with torch) on the first attention call


def document_key_ranges(document, rows=128, *, causal=True, seq_q=None,
                        seq_k=None, full=False):
    """The key_ranges table (block mask) of document masking, for
    kernels/attention_document.mlir: see flashc.masks.document_key_ranges."""
    from .masks import document_key_ranges as build
    return build(document, rows, causal=causal, seq_q=seq_q, seq_k=seq_k,
                 full=full)


def prefix_lm_key_ranges(prefix, seq_q, rows=128, *, seq_k=None, full=True):
    """The key_ranges table (block mask) of the prefix-LM mask, for
    kernels/attention_prefix_lm.mlir: see flashc.masks.prefix_lm_key_ranges."""
    from .masks import prefix_lm_key_ranges as build
    return build(prefix, seq_q, rows, seq_k=seq_k, full=full)


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens, page_table, *,
                           causal=False, scale=None, num_splits=None,
                           pack_gqa=None, softcap=None, window=None,
                           chunk_size=None, sinks=None, out=None,
                           return_lse=False):
    """A decoding step over a K/V cache (docs/decoding.md), as
    FlashAttention's flash_attn_with_kvcache and vLLM take it.

    q is B x H x Sq x D (the step's Sq new tokens, their keys already in
    the cache). A paged cache: k_cache and v_cache vLLM's pages,
    num_pages x page_size x Hkv x D (page_size a multiple of 16 up to
    1024); page_table int32 B x max_pages names each batch's pages in
    order, cache_seqlens int32 [B] its cached keys. On CUDA tensors
    page_table may be None: then k_cache and v_cache are
    flash_attn_with_kvcache's contiguous B x Nk x Hkv x D cache, every
    batch's Nk keys read, and cache_seqlens is None or all Nk (checked
    where it is a CPU tensor; on CUDA it is not read, and other lengths
    are not honoured: pass a page_table for those). `causal` aligns the
    mask to the cache's end, and softcap, window and chunk_size count from
    each query's position there; `sinks` as attention()'s. num_splits
    splits each row's keys over that many programs and combines their
    outputs by their LSEs (split-KV): on CPU tensors the default is 1, on
    CUDA None lets the runtime choose from the shapes and the GPU's SMs
    (FlashAttention's efficiency-of-waves rule). pack_gqa computes a K/V
    head's query heads as one tile (default: where there are several).
    Returns O, or (O, LSE) with return_lse (float32 B x H x Sq).

    CUDA tensors run the variant's GPU decoding kernel
    ("<dtype>-d<D>...[-paged<P>]-splits[-packgqa]", compiled on first use
    or taken from FLASHC_LIBRARY as attention()'s; Kernel.decode), the
    caches read through views of them, no copies; its scratch comes from
    torch's allocator on the current stream. Where the GPU compiler does
    not take a variant yet (small pages, some mods with decoding) its
    message is raised as FlashcError. Forward only. CPU tensors (and
    numpy arrays, flashc.cpu.attention_with_kvcache) run the CPU path,
    which takes a paged cache."""
    global _ops
    if _ops is None:
        from . import ops as _ops
    return _ops.attention_with_kvcache(
        q, k_cache, v_cache, cache_seqlens, page_table, causal=causal,
        scale=scale, num_splits=num_splits, pack_gqa=pack_gqa,
        softcap=softcap, window=window, chunk_size=chunk_size, sinks=sinks,
        out=out, return_lse=return_lse)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k=None, *, causal=False, scale=None,
                     return_lse=False, out=None):
    """Attention over packed sequences, as FlashAttention's
    flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k,
    max_seqlen_q, max_seqlen_k, softmax_scale=, causal=,
    return_attn_probs=) takes them; compiled on first use and cached.

    q is total_q x H x D and k, v total_k x Hkv x D (H a multiple of Hkv:
    grouped-query attention), bfloat16 or float16, D 64, 128 or 256: every
    sequence's rows one after another. Sequence s is rows
    [cu_seqlens_q[s], cu_seqlens_q[s + 1]) of q (and of O) and rows
    [cu_seqlens_k[s], cu_seqlens_k[s + 1]) of k and v; cu_seqlens_q and
    cu_seqlens_k are int32 vectors on q's device, one entry per sequence
    plus one. Each sequence is its own problem: `causal` is aligned to its
    own bottom-right corner (FlashAttention 2.1+), a row that sees no key
    (causal with Lq > Lk, or Lk = 0) gets O = 0 and LSE = -inf, and a
    sequence of no query rows produces nothing; rows of q outside every
    sequence are not written. max_seqlen_q must be at least the longest
    query sequence (on CUDA it sizes the grid; rows past it are not
    computed); max_seqlen_k is taken for flash_attn's signature and not
    needed. `scale` defaults to 1/sqrt(D). Returns O (total_q x H x D, q's
    dtype; into `out` where given), or (O, LSE) with return_lse (float32
    H x total_q, natural log), as flash_attn's softmax_lse.

    On CUDA tensors the variant's packed kernel runs (Kernel.varlen; the
    variant "<dtype>-d<D>[-causal][-scale<x>]-varlen", compiled by the
    flashc binary into the cache, or from FLASHC_LIBRARY, as
    flashc.attention's; it takes the dense variant's default config). The
    runtime checks every argument but does not read cu_seqlens (on the
    device): prefix sums that are not non-decreasing or run past the
    tensors give wrong rows, never an access outside them.

    On CPU tensors flashc's CPU target does not take packed programs, so
    each sequence runs flashc's own CPU path of the dense program
    (flashc.attention on its rows, viewed 1 x H x L x D), written into the
    packed O and LSE; there cu_seqlens (int32 CPU vectors) are checked
    first: rank 1, equal lengths, non-decreasing, within q's and k's rows,
    and max_seqlen_q from the longest query sequence to q's rows (the
    runtime's bounds on CUDA), a FlashcError naming the argument otherwise.

    Forward only: where q, k or v requires grad, O and LSE carry a backward
    that raises FlashcError (no backward pass for packed sequences yet).
    """
    global _ops
    if _ops is None:
        from . import ops as _ops
    return _ops.varlen_attention(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        causal=causal, scale=scale, return_lse=return_lse, out=out)


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention's signature over
    flashc.attention, for code written against SDPA. What flashc cannot do
    as SDPA would (an attn_mask, dropout, grouped heads, is_causal where
    seq_q != seq_k, whose mask SDPA aligns to the top-left) raises
    FlashcError naming it, rather than computing something else."""
    from . import ops
    return ops.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

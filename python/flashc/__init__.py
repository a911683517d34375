"""flashc: run flashc attention kernels on PyTorch tensors.

flashc.attention(q, k, v, causal=..., scale=...) compiles the kernel it
needs on first use and caches it (see its docstring, cache.py, library.py
and README's "From PyTorch"). Below it, a ctypes wrapper over libflashrt's
C API (include/flashc/Runtime/flashrt.h) loads and launches a given kernel;
no build step. Usage::

    import flashc
    attn = flashc.load("kernel.cubin")       # kernel.json beside it
    o = attn(q, k, v)                        # or (o, lse) if the kernel has LSE

q is B x H x Nq x D, k and v are B x Hkv x Nk x D (same B and D; H a
multiple of Hkv: grouped-query attention, query head h reading K/V head
h / (H / Hkv); B, H, N at least 1), CUDA tensors on q's device, of the kernel's dtype (bfloat16 or
float16) and head dim D. The launch goes on torch's current stream of q's
device. libflashrt.so is found through $FLASHC_RUNTIME_LIB, next to this
package, or in the usual build directories.

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

Forward only: flashc has no backward pass yet. Where q, k or v requires grad
(and grad mode is on) the forward runs as usual, but O (and LSE) carry a
backward that raises FlashcError, so that loss.backward() fails instead of
silently dropping attention's gradients. Detach q, k, v for inference, or
train with torch.nn.functional.scaled_dot_product_attention.
"""

import ctypes
import ctypes.util
import os
import threading

__all__ = ["attention", "scaled_dot_product_attention", "load", "Kernel", "FlashcError", "runtime_library"]

_DTYPE_BF16, _DTYPE_F16, _DTYPE_F32 = 0, 1, 2


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


class _Info(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("head_dim", ctypes.c_int32),
                ("causal", ctypes.c_int32), ("has_lse", ctypes.c_int32),
                ("scale", ctypes.c_double), ("device", ctypes.c_int32),
                ("kernel", ctypes.c_char * 128), ("arch", ctypes.c_char * 16)]


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
        lib.flashrt_device_count.argtypes = [P(ctypes.c_int)]
        if lib.flashrt_abi_version() != 1:
            raise FlashcError(6, f"libflashrt ABI {lib.flashrt_abi_version()}"
                              " is not the 1 this wrapper speaks")
        _lib = lib
        return lib


def _check(status):
    if status != 0:
        msg = runtime_library().flashrt_last_error().decode(errors="replace")
        raise FlashcError(status, msg)


_I64x4 = ctypes.c_int64 * 4
_dtype_codes = None


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
                        torch.float32: _DTYPE_F32}
    code = _dtype_codes.get(t.dtype)
    if code is None:
        raise FlashcError(4, f"{name} has dtype {t.dtype}; flashc kernels "
                          "take bfloat16/float16 (float32 for lse)")
    rank = t.dim()
    if rank > 4:
        raise FlashcError(4, f"{name} has {rank} dimensions")
    # One constructor call: filling the fields one by one costs about half
    # as much again per call (ctypes).
    return _Tensor(t.data_ptr(), code, rank, _I64x4(*t.shape),
                   _I64x4(*t.stride()), device.index)


def _current_stream_of(index):
    """A function giving the raw handle of torch's current stream on device
    `index`: torch's own accessor of it where this torch has one (what
    Triton's launcher calls), else torch.cuda.current_stream."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return lambda: raw(index)
    return lambda: torch.cuda.current_stream(index).cuda_stream


class Kernel:
    """A flashc kernel, loaded lazily on each device it is called on."""

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

    def __call__(self, q, k, v, out=None, lse=None):
        """Returns O (B x H x Nq x D), or (O, LSE) if the kernel writes LSE.

        Forward only. Where q, k or v requires grad (and grad mode is on),
        the outputs come from a torch.autograd.Function whose backward
        raises FlashcError ("flashc has no backward pass yet"), so that a
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
        if torch.is_grad_enabled() and any(
                getattr(t, "requires_grad", False) for t in (q, k, v)):
            return _forward_only().apply(self, q, k, v, out, lse)
        return self._launch(q, k, v, out, lse)

    def _launch(self, q, k, v, out, lse):
        """The runtime call; (out, lse) or out as __call__ returns."""
        import torch
        descs = [_describe(n, t) for n, t in (("q", q), ("k", k), ("v", v))]
        if out is None:
            # Contiguous, not empty_like(q): a kernel that stores O with
            # plain stores refuses any other layout, even q's.
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        descs.append(_describe("o", out))
        if self.has_lse and lse is None:
            lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        lse_desc = _describe("lse", lse) if lse is not None else None
        handle = self._handle(q.device.index)
        stream = torch.cuda.current_stream(q.device).cuda_stream
        _check(runtime_library().flashrt_launch(
            handle, *[ctypes.byref(d) for d in descs],
            ctypes.byref(lse_desc) if lse_desc is not None else None,
            ctypes.c_void_p(stream)))
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

    def __repr__(self):
        return (f"flashc.Kernel({self.name!r}, {self.arch}, D={self.head_dim}"
                f", causal={self.causal}, lse={self.has_lse})")

    def __del__(self):
        lib = _lib
        for h in getattr(self, "_handles", {}).values():
            if lib is not None:
                lib.flashrt_kernel_destroy(h)


_NO_BACKWARD = (
    "flashc has no backward pass yet: the attention output was computed from "
    "q, k or v that require grad, and flashc cannot compute their gradients; "
    "detach q, k, v (or run under torch.no_grad()) for inference, or use "
    "torch.nn.functional.scaled_dot_product_attention for training")

_forward_only_class = None


def _forward_only():
    """The torch.autograd.Function __call__ uses where an input needs grad:
    its forward is the launch, its backward raises (built on first use, so
    that importing flashc does not import torch)."""
    global _forward_only_class
    if _forward_only_class is None:
        import torch

        class FlashcAttention(torch.autograd.Function):
            @staticmethod
            def forward(ctx, kernel, q, k, v, out, lse):
                res = kernel._launch(q, k, v, out, lse)
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
              out=None):
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

    The variant (dtype, D, causal, scale) and the config (a tuning
    database's entry for this GPU and shape bucket, else the shipped
    kernel's) pick a kernel; the first call compiles it by running the
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
    torch.compile traces it or an input requires grad (whose backward
    raises FlashcError: no backward pass yet), and a direct launch
    otherwise.
    """
    global _ops
    if _ops is None:
        from . import ops as _ops
    return _ops.attention(q, k, v, causal=causal, scale=scale,
                          return_lse=return_lse, out=out)


_ops = None  # flashc.ops, imported (with torch) on the first attention call


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

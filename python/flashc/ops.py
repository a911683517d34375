"""flashc.attention and the torch.library ops behind it (imports torch);
flashc.varlen_attention (packed sequences).

torch.ops.flashc.attention(q, k, v, causal, scale, deterministic, softcap,
window, chunk_size, alibi_slopes, sinks, document_ids, prefix_lengths) ->
(o, lse) is a
custom op with a fake (meta) implementation, so torch.compile traces
through it without a graph break; torch.ops.flashc.attention_out writes a
caller's out. Its autograd formula is the custom op
torch.ops.flashc.attention_backward(grad_o, q, k, v, o, lse, causal, scale,
deterministic, softcap, window, chunk_size, alibi_slopes, document_ids,
prefix_lengths) -> (dq, dk, dv), or with attention sinks
torch.ops.flashc.attention_backward_sinks(grad_o, q, k, v, o, lse, sinks,
...) -> (dq, dk, dv, dsinks): the variant's backward kernels on CUDA (the
variant "<forward>-backward[-deterministic]", compiled on first use or taken
from FLASHC_LIBRARY as the forward's), the CPU path's tiled backward on CPU
tensors. A gradient through LSE is not implemented and raises FlashcError;
ALiBi's slopes, document ids and prefix lengths get none (None).

The mods that read tensors (alibi_slopes, sinks, document_ids,
prefix_lengths) reach the kernel as its captures, in the order of the
generated function's arguments (variants.Variant.captures, then the
sinks); the block-mask tables of document_ids and prefix_lengths
(flashc.masks) are built on each call, forward and backward, from the ids
and lengths.
"""

import operator
import threading
from typing import Optional, Tuple

import torch

from . import FlashcError, Kernel, _forward_only, _integer
from . import library as _library
from . import masks as _masks
from .variants import (HEAD_DIMS, KEY_RANGE_ROWS, Variant, VariantError,
                       bucket_of)

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}
_lock = threading.Lock()
_devices = {}   # device index -> (arch, name)
_kernels = {}   # (dtype, D, causal, scale, device, bucket) -> Kernel
_loaded = {}    # (cubin path, device) -> Kernel
_varlen_kernels = {}  # (dtype, D, causal, scale, device) -> Kernel
_decode_kernels = {}  # ("decode", dtype, D, ..., device) -> Kernel


def _check(q, k, v, packed=False):
    """What the variant and the fake need; the runtime checks the rest
    (layouts, devices) at launch. `packed`: packed sequences' total x heads
    x head_dim tensors."""
    for n, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise FlashcError(4, f"{n} is a {type(t).__name__}, not a tensor")
        if packed and t.dim() != 3:
            rows = "total_q" if n == "q" else "total_k"
            raise FlashcError(4, f"{n} has {t.dim()} dimensions; packed "
                              f"sequences take {rows} x heads x head_dim")
        if not packed and t.dim() != 4:
            raise FlashcError(4, f"{n} has {t.dim()} dimensions; flashc takes "
                              "batch x heads x seq x head_dim")
        if t.dtype != q.dtype:
            raise FlashcError(4, f"{n} is {t.dtype} but q is {q.dtype}")
    if q.dtype not in _DTYPES:
        raise FlashcError(4, f"q has dtype {q.dtype}; flashc kernels take "
                          "bfloat16 or float16")
    d = q.shape[-1]
    if d not in HEAD_DIMS:
        raise FlashcError(4, f"head dim {d}: flashc's kernels cover "
                          f"{', '.join(map(str, HEAD_DIMS))}")
    if k.shape != v.shape:
        raise FlashcError(4, f"k is {tuple(k.shape)} but v is {tuple(v.shape)}")
    if packed and q.shape[2] != k.shape[2]:
        raise FlashcError(4, f"q is {tuple(q.shape)} and k {tuple(k.shape)}: "
                          "head_dim must agree")
    if not packed and (q.shape[0], q.shape[3]) != (k.shape[0], k.shape[3]):
        raise FlashcError(4, f"q is {tuple(q.shape)} and k {tuple(k.shape)}: "
                          "batch and head_dim must agree")
    if k.shape[1] < 1 or q.shape[1] % k.shape[1]:
        raise FlashcError(4, f"q has {q.shape[1]} heads and k {k.shape[1]}: "
                          "grouped-query attention needs the query heads to "
                          "be a multiple of the K/V heads")


# The tensor arguments of the mods that read data: the Variant flag each
# sets, its dtype, its shape given q's batch, heads and rows, and what it
# holds.
_CAPTURE_ARGS = (
    ("alibi_slopes", "alibi", torch.float32, lambda b, h, n: (h,),
     "one slope per query head"),
    ("sinks", "sinks", torch.float32, lambda b, h, n: (h,),
     "one sink logit per query head"),
    ("document_ids", "document", torch.int32, lambda b, h, n: (b, n),
     "one document id per row of each batch"),
    ("prefix_lengths", "prefix_lm", torch.int32, lambda b, h, n: (b,),
     "one prefix length per batch"),
)


def _captures(q, k, causal, softcap, window, chunk_size=None,
              alibi_slopes=None, sinks=None, document_ids=None,
              prefix_lengths=None, tables=True):
    """(mods, captures) of flashc.attention's tensor mods: the Variant
    flags of those given, and with `tables` the tensors the kernel takes
    after lse, in the generated function's order (slopes, document ids or
    prefix lengths, their block-mask table, the sinks), contiguous. Raises
    FlashcError 4 naming an argument that is not a tensor of its dtype and
    shape on q's device, or a combination flashc does not generate."""
    given = (alibi_slopes, sinks, document_ids, prefix_lengths)
    if all(t is None for t in given):
        return {}, []
    b, h, nq = q.shape[0], q.shape[1], q.shape[2]
    nk = k.shape[2]
    mods = {}
    for (name, flag, dtype, shape, what), t in zip(_CAPTURE_ARGS, given):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise FlashcError(4, f"{name} is a {type(t).__name__}, not a "
                              "tensor")
        want = shape(b, h, nq)
        if t.dtype != dtype:
            raise FlashcError(4, f"{name} has dtype {t.dtype}; expected "
                              f"{dtype} ({what})")
        if tuple(t.shape) != want:
            raise FlashcError(4, f"{name} is {tuple(t.shape)}; expected "
                              f"{want} ({what})")
        if t.device != q.device:
            raise FlashcError(4, f"{name} is on {t.device} but q is on "
                              f"{q.device}")
        mods[flag] = True
    if document_ids is not None and nq != nk:
        raise FlashcError(4, f"document_ids needs seq_q == seq_k (one id per "
                          f"row of q and of k), got {nq} and {nk}")
    # The combinations the variants refuse, before any kernel is looked up
    # (also under torch.compile's fake tensors).
    _variant(q, causal=causal, softcap=softcap, window=window,
             chunk_size=chunk_size, **mods)
    if not tables:
        return mods, []
    captures = []
    if alibi_slopes is not None:
        captures.append(alibi_slopes.contiguous())
    if document_ids is not None:
        captures.append(document_ids.contiguous())
        captures.append(_masks.document_key_ranges(
            document_ids, KEY_RANGE_ROWS, causal=causal, full=True))
    if prefix_lengths is not None:
        # The mask_mod reads a negative length as a huge unsigned one (every
        # key in the prefix); no keys is what one means.
        prefix = prefix_lengths.clamp(min=0).contiguous()
        captures.append(prefix)
        captures.append(_masks.prefix_lm_key_ranges(
            prefix, nq, KEY_RANGE_ROWS, seq_k=nk, full=True))
    if sinks is not None:
        captures.append(sinks.contiguous())
    return mods, captures


def _device_info(index):
    info = _devices.get(index)
    if info is None:
        p = torch.cuda.get_device_properties(index)
        arch = f"sm_{p.major}{p.minor}" + ("a" if p.major >= 9 else "")
        if arch != "sm_90a":
            raise FlashcError(4, f"cuda:{index} is a {p.name} ({arch}); "
                              "flashc's kernels are for sm_90a (Hopper)")
        info = (arch, p.name)
        _devices[index] = info
    return info


def _variant(q, **kwargs):
    """The Variant of q's dtype and head dim with `kwargs`; a variant flashc
    has no kernel for is FlashcError 4, naming what is wrong."""
    try:
        return Variant(_DTYPES[q.dtype], q.shape[-1], **kwargs)
    except VariantError as e:
        raise FlashcError(4, str(e)) from None


def kernel_for(q, k, causal, scale, softcap=None, window=None,
               chunk_size=None, mods=None):
    """The loaded Kernel for these inputs: the variant (dtype, head dim,
    causal, scale, softcap, window, chunk_size, and `mods`: _captures'
    flags) and,
    where a tuning database has one for the device and the shape bucket
    (max(seq_q, seq_k), batch * heads), its config."""
    b, h, nq, d = q.shape
    nk = k.shape[2]
    dev = _device_of(q)
    mods = mods or {}
    # (n - 1).bit_length() names n's power-of-two bucket, as bucket_of does.
    memo = (q.dtype, d, bool(causal), scale, dev,
            (max(nq, nk) - 1).bit_length(), (b * h - 1).bit_length(),
            softcap, window, chunk_size) + (
                (tuple(sorted(mods)),) if mods else ())

    def binary():
        bucket = bucket_of(b, h, max(nq, nk), d)
        arch, gpu = _device_info(dev)
        variant = _variant(q, causal=causal, scale=scale, softcap=softcap,
                           window=window, chunk_size=chunk_size, **mods)
        return _library.kernel_binary(variant, arch, gpu, bucket)
    return _cached_kernel(_kernels, memo, dev, binary)


def backward_kernel_for(q, k, causal, scale, deterministic, softcap=None,
                        window=None, chunk_size=None, mods=None):
    """The loaded backward Kernel of these inputs' variant (dtype, head dim,
    causal, scale, softcap, window, chunk_size, `mods`; dQ in a fixed order
    when deterministic)."""
    b, h, nq, d = q.shape
    nk = k.shape[2]
    dev = _device_of(q)
    mods = mods or {}
    memo = ("backward", q.dtype, d, bool(causal), scale, bool(deterministic),
            softcap, window, chunk_size, dev, tuple(sorted(mods)))

    def binary():
        arch, gpu = _device_info(dev)
        variant = _variant(q, causal=causal, scale=scale, backward=True,
                           deterministic=deterministic, softcap=softcap,
                           window=window, chunk_size=chunk_size, **mods)
        return _library.kernel_binary(variant, arch, gpu,
                                      bucket_of(b, h, max(nq, nk), d))
    return _cached_kernel(_kernels, memo, dev, binary)


def _device_of(q):
    """q's CUDA device index (torch's current device for a bare "cuda")."""
    dev = q.device.index
    return torch.cuda.current_device() if dev is None else dev


def _cached_kernel(table, memo, dev, binary):
    """table[memo], else the Kernel on device `dev` of the cubin binary()
    names, resolved and loaded once (under _lock) and kept there."""
    kern = table.get(memo)
    if kern is not None:
        return kern
    with _lock:
        kern = table.get(memo)
        if kern is None:
            kern = _load(binary(), dev)
            table[memo] = kern
    return kern


def _load(path, dev):
    """The Kernel of a cubin on a device, loaded once (call under _lock)."""
    kern = _loaded.get((path, dev))
    if kern is None:
        kern = Kernel(path, dev)
        _loaded[(path, dev)] = kern
    return kern


def _launch(q, k, v, causal, scale, out, softcap=None, window=None,
            chunk_size=None, alibi_slopes=None, sinks=None,
            document_ids=None, prefix_lengths=None):
    if q.device.type not in ("cpu", "cuda"):
        raise FlashcError(4, f"q is on {q.device}; flashc kernels take CUDA "
                          "or CPU tensors")
    _check(q, k, v)
    mods, captures = _captures(q, k, causal, softcap, window, chunk_size,
                               alibi_slopes, sinks, document_ids,
                               prefix_lengths)
    if q.device.type == "cpu":
        from . import cpu
        return cpu.torch_attention(q, k, v, causal, scale, out, softcap,
                                   window, chunk_size, mods, captures)
    return kernel_for(q, k, causal, scale, softcap, window, chunk_size,
                      mods)._launch(q, k, v, out, None, captures)


# The prepared launches of this thread's eager CUDA calls (Kernel._prepare),
# by everything the checks and the kernel choice read: a call with the same
# shapes, strides, dtypes, device, mask and scale as an earlier one skips
# straight to its launch. Bounded: a caller of ever new shapes starts over.
_local = threading.local()
_MAX_PREPARED = 256


def _prepared_launches(kind):
    """This thread's table of prepared launches of `kind` ("forward",
    "decode"), key -> run."""
    tables = getattr(_local, "tables", None)
    if tables is None:
        tables = _local.tables = {}
    return tables.setdefault(kind, {})


def _remember(table, key, run):
    """run under key in a table of _prepared_launches, which starts over
    once it holds _MAX_PREPARED."""
    if len(table) >= _MAX_PREPARED:
        table.clear()
    table[key] = run
    return run


def _eager_cuda(q, k, v, causal, scale, softcap=None, window=None,
                chunk_size=None):
    key = (q.shape, k.shape, v.shape, q.stride(), k.stride(), v.stride(),
           q.dtype, k.dtype, v.dtype, q.device, k.device, v.device, causal,
           scale, softcap, window, chunk_size)
    prepared = _prepared_launches("forward")
    run = prepared.get(key)
    if run is not None:
        return run(q, k, v)
    o, lse = _launch(q, k, v, causal, scale, None, softcap, window,
                     chunk_size)
    _remember(prepared, key, kernel_for(q, k, causal, scale, softcap, window,
                                        chunk_size)._prepare(q, k, v))
    return o, lse


def _fake(q, k, v, causal=False, softcap=None, window=None, chunk_size=None,
          *captures):
    _check(q, k, v)
    _captures(q, k, causal, softcap, window, chunk_size, *captures,
              tables=False)
    return (q.new_empty(q.shape),
            q.new_empty(q.shape[:3], dtype=torch.float32))


# The runtime keeps a tile counter per loaded kernel and stream for the
# claimed causal schedules (docs/kernel-metadata.md): a CUDA graph capturing
# such a launch would keep an address it may free, so inductor must not put
# these ops in one (mode="reduce-overhead" splits the graph around them).
# The tensor maps are kernel parameters by value and hold nothing.
_TAGS = ((torch.Tag.cudagraph_unsafe,)
         if hasattr(torch.Tag, "cudagraph_unsafe") else ())


@torch.library.custom_op("flashc::attention", mutates_args=(),
                         device_types=("cuda", "cpu"), tags=_TAGS)
def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  causal: bool, scale: Optional[float],
                  deterministic: bool = False, softcap: Optional[float] = None,
                  window: Optional[int] = None,
                  chunk_size: Optional[int] = None,
                  alibi_slopes: Optional[torch.Tensor] = None,
                  sinks: Optional[torch.Tensor] = None,
                  document_ids: Optional[torch.Tensor] = None,
                  prefix_lengths: Optional[torch.Tensor] = None
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    # `deterministic` is the backward pass's (kept for its autograd node).
    return _launch(q, k, v, causal, scale, None, softcap, window, chunk_size,
                   alibi_slopes, sinks, document_ids, prefix_lengths)


@_attention_op.register_fake
def _(q, k, v, causal, scale, deterministic=False, softcap=None, window=None,
      chunk_size=None, alibi_slopes=None, sinks=None, document_ids=None,
      prefix_lengths=None):
    return _fake(q, k, v, causal, softcap, window, chunk_size, alibi_slopes,
                 sinks, document_ids, prefix_lengths)


@torch.library.custom_op("flashc::attention_out", mutates_args=("out",),
                         device_types=("cuda", "cpu"), tags=_TAGS)
def _attention_out_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      out: torch.Tensor, causal: bool, scale: Optional[float],
                      softcap: Optional[float] = None,
                      window: Optional[int] = None,
                      chunk_size: Optional[int] = None,
                      alibi_slopes: Optional[torch.Tensor] = None,
                      sinks: Optional[torch.Tensor] = None,
                      document_ids: Optional[torch.Tensor] = None,
                      prefix_lengths: Optional[torch.Tensor] = None
                      ) -> torch.Tensor:
    return _launch(q, k, v, causal, scale, out, softcap, window, chunk_size,
                   alibi_slopes, sinks, document_ids, prefix_lengths)[1]


@_attention_out_op.register_fake
def _(q, k, v, out, causal, scale, softcap=None, window=None,
      chunk_size=None, alibi_slopes=None, sinks=None, document_ids=None,
      prefix_lengths=None):
    return _fake(q, k, v, causal, softcap, window, chunk_size, alibi_slopes,
                 sinks, document_ids, prefix_lengths)[1]


def _launch_backward(grad_o, q, k, v, o, lse, causal, scale, deterministic,
                     softcap=None, window=None, chunk_size=None,
                     alibi_slopes=None, sinks=None, document_ids=None,
                     prefix_lengths=None):
    """(dq, dk, dv, dsinks) of attention(q, k, v) from its O and LSE; dsinks
    None without sinks."""
    _check(q, k, v)
    mods, captures = _captures(q, k, causal, softcap, window, chunk_size,
                               alibi_slopes, sinks, document_ids,
                               prefix_lengths)
    if q.device.type == "cpu":
        from . import cpu
        return cpu.torch_attention_backward(q, k, v, o, lse, grad_o, causal,
                                            scale, softcap, window,
                                            chunk_size, mods, captures)
    kern = backward_kernel_for(q, k, causal, scale, deterministic, softcap,
                               window, chunk_size, mods)
    dsinks = None
    if sinks is not None:
        # The backward kernel's last capture, which it writes.
        dsinks = torch.empty(sinks.shape, dtype=torch.float32,
                             device=q.device)
        captures.append(dsinks)
    # The kernels read LSE dense (B x H x Nq); O and dO as they are.
    dq, dk, dv = kern.backward(q, k, v, o, lse.contiguous(), grad_o,
                               captures=captures)
    return dq, dk, dv, dsinks


def _fake_gradients(q, k, v):
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(k.shape, dtype=k.dtype, device=k.device),
            torch.empty(v.shape, dtype=v.dtype, device=v.device))


@torch.library.custom_op("flashc::attention_backward", mutates_args=(),
                         device_types=("cuda", "cpu"), tags=_TAGS)
def _attention_backward_op(grad_o: torch.Tensor, q: torch.Tensor,
                           k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                           lse: torch.Tensor, causal: bool,
                           scale: Optional[float], deterministic: bool,
                           softcap: Optional[float] = None,
                           window: Optional[int] = None,
                           chunk_size: Optional[int] = None,
                           alibi_slopes: Optional[torch.Tensor] = None,
                           document_ids: Optional[torch.Tensor] = None,
                           prefix_lengths: Optional[torch.Tensor] = None
                           ) -> Tuple[torch.Tensor, torch.Tensor,
                                      torch.Tensor]:
    return _launch_backward(grad_o, q, k, v, o, lse, causal, scale,
                            deterministic, softcap, window, chunk_size,
                            alibi_slopes, None, document_ids,
                            prefix_lengths)[:3]


@_attention_backward_op.register_fake
def _(grad_o, q, k, v, o, lse, causal, scale, deterministic, softcap=None,
      window=None, chunk_size=None, alibi_slopes=None, document_ids=None,
      prefix_lengths=None):
    return _fake_gradients(q, k, v)


# With attention sinks the backward also gives dsinks: an op of its own,
# since a custom op's outputs cannot be optional.
@torch.library.custom_op("flashc::attention_backward_sinks", mutates_args=(),
                         device_types=("cuda", "cpu"), tags=_TAGS)
def _attention_backward_sinks_op(
        grad_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
        v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
        sinks: torch.Tensor, causal: bool, scale: Optional[float],
        deterministic: bool, softcap: Optional[float] = None,
        window: Optional[int] = None,
        chunk_size: Optional[int] = None,
        alibi_slopes: Optional[torch.Tensor] = None,
        document_ids: Optional[torch.Tensor] = None,
        prefix_lengths: Optional[torch.Tensor] = None
        ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return _launch_backward(grad_o, q, k, v, o, lse, causal, scale,
                            deterministic, softcap, window, chunk_size,
                            alibi_slopes, sinks, document_ids, prefix_lengths)


@_attention_backward_sinks_op.register_fake
def _(grad_o, q, k, v, o, lse, sinks, causal, scale, deterministic,
      softcap=None, window=None, chunk_size=None, alibi_slopes=None,
      document_ids=None, prefix_lengths=None):
    return _fake_gradients(q, k, v) + (
        torch.empty(sinks.shape, dtype=torch.float32, device=sinks.device),)


_NO_LSE_GRAD = (
    "flashc's backward pass takes the gradient of O only: a loss that "
    "depends on the LSE flashc.attention returned (return_lse=True) has a "
    "gradient through it that flashc does not compute; detach the LSE")


# flashc::attention's arguments after q, k, v, with their defaults.
_OP_ARGS = (("causal", False), ("scale", None), ("deterministic", False),
            ("softcap", None), ("window", None), ("chunk_size", None),
            ("alibi_slopes", None),
            ("sinks", None), ("document_ids", None), ("prefix_lengths", None))


def _setup_context(ctx, inputs, output):
    q, k, v = inputs[:3]
    args = dict(_OP_ARGS)
    args.update(zip((n for n, _ in _OP_ARGS), inputs[3:]))
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, args["alibi_slopes"],
                          args["sinks"], args["document_ids"],
                          args["prefix_lengths"])
    ctx.causal, ctx.scale = args["causal"], args["scale"]
    ctx.deterministic = args["deterministic"]
    ctx.softcap, ctx.window = args["softcap"], args["window"]
    ctx.chunk_size = args["chunk_size"]
    # Outputs the loss does not use get None, not zeros: so a gradient
    # through LSE is told apart from an unused LSE.
    ctx.set_materialize_grads(False)


def _backward(ctx, grad_o, grad_lse):
    if grad_lse is not None:
        raise FlashcError(None, _NO_LSE_GRAD)
    q, k, v, o, lse, slopes, sinks, ids, prefix = ctx.saved_tensors
    # One gradient per flashc::attention argument: q, k, v, then _OP_ARGS
    # (of which only the sinks have one).
    grads = [None] * (3 + len(_OP_ARGS))
    if grad_o is None:
        return tuple(grads)
    common = (ctx.causal, ctx.scale, ctx.deterministic, ctx.softcap,
              ctx.window, ctx.chunk_size, slopes, ids, prefix)
    if sinks is None:
        grads[:3] = torch.ops.flashc.attention_backward(
            grad_o, q, k, v, o, lse, *common)
    else:
        dq, dk, dv, dsinks = torch.ops.flashc.attention_backward_sinks(
            grad_o, q, k, v, o, lse, sinks, *common)
        grads[:3] = dq, dk, dv
        grads[3 + [n for n, _ in _OP_ARGS].index("sinks")] = dsinks
    return tuple(grads)


_attention_op.register_autograd(_backward, setup_context=_setup_context)


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              out=None, deterministic=False, softcap=None, window=None,
              chunk_size=None, alibi_slopes=None, sinks=None,
              document_ids=None, prefix_lengths=None):
    """See flashc.attention."""
    captures = (alibi_slopes, sinks, document_ids, prefix_lengths)
    needs_grad = torch.is_grad_enabled() and any(
        getattr(t, "requires_grad", False) for t in (q, k, v, sinks))
    compiling = torch.compiler.is_compiling()
    if needs_grad or (compiling and out is None):
        o, lse = torch.ops.flashc.attention(q, k, v, causal, scale,
                                            deterministic, softcap, window,
                                            chunk_size, *captures)
        if out is not None:
            # Through the functional op; the copy carries its gradient to
            # out.
            o = out.copy_(o)
    elif compiling:
        lse = torch.ops.flashc.attention_out(q, k, v, out, causal, scale,
                                             softcap, window, chunk_size,
                                             *captures)
        o = out
    elif (out is None and isinstance(q, torch.Tensor) and q.is_cuda
          and all(t is None for t in captures)):
        # Eager without grad: the launch itself, without the dispatcher,
        # prepared once per signature (Kernel._prepare takes no captures).
        o, lse = _eager_cuda(q, k, v, causal, scale, softcap, window,
                             chunk_size)
    else:
        o, lse = _launch(q, k, v, causal, scale, out, softcap, window,
                         chunk_size, *captures)
    return (o, lse) if return_lse else o


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """See flashc.scaled_dot_product_attention."""
    why = []
    if attn_mask is not None:
        why.append("attn_mask (flashc has only the causal mask: is_causal)")
    if dropout_p:
        why.append(f"dropout_p={dropout_p} (flashc has no dropout)")
    if query.dim() == 4 and key.dim() == 4:
        if not enable_gqa and query.shape[1] != key.shape[1]:
            why.append(f"{query.shape[1]} query heads and {key.shape[1]} key "
                       "heads without enable_gqa=True (as SDPA refuses them)")
        if is_causal and query.shape[2] != key.shape[2]:
            why.append(
                f"is_causal with seq_q {query.shape[2]} != seq_k "
                f"{key.shape[2]}: SDPA aligns the mask to the top-left, "
                "flashc to the bottom-right (call flashc.attention("
                "causal=True) for that)")
    if why:
        raise FlashcError(4, "flashc.scaled_dot_product_attention cannot "
                          "take:\n  " + "\n  ".join(why))
    return attention(query, key, value, causal=is_causal, scale=scale)


# --- packed sequences (varlen) ----------------------------------------------

def _check_varlen(q, k, v):
    """What the variant needs of q, k, v (total x heads x head_dim); the
    runtime checks the rest on CUDA, cpu.torch_attention on the CPU."""
    _check(q, k, v, packed=True)


def varlen_kernel_for(q, causal, scale):
    """The loaded packed-sequence Kernel for q's dtype and head dim: the
    variant's "-varlen" kernel with its default config (no tuning database
    has packed entries)."""
    dev = _device_of(q)
    memo = (q.dtype, q.shape[-1], bool(causal), scale, dev)

    def binary():
        try:
            variant = Variant(_DTYPES[q.dtype], q.shape[-1], causal, scale,
                              varlen=True)
        except VariantError as e:
            raise FlashcError(4, str(e)) from None
        arch, gpu = _device_info(dev)
        return _library.kernel_binary(variant, arch, gpu, None)
    return _cached_kernel(_varlen_kernels, memo, dev, binary)


def _cpu_sequences(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, total_q,
                   total_k):
    """[(q0, q1, k0, k1)] per sequence from CPU cu_seqlens, checked (the
    runtime checks what it can see on CUDA, but there is no runtime on the
    CPU): int32, rank 1, equal lengths, non-decreasing, within the rows,
    max_seqlen_q within [longest query sequence, total_q]."""
    bounds = []
    for name, t, total, of in (("cu_seqlens_q", cu_seqlens_q, total_q, "q"),
                               ("cu_seqlens_k", cu_seqlens_k, total_k, "k")):
        if not isinstance(t, torch.Tensor):
            raise FlashcError(4, f"{name} is a {type(t).__name__}, not a "
                              "tensor")
        if t.device.type != "cpu":
            raise FlashcError(4, f"{name} is on {t.device} but q is on the "
                              "CPU")
        if t.dtype != torch.int32:
            raise FlashcError(4, f"{name} has dtype {t.dtype}; expected "
                              "torch.int32")
        if t.dim() != 1:
            raise FlashcError(4, f"{name} has {t.dim()} dimensions; expected "
                              "1 (one int32 per sequence, plus one)")
        if t.numel() < 1:
            raise FlashcError(4, f"{name} is empty: it holds one entry per "
                              "sequence plus one")
        cu = t.tolist()
        if cu[0] < 0:
            raise FlashcError(4, f"{name}[0] = {cu[0]} is negative")
        for s in range(len(cu) - 1):
            if cu[s + 1] < cu[s]:
                raise FlashcError(4, f"{name} decreases at entry {s + 1} "
                                  f"({cu[s]} then {cu[s + 1]}): it must be "
                                  "non-decreasing (prefix sums of the "
                                  "sequence lengths)")
        if cu[-1] > total:
            raise FlashcError(4, f"{name}[{len(cu) - 1}] = {cu[-1]} is past "
                              f"{of}'s {total} rows")
        bounds.append(cu)
    cu_q, cu_k = bounds
    if len(cu_q) != len(cu_k):
        raise FlashcError(4, f"cu_seqlens_q has {len(cu_q)} entries and "
                          f"cu_seqlens_k {len(cu_k)}: both hold one per "
                          "sequence plus one")
    max_q = _integer("max_seqlen_q", max_seqlen_q)
    spans = [(cu_q[s], cu_q[s + 1], cu_k[s], cu_k[s + 1])
             for s in range(len(cu_q) - 1)]
    longest = max([q1 - q0 for q0, q1, _, _ in spans], default=0)
    if max_q < longest or max_q > total_q:
        raise FlashcError(4, f"max_seqlen_q = {max_q} is outside [{longest}, "
                          f"{total_q}] (the longest query sequence, q's rows)")
    return spans


def _varlen_cpu(q, k, v, spans, causal, scale, out):
    """Each sequence through flashc.attention's CPU path of the dense
    program on 1 x H x L x D views of its rows, into the packed O and LSE."""
    total_q, heads = q.shape[0], q.shape[1]
    if out is None:
        out = torch.empty(q.shape, dtype=q.dtype)
    elif (not isinstance(out, torch.Tensor) or out.device.type != "cpu"
          or out.dtype != q.dtype or tuple(out.shape) != tuple(q.shape)):
        raise FlashcError(4, f"out must be a CPU {q.dtype} tensor of shape "
                          f"{tuple(q.shape)}")
    lse = torch.empty((heads, total_q), dtype=torch.float32)
    for q0, q1, k0, k1 in spans:
        if q1 == q0:
            continue
        if k1 == k0:  # no key: O = 0, LSE = -inf (the kernels' convention)
            out[q0:q1] = 0
            lse[:, q0:q1] = float("-inf")
            continue
        o, l = _launch(*(t[a:b].transpose(0, 1).unsqueeze(0) for t, a, b in (
            (q, q0, q1), (k, k0, k1), (v, k0, k1))), causal, scale, None)
        out[q0:q1] = o[0].transpose(0, 1)
        lse[:, q0:q1] = l[0]
    return out, lse


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k=None, *, causal=False, scale=None,
                     return_lse=False, out=None):
    """See flashc.varlen_attention."""
    _check_varlen(q, k, v)
    if q.device.type == "cuda":
        kern = varlen_kernel_for(q, causal, scale)
        o, lse = kern.varlen(q, k, v, cu_seqlens_q, cu_seqlens_k,
                             max_seqlen_q, out=out)
    elif q.device.type == "cpu":
        for n, t in (("k", k), ("v", v)):
            if t.device.type != "cpu":
                raise FlashcError(4, f"{n} is on {t.device} but q is on the "
                                  "CPU")
        spans = _cpu_sequences(cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                               q.shape[0], k.shape[0])

        def launch(q, k, v, out, lse):
            return _varlen_cpu(q, k, v, spans, causal, scale, out)
        if torch.is_grad_enabled() and any(
                t.requires_grad for t in (q, k, v)):
            o, lse = _forward_only().apply(launch, q, k, v, out, None)
        else:
            o, lse = launch(q, k, v, out, None)
    else:
        raise FlashcError(4, f"q is on {q.device}; flashc kernels take CUDA "
                          "or CPU tensors")
    return (o, lse) if return_lse else o


def decode_kernel_for(q, causal, scale, softcap, window, chunk_size, sinks,
                      page_size, pack_gqa):
    """The loaded decoding Kernel for q's dtype and head dim: the variant
    "...[-paged<P>]-splits[-packgqa]" (the GPU kernel always takes the
    split form; page_size None: a contiguous cache) with its default
    config (no tuning database has decoding entries)."""
    dev = _device_of(q)
    memo = ("decode", q.dtype, q.shape[-1], bool(causal), scale, softcap,
            window, chunk_size, bool(sinks), page_size, bool(pack_gqa), dev)

    def binary():
        variant = _variant(q, causal=causal, scale=scale, softcap=softcap,
                           window=window, chunk_size=chunk_size, sinks=sinks,
                           page_size=page_size, splits=True,
                           pack_gqa=pack_gqa)
        arch, gpu = _device_info(dev)
        return _library.kernel_binary(variant, arch, gpu, None)
    return _cached_kernel(_decode_kernels, memo, dev, binary)


def _kvcache_key(q, k_cache, v_cache, cache_seqlens, page_table, sinks,
                 scalars):
    """Everything _kvcache_cuda's checks and kernel choice read of a call
    whose every tensor argument is a CUDA tensor (their layouts, dtypes and
    devices; the scalars and their types, so that num_splits=True is still
    refused), or None where a value is read too (cache lengths on the host)
    or an argument is not a tensor."""
    sig = []
    for t in (q, k_cache, v_cache, cache_seqlens, page_table, sinks):
        if t is None:
            sig.append(None)
        elif isinstance(t, torch.Tensor) and t.is_cuda:
            sig.append((t.shape, t.stride(), t.dtype, t.device))
        else:
            return None
    return (*sig, scalars, tuple(map(type, scalars)))


def _kvcache_cuda(q, k_cache, v_cache, cache_seqlens, page_table, causal,
                  scale, num_splits, pack_gqa, softcap, window, chunk_size,
                  sinks, out, return_lse):
    """attention_with_kvcache on CUDA tensors: the variant's decoding
    kernel (Kernel.decode) on the caches' views, no copies. A call without
    out= or gradients is prepared once per signature (_kvcache_key,
    Kernel._prepare_decode), a later one of the same signature skipping
    the checks and descriptors to the launch."""
    key = None
    if out is None and not (torch.is_grad_enabled() and any(
            getattr(t, "requires_grad", False)
            for t in (q, k_cache, v_cache))):
        key = _kvcache_key(q, k_cache, v_cache, cache_seqlens, page_table,
                           sinks, (causal, scale, num_splits, pack_gqa,
                                   softcap, window, chunk_size))
        if key is not None:
            prepared = _prepared_launches("decode")
            run = prepared.get(key)
            if run is not None:
                o, lse = run(q, k_cache, v_cache, cache_seqlens, page_table,
                             sinks)
                return (o, lse) if return_lse else o
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor):
            raise FlashcError(4, f"{name} is a {type(t).__name__}, not a "
                              "torch.Tensor")
        if t.dtype != q.dtype:
            raise FlashcError(4, f"{name} is {t.dtype} but q is {q.dtype}")
    if q.dtype not in _DTYPES:
        raise FlashcError(4, f"q is {q.dtype}; flashc takes bfloat16 or "
                          "float16")
    paged = page_table is not None
    cache_dims = ("num_pages x page_size x kv_heads x head_dim" if paged else
                  "batch x seq_k x kv_heads x head_dim (no page_table: a "
                  "contiguous cache)")
    if q.dim() != 4:
        raise FlashcError(4, f"q is {tuple(q.shape)}; flashc takes batch x "
                          "heads x seq_q x head_dim")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dim() != 4:
            raise FlashcError(4, f"{name} is {tuple(t.shape)}; flashc takes "
                              f"{cache_dims}")
    if k_cache.shape != v_cache.shape:
        raise FlashcError(4, f"k_cache is {tuple(k_cache.shape)} but v_cache "
                          f"is {tuple(v_cache.shape)}")
    b, h, _, d = q.shape
    kv_heads = k_cache.shape[2]
    if kv_heads < 1 or h % kv_heads:
        raise FlashcError(4, f"q has {h} heads and k_cache {kv_heads}: "
                          "grouped-query attention needs the query heads to "
                          "be a multiple of the K/V heads")
    if paged:
        if cache_seqlens is None:
            raise FlashcError(4, "cache_seqlens is None: a paged cache "
                              "(page_table) needs each batch's number of "
                              "cached keys")
        page_size = k_cache.shape[1]
        lens = cache_seqlens
    else:
        # Every batch's whole Nk keys: lengths on the host are checked
        # here; on the device they are not read (a synchronisation), the
        # kernel reading Nk keys whatever they hold.
        nk = k_cache.shape[1]
        if k_cache.shape[0] != b:
            raise FlashcError(4, f"k_cache is {tuple(k_cache.shape)}; without "
                              f"a page_table flashc takes a contiguous cache, "
                              f"batch x seq_k x kv_heads x head_dim, of q's "
                              f"batch {b}")
        if cache_seqlens is not None:
            if not isinstance(cache_seqlens, torch.Tensor):
                raise FlashcError(4, f"cache_seqlens is a "
                                  f"{type(cache_seqlens).__name__}, not a "
                                  "torch.Tensor")
            if cache_seqlens.device.type == "cpu" and (
                    tuple(cache_seqlens.shape) != (b,)
                    or not bool((cache_seqlens == nk).all())):
                raise FlashcError(
                    4, f"cache_seqlens {cache_seqlens.tolist()}: a contiguous "
                    f"cache (no page_table) is read whole, its {nk} keys for "
                    "every batch; pass a page_table for caches of other "
                    "lengths")
        page_size = None
        lens = None
    try:
        # None: the runtime's rule (the SM count and the shapes), 0 to it.
        splits = 0 if num_splits is None else operator.index(num_splits)
    except TypeError:
        splits = -1
    if splits < 0 or (num_splits is not None
                      and (splits == 0 or isinstance(num_splits, bool))):
        raise FlashcError(4, f"num_splits must be an int >= 1 (or None: the "
                          f"runtime's rule), got {num_splits!r}")
    if pack_gqa is None:
        # Each K/V byte read once for its G query heads.
        pack_gqa = h > kv_heads
    sq = q.shape[2]
    copy_q = (pack_gqa and h > kv_heads and sq > 1
              and q.stride(1) != sq * q.stride(2))
    if copy_q:
        # The packed kernel reads a K/V head's G x Sq rows as one run of
        # rows (stride_h = Sq x stride_n), which vLLM's B x Sq x H x D
        # queries viewed B x H x Sq x D are not: a step's few rows are
        # copied rather than refused.
        q = q.contiguous()
    captures = []
    if sinks is not None:
        if (not isinstance(sinks, torch.Tensor) or sinks.dtype != torch.float32
                or tuple(sinks.shape) != (h,)):
            raise FlashcError(4, f"sinks must be a float32 tensor of shape "
                              f"({h},), one sink logit per query head")
        captures.append(sinks.contiguous())
    kern = decode_kernel_for(q, causal, scale, softcap, window, chunk_size,
                             sinks is not None, page_size, bool(pack_gqa))
    if key is not None:
        run = _remember(prepared, key, _prepared_decode(
            kern, q, k_cache, v_cache, lens, page_table, splits, captures,
            copy_q))
        o, lse = run(q, k_cache, v_cache, cache_seqlens, page_table, sinks)
        return (o, lse) if return_lse else o

    def launch(q, k, v, out, lse):
        res = kern.decode(q, k, v, lens, page_table, out=out, lse=lse,
                          num_splits=splits, captures=captures)
        return res if kern.has_lse else (res, None)
    if torch.is_grad_enabled() and any(
            getattr(t, "requires_grad", False) for t in (q, k_cache, v_cache)):
        o, lse = _forward_only().apply(launch, q, k_cache, v_cache, out, None)
    else:
        o, lse = launch(q, k_cache, v_cache, out, None)
    return (o, lse) if return_lse else o


def _prepared_decode(kern, q, k_cache, v_cache, lens, page_table, splits,
                     captures, copy_q):
    """_kvcache_cuda's launch for later calls of this one's signature:
    run(q, k_cache, v_cache, cache_seqlens, page_table, sinks) -> (o, lse
    or None), doing what the checks decided (q copied for the packed
    kernel, cache lengths passed only with a page table, the sinks
    contiguous) on Kernel._prepare_decode's launch."""
    launch = kern._prepare_decode(q, k_cache, v_cache, lens, page_table,
                                  splits, captures)
    paged = page_table is not None

    def run(q, k_cache, v_cache, cache_seqlens, page_table, sinks):
        if copy_q:
            q = q.contiguous()
        return launch(q, k_cache, v_cache,
                      cache_seqlens if paged else None, page_table,
                      () if sinks is None else (sinks.contiguous(),))
    return run


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens, page_table, *,
                           causal=False, scale=None, num_splits=None,
                           pack_gqa=None, softcap=None, window=None,
                           chunk_size=None, sinks=None, out=None,
                           return_lse=False):
    """flashc.attention_with_kvcache on torch tensors: CUDA tensors through
    the variant's GPU decoding kernel, CPU tensors through
    flashc.cpu.attention_with_kvcache (numpy views of the same memory,
    bf16 as its bits)."""
    if isinstance(q, torch.Tensor) and q.device.type == "cuda":
        return _kvcache_cuda(q, k_cache, v_cache, cache_seqlens, page_table,
                             causal, scale, num_splits, pack_gqa, softcap,
                             window, chunk_size, sinks, out, return_lse)
    if isinstance(q, torch.Tensor) and q.device.type != "cpu":
        raise FlashcError(4, f"q is on {q.device}; flashc takes CUDA tensors "
                          "(the GPU kernel) or CPU tensors (the CPU path)")
    if page_table is None:
        raise FlashcError(4, "page_table is None: the CPU path reads a paged "
                          "cache (a contiguous cache, without a page_table, "
                          "runs on CUDA tensors)")
    tensors = {"q": q, "k_cache": k_cache, "v_cache": v_cache,
               "cache_seqlens": cache_seqlens, "page_table": page_table}
    if sinks is not None:
        tensors["sinks"] = sinks
    if out is not None:
        tensors["out"] = out
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise FlashcError(4, f"{name} is a {type(t).__name__}, not a "
                              "torch.Tensor")
        if t.device.type != "cpu":
            raise FlashcError(4, f"{name} is on {t.device} but q is on the "
                              "CPU")
    if q.dtype not in _DTYPES:
        raise FlashcError(4, f"q is {q.dtype}; flashc takes bfloat16 or "
                          "float16")
    # A wrong out is refused before the (slow) CPU run, not after it.
    if out is not None and (out.dtype != q.dtype
                            or tuple(out.shape) != tuple(q.shape)):
        raise FlashcError(4, f"out must be a {q.dtype} tensor of shape "
                          f"{tuple(q.shape)}")

    def numpy_of(t):
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view("uint16")
        return t.numpy()

    from . import cpu
    arrays = {n: numpy_of(t) for n, t in tensors.items() if n != "out"}
    o = torch.empty(q.shape, dtype=q.dtype)
    _, lse = cpu.attention_with_kvcache(
        arrays["q"], arrays["k_cache"], arrays["v_cache"],
        arrays["cache_seqlens"], arrays["page_table"], causal=causal,
        scale=scale, num_splits=1 if num_splits is None else num_splits,
        pack_gqa=pack_gqa, softcap=softcap, window=window,
        chunk_size=chunk_size, sinks=arrays.get("sinks"),
        out=numpy_of(o), return_lse=True)
    if out is not None:
        out.copy_(o)
        o = out
    lse = torch.from_numpy(lse)
    return (o, lse) if return_lse else o

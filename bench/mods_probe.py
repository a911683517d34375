#!/usr/bin/env python3
"""The shipped score and mask mod kernels on the GPU: correctness against
float64 and speed beside FlexAttention.

    python3 bench/mods_probe.py DIR [--bench] [--json OUT]

DIR holds compiled kernels (<name>.cubin + <name>.json) of
kernels/attention_softcap.mlir (50 tanh(s / 50), causal) and
kernels/attention_sliding_window.mlir (causal, 1024 keys back) and
kernels/attention_chunked.mlir (causal, queries see their own chunk of
8192 positions, or of --chunk, the chunk the kernel in DIR was compiled
with); each runs
through the runtime (flashc.load) on random bf16 inputs with O and LSE
poisoned (NaN) first, and is compared by relative error with float64
attention under the same mod, beside FlexAttention (torch.compile of
flex_attention with the same score_mod or block mask) on the same inputs.
Cases: ragged lengths, seq_q != seq_k, rows with logits near 1e3, and for
the window rows it hides entirely (O = 0, LSE = -inf).

--backward BWD: BWD holds <name>_backward.cubin/.json (flash.attention_backward
with the same regions, -flash-derive-backward): dQ, dK and dV of each case
against float64 autograd of the same mods (the bar: 1e-2, or 1.25x the
error of float64 run on the stored O where the rows near 1e3 make delta's
rounding the method's own error), and with --bench forward+backward beside
FlexAttention's (compiled, its backward through autograd).

--bench times bf16, D 128, 16 heads, N 8k/16k/32k (B = 32k / N): flashc,
FlexAttention compiled once per shape (dynamic=False, timed after warm-up;
the script prints inductor's fallback counters at the end, to read that it
did not fall back to the unfused path), and flashc's dense causal kernel (flashc.attention, the
library's). TFLOP/s count only the work the mask leaves (4 D per visible
(query, key) pair).
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import rel  # noqa: E402

import flashc  # noqa: E402

WINDOW = 1024
CAP = 50.0
# attention_chunked's chunk: the shipped 8192, or what --chunk says the
# kernels in DIR were compiled with (a small one crosses chunks in the
# checks' short sequences).
CHUNK = 8192


def visible(kernel, nq, nk, device="cpu"):
    """The (nq, nk) mask of the kernel's mod with the causal attribute
    (bottom-right aligned), True where query i sees key j."""
    i = torch.arange(nq, device=device)[:, None]
    j = torch.arange(nk, device=device)[None, :]
    seen = j <= i + nk - nq
    if kernel == "attention_sliding_window":
        seen &= j + WINDOW >= i
    if kernel == "attention_chunked":
        seen &= i // CHUNK == j // CHUNK
    return seen


def reference(kernel, q, k, v, scale):
    """float64 (O, LSE) under the kernel's mods; differentiable, with rows
    that see no key at O = 0 and LSE = -inf without a NaN in between."""
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    if kernel == "attention_softcap":
        s = CAP * torch.tanh(s / CAP)
    seen = visible(kernel, q.shape[2], k.shape[2], q.device)
    empty = ~seen.any(-1, keepdim=True)
    s = s.masked_fill(~seen, float("-inf")).masked_fill(empty, 0.0)
    p = torch.softmax(s, -1).masked_fill(empty, 0.0)
    lse = torch.logsumexp(s, -1).masked_fill(empty[..., 0], float("-inf"))
    return p @ v.double(), lse


def flex_mods(kernel, nq, nk):
    """(score_mod, mask_mod) for flex_attention, the kernel's meaning."""
    def softcap(score, b, h, q_idx, kv_idx):
        return CAP * torch.tanh(score / CAP)

    def mask(b, h, q_idx, kv_idx):
        seen = kv_idx <= q_idx + nk - nq
        if kernel == "attention_sliding_window":
            seen = seen & (kv_idx + WINDOW >= q_idx)
        if kernel == "attention_chunked":
            seen = seen & (q_idx // CHUNK == kv_idx // CHUNK)
        return seen
    return (softcap if kernel == "attention_softcap" else None), mask


def flex_call(kernel, nq, nk, device, compiled):
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    score_mod, mask_mod = flex_mods(kernel, nq, nk)
    block_mask = create_block_mask(mask_mod, None, None, nq, nk,
                                   device=device)
    fn = compiled if compiled is not None else flex_attention

    def call(q, k, v):
        return fn(q, k, v, score_mod=score_mod, block_mask=block_mask)
    return call


def stored_o_gradients(kernel, q, k, v, o, do, scale):
    """float64 (dq, dk, dv) by the backward's own recomputation: delta from
    the O the forward stored, the cap's slope 1 - tanh^2 by hand."""
    q, k, v, o, do = (t.double() for t in (q, k, v, o, do))
    x = (q @ k.transpose(-1, -2)) * scale
    s, slope = x, torch.ones_like(x)
    if kernel == "attention_softcap":
        t = torch.tanh(x / CAP)
        s, slope = CAP * t, 1 - t * t
    s = s.masked_fill(~visible(kernel, q.shape[2], k.shape[2], q.device),
                      float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    dp = do @ v.transpose(-1, -2)
    ds = p * (dp - (do * o).sum(-1, keepdim=True)) * slope
    return (scale * ds @ k, scale * ds.transpose(-1, -2) @ q,
            p.transpose(-1, -2) @ do)


def check_backward(kern, bkern, kernel, B, H, NQ, NK, hot):
    """dQ, dK, dV of one case against float64 autograd."""
    gen = torch.Generator(device="cuda").manual_seed(NQ * 5 + NK)
    q, k, v, do = (torch.randn(B, H, n, 128, device="cuda",
                               dtype=torch.bfloat16, generator=gen)
                   for n in (NQ, NK, NK, NQ))
    if hot:
        q[:, :, ::3] *= 1000.0
    scale = 1 / math.sqrt(128)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, NQ), float("nan"), device="cuda")
    kern(q, k, v, out=out, lse=lse)
    grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    bkern.backward(q, k, v, out, lse, do, *grads)
    torch.cuda.synchronize()
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    ref_o, _ = reference(kernel, q64, k64, v64, scale)
    want = torch.autograd.grad(ref_o, (q64, k64, v64), do.double())
    floor = stored_o_gradients(kernel, q, k, v, out, do, scale)
    row = {"kernel": kernel + "_backward", "B": B, "H": H, "NQ": NQ,
           "NK": NK, "hot": hot, "finite": all(bool(torch.isfinite(g).all())
                                               for g in grads)}
    ok = row["finite"]
    for name, got, w, f in zip(("dq", "dk", "dv"), grads, want, floor):
        err = rel(got, w)
        method = rel(f, w) if w.norm() > 0 else 0.0
        row["rel_" + name] = err
        row["method_" + name] = method
        ok = ok and err < 1e-2 + 1.25 * method
    row["ok"] = bool(ok)
    return row


def bench_backward(kern, bkern, kernel, N, compiled):
    """Forward+backward: flashc's kernels against FlexAttention's compiled
    forward and its backward through autograd."""
    B, H, D = 32768 // N, 16, 128
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda",
                               dtype=torch.bfloat16) for _ in range(4))
    pairs = visible(kernel, N, N, "cuda").sum().item()
    flops = 4 * D * B * H * pairs * 3.5  # forward + 2.5x backward
    row = {"kernel": kernel + "_fwd_bwd", "B": B, "H": H, "N": N}
    out = torch.empty_like(q)
    lse = torch.empty(B, H, N, device="cuda")
    grads = [torch.empty_like(t) for t in (q, k, v)]

    def flashc_step():
        kern(q, k, v, out=out, lse=lse)
        bkern.backward(q, k, v, out, lse, do, *grads)
    timed = {"flashc": flashc_step}
    if compiled is not None:
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        flex = flex_call(kernel, N, N, "cuda", compiled)

        def flex_step():
            torch.autograd.grad(flex(qg, kg, vg), (qg, kg, vg), do)
        timed["flex"] = flex_step
    compare.time_all(timed, flops, row)
    if "flashc_ms" in row and "flex_ms" in row:
        row["flashc_over_flex"] = row["flex_ms"] / row["flashc_ms"]
    return row


def check(kern, kernel, B, H, NQ, NK, hot, with_flex):
    """One case; FlexAttention (eager: no compile per shape) beside it."""
    gen = torch.Generator(device="cuda").manual_seed(NQ * 7 + NK)
    q, k, v = (torch.randn(B, H, n, 128, device="cuda", dtype=torch.bfloat16,
                           generator=gen) for n in (NQ, NK, NK))
    if hot:
        q[:, :, ::3] *= 1000.0  # logits near 1e3 and beyond
    scale = 1 / math.sqrt(128)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, NQ), float("nan"), device="cuda")
    kern(q, k, v, out=out, lse=lse)
    torch.cuda.synchronize()
    ref_o, ref_lse = reference(kernel, q, k, v, scale)
    seen = torch.isfinite(ref_lse)
    row = {"kernel": kernel, "B": B, "H": H, "NQ": NQ, "NK": NK, "hot": hot,
           "hidden_rows": int((~seen).sum())}
    row["hidden_ok"] = bool(
        torch.all(out[~seen] == 0) and torch.all(lse[~seen] == float("-inf")))
    row["finite"] = bool(torch.isfinite(out[seen]).all()
                         and torch.isfinite(lse[seen]).all())
    row["rel_o"] = rel(out[seen], ref_o[seen]) if seen.any() else 0.0
    row["rel_lse"] = rel(lse[seen], ref_lse[seen]) if seen.any() else 0.0
    flex_err = 0.0
    if with_flex:
        try:
            flex_o = flex_call(kernel, NQ, NK, "cuda", None)(q, k, v)
            flex_err = rel(flex_o[seen], ref_o[seen]) if seen.any() else 0.0
            row["flex_rel_o"] = flex_err
        except Exception as e:  # a shape FlexAttention refuses
            row["flex_rel_o"] = str(e).splitlines()[0][:80]
    row["ok"] = (row["hidden_ok"] and row["finite"] and row["rel_lse"] < 1e-3
                 and row["rel_o"] < max(2e-2, 1.5 * flex_err))
    return row


def bench(kern, kernel, N, compiled):
    B, H, D = 32768 // N, 16, 128
    q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    pairs = visible(kernel, N, N, "cuda").sum().item()
    flops = 4 * D * B * H * pairs
    row = {"kernel": kernel, "B": B, "H": H, "N": N}
    out = torch.empty_like(q)
    lse = torch.empty(B, H, N, device="cuda")
    timed = {
        "flashc": lambda: kern(q, k, v, out=out, lse=lse),
        "flashc_dense_causal": lambda: flashc.attention(q, k, v, causal=True),
    }
    if compiled is not None:
        timed["flex"] = (lambda f: lambda: f(q, k, v))(
            flex_call(kernel, N, N, "cuda", compiled))
    compare.time_all(timed, flops, row)
    dense = 4 * D * B * H * N * (N + 1) / 2
    if "flashc_dense_causal_ms" in row:
        row["flashc_dense_causal_tflops"] = dense / row[
            "flashc_dense_causal_ms"] / 1e9
    if "flashc_ms" in row and "flex_ms" in row:
        row["flashc_over_flex"] = row["flex_ms"] / row["flashc_ms"]
    if "flashc_ms" in row and "flashc_dense_causal_ms" in row:
        row["speedup_over_dense_causal"] = (row["flashc_dense_causal_ms"]
                                            / row["flashc_ms"])
    return row


def main():
    global CHUNK
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--backward", metavar="BWD",
                        help="also the backward kernels in BWD")
    parser.add_argument("--seqs", default="8192,16384,32768",
                        help="the sequence lengths --bench times")
    parser.add_argument("--no-flex-bench", action="store_true",
                        help="time flashc alone (no FlexAttention compile)")
    parser.add_argument("--only", default="",
                        help="only the kernels whose name has this")
    parser.add_argument("--chunk", type=int, default=CHUNK,
                        help="the chunk attention_chunked in DIR was "
                             "compiled with")
    parser.add_argument("--small", action="store_true",
                        help="one small case per kernel, no FlexAttention "
                             "(for compute-sanitizer)")
    args = parser.parse_args()
    CHUNK = args.chunk
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    compiled = None
    if not args.small and not args.no_flex_bench:
        from torch.nn.attention.flex_attention import flex_attention
        compiled = torch.compile(flex_attention, dynamic=False)
    rows = []
    for kernel in ("attention_softcap", "attention_sliding_window",
                   "attention_chunked"):
        if args.only not in kernel:
            continue
        path = os.path.join(args.dir, kernel + ".json")
        if not os.path.exists(path):
            print(f"{kernel}: not in {args.dir}")
            continue
        kern = flashc.load(path)
        cases = [(2, 4, 1000, 1000, False), (1, 4, 1000, 1000, True),
                 (1, 2, 130, 130, False), (1, 2, 300, 700, False),
                 (1, 2, 700, 300, False), (1, 2, 3000, 3000, True),
                 (1, 2, 1500, 1000, False), (1, 2, 2500, 1300, False),
                 (1, 2, 1, 1, False)]
        if args.small:
            cases = [(1, 2, 300, 200, True)]
        for B, H, NQ, NK, hot in cases:
            row = check(kern, kernel, B, H, NQ, NK, hot, not args.small)
            print(json.dumps(row), flush=True)
            rows.append(row)
        if args.bench:
            for N in (int(x) for x in args.seqs.split(",")):
                row = bench(kern, kernel, N, compiled)
                print(json.dumps(row), flush=True)
                rows.append(row)
        bpath = args.backward and os.path.join(args.backward,
                                               kernel + "_backward.json")
        if bpath and os.path.exists(bpath):
            bkern = flashc.load(bpath)
            bcases = [(1, 2, 300, 300, False), (1, 2, 130, 200, False),
                      (1, 2, 700, 300, False), (1, 2, 1500, 1500, True),
                      (2, 2, 1100, 1100, False)]
            if args.small:
                bcases = [(1, 2, 200, 150, True)]
            for B, H, NQ, NK, hot in bcases:
                row = check_backward(kern, bkern, kernel, B, H, NQ, NK, hot)
                print(json.dumps(row), flush=True)
                rows.append(row)
            if args.bench:
                for N in (int(x) for x in args.seqs.split(",")):
                    row = bench_backward(kern, bkern, kernel, N, compiled)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    try:
        from torch._dynamo.utils import counters
        fallbacks = {k: v for k, v in counters["inductor"].items()
                     if "fallback" in k}
        print("inductor fallbacks:", fallbacks)
    except Exception:
        pass
    compare.finish_probe(rows, args.json)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The shipped kernels that read captures or take sinks, on the GPU:
correctness against float64 and speed beside FlexAttention.

    python3 bench/captures_probe.py DIR [--backward BWD] [--bench] [--json OUT]

DIR holds compiled kernels (<name>.cubin + <name>.json) of
kernels/attention_alibi.mlir (slopes[h] * (kv - q) added to each logit,
causal), attention_document.mlir (a query sees its own document's keys,
document ids B x N and their block mask, flashc.document_key_ranges,
causal), attention_prefix_lm.mlir (the first prefix[b]
keys bidirectionally, then causal; its block mask from
flashc.prefix_lm_key_ranges) and attention_sink.mlir (D 64, causal,
one sink logit per head in every row's denominator). Each runs through the
runtime (flashc.load, its captures passed in the source's order) on random
bf16 inputs with O and LSE poisoned (NaN) first, and is compared by
relative error with float64 attention under the same mods. Cases: ragged
lengths, seq_q != seq_k (with seq_q > seq_k the causal mask hides the
first rows entirely: O = 0 and LSE = -inf, or the sink), rows with logits
near 1e3.

--backward BWD: BWD holds <name>_backward.cubin/.json (flashc --backward):
dQ, dK, dV (and dsinks) against float64 autograd, the bar 1e-2 or 1.25x the
error of float64 run on the stored O (the method's own floor on the rows
near 1e3).

--bench: bf16, D 128, 16 heads, N 8k/16k/32k (B = 32k / N): flashc beside
FlexAttention compiled once per shape (dynamic=False, its block mask built
once per input, timed after warm-up; inductor's fallback counters are
printed at the end), forward and (with --backward) forward+backward.
TFLOP/s count only the work the mask leaves (4 D per visible pair;
forward+backward 3.5x that).
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

DEV = "cuda"
# Whether the document kernel's key_ranges table has the full ranges
# (4 columns): read from its kernel.json's capture shape.
FULL_RANGES = False
KERNELS = ("attention_alibi", "attention_document", "attention_prefix_lm",
           "attention_sink")
CAUSAL = {"attention_alibi": True, "attention_document": True,
          "attention_prefix_lm": False, "attention_sink": True}


def head_dim(kernel):
    return 64 if kernel == "attention_sink" else 128


def make_captures(kernel, B, H, NQ, NK, gen):
    """The kernel's captures in its source's order (on the GPU)."""
    dev = DEV
    if kernel == "attention_alibi":
        # Press et al.'s slopes, 2^(-8 (h + 1) / H).
        return [torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)],
                             device=dev)]
    if kernel == "attention_document":
        # Contiguous documents of random lengths over max(NQ, NK) rows.
        n = max(NQ, NK)
        ids = torch.empty(B, n, dtype=torch.int32, device=dev)
        for b in range(B):
            cuts = torch.randint(1, max(n, 2), (max(1, n // 600),),
                                 generator=gen, device=dev).sort().values
            ids[b] = torch.bucketize(torch.arange(n, device=dev), cuts,
                                     right=True).to(torch.int32)
        # The block mask of 128-row blocks (the kernel's key_ranges).
        return [ids, flashc.document_key_ranges(ids, 128, seq_q=NQ,
                                                seq_k=NK, full=FULL_RANGES)]
    if kernel == "attention_prefix_lm":
        prefix = torch.randint(0, NK + 1, (B,), generator=gen, device=dev,
                               dtype=torch.int32)
        return [prefix, flashc.prefix_lm_key_ranges(prefix, NQ, 128,
                                                    seq_k=NK)]
    sinks = torch.randn(H, generator=gen, device=dev) * 2.0
    return [sinks]


def visible(kernel, caps, B, nq, nk, device=DEV):
    """(B, 1, nq, nk): True where query i sees key j."""
    i = torch.arange(nq, device=device)[:, None]
    j = torch.arange(nk, device=device)[None, :]
    if CAUSAL[kernel]:
        seen = (j <= i + nk - nq)[None, None].expand(B, 1, nq, nk)
    else:
        seen = torch.ones(B, 1, nq, nk, dtype=torch.bool, device=device)
    if kernel == "attention_document":
        ids = caps[0].long()
        seen = seen & (ids[:, None, :nq, None] == ids[:, None, None, :nk])
    if kernel == "attention_prefix_lm":
        prefix = caps[0].long()[:, None, None, None]
        seen = (j[None, None] < prefix) | (j <= i)[None, None]
    return seen


def logits(kernel, q, k, scale, caps):
    """float64 scores under the score mod, -inf where the mask hides."""
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    B, H, nq, nk = s.shape
    if kernel == "attention_alibi":
        i = torch.arange(nq, device=s.device)[:, None]
        j = torch.arange(nk, device=s.device)[None, :]
        s = s + caps[0].double()[None, :, None, None] * (j - i).double()
    seen = visible(kernel, caps, B, nq, nk, s.device)
    return s.masked_fill(~seen, float("-inf")), seen


def reference(kernel, q, k, v, scale, caps, sinks=None):
    """float64 (O, LSE), differentiable (sinks too, when given as a leaf);
    rows that see no key give O = 0 and LSE = -inf (or the sink)."""
    s, seen = logits(kernel, q, k, scale, caps)
    if kernel == "attention_sink":
        sink = (sinks if sinks is not None else caps[0].double())
        col = sink[None, :, None, None].expand(*s.shape[:3], 1)
        full = torch.cat([s, col], -1)
        lse = torch.logsumexp(full, -1)
        p = torch.exp(s - lse[..., None])
        return p @ v.double(), lse
    empty = ~seen.any(-1, keepdim=True)
    s = s.masked_fill(empty, 0.0)
    p = torch.softmax(s, -1).masked_fill(empty, 0.0)
    lse = torch.logsumexp(s, -1).masked_fill(empty[..., 0], float("-inf"))
    return p @ v.double(), lse


def inputs(kernel, B, H, NQ, NK, hot, seed, with_do=False):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    D = head_dim(kernel)
    ts = [torch.randn(B, H, n, D, device=DEV, dtype=torch.bfloat16,
                      generator=gen)
          for n in ((NQ, NK, NK, NQ) if with_do else (NQ, NK, NK))]
    if hot:
        ts[0][:, :, ::3] *= 1000.0  # logits near 1e3 and beyond
    return ts, make_captures(kernel, B, H, NQ, NK, gen), 1 / math.sqrt(D)


def check(kern, kernel, B, H, NQ, NK, hot):
    (q, k, v), caps, scale = inputs(kernel, B, H, NQ, NK, hot, NQ * 7 + NK)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, NQ), float("nan"), device=DEV)
    kern(q, k, v, out=out, lse=lse, captures=caps)
    torch.cuda.synchronize()
    ref_o, ref_lse = reference(kernel, q, k, v, scale, caps)
    _, seen_mask = logits(kernel, q[:, :1], k[:, :1], scale, caps)
    empty = (~seen_mask.any(-1)).expand(B, H, NQ)
    row = {"kernel": kernel, "B": B, "H": H, "NQ": NQ, "NK": NK, "hot": hot,
           "hidden_rows": int(empty.sum())}
    # A hidden row's O is 0 and its LSE -inf, or with a sink the sink's.
    if kernel == "attention_sink":
        lse_ok = torch.all((lse[empty].double() - ref_lse[empty]).abs()
                           <= 1e-6 * (1 + ref_lse[empty].abs()))
    else:
        lse_ok = torch.all(lse[empty] == float("-inf"))
    row["hidden_ok"] = bool(torch.all(out[empty] == 0) and lse_ok)
    seen = ~empty
    row["finite"] = bool(torch.isfinite(out[seen]).all()
                         and torch.isfinite(lse[seen]).all())
    row["rel_o"] = rel(out[seen], ref_o[seen]) if seen.any() else 0.0
    row["rel_lse"] = rel(lse[seen], ref_lse[seen]) if seen.any() else 0.0
    row["ok"] = (row["hidden_ok"] and row["finite"] and row["rel_lse"] < 1e-3
                 and row["rel_o"] < 2e-2)
    return row


def stored_o_gradients(kernel, q, k, v, o, do, scale, caps):
    """float64 gradients by the backward's own recomputation: P from the
    scores and delta from the O the forward stored (the floor of the
    method on rows near 1e3)."""
    q, k, v, o, do = (t.double() for t in (q, k, v, o, do))
    s, _ = logits(kernel, q, k, scale, caps)
    delta = (do * o).sum(-1, keepdim=True)
    dsinks = None
    if kernel == "attention_sink":
        sink = caps[0].double()[None, :, None, None]
        lse = torch.logsumexp(torch.cat([s, sink.expand(*s.shape[:3], 1)],
                                        -1), -1, keepdim=True)
        p = torch.exp(s - lse)
        dsinks = -(torch.exp(sink - lse) * delta).sum((0, 2, 3))
    else:
        p = torch.softmax(s, -1).nan_to_num(0.0)
    ds = p * (do @ v.transpose(-1, -2) - delta)
    return (scale * ds @ k, scale * ds.transpose(-1, -2) @ q,
            p.transpose(-1, -2) @ do, dsinks)


def check_backward(kern, bkern, kernel, B, H, NQ, NK, hot):
    (q, k, v, do), caps, scale = inputs(kernel, B, H, NQ, NK, hot,
                                        NQ * 5 + NK, with_do=True)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, NQ), float("nan"), device=DEV)
    kern(q, k, v, out=out, lse=lse, captures=caps)
    grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    bcaps = list(caps)
    dsinks = None
    if kernel == "attention_sink":
        dsinks = torch.full((H,), float("nan"), device=DEV)
        bcaps.append(dsinks)
    bkern.backward(q, k, v, out, lse, do, *grads, captures=bcaps)
    torch.cuda.synchronize()
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    sinks = None
    if dsinks is not None:
        sinks = caps[0].double().requires_grad_()
        leaves.append(sinks)
    ref_o, _ = reference(kernel, *leaves[:3], scale, caps, sinks)
    want = torch.autograd.grad(ref_o, leaves, do.double())
    floor = stored_o_gradients(kernel, q, k, v, out, do, scale, caps)
    got = grads + ([dsinks] if dsinks is not None else [])
    row = {"kernel": kernel + "_backward", "B": B, "H": H, "NQ": NQ,
           "NK": NK, "hot": hot,
           "finite": all(bool(torch.isfinite(g).all()) for g in got)}
    ok = row["finite"]
    for name, g, w, f in zip(("dq", "dk", "dv", "dsinks"), got, want, floor):
        err = rel(g, w)
        method = rel(f, w) if w.norm() > 0 else 0.0
        row["rel_" + name] = err
        row["method_" + name] = method
        ok = ok and err < 1e-2 + 1.25 * method
    row["ok"] = bool(ok)
    return row


def flex_call(kernel, caps, B, nq, nk, compiled):
    """FlexAttention with the kernel's mods (its block mask built here)."""
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    score_mod = None
    if kernel == "attention_alibi":
        slopes = caps[0]

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + slopes[h] * (kv_idx - q_idx)
    if kernel == "attention_document":
        ids = caps[0]

        def mask_mod(b, h, q_idx, kv_idx):
            return (ids[b, q_idx] == ids[b, kv_idx]) & (
                kv_idx <= q_idx + nk - nq)
    elif kernel == "attention_prefix_lm":
        prefix = caps[0]

        def mask_mod(b, h, q_idx, kv_idx):
            return (kv_idx < prefix[b]) | (kv_idx <= q_idx)
    else:
        def mask_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + nk - nq
    per_batch = kernel in ("attention_document", "attention_prefix_lm")
    block_mask = create_block_mask(mask_mod, B if per_batch else None, None,
                                   nq, nk, device=DEV)
    fn = compiled if compiled is not None else flex_attention
    return lambda q, k, v: fn(q, k, v, score_mod=score_mod,
                              block_mask=block_mask)


def bench_captures(kernel, B, H, N):
    """The timing runs' captures: documents of 1k-4k rows, prefixes of a
    quarter of the sequence."""
    gen = torch.Generator(device=DEV).manual_seed(N)
    if kernel == "attention_document":
        ids = torch.empty(B, N, dtype=torch.int32, device=DEV)
        for b in range(B):
            lengths = torch.randint(1024, 4097, (N // 1024 + 1,),
                                    generator=gen, device=DEV)
            ends = lengths.cumsum(0)
            ids[b] = torch.bucketize(torch.arange(N, device=DEV), ends,
                                     right=True).to(torch.int32)
        return [ids, flashc.document_key_ranges(ids, 128, full=FULL_RANGES)]
    if kernel == "attention_prefix_lm":
        prefix = torch.full((B,), N // 4, dtype=torch.int32, device=DEV)
        return [prefix, flashc.prefix_lm_key_ranges(prefix, N, 128)]
    return make_captures(kernel, B, H, N, N, gen)


def bench(kern, bkern, kernel, N, compiled):
    B, H, D = 32768 // N, 16, head_dim(kernel)
    q, k, v, do = (torch.randn(B, H, N, D, device=DEV,
                               dtype=torch.bfloat16) for _ in range(4))
    caps = bench_captures(kernel, B, H, N)
    pairs = visible(kernel, caps, B, N, N).sum().item()
    flops = 4 * D * H * pairs
    rows = []
    out = torch.empty_like(q)
    lse = torch.empty(B, H, N, device=DEV)
    row = {"kernel": kernel, "B": B, "H": H, "N": N,
           "visible": pairs / (B * N * N)}
    timed = {"flashc": lambda: kern(q, k, v, out=out, lse=lse,
                                    captures=caps)}
    flex = None
    if compiled is not None and kernel != "attention_sink":
        flex = flex_call(kernel, caps, B, N, N, compiled)
        timed["flex"] = lambda: flex(q, k, v)
    compare.time_all(timed, flops, row)
    if "flashc_ms" in row and "flex_ms" in row:
        row["flashc_over_flex"] = row["flex_ms"] / row["flashc_ms"]
    rows.append(row)
    if bkern is None:
        return rows
    grads = [torch.empty_like(t) for t in (q, k, v)]
    bcaps = list(caps) + ([torch.empty(H, device=DEV)]
                          if kernel == "attention_sink" else [])

    def flashc_step():
        kern(q, k, v, out=out, lse=lse, captures=caps)
        bkern.backward(q, k, v, out, lse, do, *grads, captures=bcaps)
    row = {"kernel": kernel + "_fwd_bwd", "B": B, "H": H, "N": N}
    timed = {"flashc": flashc_step}
    if flex is not None:
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        timed["flex"] = lambda: torch.autograd.grad(flex(qg, kg, vg),
                                                    (qg, kg, vg), do)
    compare.time_all(timed, flops * 3.5, row)
    if "flashc_ms" in row and "flex_ms" in row:
        row["flashc_over_flex"] = row["flex_ms"] / row["flashc_ms"]
    rows.append(row)
    return rows


def main():
    global FULL_RANGES
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--backward", metavar="BWD")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--seqs", default="8192,16384,32768")
    parser.add_argument("--only", default="")
    parser.add_argument("--small", action="store_true",
                        help="one small case per kernel (compute-sanitizer)")
    parser.add_argument("--no-flex-bench", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    compiled = None
    if args.bench and not args.no_flex_bench:
        from torch.nn.attention.flex_attention import flex_attention
        compiled = torch.compile(flex_attention, dynamic=False)
    rows = []
    for kernel in KERNELS:
        if args.only not in kernel:
            continue
        path = os.path.join(args.dir, kernel + ".json")
        if not os.path.exists(path):
            print(f"{kernel}: not in {args.dir}")
            continue
        kern = flashc.load(path)
        with open(path) as f:
            shape = json.load(f)["captures"][-1].get("shape") or []
        FULL_RANGES = kernel == "attention_document" and shape[-1:] == [4]
        bpath = args.backward and os.path.join(args.backward,
                                               kernel + "_backward.json")
        bkern = flashc.load(bpath) if bpath and os.path.exists(bpath) \
            else None
        cases = [(2, 4, 1000, 1000, False), (1, 4, 1000, 1000, True),
                 (1, 2, 130, 130, False), (1, 2, 300, 700, False),
                 (1, 2, 700, 300, False), (1, 2, 3000, 3000, True),
                 (1, 2, 1, 1, False)]
        bcases = [(1, 2, 300, 300, False), (1, 2, 130, 200, False),
                  (1, 2, 700, 300, False), (1, 2, 1500, 1500, True),
                  (2, 2, 1100, 1100, False)]
        if args.small:
            cases, bcases = [(1, 2, 300, 200, True)], [(1, 2, 200, 150, True)]
        for case in cases:
            row = check(kern, kernel, *case)
            print(json.dumps(row), flush=True)
            rows.append(row)
        if bkern is not None:
            for case in bcases:
                row = check_backward(kern, bkern, kernel, *case)
                print(json.dumps(row), flush=True)
                rows.append(row)
        if args.bench:
            for N in (int(x) for x in args.seqs.split(",")):
                for row in bench(kern, bkern, kernel, N, compiled):
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    try:
        from torch._dynamo.utils import counters
        print("inductor fallbacks:", {k: v for k, v in
                                      counters["inductor"].items()
                                      if "fallback" in k})
    except Exception:
        pass
    compare.finish_probe(rows, args.json)


if __name__ == "__main__":
    main()

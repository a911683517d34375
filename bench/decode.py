#!/usr/bin/env python3
"""K+V read bandwidth of a decoding step: flashc beside cuDNN, FA2, Flex.

One new query token per sequence (Sq = 1) against a K/V cache of KV keys
per sequence, batch B, H_q = 32 query heads over H_kv = 8 K/V heads,
D = 128, bf16, no mask (a decoding step's one query sees the whole
cache). The shapes are B in 1, 8, 64 and KV in 4k, 32k, 128k with
B x KV at most 2M tokens (issue 45's table). Backends:

  flashc-paged   flashc's decoding kernels (split and combine) over a
                 vLLM-style paged cache (--page-size rows a page, the pages
                 of each sequence scattered at random), split count from
                 the runtime's rule (flashrt_decode_num_splits);
  flashc         the same over a contiguous cache (B x KV x H_kv x D);
  cudnn          SDPA's cuDNN backend, q B x 32 x 1 x D, k and v
                 B x 8 x KV x D (enable_gqa);
  fa2            SDPA's FlashAttention-2 backend, the same tensors;
  flex           torch.compile(flex_attention) (its decoding kernel for a
                 single query), enable_gqa.

Every backend's output is checked against SDPA's math backend in float32
on the same inputs (relative error printed). Timing is bench/compare.py's
(triton.testing.do_bench's median, L2 flushed before every call, over
three rotating input sets, rounds with the order rotated). Bandwidth:
bytes of K and V read (B x KV x H_kv x D x 2 x 2) over the time; the
copy line is a device-to-device copy of 1 GiB, (read + write) / time.

    python3 bench/decode.py [--page-size 256] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import compare  # noqa: E402  (the timing schedule)

HQ, HKV, D = 32, 8, 128
SHAPES = [(b, kv) for b in (1, 8, 64) for kv in (4096, 32768, 131072)
          if b * kv <= 2 * 1024 * 1024]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page-size", type=int, default=256)
    p.add_argument("--sets", type=int, default=3,
                   help="rotating input sets per shape")
    p.add_argument("--rep-ms", type=float, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--settle-ms", type=float, default=1000)
    p.add_argument("--own-load-ms", type=float, default=100)
    p.add_argument("--shapes", default=None,
                   help="B:KV,B:KV,... (default: the issue's table)")
    p.add_argument("--json", default=None)
    return p.parse_args(argv)


def paged(k, page_size, gen):
    """k (B x KV x H x D) as vLLM pages num_pages x P x H x D, each
    sequence's pages at random places, and its page table."""
    import torch
    b, kv, h, d = k.shape
    per = -(-kv // page_size)
    order = torch.randperm(b * per, generator=gen).to(k.device)
    cache = torch.empty(b * per, page_size, h, d, dtype=k.dtype,
                        device=k.device)
    pad = per * page_size - kv
    src = torch.nn.functional.pad(k, (0, 0, 0, 0, 0, pad))
    cache[order] = src.reshape(b * per, page_size, h, d)
    table = order.reshape(b, per).to(torch.int32)
    return cache, table


def copy_bandwidth():
    import torch
    n = 1 << 29  # 1 GiB of bf16
    a = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    c = torch.empty_like(a)
    ms = compare.bench_fn(lambda: c.copy_(a), 100)
    return 2 * a.numel() * 2 / (ms * 1e-3) / 1e12


def main():
    args = parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import flex_attention
    import flashc

    name = torch.cuda.get_device_name()
    print(f"GPU: {name}; torch {torch.__version__}")
    copy = copy_bandwidth()
    print(f"copy bandwidth (read + write): {copy:.2f} TB/s")
    shapes = SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split(":"))
                  for s in args.shapes.split(",")]
    flex = torch.compile(flex_attention, dynamic=False)
    gen = torch.Generator().manual_seed(0)
    cgen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for b, kv in shapes:
        row = {"batch": b, "kv": kv, "page_size": args.page_size}
        kv_bytes = b * kv * HKV * D * 2 * 2
        # Rotating sets where memory allows (do_bench flushes L2 anyway):
        # each set is a contiguous cache and its paged copy.
        nsets = max(1, min(args.sets, int(24e9 // (2 * kv_bytes))))
        sets = []
        for _ in range(nsets):
            def rand(*shape):
                return torch.randn(*shape, device="cuda", generator=cgen,
                                   dtype=torch.bfloat16)
            q, k, v = rand(b, HQ, 1, D), rand(b, kv, HKV, D), rand(b, kv, HKV, D)
            kc, table = paged(k, args.page_size, gen)
            vc = torch.empty_like(kc)
            vc[table.flatten().long()] = torch.nn.functional.pad(
                v, (0, 0, 0, 0, 0, table.shape[1] * args.page_size - kv)
            ).reshape(-1, args.page_size, HKV, D)
            lens = torch.full((b,), kv, dtype=torch.int32, device="cuda")
            sets.append(dict(q=q, k=k, v=v, kc=kc, vc=vc, table=table,
                             lens=lens, kt=k.transpose(1, 2),
                             vt=v.transpose(1, 2)))
        s0 = sets[0]
        # The reference for the first two sequences (the math backend
        # repeats K and V over the group, in float32).
        nb = min(b, 2)
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(
                s0["q"][:nb].float(), s0["kt"][:nb].float(),
                s0["vt"][:nb].float(), enable_gqa=True)

        def sdpa(backend):
            def call(s):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(
                        s["q"], s["kt"], s["vt"], enable_gqa=True)
            return call

        calls = {
            "flashc-paged": lambda s: flashc.attention_with_kvcache(
                s["q"], s["kc"], s["vc"], s["lens"], s["table"]),
            "flashc": lambda s: flashc.attention_with_kvcache(
                s["q"], s["k"], s["v"], None, None),
            "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
            "fa2": sdpa(SDPBackend.FLASH_ATTENTION),
            "flex": lambda s: flex(s["q"], s["kt"], s["vt"],
                                   enable_gqa=True),
        }
        timed = []
        for label, call in calls.items():
            try:
                out = call(s0)
                torch.cuda.synchronize()
                out = out[:nb].float()
                err = ((out - ref).norm() / ref.norm()).item()
                row[label + "_err"] = err
                it = [0]

                def fn(call=call, it=it):
                    s = sets[it[0] % len(sets)]
                    it[0] += 1
                    return call(s)
                timed.append((label, fn))
            except Exception as e:
                row[label + "_why"] = str(e).splitlines()[0][:100]
        compare.settle([fn for _, fn in timed], args.settle_ms)
        runs = compare.time_rounds(timed, args.rounds, args.rep_ms, row,
                                   args.own_load_ms)
        for label, times in runs.items():
            ms = statistics.median(t for t, _ in times)
            row[label + "_ms"] = ms
            row[label + "_tbs"] = kv_bytes / (ms * 1e-3) / 1e12
            row[label + "_runs"] = [t for t, _ in times]
        rows.append(row)
        cells = []
        for label in calls:
            if label + "_tbs" in row:
                cells.append(f"{label} {row[label + '_ms'] * 1e3:.1f} us "
                             f"{row[label + '_tbs']:.2f} TB/s "
                             f"(err {row[label + '_err']:.1e})")
            else:
                cells.append(f"{label} - ({row.get(label + '_why', '?')})")
        print(f"B={b} KV={kv}: " + "; ".join(cells), flush=True)

    labels = list(calls)
    print()
    print(f"K+V read bandwidth, TB/s ({name}; H_q {HQ}, H_kv {HKV}, D {D}, "
          f"bf16, Sq 1, page {args.page_size}; copy {copy:.2f} TB/s)")
    print()
    print("| B | KV | " + " | ".join(labels)
          + " | flashc-paged / cudnn | paged / contiguous |")
    print("|" + "---|" * (len(labels) + 4))
    for r in rows:
        def tbs(label):
            x = r.get(label + "_tbs")
            return "-" if x is None else f"{x:.2f}"
        ratio = compare.ratio(r.get("flashc-paged_tbs"), r.get("cudnn_tbs"))
        ratio2 = compare.ratio(r.get("flashc-paged_tbs"), r.get("flashc_tbs"))
        print(f"| {r['batch']} | {r['kv'] // 1024}k | "
              + " | ".join(tbs(label) for label in labels)
              + f" | {ratio} | {ratio2} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": name, "copy_tbs": copy, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()

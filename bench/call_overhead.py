#!/usr/bin/env python3
"""What a cached flashc.attention call costs on the host, and where.

For each shape the call's host time: the median over --calls calls of the
time flashc.attention (or F.scaled_dot_product_attention, the reference)
takes to return, each call issued with the GPU idle (a synchronize before
it), so that the time is the dispatch and launch a call adds before its
kernel can run, not the kernel. Beside it the same host time of an empty
kernel launch through PyTorch (torch.empty(0).add_(1) on the device) as
the floor any eager op pays, and with --parts the pieces of flashc's call
timed on their own (argument checks, the kernel lookup, the tensor
descriptors, the output allocations, the stream lookup, the runtime call,
and the runtime call's floor: ctypes alone, and the launch refused before
any validation).

    FLASHC_LIBRARY=DIR python3 bench/call_overhead.py [--calls 2000] [--parts]
        [--json OUT]

With --decode, the same for decoding steps (flashc.attention_with_kvcache,
B = 1, 32 query heads over 8 K/V heads, D = 128, bf16, one new token):
over a paged cache (pages of 256) and a contiguous one, beside the same
call through Kernel.decode (the descriptors, the runtime's validation and
the workspace's size worked out on every call, which the prepared call
does once per signature) and SDPA's cuDNN backend on the same step.

Needs a GPU and the kernels of the shapes below in FLASHC_LIBRARY (or a
compiler for flashc.attention to build them).
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import flashc
from flashc import ops

SHAPES = [
    # (dtype, B, H, Nq, Nk, D, causal)
    ("bfloat16", 1, 8, 128, 128, 64, False),
    ("bfloat16", 2, 16, 1024, 1024, 128, True),
    ("float16", 4, 16, 512, 512, 64, True),
]


def host_us(fn, calls):
    """Median host time of fn() in microseconds, the GPU idle before each."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def first_use_us(b, h, nq, nk, d, dtype, causal, sets=200):
    """Median host time of a call on tensors flashc has not seen (their
    tensor maps are made then): `sets` distinct q, k, v kept alive."""
    pool = [tuple(torch.randn(b, h, n, d, device="cuda", dtype=dtype)
                  for n in (nq, nk, nk)) for _ in range(sets)]
    torch.cuda.synchronize()
    times = []
    for q, k, v in pool:
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        flashc.attention(q, k, v, causal=causal)
        times.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def one_buffer(q):
    """O and LSE carved out of one allocation."""
    b, h, n, d = q.shape
    o_bytes = b * h * n * d * q.element_size()
    buf = torch.empty(o_bytes + b * h * n * 4, dtype=torch.uint8,
                      device=q.device)
    return (buf[:o_bytes].view(q.dtype).view(b, h, n, d),
            buf[o_bytes:].view(torch.float32).view(b, h, n))


def parts(q, k, v, causal, calls):
    """The pieces of a cached eager call, each timed alone."""
    kern = ops.kernel_for(q, k, causal, None)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    descs = [flashc._describe(n, t) for n, t in
             (("q", q), ("k", k), ("v", v), ("o", out))]
    lse_desc = flashc._describe("lse", lse)
    lib = flashc.runtime_library()
    handle = kern._handle(q.device.index)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    import ctypes

    def launch():
        flashc._check(lib.flashrt_launch(
            handle, *[ctypes.byref(d) for d in descs], ctypes.byref(lse_desc),
            ctypes.c_void_p(stream)))

    def refused():
        lib.flashrt_launch(None, *[ctypes.byref(d) for d in descs],
                           ctypes.byref(lse_desc), ctypes.c_void_p(stream))

    pieces = {
        "grad/compile checks": lambda: (torch.is_grad_enabled(),
                                        torch.compiler.is_compiling()),
        "argument checks": lambda: ops._check(q, k, v),
        "kernel lookup": lambda: ops.kernel_for(q, k, causal, None),
        "5 descriptors": lambda: [flashc._describe(n, t) for n, t in
                                  (("q", q), ("k", k), ("v", v), ("o", out),
                                   ("lse", lse))],
        "2 allocations": lambda: (
            torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)),
        "O by q.new_empty": lambda: q.new_empty(q.shape),
        "O and LSE in one buffer": lambda: one_buffer(q),
        "stream lookup": lambda: torch.cuda.current_stream(q.device).cuda_stream,
        "raw stream lookup": lambda: torch._C._cuda_getCurrentRawStream(
            q.device.index),
        "runtime launch": launch,
        # The runtime launch's floor from Python: a ctypes call with no
        # arguments, and flashrt_launch with the same arguments refused at
        # its first check (no kernel), so the rest of "runtime launch" is
        # the runtime's validation and the driver.
        "ctypes call, no arguments": lib.flashrt_abi_version,
        "runtime launch refused at once": refused,
    }
    return {name: host_us(fn, calls) for name, fn in pieces.items()}


DECODE_SHAPES = [(1, 4096), (1, 32768)]  # (B, KV)


def decode_rows(calls):
    """Host time per decoding call (--decode): flashc's prepared call over
    a paged and a contiguous cache, Kernel.decode, and SDPA's cuDNN
    backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    hq, hkv, d, page = 32, 8, 128, 256
    rows = []
    print("| decoding step | flashc paged | flashc contiguous | "
          "Kernel.decode paged | cuDNN |")
    print("| --- | --- | --- | --- | --- |")
    for b, kv in DECODE_SHAPES:
        torch.manual_seed(0)
        q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, kv, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kc = k.reshape(-1, page, hkv, d)
        vc = v.reshape(-1, page, hkv, d)
        table = torch.arange(kc.shape[0], dtype=torch.int32,
                             device="cuda").reshape(b, -1)
        lens = torch.full((b,), kv, dtype=torch.int32, device="cuda")
        kern = ops.decode_kernel_for(q, False, None, None, None, None, False,
                                     page, True)
        kt, vt = k.transpose(1, 2), v.transpose(1, 2)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, kt, vt,
                                                      enable_gqa=True)
        cells = {
            "paged": lambda: flashc.attention_with_kvcache(q, kc, vc, lens,
                                                           table),
            "contiguous": lambda: flashc.attention_with_kvcache(q, k, v,
                                                                None, None),
            "Kernel.decode paged": lambda: kern.decode(q, kc, vc, lens,
                                                       table),
            "cudnn": cudnn,
        }
        us = {name: host_us(fn, calls) for name, fn in cells.items()}
        name = f"B={b} KV={kv}"
        print(f"| {name} | " + " | ".join(f"{t:.1f} us" for t in us.values())
              + " |")
        rows.append({"shape": name, **{f"{n}_us": t for n, t in us.items()}})
    return rows


def write_json(path, gpu, floor, rows):
    if path:
        with open(path, "w") as f:
            json.dump({"gpu": gpu, "floor_us": floor, "rows": rows}, f,
                      indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--parts", action="store_true")
    parser.add_argument("--decode", action="store_true",
                        help="decoding steps instead of the forward")
    parser.add_argument("--json")
    args = parser.parse_args()
    gpu = torch.cuda.get_device_name()
    empty = torch.empty(0, device="cuda")
    floor = host_us(lambda: empty.add_(1), args.calls)
    rows = []
    print(f"# {gpu}; host time per call, median of {args.calls}, GPU idle "
          f"before each; an empty eager op: {floor:.1f} us")
    if args.decode:
        write_json(args.json, gpu, floor, decode_rows(args.calls))
        return 0
    print("| shape | flashc.attention | SDPA | flashc - SDPA |")
    print("| --- | --- | --- | --- |")
    for dt, b, h, nq, nk, d, causal in SHAPES:
        dtype = getattr(torch, dt)
        torch.manual_seed(0)
        q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, h, nk, d, device="cuda", dtype=dtype)
        v = torch.randn(b, h, nk, d, device="cuda", dtype=dtype)
        flashc.attention(q, k, v, causal=causal)
        mine = host_us(lambda: flashc.attention(q, k, v, causal=causal),
                       args.calls)
        sdpa = host_us(lambda: F.scaled_dot_product_attention(
            q, k, v, is_causal=causal), args.calls)
        name = f"{dt} {b}x{h}x{nq}x{d}{' causal' if causal else ''}"
        print(f"| {name} | {mine:.1f} us | {sdpa:.1f} us | "
              f"{mine - sdpa:+.1f} us |")
        fresh = first_use_us(b, h, nq, nk, d, dtype, causal)
        print(f"|   first call on new tensors | {fresh:.1f} us | | |")
        row = {"shape": name, "flashc_us": mine, "sdpa_us": sdpa,
               "first_use_us": fresh}
        if args.parts:
            row["parts_us"] = parts(q, k, v, causal, args.calls)
            for piece, us in row["parts_us"].items():
                print(f"|   {piece} | {us:.2f} us | | |")
        rows.append(row)
    write_json(args.json, gpu, floor, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

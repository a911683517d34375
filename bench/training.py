#!/usr/bin/env python3
"""Times attention for training through the user's path: flashc.attention
(its custom op and autograd, default and deterministic backward) beside
PyTorch SDPA's cuDNN and FlashAttention-2 backends, in one run.

Shapes are the FlashAttention-3 paper's: bf16, 16k tokens per batch
(B = 16384 / N), hidden 2048 (H = 16 at D 128, 32 at D 64), N = --seqs,
causal and not. Per shape and backend two timings:

  bwd      torch.autograd.grad of one forward's output (retain_graph),
           counted as 2.5x the forward's FLOPs, as the FlashAttention
           papers count;
  fwd+bwd  the forward and that gradient, 3.5x the forward's FLOPs.

Forward FLOPs: 4 * B * H * N^2 * D, halved under the causal mask. Timing
is bench/compare.py's (triton.testing.do_bench's median, L2 flushed;
CUDA events without Triton), each backend's rounds rotated as
compare.time_rounds does, the median of the rounds.

    python3 bench/training.py [--dims 64,128] [--seqs 1024,...]
        [--rounds 3] [--json OUT]

Kernels come from flashc's cache or FLASHC_LIBRARY, as for any user.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

import flashc  # noqa: E402


def backends():
    """label -> attention(q, k, v, causal) with autograd."""
    def sdpa(backend):
        def call(q, k, v, causal):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=causal)
        return call

    return {
        "flashc": lambda q, k, v, c: flashc.attention(q, k, v, causal=c),
        "flashc_det": lambda q, k, v, c: flashc.attention(
            q, k, v, causal=c, deterministic=True),
        "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
        "fa2": sdpa(SDPBackend.FLASH_ATTENTION),
    }


def shape_row(attention, d, n, causal, rounds, rep_ms):
    b, h = 16384 // n, 2048 // d
    fwd_flops = compare.flops((b, h, n, d), causal)
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda",
                               dtype=torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    row = {"B": b, "H": h, "N": n, "D": d, "causal": causal}
    timed = []
    for label, call in attention.items():
        try:
            o = call(q, k, v, causal)
        except Exception as e:
            row[label + "_why"] = str(e).splitlines()[0][:100]
            continue

        def bwd(o=o):
            torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

        def fwd_bwd(call=call):
            torch.autograd.grad(call(q, k, v, causal), (q, k, v), do)

        timed += [(label + "_bwd", bwd), (label + "_fwdbwd", fwd_bwd)]
    runs = compare.time_rounds(timed, rounds, rep_ms, row)
    for label, times in runs.items():
        ms = statistics.median(t for t, _ in times)
        flops = fwd_flops * (2.5 if label.endswith("_bwd") else 3.5)
        row[label + "_ms"] = ms
        row[label + "_tflops"] = flops / ms / 1e9
    return row


def markdown(rows, gpu):
    labels = ("flashc", "flashc_det", "cudnn", "fa2")
    lines = [f"GPU: {gpu}. TFLOP/s (bf16, 16k tokens, hidden 2048).", ""]
    for part, title in (("bwd", "backward"), ("fwdbwd", "forward+backward")):
        lines += [f"{title}:", "",
                  "| D | causal | N | " + " | ".join(labels)
                  + " | flashc / cuDNN | det / default |",
                  "|---" * (len(labels) + 5) + "|"]
        for r in rows:
            vals = [r.get(f"{lab}_{part}_tflops") for lab in labels]
            cells = ["-" if x is None else f"{x:.0f}" for x in vals]
            ratio = (f"{vals[0] / vals[2]:.2f}" if vals[0] and vals[2]
                     else "-")
            det = f"{vals[1] / vals[0]:.2f}" if vals[0] and vals[1] else "-"
            lines.append(f"| {r['D']} | {'yes' if r['causal'] else 'no'} | "
                         f"{r['N']} | " + " | ".join(cells)
                         + f" | {ratio} | {det} |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", default="64,128")
    parser.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rep-ms", type=float, default=60)
    parser.add_argument("--json")
    args = parser.parse_args()
    gpu = torch.cuda.get_device_name()
    print(gpu, flush=True)
    attention = backends()
    rows = []
    for d in (int(x) for x in args.dims.split(",")):
        for causal in (False, True):
            for n in (int(x) for x in args.seqs.split(",")):
                row = shape_row(attention, d, n, causal, args.rounds,
                                args.rep_ms)
                print(json.dumps(row), flush=True)
                rows.append(row)
    print(markdown(rows, gpu))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Times flashc kernels against each other on one shape, interleaved.

For a change that should make a kernel faster: the kernels (each a cubin
with its kernel.json beside it) run on the same random inputs in one
process, timed with compare.py's schedule (rounds with the order rotated,
each timing right after untimed load of the same kernel, the median of the
rounds). The table gives each kernel's TFLOP/s, its time over the first
kernel's, the spread of its rounds, and the relative difference of its
output from the first kernel's.
Correctness is `flash-run --check`'s job; this only times.

    python3 bench/ab.py --shape 8,16,2048,128 shipped.cubin new.cubin \\
        [--rounds 5] [--rep-ms 60] [--settle-ms 1500] [--own-load-ms 300]
        [--json out.json]
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


def parse_shape(text):
    """'B,H,N,D' -> (B, H, N, D), all positive."""
    parts = text.split(",")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if len(shape) != 4 or min(shape) <= 0:
        raise ValueError(f"--shape wants four positive integers B,H,N,D, "
                         f"got '{text}'")
    return shape


def metadata_path(kernel):
    root, ext = os.path.splitext(kernel)
    return kernel if ext == ".json" else root + ".json"


def check_kernels(shape, metas):
    """Every kernel must compute the same thing on `shape`: one dtype, one
    causal flag, and the shape's head dimension. Raises ValueError naming
    the first kernel that differs."""
    first_name, first = metas[0]
    for name, meta in metas:
        if meta["head_dim"] != shape[3]:
            raise ValueError(f"{name}: head_dim {meta['head_dim']}, but the "
                             f"shape has D = {shape[3]}")
        for key in ("dtype", "causal"):
            if meta[key] != first[key]:
                raise ValueError(f"{name}: {key} {meta[key]}, but "
                                 f"{first_name} has {first[key]}")


def load_metas(shape, kernels):
    """[(kernel, its kernel.json)], checked to compute the same thing on
    `shape` (check_kernels). Raises ValueError or OSError."""
    metas = [(k, json.load(open(metadata_path(k)))) for k in kernels]
    check_kernels(shape, metas)
    return metas


def input_sets(shape, meta):
    """Three q, k, v sets of `shape` in the kernel's dtype (seed 0), to be
    rotated so L2 does not serve them, and the kernel's causal flag."""
    import torch
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[meta["dtype"]]
    torch.manual_seed(0)
    sets = [[torch.randn(*shape, device="cuda", dtype=dtype) for _ in range(3)]
            for _ in range(3)]
    return sets, bool(meta["causal"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernels", nargs="+", help="cubin (kernel.json beside it)")
    p.add_argument("--shape", required=True, help="B,H,N,D")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep-ms", type=float, default=60)
    # The run starts after the GPU idled (e.g. after checks): without a
    # settle the first kernel's first rounds read 5-11% fast, then up to
    # 18% slow (docs/decisions.md, "Benchmark timing schedule").
    p.add_argument("--settle-ms", type=float, default=1500,
                   help="untimed round-robin load of all kernels before the "
                   "first round")
    p.add_argument("--own-load-ms", type=float, default=300,
                   help="untimed load of a kernel right before each of its "
                   "timings (compare.py's)")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    try:
        shape = parse_shape(args.shape)
        metas = load_metas(shape, args.kernels)
    except (ValueError, OSError) as e:
        print(f"ab.py: {e}", file=sys.stderr)
        return 2

    import torch
    import flashc
    sets, causal = input_sets(shape, metas[0][1])
    # Labels carry the position: a kernel may be timed against itself.
    labels = [f"{i}:{path}" for i, path in enumerate(args.kernels)]
    timed, outs = [], []
    for label, path in zip(labels, args.kernels):
        kern = flashc.load(path)
        fn = compare.rotating(sets, kern)
        out = kern(*sets[0])
        outs.append((out[0] if isinstance(out, tuple) else out).float())
        timed.append((label, fn))
    compare.settle([fn for _, fn in timed], args.settle_ms)
    row = {}
    rounds = compare.time_rounds(timed, args.rounds, args.rep_ms, row,
                                 args.own_load_ms)
    if row:
        print(f"ab.py: {row}", file=sys.stderr)
        return 1
    total = compare.flops(shape, causal)
    first_ms = statistics.median(t for t, _ in rounds[labels[0]])
    results = []
    print(f"shape {shape}, {metas[0][1]['dtype']}, "
          f"{'causal' if causal else 'non-causal'}; {args.rounds} rounds")
    print("| kernel | TFLOP/s | time / first | rounds spread | diff vs first |")
    print("|---|---|---|---|---|")
    for i, (label, path) in enumerate(zip(labels, args.kernels)):
        times = [t for t, _ in rounds[label]]
        ms = statistics.median(times)
        diff = ((outs[i] - outs[0]).norm() / outs[0].norm()).item()
        results.append({"kernel": path, "ms": ms, "rounds": rounds[label],
                        "tflops": total / (ms * 1e-3) / 1e12,
                        "diff_vs_first": diff})
        print(f"| {i}: {os.path.basename(path)} | {results[-1]['tflops']:.1f} | "
              f"{ms / first_ms:.3f} | {max(times) / min(times) - 1:.3f} | "
              f"{diff:.1e} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": shape, "gpu": torch.cuda.get_device_name(),
                       "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

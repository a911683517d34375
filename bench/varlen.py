#!/usr/bin/env python3
"""Times flashc's packed-sequence (varlen) kernel beside dense and jagged.

One batch of --tokens tokens (default 16384) packed as sequences whose
lengths are drawn uniformly from [--min-len, --max-len] (default 128 and
4096) with --seed (the last one trimmed to fit), H = --heads (32) query
heads over --kv-heads K/V heads (default H; fewer: grouped-query
attention), D = 128, bf16, causal and not (--causal: causal only,
--non-causal: non-causal only). Each sequence attends to itself (Lq = Lk),
so the causal mask is the same at either corner. Three backends:

  varlen   flashc's packed kernel, Kernel.varlen (attention_varlen[_causal]
           from --kernels DIR, else flashc.varlen_attention's on-demand
           kernel);
  dense    the dense flashc kernel at the mean length: B = tokens // N,
           N = the mean sequence length, same H and D (DIR's kernel for
           bf16, D 128 and the mask, tuned for that shape where DIR has
           one, else flashc.attention's);
  jagged   PyTorch SDPA on jagged nested tensors of the same batch
           (torch.nested.nested_tensor_from_jagged(values, offsets),
           transposed to B x H x j x D as PyTorch's docs do,
           F.scaled_dot_product_attention; enable_gqa with fewer K/V heads).

Timing is bench/compare.py's: triton.testing.do_bench's median (L2
flushed; CUDA events without Triton) over three rotating input sets,
--settle-ms of all backends round-robin first, then --rounds rounds with
the order rotated, each timing after --own-load-ms of the same backend
untimed, the median of the rounds. FLOPs: sum over sequences of
4 * Lq * Lk * H * D, halved under the causal mask (the sequences are
square); dense: 4 * B * N^2 * H * D, halved likewise. Prints the GPU's
name, a markdown table of ms and TFLOP/s per backend, and the ratios
varlen/dense and varlen/jagged (of TFLOP/s: above 1, varlen does more
work per second), and varlen's relative difference from the jagged SDPA
output; --json OUT writes every row with each round's time.

    python3 bench/varlen.py [--kernels DIR] [--causal] [--kv-heads 8]
        [--json OUT]
"""
import argparse
import glob
import json
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import compare  # noqa: E402  (the timing schedule)

HEAD_DIM = 128


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", default=None,
                   help="directory of cubin+json: attention_varlen[_causal] "
                   "and the dense kernels (default: compiled on demand)")
    mask = p.add_mutually_exclusive_group()
    mask.add_argument("--causal", action="store_true",
                      help="causal only (default: causal and not)")
    mask.add_argument("--non-causal", action="store_true",
                      help="non-causal only")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--min-len", type=int, default=128)
    p.add_argument("--max-len", type=int, default=4096)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=None,
                   help="K/V heads (grouped-query attention; default H)")
    p.add_argument("--rep-ms", type=float, default=100, help="do_bench rep")
    p.add_argument("--rounds", type=int, default=3,
                   help="times each backend, order rotated")
    p.add_argument("--settle-ms", type=float, default=1500,
                   help="untimed round-robin load before timing (the "
                   "clock's cycle after the GPU idled)")
    p.add_argument("--own-load-ms", type=float, default=300,
                   help="untimed load of a backend right before each of its "
                   "timings")
    p.add_argument("--json", default=None,
                   help="also write every row, with each round's time and "
                   "place, to this file")
    a = p.parse_args(argv)
    if not 1 <= a.min_len <= a.max_len or a.tokens < 1:
        p.error("want 1 <= --min-len <= --max-len and --tokens >= 1")
    a.kv_heads = a.kv_heads or a.heads
    if a.kv_heads < 1 or a.heads % a.kv_heads:
        p.error(f"--kv-heads {a.kv_heads} does not divide --heads {a.heads}")
    return a


def sequence_lengths(tokens, lo, hi, seed):
    """Lengths drawn uniformly from [lo, hi] until they sum to `tokens`,
    the last one trimmed to fit."""
    rng = random.Random(seed)
    lengths, total = [], 0
    while total < tokens:
        n = min(rng.randint(lo, hi), tokens - total)
        lengths.append(n)
        total += n
    return lengths


def varlen_flops(lengths, heads, d, causal):
    """sum(Lq * Lk) * 4 * H * D over square sequences, halved if causal."""
    return sum(n * n for n in lengths) * 4 * heads * d / (2 if causal else 1)


def find_kernel(kdir, causal, packed, shape=None):
    """DIR's kernel.json for bf16, D 128 and the mask: packed (grid kind
    "packed") or dense; a dense one tuned for `shape` (B, H, N) first, else
    an untuned one; the first by name wins. None if there is none."""
    untuned = tuned = None
    for path in sorted(glob.glob(os.path.join(kdir, "*.json"))):
        try:
            meta = json.load(open(path))
        except (OSError, ValueError):
            continue
        if (meta.get("format") != "flashc-kernel"
                or meta.get("dtype") != "bf16"
                or meta.get("head_dim") != HEAD_DIM
                or bool(meta.get("causal")) != causal):
            continue
        grid = meta.get("grid")
        if (isinstance(grid, dict) and grid.get("kind") == "packed") != packed:
            continue
        t = meta.get("tuned_for")
        if t:
            if shape is not None and tuple(t["shape"][:3]) == tuple(shape) \
                    and tuned is None:
                tuned = path
        elif untuned is None:
            untuned = path
    return tuned or untuned


def rel_diff(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def jagged(t, offsets, lengths):
    """T x H x D values as a B x H x j x D jagged nested tensor (a view)."""
    import torch
    try:
        nt = torch.nested.nested_tensor_from_jagged(
            t, offsets, min_seqlen=min(lengths), max_seqlen=max(lengths))
    except TypeError:  # a torch without the cached min/max
        nt = torch.nested.nested_tensor_from_jagged(t, offsets)
    return nt.transpose(1, 2)


def run_case(args, causal, lengths, loaded):
    """One row: each backend's rounds, TFLOP/s, ms, and why one is '-'."""
    import torch
    import torch.nn.functional as F
    import flashc

    dt, h, hkv, d = torch.bfloat16, args.heads, args.kv_heads, HEAD_DIM
    tokens = sum(lengths)
    n = max(1, round(tokens / len(lengths)))
    b = max(1, tokens // n)
    row = {"causal": causal, "H": h, "Hkv": hkv, "D": d,
           "sequences": len(lengths), "mean_len": n, "dense_B": b}
    total = {"varlen": varlen_flops(lengths, h, d, causal),
             "dense": compare.flops((b, h, n, d), causal),
             "jagged": varlen_flops(lengths, h, d, causal)}
    torch.manual_seed(args.seed)
    starts = [0]
    for n_i in lengths:
        starts.append(starts[-1] + n_i)
    cu = torch.tensor(starts, dtype=torch.int32, device="cuda")
    offsets = cu.long()
    max_len = max(lengths)
    packed = [[torch.randn(tokens, heads, d, device="cuda", dtype=dt)
               for heads in (h, hkv, hkv)] for _ in range(3)]
    dense = [[torch.randn(b, heads, n, d, device="cuda", dtype=dt)
              for heads in (h, hkv, hkv)] for _ in range(3)]
    nested = [[jagged(t, offsets, lengths) for t in s] for s in packed]

    def kernel(path):
        if path not in loaded:
            loaded[path] = flashc.load(path)
        return loaded[path]

    # varlen
    if args.kernels:
        path = find_kernel(args.kernels, causal, packed=True)
        if path is None:
            varlen_call = None
            row["varlen_why"] = ("no packed bf16 D=128 kernel in "
                                 f"{args.kernels}")
        else:
            kern = kernel(path)
            row["varlen_kernel"] = os.path.basename(path)

            def varlen_call(q, k, v):
                return kern.varlen(q, k, v, cu, cu, max_len)[0]
    else:
        def varlen_call(q, k, v):
            return flashc.varlen_attention(q, k, v, cu, cu, max_len, max_len,
                                           causal=causal)
    # dense
    if args.kernels:
        path = find_kernel(args.kernels, causal, packed=False,
                           shape=(b, h, n))
        if path is None:
            dense_call = None
            row["dense_why"] = f"no dense bf16 D=128 kernel in {args.kernels}"
        else:
            dkern = kernel(path)
            row["dense_kernel"] = os.path.basename(path)

            def dense_call(q, k, v):
                res = dkern(q, k, v)
                return res[0] if isinstance(res, tuple) else res
    else:
        def dense_call(q, k, v):
            return flashc.attention(q, k, v, causal=causal)

    def jagged_call(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                              enable_gqa=hkv != h)

    # Each backend is run once first: its output (varlen against jagged
    # SDPA), or why it cannot run.
    timed, outs = [], {}
    for label, call, sets in (("varlen", varlen_call, packed),
                              ("dense", dense_call, dense),
                              ("jagged", jagged_call, nested)):
        if call is None:
            continue
        try:
            outs[label] = call(*sets[0])
            timed.append((label, compare.rotating(sets, call)))
        except Exception as e:  # the backend cannot take this batch
            row[label + "_why"] = str(e).splitlines()[0][:100]
    if "varlen" in outs and "jagged" in outs:
        # The jagged output is B x H x j x D: back to T x H x D values.
        values = outs["jagged"].transpose(1, 2).values()
        row["err_vs_jagged"] = rel_diff(outs["varlen"], values)
    outs.clear()
    compare.settle([fn for _, fn in timed], args.settle_ms)
    row["rounds"] = compare.time_rounds(timed, args.rounds, args.rep_ms, row,
                                        args.own_load_ms)
    for label in ("varlen", "dense", "jagged"):
        runs = row["rounds"].get(label)
        row[label + "_ms"] = ms = (statistics.median(t for t, _ in runs)
                                   if runs else None)
        row[label] = total[label] / (ms * 1e-3) / 1e12 if ms else None
    packed.clear()
    dense.clear()
    nested.clear()
    torch.cuda.empty_cache()
    return row


def fmt(x, spec="{:.1f}"):
    return "-" if x is None else spec.format(x)


HEADER = ("| causal | H | varlen ms | varlen TFLOP/s | dense ms | dense "
          "TFLOP/s | SDPA jagged ms | SDPA jagged TFLOP/s | varlen/dense | "
          "varlen/SDPA jagged | varlen rel diff vs SDPA |")


def format_row(r):
    return (f"| {'yes' if r['causal'] else 'no'} | {r['H']}"
            f"{'/' + str(r['Hkv']) if r['Hkv'] != r['H'] else ''} | "
            f"{fmt(r['varlen_ms'], '{:.3f}')} | {fmt(r['varlen'])} | "
            f"{fmt(r['dense_ms'], '{:.3f}')} | {fmt(r['dense'])} | "
            f"{fmt(r['jagged_ms'], '{:.3f}')} | {fmt(r['jagged'])} | "
            f"{compare.ratio(r['varlen'], r['dense'])} | "
            f"{compare.ratio(r['varlen'], r['jagged'])} | "
            f"{fmt(r.get('err_vs_jagged'), '{:.1e}')} |")


def format_table(rows):
    return compare.markdown_table(
        HEADER, 11, rows, format_row,
        lambda k, why: f"- '-' for {k[:-4]}: {why}")


def main(argv=None):
    args = parse_args(argv)
    import torch

    lengths = sequence_lengths(args.tokens, args.min_len, args.max_len,
                               args.seed)
    gpu = torch.cuda.get_device_name()
    print(f"GPU: {gpu}; torch {torch.__version__}; bf16, D {HEAD_DIM}, "
          f"H {args.heads}/{args.kv_heads}; kernels: "
          f"{args.kernels or 'compiled on demand'}")
    print(f"{sum(lengths)} tokens in {len(lengths)} sequences (uniform "
          f"[{args.min_len}, {args.max_len}], seed {args.seed}, the last "
          f"trimmed): min {min(lengths)}, mean "
          f"{sum(lengths) / len(lengths):.0f}, max {max(lengths)}")
    modes = [True] if args.causal else [False] if args.non_causal else [
        False, True]
    rows, loaded = [], {}
    for causal in modes:
        row = run_case(args, causal, lengths, loaded)
        rows.append(row)
        print(format_row(row), flush=True)
    dense = rows[0]
    print(f"\ndense: B = {dense['dense_B']} x N = {dense['mean_len']} (the "
          "mean length)")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__,
                       "tokens": sum(lengths), "lengths": lengths,
                       "seed": args.seed, "heads": args.heads,
                       "kv_heads": args.kv_heads, "head_dim": HEAD_DIM,
                       "rounds": args.rounds, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

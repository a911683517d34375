#!/usr/bin/env python3
"""Times flashc kernels beside PyTorch SDPA (cuDNN and FlashAttention-2).

In one process on one GPU, for the FlashAttention-3 paper's shapes (hidden
2048, 16k tokens: batch = 16384 / N, heads = 2048 / D; N = 512..16384,
D = 64/128/256, causal and not), each backend is timed with
triton.testing.do_bench (median; it flushes L2 between calls) or, without
Triton, CUDA events with warm-up, rotating input sets and the median.
The H200 runs at its power cap under this load, so a backend's time
depends on what ran just before it: after a short idle it runs faster
for ~100-200 ms (cuDNN 6% faster timed first), and after a kernel that
draws more power it runs slower (cuDNN 1-3% slower right after flashc than
after itself). So each timing is preceded by --own-load-ms of the same
backend, untimed: every backend is timed in its own sustained state,
whatever ran before. After an idle GPU the clock takes about 1.5 s to
settle (7% fast in the first 100 ms, 2-5% fast to 750 ms, then 4% slow to
1 s), longer than the own load, and a shape's setup (inputs, reference
outputs, loading a kernel) idles the GPU; so each shape's rounds start
after --settle-ms of all its backends round-robin, untimed. Each is timed
--rounds times, the order rotated by one each round, and the median of
its rounds is reported (docs/decisions.md, "Benchmark timing schedule").
Prints a table of TFLOP/s and ratios, writes a PNG plot, and appends a
dated entry to the experiment log, bench/log/<today>.md (bench/RESULTS.md,
the current tables, is edited by hand).

    python3 bench/compare.py --kernels DIR [--dtype bf16] [--quick]
        [--heads 32 --kv-heads 8]

DIR holds kernel.cubin + kernel.json pairs; a shape/dtype/causal with no
matching kernel shows '-' for flashc. A kernel compiled with
`flashc --tuning-db T --shape B,H,N,D` records that shape (`tuned_for`) and
is used for exactly that shape, in preference to an untuned kernel of the
same dtype/D/causal. FLOPs: 4 * B * H * N^2 * D, halved for causal.
--heads sets H (instead of 2048 / D) and --kv-heads gives K and V fewer
heads (grouped-query attention; SDPA is called with enable_gqa=True).
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
LOG_DIR = os.path.join(HERE, "log")


def log_path(date):
    """The experiment log's file for `date` (YYYY-MM-DD)."""
    return os.path.join(LOG_DIR, f"{date}.md")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", required=True, help="directory of cubin+json")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    p.add_argument("--quick", action="store_true",
                   help="N in {1024, 4096}, all D, causal and not")
    p.add_argument("--seqs", default=None, help="comma list of N")
    p.add_argument("--dims", default=None, help="comma list of D")
    p.add_argument("--rep-ms", type=float, default=100, help="do_bench rep")
    p.add_argument("--heads", type=int, default=None,
                   help="query heads H (default 2048 / D)")
    p.add_argument("--kv-heads", type=int, default=None,
                   help="K/V heads (grouped-query attention; default H)")
    p.add_argument("--rounds", type=int, default=3,
                   help="times each backend per shape, order rotated")
    p.add_argument("--settle-ms", type=float, default=1500,
                   help="untimed round-robin load per shape before timing "
                   "(the clock's cycle after the GPU idled)")
    p.add_argument("--own-load-ms", type=float, default=300,
                   help="untimed load of a backend right before each of its "
                   "timings")
    p.add_argument("--json", default=None,
                   help="also write every row, with each round's time and "
                   "place, to this file")
    p.add_argument("--plot", default=os.path.join(HERE, "compare.png"))
    p.add_argument("--results", default=None,
                   help="append the run's entry to this file (default: "
                   "bench/log/<today>.md, the experiment log)")
    p.add_argument("--no-record", action="store_true",
                   help="do not append the run's entry anywhere")
    return p.parse_args(argv)


def find_kernels(kdir):
    """(dtype, head_dim, causal[, (B, H, N)]) -> (path, metadata).

    Untuned kernels are keyed without a shape, tuned ones with the shape
    they were tuned for; the first by name wins a key."""
    found = {}
    for path in sorted(glob.glob(os.path.join(kdir, "*.json"))):
        try:
            meta = json.load(open(path))
        except (OSError, ValueError):
            continue
        if meta.get("format") != "flashc-kernel":
            continue
        # Dense kernels that take any head count: not packed sequences'
        # (a packed grid) nor one whose source fixes its heads.
        if (meta.get("grid", {}).get("kind") == "packed"
                or "heads" in meta or "kv_heads" in meta):
            continue
        key = (meta["dtype"], meta["head_dim"], bool(meta["causal"]))
        tuned = meta.get("tuned_for")
        if tuned:
            key += (tuple(tuned["shape"][:3]),)
        found.setdefault(key, (path, meta))
    return found


def config_name(meta):
    c = meta.get("config", {})
    return (f"bm{c.get('block_m')} bn{c.get('block_n')} s{c.get('stages')} "
            f"wg{c.get('warpgroups')}"
            + (" persistent" if c.get("persistent") else "")
            + (" tuned" if meta.get("tuned_for") else ""))


def bench_fn(fn, rep_ms):
    import torch
    try:
        from triton.testing import do_bench
        return do_bench(fn, warmup=max(1, rep_ms / 4), rep=rep_ms,
                        return_mode="median")
    except ImportError:
        pass
    # CUDA events: warm-up, then the median of per-call times.
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def main():
    args = parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import flashc

    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    seqs = [512, 1024, 2048, 4096, 8192, 16384]
    dims = [64, 128, 256]
    if args.quick:
        seqs = [1024, 4096]
    if args.seqs:
        seqs = [int(x) for x in args.seqs.split(",")]
    if args.dims:
        dims = [int(x) for x in args.dims.split(",")]
    kernels = find_kernels(args.kernels)
    loaded = {}
    gpu = torch.cuda.get_device_name()
    print(f"GPU: {gpu}; torch {torch.__version__}; dtype {args.dtype}; "
          f"kernels: {args.kernels} ({len(kernels)} found)")
    fixture = any("hand-written" in m.get("source_hash", "")
                  for _, m in kernels.values())

    rows = []
    for causal in (False, True):
        for d in dims:
            for n in seqs:
                b, h = 16384 // n, args.heads or 2048 // d
                hkv = args.kv_heads or h
                total = flops((b, h, n, d), causal)
                torch.manual_seed(0)
                # Rotating input sets so L2 does not serve them (do_bench
                # also flushes L2 before each call).
                sets = [[torch.randn(b, heads, n, d, device="cuda", dtype=dt)
                         for heads in (h, hkv, hkv)] for _ in range(3)]
                row = {"N": n, "D": d, "causal": causal, "B": b, "H": h}
                if hkv != h:
                    row["Hkv"] = hkv
                ref_out = None

                def peer(backend):
                    def sdpa(q, k, v):
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(
                                q, k, v, is_causal=causal,
                                enable_gqa=hkv != h)
                    return rotating(sets, sdpa)

                # Each backend is run once first: the reference output, the
                # error, or why it cannot take the shape.
                timed = []
                for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                       ("fa2", SDPBackend.FLASH_ATTENTION)):
                    row[label] = None
                    try:
                        out = peer(backend)()
                        if ref_out is None:
                            ref_out = out
                        timed.append((label, peer(backend)))
                    except Exception as e:  # backend does not support shape
                        row[label + "_why"] = str(e).splitlines()[0][:80]
                key = (args.dtype, d, causal)
                if key + ((b, h, n),) in kernels:
                    key += ((b, h, n),)
                row["flashc"] = None
                if key in kernels:
                    path, meta = kernels[key]
                    row["config"] = config_name(meta)
                    try:
                        if path not in loaded:
                            loaded[path] = flashc.load(path)
                        kern = loaded[path]
                        fl = rotating(sets, kern)
                        out = fl()
                        out = out[0] if isinstance(out, tuple) else out
                        if ref_out is not None:
                            row["err"] = ((out.float() - ref_out.float()).norm()
                                          / ref_out.float().norm()).item()
                        row["kernel"] = kern.name
                        timed.append(("flashc", fl))
                    except Exception as e:
                        row["flashc_why"] = str(e).splitlines()[0][:80]
                settle([fn for _, fn in timed], args.settle_ms)
                row["rounds"] = time_rounds(timed, args.rounds, args.rep_ms, row,
                                            args.own_load_ms)
                for label, runs in row["rounds"].items():
                    ms = statistics.median(t for t, _ in runs)
                    row[label] = total / (ms * 1e-3) / 1e12
                rows.append(row)
                # The rotating functions hold the list: empty it so the
                # tensors go before the cache is emptied.
                sets.clear()
                torch.cuda.empty_cache()
                print(format_row(row), flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "dtype": args.dtype, "rounds": args.rounds,
                       "rows": rows}, f, indent=1)
    table = format_table(rows)
    print()
    print(table)
    plot(rows, args.plot, gpu, args.dtype)
    if not args.no_record:
        record(args, rows, table, gpu, torch.__version__, fixture)
    return 0


def rel(x, ref):
    """The relative error of x (any dtype) against the float64 `ref`, or
    x's norm where ref is all zeros."""
    n = ref.norm()
    return ((x.double() - ref).norm() / n).item() if n > 0 else \
        x.double().norm().item()


def time_all(timed, flops, row):
    """row[name + "_ms"] and "_tflops" (`flops` over the median) of each of
    `timed` (name -> fn), or "_why" where it raised."""
    for name, fn in timed.items():
        try:
            ms = bench_fn(fn, rep_ms=100)
            row[name + "_ms"] = ms
            row[name + "_tflops"] = flops / ms / 1e9
        except Exception as e:
            row[name + "_why"] = str(e).splitlines()[0][:100]


def finish_probe(rows, json_path):
    """The end of a probe script: `rows` to json_path (if given), the count
    of rows whose "ok" is False printed, and the exit status (1 if any)."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if r.get("ok") is False]
    print(f"{len(bad)} failing of {sum('ok' in r for r in rows)}")
    sys.exit(1 if bad else 0)


def flops(shape, causal):
    """4 * B * H * N^2 * D for a B x H x N x D problem, halved under the
    causal mask."""
    b, h, n, d = shape
    return 4 * b * h * n * n * d / (2 if causal else 1)


def rotating(sets, call):
    """A function that runs call(q, k, v) on the next of `sets` (lists of
    q, k, v) each time, so L2 does not serve the inputs."""
    it = [0]

    def fn():
        q, k, v = sets[it[0] % len(sets)]
        it[0] += 1
        return call(q, k, v)
    return fn


def settle(fns, ms):
    """Runs `fns` round-robin, untimed, for `ms` of wall time. A failure here
    is left for the timed rounds to report."""
    if ms <= 0:
        return
    import time
    import torch
    fns = list(fns)
    end = time.perf_counter() + ms / 1000
    while fns and time.perf_counter() < end:
        for fn in list(fns):
            try:
                fn()
            except Exception:
                fns.remove(fn)
        torch.cuda.synchronize()


def time_rounds(timed, rounds, rep_ms, row, own_load_ms=0):
    """label -> [(ms, place)]: each (label, fn) timed `rounds` times, round r
    starting with backend r (mod their number), each timing right after
    `own_load_ms` of the same fn, untimed. A backend that fails to time
    drops out of the later rounds, with its reason in row[label + '_why']."""
    out = {label: [] for label, _ in timed}
    for r in range(rounds):
        for place in range(len(timed)):
            label, fn = timed[(r + place) % len(timed)]
            if label + "_why" in row:
                continue
            try:
                settle([fn], own_load_ms)
                out[label].append((bench_fn(fn, rep_ms), place))
            except Exception as e:
                row[label + "_why"] = str(e).splitlines()[0][:80]
                out[label] = []
    return {label: runs for label, runs in out.items() if runs}


def fmt(x, spec="{:.1f}"):
    return "-" if x is None else spec.format(x)


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"


HEADER = ("| N | D | causal | B | H | flashc TFLOP/s | cuDNN TFLOP/s | "
          "FA2 TFLOP/s | flashc/cuDNN | flashc/FA2 | flashc rel err vs SDPA | "
          "flashc config |")


def format_row(r):
    return (f"| {r['N']} | {r['D']} | {'yes' if r['causal'] else 'no'} | "
            f"{r['B']} | {r['H']}{'/' + str(r['Hkv']) if 'Hkv' in r else ''} | "
            f"{fmt(r['flashc'])} | {fmt(r['cudnn'])} | "
            f"{fmt(r['fa2'])} | {ratio(r['flashc'], r['cudnn'])} | "
            f"{ratio(r['flashc'], r['fa2'])} | {fmt(r.get('err'), '{:.1e}')} | "
            f"{r.get('config', '-')} |")


def markdown_table(header, columns, rows, row_text, note_text):
    """The header, its separator of `columns` cells and row_text(r) for
    each row, then one note_text(key, why) line per distinct "<key>_why"
    entry of the rows (why a cell reads '-')."""
    lines = [header, "|" + "---|" * columns]
    lines += [row_text(r) for r in rows]
    notes = sorted({note_text(k, r[k]) for r in rows for k in r
                    if k.endswith("_why")})
    if notes:
        lines.append("")
        lines += notes
    return "\n".join(lines)


def format_table(rows):
    return markdown_table(HEADER, 12, rows, format_row,
                          lambda k, why: f"- '-' because {k}: {why}")


def plot(rows, path, gpu, dtype):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: plot skipped")
        return
    dims = sorted({r["D"] for r in rows})
    fig, axes = plt.subplots(2, len(dims), figsize=(5 * len(dims), 8),
                             squeeze=False)
    for i, causal in enumerate((False, True)):
        for j, d in enumerate(dims):
            ax = axes[i][j]
            sel = [r for r in rows if r["D"] == d and r["causal"] == causal]
            for key, label in (("flashc", "flashc"), ("cudnn", "cuDNN"),
                               ("fa2", "FlashAttention-2")):
                pts = [(r["N"], r[key]) for r in sel if r.get(key)]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=label)
            ax.set_xscale("log", base=2)
            ax.set_title(f"D={d} {'causal' if causal else 'non-causal'}")
            ax.set_xlabel("sequence length N")
            ax.set_ylabel("TFLOP/s")
            ax.legend()
    fig.suptitle(f"attention forward, {dtype}, {gpu}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


def record(args, rows, table, gpu, torch_version, fixture, date=None):
    """Appends the run's dated entry to args.results or, by default, to the
    day's experiment log (which it starts with a title if it is new)."""
    date = date or datetime.date.today().isoformat()
    path = args.results or log_path(date)
    cmd = "python3 " + " ".join(sys.argv)
    note = ("flashc column: the hand-written test fixture "
            "test/gpu/kernels/ref_attention.cu (a correctness reference, one "
            "row per thread, not a flashc-compiled kernel)" if fixture else
            f"flashc column: kernels in {args.kernels}")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    start_log = args.results is None and not os.path.exists(path)
    with open(path, "a") as f:
        if start_log:
            f.write(f"# Experiment log, {date}\n")
        f.write(f"\n## {date} — {gpu}, {args.dtype}\n\n")
        f.write(f"- command: `{cmd}`\n- torch {torch_version}; timing: "
                "triton.testing.do_bench median (L2 flushed), peers in the "
                f"same process; per shape {args.settle_ms:g} ms untimed "
                f"load, then {args.rounds} round(s), backend order rotated "
                f"each round, each timing after {args.own_load_ms:g} ms of "
                "the same backend untimed, median of the rounds\n")
        f.write(f"- {note}\n\n{table}\n")
    print(f"recorded in {path}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Joules per call: cuDNN and flashc kernels under sustained load, with the
board's power and SM clock sampled beside them.

At the H200's 700 W board limit the FA3-shape kernels all draw about 690 W,
and the clock drops until they do (docs/decisions.md, "The power cap"): a
kernel's time then follows its joules per call, and a change that only
fills idle cycles lets the clock fall by about as much. This script shows
both sides: each backend (cuDNN through PyTorch SDPA, then the kernels in
the order given) runs back to back for --seconds on L2-rotating inputs,
timed with CUDA events, while `nvidia-smi` samples power and SM clock
every 100 ms; samples of the first second (the clock settling) are
dropped. The table gives each backend's median time, TFLOP/s, median power
and clock, and millijoules and TFLOP per joule; --reps repeats the whole
sequence.

    python3 bench/power.py --shape 8,16,2048,128 main.cubin new.cubin \\
        [--seconds 3] [--reps 2] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import ab  # noqa: E402  (shape, kernel.json and kernel checks)
import compare  # noqa: E402  (FLOP count, rotating inputs)

SMI_QUERY = ["nvidia-smi", "--query-gpu=power.draw,clocks.sm",
             "--format=csv,noheader,nounits", "-lms", "100"]
SETTLE_S = 1.0
CALLS_PER_EVENT = 20


def parse_smi_line(line):
    """(watts, MHz) from one `power.draw,clocks.sm` csv line, or None for a
    line nvidia-smi could not fill ([N/A], [Unknown Error], blank)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 2:
        return None
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        return None


def window(samples, start, end, settle_s=SETTLE_S):
    """Median watts and MHz of the (time, watts, MHz) samples taken inside
    [start + settle_s, end], and how many there were; (None, None, 0)
    when there are none."""
    inside = [(w, mhz) for t, w, mhz in samples if start + settle_s <= t <= end]
    if not inside:
        return None, None, 0
    return (statistics.median(w for w, _ in inside),
            statistics.median(mhz for _, mhz in inside), len(inside))


def energy_row(label, ms, flop, watts, mhz, n):
    """One table row: time, rate and, where power was sampled, the energy
    of one call (watts x seconds) and TFLOP per joule."""
    row = {"backend": label, "us": ms * 1e3, "tflops": flop / (ms * 1e-3) / 1e12,
           "watts": watts, "mhz": mhz, "samples": n, "mj": None,
           "tflop_per_j": None}
    if watts:
        row["mj"] = watts * ms
        row["tflop_per_j"] = row["tflops"] / watts
    return row


def format_row(r):
    def f(x, spec):
        return "-" if x is None else spec.format(x)
    return (f"| {r['backend']} | {r['us']:.1f} | {r['tflops']:.1f} | "
            f"{f(r['watts'], '{:.1f}')} | {f(r['mhz'], '{:.0f}')} | "
            f"{f(r['mj'], '{:.1f}')} | {f(r['tflop_per_j'], '{:.3f}')} | "
            f"{r['samples']} |")


HEADER = ("| backend | us / call | TFLOP/s | W | SM MHz | mJ / call | "
          "TFLOP / J | samples |\n|---|---|---|---|---|---|---|---|")


class Sampler:
    """nvidia-smi in the background: (time, watts, MHz) samples."""

    def __init__(self):
        self.samples = []
        self.proc = subprocess.Popen(SMI_QUERY, stdout=subprocess.PIPE,
                                     text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parsed = parse_smi_line(line)
            if parsed:
                self.samples.append((time.time(), *parsed))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def sustain(fn, seconds):
    """Runs fn back to back for `seconds`; returns (start, end, median ms
    per call over groups of CALLS_PER_EVENT calls timed by CUDA events)."""
    import torch
    torch.cuda.synchronize()
    start = time.time()
    groups = []
    while time.time() - start < seconds:
        begin = torch.cuda.Event(enable_timing=True)
        finish = torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(CALLS_PER_EVENT):
            fn()
        finish.record()
        groups.append((begin, finish))
        finish.synchronize()
    torch.cuda.synchronize()
    end = time.time()
    ms = statistics.median(b.elapsed_time(e) / CALLS_PER_EVENT
                           for b, e in groups)
    return start, end, ms


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernels", nargs="+", help="cubin (kernel.json beside it)")
    p.add_argument("--shape", required=True, help="B,H,N,D")
    p.add_argument("--seconds", type=float, default=3.0,
                   help="sustained load per backend and rep (> 1 s)")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--no-cudnn", action="store_true",
                   help="only the kernels, no SDPA cuDNN row")
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    try:
        shape = ab.parse_shape(args.shape)
        if args.seconds <= SETTLE_S:
            raise ValueError(f"--seconds must exceed the {SETTLE_S:.0f} s "
                             f"the clock takes to settle, got {args.seconds}")
        metas = ab.load_metas(shape, args.kernels)
    except (ValueError, OSError) as e:
        print(f"power.py: {e}", file=sys.stderr)
        return 2

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import flashc
    sets, causal = ab.input_sets(shape, metas[0][1])
    backends = []
    if not args.no_cudnn:
        def cudnn(q, k, v):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=causal)
        backends.append(("cudnn", compare.rotating(sets, cudnn)))
    for i, path in enumerate(args.kernels):
        backends.append((f"{i}: {os.path.basename(path)}",
                         compare.rotating(sets, flashc.load(path))))
    flop = compare.flops(shape, causal)
    try:
        sampler = Sampler()
    except OSError as e:
        print(f"power.py: cannot run nvidia-smi: {e}", file=sys.stderr)
        return 2
    runs = []
    try:
        for _ in range(args.reps):
            for label, fn in backends:
                fn()
                time.sleep(0.5)
                runs.append((label, *sustain(fn, args.seconds)))
    finally:
        sampler.stop()
    rows = [energy_row(label, ms, flop, *window(sampler.samples, start, end))
            for label, start, end, ms in runs]
    print(f"shape {shape}, {metas[0][1]['dtype']}, "
          f"{'causal' if causal else 'non-causal'}; {args.seconds:g} s per "
          f"backend, {args.reps} reps; {torch.cuda.get_device_name()}")
    print(HEADER)
    for r in rows:
        print(format_row(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": shape, "gpu": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

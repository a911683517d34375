#!/usr/bin/env python3
"""Where a tile program's time goes: runs and reads a probe build.

A kernel compiled with `flashc --probe-stamps` writes, for every tile
program and consumer warpgroup, the clock64 of seven points over its LSE
buffer (lib/Conversion/FlashToGPU/ProbeStamps.cpp). `run` (GPU host, torch)
calls such a kernel as compare.py times kernels: after --load-ms of its own
load and an L2 flush, once per sample, and writes the LSE buffer's bytes
with a JSON header. `report` (anywhere, no torch) decodes the records and
prints the median of each phase in cycles and in steady key tiles:

    python3 bench/stamps.py run k.cubin --shape 8,16,2048,128 -o k.stamps
    python3 bench/stamps.py report k.stamps
    python3 bench/stamps.py timeline k.stamps

`timeline` sets the tile programs on each SM against the kernel's span
(globaltimer, from the first SM's start to the last end): the SM clock,
how many SMs ran how many tile programs and when their last one ended, and
the share of SM time left idle at the end (the wave tail). `run` keeps the
probed call's device-event time beside the records, so the span can be
read against what do_bench would time.

Phases, per consumer and tile program: `gap` from the same SM's previous
record's end (of the same consumer: in a persistent kernel its previous
tile, else the previous block's last consumer) to this start; `q wait` until
Q arrived; `first softmax` the first key tile's S and softmax; `key loop`
per key tile after the first; `epilogue` from the loop's end to O stored;
`end skew` between the tile's consumers' ends.

The probe costs time (1-6%; docs/decisions.md, "The stamps probe's
cost"): after each tile program thread 0 of every consumer reloads its
stamps from the stack to write the record, and a gap includes that (up to
an L2 round trip): read gaps as upper bounds.
"""
import argparse
import json
import math
import os
import statistics
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import ab  # noqa: E402  (the shape and kernel.json helpers)
import compare  # noqa: E402  (the own-load schedule)

# Stamp slots of a record, in KernelContext::ProbePoint order.
POINTS = ("consumer_start", "block_q", "tile_start", "tile_q", "first_softmax",
          "loops_done", "epilogue_done")
RECORD_WORDS = 32
HEADER_WORDS = 4


def decode(payload, batch_heads, seq_q):
    """The records in an LSE buffer's bytes (batch_heads x seq_q float32s):
    dicts of smid, consumer, block, head, the POINTS and timer. Unwritten
    records (all-zero stamps: run zero-fills the buffer) are skipped."""
    words = struct.unpack(f"<{len(payload) // 4}I", payload)
    if len(words) != batch_heads * seq_q:
        raise ValueError(f"{len(words)} words, expected {batch_heads} x "
                         f"{seq_q}")
    records = []
    for h in range(batch_heads):
        for r in range(seq_q // RECORD_WORDS):
            at = h * seq_q + r * RECORD_WORDS
            w = words[at:at + RECORD_WORDS]
            stamps = [w[HEADER_WORDS + 2 * i] | (w[HEADER_WORDS + 2 * i + 1] << 32)
                      for i in range(len(POINTS) + 1)]
            if not any(stamps):
                continue
            rec = {"smid": w[0], "consumer": w[1],
                   "block": struct.unpack("<i", struct.pack("<I", w[2]))[0],
                   "head": w[3], "timer": stamps[-1]}
            rec.update(zip(POINTS, stamps))
            records.append(rec)
    return records


def key_tiles(meta, block, seq_q, seq_k):
    """Key tiles the tile program of query block `block` walks (the
    bounds of SharedMemory.cpp's emitTileBounds)."""
    cfg = meta["config"]
    bm, bn = cfg["block_m"], cfg["block_n"]
    if not meta["causal"]:
        return math.ceil(seq_k / bn)
    if cfg["tma_store_o"]:
        m0 = block * bm
    else:
        m0 = seq_q - (math.ceil(seq_q / bm) - block) * bm
    hi = max(min(m0 + bm + seq_k - seq_q, seq_k), 0)
    return math.ceil(hi / bn)


def tile_programs(records):
    """The records grouped by tile program: (smid, head, query block) -> the
    records of its consumers. Raises ValueError if there are none."""
    if not records:
        raise ValueError("no records: not a --probe-stamps kernel, or the "
                         "blocks are too short to hold one")
    programs = {}
    for r in records:
        programs.setdefault((r["smid"], r["head"], r["block"]), []).append(r)
    return programs


def summarize(records, meta, seq_q, seq_k):
    """Medians (and p10/p90) of each phase, in cycles and key tiles."""
    programs = tile_programs(records)
    persistent = bool(meta["config"]["persistent"])
    per_tile = []
    for r in records:
        n = key_tiles(meta, r["block"], seq_q, seq_k)
        if n >= 2:
            per_tile.append((r["loops_done"] - r["first_softmax"]) / (n - 1))
    tile = statistics.median(per_tile) if per_tile else float("nan")

    gaps = []
    by_sm = {}
    for r in records:
        key = (r["smid"], r["consumer"]) if persistent else r["smid"]
        by_sm.setdefault(key, []).append(r)
    for rs in by_sm.values():
        if persistent:
            rs.sort(key=lambda r: r["tile_start"])
            gaps += [b["tile_start"] - a["epilogue_done"]
                     for a, b in zip(rs, rs[1:])]
            continue
        # One block's records share a start; the block ends with its last
        # consumer.
        blocks = {}
        for r in rs:
            blocks.setdefault((r["head"], r["block"]), []).append(r)
        spans = sorted((min(x["consumer_start"] for x in b),
                        max(x["epilogue_done"] for x in b))
                       for b in blocks.values())
        gaps += [b[0] - a[1] for a, b in zip(spans, spans[1:])]

    skews = []
    for rs in programs.values():
        if len(rs) > 1:
            ends = [r["epilogue_done"] for r in rs]
            skews.append(max(ends) - min(ends))

    phases = {
        "gap": gaps,
        "q wait": [r["block_q"] - r["consumer_start"] + r["tile_q"]
                   - r["tile_start"] for r in records],
        "first softmax": [r["first_softmax"] - r["tile_q"] for r in records],
        "key loop (per tile)": per_tile,
        "epilogue": [r["epilogue_done"] - r["loops_done"] for r in records],
        "end skew": skews,
    }
    out = {"records": len(records), "key_tile_cycles": tile, "phases": {}}
    for name, values in phases.items():
        if not values:
            continue
        q = sorted(values)
        pick = lambda f: q[min(len(q) - 1, int(f * len(q)))]  # noqa: E731
        med = statistics.median(values)
        out["phases"][name] = {"median": med, "p10": pick(0.1),
                               "p90": pick(0.9), "tiles": med / tile}
    return out


def timeline(records, meta):
    """How the tile programs fill the SMs over the kernel: each SM's tile
    programs in its order (one per block in a tiles or sections grid, one
    per claimed tile in a persistent kernel), the SM clock (cycles of
    clock64 per ns of globaltimer between the ends of an SM's consecutive
    tile programs, median over the kernel), the span from the first SM's
    start to the last end in ns, and the share of SM time spent after an
    SM's last tile program while others still run (the wave tail)."""
    programs = tile_programs(records)
    persistent = bool(meta["config"]["persistent"])
    per_sm = {}
    for (sm, _, _), rs in programs.items():
        last = max(rs, key=lambda x: x["epilogue_done"])
        per_sm.setdefault(sm, []).append({
            # A block starts with its consumers; a persistent tile program
            # at its tile_start (the SM's first also pays the prologue).
            "start": min(x["tile_start" if persistent else "consumer_start"]
                         for x in rs),
            "sm_start": min(x["consumer_start"] for x in rs),
            "end": last["epilogue_done"], "timer": last["timer"]})
    rates = []
    for progs in per_sm.values():
        progs.sort(key=lambda p: p["start"])
        rates += [(b["end"] - a["end"]) / (b["timer"] - a["timer"])
                  for a, b in zip(progs, progs[1:]) if b["timer"] > a["timer"]]
    if not rates:
        raise ValueError("no SM ran two tile programs: the clock cannot be "
                         "read from the timer")
    per_ns = statistics.median(rates)
    t0 = min(p[0]["timer"] - (p[0]["end"] - p[0]["sm_start"]) / per_ns
             for p in per_sm.values())
    # Each SM's last end, from the kernel's start.
    finish = [p[-1]["timer"] - t0 for p in per_sm.values()]
    span = max(finish)
    by_count = {}
    for progs, end in zip(per_sm.values(), finish):
        by_count.setdefault(len(progs), []).append(end / span)
    positions = []
    for i in range(max(len(p) for p in per_sm.values())):
        here = [p for p in per_sm.values() if i < len(p)]
        positions.append({
            "sms": len(here),
            "cycles": statistics.median(p[i]["end"] - p[i]["start"]
                                        for p in here),
            "since_previous": (statistics.median(
                p[i]["start"] - p[i - 1]["end"] for p in here) if i else 0)})
    idle = sum(span - end for end in finish)
    return {"sms": len(per_sm), "programs": len(programs), "ghz": per_ns,
            "span_ns": span,
            "counts": {n: {"sms": len(f), "finish": statistics.median(f)}
                       for n, f in sorted(by_count.items())},
            "tail_idle": idle / (len(per_sm) * span), "positions": positions}


def load(path):
    """The records and header of one `run` output."""
    with open(path + ".json") as f:
        header = json.load(f)
    with open(path, "rb") as f:
        payload = f.read()
    b, h, n, _ = header["shape"]
    return decode(payload, b * h, n), header


def report_timeline(path):
    records, header = load(path)
    t = timeline(records, header["meta"])
    print(f"{path}: {t['programs']} tile programs on {t['sms']} SMs at "
          f"{t['ghz']:.3f} GHz, span {t['span_ns'] / 1e3:.1f} us "
          f"({t['span_ns'] * t['ghz']:.0f} cycles)")
    if "event_ms" in header:
        print(f"  the call's device events: {header['event_ms'] * 1e3:.1f} us"
              f" ({header['event_ms'] * 1e6 / t['span_ns']:.3f} of the span)")
    for n, c in t["counts"].items():
        print(f"  {c['sms']:4d} SMs ran {n} tile programs, their last ending "
              f"at {c['finish']:.3f} of the span (median)")
    print(f"  SM time after an SM's last tile program: "
          f"{100 * t['tail_idle']:.2f}%")
    for i, p in enumerate(t["positions"]):
        print(f"  program {i:3d}: {p['sms']:4d} SMs, median {p['cycles']:7.0f}"
              f" cycles, {p['since_previous']:6.0f} after the previous")
    return t


def report(path):
    records, header = load(path)
    n = header["shape"][2]
    # run calls the kernel with seq_k = seq_q.
    s = summarize(records, header["meta"], n, n)
    print(f"{path}: {s['records']} records, a key tile "
          f"{s['key_tile_cycles']:.0f} cycles")
    for name, p in s["phases"].items():
        print(f"  {name:20s} median {p['median']:8.0f}  p10 {p['p10']:8.0f}  "
              f"p90 {p['p90']:8.0f}  = {p['tiles']:5.2f} key tiles")
    return s


def run(args):
    import torch
    import flashc
    with open(ab.metadata_path(args.kernel)) as f:
        meta = json.load(f)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[meta["dtype"]]
    b, h, n, d = args.shape
    kernel = flashc.load(args.kernel)
    torch.manual_seed(args.seed)
    q, k, v = (torch.randn(b, h, n, d, dtype=dtype, device="cuda")
               for _ in range(3))
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for s in range(args.samples):
        compare.settle([lambda: kernel(q, k, v)], args.load_ms)
        lse = torch.zeros(b, h, n, dtype=torch.float32, device="cuda")
        flush.zero_()
        # Device events around the probed call, as do_bench has them
        # around each timed call, to set against the records' span.
        events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        events[0].record()
        kernel(q, k, v, lse=lse)
        events[1].record()
        torch.cuda.synchronize()
        event_ms = events[0].elapsed_time(events[1])
        path = f"{args.out}.{s}" if args.samples > 1 else args.out
        with open(path, "wb") as f:
            f.write(lse.cpu().numpy().tobytes())
        with open(path + ".json", "w") as f:
            json.dump({"shape": list(args.shape), "meta": meta,
                       "event_ms": event_ms}, f)
        print(f"wrote {path}")


def shape_arg(text):
    try:
        return ab.parse_shape(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="call a --probe-stamps kernel (GPU)")
    r.add_argument("kernel", help="cubin, kernel.json beside it")
    r.add_argument("--shape", type=shape_arg, required=True)
    r.add_argument("-o", "--out", required=True)
    r.add_argument("--load-ms", type=float, default=300)
    r.add_argument("--samples", type=int, default=1)
    r.add_argument("--seed", type=int, default=0)
    rep = sub.add_parser("report", help="decode and summarize (CPU)")
    rep.add_argument("stamps", nargs="+")
    tl = sub.add_parser("timeline", help="the SMs' tile programs over the "
                        "kernel: clock, span, wave tail (CPU)")
    tl.add_argument("stamps", nargs="+")
    args = p.parse_args(argv)
    if args.cmd == "run":
        run(args)
    else:
        for path in args.stamps:
            (report if args.cmd == "report" else report_timeline)(path)


if __name__ == "__main__":
    main()

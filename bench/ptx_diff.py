#!/usr/bin/env python3
"""Do two flashc builds emit the same kernels? PTX compared up to names.

Compiles every kernel of kernels/ and, with --tuning-db, one kernel per
database entry (the tuned config for that entry's shape, as
scripts/compile-kernels.sh does) with two flashc binaries, and compares the
PTX after renaming registers (%r, %rd, %f, %p, ...) and labels by order of
first use within each function, and the kernel.json beside it. A change to
the compiler that leaves every kernel's PTX equal up to names cannot change
what runs on the GPU; where a kernel differs it needs the GPU A/B
(bench/ab.py) and the SASS check (bench/sass.py).

    python3 bench/ptx_diff.py --old /tmp/flashc-old --new build/bin/flashc \\
        [--tuning-db bench/tuning/h200-fa3.json] [--switches] [--jobs 2] \\
        [--keep DIR]

--switches also compiles every shipped kernel with each schedule switch of
include/flashc/Config/ScheduleSwitches.def forced to 0 and to 1, one at a
time, with a persistent kernel's dynamic schedule and its store without
TMA, and with --probe-stamps: the schedules no tuned config picks.

Exit status 0 when every kernel matches, 1 when one differs or fails to
compile with one binary and not the other.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# PTX virtual registers (%r12, %rd3, %f5, %p1, %rs2, %fd1, %h4, %hh2, %b1)
# and basic-block labels ($L__BB0_12).
REGISTER = re.compile(r"%(rd|rs|fd|hh|r|f|p|h|b)(\d+)\b")
LABEL = re.compile(r"\$L__BB\d+_\d+")
# What differs between two builds without changing the code: the
# generator's banner and comments.
COMMENT = re.compile(r"//.*$")
# kernel.json fields that name the build rather than the kernel.
PROVENANCE = {"flashc_version", "source_hash", "source", "created"}


def normalize_ptx(text):
    """PTX -> lines with comments dropped and names renumbered per function."""
    out = []
    registers, labels = {}, {}

    def register(match):
        key = match.group(0)
        if key not in registers:
            prefix = match.group(1)
            count = sum(1 for k in registers if k.startswith("%" + prefix)
                        and REGISTER.fullmatch(k).group(1) == prefix)
            registers[key] = "%{0}{1}".format(prefix, count)
        return registers[key]

    def label(match):
        return labels.setdefault(match.group(0), "$L{0}".format(len(labels)))

    for line in text.splitlines():
        line = COMMENT.sub("", line).strip()
        if not line:
            continue
        if line.startswith(".entry") or line.startswith(".visible .entry"):
            registers, labels = {}, {}
        # Declarations give counts (%r<123>), not names: keep them as they
        # are; equal code has equal counts.
        if not line.startswith(".reg"):
            line = REGISTER.sub(register, line)
        out.append(LABEL.sub(label, line))
    return out


def normalize_json(text):
    data = json.loads(text)
    for key in PROVENANCE:
        data.pop(key, None)
    return json.dumps(data, sort_keys=True, indent=1).splitlines()


def schedule_switch_flags():
    """The flashc flag of every switch in ScheduleSwitches.def."""
    path = os.path.join(ROOT, "include", "flashc", "Config",
                        "ScheduleSwitches.def")
    with open(path) as f:
        return re.findall(r'^FLASH_SCHEDULE_SWITCH\([^,]+, [^,]+, "[^"]+", '
                          r'"([^"]+)"', f.read(), re.M)


def jobs_from(args):
    """(name, source, extra flashc args) for every kernel to compare."""
    kernels = sorted(f for f in os.listdir(os.path.join(ROOT, "kernels"))
                     if f.endswith(".mlir"))
    jobs = [(k[:-5], os.path.join(ROOT, "kernels", k), []) for k in kernels]
    if args.tuning_db:
        with open(args.tuning_db) as f:
            entries = json.load(f)["entries"]
        for e in entries:
            source = os.path.join(ROOT, "kernels", e["kernel"] + ".mlir")
            if not os.path.exists(source):
                continue
            shape = ",".join(str(x) for x in e["shape"])
            name = "{0}_{1}".format(e["kernel"], shape.replace(",", "x"))
            jobs.append((name, source, ["--tuning-db", args.tuning_db,
                                        "--shape", shape]))
    if args.switches:
        # Switches that act only together with another.
        variants = [("probe", ["--probe-stamps"]),
                    ("persistent1_dynamic1",
                     ["--persistent=1", "--dynamic-schedule=1"]),
                    ("persistent1_tma0",
                     ["--persistent=1", "--tma-store-o=0"])]
        for flag in schedule_switch_flags():
            for value in (0, 1):
                variants.append((f"{flag}{value}", [f"--{flag}={value}"]))
        for k in kernels:
            for suffix, flags in variants:
                jobs.append((f"{k[:-5]}_{suffix}",
                             os.path.join(ROOT, "kernels", k), flags))
    return jobs


def compile_one(flashc, source, extra, out_dir, name):
    out = os.path.join(out_dir, name + ".ptx")
    proc = subprocess.run([flashc, source, "-o", out] + extra,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, None, proc.stderr.strip()
    with open(out) as f:
        ptx = f.read()
    meta_path = os.path.join(out_dir, "kernel.json")
    candidates = [os.path.join(out_dir, name + ".json"), meta_path]
    meta = None
    for path in candidates:
        if os.path.exists(path):
            with open(path) as f:
                meta = f.read()
            break
    return ptx, meta, None


def compare(args, job, work):
    name, source, extra = job
    results = []
    for side, flashc in (("old", args.old), ("new", args.new)):
        out_dir = os.path.join(work, side, name)
        os.makedirs(out_dir, exist_ok=True)
        results.append(compile_one(flashc, source, extra, out_dir, name))
    (old_ptx, old_meta, old_err), (new_ptx, new_meta, new_err) = results
    if old_err or new_err:
        if old_err and new_err:
            return name, "both-fail", old_err.splitlines()[-1]
        return name, "DIFFERENT", "compiles with one only: " + (
            "old: " + old_err if old_err else "new: " + new_err)
    if old_ptx == new_ptx:
        status = "identical"
    elif normalize_ptx(old_ptx) == normalize_ptx(new_ptx):
        status = "equal-up-to-names"
    else:
        a, b = normalize_ptx(old_ptx), normalize_ptx(new_ptx)
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                     min(len(a), len(b)))
        detail = "line {0}: old {1!r} new {2!r} ({3} vs {4} lines)".format(
            first, a[first] if first < len(a) else None,
            b[first] if first < len(b) else None, len(a), len(b))
        return name, "DIFFERENT", detail
    if (old_meta is not None and new_meta is not None
            and normalize_json(old_meta) != normalize_json(new_meta)):
        a, b = normalize_json(old_meta), normalize_json(new_meta)
        diff = [f"{x} | {y}" for x, y in zip(a, b) if x != y][:3]
        return name, "DIFFERENT", "kernel.json: " + "; ".join(diff)
    return name, status, ""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the reference flashc")
    parser.add_argument("--new", required=True, help="the flashc under test")
    parser.add_argument("--tuning-db", help="also every entry of this "
                        "database whose kernel is in kernels/")
    parser.add_argument("--switches", action="store_true",
                        help="also each shipped kernel with every schedule "
                        "switch forced to 0 and to 1, and with the probe")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="write the PTX here instead of a "
                        "temporary directory")
    parser.add_argument("--only", help="regex: compare only matching names")
    args = parser.parse_args(argv)
    for path in (args.old, args.new):
        if not os.access(path, os.X_OK):
            parser.error(f"not an executable: {path}")
    jobs = jobs_from(args)
    if args.only:
        jobs = [j for j in jobs if re.search(args.only, j[0])]
    work = args.keep or tempfile.mkdtemp(prefix="ptx-diff-")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: compare(args, j, work), jobs))
    counts = {}
    for name, status, detail in results:
        counts[status] = counts.get(status, 0) + 1
        if status not in ("identical", "equal-up-to-names"):
            print(f"{status:18} {name}: {detail}")
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())),
          f"of {len(results)} kernels")
    return 1 if counts.get("DIFFERENT") else 0


if __name__ == "__main__":
    sys.exit(main())

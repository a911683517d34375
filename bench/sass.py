#!/usr/bin/env python3
"""What the SASS of flashc kernels shows: a report from `cuobjdump -sass`.

For each kernel: its HGMMA, UTMALDG and UTMASTG counts; its key loops (the
innermost loops that issue HGMMA) with their local-memory instructions
(LDL/STL, spills); and, in each key loop that waits for S apart from P V
(`WARPGROUP.DEPBAR.LE gsb0, 0x1`, the overlapped loops), how many of its
exps (MUFU.EX2) run before that loop's wait for P V (`... gsb0, 0x0`).
The overlapped loops are written so that S_j's softmax runs while PV_{j-1}
is in the tensor cores; ptxas moves a wait as it likes, and a wait moved
above the exps serialises the two again, which only the SASS shows.

    python3 bench/sass.py kernels/*.cubin [--cuobjdump PATH] [--check]
    python3 bench/sass.py --listing dump.sass [--check]

--check: exit status 1 when a warp-specialized kernel (its kernel.json's
config names producer warpgroups; every --listing) has no HGMMA or no
UTMALDG, has LDL/STL in a key loop, or runs an exp of an overlapped loop
after the loop's wait for P V. Other kernels (the hand-written test
fixtures) are reported, not checked.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402  (where a kernel's kernel.json lies)

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA(?:\.[A-Z.]+)?\s+(0x[0-9a-f]+)")
WAIT_S = "WARPGROUP.DEPBAR.LE gsb0, 0x1"
WAIT_PV = "WARPGROUP.DEPBAR.LE gsb0, 0x0"


def parse(listing):
    """cuobjdump -sass text -> {function: [(address, instruction)]}."""
    functions, current = {}, None
    for line in listing.splitlines():
        if "Function :" in line:
            current = line.split("Function :", 1)[1].strip()
            functions[current] = []
            continue
        m = INSTRUCTION.search(line)
        if m and current is not None:
            functions[current].append((int(m.group(1), 16), m.group(2)))
    return functions


def loop_body(code, loop):
    """The instructions of `code` from loop's first address to its last."""
    return [t for a, t in code if loop[0] <= a <= loop[1]]


def key_loops(code):
    """The innermost loops that issue HGMMA, as (first, last) addresses in
    address order. A loop runs from a conditional backward branch's target
    to the branch: ptxas closes its loops so, while the out-of-line retries
    of an mbarrier wait jump back into a loop unconditionally."""
    loops = set()
    for address, text in code:
        m = BRANCH.search(text)
        if m and text.startswith("@") and int(m.group(1), 16) < address:
            loops.add((int(m.group(1), 16), address))
    with_mma = [l for l in loops
                if any("HGMMA" in t for t in loop_body(code, l))]
    def inside(inner, outer):
        return (inner != outer and outer[0] <= inner[0]
                and inner[1] <= outer[1])
    return sorted(l for l in with_mma
                  if not any(inside(o, l) for o in with_mma))


def overlap(body):
    """(exps before the loop's P V wait, all exps) of an overlapped loop
    body, None if the loop does not wait for S apart from P V."""
    start = next((i for i, t in enumerate(body) if WAIT_S in t), None)
    if start is None:
        return None
    before, total, waited = 0, 0, False
    for text in body[start:]:
        if WAIT_PV in text:
            waited = True
        if "MUFU.EX2" in text:
            total += 1
            before += not waited
    return before, total


def report(code):
    """The summary of one function's instructions (a dict)."""
    loops = []
    for loop in key_loops(code):
        body = loop_body(code, loop)
        loops.append({
            "range": list(loop),
            "hgmma": sum("HGMMA" in t for t in body),
            "local": sum(bool(re.search(r"\b(LDL|STL)\b", t)) for t in body),
            "overlap": overlap(body),
        })
    return {
        "hgmma": sum("HGMMA" in t for _, t in code),
        "utmaldg": sum("UTMALDG" in t for _, t in code),
        "utmastg": sum("UTMASTG" in t for _, t in code),
        "loops": loops,
    }


def problems(summary):
    """What --check rejects in a summary, as sentences."""
    out = []
    if not summary["hgmma"]:
        out.append("no HGMMA")
    if not summary["utmaldg"]:
        out.append("no UTMALDG")
    for loop in summary["loops"]:
        where = "key loop [{:#x}, {:#x}]".format(*loop["range"])
        if loop["local"]:
            out.append(f"{where}: {loop['local']} LDL/STL")
        if loop["overlap"] and loop["overlap"][0] < loop["overlap"][1]:
            before, total = loop["overlap"]
            out.append(f"{where}: {total - before} of {total} exps after "
                       "the wait for P V")
    return out


def describe(name, summary):
    loops = "; ".join(
        "[{:#x}, {:#x}] {} HGMMA, {} LDL/STL{}".format(
            *l["range"], l["hgmma"], l["local"],
            "" if l["overlap"] is None else
            ", exps before P V's wait {}/{}".format(*l["overlap"]))
        for l in summary["loops"])
    return (f"{name}: HGMMA {summary['hgmma']}, UTMALDG {summary['utmaldg']}, "
            f"UTMASTG {summary['utmastg']}; key loops: {loops or 'none'}")


def warp_specialized(cubin):
    """Whether the kernel.json beside `cubin` describes a flashc Hopper
    kernel (a config with producer warpgroups: TMA loads, wgmma), not one
    of the hand-written test fixtures."""
    try:
        meta = json.load(open(ab.metadata_path(cubin)))
        return "producer_warpgroups" in meta.get("config", {})
    except (OSError, ValueError, AttributeError):
        return False


def find_cuobjdump(given):
    if given:
        return given
    for candidate in (shutil.which("cuobjdump"),
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                   "bin", "cuobjdump")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cubins", nargs="*")
    p.add_argument("--listing", action="append", default=[],
                   help="a saved `cuobjdump -sass` listing (checked as flashc's)")
    p.add_argument("--cuobjdump", default=None)
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    if not args.cubins and not args.listing:
        p.error("give cubins or --listing")
    sources = [(path, open(path).read(), True) for path in args.listing]
    if args.cubins:
        tool = find_cuobjdump(args.cuobjdump)
        if tool is None:
            print("sass.py: no cuobjdump (PATH, $CUDA_HOME/bin, --cuobjdump)",
                  file=sys.stderr)
            return 2
        for cubin in args.cubins:
            try:
                done = subprocess.run([tool, "-sass", cubin],
                                      capture_output=True, text=True)
            except OSError as e:
                print(f"sass.py: --cuobjdump {tool}: {e.strerror}",
                      file=sys.stderr)
                return 2
            if done.returncode:
                print(f"sass.py: {cubin}: {done.stderr.strip()}",
                      file=sys.stderr)
                return 2
            sources.append((cubin, done.stdout, warp_specialized(cubin)))
    failed = 0
    for path, listing, checked in sources:
        for function, code in parse(listing).items():
            summary = report(code)
            name = f"{os.path.basename(path)} ({function})"
            print(describe(name, summary))
            found = problems(summary) if checked else []
            for sentence in found:
                print(f"  {'FAIL' if args.check else 'note'}: {sentence}")
            failed += bool(found)
    if args.check and failed:
        print(f"sass.py: {failed} kernel(s) failed the check")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

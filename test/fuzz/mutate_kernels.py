#!/usr/bin/env python3
"""A bounded mutation fuzz of the shipped kernels through flashc.

Each case takes a kernel of kernels/ (or, with --tool flash-opt, a file of
--corpus, e.g. the warp-specialised level's lit inputs), applies one to three seeded text
mutations (a number changed, a token dropped or duplicated, a type or
keyword swapped for another the dialect knows, a line dropped, an
attribute of #flash.config or #flash.schedule set to an odd value) and runs
`flashc CASE -o OUT.ptx` (to PTX: ptxas is not part of the compiler under
test), or `flash-opt CASE -split-input-file PASSES`. Every case must end in success or in a located error
(`FILE:LINE:COL: error:`); a crash (a signal, LLVM's stack dump or "PLEASE
submit a bug report"), an unlocated error or a run past the time limit
fails the test, which prints the case to reproduce it.

    python3 test/fuzz/mutate_kernels.py --flashc build/bin/flashc \\
        [--cases 120] [--seed 2026] [--jobs 2] [--keep DIR]
    python3 test/fuzz/mutate_kernels.py --flash-opt build/bin/flash-opt \\
        --corpus 'test/Conversion/flash-wg-*.mlir' \\
        --passes=-convert-flash-wg-to-nvvm
    python3 test/fuzz/mutate_kernels.py --flash-opt build/bin/flash-opt \\
        --tile-programs --passes='-flash-gpu-schedule -convert-flash-to-gpu'
"""
import argparse
import atexit
import concurrent.futures
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Words the dialect and its neighbours use: swapping one for another gives
# IR that parses far enough to reach the verifiers and the passes.
SWAPS = [
    ["bf16", "f16", "f32", "f64", "i32", "i8", "index"],
    ["block_m", "block_n", "stages", "warpgroups"],
    ["causal", "persistent", "overlap", "pingpong", "split_release",
     "tma_store_o", "dynamic_schedule", "speculative_exp"],
    ["true", "false"],
    ["memref", "tensor", "vector"],
    ["%q", "%k", "%v", "%o", "%lse"],
    ["flash.attention", "flash.grid", "flash.dot", "flash.mask"],
    ["#flash.wgmma_accumulator", "#flash.wgmma_operand_a", "#flash.wgmma_rows",
     "#flash.wgmma_row_partials"],
    ["flash.wg.row_max", "flash.wg.row_sum", "flash.wg.truncf"],
    ["flash.wg.scale_rows", "flash.wg.scaled_exp2", "flash.wg.mask_columns"],
    ["major = k", "major = mn"],
    ["->", ","],
    # The score and mask mods' regions and what their bodies hold.
    ["score_mod", "mask_mod", "captures", "sinks"],
    # A decoding step's operand groups and the scratch of split-KV.
    ["paged", "splits", "packed"],
    ["pack_gqa", "causal", "grouped", "grouped_rows"],
    ["%po", "%pl", "%t", "%l"],
    ["%sinks", "%slopes", "%lse", "%q"],
    ["arith.addf", "arith.mulf", "arith.divf", "arith.subf", "math.tanh",
     "math.exp", "math.log"],
    ["arith.addi", "arith.subi", "arith.muli", "arith.cmpi", "arith.index_cast"],
    ["flash.yield", "scf.yield", "func.return", "memref.load"],
    ["%q_idx", "%kv_idx", "%b", "%h", "%s"],
    ["uge", "ult", "eq", "slt", "ne"],
]
ODD_NUMBERS = [0, 1, -1, 3, 7, 16, 48, 63, 64, 65, 96, 100, 255, 256, 512,
               4096, 1 << 31, -(1 << 40)]
TOKEN = re.compile(r"%[A-Za-z_][\w]*|[A-Za-z_][\w.]*|-?\d+|->|[{}()<>\[\]=,:?x]")


def mutate(text, rng):
    """One seeded mutation of `text`."""
    kind = rng.choice(["number", "drop", "duplicate", "swap", "line",
                       "config"])
    tokens = list(TOKEN.finditer(text))
    if kind == "number":
        numbers = [m for m in tokens if re.fullmatch(r"-?\d+", m.group())]
        if numbers:
            m = rng.choice(numbers)
            choices = ODD_NUMBERS
            # A result number (%x#N) past 2^31 makes MLIR 22's own parser
            # allocate until it aborts ("LLVM ERROR: out of memory") before
            # any flashc code runs; results past the op's count still get
            # a located error.
            if text[:m.start()].endswith("#"):
                choices = [n for n in ODD_NUMBERS if 0 <= n < 1 << 16]
            return text[:m.start()] + str(rng.choice(choices)) + text[m.end():]
    if kind in ("drop", "duplicate") and tokens:
        m = rng.choice(tokens)
        middle = "" if kind == "drop" else m.group() + " " + m.group()
        return text[:m.start()] + middle + text[m.end():]
    if kind == "swap":
        group = rng.choice(SWAPS)
        spots = [m for m in tokens if m.group() in group]
        if spots:
            m = rng.choice(spots)
            return text[:m.start()] + rng.choice(group) + text[m.end():]
    if kind == "line":
        lines = text.splitlines(keepends=True)
        body = [i for i, line in enumerate(lines)
                if line.strip() and not line.lstrip().startswith("//")]
        if body:
            del lines[rng.choice(body)]
            return "".join(lines)
    if kind == "config" and "#flash.config<" in text:
        key = rng.choice(["block_m", "block_n", "stages", "warpgroups",
                          "persistent", "overlap", "bogus_key"])
        value = rng.choice([str(v) for v in ODD_NUMBERS] + ["true", "false"])
        return text.replace("#flash.config<", f"#flash.config<{key} = {value}, ", 1)
    return text


LOCATED = re.compile(r"^.+?:\d+:\d+: error: ", re.M)
CRASH = re.compile(r"PLEASE submit a bug report|Stack dump|Assertion .* failed|"
                   r"LLVM ERROR|UNREACHABLE")


def run_case(command, source, timeout):
    """flashc on one mutated source -> (outcome, problem): outcome is
    "compiled", "parse error", "error" (a located diagnostic past parsing)
    or "bad"; problem says what went wrong, or None."""
    with tempfile.TemporaryDirectory(prefix="flashc-fuzz-") as tmp:
        path = os.path.join(tmp, "case.mlir")
        with open(path, "w") as f:
            f.write(source)
        try:
            proc = subprocess.run(command(path, tmp), capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "bad", f"no answer within {timeout} s"
    err = proc.stderr
    if proc.returncode < 0 or CRASH.search(err):
        return "bad", f"crashed (exit {proc.returncode}):\n{err[-2000:]}"
    if proc.returncode == 0:
        return "compiled", None
    if not LOCATED.search(err):
        return "bad", (f"failed without a located error (exit "
                       f"{proc.returncode}):\n{err[-2000:]}")
    # flashc reports a source that does not parse before anything else.
    parse = re.search(r"expected|unexpected|custom op|undefined|unknown", err)
    return ("parse error" if parse else "error"), None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tool = parser.add_mutually_exclusive_group(required=True)
    tool.add_argument("--flashc", help="fuzz the shipped kernels through it")
    tool.add_argument("--flash-opt", help="fuzz --corpus through its --passes")
    parser.add_argument("--corpus", help="glob of inputs (with --flash-opt)")
    parser.add_argument("--passes", default="",
                        help="flash-opt's pass flags, space-separated")
    parser.add_argument("--tile-programs", action="store_true",
                        help="with --flash-opt and no --corpus: the shipped "
                        "kernels' tile programs (-flash-tile -flash-fuse), "
                        "so user-written tile ops reach --passes")
    parser.add_argument("--cases", type=int, default=120)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--keep", help="write every failing case here")
    args = parser.parse_args(argv)

    kernel_dir = os.path.join(ROOT, "kernels")
    shipped = sorted(os.path.join(kernel_dir, k)
                     for k in os.listdir(kernel_dir) if k.endswith(".mlir"))
    if args.flashc:
        kernels = shipped

        def command(path, tmp):
            return [args.flashc, path, "-o", os.path.join(tmp, "k.ptx")]
    else:
        if args.tile_programs:
            corpus = tempfile.mkdtemp(prefix="tile-programs-")
            atexit.register(shutil.rmtree, corpus, ignore_errors=True)
            kernels = []
            for source in shipped:
                path = os.path.join(corpus, os.path.basename(source))
                with open(path, "w") as f:
                    subprocess.run([args.flash_opt, source, "-flash-tile",
                                    "-flash-fuse"], stdout=f, check=True)
                kernels.append(path)
        else:
            kernels = sorted(glob.glob(os.path.join(ROOT, args.corpus or "")))
            if not kernels:
                parser.error(f"--corpus '{args.corpus}' matches no file")

        def command(path, tmp):
            return [args.flash_opt, path, "-split-input-file"] + args.passes.split()
    rng = random.Random(args.seed)
    cases = []
    for i in range(args.cases):
        kernel = kernels[i % len(kernels)]
        with open(kernel) as f:
            text = f.read()
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        cases.append((i, os.path.basename(kernel), text))

    failures = []
    outcomes = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda c: (c, run_case(command, c[2], args.timeout)),
                           cases)
        for (i, kernel, text), (outcome, problem) in results:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if problem:
                failures.append((i, kernel, text, problem))
    for i, kernel, text, problem in failures:
        print(f"case {i} (from {kernel}): {problem}\n--- source ---\n{text}")
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            with open(os.path.join(args.keep, f"case{i}.mlir"), "w") as f:
                f.write(text)
    print(f"mutate_kernels: {len(cases)} cases, seed {args.seed}: " +
          ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())))
    print(f"mutate_kernels: {len(failures)} crashed, hung or failed without "
          f"a located error")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

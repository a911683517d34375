#!/usr/bin/env python3
"""Count the PTX instructions of one or two PTX files by opcode.

  ptx-opcodes.py a.ptx            # opcode counts of a.ptx
  ptx-opcodes.py a.ptx b.ptx      # both side by side, differences marked '*'

An opcode is the instruction's full mnemonic with its modifiers
(`wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`, `ex2.approx.f32`),
guard predicates (`@%p1`) dropped. Directives, labels, braces and comments are
not instructions. The exit status is 1 when two files' counts differ, so the
script can gate a test.
"""
import collections
import re
import sys


def opcodes(path):
    counts = collections.Counter()
    text = open(path, encoding="utf-8", errors="replace").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for line in text.splitlines():
        line = line.split("//", 1)[0].strip()
        # several instructions may share a line inside inline-asm braces
        for stmt in line.replace("{", ";").replace("}", ";").split(";"):
            stmt = stmt.strip()
            if not stmt or stmt.startswith(".") or stmt.endswith(":"):
                continue
            if stmt.startswith("@"):
                stmt = stmt.split(None, 1)[1] if " " in stmt else ""
            if not stmt:
                continue
            op = stmt.split()[0].rstrip(",")
            if not re.match(r"^[a-z][A-Za-z0-9_.:]*$", op):
                continue
            counts[op] += 1
    return counts


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    a = opcodes(argv[1])
    if len(argv) == 2:
        for op, n in sorted(a.items()):
            print(f"{n:6d}  {op}")
        print(f"{sum(a.values()):6d}  TOTAL")
        return 0
    b = opcodes(argv[2])
    same = True
    for op in sorted(set(a) | set(b)):
        mark = " " if a[op] == b[op] else "*"
        same &= a[op] == b[op]
        print(f"{mark} {a[op]:6d} {b[op]:6d}  {op}")
    print(f"  {sum(a.values()):6d} {sum(b.values()):6d}  TOTAL")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

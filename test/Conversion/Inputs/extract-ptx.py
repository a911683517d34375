#!/usr/bin/env python3
"""Write the PTX text of the gpu.binary that `-gpu-lower-to-nvvm-pipeline=...
cubin-format=isa` produces (the `assembly = "..."` string, MLIR-escaped).

  extract-ptx.py lowered.mlir out.ptx
"""
import re
import sys

src = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', src)
if not m:
    sys.exit(f"{sys.argv[1]}: no gpu.binary assembly found")
out = bytearray()
s, i = m.group(1), 0
while i < len(s):
    if s[i] == "\\":
        if s[i + 1] in '\\"':
            out.append(ord(s[i + 1]))
            i += 2
        else:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
    else:
        out += s[i].encode()
        i += 1
open(sys.argv[2], "wb").write(bytes(out))

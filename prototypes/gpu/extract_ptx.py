#!/usr/bin/env python3
"""Extract the PTX text from the gpu.binary of `mlir-opt -gpu-lower-to-nvvm-pipeline=... cubin-format=isa`."""
import re, sys
src = open(sys.argv[1]).read()
m = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', src)
if not m:
    sys.exit("no assembly found")
s = m.group(1)
out = bytearray()
i = 0
while i < len(s):
    c = s[i]
    if c == '\\':
        n = s[i + 1]
        if n in '\\"':
            out.append(ord(n)); i += 2
        else:
            out.append(int(s[i + 1:i + 3], 16)); i += 3
    else:
        out += c.encode(); i += 1
open(sys.argv[2], 'wb').write(bytes(out))

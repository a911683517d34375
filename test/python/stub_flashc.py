#!/usr/bin/env python3
"""A stand-in for the flashc binary in the cache tests: no MLIR, no GPU.

Takes flashc's command line (INPUT -o OUT --emit=STAGE [--target=cpu] ...);
for cubin, ptx and so writes a fake binary (derived from the input's text)
and kernel.json beside it, as flashc does; for tile/mlir/llvm a line of
text. --version
prints "stub flashc" and $STUB_FLASHC_VERSION. Each compile appends
"<emit> <input>" to $STUB_LOG; $STUB_SLEEP seconds of delay; $STUB_FAIL
makes it fail with a diagnostic.
"""
import hashlib
import json
import os
import sys
import time


def main(argv):
    if "--version" in argv:
        print("stub flashc " + os.environ.get("STUB_FLASHC_VERSION", "1"))
        return 0
    inp, out, emit = None, None, None
    it = iter(argv)
    for a in it:
        if a == "-o":
            out = next(it)
        elif a.startswith("--emit="):
            emit = a.split("=", 1)[1]
        elif not a.startswith("-"):
            inp = a
    if emit is None:
        emit = {".cubin": "cubin", ".so": "so"}.get(os.path.splitext(out)[1],
                                                     "ptx")
    cpu = "--target=cpu" in argv
    if (emit == "so" and not cpu) or (emit in ("cubin", "ptx") and cpu):
        sys.stderr.write(f"stub: --emit={emit} is not for this --target\n")
        return 1
    with open(inp) as f:
        text = f.read()
    log = os.environ.get("STUB_LOG")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{emit} {inp}\n".encode())
        os.close(fd)
    time.sleep(float(os.environ.get("STUB_SLEEP", "0")))
    if os.environ.get("STUB_FAIL"):
        sys.stderr.write(f"{inp}:3:7: error: stub failure\n")
        return 1
    digest = hashlib.sha256(text.encode()).hexdigest()
    if emit in ("cubin", "ptx", "so"):
        with open(out, "wb") as f:
            f.write(b"STUBCUBIN" + digest.encode() * 8)
        meta = {"format": "flashc-kernel", "format_version": 1,
                "binary": os.path.basename(out), "binary_format": emit,
                "arch": "x86_64-pc-linux-gnu" if emit == "so" else "sm_90a",
                "source_hash": digest}
        with open(os.path.splitext(out)[0] + ".json", "w") as f:
            json.dump(meta, f)
    else:
        with open(out, "w") as f:
            f.write(f"// stub {emit} of {digest}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

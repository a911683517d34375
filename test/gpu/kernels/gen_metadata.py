#!/usr/bin/env python3
"""Writes the kernel.json of each ref_attention.cu variant (test fixtures).

The JSON files are committed; this script is how they were written and how
to add a variant. VARIANTS is also read by test/gpu/CMakeLists.txt (through
variants.txt) to know which cubins to build with which -D flags.
Run: python3 test/gpu/kernels/gen_metadata.py
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BM, BN = 64, 32

# (dtype, head_dim, causal, lse, cluster_x, tma_param)
VARIANTS = [
    ("bf16", 64, 0, 1, 1, 0), ("bf16", 64, 1, 1, 1, 0),
    ("bf16", 128, 0, 1, 1, 0), ("bf16", 128, 1, 1, 1, 0),
    ("f16", 64, 0, 1, 1, 0), ("f16", 64, 1, 1, 1, 0),
    ("f16", 128, 0, 1, 1, 0), ("f16", 128, 1, 1, 1, 0),
    ("bf16", 128, 0, 0, 1, 0),  # no LSE
    ("f16", 64, 1, 0, 2, 0),    # no LSE, launched as clusters of 2
    ("bf16", 64, 0, 1, 1, 1),   # with a CUtensorMap parameter over K
]


def name(dtype, d, causal, lse, cluster, tma):
    n = f"ref_attention_{dtype}_d{d}_{'causal' if causal else 'full'}"
    if not lse:
        n += "_nolse"
    if cluster > 1:
        n += f"_cluster{cluster}"
    if tma:
        n += "_tma"
    return n


def metadata(dtype, d, causal, lse, cluster, tma):
    n = name(dtype, d, causal, lse, cluster, tma)
    params = [{"kind": "ptr", "tensor": t} for t in "qkvo"]
    if lse:
        params.append({"kind": "ptr", "tensor": "lse"})
    params += [{"kind": "i32", "value": v} for v in ("seq_q", "seq_k", "heads")]
    for t in "qkvo":
        params += [{"kind": "i64", "value": f"stride_{t}_{x}"} for x in "bhn"]
    if lse:
        params += [{"kind": "i64", "value": f"stride_lse_{x}"} for x in "bh"]
    params.append({"kind": "f32", "value": "scale_log2"})
    if tma:
        params.append({"kind": "tma", "tensor": "k", "box": [64, 64],
                       "swizzle": 128})
    smem = 4 * (BM * (d + 1) + 2 * BN * d + BM * (BN + 1))
    return n, {
        "format": "flashc-kernel", "format_version": 1,
        "flashc_version": "0.1.0",
        "source_hash": "hand-written:test/gpu/kernels/ref_attention.cu",
        "kernel": n, "binary": n + ".cubin", "binary_format": "cubin",
        "arch": "sm_90a", "dtype": dtype, "head_dim": d,
        "causal": bool(causal), "scale": 1.0 / math.sqrt(d),
        "has_lse": bool(lse), "block": [BM, 1, 1], "cluster": [cluster, 1, 1],
        "shared_memory_bytes": smem,
        "grid": {"kind": "tiles", "block_m": BM},
        "config": {"block_m": BM, "block_n": BN, "stages": 1},
        "params": params,
    }


def main():
    lines = []
    for v in VARIANTS:
        n, meta = metadata(*v)
        with open(os.path.join(HERE, n + ".json"), "w") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
        dtype, d, causal, lse, _, tma = v
        lines.append(f"{n} -DREF_DTYPE={dtype} -DREF_HEAD_DIM={d} "
                     f"-DREF_CAUSAL={causal} -DREF_LSE={lse} "
                     f"-DREF_TMA_PARAM={tma}")
    with open(os.path.join(HERE, "variants.txt"), "w") as f:
        f.write("# name and nvcc -D flags of each ref_attention.cu variant "
                "(written by gen_metadata.py)\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The CPU path end to end, without torch: flashc.cpu.attention on numpy
arrays compiles the variant with the real flashc (--target=cpu) into the
on-disk cache on first use, loads kernel.so with ctypes and runs it; the
outputs (poisoned with NaN first) are compared with a float64 reference by
relative error: ragged lengths (not multiples of the tiles), causal with
seq_q > seq_k (fully masked rows: O = 0, LSE = -inf) and seq_q < seq_k
(bottom-right aligned), rows with logits near 1e3, bf16 and f16, and the
score and mask mods (softcap, window, chunk_size). A second
process finds the cached library without compiling.

The compiler is $FLASHC_COMPILER (ctest passes this build's flashc), else
build/bin/flashc of this checkout. Exits 77 (ctest: skipped) with a
"skipped: ..." line where numpy or the compiler is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import numpy as np
except ImportError:
    print("skipped: no numpy (scripts/setup.sh installs python3-numpy)")
    sys.exit(77)

COMPILER = os.environ.get("FLASHC_COMPILER") or os.path.join(
    ROOT, "build", "bin", "flashc")
if not os.access(COMPILER, os.X_OK):
    print(f"skipped: no flashc binary at {COMPILER} (build it, or set "
          "FLASHC_COMPILER)")
    sys.exit(77)

from fresh_cache import FreshCacheTest  # noqa: E402
import flashc  # noqa: E402
from flashc import cache, cpu  # noqa: E402
from flashc.variants import Variant  # noqa: E402

BF16_NAN = 0x7FC0


def to_bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even (no NaNs here)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def reference(q, k, v, causal, scale, softcap=None, window=None,
              chunk=None):
    """float64 attention, causal aligned bottom-right; (O, LSE), with O = 0
    and LSE = -inf on rows that see no key. K and V may have fewer heads
    (grouped-query attention): query head h reads K/V head h / G. softcap:
    each scaled logit s becomes softcap * tanh(s / softcap); window: query i
    sees no key j with j + window < i; chunk: query i sees no key j with
    i // chunk != j // chunk (both counted from the top-left)."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    nq, nk = q.shape[2], k.shape[2]
    i = np.arange(nq)[:, None]
    j = np.arange(nk)[None, :]
    if causal:
        s = np.where(j > i + nk - nq, -np.inf, s)
    if window is not None:
        s = np.where(j + window < i, -np.inf, s)
    if chunk is not None:
        s = np.where(i // chunk != j // chunk, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    seen = np.isfinite(m)
    m_safe = np.where(seen, m, 0.0)
    p = np.where(seen, np.exp(s - m_safe), 0.0)
    l = p.sum(axis=-1, keepdims=True)
    o = np.where(seen, p / np.where(seen, l, 1.0), 0.0) @ v
    lse = np.where(seen, m_safe + np.log(np.where(seen, l, 1.0)), -np.inf)
    return o, lse[..., 0]


class Case:
    def __init__(self, name, b, h, nq, nk, d, dtype, causal=False, scale=None,
                 hot=1.0, hkv=None, softcap=None, window=None, chunk=None,
                 masked=None):
        self.name, self.shape = name, (b, h, nq, nk, d)
        self.dtype, self.causal, self.scale, self.hot = dtype, causal, scale, hot
        self.hkv = hkv or h
        self.softcap, self.window, self.chunk = softcap, window, chunk
        # Rows (over every batch and head) that see no key.
        if masked is None:
            masked = b * h * (nq - nk) if causal and nq > nk else 0
        self.masked = masked


CASES = [
    # Lengths that are no multiple of the shipped D=64 config's 256 x 96
    # tiles, in both sequences.
    Case("bf16_d64_ragged", 2, 2, 150, 150, 64, "bf16"),
    # seq_q > seq_k: the first 123 rows of each head see no key.
    Case("bf16_d64_causal_more_queries", 1, 2, 200, 77, 64, "bf16",
         causal=True),
    # seq_q < seq_k, bottom-right aligned, every third query row scaled so
    # that its logits reach ~1e3.
    Case("bf16_d64_causal_more_keys_logits_1e3", 1, 2, 70, 150, 64, "bf16",
         causal=True, hot=3000.0),
    Case("f16_d128_scale_logits_1e3", 1, 2, 77, 190, 128, "f16", scale=0.05,
         hot=3000.0),
    # The same kernel function name as bf16_d64_ragged's (a scale is no part
    # of it), loaded into the same process: each library must call its own.
    Case("bf16_d64_scale", 1, 1, 40, 33, 64, "bf16", scale=0.3),
    # Grouped-query attention (32 query heads over 8 K/V heads) and
    # multi-query attention (one K/V head), K/V not repeated.
    Case("bf16_d64_causal_gqa_32_over_8", 2, 32, 70, 129, 64, "bf16",
         causal=True, hot=3000.0, hkv=8),
    Case("f16_d128_mqa_32_over_1", 1, 32, 129, 65, 128, "f16", hkv=1),
    # The score and mask mods of flashc.attention's softcap and window
    # (the dialect's score_mod and mask_mod regions): soft-capping of
    # logits near 1e3, a window of 40 keys with causal (the loop skips the
    # key tiles before each query tile's window), and a window without
    # causal over fewer keys than queries: rows past key 76 + 30 see no key.
    Case("bf16_d64_causal_softcap_window_logits_1e3", 1, 2, 150, 150, 64,
         "bf16", causal=True, hot=3000.0, softcap=20.0, window=40),
    Case("f16_d128_window_hides_rows", 1, 2, 200, 77, 128, "f16", window=30,
         masked=2 * (200 - 107)),
    Case("bf16_d64_softcap_gqa", 2, 4, 90, 130, 64, "bf16", softcap=30.0,
         hkv=2),
    # Chunks of 100 (no multiple of the 256 x 96 or 128 x 128 tiles, so
    # tiles straddle chunks): with causal over 300 queries and 250 keys,
    # rows 0-49 see no key by causal alone, rows 100-149 and 200-249 none
    # in their chunk (their keys up to i - 50 all lie in the chunk before).
    Case("bf16_d64_causal_chunk_hides_rows_logits_1e3", 1, 2, 300, 250, 64,
         "bf16", causal=True, hot=3000.0, chunk=100, masked=2 * 150),
    # Without causal a query sees its whole chunk, after it too; with a
    # window of 30 and the cap as well, in one mask_mod.
    Case("f16_d128_softcap_window_chunk", 1, 2, 300, 300, 128, "f16",
         softcap=20.0, window=30, chunk=100),
]


def make_inputs(case, seed):
    """(kernel inputs, their float64 values) for q, k, v: uniform in
    [-1, 1), q's every third row times case.hot."""
    b, h, nq, nk, d = case.shape
    rng = np.random.default_rng(seed)
    kernel, exact = [], []
    for n, heads, rows in (("q", h, nq), ("k", case.hkv, nk),
                           ("v", case.hkv, nk)):
        x = rng.uniform(-1.0, 1.0, size=(b, heads, rows, d)).astype(np.float32)
        if n == "q":
            x[:, :, ::3, :] *= case.hot
        if case.dtype == "bf16":
            bits = to_bf16_bits(x)
            kernel.append(bits)
            exact.append(from_bf16_bits(bits).astype(np.float64))
        else:
            half = x.astype(np.float16)
            kernel.append(half)
            exact.append(half.astype(np.float64))
    return kernel, exact


def output_values(o, dtype):
    return (from_bf16_bits(o) if dtype == "bf16" else o).astype(np.float64)


def poisoned_outputs(case):
    b, h, nq, _, d = case.shape
    if case.dtype == "bf16":
        o = np.full((b, h, nq, d), BF16_NAN, dtype=np.uint16)
    else:
        o = np.full((b, h, nq, d), np.nan, dtype=np.float16)
    return o, np.full((b, h, nq), np.nan, dtype=np.float32)


class CompilingTest(FreshCacheTest):
    """A fresh cache and this build's flashc (COMPILER); the backward's
    test (test_flashc_cpu_backward.py) takes it too."""
    compiler = COMPILER


class CpuKernelTest(CompilingTest):

    def check(self, case, o, lse, exact):
        b, h, nq, nk, d = case.shape
        scale = case.scale if case.scale is not None else d ** -0.5
        ref_o, ref_lse = reference(*exact, case.causal, scale, case.softcap,
                                   case.window, case.chunk)
        got_o = output_values(o, case.dtype)
        masked = np.isinf(ref_lse)
        self.assertEqual(int(masked.sum()), case.masked, case.name)
        # Rows that see no key: exactly O = 0 and LSE = -inf.
        self.assertTrue(np.all(got_o[masked] == 0.0), case.name)
        self.assertTrue(np.all(np.isneginf(lse[masked])), case.name)
        seen = ~masked
        self.assertTrue(np.all(np.isfinite(got_o[seen])),
                        f"{case.name}: O has non-finite values where every "
                        "row sees a key (a row left unwritten stays NaN)")
        self.assertTrue(np.all(np.isfinite(lse[seen])), case.name)
        err = np.linalg.norm(got_o[seen] - ref_o[seen]) / np.linalg.norm(
            ref_o[seen])
        lse_err = np.linalg.norm(lse[seen] - ref_lse[seen]) / np.linalg.norm(
            ref_lse[seen])
        tolerance = 1e-2 if case.dtype == "bf16" else 5e-3
        print(f"[ numerics ] {case.name}: rel err O {err:.2e}, LSE "
              f"{lse_err:.2e}, fully masked rows {int(masked.sum())} "
              f"(tolerance {tolerance})")
        self.assertLess(err, tolerance, case.name)
        self.assertLess(lse_err, tolerance, case.name)

    def test_matches_float64_reference(self):
        for seed, case in enumerate(CASES):
            with self.subTest(case.name):
                (q, k, v), exact = make_inputs(case, seed)
                if case.hot > 1:
                    d = case.shape[4]
                    scale = case.scale if case.scale is not None else d ** -0.5
                    logits = np.einsum("bhid,bhjd->bhij", exact[0][:, :1],
                                       exact[1][:, :1]) * scale
                    self.assertGreater(np.abs(logits).max(), 500.0)
                o, lse = poisoned_outputs(case)
                got_o, got_lse = cpu.attention(
                    q, k, v, causal=case.causal, scale=case.scale, out=o,
                    lse=lse, return_lse=True, softcap=case.softcap,
                    window=case.window, chunk_size=case.chunk)
                self.assertIs(got_o, o)
                self.assertIs(got_lse, lse)
                self.check(case, o, lse, exact)

    def test_varlen_matches_float64_reference(self):
        """Packed sequences (cpu.varlen_attention): lengths 0, 1, 127, 128,
        129 and 300, queries and keys of other lengths, causal and not,
        grouped heads, rows with logits near 1e3; O poisoned first; each
        sequence against its own float64 reference."""
        rng = np.random.default_rng(41)
        lens_q = [0, 1, 127, 128, 129, 300, 40, 7]
        lens_k = [0, 1, 127, 128, 129, 300, 90, 0]
        h, hkv, d = 4, 2, 64
        cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
        cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
        for causal in (False, True):
            with self.subTest(causal=causal):
                xs = []
                for rows, heads in ((cu_q[-1], h), (cu_k[-1], hkv),
                                    (cu_k[-1], hkv)):
                    x = rng.uniform(-1, 1, (rows, heads, d)).astype(np.float32)
                    xs.append(x)
                xs[0][::3] *= 3000.0
                bits = [to_bf16_bits(x) for x in xs]
                exact = [from_bf16_bits(b).astype(np.float64) for b in bits]
                o = np.full((cu_q[-1], h, d), BF16_NAN, dtype=np.uint16)
                got, lse = cpu.varlen_attention(
                    *bits, cu_q, cu_k, causal=causal, out=o, return_lse=True)
                self.assertIs(got, o)
                for s in range(len(lens_q)):
                    q0, q1, k0, k1 = cu_q[s], cu_q[s + 1], cu_k[s], cu_k[s + 1]
                    if q1 == q0:
                        continue
                    got_o = output_values(o[q0:q1], "bf16")
                    if k1 == k0:
                        self.assertTrue(np.all(got_o == 0))
                        self.assertTrue(np.all(np.isneginf(lse[:, q0:q1])))
                        continue
                    view = lambda t, a, b: t[a:b].transpose(1, 0, 2)[None]
                    ref_o, ref_lse = reference(
                        view(exact[0], q0, q1), view(exact[1], k0, k1),
                        view(exact[2], k0, k1), causal, d ** -0.5)
                    ref_o = ref_o[0].transpose(1, 0, 2)
                    err = (np.linalg.norm(got_o - ref_o)
                           / max(np.linalg.norm(ref_o), 1e-30))
                    self.assertLess(err, 1e-2, f"sequence {s}")
                    seen = np.isfinite(ref_lse[0])
                    self.assertTrue(np.allclose(lse[:, q0:q1][seen],
                                                ref_lse[0][seen], rtol=1e-3,
                                                atol=1e-3), f"sequence {s}")
                    self.assertTrue(np.all(np.isneginf(lse[:, q0:q1][~seen])))
        with self.assertRaises(flashc.FlashcError):
            cpu.varlen_attention(*bits, cu_q[::-1].copy(), cu_k)
        with self.assertRaises(flashc.FlashcError):
            cpu.varlen_attention(*bits, cu_q, cu_k[:-1])

    def test_any_input_layout(self):
        """A B x N x H x D array viewed as B x H x N x D is copied, not read
        with the wrong strides."""
        case = CASES[0]
        (q, k, v), exact = make_inputs(case, 7)
        q_bnhd = np.ascontiguousarray(q.transpose(0, 2, 1, 3))
        q_view = q_bnhd.transpose(0, 2, 1, 3)
        self.assertFalse(q_view.flags.c_contiguous)
        o, lse = cpu.attention(q_view, k, v, return_lse=True)
        self.check(case, o, lse, exact)

    def test_cache_entry_and_second_process(self):
        v = Variant("bf16", 64, causal=True)
        path, compiled = cpu.compile_variant(v)
        with open(os.path.join(path, "entry.json")) as f:
            entry = json.load(f)
        with open(os.path.join(path, "kernel.json")) as f:
            meta = json.load(f)
        self.assertEqual(entry["arch"], cache.CPU_ARCH)
        self.assertEqual(entry["binary"], "kernel.so")
        self.assertIn("cc_version", entry["toolchain"])
        self.assertEqual(meta["binary_format"], "so")
        self.assertEqual(meta["kernel"], "_mlir_ciface_attention_d64_causal")
        self.assertIsNone(cache.validate_entry(path, binary="kernel.so"))
        mtime = os.stat(os.path.join(path, "entry.json")).st_mtime_ns

        # Another process: the same entry, found without compiling, and its
        # kernel runs.
        script = textwrap.dedent(f"""
            import json, sys
            sys.path.insert(0, {os.path.join(ROOT, "python")!r})
            import numpy as np
            from flashc import cpu
            from flashc.variants import Variant
            path, compiled = cpu.compile_variant(Variant("bf16", 64, True))
            q = np.full((1, 1, 5, 64), 0x3F80, dtype=np.uint16)  # 1.0
            o, lse = cpu.attention(q, q, q, causal=True, return_lse=True)
            print(json.dumps({{"path": path, "compiled": compiled,
                              "o": int(o[0, 0, 4, 0]),
                              "lse": float(lse[0, 0, 4])}}))
            """)
        r = subprocess.run([sys.executable, "-c", script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ), timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        res = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertEqual(res["path"], path)
        self.assertFalse(res["compiled"])
        self.assertEqual(
            os.stat(os.path.join(path, "entry.json")).st_mtime_ns, mtime)
        # Row 4 sees 5 equal keys: O = 1.0 (bf16 0x3F80), LSE = 8 + log 5.
        self.assertEqual(res["o"], 0x3F80)
        self.assertAlmostEqual(res["lse"], 8 + np.log(5), places=4)

    def test_load_a_library_flashc_wrote(self):
        out = os.path.join(self.tmp, "lib", "kernel.so")
        os.makedirs(os.path.dirname(out))
        subprocess.run([COMPILER, os.path.join(ROOT, "kernels",
                                               "attention_d64.mlir"),
                        "--target=cpu", "-o", out], check=True)
        kern = cpu.load(out)
        self.assertEqual((kern.dtype, kern.head_dim, kern.causal,
                          kern.has_lse), ("bf16", 64, False, True))
        case = Case("bf16_d64_loaded", 1, 3, 33, 65, 64, "bf16")
        (q, k, v), exact = make_inputs(case, 11)
        o, lse = poisoned_outputs(case)
        kern.run(q.ctypes.data, k.ctypes.data, v.ctypes.data, o.ctypes.data,
                 lse.ctypes.data, 1, 3, 33, 65)
        self.check(case, o, lse, exact)
        # kernel.json must describe this library.
        with open(os.path.join(self.tmp, "lib", "kernel.json")) as f:
            meta = json.load(f)
        meta["binary_format"] = "cubin"
        other = os.path.join(self.tmp, "lib", "other.so")
        shutil.copy(out, other)
        with open(os.path.join(self.tmp, "lib", "other.json"), "w") as f:
            json.dump(dict(meta, binary="other.so"), f)
        with self.assertRaisesRegex(flashc.FlashcError, "host library"):
            cpu.load(other)

    def test_native_library(self):
        """flashc --host-cpu=native: f16 through the host's own
        conversions (F16C on x86-64) where it has them."""
        out = os.path.join(self.tmp, "native", "kernel.so")
        os.makedirs(os.path.dirname(out))
        subprocess.run([COMPILER, os.path.join(ROOT, "kernels",
                                               "attention_f16_d64_causal.mlir"),
                        "--target=cpu", "--host-cpu=native", "-o", out],
                       check=True)
        kern = cpu.load(out)
        case = Case("f16_d64_causal_native", 2, 1, 90, 61, 64, "f16",
                    causal=True, hot=3000.0)
        (q, k, v), exact = make_inputs(case, 12)
        o, lse = poisoned_outputs(case)
        kern.run(q.ctypes.data, k.ctypes.data, v.ctypes.data, o.ctypes.data,
                 lse.ctypes.data, 2, 1, 90, 61)
        self.check(case, o, lse, exact)

    def test_refused_arguments(self):
        q = np.zeros((1, 1, 4, 64), dtype=np.float32)
        with self.assertRaisesRegex(flashc.FlashcError, "dtype float32"):
            cpu.attention(q, q, q)
        q = np.ones((1, 1, 4, 96), dtype=np.float16)
        with self.assertRaisesRegex(flashc.FlashcError, "head dim 96"):
            cpu.attention(q, q, q)
        q = np.ones((1, 2, 4, 64), dtype=np.float16)
        k = np.ones((1, 3, 4, 64), dtype=np.float16)
        with self.assertRaisesRegex(flashc.FlashcError,
                                    "multiple of the K/V heads"):
            cpu.attention(q, k, k)
        k = np.ones((2, 2, 4, 64), dtype=np.float16)
        with self.assertRaisesRegex(flashc.FlashcError, "must agree"):
            cpu.attention(q, k, k)
        with self.assertRaisesRegex(flashc.FlashcError, "out must be"):
            cpu.attention(q, q, q, out=np.empty((1, 2, 4, 64), np.uint16))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""The backward pass on the CPU path, without torch: the forward
(flashc.cpu.attention) gives O and LSE, then flashc.cpu.attention_backward
compiles flash.attention_backward for the variant with the real flashc
(--target=cpu) and returns dq, dk and dv, which are compared with float64
gradients of the same inputs by relative error (delta = rowsum(dO * O)
of the forward's stored O, as the op defines it; the error against the
exact delta is printed beside): ragged lengths, causal with
seq_q > seq_k (rows that see no key: dq exactly 0) and seq_q < seq_k, rows
with logits near 1e3, bf16 and f16, grouped-query (32/8) and multi-query
(32/1) heads, whose dk and dv sum their query heads'; and packed
sequences (flashc.cpu.varlen_attention_backward) of lengths 0 to 300.

The compiler is $FLASHC_COMPILER (ctest passes this build's flashc), else
build/bin/flashc of this checkout. Exits 77 (ctest: skipped) with a
"skipped: ..." line where numpy or the compiler is missing.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Skips (exit 77) without numpy or the compiler, and sets up the import of
# flashc from this checkout.
from test_flashc_cpu_kernel import (Case, CompilingTest,  # noqa: E402
                                    make_inputs, output_values, to_bf16_bits)

import numpy as np  # noqa: E402
from flashc import FlashcError, cpu  # noqa: E402


def reference_backward(q, k, v, do, causal, scale, o=None, softcap=None,
                       window=None, chunk_size=None):
    """float64 (dq, dk, dv) of softmax(scale * q k^T) v against do, causal
    aligned bottom-right; rows that see no key contribute nothing. K/V heads
    shared by a group of query heads get the group's sum. With `o`, delta =
    rowsum(do * o) of that O, as flash.attention_backward defines it (the
    forward's stored output), instead of the exact rowsum(P * dP). softcap,
    window and chunk_size as flashc.attention's, the cap's derivative
    1 - tanh^2 written here by hand."""
    b, h, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    group = h // hkv
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, kr) * scale
    cap_grad = 1.0
    if softcap is not None:
        t = np.tanh(s / softcap)
        s, cap_grad = softcap * t, 1.0 - t * t
    i = np.arange(nq)[:, None]
    j = np.arange(nk)[None, :]
    if causal:
        s = np.where(j > i + nk - nq, -np.inf, s)
    if window is not None:
        s = np.where(j + window < i, -np.inf, s)
    if chunk_size is not None:
        s = np.where(i // chunk_size != j // chunk_size, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    seen = np.isfinite(m)
    p = np.where(seen, np.exp(s - np.where(seen, m, 0.0)), 0.0)
    p /= np.where(seen, p.sum(axis=-1, keepdims=True), 1.0)
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    dp = np.einsum("bhid,bhjd->bhij", do, vr)
    delta = ((do * o).sum(axis=-1, keepdims=True) if o is not None
             else (p * dp).sum(axis=-1, keepdims=True))
    ds = p * (dp - delta) * cap_grad * scale
    dq = np.einsum("bhij,bhjd->bhid", ds, kr)
    dk = np.einsum("bhij,bhid->bhjd", ds, q)
    fold = lambda t: t.reshape(b, hkv, group, nk, d).sum(axis=2)
    return dq, fold(dk), fold(dv)


CASES = [
    Case("bf16_d64_ragged", 2, 2, 150, 150, 64, "bf16"),
    # seq_q > seq_k: the first 123 rows of each head see no key.
    Case("bf16_d64_causal_more_queries", 1, 2, 200, 77, 64, "bf16",
         causal=True),
    Case("bf16_d64_causal_more_keys_logits_1e3", 1, 2, 70, 150, 64, "bf16",
         causal=True, hot=3000.0),
    Case("f16_d128_scale", 1, 2, 77, 130, 128, "f16", scale=0.05),
    Case("bf16_d64_causal_gqa_32_over_8", 1, 32, 70, 129, 64, "bf16",
         causal=True, hot=3000.0, hkv=8),
    Case("f16_d64_mqa_32_over_1", 1, 32, 65, 97, 64, "f16", hkv=1),
    # The score and mask mods: the backward derived from the forward's
    # regions (the cap's derivative by the compiler), with rows near 1e3
    # where the cap's slope is near 0, and rows the window and causal hide
    # entirely.
    Case("bf16_d64_causal_softcap_window_logits_1e3", 1, 2, 150, 150, 64,
         "bf16", causal=True, hot=3000.0, softcap=20.0, window=40),
    Case("bf16_d64_softcap_gqa", 2, 4, 90, 130, 64, "bf16", softcap=30.0,
         hkv=2),
    Case("f16_d64_causal_window_more_queries", 1, 2, 200, 77, 64, "f16",
         causal=True, window=150),
    # Chunks of 100 over the 64 x 64 backward tiles (each key tile's query
    # tiles bounded by its keys' chunks): with causal over 300 queries and
    # 250 keys, 150 rows a head see no key (dq exactly 0); without causal,
    # with the cap and a window in the same mask_mod.
    Case("bf16_d64_causal_chunk_hides_rows", 1, 2, 300, 250, 64, "bf16",
         causal=True, chunk=100, masked=2 * 150),
    Case("f16_d64_softcap_window_chunk_logits_1e3", 1, 2, 300, 300, 64,
         "f16", hot=3000.0, softcap=20.0, window=150, chunk=100),
]


def random_like(x, dtype, rng):
    """A random array of x's shape in the kernel's encoding, and its
    float64 values."""
    r = rng.uniform(-1.0, 1.0, size=x.shape).astype(np.float32)
    if dtype == "bf16":
        bits = to_bf16_bits(r)
        return bits, output_values(bits, dtype)
    half = r.astype(np.float16)
    return half, half.astype(np.float64)


class CpuBackwardTest(CompilingTest):
    def test_gradients_match_float64(self):
        for seed, case in enumerate(CASES):
            with self.subTest(case.name):
                b, h, nq, nk, d = case.shape
                (q, k, v), exact = make_inputs(case, seed)
                mods = dict(softcap=case.softcap, window=case.window,
                            chunk_size=case.chunk)
                o, lse = cpu.attention(q, k, v, causal=case.causal,
                                       scale=case.scale, return_lse=True,
                                       **mods)
                do, do_exact = random_like(o, case.dtype,
                                           np.random.default_rng(100 + seed))
                dq, dk, dv = cpu.attention_backward(
                    q, k, v, o, lse, do, causal=case.causal, scale=case.scale,
                    **mods)
                scale = case.scale if case.scale is not None else d ** -0.5
                # The op's delta comes from the O it is given, the forward's
                # rounded output: rows with logits near 1e3 (q times 3000)
                # amplify its rounding in dk by |q|, whatever the kernel.
                want = reference_backward(*exact, do_exact, case.causal, scale,
                                          o=output_values(o, case.dtype),
                                          **mods)
                exact_grads = reference_backward(*exact, do_exact,
                                                 case.causal, scale, **mods)
                tolerance = 1e-2 if case.dtype == "bf16" else 5e-3
                errors, exact_errors = [], []
                for name, got, ref, ref_exact in zip(
                        ("dq", "dk", "dv"), (dq, dk, dv), want, exact_grads):
                    self.assertEqual(got.shape, ref.shape, name)
                    self.assertEqual(got.dtype, q.dtype, name)
                    values = output_values(got, case.dtype)
                    self.assertTrue(np.all(np.isfinite(values)),
                                    f"{case.name}: {name} is not finite")
                    errors.append(np.linalg.norm(values - ref)
                                  / np.linalg.norm(ref))
                    exact_errors.append(np.linalg.norm(values - ref_exact)
                                        / np.linalg.norm(ref_exact))
                # Rows that see no key: dq exactly 0.
                i, j = np.arange(nq)[:, None], np.arange(nk)[None, :]
                keep = np.ones((nq, nk), dtype=bool)
                if case.causal:
                    keep &= j <= i + nk - nq
                if case.window is not None:
                    keep &= j + case.window >= i
                if case.chunk is not None:
                    keep &= i // case.chunk == j // case.chunk
                unseen = ~keep.any(axis=-1)
                self.assertEqual(b * h * int(unseen.sum()), case.masked,
                                 case.name)
                self.assertTrue(np.all(output_values(dq, case.dtype)[
                    :, :, unseen] == 0.0), case.name)
                print(f"[ numerics ] {case.name}: rel err dq {errors[0]:.2e},"
                      f" dk {errors[1]:.2e}, dv {errors[2]:.2e} (tolerance "
                      f"{tolerance}); against the exact delta: dq "
                      f"{exact_errors[0]:.2e}, dk {exact_errors[1]:.2e}, dv "
                      f"{exact_errors[2]:.2e}")
                for name, err in zip(("dq", "dk", "dv"), errors):
                    self.assertLess(err, tolerance, f"{case.name}: {name}")

    def test_packed_sequences(self):
        """varlen_attention_backward: lengths 0, 1, 127, 128, 129 and 300
        against keys of other lengths (one sequence without keys: its rows
        see none), causal and not, GQA 4/2, every sequence checked against
        its own float64 gradients; rows outside every sequence stay 0."""
        lq = [0, 1, 127, 128, 129, 300]
        lk = [5, 1, 130, 0, 129, 300]
        cq, ck = np.cumsum([0] + lq), np.cumsum([0] + lk)
        rng = np.random.default_rng(7)
        extra = 3  # rows past the last sequence
        h, hkv, d = 4, 2, 64

        def packed(rows, heads, hot=1.0):
            x = rng.uniform(-1, 1, (rows + extra, heads, d)).astype(np.float32)
            x[::3] *= hot
            bits = to_bf16_bits(x)
            return bits, output_values(bits, "bf16")
        for causal in (False, True):
            with self.subTest(causal=causal):
                (q, qe), (k, ke), (v, ve) = (packed(cq[-1], h, 3000.0),
                                             packed(ck[-1], hkv),
                                             packed(ck[-1], hkv))
                o, lse = cpu.varlen_attention(q, k, v, cq, ck, causal=causal,
                                              return_lse=True)
                do, doe = packed(cq[-1], h)
                dq, dk, dv = cpu.varlen_attention_backward(
                    q, k, v, o, lse, do, cq, ck, causal=causal)
                want = [np.zeros(t.shape) for t in (qe, ke, ve)]
                seq = lambda t, a, b: t[a:b].transpose(1, 0, 2)[None]
                for s in range(len(lq)):
                    q0, q1, k0, k1 = cq[s], cq[s + 1], ck[s], ck[s + 1]
                    if q1 == q0 or k1 == k0:
                        continue
                    g = reference_backward(
                        seq(qe, q0, q1), seq(ke, k0, k1), seq(ve, k0, k1),
                        seq(doe, q0, q1), causal, d ** -0.5,
                        o=seq(output_values(o, "bf16"), q0, q1))
                    for w, t, a, b in zip(want, g, (q0, k0, k0),
                                          (q1, k1, k1)):
                        w[a:b] = t[0].transpose(1, 0, 2)
                errors = []
                for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv),
                                          want):
                    values = output_values(got, "bf16")
                    self.assertTrue(np.all(values[-extra:] == 0.0), name)
                    errors.append(np.linalg.norm(values - ref)
                                  / np.linalg.norm(ref))
                print(f"[ numerics ] packed {lq} / keys {lk}, causal "
                      f"{causal}: rel err dq {errors[0]:.2e}, dk "
                      f"{errors[1]:.2e}, dv {errors[2]:.2e}")
                for name, err in zip(("dq", "dk", "dv"), errors):
                    self.assertLess(err, 1e-2, name)

    def test_refused_arguments(self):
        case = CASES[0]
        (q, k, v), _ = make_inputs(case, 0)
        o, lse = cpu.attention(q, k, v, return_lse=True)
        cases = [
            ("lse must be the forward's float32",
             lambda: cpu.attention_backward(q, k, v, o, lse[:, :1], o)),
            ("do is (2, 1, 150, 64) but q is (2, 2, 150, 64)",
             lambda: cpu.attention_backward(q, k, v, o, lse, o[:, :1])),
            ("o is float16 but q is uint16",
             lambda: cpu.attention_backward(q, k, v, o.view(np.float16), lse,
                                            o)),
        ]
        for want, call in cases:
            with self.subTest(want):
                with self.assertRaises(FlashcError) as raised:
                    call()
                self.assertIn(want, str(raised.exception))


if __name__ == "__main__":
    unittest.main()

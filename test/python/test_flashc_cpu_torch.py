#!/usr/bin/env python3
"""flashc.attention on CPU torch tensors: the CPU path (flashc --target=cpu,
compiled on first use into the cache) against a float64 reference, bf16
and f16, causal with seq_q != seq_k; under torch.compile and autograd the
custom op runs the same kernel, and loss.backward() the CPU path's
backward (flash.attention_backward's tile program) against float64. Then
flashc.varlen_attention on CPU tensors (each packed sequence through the
same CPU path) against float64 per sequence: lengths 0, 1, 127, 128, 129,
300, other key lengths (rows that see no key), causal and not, grouped K/V
heads, rows with logits near 1e3, out= poisoned with NaN, LSE; and the
cu_seqlens it refuses by name. Compiles with $FLASHC_COMPILER (ctest
passes this build's flashc), else build/bin/flashc. Exits 77 (ctest:
skipped) with a "skipped: ..." line without torch or the compiler.
"""
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("skipped: no PyTorch (flashc.attention on CPU tensors needs torch)")
    sys.exit(77)

COMPILER = os.environ.get("FLASHC_COMPILER") or os.path.join(
    ROOT, "build", "bin", "flashc")
if not os.access(COMPILER, os.X_OK):
    print(f"skipped: no flashc binary at {COMPILER}")
    sys.exit(77)

from fresh_cache import FreshCacheTest  # noqa: E402
import flashc  # noqa: E402


def reference(q, k, v, causal, scale, softcap=None, window=None):
    """float64 attention, causal aligned bottom-right; (O, LSE) with O = 0
    and LSE = -inf on rows that see no key. softcap: each scaled logit s
    becomes softcap * tanh(s / softcap); window: query i sees no key j with
    j + window < i."""
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    nq, nk = q.shape[2], k.shape[2]
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    if causal:
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    if window is not None:
        s = s.masked_fill(j + window < i, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v.double(), lse


class CpuTensorTest(FreshCacheTest):
    compiler = COMPILER

    def inputs(self, nq, nk, d, dtype, seed, hot=True):
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.empty(2, 2, n, d).uniform_(-1, 1, generator=g)
                   for n in (nq, nk, nk))
        if hot:
            q[:, :, ::3] *= 1000.0  # logits near 1e3 on every third row
        return [t.to(dtype) for t in (q, k, v)]

    def check(self, o, lse, ref_o, ref_lse, dtype):
        seen = torch.isfinite(ref_lse)
        self.assertTrue(torch.equal(o[~seen], torch.zeros_like(o[~seen])))
        self.assertTrue(torch.all(lse[~seen] == float("-inf")))
        self.assertTrue(torch.isfinite(o[seen]).all())
        err = ((o[seen].double() - ref_o[seen]).norm() / ref_o[seen].norm())
        lse_err = ((lse[seen].double() - ref_lse[seen]).norm()
                   / ref_lse[seen].norm())
        tolerance = 1e-2 if dtype == torch.bfloat16 else 5e-3
        print(f"[ numerics ] {dtype} rel err O {err:.2e}, LSE {lse_err:.2e}")
        self.assertLess(err.item(), tolerance)
        self.assertLess(lse_err.item(), tolerance)

    def test_matches_float64_reference(self):
        cases = [(torch.bfloat16, 130, 130, False),
                 (torch.bfloat16, 150, 70, True),
                 (torch.float16, 60, 140, True)]
        for seed, (dtype, nq, nk, causal) in enumerate(cases):
            with self.subTest(dtype=dtype, nq=nq, nk=nk, causal=causal):
                q, k, v = self.inputs(nq, nk, 64, dtype, seed)
                out = torch.full(q.shape, float("nan"), dtype=dtype)
                o, lse = flashc.attention(q, k, v, causal=causal,
                                          return_lse=True, out=out)
                self.assertIs(o, out)
                self.assertEqual(lse.dtype, torch.float32)
                self.assertEqual(tuple(lse.shape), tuple(q.shape[:3]))
                ref_o, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(64))
                self.check(o, lse, ref_o, ref_lse, dtype)

    def test_torch_compile_runs_the_kernel(self):
        q, k, v = self.inputs(50, 70, 64, torch.bfloat16, 10)

        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v):
            return flashc.attention(q, k, v, causal=True, return_lse=True)

        o, lse = f(q, k, v)
        ref_o, ref_lse = reference(q, k, v, True, 0.125)
        self.check(o, lse, ref_o, ref_lse, torch.bfloat16)

    def test_softcap_and_window(self):
        """softcap and window (the dialect's score and mask mods) through
        flashc.attention on CPU tensors, eager and under torch.compile,
        against float64 with the same mods: logits near 1e3 capped, the
        window's hidden key tiles skipped."""
        q, k, v = self.inputs(150, 150, 64, torch.bfloat16, 11)
        ref_o, ref_lse = reference(q, k, v, True, 0.125, softcap=20.0,
                                   window=40)
        o, lse = flashc.attention(q, k, v, causal=True, softcap=20.0,
                                  window=40, return_lse=True)
        self.check(o, lse, ref_o, ref_lse, torch.bfloat16)

        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v):
            return flashc.attention(q, k, v, causal=True, softcap=20.0,
                                    window=40, return_lse=True)

        o, lse = f(q, k, v)
        self.check(o, lse, ref_o, ref_lse, torch.bfloat16)
        # The plain causal kernel is another variant: it must differ here.
        plain = flashc.attention(q, k, v, causal=True)
        self.assertGreater((plain.double() - ref_o).norm() / ref_o.norm(),
                           0.05)

    def test_autograd_through_softcap_and_window(self):
        """Gradients of flashc.attention with softcap and window on CPU
        tensors (the backward derived from the forward's regions) against
        float64 autograd of the same mods."""
        q, k, v = self.inputs(90, 130, 64, torch.bfloat16, 5)
        for t in (q, k, v):
            t.requires_grad_()
        o = flashc.attention(q, k, v, causal=True, softcap=20.0, window=50)
        g = torch.randn(o.shape).to(o.dtype)
        o.backward(g)
        q64, k64, v64 = (t.detach().double().requires_grad_()
                         for t in (q, k, v))
        ro, _ = reference(q64, k64, v64, True, 0.125, softcap=20.0,
                          window=50)
        want = torch.autograd.grad(ro, (q64, k64, v64), g.double())
        for n, t, w in zip("qkv", (q, k, v), want):
            err = ((t.grad.double() - w).norm() / w.norm()).item()
            print(f"[ gradients ] softcap 20 window 50: d{n} rel err "
                  f"{err:.2e}")
            self.assertLess(err, 1e-2, n)

    def test_autograd_runs_the_kernel_and_its_backward(self):
        """Gradients against float64 autograd. Rows with logits near 1e3
        have a one-hot P, where the true dS = P (dP - delta) is ~0 and
        delta = rowsum(dO * O) takes O as stored (bf16): its rounding,
        times Q's 1e3, sets dK's error whatever the kernel does. There the
        bar is float64 run on the same stored O (the method's own error),
        not float64 autograd alone."""
        for hot in (False, True):
            q, k, v = self.inputs(40, 70, 64, torch.bfloat16, 9, hot=hot)
            for t in (q, k, v):
                t.requires_grad_()
            o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)
            self.assertTrue(o.requires_grad)
            ref_o, ref_lse = reference(q.detach(), k.detach(), v.detach(),
                                       True, 0.125)
            self.check(o.detach(), lse.detach(), ref_o, ref_lse,
                       torch.bfloat16)
            g = torch.randn(o.shape).to(o.dtype)
            o.backward(g)
            q64, k64, v64 = (t.detach().double().requires_grad_()
                             for t in (q, k, v))
            ro, _ = reference(q64, k64, v64, True, 0.125)
            want = torch.autograd.grad(ro, (q64, k64, v64), g.double())
            floor = stored_o_gradients(q, k, v, o.detach(), g, True, 0.125)
            for n, t, w, f in zip("qkv", (q, k, v), want, floor):
                err = ((t.grad.double() - w).norm() / w.norm()).item()
                method = ((f - w).norm() / w.norm()).item()
                print(f"[ gradients ] hot={hot} d{n} rel err {err:.2e} "
                      f"(float64 on the stored O: {method:.2e})")
                self.assertLess(err, 1e-2 + 1.25 * method, n)
                if not hot:
                    self.assertLess(err, 1e-2, n)


def stored_o_gradients(q, k, v, o, do, causal, scale):
    """(dq, dk, dv) in float64 by the recomputation the backward kernels
    run, with delta from O as the forward stored it."""
    q, k, v, o, do = (t.detach().double() for t in (q, k, v, o, do))
    s = (q @ k.transpose(-1, -2)) * scale
    nq, nk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(nq)[:, None]
        j = torch.arange(nk)[None, :]
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    dp = do @ v.transpose(-1, -2)
    ds = p * (dp - (do * o).sum(-1, keepdim=True))
    return (scale * ds @ k, scale * ds.transpose(-1, -2) @ q,
            p.transpose(-1, -2) @ do)


def cu_seqlens(lengths):
    """[0, l0, l0 + l1, ...] as an int32 vector."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32)


class VarlenTest(unittest.TestCase):
    """flashc.varlen_attention on CPU tensors: each sequence runs the dense
    program's CPU path on its rows."""

    LENGTHS = [0, 1, 127, 128, 129, 300]
    # Key lengths other than the queries': a sequence with keys but no
    # query rows, one with a query row but no key, Lk < Lq (causal: rows
    # that see no key) and Lk > Lq.
    OTHER_KEYS = [5, 0, 127, 200, 64, 300]

    setUpClass = CpuTensorTest.setUpClass
    tearDownClass = CpuTensorTest.tearDownClass
    check = CpuTensorTest.check

    def inputs(self, lq, lk, heads, kv_heads, seed, dtype=torch.bfloat16):
        g = torch.Generator().manual_seed(seed)
        q = torch.empty(sum(lq), heads, 64).uniform_(-1, 1, generator=g)
        k, v = (torch.empty(sum(lk), kv_heads, 64).uniform_(-1, 1, generator=g)
                for _ in range(2))
        # q . k about 2.7 (uniform(-1, 1), D = 64), scaled by 1/8: rows
        # times 3000 have logits near 1e3.
        q[5::37] *= 3000.0
        return [t.to(dtype) for t in (q, k, v)]

    def check_sequences(self, q, k, v, lq, lk, causal, o, lse):
        """o, lse against float64 per sequence (K/V heads repeated for the
        reference)."""
        cq, ck = cu_seqlens(lq).tolist(), cu_seqlens(lk).tolist()
        group = q.shape[1] // k.shape[1]
        for s in range(len(lq)):
            q0, q1, k0, k1 = cq[s], cq[s + 1], ck[s], ck[s + 1]
            if q1 == q0:
                continue
            as4 = lambda t: t.transpose(0, 1).unsqueeze(0)  # noqa: E731
            ref_o, ref_lse = reference(
                as4(q[q0:q1]), as4(k[k0:k1]).repeat_interleave(group, 1),
                as4(v[k0:k1]).repeat_interleave(group, 1), causal,
                1 / math.sqrt(64))
            so, slse = as4(o[q0:q1]), lse[:, q0:q1].unsqueeze(0)
            seen = torch.isfinite(ref_lse)
            with self.subTest(sequence=s, lq=q1 - q0, lk=k1 - k0):
                if seen.any():
                    self.check(so, slse, ref_o, ref_lse, q.dtype)
                else:  # every row sees no key
                    self.assertTrue(torch.equal(so, torch.zeros_like(so)))
                    self.assertTrue(torch.all(slse == float("-inf")))

    def test_matches_float64_per_sequence(self):
        cases = [(self.LENGTHS, False, 2, 2), (self.LENGTHS, True, 2, 2),
                 (self.OTHER_KEYS, True, 2, 2), (self.OTHER_KEYS, False, 2, 2),
                 (self.LENGTHS, True, 4, 2), (self.OTHER_KEYS, False, 4, 2)]
        for seed, (lk, causal, heads, kv_heads) in enumerate(cases):
            lq = self.LENGTHS
            with self.subTest(keys=lk, causal=causal, heads=heads,
                              kv_heads=kv_heads):
                q, k, v = self.inputs(lq, lk, heads, kv_heads, seed)
                out = torch.full(q.shape, float("nan"), dtype=q.dtype)
                o, lse = flashc.varlen_attention(
                    q, k, v, cu_seqlens(lq), cu_seqlens(lk), max(lq),
                    max(lk), causal=causal, return_lse=True, out=out)
                self.assertIs(o, out)
                self.assertEqual(lse.dtype, torch.float32)
                self.assertEqual(tuple(lse.shape), (heads, sum(lq)))
                # Every row is in a sequence: none is left poisoned.
                self.assertFalse(torch.isnan(o).any())
                self.assertFalse(torch.isnan(lse).any())
                self.check_sequences(q, k, v, lq, lk, causal, o, lse)

    def test_new_output_and_f16(self):
        lq, lk = [3, 70], [40, 50]
        q, k, v = self.inputs(lq, lk, 2, 1, 20, torch.float16)
        o = flashc.varlen_attention(q, k, v, cu_seqlens(lq), cu_seqlens(lk),
                                    70, causal=True, scale=0.125)
        self.assertIsInstance(o, torch.Tensor)
        self.assertEqual((o.shape, o.dtype), (q.shape, q.dtype))
        self.assertTrue(o.is_contiguous())
        _, lse = flashc.varlen_attention(q, k, v, cu_seqlens(lq),
                                         cu_seqlens(lk), 70, causal=True,
                                         return_lse=True)
        self.check_sequences(q, k, v, lq, lk, True, o, lse)

    def test_all_empty(self):
        q, k, v = self.inputs([0, 0], [0, 0], 2, 2, 0)
        o, lse = flashc.varlen_attention(q, k, v, cu_seqlens([0, 0]),
                                         cu_seqlens([0, 0]), 0,
                                         return_lse=True)
        self.assertEqual(tuple(o.shape), (0, 2, 64))
        self.assertEqual(tuple(lse.shape), (2, 0))

    def test_autograd_backward_raises(self):
        lq = [10, 20]
        q, k, v = self.inputs(lq, lq, 2, 2, 3)
        q.requires_grad_()
        o, lse = flashc.varlen_attention(q, k, v, cu_seqlens(lq),
                                         cu_seqlens(lq), 20, return_lse=True)
        self.assertTrue(o.requires_grad and lse.requires_grad)
        self.check_sequences(q.detach(), k, v, lq, lq, False, o.detach(),
                             lse.detach())
        with self.assertRaisesRegex(flashc.FlashcError, "no backward pass"):
            o.float().sum().backward()

    def test_refused_by_name(self):
        lq = [10, 20]
        q, k, v = self.inputs(lq, lq, 2, 2, 4)
        cu = cu_seqlens(lq)
        cases = [
            ("cu_seqlens_q has dtype torch.int64",
             dict(cu_seqlens_q=cu.long())),
            ("cu_seqlens_k has dtype torch.float32",
             dict(cu_seqlens_k=cu.float())),
            ("cu_seqlens_q has 2 dimensions", dict(cu_seqlens_q=cu[None])),
            ("cu_seqlens_k is a list", dict(cu_seqlens_k=cu.tolist())),
            ("cu_seqlens_q is empty", dict(cu_seqlens_q=cu[:0])),
            ("cu_seqlens_q has 3 entries and cu_seqlens_k 4",
             dict(cu_seqlens_k=cu_seqlens([10, 10, 10]))),
            ("cu_seqlens_k decreases at entry 2",
             dict(cu_seqlens_k=torch.tensor([0, 20, 10], dtype=torch.int32))),
            ("cu_seqlens_q\\[2\\] = 31 is past q's 30 rows",
             dict(cu_seqlens_q=cu_seqlens([10, 21]))),
            ("cu_seqlens_k\\[0\\] = -1 is negative",
             dict(cu_seqlens_k=torch.tensor([-1, 10, 30],
                                            dtype=torch.int32))),
            ("max_seqlen_q = 19 is outside \\[20, 30\\]",
             dict(max_seqlen_q=19)),
            ("max_seqlen_q is a float", dict(max_seqlen_q=20.0)),
            ("q has 4 dimensions", dict(q=q[None])),
            ("k is \\(30, 1, 64\\) but v", dict(k=k[:, :1])),
            ("multiple of the K/V heads",
             dict(k=k[:, :1].expand(30, 3, 64), v=v[:, :1].expand(30, 3, 64))),
        ]
        for msg, change in cases:
            args = dict(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu,
                        max_seqlen_q=20)
            args.update(change)
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(flashc.FlashcError, msg) as cm:
                    flashc.varlen_attention(**args)
                self.assertEqual(cm.exception.status, 4)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""flashc.attention on CPU torch tensors: the CPU path (flashc --target=cpu,
compiled on first use into the cache) against a float64 reference, bf16
and f16, causal with seq_q != seq_k; under torch.compile and autograd the
custom op runs the same kernel (and its backward raises). Compiles with $FLASHC_COMPILER (ctest
passes this build's flashc), else build/bin/flashc. Exits 77 (ctest:
skipped) with a "skipped: ..." line without torch or the compiler.
"""
import math
import os
import shutil
import sys
import tempfile
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

import flashc  # noqa: E402


def reference(q, k, v, causal, scale):
    """float64 attention, causal aligned bottom-right; (O, LSE) with O = 0
    and LSE = -inf on rows that see no key."""
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    nq, nk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(nq)[:, None]
        j = torch.arange(nk)[None, :]
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v.double(), lse


class CpuTensorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = {k: os.environ.get(k) for k in
                     ("FLASHC_CACHE_DIR", "FLASHC_COMPILER")}
        cls.tmp = tempfile.mkdtemp(prefix="flashc-cpu-torch-")
        os.environ.update(FLASHC_CACHE_DIR=os.path.join(cls.tmp, "cache"),
                          FLASHC_COMPILER=COMPILER)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def inputs(self, nq, nk, d, dtype, seed):
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.empty(2, 2, n, d).uniform_(-1, 1, generator=g)
                   for n in (nq, nk, nk))
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

    def test_autograd_runs_the_kernel_and_backward_raises(self):
        q, k, v = self.inputs(40, 40, 64, torch.bfloat16, 9)
        q.requires_grad_()
        o, lse = flashc.attention(q, k, v, return_lse=True)
        self.assertTrue(o.requires_grad)
        ref_o, ref_lse = reference(q.detach(), k, v, False, 0.125)
        self.check(o.detach(), lse.detach(), ref_o, ref_lse, torch.bfloat16)
        with self.assertRaisesRegex(flashc.FlashcError, "no backward"):
            o.float().sum().backward()


if __name__ == "__main__":
    unittest.main()

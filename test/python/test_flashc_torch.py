#!/usr/bin/env python3
"""CPU tests of flashc.attention's torch side: the custom ops
(torch.ops.flashc.attention / attention_out / attention_backward), their
fake implementations, torch.compile tracing through them without a graph
break, and autograd through them. No GPU: the ops get CPU stand-in kernels
(float64 attention and its gradients, bottom-right causal) registered here,
so that traced graphs can run. Exits 77 (ctest: skipped) where PyTorch is not installed.
"""
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("skipped: no PyTorch (flashc.attention's custom op needs torch)")
    sys.exit(77)

import flashc  # noqa: E402
from flashc import ops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


def reference(q, k, v, causal, scale):
    """float64 attention, causal aligned bottom-right; (o, lse). K and V may
    have fewer heads (grouped-query attention)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    d = q.shape[-1]
    scale = 1 / math.sqrt(d) if scale is None else scale
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    if causal:
        nq, nk = q.shape[2], k.shape[2]
        i = torch.arange(nq)[:, None]
        j = torch.arange(nk)[None, :]
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return (p @ v.double()).to(q.dtype), lse.float()


def reference_grads(grad_o, q, k, v, causal, scale):
    """float64 gradients of reference(), in closed form: (dq, dk, dv) in the
    inputs' dtypes. Not through torch.autograd: a custom op's kernel runs
    below the autograd dispatch key, where no graph is recorded."""
    group = q.shape[1] // k.shape[1]
    q64, k64, v64, do64 = (t.detach().double() for t in (q, k, v, grad_o))
    kk, vv = k64.repeat_interleave(group, 1), v64.repeat_interleave(group, 1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q64 @ kk.transpose(-1, -2)) * scale
    if causal:
        nq, nk = q.shape[2], k.shape[2]
        i = torch.arange(nq)[:, None]
        j = torch.arange(nk)[None, :]
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    dp = do64 @ vv.transpose(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = scale * ds @ kk
    dk = scale * ds.transpose(-1, -2) @ q64
    dv = p.transpose(-1, -2) @ do64

    def per_kv_head(x):
        b, h, n, d = x.shape
        return x.view(b, h // group, group, n, d).sum(2)

    grads = (dq, per_kv_head(dk), per_kv_head(dv))
    return tuple(g.to(t.dtype) for g, t in zip(grads, (q, k, v)))


CALLS = {"attention": 0, "attention_out": 0, "attention_backward": 0}


def cpu_attention(q, k, v, causal, scale, deterministic=False, softcap=None,
                  window=None):
    CALLS["attention"] += 1
    assert softcap is None and window is None, "the stand-in has no mods"
    return reference(q, k, v, causal, scale)


def cpu_attention_backward(grad_o, q, k, v, o, lse, causal, scale,
                           deterministic, softcap=None, window=None):
    CALLS["attention_backward"] += 1
    assert softcap is None and window is None, "the stand-in has no mods"
    return reference_grads(grad_o, q, k, v, causal, scale)


def cpu_attention_out(q, k, v, out, causal, scale, softcap=None, window=None):
    CALLS["attention_out"] += 1
    o, lse = reference(q, k, v, causal, scale)
    out.copy_(o)
    return lse


torch.library.register_kernel("flashc::attention", "cpu", cpu_attention)
torch.library.register_kernel("flashc::attention_out", "cpu",
                              cpu_attention_out)
torch.library.register_kernel("flashc::attention_backward", "cpu",
                              cpu_attention_backward)


def inputs(nq=20, nk=33, d=64, dtype=torch.bfloat16, grad=False):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, nq, d, generator=g).to(dtype)
    k = torch.randn(2, 3, nk, d, generator=g).to(dtype)
    v = torch.randn(2, 3, nk, d, generator=g).to(dtype)
    if grad:
        for t in (q, k, v):
            t.requires_grad_()
    return q, k, v


class StandInTest(unittest.TestCase):
    def test_reference_grads_match_autograd(self):
        """The stand-in backward's closed form against float64 autograd of
        reference(): causal with seq_q < seq_k (rows that see no key) and
        grouped K/V heads."""
        g = torch.Generator().manual_seed(1)
        q = torch.randn(2, 4, 5, 16, generator=g, dtype=torch.float64)
        k, v = (torch.randn(2, 2, 3, 16, generator=g, dtype=torch.float64)
                for _ in range(2))
        do = torch.randn(2, 4, 5, 16, generator=g, dtype=torch.float64)
        for causal in (False, True):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            o, _ = reference(*leaves, causal, 0.3)
            want = torch.autograd.grad(o, leaves, do)
            got = reference_grads(do, q, k, v, causal, 0.3)
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b)


class FakeTest(unittest.TestCase):
    def test_fake_shapes(self):
        for dtype in (torch.bfloat16, torch.float16):
            for d in (64, 128, 256):
                with FakeTensorMode():
                    q = torch.empty(2, 3, 5, d, dtype=dtype)
                    k = torch.empty(2, 3, 7, d, dtype=dtype)
                    o, lse = torch.ops.flashc.attention(q, k, k, True, None)
                    o2, _ = torch.ops.flashc.attention(q, k, k, True, None,
                                                       False, 30.0, 16)
                    lse2 = torch.ops.flashc.attention_out(
                        q, k, k, torch.empty_like(q), False, 0.5)
                self.assertEqual(tuple(o.shape), (2, 3, 5, d))
                self.assertEqual(o.dtype, dtype)
                self.assertTrue(o.is_contiguous())
                self.assertEqual(tuple(lse.shape), (2, 3, 5))
                self.assertEqual(tuple(o2.shape), (2, 3, 5, d))
                self.assertEqual(lse.dtype, torch.float32)
                self.assertEqual(tuple(lse2.shape), (2, 3, 5))

    def test_meta_tensors(self):
        q = torch.empty(1, 4, 9, 128, dtype=torch.float16, device="meta")
        o, lse = torch.ops.flashc.attention(q, q, q, False, None)
        self.assertEqual(o.device.type, "meta")
        self.assertEqual(tuple(o.shape), (1, 4, 9, 128))
        self.assertEqual(tuple(lse.shape), (1, 4, 9))

    def test_fake_refuses_what_no_kernel_takes(self):
        bad = [((2, 3, 5, 64), torch.float32, (2, 3, 5, 64), "dtype"),
               ((2, 3, 5, 96), torch.bfloat16, (2, 3, 5, 96), "head dim 96"),
               ((2, 3, 5, 64), torch.bfloat16, (3, 3, 5, 64), "must agree"),
               ((2, 3, 5, 64), torch.bfloat16, (2, 4, 5, 64),
                "multiple of the K/V heads"),
               ((3, 5, 64), torch.bfloat16, (3, 5, 64), "dimensions")]
        for qs, dtype, ks, msg in bad:
            with FakeTensorMode():
                q = torch.empty(qs, dtype=dtype)
                k = torch.empty(ks, dtype=dtype)
                with self.assertRaisesRegex(flashc.FlashcError, msg):
                    torch.ops.flashc.attention(q, k, k, False, None)

    def test_not_in_cuda_graphs(self):
        if not hasattr(torch.Tag, "cudagraph_unsafe"):
            self.skipTest("this torch has no cudagraph_unsafe tag")
        for op in (torch.ops.flashc.attention.default,
                   torch.ops.flashc.attention_out.default):
            self.assertIn(torch.Tag.cudagraph_unsafe, op.tags)

    def test_opcheck(self):
        q, k, v = inputs()
        for causal, scale in ((False, None), (True, 0.3)):
            torch.library.opcheck(torch.ops.flashc.attention.default,
                                  (q, k, v, causal, scale))
            torch.library.opcheck(torch.ops.flashc.attention_out.default,
                                  (q, k, v, torch.empty_like(q), causal,
                                   scale))


class CompileTest(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()

    def test_explain_no_graph_break(self):
        def f(q, k, v):
            o, lse = flashc.attention(q, k, v, causal=True, scale=0.2,
                                      return_lse=True)
            return o.float().sum(-1) + lse

        ex = torch._dynamo.explain(f)(*inputs())
        self.assertEqual(ex.graph_break_count, 0, ex.break_reasons)
        self.assertEqual(ex.graph_count, 1)
        code = ex.graphs[0].code
        self.assertIn("flashc.attention", code)

    def test_out_no_graph_break(self):
        def f(q, k, v, out):
            return flashc.attention(q, k, v, out=out) * 2

        q, k, v = inputs()
        ex = torch._dynamo.explain(f)(q, k, v, torch.empty_like(q))
        self.assertEqual(ex.graph_break_count, 0, ex.break_reasons)
        self.assertIn("flashc.attention_out", ex.graphs[0].code)

    def test_compiled_matches_reference(self):
        @torch.compile(fullgraph=True, backend="aot_eager", dynamic=False)
        def f(q, k, v, out):
            o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)
            o2 = flashc.attention(q, k, v, scale=0.1, out=out)
            return o, lse, o2

        q, k, v = inputs(nq=33, nk=20)
        out = torch.empty_like(q)
        before = dict(CALLS)
        o, lse, o2 = f(q, k, v, out)
        self.assertEqual(CALLS["attention"], before["attention"] + 1)
        self.assertEqual(CALLS["attention_out"], before["attention_out"] + 1)
        ro, rl = reference(q, k, v, True, None)
        self.assertTrue(torch.equal(o, ro))
        self.assertTrue(torch.equal(lse, rl))
        # Rows that see no key (seq_q > seq_k, causal): LSE -inf, O = 0.
        self.assertTrue(torch.isinf(lse[:, :, :13]).all())
        self.assertTrue(torch.equal(out, reference(q, k, v, False, 0.1)[0]))
        self.assertTrue(torch.equal(o2, out))

    def test_compiled_training_graph_runs_the_backward_op(self):
        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v):
            return flashc.attention(q, k, v, causal=True).float().square().sum()

        q, k, v = inputs(grad=True)
        before = CALLS["attention_backward"]
        loss = f(q, k, v)  # compiles forward and backward graphs
        loss.backward()
        self.assertEqual(CALLS["attention_backward"], before + 1)
        o = reference(q, k, v, True, None)[0]
        want = reference_grads(2 * o.float(), q, k, v, True, None)
        for t, w in zip((q, k, v), want):
            self.assertTrue(torch.allclose(t.grad.float(), w.float(),
                                           rtol=2e-2, atol=2e-2))

    def test_compiled_grad_with_out(self):
        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v, out):
            return flashc.attention(q, k, v, out=out).float().sum()

        q, k, v = inputs(grad=True)
        loss = f(q, k, v, torch.empty(q.shape, dtype=q.dtype))
        loss.backward()
        self.assertIsNotNone(q.grad)


class EagerTest(unittest.TestCase):
    def test_grad_goes_through_the_backward_op(self):
        for names in ("q", "k", "v", "qkv"):
            q, k, v = inputs()
            for n, t in zip("qkv", (q, k, v)):
                t.requires_grad_(n in names)
            o = flashc.attention(q, k, v, deterministic=True)
            self.assertTrue(o.requires_grad)
            self.assertTrue(torch.equal(o.detach(),
                                        reference(q, k, v, False, None)[0]))
            g = torch.randn(o.shape).to(o.dtype)
            o.backward(g)
            want = reference_grads(g, q, k, v, False, None)
            for n, t, w in zip("qkv", (q, k, v), want):
                if n in names:
                    self.assertTrue(torch.equal(t.grad, w), n)
                else:
                    self.assertIsNone(t.grad)

    def test_backward_through_lse_raises(self):
        q, k, v = inputs(grad=True)
        o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)
        with self.assertRaisesRegex(flashc.FlashcError, "gradient of O only"):
            lse.sum().backward(retain_graph=True)
        with self.assertRaisesRegex(flashc.FlashcError, "gradient of O only"):
            (o.float().sum() + lse.sum()).backward()
        # An LSE the loss does not use is no gradient.
        o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)
        o.float().sum().backward()
        self.assertIsNotNone(q.grad)

    def test_grad_with_out(self):
        q, k, v = inputs(grad=True)
        out = torch.empty(q.shape, dtype=q.dtype)
        o = flashc.attention(q, k, v, out=out)
        self.assertIs(o, out)
        self.assertTrue(out.requires_grad)
        out.float().sum().backward()
        want = reference_grads(torch.ones(q.shape, dtype=q.dtype), q, k, v,
                               False, None)
        self.assertTrue(torch.equal(q.grad, want[0]))

    def test_no_grad_launches_directly(self):
        # Without grad, eager calls skip the dispatcher: ops._launch runs.
        seen = []
        saved = ops._launch

        def launch(q, k, v, causal, scale, out, softcap=None, window=None,
                   *captures):
            assert all(c is None for c in captures), "the stand-in has none"
            seen.append((causal, scale, out, softcap, window))
            o, lse = reference(q, k, v, causal, scale)
            if out is not None:
                o = out.copy_(o)
            return o, lse

        ops._launch = launch
        self.addCleanup(setattr, ops, "_launch", saved)
        q, k, v = inputs(grad=True)
        before = dict(CALLS)
        with torch.no_grad():
            o = flashc.attention(q, k, v, causal=True, scale=0.5)
            flashc.attention(q, k, v, softcap=30.0, window=16)
        self.assertIsNone(o.grad_fn)
        self.assertEqual(seen, [(True, 0.5, None, None, None),
                                (False, None, None, 30.0, 16)])
        self.assertEqual(CALLS, before)

    def test_other_devices_refused(self):
        # CPU tensors run the CPU path (test_flashc_cpu_torch.py); a device
        # that is neither is refused by name.
        q, k, v = (t.to("meta") for t in inputs())
        with self.assertRaisesRegex(flashc.FlashcError,
                                    "on meta; flashc kernels take CUDA or "
                                    "CPU tensors"):
            flashc.attention(q, k, v)


class SdpaTest(unittest.TestCase):
    """flashc.scaled_dot_product_attention: SDPA's signature, compiled (the
    CPU stand-in kernel runs) against SDPA itself."""

    def test_matches_sdpa(self):
        import torch.nn.functional as F

        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v, causal):
            return flashc.scaled_dot_product_attention(q, k, v,
                                                       is_causal=causal)

        for nq, nk, causal in ((20, 33, False), (25, 25, True)):
            q, k, v = inputs(nq=nq, nk=nk, dtype=torch.float16)
            o = f(q, k, v, causal)
            ref = F.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal)
            self.assertLess((o.float() - ref).abs().max().item(), 2e-3)

    def test_refuses_what_it_cannot_do(self):
        q, k, v = inputs(nq=20, nk=33)
        cases = [({"attn_mask": torch.ones(20, 33, dtype=torch.bool)},
                  "attn_mask"),
                 ({"dropout_p": 0.1}, "dropout"),
                 ({"is_causal": True}, "top-left")]
        for kwargs, msg in cases:
            with self.assertRaisesRegex(flashc.FlashcError, msg):
                flashc.scaled_dot_product_attention(q, k, v, **kwargs)
        with self.assertRaisesRegex(flashc.FlashcError, "enable_gqa"):
            flashc.scaled_dot_product_attention(q, k[:, :1], v[:, :1])
        with self.assertRaisesRegex(flashc.FlashcError, "multiple"):
            flashc.scaled_dot_product_attention(
                q, k[:, :2], v[:, :2], enable_gqa=True)

    def test_grouped_query_matches_sdpa(self):
        import torch.nn.functional as F
        q, k, v = inputs(nq=20, nk=33, dtype=torch.float16)
        o = flashc.scaled_dot_product_attention(q, k[:, :1], v[:, :1],
                                                enable_gqa=True)
        ref = F.scaled_dot_product_attention(
            q.float(), k[:, :1].float(), v[:, :1].float(), enable_gqa=True)
        self.assertLess((o.float() - ref).abs().max().item(), 2e-3)


class KernelForTest(unittest.TestCase):
    """ops.kernel_for, from tensors to the loaded kernel, with the stub
    compiler of test_flashc_cache.py, a stand-in device (an H200) and a
    stand-in Kernel (the runtime needs a GPU)."""

    def setUp(self):
        from test_flashc_cache import StubEnv

        class Env(StubEnv):
            def runTest(self):
                pass

        self.env = Env()
        self.env.setUp()
        self.addCleanup(self.env.doCleanups)
        os.environ["FLASHC_TUNING_DB"] = os.path.join(
            ROOT, "bench", "tuning", "h200-fa3.json")
        loaded = self.loaded = []

        class FakeKernel:
            def __init__(self, path, device):
                loaded.append((path, device))
                self.path = path

        saved = (ops._device_info, ops.Kernel, torch.cuda.current_device)
        ops._device_info = lambda index: ("sm_90a", "NVIDIA H200")
        ops.Kernel = FakeKernel
        torch.cuda.current_device = lambda: 0
        ops._kernels.clear()
        ops._loaded.clear()

        def restore():
            (ops._device_info, ops.Kernel, torch.cuda.current_device) = saved
            ops._kernels.clear()
            ops._loaded.clear()
        self.addCleanup(restore)

    def source_of(self, kern):
        with open(os.path.join(os.path.dirname(kern.path), "source.mlir")) as f:
            return f.read()

    def test_variant_config_and_memo(self):
        from flashc.variants import config_text
        q = torch.empty(8, 16, 2048, 128, dtype=torch.bfloat16)
        kern = ops.kernel_for(q, q, True, None)
        src = self.source_of(kern)
        self.assertIn("func.func @attention_causal(", src)
        # The H200 database's entry for (N 2048, B*H 128): persistent
        # bm192 ... rather than the shipped 128 x 128.
        import json
        with open(os.environ["FLASHC_TUNING_DB"]) as f:
            entry = [e for e in json.load(f)["entries"]
                     if e["kernel"] == "attention_causal"
                     and e["shape"] == [8, 16, 2048, 128]][0]
        self.assertIn(config_text(entry["config"]), src)
        self.assertIs(ops.kernel_for(q, q, True, None), kern)
        self.assertEqual(len(self.loaded), 1)
        self.assertEqual(self.env.compiles(), 1)
        # 1025..2048 keys share the bucket; 2049 is the next one (N 4096,
        # B*H 128: no entry, so the shipped config).
        for n, same in ((2047, True), (1025, True), (2049, False)):
            qn = torch.empty(8, 16, n, 128, dtype=torch.bfloat16)
            self.assertEqual(ops.kernel_for(qn, qn, True, None) is kern, same)
        # A shape outside every bucket: the shipped config.
        small = torch.empty(1, 2, 100, 128, dtype=torch.bfloat16)
        kern2 = ops.kernel_for(small, small, True, None)
        self.assertIn("block_m = 128, block_n = 128, stages = 2, "
                      "warpgroups = 2>", self.source_of(kern2))
        # f16, D 64, a scale, seq_q != seq_k.
        q3 = torch.empty(2, 3, 50, 64, dtype=torch.float16)
        k3 = torch.empty(2, 3, 70, 64, dtype=torch.float16)
        kern3 = ops.kernel_for(q3, k3, False, 0.25)
        self.assertIn("{scale = 0.25 : f32, config", self.source_of(kern3))
        self.assertIn("@attention_f16_d64(", self.source_of(kern3))
        self.assertEqual(self.env.compiles(), 3)

    def test_library_without_compiler(self):
        from flashc import library
        lib = os.path.join(self.env.tmp, "lib")
        library.build_library(lib, [library.parse_variant("bf16-d256")],
                              dbs=[])
        os.environ["FLASHC_COMPILER"] = "none"
        os.environ["FLASHC_LIBRARY"] = lib
        q = torch.empty(1, 2, 10, 256, dtype=torch.bfloat16)
        self.assertTrue(ops.kernel_for(q, q, False, None).path.startswith(lib))
        with self.assertRaisesRegex(flashc.FlashcError,
                                    "(?s)no variant bf16-d256-causal.*"
                                    "build-library .* --variants "
                                    "bf16-d256-causal"):
            ops.kernel_for(q, q, True, None)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""CPU tests of python/flashc (no GPU, no libflashrt).

flashc has no backward pass: where q, k or v requires grad, the outputs must
carry a backward that raises FlashcError, not silently drop attention's
gradients. The runtime call (Kernel._launch) is replaced by a stand-in that
writes CPU attention into the output buffers, so the guard is tested without
a device. LaunchTest runs _launch itself against a stand-in runtime to check
the buffers it allocates, and VarlenLaunchTest Kernel.varlen (packed
sequences) the views and descriptors it passes. Exits 77 (ctest: skipped)
with a "skipped: ..." line where PyTorch is not installed.
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
    print("skipped: no PyTorch (python/flashc's autograd guard needs torch)")
    sys.exit(77)

import flashc  # noqa: E402


def fake_kernel(has_lse):
    """A flashc.Kernel whose runtime call is a CPU stand-in; .launches counts
    the calls."""
    kern = object.__new__(flashc.Kernel)
    kern.path, kern.name, kern.arch = "fake.cubin", "fake", "sm_90a"
    kern.head_dim, kern.causal, kern.has_lse = 16, False, has_lse
    kern.scale = 1 / math.sqrt(16)
    kern._handles = {}
    kern.launches = 0

    def launch(q, k, v, out, lse, captures=()):
        assert not captures, "the stand-in kernel takes no captures"
        kern.launches += 1
        # Inside the autograd.Function's forward grad mode is off.
        assert not (torch.is_grad_enabled() and any(
            t.requires_grad for t in (q, k, v))), "launch recorded by autograd"
        s = (q.float() @ k.float().transpose(-1, -2)) * kern.scale
        o = torch.softmax(s, -1) @ v.float()
        if out is None:
            out = torch.empty(q.shape, dtype=q.dtype)
        out.copy_(o)
        if has_lse:
            if lse is None:
                lse = torch.empty(q.shape[:3], dtype=torch.float32)
            lse.copy_(torch.logsumexp(s, -1))
            return out, lse
        return out

    kern._launch = launch
    return kern


def inputs(requires_grad=()):
    torch.manual_seed(0)
    t = {n: torch.randn(2, 3, 20, 16, dtype=torch.bfloat16) for n in "qkv"}
    for n in requires_grad:
        t[n].requires_grad_()
    return t["q"], t["k"], t["v"]


class NoGradTest(unittest.TestCase):
    def test_plain_tensors_without_grad(self):
        for has_lse in (False, True):
            kern = fake_kernel(has_lse)
            res = kern(*inputs())
            for t in res if has_lse else (res,):
                self.assertFalse(t.requires_grad)
                self.assertIsNone(t.grad_fn)
            self.assertEqual(kern.launches, 1)

    def test_plain_tensors_under_no_grad(self):
        kern = fake_kernel(True)
        with torch.no_grad():
            o, lse = kern(*inputs("qkv"))
        self.assertIsNone(o.grad_fn)
        self.assertIsNone(lse.grad_fn)
        with torch.inference_mode():
            o, lse = kern(*inputs("qkv"))
        self.assertIsNone(o.grad_fn)

    def test_no_node_without_grad(self):
        # The no-grad path does not go through the autograd.Function.
        kern = fake_kernel(False)
        flashc._forward_only_class = None
        kern(*inputs())
        self.assertIsNone(flashc._forward_only_class)


class GradTest(unittest.TestCase):
    def test_output_requires_grad_iff_an_input_does(self):
        for names in ("q", "k", "v", "qkv"):
            kern = fake_kernel(False)
            o = kern(*inputs(names))
            self.assertTrue(o.requires_grad, names)
            self.assertIn("FlashcAttention", type(o.grad_fn).__name__)
            self.assertEqual(kern.launches, 1)

    def test_forward_values_unchanged(self):
        kern = fake_kernel(True)
        o0, lse0 = kern(*inputs())
        o1, lse1 = kern(*inputs("qkv"))
        self.assertTrue(torch.equal(o0, o1.detach()))
        self.assertTrue(torch.equal(lse0, lse1.detach()))

    def test_backward_raises(self):
        for names in ("q", "k", "v", "qkv"):
            o = fake_kernel(False)(*inputs(names))
            with self.assertRaises(flashc.FlashcError) as cm:
                o.float().square().sum().backward()
            msg = str(cm.exception)
            self.assertIn("flashc has no backward pass for this call", msg)
            self.assertIn("scaled_dot_product_attention", msg)
            self.assertIsInstance(cm.exception, RuntimeError)
            self.assertIsNone(cm.exception.status)

    def test_backward_through_lse_raises(self):
        for loss in (lambda o, lse: lse.sum(),
                     lambda o, lse: o.float().sum() + lse.sum()):
            q, k, v = inputs("q")
            o, lse = fake_kernel(True)(q, k, v)
            self.assertTrue(lse.requires_grad)
            with self.assertRaisesRegex(flashc.FlashcError,
                                        "no backward pass for this call"):
                loss(o, lse).backward()
            self.assertIsNone(q.grad)

    def test_autograd_grad_raises(self):
        q, k, v = inputs("qkv")
        o = fake_kernel(False)(q, k, v)
        with self.assertRaisesRegex(flashc.FlashcError, "no backward pass"):
            torch.autograd.grad(o.float().sum(), (q, k, v))

    def test_given_buffers_carry_the_node(self):
        kern = fake_kernel(True)
        q, k, v = inputs("v")
        out = torch.empty(q.shape, dtype=q.dtype)
        lse = torch.empty(q.shape[:3], dtype=torch.float32)
        o, l = kern(q, k, v, out=out, lse=lse)
        self.assertIs(o, out)
        self.assertIs(l, lse)
        self.assertTrue(out.requires_grad and lse.requires_grad)
        ref, _ = fake_kernel(True)(*inputs())
        self.assertTrue(torch.equal(out.detach(), ref))
        with self.assertRaisesRegex(flashc.FlashcError, "no backward pass"):
            out.float().sum().backward()


def stand_in_runtime(test, lib):
    """Runs `test` against `lib` as the runtime library, on a stream of
    handle 0, recording in test.described the tensors the launch would
    describe; undone at the test's cleanup."""
    test.described = {}
    saved = (flashc._describe, flashc.runtime_library,
             torch.cuda.current_stream)

    def describe(name, t):
        test.described[name] = t
        return flashc._Tensor()

    class Stream:
        cuda_stream = 0

    def restore():
        (flashc._describe, flashc.runtime_library,
         torch.cuda.current_stream) = saved

    flashc._describe = describe
    flashc.runtime_library = lambda: lib
    torch.cuda.current_stream = lambda device=None: Stream
    test.addCleanup(restore)


class LaunchTest(unittest.TestCase):
    """Kernel._launch against a stand-in runtime: the descriptors it would
    pass are recorded instead."""

    def setUp(self):
        class Lib:
            @staticmethod
            def flashrt_launch_with_captures(*args):
                return 0

        stand_in_runtime(self, Lib)

    def kernel(self, has_lse):
        kern = object.__new__(flashc.Kernel)
        kern.has_lse = has_lse
        kern._handle = lambda device: None
        return kern

    def test_outputs_are_contiguous_whatever_q_is(self):
        # A B x S x H x D tensor viewed as B x H x S x D (accepted for q
        # where B == 1): O must still be dense B x H x N x D, as a kernel
        # writing O with plain stores takes nothing else.
        x = torch.randn(1, 20, 3, 64, dtype=torch.bfloat16)
        q = x.transpose(1, 2)
        o, lse = self.kernel(True)._launch(q, q, q, None, None)
        self.assertIs(self.described["o"], o)
        self.assertEqual(o.shape, q.shape)
        self.assertEqual(o.dtype, q.dtype)
        self.assertTrue(o.is_contiguous())
        self.assertEqual(lse.shape, (1, 3, 20))
        self.assertEqual(lse.dtype, torch.float32)
        self.assertTrue(lse.is_contiguous())

    def test_given_buffers_are_used(self):
        q = torch.randn(2, 3, 20, 64, dtype=torch.float16)
        out = torch.empty_like(q)
        o = self.kernel(False)._launch(q, q, q, out, None)
        self.assertIs(o, out)
        self.assertNotIn("lse", self.described)


class VarlenLaunchTest(unittest.TestCase):
    """Kernel.varlen against a stand-in runtime: the [1, H, T, D] views of
    total x H x D tensors, LSE, cu_seqlens and max_seqlen_q it passes."""

    def setUp(self):
        self.launches = []
        launches = self.launches

        class Lib:
            @staticmethod
            def flashrt_launch_varlen(handle, args):
                launches.append(args._obj)  # byref's struct
                return 0

        stand_in_runtime(self, Lib)

    def kernel(self, packed=True):
        kern = object.__new__(flashc.Kernel)
        kern.name, kern.has_lse, kern.packed = "attention_varlen", True, packed
        kern._handle = lambda device: None
        return kern

    def inputs(self, requires_grad=False):
        torch.manual_seed(0)
        q = torch.randn(50, 4, 64, dtype=torch.bfloat16)
        k, v = (torch.randn(30, 2, 64, dtype=torch.bfloat16)
                for _ in range(2))
        q.requires_grad_(requires_grad)
        cq = torch.tensor([0, 20, 50], dtype=torch.int32)
        ck = torch.tensor([0, 10, 30], dtype=torch.int32)
        return q, k, v, cq, ck

    def test_views_and_outputs(self):
        q, k, v, cq, ck = self.inputs()
        o, lse = self.kernel().varlen(q, k, v, cq, ck, 30)
        d = self.described
        for name, t, total in (("q", q, 50), ("k", k, 30), ("v", v, 30),
                               ("o", o, 50)):
            view = d[name]
            h = t.shape[1]
            self.assertEqual(tuple(view.shape), (1, h, total, 64), name)
            # T x H x D storage as [1, H, T, D] (the batch's stride is
            # never used: one batch).
            self.assertEqual(view.stride()[1:], (64, h * 64, 1), name)
            self.assertEqual(view.data_ptr(), t.data_ptr(), name)
        self.assertEqual((o.shape, o.dtype), (q.shape, q.dtype))
        self.assertTrue(o.is_contiguous())
        self.assertEqual((tuple(lse.shape), lse.dtype),
                         ((4, 50), torch.float32))
        self.assertTrue(lse.is_contiguous())
        self.assertEqual(tuple(d["lse"].shape), (1, 4, 50))
        self.assertEqual(d["lse"].data_ptr(), lse.data_ptr())
        self.assertIs(d["cu_seqlens_q"], cq)
        self.assertIs(d["cu_seqlens_k"], ck)
        self.assertEqual(len(self.launches), 1)
        self.assertEqual(self.launches[0].max_seqlen_q, 30)
        self.assertTrue(all(getattr(self.launches[0], f) for f in (
            "q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k")))

    def test_given_buffers_are_used(self):
        q, k, v, cq, ck = self.inputs()
        out = torch.empty(50, 4, 64, dtype=torch.bfloat16)
        lse = torch.empty(4, 50)
        o, l = self.kernel().varlen(q, k, v, cq, ck, torch.tensor(30),
                                    out=out, lse=lse)
        self.assertIs(o, out)
        self.assertIs(l, lse)
        self.assertEqual(self.described["o"].data_ptr(), out.data_ptr())
        self.assertEqual(self.launches[0].max_seqlen_q, 30)

    def test_refusals(self):
        q, k, v, cq, ck = self.inputs()
        cases = [
            (lambda: self.kernel(packed=False).varlen(q, k, v, cq, ck, 30),
             "takes no packed sequences"),
            (lambda: self.kernel()(q[None], k[None], v[None]),
             r"takes packed sequences .*\.varlen\("),
            (lambda: self.kernel().varlen(q[None], k, v, cq, ck, 30),
             "q has 4 dimensions"),
            (lambda: self.kernel().varlen(q, k, v, cq, ck, 30.0),
             "max_seqlen_q is a float"),
            (lambda: self.kernel().varlen(q, k, v, cq, ck, 30,
                                          lse=torch.empty(1, 4, 50)),
             "lse must be"),
        ]
        for fn, msg in cases:
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(flashc.FlashcError, msg):
                    fn()
        self.assertEqual(self.launches, [])

    def test_backward_raises(self):
        q, k, v, cq, ck = self.inputs(requires_grad=True)
        o, lse = self.kernel().varlen(q, k, v, cq, ck, 30)
        self.assertIn("FlashcAttention", type(o.grad_fn).__name__)
        self.assertEqual(len(self.launches), 1)
        with self.assertRaisesRegex(flashc.FlashcError, "no backward pass"):
            o.float().sum().backward()


class DescribeTest(unittest.TestCase):
    """_describe: the runtime's tensor descriptor, on a CPU tensor that
    claims a CUDA device."""

    class FakeCuda(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda", 1)

    def test_fields(self):
        base = torch.empty(2, 3, 40, 64, dtype=torch.float16)[:, :, 5:25]
        d = flashc._describe("q", base.as_subclass(self.FakeCuda))
        self.assertEqual(d.data, base.data_ptr())
        self.assertEqual((d.dtype, d.rank, d.device), (flashc._DTYPE_F16, 4, 1))
        self.assertEqual(list(d.sizes), [2, 3, 20, 64])
        self.assertEqual(list(d.strides), [7680, 2560, 64, 1])
        lse = torch.empty(2, 3, 20).as_subclass(self.FakeCuda)
        d = flashc._describe("lse", lse)
        self.assertEqual((d.dtype, d.rank), (flashc._DTYPE_F32, 3))
        self.assertEqual(list(d.sizes), [2, 3, 20, 0])
        self.assertEqual(list(d.strides), [60, 20, 1, 0])
        cu = torch.tensor([0, 7, 9], dtype=torch.int32).as_subclass(
            self.FakeCuda)
        d = flashc._describe("cu_seqlens_q", cu)
        self.assertEqual((d.dtype, d.rank), (flashc._DTYPE_I32, 1))
        self.assertEqual(list(d.sizes), [3, 0, 0, 0])
        self.assertEqual(list(d.strides), [1, 0, 0, 0])

    def test_refusals(self):
        cuda = torch.empty(1, 1, 4, 64, dtype=torch.float64).as_subclass(
            self.FakeCuda)
        for t, msg in ((cuda, "dtype torch.float64"),
                       (torch.empty(4, 64), "on cpu"),
                       (cuda.long(), "dtype torch.int64.*int32 for "
                        "cu_seqlens"),
                       ([1, 2], "is a list")):
            with self.assertRaisesRegex(flashc.FlashcError, msg):
                flashc._describe("q", t)


if __name__ == "__main__":
    unittest.main()

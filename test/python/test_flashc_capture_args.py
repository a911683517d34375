#!/usr/bin/env python3
"""flashc.attention's tensor arguments on CPU tensors: alibi_slopes,
sinks, document_ids and prefix_lengths (the captures of
kernels/attention_alibi.mlir, attention_sink.mlir, attention_document.mlir
and attention_prefix_lm.mlir), and chunk_size (the chunked mask_mod of
attention_chunked.mlir, alone and with causal, window, softcap, ALiBi and
sinks), each through the CPU path (flashc --target=cpu on the generated
variant, compiled on first use into a fresh cache) against float64
written here: O and LSE with outputs poisoned, ragged lengths (not
multiples of 128) and chunks (not multiples of the tiles), logits near
1e3 in some rows, rows the mask hides entirely (O = 0 and LSE = -inf; with
sinks LSE = the sink), and the gradients (dq, dk, dv and dsinks) against
float64 autograd; then torch.compile through the custom op, and the
arguments refused by name.
Compiles with $FLASHC_COMPILER (ctest passes this build's flashc), else
build/bin/flashc. Exits 77 (ctest: skipped) with a "skipped: ..." line
without torch or the compiler.

FLASHC_TEST_DEVICE=cuda runs the same cases on a CUDA GPU (sm_90a): q, k,
v and the capture tensors (slopes, sinks, ids, prefix lengths) move to the
GPU, the float64 references stay on the CPU (results are brought back
with .cpu() to be compared). There the kernels come from FLASHC_LIBRARY
(a prebuilt library) where it is set, so no compiler is needed, or are
compiled with the compiler as above; the torch.compile training checks,
which compare compiled and eager gradients bit for bit, take the
deterministic backward there (the default one adds dQ with atomics, in
no fixed order).
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

DEVICE = os.environ.get("FLASHC_TEST_DEVICE") or "cpu"
if DEVICE not in ("cpu", "cuda"):
    print(f"FLASHC_TEST_DEVICE={DEVICE}: expected cpu or cuda")
    sys.exit(2)
if DEVICE == "cuda" and not torch.cuda.is_available():
    print("skipped: FLASHC_TEST_DEVICE=cuda but torch sees no CUDA device")
    sys.exit(77)

COMPILER = os.environ.get("FLASHC_COMPILER") or os.path.join(
    ROOT, "build", "bin", "flashc")
# On the GPU a prebuilt library (FLASHC_LIBRARY) stands in for the compiler.
if not os.access(COMPILER, os.X_OK) and not (
        DEVICE == "cuda" and os.environ.get("FLASHC_LIBRARY")):
    print(f"skipped: no flashc binary at {COMPILER}")
    sys.exit(77)
# The training checks compare compiled and eager gradients bit for bit: on
# the GPU that takes the deterministic backward (dQ added in key order).
DETERMINISTIC = DEVICE == "cuda"

from fresh_cache import FreshCacheTest  # noqa: E402
import flashc  # noqa: E402


def keep_mask(batch, nq, nk, causal, ids=None, prefix=None, window=None,
              chunk=None):
    """[B, 1, Nq, Nk]: whether query i sees key j under the masks (on the
    CPU, whatever device the ids and lengths are on)."""
    ids = None if ids is None else ids.cpu()
    prefix = None if prefix is None else prefix.cpu()
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    keep = torch.ones(batch, 1, nq, nk, dtype=torch.bool)
    if causal:
        keep = keep & (j <= i + nk - nq)
    if ids is not None:
        keep = keep & (ids[:, None, :, None] == ids[:, None, None, :])
    if prefix is not None:
        keep = keep & ((j < prefix.long()[:, None, None, None]) | (j <= i))
    if window is not None:
        keep = keep & (j + window >= i)
    if chunk is not None:
        keep = keep & (i // chunk == j // chunk)
    return keep


def reference(q, k, v, causal, scale, slopes=None, sinks=None, ids=None,
              prefix=None, softcap=None, window=None, chunk=None):
    """float64 (O, LSE) of attention with the mods as the kernels write
    them: the cap maps the scaled logit s to softcap * tanh(s / softcap);
    ALiBi adds slopes[h] * (j - i) to it; causal is bottom-right aligned;
    document ids keep j where ids[b, j] == ids[b, i]; the prefix-LM mask
    keeps j < prefix[b] or j <= i; the window keeps j >= i - window; the
    chunks keep j where j // chunk == i // chunk (i and j from the
    top-left, as the mask_mod reads them); a sink joins the
    softmax denominator as one more logit of its head. A row that sees no
    key gets O = 0 and LSE = -inf (the sink's logit with sinks).
    Differentiable in q, k, v and sinks (float64 leaves). On the CPU: the
    inputs are brought there (a no-op for CPU tensors)."""
    q, k, v = (t if t.dtype == torch.float64 else t.cpu().double()
               for t in (q, k, v))
    slopes = None if slopes is None else slopes.cpu()
    sinks = None if sinks is None else sinks.cpu()
    b, h, nq, _ = q.shape
    nk = k.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if slopes is not None:
        s = s + slopes.double()[None, :, None, None] * (j - i)
    s = s.masked_fill(~keep_mask(b, nq, nk, causal, ids, prefix, window,
                                 chunk), float("-inf"))
    logits = s
    if sinks is not None:
        sink = sinks if sinks.dtype == torch.float64 else sinks.double()
        logits = torch.cat([s, sink[None, :, None, None].expand(b, h, nq, 1)],
                           -1)
    lse = torch.logsumexp(logits, -1)
    # Rows of no key and no sink: LSE -inf, P 0 (not exp(nan)).
    finite = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    p = torch.exp(s - finite[..., None])
    return p @ v, lse


def on_device(t):
    """t on the device under test (FLASHC_TEST_DEVICE; t itself on the
    CPU)."""
    return t.to(DEVICE)


def random_documents(batch, n, generator):
    """int32 [batch, n] ids of documents of 1 to 90 rows, each batch its own
    cut, on the device under test."""
    ids = torch.empty(batch, n, dtype=torch.int32)
    for b in range(batch):
        doc, left = 0, 0
        for r in range(n):
            if left == 0:
                doc += 1
                left = int(torch.randint(1, 91, (1,), generator=generator))
            ids[b, r] = doc
            left -= 1
    return on_device(ids)


class CaptureArgsTest(FreshCacheTest):
    compiler = COMPILER

    def inputs(self, nq, nk, d, dtype, seed, batch=2, heads=2, hot=True):
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.empty(batch, heads, n, d).uniform_(-1, 1,
                                                            generator=g)
                   for n in (nq, nk, nk))
        if hot:
            # q . k about sqrt(D / 9) scaled by 1/sqrt(D): rows times 3000
            # have logits near 1e3.
            q[:, :, ::3] *= 3000.0
        return [on_device(t.to(dtype)) for t in (q, k, v)], g

    def run_forward(self, q, k, v, causal, **captures):
        """flashc.attention into an O poisoned with NaN; (O, LSE)."""
        out = torch.full(q.shape, float("nan"), dtype=q.dtype,
                         device=q.device)
        o, lse = flashc.attention(q, k, v, causal=causal, out=out,
                                  return_lse=True, **captures)
        self.assertIs(o, out)
        self.assertEqual((lse.dtype, tuple(lse.shape)),
                         (torch.float32, tuple(q.shape[:3])))
        self.assertFalse(torch.isnan(o).any())
        self.assertFalse(torch.isnan(lse).any())
        return o, lse

    def check(self, what, o, lse, ref_o, ref_lse, masked_rows=None,
              sinks=None, keep=None):
        """O and LSE against float64 by relative error; the rows that see
        no key: O = 0 and LSE = -inf (the sink with sinks, where `keep`,
        keep_mask's, tells them), `masked_rows` of them where given. O,
        LSE and the sinks are compared on the CPU."""
        o, lse = o.cpu(), lse.cpu()
        sinks = None if sinks is None else sinks.cpu()
        hidden = ~torch.isfinite(ref_lse)
        if sinks is not None:
            # No row's LSE is -inf with a sink; its rows that see no key
            # have LSE = the sink.
            hidden = ~keep.any(-1).expand_as(ref_lse)
            want = sinks.double()[None, :, None].expand_as(ref_lse)[hidden]
            self.assertTrue(torch.allclose(lse[hidden].double(), want,
                                           rtol=1e-6, atol=1e-6), what)
        else:
            self.assertTrue(torch.all(lse[hidden] == float("-inf")), what)
        if masked_rows is not None:
            self.assertEqual(int(hidden.sum()), masked_rows, what)
        self.assertTrue(torch.equal(o[hidden], torch.zeros_like(o[hidden])),
                        what)
        seen = ~hidden
        err = ((o[seen].double() - ref_o[seen]).norm()
               / ref_o[seen].norm()).item()
        lse_err = ((lse[seen].double() - ref_lse[seen]).norm()
                   / ref_lse[seen].norm()).item()
        print(f"[ numerics ] {what}: rel err O {err:.2e}, LSE {lse_err:.2e}"
              f", rows that see no key {int(hidden.sum())}")
        tolerance = 1e-2 if o.dtype == torch.bfloat16 else 5e-3
        self.assertLess(err, tolerance, what)
        self.assertLess(lse_err, 1e-5, what)

    def check_gradients(self, what, q, k, v, causal, sinks=None,
                        **captures):
        """flashc's gradients of a random loss on O against float64
        autograd of reference(): dq, dk, dv (and dsinks)."""
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        sink_leaf = None
        if sinks is not None:
            sink_leaf = sinks.clone().requires_grad_()
        o = flashc.attention(*leaves, causal=causal, sinks=sink_leaf,
                             **captures)
        self.assertTrue(o.requires_grad)
        g = torch.Generator().manual_seed(99)
        do = torch.randn(o.shape, generator=g).to(o.dtype)
        o.backward(on_device(do))
        ref_leaves = [t.detach().cpu().double().requires_grad_()
                      for t in (q, k, v)]
        ref_sinks = None
        if sinks is not None:
            ref_sinks = sinks.detach().cpu().double().requires_grad_()
        ref_o, _ = reference(*ref_leaves, causal, 1 / math.sqrt(q.shape[-1]),
                             slopes=captures.get("alibi_slopes"),
                             sinks=ref_sinks,
                             ids=captures.get("document_ids"),
                             prefix=captures.get("prefix_lengths"),
                             softcap=captures.get("softcap"),
                             window=captures.get("window"),
                             chunk=captures.get("chunk_size"))
        wrt = ref_leaves + ([ref_sinks] if sinks is not None else [])
        want = torch.autograd.grad(ref_o, wrt, do.double())
        got = [t.grad for t in leaves] + (
            [sink_leaf.grad] if sinks is not None else [])
        for name, gt, w in zip(("dq", "dk", "dv", "dsinks"), got, want):
            self.assertIsNotNone(gt, f"{what}: {name}")
            gt = gt.cpu()
            self.assertFalse(torch.isnan(gt).any(), f"{what}: {name}")
            err = ((gt.double() - w).norm() / w.norm()).item()
            print(f"[ gradients ] {what}: {name} rel err {err:.2e}")
            self.assertLess(err, 1e-2, f"{what}: {name}")

    def slopes(self, heads):
        return on_device(torch.tensor([2.0 ** (-8.0 * (h + 1) / heads)
                                       for h in range(heads)],
                                      dtype=torch.float32))

    def test_alibi(self):
        for seed, (dtype, d, nq, nk, causal, masked) in enumerate((
                (torch.bfloat16, 64, 150, 150, True, 0),
                (torch.float16, 128, 130, 190, False, 0),
                # 200 queries over 77 keys, causal: the first 123 rows of
                # each (batch, head) see no key.
                (torch.bfloat16, 64, 200, 77, True, 2 * 2 * 123))):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, seed)
            slopes = self.slopes(2)
            o, lse = self.run_forward(q, k, v, causal, alibi_slopes=slopes)
            ref_o, ref_lse = reference(q, k, v, causal, d ** -0.5,
                                       slopes=slopes)
            self.check(f"alibi {dtype} D{d} {nq}x{nk} causal={causal}", o,
                       lse, ref_o, ref_lse, masked)
        # The slopes change the result: the plain kernel is another variant.
        plain = flashc.attention(q, k, v, causal=True).cpu()
        self.assertGreater(((plain.double() - ref_o).norm()
                            / ref_o.norm()).item(), 0.05)

    def test_sinks(self):
        sinks = on_device(torch.tensor([-3.0, 6.0]))
        for seed, (dtype, d, nq, nk, causal, masked) in enumerate((
                (torch.bfloat16, 64, 150, 150, True, 0),
                (torch.float16, 128, 129, 70, False, 0),
                (torch.bfloat16, 64, 200, 77, True, 2 * 2 * 123))):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, 10 + seed)
            o, lse = self.run_forward(q, k, v, causal, sinks=sinks)
            ref_o, ref_lse = reference(q, k, v, causal, d ** -0.5,
                                       sinks=sinks)
            self.check(f"sinks {dtype} D{d} {nq}x{nk} causal={causal}", o,
                       lse, ref_o, ref_lse, masked, sinks=sinks,
                       keep=keep_mask(2, nq, nk, causal))

    def test_document(self):
        for seed, (dtype, d, n, causal) in enumerate((
                (torch.bfloat16, 64, 300, True),
                (torch.float16, 128, 200, False),
                (torch.bfloat16, 128, 131, True))):
            (q, k, v), g = self.inputs(n, n, d, dtype, 20 + seed)
            ids = random_documents(2, n, g)
            o, lse = self.run_forward(q, k, v, causal, document_ids=ids)
            ref_o, ref_lse = reference(q, k, v, causal, d ** -0.5, ids=ids)
            self.check(f"document {dtype} D{d} N{n} causal={causal}", o, lse,
                       ref_o, ref_lse, 0)
        # Each row in a document of its own: it sees only itself.
        own = on_device(torch.arange(n, dtype=torch.int32).repeat(2, 1))
        o = flashc.attention(q, k, v, causal=True, document_ids=own)
        self.assertLess(((o.double() - v.double()).norm()
                         / v.double().norm()).item(), 1e-2)

    def test_prefix_lm(self):
        for seed, (dtype, d, nq, nk, prefix) in enumerate((
                (torch.bfloat16, 64, 150, 150, [0, 150]),
                (torch.float16, 128, 130, 130, [37, 129]),
                (torch.bfloat16, 64, 100, 260, [200, 5]))):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, 30 + seed)
            prefix = on_device(torch.tensor(prefix, dtype=torch.int32))
            o, lse = self.run_forward(q, k, v, False, prefix_lengths=prefix)
            ref_o, ref_lse = reference(q, k, v, False, d ** -0.5,
                                       prefix=prefix)
            self.check(f"prefix-LM {dtype} D{d} {nq}x{nk} prefix "
                       f"{prefix.tolist()}", o, lse, ref_o, ref_lse, 0)
        # A negative length keeps no prefix: the causal (top-left) mask.
        neg = flashc.attention(q, k, v, prefix_lengths=on_device(
            torch.tensor([-4, 0], dtype=torch.int32))).cpu()
        ref_o, _ = reference(q, k, v, False, 0.125,
                             prefix=torch.zeros(2, dtype=torch.int32))
        self.assertLess(((neg.double() - ref_o).norm()
                         / ref_o.norm()).item(), 1e-2)

    def test_combined(self):
        """ALiBi, document masking and sinks in one kernel, forward and
        backward (captures, then the sinks, then dsinks)."""
        (q, k, v), g = self.inputs(140, 140, 64, torch.bfloat16, 40)
        ids = random_documents(2, 140, g)
        args = dict(alibi_slopes=self.slopes(2), document_ids=ids)
        sinks = on_device(torch.tensor([0.5, 2.0]))
        o, lse = self.run_forward(q, k, v, True, sinks=sinks, **args)
        ref_o, ref_lse = reference(q, k, v, True, 0.125, sinks=sinks,
                                   slopes=args["alibi_slopes"], ids=ids)
        self.check("alibi + document + sinks", o, lse, ref_o, ref_lse, 0,
                   sinks=sinks, keep=keep_mask(2, 140, 140, True, ids))
        (q, k, v), _ = self.inputs(140, 140, 64, torch.bfloat16, 41,
                                   hot=False)
        self.check_gradients("alibi + document + sinks", q, k, v, True,
                             sinks=sinks, **args)

    def test_gradients(self):
        """Each variant's backward (derived by the compiler from the same
        regions and captures) against float64 autograd, with ragged
        lengths and, for sinks, rows that see no key (their dq is 0 and
        they add exp(sink - sink) * delta to dsinks)."""
        g = torch.Generator().manual_seed(50)
        cases = [
            ("alibi", torch.bfloat16, 64, 150, 150, True,
             dict(alibi_slopes=self.slopes(2))),
            ("sinks", torch.bfloat16, 64, 150, 90, True,
             dict(sinks=on_device(torch.tensor([-1.0, 3.0])))),
            ("sinks f16 D128", torch.float16, 128, 70, 130, False,
             dict(sinks=on_device(torch.tensor([2.0, -2.0])))),
            ("document", torch.bfloat16, 64, 200, 200, True,
             dict(document_ids=random_documents(2, 200, g))),
            ("prefix-LM", torch.float16, 64, 150, 150, False,
             dict(prefix_lengths=on_device(
                 torch.tensor([60, 0], dtype=torch.int32)))),
        ]
        for seed, (what, dtype, d, nq, nk, causal, captures) in enumerate(
                cases):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, 60 + seed,
                                       hot=False)
            self.check_gradients(f"{what} {nq}x{nk}", q, k, v, causal,
                                 **captures)

    def test_chunk_size(self):
        """Chunked local attention (q_idx // C == kv_idx // C): chunks of
        100 and 70, no multiple of the tiles (256 x 96 at D 64, 128 x 128
        at D 128), so tiles straddle chunks; with causal over 300 queries
        and 250 keys, rows 0-49 see no key by causal alone and rows
        100-149 and 200-249 none in their chunk (their keys up to i - 50
        all lie in the chunk before); with a window and the cap in one
        variant; with ALiBi and sinks, whose hidden rows get LSE = the
        sink."""
        for seed, (dtype, d, nq, nk, causal, mods, masked) in enumerate((
                (torch.bfloat16, 64, 300, 300, True, dict(chunk_size=100),
                 0),
                (torch.float16, 128, 300, 250, True, dict(chunk_size=100),
                 2 * 2 * 150),
                (torch.bfloat16, 64, 300, 300, False,
                 dict(chunk_size=100, window=40, softcap=20.0), 0),
                (torch.float16, 64, 130, 250, False, dict(chunk_size=70),
                 0))):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, 100 + seed)
            o, lse = self.run_forward(q, k, v, causal, **mods)
            ref_o, ref_lse = reference(
                q, k, v, causal, d ** -0.5, softcap=mods.get("softcap"),
                window=mods.get("window"), chunk=mods["chunk_size"])
            self.check(f"chunk {dtype} D{d} {nq}x{nk} causal={causal} "
                       f"{mods}", o, lse, ref_o, ref_lse, masked)
            # The chunks change the result: without them it is another
            # variant.
            unchunked, _ = reference(
                q, k, v, causal, d ** -0.5, softcap=mods.get("softcap"),
                window=mods.get("window"))
            seen = torch.isfinite(ref_lse)
            self.assertGreater(((unchunked[seen] - ref_o[seen]).norm()
                                / ref_o[seen].norm()).item(), 0.05)
        # ALiBi and sinks in the same kernel (captures, then the sinks).
        (q, k, v), _ = self.inputs(300, 250, 64, torch.bfloat16, 110)
        slopes, sinks = self.slopes(2), on_device(torch.tensor([-2.0, 5.0]))
        o, lse = self.run_forward(q, k, v, True, chunk_size=100,
                                  alibi_slopes=slopes, sinks=sinks)
        ref_o, ref_lse = reference(q, k, v, True, 0.125, slopes=slopes,
                                   sinks=sinks, chunk=100)
        self.check("chunk + alibi + sinks 300x250", o, lse, ref_o, ref_lse,
                   2 * 2 * 150, sinks=sinks,
                   keep=keep_mask(2, 300, 250, True, chunk=100))

    def test_chunk_size_gradients(self):
        """dq, dk, dv (and dsinks) of the chunked variants (the backward
        the compiler derives from the same mask_mod, its 64 x 64 tiles
        straddling the chunks) against float64 autograd, rows the mask
        hides included."""
        cases = [
            ("chunk 100", torch.bfloat16, 64, 300, 300, True,
             dict(chunk_size=100)),
            ("chunk 100 hides rows", torch.float16, 64, 300, 250, True,
             dict(chunk_size=100)),
            ("chunk 100 + window 40 + softcap", torch.bfloat16, 64, 300,
             300, False, dict(chunk_size=100, window=40, softcap=20.0)),
            ("chunk 70 + alibi + sinks", torch.bfloat16, 64, 200, 150,
             True, dict(chunk_size=70, alibi_slopes=self.slopes(2),
                        sinks=on_device(torch.tensor([1.0, -1.5])))),
        ]
        for seed, (what, dtype, d, nq, nk, causal, mods) in enumerate(cases):
            (q, k, v), _ = self.inputs(nq, nk, d, dtype, 120 + seed,
                                       hot=False)
            self.check_gradients(f"{what} {nq}x{nk}", q, k, v, causal,
                                 **mods)

    def test_chunk_size_torch_compile(self):
        """The chunk size through the custom ops' schemas and fakes: a
        compiled graph gives O and LSE against float64, and training
        through one the eager call's gradients."""
        (q, k, v), _ = self.inputs(130, 130, 64, torch.bfloat16, 130)

        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v):
            return flashc.attention(q, k, v, causal=True, chunk_size=50,
                                    return_lse=True)

        o, lse = f(q, k, v)
        ref_o, ref_lse = reference(q, k, v, True, 0.125, chunk=50)
        self.check("torch.compile chunk 50", o, lse, ref_o, ref_lse, 0)

        # An LSE output under training would take a gradient flashc does
        # not compute (test_torch_compile trains on O alone too).
        # DETERMINISTIC on the GPU: equal bits need dQ in a fixed order.
        def eager(q, k, v):
            return flashc.attention(q, k, v, causal=True, chunk_size=50,
                                    deterministic=DETERMINISTIC)

        compiled = torch.compile(eager, fullgraph=True, backend="aot_eager")
        results = []
        (q, k, v), _ = self.inputs(130, 130, 64, torch.bfloat16, 131,
                                   hot=False)
        for fn in (compiled, eager):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            o = fn(*leaves)
            o.float().sum().backward()
            results.append([o.detach()] + [t.grad for t in leaves])
        for name, a, b in zip(("o", "dq", "dk", "dv"), *results):
            self.assertTrue(torch.equal(a, b), name)

    def test_no_gradient_for_slopes_ids_or_prefix(self):
        (q, k, v), g = self.inputs(40, 40, 64, torch.bfloat16, 70, hot=False)
        q.requires_grad_()
        slopes = self.slopes(2).requires_grad_()
        o = flashc.attention(q, k, v, alibi_slopes=slopes)
        o.float().sum().backward()
        self.assertIsNotNone(q.grad)
        self.assertIsNone(slopes.grad)
        # Sinks alone requiring grad take the custom op too.
        sinks = on_device(torch.tensor([1.0, -1.0])).requires_grad_()
        o = flashc.attention(q.detach(), k, v, sinks=sinks)
        self.assertTrue(o.requires_grad)
        o.float().sum().backward()
        self.assertTrue(torch.isfinite(sinks.grad).all())

    def test_torch_compile(self):
        (q, k, v), g = self.inputs(130, 130, 64, torch.bfloat16, 80)
        ids = random_documents(2, 130, g)
        sinks = on_device(torch.tensor([1.0, 4.0]))

        @torch.compile(fullgraph=True, backend="aot_eager")
        def f(q, k, v, ids, sinks):
            return flashc.attention(q, k, v, causal=True, document_ids=ids,
                                    sinks=sinks, return_lse=True)

        o, lse = f(q, k, v, ids, sinks)
        ref_o, ref_lse = reference(q, k, v, True, 0.125, sinks=sinks,
                                   ids=ids)
        self.check("torch.compile document + sinks", o, lse, ref_o, ref_lse,
                   0, sinks=sinks, keep=keep_mask(2, 130, 130, True, ids))

        # Training through the compiled graph: the same kernels as eager,
        # so the same gradients, dsinks included (on the GPU with the
        # deterministic backward: the default adds dQ in no fixed order).
        def eager(q, k, v, ids, sinks):
            return flashc.attention(q, k, v, causal=True, document_ids=ids,
                                    sinks=sinks, deterministic=DETERMINISTIC)

        compiled = torch.compile(eager, fullgraph=True, backend="aot_eager")
        grads = []
        for fn in (compiled, eager):
            leaves = [t.clone().requires_grad_() for t in (q, k, v, sinks)]
            fn(*leaves[:3], ids, leaves[3]).float().sum().backward()
            grads.append([t.grad for t in leaves])
        for name, a, b in zip(("dq", "dk", "dv", "dsinks"), *grads):
            self.assertTrue(torch.equal(a, b), name)

    def test_opcheck(self):
        """The custom ops' schemas, fakes and autograd registration
        (torch.library.opcheck) with the new tensor arguments."""
        (q, k, v), g = self.inputs(40, 40, 64, torch.bfloat16, 85)
        ids = random_documents(2, 40, g)
        slopes, sinks = self.slopes(2), on_device(torch.tensor([0.5, 1.0]))
        prefix = on_device(torch.tensor([5, 30], dtype=torch.int32))
        ops = torch.ops.flashc
        torch.library.opcheck(ops.attention.default, (
            q, k, v, True, None, False, None, None, None, slopes, sinks, ids,
            None))
        torch.library.opcheck(ops.attention_out.default, (
            q, k, v, torch.empty_like(q), False, None, None, None, None,
            None, sinks, None, prefix))
        o, lse = ops.attention(q, k, v, True, None, False, None, None, None,
                               slopes, sinks, ids, None)
        do = on_device(torch.randn(o.shape, generator=g).to(o.dtype))
        torch.library.opcheck(ops.attention_backward_sinks.default, (
            do, q, k, v, o, lse, sinks, True, None, False, None, None, None,
            slopes, ids, None))
        torch.library.opcheck(ops.attention_backward.default, (
            do, q, k, v, o, lse, True, None, False, None, None, None, slopes,
            ids, None))
        # chunk_size, an int of the schemas, with window and the sinks.
        torch.library.opcheck(ops.attention.default, (
            q, k, v, True, None, False, None, 20, 16, None, sinks, None,
            None))
        torch.library.opcheck(ops.attention_out.default, (
            q, k, v, torch.empty_like(q), False, None, 30.0, None, 16))
        o, lse = ops.attention(q, k, v, True, None, False, None, 20, 16,
                               None, sinks)
        torch.library.opcheck(ops.attention_backward_sinks.default, (
            do, q, k, v, o, lse, sinks, True, None, False, None, 20, 16))
        o, lse = ops.attention(q, k, v, False, None, False, None, None, 16)
        torch.library.opcheck(ops.attention_backward.default, (
            do, q, k, v, o, lse, False, None, False, None, None, 16))

    def test_refused_by_name(self):
        (q, k, v), _ = self.inputs(20, 20, 64, torch.bfloat16, 90, hot=False)
        f32, i32 = torch.float32, torch.int32
        slopes, sinks = on_device(torch.ones(2)), on_device(torch.zeros(2))
        ids = on_device(torch.zeros(2, 20, dtype=i32))
        prefix = on_device(torch.zeros(2, dtype=i32))
        cases = [
            ("alibi_slopes has dtype torch.bfloat16",
             dict(alibi_slopes=slopes.bfloat16())),
            ("alibi_slopes is \\(3,\\); expected \\(2,\\)",
             dict(alibi_slopes=on_device(torch.ones(3)))),
            ("alibi_slopes is a list", dict(alibi_slopes=[1.0, 1.0])),
            (f"alibi_slopes is on meta but q is on {q.device}",
             dict(alibi_slopes=torch.ones(2, device="meta"))),
            ("sinks has dtype torch.float64", dict(sinks=sinks.double())),
            ("sinks is \\(2, 1\\)", dict(sinks=sinks[:, None])),
            ("document_ids has dtype torch.int64",
             dict(document_ids=ids.long())),
            ("document_ids is \\(2, 19\\); expected \\(2, 20\\)",
             dict(document_ids=ids[:, :19])),
            ("prefix_lengths has dtype torch.float32",
             dict(prefix_lengths=prefix.to(f32))),
            ("prefix_lengths is \\(1,\\)", dict(prefix_lengths=prefix[:1])),
            ("alibi_slopes and softcap",
             dict(alibi_slopes=slopes, softcap=20.0)),
            ("document_ids and prefix_lengths",
             dict(document_ids=ids, prefix_lengths=prefix)),
            ("window with document_ids", dict(document_ids=ids, window=4)),
            ("chunk_size with document_ids",
             dict(document_ids=ids, chunk_size=8, causal=True)),
            ("chunk_size with document_ids or prefix_lengths",
             dict(prefix_lengths=prefix, chunk_size=8)),
            ("chunk_size must be a number of positions >= 1, got 0",
             dict(chunk_size=0, causal=True)),
            ("chunk_size must be .* got 2.5", dict(chunk_size=2.5)),
            ("pass causal=False", dict(prefix_lengths=prefix, causal=True)),
        ]
        for msg, change in cases:
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(flashc.FlashcError, msg) as cm:
                    flashc.attention(q, k, v, **change)
                self.assertEqual(cm.exception.status, 4)
        # Document ids name a row of q and of k alike.
        k2, v2 = k[:, :, :15], v[:, :, :15]
        with self.assertRaisesRegex(flashc.FlashcError,
                                    "document_ids needs seq_q == seq_k"):
            flashc.attention(q, k2, v2, document_ids=ids)
        # Refused under autograd too (the custom op and its fake).
        q.requires_grad_()
        with self.assertRaisesRegex(flashc.FlashcError, "sinks is \\(3,\\)"):
            flashc.attention(q, k, v, sinks=on_device(torch.zeros(3)))
        for msg, change in (
                ("chunk_size with document_ids",
                 dict(document_ids=ids, chunk_size=8)),
                ("chunk_size must be", dict(chunk_size=0))):
            with self.subTest(msg=msg, grad=True):
                with self.assertRaisesRegex(flashc.FlashcError, msg) as cm:
                    flashc.attention(q, k, v, **change)
                self.assertEqual(cm.exception.status, 4)


if __name__ == "__main__":
    unittest.main()

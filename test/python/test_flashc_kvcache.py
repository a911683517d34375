#!/usr/bin/env python3
"""flashc.attention_with_kvcache on CUDA tensors: the GPU decoding kernel
(kernel.json "pass": "decode", two launches: split and combine) through
Kernel.decode, against a float64 reference computed on the CPU.

FLASHC_TEST_DEVICE=cuda runs the GPU cases: vLLM's num_pages x page_size x
H_kv x D pages (16, 32, 64 and 256 rows; key tiles of 128 gather the small
ones), each batch's pages shuffled through the
cache and every slot no batch owns poisoned with NaN, a page table padded
with indices past the cache, cache lengths that are no multiple of the
page, and flash_attn_with_kvcache's contiguous B x Nk x H_kv x D cache (a
view of a longer one); GQA 32/8 and 32/1, 1 and 4 new tokens, splits 1, 3
and the runtime's rule (None), pack_gqa on and off, rows with logits near
1e3, rows the causal mask hides entirely (O = 0, LSE = -inf), outputs
poisoned with NaN before each call; then one decoding call captured in a
CUDA graph (torch.cuda.CUDAGraph, a workspace allocated before the
capture) and replayed over changed cache contents and lengths; calls
without out= (prepared once per signature) on other tensors of the same
layouts, and one captured in a graph; and the arguments refused by name. The kernels come from FLASHC_LIBRARY where it
is set, else the compiler ($FLASHC_COMPILER, else build/bin/flashc) into
a fresh cache.

Everywhere (no GPU needed, where libflashrt is found): flashc's ctypes
struct of a decoding call against the runtime's own checks
(flashrt_validate_decode on a hand-written decoding kernel.json), so that
each field lands where flashrt.h puts it.

Exits 77 (ctest: skipped) without torch.
"""
import ctypes
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("skipped: no PyTorch")
    sys.exit(77)

DEVICE = os.environ.get("FLASHC_TEST_DEVICE") or "cpu"
if DEVICE not in ("cpu", "cuda"):
    print(f"FLASHC_TEST_DEVICE={DEVICE}: expected cpu or cuda")
    sys.exit(2)
if DEVICE == "cuda" and not torch.cuda.is_available():
    print("skipped: FLASHC_TEST_DEVICE=cuda but torch sees no CUDA device")
    sys.exit(77)
CUDA = DEVICE == "cuda"

COMPILER = os.environ.get("FLASHC_COMPILER") or os.path.join(
    ROOT, "build", "bin", "flashc")
HAVE_KERNELS = os.access(COMPILER, os.X_OK) or bool(
    os.environ.get("FLASHC_LIBRARY"))

from fresh_cache import FreshCacheTest  # noqa: E402
import flashc  # noqa: E402

NAN = float("nan")


# --- the caches and the reference --------------------------------------------

def page_table(gen, lens, page):
    """(table, num_pages): each batch's pages drawn at random from a cache
    of three spare pages more than they need; past a batch's pages the
    table names pages outside the cache (the length bounds what is read;
    the kernel clamps page indices)."""
    pages_of = [-(-n // page) for n in lens]
    max_pages = max(max(pages_of), 1) + 1
    num_pages = sum(pages_of) + 3
    order = torch.randperm(num_pages, generator=gen)
    table = torch.full((len(lens), max_pages), 1 << 30, dtype=torch.int32)
    used = 0
    for b, n in enumerate(pages_of):
        table[b, :n] = order[used:used + n].to(torch.int32)
        used += n
    return table, num_pages


def fill_paged(gen, table, lens, num_pages, page, kv_heads, d, dtype):
    """(k_cache, v_cache, keys, values): pages num_pages x page x kv_heads
    x d of `dtype` on the CPU, NaN wherever no batch's key lies; keys[b]
    and values[b] batch b's float64 kv_heads x len x d as rounded."""
    caches = [torch.full((num_pages, page, kv_heads, d), NAN)
              for _ in range(2)]
    keys, values = [], []
    for b, n in enumerate(lens):
        j = torch.arange(n)
        pages = table[b, j // page].long()
        rows = j % page
        kv = [(torch.rand(n, kv_heads, d, generator=gen) * 2 - 1).to(dtype)
              for _ in range(2)]
        for cache, x in zip(caches, kv):
            cache[pages, rows] = x.float()
        keys.append(kv[0].double().transpose(0, 1))
        values.append(kv[1].double().transpose(0, 1))
    return caches[0].to(dtype), caches[1].to(dtype), keys, values


def queries(gen, b, h, sq, d, dtype, hot=False):
    q = torch.rand(b, h, sq, d, generator=gen) * 2 - 1
    if hot:
        # q . k about sqrt(D / 9) times 3000: logits near 1e3 in half the
        # heads.
        q[:, ::2] *= 3000.0 * d ** -0.5
    return q.to(dtype)


def reference(q, keys, values, lens, causal, scale, softcap=None,
              window=None, chunk=None, sinks=None):
    """float64 (O, LSE) on the CPU of each batch's queries over its keys,
    query i at the cache's position i + len - Sq; a row that sees no key
    has O = 0 and LSE = -inf (with sinks, LSE = its head's sink). The
    mods as flashc's: softcap * tanh(s / softcap) of the scaled logit,
    keys at most `window` behind the query's position, keys in its chunk
    of `chunk` positions, a sink logit per head in every denominator."""
    q = q.double().cpu()
    b, h, sq, d = q.shape
    o = torch.zeros(b, h, sq, d, dtype=torch.float64)
    lse = torch.full((b, h, sq), -math.inf, dtype=torch.float64)
    for bi, n in enumerate(lens):
        group = h // keys[bi].shape[0]
        k = keys[bi].repeat_interleave(group, 0)
        v = values[bi].repeat_interleave(group, 0)
        s = q[bi] @ k.transpose(1, 2) * scale
        if softcap is not None:
            s = softcap * torch.tanh(s / softcap)
        i = torch.arange(sq)[:, None]
        j = torch.arange(n)[None, :]
        position = i + max(n - sq, 0)
        if causal:
            s = s.masked_fill(j > i + n - sq, -math.inf)
        if window is not None:
            s = s.masked_fill(j + window < position, -math.inf)
        if chunk is not None:
            s = s.masked_fill(j // chunk != position // chunk, -math.inf)
        if sinks is not None:
            sink = sinks.double().cpu()[:, None, None].expand(h, sq, 1)
            s = torch.cat([s, sink], -1)
        row = torch.logsumexp(s, -1) if s.shape[-1] else torch.full(
            (h, sq), -math.inf)
        if sinks is not None:
            s = s[..., :-1]
        seen = torch.isfinite(row)
        p = torch.where(seen[..., None], torch.exp(s - row[..., None]),
                        torch.zeros(()))
        o[bi] = p @ v
        lse[bi] = row
    return o, lse


def compare(test, name, o, lse, ref_o, ref_lse, dtype):
    """O and LSE (brought back to the CPU) against the reference: no NaN,
    rows that see no key O = 0 and LSE = -inf, relative errors."""
    o, lse = o.double().cpu(), lse.double().cpu()
    test.assertFalse(torch.isnan(o).any().item(), name)
    test.assertFalse(torch.isnan(lse).any().item(), name)
    hidden = ~torch.isfinite(ref_lse)
    test.assertTrue(bool((o[hidden] == 0).all()), name)
    test.assertTrue(bool((lse[hidden] == -math.inf).all()), name)
    seen = ~hidden
    err = ((o[seen] - ref_o[seen]).norm() / ref_o[seen].norm()).item()
    lse_err = ((lse[seen] - ref_lse[seen]).norm()
               / ref_lse[seen].norm()).item()
    print(f"[ numerics ] {name}: rel err O {err:.2e}, LSE {lse_err:.2e}, "
          f"rows that see no key {int(hidden.sum())}")
    test.assertLess(err, 1e-2 if dtype == torch.bfloat16 else 5e-3, name)
    test.assertLess(lse_err, 1e-4, name)


# --- on the GPU --------------------------------------------------------------

class FreshCache(FreshCacheTest):
    compiler = COMPILER


@unittest.skipUnless(CUDA, "FLASHC_TEST_DEVICE is not cuda")
@unittest.skipUnless(HAVE_KERNELS, f"no flashc binary at {COMPILER} and no "
                     "FLASHC_LIBRARY")
class GpuKvCacheTest(FreshCache):

    def paged_case(self, what, dtype, heads, kv_heads, sq, page, lens,
                   causal, seed, hot=False,
                   configs=((1, None), (3, None), (None, None)), bshd=False,
                   mods=None):
        gen = torch.Generator().manual_seed(seed)
        d = 128
        table, num_pages = page_table(gen, lens, page)
        k_cache, v_cache, keys, values = fill_paged(
            gen, table, lens, num_pages, page, kv_heads, d, dtype)
        q = queries(gen, len(lens), heads, sq, d, dtype, hot)
        mods = dict(mods or {})
        if mods.pop("sinks", False):
            mods["sinks"] = torch.randn(heads, generator=gen) * 2
        ref_o, ref_lse = reference(q, keys, values, lens, causal, d ** -0.5,
                                   softcap=mods.get("softcap"),
                                   window=mods.get("window"),
                                   chunk=mods.get("chunk_size"),
                                   sinks=mods.get("sinks"))
        dev = torch.device("cuda")
        if "sinks" in mods:
            mods["sinks"] = mods["sinks"].to(dev)
        q, k_cache, v_cache = q.to(dev), k_cache.to(dev), v_cache.to(dev)
        if bshd:
            # vLLM's B x Sq x H x D queries, viewed B x H x Sq x D.
            q = q.transpose(1, 2).contiguous().transpose(1, 2)
        table = table.to(dev)
        seqlens = torch.tensor(lens, dtype=torch.int32, device=dev)
        for splits, pack in configs:
            name = f"{what} splits={splits} pack_gqa={pack}"
            out = torch.full(q.shape, NAN, dtype=dtype, device=dev)
            o, lse = flashc.attention_with_kvcache(
                q, k_cache, v_cache, seqlens, table, causal=causal,
                num_splits=splits, pack_gqa=pack, out=out, return_lse=True,
                **mods)
            torch.cuda.synchronize()
            self.assertIs(o, out)
            compare(self, name, o, lse, ref_o, ref_lse, dtype)

    def test_gqa_32_8_page64(self):
        # One new token, 32 query heads over 8, pages of 64: caches of 1,
        # 77, 1000 and 4097 keys (no multiple of the page).
        self.paged_case("bf16 32/8 page64 sq1", torch.bfloat16, 32, 8, 1, 64,
                        [1, 77, 1000, 4097], True, 1)

    def test_mqa_32_1_page256_hot(self):
        # Four new tokens over one K/V head, pages of 256, logits near 1e3;
        # a cache of 2 keys leaves its first two rows no key (causal). The
        # queries in vLLM's layout (B x Sq x H x D viewed B x H x Sq x D).
        self.paged_case("f16 32/1 page256 sq4 hot bshd", torch.float16, 32, 1,
                        4, 256, [2, 3000, 600], True, 2, hot=True,
                        configs=((1, None), (3, None), (None, None),
                                 (3, False)), bshd=True)

    def test_small_pages_gathered(self):
        # vLLM's default pages of 16 keys (and 32): a key tile of 128 keys
        # gathers 8 (4) pages, each from its own table entry; caches no
        # multiple of the page or the tile, the table padded past each
        # batch's pages, Sq 1 and 4, packed and not.
        self.paged_case("bf16 32/8 page16 sq1", torch.bfloat16, 32, 8, 1, 16,
                        [1, 37, 1000, 4097], True, 12)
        self.paged_case("f16 32/8 page32 sq4 hot", torch.float16, 32, 8, 4,
                        32, [2, 300, 2049], True, 13, hot=True,
                        configs=((1, None), (None, None), (3, False)))

    def test_chunked_prefill(self):
        # A chunk of 300 new tokens against pages of 16: the causal mask
        # aligned to each cache's end (the chunk's keys its last 300), a
        # packed program's G x 300 rows over 19 row blocks; the split
        # kernel in one split (the rule, with that many programs) and 3.
        self.paged_case("bf16 32/8 page16 sq300 chunked prefill",
                        torch.bfloat16, 32, 8, 300, 16, [1000, 333], True,
                        14, configs=((None, None), (3, None)))

    def test_gqa_32_8_sq4_unpacked(self):
        # Four new tokens without GQA packing, and non-causal with it.
        self.paged_case("bf16 32/8 page64 sq4", torch.bfloat16, 32, 8, 4, 64,
                        [300, 65], True, 3,
                        configs=((1, False), (3, False), (None, True)))
        self.paged_case("bf16 32/8 page256 sq4 noncausal", torch.bfloat16, 32,
                        8, 4, 256, [513, 17], False, 4,
                        configs=((3, None), (None, None)))

    def test_mods_softcap_window_sinks(self):
        # The score and mask mods on the decoding kernels: soft-capping, a
        # window of 200 keys behind each query's position (the split
        # kernel starts its key tiles at the first query's window) and a
        # sink per query head added in the combine, packed (each row its
        # own head's sink) and not; logits near 1e3 under the cap.
        self.paged_case("bf16 32/8 page64 sq1 softcap window sinks",
                        torch.bfloat16, 32, 8, 1, 64, [1, 77, 1000, 4097],
                        True, 9, hot=True,
                        configs=((1, None), (3, None), (None, None),
                                 (3, False)),
                        mods=dict(softcap=30.0, window=200, sinks=True))

    def test_mods_chunk_sinks_sq4(self):
        # Four new tokens of a chunked (Llama 4) mask across a chunk
        # boundary and sinks, pages of 256; a 2-key cache whose first two
        # rows see no key keep LSE = their sink.
        self.paged_case("f16 32/8 page256 sq4 chunk sinks", torch.float16,
                        32, 8, 4, 256, [2, 1026, 3000], True, 10,
                        configs=((1, None), (3, None), (None, False)),
                        mods=dict(chunk_size=512, sinks=True))

    def test_contiguous_cache(self):
        # flash_attn_with_kvcache's B x Nk x H_kv x D cache, here the first
        # Nk rows of a longer one (its capacity): every batch's Nk keys.
        gen = torch.Generator().manual_seed(5)
        b, h, d, capacity, nk = 2, 32, 128, 2500, 2049
        dev = torch.device("cuda")
        for kv_heads, sq in ((8, 1), (8, 4), (1, 4)):
            full = [(torch.rand(b, capacity, kv_heads, d, generator=gen) * 2
                     - 1).to(torch.bfloat16) for _ in range(2)]
            k_cache, v_cache = (x.to(dev)[:, :nk] for x in full)
            keys = [full[0][bi, :nk].double().transpose(0, 1)
                    for bi in range(b)]
            values = [full[1][bi, :nk].double().transpose(0, 1)
                      for bi in range(b)]
            q = queries(gen, b, h, sq, d, torch.bfloat16, hot=True)
            ref_o, ref_lse = reference(q, keys, values, [nk] * b, True,
                                       d ** -0.5)
            q = q.to(dev)
            for splits in (1, 3, None):
                name = (f"bf16 32/{kv_heads} contiguous sq{sq} "
                        f"splits={splits}")
                out = torch.full(q.shape, NAN, dtype=q.dtype, device=dev)
                # cache_seqlens, where given, must be Nk for every batch.
                lens = None if splits != 3 else torch.full(
                    (b,), nk, dtype=torch.int32)
                o, lse = flashc.attention_with_kvcache(
                    q, k_cache, v_cache, lens, None, causal=True,
                    num_splits=splits, out=out, return_lse=True)
                torch.cuda.synchronize()
                compare(self, name, o, lse, ref_o, ref_lse, torch.bfloat16)

    def test_runtime_rule_and_workspace(self):
        # The rule's splits for a long cache at batch 1, and the workspace
        # they need: partial_out then partial_lse, 256-byte aligned.
        gen = torch.Generator().manual_seed(6)
        dev = torch.device("cuda")
        lens = [32768]
        table, num_pages = page_table(gen, lens, 64)
        cache = torch.zeros(num_pages, 64, 8, 128, dtype=torch.bfloat16,
                            device=dev)
        q = torch.zeros(1, 32, 1, 128, dtype=torch.bfloat16, device=dev)
        seqlens = torch.tensor(lens, dtype=torch.int32, device=dev)
        table = table.to(dev)
        kern = flashc.ops.decode_kernel_for(q, True, None, None, None, None,
                                            False, 64, True)
        self.assertTrue(kern.decode_pass)
        splits = kern.decode_num_splits(q, cache, cache, seqlens, table)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        print(f"[ rule ] {sms} SMs, 8 programs, {table.shape[1] * 64} keys: "
              f"{splits} splits")
        self.assertGreater(splits, 1)
        self.assertEqual(kern.decode_num_splits(q, cache, cache, seqlens,
                                                table, num_splits=5), 5)
        rows = 5 * 32
        want = -(-rows * 128 * 4 // 256) * 256 + -(-rows * 4 // 256) * 256
        self.assertEqual(kern.decode_workspace_bytes(
            q, cache, cache, seqlens, table, num_splits=5), want)
        with self.assertRaises(flashc.FlashcError) as e:
            kern.decode(q, cache, cache, seqlens, table, num_splits=5,
                        workspace=torch.empty(want - 1, dtype=torch.uint8,
                                              device=dev))
        self.assertIn(f"workspace is {want - 1} bytes; this call needs "
                      f"{want}", str(e.exception))

    def test_cuda_graph_replay(self):
        # One decoding call captured with a workspace allocated before the
        # capture, replayed over other cache contents and lengths (the
        # tensors' addresses fixed, their contents not).
        gen = torch.Generator().manual_seed(7)
        dev = torch.device("cuda")
        d, page, heads, kv_heads = 128, 64, 32, 8
        lens_a, lens_b = [700, 65, 1], [1000, 3, 512]
        table, num_pages = page_table(gen, [1000, 65, 512], page)
        caches, refs = [], []
        q = queries(gen, 3, heads, 1, d, torch.bfloat16)
        for lens in (lens_a, lens_b):
            k, v, keys, values = fill_paged(gen, table, lens, num_pages, page,
                                            kv_heads, d, torch.bfloat16)
            caches.append((k.to(dev), v.to(dev),
                           torch.tensor(lens, dtype=torch.int32).to(dev)))
            refs.append(reference(q, keys, values, lens, True, d ** -0.5))
        q, table = q.to(dev), table.to(dev)
        k_cache, v_cache, seqlens = (t.clone() for t in caches[0])
        kern = flashc.ops.decode_kernel_for(q, True, None, None, None, None,
                                            False, page, True)
        out = torch.full(q.shape, NAN, dtype=q.dtype, device=dev)
        lse = torch.empty(q.shape[:3], dtype=torch.float32, device=dev)
        workspace = torch.empty(
            kern.decode_workspace_bytes(q, k_cache, v_cache, seqlens, table,
                                        num_splits=3),
            dtype=torch.uint8, device=dev)

        def step():
            kern.decode(q, k_cache, v_cache, seqlens, table, out=out,
                        lse=lse, num_splits=3, workspace=workspace)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step()  # loads the module, outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        for (k, v, lens), (ref_o, ref_lse), name in zip(
                caches, refs, ("graph replay A", "graph replay B")):
            k_cache.copy_(k)
            v_cache.copy_(v)
            seqlens.copy_(lens)
            out.fill_(NAN)
            lse.fill_(NAN)
            graph.replay()
            torch.cuda.synchronize()
            compare(self, name, out, lse, ref_o, ref_lse, torch.bfloat16)

    def test_prepared_calls_and_graph(self):
        # Calls without out= are prepared once per signature: a second call
        # of the same layouts on other tensors (other contents, lengths and
        # addresses) reads its own, num_splits=True is still refused after
        # num_splits=1 was prepared, and the prepared launch captured in a
        # CUDA graph (its O, LSE and workspace from the graph's pool)
        # replays over new contents.
        gen = torch.Generator().manual_seed(11)
        dev = torch.device("cuda")
        d, page, heads, kv_heads = 128, 64, 32, 8
        table, num_pages = page_table(gen, [1000, 65, 512], page)
        cases = []
        for lens in ([700, 65, 1], [1000, 3, 512]):
            q = queries(gen, 3, heads, 1, d, torch.bfloat16, hot=True)
            k, v, keys, values = fill_paged(gen, table, lens, num_pages, page,
                                            kv_heads, d, torch.bfloat16)
            cases.append(((q.to(dev), k.to(dev), v.to(dev),
                           torch.tensor(lens, dtype=torch.int32).to(dev)),
                          reference(q, keys, values, lens, True, d ** -0.5)))
        table = table.to(dev)
        for splits in (1, None):
            for i, ((q, k, v, lens), (ref_o, ref_lse)) in enumerate(cases):
                o, lse = flashc.attention_with_kvcache(
                    q, k, v, lens, table, causal=True, num_splits=splits,
                    return_lse=True)
                torch.cuda.synchronize()
                compare(self, f"prepared call {i} splits={splits}", o, lse,
                        ref_o, ref_lse, torch.bfloat16)
        q, k, v, lens = cases[0][0]
        with self.assertRaises(flashc.FlashcError) as e:
            flashc.attention_with_kvcache(q, k, v, lens, table, causal=True,
                                          num_splits=True)
        self.assertIn("num_splits must be an int >= 1", str(e.exception))
        static = [t.clone() for t in cases[0][0]]

        def step():
            return flashc.attention_with_kvcache(*static, table, causal=True,
                                                 return_lse=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o, lse = step()
        for i, (tensors, (ref_o, ref_lse)) in enumerate(cases):
            for dst, src in zip(static, tensors):
                dst.copy_(src)
            o.fill_(NAN)
            lse.fill_(NAN)
            graph.replay()
            torch.cuda.synchronize()
            compare(self, f"prepared graph replay {i}", o, lse, ref_o,
                    ref_lse, torch.bfloat16)

    def test_refused_by_name(self):
        dev = torch.device("cuda")
        gen = torch.Generator().manual_seed(8)
        table, num_pages = page_table(gen, [100, 5], 64)
        k_cache, v_cache, _, _ = fill_paged(gen, table, [100, 5], num_pages,
                                            64, 2, 128, torch.bfloat16)
        q = queries(gen, 2, 8, 1, 128, torch.bfloat16).to(dev)
        k_cache, v_cache, table = (t.to(dev) for t in (k_cache, v_cache,
                                                       table))
        lens = torch.tensor([100, 5], dtype=torch.int32, device=dev)
        contiguous = torch.zeros(2, 300, 2, 128, dtype=torch.bfloat16,
                                 device=dev)
        cases = [
            (dict(page_table=table[:1]), "page_table is int32 [1, 3]; the "
             "kernel needs int32 [B=2, max_pages]"),
            (dict(cache_seqlens=lens.to(torch.int64)),
             "cache_seqlens has dtype torch.int64"),
            (dict(cache_seqlens=None), "cache_seqlens is None"),
            (dict(num_splits=0), "num_splits must be an int >= 1"),
            (dict(k_cache=contiguous, v_cache=contiguous, page_table=None,
                  cache_seqlens=torch.tensor([300, 7], dtype=torch.int32)),
             "a contiguous cache (no page_table) is read whole"),
            (dict(k_cache=contiguous[:1], v_cache=contiguous[:1],
                  page_table=None, cache_seqlens=None),
             "without a page_table flashc takes a contiguous cache"),
        ]
        for change, message in cases:
            args = dict(q=q, k_cache=k_cache, v_cache=v_cache,
                        cache_seqlens=lens, page_table=table)
            args.update(change)
            with self.assertRaises(flashc.FlashcError) as e:
                flashc.attention_with_kvcache(**args, causal=True)
            self.assertIn(message, str(e.exception))


# --- without a GPU -------------------------------------------------------------

def decoding_metadata(page_size, pack_gqa):
    """A decoding kernel.json as flashc writes it (docs/kernel-metadata.md):
    bf16 D = 128, the split launch's maps, table, lengths and workspaces,
    the combine launch's outputs."""
    def tma(tensor, rows):
        p = {"kind": "tma", "tensor": tensor, "box": [rows, 64],
             "swizzle": 128, "rank": 4}
        if pack_gqa and tensor == "q":
            p["view"] = "group_rows"
        return p
    # Pages smaller than the key tile: one box of a page's rows each.
    kv_rows = min(page_size, 128) if page_size else 128
    split = [tma("q", 64), tma("k", kv_rows), tma("v", kv_rows),
             {"kind": "workspace", "name": "partial_out"},
             {"kind": "workspace", "name": "partial_lse"}]
    if page_size:
        split += [{"kind": "ptr", "tensor": "page_table"},
                  {"kind": "ptr", "tensor": "cache_seqlens"}]
    split += [{"kind": "i32", "value": v} for v in ("seq_q", "seq_k")]
    split += [{"kind": "f32", "value": "scale_log2"}]
    split += [{"kind": "i32", "value": v} for v in
              ("kv_group", "heads", "num_pages", "page_table_cols")]
    combine = [{"kind": "workspace", "name": "partial_out"},
               {"kind": "workspace", "name": "partial_lse"},
               {"kind": "ptr", "tensor": "o"}, {"kind": "ptr", "tensor": "lse"}]
    combine += [{"kind": "i32", "value": v}
                for v in ("seq_q", "kv_group", "heads", "num_splits")]
    combine += [{"kind": "i64", "value": f"stride_o_{x}"} for x in "bhn"]

    def grid(splits):
        return {"kind": "decode", "block_m": 64, "splits": splits}
    return {
        "format": "flashc-kernel", "format_version": 1,
        "kernel": "attention_decode", "binary": "attention_decode.cubin",
        "binary_format": "cubin", "arch": "sm_90a", "dtype": "bf16",
        "head_dim": 128, "causal": True, "scale": 128 ** -0.5,
        "has_lse": True, "block": [384, 1, 1], "shared_memory_bytes": 90000,
        "grid": grid(True), "params": split,
        "config": {"block_m": 64, "block_n": 128, "stages": 2},
        "pass": "decode", "pack_gqa": pack_gqa, "page_size": page_size,
        "launches": [
            {"role": "split", "kernel": "attention_decode",
             "block": [384, 1, 1], "shared_memory_bytes": 90000,
             "grid": grid(True), "params": split},
            {"role": "combine", "kernel": "attention_decode_combine",
             "programmatic": True,
             "block": [128, 1, 1], "shared_memory_bytes": 0,
             "grid": grid(False), "params": combine}]}


class DecodeStructTest(unittest.TestCase):
    """flashc._DecodeArgs against flashrt_validate_decode (no driver)."""

    def setUp(self):
        try:
            self.lib = flashc.runtime_library()
        except flashc.FlashcError as e:
            self.skipTest(f"no libflashrt: {e}")
        self.tmp = tempfile.mkdtemp(prefix="flashc-decode-")

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def validate(self, meta, parts, num_splits=0):
        path = os.path.join(self.tmp, "kernel.json")
        with open(path, "w") as f:
            json.dump(meta, f)
        args = flashc._DecodeArgs(*(
            None if parts.get(n) is None else ctypes.pointer(parts[n])
            for n in ("q", "k_cache", "v_cache", "o", "lse", "page_table",
                      "cache_seqlens")))
        args.num_splits = num_splits
        flashc._check(self.lib.flashrt_validate_decode(
            path.encode(), ctypes.byref(args), None))

    @staticmethod
    def tensor(dtype, sizes, strides, address=1 << 20):
        return flashc._Tensor(address, dtype, len(sizes),
                              flashc._I64x4(*sizes), flashc._I64x4(*strides),
                              0)

    def test_fields_reach_the_runtime(self):
        B, H, HKV, SQ, D, P, PAGES, COLS = 3, 32, 8, 1, 128, 64, 40, 7
        bf16, f32, i32 = (flashc._DTYPE_BF16, flashc._DTYPE_F32,
                          flashc._DTYPE_I32)
        # vLLM's pages as the kernel's [num_pages, H_kv, P, D] view.
        pages = self.tensor(bf16, (PAGES, HKV, P, D),
                            (P * HKV * D, D, HKV * D, 1))

        def parts(**change):
            p = dict(q=self.tensor(bf16, (B, H, SQ, D),
                                   (H * SQ * D, SQ * D, D, 1)),
                     k_cache=pages, v_cache=pages,
                     o=self.tensor(bf16, (B, H, SQ, D),
                                   (H * SQ * D, SQ * D, D, 1)),
                     lse=self.tensor(f32, (B, H, SQ), (H * SQ, SQ, 1)),
                     page_table=self.tensor(i32, (B, COLS), (COLS, 1)),
                     cache_seqlens=self.tensor(i32, (B,), (1,)))
            p.update(change)
            return p
        meta = decoding_metadata(P, True)
        self.validate(meta, parts())
        self.validate(meta, parts(), num_splits=5)
        cases = [
            ("page_table is int32 [2, 7]; the kernel needs int32 [B=3, "
             "max_pages]",
             dict(page_table=self.tensor(i32, (2, COLS), (COLS, 1))), 0),
            ("cache_seqlens is float32 [3]",
             dict(cache_seqlens=self.tensor(f32, (B,), (1,))), 0),
            ("page_table is missing", dict(page_table=None), 0),
            ("k_cache is [40, 8, 32, 128]; kernel attention_decode reads "
             "pages of 64 rows",
             dict(k_cache=self.tensor(bf16, (PAGES, HKV, 32, D),
                                      (32 * HKV * D, D, HKV * D, 1))), 0),
            ("v_cache has shape", dict(v_cache=self.tensor(
                bf16, (PAGES - 1, HKV, P, D), (P * HKV * D, D, HKV * D, 1))),
             0),
            ("lse is missing", dict(lse=None), 0),
            ("num_splits = -1", {}, -1),
        ]
        for message, change, splits in cases:
            with self.assertRaises(flashc.FlashcError) as e:
                self.validate(meta, parts(**change), num_splits=splits)
            self.assertIn(message, str(e.exception))
            self.assertEqual(e.exception.status, 4)
        # Pages of 16 under key tiles of 128: K and V's boxes of 16 rows.
        small = self.tensor(bf16, (PAGES, HKV, 16, D),
                            (16 * HKV * D, D, HKV * D, 1))
        self.validate(decoding_metadata(16, True),
                      parts(k_cache=small, v_cache=small), num_splits=3)
        # A contiguous kernel: [B, H_kv, Nk, D] views, no table.
        flat = self.tensor(bf16, (B, HKV, 3000, D),
                           (3000 * HKV * D, D, HKV * D, 1))
        meta = decoding_metadata(0, False)
        self.validate(meta, parts(k_cache=flat, v_cache=flat, page_table=None,
                                  cache_seqlens=None))
        with self.assertRaises(flashc.FlashcError) as e:
            self.validate(meta, parts(k_cache=flat, v_cache=flat))
        self.assertIn("page_table was given but kernel attention_decode reads "
                      "a contiguous cache", str(e.exception))
        # The dense entry point refuses a decoding kernel by name.
        path = os.path.join(self.tmp, "kernel.json")
        p = parts()
        with self.assertRaises(flashc.FlashcError) as e:
            flashc._check(self.lib.flashrt_validate(
                path.encode(), *(ctypes.pointer(p[n]) for n in (
                    "q", "k_cache", "v_cache", "o", "lse"))))
        self.assertIn("flashrt_launch_decode", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)

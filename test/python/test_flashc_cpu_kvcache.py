#!/usr/bin/env python3
"""Decoding over a paged K/V cache on the CPU path, without torch:
flashc.cpu.attention_with_kvcache on numpy arrays compiles the decoding
variant (paged, split-KV, GQA packing) with the real flashc (--target=cpu)
on first use and runs it. The cache is vLLM's num_pages x page_size x H_kv
x D pages, each batch's pages shuffled through it and every slot no batch
owns poisoned with NaN; outputs are poisoned too. O and LSE are compared
with a float64 reference over each batch's keys gathered in order, the
step's queries at the cache's end: 1 to 8 new tokens, caches of 1 to 3000
keys that are no multiple of the page, pages of 16, 32, 64 and 256, GQA
(8/2, 4/1), 1 to 64 splits, pack_gqa, rows with logits near 1e3, rows the
causal mask hides entirely (a cache shorter than the step: O = 0, LSE =
-inf), a window counted from each query's position and a sink. Then the
arguments refused by name.

The compiler is $FLASHC_COMPILER (ctest passes this build's flashc), else
build/bin/flashc of this checkout. Exits 77 (ctest: skipped) with a
"skipped: ..." line where numpy or the compiler is missing.
"""
import os
import sys
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
from flashc import FlashcError, cpu  # noqa: E402


def to_bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even (no NaNs here)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def encode(x, dtype):
    return to_bf16_bits(x) if dtype == "bf16" else x.astype(np.float16)


def decode(x, dtype):
    return (from_bf16_bits(x) if dtype == "bf16" else x.astype(np.float32)
            ).astype(np.float64)


def paged_cache(rng, lens, page_size, kv_heads, d, dtype):
    """(k_cache, v_cache, page_table, keys, values): each batch's pages
    shuffled among three spare ones, NaN in every slot past its length and
    in the spares; keys[b] / values[b] its float64 kv_heads x len x D."""
    pages_of = [(n + page_size - 1) // page_size for n in lens]
    max_pages = max(max(pages_of), 1) + 1
    num_pages = sum(pages_of) + 3
    order = rng.permutation(num_pages)
    nan = np.float32(np.nan)
    shape = (num_pages, page_size, kv_heads, d)
    caches = [np.full(shape, nan, dtype=np.float32) for _ in range(2)]
    # Past a batch's pages the table names no page of the cache: the
    # length bounds what the kernel reads.
    table = np.full((len(lens), max_pages), 1 << 30, dtype=np.int32)
    keys, values, used = [], [], 0
    for b, n in enumerate(lens):
        table[b, :pages_of[b]] = order[used:used + pages_of[b]]
        used += pages_of[b]
        kv = [rng.uniform(-1, 1, (n, kv_heads, d)).astype(np.float32)
              for _ in range(2)]
        for j in range(n):
            page, row = table[b, j // page_size], j % page_size
            for cache, x in zip(caches, kv):
                cache[page, row] = x[j]
        keys.append(kv[0])
        values.append(kv[1])
    k_cache, v_cache = (encode(c, dtype) for c in caches)
    # The references read the rounded values.
    keys = [decode(encode(x, dtype), dtype).transpose(1, 0, 2) for x in keys]
    values = [decode(encode(x, dtype), dtype).transpose(1, 0, 2)
              for x in values]
    return k_cache, v_cache, table, keys, values


def reference(q, keys, values, lens, causal, scale, window=None, sinks=None,
              softcap=None, chunk=None):
    """float64 (O, LSE) of each batch's queries over its cached keys: query
    i at position i + len - Sq (causal: it sees keys up to there), the
    window counted from position max(len - Sq, 0) + i; a sink joins each
    row's denominator. A row that sees no key: O = 0, LSE = -inf (the
    sink with one)."""
    b, h, nq, d = q.shape
    o = np.zeros(q.shape)
    lse = np.full((b, h, nq), -np.inf)
    for bi, n in enumerate(lens):
        group = h // keys[bi].shape[0]
        k = np.repeat(keys[bi], group, axis=0)
        v = np.repeat(values[bi], group, axis=0)
        s = np.einsum("hid,hjd->hij", q[bi], k) * scale
        if softcap is not None:
            s = softcap * np.tanh(s / softcap)
        i = np.arange(nq)[:, None]
        j = np.arange(n)[None, :]
        if chunk is not None:
            s = np.where((i + max(n - nq, 0)) // chunk != j // chunk,
                         -np.inf, s)
        if causal:
            s = np.where(j > i + n - nq, -np.inf, s)
        if window is not None:
            s = np.where(j + window < i + max(n - nq, 0), -np.inf, s)
        if sinks is not None:
            s = np.concatenate(
                [s, np.broadcast_to(sinks[:, None, None], (h, nq, 1))], -1)
            v = np.concatenate([v, np.zeros((h, 1, d))], 1)
        m = s.max(axis=-1, keepdims=True) if s.shape[-1] else \
            np.full((h, nq, 1), -np.inf)
        seen = np.isfinite(m)
        m0 = np.where(seen, m, 0.0)
        p = np.where(seen, np.exp(s - m0), 0.0)
        total = p.sum(-1, keepdims=True)
        o[bi] = np.where(seen, p / np.where(seen, total, 1.0), 0.0) @ v
        lse[bi] = np.where(seen, m0 + np.log(np.where(seen, total, 1.0)),
                           -np.inf)[..., 0]
    return o, lse


class FreshCache(FreshCacheTest):
    compiler = COMPILER


class KvCacheTest(FreshCache):
    def run_case(self, what, dtype, d, heads, kv_heads, nq, page_size, lens,
                 causal, seed, hot=False, window=None, sinks=None,
                 softcap=None, chunk=None, configs=((1, False),)):
        rng = np.random.default_rng(seed)
        q = rng.uniform(-1, 1, (len(lens), heads, nq, d)).astype(np.float32)
        if hot:
            # q . k about sqrt(D / 9) times 3000: logits near 1e3.
            q[:, :, ::2] *= 3000.0 * d ** -0.5
        q_bits = encode(q, dtype)
        k_cache, v_cache, table, keys, values = paged_cache(
            rng, lens, page_size, kv_heads, d, dtype)
        scale = d ** -0.5
        ref_o, ref_lse = reference(decode(q_bits, dtype), keys, values, lens,
                                   causal, scale, window, sinks, softcap,
                                   chunk)
        hidden = ~np.isfinite(ref_lse) if sinks is None else np.zeros(
            ref_lse.shape, dtype=bool)
        if sinks is not None:
            for bi, n in enumerate(lens):
                for i in range(nq):
                    if n == 0 or (causal and i < nq - n):
                        hidden[bi, :, i] = True
        for splits, pack in configs:
            name = f"{what} splits={splits} pack_gqa={pack}"
            out = np.full(q_bits.shape, 0x7FC0 if dtype == "bf16" else np.nan,
                          dtype=q_bits.dtype)
            o, lse = cpu.attention_with_kvcache(
                q_bits, k_cache, v_cache, np.array(lens, dtype=np.int32),
                table, causal=causal, num_splits=splits, pack_gqa=pack,
                window=window, sinks=sinks, softcap=softcap,
                chunk_size=chunk, out=out, return_lse=True)
            self.assertIs(o, out)
            got = decode(o, dtype)
            self.assertFalse(np.isnan(got).any(), name)
            self.assertFalse(np.isnan(lse).any(), name)
            self.assertTrue(np.all(got[hidden] == 0), name)
            if sinks is None:
                self.assertTrue(np.all(lse[hidden] == -np.inf), name)
            else:
                want = np.broadcast_to(sinks[None, :, None],
                                       lse.shape)[hidden]
                self.assertTrue(np.allclose(lse[hidden], want, atol=1e-6),
                                name)
            seen = ~hidden
            err = (np.linalg.norm(got[seen] - ref_o[seen])
                   / np.linalg.norm(ref_o[seen]))
            lse_err = (np.linalg.norm(lse[seen] - ref_lse[seen])
                       / np.linalg.norm(ref_lse[seen]))
            print(f"[ numerics ] {name}: rel err O {err:.2e}, LSE "
                  f"{lse_err:.2e}, rows that see no key {int(hidden.sum())}")
            self.assertLess(err, 1e-2 if dtype == "bf16" else 5e-3, name)
            self.assertLess(lse_err, 1e-5, name)

    def test_gqa_page16(self):
        # One new token, 8 query heads over 2 K/V heads, pages of 16:
        # caches of 1, 37 and 300 keys; plain, split in 4 and 64 (more
        # splits than key tiles), and packed.
        self.run_case("bf16 D64 8/2 page16", "bf16", 64, 8, 2, 1, 16,
                      [1, 37, 300], True, 1,
                      configs=((1, False), (4, False), (64, False),
                               (1, True), (4, True), (4, None)))

    def test_speculative_step_hot_rows(self):
        # Four new tokens against caches of 3 (its first row sees no key)
        # and 1000, pages of 64, 4 query heads on one K/V head, logits
        # near 1e3, 8 splits and packed.
        self.run_case("f16 D128 4/1 page64 qlen4", "f16", 128, 4, 1, 4, 64,
                      [3, 1000], True, 2, hot=True,
                      configs=((8, False), (8, True)))

    def test_window_and_sink(self):
        # A window of 50 keys behind each query's position and per-head
        # sinks (added once, after the splits are combined), pages of 32.
        sinks = np.array([-2.0, 0.5, 3.0, 1.0], dtype=np.float32)
        self.run_case("bf16 D64 window50 sink page32", "bf16", 64, 4, 2, 3,
                      32, [700, 2], True, 3, window=50, sinks=sinks,
                      configs=((1, False), (3, False), (3, True), (3, None)))

    def test_sink_packed(self):
        # Sinks with GQA packing: each grouped row takes its own head's sink
        # (the default packs here); a cache of 2 leaves a row without a key.
        sinks = np.array([-1.0, 2.5, 0.0, 4.0, -3.0, 1.5, 0.5, 2.0],
                         dtype=np.float32)
        self.run_case("bf16 D64 8/2 sink packed page16", "bf16", 64, 8, 2, 3,
                      16, [500, 2], True, 8, hot=True, sinks=sinks,
                      configs=((1, True), (4, True), (4, None)))

    def test_pack_gqa_default(self):
        # The default packs a K/V head's query heads:
        # the same kernel as pack_gqa=True, so the same bits.
        rng = np.random.default_rng(7)
        k_cache, v_cache, table, _, _ = paged_cache(rng, [40, 3], 16, 2, 64,
                                                    "bf16")
        q = to_bf16_bits(rng.uniform(-1, 1, (2, 8, 2, 64)))
        lens = np.array([40, 3], dtype=np.int32)
        results = [cpu.attention_with_kvcache(
            q, k_cache, v_cache, lens, table, causal=True, num_splits=2,
            pack_gqa=pack, return_lse=True) for pack in (None, True)]
        for a, b in zip(*results):
            self.assertTrue(np.array_equal(a, b))

    def test_softcap_chunk_packed(self):
        # Soft-capping and chunks of 100 positions counted from each query's
        # place in the cache, packed: the mods see each grouped row's own
        # head and query.
        self.run_case("f16 D64 8/2 softcap chunk packed page16", "f16", 64, 8,
                      2, 4, 16, [450, 3], True, 9, hot=True, softcap=20.0,
                      chunk=100, configs=((1, False), (2, True)))

    def test_page256_noncausal(self):
        # 3000 keys (no multiple of 256) in pages of 256 without causal,
        # split in 64.
        self.run_case("bf16 D64 page256 noncausal", "bf16", 64, 2, 2, 2, 256,
                      [3000], False, 4, configs=((64, False),))

    def test_refused_by_name(self):
        rng = np.random.default_rng(5)
        q = to_bf16_bits(rng.uniform(-1, 1, (2, 4, 1, 64)))
        k_cache, v_cache, table, _, _ = paged_cache(rng, [5, 9], 16, 2, 64,
                                                    "bf16")
        lens = np.array([5, 9], dtype=np.int32)
        cases = [
            (dict(cache_seqlens=lens.astype(np.int64)), "cache_seqlens is int64"),
            (dict(page_table=table[:1]), "page_table is (1,"),
            (dict(cache_seqlens=lens[:1]), "cache_seqlens is (1,)"),
            (dict(k_cache=k_cache[:, :, :1]), "k_cache is"),
            (dict(num_splits=0), "num_splits must be an int >= 1"),
            (dict(k_cache=k_cache[:, :8], v_cache=v_cache[:, :8]),
             "page_size must be a multiple of 16"),
        ]
        for change, message in cases:
            args = dict(q=q, k_cache=k_cache, v_cache=v_cache,
                        cache_seqlens=lens, page_table=table)
            args.update(change)
            with self.assertRaises(FlashcError) as e:
                cpu.attention_with_kvcache(**args)
            self.assertIn(message, str(e.exception))


try:
    import torch
except ImportError:
    torch = None


@unittest.skipUnless(torch is not None, "no PyTorch")
class TorchKvCacheTest(FreshCache):
    """flashc.attention_with_kvcache on torch CPU tensors: the same CPU
    path through numpy views (CUDA tensors: test_flashc_kvcache.py)."""

    def test_torch_cpu_tensors(self):
        import flashc
        rng = np.random.default_rng(6)
        lens = [37, 5]
        k_cache, v_cache, table, keys, values = paged_cache(
            rng, lens, 16, 2, 64, "bf16")
        q = to_bf16_bits(rng.uniform(-1, 1, (2, 8, 2, 64)))
        ref_o, ref_lse = reference(decode(q, "bf16"), keys, values, lens,
                                   True, 64 ** -0.5)
        as_bf16 = (lambda a: torch.from_numpy(a.view(np.int16))
                   .view(torch.bfloat16))
        out = torch.full((2, 8, 2, 64), float("nan"), dtype=torch.bfloat16)
        o, lse = flashc.attention_with_kvcache(
            as_bf16(q), as_bf16(k_cache), as_bf16(v_cache),
            torch.tensor(lens, dtype=torch.int32), torch.from_numpy(table),
            causal=True, num_splits=3, pack_gqa=True, out=out,
            return_lse=True)
        self.assertIs(o, out)
        err = ((o.double() - torch.from_numpy(ref_o)).norm()
               / np.linalg.norm(ref_o)).item()
        print(f"[ numerics ] torch bf16 8/2 page16 splits=3 pack_gqa: rel "
              f"err O {err:.2e}")
        self.assertLess(err, 1e-2)
        self.assertTrue(np.allclose(lse.numpy(), ref_lse, rtol=1e-5))
        with self.assertRaises(flashc.FlashcError) as e:
            flashc.attention_with_kvcache(
                as_bf16(q).to("meta"), as_bf16(k_cache), as_bf16(v_cache),
                torch.tensor(lens, dtype=torch.int32),
                torch.from_numpy(table))
        self.assertIn("q is on meta; flashc takes CUDA tensors (the GPU "
                      "kernel) or CPU tensors", str(e.exception))
        # A wrong out is refused by name and left as it was.
        bad = torch.full((2, 8, 2, 32), 7.0, dtype=torch.bfloat16)
        with self.assertRaises(flashc.FlashcError) as e:
            flashc.attention_with_kvcache(
                as_bf16(q), as_bf16(k_cache), as_bf16(v_cache),
                torch.tensor(lens, dtype=torch.int32),
                torch.from_numpy(table), out=bad)
        self.assertIn("out must be a torch.bfloat16 tensor of shape "
                      "(2, 8, 2, 64)", str(e.exception))
        self.assertTrue(bool((bad == 7.0).all()))
        # The CPU path reads a paged cache; a contiguous one runs on CUDA.
        with self.assertRaises(flashc.FlashcError) as e:
            flashc.attention_with_kvcache(
                as_bf16(q), as_bf16(k_cache), as_bf16(v_cache), None, None)
        self.assertIn("page_table is None: the CPU path reads a paged cache",
                      str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)

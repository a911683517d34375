"""flashc.document_key_ranges (the block mask of document masking) against
the ranges read off the dense mask, for contiguous documents and arbitrary
ids, causal or not, seq_q != seq_k, rows that see no key. Exits 77 (ctest:
skipped) where PyTorch is not installed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))

try:
    import torch
except ImportError:
    print("skipped: no PyTorch")
    sys.exit(77)

import flashc  # noqa: E402


def dense_ranges(ids, rows, causal, nq, nk, full=False):
    """[lo, hi) per block from the dense mask, [nk, 0) where it is empty;
    with `full` also the keys every row keeps under the ids alone, [0, 0)
    where those are not one run."""
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    out = []
    for b in range(ids.shape[0]):
        seen = ids[b, :nq, None] == ids[b, None, :nk]
        if causal:
            seen &= j <= i + nk - nq
        same = ids[b, :nq, None] == ids[b, None, :nk]
        blocks = []
        for start in range(0, nq, rows):
            keys = seen[start:start + rows].any(0).nonzero()
            entry = ([int(keys.min()), int(keys.max()) + 1] if len(keys)
                     else [nk, 0])
            if full:
                kept = same[start:start + rows].all(0).nonzero()
                run = (len(kept) and int(kept.max()) - int(kept.min()) + 1
                       == len(kept))
                entry += ([int(kept.min()), int(kept.max()) + 1] if run
                          else [0, 0])
            blocks.append(entry)
        out.append(blocks)
    return torch.tensor(out, dtype=torch.int32)


class DocumentKeyRanges(unittest.TestCase):
    def check(self, ids, rows, causal, nq, nk):
        for full in (False, True):
            got = flashc.document_key_ranges(ids, rows, causal=causal,
                                             seq_q=nq, seq_k=nk, full=full)
            self.assertEqual(got.dtype, torch.int32)
            want = dense_ranges(ids, rows, causal, nq, nk, full)
            self.assertTrue(torch.equal(got, want), (full, got, want))

    def test_contiguous_documents(self):
        gen = torch.Generator().manual_seed(1)
        ids = torch.cumsum((torch.rand(2, 300, generator=gen) < 0.02).long(),
                           1)
        self.check(ids, 128, True, 300, 300)
        # 700 queries over 300 keys: the first 400 rows see no key.
        ids = torch.cumsum((torch.rand(1, 700, generator=gen) < 0.02).long(),
                           1)
        self.check(ids, 64, True, 700, 300)

    def test_any_ids(self):
        gen = torch.Generator().manual_seed(2)
        ids = torch.randint(0, 5, (2, 500), generator=gen)
        self.check(ids, 128, False, 200, 500)
        self.check(ids, 100, True, 260, 100)
        # A document no key has.
        ids = torch.tensor([[0] * 50 + [7] * 50])
        self.check(ids, 32, False, 100, 50)

    def test_prefix_lm(self):
        # Query i sees key j iff j < prefix[b] or j <= i.
        for nq, nk, rows in ((300, 300, 128), (200, 500, 64), (500, 130, 100)):
            prefix = torch.tensor([0, 1, 77, nk])
            got = flashc.prefix_lm_key_ranges(prefix, nq, rows, seq_k=nk)
            i = torch.arange(nq)[:, None]
            j = torch.arange(nk)[None, :]
            want = []
            for p in prefix.tolist():
                seen = (j < p) | (j <= i)
                blocks = []
                for start in range(0, nq, rows):
                    block = seen[start:start + rows]
                    keys = block.any(0).nonzero()
                    kept = block.all(0).nonzero()
                    blocks.append(
                        ([int(keys.min()), int(keys.max()) + 1] if len(keys)
                         else [nk, 0]) +
                        ([int(kept.min()), int(kept.max()) + 1] if len(kept)
                         else [0, 0]))
                want.append(blocks)
            self.assertTrue(torch.equal(got, torch.tensor(want,
                                                          dtype=torch.int32)),
                            (nq, nk, rows))

    def test_bad_shapes(self):
        with self.assertRaises(ValueError):
            flashc.document_key_ranges(torch.zeros(10, dtype=torch.int32))
        with self.assertRaises(ValueError):
            flashc.document_key_ranges(torch.zeros(1, 10, dtype=torch.int32),
                                       seq_q=11)


if __name__ == "__main__":
    unittest.main()

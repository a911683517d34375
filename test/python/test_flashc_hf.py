#!/usr/bin/env python3
"""CPU tests of flashc.hf, flashc as a transformers attention implementation:
a small random Llama (grouped K/V heads) gives the same logits through
flashc.hf as through SDPA, for a whole sequence, a prefill then decode
steps with a KV cache, and an all-ones padding mask; a real padding mask is
refused by name. No GPU: flashc.attention is replaced by a float64 stand-in
with flashc's bottom-right causal alignment, so what is tested is the
plumbing (layouts, grouped heads, which mask reaches the kernel). Exits 77
(ctest: skipped) where PyTorch or transformers is not installed.
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
    import torch.nn.functional as F
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as e:
    print(f"skipped: {e.name} is not installed (flashc.hf needs torch and "
          "transformers)")
    sys.exit(77)

import flashc  # noqa: E402
import flashc.hf  # noqa: E402


def stand_in(q, k, v, *, causal=False, scale=None, return_lse=False,
             out=None):
    """flashc.attention's contract in float64: B x H x N x D in, causal
    aligned to the bottom-right corner."""
    assert q.is_contiguous() and k.is_contiguous() and v.is_contiguous()
    assert q.shape[1] == k.shape[1], "grouped heads must reach it repeated"
    nq, nk = q.shape[2], k.shape[2]
    mask = None
    if causal:
        rows = torch.arange(nq)[:, None] + (nk - nq)
        mask = torch.arange(nk)[None, :] <= rows
    o = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                       attn_mask=mask, scale=scale)
    return o.to(q.dtype)


class HfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = flashc.attention
        flashc.attention = stand_in
        cls.name = flashc.hf.register()
        config = LlamaConfig(hidden_size=256, intermediate_size=512,
                             num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=1000,
                             head_dim=64)
        torch.manual_seed(0)
        cls.model = LlamaForCausalLM(config).double().eval()
        cls.ids = torch.randint(0, 1000, (2, 37))
        with torch.no_grad():
            cls.model.set_attn_implementation("sdpa")
            cls.ref = cls.model(cls.ids).logits
            cls.model.set_attn_implementation(cls.name)

    @classmethod
    def tearDownClass(cls):
        flashc.attention = cls.saved

    def close(self, got, want):
        self.assertLess((got - want).abs().max().item(), 1e-9)

    def test_name_avoids_flash(self):
        # transformers looks any "flash..." name up on its kernel hub.
        self.assertNotIn("flash", self.name)

    @torch.no_grad()
    def test_whole_sequence(self):
        self.close(self.model(self.ids).logits, self.ref)

    @torch.no_grad()
    def test_prefill_then_decode(self):
        for split in (30, 36):
            out = self.model(self.ids[:, :split], use_cache=True)
            nxt = self.model(self.ids[:, split:],
                             past_key_values=out.past_key_values).logits
            self.close(nxt, self.ref[:, split:])

    @torch.no_grad()
    def test_padding_mask_without_padding(self):
        ones = torch.ones_like(self.ids)
        self.close(self.model(self.ids, attention_mask=ones).logits, self.ref)

    @torch.no_grad()
    def test_padding_is_refused(self):
        padded = torch.ones_like(self.ids)
        padded[0, :3] = 0
        with self.assertRaises(flashc.FlashcError) as cm:
            self.model(self.ids, attention_mask=padded)
        self.assertIn("attention mask", str(cm.exception))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""CPU tests of flashc.hf, flashc as a transformers attention implementation:
a small random Llama (grouped K/V heads) gives the same logits through
flashc.hf as through SDPA, for a whole sequence, a prefill then decode
steps with a KV cache, and an all-ones padding mask; a real padding mask is
refused by name. A small random Llama 4 (attention_chunk_size 16, one
chunked layer and one full one) gives SDPA's logits with its chunked mask
over 40 tokens: the chunked layer gets chunk_size=16, the full one none;
decode steps within one chunk match too, and a KV cache past the first
chunk is refused by name. No GPU: flashc.attention is replaced by a
float64 stand-in with flashc's bottom-right causal alignment and its
chunks (counted from the first query and key), so what is tested is the
plumbing (layouts, grouped heads, which mask and chunk size reach the
kernel). Exits 77 (ctest: skipped) where PyTorch or transformers is not
installed.
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
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    from transformers import masking_utils
except ImportError as e:
    print(f"skipped: {e.name} is not installed (flashc.hf needs torch and "
          "transformers)")
    sys.exit(77)

import flashc  # noqa: E402
import flashc.hf  # noqa: E402


# What each stand_in call received: heads of q and K/V, lengths, causal,
# chunk_size.
calls = []


def stand_in(q, k, v, *, causal=False, scale=None, return_lse=False,
             out=None, chunk_size=None):
    """flashc.attention's contract in float64: B x H x N x D in (views of
    any strides; K/V with fewer heads, H a multiple of theirs, as they
    are), causal aligned to the bottom-right corner, chunk_size's chunks
    counted from the first query and the first key (q_idx // C == kv_idx //
    C)."""
    assert q.dim() == k.dim() == v.dim() == 4
    assert q.shape[1] % k.shape[1] == 0, "query heads: a multiple of K/V's"
    nq, nk = q.shape[2], k.shape[2]
    calls.append(dict(heads=q.shape[1], kv_heads=k.shape[1], seq_q=nq,
                      seq_k=nk, causal=causal, chunk_size=chunk_size))
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    mask = torch.ones(nq, nk, dtype=torch.bool)
    if causal:
        mask &= j <= i + (nk - nq)
    if chunk_size is not None:
        mask &= i // chunk_size == j // chunk_size
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, 1) for t in (k, v))
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
        calls.clear()
        self.close(self.model(self.ids).logits, self.ref)
        # Grouped K/V heads reach the kernel as they are; no chunks.
        self.assertEqual([(c["heads"], c["kv_heads"], c["chunk_size"])
                          for c in calls], [(4, 2, None)] * 2)

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


class HfChunkedTest(unittest.TestCase):
    """Llama 4's chunked attention: attention_chunk_size 16, layer 0
    chunked (it uses RoPE: no_rope_layers[0] = 1) and layer 1 full, over 40
    tokens (chunks [0, 16), [16, 32), [32, 40))."""
    CHUNK = 16

    @classmethod
    def setUpClass(cls):
        cls.saved = flashc.attention
        flashc.attention = stand_in
        cls.name = flashc.hf.register()
        config = Llama4TextConfig(
            hidden_size=128, intermediate_size=256, intermediate_size_mlp=256,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32, vocab_size=1000, num_local_experts=2,
            num_experts_per_tok=1, moe_layers=[],
            attention_chunk_size=cls.CHUNK, no_rope_layers=[1, 0])
        assert config.layer_types == ["chunked_attention", "full_attention"]
        torch.manual_seed(0)
        cls.model = Llama4ForCausalLM(config).double().eval()
        cls.ids = torch.randint(0, 1000, (2, 40))
        with torch.no_grad():
            cls.model.set_attn_implementation("sdpa")
            cls.ref = cls.model(cls.ids).logits
            cls.model.set_attn_implementation(cls.name)

    @classmethod
    def tearDownClass(cls):
        flashc.attention = cls.saved

    def close(self, got, want):
        self.assertLess((got - want).abs().max().item(), 1e-9)

    def layers(self):
        return [layer.self_attn for layer in self.model.model.layers]

    def test_layer_chunk_size(self):
        chunked, full = self.layers()
        self.assertEqual(flashc.hf.layer_chunk_size(chunked), self.CHUNK)
        self.assertIsNone(flashc.hf.layer_chunk_size(full))

    @torch.no_grad()
    def test_chunked_layer_matches_sdpa(self):
        """One layer: attention_forward on the chunked layer against SDPA
        with transformers' chunked causal mask, and the full layer against
        SDPA's causal mask; the mask function lets transformers skip the
        chunked mask (None) over these 40 positions from 0."""
        chunked, full = self.layers()
        g = torch.Generator().manual_seed(1)
        q = torch.randn(2, 40, 4, 32, generator=g,
                        dtype=torch.float64).transpose(1, 2)
        k, v = (torch.randn(2, 40, 2, 32, generator=g,
                            dtype=torch.float64).transpose(1, 2)
                for _ in range(2))
        mask_function = masking_utils.chunked_causal_mask_function(
            self.CHUNK, torch.zeros(2, dtype=torch.long))
        dense = masking_utils.sdpa_mask(
            batch_size=2, q_length=40, kv_length=40,
            mask_function=mask_function, local_size=self.CHUNK)
        self.assertIsNotNone(dense)  # SDPA itself needs the dense mask
        self.assertIsNone(flashc.hf.mask(
            2, 40, 40, mask_function=mask_function, local_size=self.CHUNK))
        results = []
        for module, mask, chunk in ((chunked, dense, self.CHUNK),
                                    (full, None, None)):
            calls.clear()
            got, _ = flashc.hf.attention_forward(module, q, k, v, None,
                                                 scaling=32 ** -0.5)
            results.append(got)
            want = F.scaled_dot_product_attention(
                q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                attn_mask=mask, is_causal=mask is None, scale=32 ** -0.5)
            self.close(got, want.transpose(1, 2))
            self.assertEqual([(c["causal"], c["chunk_size"]) for c in calls],
                             [(True, chunk)])
        # The chunks matter here: without them the result is another.
        causal = F.scaled_dot_product_attention(
            q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
            is_causal=True, scale=32 ** -0.5)
        self.assertGreater(
            (results[0].transpose(1, 2) - causal).abs().max().item(), 1e-2)

    @torch.no_grad()
    def test_whole_sequence(self):
        calls.clear()
        self.close(self.model(self.ids).logits, self.ref)
        self.assertEqual([(c["seq_q"], c["seq_k"], c["chunk_size"])
                          for c in calls],
                         [(40, 40, self.CHUNK), (40, 40, None)])

    @torch.no_grad()
    def test_chunks_change_the_logits(self):
        """SDPA's logits with every layer full differ from the chunked
        ones (so matching them above tests the chunks)."""
        config = self.model.config
        saved = list(config.layer_types)
        try:
            config.layer_types = ["full_attention"] * len(saved)
            self.model.set_attn_implementation("sdpa")
            unchunked = self.model(self.ids).logits
        finally:
            config.layer_types = saved
            self.model.set_attn_implementation(self.name)
        self.assertGreater((unchunked - self.ref).abs().max().item(), 1e-3)

    @torch.no_grad()
    def test_decode_within_a_chunk(self):
        """A prefill from 0 (chunked), then decode steps whose keys all lie
        in the queries' chunk (the cache keeps the last 15 keys): 12 then
        13..15 in chunk 0, and 31 after a prefill of 31 (keys 16..31)."""
        for split, end in ((12, 16), (31, 32)):
            out = self.model(self.ids[:, :split], use_cache=True)
            self.close(out.logits, self.ref[:, :split])
            cache = out.past_key_values
            for t in range(split, end):
                step = self.model(self.ids[:, t:t + 1], past_key_values=cache,
                                  use_cache=True)
                self.close(step.logits, self.ref[:, t:t + 1])
                cache = step.past_key_values

    @torch.no_grad()
    def test_cache_past_the_first_chunk_is_refused(self):
        """Position 20's chunk starts at 16 but the cache's keys at 5: the
        dense mask, refused by name."""
        out = self.model(self.ids[:, :20], use_cache=True)
        with self.assertRaises(flashc.FlashcError) as cm:
            self.model(self.ids[:, 20:21], past_key_values=out.past_key_values)
        self.assertIn("chunked-attention layer", str(cm.exception))
        self.assertIn("attention_chunk_size=16", str(cm.exception))


if __name__ == "__main__":
    unittest.main()

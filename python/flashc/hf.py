"""flashc as an attention implementation of Hugging Face transformers.

One line registers it; models then take it by name::

    import flashc.hf
    flashc.hf.register()                       # name "flc"
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="flc")

(transformers takes any implementation name containing "flash" for a
FlashAttention build of its own and looks for it on its kernel hub, so the
name leaves that word out.)

transformers calls the registered function with query, key and value as
B x H x S x D (views of its B x S x H x D projections) and expects B x S x
H x D back. Grouped K/V heads (Llama 3, Qwen, Mistral) go to the kernel as
they are, without repeating them over their query heads, and so do the
B x H x S x D views (the kernels' tensor maps carry the strides; no copy).
Causal attention with a KV cache is right as it is: flashc aligns the
causal mask to the bottom-right corner, so the new queries see the cache.
What flashc cannot compute as the model asks (a padding or custom mask,
dropout) raises FlashcError naming it instead of computing something else.
"""

from . import FlashcError

__all__ = ["register", "attention_forward"]


def attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                      scaling=None, is_causal=None, **kwargs):
    """transformers' attention interface over flashc.attention."""
    from . import attention
    if attention_mask is not None:
        raise FlashcError(
            None, "flashc: transformers passed an attention mask (padding or "
            "a custom mask); flashc's kernels take no mask yet: call the "
            "model without padding, or use attn_implementation='sdpa'")
    if dropout:
        raise FlashcError(None, "flashc: attention dropout is not supported")
    if kwargs.get("output_attentions"):
        raise FlashcError(None, "flashc: output_attentions is not supported")
    # Grouped K/V heads (num_key_value_groups > 1) go to the kernel as they
    # are: it maps each query head to its K/V head, without copies.
    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)
    # One query (a decoding step) sees every key: no mask to apply.
    causal = bool(is_causal) and query.shape[2] > 1
    # The B x H x S x D views of transformers' B x S x H x D projections go
    # to the kernel as they are: its tensor maps carry their strides.
    out = attention(query, key, value, causal=causal, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0,
         mask_function=None, attention_mask=None, local_size=None,
         allow_is_causal_skip=True, **kwargs):
    """transformers' mask interface: no mask (None) where the plain causal
    mask without padding is meant, whatever the query and cache lengths:
    flashc's causal mask, aligned to the bottom-right corner, is then the
    mask of queries at the end of the cache. Otherwise SDPA's mask, which
    attention_forward refuses by name."""
    from transformers.masking_utils import (causal_mask_function,
                                            prepare_padding_mask, sdpa_mask)
    if mask_function is None:
        mask_function = causal_mask_function
    padding = prepare_padding_mask(attention_mask, kv_length, kv_offset)
    if (allow_is_causal_skip and mask_function is causal_mask_function
            and local_size is None
            and q_offset + q_length == kv_offset + kv_length
            and (padding is None or bool(padding.all()))):
        return None
    return sdpa_mask(batch_size, q_length, kv_length, q_offset=q_offset,
                     kv_offset=kv_offset, mask_function=mask_function,
                     attention_mask=attention_mask, local_size=local_size,
                     allow_is_causal_skip=allow_is_causal_skip, **kwargs)


def register(name="flc"):
    """Registers flashc with transformers' AttentionInterface and its mask
    function (mask above) with AttentionMaskInterface. Returns the name to
    pass as attn_implementation."""
    from transformers import AttentionInterface, AttentionMaskInterface
    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, mask)
    return name

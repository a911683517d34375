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

Chunked attention (Llama 4's `attention_chunk_size`: a query sees the keys
of its own chunk of that many positions, causally) goes to the kernel as
flashc.attention's chunk_size on the layers transformers gives the chunked
mask (config.layer_types "chunked_attention"; before layer_types, the RoPE
layers: no_rope_layers[layer_idx]). flashc counts chunks from the first
query and the first key (q_idx // C == kv_idx // C), so the mask function
below lets transformers skip the dense mask only where that is the
model's mask: queries and keys starting together at a chunk boundary (a
prefill from position 0), or all of them in one chunk (then the plain
causal mask over the keys given is the same). A KV cache past the first
chunk (decode steps whose keys start in an earlier chunk) gets the dense
mask, which attention_forward refuses by name.
"""

from . import FlashcError

__all__ = ["register", "attention_forward"]


def layer_chunk_size(module):
    """The chunk size of `module`'s chunked attention (Llama 4's
    config.attention_chunk_size on its chunked layers), else None. As
    transformers picks each layer's mask: config.layer_types[layer_idx] ==
    "chunked_attention"; without layer_types (older Llama 4 code), the
    layers that use RoPE (module.use_rope, or config.no_rope_layers[
    layer_idx] true) are the chunked ones; with neither, every layer of a
    config with attention_chunk_size is (as create_masks_for_generate
    assumes)."""
    config = getattr(module, "config", None)
    chunk = getattr(config, "attention_chunk_size", None)
    if chunk is None:
        return None
    index = getattr(module, "layer_idx", None)
    types = getattr(config, "layer_types", None)
    if types is not None and index is not None and 0 <= index < len(types):
        return chunk if types[index] == "chunked_attention" else None
    use_rope = getattr(module, "use_rope", None)
    rope_layers = getattr(config, "no_rope_layers", None)
    if (use_rope is None and rope_layers is not None and index is not None
            and 0 <= index < len(rope_layers)):
        use_rope = rope_layers[index]
    if use_rope is None:
        return chunk
    return chunk if use_rope else None


def _free_variable(function, name):
    """The value `function` closes over as `name`, else None."""
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None)
    if code is None or cells is None or name not in code.co_freevars:
        return None
    try:
        return cells[code.co_freevars.index(name)].cell_contents
    except ValueError:  # an empty cell
        return None


def _chunked_causal_size(mask_function):
    """C where mask_function is transformers' chunked causal mask
    (masking_utils.chunked_causal_mask_function(C, left_padding): the
    intersection of chunked_overlay(C, ...) and causal_mask_function,
    nothing else), else None."""
    from transformers.masking_utils import causal_mask_function
    parts = _free_variable(mask_function, "mask_functions")
    if (getattr(mask_function, "__qualname__", "") != "and_masks.<locals>."
            "and_mask" or not isinstance(parts, tuple) or len(parts) != 2
            or causal_mask_function not in parts):
        return None
    overlay = [f for f in parts if f is not causal_mask_function]
    if len(overlay) != 1 or not getattr(overlay[0], "__qualname__",
                                        "").startswith("chunked_overlay."):
        return None
    chunk = _free_variable(overlay[0], "chunk_size")
    return chunk if isinstance(chunk, int) and chunk >= 1 else None


def attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                      scaling=None, is_causal=None, **kwargs):
    """transformers' attention interface over flashc.attention."""
    from . import attention
    chunk = layer_chunk_size(module)
    if attention_mask is not None and chunk is not None:
        raise FlashcError(
            None, f"flashc: transformers passed a mask to a chunked-attention "
            f"layer (attention_chunk_size={chunk}): flashc counts chunks from "
            "the first query and key, so it takes the chunked mask where "
            "queries and keys start together at a chunk boundary (a prefill "
            "from position 0) or all lie in one chunk, without padding; "
            "for a KV cache past the first chunk or padding, use "
            "attn_implementation='sdpa'")
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
    # A chunked layer: mask() let transformers skip the mask only where
    # flashc's chunks (counted from the first query and key) are the
    # model's. With as many queries as keys they start together at a chunk
    # boundary; with fewer, all lie in one chunk and the plain causal mask
    # is the same.
    chunk_size = None
    if chunk is not None and query.shape[2] == key.shape[2] > 1:
        chunk_size = chunk
    # The B x H x S x D views of transformers' B x S x H x D projections go
    # to the kernel as they are: its tensor maps carry their strides.
    if chunk_size is None:
        out = attention(query, key, value, causal=causal, scale=scaling)
    else:
        out = attention(query, key, value, causal=causal, scale=scaling,
                        chunk_size=chunk_size)
    return out.transpose(1, 2).contiguous(), None


def mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0,
         mask_function=None, attention_mask=None, local_size=None,
         allow_is_causal_skip=True, **kwargs):
    """transformers' mask interface: no mask (None) where the plain causal
    mask without padding is meant, whatever the query and cache lengths:
    flashc's causal mask, aligned to the bottom-right corner, is then the
    mask of queries at the end of the cache. The same for the chunked
    causal mask (Llama 4) where flashc's chunks, counted from the first
    query and key, are the model's: queries and keys starting together at
    a chunk boundary, or all of them in one chunk (attention_forward passes
    chunk_size). Otherwise SDPA's mask, which attention_forward refuses by
    name."""
    from transformers.masking_utils import (causal_mask_function,
                                            prepare_padding_mask, sdpa_mask)
    if mask_function is None:
        mask_function = causal_mask_function
    padding = prepare_padding_mask(attention_mask, kv_length, kv_offset)
    if mask_function is causal_mask_function:
        flashc_has_it = local_size is None
    else:
        chunk = _chunked_causal_size(mask_function)
        flashc_has_it = (
            chunk is not None and local_size in (None, chunk)
            and ((q_offset == kv_offset and q_offset % chunk == 0)
                 or kv_offset // chunk == (q_offset + q_length - 1) // chunk))
    if (allow_is_causal_skip and flashc_has_it
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

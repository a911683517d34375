"""Block masks computed once per input, for the kernels whose mask_mod
depends on data (flash.attention's `key_ranges`): a range of keys per
block of query rows, outside which the mask hides every key, so that the
GPU kernel skips those key tiles (FlexAttention's BlockMask, as ranges)."""


def _per_block(x, rows, pad_value, reduce):
    """`reduce` (torch.amin or torch.amax) of x's [B, N] rows over blocks
    of `rows`, the last block padded with `pad_value`."""
    import torch
    batch, n = x.shape
    blocks = -(-n // rows)
    x = torch.nn.functional.pad(x, (0, blocks * rows - n), value=pad_value)
    return reduce(x.view(batch, blocks, rows), -1)


def document_key_ranges(document, rows=128, *, causal=True, seq_q=None,
                        seq_k=None, full=False):
    """The key_ranges table of document masking (query i sees key j iff
    document[b, i] == document[b, j], and with `causal` j <= i + seq_k -
    seq_q): an int32 [B, ceil(seq_q / rows), 2] tensor on document's
    device whose entry (b, blk) = [lo, hi) is the smallest range holding
    every key that rows [blk * rows, (blk + 1) * rows) see ([seq_k, 0)
    where they see none). `document` is B x N integer ids, N at least
    seq_q and seq_k (both default to N); any ids, not only contiguous
    documents (the range then spans from the first to the last key of the
    rows' documents they see).

    With `full`, each entry is [lo, hi, full_lo, full_hi]: the keys
    [full_lo, full_hi) every row of the block keeps under the document mask
    alone (causal aside), where the block's rows are of one document whose
    keys lie together ([0, 0) otherwise); the GPU kernel does not evaluate
    the mask_mod on those key tiles.
    kernels/attention_document.mlir takes it with rows = 128."""
    import torch
    ids = document.long()
    if ids.dim() != 2:
        raise ValueError(f"document must be B x N ids, got {tuple(ids.shape)}")
    batch, n = ids.shape
    nq = n if seq_q is None else int(seq_q)
    nk = n if seq_k is None else int(seq_k)
    if not (0 < nq <= n and 0 < nk <= n) or rows < 1:
        raise ValueError(f"seq_q = {nq} and seq_k = {nk} must be in [1, {n}]"
                         f" and rows = {rows} at least 1")
    # The keys sorted by (id, position) as one integer: a row's visible
    # keys are the run of its id, up to its causal bound.
    span = nk + 1
    position = torch.arange(nk, device=ids.device)
    keys = torch.sort(ids[:, :nk] * span + position, dim=1).values
    base = ids[:, :nq] * span
    bound = torch.full((nq,), nk - 1, device=ids.device)
    if causal:
        bound = torch.clamp(torch.arange(nq, device=ids.device) + nk - nq,
                            max=nk - 1)
    start = torch.searchsorted(keys, base.contiguous(), right=False)
    end = torch.searchsorted(keys, (base + bound[None, :]).contiguous(),
                             right=True) - 1
    first = torch.gather(keys, 1, start.clamp(max=nk - 1)) - base
    last = torch.gather(keys, 1, end.clamp(min=0)) - base
    seen = ((start < nk) & (end >= 0) & (first >= 0) & (last >= first)
            & (last <= bound[None, :]) & (bound[None, :] >= 0))
    lo = torch.where(seen, first, torch.full_like(first, nk))
    hi = torch.where(seen, last + 1, torch.zeros_like(last))
    if full:
        # The row's whole document among the keys, if its keys lie together.
        every = torch.searchsorted(keys, (base + nk - 1).contiguous(),
                                   right=True) - 1
        count = every - start + 1
        end_all = torch.gather(keys, 1, every.clamp(min=0)) - base + 1
        together = (start < nk) & (count > 0) & (first >= 0) & (
            end_all - first == count)
        full_lo = torch.where(together, first, torch.full_like(first, nk))
        full_hi = torch.where(together, end_all, torch.zeros_like(first))
    lo = _per_block(lo, rows, nk, torch.amin)
    hi = _per_block(hi, rows, 0, torch.amax)
    if not full:
        return torch.stack([lo, hi], -1).to(torch.int32)
    # Every row of the block keeps the intersection of their documents
    # (the padding rows keep everything).
    full_lo = _per_block(full_lo, rows, 0, torch.amax)
    full_hi = _per_block(full_hi, rows, nk, torch.amin)
    empty = full_hi <= full_lo
    full_lo = torch.where(empty, torch.zeros_like(full_lo), full_lo)
    full_hi = torch.where(empty, torch.zeros_like(full_hi), full_hi)
    return torch.stack([lo, hi, full_lo, full_hi], -1).to(torch.int32)


def prefix_lm_key_ranges(prefix, seq_q, rows=128, *, seq_k=None, full=True):
    """The key_ranges table of the prefix-LM mask (query i sees key j iff
    j < prefix[b] or j <= i, kernels/attention_prefix_lm.mlir): an int32
    [B, ceil(seq_q / rows), 4] tensor on prefix's device, [lo, hi,
    full_lo, full_hi] per block of rows: the keys below max(prefix, the
    block's end), and those every row keeps, below max(prefix, the block's
    first row + 1), each within seq_k (default seq_q); [lo, hi) only
    without `full`."""
    import torch
    p = prefix.long()
    if p.dim() != 1 or rows < 1 or seq_q < 1:
        raise ValueError(f"prefix must be a [B] vector and seq_q, rows >= 1"
                         f" (got {tuple(p.shape)}, {seq_q}, {rows})")
    nk = seq_q if seq_k is None else int(seq_k)
    blocks = -(-seq_q // rows)
    start = torch.arange(blocks, device=p.device) * rows
    end = torch.clamp(start + rows, max=seq_q)
    hi = torch.clamp(torch.maximum(p[:, None], end[None, :]), max=nk)
    lo = torch.where(hi > 0, torch.zeros_like(hi), torch.full_like(hi, nk))
    if not full:
        return torch.stack([lo, hi], -1).to(torch.int32)
    full_hi = torch.clamp(torch.maximum(p[:, None], start[None, :] + 1),
                          max=nk)
    return torch.stack([lo, hi, torch.zeros_like(full_hi), full_hi],
                       -1).to(torch.int32)

"""Kernel variants: naming, the generated source, configs, tuning look-up.

Pure Python (no torch). A variant is what changes the kernel's source:
dtype, head dim, causal, scale, and varlen (packed sequences:
FlashAttention's varlen form, `packed(cu_seqlens_q, cu_seqlens_k, max_q)`).
Its name is "<dtype>-d<D>[-causal][-scale<f32>][-softcap<f32>][-window<N>]
[-chunk<C>][-alibi][-document|-prefixlm][-sink][-paged<P>][-splits]
[-packgqa][-varlen]" (decoding over a K/V cache, docs/decoding.md: paged,
pages of P rows; splits, each row's keys split over programs, which
without -paged reads a contiguous cache; packgqa, a K/V head's query
heads as one tile; softcap: each
scaled logit s becomes softcap * tanh(s / softcap); window: a query sees no
key more than N behind it; chunk: a query sees only the keys of its own
chunk of C positions, q_idx / C == kv_idx / C; the rest take tensors at run
time, the kernel function's arguments after lse ("captures"), in this
order: alibi, ALiBi's slopes (f32 [H]); document, document ids (i32 [B, N])
and their block mask (key_ranges, i32 [B, blocks, 4]); prefixlm, prefix
lengths (i32 [B]) and their block mask; sink, attention sinks (f32 [H],
and the backward's dsinks after them)), e.g.
"bf16-d128-causal", "f16-d64-scale0.125" or "bf16-d128-causal-varlen"; the
scale is the float32 the kernel multiplies by, printed so that it reads back
exactly, and omitted when it is 1/sqrt(D) (the kernel's default). The
shipped kernel of a variant (kernels/*.mlir, and the "kernel" name of its
tuning-database entries) is attention[_f16][_d64|_d256][_varlen][_causal];
of the varlen ones only bf16 D=128 ships (attention_varlen[_causal].mlir),
and a varlen variant takes its dense variant's config (the table below; no
tuning database has varlen entries).
"""

import json
import math
import os
import re
import struct

DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128, 256)

# The #flash.config of each shipped kernel (kernels/*.mlir), by dtype and
# head dim; test_flashc_cache.py checks this table against the files.
_CONFIG_128 = {"block_m": 128, "block_n": 128, "stages": 2, "warpgroups": 2}
DEFAULT_CONFIGS = {
    ("bf16", 64): {"block_m": 256, "block_n": 96, "stages": 1,
                   "warpgroups": 4, "overlap": 0, "tma_store_o": 0},
    ("bf16", 128): _CONFIG_128,
    ("bf16", 256): {"block_m": 128, "block_n": 64, "stages": 2,
                    "warpgroups": 2},
    ("f16", 64): _CONFIG_128,
    ("f16", 128): _CONFIG_128,
    ("f16", 256): {"block_m": 128, "block_n": 64, "stages": 2,
                   "warpgroups": 2},
}

# Config keys in #flash.config order: sizes, then the schedule switches
# (include/flashc/Config/ScheduleSwitches.def), booleans written 0/1.
SIZE_KEYS = ("block_m", "block_n", "stages", "warpgroups")
SWITCH_KEYS = ("overlap", "pingpong", "split_release", "persistent",
               "tma_store_o", "dynamic_schedule", "speculative_exp")


def decoding_config(head_dim, page_size=None):
    """A decoding step's tile: one warpgroup's 64 rows (its few queries, a
    GQA group's), key tiles of 128 where the accumulators fit (D <= 128)
    and the page size allows (a paged tile lies in one page or spans whole
    pages, as pages of 16 and 32 do; other page sizes take smaller tiles,
    the CPU path's, which the GPU refuses below 64), and as many K/V stages
    as the shared memory (227 KiB, less Q's 64 rows) holds: the kernel is a
    reader of K and V, so what it keeps in flight is what it reads at."""
    block_n = 128 if head_dim <= 128 else 64
    if page_size is not None:
        block_n = next(n for n in (block_n, 64, 32, 16)
                       if page_size % n == 0 or n % page_size == 0)
    stages = (232448 - 2048 - 128 * head_dim) // (4 * block_n * head_dim)
    return {"block_m": 64, "warpgroups": 1, "block_n": block_n,
            "stages": max(1, min(8, stages)), "overlap": 1}


class VariantError(ValueError):
    pass


def f32(x):
    """x rounded to float32 (as a Python float)."""
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def normalize_scale(scale, head_dim):
    """None for the kernel's default scale (1/sqrt(D)), else the float32."""
    if scale is None:
        return None
    s = f32(scale)
    if not math.isfinite(s) or s <= 0:
        raise VariantError(f"scale must be a positive finite number, got {scale}")
    if s == f32(1.0 / math.sqrt(head_dim)):
        return None
    return s


class Variant:
    """A kernel to compile: dtype, head dim, mask, scale, packed sequences
    (varlen), and whether it is the forward's backward pass (backward, with
    dQ added in a fixed order when deterministic)."""
    __slots__ = ("dtype", "head_dim", "causal", "scale", "varlen", "backward",
                 "deterministic", "softcap", "window", "chunk_size", "alibi",
                 "document", "prefix_lm", "sinks", "page_size", "splits",
                 "pack_gqa")

    def __init__(self, dtype, head_dim, causal=False, scale=None,
                 varlen=False, backward=False, deterministic=False, *,
                 softcap=None, window=None, chunk_size=None, alibi=False,
                 document=False, prefix_lm=False, sinks=False,
                 page_size=None, splits=False, pack_gqa=False):
        if dtype not in DTYPES:
            raise VariantError(f"dtype {dtype!r}: flashc kernels take "
                               f"{' or '.join(DTYPES)}")
        if head_dim not in HEAD_DIMS:
            raise VariantError(f"head dim {head_dim}: flashc's kernels cover "
                               f"{', '.join(map(str, HEAD_DIMS))}")
        self.dtype, self.head_dim, self.causal = dtype, int(head_dim), bool(causal)
        self.scale = normalize_scale(scale, head_dim)
        self.varlen = bool(varlen)
        self.backward = bool(backward)
        self.deterministic = bool(deterministic)
        if self.deterministic and not self.backward:
            raise VariantError("deterministic is a mode of the backward pass")
        if self.backward and self.varlen:
            raise VariantError("the backward pass of packed sequences runs on "
                               "the CPU only so far")
        # Score and mask mods (kernels/attention_softcap.mlir,
        # attention_sliding_window.mlir and attention_chunked.mlir):
        # softcap * tanh(s / softcap), keys at most `window` behind the
        # query, and keys in the query's chunk of `chunk_size` positions.
        self.softcap = None
        if softcap is not None:
            c = f32(softcap)
            if not math.isfinite(c) or c <= 0:
                raise VariantError(f"softcap must be a positive finite number, "
                                   f"got {softcap}")
            self.softcap = c
        self.window = None
        if window is not None:
            if int(window) != window or int(window) < 0:
                raise VariantError(f"window must be a number of keys >= 0, "
                                   f"got {window}")
            self.window = int(window)
        self.chunk_size = None
        if chunk_size is not None:
            try:
                chunk = int(chunk_size)
            except (TypeError, ValueError, OverflowError):
                chunk = None
            if (chunk is None or isinstance(chunk_size, bool)
                    or chunk != chunk_size or chunk < 1):
                raise VariantError(f"chunk_size must be a number of "
                                   f"positions >= 1, got {chunk_size!r}")
            self.chunk_size = chunk
        # The mods that read tensors (kernels/attention_alibi.mlir,
        # attention_document.mlir, attention_prefix_lm.mlir) and the
        # attention sinks (attention_sink.mlir).
        self.alibi, self.document = bool(alibi), bool(document)
        self.prefix_lm, self.sinks = bool(prefix_lm), bool(sinks)
        if self.has_mods and self.varlen:
            raise VariantError(
                "softcap, window, chunk_size, alibi_slopes, sinks, "
                "document_ids and prefix_lengths take dense batches so far "
                "(packed sequences' mods are not generated yet)")
        # Pairs whose regions would not compose as each alone means: two
        # score mods (which first?), two block-mask tables, and a window
        # or chunk that the tables' full key tiles (the mask_mod skipped
        # there) would not apply.
        if self.alibi and self.softcap is not None:
            raise VariantError("alibi_slopes and softcap both rewrite the "
                               "logit: flashc does not combine them")
        if self.document and self.prefix_lm:
            raise VariantError("document_ids and prefix_lengths are two "
                               "masks with block-mask tables: flashc does "
                               "not combine them")
        if self.window is not None and (self.document or self.prefix_lm):
            raise VariantError(
                "window with document_ids or prefix_lengths: their block "
                "masks skip the mask_mod on key tiles the window would "
                "hide, so flashc does not combine them")
        if self.chunk_size is not None and (self.document or self.prefix_lm):
            raise VariantError(
                "chunk_size with document_ids or prefix_lengths: their "
                "block masks skip the mask_mod on key tiles the chunks "
                "would hide, so flashc does not combine them")
        if self.prefix_lm and self.causal:
            raise VariantError(
                "prefix_lengths is a mask of its own (the prefix "
                "bidirectional, causal after it); causal=True would hide "
                "the prefix's later keys: pass causal=False")
        # Decoding (docs/decoding.md): K and V a paged cache of `page_size`
        # rows a page, the keys split over programs (the caller's scratch),
        # a K/V head's query heads computed as one tile. Split-KV without a
        # page size is decoding over a contiguous cache (B x Nk x H_kv x D,
        # every batch Nk keys), which the GPU kernels take.
        self.page_size = None
        if page_size is not None:
            if (isinstance(page_size, bool) or int(page_size) != page_size
                    or not 16 <= int(page_size) <= 1024
                    or int(page_size) % 16):
                raise VariantError(f"page_size must be a multiple of 16 from "
                                   f"16 to 1024, got {page_size!r}")
            self.page_size = int(page_size)
        self.splits, self.pack_gqa = bool(splits), bool(pack_gqa)
        if self.pack_gqa and not self.decoding:
            raise VariantError("pack_gqa is decoding's: it takes a paged "
                               "cache (page_table) or split-KV (num_splits)")
        if self.decoding and (self.varlen or self.backward):
            raise VariantError("a paged cache and split-KV are decoding's: "
                               "no packed sequences and no backward pass")
        if self.decoding and (self.document or self.prefix_lm):
            raise VariantError("document_ids and prefix_lengths' block masks "
                               "index queries from the top-left; a decoding "
                               "step's queries are at the cache's end")


    @property
    def decoding(self):
        """A decoding step over a K/V cache: paged, or split over programs
        (a contiguous cache)."""
        return self.page_size is not None or self.splits

    @property
    def has_mods(self):
        return (self.softcap is not None or self.window is not None
                or self.chunk_size is not None or self.alibi
                or self.document or self.prefix_lm
                or self.sinks)

    def captures(self):
        """The mods' capture arguments in the function's order after lse:
        [(argument name, region argument name, memref type)]."""
        out = []
        if self.alibi:
            out.append(("slopes", "slope_of", "memref<?xf32>"))
        if self.document:
            out.append(("document", "doc", "memref<?x?xi32>"))
        if self.prefix_lm:
            out.append(("prefix", "prefix_of", "memref<?xi32>"))
        if self.document or self.prefix_lm:
            out.append(("key_ranges", "ranges", "memref<?x?x4xi32>"))
        return out

    def _tuple(self):
        return (self.dtype, self.head_dim, self.causal, self.scale,
                self.varlen, self.backward, self.deterministic, self.softcap,
                self.window, self.chunk_size, self.alibi, self.document,
                self.prefix_lm, self.sinks, self.page_size, self.splits,
                self.pack_gqa)

    def __eq__(self, other):
        return isinstance(other, Variant) and self._tuple() == other._tuple()

    def __hash__(self):
        return hash(self._tuple())

    @property
    def name(self):
        s = f"{self.dtype}-d{self.head_dim}"
        if self.causal:
            s += "-causal"
        if self.scale is not None:
            s += f"-scale{self.scale!r}"
        if self.softcap is not None:
            s += f"-softcap{self.softcap!r}"
        if self.window is not None:
            s += f"-window{self.window}"
        if self.chunk_size is not None:
            s += f"-chunk{self.chunk_size}"
        if self.alibi:
            s += "-alibi"
        if self.document:
            s += "-document"
        if self.prefix_lm:
            s += "-prefixlm"
        if self.sinks:
            s += "-sink"
        if self.page_size is not None:
            s += f"-paged{self.page_size}"
        if self.splits:
            s += "-splits"
        if self.pack_gqa:
            s += "-packgqa"
        if self.varlen:
            s += "-varlen"
        if self.backward:
            s += "-backward"
        if self.deterministic:
            s += "-deterministic"
        return s

    def __repr__(self):
        return f"Variant({self.name})"

    @property
    def kernel_name(self):
        """The shipped kernel's (and its tuning entries') name."""
        s = "attention_backward" if self.backward else "attention"
        if self.dtype == "f16":
            s += "_f16"
        if self.head_dim != 128:
            s += f"_d{self.head_dim}"
        if self.varlen:
            s += "_varlen"
        if self.causal:
            s += "_causal"
        if self.softcap is not None:
            s += "_softcap"
        if self.window is not None:
            s += "_window"
        if self.chunk_size is not None:
            s += "_chunked"
        if self.alibi:
            s += "_alibi"
        if self.document:
            s += "_document"
        if self.prefix_lm:
            s += "_prefix_lm"
        if self.sinks:
            s += "_sink"
        if self.page_size is not None:
            s += "_paged"
        if self.splits:
            s += "_splits"
        if self.pack_gqa:
            s += "_pack_gqa"
        if self.deterministic:
            s += "_deterministic"
        return s

    def default_config(self):
        if self.backward:
            return dict(BACKWARD_CONFIG)
        config = dict(DEFAULT_CONFIGS[self.dtype, self.head_dim])
        if self.decoding:
            config.update(decoding_config(self.head_dim, self.page_size))
        return config

    def source(self, config=None):
        """The kernel's MLIR, as kernels/*.mlir writes it, with `config`
        (default: the shipped kernel's) and the scale attribute."""
        if self.backward:
            return generate_backward_source(self, config)
        return generate_source(self, config or self.default_config())

    def forward(self):
        """The forward variant whose gradients this backward variant gives."""
        return Variant(self.dtype, self.head_dim, self.causal, self.scale,
                       self.varlen, softcap=self.softcap, window=self.window,
                       chunk_size=self.chunk_size, alibi=self.alibi,
                       document=self.document, prefix_lm=self.prefix_lm,
                       sinks=self.sinks, page_size=self.page_size,
                       splits=self.splits, pack_gqa=self.pack_gqa)


_NAME = re.compile(
    r"(?P<dtype>[a-z0-9]+)-d(?P<d>[0-9]+)(?P<causal>-causal)?"
    r"(?:-scale(?P<scale>.+?))?(?:-softcap(?P<softcap>.+?))?"
    r"(?:-window(?P<window>[0-9]+))?(?:-chunk(?P<chunk>[0-9]+))?"
    r"(?P<alibi>-alibi)?(?P<document>-document)?(?P<prefixlm>-prefixlm)?"
    r"(?P<sink>-sink)?(?:-paged(?P<paged>[0-9]+))?(?P<splits>-splits)?"
    r"(?P<packgqa>-packgqa)?(?P<varlen>-varlen)?(?P<backward>-backward)?"
    r"(?P<deterministic>-deterministic)?")


def parse_variant(name):
    """"bf16-d128-causal-scale0.125" -> Variant (the scale may be written any
    way Python's float() reads, 1e-05 included); then "-softcap<x>",
    "-window<keys>", "-chunk<positions>", "-alibi", "-document" or
    "-prefixlm", "-sink", "-paged<page size>", "-splits", "-packgqa", then
    "-varlen", or "-backward" and "-deterministic"."""
    m = _NAME.fullmatch(name.strip())
    try:
        if m is None:
            raise ValueError
        scale = None if m["scale"] is None else float(m["scale"])
        softcap = None if m["softcap"] is None else float(m["softcap"])
    except ValueError:
        raise VariantError(
            f"variant {name!r}: expected <bf16|f16>-d<64|128|256>[-causal]"
            "[-scale<x>][-softcap<x>][-window<keys>][-chunk<positions>]"
            "[-alibi][-document|-prefixlm][-sink][-paged<page size>]"
            "[-splits][-packgqa][-varlen]"
            "[-backward[-deterministic]], e.g. bf16-d128-causal") from None
    window = None if m["window"] is None else int(m["window"])
    chunk = None if m["chunk"] is None else int(m["chunk"])
    return Variant(m["dtype"], int(m["d"]), bool(m["causal"]), scale,
                   bool(m["varlen"]), bool(m["backward"]),
                   bool(m["deterministic"]), softcap=softcap, window=window,
                   chunk_size=chunk, alibi=bool(m["alibi"]),
                   document=bool(m["document"]),
                   prefix_lm=bool(m["prefixlm"]), sinks=bool(m["sink"]),
                   page_size=None if m["paged"] is None else int(m["paged"]),
                   splits=bool(m["splits"]), pack_gqa=bool(m["packgqa"]))


def mlir_float(x):
    """x as an MLIR float literal, which needs a '.' before any exponent
    (1e-05 -> 1.0e-05); repr() gives the shortest text that reads back."""
    r = repr(float(x))
    mant, e, exp = r.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + e + exp


def shipped_variants():
    """The variants of kernels/*.mlir: the twelve dense ones (bf16 and f16,
    D 64/128/256, causal and not) and the two packed-sequence ones (bf16,
    D 128)."""
    return ([Variant(t, d, c) for t in DTYPES for d in HEAD_DIMS
             for c in (False, True)]
            + [Variant("bf16", 128, c, varlen=True) for c in (False, True)])


def config_text(config):
    """{"block_m": 128, ..., "overlap": 0} -> '#flash.config<block_m = 128,
    ..., overlap = false>' (only the keys given; the rest take the
    attribute's defaults)."""
    unknown = set(config) - set(SIZE_KEYS) - set(SWITCH_KEYS)
    if unknown:
        raise VariantError(f"config keys {sorted(unknown)} are not "
                           "#flash.config parameters")
    items = []
    for k in SIZE_KEYS:
        if k in config:
            items.append(f"{k} = {int(config[k])}")
    for k in SWITCH_KEYS:
        if k in config:
            items.append(f"{k} = {'true' if int(config[k]) else 'false'}")
    return "#flash.config<" + ", ".join(items) + ">"


def canonical_config(config):
    """The config with every key given (the attribute's defaults filled in),
    so that two spellings of one config compare and hash equal."""
    out = {"stages": 2, "warpgroups": 1}
    out.update({k: 1 for k in SWITCH_KEYS})
    out["persistent"] = 0
    out["speculative_exp"] = 0
    for k, v in config.items():
        if k in SIZE_KEYS or k in SWITCH_KEYS:
            out[k] = int(v)
    if "block_m" not in out or "block_n" not in out:
        raise VariantError("a config needs block_m and block_n")
    return {k: out[k] for k in SIZE_KEYS + SWITCH_KEYS}


# The query rows per entry of the block-mask tables (key_ranges) the
# generated kernels declare, as kernels/attention_document.mlir and
# attention_prefix_lm.mlir do; the caller builds its table with these rows.
KEY_RANGE_ROWS = 128


def op_attributes(variant, config):
    """The attention op's attributes for the variant: its mask, the
    deterministic mode of a backward variant, a scale other than 1/sqrt(D),
    the block-mask table's capture and rows (key_ranges) and the config."""
    attrs = []
    if variant.causal:
        attrs.append("causal")
    if variant.pack_gqa:
        attrs.append("pack_gqa")
    if variant.deterministic:
        attrs.append("deterministic")
    if variant.scale is not None:
        attrs.append(f"scale = {mlir_float(variant.scale)} : f32")
    names = [c[0] for c in variant.captures()]
    if "key_ranges" in names:
        attrs.append(f"key_ranges = array<i64: {names.index('key_ranges')}, "
                     f"{KEY_RANGE_ROWS}>")
    attrs.append("config = " + config_text(config))
    return attrs


def _capture_params(variant, backward):
    """The function's arguments after lse (after dv for the backward):
    the captures, then the sinks (and dsinks)."""
    names = [(n, t) for n, _, t in variant.captures()]
    if variant.sinks:
        names.append(("sinks", "memref<?xf32>"))
        if backward:
            names.append(("dsinks", "memref<?xf32>"))
    return "".join(f",\n    %{n}: {t}" for n, t in names)


def _capture_operands(variant, backward):
    """The op's captures(...) and sinks(...) clauses, one line each."""
    text = ""
    captures = variant.captures()
    if captures:
        text += (f"      captures({', '.join('%' + c[0] for c in captures)}"
                 f" : {', '.join(c[2] for c in captures)})\n")
    if variant.sinks:
        text += ("      sinks(%sinks : memref<?xf32> -> %dsinks : "
                 "memref<?xf32>)\n" if backward else
                 "      sinks(%sinks : memref<?xf32>)\n")
    return text


def generate_source(variant, config):
    """The variant's function, as kernels/*.mlir writes it: dense (q, k, v,
    o B x H x N x D, lse B x H x Nq), or for varlen the packed form (every
    sequence's rows in one 1 x H x T x D view, then cu_seqlens_q,
    cu_seqlens_k and max_seqlen_q)."""
    d = variant.head_dim
    t = variant.dtype
    batch = "1" if variant.varlen else "?"
    ty = f"memref<{batch}x?x?x{d}x{t}>"
    kv_ty = ty
    lse_ty = f"memref<{batch}x?x?xf32>"
    attrs = op_attributes(variant, config)
    fn = variant.kernel_name
    params = f"    %lse: {lse_ty}"
    packed = ""
    if variant.varlen:
        params += (", %cu_seqlens_q: memref<?xi32>,\n"
                   "    %cu_seqlens_k: memref<?xi32>, %max_seqlen_q: index")
        packed = ("      packed(%cu_seqlens_q : memref<?xi32>, %cu_seqlens_k"
                  " : memref<?xi32>, max_q %max_seqlen_q)\n")
    if variant.page_size is not None:
        # vLLM's num_pages x page_size x H_kv x D pages, viewed num_pages x
        # H_kv x page_size x D.
        kv_ty = (f"memref<?x?x{variant.page_size}x{d}x{t}, "
                 "strided<[?, ?, ?, 1]>>")
        params += (", %page_table: memref<?x?xi32>,\n"
                   "    %cache_lens: memref<?xi32>")
        packed += ("      paged(%page_table : memref<?x?xi32>, %cache_lens :"
                   " memref<?xi32>)\n")
    if variant.splits:
        part_ty = f"memref<?x?x?x?x{d}xf32>"
        part_lse_ty = "memref<?x?x?x?xf32>"
        params += (f",\n    %partial_out: {part_ty}, "
                   f"%partial_lse: {part_lse_ty}")
        packed += (f"      splits(%partial_out : {part_ty}, %partial_lse : "
                   f"{part_lse_ty})\n")
    return (
        f"// Generated by python/flashc for variant {variant.name}.\n"
        f"func.func @{fn}(%q: {ty}, %k: {kv_ty}, %v: {kv_ty}, %o: {ty},\n"
        f"{params}{_capture_params(variant, False)}) {{\n"
        f"  flash.attention %q, %k, %v -> %o, lse %lse\n"
        f"{packed}"
        f"{_capture_operands(variant, False)}"
        f"      {{{', '.join(attrs)}}}\n"
        f"      : {ty}, {kv_ty}, {kv_ty}\n"
        f"      -> {ty}, {lse_ty}\n"
        f"{mod_regions(variant)}"
        f"  return\n"
        f"}}\n")


def mod_regions(variant):
    """The variant's score_mod (soft-capping, as
    kernels/attention_softcap.mlir writes it, or ALiBi's bias, as
    attention_alibi.mlir) and mask_mod (the sliding window of
    attention_sliding_window.mlir, the chunks of attention_chunked.mlir,
    both ANDed in one region, document masking of attention_document.mlir
    or the prefix-LM mask of attention_prefix_lm.mlir), or "". Each
    region takes every capture after its fixed arguments (the op's rule),
    named apart from the function's arguments."""
    captures = variant.captures()
    extra = "".join(f", %{region}: {t}" for _, region, t in captures)
    if extra:
        extra = ",\n         " + extra[2:]
    text = ""
    if variant.softcap is not None or variant.alibi:
        text += (
            "    score_mod {\n"
            "    ^bb0(%s: f32, %b: index, %h: index, %q_idx: index,"
            f" %kv_idx: index{extra}):\n")
    if variant.softcap is not None:
        text += (
            f"      %cap = arith.constant {mlir_float(variant.softcap)} : f32\n"
            "      %x = arith.divf %s, %cap : f32\n"
            "      %t = math.tanh %x : f32\n"
            "      %capped = arith.mulf %t, %cap : f32\n"
            "      flash.yield %capped : f32\n"
            "    }\n")
    if variant.alibi:
        text += (
            "      %slope = memref.load %slope_of[%h] : memref<?xf32>\n"
            "      %kv = arith.index_cast %kv_idx : index to i64\n"
            "      %qi = arith.index_cast %q_idx : index to i64\n"
            "      %distance = arith.subi %kv, %qi : i64\n"
            "      %d = arith.sitofp %distance : i64 to f32\n"
            "      %bias = arith.mulf %slope, %d : f32\n"
            "      %biased = arith.addf %s, %bias : f32\n"
            "      flash.yield %biased : f32\n"
            "    }\n")
    chunk = variant.chunk_size
    if (variant.window is not None or chunk is not None or variant.document
            or variant.prefix_lm):
        text += (
            "    mask_mod {\n"
            "    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index"
            f"{extra}):\n")
    # The window's and the chunk's comparisons each in the shipped kernel's
    # form, which MaskAnalysis reads (keyWindowBehind, keyChunk) through
    # the andi that joins them: the key tiles outside either are skipped.
    seen = []
    if variant.window is not None:
        text += (
            f"      %window = arith.constant {variant.window} : index\n"
            "      %reach = arith.addi %kv_idx, %window : index\n"
            "      %inside = arith.cmpi uge, %reach, %q_idx : index\n")
        seen.append("%inside")
    if chunk is not None:
        text += (
            f"      %chunk = arith.constant {chunk} : index\n"
            "      %q_chunk = arith.divui %q_idx, %chunk : index\n"
            "      %kv_chunk = arith.divui %kv_idx, %chunk : index\n"
            "      %same = arith.cmpi eq, %q_chunk, %kv_chunk : index\n")
        seen.append("%same")
    if len(seen) == 2:
        text += "      %visible = arith.andi %inside, %same : i1\n"
        seen = ["%visible"]
    if seen:
        text += (
            f"      flash.yield {seen[0]} : i1\n"
            "    }\n")
    if variant.document:
        # The shipped kernel's %dq and %dk would redefine the backward
        # function's arguments of those names.
        text += (
            "      %id_q = memref.load %doc[%b, %q_idx] : memref<?x?xi32>\n"
            "      %id_k = memref.load %doc[%b, %kv_idx] : memref<?x?xi32>\n"
            "      %same = arith.cmpi eq, %id_q, %id_k : i32\n"
            "      flash.yield %same : i1\n"
            "    }\n")
    if variant.prefix_lm:
        text += (
            "      %p = memref.load %prefix_of[%b] : memref<?xi32>\n"
            "      %len = arith.index_cast %p : i32 to index\n"
            "      %in_prefix = arith.cmpi ult, %kv_idx, %len : index\n"
            "      %past = arith.cmpi ule, %kv_idx, %q_idx : index\n"
            "      %seen = arith.ori %in_prefix, %past : i1\n"
            "      flash.yield %seen : i1\n"
            "    }\n")
    return text


# The backward pass's tile sizes: a query tile of 64 rows passes a key tile
# of 64 keys, as FlashAttention-2's backward does for these head dims.
BACKWARD_CONFIG = {"block_m": 64, "block_n": 64}


def generate_backward_source(variant, config=None):
    """The backward pass of the variant's (dense) forward: a function taking
    q, k, v, o and do (B x H x N x D), the forward's lse (B x H x Nq) and
    dq, dk, dv to write, then the forward's captures, sinks and dsinks
    (the sinks' gradient, which it writes), with the variant's mask, scale
    and score and mask mods (the forward's regions: the compiler derives
    the score mod's derivative)."""
    if variant.varlen:
        raise VariantError("the backward pass of packed sequences is not "
                           "generated yet; use the dense variant")
    d, t = variant.head_dim, variant.dtype
    ty = f"memref<?x?x?x{d}x{t}>"
    lse_ty = "memref<?x?x?xf32>"
    attrs = op_attributes(variant, config or BACKWARD_CONFIG)
    # The CPU path asks for the backward of a forward variant.
    fn = variant.kernel_name if variant.backward else \
        variant.kernel_name.replace("attention", "attention_backward", 1)
    return (
        f"// Generated by python/flashc: the backward pass of variant "
        f"{variant.name}.\n"
        f"func.func @{fn}(%q: {ty}, %k: {ty}, %v: {ty}, %o: {ty},\n"
        f"    %do: {ty}, %lse: {lse_ty}, %dq: {ty}, %dk: {ty},\n"
        f"    %dv: {ty}{_capture_params(variant, True)}) {{\n"
        f"  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk,"
        f" %dv\n"
        f"{_capture_operands(variant, True)}"
        f"      {{{', '.join(attrs)}}}\n"
        f"      : {ty}, {ty}, {ty}, {ty}, {ty}, {lse_ty}\n"
        f"      -> {ty}, {ty}, {ty}\n"
        f"{mod_regions(variant)}"
        f"  return\n"
        f"}}\n")


# --- tuning databases -------------------------------------------------------

def _pow2ceil(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def bucket_of(batch, heads, seq, head_dim):
    """flash-tune's shape bucket (lib/Autotune/Config.cpp, bucketOf)."""
    return {"seq": _pow2ceil(seq), "head_dim": int(head_dim),
            "batch_heads": _pow2ceil(batch * heads)}


def default_tuning_dbs():
    """$FLASHC_TUNING_DB (paths separated by os.pathsep; empty: none), else
    the databases shipped with the package: its tuning/*.json, which in a
    checkout is the repository's bench/tuning (a link) and in an installed
    package a copy of it (pyproject.toml's package data)."""
    env = os.environ.get("FLASHC_TUNING_DB")
    if env is not None:
        return [p for p in env.split(os.pathsep) if p]
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuning")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.endswith(".json"))


_db_memo = {}


def load_tuning_db(path):
    """The entries of a flashc-tuning-db file (memoized on mtime and size)."""
    st = os.stat(path)
    memo = _db_memo.get(path)
    if memo and memo[0] == (st.st_mtime_ns, st.st_size):
        return memo[1]
    with open(path) as f:
        db = json.load(f)
    if db.get("format") != "flashc-tuning-db" or db.get("format_version") != 1:
        raise VariantError(f"{path}: not a flashc-tuning-db version 1 file")
    entries = db.get("entries", [])
    _db_memo[path] = ((st.st_mtime_ns, st.st_size), entries)
    return entries


def find_tuning(variant, gpu, arch, bucket, dbs=None):
    """The tuning entry for the variant's shipped kernel on `gpu` (the CUDA
    device name, e.g. "NVIDIA H200"), `arch` and the shape bucket, as
    (db path, entry), or None.

    Entries are matched on the kernel name, not on the source hash that
    `flashc --tuning-db` checks: the generated source differs from the
    shipped kernels/*.mlir (comments, a scale attribute), and a config's
    speed does not depend on either. The config is written into the
    generated source, which is what `flashc --tuning-db` would apply."""
    for path in default_tuning_dbs() if dbs is None else dbs:
        try:
            entries = load_tuning_db(path)
        except (OSError, ValueError):
            continue
        for e in entries:
            if (e.get("kernel") == variant.kernel_name and e.get("gpu") == gpu
                    and e.get("arch") == arch and e.get("bucket") == bucket):
                return path, e
    return None

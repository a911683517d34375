#!/usr/bin/env python3
"""CPU tests of python/flashc's compile-on-demand path, without torch.

Variant naming and the generated source, the tuning look-up, the cache key,
hits and misses (also across processes), corrupt and partial entries,
concurrent builders, FLASHC_DUMP, the prebuilt library, and the CPU
target's entries (kernel.so, keyed apart from the GPU's), all against
stub_flashc.py (a stand-in compiler writing fake cubins) and a stub ptxas.
RealCompilerTest runs the real flashc: $FLASHC_COMPILER, else build/bin/flashc
of this checkout; skipped where there is none (or no ptxas).
"""
import json
import multiprocessing
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import flashc  # noqa: E402
from flashc import cache, cpu, library, variants  # noqa: E402
from flashc.variants import Variant, parse_variant  # noqa: E402

ENV_VARS = ("FLASHC_CACHE_DIR", "FLASHC_COMPILER", "FLASHC_CUDA_ROOT",
            "FLASHC_DUMP", "FLASHC_LIBRARY", "FLASHC_TUNING_DB", "STUB_LOG",
            "STUB_SLEEP", "STUB_FAIL", "STUB_FLASHC_VERSION")


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP
             | stat.S_IXOTH)
    return path


class StubEnv(unittest.TestCase):
    """A temporary cache, the stub compiler and a stub CUDA root."""

    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ENV_VARS}
        self.addCleanup(self.restore_env)
        self.tmp = tempfile.mkdtemp(prefix="flashc-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.cache = os.path.join(self.tmp, "cache")
        self.log = os.path.join(self.tmp, "compiles.log")
        self.compiler = self.make_compiler("stub")
        cuda = os.path.join(self.tmp, "cuda")
        os.makedirs(os.path.join(cuda, "bin"))
        write_exe(os.path.join(cuda, "bin", "ptxas"),
                  "#!/bin/sh\necho 'stub ptxas, release 13.0'\n")
        for k in ENV_VARS:
            os.environ.pop(k, None)
        os.environ.update(FLASHC_CACHE_DIR=self.cache,
                          FLASHC_COMPILER=self.compiler,
                          FLASHC_CUDA_ROOT=cuda, FLASHC_TUNING_DB="",
                          STUB_LOG=self.log)

    def restore_env(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def make_compiler(self, name, extra=""):
        return write_exe(os.path.join(self.tmp, name),
                         f'#!/bin/sh\n{extra}exec "{sys.executable}" '
                         f'"{os.path.join(HERE, "stub_flashc.py")}" "$@"\n')

    def compiles(self, emit="cubin"):
        if not os.path.exists(self.log):
            return 0
        with open(self.log) as f:
            return sum(1 for line in f if line.split()[0] == emit)

    def entry(self, variant="bf16-d128", config=None):
        return library.compile_variant(parse_variant(variant), config)


class VariantTest(unittest.TestCase):
    def test_names_round_trip(self):
        for v in variants.shipped_variants():
            self.assertEqual(parse_variant(v.name), v)
        self.assertEqual(len({v.name for v in variants.shipped_variants()}),
                         14)
        v = Variant("f16", 64, True, 0.1)
        self.assertEqual(parse_variant(v.name), v)
        self.assertEqual(parse_variant("f16-d64-causal-scale0.1"), v)
        self.assertEqual(v.name, "f16-d64-causal-scale0.10000000149011612")

    def test_varlen_names(self):
        v = Variant("bf16", 128, True, varlen=True)
        self.assertEqual(v.name, "bf16-d128-causal-varlen")
        self.assertEqual(v.kernel_name, "attention_varlen_causal")
        self.assertNotEqual(v, Variant("bf16", 128, True))
        self.assertNotEqual(hash(v), hash(Variant("bf16", 128, True)))
        for name, kernel in (("bf16-d128-varlen", "attention_varlen"),
                             ("f16-d64-causal-varlen",
                              "attention_f16_d64_varlen_causal"),
                             ("bf16-d256-varlen", "attention_d256_varlen")):
            w = parse_variant(name)
            self.assertTrue(w.varlen)
            self.assertEqual((w.name, w.kernel_name), (name, kernel))
        # The scale (which may hold a '-') comes before the suffix.
        for x in (0.1, 1e-05):
            w = Variant("f16", 64, True, x, varlen=True)
            self.assertTrue(w.name.endswith("-varlen"), w.name)
            self.assertEqual(parse_variant(w.name), w)
        self.assertEqual(parse_variant("bf16-d64-scale1e-05-varlen"),
                         Variant("bf16", 64, False, 1e-05, varlen=True))
        self.assertEqual(
            sorted(w.name for w in variants.shipped_variants() if w.varlen),
            ["bf16-d128-causal-varlen", "bf16-d128-varlen"])

    def test_decoding_names_and_sources(self):
        v = Variant("bf16", 128, True, page_size=16, splits=True,
                    pack_gqa=True)
        self.assertEqual(v.name, "bf16-d128-causal-paged16-splits-packgqa")
        self.assertEqual(v.kernel_name,
                         "attention_causal_paged_splits_pack_gqa")
        self.assertEqual(parse_variant(v.name), v)
        self.assertNotEqual(v, Variant("bf16", 128, True, page_size=16,
                                       splits=True))
        # A key tile lies in one page or spans whole pages (8 of 16); a
        # decoding step fills one warpgroup, and keeps as many K/V stages
        # in flight as fit.
        self.assertEqual(v.default_config(),
                         {"block_m": 64, "block_n": 128, "stages": 3,
                          "warpgroups": 1, "overlap": 1})
        self.assertEqual(
            Variant("bf16", 128, page_size=256, splits=True).default_config(),
            {"block_m": 64, "block_n": 128, "stages": 3, "warpgroups": 1,
             "overlap": 1})
        self.assertEqual(Variant("f16", 64, page_size=96).default_config()
                         ["block_n"], 32)
        self.assertEqual(Variant("f16", 64, page_size=48).default_config()
                         ["block_n"], 16)
        src = v.source()
        self.assertIn("memref<?x?x16x128xbf16, strided<[?, ?, ?, 1]>>", src)
        self.assertIn("paged(%page_table : memref<?x?xi32>, %cache_lens : "
                      "memref<?xi32>)", src)
        self.assertIn("splits(%partial_out : memref<?x?x?x?x128xf32>, "
                      "%partial_lse : memref<?x?x?x?xf32>)", src)
        self.assertIn("{causal, pack_gqa, config = ", src)
        self.assertTrue(Variant("bf16", 128, sinks=True, page_size=16,
                                pack_gqa=True).pack_gqa)
        w = parse_variant("f16-d64-softcap30.0-sink-paged64-splits")
        self.assertEqual((w.page_size, w.splits, w.pack_gqa, w.sinks),
                         (64, True, False, True))
        # Split-KV without pages: the GPU's decoding over a contiguous
        # cache (B x Nk x H_kv x D, read as the dense form's K and V).
        c = Variant("bf16", 128, True, splits=True, pack_gqa=True)
        self.assertEqual(c.name, "bf16-d128-causal-splits-packgqa")
        self.assertEqual(c.kernel_name, "attention_causal_splits_pack_gqa")
        self.assertEqual(parse_variant(c.name), c)
        self.assertTrue(c.decoding)
        self.assertFalse(Variant("bf16", 128).decoding)
        self.assertEqual(c.default_config(),
                         {"block_m": 64, "block_n": 128, "stages": 3,
                          "warpgroups": 1, "overlap": 1})
        self.assertEqual(Variant("f16", 256, splits=True).default_config()
                         ["block_n"], 64)
        src = c.source()
        self.assertNotIn("paged(", src)
        self.assertIn("%k: memref<?x?x?x128xbf16>", src)
        self.assertIn("splits(%partial_out : memref<?x?x?x?x128xf32>, "
                      "%partial_lse : memref<?x?x?x?xf32>)", src)
        for kwargs, message in (
                (dict(page_size=8), "page_size must be a multiple of 16"),
                (dict(page_size=2048), "page_size must be a multiple of 16"),
                (dict(pack_gqa=True), "takes a paged cache (page_table) or "
                 "split-KV"),
                (dict(page_size=16, backward=True), "no backward pass"),
                (dict(splits=True, varlen=True), "no packed sequences"),
                (dict(page_size=16, document=True), "cache's end"),
                (dict(splits=True, prefix_lm=True), "cache's end")):
            with self.assertRaises(variants.VariantError) as e:
                Variant("bf16", 128, **kwargs)
            self.assertIn(message, str(e.exception))

    def test_scales_in_names_and_sources(self):
        for x in (1e-05, 3e+20, 2.0, 0.1, 7):
            v = Variant("bf16", 128, True, x)
            self.assertEqual(parse_variant(v.name), v, v.name)
            lit = re.search(r"scale = (\S+) : f32", v.source()).group(1)
            self.assertRegex(lit, r"^[0-9]+\.[0-9]*(e[-+]?[0-9]+)?$")
            self.assertEqual(variants.f32(float(lit)), v.scale)

    def test_mods_in_names_and_sources(self):
        """softcap and window: in the name after the scale, and as the
        score_mod / mask_mod regions of the shipped kernels in the source;
        forward and dense only."""
        v = Variant("bf16", 128, True, 0.1, softcap=50, window=1024)
        self.assertEqual(v.name, "bf16-d128-causal-scale0.10000000149011612"
                                 "-softcap50.0-window1024")
        self.assertEqual(parse_variant(v.name), v)
        self.assertNotEqual(v, Variant("bf16", 128, True, 0.1, softcap=50))
        src = v.source()
        self.assertIn("score_mod {", src)
        self.assertIn("%cap = arith.constant 50.0 : f32", src)
        self.assertIn("math.tanh", src)
        self.assertIn("mask_mod {", src)
        self.assertIn("%window = arith.constant 1024 : index", src)
        self.assertIn("arith.cmpi uge, %reach, %q_idx", src)
        w = parse_variant("f16-d64-window0")
        self.assertEqual((w.window, w.softcap, w.causal), (0, None, False))
        self.assertNotIn("score_mod", w.source())
        self.assertNotIn("_mod", Variant("bf16", 64).source())
        for bad in (dict(softcap=0.0), dict(softcap=-1), dict(window=-3),
                    dict(window=2.5), dict(softcap=float("inf"))):
            with self.assertRaises(variants.VariantError, msg=str(bad)):
                Variant("bf16", 128, **bad)
        with self.assertRaisesRegex(variants.VariantError, "dense batches"):
            Variant("bf16", 128, varlen=True, window=8)
        # The backward of a mod variant: its name, and its source with the
        # forward's regions (the compiler derives the derivative).
        bw = Variant("bf16", 128, True, backward=True, softcap=30.0,
                     window=64)
        self.assertEqual(bw.name, "bf16-d128-causal-softcap30.0-window64"
                         "-backward")
        self.assertEqual(parse_variant(bw.name), bw)
        self.assertEqual(bw.forward(),
                         Variant("bf16", 128, True, softcap=30.0, window=64))
        src = bw.source()
        self.assertIn("flash.attention_backward", src)
        self.assertIn("math.tanh", src)
        self.assertIn("arith.cmpi uge, %reach, %q_idx", src)

    @staticmethod
    def region_body(text, region):
        """The lines of `region`'s block in a kernel's text, after its
        ^bb0 header (which differs by the captures it lists)."""
        lines = text.split(region + " {", 1)[1].split("\n")
        start = next(i for i, l in enumerate(lines) if l.rstrip().endswith(
            "):")) + 1
        end = next(i for i, l in enumerate(lines) if l.strip() == "}")
        return [l.strip() for l in lines[start:end]]

    def test_capture_variants_names(self):
        """alibi, document, prefixlm and sink: in the name after the window,
        in the kernel name, parsed back; the refused combinations."""
        v = Variant("bf16", 128, True, 0.1, alibi=True, document=True,
                    sinks=True)
        self.assertEqual(v.name, "bf16-d128-causal-scale0.10000000149011612"
                                 "-alibi-document-sink")
        self.assertEqual(v.kernel_name, "attention_causal_alibi_document_sink")
        self.assertEqual(parse_variant(v.name), v)
        for name, kernel in (
                ("f16-d64-prefixlm", "attention_f16_d64_prefix_lm"),
                ("bf16-d256-causal-sink", "attention_d256_causal_sink"),
                ("bf16-d128-causal-window64-alibi-sink",
                 "attention_causal_window_alibi_sink"),
                ("bf16-d128-causal-softcap30.0-document",
                 "attention_causal_softcap_document"),
                ("bf16-d128-causal-document-sink-backward-deterministic",
                 "attention_backward_causal_document_sink_deterministic")):
            w = parse_variant(name)
            self.assertEqual((w.name, w.kernel_name), (name, kernel))
        self.assertNotEqual(Variant("bf16", 64, sinks=True),
                            Variant("bf16", 64))
        self.assertNotEqual(hash(Variant("bf16", 64, alibi=True)),
                            hash(Variant("bf16", 64, sinks=True)))
        bw = parse_variant("bf16-d64-causal-alibi-sink-backward")
        self.assertEqual(bw.forward(), parse_variant("bf16-d64-causal-alibi"
                                                     "-sink"))
        for bad, msg in (
                (dict(alibi=True, softcap=30.0), "alibi_slopes and softcap"),
                (dict(document=True, prefix_lm=True),
                 "document_ids and prefix_lengths"),
                (dict(document=True, window=8), "window with document_ids"),
                (dict(prefix_lm=True, window=8), "window with document_ids"),
                (dict(prefix_lm=True, causal=True), "causal=False"),
                (dict(document=True, varlen=True), "dense batches"),
                (dict(sinks=True, varlen=True), "dense batches")):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(variants.VariantError, msg):
                    Variant("bf16", 128, **bad)
        for bad in ("bf16-d128-sink-alibi", "bf16-d128-document-prefixlm",
                    "bf16-d128-alibi-alibi", "bf16-d128-document-varlen",
                    "bf16-d128-sink-window8", "bf16-d128-causal-prefixlm",
                    "bf16-d128-prefix"):
            with self.assertRaises(variants.VariantError, msg=bad):
                parse_variant(bad)

    def test_capture_sources_follow_the_shipped_kernels(self):
        """The generated regions are the shipped kernels' (the same body
        lines), the captures are the function's last arguments in the
        documented order, key_ranges names the table's capture."""
        for kernel, flags, region in (
                ("attention_alibi", dict(alibi=True), "score_mod"),
                ("attention_document", dict(document=True), "mask_mod"),
                ("attention_prefix_lm", dict(prefix_lm=True), "mask_mod")):
            with open(os.path.join(ROOT, "kernels", kernel + ".mlir")) as f:
                shipped = f.read()
            causal = "prefix_lm" not in flags
            src = Variant("bf16", 128, causal, **flags).source()
            # The document ids' values are renamed apart from the backward
            # function's %dq and %dk.
            ours = [line.replace("%id_q", "%dq").replace("%id_k", "%dk")
                    for line in self.region_body(src, region)]
            self.assertEqual(ours, self.region_body(shipped, region), kernel)
        src = Variant("f16", 64, True, alibi=True, document=True,
                      sinks=True).source()
        self.assertIn("%lse: memref<?x?x?xf32>,\n    %slopes: memref<?xf32>,"
                      "\n    %document: memref<?x?xi32>,\n    %key_ranges: "
                      "memref<?x?x4xi32>,\n    %sinks: memref<?xf32>) {", src)
        self.assertIn("captures(%slopes, %document, %key_ranges : "
                      "memref<?xf32>, memref<?x?xi32>, memref<?x?x4xi32>)\n"
                      "      sinks(%sinks : memref<?xf32>)\n"
                      "      {causal, key_ranges = array<i64: 2, 128>, "
                      "config = #flash.config<", src)
        # Each region takes every capture after its fixed arguments.
        self.assertEqual(src.count("%slope_of: memref<?xf32>, %doc: "
                                   "memref<?x?xi32>, %ranges: "
                                   "memref<?x?x4xi32>):"), 2)
        src = Variant("bf16", 128, prefix_lm=True).source()
        self.assertIn("key_ranges = array<i64: 1, 128>", src)
        sink = Variant("bf16", 64, True, sinks=True)
        self.assertNotIn("captures(", sink.source())
        self.assertNotIn("_mod", sink.source())
        self.assertIn("sinks(%sinks : memref<?xf32>)", sink.source())
        # The backward: the same captures, then sinks and dsinks.
        bw = Variant("bf16", 128, True, backward=True, alibi=True,
                     document=True, sinks=True).source()
        self.assertIn("%dv: memref<?x?x?x128xbf16>,\n    %slopes: "
                      "memref<?xf32>,\n    %document: memref<?x?xi32>,\n"
                      "    %key_ranges: memref<?x?x4xi32>,\n    %sinks: "
                      "memref<?xf32>,\n    %dsinks: memref<?xf32>) {", bw)
        self.assertIn("sinks(%sinks : memref<?xf32> -> %dsinks : "
                      "memref<?xf32>)", bw)
        self.assertIn("key_ranges = array<i64: 2, 128>", bw)
        self.assertIn("math.tanh", Variant(
            "bf16", 64, softcap=5.0, prefix_lm=True, backward=True).source())

    def test_chunk_names(self):
        """chunk_size: "-chunk<C>" after the window in the name, "_chunked"
        after "_window" in the kernel name, parsed back, a mod of its own
        in equality and hashing; the backward's forward keeps it."""
        v = Variant("bf16", 128, True, chunk_size=8192)
        self.assertEqual((v.name, v.kernel_name),
                         ("bf16-d128-causal-chunk8192",
                          "attention_causal_chunked"))
        self.assertTrue(v.has_mods)
        self.assertEqual(parse_variant(v.name), v)
        self.assertNotEqual(v, Variant("bf16", 128, True))
        self.assertNotEqual(v, Variant("bf16", 128, True, chunk_size=8191))
        self.assertNotEqual(v, Variant("bf16", 128, True, window=8192))
        self.assertNotEqual(hash(v), hash(Variant("bf16", 128, True,
                                                  window=8192)))
        # Integral floats are numbers of positions, as window takes them.
        self.assertEqual(Variant("bf16", 128, True, chunk_size=8192.0), v)
        for name, kernel in (
                ("f16-d64-chunk100", "attention_f16_d64_chunked"),
                ("bf16-d128-causal-scale0.5-softcap30.0-window64-chunk100",
                 "attention_causal_softcap_window_chunked"),
                ("bf16-d256-causal-window0-chunk1-alibi-sink",
                 "attention_d256_causal_window_chunked_alibi_sink"),
                ("bf16-d64-causal-chunk300-sink-backward-deterministic",
                 "attention_backward_d64_causal_chunked_sink_deterministic")):
            w = parse_variant(name)
            self.assertEqual((w.name, w.kernel_name), (name, kernel))
        w = parse_variant("bf16-d128-causal-softcap30.0-window64-chunk100")
        self.assertEqual((w.softcap, w.window, w.chunk_size),
                         (30.0, 64, 100))
        bw = parse_variant("bf16-d128-causal-window64-chunk100-sink-backward")
        self.assertEqual(bw.chunk_size, 100)
        self.assertEqual(bw.forward(), parse_variant(
            "bf16-d128-causal-window64-chunk100-sink"))

    def test_chunk_refused(self):
        for bad in (0, -4, 2.5, "64", True, float("nan"), float("inf"),
                    [64]):
            with self.subTest(chunk_size=bad):
                with self.assertRaisesRegex(variants.VariantError,
                                            "chunk_size must be") as cm:
                    Variant("bf16", 128, True, chunk_size=bad)
                self.assertIn(repr(bad), str(cm.exception))
        # As window: dense batches only, and not under the block-mask
        # tables, whose full key tiles skip the mask_mod.
        for bad, msg in (
                (dict(varlen=True), "chunk_size, .*dense batches"),
                (dict(document=True),
                 "chunk_size with document_ids or prefix_lengths"),
                (dict(prefix_lm=True, causal=False),
                 "chunk_size with document_ids or prefix_lengths")):
            with self.subTest(bad=bad):
                flags = dict(dict(causal=True), **bad)
                with self.assertRaisesRegex(variants.VariantError, msg):
                    Variant("bf16", 128, chunk_size=64, **flags)
        for bad in ("bf16-d128-chunk0", "bf16-d128-chunk", "bf16-d128-chunk-8",
                    "bf16-d128-chunkx", "bf16-d128-chunk8-window4",
                    "bf16-d128-chunk8-chunk8", "bf16-d128-sink-chunk8",
                    "bf16-d128-chunk8-varlen", "bf16-d128-chunk8-document",
                    "bf16-d128-chunk8-prefixlm"):
            with self.assertRaises(variants.VariantError, msg=bad):
                parse_variant(bad)

    def test_chunk_region_is_the_shipped_kernels(self):
        """The chunk's mask_mod is kernels/attention_chunked.mlir's, line
        for line, with the variant's chunk for 8192 (the form the
        compiler's keyChunk reads, which skips the key tiles outside each
        tile's chunks); with a window, one region: the window's and the
        chunk's comparisons, each as its shipped kernel writes it, joined
        by arith.andi."""
        def shipped_body(kernel):
            with open(os.path.join(ROOT, "kernels", kernel + ".mlir")) as f:
                return self.region_body(f.read(), "mask_mod")

        chunked = shipped_body("attention_chunked")
        window = shipped_body("attention_sliding_window")
        self.assertIn("%chunk = arith.constant 8192 : index", chunked)
        for chunk in (8192, 100, 1):
            for v in (Variant("bf16", 128, True, chunk_size=chunk),
                      Variant("f16", 64, chunk_size=chunk, sinks=True),
                      Variant("bf16", 64, True, chunk_size=chunk,
                              backward=True)):
                with self.subTest(variant=v.name):
                    src = v.source()
                    self.assertEqual(src.count("mask_mod {"), 1)
                    self.assertNotIn("score_mod", src)
                    want = [line.replace("8192", str(chunk))
                            for line in chunked]
                    self.assertEqual(self.region_body(src, "mask_mod"), want)
        src = Variant("bf16", 128, True, window=1024, chunk_size=8192,
                      alibi=True).source()
        self.assertEqual(src.count("mask_mod {"), 1)
        self.assertEqual(
            self.region_body(src, "mask_mod"),
            window[:-1] + chunked[:-1]
            + ["%visible = arith.andi %inside, %same : i1",
               "flash.yield %visible : i1"])
        self.assertEqual(window[-1], "flash.yield %inside : i1")
        self.assertEqual(chunked[-1], "flash.yield %same : i1")
        # The score mods stay their own region beside it.
        self.assertIn("%biased = arith.addf", self.region_body(
            src, "score_mod")[-2])
        self.assertIn("math.tanh", Variant("bf16", 64, True, softcap=20.0,
                                           chunk_size=100).source())

    def test_default_scale_is_no_scale(self):
        self.assertEqual(Variant("bf16", 128, False, 128 ** -0.5),
                         Variant("bf16", 128))
        self.assertEqual(Variant("bf16", 64, False, 0.125).name, "bf16-d64")
        self.assertNotIn("scale", Variant("bf16", 64).source())

    def test_bad_variants(self):
        for bad in ("bf32-d128", "bf16-d96", "bf16", "bf16-d128-causal-causal",
                    "bf16-d128-foo", "bf16-d128-scale-1", "bf16-d128-scalex",
                    "bf16-d128-scale0.1-causal", "bf16-d128-scale",
                    "bf16-d128-varlen-causal", "bf16-d128-varlen-varlen",
                    "bf16-d128-varlen-scale0.5", "bf16-d128-scale-varlen",
                    "bf16-d128varlen"):
            with self.assertRaises(variants.VariantError, msg=bad):
                parse_variant(bad)
        with self.assertRaises(variants.VariantError):
            Variant("bf16", 128, scale=0.0)

    # Shipped kernels no variant generates: their sources fix more than a
    # variant says (attention_gqa_bshd_causal: 32 query over 8 K/V heads).
    FIXED_SHAPE_KERNELS = {"attention_gqa_bshd_causal"}
    # The kernels of the score and mask mods with captures and constants
    # of their own, and the sink's: variants generate only softcap and
    # window, from their own text.
    MOD_KERNELS = {"attention_softcap", "attention_alibi",
                   "attention_sliding_window", "attention_document",
                   "attention_prefix_lm", "attention_sink",
                   "attention_chunked"}

    def test_kernel_names_are_the_shipped_files(self):
        names = {v.kernel_name for v in variants.shipped_variants()}
        files = {f[:-5] for f in os.listdir(os.path.join(ROOT, "kernels"))
                 if f.endswith(".mlir")}
        self.assertEqual(names,
                         files - self.FIXED_SHAPE_KERNELS - self.MOD_KERNELS)
        self.assertTrue(self.FIXED_SHAPE_KERNELS | self.MOD_KERNELS <= files)

    def test_default_configs_match_kernels(self):
        # The table in variants.py must follow kernels/*.mlir.
        for v in variants.shipped_variants():
            with open(os.path.join(ROOT, "kernels", v.kernel_name + ".mlir")) as f:
                text = f.read()
            m = re.search(r"#flash\.config<([^>]*)>", text)
            shipped = {}
            for item in m.group(1).split(","):
                k, val = (s.strip() for s in item.split("="))
                shipped[k] = {"true": 1, "false": 0}.get(val, None)
                if shipped[k] is None:
                    shipped[k] = int(val)
            self.assertEqual(variants.canonical_config(shipped),
                             variants.canonical_config(v.default_config()),
                             v.kernel_name)
            self.assertEqual("causal" in text.split("flash.attention")[1]
                             .split("}")[0].split("config")[0], v.causal)

    def test_source(self):
        src = Variant("f16", 256, True, 0.5).source(
            {"block_m": 128, "block_n": 64, "persistent": 1, "overlap": 0})
        self.assertIn("func.func @attention_f16_d256_causal(", src)
        self.assertIn("{causal, scale = 0.5 : f32, config = #flash.config<"
                      "block_m = 128, block_n = 64, overlap = false, "
                      "persistent = true>}", src)
        self.assertIn("memref<?x?x?x256xf16>", src)
        self.assertNotIn("packed", src)
        with self.assertRaises(variants.VariantError):
            variants.config_text({"block_m": 64, "bogus": 1})

    def test_varlen_source(self):
        # kernels/attention_varlen*.mlir's form: batch 1, cu_seqlens_q,
        # cu_seqlens_k and max_seqlen_q after lse, the packed clause.
        src = Variant("f16", 64, True, 0.5, varlen=True).source()
        self.assertIn("func.func @attention_f16_d64_varlen_causal(", src)
        self.assertIn("%q: memref<1x?x?x64xf16>", src)
        self.assertIn("%lse: memref<1x?x?xf32>, %cu_seqlens_q: "
                      "memref<?xi32>,\n    %cu_seqlens_k: memref<?xi32>, "
                      "%max_seqlen_q: index) {", src)
        self.assertIn("flash.attention %q, %k, %v -> %o, lse %lse\n"
                      "      packed(%cu_seqlens_q : memref<?xi32>, "
                      "%cu_seqlens_k : memref<?xi32>, max_q %max_seqlen_q)\n"
                      "      {causal, scale = 0.5 : f32, config = "
                      "#flash.config<", src)
        self.assertIn("-> memref<1x?x?x64xf16>, memref<1x?x?xf32>", src)
        # The dense variant's config.
        self.assertEqual(Variant("bf16", 64, varlen=True).default_config(),
                         Variant("bf16", 64).default_config())

    def test_bucket(self):
        self.assertEqual(variants.bucket_of(4, 16, 3000, 128),
                         {"seq": 4096, "head_dim": 128, "batch_heads": 64})
        self.assertEqual(variants.bucket_of(1, 1, 1, 64),
                         {"seq": 1, "head_dim": 64, "batch_heads": 1})
        self.assertEqual(variants.bucket_of(2, 8, 512, 64)["seq"], 512)

    def test_tuning_lookup(self):
        db = os.path.join(ROOT, "bench", "tuning", "h200-fa3.json")
        v = Variant("bf16", 128)
        b = variants.bucket_of(8, 16, 2048, 128)
        found = variants.find_tuning(v, "NVIDIA H200", "sm_90a", b, [db])
        self.assertIsNotNone(found)
        self.assertEqual(found[1]["kernel"], "attention")
        self.assertEqual(found[1]["shape"], [8, 16, 2048, 128])
        config, info = library.resolve_config(v, "NVIDIA H200", "sm_90a", b,
                                              [db])
        self.assertEqual(config, found[1]["config"])
        self.assertEqual(info["tuning_db"], db)
        # Another GPU, bucket or scale-free dtype: the default config.
        for gpu, bb in (("NVIDIA H100 80GB HBM3", b),
                        ("NVIDIA H200", variants.bucket_of(1, 1, 100, 128))):
            self.assertIsNone(variants.find_tuning(v, gpu, "sm_90a", bb, [db]))
            self.assertEqual(library.resolve_config(v, gpu, "sm_90a", bb, [db]),
                             (v.default_config(), None))
        # A scaled variant takes its kernel's entries too.
        self.assertIsNotNone(variants.find_tuning(
            Variant("bf16", 128, False, 0.3), "NVIDIA H200", "sm_90a", b, [db]))
        # A packed-sequence variant has none: its dense variant's default.
        pv = Variant("bf16", 128, varlen=True)
        self.assertIsNone(variants.find_tuning(pv, "NVIDIA H200", "sm_90a", b,
                                               [db]))
        self.assertEqual(library.resolve_config(pv, "NVIDIA H200", "sm_90a",
                                                b, [db]),
                         (v.default_config(), None))

    def test_shipped_databases(self):
        # The package's tuning/ (bench/tuning in a checkout) is the default,
        # and it has an entry for each GPU's every shipped kernel at the FA3
        # shapes: bf16 and f16, D 64/128/256, causal and not.
        saved = os.environ.pop("FLASHC_TUNING_DB", None)
        try:
            dbs = variants.default_tuning_dbs()
        finally:
            if saved is not None:
                os.environ["FLASHC_TUNING_DB"] = saved
        names = sorted(os.path.basename(p) for p in dbs)
        self.assertEqual(names, ["h100-fa3.json", "h200-fa3.json"])
        for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
            for dtype in ("bf16", "f16"):
                for d in (64, 128, 256):
                    for causal in (False, True):
                        v = Variant(dtype, d, causal)
                        b = variants.bucket_of(16384 // 4096, 2048 // d,
                                               4096, d)
                        found = variants.find_tuning(v, gpu, "sm_90a", b, dbs)
                        self.assertIsNotNone(found, (gpu, v.name))
                        self.assertEqual(found[1]["gpu"], gpu)
                        self.assertEqual(found[1]["kernel"], v.kernel_name)


class KeyTest(StubEnv):
    def test_same_inputs_same_key(self):
        tc = cache.Toolchain()
        a = cache.cache_key("src", {"block_m": 128}, "sm_90a", tc.key_inputs())
        b = cache.cache_key("src", {"block_m": 128}, "sm_90a",
                            cache.Toolchain().key_inputs())
        self.assertEqual(a, b)
        self.assertRegex(a, "^[0-9a-f]{64}$")

    def test_each_input_changes_the_key(self):
        tc = {"flashc_version": "v", "flashc_sha256": "s", "ptxas_version": "p"}
        base = ("src", {"block_m": 128, "stages": 2}, "sm_90a", tc)
        keys = {cache.cache_key(*base)}
        changed = [("src2",) + base[1:],
                   (base[0], {"block_m": 128, "stages": 3}) + base[2:],
                   base[:2] + ("sm_100a", tc)]
        for k in tc:
            changed.append(base[:3] + (dict(tc, **{k: tc[k] + "x"}),))
        for args in changed:
            keys.add(cache.cache_key(*args))
        self.assertEqual(len(keys), 1 + len(changed))

    def test_toolchain_inputs(self):
        a = cache.Toolchain().key_inputs()
        self.assertEqual(a["flashc_version"], "stub flashc 1")
        self.assertEqual(a["ptxas_version"], "stub ptxas, release 13.0")
        # A rebuilt compiler with the same --version is another key.
        other = self.make_compiler("stub2", extra="# rebuilt\n")
        b = cache.Toolchain(compiler=other).key_inputs()
        self.assertEqual(a["flashc_version"], b["flashc_version"])
        self.assertNotEqual(a["flashc_sha256"], b["flashc_sha256"])

    def test_variant_and_config_change_the_entry(self):
        paths = {self.entry("bf16-d128")[0], self.entry("bf16-d128-causal")[0],
                 self.entry("f16-d128")[0], self.entry("bf16-d128-scale0.5")[0],
                 self.entry("bf16-d128", {"block_m": 128, "block_n": 64})[0],
                 self.entry("bf16-d128-varlen")[0]}
        self.assertEqual(len(paths), 6)
        # The default config spelt out is the same entry.
        self.assertEqual(self.entry("bf16-d128")[0], self.entry(
            "bf16-d128", dict(variants.DEFAULT_CONFIGS["bf16", 128]))[0])


def _second_process(q):
    from flashc import library as lib
    from flashc.variants import parse_variant as pv
    q.put(lib.compile_variant(pv("bf16-d128")))


def _concurrent_worker(barrier, q, no_locks=False):
    if no_locks:  # a filesystem where flock fails
        import fcntl

        def flock(fd, op):
            raise OSError(37, "No locks available")
        fcntl.flock = flock
    from flashc import cache as c
    from flashc import library as lib
    from flashc.variants import parse_variant as pv
    barrier.wait()
    path, compiled = lib.compile_variant(pv("bf16-d64-causal"))
    q.put((path, compiled, c.validate_entry(path)))


class CacheTest(StubEnv):
    def test_miss_then_hit(self):
        path, compiled = self.entry()
        self.assertTrue(compiled)
        self.assertEqual(self.compiles(), 1)
        self.assertIsNone(cache.validate_entry(path))
        self.assertEqual(os.path.dirname(path), self.cache)
        with open(os.path.join(path, "entry.json")) as f:
            entry = json.load(f)
        self.assertEqual(entry["info"]["variant"], "bf16-d128")
        with open(os.path.join(path, "source.mlir")) as f:
            self.assertEqual(f.read(), Variant("bf16", 128).source())
        self.assertEqual(self.entry(), (path, False))
        self.assertEqual(self.compiles(), 1)
        # No temporary directories left behind.
        self.assertEqual([n for n in os.listdir(self.cache)
                          if n.startswith(".tmp") or n.startswith(".old")], [])

    def test_second_process_hits(self):
        path, _ = self.entry()
        ctx = multiprocessing.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=_second_process, args=(q,))
        p.start()
        res = q.get(timeout=60)
        p.join(60)
        self.assertEqual(p.exitcode, 0)
        self.assertEqual(tuple(res), (path, False))
        self.assertEqual(self.compiles(), 1)

    def test_cache_dir_env(self):
        other = os.path.join(self.tmp, "elsewhere")
        os.environ["FLASHC_CACHE_DIR"] = other
        path, compiled = self.entry()
        self.assertTrue(compiled)
        self.assertEqual(os.path.dirname(path), other)
        del os.environ["FLASHC_CACHE_DIR"]
        self.assertEqual(cache.cache_dir(), os.path.join(
            os.path.expanduser("~"), ".cache", "flashc"))

    def corrupt_and_rebuild(self, damage):
        path, _ = self.entry()
        damage(path)
        self.assertIsNotNone(cache.validate_entry(path))
        self.assertEqual(self.entry(), (path, True))
        self.assertIsNone(cache.validate_entry(path))
        self.assertEqual(self.compiles(), 2)

    def test_truncated_binary(self):
        def damage(path):
            with open(os.path.join(path, "kernel.cubin"), "r+b") as f:
                f.truncate(10)
        self.corrupt_and_rebuild(damage)

    def test_binary_of_same_size_but_other_bytes(self):
        def damage(path):
            p = os.path.join(path, "kernel.cubin")
            with open(p, "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(b"X" * len(data))
        self.corrupt_and_rebuild(damage)

    def test_missing_binary(self):
        self.corrupt_and_rebuild(
            lambda path: os.unlink(os.path.join(path, "kernel.cubin")))

    def test_unparsable_metadata(self):
        def damage(path):
            with open(os.path.join(path, "kernel.json"), "w") as f:
                f.write('{"format": "flashc-kern')
        self.corrupt_and_rebuild(damage)

    def test_partial_entry(self):
        # A directory without entry.json (say, copied in half).
        self.corrupt_and_rebuild(
            lambda path: os.unlink(os.path.join(path, "entry.json")))

    def test_unparsable_entry(self):
        def damage(path):
            with open(os.path.join(path, "entry.json"), "w") as f:
                f.write("")
        self.corrupt_and_rebuild(damage)

    def test_file_in_place_of_the_entry(self):
        def damage(path):
            shutil.rmtree(path)
            with open(path, "w") as f:
                f.write("not a directory")
        self.corrupt_and_rebuild(damage)
        self.assertEqual([n for n in os.listdir(self.cache)
                          if n.startswith(".old")], [])

    def test_dead_builders_leftovers_are_removed(self):
        path, _ = self.entry()
        key = os.path.basename(path)
        shutil.rmtree(path)
        junk = os.path.join(self.cache, f".tmp-{key}-99999-dead")
        os.makedirs(junk)
        self.assertEqual(self.entry(), (path, True))
        self.assertFalse(os.path.exists(junk))

    def test_compile_failure(self):
        os.environ["STUB_FAIL"] = "1"
        with self.assertRaises(cache.CompileError) as cm:
            self.entry()
        self.assertIn("stub failure", str(cm.exception))
        self.assertIsInstance(cm.exception, flashc.FlashcError)
        self.assertEqual([n for n in os.listdir(self.cache)
                          if not n.startswith(".locks")], [])
        del os.environ["STUB_FAIL"]
        self.assertTrue(self.entry()[1])

    def concurrent_builders(self, no_locks):
        os.environ["STUB_SLEEP"] = "1"
        ctx = multiprocessing.get_context("spawn")
        n = 4
        barrier = ctx.Barrier(n)
        q = ctx.Queue()
        procs = [ctx.Process(target=_concurrent_worker,
                             args=(barrier, q, no_locks)) for _ in range(n)]
        for p in procs:
            p.start()
        results = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
            self.assertEqual(p.exitcode, 0)
        self.assertEqual(len({r[0] for r in results}), 1)
        self.assertTrue(all(r[2] is None for r in results), results)
        self.assertEqual([n for n in os.listdir(self.cache)
                          if n.startswith(".tmp")], [])
        return results

    def test_concurrent_builders(self):
        # Four processes ask for the same missing key at once; the compile
        # takes a second. Each must end with the one valid entry, built once.
        results = self.concurrent_builders(no_locks=False)
        self.assertEqual(sorted(r[1] for r in results), [False] * 3 + [True])
        self.assertEqual(self.compiles(), 1)

    def test_concurrent_builders_without_locks(self):
        # Where flock fails, every process may compile, but the first
        # rename wins and the others take its entry.
        results = self.concurrent_builders(no_locks=True)
        self.assertEqual(sum(r[1] for r in results), 1)
        self.assertGreaterEqual(self.compiles(), 1)

    def test_no_compiler(self):
        os.environ["FLASHC_COMPILER"] = "none"
        with self.assertRaisesRegex(cache.CompileError, "no flashc compiler"):
            cache.Toolchain()
        os.environ["FLASHC_COMPILER"] = os.path.join(self.tmp, "nope")
        with self.assertRaisesRegex(cache.CompileError, "not an executable"):
            cache.Toolchain()


class DumpTest(StubEnv):
    def test_dump_stages(self):
        os.environ["FLASHC_DUMP"] = "tile,ptx"
        path, _ = self.entry()
        for f in ("kernel.tile.mlir", "kernel.ptx"):
            self.assertTrue(os.path.getsize(os.path.join(path, f)) > 0, f)
        for f in ("kernel.gpu.mlir", "kernel.ll"):
            self.assertFalse(os.path.exists(os.path.join(path, f)), f)
        # --emit=ptx's own kernel.json did not replace the cubin's.
        self.assertIsNone(cache.validate_entry(path))
        # A hit asking for more stages adds them without recompiling.
        os.environ["FLASHC_DUMP"] = "all"
        self.assertEqual(self.entry(), (path, False))
        for f in cache.DUMP_FILES.values():
            self.assertTrue(os.path.exists(os.path.join(path, f)), f)
        self.assertEqual(self.compiles("cubin"), 1)
        self.assertEqual(self.compiles("ptx"), 1)
        self.assertEqual(self.compiles("llvm"), 1)

    def test_no_dump_by_default(self):
        path, _ = self.entry()
        self.assertEqual(sorted(os.listdir(path)), [
            "entry.json", "kernel.cubin", "kernel.json", "source.mlir"])

    def test_bad_stage(self):
        os.environ["FLASHC_DUMP"] = "tile,sass"
        with self.assertRaisesRegex(cache.CompileError, "sass"):
            self.entry()


class CpuEntryTest(StubEnv):
    """The CPU target's entries (flashc --target=cpu, kernel.so) in the same
    cache: keyed apart from the GPU entry of the same source."""

    def test_apart_from_the_gpu_entry(self):
        v = parse_variant("bf16-d64-causal")
        gpu_path, _ = library.compile_variant(v)
        cpu_path, compiled = cpu.compile_variant(v)
        self.assertTrue(compiled)
        self.assertNotEqual(gpu_path, cpu_path)
        self.assertEqual(sorted(os.listdir(cpu_path)), [
            "entry.json", "kernel.json", "kernel.so", "source.mlir"])
        for path in (gpu_path, cpu_path):
            with open(os.path.join(path, "source.mlir")) as f:
                self.assertEqual(f.read(), v.source())
        with open(os.path.join(cpu_path, "entry.json")) as f:
            entry = json.load(f)
        self.assertEqual(entry["arch"], cache.CPU_ARCH)
        self.assertIn("cc_version", entry["toolchain"])
        self.assertNotIn("ptxas_version", entry["toolchain"])
        self.assertEqual((self.compiles("cubin"), self.compiles("so")), (1, 1))
        self.assertIsNone(cache.validate_entry(cpu_path, binary="kernel.so"))
        self.assertIsNotNone(cache.validate_entry(cpu_path,
                                                  binary="kernel.cubin"))
        self.assertEqual(cpu.compile_variant(v), (cpu_path, False))
        self.assertEqual(self.compiles("so"), 1)

    def test_corrupt_library_is_rebuilt(self):
        v = parse_variant("f16-d128")
        path, _ = cpu.compile_variant(v)
        with open(os.path.join(path, "kernel.so"), "r+b") as f:
            f.truncate(10)
        self.assertEqual(cpu.compile_variant(v), (path, True))
        self.assertIsNone(cache.validate_entry(path))
        self.assertEqual(self.compiles("so"), 2)

    def test_dumps_have_no_ptx(self):
        os.environ["FLASHC_DUMP"] = "all"
        path, _ = cpu.compile_variant(parse_variant("bf16-d128"))
        for f in ("kernel.tile.mlir", "kernel.cpu.mlir", "kernel.ll"):
            self.assertTrue(os.path.exists(os.path.join(path, f)), f)
        self.assertFalse(os.path.exists(os.path.join(path, "kernel.ptx")))
        self.assertEqual(self.compiles("ptx"), 0)

    def test_toolchain_mismatch(self):
        with self.assertRaisesRegex(cache.CompileError, "toolchain for the"):
            cache.get_entry("src", {}, cache.CPU_ARCH,
                            toolchain=cache.Toolchain())


class LibraryTest(StubEnv):
    def build(self, *args):
        lib = os.path.join(self.tmp, "lib")
        r = subprocess.run([sys.executable, "-m", "flashc", "build-library",
                            lib] + list(args),
                           env=dict(os.environ, PYTHONPATH=os.path.join(
                               ROOT, "python")),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, r.stdout.decode())
        return lib

    def test_build_and_use_without_compiler(self):
        lib = self.build("--variants", "bf16-d128,f16-d64-causal",
                         "--variants", "bf16-d256-scale0.5,bf16-d128-varlen")
        with open(os.path.join(lib, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual(sorted(m["variants"]), [
            "bf16-d128", "bf16-d128-varlen", "bf16-d256-scale0.5",
            "f16-d64-causal"])
        os.environ["FLASHC_COMPILER"] = "none"
        os.environ["FLASHC_LIBRARY"] = lib
        shutil.rmtree(self.cache)  # the library stands alone
        n = self.compiles()
        for name in m["variants"]:
            p = library.kernel_binary(parse_variant(name), "sm_90a",
                                      "NVIDIA H200", None)
            self.assertTrue(p.startswith(lib + os.sep), p)
            self.assertTrue(os.path.exists(p))
            with open(os.path.join(os.path.dirname(p), "kernel.json")) as f:
                self.assertEqual(json.load(f)["binary"], "kernel.cubin")
        self.assertEqual(self.compiles(), n)

    def test_capture_variants(self):
        """build-library takes the capture variants' names, forward and
        backward, and the library serves them by name."""
        names = ["bf16-d64-causal-alibi-sink", "f16-d128-causal-document",
                 "bf16-d128-prefixlm-sink-backward",
                 "bf16-d128-causal-chunk8192",
                 "f16-d64-causal-window256-chunk1000-sink-backward"]
        lib = self.build("--variants", ",".join(names))
        with open(os.path.join(lib, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual(sorted(m["variants"]), sorted(names))
        os.environ["FLASHC_COMPILER"] = "none"
        os.environ["FLASHC_LIBRARY"] = lib
        for name in names:
            p = library.kernel_binary(parse_variant(name), "sm_90a",
                                      "NVIDIA H200", None)
            with open(os.path.join(os.path.dirname(p), "source.mlir")) as f:
                self.assertEqual(f.read(), parse_variant(name).source())
        r = subprocess.run([sys.executable, "-m", "flashc", "build-library",
                            lib, "--variants", "bf16-d128-document-varlen"],
                           env=dict(os.environ, PYTHONPATH=os.path.join(
                               ROOT, "python")),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("dense batches", r.stdout.decode())

    def test_missing_variant(self):
        lib = self.build("--variants", "bf16-d128")
        os.environ["FLASHC_COMPILER"] = "none"
        os.environ["FLASHC_LIBRARY"] = lib
        with self.assertRaises(library.MissingVariant) as cm:
            library.kernel_binary(parse_variant("f16-d64-causal"), "sm_90a",
                                  "NVIDIA H200", None)
        msg = str(cm.exception)
        self.assertIn("no variant f16-d64-causal", msg)
        self.assertIn(f"python -m flashc build-library {lib} --variants "
                      "f16-d64-causal", msg)
        self.assertIsInstance(cm.exception, flashc.FlashcError)
        # Without a library either.
        del os.environ["FLASHC_LIBRARY"]
        with self.assertRaisesRegex(library.MissingVariant,
                                    "(?s)cannot build variant f16-d64-causal"
                                    ".*FLASHC_LIBRARY.*build-library"):
            library.kernel_binary(parse_variant("f16-d64-causal"), "sm_90a",
                                  None, None)

    def test_library_variant_missing_but_compiler_present(self):
        lib = self.build("--variants", "bf16-d128")
        os.environ["FLASHC_LIBRARY"] = lib
        p = library.kernel_binary(parse_variant("bf16-d64"), "sm_90a", None,
                                  None)
        self.assertTrue(p.startswith(self.cache), p)

    def test_tuned_kernels(self):
        db = os.path.join(ROOT, "bench", "tuning", "h200-fa3.json")
        lib = self.build("--variants", "bf16-d128-causal", "--tuning-db", db,
                         "--gpu", "NVIDIA H200")
        with open(os.path.join(lib, "manifest.json")) as f:
            rec = json.load(f)["variants"]["bf16-d128-causal"]
        self.assertEqual(len(rec["tuned"]), 6)
        os.environ["FLASHC_COMPILER"] = "none"
        os.environ["FLASHC_LIBRARY"] = lib
        v = parse_variant("bf16-d128-causal")
        b = variants.bucket_of(8, 16, 2048, 128)
        tuned = library.kernel_binary(v, "sm_90a", "NVIDIA H200", b)
        with open(os.path.join(os.path.dirname(tuned), "source.mlir")) as f:
            src = f.read()
        entry = variants.find_tuning(v, "NVIDIA H200", "sm_90a", b, [db])[1]
        self.assertIn(variants.config_text(entry["config"]), src)
        self.assertEqual(library.kernel_binary(v, "sm_90a", "NVIDIA H100", b),
                         os.path.join(lib, rec["default"]))

    def test_bad_variant_argument(self):
        r = subprocess.run([sys.executable, "-m", "flashc", "build-library",
                            os.path.join(self.tmp, "lib"), "--variants",
                            "bf16-d100"],
                           env=dict(os.environ, PYTHONPATH=os.path.join(
                               ROOT, "python")),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("head dim 100", r.stdout.decode())


def real_compiler():
    p = os.environ.get("FLASHC_COMPILER") or os.path.join(
        ROOT, "build", "bin", "flashc")
    return p if os.access(p, os.X_OK) else None


class RealCompilerTest(unittest.TestCase):
    """The real flashc: the generated source gives the shipped kernels'
    binaries, and a tuned config the binary `flashc --tuning-db` writes."""

    @classmethod
    def setUpClass(cls):
        cls.compiler = real_compiler()
        if cls.compiler is None:
            raise unittest.SkipTest("no flashc binary (set FLASHC_COMPILER "
                                    "or build build/bin/flashc)")
        if cache.find_cuda_root()[1] is None:
            raise unittest.SkipTest("no ptxas (CUDA toolkit)")

    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ENV_VARS}
        self.addCleanup(lambda: [os.environ.pop(k, None) if v is None else
                                 os.environ.__setitem__(k, v)
                                 for k, v in self.saved.items()])
        self.tmp = tempfile.mkdtemp(prefix="flashc-real-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.environ.update(FLASHC_CACHE_DIR=os.path.join(self.tmp, "cache"),
                          FLASHC_COMPILER=self.compiler, FLASHC_TUNING_DB="")
        os.environ.pop("FLASHC_DUMP", None)

    def flashc(self, *args):
        out = os.path.join(self.tmp, "ref.cubin")
        subprocess.run([self.compiler, *args, "-o", out], check=True)
        with open(out, "rb") as f:
            return f.read()

    def test_generated_source_is_the_shipped_kernel(self):
        for name in ("bf16-d64-causal", "f16-d256", "bf16-d128-varlen",
                     "bf16-d128-causal-varlen"):
            v = parse_variant(name)
            path, compiled = library.compile_variant(v)
            self.assertTrue(compiled)
            with open(os.path.join(path, "kernel.cubin"), "rb") as f:
                ours = f.read()
            ref = self.flashc(os.path.join(ROOT, "kernels",
                                           v.kernel_name + ".mlir"))
            self.assertEqual(ours, ref, name)
            self.assertEqual(library.compile_variant(v), (path, False))
            with open(os.path.join(path, "kernel.json")) as f:
                grid = json.load(f)["grid"]["kind"]
            self.assertEqual(grid == "packed", v.varlen, name)

    def test_capture_variants_are_the_shipped_kernels(self):
        """A capture (or chunk) variant's generated source compiles to the
        shipped kernel's cubin (its function renamed to the variant's kernel
        name, and the shipped config), and kernel.json lists its captures
        in the order the Python side passes them; the backward's add
        dsinks."""
        sink_config = {"block_m": 128, "block_n": 128, "stages": 2,
                       "warpgroups": 2}
        for kernel, name, config, roles in (
                ("attention_alibi", "bf16-d128-causal-alibi", None,
                 [("capture", "f32", 1)]),
                ("attention_sink", "bf16-d64-causal-sink", sink_config,
                 [("sinks", "f32", 1)]),
                ("attention_document", "bf16-d128-causal-document", None,
                 [("capture", "i32", 2), ("capture", "i32", 3)]),
                ("attention_prefix_lm", "bf16-d128-prefixlm", None,
                 [("capture", "i32", 1), ("capture", "i32", 3)]),
                # No capture (kernel.json lists none): the chunk is the
                # region's constant, and the same bytes mean the same
                # skipped key tiles.
                ("attention_chunked", "bf16-d128-causal-chunk8192", None,
                 [])):
            with self.subTest(variant=name):
                v = parse_variant(name)
                path, _ = library.compile_variant(v, config)
                with open(os.path.join(path, "kernel.cubin"), "rb") as f:
                    ours = f.read()
                with open(os.path.join(path, "kernel.json")) as f:
                    meta = json.load(f)
                self.assertEqual([(c["role"], c["dtype"], c["rank"])
                                  for c in meta.get("captures", [])], roles)
                with open(os.path.join(ROOT, "kernels",
                                       kernel + ".mlir")) as f:
                    shipped = f.read().replace(f"@{kernel}(",
                                               f"@{v.kernel_name}(")
                src = os.path.join(self.tmp, kernel + ".mlir")
                with open(src, "w") as f:
                    f.write(shipped)
                self.assertEqual(ours, self.flashc(src), name)
                bw = parse_variant(name + "-backward")
                path, _ = library.compile_variant(bw)
                with open(os.path.join(path, "kernel.json")) as f:
                    meta = json.load(f)
                want = roles + ([("dsinks", "f32", 1)] if v.sinks else [])
                self.assertEqual([(c["role"], c["dtype"], c["rank"])
                                  for c in meta.get("captures", [])], want)

    def test_varlen_arguments_reach_the_runtime(self):
        # flashc's ctypes structs for a packed launch against the runtime's
        # own checks (flashrt_validate_varlen: no driver, no GPU): each
        # field must land where flashrt.h puts it.
        import ctypes
        try:
            lib = flashc.runtime_library()
        except flashc.FlashcError as e:
            self.skipTest(f"no libflashrt: {e}")
        path, _ = library.compile_variant(parse_variant("bf16-d128-varlen"))
        meta = os.path.join(path, "kernel.json").encode()
        T, TK, H, HKV, D = 300, 200, 8, 2, 128

        def tensor(dtype, sizes, strides, address=1 << 20):
            return flashc._Tensor(address, dtype, len(sizes),
                                  flashc._I64x4(*sizes),
                                  flashc._I64x4(*strides), 0)

        def rows(t, h):  # T x h x D storage as [1, h, T, D]
            return tensor(flashc._DTYPE_BF16, (1, h, t, D),
                          (t * h * D, D, h * D, 1))

        def validate(**change):
            parts = dict(q=rows(T, H), k=rows(TK, HKV), v=rows(TK, HKV),
                         o=rows(T, H),
                         lse=tensor(flashc._DTYPE_F32, (1, H, T),
                                    (H * T, T, 1)),
                         cu_seqlens_q=tensor(flashc._DTYPE_I32, (3,), (1,)),
                         cu_seqlens_k=tensor(flashc._DTYPE_I32, (3,), (1,)))
            max_q = change.pop("max_seqlen_q", 250)
            parts.update(change)
            args = flashc._VarlenArgs(*(ctypes.pointer(parts[n]) for n in (
                "q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k")),
                max_q, None)
            flashc._check(lib.flashrt_validate_varlen(meta,
                                                      ctypes.byref(args)))

        validate()
        cases = [
            ("cu_seqlens_q has dtype f32",
             dict(cu_seqlens_q=tensor(flashc._DTYPE_F32, (3,), (1,)))),
            ("cu_seqlens_q has 3 entries and cu_seqlens_k 4",
             dict(cu_seqlens_k=tensor(flashc._DTYPE_I32, (4,), (1,)))),
            ("cu_seqlens_k has rank 2",
             dict(cu_seqlens_k=tensor(flashc._DTYPE_I32, (3, 1), (1, 1)))),
            ("max_seqlen_q = 301 is outside", dict(max_seqlen_q=301)),
            ("lse \\[1, 8, 299\\] does not match q",
             dict(lse=tensor(flashc._DTYPE_F32, (1, H, T - 1),
                             (H * T, T, 1)))),
        ]
        for msg, change in cases:
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(flashc.FlashcError, msg) as cm:
                    validate(**change)
                self.assertEqual(cm.exception.status, 4)

    def test_tuned_config_is_flashc_tuning_db(self):
        db = os.path.join(ROOT, "bench", "tuning", "h200-fa3.json")
        v = parse_variant("bf16-d128-causal")
        b = variants.bucket_of(8, 16, 2048, 128)
        config, info = library.resolve_config(v, "NVIDIA H200", "sm_90a", b,
                                              [db])
        self.assertIsNotNone(info)
        path, _ = library.compile_variant(v, config, info=info)
        with open(os.path.join(path, "kernel.cubin"), "rb") as f:
            ours = f.read()
        ref = self.flashc(os.path.join(ROOT, "kernels",
                                       "attention_causal.mlir"),
                          "--tuning-db", db, "--shape", "8,16,2048,128")
        self.assertEqual(ours, ref)

    def test_small_scale(self):
        path, _ = library.compile_variant(parse_variant("f16-d128-scale1e-05"))
        with open(os.path.join(path, "kernel.json")) as f:
            self.assertAlmostEqual(json.load(f)["scale"] * 1e5, 1.0, places=5)

    def test_scale_and_dumps(self):
        os.environ["FLASHC_DUMP"] = "all"
        path, _ = library.compile_variant(parse_variant("bf16-d64-scale0.25"))
        with open(os.path.join(path, "kernel.json")) as f:
            meta = json.load(f)
        self.assertAlmostEqual(meta["scale"], 0.25, places=6)
        with open(os.path.join(path, "kernel.tile.mlir")) as f:
            self.assertIn("flash.grid", f.read())
        with open(os.path.join(path, "kernel.gpu.mlir")) as f:
            self.assertIn("gpu.module", f.read())
        with open(os.path.join(path, "kernel.ll")) as f:
            self.assertIn("define", f.read())
        with open(os.path.join(path, "kernel.ptx")) as f:
            self.assertIn(".entry", f.read())
        self.assertIsNone(cache.validate_entry(path))


if __name__ == "__main__":
    unittest.main()

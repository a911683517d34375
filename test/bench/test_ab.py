#!/usr/bin/env python3
"""CPU tests of bench/ab.py's argument checks (no GPU, no torch)."""
import io
import json
import os
import sys
import tempfile
import types
import unittest
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ab  # noqa: E402

BF16_D128 = {"dtype": "bf16", "causal": False, "head_dim": 128}


class ShapeTest(unittest.TestCase):
    def test_four_positive_integers(self):
        self.assertEqual(ab.parse_shape("8,16,2048,128"), (8, 16, 2048, 128))

    def test_bad_shapes_name_the_flag(self):
        for text in ("8,16,2048", "8,16,x,128", "8,0,2048,128", ""):
            with self.assertRaisesRegex(ValueError, "--shape wants four"):
                ab.parse_shape(text)

    def test_metadata_beside_the_cubin(self):
        self.assertEqual(ab.metadata_path("k/a.cubin"), "k/a.json")
        self.assertEqual(ab.metadata_path("k/a.json"), "k/a.json")


class CheckKernelsTest(unittest.TestCase):
    def test_same_kernel_kind_passes(self):
        ab.check_kernels((1, 1, 64, 128), [("a", BF16_D128), ("b", BF16_D128)])

    def test_each_mismatch_names_the_kernel(self):
        shape = (1, 1, 64, 128)
        cases = [
            ({**BF16_D128, "dtype": "f16"}, "b: dtype f16, but a has bf16"),
            ({**BF16_D128, "causal": True}, "b: causal True, but a has False"),
            ({**BF16_D128, "head_dim": 64}, "b: head_dim 64, but the shape "
                                            "has D = 128"),
        ]
        for meta, message in cases:
            with self.assertRaises(ValueError) as err:
                ab.check_kernels(shape, [("a", BF16_D128), ("b", meta)])
            self.assertEqual(str(err.exception), message)

    def test_main_reports_a_mismatch_before_touching_the_gpu(self):
        with tempfile.TemporaryDirectory() as d:
            for name, meta in (("a", BF16_D128),
                               ("b", {**BF16_D128, "causal": True})):
                with open(os.path.join(d, name + ".json"), "w") as f:
                    json.dump(meta, f)
            err = io.StringIO()
            with redirect_stderr(err):
                rc = ab.main(["--shape", "1,1,64,128",
                              os.path.join(d, "a.cubin"),
                              os.path.join(d, "b.cubin")])
            self.assertEqual(rc, 2)
            self.assertIn("causal True", err.getvalue())

    def test_main_reports_a_missing_json(self):
        err = io.StringIO()
        with redirect_stderr(err):
            rc = ab.main(["--shape", "1,1,64,128", "/nonexistent/a.cubin"])
        self.assertEqual(rc, 2)
        self.assertIn("/nonexistent/a.json", err.getvalue())


class FakeTensor:
    """Just enough of a tensor for ab.main: a scalar standing for all of it."""

    def __init__(self, value):
        self.value = value

    def float(self):
        return self

    def __sub__(self, other):
        return FakeTensor(self.value - other.value)

    def norm(self):
        return FakeTensor(abs(self.value))

    def __truediv__(self, other):
        return FakeTensor(self.value / other.value)

    def item(self):
        return self.value


class MainTest(unittest.TestCase):
    """ab.main end to end with stand-ins for torch, flashc and do_bench."""

    def setUp(self):
        self.saved = {m: sys.modules.get(m) for m in ("torch", "flashc")}
        self.saved_bench = ab.compare.bench_fn
        self.launches = []
        torch = types.ModuleType("torch")
        torch.bfloat16, torch.float16 = "bf16", "f16"
        torch.manual_seed = lambda seed: None
        torch.randn = lambda *shape, device, dtype: FakeTensor(1.0)
        torch.cuda = types.SimpleNamespace(synchronize=lambda: None,
                                           get_device_name=lambda: "fake")
        flashc = types.ModuleType("flashc")
        launches = self.launches

        def load(path):
            # A kernel's output: 1.0, or 1.5 for "b" (to see the diff).
            value = 1.5 if path.endswith("b.cubin") else 1.0

            def kern(q, k, v):
                launches.append(path)
                return FakeTensor(value)
            return kern
        flashc.load = load
        sys.modules["torch"], sys.modules["flashc"] = torch, flashc
        # The "time" of a call: 2 ms for "b", 1 ms otherwise.
        ab.compare.bench_fn = lambda fn, rep: 2.0 if fn().value == 1.5 else 1.0

    def tearDown(self):
        for name, mod in self.saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
        ab.compare.bench_fn = self.saved_bench

    def run_main(self, names):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name in names:
                with open(os.path.join(d, name + ".json"), "w") as f:
                    json.dump(BF16_D128, f)
                paths.append(os.path.join(d, name + ".cubin"))
            out_json = os.path.join(d, "out.json")
            out = io.StringIO()
            with redirect_stdout(out):
                rc = ab.main(["--shape", "1,2,64,128", "--rounds", "3",
                              "--settle-ms", "0", "--own-load-ms", "0",
                              "--json", out_json] + paths)
            self.assertEqual(rc, 0)
            return out.getvalue(), json.load(open(out_json))

    def test_ratio_and_difference_against_the_first_kernel(self):
        table, result = self.run_main(["a", "b"])
        a, b = result["results"]
        self.assertEqual([a["ms"], b["ms"]], [1.0, 2.0])
        self.assertEqual(b["diff_vs_first"], 0.5)
        self.assertEqual([p for _, p in b["rounds"]], [1, 0, 1])
        self.assertAlmostEqual(a["tflops"],
                               ab.compare.flops((1, 2, 64, 128), False) / 1e-3 / 1e12)
        self.assertIn("| 1: b.cubin |", table)
        self.assertIn("| 2.000 |", table)

    def test_a_kernel_against_itself_keeps_both_entries(self):
        _, result = self.run_main(["a", "a"])
        self.assertEqual(len(result["results"]), 2)
        for r in result["results"]:
            self.assertEqual(len(r["rounds"]), 3)
            self.assertEqual(r["diff_vs_first"], 0.0)


if __name__ == "__main__":
    unittest.main()

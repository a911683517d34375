#!/usr/bin/env python3
"""CPU tests of bench/power.py's sample handling and arguments (no GPU)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import power  # noqa: E402


class SmiLineTest(unittest.TestCase):
    def test_watts_and_mhz(self):
        self.assertEqual(power.parse_smi_line("690.82, 1650\n"), (690.82, 1650.0))

    def test_unfilled_lines_are_dropped(self):
        for line in ("[N/A], 1650", "690.1, [Unknown Error]", "", "1, 2, 3"):
            self.assertIsNone(power.parse_smi_line(line), line)


class WindowTest(unittest.TestCase):
    SAMPLES = [(10.0, 100.0, 1980.0),   # before the window
               (10.5, 690.0, 1700.0),   # inside, but the clock settles
               (11.2, 689.0, 1650.0),
               (11.3, 691.0, 1640.0),
               (11.4, 695.0, 1660.0),
               (12.5, 120.0, 1980.0)]   # after the window

    def test_median_after_the_settling_second(self):
        self.assertEqual(power.window(self.SAMPLES, 10.1, 12.0),
                         (691.0, 1650.0, 3))

    def test_no_samples(self):
        self.assertEqual(power.window(self.SAMPLES, 20.0, 22.0), (None, None, 0))


class EnergyRowTest(unittest.TestCase):
    def test_millijoules_are_watts_times_milliseconds(self):
        # 275 GFLOP in 0.4631 ms at 690.8 W: 593.8 TFLOP/s, 319.9 mJ.
        r = power.energy_row("main", 0.4631, 4 * 8 * 16 * 2048**2 * 128,
                             690.8, 1650.0, 20)
        self.assertAlmostEqual(r["us"], 463.1)
        self.assertAlmostEqual(r["tflops"], 593.56, places=1)
        self.assertAlmostEqual(r["mj"], 319.91, places=1)
        self.assertAlmostEqual(r["tflop_per_j"], r["tflops"] / 690.8)
        self.assertEqual(power.format_row(r),
                         "| main | 463.1 | 593.6 | 690.8 | 1650 | 319.9 | "
                         "0.859 | 20 |")

    def test_without_samples_no_energy(self):
        r = power.energy_row("k", 1.0, 1e12, None, None, 0)
        self.assertIsNone(r["mj"])
        self.assertEqual(power.format_row(r), "| k | 1000.0 | 1000.0 | - | - | - | - | 0 |")


class ArgumentTest(unittest.TestCase):
    def run_main(self, argv):
        err = io.StringIO()
        with redirect_stderr(err):
            rc = power.main(argv)
        return rc, err.getvalue()

    def test_bad_shape(self):
        rc, err = self.run_main(["--shape", "8,16,2048", "k.cubin"])
        self.assertEqual(rc, 2)
        self.assertIn("--shape wants four", err)

    def test_seconds_must_outlast_the_settling(self):
        rc, err = self.run_main(["--shape", "8,16,2048,128", "--seconds", "1",
                                 "k.cubin"])
        self.assertEqual(rc, 2)
        self.assertIn("--seconds must exceed", err)

    def test_kernels_must_match_the_shape(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.cubin")
            with open(os.path.join(d, "a.json"), "w") as f:
                json.dump({"dtype": "bf16", "causal": False, "head_dim": 64}, f)
            rc, err = self.run_main(["--shape", "8,16,2048,128", path])
        self.assertEqual(rc, 2)
        self.assertIn("head_dim 64", err)

    def test_missing_metadata(self):
        rc, err = self.run_main(["--shape", "8,16,2048,128", "/nonexistent/a.cubin"])
        self.assertEqual(rc, 2)
        self.assertIn("a.json", err)


if __name__ == "__main__":
    unittest.main()

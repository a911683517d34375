#!/usr/bin/env python3
"""CPU tests of bench/compare.py's timing schedule and where it records a
run (no GPU, no torch)."""
import argparse
import os
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare  # noqa: E402


class FakeTorch(types.ModuleType):
    """Stands in for torch where settle() synchronizes."""

    def __init__(self):
        super().__init__("torch")
        self.syncs = 0
        self.cuda = types.SimpleNamespace(synchronize=self._sync)

    def _sync(self):
        self.syncs += 1


class TimeRoundsTest(unittest.TestCase):
    def setUp(self):
        self.calls = []
        self.saved = compare.bench_fn
        # The "time" of a call is its index in self.calls (1-based).
        compare.bench_fn = lambda fn, rep: fn()

    def tearDown(self):
        compare.bench_fn = self.saved

    def backend(self, label, fail_on=None):
        """fail_on: the backend's own call (1-based) that raises."""
        def fn():
            self.calls.append(label)
            if self.calls.count(label) == fail_on:
                raise RuntimeError(f"{label} broke\nsecond line")
            return float(len(self.calls))
        fn.__name__ = label
        return label, fn

    def test_each_backend_takes_each_place_once(self):
        timed = [self.backend(x) for x in ("cudnn", "fa2", "flashc")]
        row = {}
        runs = compare.time_rounds(timed, 3, 50, row)
        self.assertEqual(self.calls, ["cudnn", "fa2", "flashc",
                                      "fa2", "flashc", "cudnn",
                                      "flashc", "cudnn", "fa2"])
        for label in ("cudnn", "fa2", "flashc"):
            self.assertEqual(sorted(p for _, p in runs[label]), [0, 1, 2])
        self.assertEqual(runs["cudnn"], [(1.0, 0), (6.0, 2), (8.0, 1)])
        self.assertEqual(row, {})

    def test_one_round_keeps_the_old_order(self):
        timed = [self.backend(x) for x in ("cudnn", "fa2", "flashc")]
        runs = compare.time_rounds(timed, 1, 50, {})
        self.assertEqual(self.calls, ["cudnn", "fa2", "flashc"])
        self.assertEqual(runs["flashc"], [(3.0, 2)])

    def test_each_timing_follows_its_own_backends_load(self):
        loads = []
        saved = compare.settle
        compare.settle = lambda fns, ms: loads.append(
            ([f.__name__ for f in fns], ms, len(self.calls)))
        try:
            timed = [self.backend(x) for x in ("cudnn", "flashc")]
            compare.time_rounds(timed, 2, 50, {}, own_load_ms=300)
        finally:
            compare.settle = saved
        self.assertEqual(self.calls, ["cudnn", "flashc", "flashc", "cudnn"])
        # Before the k-th timing (k calls made so far): 300 ms of the
        # backend about to be timed, and of nothing else.
        self.assertEqual([(ms, k) for _, ms, k in loads],
                         [(300, 0), (300, 1), (300, 2), (300, 3)])
        self.assertEqual([names for names, _, _ in loads],
                         [["cudnn"], ["flashc"], ["flashc"], ["cudnn"]])

    def test_a_backend_that_fails_drops_out_with_its_reason(self):
        timed = [self.backend("cudnn"), self.backend("flashc", fail_on=2)]
        row = {}
        runs = compare.time_rounds(timed, 3, 50, row)
        self.assertNotIn("flashc", runs)
        self.assertEqual(row["flashc_why"], "flashc broke")
        self.assertEqual(len(runs["cudnn"]), 3)
        self.assertEqual(self.calls.count("flashc"), 2)


class HelpersTest(unittest.TestCase):
    def test_flops_halve_under_the_mask(self):
        self.assertEqual(compare.flops((1, 2, 4, 8), False), 4 * 2 * 16 * 8)
        self.assertEqual(compare.flops((1, 2, 4, 8), True), 2 * 2 * 16 * 8)

    def test_rotating_cycles_the_input_sets(self):
        seen = []
        fn = compare.rotating([(1, 2, 3), (4, 5, 6)],
                              lambda q, k, v: seen.append((q, k, v)) or q)
        self.assertEqual([fn(), fn(), fn()], [1, 4, 1])
        self.assertEqual(seen, [(1, 2, 3), (4, 5, 6), (1, 2, 3)])


class SettleTest(unittest.TestCase):
    def setUp(self):
        self.torch = FakeTorch()
        self.saved = sys.modules.get("torch")
        sys.modules["torch"] = self.torch

    def tearDown(self):
        if self.saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = self.saved

    def test_runs_every_backend_until_the_time_is_up(self):
        calls = []
        compare.settle([lambda: calls.append("a"), lambda: calls.append("b")],
                       20)
        self.assertGreater(len(calls), 2)
        self.assertEqual(calls[:2], ["a", "b"])
        self.assertEqual(len(calls) % 2, 0)
        self.assertEqual(self.torch.syncs, len(calls) // 2)

    def test_a_failing_backend_is_dropped_not_raised(self):
        calls = []

        def broken():
            calls.append("x")
            raise RuntimeError("no")
        compare.settle([broken, lambda: calls.append("ok")], 5)
        self.assertEqual(calls.count("x"), 1)
        self.assertGreater(calls.count("ok"), 0)

    def test_zero_time_runs_nothing(self):
        calls = []
        compare.settle([lambda: calls.append("a")], 0)
        self.assertEqual(calls, [])


class RecordTest(unittest.TestCase):
    """A run's entry goes to the experiment log, never to bench/RESULTS.md."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = compare.LOG_DIR
        compare.LOG_DIR = os.path.join(self.tmp.name, "log")

    def tearDown(self):
        compare.LOG_DIR = self.saved
        self.tmp.cleanup()

    def args(self, results=None):
        return argparse.Namespace(results=results, kernels="kernels",
                                  dtype="bf16", settle_ms=1500, rounds=5,
                                  own_load_ms=300)

    def record(self, args, date="2031-01-02"):
        compare.record(args, [], "| table |", "NVIDIA H200", "2.11.0",
                       False, date=date)

    def test_the_default_is_the_days_log_file(self):
        args = compare.parse_args(["--kernels", "k"])
        self.assertIsNone(args.results)
        self.assertFalse(args.no_record)
        self.assertEqual(compare.log_path("2031-01-02"),
                         os.path.join(compare.LOG_DIR, "2031-01-02.md"))
        self.assertEqual(os.path.basename(self.saved), "log")
        self.assertEqual(os.path.basename(os.path.dirname(self.saved)),
                         "bench")

    def test_entries_append_to_the_days_log(self):
        self.record(self.args())
        self.record(self.args())
        self.record(self.args(), date="2031-01-03")
        path = os.path.join(compare.LOG_DIR, "2031-01-02.md")
        text = open(path).read()
        self.assertTrue(text.startswith("# Experiment log, 2031-01-02\n"))
        self.assertEqual(text.count("# Experiment log"), 1)
        self.assertEqual(text.count("\n## 2031-01-02 — NVIDIA H200, bf16\n"),
                         2)
        self.assertEqual(text.count("| table |"), 2)
        self.assertIn("1500 ms untimed load, then 5 round(s)", text)
        self.assertIn("- flashc column: kernels in kernels", text)
        self.assertTrue(os.path.exists(
            os.path.join(compare.LOG_DIR, "2031-01-03.md")))

    def test_results_names_another_file_without_a_title(self):
        path = os.path.join(self.tmp.name, "out", "compare.md")
        self.record(self.args(results=path))
        text = open(path).read()
        self.assertTrue(text.startswith("\n## 2031-01-02 — NVIDIA H200"))
        self.assertFalse(os.path.exists(compare.LOG_DIR))


if __name__ == "__main__":
    unittest.main()

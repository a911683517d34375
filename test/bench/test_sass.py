#!/usr/bin/env python3
"""CPU tests of bench/sass.py's listing parser, loop finder and check, on
small listings in cuobjdump -sass's format (no cuobjdump, no GPU)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sass  # noqa: E402


def listing(function, instructions):
    """cuobjdump -sass text of one function: one instruction per 0x10."""
    lines = ["\tcode for sm_90a", f"\t\tFunction : {function}"]
    for i, text in enumerate(instructions):
        lines.append(f"        /*{16 * i:04x}*/                   {text} ;"
                     "                 /* 0x000fe20000000f00 */")
        lines.append("                                                        "
                     "                 /* 0x000fe20000000f00 */")
    return "\n".join(lines) + "\n"


def overlapped_loop(exps_before_wait, exps_after_wait, spill=False):
    """Prologue, one key loop (S and P V issued, wait S, exps, wait P V,
    conditional back-edge to its start at 0x20), and an out-of-line retry
    that jumps back into the loop unconditionally."""
    body = ["UTMALDG.3D [UR8], [UR4]", "HGMMA.64x80x16.F32.BF16 R88, gdesc[UR8], RZ, !UPT"]
    loop = ["SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR49], R5", "@!P1 BRA 0x{retry:x}",
            "HGMMA.64x80x16.F32.BF16 R88, gdesc[UR8], RZ, !UPT",
            "HGMMA.64x128x16.F32.BF16 R24, R144, gdesc[UR8].tnspB, R24, gsb0",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "FMNMX R5, R88, R89, !PT"]
    loop += ["MUFU.EX2 R88, R88"] * exps_before_wait
    if spill:
        loop.append("STL [R1], R7")
    loop.append("WARPGROUP.DEPBAR.LE gsb0, 0x0")
    loop += ["MUFU.EX2 R89, R89"] * exps_after_wait
    loop += ["F2FP.BF16.F32.PACK_AB R144, R89, R88", "@P1 BRA 0x20"]
    code = body + loop + ["EXIT"]
    retry_at = 16 * len(code)
    code = [t.replace("0x{retry:x}", hex(retry_at)) for t in code]
    code += ["SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR49], R5",
             f"@!P1 BRA {hex(retry_at)}", "BRA 0x40"]
    return code


class LoopTest(unittest.TestCase):
    def test_the_key_loop_only(self):
        code = sass.parse(listing("attention", overlapped_loop(3, 0)))["attention"]
        loops = sass.key_loops(code)
        # Not the retry's unconditional jump back into the loop.
        self.assertEqual(len(loops), 1)
        self.assertEqual(loops[0][0], 0x20)

    def test_innermost_loop_of_a_persistent_kernel(self):
        inner = ["HGMMA.64x80x16.F32.BF16 R88, gdesc[UR8], RZ, !UPT",
                 "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P1 BRA 0x10"]
        outer = ["UTMALDG.3D [UR8], [UR4]"] + inner + [
            "HGMMA.64x128x16.F32.BF16 R24, R144, gdesc[UR8].tnspB, R24",
            "@P2 BRA 0x0", "EXIT"]
        code = sass.parse(listing("k", outer))["k"]
        self.assertEqual(sass.key_loops(code), [(0x10, 0x30)])

    def test_serial_loop_has_no_overlap(self):
        code = ["UTMALDG.3D [UR8], [UR4]",
                "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT",
                "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R24, R24",
                "@P1 BRA 0x10", "EXIT"]
        summary = sass.report(sass.parse(listing("k", code))["k"])
        self.assertIsNone(summary["loops"][0]["overlap"])
        self.assertEqual(sass.problems(summary), [])


class CheckTest(unittest.TestCase):
    def summary(self, *args, **kw):
        return sass.report(sass.parse(listing("k", overlapped_loop(*args, **kw)))["k"])

    def test_exps_beside_pv_pass(self):
        s = self.summary(4, 0)
        self.assertEqual(s["loops"][0]["overlap"], (4, 4))
        self.assertEqual((s["hgmma"], s["utmaldg"], s["utmastg"]), (3, 1, 0))
        self.assertEqual(sass.problems(s), [])

    def test_exps_after_the_pv_wait_fail(self):
        s = self.summary(1, 3)
        self.assertEqual(s["loops"][0]["overlap"], (1, 4))
        found = sass.problems(s)
        self.assertEqual(len(found), 1)
        self.assertIn("3 of 4 exps after the wait for P V", found[0])

    def test_spill_in_the_key_loop_fails(self):
        found = sass.problems(self.summary(4, 0, spill=True))
        self.assertEqual(len(found), 1)
        self.assertIn("1 LDL/STL", found[0])

    def test_no_tma_fails(self):
        code = [t for t in overlapped_loop(4, 0) if "UTMALDG" not in t]
        found = sass.problems(sass.report(sass.parse(listing("k", code))["k"]))
        self.assertEqual(found, ["no UTMALDG"])


class MainTest(unittest.TestCase):
    def run_main(self, text, *flags):
        with tempfile.NamedTemporaryFile("w", suffix=".sass", delete=False) as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        try:
            with redirect_stdout(out), redirect_stderr(err):
                rc = sass.main(["--listing", f.name, *flags])
        finally:
            os.unlink(f.name)
        return rc, out.getvalue()

    def test_check_sets_the_status(self):
        bad = listing("attention", overlapped_loop(0, 4))
        rc, out = self.run_main(bad, "--check")
        self.assertEqual(rc, 1)
        self.assertIn("FAIL: key loop [0x20,", out)
        self.assertIn("exps before P V's wait 0/4", out)
        rc, out = self.run_main(bad)
        self.assertEqual(rc, 0)
        self.assertIn("note:", out)
        rc, _ = self.run_main(listing("attention", overlapped_loop(4, 0)), "--check")
        self.assertEqual(rc, 0)

    def test_only_warp_specialized_kernels_are_checked(self):
        with tempfile.TemporaryDirectory() as d:
            def kernel(name, config):
                with open(os.path.join(d, name + ".json"), "w") as f:
                    f.write(json.dumps({"config": config}))
                return os.path.join(d, name + ".cubin")
            self.assertTrue(sass.warp_specialized(kernel(
                "attention", {"block_m": 192, "producer_warpgroups": 1})))
            self.assertFalse(sass.warp_specialized(kernel(
                "ref_attention", {"block_m": 64, "block_n": 32, "stages": 1})))
            self.assertFalse(sass.warp_specialized(os.path.join(d, "none.cubin")))

    def test_cubins_need_cuobjdump(self):
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            rc = sass.main(["--cuobjdump", "/nonexistent/cuobjdump", "x.cubin"])
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()

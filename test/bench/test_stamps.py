#!/usr/bin/env python3
"""CPU tests of bench/stamps.py's record decoding and phase summary."""
import os
import struct
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import stamps  # noqa: E402


def payload(batch_heads, seq_q, records):
    """An LSE buffer holding `records`: (head, block, consumer, warpgroups,
    smid, stamps[, timer]) at ProbeStamps.cpp's place (the timer defaults
    to the last stamp + 1000)."""
    words = [0] * (batch_heads * seq_q)
    for head, block, consumer, wg, smid, st, *timer in records:
        at = head * seq_q + (block * wg + consumer) * stamps.RECORD_WORDS
        w = [smid, consumer, block & 0xFFFFFFFF, head]
        for v in list(st) + (timer or [st[-1] + 1000]):
            w += [v & 0xFFFFFFFF, v >> 32]
        words[at:at + len(w)] = w
    return struct.pack(f"<{len(words)}I", *words)


def meta(bm, bn, wg, causal=False, persistent=False, tma_store_o=1):
    return {"causal": causal,
            "config": {"block_m": bm, "block_n": bn, "warpgroups": wg,
                       "persistent": int(persistent),
                       "tma_store_o": tma_store_o}}


class StampsTest(unittest.TestCase):
    def test_decode_round_trips_and_skips_empty_records(self):
        big = 1 << 40  # the high words must come back too
        st = [big + i * 10 for i in range(7)]
        data = payload(2, 256, [(1, 1, 1, 2, 7, st)])
        recs = stamps.decode(data, 2, 256)
        self.assertEqual(len(recs), 1)
        r = recs[0]
        self.assertEqual((r["smid"], r["consumer"], r["block"], r["head"]),
                         (7, 1, 1, 1))
        self.assertEqual([r[p] for p in stamps.POINTS], st)
        with self.assertRaises(ValueError):
            stamps.decode(data, 3, 256)

    def test_tiles_grid_phases(self):
        # Two blocks of two consumers on SM 0, seq 512, block_n 128: four
        # key tiles of 1000 cycles after the first.
        def block(t0, skew):
            # start, Q at +300, tile start = Q, first softmax +500,
            # 3 more tiles, epilogue 200 (+ skew for consumer 1)
            return [t0, t0 + 300, t0 + 300, t0 + 300, t0 + 800,
                    t0 + 3800, t0 + 4000 + skew]
        recs = [(0, 0, 0, 2, 0, block(0, 0)), (0, 0, 1, 2, 0, block(0, 50)),
                (0, 1, 0, 2, 0, block(5000, 0)),
                (0, 1, 1, 2, 0, block(5000, 50))]
        data = payload(1, 512, recs)
        s = stamps.summarize(stamps.decode(data, 1, 512), meta(128, 128, 2),
                             512, 512)
        ph = s["phases"]
        self.assertEqual(s["key_tile_cycles"], 1000)
        self.assertEqual(ph["gap"]["median"], 5000 - 4050)
        self.assertEqual(ph["q wait"]["median"], 300)
        self.assertEqual(ph["first softmax"]["median"], 500)
        self.assertEqual(ph["epilogue"]["median"], 225)
        self.assertEqual(ph["end skew"]["median"], 50)
        self.assertAlmostEqual(ph["first softmax"]["tiles"], 0.5)

    def test_persistent_gap_follows_each_consumer(self):
        # One consumer, two tiles in a row, 120 cycles between them.
        def tile(t0):
            return [0, 10, t0, t0 + 5, t0 + 505, t0 + 3505, t0 + 3705]
        recs = [(0, 0, 0, 2, 3, tile(100)), (0, 1, 0, 2, 3, tile(3925))]
        data = payload(1, 512, recs)
        s = stamps.summarize(stamps.decode(data, 1, 512),
                             meta(128, 128, 2, persistent=True), 512, 512)
        self.assertEqual(s["phases"]["gap"]["median"], 3925 - 3805)
        self.assertEqual(s["key_tile_cycles"], 1000)

    def test_causal_key_tiles_follow_the_block_alignment(self):
        top = meta(128, 128, 2, causal=True, tma_store_o=1)
        bottom = meta(192, 128, 3, causal=True, tma_store_o=0)
        self.assertEqual(stamps.key_tiles(top, 0, 512, 512), 1)
        self.assertEqual(stamps.key_tiles(top, 3, 512, 512), 4)
        # 200 rows in blocks of 192 from the bottom: block 0 ends at row 7.
        self.assertEqual(stamps.key_tiles(bottom, 0, 200, 200), 1)
        self.assertEqual(stamps.key_tiles(bottom, 1, 200, 200), 2)

    def test_timeline_reads_clock_span_and_wave_tail(self):
        # 2 cycles per ns. SM 0 runs blocks 0 and 1 (4000 cycles each,
        # 1000 between them), SM 1 only block 2; their clock64s differ.
        def block(start, end):
            return [start, start + 10, start + 10, start + 20, start + 500,
                    start + 3500, end]

        def ns0(cycles):  # SM 0: cycle 1000 is ns 10000
            return 10000 + (cycles - 1000) // 2
        recs = [(0, 0, 0, 1, 0, block(1000, 5000), ns0(5000)),
                (0, 1, 0, 1, 0, block(6000, 10000), ns0(10000)),
                # SM 1: cycle 50000 is ns 10100
                (0, 2, 0, 1, 1, block(50000, 54000), 10100 + 2000)]
        data = payload(1, 512, recs)
        t = stamps.timeline(stamps.decode(data, 1, 512), meta(64, 128, 1))
        self.assertEqual((t["sms"], t["programs"]), (2, 3))
        self.assertAlmostEqual(t["ghz"], 2.0)
        self.assertAlmostEqual(t["span_ns"], 14500 - 10000)
        self.assertEqual(t["counts"][1]["sms"], 1)
        self.assertAlmostEqual(t["counts"][1]["finish"], 2100 / 4500)
        self.assertAlmostEqual(t["counts"][2]["finish"], 1.0)
        self.assertAlmostEqual(t["tail_idle"], (4500 - 2100) / (2 * 4500))
        self.assertEqual([(p["sms"], p["cycles"], p["since_previous"])
                          for p in t["positions"]],
                         [(2, 4000, 0), (1, 4000, 1000)])

    def test_timeline_persistent_programs_start_at_their_tile(self):
        # One SM, two tile programs of one consumer overlapping the
        # previous epilogue by 100 cycles; 1 cycle per ns.
        def tile(cs, start, end):
            return [cs, cs + 5, start, start + 5, start + 505, end - 200, end]
        recs = [(0, 0, 0, 1, 4, tile(0, 300, 4300), 4300),
                (0, 1, 0, 1, 4, tile(0, 4200, 8200), 8200)]
        data = payload(1, 512, recs)
        t = stamps.timeline(stamps.decode(data, 1, 512),
                            meta(64, 128, 1, persistent=True))
        self.assertAlmostEqual(t["ghz"], 1.0)
        self.assertAlmostEqual(t["span_ns"], 8200)  # from consumer_start
        self.assertEqual([(p["cycles"], p["since_previous"])
                          for p in t["positions"]], [(4000, 0), (4000, -100)])
        self.assertAlmostEqual(t["tail_idle"], 0.0)

    def test_timeline_needs_an_sm_with_two_programs(self):
        data = payload(1, 512, [(0, 0, 0, 1, 0, [1, 2, 3, 4, 5, 6, 7])])
        with self.assertRaises(ValueError):
            stamps.timeline(stamps.decode(data, 1, 512), meta(64, 128, 1))

    def test_no_records_is_an_error(self):
        with self.assertRaises(ValueError):
            stamps.summarize([], meta(128, 128, 2), 512, 512)
        with self.assertRaises(ValueError):
            stamps.timeline([], meta(128, 128, 2))


if __name__ == "__main__":
    unittest.main()

"""docs/experiments/short_tails.py: the silences of a path at the receiver, and the ones a
short segment ended (the kernel's sub-MSS tails, docs/calibration/README.md)."""

import importlib.util
import json
from pathlib import Path

import numpy as np

from .conftest import run_experiment

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "short_tails", ROOT / "docs" / "experiments" / "short_tails.py"
)
short_tails = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(short_tails)


def test_a_silence_is_counted_with_the_segment_that_ends_it() -> None:
    ms = 1_000_000
    # Full segments every 0.4 ms, then 60 ms of nothing ended by a 96-byte tail, then a
    # 10-ms pause (not a silence) and a full segment after 20 ms (a silence, ended full).
    t = np.array([0, 0.4, 0.8, 60.8, 70.8, 90.8]) * ms
    length = np.array([1424, 1424, 1368, 96, 1424, 1424])
    s = short_tails.silences(t.astype(np.int64), length)
    assert s["segments"] == 6
    assert s["short"] == 2
    assert s["silences"] == 2
    assert s["silent_s"] == 0.08
    assert s["ended_short"] == 1
    assert s["ended_short_s"] == 0.06
    assert s["ended_short_median_ms"] == 60.0
    # The 60-ms silence began right after the 1,368-byte segment; the 20-ms one after a full.
    assert s["after_short"] == 1


def test_a_path_that_never_pauses_has_no_silence() -> None:
    t = (np.arange(1000) * 400_000).astype(np.int64)
    s = short_tails.silences(t, np.full(1000, 1424))
    assert (s["silences"], s["short"], s["ended_short_median_ms"]) == (0, 0, None)


KEPT = ROOT / "docs" / "experiments" / "short-tails-kernel.json"


def _kept() -> dict[str, dict]:
    return {r["run"]: r for r in json.loads(KEPT.read_text())["runs"]}


def test_at_512_kib_the_kernel_s_slow_path_waits_on_its_short_tails() -> None:
    # Two 60-s kernel runs of the STMS lab at 512 KiB: LTE (path 1) falls silent for most of
    # the run, and most of its silences end with a sub-MSS segment, a median 60 ms late.
    for run in ("kb512-60-s1t", "kb512-60-s2t"):
        wifi, lte = _kept()[run]["paths"]
        assert lte["silent_s"] > 30, run
        assert lte["ended_short"] > lte["silences"] / 2, run
        assert 50 < lte["ended_short_median_ms"] < 75, run
        # Wi-Fi idles too, where the model's Wi-Fi is busy (under 1 s silent in 50).
        assert wifi["silent_s"] > 10, run
        # And the whole connection waits: nothing arrives on either path for a quarter of
        # the run (the model: under 1 s), mostly right after a short segment came in.
        both = _kept()[run]["connection"]
        assert both["silent_s"] > 10, run
        assert both["after_short"] > both["silences"] / 2, run


def test_the_longest_waits_follow_lte_s_short_segment_and_end_a_round_trip_later() -> None:
    # What came in last before the connection's silences, and on which path the window then
    # opened: most of the time lost follows a short LTE segment whose ACK, on LTE, opens the
    # window (LTE's 50-ms way back and Wi-Fi's 10-ms way out: about 60 ms).
    for run in ("kb512-60-s1t", "kb512-60-s2t"):
        last, on, n, median_ms, total_s = _kept()[run]["stalls"][0]
        assert (last, on) == ("LTE short", "LTE"), run
        assert n > 50 and 55 < median_ms < 70, run
        assert total_s > 0.3 * _kept()[run]["connection"]["silent_s"], run


def test_with_a_deep_buffer_neither_path_falls_silent() -> None:
    # The same lab at 6 MiB: short segments as often (about 2%), no silences.
    wifi, lte = _kept()["kb6m-30-s1t"]["paths"]
    assert wifi["silences"] == 0 and lte["silent_s"] < 0.5
    assert _kept()["kb6m-30-s1t"]["connection"]["silences"] == 0
    assert 0.01 < wifi["short"] / wifi["segments"] < 0.03


def test_the_script_reads_its_digest() -> None:
    out = run_experiment("short_tails.py", str(KEPT))
    assert "| kb512-60-s1t | kernel | 1 | 30,469 | 918 | 565 |" in out
    assert "| kb512-60-s1t | kernel | both | 107,481 | 2,656 | 422 |" in out

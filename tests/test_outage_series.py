"""docs/experiments/outage_series.py: a kernel run's digest carries what the comparison reads
from its directory, and the kept digest of docs/experiments/outage-kernel.json is one the
script reads."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "docs" / "experiments" / "outage_series.py"
spec = importlib.util.spec_from_file_location("outage_series", SCRIPT)
outage_series = importlib.util.module_from_spec(spec)
spec.loader.exec_module(outage_series)


def fake_run(root: Path, name: str, fail_ns: int) -> Path:
    """A kernel run directory as `mpsched emulate` writes it, with only what the script reads:
    7 MB/s until the failure, nothing for a second, 3 MB/s after."""
    run = root / name
    (run / "raw").mkdir(parents=True)
    scenario = {"duration_ns": 20_000_000_000, "paths": [{"schedule": [{"at_ns": fail_ns}]}]}
    (run / "scenario.json").write_text(json.dumps(scenario))
    summary = {
        "goodput_mbps": 41.5,
        "kernel": {
            "timer_phase_ns": 123_456_789,
            "mptcp_counters": {"client": {"MPTcpExtDuplicateData": 1999}},
        },
    }
    (run / "summary.json").write_text(json.dumps(summary))
    fail = fail_ns / 1e9
    timeline, delivered = [], 0.0
    for ms in range(1, 20_001):
        t = ms / 1000
        delivered += 7e3 if t <= fail else (0.0 if t <= fail + 1 else 3e3)
        timeline.append([t, delivered])
    (run / "raw" / "client.json").write_text(json.dumps({"timeline": timeline}))
    return run


def test_a_digest_reads_as_its_run_directory(tmp_path: Path) -> None:
    run = fake_run(tmp_path, "eo1", 5_010_000_000)
    [from_dir] = outage_series.kernel_runs([run])
    assert from_dir["failure_s"] == pytest.approx(5.01)
    assert from_dir["timer_phase_ns"] == 123_456_789
    assert from_dir["duplicates"] == 1999
    series = np.array(from_dir["mb_per_second"])
    # Seconds from the failure: -2..12, so 14 intervals: 7 MB/s before, none in the first
    # second after, 3 MB/s from the second.
    assert series.shape == (14,)
    assert series[:2] == pytest.approx([7.0, 7.0], abs=1e-3)
    assert series[2] == pytest.approx(0.0, abs=1e-3)
    assert series[3:] == pytest.approx([3.0] * 11, abs=1e-3)
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps({"runs": [from_dir]}))
    assert outage_series.kernel_runs([kept]) == [from_dir]


def test_a_digest_of_other_seconds_is_refused(tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps({"runs": [{"seconds_from_failure": [0, 1]}]}))
    with pytest.raises(SystemExit, match="seconds"):
        outage_series.kernel_runs([kept])


def test_the_kept_kernel_series_is_readable() -> None:
    runs = outage_series.kernel_runs([ROOT / "docs" / "experiments" / "outage-kernel.json"])
    assert len(runs) >= 36
    for r in runs:
        series = r["mb_per_second"]
        assert len(series) == 14
        # Wi-Fi fails at 5 s: the second after it carries next to nothing on every run.
        assert series[2] < 0.5 < series[0]

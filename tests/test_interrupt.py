"""Stopping a run: Ctrl-C, a progress callback, a limit on the traces' size."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import mpsched
from mpsched.api import RunInterrupted
from mpsched.traces import TraceLimitError


def test_a_progress_callback_sees_the_run_and_an_interrupt_returns_the_run_so_far(
    tmp_path: Path,
) -> None:
    seen: list[tuple[int, int]] = []

    def progress(simulated_ns: int, events: int) -> None:
        seen.append((simulated_ns, events))
        if simulated_ns > 20e9:
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as stop:
        mpsched.run(duration="600s", out=tmp_path, progress=progress)
    summary = stop.value.result.summary
    at = summary["interrupted_at_s"]
    assert 20 < at < 600 and summary["simulated_s"] == at == summary["duration_s"]
    assert seen == sorted(seen) and seen[-1][0] / 1e9 <= at
    # What was written is the run so far, and readable.
    assert json.loads((tmp_path / "summary.json").read_text())["interrupted_at_s"] == at
    delivered = pq.read_table(tmp_path / "segments.parquet", columns=["len_bytes"])
    assert delivered.num_rows > 0
    assert sum(delivered.column("len_bytes").to_pylist()) <= summary["bytes_delivered"]


def test_the_traces_stop_at_their_size_limit(tmp_path: Path) -> None:
    with pytest.raises(TraceLimitError, match="more than 2,000,000 bytes"):
        mpsched.run(duration="600s", out=tmp_path, max_trace_bytes=2_000_000)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_mpsched_run_within_a_second_and_keeps_the_run_so_far(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsched", "run", "--set", "duration=3000s", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A background job of a non-interactive shell inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    time.sleep(3)  # past the two seconds after which progress shows
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    stdout, stderr = proc.communicate(timeout=30)
    assert time.perf_counter() - sent < 1.0
    assert proc.returncode == 130, stderr
    assert "simulated " in stderr and "events/s" in stderr, stderr  # a line per tenth, no TTY
    assert "interrupted at" in stderr and "interrupted: the run so far" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert 0 < summary["interrupted_at_s"] < 3000
    for table in mpsched.traces.TABLES:
        pq.read_metadata(out / f"{table}.parquet")

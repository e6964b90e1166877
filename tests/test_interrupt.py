"""Stopping a run: Ctrl-C, a progress callback, a limit on the traces' size."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

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


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Lines:
    """Reads a child's stream on a thread, line by line, so that a test can wait for a line
    (with a deadline) and still have the whole output afterwards."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        with stream:
            for line in stream:
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_for(self, prefix: str, timeout: float) -> bool:
        """Whether a line starting with ``prefix`` came within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._closed or any(x.startswith(prefix) for x in self.lines), timeout
            ) and any(x.startswith(prefix) for x in self.lines)

    def text(self, timeout: float) -> str:
        self._thread.join(timeout)
        return "".join(self.lines)


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
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = _Lines(proc.stdout), _Lines(proc.stderr)
    try:
        # The first progress line (two seconds into the run) comes from within the run, where
        # Ctrl-C is handled: a SIGINT earlier (while `import mpsched` builds its models on a
        # loaded machine) would only test Python's default handler.
        running = stderr.wait_for("simulated ", timeout=120)
        assert running, f"no progress line in 120 s: {stderr.text(0)}"
        before = _cpu_seconds(proc.pid)
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        # Reaped here for its resource use; killed if it hangs.
        watchdog = threading.Timer(60, proc.kill)
        watchdog.start()
        _, status, usage = os.wait4(proc.pid, 0)
        watchdog.cancel()
        stopped_in = time.perf_counter() - sent
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = stderr.text(timeout=30)
    # The work done after Ctrl-C (stop the loop, write the run so far, exit) is under a CPU
    # second; on a machine busy with other builds its wall time stretches with the load (2.5 s
    # at a load of 8 on 2 cores), so the wall clock only has to rule out a hang.
    after = usage.ru_utime + usage.ru_stime - before
    assert after < 1.0, f"{after:.2f} CPU-s after Ctrl-C ({stopped_in:.2f} s)\n{err}"
    assert stopped_in < 30.0, err
    assert proc.returncode == 130, err
    assert "simulated " in err and "events/s" in err, err  # a line per tenth, no TTY
    assert "interrupted at" in err and "interrupted: the run so far" in stdout.text(timeout=30)
    summary = json.loads((out / "summary.json").read_text())
    assert 0 < summary["interrupted_at_s"] < 3000
    for table in mpsched.traces.TABLES:
        pq.read_metadata(out / f"{table}.parquet")

"""Progress of one long run (``mpsched run``): after about two seconds of wall time, a bar on
a terminal (simulated time, events per second, time left); otherwise a first line, then one
per tenth of the run (and one a minute); nothing with ``--quiet``. The native run calls it
about ten times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

__all__ = ["RunProgress", "SweepLines"]

SHOW_AFTER_S = 2.0


class RunProgress:
    """``progress(simulated_ns, events)`` for ``mpsched.run(..., progress=...)``."""

    def __init__(self, duration_ns: int, *, stream: TextIO | None = None) -> None:
        self.duration_ns = max(duration_ns, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.bar: Progress | None = None
        self.task = 0
        self.tenths = 0
        self.last_line = 0.0
        self.shown = False

    def __call__(self, simulated_ns: int, events: int) -> None:
        elapsed = time.perf_counter() - self.start
        if elapsed < SHOW_AFTER_S:
            return
        fraction = min(simulated_ns / self.duration_ns, 1.0)
        rate = events / elapsed
        if self.stream.isatty():
            self._bar(simulated_ns, rate)
            return
        tenths = int(fraction * 10)
        # A first line once the run is long enough to need one, then a line per tenth of the
        # run, and at least one a minute on very long ones.
        first = not self.shown
        self.shown = True
        if first or tenths > self.tenths or elapsed - self.last_line >= 60:
            self.tenths = max(tenths, self.tenths)
            self.last_line = elapsed
            left = elapsed / fraction - elapsed if fraction > 0 else float("nan")
            print(
                f"simulated {fraction:.0%} ({simulated_ns / 1e9:.1f} s of "
                f"{self.duration_ns / 1e9:g} s), {rate / 1e6:.2f} M events/s, "
                f"about {left:.0f} s left",
                file=self.stream,
                flush=True,
            )

    def _bar(self, simulated_ns: int, rate: float) -> None:
        if self.bar is None:
            self.bar = Progress(
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.fields[sim]} of {task.fields[total]}"),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(
                "run", total=self.duration_ns, sim="", rate="", total_s=""
            )
        self.bar.update(
            self.task,
            completed=simulated_ns,
            sim=f"{simulated_ns / 1e9:.1f} s",
            total=self.duration_ns,
            rate=f"{rate / 1e6:.2f} M events/s",
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class SweepLines:
    """``progress(done, total)`` for a sweep whose output is not a terminal (a log file, CI,
    a batch job): a line per tenth of the runs, and at least one a minute."""

    def __init__(self, *, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.tenths = 0
        self.last_line = 0.0

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        elapsed = time.perf_counter() - self.start
        tenths = done * 10 // total
        if tenths <= self.tenths and elapsed - self.last_line < 60:
            return
        self.tenths = max(tenths, self.tenths)
        self.last_line = elapsed
        left = f", about {elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
        print(
            f"sweep: {done} of {total} runs ({done / total:.0%}), {elapsed:.0f} s{left}",
            file=self.stream,
            flush=True,
        )

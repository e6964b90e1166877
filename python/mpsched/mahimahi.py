"""Link traces in Mahimahi's format (Netravali et al., USENIX ATC 2015): one line per delivery
opportunity, the millisecond at which one MTU (1,504 bytes) may leave, non-decreasing; the
trace repeats with the period of its last line. A path's ``trace`` (data direction) and
``trace_up`` (ACKs) name such files; the cellular traces of the congestion-control literature
run unchanged.

The project ships three it generates (``python -m mpsched.mahimahi scenarios/traces``):
``constant-12mbps.trace`` (one opportunity a millisecond, 12.03 Mbit/s), ``lte-steps.trace``
(20 s cycling 24, 6, 12 and 3 Mbit/s for 5 s each, LTE-like steps) and ``outage.trace``
(12 Mbit/s with a 2 s gap in every 10 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import ScenarioError

__all__ = [
    "OPPORTUNITY_BYTES",
    "SHIPPED",
    "constant",
    "mean_rate_bps",
    "read",
    "steps",
    "write",
]

#: Bytes one delivery opportunity carries (Mahimahi's ``PACKET_SIZE``).
OPPORTUNITY_BYTES = 1504
#: Lines a trace may have (a 100 Mbit/s trace of 20 minutes is 10 million).
MAX_LINES = 20_000_000


def read(path: str | Path, *, key: str = "trace") -> list[int]:
    """The opportunities of a trace file, in ms; errors name ``key``, the file and the line."""
    try:
        text = Path(path).read_text("ascii")
    except FileNotFoundError:
        raise ScenarioError(f"{key}: no such trace file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{key}: cannot read the trace {path}: {exc}") from None
    out: list[int] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if not line.isdigit():
            raise ScenarioError(f"{key}: {path} line {n}: expected milliseconds, got {line!r}")
        ms = int(line)
        if out and ms < out[-1]:
            raise ScenarioError(f"{key}: {path} line {n}: {ms} ms comes after {out[-1]} ms")
        out.append(ms)
        if len(out) > MAX_LINES:
            raise ScenarioError(f"{key}: {path}: more than {MAX_LINES:,} lines")
    if not out or out[-1] == 0:
        raise ScenarioError(
            f"{key}: {path}: no opportunity after 0 ms (the last line is the period)"
        )
    return out


def mean_rate_bps(ms: list[int]) -> int:
    """The trace's mean capacity: every opportunity's bytes over one period."""
    return max(1, len(ms) * OPPORTUNITY_BYTES * 8 * 1000 // ms[-1])


def constant(per_ms: int, period_ms: int) -> list[int]:
    """``per_ms`` opportunities every millisecond (12.03 Mbit/s each) for ``period_ms``."""
    return [t for t in range(1, period_ms + 1) for _ in range(per_ms)]


def steps(rates_mbps: list[float], step_ms: int) -> list[int]:
    """Piecewise-constant capacity: ``rates_mbps[i]`` for the i-th ``step_ms``. Opportunities
    are spread evenly (the k-th of a step at ``ceil(k x gap)``)."""
    out: list[int] = []
    for i, mbps in enumerate(rates_mbps):
        start = i * step_ms
        count = round(mbps * 1e6 * step_ms / 1000 / (OPPORTUNITY_BYTES * 8))
        gap = step_ms / count if count else 0.0
        out += [start + max(1, -int(-(k + 1) * gap // 1)) for k in range(count)]
    if not out or out[-1] != len(rates_mbps) * step_ms:
        out.append(len(rates_mbps) * step_ms)  # the period: the trace's last line
    return out


def write(path: str | Path, ms: list[int]) -> None:
    Path(path).write_text("".join(f"{t}\n" for t in ms), "ascii")


#: The traces the project ships, by file name.
SHIPPED = {
    "constant-12mbps.trace": lambda: constant(1, 1000),
    "lte-steps.trace": lambda: steps([24, 6, 12, 3], 5000),
    "outage.trace": lambda: [t for t in constant(1, 10_000) if not 4000 < t <= 6000],
}


def main(argv: list[str] | None = None) -> int:
    """Writes the shipped traces into the folder given (``scenarios/traces``)."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "scenarios/traces")
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in SHIPPED.items():
        write(folder / name, make())
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

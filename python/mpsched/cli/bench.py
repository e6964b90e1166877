"""``mpsched bench``: the simulator's speed on fixed scenarios, beside a bare event-heap loop."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

import click

from .. import api
from .render import print_bench_report, print_bench_suite, print_transport_bench, rate

__all__ = ["bench_command", "bench_report", "bench_suite", "bench_sweep"]


def bench_report(seconds: float) -> dict[str, Any]:
    """Run the default scenario for ``seconds`` simulated seconds and measure its speed."""
    result = api.run(None, duration=f"{seconds!r}s")
    s = result.summary
    loop = result.loop_wall_s
    sim_s = s.get("duration_s")
    events = s.get("events")
    heap = float(api.native().bench_event_queue(5_000_000, 1024))
    sim_rate = rate(sim_s, loop)
    return {
        "events": events,
        "sim_s": sim_s,
        "loop_wall_s": loop,
        "wall_s": s.get("wall_s"),
        "events_per_s": rate(events, loop),
        "sim_s_per_wall_s": sim_rate,
        "heap_mevents_per_s": heap,
        "sim_s_per_wall_s_per_heap_mevents": sim_rate / heap if sim_rate and heap else None,
        "goodput_mbps": s.get("goodput_mbps"),
    }


BENCH_SCENARIOS = ("a", "b", "c", "d", "f")
# The bare heap loop on its own (the table's title), timed several times: the median.
HEAP_RUNS = 3
BENCH_SWEEPS = ("e",)


def bench_suite(names: list[str]) -> dict[str, Any]:
    """The fixed benchmark scenarios (a: 2 x 30 Mbit/s 60 s, b: 2 x 300 Mbit/s 600 s,
    c: 8 x 100 Mbit/s 60 s, d: c shared by 50 connections, f: WiFi behind a shared DSL line
    and a trace-driven LTE path) in this process, beside a bare event-heap loop, and the sweep
    (e): paper 001's 400 settings on every core."""
    heap = statistics.median(
        float(api.native().bench_event_queue(5_000_000, 1024)) for _ in range(HEAP_RUNS)
    )
    single = [n for n in names if n in BENCH_SCENARIOS] if names else list(BENCH_SCENARIOS)
    # Each row carries its own ratio, to the heap loop timed between its runs.
    rows = json.loads(api.native().bench_scenarios(single)) if single else []
    sweeps = [bench_sweep()] if not names or "e" in names else []
    return {"heap_mevents_per_s": heap, "scenarios": rows, "sweeps": sweeps}


def bench_sweep() -> dict[str, Any]:
    """(e): the 400 settings of paper 001's design (Table 1, low- and high-BDP), 60 s each with
    LowRTT + RP, in worker processes on every core."""
    import tempfile

    from ..sweep import run_sweep
    from ..sweepfile import load_sweep

    sweep = load_sweep("paper001-bulk")
    sweep.points = [p for p in sweep.points if p.factors["connection.scheduler"] == "default"]
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        result = run_sweep(sweep, Path(tmp) / "sweep", jobs=cores)
        simulated = float(result.results["duration_s"].sum())
    return {
        "name": "e",
        "description": "paper 001's 400 settings, 60 s each, LowRTT + RP, every core",
        "runs": result.done,
        "failed": result.failed,
        "cores": cores,
        "wall_s": result.wall_s,
        "runs_per_s": rate(result.done, result.wall_s),
        "simulated_s": simulated,
        "sim_s_per_wall_s": rate(simulated, result.wall_s),
    }


@click.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="S",
    help="Instead of the fixed scenarios, the default scenario for S simulated seconds.",
)
@click.option(
    "--scenario",
    "names",
    multiple=True,
    type=click.Choice([*BENCH_SCENARIOS, *BENCH_SWEEPS]),
    help="Run only these fixed scenarios (repeatable; default: all).",
)
@click.option(
    "--transport",
    is_flag=True,
    help="Instead: the real transport (mpsched serve/get) over this machine's loopback, one "
    "path and two, beside kernel TCP and MPTCP: goodput and CPU seconds per GB.",
)
@click.option(
    "--transport-size", default="1GB", show_default=True, metavar="SIZE", help="Bytes moved."
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="With --transport: interleaved rounds (each system once per round).",
)
@click.option(
    "--shape",
    metavar="RATE",
    default=None,
    help="With --transport: instead, one path and two each shaped to RATE (e.g. 1gbit) on a "
    "loopback in a namespace of its own (root).",
)
@click.option(
    "--quinn",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="With --transport: the quinn peer's binary (default: $MPSCHED_QUINN_PEER, else "
    "benches/quinn-peer's release build if there).",
)
def bench_command(
    as_json: bool,
    seconds: float | None,
    names: tuple[str, ...],
    transport: bool,
    transport_size: str,
    rounds: int,
    shape: str | None,
    quinn: Path | None,
) -> None:
    """Measure simulator speed: fixed scenarios (or the default one) and a bare heap loop."""
    if transport:
        from ..errors import ScenarioError
        from ..transport_bench import bench_transport
        from ..units import parse_size

        try:
            size = parse_size(transport_size)
        except ValueError as exc:
            raise ScenarioError(f"--transport-size: {exc}") from exc
        say = lambda m: click.echo(m, err=True)  # noqa: E731
        if shape is not None:
            from ..transport_bench import bench_shaped

            report = bench_shaped(size, rounds, shape, progress=say)
        else:
            report = bench_transport(size, rounds, quinn=quinn, progress=say)
        if as_json:
            click.echo(json.dumps(report, indent=2))
            return
        print_transport_bench(report)
        return
    if seconds is None:
        suite = bench_suite(list(names))
        if as_json:
            click.echo(json.dumps(suite, indent=2))
            return
        print_bench_suite(suite)
        return
    report = bench_report(seconds)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    print_bench_report(report)

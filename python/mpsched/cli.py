"""The ``mpsched`` command line: ``run``, ``schedulers``, ``bench``, ``plot``, ``compare``,
``table`` (and ``sweep``, ``emulate``, ``calibrate`` from their modules).

Bad input is reported as one ``error: ...`` line on stderr with exit code 2; an internal failure
of the simulator as ``error: internal: ...`` with exit code 1.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.table import Table

from . import __version__, api
from .errors import ScenarioError
from .scenario import load, parse_set
from .traces import TABLES
from .units import UnitError, parse_duration

__all__ = ["cli", "main"]


# --- formatting helpers (tolerant of missing keys) ---


def _num(value: Any, spec: str = ",.2f", unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:{spec}}{unit}"


def _pct(value: Any) -> float | None:
    return value * 100 if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> str:
    return _num(value, ",d") if isinstance(value, int) else _num(value, ",.0f")


def _stats(stats: Any, keys: Sequence[str], unit: str) -> str:
    if not isinstance(stats, dict):
        return "-"
    parts = []
    for key in keys:
        value = stats.get(key)
        spec = ",d" if isinstance(value, int) and not isinstance(value, bool) else ",.2f"
        parts.append(f"{key} {_num(value, spec, unit)}")
    return "  ".join(parts)


def _rate(events: Any, seconds: Any) -> float | None:
    if isinstance(events, int | float) and isinstance(seconds, int | float) and seconds > 0:
        return events / seconds
    return None


def _subflow_table(subflows: list[dict[str, Any]]) -> Table:
    table = Table(title="subflows", title_justify="left", box=None, header_style="bold")
    columns = [
        ("subflow", "left"),
        ("sent MB", "right"),
        ("Mbps", "right"),
        ("retx", "right"),
        ("RTOs", "right"),
        ("q drop", "right"),
        ("rnd drop", "right"),
        ("srtt ms", "right"),
        ("min rtt ms", "right"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for sub in subflows:
        sent = sub.get("bytes_sent")
        table.add_row(
            str(sub.get("name", "?")),
            _num(sent / 1e6 if isinstance(sent, int | float) else None),
            _num(sub.get("goodput_mbps")),
            _int(sub.get("retransmits")),
            _int(sub.get("rtos")),
            _int(sub.get("queue_drops")),
            _int(sub.get("random_drops")),
            _num(sub.get("srtt_ms"), ",.1f"),
            _num(sub.get("min_rtt_ms"), ",.1f"),
        )
    return table


def _flow_table(flows: list[dict[str, Any]]) -> Table:
    table = Table(
        title="flows (0: the main connection)",
        title_justify="left",
        box=None,
        header_style="bold",
    )
    columns = ("flow", "protocol", "paths", "start s", "size KB", "done s", "Mbps", "RTOs")
    for name in columns:
        table.add_column(name, justify="left" if name in ("protocol", "paths") else "right")
    for f in flows:
        size = f.get("size_bytes")
        table.add_row(
            _int(f.get("flow")),
            str(f.get("protocol", "?")),
            ",".join(str(p) for p in f.get("paths") or []),
            _num(f.get("start_s"), ",.3f"),
            "bulk" if size is None else _num(size / 1e3 if isinstance(size, int) else None, ",.1f"),
            _num(f.get("completion_s"), ",.3f"),
            _num(f.get("goodput_mbps")),
            _int(f.get("rtos")),
        )
    return table


def _benefit_text(s: dict[str, Any]) -> str:
    base = [b for b in s.get("baselines") or [] if isinstance(b, dict)]
    paths = ", ".join(
        f"{b.get('name', '?')} {_num(b.get('goodput_mbps'), ',.2f', ' Mbps')}" for b in base
    )
    return f"benefit {_num(s.get('aggregation_benefit'), '+.3f')} (TCP alone: {paths or '-'})"


def print_summary(result: api.Result, console: Console) -> None:
    """Print a run's summary as readable text."""
    s = result.summary
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row(
        "scenario",
        f"{s.get('protocol', '?')}, scheduler {s.get('scheduler', '?')}, "
        f"{s.get('congestion', '?')}, seed {s.get('seed', '?')}, "
        f"{_num(s.get('duration_s'), 'g', 's')} simulated",
    )
    delivered = s.get("bytes_delivered")
    head.add_row(
        "goodput",
        f"{_num(s.get('goodput_mbps'), ',.2f', ' Mbps')} "
        f"({_num(delivered / 1e6 if isinstance(delivered, int | float) else None)} MB delivered)",
    )
    completion = s.get("completion_s")
    endless = "- (rate-limited application)" if "block_delay_ms" in s else "- (bulk transfer)"
    head.add_row("completion", endless if completion is None else _num(completion, ",.3f", " s"))
    head.add_row("OOO delay", _stats(s.get("ooo_delay_ms"), ("mean", "p50", "p99", "max"), " ms"))
    head.add_row(
        "DATA_ACK step",
        _stats(s.get("data_ack_step_segments"), ("mean", "p99", "max"), " seg"),
    )
    head.add_row(
        "MPTCP",
        f"reinjections {_int(s.get('reinjections'))}, opportunistic retransmits "
        f"{_int(s.get('opportunistic_retransmits'))}, penalizations "
        f"{_int(s.get('penalizations'))}",
    )
    if "aggregation_benefit" in s:
        head.add_row("aggregation", _benefit_text(s))
    if s.get("block_delay_ms") is not None:
        head.add_row(
            "blocks",
            f"{_int(s.get('blocks_delivered'))} delivered; delay "
            + _stats(s.get("block_delay_ms"), ("mean", "p50", "p99", "max"), " ms")
            + f"; worst {_num(_pct(s.get('block_delay_increase')), ',.0f', '%')} over the least"
            " a block can take",
        )
    flows = [f for f in s.get("flows") or [] if isinstance(f, dict)]
    if flows:
        head.add_row(
            "flows",
            f"{len(flows)} connections; mean completion "
            f"{_num(s.get('mean_flow_completion_s'), ',.3f', ' s')}, "
            f"{_int(s.get('unfinished_flows'))} unfinished",
        )
    events_per_s = _rate(s.get("events"), result.loop_wall_s)
    head.add_row(
        "events",
        f"{_int(s.get('events'))} ({_num(events_per_s, ',.0f')} events/s; "
        f"loop {_num(result.loop_wall_s, '.3f', ' s')}, wall {_num(s.get('wall_s'), '.3f', ' s')})",
    )
    console.print(head)
    subflows = s.get("subflows")
    if isinstance(subflows, list) and subflows:
        console.print()
        console.print(_subflow_table([sub for sub in subflows if isinstance(sub, dict)]))
    if flows and len(flows) <= 40:
        console.print()
        console.print(_flow_table(flows))


# --- commands ---


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="mpsched")
def cli() -> None:
    """mpsched: a multipath TCP simulator for studying packet schedulers."""


@cli.command("run")
@click.argument("file", required=False)
@click.option("--scheduler", metavar="NAME", help="Packet scheduler (see `mpsched schedulers`).")
@click.option("--seed", type=int, metavar="N", help="Random seed (integer >= 0).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario key, e.g. --set path.lte.rtt=200ms (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Write summary.json, scenario.json and the Parquet traces (streamed) into DIR.",
)
@click.option(
    "--sample-interval",
    default="10ms",
    show_default=True,
    metavar="DURATION",
    help="Period of the sampled subflow and connection traces.",
)
@click.option("--no-traces", is_flag=True, help="With --out, write only the JSON files.")
@click.option(
    "--benefit",
    is_flag=True,
    help="Also run plain TCP on each path alone and report the aggregation benefit.",
)
def run_command(
    file: str | None,
    scheduler: str | None,
    seed: int | None,
    sets: tuple[str, ...],
    as_json: bool,
    out: Path | None,
    sample_interval: str,
    no_traces: bool,
    benefit: bool,
) -> None:
    """Simulate the scenario FILE (default: the STMS lab set-up) and print a summary."""
    overrides = parse_set(sets)
    if scheduler is not None:
        overrides["connection.scheduler"] = scheduler
    if seed is not None:
        overrides["seed"] = seed
    model = load(file, overrides, label="--set")
    try:
        interval = parse_duration(sample_interval)
    except UnitError as exc:
        raise ScenarioError(f"--sample-interval: {exc}") from None
    if interval <= 0:
        raise ScenarioError(f"--sample-interval: must be > 0, got {sample_interval!r}")
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ScenarioError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    result = api.run(
        model,
        out=out,
        trace=out is not None and not no_traces,
        sample_interval=interval,
        benefit=benefit,
    )
    if out is not None:
        names = ["summary.json", "scenario.json"]
        if not no_traces:
            names += [f"{table}.parquet" for table in TABLES]
        for name in names:
            click.echo(f"wrote {out / name}", err=True)
    if as_json:
        click.echo(json.dumps(result.summary, indent=2))
    else:
        print_summary(result, Console())


@cli.command("schedulers")
def schedulers_command() -> None:
    """List the packet schedulers: name, description, parameters, source."""
    entries = api.schedulers()
    params = {e.name: ", ".join(e.params) or "-" for e in entries}
    name_width = max((len(e.name) for e in entries), default=0)
    desc_width = max((len(e.description) for e in entries), default=0)
    param_width = max((len(p) for p in params.values()), default=0)
    for entry in entries:
        click.echo(
            f"{entry.name:<{name_width}}  {entry.description:<{desc_width}}  "
            f"{params[entry.name]:<{param_width}}  {entry.source}"
        )


def bench_report(seconds: float) -> dict[str, Any]:
    """Run the default scenario for ``seconds`` simulated seconds and measure its speed."""
    result = api.run(None, duration=f"{seconds!r}s")
    s = result.summary
    loop = result.loop_wall_s
    sim_s = s.get("duration_s")
    events = s.get("events")
    heap = float(api.native().bench_event_queue(5_000_000, 1024))
    sim_rate = _rate(sim_s, loop)
    return {
        "events": events,
        "sim_s": sim_s,
        "loop_wall_s": loop,
        "wall_s": s.get("wall_s"),
        "events_per_s": _rate(events, loop),
        "sim_s_per_wall_s": sim_rate,
        "heap_mevents_per_s": heap,
        "sim_s_per_wall_s_per_heap_mevents": sim_rate / heap if sim_rate and heap else None,
        "goodput_mbps": s.get("goodput_mbps"),
    }


BENCH_SCENARIOS = ("a", "b", "c", "d")
# The bare heap loop on its own (the table's title), timed several times: the median.
HEAP_RUNS = 3
BENCH_SWEEPS = ("e",)


def bench_suite(names: list[str]) -> dict[str, Any]:
    """The fixed benchmark scenarios (a: 2 x 30 Mbit/s 60 s, b: 2 x 300 Mbit/s 600 s,
    c: 8 x 100 Mbit/s 60 s, d: c shared by 50 connections) in this process, beside a bare
    event-heap loop, and the sweep (e): paper 001's 400 settings on every core."""
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

    from .sweep import run_sweep
    from .sweepfile import load_sweep

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
        "runs_per_s": _rate(result.done, result.wall_s),
        "simulated_s": simulated,
        "sim_s_per_wall_s": _rate(simulated, result.wall_s),
    }


@cli.command("bench")
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
def bench_command(as_json: bool, seconds: float | None, names: tuple[str, ...]) -> None:
    """Measure simulator speed: fixed scenarios (or the default one) and a bare heap loop."""
    if seconds is None:
        suite = bench_suite(list(names))
        if as_json:
            click.echo(json.dumps(suite, indent=2))
            return
        table = Table(
            title=f"bare heap loop: {suite['heap_mevents_per_s']:.2f} M events/s",
            caption="; ".join(f"{r['name']}: {r['description']}" for r in suite["scenarios"])
            + "; loop s: the median run's simulation loop; ratio: sim s/s over the heap loop's "
            "M events/s, timed between the runs",
        )
        for col in (
            "scenario",
            "sim s",
            "events",
            "data pkts",
            "runs",
            "loop s",
            "sim s/s",
            "pkts/s",
            "peak RSS",
            "ratio",
        ):
            table.add_column(col, justify="left" if col == "scenario" else "right")
        for r in suite["scenarios"]:
            rss = r.get("peak_rss_bytes")
            table.add_row(
                r["name"],
                _num(r["simulated_s"], ",.0f"),
                _int(r["events"]),
                _int(r["data_packets"]),
                _int(r["runs"]),
                _num(r["wall_s"], ",.3f"),
                _num(r["sim_s_per_wall_s"], ",.0f"),
                _num(r["data_packets_per_wall_s"] / 1e6, ",.2f", " M"),
                "-" if rss is None else f"{rss / 2**20:,.0f} MiB",
                _num(r["ratio_to_heap"], ",.1f"),
            )
        console = Console(width=max(Console().width, 110))
        if suite["scenarios"]:
            console.print(table)
        for s in suite["sweeps"]:
            console.print(
                f"{s['name']}: {s['description']}: {s['runs']} runs in {s['wall_s']:.1f} s on "
                f"{s['cores']} cores = {s['runs_per_s']:.1f} runs/s "
                f"({s['sim_s_per_wall_s']:,.0f} simulated s per wall s)"
            )
        return
    report = bench_report(seconds)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("events", _int(report["events"])),
        ("simulated", _num(report["sim_s"], ",.1f", " s")),
        ("loop wall time", _num(report["loop_wall_s"], ",.3f", " s")),
        ("total wall time", _num(report["wall_s"], ",.3f", " s")),
        ("events/s", _num(report["events_per_s"], ",.0f")),
        ("sim s / wall s", _num(report["sim_s_per_wall_s"], ",.2f")),
        ("bare heap loop", _num(report["heap_mevents_per_s"], ",.2f", " M events/s")),
        ("(sim s / wall s) / heap", _num(report["sim_s_per_wall_s_per_heap_mevents"], ",.3f")),
    ]
    for label, value in rows:
        table.add_row(label, value)
    Console().print(table)


# The kernel testbed's commands live with the testbed.
from .calibrate import calibrate_command  # noqa: E402
from .emulate import emulate_command  # noqa: E402
from .sweep import sweep_command  # noqa: E402

cli.add_command(emulate_command)
cli.add_command(calibrate_command)
cli.add_command(sweep_command)


def _plot_errors(call: Any) -> list[Path]:
    try:
        return call()
    except FileNotFoundError as exc:
        raise ScenarioError(str(exc)) from None
    except RuntimeError as exc:  # matplotlib missing
        raise click.ClickException(str(exc)) from None


@cli.command("plot")
@click.argument("run_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="PLOTDIR",
    help="Where to write the PNGs and index.html (default: DIR/plots).",
)
def plot_command(run_dir: Path, out: Path | None) -> None:
    """Draw every plot that applies to the run in DIR (written by `mpsched run --out DIR`)."""
    from .plot import plot_run

    for path in _plot_errors(lambda: plot_run(run_dir, out)):
        click.echo(f"wrote {path}")


@cli.command("compare")
@click.argument(
    "run_dirs", metavar="DIR...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("compare"),
    show_default=True,
    metavar="PLOTDIR",
    help="Where to write the PNGs and index.html.",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="TEXT",
    help="Name of each run, in order (default: its scheduler).",
)
def compare_command(run_dirs: tuple[Path, ...], out: Path, labels: tuple[str, ...]) -> None:
    """Draw several runs (`mpsched run --out DIR` each) on shared axes, one colour per run."""
    from .plot import compare_runs

    if labels and len(labels) != len(run_dirs):
        raise ScenarioError(f"--label: {len(labels)} labels for {len(run_dirs)} runs")
    for path in _plot_errors(lambda: compare_runs(run_dirs, out, labels or None)):
        click.echo(f"wrote {path}")


@cli.command("table")
@click.argument("sweep_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--value",
    default="goodput_mbps",
    show_default=True,
    metavar="METRIC",
    help="A column of DIR/results.parquet, SUBFLOW:COLUMN of DIR/subflows.parquet "
    "(e.g. wifi:goodput_mbps), or flows:COLUMN of DIR/flows.parquet (flows:completion_s).",
)
@click.option(
    "--rows",
    metavar="KEY,...",
    help="Factors down the side (default: every factor that varies, but --cols).",
)
@click.option(
    "--cols", default="scheduler", show_default=True, metavar="KEY", help="Factor across."
)
@click.option("--group", metavar="NAME", help="Only the runs of this sweep group.")
@click.option(
    "--ratio-to",
    metavar="COLUMN",
    help="Beside each value, its ratio to this column's (e.g. default).",
)
@click.option(
    "--stat",
    default="mean",
    show_default=True,
    metavar="STAT",
    help="Over the runs of a cell: mean, median, min, max or pN (a percentile, e.g. p25).",
)
@click.option(
    "--size-classes",
    default="100KB,400KB",
    show_default=True,
    metavar="SIZES",
    help="With --value flows:COLUMN, the bounds of the factor size_class (paper 004's S1-S3).",
)
@click.option("--digits", default=1, show_default=True, type=click.IntRange(0, 6))
@click.option("--csv", "as_csv", is_flag=True, help="CSV instead of a Markdown table.")
def table_command(
    sweep_dir: Path,
    value: str,
    rows: str | None,
    cols: str,
    group: str | None,
    ratio_to: str | None,
    stat: str,
    size_classes: str,
    digits: int,
    as_csv: bool,
) -> None:
    """Print one metric of the sweep in DIR (`mpsched sweep --out DIR`) as a table: its mean (or
    --stat) over the runs of each cell, by factor."""
    from .table import sweep_table
    from .units import parse_size

    row_keys = [r.strip() for r in rows.split(",") if r.strip()] if rows else None
    try:
        bounds = tuple(parse_size(b.strip()) for b in size_classes.split(",") if b.strip())
    except ValueError as exc:
        raise ScenarioError(f"--size-classes: {exc}") from None
    table = sweep_table(sweep_dir, value, row_keys, cols, group, ratio_to, stat, bounds)
    click.echo(table.csv(digits) if as_csv else table.markdown(digits))


# --- entry point ---


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the CLI; turn every error into one ``error:`` line and an exit code."""
    try:
        code = cli.main(args=argv, prog_name="mpsched", standalone_mode=False)
    except ScenarioError as exc:
        _fail(str(exc), 2)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except RuntimeError as exc:
        _fail(f"internal: {exc}", 1)
    except BrokenPipeError:  # e.g. `mpsched run --json | head -1`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

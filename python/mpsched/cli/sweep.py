"""``mpsched sweep``: every point of a sweep file in the simulator, in parallel."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import ScenarioError
from ..sweep import run_sweep
from ..sweepfile import load_sweep, overrides_of
from .options import override_options
from .progress import SweepLines

__all__ = ["sweep_command"]


def _list_experiments() -> None:
    """Each built-in experiment: its name, its runs (points x repetitions) and its title, then
    where its file is."""
    from ..sweepfile import EXPERIMENTS, experiments

    rows = []
    for name in experiments():
        sweep = load_sweep(EXPERIMENTS / f"{name}.toml")
        rows.append((name, f"{len(sweep.points) * (sweep.repetitions or 1):,} runs", sweep.title))
    name_width = max((len(r[0]) for r in rows), default=0)
    runs_width = max((len(r[1]) for r in rows), default=0)
    for name, runs, title in rows:
        click.echo(f"{name:<{name_width}}  {runs:>{runs_width}}  {title}")
    click.echo(f"\n(files in {EXPERIMENTS}; run one with `mpsched sweep NAME`)")


@click.command("sweep")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of the results (default: runs/NAME of the sweep file).",
)
@click.option("--jobs", "-j", type=click.IntRange(1, 4096), help="Worker processes (all cores).")
@click.option("--repetitions", "-n", type=click.IntRange(1, 10_000), help="Runs per point.")
@override_options
@click.option("--benefit", is_flag=True, help="Also run plain TCP per path: aggregation benefit.")
@click.option("--resume", is_flag=True, help="Keep the runs already in DIR and run the rest.")
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Worker processes on this machine, or a Ray cluster.",
)
@click.option("--ray-address", metavar="ADDR", help="Ray cluster address (default RAY_ADDRESS).")
@click.option("--list", "list_only", is_flag=True, help="List the built-in experiments.")
def sweep_command(
    file: Path | None,
    out: Path | None,
    jobs: int | None,
    repetitions: int | None,
    duration: str | None,
    sets: tuple[str, ...],
    benefit: bool,
    resume: bool,
    backend: str,
    ray_address: str | None,
    list_only: bool,
) -> None:
    """Run every point of the sweep FILE (or a built-in experiment: --list) in the simulator,
    in parallel.

    Writes DIR/runs.jsonl (each run as it finishes), DIR/results.parquet (one row per run),
    DIR/subflows.parquet (one row per run and subflow) and DIR/sweep.json. Interrupted, it
    keeps every finished run; --resume runs the rest.
    """
    if list_only or file is None:
        if not list_only:
            raise ScenarioError("sweep: give a sweep file or a built-in experiment (--list)")
        _list_experiments()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    sweep = load_sweep(file)
    overrides = overrides_of(duration, sets)
    out_dir = out if out is not None else Path("runs") / file.stem
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]sweep[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=not console.is_terminal,
        disable=not console.is_terminal,
    )
    with bar:
        job = bar.add_task("sweep", total=None)

        lines = None if console.is_terminal else SweepLines()

        def tick(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total)
            if lines is not None:
                lines(done, total)

        result = run_sweep(
            sweep,
            out_dir,
            jobs=jobs,
            repetitions=repetitions,
            overrides=overrides,
            resume=resume,
            benefit=benefit,
            backend=backend,
            ray_address=ray_address,
            progress=tick,
        )
    rate = result.done / result.wall_s if result.wall_s > 0 else 0.0
    console.print(
        f"{result.done} of {result.total} runs in {out_dir} ({result.wall_s:.1f} s, "
        f"{rate:.1f} runs/s){f', {result.failed} failed' if result.failed else ''}"
    )
    if result.interrupted:
        console.print("interrupted: the finished runs are kept; resume with --resume")
        sys.exit(130)
    if result.failed:
        sys.exit(1)

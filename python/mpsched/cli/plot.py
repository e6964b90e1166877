"""``mpsched plot`` and ``mpsched compare``: the PNGs of one run, and of several on shared axes.

matplotlib is imported only when a plot is drawn, so that the other commands start fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ScenarioError

__all__ = ["compare_command", "plot_command"]


def _plot_errors(call: Any) -> list[Path]:
    try:
        return call()
    except FileNotFoundError as exc:
        raise ScenarioError(str(exc)) from None
    except RuntimeError as exc:  # matplotlib missing
        raise click.ClickException(str(exc)) from None


@click.command("plot")
@click.argument("run_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="PLOTDIR",
    help="Where to write the PNGs and index.html (default: DIR/plots).",
)
def plot_command(run_dir: Path, out: Path | None) -> None:
    """Draw every plot that applies to the run in DIR (written by `mpsched run --out DIR`)."""
    from ..plot import plot_run

    for path in _plot_errors(lambda: plot_run(run_dir, out)):
        click.echo(f"wrote {path}")


@click.command("compare")
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
@click.option("--force", is_flag=True, help="Write into PLOTDIR even when it is not empty.")
def compare_command(
    run_dirs: tuple[Path, ...], out: Path, labels: tuple[str, ...], force: bool
) -> None:
    """Draw several runs (`mpsched run --out DIR` each) on shared axes, one colour per run."""
    from ..plot import compare_runs

    if labels and len(labels) != len(run_dirs):
        raise ScenarioError(f"--label: {len(labels)} labels for {len(run_dirs)} runs")
    # The default folder is ./compare: a second comparison must not silently replace the first.
    if not force and out.is_dir() and any(out.iterdir()):
        raise ScenarioError(
            f"--out {out}: the folder is not empty (an earlier comparison?); "
            "choose another with --out, or pass --force to overwrite it"
        )
    for path in _plot_errors(lambda: compare_runs(run_dirs, out, labels or None)):
        click.echo(f"wrote {path}")

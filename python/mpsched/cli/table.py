"""``mpsched table``: one metric of a sweep as a Markdown or CSV table."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import ScenarioError

__all__ = ["table_command"]


@click.command("table")
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
    --stat) over the runs of each cell, by factor. A caption line above the Markdown table says
    which metric, statistic and group it holds (--csv has the table alone)."""
    from ..table import sweep_table
    from ..units import parse_size

    row_keys = [r.strip() for r in rows.split(",") if r.strip()] if rows else None
    try:
        bounds = tuple(parse_size(b.strip()) for b in size_classes.split(",") if b.strip())
    except ValueError as exc:
        raise ScenarioError(f"--size-classes: {exc}") from None
    table = sweep_table(sweep_dir, value, row_keys, cols, group, ratio_to, stat, bounds)
    if as_csv:
        click.echo(table.csv(digits))
    else:  # a Markdown paragraph, then the table
        click.echo(f"{table.caption()}\n\n{table.markdown(digits)}")

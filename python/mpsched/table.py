"""A sweep's results as a table: one metric, rows and columns by sweep factors, the mean (or
another statistic) over the runs of each cell (``mpsched table DIR``).

The metric is a column of ``DIR/results.parquet`` (``goodput_mbps``, ``ooo_delay_ms.mean``,
``aggregation_benefit``...), ``SUBFLOW:COLUMN`` of ``DIR/subflows.parquet`` for the subflow
of that path name (``wifi:goodput_mbps``, ``lte:held_acks``), or ``flows:COLUMN`` of
``DIR/flows.parquet`` (every connection of runs with competing flows: a cell pools the flows
of its runs; the factor ``size_class`` splits them by size, at ``size_classes``, and ``flow``
by connection, 0 the main one). Factors are
the keys a sweep set (``path.lte.rtt``, ``connection.stack``) and the run's own columns
(``scheduler``, ``group``, ``protocol``). Rows and columns keep the order in which the sweep
ran them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ScenarioError

if TYPE_CHECKING:
    import pandas as pd

SET = "set."


@dataclass
class Table:
    """Cells by (row labels, column label): the mean, and the ratio to ``ratio_to``'s."""

    row_keys: list[str]
    col_key: str
    value: str
    rows: list[tuple[str, ...]]
    cols: list[str]
    cells: dict[tuple[tuple[str, ...], str], float]
    ratio_to: str | None = None
    stat: str = "mean"
    group: str | None = None

    def caption(self) -> str:
        """One line: what the cells are (metric, statistic, group), for above the table."""
        what = _STAT_NAMES.get(self.stat) or f"{self.stat[1:]}th percentile"
        pooled = "flows" if self.value.startswith("flows:") else "runs"
        text = f"{self.value}: {what} over each cell's {pooled}"
        text += f", group {self.group}" if self.group is not None else ", every group"
        if self.ratio_to is not None:
            text += f"; in brackets the ratio to column {self.ratio_to}"
        return text

    def cell(self, row: tuple[str, ...], col: str, digits: int) -> str:
        v = self.cells.get((row, col))
        if v is None:
            return ""
        text = f"{v:.{digits}f}"
        if self.ratio_to is not None and col != self.ratio_to:
            base = self.cells.get((row, self.ratio_to))
            if base:
                text += f" ({v / base:.2f}x)"
        return text

    def markdown(self, digits: int = 1) -> str:
        head = [*self.row_keys, *self.cols]
        lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
        for row in self.rows:
            values = [self.cell(row, c, digits) for c in self.cols]
            lines.append("| " + " | ".join([*row, *values]) + " |")
        return "\n".join(lines)

    def csv(self, digits: int = 1) -> str:
        lines = [",".join([*self.row_keys, *self.cols])]
        for row in self.rows:
            values = [
                f"{v:.{digits}f}" if (v := self.cells.get((row, c))) is not None else ""
                for c in self.cols
            ]
            lines.append(",".join([*row, *values]))
        return "\n".join(lines)


def _column(frame: pd.DataFrame, key: str, option: str) -> str:
    """The column of ``frame`` that factor ``key`` names: the swept value as written, or else
    the normalized scenario's."""
    for name in (SET + key, key):
        if name in frame.columns:
            return name
    if key in (SIZE_CLASS, FLOW):
        raise ScenarioError(f"{option}: {key} needs --value flows:COLUMN")
    factors = [c.removeprefix(SET) for c in frame.columns if c.startswith(SET)]
    known = ", ".join([*factors, "scheduler", "group", "protocol", "congestion"])
    raise ScenarioError(f"{option}: no factor {key!r} in the results (have: {known})")


#: Paper 004's flow classes: S1 below 100 KB, S2 below 400 KB, S3 above.
SIZE_CLASSES = (100_000, 400_000)
SIZE_CLASS = "size_class"
FLOW = "flow"


def _size_labels(bounds: tuple[int, ...]) -> list[str]:
    def kb(b: int) -> str:
        return f"{b / 1e3:g}KB" if b < 1_000_000 else f"{b / 1e6:g}MB"

    edges = [kb(b) for b in bounds]
    middle = [f"{a}-{b}" for a, b in itertools.pairwise(edges)]
    return [f"<{edges[0]}", *middle, f">={edges[-1]}"]


def _flows(sweep_dir: Path, column: str, bounds: tuple[int, ...]) -> pd.DataFrame:
    """One row per run and flow: ``key``, ``__value`` and the flow's ``size_class``."""
    import pandas as pd

    path = sweep_dir / "flows.parquet"
    if not path.is_file():
        raise ScenarioError(f"--value: {sweep_dir} has no flows.parquet (no competing flows)")
    flows = pd.read_parquet(path)
    if column not in flows.columns or flows[column].dtype.kind not in "fiub":
        skip = ("key", "group", "point", "paths", "protocol")
        have = ", ".join(c for c in flows.columns if c not in skip)
        raise ScenarioError(f"--value: no flow column {column!r} (have: {have})")
    labels = _size_labels(bounds)
    # Bulk flows have no size: all of them leave the column without a number to bin.
    size = pd.to_numeric(flows["size_bytes"], errors="coerce").astype(float)
    cls = pd.cut(size, [0, *bounds, float("inf")], labels=labels, right=False)
    out = flows[["key"]].assign(__value=flows[column])
    out[SIZE_CLASS] = cls.astype(str).where(size.notna(), "bulk")
    # Which connection (0: the main one), as a factor: --rows flow.
    out[FLOW] = flows["flow"]
    return out


def _load(
    sweep_dir: Path, value: str, size_classes: tuple[int, ...] = SIZE_CLASSES
) -> tuple[pd.DataFrame, str]:
    """The finished runs, with the metric as column ``__value``."""
    import pandas as pd

    results = sweep_dir / "results.parquet"
    if not results.is_file():
        raise ScenarioError(f"{sweep_dir}: no results.parquet (run `mpsched sweep --out DIR`)")
    frame = pd.read_parquet(results)
    if "error" in frame.columns:
        frame = frame[frame["error"].isna()]
    if value.startswith("flows:"):
        frame = frame.merge(_flows(sweep_dir, value.split(":", 1)[1], size_classes), on="key")
    elif ":" in value:
        name, column = value.split(":", 1)
        if not (sweep_dir / "subflows.parquet").is_file():
            raise ScenarioError(f"--value: {sweep_dir} has no subflows.parquet")
        subflows = pd.read_parquet(sweep_dir / "subflows.parquet")
        if column not in subflows.columns or subflows[column].dtype.kind not in "fiub":
            have = ", ".join(c for c in subflows.columns if c not in ("key", "group", "point"))
            raise ScenarioError(f"--value: no subflow column {column!r} (have: {have})")
        rows = subflows[subflows["name"] == name]
        if rows.empty:
            names = ", ".join(sorted(subflows["name"].unique()))
            raise ScenarioError(f"--value: no subflow named {name!r} (have: {names})")
        frame = frame.merge(rows[["key", column]].rename(columns={column: "__value"}), on="key")
    else:
        if value not in frame.columns or frame[value].dtype.kind not in "fiub":
            numeric = [c for c in frame.columns if frame[c].dtype.kind in "fiu"]
            raise ScenarioError(f"--value: no column {value!r} (have: {', '.join(numeric)})")
        frame = frame.assign(__value=frame[value])
    return frame, value


_STAT_NAMES = {"mean": "mean", "median": "median", "min": "minimum", "max": "maximum"}


def _statistic(stat: str) -> str | Callable[[pd.Series], float]:
    """``mean``, ``median``, ``min``, ``max`` or ``pN`` (the N-th percentile) of a Series."""
    named = {"mean": "mean", "median": "median", "min": "min", "max": "max"}
    if stat in named:
        return named[stat]
    if stat.startswith("p"):
        try:
            q = float(stat[1:])
        except ValueError:
            q = -1.0
        if 0.0 <= q <= 100.0:
            return lambda x: x.quantile(q / 100.0)
    raise ScenarioError(f"--stat: {stat!r} is not mean, median, min, max or pN (0 <= N <= 100)")


def sweep_table(
    sweep_dir: str | Path,
    value: str = "goodput_mbps",
    rows: list[str] | None = None,
    cols: str = "scheduler",
    group: str | None = None,
    ratio_to: str | None = None,
    stat: str = "mean",
    size_classes: tuple[int, ...] = SIZE_CLASSES,
) -> Table:
    """``stat`` (default the mean) of ``value`` over the runs of each cell of the sweep in
    ``sweep_dir``, by ``rows`` (default: every factor the sweep varied, except ``cols``) and
    ``cols``. With the default rows a cell holds one point's repetitions; with fewer rows it
    holds every point that shares them (``--rows group --stat p25``: a quartile over a
    design's settings)."""
    aggregate = _statistic(stat)
    if not size_classes or list(size_classes) != sorted(set(size_classes)) or size_classes[0] <= 0:
        raise ScenarioError("--size-classes: increasing sizes > 0, e.g. 100KB,400KB")
    frame, value = _load(Path(sweep_dir), value, tuple(size_classes))
    if group is not None:
        groups = list(frame["group"].unique())
        if group not in groups:
            raise ScenarioError(f"--group: no group {group!r} (have: {', '.join(groups)})")
        frame = frame[frame["group"] == group]
    if frame.empty:
        raise ScenarioError(f"{sweep_dir}: no finished runs")
    col = _column(frame, cols, "--cols")
    if rows is None:
        # The scheduler factor and the run's scheduler column are one factor.
        same = {"scheduler", SET + "connection.scheduler"}
        skip = {col} | (same if col in same else set())
        row_cols = [
            c
            for c in frame.columns
            if (c.startswith(SET) or c in ("group", SIZE_CLASS))
            and c not in skip
            and frame[c].astype(str).nunique() > 1
        ]
    else:
        row_cols = [_column(frame, r, "--rows") for r in rows]
    labels = frame[[*row_cols, col]].astype(str)
    frame = frame.assign(**{f"__l{i}": labels[c] for i, c in enumerate([*row_cols, col])})
    keys = [f"__l{i}" for i in range(len(row_cols) + 1)]
    means = frame.groupby(keys, sort=False)["__value"].agg(aggregate)
    cells: dict[tuple[tuple[str, ...], str], float] = {}
    table_rows: list[tuple[str, ...]] = []
    table_cols: list[str] = []
    for index, mean in means.items():
        parts = index if isinstance(index, tuple) else (index,)
        row, column = tuple(str(p) for p in parts[:-1]), str(parts[-1])
        if mean != mean:  # NaN: nothing to average (bulk flows have no completion time)
            continue
        if row not in table_rows:
            table_rows.append(row)
        if column not in table_cols:
            table_cols.append(column)
        cells[(row, column)] = float(mean)
    # Down the side, by the first factor, then the second...: each in the order its values
    # first appear (the sweep file's order), whatever order the points ran in.
    order = [
        {v: i for i, v in enumerate([*_size_labels(tuple(size_classes)), "bulk"])}
        if c == SIZE_CLASS
        else {v: i for i, v in enumerate(dict.fromkeys(labels[c]))}
        for c in row_cols
    ]
    table_rows.sort(key=lambda row: tuple(o[v] for o, v in zip(order, row, strict=True)))
    if ratio_to is not None and ratio_to not in table_cols:
        raise ScenarioError(f"--ratio-to: no column {ratio_to!r} (have: {', '.join(table_cols)})")
    return Table(
        row_keys=[c.removeprefix(SET) for c in row_cols],
        col_key=col.removeprefix(SET),
        value=value,
        rows=table_rows,
        cols=table_cols,
        cells=cells,
        ratio_to=ratio_to,
        stat=stat,
        group=group,
    )

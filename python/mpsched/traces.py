"""Trace tables: their schema, streaming them to Parquet, reading a run back, derived series.

The simulator emits six tables (see ``docs/traces.md``). Units are in the column names: ``_ns``
nanoseconds of simulated time, ``_bytes`` bytes, ``_segments`` segments (packets of up to one
MSS: 1448 payload bytes for TCP, 1424 for MPTCP, whose DSS option takes 24 bytes). Subflows
are numbered in the order of the scenario's selected paths; ``summary.json``
(``subflows[i].name``) gives their names.

A run directory written by ``mpsched run --out DIR`` (or ``mpsched.run(..., out=DIR)``) holds
``summary.json``, ``scenario.json`` and ``TABLE.parquet`` for every table. :func:`load_run`
reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mpsched import contract
from mpsched.errors import ScenarioError

if TYPE_CHECKING:  # imported when used, so that `import mpsched` stays fast
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "HEADER_BYTES",
    "MPTCP_MSS_BYTES",
    "MSS_BYTES",
    "MTU_BYTES",
    "SSTHRESH_INFINITE",
    "TABLES",
    "Column",
    "ParquetSink",
    "Run",
    "cdf",
    "data_header_bytes",
    "empty_table",
    "link_rate_bps",
    "load_run",
    "mss_bytes",
    "partial_table",
    "queue_limit_bytes",
    "rates",
    "schema_markdown",
    "subflow_names",
    "table_from_columns",
]

MSS_BYTES = 1448
"""Payload bytes of a full TCP segment (1500-byte packets with TCP timestamps)."""

MPTCP_MSS_BYTES = 1424
"""Payload bytes of a full MPTCP segment: its DSS option (mapping and Data ACK) takes 24."""

SSTHRESH_INFINITE = 2_147_483_647
"""``ssthresh_segments`` before the first loss (slow start has no threshold yet)."""

HEADER_BYTES = 52
"""IPv4 + TCP + timestamp option bytes of every packet; a full data packet is 1500 bytes."""

MTU_BYTES = MSS_BYTES + HEADER_BYTES


def mss_bytes(protocol: str) -> int:
    """Payload bytes of a full data segment of ``protocol`` (``"tcp"`` or ``"mptcp"``)."""
    return MPTCP_MSS_BYTES if protocol == "mptcp" else MSS_BYTES


def data_header_bytes(protocol: str) -> int:
    """Header bytes of a data packet of ``protocol``: a full one is 1500 bytes either way."""
    return MTU_BYTES - mss_bytes(protocol)


class Column(NamedTuple):
    """One documented trace column."""

    name: str
    dtype: str  # "u64", "u32", "u16", "u8", "f64" or "str" (as the native module sends them)
    unit: str
    doc: str


TABLES: dict[str, tuple[str, tuple[Column, ...]]] = {
    name: (t.meaning, tuple(Column(c.name, c.type, c.unit, c.meaning) for c in t.columns))
    for name, t in contract.tables().items()
}
"""Every trace table: what a row is, and its columns. Declared in Rust (``trace_schema.rs``)
and read from the native module."""

_NUMPY_DTYPES: dict[str, str] = {
    "i64": "<i8",
    "u64": "<u8",
    "u32": "<u4",
    "u16": "<u2",
    "u8": "u1",
    "f64": "<f8",
}


def _arrow_type(dtype: str) -> pa.DataType:
    import pyarrow as pa

    return {
        "i64": pa.int64(),
        "u64": pa.uint64(),
        "u32": pa.uint32(),
        "u16": pa.uint16(),
        "u8": pa.uint8(),
        "f64": pa.float64(),
        "str": pa.string(),
    }[dtype]


def empty_table(name: str) -> pa.Table:
    """An empty table with the documented schema of trace table ``name``."""
    import pyarrow as pa

    _, columns = TABLES[name]
    return pa.schema([(c.name, _arrow_type(c.dtype)) for c in columns]).empty_table()


ColumnData = tuple[str, bytes] | tuple[str, list[str]]


def table_from_columns(columns: Mapping[str, ColumnData]) -> pa.Table:
    """Build an Arrow table from native columns.

    Each column is ``(dtype, little-endian bytes)`` with a numeric dtype ("i64", "u64", "u32",
    "u16", "u8", "f64"), read without copying through ``numpy.frombuffer``, or
    ``("str", list_of_strings)``.
    """
    import numpy as np
    import pyarrow as pa

    arrays: dict[str, pa.Array] = {}
    for name, (dtype, data) in columns.items():
        if dtype == "str":
            arrays[name] = pa.array(data, type=pa.string())
            continue
        try:
            numpy_dtype = _NUMPY_DTYPES[dtype]
        except KeyError:
            raise RuntimeError(f"trace column {name!r}: unknown dtype {dtype!r}") from None
        arrays[name] = pa.array(np.frombuffer(data, dtype=numpy_dtype))  # type: ignore[arg-type]
    return pa.table(arrays)


def partial_table(name: str, columns: Mapping[str, ColumnData]) -> pa.Table:
    """Trace table ``name`` from the columns one end of a real connection sees (the transport's
    client has no sending times): the documented schema, in order, with every column it did
    not see null."""
    import pyarrow as pa

    known = table_from_columns(columns)
    _, schema = TABLES[name]
    unknown = set(known.column_names) - {c.name for c in schema}
    if unknown:
        raise RuntimeError(f"trace table {name!r}: undocumented columns {sorted(unknown)}")
    arrays = [
        known.column(c.name).cast(_arrow_type(c.dtype))
        if c.name in known.column_names
        else pa.nulls(known.num_rows, _arrow_type(c.dtype))
        for c in schema
    ]
    return pa.table(arrays, names=[c.name for c in schema])


class TraceLimitError(ScenarioError):
    """The streamed traces reached their size limit."""


class ParquetSink:
    """Receives the native module's trace chunks and appends each as a row group to
    ``DIR/TABLE.parquet``, so that memory stays flat however long the run.

    ``close()`` finishes every file and writes an empty file (documented schema) for each table
    that had no rows, so that a run directory always holds all tables.
    """

    def __init__(self, out: Path, *, max_bytes: int | None = None) -> None:
        self.out = out
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.rows: dict[str, int] = {}
        self.chunks: dict[str, int] = {}
        self.max_bytes = max_bytes
        self.bytes = 0

    def __call__(self, table: str, columns: Mapping[str, ColumnData]) -> None:
        import pyarrow.parquet as pq

        data = table_from_columns(columns)
        # Counted before writing, uncompressed: Parquet's pages are smaller, never larger.
        self.bytes += data.nbytes
        if self.max_bytes is not None and self.bytes > self.max_bytes:
            raise TraceLimitError(
                f"traces: more than {self.max_bytes:,} bytes (max_trace_size); the run stopped "
                f"with {self.rows.get('segments', 0):,} segments written. Raise the limit, "
                "trace less (--sample-interval), or run with --no-traces"
            )
        writer = self.writers.get(table)
        if writer is None:
            writer = pq.ParquetWriter(self.out / f"{table}.parquet", data.schema)
            self.writers[table] = writer
        writer.write_table(data, row_group_size=max(data.num_rows, 1))
        self.rows[table] = self.rows.get(table, 0) + data.num_rows
        self.chunks[table] = self.chunks.get(table, 0) + 1

    def close(self) -> list[Path]:
        """Close every file; returns the paths of all table files."""
        import pyarrow.parquet as pq

        for writer in self.writers.values():
            writer.close()
        for name in TABLES:
            if name not in self.writers:
                pq.write_table(empty_table(name), self.out / f"{name}.parquet")
        names = list(TABLES) + [n for n in self.writers if n not in TABLES]
        return [self.out / f"{name}.parquet" for name in names]


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")


# --- reading a run back ---


@dataclass
class Run:
    """A run read back: summary, scenario and lazily read trace tables, from a run directory
    or, with ``tables``, from a run traced in memory (``path`` then only names it)."""

    path: Path
    summary: dict[str, Any]
    scenario: dict[str, Any]
    _cache: dict[tuple[str, tuple[str, ...] | None], pd.DataFrame] = field(
        default_factory=dict, repr=False
    )
    tables: dict[str, pa.Table] | None = field(default=None, repr=False)

    def has(self, table: str) -> bool:
        """Whether the run recorded ``table`` (a Parquet file, or a table in memory)."""
        if self.tables is not None:
            return table in self.tables
        return (self.path / f"{table}.parquet").is_file()

    def frame(self, table: str, columns: list[str] | None = None) -> pd.DataFrame:
        """Trace table ``table`` as a DataFrame (only ``columns`` if given); an empty frame
        with the documented columns if the run has no such file."""
        import pandas as pd

        key = (table, tuple(columns) if columns else None)
        if key not in self._cache:
            file = self.path / f"{table}.parquet"
            if self.tables is not None and table in self.tables:
                held = self.tables[table]
                frame = (held.select(columns) if columns else held).to_pandas()
            elif self.tables is None and file.is_file():
                frame = pd.DataFrame(_read_columns(file, columns), copy=False)
            elif table in TABLES:
                frame = empty_table(table).to_pandas()
                if columns:
                    frame = frame[columns]
            else:
                frame = pd.DataFrame(columns=columns or [])
            self._cache[key] = frame
        return self._cache[key]

    def forget(self) -> None:
        """Drop the tables read so far (they are read again when needed)."""
        self._cache.clear()

    @property
    def subflow_names(self) -> list[str]:
        return subflow_names(self.summary, self.scenario)

    @property
    def label(self) -> str:
        """``scheduler`` (``tcp`` for plain TCP) and the directory name."""
        return f"{run_scheduler(self.summary)} ({self.path.name})"


def _read_columns(file: Path, columns: list[str] | None) -> dict[str, np.ndarray]:
    """Columns of a Parquet file as numpy arrays, filled row group by row group: a trace of
    millions of rows costs its columns' size, not the several copies of a whole-table read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(file)
    schema = parquet.schema_arrow
    names = columns or schema.names
    rows = parquet.metadata.num_rows
    out: dict[str, np.ndarray] = {}
    for name in names:
        kind = schema.field(name).type
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        out[name] = np.empty(rows, dtype=object if text else kind.to_pandas_dtype())
    at = 0
    for batch in parquet.iter_batches(columns=names, batch_size=65_536, use_threads=False):
        n = batch.num_rows
        for name in names:
            out[name][at : at + n] = batch.column(name).to_numpy(zero_copy_only=False)
        at += n
    return out


def run_scheduler(summary: Mapping[str, Any]) -> str:
    if summary.get("protocol") == "tcp":
        return "tcp"
    return str(summary.get("scheduler", "?"))


def subflow_names(
    summary: Mapping[str, Any], scenario: Mapping[str, Any] | None = None
) -> list[str]:
    """Names of the subflows by index, from the summary (else the scenario's paths)."""
    subflows = summary.get("subflows")
    if isinstance(subflows, list) and subflows:
        return [str(s.get("name", f"subflow {i}")) for i, s in enumerate(subflows)]
    paths = (scenario or {}).get("paths") or []
    return [str(p.get("name", f"subflow {i}")) for i, p in enumerate(paths)]


def load_run(path: str | Path) -> Run:
    """Read a run directory written by ``mpsched run --out DIR``."""
    path = Path(path)
    try:
        summary = json.loads((path / "summary.json").read_text("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: not a run directory (no summary.json)") from None
    scenario_file = path / "scenario.json"
    scenario = json.loads(scenario_file.read_text("utf-8")) if scenario_file.is_file() else {}
    return Run(path=path, summary=summary, scenario=scenario)


# --- derived series ---


def rates(subflows: pd.DataFrame, window_ns: int) -> pd.DataFrame:
    """Sending rate and goodput per subflow over time from the sampled ``subflows`` table.

    Each rate is the growth of a cumulative byte counter over ``window_ns`` (rounded down to a
    whole number of sample intervals, at least one), in Mbit/s, at the end of each window.
    Columns: ``t_s``, ``subflow``, ``send_mbps``, ``goodput_mbps``.
    """
    import numpy as np
    import pandas as pd

    rows = []
    for sf, unsorted in subflows.groupby("subflow", sort=True):
        group = unsorted.sort_values("t_ns")
        t = group["t_ns"].to_numpy(dtype=np.int64)
        if len(t) < 2:
            continue
        interval = int(np.min(np.diff(t))) or 1
        step = max(int(window_ns // interval), 1)
        idx = np.arange(0, len(t), step)
        if len(idx) < 2:
            idx = np.array([0, len(t) - 1])
        dt = np.diff(t[idx]) / 1e9
        sent = np.diff(group["bytes_sent"].to_numpy(dtype=np.float64)[idx])
        got = np.diff(group["bytes_delivered"].to_numpy(dtype=np.float64)[idx])
        rows.append(
            pd.DataFrame(
                {
                    "t_s": t[idx][1:] / 1e9,
                    "subflow": sf,
                    "send_mbps": sent * 8 / dt / 1e6,
                    "goodput_mbps": got * 8 / dt / 1e6,
                }
            )
        )
    if not rows:
        return pd.DataFrame(columns=["t_s", "subflow", "send_mbps", "goodput_mbps"])
    return pd.concat(rows, ignore_index=True)


def cdf(values: Any, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``values``: ``(x, P[X <= x])``, at most ``points`` points.

    Exact at the points returned (the sorted values at evenly spaced ranks, first and last
    included).
    """
    import numpy as np

    x = np.sort(np.asarray(values))  # in its own dtype: no float copy of a long column
    n = len(x)
    if n == 0:
        return x.astype(np.float64), x.astype(np.float64)
    ranks = np.unique(np.linspace(0, n - 1, min(n, points)).round().astype(np.int64))
    xs = x[ranks]
    # P[X <= x] counts ties: the last index holding each value.
    ps = np.searchsorted(x, xs, side="right") / n
    return xs.astype(np.float64), ps


# --- the scenario's links ---


def link_rate_bps(path: Mapping[str, Any], t_ns: int) -> int:
    """The data-direction rate of a normalized path at time ``t_ns`` (after its schedule)."""
    rate = int(path["down"]["rate_bps"])
    for change in path.get("schedule") or []:
        if change["at_ns"] <= t_ns and change.get("rate_bps") is not None:
            rate = int(change["rate_bps"])
    return rate


def queue_limit_bytes(path: Mapping[str, Any], t_ns: int = 0) -> int:
    """The drop-tail limit of a normalized path's data-direction queue in wire bytes at
    ``t_ns``: a byte limit as given, a packet limit times a full packet (1500 bytes), a time
    limit at the link rate then in force. The queue always admits a packet when it is empty,
    so its backlog never exceeds ``max(limit, 1500)``."""
    queue = path["down"]["queue"]
    if "bytes" in queue:
        return int(queue["bytes"])
    if "packets" in queue:
        return int(queue["packets"]) * MTU_BYTES
    return link_rate_bps(path, t_ns) * int(queue["time_ns"]) // 8 // 1_000_000_000


_TYPE_NAMES = {
    "u64": "uint64",
    "u32": "uint32",
    "u16": "uint16",
    "u8": "uint8",
    "f64": "float64",
    "str": "string",
}


def schema_markdown() -> str:
    """The tables of :data:`TABLES` as Markdown, as in docs/traces.md."""
    parts = []
    for name, (description, columns) in TABLES.items():
        lines = [f"## `{name}`", "", description, ""]
        lines += ["| column | type | unit | meaning |", "| --- | --- | --- | --- |"]
        lines += [f"| `{c.name}` | {_TYPE_NAMES[c.dtype]} | {c.unit} | {c.doc} |" for c in columns]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"

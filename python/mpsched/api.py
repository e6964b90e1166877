"""The Python API: run a scenario and get its summary and traces."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import ScenarioError
from .scenario import Scenario, Source, load, to_native
from .scheduler import is_reference
from .scheduler import load as load_scheduler

if TYPE_CHECKING:  # numpy, pyarrow and pandas are imported when traces are used
    import pandas as pd
    import pyarrow as pa

__all__ = ["Result", "SchedulerInfo", "native", "run", "schedulers", "table_from_columns"]

# Keyword shortcuts of run(): the key they stand for in the scenario.
SHORTCUTS: dict[str, str] = {
    "scheduler": "connection.scheduler",
    "congestion": "connection.congestion",
    "protocol": "connection.protocol",
    "sndbuf": "connection.sndbuf",
    "rcvbuf": "connection.rcvbuf",
    "paths": "connection.paths",
}

_DTYPES: dict[str, str] = {
    "i64": "<i8",
    "u64": "<u8",
    "u32": "<u4",
    "u16": "<u2",
    "u8": "u1",
    "f64": "<f8",
}


def native() -> ModuleType:
    """The compiled simulator module; ``RuntimeError`` if it has not been built."""
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError as exc:
        raise RuntimeError(
            f"the native module mpsched._native is not built ({exc}); run `pip install -e .`"
        ) from None
    return _native


class SchedulerInfo(NamedTuple):
    """A registered packet scheduler."""

    name: str
    description: str
    source: str


def schedulers() -> list[SchedulerInfo]:
    """Every scheduler the simulator knows."""
    return [SchedulerInfo(*entry) for entry in native().schedulers()]


Column = tuple[str, bytes] | tuple[str, list[str]]


def table_from_columns(columns: Mapping[str, Column]) -> pa.Table:
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
            numpy_dtype = _DTYPES[dtype]
        except KeyError:
            raise RuntimeError(f"trace column {name!r}: unknown dtype {dtype!r}") from None
        arrays[name] = pa.array(np.frombuffer(data, dtype=numpy_dtype))
    return pa.table(arrays)


@dataclass
class Result:
    """The outcome of :func:`run`.

    ``summary`` is the native summary, with ``wall_s`` the wall time of the whole ``run`` call;
    ``loop_wall_s`` is the wall time of the simulation loop alone, as measured by the simulator.
    ``scenario`` is the normalized scenario that was simulated. ``traces`` maps a table name
    (``"segments"``, ``"acks"``) to an Arrow table when the run was traced.
    """

    summary: dict[str, Any]
    scenario: dict[str, Any]
    loop_wall_s: float | None = None
    traces: dict[str, pa.Table] | None = field(default=None, repr=False)

    def table(self, name: str) -> pa.Table:
        """One trace table; ``ValueError`` if the run was not traced or has no such table."""
        if self.traces is None:
            raise ValueError("no traces: run with mpsched.run(..., trace=True)")
        try:
            return self.traces[name]
        except KeyError:
            raise ValueError(f"no trace table {name!r} (have: {', '.join(self.traces)})") from None

    @property
    def segments(self) -> pd.DataFrame:
        """The per-segment trace as a pandas DataFrame."""
        return self.table("segments").to_pandas()

    @property
    def acks(self) -> pd.DataFrame:
        """The per-ACK trace as a pandas DataFrame."""
        return self.table("acks").to_pandas()


def _expand(overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {SHORTCUTS.get(key, key): value for key, value in overrides.items()}


def run(
    scenario: Source | Scenario = None,
    *,
    trace: bool = False,
    scheduler: str | object | None = None,
    **overrides: Any,
) -> Result:
    """Simulate a scenario.

    ``scenario`` is a file path, a TOML string, a dict, an already loaded :class:`Scenario`, or
    ``None`` for the built-in default (the STMS paper's lab set-up). ``overrides`` are ``seed=``,
    ``duration=``, ``scheduler=`` (and ``congestion``, ``protocol``, ``sndbuf``, ``rcvbuf``,
    ``paths``) or dotted keys such as ``**{"path.lte.rtt": "200ms"}``. Invalid input raises
    :class:`ScenarioError`.

    ``scheduler`` is a registered name, ``"module:Class"`` (a scheduler written in Python), or
    a Python scheduler object (see :mod:`mpsched.scheduler`).
    """
    start = time.perf_counter()
    py_scheduler: object | None = None
    if scheduler is not None and not isinstance(scheduler, str):
        py_scheduler = scheduler
        overrides["scheduler"] = f"python:{type(scheduler).__name__}"
    elif scheduler is not None:
        overrides["scheduler"] = scheduler
        if is_reference(scheduler):
            py_scheduler = load_scheduler(scheduler)
    if isinstance(scenario, Scenario):
        if overrides and py_scheduler is None:
            raise ScenarioError("overrides cannot be applied to a loaded Scenario; use load()")
        model = scenario
    else:
        model = load(scenario, _expand(overrides))
    config = to_native(model)
    if py_scheduler is None and is_reference(config["scheduler"]):
        py_scheduler = load_scheduler(config["scheduler"])
    try:
        extra = {} if py_scheduler is None else {"scheduler": py_scheduler}
        summary_json, columns = native().run(json.dumps(config), trace, **extra)
    except ValueError as exc:
        raise ScenarioError(" ".join(str(exc).split())) from None
    summary: dict[str, Any] = json.loads(summary_json)
    loop_wall_s = summary.get("wall_s")
    traces = None
    if columns is not None:
        traces = {name: table_from_columns(cols) for name, cols in columns.items()}
    summary["wall_s"] = time.perf_counter() - start
    return Result(
        summary=summary,
        scenario=config,
        loop_wall_s=float(loop_wall_s) if isinstance(loop_wall_s, int | float) else None,
        traces=traces,
    )

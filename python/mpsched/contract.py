"""The simulator's contract, as the native module publishes it (``_native.contract()``).

What a scenario may name (schedulers and their parameters, congestion controls, stacks, loss
recoveries, workloads), the link knobs a scenario file's keys are derived from, and what a run
returns (the summary's fields and the trace tables'
columns, each with its type, unit and meaning) are declared once, in Rust. Everything in
Python that lists them (validation choices, the sweep's columns, the testbed's summary, the
trace schema, the printed summary, the docs) reads them from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any, NamedTuple

from mpsched import _native

__all__ = [
    "RECORDS",
    "Field",
    "LinkKnob",
    "Table",
    "ViewField",
    "complete",
    "congestion_controls",
    "contract",
    "fields",
    "link_knobs",
    "names",
    "quantile_fields",
    "scalar_fields",
    "scheduler_aliases",
    "schedulers",
    "single_path_congestion",
    "subflow_view",
    "tables",
]

RECORDS = ("summary", "subflow", "flow", "quantiles")
"""The records a run returns: the summary, one per subflow, one per connection (with
competing flows), and the quantiles of a distribution."""


class Field(NamedTuple):
    """One field of a returned record, or one column of a trace table."""

    name: str
    type: str  # "int", "float", "str", "quantiles", "list[...]"; a column: its dtype
    nullable: bool
    unit: str
    meaning: str


class Table(NamedTuple):
    """A trace table: what one row is, and its columns in order."""

    name: str
    meaning: str
    columns: tuple[Field, ...]


class LinkKnob(NamedTuple):
    """A plain scalar of one link direction (``mpsched_scenario::config::LINK_KNOBS``), from
    which :mod:`mpsched.scenario.knobs` derives a scenario file's keys."""

    key: str  # the field of a direction's JSON: "jitter_ns"
    type: str  # "int", "float" or "bool"
    unit: str  # "ns", "bps", "bytes" (an int), else ""
    default: int | float | bool  # what a direction without the field has
    min: float  # the least it may be, in its unit
    max: float | None  # the most, if bounded beyond its type
    meaning: str  # of the data direction's key


class ViewField(NamedTuple):
    """One attribute of the subflow view a Python scheduler sees (``ctx.subflows[i]``)."""

    name: str
    type: str  # its Python type without None: "int", "bool", 'Literal["open", ...]'
    nullable: bool
    unit: str
    meaning: str
    rust: str  # the Rust field of SubflowView, or the method of a derived attribute
    derived: bool

    @property
    def annotation(self) -> str:
        """The Python annotation: ``int``, ``int | None``..."""
        return f"{self.type} | None" if self.nullable else self.type


@cache
def contract() -> dict[str, Any]:
    """The whole contract as the native module returns it (parsed once)."""
    return json.loads(_native.contract())


def names(kind: str) -> tuple[str, ...]:
    """The names a scenario may give: ``kind`` is ``"schedulers"``, ``"congestion_controls"``,
    ``"protocols"``, ``"stacks"``, ``"loss_recoveries"``, ``"joins"``, ``"timer_hz"`` or
    ``"workloads"``."""
    return tuple(entry["name"] for entry in contract()[kind])


def schedulers() -> list[dict[str, Any]]:
    """Every registered scheduler: name, aliases, description, source, params (key, default,
    meaning)."""
    return contract()["schedulers"]


def link_knobs() -> tuple[LinkKnob, ...]:
    """The link knobs, in the order the core declares them."""
    return tuple(LinkKnob(**k) for k in contract()["link_knobs"])


def scheduler_aliases() -> dict[str, str]:
    """The other names a scenario may give a scheduler (the papers'), each to the registered
    name a run reports: ``{"lowrtt": "minrtt", ...}``."""
    return {alias: s["name"] for s in schedulers() for alias in s.get("aliases", ())}


def congestion_controls() -> list[dict[str, Any]]:
    """Every congestion control: name, description, source, coupled, single_path."""
    return contract()["congestion_controls"]


def single_path_congestion(name: str) -> str:
    """What congestion control ``name`` is on a single path (a coupled one becomes Reno)."""
    for cc in congestion_controls():
        if cc["name"] == name:
            return cc["single_path"]
    return name


@cache
def fields(record: str) -> tuple[Field, ...]:
    """The fields of ``record`` (one of :data:`RECORDS`), in the order the summary has them."""
    return tuple(Field(**f) for f in contract()["records"][record])


def scalar_fields(record: str) -> tuple[str, ...]:
    """The names of ``record``'s numeric fields (one value each, maybe null)."""
    return tuple(f.name for f in fields(record) if f.type in ("int", "float"))


def quantile_fields(record: str) -> tuple[str, ...]:
    """The names of ``record``'s distribution fields (``mean``, ``p50``, ``p99``, ``max``)."""
    return tuple(f.name for f in fields(record) if f.type == "quantiles")


@cache
def tables() -> dict[str, Table]:
    """Every trace table by name, in the documented order."""
    return {
        t["name"]: Table(t["name"], t["meaning"], tuple(Field(**c) for c in t["columns"]))
        for t in contract()["traces"]
    }


_NESTED = {"list[subflow]": "subflow", "list[flow]": "flow"}


def complete(summary: Mapping[str, Any], record: str = "summary") -> dict[str, Any]:
    """``summary`` with every declared field of ``record`` present (absent ones as None), in
    the declared order, then any extra keys it has (a testbed's ``kernel``, a sweep's
    ``aggregation_benefit``). Lists of subflows and flows are completed too."""
    out: dict[str, Any] = {}
    for f in fields(record):
        value = summary.get(f.name)
        nested = _NESTED.get(f.type)
        if nested and isinstance(value, list):
            value = [complete(v, nested) if isinstance(v, Mapping) else v for v in value]
        out[f.name] = value
    out.update({k: v for k, v in summary.items() if k not in out})
    return out


@cache
def subflow_view() -> tuple[ViewField, ...]:
    """What a Python scheduler sees of each subflow (``_native.SubflowView``), as the core
    declares ``SubflowView``: its fields in order, then the derived attributes."""
    return tuple(ViewField(**f) for f in contract()["subflow_view"])

"""Scenario files: loading, validation and normalization to the native contract.

A scenario is a TOML document (see README.md for every key). :func:`load` reads it from a file,
a TOML string or a dict, applies ``--set``-style overrides and validates it; :func:`to_native`
turns the validated model into the normalized dict that ``mpsched._native.run`` expects.
Every problem is reported as a :class:`~mpsched.errors.ScenarioError` with a one-line message
that starts with the offending field.
"""

from .fields import MAX_FLOWS
from .load import Source, default_scenario_text, load, read_source, resolve_files, validate
from .model import (
    CONGESTION_CONTROLS,
    JOINS,
    LOSS_RECOVERIES,
    PROTOCOLS,
    SIZE_DISTS,
    STACKS,
    START_DISTS,
    WORKLOAD_KINDS,
    Connection,
    FlowSpec,
    LinkSpec,
    PathSpec,
    Scenario,
    ScheduleEntry,
    Workload,
)
from .native import draw_size, to_native
from .overrides import apply_overrides, parse_set, parse_value

__all__ = [
    "CONGESTION_CONTROLS",
    "JOINS",
    "LOSS_RECOVERIES",
    "MAX_FLOWS",
    "PROTOCOLS",
    "SIZE_DISTS",
    "STACKS",
    "START_DISTS",
    "WORKLOAD_KINDS",
    "Connection",
    "FlowSpec",
    "LinkSpec",
    "PathSpec",
    "Scenario",
    "ScheduleEntry",
    "Source",
    "Workload",
    "apply_overrides",
    "default_scenario_text",
    "draw_size",
    "load",
    "parse_set",
    "parse_value",
    "read_source",
    "resolve_files",
    "to_native",
    "validate",
]

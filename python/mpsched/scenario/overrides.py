"""Dotted-key overrides (``--set path.lte.rtt=200ms``) applied to a raw scenario dict."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ..errors import ScenarioError
from ..units import parse_duration
from .model import Connection, FlowSpec, LinkSpec, PathSpec, Workload, resolve_delays

__all__ = ["apply_overrides", "parse_set", "parse_value"]


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML value when it parses as one (``3``, ``true``), else a string."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def parse_set(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings (the ``--set`` option) into an overrides dict."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ScenarioError(f"--set {item!r}: expected KEY=VALUE, e.g. path.lte.rtt=200ms")
        overrides[key] = parse_value(value.strip())
    return overrides


_TABLES: dict[str, type[BaseModel]] = {"connection": Connection, "workload": Workload}
_LINK_TABLES: dict[str, type[BaseModel]] = {"path": PathSpec, "link": LinkSpec}


def _table(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    table = parent.setdefault(key, {})
    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: {key} is not a table in the scenario")
    return table


def _find_path(raw: dict[str, Any], name: str, where: str, table: str = "path") -> dict[str, Any]:
    """The ``[[path]]`` (or ``[[link]]``) table of this name."""
    paths = raw.get(table)
    if isinstance(paths, list):
        for entry in paths:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry
    names = [p.get("name") for p in paths if isinstance(p, dict)] if isinstance(paths, list) else []
    known = ", ".join(str(n) for n in names) or "none"
    raise ScenarioError(f"{where}: no {table} named {name!r} ({table}s: {known})")


def _find_flow(raw: dict[str, Any], index: str, where: str) -> dict[str, Any]:
    flows = raw.get("flow")
    count = len(flows) if isinstance(flows, list) else 0
    if not index.isdigit() or int(index) >= count:
        raise ScenarioError(
            f"{where}: no flow {index!r} (the scenario has {count} [[flow]] tables, "
            "numbered from 0)"
        )
    entry = flows[int(index)]  # type: ignore[index]
    if not isinstance(entry, dict):
        raise ScenarioError(f"{where}: flow {index} is not a table")
    return entry


def _set_path_key(path: dict[str, Any], key: str, value: Any) -> None:
    """Set one key of a raw path; a new delay replaces the other way of giving the delays.

    ``rtt`` drops ``delay_up``/``delay_down``; a one-way delay drops ``rtt`` and keeps the other
    direction's current delay, so that ``path.lte.delay_up=...`` changes only the ACK direction.
    """
    if key == "rtt":
        path.pop("delay_up", None)
        path.pop("delay_down", None)
    elif key in ("delay_up", "delay_down") and "rtt" in path:
        other = "delay_down" if key == "delay_up" else "delay_up"
        try:
            up, down = resolve_delays(
                parse_duration(path["rtt"]),
                None if path.get("delay_up") is None else parse_duration(path["delay_up"]),
                None if path.get("delay_down") is None else parse_duration(path["delay_down"]),
                partial=False,
            )
        except ValueError:
            pass  # leave the path as it is: validation reports the problem
        else:
            del path["rtt"]
            path[other] = f"{down if other == 'delay_down' else up}ns"
    path[key] = value


def apply_overrides(
    raw: dict[str, Any], overrides: Mapping[str, Any], label: str = "override"
) -> dict[str, Any]:
    """Apply dotted-key overrides (``path.lte.rtt``, ``connection.scheduler``...) to a raw dict.

    ``label`` starts error messages about an override (``--set`` on the command line).
    """
    raw = copy.deepcopy(raw)
    for key, value in overrides.items():
        where = f"{label} {key}"
        parts = key.split(".")
        head, rest = parts[0], parts[1:]
        if head in ("duration", "seed") and not rest:
            raw[head] = value
        elif head in _TABLES and len(rest) == 1 and rest[0] in _TABLES[head].model_fields:
            _table(raw, head, where)[rest[0]] = value
        elif head == "connection" and len(rest) == 2 and rest[0] == "scheduler_params":
            table = _table(raw, head, where)
            _table(table, "scheduler_params", where)[rest[1]] = value
        elif head in _LINK_TABLES and len(rest) == 2:
            if rest[1] not in _LINK_TABLES[head].model_fields:
                raise ScenarioError(f"{where}: unknown key")
            _set_path_key(_find_path(raw, rest[0], where, head), rest[1], value)
        elif head in _LINK_TABLES and len(rest) < 2:
            raise ScenarioError(f"{where}: expected {head}.NAME.KEY, e.g. {head}.lte.rtt")
        elif head == "flow" and len(rest) == 2:
            if rest[1] not in FlowSpec.model_fields:
                raise ScenarioError(f"{where}: unknown key")
            _find_flow(raw, rest[0], where)[rest[1]] = value
        elif head == "flow":
            raise ScenarioError(f"{where}: expected flow.INDEX.KEY, e.g. flow.0.count")
        else:
            raise ScenarioError(f"{where}: unknown key")
    return raw

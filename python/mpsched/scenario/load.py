"""Reading a scenario: from a file, a TOML string, a dict or the built-in default, with
overrides applied, validated into a :class:`~mpsched.scenario.model.Scenario`.

pydantic's errors become one ``ScenarioError`` line that starts with the offending field.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ScenarioError
from .model import Scenario
from .overrides import apply_overrides

__all__ = ["Source", "default_scenario_text", "load", "read_source", "validate"]

Source = str | os.PathLike[str] | Mapping[str, Any] | None


# --- pydantic errors -> one line ---


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _location(loc: tuple[int | str, ...], raw: Mapping[str, Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            # A key as TOML would need it quoted ("my key", a newline) is shown quoted, so
            # that the error stays one readable line.
            key = part if _BARE_KEY.match(part) else repr(part)
            text += f".{key}" if text else key
    if len(loc) >= 2 and loc[0] == "path" and isinstance(loc[1], int):
        paths = raw.get("path")
        if isinstance(paths, list) and loc[1] < len(paths) and isinstance(paths[loc[1]], dict):
            name = paths[loc[1]].get("name")
            if isinstance(name, str):
                text += f" ({name!r})"
    return text


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_MESSAGES = {
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "dict_type": "expected a table",
    "list_type": "expected an array",
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "float_type": "expected a number",
}


def _error_line(error: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        message = "unknown key"
    elif kind == "missing":
        message = "required"
    elif kind in ("value_error", "assertion_error"):
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    elif kind in _TYPE_MESSAGES:
        message = f"{_TYPE_MESSAGES[kind]}, got {_short(error.get('input'))}"
    else:
        message = f"{error['msg']}, got {_short(error.get('input'))}"
    where = _location(tuple(error["loc"]), raw)
    return f"{where}: {message}" if where else message


def validate(raw: Mapping[str, Any]) -> Scenario:
    """Validate a scenario given as a dict (as parsed from TOML)."""
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        line = _error_line(errors[0], raw)
        if len(errors) > 1:
            line += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
        raise ScenarioError(line) from None


# --- sources ---


def default_scenario_text() -> str:
    """The built-in default scenario (the STMS paper's lab set-up) as TOML."""
    return resources.files("mpsched").joinpath("scenarios/default.toml").read_text("utf-8")


def _parse_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        detail = " ".join(str(exc).split())
        raise ScenarioError(f"{origin}: malformed TOML: {detail}") from None


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a directory, not a scenario file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return _parse_toml(text, str(path))


def _looks_like_toml(text: str) -> bool:
    stripped = text.strip()
    return not stripped or "\n" in text or "=" in text or stripped.startswith(("[", "#"))


def read_source(source: Source) -> dict[str, Any]:
    """Read a scenario as a raw dict from a path, a TOML string, a dict, or ``None`` (default)."""
    if source is None:
        return _parse_toml(default_scenario_text(), "default scenario")
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    if isinstance(source, str) and _looks_like_toml(source):
        return _parse_toml(source, "scenario")
    if isinstance(source, str | os.PathLike):
        return _read_file(Path(source))
    raise ScenarioError(
        f"scenario: expected a file path, a TOML string or a dict, got {type(source).__name__}"
    )


def resolve_files(raw: dict[str, Any], folder: Path) -> None:
    """A path's or link's trace files named relative to the scenario file are read from its
    folder."""
    tables = [raw.get(key) for key in ("path", "link")]
    for path in (entry for table in tables if isinstance(table, list) for entry in table):
        if not isinstance(path, dict):
            continue
        for key in ("trace", "trace_up"):
            value = path.get(key)
            if isinstance(value, str) and value and not Path(value).is_absolute():
                path[key] = str(folder / value)


def load(
    source: Source = None, overrides: Mapping[str, Any] | None = None, *, label: str = "override"
) -> Scenario:
    """Load and validate a scenario.

    ``source`` is a file path, a TOML string, a dict, or ``None`` for the built-in default.
    ``overrides`` maps dotted keys (``"duration"``, ``"connection.scheduler"``,
    ``"path.lte.rtt"``) to values, as given with ``--set``; ``label`` names them in errors.
    """
    raw = read_source(source)
    if isinstance(source, str | os.PathLike) and not (
        isinstance(source, str) and _looks_like_toml(source)
    ):
        resolve_files(raw, Path(source).parent)
    if overrides:
        raw = apply_overrides(raw, overrides, label)
    return validate(raw)

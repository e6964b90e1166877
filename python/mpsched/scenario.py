"""Scenario files: loading, validation and normalization to the native contract.

A scenario is a TOML document (see README.md for every key). :func:`load` reads it from a file,
a TOML string or a dict, applies ``--set``-style overrides and validates it; :func:`to_native`
turns the validated model into the normalized dict that ``mpsched._native.run`` expects.
Every problem is reported as a :class:`~mpsched.errors.ScenarioError` with a one-line message
that starts with the offending field.
"""

from __future__ import annotations

import copy
import os
import random
import tomllib
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from .errors import ScenarioError
from .units import (
    QueueLimit,
    format_duration,
    parse_duration,
    parse_queue,
    parse_rate,
    parse_size,
)

__all__ = [
    "Connection",
    "FlowSpec",
    "PathSpec",
    "Scenario",
    "ScheduleEntry",
    "Workload",
    "default_scenario_text",
    "load",
    "parse_set",
    "to_native",
]

Source = str | os.PathLike[str] | Mapping[str, Any] | None

PROTOCOLS = ("mptcp", "tcp")
CONGESTION_CONTROLS = ("reno", "cubic", "lia", "olia")
STACKS = ("upstream", "out-of-tree")
LOSS_RECOVERIES = ("linux", "classic")
WORKLOAD_KINDS = ("bulk", "file", "rate")
SIZE_DISTS = ("fixed", "pareto")
START_DISTS = ("fixed", "poisson")
#: Competing connections a scenario may hold (each is a pair of sockets in the simulator).
MAX_FLOWS = 10_000


# --- field types ---


def _quantity(
    parse: Callable[[object], int], minimum: int, *, optional: bool = False
) -> BeforeValidator:
    """A validator turning a quantity string into base units and checking its lower bound."""

    def convert(value: object, info: ValidationInfo) -> object:
        if value is None and optional:
            return None
        number = parse(value)
        if number < minimum:
            bound = "> 0" if minimum > 0 else ">= 0"
            raise ValueError(f"{info.field_name} must be {bound}, got {value!r}")
        return number

    return BeforeValidator(convert)


def _convert_queue(value: object, info: ValidationInfo) -> object:
    if value is None or isinstance(value, QueueLimit):
        return value
    limit = parse_queue(value)
    if limit.value < 0:
        raise ValueError(f"{info.field_name} must be >= 0, got {value!r}")
    return limit


def _convert_probability(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{info.field_name} must be a number in [0, 1), got {value!r}")  # noqa: TRY004
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{info.field_name} must be in [0, 1), got {value!r}")
    return float(value)


def _convert_ratio(value: object, info: ValidationInfo) -> object:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{info.field_name} must be a number in (0, 1], got {value!r}")  # noqa: TRY004
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{info.field_name} must be in (0, 1], got {value!r}")
    return float(value)


def _convert_bool(value: object, info: ValidationInfo) -> object:
    if not isinstance(value, bool):
        raise ValueError(f"{info.field_name} must be true or false, got {value!r}")  # noqa: TRY004
    return value


def _choice(options: tuple[str, ...], *, optional: bool = False) -> BeforeValidator:
    def check(value: object, info: ValidationInfo) -> object:
        if value is None and optional:
            return None
        if value not in options:
            raise ValueError(
                f"unknown {info.field_name} {value!r} (expected one of: {', '.join(options)})"
            )
        return value

    return BeforeValidator(check)


def _convert_seed(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise ValueError(f"seed must be an integer >= 0, got {value!r}")
    return value


def _convert_name(value: object, info: ValidationInfo) -> object:
    if not isinstance(value, str) or not value or "." in value:
        raise ValueError(f"name must be a non-empty string without '.', got {value!r}")
    return value


def _convert_param(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(  # noqa: TRY004 - pydantic reports ValueError only
            f"scheduler parameters must be numbers or strings, got {value!r}"
        )
    return value


def _convert_count(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FLOWS:
        raise ValueError(f"{info.field_name} must be an integer in 0..{MAX_FLOWS}, got {value!r}")
    return value


def _convert_shape(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 1.0:
        raise ValueError(
            f"{info.field_name} must be a number > 1 (the mean is infinite at 1), got {value!r}"
        )
    return float(value)


def _convert_string(value: object, info: ValidationInfo) -> object:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{info.field_name} must be a non-empty string, got {value!r}")
    return value


PositiveDuration = Annotated[int, _quantity(parse_duration, 1)]
NonNegativeDuration = Annotated[int, _quantity(parse_duration, 0)]
OptionalDuration = Annotated[int | None, _quantity(parse_duration, 0, optional=True)]
PositiveRate = Annotated[int, _quantity(parse_rate, 1)]
OptionalRate = Annotated[int | None, _quantity(parse_rate, 1, optional=True)]
PositiveSize = Annotated[int, _quantity(parse_size, 1)]
OptionalSize = Annotated[int | None, _quantity(parse_size, 1, optional=True)]
Queue = Annotated[QueueLimit, BeforeValidator(_convert_queue)]
OptionalQueue = Annotated[QueueLimit | None, BeforeValidator(_convert_queue)]
Probability = Annotated[float, BeforeValidator(_convert_probability)]
OptionalRatio = Annotated[float | None, BeforeValidator(_convert_ratio)]
Flag = Annotated[bool, BeforeValidator(_convert_bool)]
Seed = Annotated[int, BeforeValidator(_convert_seed)]
Name = Annotated[str, BeforeValidator(_convert_name)]
NonEmptyString = Annotated[str, BeforeValidator(_convert_string)]
Param = Annotated[int | float | str, BeforeValidator(_convert_param)]
Count = Annotated[int, BeforeValidator(_convert_count)]
Shape = Annotated[float, BeforeValidator(_convert_shape)]


# --- models ---


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)


class Connection(_Model):
    """The ``[connection]`` table."""

    protocol: Annotated[Literal["mptcp", "tcp"], _choice(PROTOCOLS)] = "mptcp"
    scheduler: NonEmptyString = "default"
    congestion: Annotated[Literal["reno", "cubic", "lia", "olia"], _choice(CONGESTION_CONTROLS)] = (
        "cubic"
    )
    sndbuf: PositiveSize = "6MiB"  # type: ignore[assignment]
    sndbuf_autotune: Flag = True
    rcvbuf: PositiveSize = "6MiB"  # type: ignore[assignment]
    rcvbuf_initial: PositiveSize = "128KiB"  # type: ignore[assignment]
    rcvbuf_autotune: Flag = True
    window_ratio: OptionalRatio = None
    stack: Annotated[Literal["upstream", "out-of-tree"], _choice(STACKS)] = "upstream"
    loss_recovery: Annotated[Literal["linux", "classic"], _choice(LOSS_RECOVERIES)] = "linux"
    paths: list[Name] | None = None
    scheduler_params: dict[str, Param] = Field(default_factory=dict)


class Workload(_Model):
    """The ``[workload]`` table: a bulk transfer, a file of ``size`` bytes, or an application
    writing a ``block`` every ``block x 8 / rate`` seconds (``kind = "rate"``).

    With ``size_dist = "pareto"`` the file's size is drawn (from the scenario's seed) from a
    Pareto distribution of mean ``size`` and shape ``pareto_shape``.
    """

    kind: Annotated[Literal["bulk", "file", "rate"], _choice(WORKLOAD_KINDS)] = "bulk"
    size: OptionalSize = None
    rate: OptionalRate = None
    block: PositiveSize = "8KiB"  # type: ignore[assignment]
    warmup: NonNegativeDuration = "0s"  # type: ignore[assignment]
    size_dist: Annotated[Literal["fixed", "pareto"], _choice(SIZE_DISTS)] = "fixed"
    pareto_shape: Shape = 1.5


class FlowSpec(_Model):
    """One ``[[flow]]`` table: ``count`` competing connections alike, sharing the paths
    (``count = 0``: none, for sweeps over the number of flows).

    The i-th of them (from 0) sends its SYN at ``start + i * interval``; with
    ``start_dist = "poisson"`` the gaps between starts are drawn instead, exponentially
    distributed with mean ``interval`` (the first at ``start``). Unset, ``protocol``,
    ``scheduler``, ``scheduler_params`` and ``congestion`` are the main connection's, and
    ``paths`` its paths (the first of them for TCP). Without ``size`` a flow is a bulk
    transfer to the end of the run; ``size_dist`` and ``pareto_shape`` are as in
    ``[workload]``.
    """

    count: Count = 1
    start: NonNegativeDuration = "0s"  # type: ignore[assignment]
    interval: NonNegativeDuration = "0s"  # type: ignore[assignment]
    start_dist: Annotated[Literal["fixed", "poisson"], _choice(START_DISTS)] = "fixed"
    protocol: Annotated[Literal["mptcp", "tcp"] | None, _choice(PROTOCOLS, optional=True)] = None
    scheduler: NonEmptyString | None = None
    scheduler_params: dict[str, Param] | None = None
    congestion: Annotated[
        Literal["reno", "cubic", "lia", "olia"] | None,
        _choice(CONGESTION_CONTROLS, optional=True),
    ] = None
    size: OptionalSize = None
    size_dist: Annotated[Literal["fixed", "pareto"], _choice(SIZE_DISTS)] = "fixed"
    pareto_shape: Shape = 1.5
    paths: list[Name] | None = None


class ScheduleEntry(_Model):
    """One ``[[path.schedule]]`` entry: a change of the path at time ``at``."""

    at: NonNegativeDuration
    rate: OptionalRate = None
    rtt: OptionalDuration = None
    delay_up: OptionalDuration = None
    delay_down: OptionalDuration = None
    jitter: OptionalDuration = None
    jitter_up: OptionalDuration = None


class PathSpec(_Model):
    """One ``[[path]]`` table. Quantities are stored in ns, bytes and bits per second."""

    name: Name
    rate: PositiveRate
    rate_up: OptionalRate = None
    rtt: OptionalDuration = None
    delay_up: OptionalDuration = None
    delay_down: OptionalDuration = None
    queue: Queue = "1000pkt"  # type: ignore[assignment]
    queue_up: OptionalQueue = None
    loss: Probability = 0.0
    ack_loss: Probability = 0.0
    jitter: NonNegativeDuration = "0s"  # type: ignore[assignment]
    jitter_up: NonNegativeDuration = "0s"  # type: ignore[assignment]
    schedule: list[ScheduleEntry] = Field(default_factory=list)

    def delays(self) -> tuple[int, int]:
        """``(delay_up_ns, delay_down_ns)`` after resolving ``rtt`` and the one-way delays."""
        up, down = _resolve_delays(self.rtt, self.delay_up, self.delay_down, partial=False)
        assert up is not None and down is not None
        return up, down


class Scenario(_Model):
    """A whole scenario file."""

    duration: PositiveDuration = "60s"  # type: ignore[assignment]
    seed: Seed = 1
    connection: Connection = Field(default_factory=Connection)
    workload: Workload = Field(default_factory=Workload)
    path: list[PathSpec] = Field(default_factory=list)
    flow: list[FlowSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cross_check(self) -> Scenario:
        _check(self)
        return self

    def selected_paths(self) -> list[PathSpec]:
        """The paths the connection uses, in order (only the first one for plain TCP)."""
        by_name = {p.name: p for p in self.path}
        names = self.connection.paths or [p.name for p in self.path]
        if self.connection.protocol == "tcp":
            names = names[:1]
        return [by_name[name] for name in names]


# --- cross-field checks ---


def _resolve_delays(
    rtt: int | None, up: int | None, down: int | None, *, partial: bool
) -> tuple[int | None, int | None]:
    """Resolve ``rtt``/``delay_up``/``delay_down`` into one-way delays.

    ``rtt`` alone is split evenly; ``rtt`` with one delay gives the other; with all three, ``rtt``
    must be their sum. One delay alone applies to both directions, except when ``partial`` (a
    schedule entry), where the other direction stays unchanged (``None``).
    """
    if up is None and down is None:
        if rtt is None:
            return None, None
        return rtt - rtt // 2, rtt // 2
    if up is not None and down is not None:
        if rtt is not None and rtt != up + down:
            raise ValueError(
                f"rtt {format_duration(rtt)} must equal delay_up + delay_down = "
                f"{format_duration(up + down)}"
            )
        return up, down
    given = up if up is not None else down
    assert given is not None
    if rtt is not None:
        other: int | None = rtt - given
        assert other is not None
        if other < 0:
            which = "delay_up" if up is not None else "delay_down"
            raise ValueError(
                f"rtt {format_duration(rtt)} is smaller than {which} {format_duration(given)}"
            )
    else:
        other = None if partial else given
    return (given, other) if up is not None else (other, given)


def _where(index: int, name: str, field: str = "") -> str:
    suffix = f".{field}" if field else ""
    return f"path[{index}]{suffix} ({name!r})"


def _check(scenario: Scenario) -> None:
    """Checks that involve several fields; raise ``ValueError('<field>: <problem>')``."""
    if not scenario.path:
        raise ValueError("path: at least one [[path]] table is required")
    seen: set[str] = set()
    for i, path in enumerate(scenario.path):
        if path.name in seen:
            raise ValueError(f"{_where(i, path.name, 'name')}: duplicate path name")
        seen.add(path.name)
        _check_path(i, path, scenario.duration)

    connection = scenario.connection
    if connection.paths is not None:
        if not connection.paths:
            raise ValueError("connection.paths: must name at least one path")
        for j, name in enumerate(connection.paths):
            if name not in seen:
                known = ", ".join(p.name for p in scenario.path)
                raise ValueError(f"connection.paths[{j}]: unknown path {name!r} (paths: {known})")
            if name in connection.paths[:j]:
                raise ValueError(f"connection.paths[{j}]: path {name!r} is listed twice")

    known_schedulers = _scheduler_names()
    if (
        known_schedulers is not None
        and connection.scheduler not in known_schedulers
        and ":" not in connection.scheduler  # module:Class, a scheduler written in Python
    ):
        raise ValueError(
            f"connection.scheduler: unknown scheduler {connection.scheduler!r} "
            f"(known: {', '.join(known_schedulers)})"
        )

    workload = scenario.workload
    if workload.kind == "file" and workload.size is None:
        raise ValueError("workload.size: required when kind = 'file'")
    if workload.kind != "file" and workload.size is not None:
        raise ValueError(f"workload.size: not allowed when kind = {workload.kind!r}")
    if workload.kind != "file" and workload.size_dist != "fixed":
        raise ValueError(f"workload.size_dist: a {workload.kind!r} workload has no size to draw")
    if workload.kind == "rate" and workload.rate is None:
        raise ValueError("workload.rate: required when kind = 'rate' (e.g. \"1875kbps\")")
    if workload.kind != "rate" and workload.rate is not None:
        raise ValueError(f"workload.rate: only for kind = 'rate', not {workload.kind!r}")
    if workload.kind != "rate" and workload.warmup != 0:
        raise ValueError(f"workload.warmup: only for kind = 'rate', not {workload.kind!r}")
    if workload.warmup >= scenario.duration:
        raise ValueError("workload.warmup: must be shorter than the run's duration")
    if workload.block > 2**30:
        raise ValueError(f"workload.block: at most 1 GiB, got {workload.block} bytes")

    total = 0
    for j, flow in enumerate(scenario.flow):
        _check_flow(scenario, j, flow, known_schedulers)
        total += flow.count
    if total > MAX_FLOWS:
        raise ValueError(f"flow: at most {MAX_FLOWS} competing flows in all, got {total}")


def _check_flow(
    scenario: Scenario, j: int, flow: FlowSpec, known_schedulers: tuple[str, ...] | None
) -> None:
    where = f"flow[{j}]"
    names = [p.name for p in scenario.path]
    if flow.paths is not None:
        if not flow.paths:
            raise ValueError(f"{where}.paths: must name at least one path")
        for k, name in enumerate(flow.paths):
            if name not in names:
                raise ValueError(
                    f"{where}.paths[{k}]: unknown path {name!r} (paths: {', '.join(names)})"
                )
            if name in flow.paths[:k]:
                raise ValueError(f"{where}.paths[{k}]: path {name!r} is listed twice")
    protocol = flow.protocol or scenario.connection.protocol
    if protocol == "tcp" and flow.paths is not None and len(flow.paths) != 1:
        raise ValueError(f"{where}.paths: a TCP flow uses exactly one path")
    if protocol == "mptcp":
        scheduler = flow.scheduler or scenario.connection.scheduler
        if ":" in scheduler:
            raise ValueError(
                f"{where}.scheduler: competing flows need a built-in scheduler "
                f"({scheduler!r} is written in Python and drives only the main connection)"
            )
        if known_schedulers is not None and scheduler not in known_schedulers:
            raise ValueError(
                f"{where}.scheduler: unknown scheduler {scheduler!r} "
                f"(known: {', '.join(known_schedulers)})"
            )
    if flow.size is None and flow.size_dist != "fixed":
        raise ValueError(f"{where}.size_dist: a bulk flow (no size) has no size to draw")
    if flow.start_dist == "poisson" and flow.interval == 0:
        raise ValueError(f"{where}.interval: the mean gap of Poisson arrivals must be > 0")
    last = flow.start + max(flow.count - 1, 0) * flow.interval
    if flow.start_dist == "poisson":
        last = flow.start  # the others start when they are drawn to
    if last >= scenario.duration:
        raise ValueError(
            f"{where}.start: its last flow would start at {format_duration(last)}, "
            f"not before the end of the run ({format_duration(scenario.duration)})"
        )


def _check_path(index: int, path: PathSpec, duration: int) -> None:
    if path.rtt is None and path.delay_up is None and path.delay_down is None:
        raise ValueError(f"{_where(index, path.name, 'rtt')}: required (or delay_up/delay_down)")
    try:
        _resolve_delays(path.rtt, path.delay_up, path.delay_down, partial=False)
    except ValueError as exc:
        raise ValueError(f"{_where(index, path.name, 'rtt')}: {exc}") from None
    for k, entry in enumerate(path.schedule):
        where = f"schedule[{k}]"
        if entry.at >= duration:
            raise ValueError(
                f"{_where(index, path.name, where + '.at')}: must be < duration "
                f"{format_duration(duration)}, got {format_duration(entry.at)}"
            )
        changes = (
            entry.rate,
            entry.rtt,
            entry.delay_up,
            entry.delay_down,
            entry.jitter,
            entry.jitter_up,
        )
        if all(change is None for change in changes):
            raise ValueError(
                f"{_where(index, path.name, where)}: changes nothing "
                "(give rate, rtt, delay_up, delay_down, jitter or jitter_up)"
            )
        try:
            _resolve_delays(entry.rtt, entry.delay_up, entry.delay_down, partial=True)
        except ValueError as exc:
            raise ValueError(f"{_where(index, path.name, where + '.rtt')}: {exc}") from None


@cache
def _scheduler_names() -> tuple[str, ...] | None:
    """Names of the native schedulers, or ``None`` when the native module is not built."""
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    return tuple(entry[0] for entry in _native.schedulers())


# --- pydantic errors -> one line ---


def _location(loc: tuple[int | str, ...], raw: Mapping[str, Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
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


# --- overrides ---


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


_TABLES: dict[str, type[_Model]] = {"connection": Connection, "workload": Workload}


def _table(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    table = parent.setdefault(key, {})
    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: {key} is not a table in the scenario")
    return table


def _find_path(raw: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    paths = raw.get("path")
    if isinstance(paths, list):
        for entry in paths:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry
    names = [p.get("name") for p in paths if isinstance(p, dict)] if isinstance(paths, list) else []
    known = ", ".join(str(n) for n in names) or "none"
    raise ScenarioError(f"{where}: no path named {name!r} (paths: {known})")


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
            up, down = _resolve_delays(
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
        elif head == "path" and len(rest) == 2:
            if rest[1] not in PathSpec.model_fields:
                raise ScenarioError(f"{where}: unknown key")
            _set_path_key(_find_path(raw, rest[0], where), rest[1], value)
        elif head == "path" and len(rest) < 2:
            raise ScenarioError(f"{where}: expected path.NAME.KEY, e.g. path.lte.rtt")
        elif head == "flow" and len(rest) == 2:
            if rest[1] not in FlowSpec.model_fields:
                raise ScenarioError(f"{where}: unknown key")
            _find_flow(raw, rest[0], where)[rest[1]] = value
        elif head == "flow":
            raise ScenarioError(f"{where}: expected flow.INDEX.KEY, e.g. flow.0.count")
        else:
            raise ScenarioError(f"{where}: unknown key")
    return raw


def load(
    source: Source = None, overrides: Mapping[str, Any] | None = None, *, label: str = "override"
) -> Scenario:
    """Load and validate a scenario.

    ``source`` is a file path, a TOML string, a dict, or ``None`` for the built-in default.
    ``overrides`` maps dotted keys (``"duration"``, ``"connection.scheduler"``,
    ``"path.lte.rtt"``) to values, as given with ``--set``; ``label`` names them in errors.
    """
    raw = read_source(source)
    if overrides:
        raw = apply_overrides(raw, overrides, label)
    return validate(raw)


# --- normalization ---


def _link(rate: int, delay: int, loss: float, queue: QueueLimit, jitter: int) -> dict[str, Any]:
    return {
        "rate_bps": rate,
        "delay_ns": delay,
        "loss": loss,
        "queue": queue.to_native(),
        "jitter_ns": jitter,
    }


def _schedule(entry: ScheduleEntry) -> dict[str, Any]:
    up, down = _resolve_delays(entry.rtt, entry.delay_up, entry.delay_down, partial=True)
    return {
        "at_ns": entry.at,
        "rate_bps": entry.rate,
        "delay_down_ns": down,
        "delay_up_ns": up,
        "jitter_down_ns": entry.jitter,
        "jitter_up_ns": entry.jitter_up,
    }


def _path(path: PathSpec) -> dict[str, Any]:
    up_delay, down_delay = path.delays()
    return {
        "name": path.name,
        "down": _link(path.rate, down_delay, path.loss, path.queue, path.jitter),
        "up": _link(
            path.rate_up if path.rate_up is not None else path.rate,
            up_delay,
            path.ack_loss,
            path.queue_up if path.queue_up is not None else path.queue,
            path.jitter_up,
        ),
        "schedule": [_schedule(e) for e in sorted(path.schedule, key=lambda e: e.at)],
    }


def draw_size(rng: random.Random, mean: int, shape: float) -> int:
    """A Pareto-distributed size in bytes of the given mean and shape (at least 1)."""
    scale = mean * (shape - 1.0) / shape
    return max(1, round(scale * rng.paretovariate(shape)))


def _flows(scenario: Scenario, rng: random.Random, paths: list[str]) -> list[dict[str, Any]]:
    """The competing flows, one entry per connection, with their paths as indices."""
    connection = scenario.connection
    main_names = connection.paths or [p.name for p in scenario.path]
    out = []
    for flow in scenario.flow:
        protocol = flow.protocol or connection.protocol
        names = flow.paths or main_names
        if protocol == "tcp":
            names = names[:1]
        scheduler = flow.scheduler or connection.scheduler
        params = (
            flow.scheduler_params
            if flow.scheduler_params is not None
            else (connection.scheduler_params if flow.scheduler is None else {})
        )
        start = flow.start
        for i in range(flow.count):
            size = flow.size
            if size is not None and flow.size_dist == "pareto":
                size = draw_size(rng, size, flow.pareto_shape)
            if flow.start_dist == "poisson":
                if i > 0:
                    start += round(rng.expovariate(1.0 / flow.interval))
            else:
                start = flow.start + i * flow.interval
            out.append(
                {
                    "start_ns": start,
                    "protocol": protocol,
                    "scheduler": scheduler if protocol == "mptcp" else "minrtt",
                    "scheduler_params": dict(params) if protocol == "mptcp" else {},
                    "congestion": flow.congestion or connection.congestion,
                    "size_bytes": size,
                    "paths": [paths.index(n) for n in names],
                }
            )
    return out


def to_native(scenario: Scenario) -> dict[str, Any]:
    """The normalized scenario of the native contract (integers in ns, bytes and bits/s).

    File sizes drawn from a distribution come from ``random.Random(seed)``: the main
    connection's first, then each competing flow's in order.
    """
    connection = scenario.connection
    rng = random.Random(scenario.seed)  # noqa: S311 - reproducible sizes, not secrets
    workload: dict[str, Any] = {"kind": scenario.workload.kind}
    if scenario.workload.kind == "rate":
        workload["rate_bps"] = scenario.workload.rate
        workload["block_bytes"] = scenario.workload.block
        workload["warmup_ns"] = scenario.workload.warmup
    if scenario.workload.kind == "file":
        size = scenario.workload.size
        assert size is not None
        if scenario.workload.size_dist == "pareto":
            size = draw_size(rng, size, scenario.workload.pareto_shape)
        workload["size_bytes"] = size
    main = scenario.selected_paths()
    native_paths = [_path(p) for p in main]
    extra: dict[str, Any] = {}
    if any(flow.count for flow in scenario.flow):
        # The main connection's paths first (its subflow i on path i), then the others.
        others = [p for p in scenario.path if p.name not in {m.name for m in main}]
        native_paths += [_path(p) for p in others]
        names = [p["name"] for p in native_paths]
        extra = {"main_paths": len(main), "flows": _flows(scenario, rng, names)}
    return {
        "duration_ns": scenario.duration,
        "seed": scenario.seed,
        "protocol": connection.protocol,
        "scheduler": connection.scheduler,
        "scheduler_params": dict(connection.scheduler_params),
        "congestion": connection.congestion,
        "sndbuf_bytes": connection.sndbuf,
        "sndbuf_autotune": connection.sndbuf_autotune,
        "rcvbuf_bytes": connection.rcvbuf,
        "rcvbuf_initial_bytes": connection.rcvbuf_initial,
        "rcvbuf_autotune": connection.rcvbuf_autotune,
        "window_ratio": connection.window_ratio,
        "stack": connection.stack,
        "loss_recovery": connection.loss_recovery,
        "workload": workload,
        "paths": native_paths,
        **extra,
    }

"""How one scenario value is read: a quantity with its unit and bounds, a choice, a flag.

Each field type is an ``Annotated`` alias whose validator runs before pydantic's own, so that a
value can be written as TOML does (``"20ms"``, ``"6MiB"``) and every error names the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, GetJsonSchemaHandler, ValidationInfo, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from ..units import QueueLimit, json_schema, parse_duration, parse_queue, parse_rate, parse_size

#: Competing connections a scenario may hold (each is a pair of sockets in the simulator).
MAX_FLOWS = 10_000


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


def _convert_unit_probability(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{info.field_name} must be a number in [0, 1], got {value!r}")  # noqa: TRY004
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{info.field_name} must be in [0, 1], got {value!r}")
    return float(value)


def _convert_burst(value: object, info: ValidationInfo) -> object:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(  # noqa: TRY004
            f"{info.field_name} must be a number of packets >= 1, got {value!r}"
        )
    if not 1.0 <= value < 1e9:
        raise ValueError(f"{info.field_name} must be >= 1 (packets), got {value!r}")
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


Options = tuple[str, ...] | Callable[[], tuple[str, ...] | None]


def _names(options: Options) -> tuple[str, ...] | None:
    return options() if callable(options) else options


@dataclass(frozen=True)
class Choice(BeforeValidator):
    """A validator of one of a set of names whose JSON Schema lists them (``enum``), so that an
    editor completes them. ``python``: a scheduler written in Python (``FILE.py:Class``,
    ``module:Class``) is accepted too."""

    options: Options = ()
    python: bool = False

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        names = _names(self.options)
        if names is None:
            return schema
        branches = schema.get("anyOf", [schema])
        for branch in branches:
            if branch.get("type") != "string":
                continue
            if self.python:
                del branch["type"]
                branch["anyOf"] = [
                    {"type": "string", "enum": list(names)},
                    {
                        "type": "string",
                        "pattern": PYTHON_SCHEDULER_PATTERN,
                        "description": "a scheduler written in Python: FILE.py:Class or "
                        "module:Class",
                    },
                ]
            else:
                branch["enum"] = list(names)
        return schema


#: A scheduler written in Python, as a scenario names it: ``FILE.py:Class`` or ``module:Class``.
PYTHON_SCHEDULER_PATTERN = r"^[^:]+:[A-Za-z_][A-Za-z0-9_]*$"


def choice(options: Options, *, optional: bool = False) -> BeforeValidator:
    """Accepts one of ``options`` (or of what the callable returns when validating: the
    contract's names, read from the native module when first needed)."""

    def check(value: object, info: ValidationInfo) -> object:
        if value is None and optional:
            return None
        known = options() if callable(options) else options
        if value not in known:
            raise ValueError(
                f"unknown {info.field_name} {value!r} "
                f"(expected one of: {', '.join(map(str, known))})"
            )
        return value

    check.choices = options  # type: ignore[attr-defined]  # read by the scenario reference
    return Choice(check, options=options)


@dataclass(frozen=True)
class SchedulerChoice(Choice):
    """A scheduler's name (the scenario reference describes it)."""


def scheduler_choice(
    options: Options,
    aliases: Callable[[], Mapping[str, str]],
    *,
    optional: bool = False,
    python: bool = True,
) -> BeforeValidator:
    """A scheduler's name, listed in the JSON Schema (with ``python``, a scheduler written in
    Python too); the scenario checks it against the native ones, where it knows them. An alias
    (``aliases()``: the papers' names, from the contract) becomes the registered name."""

    def check(value: object, info: ValidationInfo) -> object:
        if value is None and optional:
            return None
        value = _convert_string(value, info)
        return aliases().get(value, value) if isinstance(value, str) else value

    return SchedulerChoice(check, options=options, python=python)


def _convert_seed(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise ValueError(f"seed must be an integer >= 0, got {value!r}")
    return value


def _convert_name(value: object, info: ValidationInfo) -> object:
    if not isinstance(value, str) or not value or "." in value:
        raise ValueError(f"name must be a non-empty string without '.', got {value!r}")
    return value


def _convert_link_name(value: object, info: ValidationInfo) -> object:
    """`_convert_name`, under its own name so that the reference page can say what it names."""
    return _convert_name(value, info)


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


def _convert_write_chunk(value: object, info: ValidationInfo) -> object:
    if value == "fill":
        return value
    try:
        number = parse_size(value)
    except ValueError as exc:
        raise ValueError(f'{exc} (or "fill")') from None
    if number < 1:
        raise ValueError(f'{info.field_name} must be a size > 0 or "fill", got {value!r}')
    return number


def _convert_string(value: object, info: ValidationInfo) -> object:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{info.field_name} must be a non-empty string, got {value!r}")
    return value


# Editors see what a file holds (a quantity is a string with its unit), not what it becomes.
_DURATION = WithJsonSchema(json_schema("duration"))
_RATE = WithJsonSchema(json_schema("rate"))
_SIZE = WithJsonSchema(json_schema("size"))
_QUEUE = WithJsonSchema(json_schema("queue limit"))

PositiveDuration = Annotated[int, _quantity(parse_duration, 1), _DURATION]
NonNegativeDuration = Annotated[int, _quantity(parse_duration, 0), _DURATION]
OptionalDuration = Annotated[int | None, _quantity(parse_duration, 0, optional=True), _DURATION]
PositiveRate = Annotated[int, _quantity(parse_rate, 1), _RATE]
OptionalRate = Annotated[int | None, _quantity(parse_rate, 1, optional=True), _RATE]
PositiveSize = Annotated[int, _quantity(parse_size, 1), _SIZE]
OptionalSize = Annotated[int | None, _quantity(parse_size, 1, optional=True), _SIZE]
_WRITE_CHUNK = WithJsonSchema(
    {"anyOf": [json_schema("size"), {"const": "fill", "description": "fill the send buffer"}]}
)
WriteChunk = Annotated[int | Literal["fill"], BeforeValidator(_convert_write_chunk), _WRITE_CHUNK]
Queue = Annotated[QueueLimit, BeforeValidator(_convert_queue), _QUEUE]
OptionalQueue = Annotated[QueueLimit | None, BeforeValidator(_convert_queue), _QUEUE]
Probability = Annotated[float, BeforeValidator(_convert_probability)]
OptionalRatio = Annotated[float | None, BeforeValidator(_convert_ratio)]
UnitProbability = Annotated[float, BeforeValidator(_convert_unit_probability)]
BurstLength = Annotated[float | None, BeforeValidator(_convert_burst)]
Flag = Annotated[bool, BeforeValidator(_convert_bool)]
Seed = Annotated[int, BeforeValidator(_convert_seed)]
Name = Annotated[str, BeforeValidator(_convert_name)]
LinkName = Annotated[str, BeforeValidator(_convert_link_name)]
NonEmptyString = Annotated[str, BeforeValidator(_convert_string)]
Param = Annotated[int | float | str, BeforeValidator(_convert_param)]
Count = Annotated[int, BeforeValidator(_convert_count)]
Shape = Annotated[float, BeforeValidator(_convert_shape)]

"""A link's knobs: the scenario keys derived from the contract, with no Python written for them.

A knob is a plain scalar of one link direction in the core's configuration (a field of
``mpsched_scenario::config::LinkSpec`` listed in ``LINK_KNOBS``); the contract publishes each
with its type, unit, default, range and meaning (:func:`mpsched.contract.link_knobs`). From
that entry alone:

- **Keys.** ``KEY`` is the field's name without its unit (``jitter_ns``: ``jitter``) and sets
  the data direction (server to client), ``KEY_up`` the ACK direction; each direction has its
  own value, and a key left out is the core's default. A path and a shared ``[[link]]`` both
  have them; ``--set path.NAME.KEY`` and ``link.NAME.KEY`` reach them.
- **Values.** A field named ``..._ns`` is a duration (``"5ms"``), ``..._bps`` a rate
  (``"10Mbps"``), ``..._bytes`` a size (``"1500B"``), written with their units as every
  quantity of a scenario; any other integer field is an integer, a float a number, a bool
  ``true`` or ``false``.
- **Checks.** A value must be of that type and within the published range (at least ``min``,
  which is 0 unless the core says otherwise, and at most ``max`` when there is one); an error
  names the scenario's key (``path[0].jitter ('wifi')``), the core's own errors too
  (:func:`mpsched.errors.toml_keys` renames ``paths[0].down.jitter_ns`` by :func:`toml_names`).
- **Conversion.** The normalized scenario has the field in both directions, always (the
  default when the file leaves it out).

The scenario reference (``docs/scenario.md``) and the JSON Schema list the derived keys with
the others: the meaning is the contract's, the ACK direction's "The same for the ACK
direction.".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationInfo, WithJsonSchema, create_model

from .. import contract
from ..contract import LinkKnob
from ..units import json_schema, parse_duration, parse_rate, parse_size

__all__ = [
    "UP_MEANING",
    "KnobValidator",
    "derive",
    "keys",
    "native",
    "toml_key",
    "toml_names",
]

#: The meaning of every knob's ``KEY_up``.
UP_MEANING = "The same for the ACK direction."

_QUANTITIES: dict[str, tuple[str, Callable[[object], int], tuple[tuple[str, int], ...]]] = {
    "ns": (
        "duration",
        parse_duration,
        (("h", 3600 * 10**9), ("min", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("us", 10**3)),
    ),
    "bps": ("rate", parse_rate, (("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3))),
    "bytes": (
        "size",
        parse_size,
        (("GB", 10**9), ("GiB", 2**30), ("MB", 10**6), ("MiB", 2**20), ("KB", 10**3)),
    ),
}
_LAST_UNIT = {"ns": "ns", "bps": "bps", "bytes": "B"}
_ZERO_UNIT = {"ns": "s", "bps": "bps", "bytes": "B"}
_U64_MAX = 2**64 - 1


def toml_key(knob: LinkKnob) -> str:
    """The data direction's key: the field's name without its unit (``jitter_ns``: ``jitter``)."""
    return knob.key.removesuffix(f"_{knob.unit}") if knob.unit else knob.key


def keys(knob: LinkKnob) -> tuple[str, str]:
    """The keys of the data direction and of the ACK direction: ``(KEY, KEY_up)``."""
    key = toml_key(knob)
    return key, f"{key}_up"


def toml_names(*, up: bool, knobs: Iterable[LinkKnob] | None = None) -> dict[str, str]:
    """Each knob's field in a direction's JSON, to its scenario key in that direction."""
    return {k.key: keys(k)[up] for k in (contract.link_knobs() if knobs is None else knobs)}


def _text(knob: LinkKnob, value: float) -> str:
    """A value as a scenario file writes it, exactly (``"0s"``, ``"1h"``, ``"1500B"``)."""
    if knob.unit not in _QUANTITIES:
        return str(int(value)) if float(value).is_integer() else str(value)
    number = int(value)
    if number == 0:
        return f"0{_ZERO_UNIT[knob.unit]}"
    _, _, units = _QUANTITIES[knob.unit]
    for unit, factor in units:
        if number % factor == 0:
            return f"{number // factor}{unit}"
    return f"{number}{_LAST_UNIT[knob.unit]}"


def _what(knob: LinkKnob) -> str:
    if knob.unit in _QUANTITIES:
        return _QUANTITIES[knob.unit][0]
    return {"int": "integer", "float": "number", "bool": "`true` or `false`"}[knob.type]


def _bounds(knob: LinkKnob) -> str:
    low = "0" if knob.min == 0 else _text(knob, knob.min)
    if knob.max is None:
        return f">= {low}"
    return f"in [{low}, {_text(knob, knob.max)}]"


@dataclass(frozen=True)
class KnobValidator(BeforeValidator):
    """The validator of a knob's key; ``accepts`` says what it takes (the scenario reference)."""

    accepts: str = ""


def _validator(knob: LinkKnob) -> KnobValidator:
    what = _what(knob)
    parse = _QUANTITIES[knob.unit][1] if knob.unit in _QUANTITIES else None
    most = knob.max if knob.max is not None else (_U64_MAX if knob.type == "int" else math.inf)

    def convert(value: object, info: ValidationInfo) -> object:
        name = info.field_name
        if knob.type == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
            return value
        number: float
        if parse is not None:
            number = parse(value)
        elif (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (knob.type == "int" and not isinstance(value, int))
            or not math.isfinite(value)
        ):
            article = "an" if what == "integer" else "a"
            raise ValueError(f"{name} must be {article} {what} {_bounds(knob)}, got {value!r}")
        else:
            number = value if knob.type == "int" else float(value)
        if number < knob.min:
            low = "0" if knob.min == 0 else _text(knob, knob.min)
            raise ValueError(f"{name} must be >= {low}, got {value!r}")
        if number > most:
            raise ValueError(f"{name} must be at most {_text(knob, most)}, got {value!r}")
        return number

    return KnobValidator(convert, accepts=f"{what} {_bounds(knob)}")


def _schema(knob: LinkKnob) -> dict[str, Any]:
    if knob.unit in _QUANTITIES:
        return json_schema(_QUANTITIES[knob.unit][0])
    if knob.type == "bool":
        return {"type": "boolean"}
    schema: dict[str, Any] = {"type": "integer" if knob.type == "int" else "number"}
    schema["minimum"] = knob.min
    if knob.max is not None:
        schema["maximum"] = knob.max
    return schema


def _annotation(knob: LinkKnob) -> Any:
    kind = {"int": int, "float": float, "bool": bool}[knob.type]
    return Annotated[kind, _validator(knob), WithJsonSchema(_schema(knob))]  # type: ignore[valid-type]


def _default(knob: LinkKnob) -> object:
    """The default as a file would write it (a quantity with its unit)."""
    return _text(knob, knob.default) if knob.unit in _QUANTITIES else knob.default


M = TypeVar("M", bound=BaseModel)


def derive(base: type[M], knobs: Iterable[LinkKnob]) -> type[M]:
    """``base`` (the link's hand-written keys) with each knob's two keys after them; the
    model's ``knobs`` are those it has keys for. A knob whose key is taken is a mistake in the
    core's list, refused here."""
    knobs = tuple(knobs)
    fields: dict[str, Any] = {}
    taken = set(base.model_fields)
    for knob in knobs:
        if knob.type not in ("int", "float", "bool"):
            raise RuntimeError(f"link knob {knob.key}: a {knob.type}, not a plain scalar")
        for key, meaning in zip(keys(knob), (knob.meaning, UP_MEANING), strict=True):
            if key in taken:
                raise RuntimeError(f"link knob {knob.key}: its key {key!r} is taken")
            taken.add(key)
            fields[key] = (_annotation(knob), Field(default=_default(knob), description=meaning))
    model = create_model(  # type: ignore[call-overload]
        base.__name__.lstrip("_"),
        __base__=base,
        __module__=base.__module__,
        __doc__=base.__doc__,
        **fields,
    )
    model.knobs = knobs
    return model


def native(link: BaseModel, *, up: bool) -> dict[str, Any]:
    """The knobs of one direction of ``link`` (a model :func:`derive` made), as the core's
    fields."""
    return {k.key: getattr(link, keys(k)[up]) for k in type(link).knobs}  # type: ignore[attr-defined]

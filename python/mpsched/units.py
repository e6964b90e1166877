"""Parsing and formatting of the quantities used in scenario files.

Every parser takes the value as written and returns an integer in base units: nanoseconds,
bytes or bits per second. The rules, the same for every key (scenario files, ``--set``, sweep
files, flows, schedules, scheduler parameters):

- every size, rate and duration needs its unit: a bare number is an error that lists the units;
- a space between the number and the unit is allowed (``"30 Mbps"``);
- units are case-sensitive as SI writes them, since case carries meaning (``m`` is milli,
  ``M`` mega; ``b`` a bit, ``B`` a byte): ``"30mbps"`` or ``"50mb"`` are errors that suggest
  the spelling meant. ``k`` and ``K`` both mean 10^3.

A value that cannot be parsed raises :class:`UnitError` (a ``ValueError``) whose message quotes
the value.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Literal, NamedTuple

__all__ = [
    "QueueLimit",
    "UnitError",
    "format_bytes",
    "format_duration",
    "format_rate",
    "parse_duration",
    "parse_queue",
    "parse_rate",
    "parse_size",
]


class UnitError(ValueError):
    """A quantity could not be parsed."""


# A decimal number, as a quantity's text starts (also the JSON Schema's pattern).
_NUMBER_TEXT = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(rf"^\s*(?P<num>{_NUMBER_TEXT})\s*(?P<unit>[^\s\d.+-][^\s]*)?\s*$")

_DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "sec": 10**9,
    "min": 60 * 10**9,
    "h": 3600 * 10**9,
}

_SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}

_RATE_PREFIXES: dict[str, int] = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
}
_RATE_UNITS: dict[str, int] = {
    prefix + suffix: factor
    for prefix, factor in _RATE_PREFIXES.items()
    for suffix in ("bps", "bit/s")
}

_PACKET_UNITS = ("pkt", "pkts", "packet", "packets")

_DURATION_HINT = "ns, us, ms, s, min, h"
_SIZE_HINT = "B, KB, MB, GB, KiB, MiB, GiB"
_RATE_HINT = "bps, kbps, Mbps, Gbps or Mbit/s"


def json_schema(what: str) -> dict[str, str]:
    """The JSON Schema of a quantity written as a string: ``what`` is ``"duration"``,
    ``"size"``, ``"rate"`` or ``"queue limit"`` (the units are these parsers' own)."""
    units = {
        "duration": list(_DURATION_UNITS),
        "size": list(_SIZE_UNITS),
        "rate": list(_RATE_UNITS),
        "queue limit": [*_SIZE_UNITS, *_PACKET_UNITS, *_DURATION_UNITS],
    }[what]
    alternatives = "|".join(re.escape(u) for u in sorted(units, key=len, reverse=True))
    return {
        "type": "string",
        "pattern": rf"^\s*{_NUMBER_TEXT}\s*(?:{alternatives})\s*$",
        "description": f"a {what} with its unit, e.g. {_example(what)}",
    }


class QueueLimit(NamedTuple):
    """A drop-tail queue limit: ``kind`` is ``"bytes"``, ``"packets"`` or ``"time_ns"``."""

    kind: Literal["bytes", "packets", "time_ns"]
    value: int

    def to_native(self) -> dict[str, int]:
        return {self.kind: self.value}

    def __str__(self) -> str:
        if self.kind == "bytes":
            return format_bytes(self.value)
        if self.kind == "packets":
            return f"{self.value}pkt"
        return format_duration(self.value)


def _split(value: object, what: str) -> tuple[Fraction, str | None]:
    """Split ``value`` into an exact number and its unit (``None`` when there is none)."""
    if isinstance(value, bool):
        raise UnitError(f"bad {what} {value!r}: expected a quantity such as {_example(what)}")
    if isinstance(value, int):
        return Fraction(value), None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnitError(f"bad {what} {value!r}: not a finite number")
        return Fraction(value), None
    if not isinstance(value, str):
        raise UnitError(f"bad {what} {value!r}: expected a string such as {_example(what)}")
    match = _NUMBER.match(value)
    if match is None:
        raise UnitError(
            f"bad {what} {value!r}: expected a number and a unit, e.g. {_example(what)}"
        )
    return Fraction(match["num"]), match["unit"]


def _example(what: str) -> str:
    return {
        "duration": "'20ms'",
        "size": "'30KB'",
        "rate": "'30Mbps'",
        "queue limit": "'50ms', '100pkt' or '30KB'",
    }.get(what, "'1s'")


def _scale(number: Fraction, factor: int) -> int:
    return round(number * factor)


def _did_you_mean(unit: str, known: dict[str, int]) -> str:
    """A case-insensitive match among the known units, as a hint."""
    matches = sorted(k for k in known if k.lower() == unit.lower())
    if not matches:
        return ""
    meant = " or ".join(repr(m) for m in matches)
    return f"; did you mean {meant}? (case matters: m is milli, M mega; b a bit, B a byte)"


def parse_duration(value: object) -> int:
    """Parse a duration ("60s", "20ms", "500us", "1.5s", "100ns", "2min") into nanoseconds."""
    number, unit = _split(value, "duration")
    if unit is None:
        raise UnitError(f"bad duration {value!r}: missing unit (use {_DURATION_HINT})")
    factor = _DURATION_UNITS.get(unit)
    if factor is None:
        raise UnitError(
            f"bad duration {value!r}: unknown unit {unit!r} (use {_DURATION_HINT})"
            + _did_you_mean(unit, _DURATION_UNITS)
        )
    return _scale(number, factor)


def parse_size(value: object) -> int:
    """Parse a size in bytes: "30KB" (10^3), "6MiB" (2^20), "1500B", "1.5MB"."""
    number, unit = _split(value, "size")
    if unit is None:
        raise UnitError(f"bad size {value!r}: missing unit (use {_SIZE_HINT})")
    factor = _SIZE_UNITS.get(unit)
    if factor is None:
        raise UnitError(
            f"bad size {value!r}: unknown unit {unit!r} (use {_SIZE_HINT})"
            + _did_you_mean(unit, _SIZE_UNITS)
        )
    scaled = number * factor
    if scaled.denominator != 1:
        raise UnitError(f"bad size {value!r}: not a whole number of bytes")
    return int(scaled)


def parse_rate(value: object) -> int:
    """Parse a bit rate ("30Mbps", "1Gbps", "500kbps", "100bps", "30Mbit/s") into bits/s."""
    number, unit = _split(value, "rate")
    if unit is None:
        raise UnitError(f"bad rate {value!r}: missing unit (use {_RATE_HINT})")
    factor = _RATE_UNITS.get(unit)
    if factor is None:
        raise UnitError(
            f"bad rate {value!r}: unknown unit {unit!r} (use {_RATE_HINT})"
            + _did_you_mean(unit, _RATE_UNITS)
        )
    return _scale(number, factor)


def parse_queue(value: object) -> QueueLimit:
    """Parse a queue limit: a size ("30KB"), a packet count ("100pkt") or a time ("50ms")."""
    number, unit = _split(value, "queue limit")
    if unit is None:
        raise UnitError(
            f"bad queue limit {value!r}: missing unit (use a size such as 30KB, a packet count "
            "such as 100pkt, or a time such as 50ms)"
        )
    if unit in _PACKET_UNITS:
        if number.denominator != 1:
            raise UnitError(f"bad queue limit {value!r}: not a whole number of packets")
        return QueueLimit("packets", int(number))
    if unit in _DURATION_UNITS:
        return QueueLimit("time_ns", parse_duration(value))
    if unit in _SIZE_UNITS:
        return QueueLimit("bytes", parse_size(value))
    raise UnitError(
        f"bad queue limit {value!r}: unknown unit {unit!r} "
        f"(use a size such as 30KB, a packet count such as 100pkt, or a time such as 50ms)"
    )


def _trim(number: float) -> str:
    text = f"{number:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def format_duration(ns: int) -> str:
    """Format nanoseconds with the largest unit that keeps the number >= 1 ("20ms", "1.5s")."""
    for unit, factor in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if abs(ns) >= factor:
            return _trim(ns / factor) + unit
    return f"{ns}ns"


def format_bytes(n: int) -> str:
    """Format a byte count in decimal units ("30KB", "6.291MB")."""
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if abs(n) >= factor:
            return _trim(n / factor) + unit
    return f"{n}B"


def format_rate(bps: int) -> str:
    """Format bits per second ("30Mbps")."""
    for unit, factor in (("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)):
        if abs(bps) >= factor:
            return _trim(bps / factor) + unit
    return f"{bps}bps"

"""``docs/scenario.md``: every scenario key with what it accepts, its default and its meaning,
read from the models (the meaning is each field's docstring), so the page cannot drift."""

from __future__ import annotations

from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from . import fields as f
from .knobs import KnobValidator
from .model import (
    Connection,
    FlowSpec,
    GilbertElliott,
    LinkSpec,
    PathSpec,
    Scenario,
    ScheduleEntry,
    Workload,
)

__all__ = ["scenario_markdown"]

_TABLES: list[tuple[str, type[BaseModel], str]] = [
    ("Top level", Scenario, ""),
    ("`[connection]`", Connection, "The connection under study."),
    ("`[workload]`", Workload, "What the connection's application sends."),
    ("`[[path]]`", PathSpec, "One per path (at least one); `--set path.NAME.KEY=VALUE`."),
    ("`[[path.schedule]]`", ScheduleEntry, "Changes of a path during the run."),
    (
        "`gilbert_elliott`, `ack_gilbert_elliott`",
        GilbertElliott,
        "Keys of a path's four-parameter loss chain (an inline table).",
    ),
    ("`[[flow]]`", FlowSpec, "Competing connections over the same paths (optional)."),
    (
        "`[[link]]`",
        LinkSpec,
        "Links that paths share, named in their `via` (optional); a path's keys, without "
        "`schedule` and `backup`; `--set link.NAME.KEY=VALUE`.",
    ),
]

# What each field type accepts, by the identity of its validator.
_ACCEPTS: dict[int, str] = {
    id(alias.__metadata__[0]): text
    for alias, text in [
        (f.PositiveDuration, "duration > 0"),
        (f.NonNegativeDuration, "duration >= 0"),
        (f.OptionalDuration, "duration >= 0"),
        (f.PositiveRate, "rate > 0"),
        (f.OptionalRate, "rate > 0"),
        (f.PositiveSize, "size > 0"),
        (f.OptionalSize, "size > 0"),
        (f.WriteChunk, "size > 0 or `fill`"),
        (f.Queue, "queue limit: size, packets (`pkt`) or time"),
        (f.OptionalQueue, "queue limit: size, packets (`pkt`) or time"),
        (f.Probability, "number in [0, 1)"),
        (f.OptionalRatio, "number in (0, 1]"),
        (f.UnitProbability, "number in [0, 1]"),
        (f.BurstLength, "number >= 1 (packets)"),
        (f.Flag, "`true` or `false`"),
        (f.Seed, "integer >= 0"),
        (f.Name, "string without `.`, unique"),
        (f.NonEmptyString, "string"),
        (f.Count, f"integer in 0..{f.MAX_FLOWS}"),
        (f.Shape, "number > 1"),
    ]
}
_TABLE_NAMES = {
    Connection: "table",
    Workload: "table",
    PathSpec: "array of tables",
    ScheduleEntry: "array of tables",
    FlowSpec: "array of tables",
    LinkSpec: "array of tables",
    GilbertElliott: "table",
}


def _accepts(annotation: Any, metadata: list[Any]) -> str:
    for item in metadata:
        if isinstance(item, KnobValidator):  # a link knob's: what its contract entry says
            return item.accepts
        if isinstance(item, f.SchedulerChoice):
            if item.python:
                return "a name from `mpsched schedulers`, or `FILE.py:Class`, `module:Class`"
            return "a name from `mpsched schedulers`"
        choices = getattr(getattr(item, "func", None), "choices", None)
        if choices is not None:
            names = choices() if callable(choices) else choices
            return " or ".join(f'`"{n}"`' if isinstance(n, str) else f"`{n}`" for n in names)
        if id(item) in _ACCEPTS:
            return _ACCEPTS[id(item)]
    if get_origin(annotation) is dict:
        return "table of name -> number or string"
    args = [a for a in get_args(annotation) if a is not type(None)]
    inner = args[0] if get_origin(annotation) is not list and args else annotation
    if get_origin(inner) is list:
        (item,) = get_args(inner)
        if item in _TABLE_NAMES:
            return "array of tables"
        if item is f.LinkName:
            return "array of `[[link]]` names"
        return "array of path names"
    if get_origin(inner) is dict:
        return "table of name -> number or string"
    if inner in _TABLE_NAMES:
        return _TABLE_NAMES[inner]
    # an alias inside `X | None`: its metadata is on the argument
    for arg in args:
        found = _accepts(arg, list(getattr(arg, "__metadata__", ())))
        if found:
            return found
    return ""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value}`"


def _default(field: Any) -> str:
    if field.default_factory is not None:
        made = field.default_factory()
        if isinstance(made, BaseModel):
            return "its defaults"
        return "`[]`" if isinstance(made, list) else "`{}`"
    if field.default is PydanticUndefined:
        return "required"
    if field.default is None:
        return "-"
    return _toml(field.default)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def scenario_markdown() -> str:
    """``docs/scenario.md``."""
    out = [
        "# Scenario reference",
        "",
        "<!-- Written by `python -m mpsched.docgen` from the scenario's models. -->",
        "",
        "Every key of a scenario file, with what it accepts, its default and its meaning.",
        "Quantities carry their unit (README, Units); `mpsched schema` gives the same as a",
        'JSON Schema for editors. "Unset" says what a key left out means when that is not',
        "a fixed value.",
    ]
    for title, model, blurb in _TABLES:
        out += ["", f"## {title}", ""]
        if blurb:
            out += [blurb, ""]
        out += ["| key | accepts | default | meaning |", "| --- | --- | --- | --- |"]
        for name, field in model.model_fields.items():
            accepts = _accepts(field.annotation, list(field.metadata))
            meaning = _cell(field.description or "")
            out.append(f"| `{name}` | {accepts} | {_default(field)} | {meaning} |")
    return "\n".join(out) + "\n"

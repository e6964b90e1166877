"""The JSON Schema of a scenario file, drawn from the pydantic models that validate it.

TOML language servers (Taplo, Even Better TOML) complete and check a file against it: point
them at the output of ``mpsched schema`` with a ``#:schema ./mpsched.schema.json`` first line.
Quantities appear as the strings a file holds (``"20ms"``, ``"6MiB"``), with their units as a
pattern; checks across fields (a duration longer than the warmup, ...) stay the loader's.
"""

from __future__ import annotations

from typing import Any

from .. import __version__
from .model import Scenario

__all__ = ["scenario_schema"]

_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every scenario file satisfies."""
    schema = Scenario.model_json_schema(mode="validation")
    return {
        "$schema": _DIALECT,
        "$id": f"https://mpsched.invalid/schema/scenario-{__version__}.json",
        **schema,
        "title": "mpsched scenario",
    }

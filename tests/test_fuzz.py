"""Property tests of the input layer: any scenario, override or native configuration gives a
result or one clear error, never a panic, a traceback or a hang.

CI runs a few hundred examples of each; ``MPSCHED_FUZZ_EXAMPLES=100000`` runs a long campaign.
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mpsched.errors import ScenarioError
from mpsched.scenario import load, to_native
from mpsched.scenario.load import read_source
from mpsched.scenario.model import Connection, FlowSpec, PathSpec, Workload

EXAMPLES = int(os.environ.get("MPSCHED_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=EXAMPLES <= 1000,  # CI sees the same examples every time
)
# Every run is cut to this much simulated time, so that no input can make a test hang.
SIMULATED_NS = 20_000_000

UNITS = ["ns", "us", "ms", "s", "min", "h", "B", "KB", "kB", "MiB", "GB", "bps", "Mbps",
         "Gbit/s", "pkt", "packets", "mb", "MS", "%", "", " ", "e", "x"]  # fmt: skip

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 0.5, 1448, 2**63, 2**64, 1e300, -0.0]),
)
quantities = st.builds(
    lambda n, space, unit: f"{n}{space}{unit}",
    numbers,
    st.sampled_from(["", " ", "  "]),
    st.sampled_from(UNITS),
)
scalars = st.one_of(
    numbers, quantities, st.booleans(), st.text(max_size=12), st.none(),
    st.sampled_from(["default", "minrtt", "stms-a", "ecf", "mptcp", "tcp", "cubic", "lia",
                     "bulk", "poisson", "pareto", "fixed", "wifi", "lte"]),
)  # fmt: skip
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=6), scalars, max_size=3),
)

_KEYS = (
    ["duration", "seed"]
    + [f"connection.{k}" for k in Connection.model_fields]
    + [f"workload.{k}" for k in Workload.model_fields]
    + [f"path.{p}.{k}" for p in ("wifi", "lte", "0", "5g") for k in PathSpec.model_fields]
    + [f"flow.0.{k}" for k in FlowSpec.model_fields]
    + ["connection.scheduler_params.lambda", "connection.scheduler_params.adjust_interval",
       "path.wifi.rtt_ms", "durration", "connection", "path.wifi", "flow.x.count"]
)  # fmt: skip
overrides = st.dictionaries(st.sampled_from(_KEYS), values, max_size=4)
# The default scenario with two competing flows, so that flow.0.* overrides apply.
_WITH_FLOWS = {**read_source(None), "flow": [{"count": 2, "size": "20KB", "interval": "1ms"}]}


def _one_line_error(exc: ScenarioError) -> None:
    message = str(exc)
    assert message.strip(), "an error without a message"
    assert "\n" not in message, f"a multi-line error: {message!r}"
    assert "Traceback" not in message and "pydantic" not in message.lower()


def _simulate(native: ModuleType, config: dict[str, Any]) -> None:
    """Run a configuration, cut short; only a ``ValueError`` naming the problem may come out."""
    config = {**config, "duration_ns": SIMULATED_NS}
    try:
        native.run(json.dumps(config), False)
    except ValueError as exc:  # the native check of a field the Python layer lets through
        assert str(exc).strip() and "panicked" not in str(exc)


@FUZZ
@given(changes=overrides)
def test_any_override_gives_a_scenario_or_one_line_naming_the_field(
    native: ModuleType, changes: dict[str, Any]
) -> None:
    try:
        scenario = load(_WITH_FLOWS, changes)
    except ScenarioError as exc:
        _one_line_error(exc)
        return
    _simulate(native, to_native(scenario))


@FUZZ
@example(raw={"connection": {"\n": None}})  # found by the long run: a two-line error
@given(
    raw=st.dictionaries(
        st.sampled_from(
            ["duration", "seed", "connection", "workload", "path", "flow", "sweep", "x"]
        ),
        values,
        max_size=5,
    )
)
def test_any_scenario_table_gives_a_scenario_or_one_line(
    native: ModuleType, raw: dict[str, Any]
) -> None:  # fmt: skip
    try:
        scenario = load(raw)
    except ScenarioError as exc:
        _one_line_error(exc)
        return
    _simulate(native, to_native(scenario))


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            found += _paths(value, (*prefix, i))
    return found


def _replace(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(tree) if isinstance(tree, dict) else list(tree)
    copy[path[0]] = _replace(tree[path[0]], path[1:], value)
    return copy


_BASE = to_native(load(_WITH_FLOWS))
_BASE_PATHS = [p for p in _paths(_BASE) if p and p[0] != "duration_ns"]


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    )


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**65), max_value=2**65),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)),
    _containers,
    max_leaves=6,
)  # fmt: skip


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(_BASE_PATHS), json_values), min_size=1, max_size=3))
def test_the_native_parser_takes_any_configuration_without_a_panic(
    native: ModuleType, edits: list[tuple[tuple[Any, ...], Any]]
) -> None:
    config: Any = _BASE
    for path, value in edits:
        try:
            config = _replace(config, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed this place
    _simulate(native, config)


@FUZZ
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200).map(repr)))
def test_the_native_parser_takes_any_text(native: ModuleType, text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        native.run(text, False)


def test_the_fuzz_base_is_a_valid_configuration(native: ModuleType) -> None:
    summary = json.loads(native.run(json.dumps({**_BASE, "duration_ns": SIMULATED_NS}), False)[0])
    assert len(summary["flows"]) == 3

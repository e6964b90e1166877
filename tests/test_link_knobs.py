"""A link knob added in Rust reaches scenario files with no Python written for it: the keys,
their validation, their errors, their conversion, the reference page and the JSON Schema are
derived from the contract's entry (python/mpsched/scenario/knobs.py). Here the contract the
models are built from gets knobs the core does not have (`scenario_with_knobs`), and loses one;
tests/test_extending.py adds one to a copy of the Rust crates and feeds what it publishes here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mpsched import contract
from mpsched.errors import ScenarioError, toml_keys

SCENARIO = """
[[path]]
name = "a"
rate = "10Mbps"
rtt = "10ms"
{extra}
[[link]]
name = "s"
rate = "20Mbps"
rtt = "2ms"
"""

# A new duration (the shape of `jitter_ns`, with a range), a number and an integer.
FOO = contract.LinkKnob("foo_ns", "int", "ns", 0, 0.0, 1e9, "A new delay of the data direction.")
WEIGHT = contract.LinkKnob("weight", "float", "", 1.0, 0.0, 10.0, "A new number.")
SLOTS = contract.LinkKnob("slots", "int", "", 4, 1.0, None, "A new count.")


def _load(scenario: Any, extra: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    return scenario.to_native(scenario.load(SCENARIO.format(extra=extra), overrides))


def _error(scenario: Any, extra: str, overrides: dict[str, Any] | None = None) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario.load(SCENARIO.format(extra=extra), overrides)
    return str(info.value)


def test_jitter_is_a_knob_of_the_real_contract() -> None:
    """`jitter` and `jitter_up` are derived from the core's `jitter_ns`, as a new knob's keys
    would be."""
    from mpsched.scenario import model

    assert "jitter_ns" in [k.key for k in contract.link_knobs()]
    assert "jitter_ns" in [k.key for k in model.LinkKeys.knobs]
    for table in (model.PathSpec, model.LinkSpec):
        assert {"jitter", "jitter_up"} <= set(table.model_fields)


def test_a_new_knob_is_validated_converted_and_named_as_the_file_names_it(
    scenario_with_knobs,
) -> None:
    scenario = scenario_with_knobs([*contract.link_knobs(), FOO, WEIGHT, SLOTS])
    native = _load(scenario, 'foo = "5ms"\nfoo_up = "1ms"\nweight = 2.5\nslots_up = 8')
    path, link = native["paths"][0], native["links"][0]
    assert (path["down"]["foo_ns"], path["up"]["foo_ns"]) == (5_000_000, 1_000_000)
    assert (path["down"]["weight"], path["up"]["weight"]) == (2.5, 1.0)
    assert (path["down"]["slots"], path["up"]["slots"]) == (4, 8)
    # Left out, each direction has the core's default; the shared link has the keys too.
    assert (link["down"]["foo_ns"], link["up"]["foo_ns"], link["up"]["weight"]) == (0, 0, 1.0)
    assert path["down"]["jitter_ns"] == 0
    json.dumps(native)
    # --set reaches them like any key.
    native = _load(scenario, "", {"path.a.foo_up": "7ms", "link.s.foo": "2ms"})
    assert native["paths"][0]["up"]["foo_ns"] == 7_000_000
    assert native["links"][0]["down"]["foo_ns"] == 2_000_000

    # Errors name the file's key, never the core's field.
    for extra, want in [
        ('foo = "-1ms"', "path[0].foo ('a'): foo must be >= 0, got '-1ms'"),
        ('foo_up = "2s"', "path[0].foo_up ('a'): foo_up must be at most 1s, got '2s'"),
        ("foo = 5", "path[0].foo ('a'): bad duration 5: missing unit"),
        ("weight = 11", "path[0].weight ('a'): weight must be at most 10, got 11"),
        ('weight_up = "x"', "path[0].weight_up ('a'): weight_up must be a number in [0, 10]"),
        ("slots = 0", "path[0].slots ('a'): slots must be >= 1, got 0"),
        ("slots = 2.5", "path[0].slots ('a'): slots must be an integer >= 1, got 2.5"),
        ("fooo = '1ms'", "path[0].fooo ('a'): unknown key"),
    ]:
        message = _error(scenario, extra)
        assert message.startswith(want), message
        assert "foo_ns" not in message
    assert _error(scenario, "", {"link.s.foo": "-1ms"}).startswith("link[0].foo: foo must be >= 0")
    # The core's own errors, renamed by the same rule.
    assert toml_keys("paths[0].down.foo_ns: must be in [0, 1000000000], got 2") == (
        "path[0].foo: must be in [0, 1000000000], got 2"
    )
    assert toml_keys("links[1].up.weight: must be in [0, 10], got 11").startswith(
        "link[1].weight_up:"
    )


def test_a_new_knob_is_in_the_reference_and_the_schema(scenario_with_knobs) -> None:
    scenario = scenario_with_knobs([*contract.link_knobs(), FOO, WEIGHT])
    from mpsched.scenario.reference import scenario_markdown
    from mpsched.scenario.schema import scenario_schema

    page = scenario_markdown()
    rows = [
        '| `foo` | duration in [0, 1s] | `"0s"` | A new delay of the data direction. |',
        '| `foo_up` | duration in [0, 1s] | `"0s"` | The same for the ACK direction. |',
        "| `weight` | number in [0, 10] | `1.0` | A new number. |",
    ]
    for row in rows:
        assert page.count(row) == 2, row  # [[path]] and [[link]]
    properties = scenario_schema()["$defs"]["PathSpec"]["properties"]
    assert properties["foo_up"]["pattern"] == properties["rtt"]["pattern"]
    assert properties["weight"]["maximum"] == 10.0
    assert scenario.PathSpec.model_fields["foo"].description == FOO.meaning


def test_a_knob_the_contract_drops_is_gone_from_python(scenario_with_knobs) -> None:
    knobs = [k for k in contract.link_knobs() if k.key != "jitter_ns"]
    scenario = scenario_with_knobs(knobs)
    assert "jitter" not in scenario.PathSpec.model_fields
    assert "jitter_up" not in scenario.LinkSpec.model_fields
    assert _error(scenario, 'jitter = "1ms"') == "path[0].jitter ('a'): unknown key"
    native = _load(scenario, "")
    assert "jitter_ns" not in native["paths"][0]["down"]
    assert "jitter_ns" not in native["links"][0]["up"]
    from mpsched.scenario.reference import scenario_markdown

    assert "| `jitter_up` |" not in scenario_markdown().split("## `[[path.schedule]]`")[0]


def test_a_knob_whose_key_is_taken_is_refused(scenario_with_knobs) -> None:
    """`delay_ns` would make `delay_up`, a hand-written key: the core's list is wrong."""
    clash = contract.LinkKnob("delay_ns", "int", "ns", 0, 0.0, None, "Taken.")
    with pytest.raises(RuntimeError, match="link knob delay_ns: its key 'delay_up' is taken"):
        scenario_with_knobs([*contract.link_knobs(), clash])

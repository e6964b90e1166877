"""The JSON Schema of scenario files (``mpsched schema``) against the files the project ships."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest

from mpsched.cli import main
from mpsched.errors import ScenarioError
from mpsched.scenario import load
from mpsched.scenario.schema import scenario_schema

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "mpsched"


def _shipped_scenarios() -> list[Path]:
    """Every scenario file, and every sweep's base scenario, shipped with the project."""
    found: set[Path] = set()
    for folder in (ROOT / "scenarios", PACKAGE / "scenarios", PACKAGE / "experiments"):
        for path in sorted(folder.glob("*.toml")):
            raw = tomllib.loads(path.read_text())
            if "sweep" in raw:
                found.add((path.parent / raw["sweep"]["scenario"]).resolve())
            else:
                found.add(path.resolve())
    return sorted(found)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_there_are_shipped_scenarios_to_check() -> None:
    names = {p.name for p in _shipped_scenarios()}
    assert {"default.toml", "handover.toml", "paper001-base.toml"} <= names


@pytest.mark.parametrize("path", _shipped_scenarios(), ids=lambda p: p.name)
def test_the_schema_accepts_every_shipped_scenario(
    path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    raw = tomllib.loads(path.read_text())
    load(path)  # the loader accepts it, so the schema must too
    errors = [e.message for e in validator.iter_errors(raw)]
    assert errors == []


def _default() -> dict[str, object]:
    return tomllib.loads((PACKAGE / "scenarios" / "default.toml").read_text())


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda s: s.__setitem__("duraton", "10s"), "Additional properties"),
        (lambda s: s["connection"].__setitem__("schedular", "default"), "Additional properties"),
        (lambda s: s["path"][0].__setitem__("rtt_ms", "20ms"), "Additional properties"),
        (lambda s: s["path"][0].__setitem__("rate", 30), "is not of type 'string'"),
        (lambda s: s["path"][0].__setitem__("rate", "30mbps"), "does not match"),
        (lambda s: s["path"][0].__setitem__("queue", "50"), "does not match"),
        (lambda s: s.__setitem__("duration", "60"), "does not match"),
        (lambda s: s["connection"].__setitem__("scheduler", "lowest"), "is not valid under any"),
        (lambda s: s["connection"].__setitem__("congestion", "bbr"), "is not one of"),
        (lambda s: s["connection"].__setitem__("stack", "4.19"), "is not one of"),
        (lambda s: s["connection"].__setitem__("protocol", "quic"), "is not one of"),
    ],
    ids=[
        "top-level",
        "connection",
        "path",
        "bare-rate",
        "lowercase",
        "bare-queue",
        "bare-s",
        "scheduler",
        "congestion",
        "stack",
        "protocol",
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(
    edit, why: str, validator: jsonschema.Draft202012Validator
) -> None:
    raw = _default()
    edit(raw)
    with pytest.raises(ScenarioError):
        load(raw)
    messages = [e.message for e in validator.iter_errors(raw)]
    assert any(why in m for m in messages), messages


def test_the_command_prints_the_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["schema"])
    assert exit_.value.code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(scenario_schema()))
    out = tmp_path / "mpsched.schema.json"
    with pytest.raises(SystemExit):
        main(["schema", "--out", str(out)])
    assert json.loads(out.read_text()) == printed


def test_every_scenario_key_has_a_meaning_and_accepts_something() -> None:
    from mpsched.scenario import model
    from mpsched.scenario.reference import scenario_markdown

    tables = (model.Scenario, model.Connection, model.Workload, model.PathSpec,
              model.ScheduleEntry, model.GilbertElliott, model.FlowSpec,
              model.LinkSpec)  # fmt: skip
    for table in tables:
        for name, field in table.model_fields.items():
            assert field.description, f"{table.__name__}.{name} has no docstring"
    rows = [line for line in scenario_markdown().splitlines() if line.startswith("| `")]
    assert len(rows) == sum(len(t.model_fields) for t in tables)
    assert all(row.split(" | ")[1].strip() for row in rows), "a key without what it accepts"


def test_an_editor_completes_the_names_and_accepts_a_python_scheduler(
    validator: jsonschema.Draft202012Validator,
) -> None:
    """The names come from the native contract, so the schema lists what the simulator runs."""
    from mpsched import contract

    schema = scenario_schema()
    connection = schema["$defs"]["Connection"]["properties"]
    assert connection["congestion"]["enum"] == list(contract.names("congestion_controls"))
    # The registered names, then their aliases (the papers' names).
    names = [*contract.names("schedulers"), *contract.scheduler_aliases()]
    assert connection["scheduler"]["anyOf"][0]["enum"] == names and "lowrtt" in names
    for scheduler in ("stms-c", "lowrtt", "examples/fastest_first.py:FastestFirst", "mod:Sched"):
        raw = _default()
        raw["connection"]["scheduler"] = scheduler
        assert [e.message for e in validator.iter_errors(raw)] == [], scheduler

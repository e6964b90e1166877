"""The contract published by the native module, and everything derived from it: the stub,
the generated docs, the validation choices, the sweep's columns, the testbed's summary and the
printed summary. Each test fails when one side changes without the other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mpsched
from mpsched import _native, contract, docgen, traces

ROOT = Path(__file__).resolve().parent.parent


def test_native_stub_matches_module() -> None:
    """mypy's stubtest: every function, parameter, default and class of `_native` is in
    `_native.pyi` and nothing else is."""
    pytest.importorskip("mypy")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "mpsched._native"],
        capture_output=True,
        text=True,
        cwd=ROOT / "python",
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_pages_are_current() -> None:
    for path, text in docgen.pages(ROOT / "docs").items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} is stale: run `python -m mpsched.docgen`"
        )


def test_the_contract_describes_every_field_with_unit_and_meaning() -> None:
    c = contract.contract()
    assert c["version"] >= 1
    for record in contract.RECORDS:
        for f in contract.fields(record):
            assert f.meaning, f"{record}.{f.name} has no meaning"
            assert f.type in ("int", "float", "str", "quantiles", "list[str]") or (
                f.type.startswith("list[") and f.type[5:-1] in contract.RECORDS
            ), f"{record}.{f.name}: {f.type}"
    for t in contract.tables().values():
        assert t.meaning
        for col in t.columns:
            assert col.type in ("u64", "u32", "u16", "u8", "f64", "str"), col
            assert col.meaning, f"{t.name}.{col.name}"
    assert traces.TABLES.keys() == contract.tables().keys()


def test_a_run_returns_exactly_the_declared_fields() -> None:
    result = mpsched.run(
        str(ROOT / "scenarios/stms-lab.toml"), duration="1s", scheduler="stms-a", trace=True
    )
    declared = {f.name for f in contract.fields("summary")}
    # Python adds nothing unless asked (--benefit); fields absent are the optional ones.
    assert set(result.summary) <= declared
    missing = declared - set(result.summary)
    nullable = {
        f.name for f in contract.fields("summary") if f.nullable or f.type.startswith("list")
    }
    assert missing <= nullable, missing
    for name, table in contract.tables().items():
        assert [c.name for c in table.columns] == list(result.traces[name].column_names)


def test_choices_follow_the_contract() -> None:
    from mpsched import scenario
    from mpsched.errors import ScenarioError

    for key, kind in [
        ("connection.congestion", "congestion_controls"),
        ("connection.stack", "stacks"),
        ("connection.loss_recovery", "loss_recoveries"),
        ("connection.join", "joins"),
        ("connection.protocol", "protocols"),
    ]:
        with pytest.raises(ScenarioError) as err:
            scenario.load(None, overrides={key: "bogus"})
        assert ", ".join(contract.names(kind)) in str(err.value), err.value
    assert {s["name"] for s in contract.schedulers()} == {name for name, *_ in _native.schedulers()}
    json.dumps(contract.contract())  # plain data all the way down


def test_the_printed_summary_shows_a_field_it_was_not_taught(monkeypatch) -> None:
    """A field declared in Rust reaches `mpsched run`'s text with no change in Python."""
    import io

    from rich.console import Console

    from mpsched.cli import render

    result = mpsched.run(str(ROOT / "scenarios/stms-lab.toml"), duration="1s")
    real = contract.fields
    extra = contract.Field("new_metric_ms", "float", True, "ms", "a metric added in Rust")
    monkeypatch.setattr(
        contract,
        "fields",
        lambda record: real(record) + ((extra,) if record == "summary" else ()),
    )
    result.summary["new_metric_ms"] = 12.5
    out = io.StringIO()
    render.print_summary(result, Console(file=out, width=200))
    assert "new_metric_ms 12.5 ms" in out.getvalue()


def test_the_testbed_summary_has_every_declared_field() -> None:
    """The kernel testbed reports the simulator's fields, null where the kernel cannot tell."""
    from mpsched.testbed.summary import summarize

    config = mpsched.to_native(mpsched.load(None))
    s = summarize(config, {}, {}, {}, {}, kernel_scheduler="default", wall_s=1.0)
    for f in contract.fields("summary"):
        assert f.name in s, f.name
    for sub in s["subflows"]:
        assert [f.name for f in contract.fields("subflow")] == list(sub)[: len(sub) - 1]
    assert s["ooo_delay_ms"] is None and "kernel" in s


def test_the_extending_guide_shows_the_code_that_is_compiled() -> None:
    """docs/extending.md's worked scheduler is docs/extending/widest.rs, which the core's
    tests compile and run (`sched/registry.rs`, `widest_example`)."""
    code = (ROOT / "docs/extending/widest.rs").read_text()
    assert f"```rust\n{code}```" in (ROOT / "docs/extending.md").read_text()


def test_the_stub_classes_have_exactly_the_runtime_attributes() -> None:
    """stubtest lets a stub attribute without a runtime one pass; this closes that gap."""
    import ast

    tree = ast.parse((ROOT / "python/mpsched/_native.pyi").read_text())
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        stub = {
            n.target.id
            for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        } | {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        runtime = {a for a in dir(getattr(_native, node.name)) if not a.startswith("_")}
        assert stub == runtime, (
            f"{node.name}: stub only {stub - runtime}, runtime only {runtime - stub}"
        )


def test_the_python_subflow_view_the_contract_and_the_stub_agree() -> None:
    """`SubflowView`'s fields are declared once, in the core (crates/mpsched-core/src/sched/
    mod.rs); the contract's `subflow_view`, the extension's `SubflowView` (pysched.rs builds it
    from the same list) and the stub's class (`python -m mpsched.docgen`) are derived from them.
    Each is compared with the contract here, the values by what a running scheduler sees."""
    import ast

    from mpsched.scheduler import MinRtt

    declared = contract.subflow_view()
    assert declared[0].name == "id" and {"srtt_ns", "available", "ca_state"} <= {
        f.name for f in declared
    }
    runtime = {a for a in dir(_native.SubflowView) if not a.startswith("_")}
    assert runtime == {f.name for f in declared}, (
        f"module only {runtime - {f.name for f in declared}}, "
        f"contract only {({f.name for f in declared}) - runtime}: rebuild the extension"
    )
    tree = ast.parse((ROOT / "python/mpsched/_native.pyi").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SubflowView")
    stub = [
        (n.target.id, ast.unparse(n.annotation))
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]

    def annotation(text: str) -> str:
        return ast.unparse(ast.parse(text, mode="eval").body)

    assert stub == [(f.name, annotation(f.annotation)) for f in declared], (
        "the stub's SubflowView is stale: run `python -m mpsched.docgen`"
    )

    seen: dict[str, set[object]] = {f.name: set() for f in declared}

    class Probe(MinRtt):
        """MinRtt that looks at every view and penalizes the slow subflow now and then."""

        calls = 0

        def next(self, ctx):
            self.calls += 1
            for view in ctx.subflows:
                for f in declared:
                    value = getattr(view, f.name)
                    kind = type(value).__name__
                    seen[f.name].add(value if f.type.startswith("Literal") else kind)
                assert view.available == (
                    view.established and view.cwnd_space > 0 and view.ca_state != "loss"
                )
            if self.calls % 1000 == 0:
                ctx.penalize(1)
            return super().next(ctx)

    mpsched.run(duration="5s", scheduler=Probe(), **{"path.wifi.loss": 0.02})
    for f in declared:
        if f.type.startswith("Literal"):
            literal = ast.parse(f.type, mode="eval").body
            assert isinstance(literal, ast.Subscript) and isinstance(literal.slice, ast.Tuple)
            expected = {ast.literal_eval(e) for e in literal.slice.elts}
            assert seen[f.name] <= expected and len(seen[f.name]) > 1, (f.name, seen[f.name])
        else:
            expected = {f.type} | ({"NoneType"} if f.nullable else set())
            assert seen[f.name] <= expected, (f.name, seen[f.name])
            assert seen[f.name] == expected or f.type == "bool", (f.name, seen[f.name])


def test_a_scheduler_duration_needs_its_unit() -> None:
    """`adjust_interval = 60` is not read as seconds: the core refuses a bare duration, and
    the message names the key as the user wrote it."""
    from mpsched.errors import ScenarioError

    with pytest.raises(
        ScenarioError,
        match=r"connection\.scheduler_params\.adjust_interval: a duration needs its unit",
    ):
        mpsched.run(
            scheduler="stms-a", duration="1s", **{"connection.scheduler_params.adjust_interval": 60}
        )


def test_every_duration_has_one_grammar() -> None:
    """Python's scenario units and the core's scheduler parameters read durations with the
    same units (the contract publishes the core's), so `jitter = "50µs"` and
    `adjust_interval = "50µs"` both work."""
    from mpsched.units import _DURATION_UNITS

    assert dict(contract.contract()["duration_units"]) == _DURATION_UNITS
    out = mpsched.run(
        scheduler="stms-a",
        duration="1s",
        **{"connection.scheduler_params.adjust_interval": "50µs", "path.wifi.jitter": "50µs"},
    )
    assert out.summary["bytes_delivered"] > 0


# Scenario files that between them set every key the scenario file has; their normalized
# forms must use every key of the core's configuration (`mpsched_scenario::keys`).
_EVERY_KEY = [
    """
duration = "10s"
seed = 3
[connection]
protocol = "mptcp"
scheduler = "stms-a"
scheduler_params = { adjust_interval = "60ms" }
congestion = "lia"
sndbuf = "1MiB"
sndbuf_autotune = false
rcvbuf = "2MiB"
rcvbuf_initial = "64KiB"
rcvbuf_autotune = false
window_ratio = 0.5
stack = "out-of-tree"
loss_recovery = "classic"
timer_hz = 1000
timer_phase = "1ms"
paths = ["a", "b"]
[workload]
kind = "file"
size = "1MB"
write_chunk = "128KiB"
[[path]]
name = "a"
rate = "10Mbps"
rate_up = "5Mbps"
delay_down = "10ms"
delay_up = "5ms"
queue = "100pkt"
queue_up = "50ms"
loss_burst = 2
loss = 0.001
ack_loss = 0.001
ack_loss_burst = 2
jitter = "1ms"
jitter_up = "1ms"
reorder = true
aqm = "codel"
via = ["s"]
backup = true
[[path.schedule]]
at = "1s"
rate = "5Mbps"
delay_down = "20ms"
delay_up = "10ms"
jitter = "2ms"
jitter_up = "2ms"
state = "down"
[[path.schedule]]
at = "2s"
state = "gone"
[[path.schedule]]
at = "3s"
state = "up"
[[path]]
name = "b"
trace = "traces/lte-steps.trace"
trace_up = "traces/lte-steps.trace"
rtt = "40ms"
aqm = "fq_codel"
gilbert_elliott = { p = 0.01, r = 0.5, loss_good = 0.0, loss_bad = 0.5 }
[[path]]
name = "c"
rate = "10Mbps"
rtt = "40ms"
[[link]]
name = "s"
rate = "20Mbps"
rtt = "2ms"
[[flow]]
count = 2
start = "1s"
protocol = "mptcp"
scheduler = "minrtt"
congestion = "cubic"
size = "100KB"
paths = ["a", "c"]
""",
    """
duration = "10s"
[workload]
kind = "rate"
rate = "1Mbps"
block = "8KiB"
[[path]]
name = "a"
rate = "10Mbps"
rtt = "10ms"
""",
]


def _keys(value: object, table: str, out: dict[str, set[str]]) -> None:
    """The keys of a normalized scenario, by the configuration table they belong to."""
    nested = {
        "paths": "path",
        "down": "link",
        "up": "link",
        "schedule": "change",
        "flows": "flow",
        "links": "shared_link",
        "codel": "codel",
        "fq_codel": "codel",
        "gilbert_elliott": "gilbert_elliott",
    }
    if isinstance(value, list):
        for v in value:
            _keys(v, table, out)
    elif isinstance(value, dict) and table:
        for k, v in value.items():
            out.setdefault(table, set()).add(k)
            if k in nested:
                _keys(v, nested.get(k, ""), out)


def test_python_writes_every_key_of_the_core_s_scenario_and_no_other(tmp_path: Path) -> None:
    """A key of the core's configuration that Python never writes is unreachable from a
    scenario file (a `#[serde(default)]` nobody can set); one Python writes and the core does
    not read is refused at run time. Both fail here."""
    from mpsched.scenario import load
    from mpsched.scenario.native import to_native

    (tmp_path / "traces").symlink_to(ROOT / "scenarios" / "traces")
    written: dict[str, set[str]] = {}
    for k, text in enumerate(_EVERY_KEY):
        path = tmp_path / f"s{k}.toml"
        path.write_text(text)
        _keys(to_native(load(path)), "scenario", written)
    declared = {table: set(keys) for table, keys in contract.contract()["scenario_keys"]}
    assert set(written) == set(declared)
    for table, keys in declared.items():
        assert written[table] <= keys, f"{table}: Python only {written[table] - keys}"
        assert keys <= written[table], f"{table}: core only {keys - written[table]}"

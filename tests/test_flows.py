"""Competing flows (``[[flow]]``): parsing, size distributions, the run's per-flow numbers and
the sweep's ``flows.parquet``."""

from __future__ import annotations

import itertools
import random
import statistics
from pathlib import Path

import pytest

import mpsched
from mpsched import ScenarioError, load, to_native
from mpsched import sweep as sweep_mod
from mpsched.scenario import draw_size

from .conftest import ROOT

SHARED = """
duration = "10s"
seed = 4

[connection]
protocol = "mptcp"
scheduler = "default"
paths = ["wifi", "lte"]

[workload]
kind = "file"
size = "57KB"
size_dist = "pareto"

[[path]]
name = "wifi"
rate = "30Mbps"
rtt = "20ms"
queue = "50ms"

[[path]]
name = "lte"
rate = "30Mbps"
rtt = "100ms"
queue = "100ms"

[[path]]
name = "dsl"
rate = "10Mbps"
rtt = "30ms"

[[flow]]
count = 5
interval = "100ms"
size = "57KB"
size_dist = "pareto"

[[flow]]
protocol = "tcp"
paths = ["dsl"]
start = "1s"
"""


def error(text: str, overrides: dict[str, object] | None = None) -> str:
    with pytest.raises(ScenarioError) as info:
        load(text, overrides)
    return str(info.value)


def test_flows_normalize_to_one_connection_each() -> None:
    native = to_native(load(SHARED))
    # The main connection's paths first, then the one only a flow uses.
    assert [p["name"] for p in native["paths"]] == ["wifi", "lte", "dsl"]
    assert native["main_paths"] == 2
    flows = native["flows"]
    assert len(flows) == 6
    assert [f["start_ns"] for f in flows[:5]] == [i * 100_000_000 for i in range(5)]
    assert all(f["protocol"] == "mptcp" and f["paths"] == [0, 1] for f in flows[:5])
    assert all(f["scheduler"] == "default" for f in flows[:5])
    assert flows[5] == {
        "start_ns": 1_000_000_000,
        "protocol": "tcp",
        "scheduler": "minrtt",
        "scheduler_params": {},
        "congestion": "cubic",
        "size_bytes": None,
        "paths": [2],
    }
    # Sizes come from the seed: the same seed draws the same files, another seed others.
    sizes = [native["workload"]["size_bytes"]] + [f["size_bytes"] for f in flows[:5]]
    assert sizes == [
        native["workload"]["size_bytes"],
        *(f["size_bytes"] for f in to_native(load(SHARED))["flows"][:5]),
    ]
    other = to_native(load(SHARED, {"seed": 5}))
    assert [f["size_bytes"] for f in other["flows"][:5]] != sizes[1:]


def test_without_flows_the_native_scenario_is_unchanged() -> None:
    text = SHARED.split("[[flow]]")[0]
    native = to_native(load(text))
    assert "flows" not in native and "main_paths" not in native
    assert [p["name"] for p in native["paths"]] == ["wifi", "lte"]
    # count = 0 (a sweep's "no competing flow") is the same scenario.
    zero = to_native(load(SHARED, {"flow.0.count": 0, "flow.1.count": 0}))
    assert zero == native


def test_pareto_sizes_have_the_asked_mean_and_median() -> None:
    # Shape 3 has a finite variance, so the sample mean settles; the median of a Pareto
    # distribution of scale x_m is x_m * 2^(1/shape).
    rng = random.Random(1)
    sizes = [draw_size(rng, 57_000, 3.0) for _ in range(40_000)]
    assert statistics.fmean(sizes) == pytest.approx(57_000, rel=0.02)
    scale = 57_000 * 2 / 3
    assert statistics.median(sizes) == pytest.approx(scale * 2 ** (1 / 3), rel=0.02)
    assert min(sizes) >= scale - 1


@pytest.mark.parametrize(
    ("overrides", "start"),
    [
        ({"flow.1.paths": ["wifi", "lte"]}, "flow[1].paths: a TCP flow uses exactly one path"),
        ({"flow.1.paths": ["5g"]}, "flow[1].paths[0]: unknown path '5g'"),
        ({"flow.0.count": -1}, "flow[0].count"),
        ({"flow.0.pareto_shape": 1}, "flow[0].pareto_shape"),
        ({"flow.0.interval": "3s"}, "flow[0].start: its last flow would start at 12s"),
        ({"flow.0.scheduler": "nope"}, "flow[0].scheduler: unknown scheduler 'nope'"),
        ({"flow.0.scheduler": "mod:Cls"}, "flow[0].scheduler: competing flows need a built-in"),
        ({"flow.2.count": 1}, "--set flow.2.count: no flow '2'"),
        ({"flow.0.colour": 1}, "--set flow.0.colour: unknown key"),
        ({"workload.kind": "bulk", "workload.size": None}, "workload.size_dist"),
    ],
)
def test_bad_flows_name_the_field(overrides: dict[str, object], start: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load(SHARED, overrides, label="--set")
    assert str(info.value).startswith(start), str(info.value)


def test_a_run_reports_every_flow() -> None:
    result = mpsched.run(SHARED, trace=False)
    s = result.summary
    flows = result.flows
    assert list(flows.index) == list(range(7))
    assert flows.loc[6, "paths"] == ["dsl"]
    done = flows["completion_s"].dropna()
    # Six files (the main one and five flows) finish; the TCP flow is a bulk transfer.
    assert len(done) == 6 and s["unfinished_flows"] == 0
    assert s["mean_flow_completion_s"] == pytest.approx(done.mean())
    assert s["mean_flow_goodput_mbps"] == pytest.approx(flows["goodput_mbps"].mean())
    # The main connection's summary is its own; the run ended with the last file.
    assert s["completion_s"] == pytest.approx(flows.loc[0, "completion_s"])
    assert flows["start_s"].max() + flows["completion_s"].max() < 10


def test_a_sweep_writes_the_flows_table(tmp_path: Path) -> None:
    scenario = tmp_path / "shared.toml"
    scenario.write_text(SHARED)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f"""
[sweep]
title = "flows"
scenario = "{scenario}"
repetitions = 2

[[sweep.group]]
name = "sched"
grid = {{ "connection.scheduler" = ["default", "mptcp-sf"] }}
"""
    )
    result = sweep_mod.run_sweep(sweep, tmp_path / "out", jobs=1)
    flows = result.flows
    assert len(flows) == 2 * 2 * 7
    assert set(flows["flow"]) == set(range(7))
    assert flows["paths"].iloc[-1] == "dsl"
    results = result.results
    assert results["mean_flow_completion_s"].notna().all()
    assert (results["unfinished_flows"] == 0).all()

    # A table of the flows by size class pools the flows of a cell's runs.
    from mpsched.table import sweep_table

    table = sweep_table(
        tmp_path / "out", "flows:completion_s", ["size_class"], size_classes=(60_000,)
    )
    assert table.rows == [("<60KB",), (">=60KB",)]
    merged = flows.merge(results[["key", "scheduler"]], on="key")
    small = merged[(merged["size_bytes"] < 60_000) & (merged["scheduler"] == "mptcp-sf")]
    assert table.cells[(("<60KB",), "mptcp-sf")] == pytest.approx(small["completion_s"].mean())
    # The TCP bulk flow has no completion time: no row for it.
    assert (("bulk",), "default") not in table.cells
    rates = sweep_table(tmp_path / "out", "flows:goodput_mbps", ["size_class"])
    assert ("bulk",) in rates.rows


def test_the_testbed_refuses_what_only_the_simulator_has() -> None:
    from mpsched.testbed import check_kernel_support

    # Competing flows run on the kernel too (tests/test_emulate_topologies.py); the
    # out-of-tree scheduler they inherit does not, nor classic recovery.
    with pytest.raises(ScenarioError, match=r"^connection\.scheduler: 'default'"):
        check_kernel_support(to_native(load(SHARED)), None)
    linux = {"connection.scheduler": "linux"}
    assert check_kernel_support(to_native(load(SHARED, linux)), None) == "default"
    classic = to_native(load(SHARED.split("[[flow]]")[0], {"connection.loss_recovery": "classic"}))
    with pytest.raises(ScenarioError, match=r"^connection.loss_recovery: the kernel"):
        check_kernel_support(classic, None)


def test_poisson_starts_have_exponential_gaps_of_the_mean_interval() -> None:
    text = SHARED + "\n[[flow]]\ncount = 2000\nstart_dist = 'poisson'\ninterval = '5ms'\n"
    flows = to_native(load(text))["flows"][6:]
    starts = [f["start_ns"] for f in flows]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert starts[0] == 0 and min(gaps) >= 0
    assert statistics.fmean(gaps) == pytest.approx(5e6, rel=0.06)
    # Exponential: the median gap is ln 2 of the mean.
    assert statistics.median(gaps) == pytest.approx(5e6 * 0.693, rel=0.08)
    assert "flow[2].interval" in error(text, {"flow.2.interval": "0s"})


def test_two_subflows_through_one_bottleneck_share_its_rate() -> None:
    base = ROOT / "python" / "mpsched" / "experiments" / "rfc6356-base.toml"
    summary = mpsched.run(load(base, {"duration": "20s"})).summary
    total = sum(f["goodput_mbps"] for f in summary["flows"])
    # The bottleneck's payload rate bounds the three subflows together.
    assert 0.9 * 20 * 1448 / 1500 < total <= 20 * 1448 / 1500

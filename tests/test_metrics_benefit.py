"""Aggregation benefit (Kaspar; paper 001 sec. 4.2): the formula; baselines from real runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import mpsched
from mpsched.benefit import aggregation_benefit, baseline_config

# --- the formula --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("goodput", "baselines", "expected"),
    [
        (30.0, [10.0, 20.0], 1.0),  # the sum of the paths: perfect aggregation
        (20.0, [10.0, 20.0], 0.0),  # as good as the best single path
        (0.0, [10.0, 20.0], -1.0),  # nothing
        (25.0, [10.0, 20.0], 0.5),  # half of the second path's capacity added
        (10.0, [10.0, 20.0], -0.5),  # half of the best path
        (40.0, [10.0, 20.0], 2.0),  # more than the sum (not capped)
        (60.0, [10.0, 20.0, 30.0], 1.0),  # three paths
        (45.0, [10.0, 20.0, 30.0], 0.5),
        (12.0, [10.0], 0.2),  # one path: the relative gain over it
        (5.0, [10.0], -0.5),
        (10.0, [10.0, 0.0], 0.0),  # the other path carries nothing
    ],
)
def test_formula(goodput: float, baselines: list[float], expected: float) -> None:
    assert aggregation_benefit(goodput, baselines) == pytest.approx(expected)


def test_formula_undefined_without_baselines() -> None:
    assert math.isnan(aggregation_benefit(5.0, []))
    assert math.isnan(aggregation_benefit(5.0, [0.0, 0.0]))


def test_baseline_config_is_plain_tcp_on_one_path() -> None:
    config = mpsched.to_native(mpsched.load(None, {"connection.congestion": "olia"}))
    single = baseline_config(config, 1)
    assert single["protocol"] == "tcp"
    assert [p["name"] for p in single["paths"]] == ["lte"]
    assert single["paths"][0] == config["paths"][1]
    assert single["congestion"] == "reno"  # a coupled controller on one path is Reno
    assert {k: v for k, v in single.items() if k not in ("protocol", "paths", "congestion")} == {
        **{k: v for k, v in config.items() if k not in ("protocol", "paths", "congestion")},
        "scheduler": "default",
        "scheduler_params": {},
    }
    assert config["protocol"] == "mptcp"  # the input is not modified


# --- real runs ----------------------------------------------------------------------------------


def test_one_path_has_no_benefit() -> None:
    """MPTCP over a single path against plain TCP over it: nothing to aggregate."""
    result = mpsched.run(None, duration="5s", paths=["wifi"], benefit=True)
    summary = result.summary
    assert [b["name"] for b in summary["baselines"]] == ["wifi"]
    assert summary["aggregation_benefit"] == pytest.approx(0.0, abs=0.02)


def test_baselines_are_plain_tcp_runs() -> None:
    result = mpsched.run(None, duration="5s", benefit=True, **{"path.lte.rate": "10Mbps"})
    summary = result.summary
    for baseline in summary["baselines"]:
        alone = mpsched.run(
            None,
            duration="5s",
            protocol="tcp",
            paths=[baseline["name"]],
            **{"path.lte.rate": "10Mbps"},
        ).summary
        assert baseline["goodput_mbps"] == alone["goodput_mbps"]
        assert baseline["bytes_delivered"] == alone["bytes_delivered"]
        assert baseline["congestion"] == "cubic"
    goodputs = [b["goodput_mbps"] for b in summary["baselines"]]
    assert summary["aggregation_benefit"] == pytest.approx(
        aggregation_benefit(summary["goodput_mbps"], goodputs)
    )
    assert 0 < summary["aggregation_benefit"] < 1.5
    assert result.scenario["protocol"] == "mptcp"  # the run itself is unchanged


def test_cli_benefit(run_cli, tmp_path: Path) -> None:
    outcome = run_cli("run", "--benefit", "--set", "duration=2s", "--out", str(tmp_path), "--json")
    assert outcome.code == 0, outcome
    summary = outcome.json()
    assert {b["name"] for b in summary["baselines"]} == {"wifi", "lte"}
    assert isinstance(summary["aggregation_benefit"], float)
    assert json.loads((tmp_path / "summary.json").read_text())["baselines"] == summary["baselines"]
    readable = run_cli("run", "--benefit", "--set", "duration=2s")
    assert "aggregation" in readable.out and "TCP alone" in readable.out

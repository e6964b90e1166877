"""End to end: the real simulator through the API and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import polars as pl
import pytest

import mpsched

from .conftest import SCENARIOS, run_subprocess
from .test_cli import REQUIRED_KEYS

SHORT = {"duration": "5s"}
SUBFLOW_KEYS = {
    "name",
    "bytes_sent",
    "packets_sent",
    "goodput_mbps",
    "retransmits",
    "rtos",
    "queue_drops",
    "random_drops",
    "srtt_ms",
    "min_rtt_ms",
    "mean_free_cwnd_at_ack",
    "peak_free_cwnd_at_ack",
}
SEGMENT_COLUMNS = [
    "dseq",
    "len_bytes",
    "subflow",
    "transmissions",
    "t_first_sent_ns",
    "t_first_received_ns",
    "t_delivered_ns",
]
ACK_COLUMNS = [
    "t_ns",
    "subflow",
    "data_ack_bytes",
    "data_ack_step_bytes",
    "cwnd_segments",
    "in_flight_segments",
    "free_cwnd_segments",
    "srtt_ns",
]


def without_wall(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key != "wall_s"}


def test_schedulers_command_lists_builtins(native: ModuleType) -> None:
    outcome = run_subprocess("schedulers")
    assert outcome.code == 0, outcome
    lines = outcome.out.splitlines()
    names = [line.split()[0] for line in lines if line.strip() and not line.startswith(" ")]
    assert {"default", "minrtt", "rr"} <= set(names)
    assert max(len(line) for line in lines) <= 100
    assert [s.name for s in mpsched.schedulers()] == names


def test_json_output_is_one_object_with_required_keys(native: ModuleType) -> None:
    outcome = run_subprocess("run", "--json", "--set", "duration=5s", "--seed", "2")
    assert outcome.code == 0, outcome
    summary = json.loads(outcome.out)  # fails on anything but exactly one JSON document
    assert isinstance(summary, dict)
    assert set(summary) >= REQUIRED_KEYS
    assert summary["seed"] == 2
    assert summary["duration_s"] == pytest.approx(5.0)
    assert summary["completion_s"] is None
    assert summary["goodput_mbps"] > 1
    assert [s["name"] for s in summary["subflows"]] == ["wifi", "lte"]
    for subflow in summary["subflows"]:
        assert set(subflow) >= SUBFLOW_KEYS
        assert subflow["bytes_sent"] > 0


def test_readable_summary(native: ModuleType) -> None:
    outcome = run_subprocess("run", "--set", "duration=5s")
    assert outcome.code == 0, outcome
    assert outcome.err == ""
    for text in ("goodput", "Mbps", "wifi", "lte", "OOO delay", "events/s"):
        assert text in outcome.out


def test_determinism_and_seed(native: ModuleType) -> None:
    first = mpsched.run(seed=1, **SHORT).summary
    again = mpsched.run(seed=1, **SHORT).summary
    other = mpsched.run(seed=2, **SHORT).summary
    assert json.dumps(without_wall(first)) == json.dumps(without_wall(again))
    assert without_wall(first) != without_wall(other)


def test_cli_determinism(native: ModuleType) -> None:
    args = ("run", "--json", "--set", "duration=3s", "--set", "path.wifi.loss=0.01")
    first, again = run_subprocess(*args), run_subprocess(*args)
    assert without_wall(first.json()) == without_wall(again.json())
    other = run_subprocess(*args, "--seed", "9")
    assert without_wall(first.json()) != without_wall(other.json())


def test_out_writes_parquet(native: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "run"
    outcome = run_subprocess("run", "--json", "--out", str(out), "--set", "duration=3s")
    assert outcome.code == 0, outcome
    summary = outcome.json()
    assert json.loads((out / "summary.json").read_text()) == summary
    scenario = json.loads((out / "scenario.json").read_text())
    assert scenario == mpsched.to_native(mpsched.load(None, {"duration": "3s"}))

    segments = pd.read_parquet(out / "segments.parquet")
    assert set(segments.columns) >= set(SEGMENT_COLUMNS)
    assert len(segments) > 0
    assert set(segments["subflow"].unique()) <= {0, 1}
    acks = pl.read_parquet(out / "acks.parquet")
    assert set(acks.columns) >= set(ACK_COLUMNS)
    assert acks.height > 0
    assert pl.read_parquet(out / "segments.parquet").height == len(segments)


def test_traces_match_summary(native: ModuleType) -> None:
    result = mpsched.run(trace=True, duration="3s")
    segments = result.segments
    assert set(segments.columns) >= set(SEGMENT_COLUMNS)
    assert set(result.acks.columns) >= set(ACK_COLUMNS)
    assert int(segments["len_bytes"].sum()) >= result.summary["bytes_delivered"]
    assert len(segments) >= result.summary["data_packets"] / 2


@pytest.mark.parametrize("source", ["path", "toml", "dict"])
def test_api_inputs(native: ModuleType, source: str) -> None:
    text = "duration = '2s'\n[[path]]\nname = 'p'\nrate = '10Mbps'\nrtt = '40ms'\n"
    file = SCENARIOS / "stms-lab.toml"
    scenario = {
        "path": file,
        "toml": text,
        "dict": {"duration": "2s", "path": [{"name": "p", "rate": "10Mbps", "rtt": "40ms"}]},
    }[source]
    result = mpsched.run(scenario, **({"duration": "2s"} if source == "path" else {}))
    assert result.summary["duration_s"] == pytest.approx(2.0)
    assert result.summary["goodput_mbps"] > 0
    assert result.loop_wall_s is not None and result.loop_wall_s <= result.summary["wall_s"]
    assert result.traces is None


def test_file_workload_completes(native: ModuleType) -> None:
    result = mpsched.run(
        duration="20s", **{"workload.kind": "file", "workload.size": "2MB"}
    ).summary
    assert result["completion_s"] is not None
    assert 0 < result["completion_s"] < 20
    assert result["bytes_delivered"] == 2_000_000


def test_single_path_tcp(native: ModuleType) -> None:
    summary = mpsched.run(protocol="tcp", congestion="reno", duration="3s").summary
    assert summary["protocol"] == "tcp"
    assert [s["name"] for s in summary["subflows"]] == ["wifi"]


@pytest.mark.parametrize("scheduler", ["default", "minrtt", "rr"])
def test_schedulers_run(native: ModuleType, scheduler: str) -> None:
    summary = mpsched.run(scheduler=scheduler, duration="3s").summary
    assert summary["scheduler"] == scheduler
    assert summary["goodput_mbps"] > 1


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_example_scenarios_run(native: ModuleType, path: Path) -> None:
    summary = mpsched.run(path).summary
    assert summary["goodput_mbps"] > 0


def test_bench_json(native: ModuleType) -> None:
    outcome = run_subprocess("bench", "--json", "--seconds", "2")
    assert outcome.code == 0, outcome
    report = outcome.json()
    assert report["sim_s"] == pytest.approx(2.0)
    assert report["events"] > 0
    assert report["events_per_s"] > 0
    assert report["heap_mevents_per_s"] > 0
    assert report["loop_wall_s"] <= report["wall_s"]


def test_bench_scenario_rows_are_medians_of_repeated_runs(native: ModuleType) -> None:
    (row,) = json.loads(native.bench_scenarios(["a"]))
    assert row["name"] == "a"
    assert row["events"] == mpsched.run().summary["events"]  # scenario a is the default one
    # at least three runs and a second of them; the loop time is one run's, not their sum
    assert row["runs"] >= 3
    assert row["runs"] * row["wall_s"] >= 0.5
    assert row["sim_s_per_wall_s"] == pytest.approx(row["simulated_s"] / row["wall_s"])
    assert row["ratio_to_heap"] == pytest.approx(
        row["sim_s_per_wall_s"] / row["heap_mevents_per_s"]
    )
    with pytest.raises(ValueError, match="unknown scenario 'z'"):
        native.bench_scenarios(["z"])


def test_upstreams_send_buffer_shrinks_with_a_closed_subflow(native: ModuleType) -> None:
    # `__mptcp_sync_sndbuf`: the connection's send buffer is the sum of its subflows'. The
    # kernel's in scenarios/wifi-removed.toml (`ss -Mm`): 3.23 MB on LTE alone after Wi-Fi's
    # address went at 10 s, 4.07 MB with both once it was back.
    result = mpsched.run(
        SCENARIOS / "wifi-removed.toml",
        trace=True,
        **{"connection.scheduler": "linux", "duration": "16s"},
    )
    conn = result.connection.set_index("t_ns")["sndbuf_bytes"]
    before = conn[conn.index < 10_000_000_000].iloc[-1]
    after = conn[conn.index >= 13_000_000_000].iloc[0]
    assert after < 0.9 * before, (before, after)

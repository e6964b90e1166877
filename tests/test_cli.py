"""The command line with a fake simulator, and its error handling in a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pandas as pd
import polars as pl
import pytest

from mpsched import load, to_native

from .conftest import SCENARIOS, Outcome, run_subprocess

REQUIRED_KEYS = {
    "goodput_mbps",
    "bytes_delivered",
    "duration_s",
    "completion_s",
    "events",
    "wall_s",
    "data_packets",
    "protocol",
    "scheduler",
    "congestion",
    "seed",
    "ooo_delay_ms",
    "data_ack_step_segments",
    "opportunistic_retransmits",
    "reinjections",
    "penalizations",
    "subflows",
}


def assert_one_line_error(outcome: Outcome, field: str, code: int = 2) -> None:
    assert outcome.code == code, outcome
    assert outcome.out == ""
    assert "Traceback" not in outcome.err
    lines = outcome.err.splitlines()
    assert len(lines) == 1, outcome.err
    assert lines[0].startswith("error: ")
    assert field in lines[0], lines[0]


# --- bad input: one line on stderr, exit code 2, checked in a real subprocess ------------------

BAD_FILES = {
    "malformed.toml": "duration = \n[[path]]\nname = 'a'\n",
    "duplicate.toml": (
        "[[path]]\nname = 'a'\nrate = '1Mbps'\nrtt = '1ms'\n"
        "[[path]]\nname = 'a'\nrate = '1Mbps'\nrtt = '1ms'\n"
    ),
    "nopath.toml": "duration = '10s'\n",
    "unknown-key.toml": "[connection]\nschedulr = 'rr'\n[[path]]\nname = 'a'\nrate = '1Mbps'\n",
    "bad-unit.toml": "[[path]]\nname = 'a'\nrate = '30Mbsp'\nrtt = '1ms'\n",
    "negative-rate.toml": "[[path]]\nname = 'a'\nrate = '1Mbps'\nrtt = '1ms'\n"
    "[[path]]\nname = 'lte'\nrate = '-5Mbps'\nrtt = '1ms'\n",
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    for name, text in BAD_FILES.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["run", "missing.toml"], "missing.toml: no such scenario file"),
        (["run", "{dir}/malformed.toml"], "malformed.toml: malformed TOML"),
        (["run", "{dir}/duplicate.toml"], "path[1].name ('a'): duplicate path name"),
        (["run", "{dir}/nopath.toml"], "path: at least one [[path]]"),
        (["run", "{dir}/unknown-key.toml"], "error: connection.schedulr: unknown key"),
        (["run", "{dir}/bad-unit.toml"], "path[0].rate ('a'): bad rate '30Mbsp'"),
        (
            ["run", "{dir}/negative-rate.toml"],
            "error: path[1].rate ('lte'): rate must be > 0, got '-5Mbps'",
        ),
        (["run", "--set", "duration=0s"], "duration: duration must be > 0"),
        (["run", "--set", "duration=-1s"], "duration: duration must be > 0"),
        (["run", "--set", "path.wifi.loss=1.5"], "path[0].loss ('wifi')"),
        (["run", "--set", "path.wifi.loss=-0.5"], "path[0].loss ('wifi')"),
        (["run", "--set", "connection.congestion=bbr"], "connection.congestion: unknown"),
        (["run", "--set", "connection.window_ratio=2"], "connection.window_ratio: window_ratio"),
        (["run", "--set", "connection.schedulr=rr"], "--set connection.schedulr: unknown key"),
        (["run", "--set", "path.umts.rtt=1ms"], "--set path.umts.rtt: no path named 'umts'"),
        (["run", "--set", "noequals"], "--set 'noequals': expected KEY=VALUE"),
        (["run", "--seed", "-1"], "seed: seed must be an integer >= 0"),
        (["run", "--seed", "abc"], "'--seed'"),
        (["run", "--frobnicate"], "--frobnicate"),
        (["frobnicate"], "frobnicate"),
        (["bench", "--seconds", "0"], "--seconds"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], field: str, bad_files: Path) -> None:
    outcome = run_subprocess(*(arg.replace("{dir}", str(bad_files)) for arg in args))
    assert_one_line_error(outcome, field)


def test_unknown_scheduler_exits_2(native: ModuleType) -> None:
    outcome = run_subprocess("run", "--scheduler", "nope", "--set", "duration=1s")
    assert_one_line_error(outcome, "connection.scheduler: unknown scheduler 'nope'")


def test_the_papers_scheduler_names_are_aliases_listed_and_run_as_the_registered_name(
    native: ModuleType,
) -> None:
    """The aliases come from the Rust registry (the contract); a run reports the name."""
    listed = run_subprocess("schedulers")
    assert listed.code == 0
    lines = listed.out.splitlines()
    minrtt = next(i for i, line in enumerate(lines) if line.startswith("minrtt "))
    assert "also: lowrtt" in lines[minrtt + 1]
    entries = json.loads(run_subprocess("schedulers", "--json").out)
    as_json = {e["name"]: e["aliases"] for e in entries}
    assert as_json["minrtt"] == ["lowrtt"] and as_json["default"] == ["lowrtt+rp"]
    run = run_subprocess("run", "--scheduler", "lowrtt", "--set", "duration=1s", "--json")
    assert run.code == 0, run.err
    same = run_subprocess("run", "--scheduler", "minrtt", "--set", "duration=1s", "--json")
    a, b = run.json(), same.json()
    assert a["scheduler"] == "minrtt"
    assert a["goodput_mbps"] == b["goodput_mbps"] and a["subflows"] == b["subflows"]
    # Competing flows take them too; a misspelt one is still refused, naming the field.
    flows = run_subprocess(
        "run",
        str(SCENARIOS / "web-and-background.toml"),
        "--json",
        "--set",
        "duration=1s",
        "--set",
        "flow.0.scheduler=round-robin",
    )
    assert flows.code == 0, flows.err
    assert_one_line_error(
        run_subprocess("run", "--scheduler", "LowRTT", "--set", "duration=1s"),
        "connection.scheduler: unknown scheduler 'LowRTT'",
    )


def test_help_and_version() -> None:
    outcome = run_subprocess("--help")
    assert outcome.code == 0
    for command in ("run", "schedulers", "bench"):
        assert command in outcome.out
    assert run_subprocess("--version").code == 0


# --- the Python layer, driven through main() with a fake simulator -----------------------------


def test_run_json_is_one_object(run_cli, fake: ModuleType) -> None:
    outcome = run_cli("run", "--json", "--seed", "7", "--scheduler", "rr")
    assert outcome.code == 0, outcome
    summary = json.loads(outcome.out)
    assert isinstance(summary, dict)
    assert set(summary) >= REQUIRED_KEYS
    assert summary["seed"] == 7
    assert summary["scheduler"] == "rr"
    assert summary["future_key"] == "ignored"
    assert summary["wall_s"] != 0.01  # the whole call's wall time replaces the loop's


def test_run_passes_overrides_to_native(run_cli, fake: ModuleType) -> None:
    outcome = run_cli(
        "run",
        "--json",
        "--set",
        "duration=10s",
        "--set",
        "path.lte.rtt=200ms",
        "--set",
        "connection.rcvbuf=1MiB",
        "--set",
        "seed=3",
        "--seed",
        "4",
    )
    assert outcome.code == 0, outcome
    config = fake.calls[-1]
    assert config["duration_ns"] == 10 * 10**9
    assert config["rcvbuf_bytes"] == 2**20
    assert config["seed"] == 4  # --seed wins over --set seed=
    lte = config["paths"][1]
    assert lte["down"]["delay_ns"] + lte["up"]["delay_ns"] == 200_000_000


def test_run_file_argument(run_cli, fake: ModuleType, tmp_path: Path) -> None:
    scenario = tmp_path / "one.toml"
    scenario.write_text("[[path]]\nname = 'x'\nrate = '5Mbps'\nrtt = '8ms'\n")
    outcome = run_cli("run", str(scenario), "--json")
    assert outcome.code == 0, outcome
    assert [s["name"] for s in outcome.json()["subflows"]] == ["x"]
    assert fake.calls[-1] == to_native(load(scenario))


def test_run_readable_summary(run_cli, fake: ModuleType) -> None:
    outcome = run_cli("run")
    assert outcome.code == 0, outcome
    for text in ("goodput", "wifi", "lte", "OOO delay", "completion", "events/s", "retx"):
        assert text in outcome.out


def test_run_out_writes_parquet(run_cli, fake: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = run_cli("run", "--json", "--out", str(out), "--set", "duration=5s")
    assert outcome.code == 0, outcome
    assert json.loads(outcome.out) == json.loads((out / "summary.json").read_text())
    scenario = json.loads((out / "scenario.json").read_text())
    assert scenario == to_native(load(None, {"duration": "5s"}))
    segments = pd.read_parquet(out / "segments.parquet")
    assert list(segments.columns)[:3] == ["dseq", "len_bytes", "subflow"]
    assert str(segments["len_bytes"].dtype) == "uint16"
    acks = pl.read_parquet(out / "acks.parquet")
    assert acks.schema["free_cwnd_segments"] == pl.Float64
    assert acks.height == 3


def test_run_out_refuses_an_earlier_run_unless_forced(
    run_cli, fake: ModuleType, tmp_path: Path
) -> None:
    """As `compare`: a second run into a folder would sit beside the first one's plots."""
    out = tmp_path / "run"
    assert run_cli("run", "--out", str(out), "--set", "duration=5s").code == 0
    (out / "plots").mkdir()
    (out / "plots" / "throughput.png").write_bytes(b"old")
    (out / "capture.pcapng").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    before = (out / "summary.json").read_text()
    refused = run_cli("run", "--out", str(out), "--set", "duration=7s")
    assert_one_line_error(refused, f"--out {out}: the folder is not empty")
    assert "--force" in refused.err
    assert (out / "summary.json").read_text() == before  # untouched
    forced = run_cli("run", "--out", str(out), "--set", "duration=7s", "--force", "--json")
    assert forced.code == 0, forced
    assert json.loads((out / "summary.json").read_text()) == forced.json()
    assert forced.json()["duration_s"] == 7.0
    # The earlier run's plots and capture are gone; a file of the user's stays.
    assert not (out / "plots").exists() and not (out / "capture.pcapng").exists()
    assert (out / "notes.txt").read_text() == "mine"
    # An empty folder is fine without --force.
    (tmp_path / "empty").mkdir()
    assert run_cli("run", "--out", str(tmp_path / "empty"), "--set", "duration=5s").code == 0


def test_run_out_to_a_file_is_an_error(run_cli, fake: ModuleType, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    outcome = run_cli("run", "--out", str(blocker / "sub"))
    assert_one_line_error(outcome, f"--out {blocker / 'sub'}: cannot write")


def test_native_value_error_is_bad_input(run_cli, fake: ModuleType, monkeypatch) -> None:
    def reject(config_json: str, trace: bool, **_: object) -> None:
        raise ValueError("paths[0].down.rate_bps: too\nlarge")

    monkeypatch.setattr(fake, "run", reject)
    # One line, naming the scenario file's key, not the core's (errors.toml_keys).
    assert_one_line_error(run_cli("run"), "error: path[0].rate: too large")


def test_internal_error_exits_1(run_cli, fake: ModuleType, monkeypatch) -> None:
    def explode(config_json: str, trace: bool, **_: object) -> None:
        raise RuntimeError("scheduler exploded")

    monkeypatch.setattr(fake, "run", explode)
    outcome = run_cli("run")
    assert_one_line_error(outcome, "error: internal: scheduler exploded", code=1)


def test_schedulers_lists_one_per_entry_within_100_columns(run_cli, fake: ModuleType) -> None:
    outcome = run_cli("schedulers")
    assert outcome.code == 0
    lines = outcome.out.splitlines()
    names = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert names == ["default", "minrtt", "rr"]
    assert all(len(line) <= 100 for line in lines)
    listed = run_cli("schedulers", "--json").json()
    assert [entry["name"] for entry in listed] == names
    assert all(entry["source"] == "builtin" for entry in listed)


def test_bench(run_cli, fake: ModuleType) -> None:
    outcome = run_cli("bench", "--json", "--seconds", "2")
    assert outcome.code == 0, outcome
    report = outcome.json()
    assert report["sim_s"] == 2.0
    assert report["loop_wall_s"] == 0.01
    assert report["events_per_s"] == pytest.approx(1001 / 0.01)
    assert report["sim_s_per_wall_s"] == pytest.approx(200.0)
    assert report["heap_mevents_per_s"] == 50.0
    assert report["sim_s_per_wall_s_per_heap_mevents"] == pytest.approx(4.0)
    assert fake.calls[-1]["duration_ns"] == 2 * 10**9
    readable = run_cli("bench", "--seconds", "1.5")
    assert readable.code == 0
    assert "events/s" in readable.out
    assert fake.calls[-1]["duration_ns"] == 1_500_000_000

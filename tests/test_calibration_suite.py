"""``mpsched calibrate --suite``: the suite file's checks, the verdicts, and a re-simulated report
that keeps its own settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mpsched.cli import cli
from mpsched.sweepfile import Point
from mpsched.testbed import calibrate, load_target, missing_capabilities
from mpsched.testbed.calibrate import aggregate
from mpsched.testbed.kernel import TestbedError
from mpsched.testbed.suite import load_suite, run_suite, verdicts

from .conftest import ROOT
from .kernel_testbed import MISSING

_MISSING_MPTCP = MISSING or missing_capabilities("mptcp")
needs_mptcp = pytest.mark.skipif(
    _MISSING_MPTCP is not None, reason=f"kernel MPTCP testbed unavailable: {_MISSING_MPTCP}"
)


def _summary(goodput: float, retx: dict[str, int]) -> dict[str, Any]:
    return {
        "goodput_mbps": goodput,
        "subflows": [{"name": n, "retransmits": r, "share": 0.5} for n, r in retx.items()],
    }


def _report(
    pairs: list[tuple[dict[str, int], dict[str, int]]],
    again: list[dict[str, int]] | None = None,
) -> dict[str, Any]:
    """One point, one repetition per pair of (kernel, model) retransmissions per path, and
    the kernel's second runs of the repetitions if ``again``."""
    runs = {}
    for rep, (k, m) in enumerate(pairs):
        sides = [("kernel", k), ("sim", m)] + ([("kernel-again", again[rep])] if again else [])
        for side, retx in sides:
            runs[f"g|p|{rep}|{side}"] = {
                "group": "g",
                "point": "p",
                "rep": rep,
                "side": side,
                "summary": _summary(50.0, retx),
            }
    return {"rows": aggregate([Point("g", "p", {})], runs), "runs": runs}


@pytest.mark.parametrize(
    ("kernel", "model", "agree"),
    [
        (10, 20, True),  # 2x
        (10, 21, False),  # beyond 2x and beyond 5 segments
        (1, 6, True),  # 6x, but 5 segments apart
        (0, 6, False),
        (651, 8, False),  # the spurious timeout of the 200 ms / 500 ms point
    ],
)
def test_retransmissions_agree_within_2x_or_5_segments(kernel: int, model: int, agree: bool):
    [point] = verdicts(_report([({"wifi": kernel}, {"wifi": model})]))
    assert point["retx_agree"] is agree and point["retx_agree_first"] is agree
    assert point["goodput_agrees"] and point["ratio"] == pytest.approx(1.0)


def test_every_repetition_and_path_counts_and_the_worst_is_shown():
    [point] = verdicts(
        _report(
            [
                ({"wifi": 10, "lte": 10}, {"wifi": 12, "lte": 9}),
                ({"wifi": 10, "lte": 100}, {"wifi": 11, "lte": 30}),
            ]
        )
    )
    assert not point["retx_agree"] and point["retx_pairs"] == 4
    assert point["retx_worst"] == {
        "rep": 1,
        "path": "lte",
        "kernel": 100,
        "kernel_runs": [100],
        "model": 30,
        "factor": pytest.approx(100 / 30),
        "first": False,
        "agree": False,
    }


@pytest.mark.parametrize(
    ("first", "again", "model", "agree"),
    [
        # 200 ms / 50 ms, seed 1, 30 s: the kernel's runs gave LTE 104, 694, 956, 1,084
        # and 84 retransmissions (slow start's overshoot); the model 774.
        (104, 694, 774, True),
        (104, 84, 774, False),
        (104, 694, 1400, False),  # beyond 2x of the largest
        (104, 694, 40, False),  # beyond 2x of the smallest
        (694, 104, 52, True),  # the second run is the smaller
        (0, 30, 40, True),  # 0 to 30 in the range: 40 is within 2x of 30
        (0, 30, 61, False),
    ],
)
def test_the_kernel_s_second_run_of_a_seed_widens_only_the_second_verdict(
    first: int, again: int, model: int, agree: bool
):
    """The goodput statistics and the first verdict ignore the second run."""
    report = _report([({"lte": first}, {"lte": model})], again=[{"lte": again}])
    [point] = verdicts(report)
    assert point["retx_agree"] is agree and not point["retx_agree_first"]
    assert point["retx_worst"]["kernel_runs"] == [first, again]
    assert point["kernel"]["n"] == 1 and report["rows"][0]["kernel"]["retransmits"]["n"] == 1


def test_the_suite_file_names_its_bad_key(tmp_path: Path):
    suite = tmp_path / "suite.toml"
    (tmp_path / "sweep.toml").write_text("")
    cases = {
        '[[report]]\nname = "a"\ntarget = "sweep.toml"\nout = "a"\nrepeats = 3\n': r"report\[0\]"
        ".*repeats",
        '[[report]]\nname = "a"\ntarget = "missing.toml"\nout = "a"\n': r"report\[0\]\.target",
        '[[report]]\nname = "a"\ntarget = "sweep.toml"\nout = "a"\n'
        '[[report]]\nname = "a"\ntarget = "sweep.toml"\nout = "b"\n': r"report\[1\]\.name",
        '[[report]]\nname = "a"\ntarget = "sweep.toml"\nout = "a"\nrepetitions = 0\n': r"report"
        r"\[0\]\.repetitions",
        "title = 'x'\n": "unknown key",
    }
    for text, pattern in cases.items():
        suite.write_text(text)
        with pytest.raises(TestbedError, match=pattern):
            load_suite(suite)


def test_the_suite_says_its_settings_itself():
    result = CliRunner().invoke(
        cli, ["calibrate", "--suite", str(ROOT / "docs/calibration/suite.toml"), "--out", "x"]
    )
    assert result.exit_code == 2 and "--out" in result.output, result.output


def test_the_suite_lists_the_reports_it_publishes():
    entries = load_suite(ROOT / "docs/calibration/suite.toml")
    for e in entries:
        report = json.loads((e.out / "report.json").read_text())
        assert report["meta"]["overrides"].get("duration") == e.duration, e.name


@needs_mptcp
def test_a_re_simulated_report_keeps_its_duration(tmp_path: Path):
    """A 2-s report re-simulated without --duration simulates 2 s (not the scenario's 60 s);
    asked for another duration it refuses to mix them; the suite writes its verdicts."""
    scenario = ROOT / "scenarios" / "stms-lab.toml"
    sweep = load_target(scenario)
    [point] = sweep.points
    out = tmp_path / "report"
    out.mkdir()
    kernel = {
        "group": point.group,
        "point": point.name,
        "overrides": {},
        "rep": 0,
        "seed": 1,
        "side": "kernel",
        "summary": _summary(56.0, {"wifi": 3, "lte": 4}),
    }
    state = {
        "meta": {"overrides": {"duration": "2s"}, "repetitions": 1, "kernel": "6.18"},
        "runs": {f"{point.group}|{point.name}|0|kernel": kernel},
    }
    (out / "report.json").write_text(json.dumps(state))
    report = calibrate(sweep, out, rerun_sim=True)
    [sim] = [r for r in report["runs"].values() if r["side"] == "sim"]
    assert sim["summary"]["duration_s"] == pytest.approx(2.0)
    assert report["meta"]["overrides"] == {"duration": "2s"}
    with pytest.raises(TestbedError, match="duration"):
        calibrate(sweep, out, rerun_sim=True, overrides={"duration": "5s"})

    suite = tmp_path / "suite.toml"
    suite.write_text(f'[[report]]\nname = "tiny"\ntarget = "{scenario}"\nout = "report"\n')
    result = run_suite(suite, resume=True)
    [tiny] = result["reports"]
    assert tiny["report"] == "report/report.md"
    [p] = tiny["points"]
    assert p["kernel"]["mean"] == 56.0 and p["model"]["n"] == 1
    assert "## tiny" in (tmp_path / "suite.md").read_text()
    assert json.loads((tmp_path / "suite.json").read_text())["reports"][0]["name"] == "tiny"

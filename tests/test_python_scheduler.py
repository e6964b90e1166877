"""Schedulers written in Python run through the same interface as the Rust ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mpsched
from mpsched.errors import ScenarioError
from mpsched.scheduler import MinRtt

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _comparable(summary: dict) -> str:
    summary = dict(summary)
    summary.pop("wall_s")
    summary.pop("scheduler")
    return json.dumps(summary, sort_keys=True)


def test_python_minrtt_equals_rust_minrtt_exactly() -> None:
    rust = mpsched.run(duration="10s", seed=5, scheduler="minrtt")
    python = mpsched.run(duration="10s", seed=5, scheduler=MinRtt())
    assert python.summary["goodput_mbps"] > 40
    assert _comparable(rust.summary) == _comparable(python.summary)


def test_module_class_reference_from_the_api_and_the_command_line() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        r = mpsched.run(duration="5s", scheduler="fastest_first:FastestFirst", trace=True)
    finally:
        sys.path.remove(str(EXAMPLES))
    assert r.summary["scheduler"] == "fastest_first:FastestFirst"
    assert r.summary["goodput_mbps"] > 20
    # The scheduler's recorded values are in the traces.
    keys = set(r.table("scheduler").column("key").to_pylist())
    assert keys <= {"slow_sends"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpsched",
            "run",
            "--json",
            "--set",
            "duration=3s",
            "--scheduler",
            "fastest_first:FastestFirst",
        ],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scheduler"] == "fastest_first:FastestFirst"


class _Broken:
    def next(self, ctx):
        return (ctx.data_una, 7)  # there is no subflow 7


class _Raises:
    def next(self, ctx):
        raise ZeroDivisionError("boom")


def test_a_bad_decision_or_an_exception_stops_the_run_with_that_error() -> None:
    with pytest.raises(ValueError, match="no subflow 7"):
        mpsched.run(duration="2s", scheduler=_Broken())
    with pytest.raises(ZeroDivisionError, match="boom"):
        mpsched.run(duration="2s", scheduler=_Raises())


def test_unknown_module_is_bad_input() -> None:
    with pytest.raises(ScenarioError, match=r"connection\.scheduler"):
        mpsched.run(duration="2s", scheduler="no_such_module_xyz:Thing")
    out = subprocess.run(
        [sys.executable, "-m", "mpsched", "run", "--scheduler", "no_such_module_xyz:Thing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "connection.scheduler" in out.stderr and "Traceback" not in out.stderr


def test_a_file_reference_runs_from_any_directory(tmp_path: Path) -> None:
    reference = f"{EXAMPLES / 'fastest_first.py'}:FastestFirst"
    out = subprocess.run(
        [sys.executable, "-m", "mpsched", "run", "--json", "--set", "duration=3s",
         "--scheduler", reference],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scheduler"] == reference
    with pytest.raises(mpsched.ScenarioError, match=r"cannot import 'nope\.py': no such file"):
        mpsched.run(duration="1s", scheduler="nope.py:X")
    with pytest.raises(mpsched.ScenarioError, match="has no 'Nope'"):
        mpsched.run(duration="1s", scheduler=f"{EXAMPLES / 'fastest_first.py'}:Nope")

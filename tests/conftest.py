"""Shared fixtures: the CLI runners, the real native module and a fake one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

try:  # a source checkout without `pip install -e .`: import the package from python/
    import mpsched  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "python"))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )

from mpsched import api, cli  # noqa: E402
from mpsched.scenario import model as scenario_model  # noqa: E402

from . import fake_native  # noqa: E402


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run_subprocess(*args: str, cwd: Path | None = None) -> Outcome:
    """Run ``python -m mpsched ARGS`` in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "mpsched", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def run_experiment(script: str, *args: str) -> str:
    """Run ``docs/experiments/SCRIPT ARGS`` in a fresh interpreter; its standard output
    (a failure raises, with the script's error)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "docs" / "experiments" / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run the CLI in this process (fast); returns an :class:`Outcome`."""

    def invoke(*args: str) -> Outcome:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(list(args))
        captured = capsys.readouterr()
        code = exit_info.value.code
        return Outcome(code if isinstance(code, int) else 1, captured.out, captured.err)

    return invoke


@pytest.fixture
def native() -> ModuleType:
    """The real compiled simulator (built by `pip install -e .`)."""
    from mpsched import _native

    return _native


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """Replace the native module by a small pure-Python fake (tests of the Python layer alone)."""
    monkeypatch.setattr(api, "native", lambda: fake_native)
    monkeypatch.setattr(
        scenario_model,
        "_scheduler_names",
        lambda: tuple(entry[0] for entry in fake_native.schedulers()),
    )
    fake_native.calls.clear()
    yield fake_native


@pytest.fixture
def scenario_with_knobs(monkeypatch: pytest.MonkeyPatch):
    """``with_knobs(knobs)``: the package ``mpsched.scenario`` imported afresh, with its link
    models built from ``knobs`` (``contract.LinkKnob``s) instead of the native module's link
    knobs: what Python makes of the contract after a knob is added in Rust or removed. The
    package imported before is back after the test."""
    import importlib

    import mpsched
    from mpsched import contract

    def with_knobs(knobs: object) -> ModuleType:
        monkeypatch.setattr(contract, "link_knobs", lambda: tuple(knobs))  # type: ignore[arg-type]
        monkeypatch.setattr(mpsched, "scenario", importlib.import_module("mpsched.scenario"))
        for name in [n for n in sys.modules if n.split(".")[:2] == ["mpsched", "scenario"]]:
            monkeypatch.delitem(sys.modules, name)
        return importlib.import_module("mpsched.scenario")

    return with_knobs


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a child the test will Ctrl-C: a background job of a shell without job
    control (a CI script started with ``&``) runs with SIGINT ignored, and a child inherits
    that, so a SIGINT would never reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

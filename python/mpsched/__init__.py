"""mpsched: a fast, deterministic multipath TCP simulator for studying packet schedulers.

>>> import mpsched
>>> result = mpsched.run(seed=2, duration="10s", **{"path.lte.rtt": "200ms"})
>>> result.summary["goodput_mbps"]  # doctest: +SKIP
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .api import Result, SchedulerInfo, load_result, run, schedulers
from .errors import ScenarioError
from .scenario import Scenario, load, to_native
from .transport import get, serve

try:
    __version__ = version("mpsched")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Result",
    "Scenario",
    "ScenarioError",
    "SchedulerInfo",
    "__version__",
    "get",
    "load",
    "load_result",
    "run",
    "schedulers",
    "serve",
    "to_native",
]

"""mpsched: a fast, deterministic multipath TCP simulator for studying packet schedulers.

>>> import mpsched
>>> result = mpsched.run(seed=2, duration="10s", **{"path.lte.rtt": "200ms"})
>>> result.summary["goodput_mbps"]  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import ScenarioError

if TYPE_CHECKING:
    from .api import Result, SchedulerInfo, load_result, run, schedulers
    from .scenario import Scenario, load, to_native
    from .transport import get, serve

# Each public name's module, imported on first use: `mpsched serve` and `get` start without
# the simulator's API and the scenario models (0.55 CPU-s a process, beside a transfer's 2-3
# CPU-s per GB).
_LAZY = {
    "Result": "api",
    "SchedulerInfo": "api",
    "load_result": "api",
    "run": "api",
    "schedulers": "api",
    "Scenario": "scenario",
    "load": "scenario",
    "to_native": "scenario",
    "get": "transport",
    "serve": "transport",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("mpsched")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            value = "0.0.0+unknown"
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'mpsched' has no attribute {name!r}")
    globals()[name] = value
    return value


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

"""Schedulers written in Python.

A scheduler is an object with a ``next(ctx)`` method, called whenever some subflow may send.
``ctx`` (a :class:`mpsched._native.SchedContext`, valid only during the call) offers the same
views as the Rust interface: ``ctx.subflows`` (each with ``id``, ``available``, ``cwnd``,
``in_flight``, ``cwnd_space``, ``srtt_ns``, ``delivery_rate_bps``, ``ca_state``...: every
attribute is in the stub's ``SubflowView`` and in docs/schedulers.md, both written from the
core's declaration by ``python -m mpsched.docgen``),
the unsent data (``first_unsent()``, ``unsent(limit)``), the window (``in_window(dseq)``,
``window_bytes``), what was sent where (``sent_on(dseq)``), the reinjection queue, and two
actions: ``penalize(subflow)`` and ``record(key, value)`` (a value over time in the traces).

``next`` returns ``None`` to send nothing now, ``(dseq, subflow)``, or ``(dseq, [subflows])``
to send one segment on several subflows; a third element may name the reason ("new",
"reinjection", "opportunistic", "redundant"). An optional ``on_data_ack(now_ns, acked,
left_edge_subflows)`` sees every Data ACK that advances.

Run one by name: ``mpsched run --scheduler mymodule:MyScheduler`` (the module is imported from
the current directory or ``sys.path``), ``--scheduler path/to/file.py:MyScheduler`` (a file
anywhere), or ``mpsched.run(scheduler=MyScheduler())``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .errors import ScenarioError

Decision = tuple[int, int] | tuple[int, list[int]] | tuple[int, Any, str] | None


class Scheduler(Protocol):
    """What a Python scheduler implements (``on_data_ack`` is optional)."""

    def next(self, ctx: Any) -> Decision: ...


class MinRtt:
    """LowRTT in Python: the same decisions as the Rust ``minrtt``, as a worked example."""

    def next(self, ctx: Any) -> Decision:
        subflows = ctx.subflows
        for dseq in ctx.reinject_queue():  # reinjections first, on a subflow without a copy
            sf = lowest_rtt(subflows, exclude=set(ctx.sent_on(dseq)))
            if sf is not None:
                return (dseq, sf, "reinjection")
        dseq = ctx.first_unsent()
        if dseq is None or not ctx.in_window(dseq):
            return None
        sf = lowest_rtt(subflows, exclude=set())
        return None if sf is None else (dseq, sf)


def lowest_rtt(subflows: list[Any], exclude: set[int]) -> int | None:
    """The available subflow with the smallest srtt (regular before backup), or None."""
    for backup in (False, True):
        usable = [s for s in subflows if s.available and s.backup == backup and s.id not in exclude]
        if usable:
            return min(usable, key=lambda s: (s.srtt_ns, s.id)).id
    return None


def is_reference(name: str) -> bool:
    """Whether a scheduler name refers to Python code (``module:Class``)."""
    return ":" in name


def _import_file(path: Path) -> ModuleType:
    """The Python file at ``path`` as a module (its folder need not be on ``sys.path``)."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file {str(path)!r}")
    name = f"mpsched_user_{path.stem}_{zlib.crc32(str(path.resolve()).encode()):08x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load(reference: str) -> Any:
    """Imports ``module:Class`` or ``path/to/file.py:Class`` and returns an instance; errors
    name the scheduler."""
    module_name, _, attr = reference.rpartition(":")
    if not module_name or not attr:
        raise ScenarioError(
            f"connection.scheduler: expected module:Class or FILE.py:Class, got {reference!r}"
        )
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        if module_name.endswith(".py"):
            module = _import_file(Path(module_name))
        else:
            module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any import error is bad input
        raise ScenarioError(f"connection.scheduler: cannot import {module_name!r}: {exc}") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ScenarioError(
            f"connection.scheduler: module {module_name!r} has no {attr!r}"
        ) from None
    instance = obj() if isinstance(obj, type) else obj
    if not callable(getattr(instance, "next", None)):
        raise ScenarioError(f"connection.scheduler: {reference} has no next(ctx) method")
    return instance

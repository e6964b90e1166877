"""Schedulers written in Python.

A scheduler is an object with a ``next(ctx)`` method, called whenever some subflow may send.
``ctx`` (a :class:`mpsched._native.SchedContext`, valid only during the call) offers the same
views as the Rust interface: ``ctx.subflows`` (each with ``id``, ``available``, ``cwnd``,
``in_flight``, ``cwnd_space``, ``srtt_ns``, ``rttvar_ns``, ``min_rtt_ns``,
``delivery_rate_bps``, ``pacing_rate_bps``, ``packets_out``, ``backup``, ``ca_state``...),
the unsent data (``first_unsent()``, ``unsent(limit)``), the window (``in_window(dseq)``,
``window_bytes``), what was sent where (``sent_on(dseq)``), the reinjection queue, and two
actions: ``penalize(subflow)`` and ``record(key, value)`` (a value over time in the traces).

``next`` returns ``None`` to send nothing now, ``(dseq, subflow)``, or ``(dseq, [subflows])``
to send one segment on several subflows; a third element may name the reason ("new",
"reinjection", "opportunistic", "redundant"). An optional ``on_data_ack(now_ns, acked,
left_edge_subflows)`` sees every Data ACK that advances.

Run one by name: ``mpsched run --scheduler mymodule:MyScheduler`` (the module is imported from
the current directory or ``sys.path``), or ``mpsched.run(scheduler=MyScheduler())``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
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


def load(reference: str) -> Any:
    """Imports ``module:Class`` and returns an instance; errors name the scheduler."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise ScenarioError(f"connection.scheduler: expected module:Class, got {reference!r}")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
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

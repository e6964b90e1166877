"""The validated scenario as the native contract's normalized dict (``mpsched._native.run``)."""

from __future__ import annotations

import random
from typing import Any

from .. import mahimahi
from ..units import QueueLimit
from . import knobs
from .model import (
    GilbertElliott,
    LinkKeys,
    PathSpec,
    Scenario,
    ScheduleEntry,
    resolve_delays,
)

__all__ = ["draw_size", "to_native"]


def _link(
    rate: int,
    delay: int,
    loss: tuple[float, float | None, GilbertElliott | None],
    queue: QueueLimit,
    knob_values: dict[str, Any],
    reorder: bool,
) -> dict[str, Any]:
    mean, burst, chain = loss
    link: dict[str, Any] = {
        "rate_bps": rate,
        "delay_ns": delay,
        "loss": mean,
        "queue": queue.to_native(),
        # The link knobs (`jitter_ns`, ...), each in both directions: derived from the contract.
        **knob_values,
    }
    # Only when set: independent loss keeps the normalized scenario it always had.
    if burst is not None:
        link["loss_burst"] = burst
    if chain is not None:
        link["gilbert_elliott"] = chain.model_dump()
    if reorder:
        link["reorder"] = True
    return link


def _schedule(entry: ScheduleEntry, after_gone: bool) -> dict[str, Any]:
    up, down = resolve_delays(entry.rtt, entry.delay_up, entry.delay_down, partial=True)
    change: dict[str, Any] = {
        "at_ns": entry.at,
        "rate_bps": entry.rate,
        "delay_down_ns": down,
        "delay_up_ns": up,
        "jitter_down_ns": entry.jitter,
        "jitter_up_ns": entry.jitter_up,
    }
    if entry.state == "gone":
        change["present"] = False
    elif entry.state is not None:
        change["up"] = entry.state == "up"
    if entry.state == "up" and after_gone:
        change["present"] = True
    return change


def _schedules(path: PathSpec) -> list[dict[str, Any]]:
    """The path's changes in time order; an `up` after `gone` brings the address back too."""
    out, gone = [], False
    for entry in sorted(path.schedule, key=lambda e: e.at):
        out.append(_schedule(entry, gone))
        if entry.state is not None:
            gone = entry.state == "gone"
    return out


def _traced(link: dict[str, Any], file: str | None, key: str) -> dict[str, Any]:
    """A direction whose capacity is a Mahimahi trace: its opportunities, and its mean rate
    (for queue limits in time)."""
    if file is not None:
        ms = mahimahi.read(file, key=key)
        link["trace_ms"] = ms
        link["rate_bps"] = mahimahi.mean_rate_bps(ms)
    return link


def _directions(path: LinkKeys, table: str) -> dict[str, Any]:
    """A link's two directions, as the native contract's ``down`` and ``up``."""
    up_delay, down_delay = path.delays()
    rate = path.rate or 1  # a traced direction's rate is the trace's (below)
    down = _link(
        rate,
        down_delay,
        (path.loss, path.loss_burst, path.gilbert_elliott),
        path.queue,
        knobs.native(path, up=False),
        path.reorder,
    )
    up = _link(
        path.rate_up if path.rate_up is not None else rate,
        up_delay,
        (path.ack_loss, path.ack_loss_burst, path.ack_gilbert_elliott),
        path.queue_up if path.queue_up is not None else path.queue,
        knobs.native(path, up=True),
        path.reorder,
    )
    if path.aqm != "droptail":
        for link in (down, up):
            link[path.aqm] = {"target_ns": path.codel_target, "interval_ns": path.codel_interval}
    return {
        "name": path.name,
        "down": _traced(down, path.trace, f"{table}.{path.name}.trace"),
        "up": _traced(up, path.trace_up, f"{table}.{path.name}.trace_up"),
    }


def _path(path: PathSpec, links: list[str]) -> dict[str, Any]:
    return {
        **_directions(path, "path"),
        "schedule": _schedules(path),
        **({"backup": True} if path.backup else {}),
        # Only when set: paths of their own keep the normalized scenario they always had.
        **({"via": [links.index(name) for name in path.via]} if path.via else {}),
    }


def draw_size(rng: random.Random, mean: int, shape: float) -> int:
    """A Pareto-distributed size in bytes of the given mean and shape (at least 1)."""
    scale = mean * (shape - 1.0) / shape
    return max(1, round(scale * rng.paretovariate(shape)))


def _flows(scenario: Scenario, rng: random.Random, paths: list[str]) -> list[dict[str, Any]]:
    """The competing flows, one entry per connection, with their paths as indices."""
    connection = scenario.connection
    main_names = connection.paths or [p.name for p in scenario.path]
    out = []
    for flow in scenario.flow:
        protocol = flow.protocol or connection.protocol
        names = flow.paths or main_names
        if protocol == "tcp":
            names = names[:1]
        scheduler = flow.scheduler or connection.scheduler
        params = (
            flow.scheduler_params
            if flow.scheduler_params is not None
            else (connection.scheduler_params if flow.scheduler is None else {})
        )
        start = flow.start
        for i in range(flow.count):
            size = flow.size
            if size is not None and flow.size_dist == "pareto":
                size = draw_size(rng, size, flow.pareto_shape)
            if flow.start_dist == "poisson":
                if i > 0:
                    start += round(rng.expovariate(1.0 / flow.interval))
            else:
                start = flow.start + i * flow.interval
            out.append(
                {
                    "start_ns": start,
                    "protocol": protocol,
                    "scheduler": scheduler if protocol == "mptcp" else "minrtt",
                    "scheduler_params": dict(params) if protocol == "mptcp" else {},
                    "congestion": flow.congestion or connection.congestion,
                    "size_bytes": size,
                    "paths": [paths.index(n) for n in names],
                }
            )
    return out


def to_native(scenario: Scenario) -> dict[str, Any]:
    """The normalized scenario of the native contract (integers in ns, bytes and bits/s).

    File sizes drawn from a distribution come from ``random.Random(seed)``: the main
    connection's first, then each competing flow's in order.
    """
    connection = scenario.connection
    rng = random.Random(scenario.seed)  # noqa: S311 - reproducible sizes, not secrets
    workload: dict[str, Any] = {"kind": scenario.workload.kind}
    if scenario.workload.kind == "rate":
        workload["rate_bps"] = scenario.workload.rate
        workload["block_bytes"] = scenario.workload.block
        workload["warmup_ns"] = scenario.workload.warmup
    if scenario.workload.kind == "file":
        size = scenario.workload.size
        assert size is not None
        if scenario.workload.size_dist == "pareto":
            size = draw_size(rng, size, scenario.workload.pareto_shape)
        workload["size_bytes"] = size
    main = scenario.selected_paths()
    links = [link.name for link in scenario.link]
    native_paths = [_path(p, links) for p in main]
    extra: dict[str, Any] = {}
    if any(flow.count for flow in scenario.flow):
        # The main connection's paths first (its subflow i on path i), then the others.
        others = [p for p in scenario.path if p.name not in {m.name for m in main}]
        native_paths += [_path(p, links) for p in others]
        names = [p["name"] for p in native_paths]
        extra = {"main_paths": len(main), "flows": _flows(scenario, rng, names)}
    return {
        "duration_ns": scenario.duration,
        "seed": scenario.seed,
        "protocol": connection.protocol,
        "scheduler": connection.scheduler,
        "scheduler_params": dict(connection.scheduler_params),
        "congestion": connection.congestion,
        "sndbuf_bytes": connection.sndbuf,
        "sndbuf_autotune": connection.sndbuf_autotune,
        "rcvbuf_bytes": connection.rcvbuf,
        "rcvbuf_initial_bytes": connection.rcvbuf_initial,
        "rcvbuf_autotune": connection.rcvbuf_autotune,
        "window_ratio": connection.window_ratio,
        "stack": connection.stack,
        "loss_recovery": connection.loss_recovery,
        "join": connection.join,
        "timer_hz": connection.timer_hz,
        "timer_phase_ns": connection.timer_phase,
        "workload": workload,
        "write_chunk_bytes": None
        if scenario.workload.write_chunk == "fill"
        else scenario.workload.write_chunk,
        "paths": native_paths,
        **extra,
        **({"links": [_directions(link, "link") for link in scenario.link]} if links else {}),
    }

"""Exceptions raised by mpsched."""

from __future__ import annotations

import re

__all__ = ["ScenarioError", "toml_keys"]


class ScenarioError(ValueError):
    """Invalid input: a scenario, an override or a command-line value.

    The message is a single line that starts with the offending field, e.g.
    ``path[1].rate ('lte'): rate must be > 0, got '-5Mbps'``.
    """

    def __init__(self, message: object = "") -> None:
        # A key or value from the input may hold a line break; escaped, the message stays the
        # one line a log, a sweep's journal or `error: ...` expects.
        text = str(message).replace("\r", "\\r").replace("\n", "\\n")
        super().__init__(text)


# The core's normalized keys and the scenario file's (python/mpsched/scenario/native.py writes
# the one from the other): a message from the core names what the user wrote. The link knobs'
# (`jitter_ns`: `jitter`, `jitter_up`) are derived from the contract, as their keys are
# (python/mpsched/scenario/knobs.py).
_LINK = {
    "down": {
        "rate_bps": "rate",
        "delay_ns": "delay_down",
        "loss": "loss",
        "loss_burst": "loss_burst",
        "gilbert_elliott": "gilbert_elliott",
        "queue": "queue",
        "reorder": "reorder",
        "trace_ms": "trace",
        "codel": "aqm",
        "fq_codel": "aqm",
    },
    "up": {
        "rate_bps": "rate_up",
        "delay_ns": "delay_up",
        "loss": "ack_loss",
        "loss_burst": "ack_loss_burst",
        "gilbert_elliott": "ack_gilbert_elliott",
        "queue": "queue_up",
        "reorder": "reorder",
        "trace_ms": "trace_up",
        "codel": "aqm",
        "fq_codel": "aqm",
    },
}
_CHANGE = {
    "at_ns": "at",
    "rate_bps": "rate",
    "delay_down_ns": "delay_down",
    "delay_up_ns": "delay_up",
    "jitter_down_ns": "jitter",
    "jitter_up_ns": "jitter_up",
    "present": "state",
    "up": "state",
}
_TOP = {
    "duration_ns": "duration",
    "sndbuf_bytes": "connection.sndbuf",
    "sndbuf_autotune": "connection.sndbuf_autotune",
    "rcvbuf_bytes": "connection.rcvbuf",
    "rcvbuf_initial_bytes": "connection.rcvbuf_initial",
    "rcvbuf_autotune": "connection.rcvbuf_autotune",
    "window_ratio": "connection.window_ratio",
    "timer_hz": "connection.timer_hz",
    "timer_phase_ns": "connection.timer_phase",
    "congestion": "connection.congestion",
    "loss_recovery": "connection.loss_recovery",
    "write_chunk_bytes": "workload.write_chunk",
    "main_paths": "connection.paths",
    "workload.rate_bps": "workload.rate",
    "workload.block_bytes": "workload.block",
    "workload.size_bytes": "workload.size",
}
_PATH_LINK = re.compile(r"\b(paths|links)\[(\d+)\]\.(down|up)\.([a-z_]+)")
_PATH_CHANGE = re.compile(r"\bpaths\[(\d+)\]\.schedule\[(\d+)\]\.([a-z_]+)")
_FLOW = re.compile(r"\bflows\[(\d+)\]\.([a-z_]+)")
_REST = re.compile(r"\b(paths|links)\[(\d+)\]")
_TOP_KEY = re.compile(r"^(" + "|".join(re.escape(k) for k in _TOP) + r")\b")


def toml_keys(message: str) -> str:
    """A message from the core with its normalized keys (``paths[0].down.jitter_ns``) written
    as the scenario file's (``path[0].jitter``)."""

    from .scenario.knobs import toml_names

    names = {d: {**_LINK[d], **toml_names(up=d == "up")} for d in _LINK}

    def link(m: re.Match[str]) -> str:
        table, i, direction, key = m.groups()
        return f"{table[:-1]}[{i}].{names[direction].get(key, key)}"

    message = _PATH_LINK.sub(link, message)
    message = _PATH_CHANGE.sub(
        lambda m: f"path[{m[1]}].schedule[{m[2]}].{_CHANGE.get(m[3], m[3])}", message
    )
    message = _FLOW.sub(
        lambda m: f"flow[{m[1]}].{ {'size_bytes': 'size', 'start_ns': 'start'}.get(m[2], m[2]) }",
        message,
    )
    message = _REST.sub(lambda m: f"{m[1][:-1]}[{m[2]}]", message)
    return _TOP_KEY.sub(lambda m: _TOP[m[1]], message)

"""A pure-Python stand-in for ``mpsched._native`` that follows the contract in _native.pyi.

It does not simulate anything: it checks the normalized scenario it gets, and returns a summary
and traces whose values are derived from it, so that the Python layer (CLI, API, tables, output
files) can be tested on its own.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__version__ = "0.0.0-fake"
calls: list[dict[str, Any]] = []

_KEYS = {
    "duration_ns",
    "seed",
    "protocol",
    "scheduler",
    "scheduler_params",
    "congestion",
    "sndbuf_bytes",
    "sndbuf_autotune",
    "rcvbuf_bytes",
    "rcvbuf_initial_bytes",
    "rcvbuf_autotune",
    "window_ratio",
    "workload",
    "paths",
}


def schedulers() -> list[tuple[str, str, str, list[str]]]:
    return [
        ("default", "lowest smoothed RTT with free window first", "builtin", []),
        ("minrtt", "lowest RTT first", "builtin", []),
        ("rr", "round robin", "builtin", []),
    ]


def bench_event_queue(events: int, pending: int) -> float:
    return 50.0


def _columns(n: int, spec: dict[str, str]) -> dict[str, tuple[str, bytes]]:
    dtypes = {"i64": "<i8", "u64": "<u8", "u32": "<u4", "u16": "<u2", "u8": "u1", "f64": "<f8"}
    return {
        name: (dtype, np.arange(n, dtype=dtypes[dtype]).tobytes()) for name, dtype in spec.items()
    }


def run(
    config_json: str,
    trace: bool = False,
    sink: Any = None,
    sample_interval_ns: int = 10_000_000,
    chunk_rows: int = 65_536,
    scheduler: object | None = None,
    progress: object | None = None,
) -> tuple[str, dict[str, Any] | None]:
    config = json.loads(config_json)
    calls.append(config)
    missing = _KEYS - set(config)
    if missing:
        raise ValueError(f"{sorted(missing)[0]}: missing")
    seconds = config["duration_ns"] / 1e9
    rate = sum(p["down"]["rate_bps"] for p in config["paths"]) / 1e6
    summary = {
        "goodput_mbps": rate * 0.9,
        "bytes_delivered": int(rate * 0.9 * seconds * 1e6 / 8),
        "duration_s": seconds,
        "completion_s": None if config["workload"]["kind"] == "bulk" else seconds / 2,
        "events": 1000 + config["seed"],
        "wall_s": 0.01,
        "data_packets": 100,
        "protocol": config["protocol"],
        "scheduler": config["scheduler"],
        "congestion": config["congestion"],
        "seed": config["seed"],
        "ooo_delay_ms": {"mean": 1.0, "p50": 0.5, "p99": 9.0, "max": 12.0},
        "data_ack_step_segments": {"mean": 1.5, "p99": 4.0, "max": 8},
        "opportunistic_retransmits": 0,
        "reinjections": 0,
        "penalizations": 0,
        "future_key": "ignored",
        "subflows": [
            {
                "name": p["name"],
                "bytes_sent": 1000,
                "packets_sent": 1,
                "goodput_mbps": p["down"]["rate_bps"] / 1e6 * 0.9,
                "retransmits": 0,
                "rtos": 0,
                "queue_drops": 0,
                "random_drops": 0,
                "srtt_ms": 2 * p["down"]["delay_ns"] / 1e6,
                "min_rtt_ms": 2 * p["down"]["delay_ns"] / 1e6,
                "mean_free_cwnd_at_ack": 1.0,
                "peak_free_cwnd_at_ack": 4,
            }
            for p in config["paths"]
        ],
    }
    traces = None
    if trace:
        traces = {
            "segments": _columns(
                5,
                {
                    "dseq": "u64",
                    "len_bytes": "u16",
                    "subflow": "u8",
                    "transmissions": "u8",
                    "t_first_sent_ns": "i64",
                    "t_first_received_ns": "i64",
                    "t_delivered_ns": "i64",
                },
            ),
            "acks": _columns(
                3,
                {
                    "t_ns": "i64",
                    "subflow": "u8",
                    "data_ack_bytes": "u64",
                    "data_ack_step_bytes": "u32",
                    "cwnd_segments": "u32",
                    "in_flight_segments": "u32",
                    "free_cwnd_segments": "f64",
                    "srtt_ns": "i64",
                },
            ),
        }
    if traces is not None and sink is not None:  # streamed: one chunk per table
        for table, columns in traces.items():
            sink(table, columns)
        traces = None
    return json.dumps(summary), traces

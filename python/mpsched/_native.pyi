"""Typed stub of the private native module (Rust, PyO3).

The contract between Python and the Rust simulator:

``run(config_json, trace)`` takes a *normalized* scenario (every quantity already an integer in
base units, every field present) as a JSON string and returns ``(summary_json, traces)``.
``traces`` is ``None`` unless ``trace`` is true; then it maps a table name ("segments", "acks")
("segments", "acks", "scheduler") to its columns, each column a ``(dtype, little-endian bytes)``
pair with dtype one of "i64", "u64", "u32", "u16", "u8", "f64", or ``("str", list[str])``.

Bad input raises ``ValueError`` whose message starts with the offending field; an internal
failure raises ``RuntimeError``. Nothing panics across the boundary.

Normalized scenario (all keys required)::

    {
      "duration_ns": int > 0, "seed": int >= 0,
      "protocol": "mptcp" | "tcp",
      "scheduler": str, "scheduler_params": {str: float | int | str},
      "congestion": "reno" | "cubic" | "lia" | "olia",
      "sndbuf_bytes": int > 0, "rcvbuf_bytes": int > 0,
      "workload": {"kind": "bulk"} | {"kind": "file", "size_bytes": int > 0},
      "paths": [            # only the paths the connection uses, in order
        {"name": str,
         "down": LINK,       # server -> client: the data direction
         "up": LINK,         # client -> server: the ACK direction
         "schedule": [{"at_ns": int, "rate_bps": int | None,
                       "delay_down_ns": int | None, "delay_up_ns": int | None}]}
      ]
    }
    LINK = {"rate_bps": int > 0, "delay_ns": int >= 0, "loss": float in [0, 1),
            "queue": {"bytes": int} | {"packets": int} | {"time_ns": int}}
"""

from collections.abc import Callable
from typing import Literal

Dtype = Literal["i64", "u64", "u32", "u16", "u8", "f64"]
Columns = dict[str, tuple[Dtype, bytes] | tuple[Literal["str"], list[str]]]

def run(
    config_json: str,
    trace: bool = False,
    sink: Callable[[str, Columns], object] | None = None,
    sample_interval_ns: int = 10_000_000,
    chunk_rows: int = 65_536,
) -> tuple[str, dict[str, Columns] | None]:
    """Runs a scenario. With ``trace`` and no ``sink`` every trace table comes back at the end;
    with a ``sink`` the tables are streamed, ``sink(table, columns)`` every ``chunk_rows`` rows
    (the returned traces are then None). Subflow and connection state is sampled every
    ``sample_interval_ns``. Tables: acks, segments, bursts, subflows, connection, scheduler."""
def schedulers() -> list[tuple[str, str, str]]:
    """(name, one-line description, source) of every registered scheduler."""

def bench_event_queue(events: int, pending: int) -> float:
    """Million push/pop pairs per second of a bare binary-heap event loop."""

__version__: str

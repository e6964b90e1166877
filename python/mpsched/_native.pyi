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
      "sndbuf_bytes": int > 0, "sndbuf_autotune": bool,
      "rcvbuf_bytes": int > 0, "rcvbuf_initial_bytes": int > 0, "rcvbuf_autotune": bool,
      "window_ratio": float in (0, 1] | None,
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
    scheduler: object | None = None,
) -> tuple[str, dict[str, Columns] | None]:
    """Runs a scenario. With ``trace`` and no ``sink`` every trace table comes back at the end;
    with a ``sink`` the tables are streamed, ``sink(table, columns)`` every ``chunk_rows`` rows
    (the returned traces are then None). Subflow and connection state is sampled every
    ``sample_interval_ns``. Tables: acks, segments, bursts, subflows, connection, scheduler.
    ``scheduler``, an object with ``next(ctx: SchedContext)``, replaces the scenario's
    scheduler (see ``mpsched.Scheduler``)."""

def schedulers() -> list[tuple[str, str, str, list[str]]]:
    """(name, one-line description, source, parameter keys) of every registered scheduler."""

def bench_event_queue(events: int, pending: int) -> float:
    """Million push/pop pairs per second of a bare binary-heap event loop."""

def bench_scenarios(names: list[str] = ...) -> str:
    """Runs the benchmark scenarios (a, b, c; all when empty) and returns a JSON list of rows:
    name, description, simulated_s, events, data_packets, wall_s, sim_s_per_wall_s,
    data_packets_per_wall_s, events_per_wall_s, peak_rss_bytes."""

class SubflowView:
    """One subflow as a Python scheduler sees it (read-only)."""

    id: int
    established: bool
    backup: bool
    available: bool
    cwnd: int
    ssthresh: int
    in_flight: int
    cwnd_space: int
    packets_out: int
    sndbuf_bytes: int
    srtt_ns: int
    rttvar_ns: int
    min_rtt_ns: int
    delivery_rate_bps: int
    pacing_rate_bps: int
    ca_state: Literal["open", "recovery", "loss"]
    last_penalized_ns: int | None

class SchedContext:
    """The connection as a Python scheduler sees it, valid only during ``next(ctx)``."""

    now_ns: int
    subflows: list[SubflowView]
    data_una: int
    written_end: int
    window_bytes: int
    mss: int
    sndbuf_full: bool
    bytes_sent: int
    def first_unsent(self) -> int | None: ...
    def unsent(self, limit: int = 64) -> list[int]: ...
    def in_window(self, dseq: int) -> bool: ...
    def sent_on(self, dseq: int) -> list[int]: ...
    def reinject_queue(self) -> list[int]: ...
    def penalize(self, sf: int) -> None: ...
    def record(self, key: str, value: float) -> None: ...

__version__: str

"""Typed stub of the private native module (Rust, PyO3).

``run(config_json, ...)`` takes a *normalized* scenario as JSON: every quantity an integer in
base units (ns, bytes, bit/s). Its keys are those of the Rust ``Config`` of the scenario crate
(``crates/mpsched-scenario``); ``mpsched.scenario.to_native`` builds one from a scenario file,
and every run directory keeps the one it ran as ``scenario.json``. It returns
``(summary_json, traces)``: the summary's fields and the trace tables' columns are described,
with types, units and meanings, by ``contract()`` (``mpsched.contract`` reads it).

Bad input raises ``ValueError`` whose message starts with the offending field; an internal
failure raises ``RuntimeError``. Nothing panics across the boundary. ``tests/test_contract.py``
runs mypy's stubtest: this stub and the module cannot drift apart.
"""

from collections.abc import Callable
from typing import Literal, final

__all__ = [
    "SchedContext",
    "SubflowView",
    "__version__",
    "bench_event_queue",
    "bench_scenarios",
    "contract",
    "emulator_main",
    "run",
    "schedulers",
    "udp_check_secret",
    "udp_get",
    "udp_keygen",
    "udp_serve",
]

_Dtype = Literal["i64", "u64", "u32", "u16", "u8", "f64"]
_Columns = dict[str, tuple[_Dtype, bytes] | tuple[Literal["str"], list[str]]]

def run(
    config_json: str,
    trace: bool = False,
    sink: Callable[[str, _Columns], object] | None = None,
    sample_interval_ns: int = 10_000_000,
    chunk_rows: int = 65_536,
    scheduler: object | None = None,
    progress: Callable[[int, int], object] | None = None,
    pcap: str | None = None,
    pcap_at: Literal["sender", "receiver", "links"] = "sender",
    pcap_max_bytes: int = 2**64 - 1,
) -> tuple[str, dict[str, _Columns] | None]:
    """Runs a scenario. With ``trace`` and no ``sink`` every trace table comes back at the end;
    with a ``sink`` the tables are streamed, ``sink(table, columns)`` every ``chunk_rows`` rows
    (the returned traces are then None). Subflow and connection state is sampled every
    ``sample_interval_ns``. Tables: acks, segments, bursts, subflows, connection, scheduler.
    ``scheduler``, an object with ``next(ctx: SchedContext)``, replaces the scenario's
    scheduler (see ``mpsched.Scheduler``). About ten times a second the run checks for signals
    and calls ``progress(simulated_ns, events)``: a signal (Ctrl-C) stops it with the summary
    so far (``interrupted_at_s``); an exception from ``progress`` or ``sink`` stops it and is
    raised. ``pcap`` names a file for a pcapng capture of every packet at ``pcap_at``; one
    that would pass ``pcap_max_bytes`` stops the run with ValueError."""

def schedulers() -> list[tuple[str, str, str, list[str]]]:
    """(name, one-line description, source, parameter keys) of every registered scheduler."""

def contract() -> str:
    """What scenarios may name and what runs return, as JSON: ``version``, ``schedulers`` (name,
    description, source, params: key, default, meaning), ``congestion_controls`` (name,
    description, source, coupled, single_path), ``protocols``, ``stacks``,
    ``loss_recoveries``, ``joins``, ``workloads`` (name, description), ``records`` (``summary``,
    ``subflow``, ``flow``, ``quantiles``: their fields' name, type, nullable, unit, meaning)
    and ``traces`` (each table's name, meaning and columns)."""

def emulator_main(config_path: str) -> None:
    """Runs the link emulator (``mpsched-emu CONFIG``) as this process, and exits it (Linux
    only). ``python -m mpsched.testbed.emulator CONFIG`` starts it as a process of its own."""

def udp_serve(
    bind: str,
    secret: bytes,
    file: str | None = None,
    size: int | None = None,
    scheduler: str = ...,
    params: list[tuple[str, str]] = ...,
    congestion: str = ...,
    sndbuf: int = ...,
    scheduler_object: object | None = None,
    aead: str | None = None,
    idle_timeout_s: float = 30.0,
    ready: Callable[[str], object] | None = None,
) -> str:
    """Serve until Ctrl-C (the real transport over UDP); as JSON, the datagrams dropped, the
    answers sent without a connection (cookies, resets) and path moves, and the scheduler's
    decisions with their mean cost in microseconds. ``scheduler_object``: a scheduler written
    in Python (its ``next(ctx)``), one per connection, instead of ``scheduler``.
    ``ready(address)``: once the secret, the source and the address are checked and bound."""

def udp_get(
    server: str,
    locals: list[str],
    secret: bytes,
    out: str | None = None,
    rcvbuf: int = ...,
    progress: Callable[[int, int | None, list[int]], object] | None = None,
    duration_s: float | None = None,
    trace: bool = False,
    aead: str | None = None,
    ack_every: int | None = None,
    resume: bool = False,
    idle_timeout_s: float = 30.0,
) -> tuple[str, dict[str, dict[str, tuple[str, bytes]]] | None]:
    """Download from an ``mpsched serve``; the summary as JSON and, with ``trace``, the
    client's trace tables (``segments`` and ``connection``, the columns a receiver sees).
    ``out`` is written as ``OUT.part`` and renamed once whole; ``resume`` continues
    ``OUT.part``."""

def udp_keygen() -> str:
    """A new secret: 32 random bytes in base64."""

def udp_check_secret(secret: bytes, key_file: str | None = None) -> None:
    """Raises ValueError (one line) unless ``secret`` is 32 random bytes in base64 or hex and
    ``key_file``, if given, is readable by its owner only."""

def bench_event_queue(events: int = 5_000_000, pending: int = 1024) -> float:
    """Million push/pop pairs per second of a bare binary-heap event loop."""

def bench_scenarios(names: list[str] = ...) -> str:
    """Runs the benchmark scenarios (a, b, c; all when empty) and returns a JSON list of rows:
    name, description, simulated_s, events, data_packets, wall_s, sim_s_per_wall_s,
    data_packets_per_wall_s, events_per_wall_s, peak_rss_bytes."""

# class SubflowView: written by `python -m mpsched.docgen` from the contract's subflow_view
# (SubflowView in crates/mpsched-core/src/sched/mod.rs).
@final
class SubflowView:
    """One subflow as a Python scheduler sees it (read-only)."""

    id: int
    """The subflow's index in the connection's subflows, as decisions name it."""
    established: bool
    """The subflow has joined and may carry data (upstream: and is not stale)."""
    backup: bool
    """The subflow's path is a backup path."""
    cwnd: int
    """Congestion window [segments]."""
    ssthresh: int
    """Slow-start threshold [segments]."""
    in_flight: int
    """Segments in flight (RFC 6675 pipe) [segments]."""
    cwnd_space: int
    """Free congestion-window space (0 while not established) [segments]."""
    srtt_ns: int
    """Smoothed RTT, zero before the first sample [ns]."""
    rttvar_ns: int
    """RTT variation (RFC 6298 RTTVAR) [ns]."""
    min_rtt_ns: int
    """Smallest RTT sample, zero before the first [ns]."""
    delivery_rate_bps: int
    """Latest delivery-rate sample (Linux `tcp_rate.c`) [bit/s]."""
    packets_out: int
    """Segments sent and not yet cumulatively ACKed (the subflow's queued data) [segments]."""
    sacked_out: int
    """Of those, the segments the peer has SACKed (Linux `sacked_out`) [segments]."""
    sndbuf_bytes: int
    """The subflow socket's send buffer (`sk_sndbuf`), autotuned with its window [bytes]."""
    ca_state: Literal["open", "recovery", "loss"]
    """Congestion state: open, recovery (fast recovery after a loss SACKs revealed) or loss (after a
    retransmission timeout)."""
    last_penalized_ns: int | None
    """When (virtual time) the subflow's window was last halved for blocking the connection, or none
    [ns]."""
    available: bool
    """May carry a new segment now: established, window space, not recovering from a timeout (the
    out-of-tree `mptcp_is_available`)."""
    pacing_rate_bps: int
    """Linux's pacing rate: cwnd x MSS / srtt, times 2 while cwnd is below half of ssthresh and 1.2
    after (0 before an RTT sample) [bit/s]."""

# end of the generated class SubflowView

@final
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

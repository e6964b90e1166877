"""The scenario's tables as pydantic models, the choices each field accepts, and the checks
that involve several fields.

The choices (protocols, congestion controls, stacks, ..., scheduler names) are the native
module's contract; every check raises ``ValueError('<field>: <problem>')``, which
:func:`mpsched.scenario.load.validate` turns into a one-line ``ScenarioError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import contract, mahimahi
from ..errors import ScenarioError
from ..units import format_bytes, format_duration
from .fields import (
    MAX_FLOWS,
    BurstLength,
    Count,
    Flag,
    LinkName,
    Name,
    NonEmptyString,
    NonNegativeDuration,
    OptionalDuration,
    OptionalQueue,
    OptionalRate,
    OptionalRatio,
    OptionalSize,
    Param,
    PositiveDuration,
    PositiveSize,
    Probability,
    Queue,
    Seed,
    Shape,
    UnitProbability,
    WriteChunk,
    choice,
    scheduler_choice,
)
from .knobs import derive

__all__ = [
    "AQMS",
    "CONGESTION_CONTROLS",
    "LOSS_RECOVERIES",
    "PATH_STATES",
    "PROTOCOLS",
    "SIZE_DISTS",
    "STACKS",
    "START_DISTS",
    "WORKLOAD_KINDS",
    "Connection",
    "FlowSpec",
    "GilbertElliott",
    "LinkKeys",
    "LinkSpec",
    "PathSpec",
    "Scenario",
    "ScheduleEntry",
    "Workload",
    "resolve_delays",
]

# What the simulator accepts comes from its contract (declared in Rust); these are drawn in
# Python.
SIZE_DISTS = ("fixed", "pareto")
PATH_STATES = ("up", "down", "gone")
AQMS = ("droptail", "codel", "fq_codel")
START_DISTS = ("fixed", "poisson")


def _contract_names(kind: str) -> Callable[[], tuple[str, ...]]:
    return lambda: contract.names(kind)


PROTOCOLS = _contract_names("protocols")
CONGESTION_CONTROLS = _contract_names("congestion_controls")
STACKS = _contract_names("stacks")
LOSS_RECOVERIES = _contract_names("loss_recoveries")
JOINS = _contract_names("joins")
WORKLOAD_KINDS = _contract_names("workloads")


def _timer_hz() -> tuple[int, ...]:
    return tuple(int(n) for n in contract.names("timer_hz"))


def _scheduler_names() -> tuple[str, ...] | None:
    """Names of the native schedulers (tests replace this to accept fakes)."""
    return contract.names("schedulers")


def _known_schedulers() -> tuple[str, ...] | None:
    """`_scheduler_names()` when asked, so that a test's replacement of it counts, and their
    aliases (the names a scenario may give, as the JSON Schema lists them)."""
    names = _scheduler_names()
    return None if names is None else (*names, *_scheduler_aliases())


def _scheduler_aliases() -> dict[str, str]:
    """The papers' names of the native schedulers, each to its registered name."""
    return contract.scheduler_aliases()


# --- models ---


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_default=True, frozen=True, use_attribute_docstrings=True
    )


class Connection(_Model):
    """The ``[connection]`` table."""

    protocol: Annotated[str, choice(PROTOCOLS)] = "mptcp"
    """`tcp` uses only the first selected path."""
    scheduler: Annotated[str, scheduler_choice(_known_schedulers, _scheduler_aliases)] = "default"
    """Packet scheduler: one of `mpsched schedulers` (or an alias it lists, e.g. the papers'
    `lowrtt` for `minrtt`), or one written in Python (`FILE.py:Class`, `module:Class`)."""
    congestion: Annotated[str, choice(CONGESTION_CONTROLS)] = "cubic"
    """Congestion control."""
    sndbuf: PositiveSize = "6MiB"  # type: ignore[assignment]
    """Send buffer (server); with autotuning the most one socket's buffer grows to (`tcp_wmem[2]`).
    """
    sndbuf_autotune: Flag = True
    """Linux send-buffer autotuning: each subflow's buffer is twice its window's memory, an MPTCP
    connection's the sum; `false`: `sndbuf` from the start (as `SO_SNDBUF`).
    """
    rcvbuf: PositiveSize = "6MiB"  # type: ignore[assignment]
    """Receive buffer (client): the most autotuning grows it to (`tcp_rmem[2]`)."""
    rcvbuf_initial: PositiveSize = "128KiB"  # type: ignore[assignment]
    """Where autotuning starts (`tcp_rmem[1]`)."""
    rcvbuf_autotune: Flag = True
    """Linux receive-buffer autotuning; `false`: `rcvbuf` from the start."""
    window_ratio: OptionalRatio = None
    """Unset: Linux's. Payload the receiver advertises per byte of buffer; default 1424/2304
    (MPTCP) or 1448/2304 (TCP): a 1500-byte packet takes 2,304 bytes of buffer on Linux; `0.5`
    for Linux < 6.5 (`tcp_adv_win_scale = 1`), `1` for the whole buffer.
    """
    stack: Annotated[str, choice(STACKS)] = "upstream"
    """The Linux MPTCP on both hosts: upstream (5.6+, calibrated against 6.18), or the out-of-tree
    multipath-tcp.org v0.9x on Linux 4.x that the STMS, BLEST and ECF papers ran, whose subflows
    hold back ACKs while connection-level out-of-order data piles up, whose window is half the
    free buffer and whose send buffer is sized for the largest subflow RTT (docs/model.md).
    """
    loss_recovery: Annotated[str, choice(LOSS_RECOVERIES)] = "linux"
    """How every connection's TCP finds losses: `linux` (RACK, tail loss probes, RTO = SRTT + max(4
    RTTVAR, 200 ms)), or `classic`: RFC 6675 with DupThresh 3 and no probes, RTO >= 1 s (RFC
    6298 2.4), as stacks without RACK/TLP and ns-3's TCP; a loss with fewer than three segments
    after it then waits for the timeout; or `linux-static-reo-wnd`: `linux` with RACK's
    reordering window never widened by D-SACKs (`net.ipv4.tcp_recovery = 3`), to see what the
    adaptation to reordering is worth (`scenarios/reordering.toml`).
    """
    join: Annotated[str, choice(JOINS)] = "first-data"
    """When the client opens the other subflows (MP_JOIN): `first-data`, once the connection is
    fully established, when the server's first data arrives, as Linux's path managers do
    (`mptcp_pm_fully_established`; on Linux 6.18 the second SYN leaves 41-43 ms into the STMS lab,
    as the first data arrives); or `syn-ack`, at the first subflow's SYN-ACK, a round trip
    earlier on the first path.
    """
    timer_hz: Annotated[int, choice(_timer_hz)] = 250
    """Both kernels' `CONFIG_HZ`: TCP's and MPTCP's timers (RTO, loss probe, reordering, delayed
    ACK, the connection's retransmit timer, SYNs) run on its ticks and wait in Linux's timer
    wheel, which rounds a far deadline up to a coarser tick (8 ticks beyond 63, 64 beyond 504):
    at 250 Hz an RTO backed off four times from 260 ms fires 4.35 s later, not 4.16 s. `0`: every
    timer runs exactly when it asks.
    """
    timer_phase: NonNegativeDuration = "0s"  # type: ignore[assignment]
    """Where the kernels' jiffies stand at time zero (jiffies x tick + the time since the last
    tick; only its value modulo 2^24 ticks matters). The wheel rounds on absolute jiffies, so
    a backed-off RTO of 520 ticks ends anywhere within a 64-tick (256 ms) bucket depending on
    it. `mpsched emulate` records each kernel run's (`kernel.timer_phase`) to replay it here.
    """
    paths: list[Name] | None = None
    """Unset: all paths, in file order. The paths the connection uses, in this order."""
    scheduler_params: dict[str, Param] = Field(default_factory=dict)
    """Passed to the scheduler unchanged."""


class Workload(_Model):
    """The ``[workload]`` table: a bulk transfer, a file of ``size`` bytes, or an application
    writing a ``block`` every ``block x 8 / rate`` seconds (``kind = "rate"``).

    With ``size_dist = "pareto"`` the file's size is drawn (from the scenario's seed) from a
    Pareto distribution of mean ``size`` and shape ``pareto_shape``.
    """

    kind: Annotated[str, choice(WORKLOAD_KINDS)] = "bulk"
    """`bulk`: send for the whole duration; `file`: send `size` bytes; `rate`: an application
    writes a `block` every `block x 8 / rate` seconds for the whole duration (paper 001 sec.
    4.3), each block carried in whole segments (8 KiB: six segments).
    """
    size: OptionalSize = None
    """Required for `file`, not allowed for `bulk`; with `size_dist = "pareto"` the mean."""
    rate: OptionalRate = None
    """Required for `rate`: the application's rate."""
    block: PositiveSize = "8KiB"  # type: ignore[assignment]
    """The application's block (`rate`)."""
    warmup: NonNegativeDuration = "0s"  # type: ignore[assignment]
    """Blocks written within this time of the start are delivered but not timed (`rate`)."""
    size_dist: Annotated[Literal["fixed", "pareto"], choice(SIZE_DISTS)] = "fixed"
    """`pareto`: the file's size is drawn from a Pareto distribution of mean `size` (from the
    scenario's `seed`: the same seed, the same sizes).
    """
    pareto_shape: Shape = 1.5
    """The Pareto distribution's shape (1.5 puts 92% of files of mean 57 KB below 100 KB)."""
    write_chunk: WriteChunk = "256KiB"  # type: ignore[assignment]
    """How the application writes (`bulk` and `file`). A size: that much each time the socket
    becomes writable (below two thirds of its buffer: `select`/`poll`), as the testbed's load
    generator (256 KiB) and iperf3 (128 KiB) do; the buffer then stays between 2/3 and 2/3 + a
    chunk full. `fill`: it fills the send buffer whenever it may (a `sendfile`-like writer, as
    ns-3's BulkSendApplication), so more data waits unpushed at the connection level.
    """


class FlowSpec(_Model):
    """One ``[[flow]]`` table: ``count`` competing connections alike, sharing the paths
    (``count = 0``: none, for sweeps over the number of flows).

    The i-th of them (from 0) sends its SYN at ``start + i * interval``; with
    ``start_dist = "poisson"`` the gaps between starts are drawn instead, exponentially
    distributed with mean ``interval`` (the first at ``start``). Unset, ``protocol``,
    ``scheduler``, ``scheduler_params`` and ``congestion`` are the main connection's, and
    ``paths`` its paths (the first of them for TCP). Without ``size`` a flow is a bulk
    transfer to the end of the run; ``size_dist`` and ``pareto_shape`` are as in
    ``[workload]``.
    """

    count: Count = 1
    """Connections of this table."""
    start: NonNegativeDuration = "0s"  # type: ignore[assignment]
    """When the first one sends its SYN."""
    interval: NonNegativeDuration = "0s"  # type: ignore[assignment]
    """The i-th (from 0) starts at `start + i * interval`."""
    start_dist: Annotated[Literal["fixed", "poisson"], choice(START_DISTS)] = "fixed"
    """`poisson`: the gaps between starts are drawn from an exponential distribution of mean
    `interval` (Poisson arrivals; a flow drawn to start after the end never starts and counts as
    unfinished).
    """
    protocol: Annotated[str | None, choice(PROTOCOLS, optional=True)] = None
    """Unset: the connection's."""
    scheduler: Annotated[
        str | None,
        scheduler_choice(_known_schedulers, _scheduler_aliases, optional=True, python=False),
    ] = None
    """Unset: the connection's. A built-in scheduler (a Python scheduler drives only the main
    connection).
    """
    scheduler_params: dict[str, Param] | None = None
    """Unset: the connection's. Passed to the flows' scheduler unchanged."""
    congestion: Annotated[str | None, choice(CONGESTION_CONTROLS, optional=True)] = None
    """Unset: the connection's. Congestion control."""
    size: OptionalSize = None
    """Unset: bulk. A file of `size` bytes; without it a bulk transfer to the end of the run."""
    size_dist: Annotated[Literal["fixed", "pareto"], choice(SIZE_DISTS)] = "fixed"
    """As in `[workload]`; sizes are drawn after the main connection's, table by table."""
    pareto_shape: Shape = 1.5
    """As in `[workload]`."""
    paths: list[Name] | None = None
    """Unset: the connection's paths. One subflow per path; a TCP flow uses the first."""


class ScheduleEntry(_Model):
    """One ``[[path.schedule]]`` entry: a change of the path at time ``at``."""

    at: NonNegativeDuration
    """When the change happens."""
    rate: OptionalRate = None
    """Unset: unchanged. New link rate."""
    rtt: OptionalDuration = None
    """Unset: unchanged. New round-trip time, split evenly."""
    delay_up: OptionalDuration = None
    """Unset: unchanged. New one-way delay of the ACK direction (one alone changes only its
    direction; `rtt` sets both)."""
    delay_down: OptionalDuration = None
    """Unset: unchanged. New one-way delay of the data direction."""
    jitter: OptionalDuration = None
    """Unset: unchanged. New delay variation of the data direction."""
    jitter_up: OptionalDuration = None
    """Unset: unchanged. New delay variation of the ACK direction."""
    state: Annotated[str | None, choice(PATH_STATES, optional=True)] = None
    """Unset: unchanged. `down`: the path fails, both directions losing every packet, those
    queued and on the wire included (out of radio range: the interface stays up, so TCP finds
    out by its timeouts); `gone`: the client's address on it goes away as well (the interface
    is removed): MPTCP closes the subflow at once (REMOVE_ADDR) and sends what it held on the
    others (`gone` at `0s`: a path that appears later); `up`: it works again, and after
    `gone` a new subflow joins (MP_JOIN). Plain TCP sees `gone` as `down`."""


class GilbertElliott(_Model):
    """A Gilbert-Elliott loss chain (netem's `loss gemodel p r 1-h 1-k`), stepped per packet."""

    p: UnitProbability
    """Probability of moving from the good to the bad state after a packet."""
    r: UnitProbability
    """Probability of moving from the bad to the good state after a packet (> 0)."""
    loss_good: UnitProbability = 0.0
    """Loss probability in the good state."""
    loss_bad: UnitProbability = 1.0
    """Loss probability in the bad state."""


class _LinkKeys(_Model):
    """The keys of a link, one in each direction: a path's own or a shared ``[[link]]``.
    Quantities are stored in ns, bytes and bits per second."""

    knobs: ClassVar[tuple[contract.LinkKnob, ...]] = ()
    """The link knobs whose keys follow these (:func:`mpsched.scenario.knobs.derive`)."""

    name: Name
    """Its name."""

    rate: OptionalRate = None
    """Link rate of both directions (required unless `trace` and `trace_up` set both)."""
    rate_up: OptionalRate = None
    """Unset: `rate`. Link rate of the ACK direction."""
    rtt: OptionalDuration = None
    """Base round-trip time, split evenly between the directions."""
    delay_up: OptionalDuration = None
    """One-way delay of the ACK direction."""
    delay_down: OptionalDuration = None
    """One-way delay of the data direction."""
    queue: Queue = "1000pkt"  # type: ignore[assignment]
    """Drop-tail limit of each direction; below one packet (`"0B"`): no buffering (only the
    packet being sent)."""
    queue_up: OptionalQueue = None
    """Unset: `queue`. Drop-tail limit of the ACK direction."""
    loss: Probability = 0.0
    """Mean loss rate of data packets: independent losses, or bursts with `loss_burst`."""
    loss_burst: BurstLength = None
    """Unset: independent losses. Mean number of consecutive data packets a loss burst takes
    (Gilbert's model: a good state without losses, a bad one losing every packet, its mean
    stay `loss_burst` packets, so that the mean loss stays `loss`)."""
    gilbert_elliott: GilbertElliott | None = None
    """Unset: `loss` and `loss_burst`. The four-parameter chain for data packets, e.g.
    `{ p = 0.001, r = 0.1, loss_bad = 0.5 }`; set alone (without `loss`, `loss_burst`)."""
    ack_loss: Probability = 0.0
    """Mean loss rate of ACKs (independent, or with `ack_loss_burst`)."""
    ack_loss_burst: BurstLength = None
    """Unset: independent ACK losses. Mean length of an ACK loss burst, in packets."""
    ack_gilbert_elliott: GilbertElliott | None = None
    """Unset: `ack_loss` and `ack_loss_burst`. The four-parameter chain for ACKs."""
    reorder: Flag = False
    """The jitter may reorder, both directions: each packet arrives after its own delay draw,
    even before packets sent ahead of it (netem's `delay D J` without a rate); a delay cut in
    the `schedule` lets later packets overtake too. Serialization at the rate stays in order."""
    trace: NonEmptyString | None = None
    """Unset: `rate`. A Mahimahi trace file of the data direction's delivery opportunities
    (one line per 1,504-byte opportunity, in ms, repeating); a relative path is read from the
    scenario file's folder (`scenarios/traces/` has some)."""
    trace_up: NonEmptyString | None = None
    """Unset: `rate_up`, else `rate`. A Mahimahi trace file of the ACK direction."""
    aqm: Annotated[str, choice(AQMS)] = "droptail"
    """The queue of both directions: `droptail` (the `queue` limit alone), `codel` (RFC 8289:
    drops at the head once packets wait over `codel_target` for `codel_interval`), or
    `fq_codel` (RFC 8290: a CoDel queue per TCP flow, i.e. per subflow, served by deficit
    round robin, new flows first; no ECN); `queue` still bounds them."""
    codel_target: PositiveDuration = "5ms"  # type: ignore[assignment]
    """CoDel's target standing queue (RFC 8289's 5 ms)."""
    codel_interval: PositiveDuration = "100ms"  # type: ignore[assignment]
    """CoDel's interval (RFC 8289's 100 ms, a worst-case RTT)."""

    def delays(self) -> tuple[int, int]:
        """``(delay_up_ns, delay_down_ns)`` after resolving ``rtt`` and the one-way delays."""
        up, down = resolve_delays(self.rtt, self.delay_up, self.delay_down, partial=False)
        assert up is not None and down is not None
        return up, down


# The hand-written keys, then the link knobs' (`jitter`, `jitter_up`, ...): each knob the
# contract lists has its two keys derived from its entry (python/mpsched/scenario/knobs.py).
LinkKeys = derive(_LinkKeys, contract.link_knobs())


class PathSpec(LinkKeys):  # type: ignore[valid-type,misc]
    """One ``[[path]]`` table: the path's own link (the client's access: WiFi, LTE), then
    the shared links it lists in ``via``. Quantities are stored in ns, bytes and bits per
    second."""

    name: Name
    """Addressed as `path.NAME.KEY` by `--set`."""
    via: list[LinkName] = Field(default_factory=list)
    """Unset: none. Shared `[[link]]`s the path crosses beyond its own link, from the client
    outwards (e.g. `["dsl"]` behind a WiFi access point): data crosses them from the last to
    the first, then the path's own link; ACKs the other way."""
    schedule: list[ScheduleEntry] = Field(default_factory=list)
    """Changes of the path's own link during the run (below)."""
    backup: Flag = False
    """A backup path (RFC 8684 MP_PRIO): its subflow carries data only when no regular one
    can, i.e. out-of-tree while every regular subflow is recovering from a timeout, upstream
    while none is active (all stale or gone)."""


class LinkSpec(LinkKeys):  # type: ignore[valid-type,misc]
    """One ``[[link]]`` table: a link that paths share (a home's DSL line behind its WiFi, one
    bottleneck under two subflows, a core link), named in their ``via``. Its keys are a
    path's; it has no schedule. Quantities are stored in ns, bytes and bits per second."""

    name: Name
    """Named in paths' `via`; addressed as `link.NAME.KEY` by `--set`."""


class Scenario(_Model):
    """A whole scenario file."""

    duration: PositiveDuration = "60s"  # type: ignore[assignment]
    """Simulated time."""
    seed: Seed = 1
    """Seed of every random choice (random loss); same seed, same result."""
    connection: Connection = Field(default_factory=Connection)
    """The connection under study: `[connection]`."""
    workload: Workload = Field(default_factory=Workload)
    """What its application sends: `[workload]`."""
    path: list[PathSpec] = Field(default_factory=list)
    """The paths, at least one: `[[path]]`."""
    flow: list[FlowSpec] = Field(default_factory=list)
    """Competing connections over the same paths: `[[flow]]`."""
    link: list[LinkSpec] = Field(default_factory=list)
    """Links that paths share, named in their `via`: `[[link]]`."""

    @model_validator(mode="after")
    def _cross_check(self) -> Scenario:
        _check(self)
        return self

    def selected_paths(self) -> list[PathSpec]:
        """The paths the connection uses, in order (only the first one for plain TCP)."""
        by_name = {p.name: p for p in self.path}
        names = self.connection.paths or [p.name for p in self.path]
        if self.connection.protocol == "tcp":
            names = names[:1]
        return [by_name[name] for name in names]


# --- cross-field checks ---


def resolve_delays(
    rtt: int | None, up: int | None, down: int | None, *, partial: bool
) -> tuple[int | None, int | None]:
    """Resolve ``rtt``/``delay_up``/``delay_down`` into one-way delays.

    ``rtt`` alone is split evenly; ``rtt`` with one delay gives the other; with all three, ``rtt``
    must be their sum. One delay alone applies to both directions, except when ``partial`` (a
    schedule entry), where the other direction stays unchanged (``None``).
    """
    if up is None and down is None:
        if rtt is None:
            return None, None
        return rtt - rtt // 2, rtt // 2
    if up is not None and down is not None:
        if rtt is not None and rtt != up + down:
            raise ValueError(
                f"rtt {format_duration(rtt)} must equal delay_up + delay_down = "
                f"{format_duration(up + down)}"
            )
        return up, down
    given = up if up is not None else down
    assert given is not None
    if rtt is not None:
        other: int | None = rtt - given
        assert other is not None
        if other < 0:
            which = "delay_up" if up is not None else "delay_down"
            raise ValueError(
                f"rtt {format_duration(rtt)} is smaller than {which} {format_duration(given)}"
            )
    else:
        other = None if partial else given
    return (given, other) if up is not None else (other, given)


def _where(index: int, spec: LinkKeys, field: str = "") -> str:
    table = "link" if isinstance(spec, LinkSpec) else "path"
    suffix = f".{field}" if field else ""
    return f"{table}[{index}]{suffix} ({spec.name!r})"


def _check(scenario: Scenario) -> None:
    """Checks that involve several fields; raise ``ValueError('<field>: <problem>')``."""
    if not scenario.path:
        raise ValueError("path: at least one [[path]] table is required")
    links: set[str] = set()
    for i, link in enumerate(scenario.link):
        if link.name in links:
            raise ValueError(f"{_where(i, link, 'name')}: duplicate link name")
        links.add(link.name)
        _check_link(i, link)
    seen: set[str] = set()
    for i, path in enumerate(scenario.path):
        if path.name in seen:
            raise ValueError(f"{_where(i, path, 'name')}: duplicate path name")
        seen.add(path.name)
        _check_path(i, path, scenario.link, scenario.duration)

    for i, path in enumerate(scenario.path):
        _check_states(i, path)
    if _paths_known(scenario):
        first = scenario.selected_paths()[0]
        i = scenario.path.index(first)
        for k, entry in enumerate(first.schedule):
            if entry.state == "gone" and entry.at == 0:
                raise ValueError(
                    f"{_where(i, first, f'schedule[{k}].state')}: the connection opens on its "
                    "first path, which cannot be gone at the start; list another path first"
                )

    connection = scenario.connection
    if connection.paths is not None:
        if not connection.paths:
            raise ValueError("connection.paths: must name at least one path")
        for j, name in enumerate(connection.paths):
            if name not in seen:
                known = ", ".join(p.name for p in scenario.path)
                raise ValueError(f"connection.paths[{j}]: unknown path {name!r} (paths: {known})")
            if name in connection.paths[:j]:
                raise ValueError(f"connection.paths[{j}]: path {name!r} is listed twice")

    if connection.protocol == "mptcp":
        _check_stack_admits(connection.stack, connection.scheduler, "connection.scheduler")
    known_schedulers = _scheduler_names()
    if (
        known_schedulers is not None
        and connection.scheduler not in known_schedulers
        and ":" not in connection.scheduler  # module:Class, a scheduler written in Python
    ):
        raise ValueError(
            f"connection.scheduler: unknown scheduler {connection.scheduler!r} "
            f"(known: {', '.join(known_schedulers)})"
        )

    for key in ("sndbuf", "rcvbuf", "rcvbuf_initial"):
        value = getattr(connection, key)
        if value < SEGMENT_BYTES:
            raise ValueError(
                f"connection.{key}: {format_bytes(value)} is less than one segment "
                f"({SEGMENT_BYTES} bytes): nothing could be sent or received"
            )

    workload = scenario.workload
    if workload.kind == "file" and workload.size is None:
        raise ValueError("workload.size: required when kind = 'file'")
    if workload.kind != "file" and workload.size is not None:
        raise ValueError(f"workload.size: not allowed when kind = {workload.kind!r}")
    if workload.kind != "file" and workload.size_dist != "fixed":
        raise ValueError(f"workload.size_dist: a {workload.kind!r} workload has no size to draw")
    if workload.kind == "rate" and workload.rate is None:
        raise ValueError("workload.rate: required when kind = 'rate' (e.g. \"1875kbps\")")
    if workload.kind != "rate" and workload.rate is not None:
        raise ValueError(f"workload.rate: only for kind = 'rate', not {workload.kind!r}")
    if workload.kind != "rate" and workload.warmup != 0:
        raise ValueError(f"workload.warmup: only for kind = 'rate', not {workload.kind!r}")
    if workload.warmup >= scenario.duration:
        raise ValueError("workload.warmup: must be shorter than the run's duration")
    if workload.block > 2**30:
        raise ValueError(f"workload.block: at most 1 GiB, got {workload.block} bytes")

    total = 0
    for j, flow in enumerate(scenario.flow):
        _check_flow(scenario, j, flow, known_schedulers)
        total += flow.count
    if total > MAX_FLOWS:
        raise ValueError(f"flow: at most {MAX_FLOWS} competing flows in all, got {total}")


def _paths_known(scenario: Scenario) -> bool:
    names = {p.name for p in scenario.path}
    return all(n in names for n in scenario.connection.paths or [])


def _check_states(index: int, path: PathSpec) -> None:
    """`down`, `gone` and `up` in time order make sense: nothing goes where it already is."""
    gone = False
    for k, entry in sorted(enumerate(path.schedule), key=lambda e: e[1].at):
        where = _where(index, path, f"schedule[{k}].state")
        if entry.state == "gone" and gone:
            raise ValueError(f"{where}: the path is already gone")
        if entry.state == "down" and gone:
            raise ValueError(f"{where}: the path is gone; `up` brings it back")
        if entry.state is not None:
            gone = entry.state == "gone"


def _check_flow(
    scenario: Scenario, j: int, flow: FlowSpec, known_schedulers: tuple[str, ...] | None
) -> None:
    where = f"flow[{j}]"
    names = [p.name for p in scenario.path]
    if flow.paths is not None:
        if not flow.paths:
            raise ValueError(f"{where}.paths: must name at least one path")
        for k, name in enumerate(flow.paths):
            if name not in names:
                raise ValueError(
                    f"{where}.paths[{k}]: unknown path {name!r} (paths: {', '.join(names)})"
                )
            if name in flow.paths[:k]:
                raise ValueError(f"{where}.paths[{k}]: path {name!r} is listed twice")
    protocol = flow.protocol or scenario.connection.protocol
    if protocol == "tcp" and flow.paths is not None and len(flow.paths) != 1:
        raise ValueError(f"{where}.paths: a TCP flow uses exactly one path")
    if protocol == "mptcp":
        scheduler = flow.scheduler or scenario.connection.scheduler
        if ":" in scheduler:
            raise ValueError(
                f"{where}.scheduler: competing flows need a built-in scheduler "
                f"({scheduler!r} is written in Python and drives only the main connection)"
            )
        if known_schedulers is not None and scheduler not in known_schedulers:
            raise ValueError(
                f"{where}.scheduler: unknown scheduler {scheduler!r} "
                f"(known: {', '.join(known_schedulers)})"
            )
        _check_stack_admits(scenario.connection.stack, scheduler, f"{where}.scheduler")
    if flow.size is None and flow.size_dist != "fixed":
        raise ValueError(f"{where}.size_dist: a bulk flow (no size) has no size to draw")
    if flow.start_dist == "poisson" and flow.interval == 0:
        raise ValueError(f"{where}.interval: the mean gap of Poisson arrivals must be > 0")
    last = flow.start + max(flow.count - 1, 0) * flow.interval
    if flow.start_dist == "poisson":
        last = flow.start  # the others start when they are drawn to
    if last >= scenario.duration:
        raise ValueError(
            f"{where}.start: its last flow would start at {format_duration(last)}, "
            f"not before the end of the run ({format_duration(scenario.duration)})"
        )


# A full segment's payload: a buffer below it leaves nothing to send or receive. (A queue
# below one packet is meaningful: the link then buffers nothing beyond the packet it sends.)
SEGMENT_BYTES = 1448


def _check_loss(
    index: int,
    path: LinkKeys,
    prefix: str,
    mean: float,
    burst: float | None,
    ge: GilbertElliott | None,
) -> None:
    """One direction's loss keys: the chain alone, or a burst length that can reach the mean."""
    if ge is not None:
        if mean > 0 or burst is not None:
            raise ValueError(
                f"{_where(index, path, prefix + 'gilbert_elliott')}: replaces "
                f"{prefix}loss and {prefix}loss_burst; set it alone"
            )
        if ge.r == 0 and ge.p > 0:
            raise ValueError(
                f"{_where(index, path, prefix + 'gilbert_elliott.r')}: must be > 0 "
                "(the bad state would never end)"
            )
    if burst is not None and mean / (1.0 - mean) > burst:
        raise ValueError(
            f"{_where(index, path, prefix + 'loss_burst')}: a mean loss of {mean} needs "
            f"bursts of at least {mean / (1.0 - mean):.3f} packets, got {burst}"
        )


def _check_link(index: int, path: LinkKeys) -> None:
    """The keys a path's own link and a shared link have alike."""
    if path.codel_target > path.codel_interval:
        raise ValueError(f"{_where(index, path, 'codel_target')}: must not exceed codel_interval")
    up_rate = path.trace_up is not None or path.rate_up is not None
    if path.rate is None and (path.trace is None or not up_rate):
        raise ValueError(f"{_where(index, path, 'rate')}: required (or trace and trace_up)")
    if path.rtt is None and path.delay_up is None and path.delay_down is None:
        raise ValueError(f"{_where(index, path, 'rtt')}: required (or delay_up/delay_down)")
    for key in ("trace", "trace_up"):
        file = getattr(path, key)
        if file is not None:
            try:
                mahimahi.read(file, key=_where(index, path, key))
            except ScenarioError as exc:
                raise ValueError(str(exc)) from None
    _check_loss(index, path, "", path.loss, path.loss_burst, path.gilbert_elliott)
    _check_loss(index, path, "ack_", path.ack_loss, path.ack_loss_burst, path.ack_gilbert_elliott)
    try:
        resolve_delays(path.rtt, path.delay_up, path.delay_down, partial=False)
    except ValueError as exc:
        raise ValueError(f"{_where(index, path, 'rtt')}: {exc}") from None


def _check_path(index: int, path: PathSpec, links: list[LinkSpec], duration: int) -> None:
    _check_link(index, path)
    names = [link.name for link in links]
    for j, name in enumerate(path.via):
        if name not in names:
            known = ", ".join(names) or "none"
            raise ValueError(
                f"{_where(index, path, f'via[{j}]')}: unknown link {name!r} ([[link]]s: {known})"
            )
        if name in path.via[:j]:
            raise ValueError(f"{_where(index, path, f'via[{j}]')}: link {name!r} is listed twice")
    for k, entry in enumerate(path.schedule):
        where = f"schedule[{k}]"
        if entry.at >= duration:
            raise ValueError(
                f"{_where(index, path, where + '.at')}: must be < duration "
                f"{format_duration(duration)}, got {format_duration(entry.at)}"
            )
        changes = (
            entry.rate,
            entry.rtt,
            entry.delay_up,
            entry.delay_down,
            entry.jitter,
            entry.jitter_up,
            entry.state,
        )
        if all(change is None for change in changes):
            raise ValueError(
                f"{_where(index, path, where)}: changes nothing "
                "(give rate, rtt, delay_up, delay_down, jitter, jitter_up or state)"
            )
        try:
            resolve_delays(entry.rtt, entry.delay_up, entry.delay_down, partial=True)
        except ValueError as exc:
            raise ValueError(f"{_where(index, path, where + '.rtt')}: {exc}") from None
        if entry.rate is not None and (path.trace is not None or path.trace_up is not None):
            raise ValueError(
                f"{_where(index, path, where + '.rate')}: the path's trace sets its capacity"
            )


def _check_stack_admits(stack: str, scheduler: str, field: str) -> None:
    """Upstream's scheduler relies on upstream's connection-level retransmission; no kernel
    runs it on the out-of-tree stack (the Rust rule: ``StackName::admits``)."""
    if stack == "out-of-tree" and scheduler == "linux":
        raise ValueError(
            f"{field}: 'linux' is upstream Linux's scheduler and runs on stack = \"upstream\" "
            "only (the out-of-tree stack's default is 'default')"
        )

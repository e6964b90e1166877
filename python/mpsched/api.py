"""The Python API: run a scenario and get its summary and traces."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from . import contract
from . import traces as _traces
from .errors import ScenarioError, toml_keys
from .scenario import Scenario, Source, load, to_native
from .scheduler import is_reference
from .scheduler import load as load_scheduler
from .traces import table_from_columns
from .units import UnitError, parse_duration

if TYPE_CHECKING:  # numpy, pyarrow and pandas are imported when traces are used
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "Result",
    "RunInterrupted",
    "SchedulerInfo",
    "load_result",
    "native",
    "run",
    "schedulers",
    "table_from_columns",
]

# Keyword shortcuts of run(): the key they stand for in the scenario.
SHORTCUTS: dict[str, str] = {
    "scheduler": "connection.scheduler",
    "congestion": "connection.congestion",
    "protocol": "connection.protocol",
    "sndbuf": "connection.sndbuf",
    "rcvbuf": "connection.rcvbuf",
    "paths": "connection.paths",
}


def native() -> ModuleType:
    """The compiled simulator module; ``RuntimeError`` if it has not been built."""
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError as exc:
        raise RuntimeError(
            f"the native module mpsched._native is not built ({exc}); run `pip install -e .`"
        ) from None
    return _native


class SchedulerInfo(NamedTuple):
    """A registered packet scheduler."""

    name: str
    description: str
    source: str
    params: tuple[str, ...] = ()
    """The keys it takes in ``[connection.scheduler_params]``."""
    aliases: tuple[str, ...] = ()
    """Other names a scenario may give it (the papers', e.g. ``lowrtt`` for ``minrtt``)."""


def schedulers() -> list[SchedulerInfo]:
    """Every scheduler the simulator knows."""
    aliases: dict[str, list[str]] = {}
    for alias, name in contract.scheduler_aliases().items():
        aliases.setdefault(name, []).append(alias)
    return [
        SchedulerInfo(name, description, source, tuple(params), tuple(aliases.get(name, ())))
        for name, description, source, params in native().schedulers()
    ]


@dataclass
class Result:
    """The outcome of :func:`run`.

    ``summary`` is the native summary, with ``wall_s`` the wall time of the whole ``run`` call;
    ``loop_wall_s`` is the wall time of the simulation loop alone, as measured by the simulator.
    ``scenario`` is the normalized scenario that was simulated. ``traces`` maps a table name
    (``"segments"``, ``"acks"``, ...) to an Arrow table when the run was traced in memory;
    ``out`` is the run directory when the run was written to disk (traces streamed to
    ``out/TABLE.parquet``, read back on demand). The tables and their columns are described
    in ``docs/traces.md`` and :data:`mpsched.traces.TABLES`.
    """

    summary: dict[str, Any]
    scenario: dict[str, Any]
    loop_wall_s: float | None = None
    traces: dict[str, pa.Table] | None = field(default=None, repr=False)
    out: Path | None = None

    def __repr__(self) -> str:
        s = self.summary
        where = f", out={str(self.out)!r}" if self.out is not None else ""
        traced = ", traces in memory" if self.traces is not None else ""
        partial = f", interrupted at {s['interrupted_at_s']:g} s" if "interrupted_at_s" in s else ""
        return (
            f"Result({s.get('protocol')} {s.get('scheduler')}/{s.get('congestion')}, "
            f"seed {s.get('seed')}: goodput {s.get('goodput_mbps', 0.0):.2f} Mbit/s, "
            f"{s.get('simulated_s', 0.0):g} s simulated{partial}{traced}{where})"
        )

    def _repr_html_(self) -> str:
        """Jupyter's view: the summary's figures, then one row per subflow (and per flow)."""
        import html

        import pandas as pd

        scalars = {
            key: value
            for key, value in self.summary.items()
            if not isinstance(value, dict | list) and value is not None
        }
        for key, stats in self.summary.items():
            if isinstance(stats, dict):  # distributions: mean, p99, max ...
                scalars.update({f"{key}.{k}": v for k, v in stats.items() if v is not None})
        head = pd.DataFrame({"value": scalars}).to_html(float_format=lambda v: f"{v:.6g}")
        parts = [
            f"<p><b>{html.escape(repr(self))}</b></p>",
            "<details open><summary>summary</summary>",
            head,
            "</details>",
        ]
        if self.summary.get("subflows"):
            parts += ["<p>subflows</p>", self.subflow_totals.to_html(float_format="{:.4g}".format)]
        if self.summary.get("flows"):
            parts += ["<p>flows</p>", self.flows.to_html(float_format="{:.4g}".format)]
        return "\n".join(parts)

    def table(self, name: str) -> pa.Table:
        """One trace table; ``ValueError`` if the run was not traced or has no such table.

        A documented table the run recorded nothing in (e.g. ``scheduler`` for a scheduler
        that records no values) is an empty table with the documented columns.
        """
        if self.traces is not None:
            if name in self.traces:
                return self.traces[name]
            if name in _traces.TABLES:
                return _traces.empty_table(name)
            raise ValueError(f"no trace table {name!r} (have: {', '.join(self.traces)})")
        if self.out is not None and (self.out / f"{name}.parquet").is_file():
            import pyarrow.parquet as pq

            return pq.read_table(self.out / f"{name}.parquet")
        if self.out is not None and name not in _traces.TABLES:
            raise ValueError(f"no trace table {name!r} in {self.out}")
        raise ValueError("no traces: run with mpsched.run(..., trace=True)")

    @property
    def segments(self) -> pd.DataFrame:
        """Per data segment (data order): times sent, received, delivered; OOO and e2e delay."""
        return self.table("segments").to_pandas()

    @property
    def acks(self) -> pd.DataFrame:
        """Per ACK at the server: Data ACK and its step, cwnd, in flight, free cwnd, srtt."""
        return self.table("acks").to_pandas()

    @property
    def bursts(self) -> pd.DataFrame:
        """Per burst: packets a subflow sent back to back."""
        return self.table("bursts").to_pandas()

    @property
    def subflows(self) -> pd.DataFrame:
        """Subflow state sampled every sample interval: cwnd, ssthresh, srtt, in flight,
        cumulative bytes sent and delivered, bottleneck queue."""
        return self.table("subflows").to_pandas()

    @property
    def connection(self) -> pd.DataFrame:
        """Connection buffers sampled every sample interval: reorder queue, receive buffer,
        receive window, send buffer, Data ACK, bytes delivered."""
        return self.table("connection").to_pandas()

    @property
    def scheduler(self) -> pd.DataFrame:
        """Values the scheduler recorded over time (``t_ns``, ``key``, ``value``)."""
        return self.table("scheduler").to_pandas()

    @property
    def subflow_totals(self) -> pd.DataFrame:
        """The summary's per-subflow totals, one row per subflow (index: subflow name)."""
        import pandas as pd

        frame = pd.DataFrame(self.summary.get("subflows") or [])
        return frame.set_index("name") if "name" in frame.columns else frame

    @property
    def flows(self) -> pd.DataFrame:
        """Every connection of a run with competing flows (``[[flow]]``), one row each (index:
        ``flow``, 0 the main connection); empty without them."""
        import pandas as pd

        frame = pd.DataFrame(self.summary.get("flows") or [])
        return frame.set_index("flow") if "flow" in frame.columns else frame


def load_result(path: str | Path) -> Result:
    """A run directory written by ``mpsched run --out DIR`` as a :class:`Result`."""
    run_dir = _traces.load_run(path)
    loop = run_dir.summary.get("loop_wall_s")
    return Result(
        summary=run_dir.summary,
        scenario=run_dir.scenario,
        loop_wall_s=float(loop) if isinstance(loop, int | float) else None,
        out=run_dir.path,
    )


def sample_interval_ns(value: str | int | None) -> int:
    if value is None:
        return DEFAULT_SAMPLE_INTERVAL_NS
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ScenarioError(f"sample_interval: must be > 0, got {value!r}")
        return value
    try:
        ns = parse_duration(value)
    except UnitError as exc:
        raise ScenarioError(f"sample_interval: {exc}") from None
    if ns <= 0:
        raise ScenarioError(f"sample_interval: must be > 0, got {value!r}")
    return ns


DEFAULT_SAMPLE_INTERVAL_NS = 10_000_000
# Where a capture is taken (`run(pcap=...)`).
PCAP_VANTAGES = ("sender", "receiver", "links")
DEFAULT_CHUNK_ROWS = 65_536


def _expand(overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {SHORTCUTS.get(key, key): value for key, value in overrides.items()}


def run_native(config: Mapping[str, Any], *, benefit: bool = False) -> dict[str, Any]:
    """The summary of a normalized scenario (:func:`mpsched.to_native`), without traces: the
    lean path sweeps take. Invalid input raises :class:`ScenarioError`."""
    start = time.perf_counter()
    text = json.dumps(config)
    try:
        summary: dict[str, Any] = json.loads(native().run(text, False)[0])
    except ValueError as exc:
        raise ScenarioError(toml_keys(" ".join(str(exc).split()))) from None
    if summary.get("interrupted_at_s") is not None:
        # A sweep keeps only finished runs.
        raise KeyboardInterrupt
    if benefit:
        from .benefit import with_benefit

        with_benefit(summary, config, lambda t: native().run(t, False))
    summary["wall_s"] = time.perf_counter() - start
    return summary


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or another signal whose handler raised) stopped a run. ``result`` is the run so
    far: its summary has ``interrupted_at_s``, and with ``out=`` its files are written."""

    def __init__(self, result: Result) -> None:
        super().__init__(f"interrupted at {result.summary.get('interrupted_at_s')} s simulated")
        self.result = result


class _Interrupt:
    """Ctrl-C during a run only raises a flag; the run's next watch (a tenth of a second
    later at most) stops it cleanly, so that no trace file is cut in the middle of a write."""

    def __init__(self) -> None:
        self.raised = False

    def _handler(self, signum: int, frame: object) -> None:
        self.raised = True

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # the native run's own signal check stops it
            return
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def watching(
        self, progress: Callable[[int, int], object] | None
    ) -> Callable[[int, int], object]:
        def watch(simulated_ns: int, events: int) -> None:
            if self.raised:
                raise KeyboardInterrupt
            if progress is not None:
                progress(simulated_ns, events)

        return watch


def run(
    scenario: Source | Scenario = None,
    *,
    trace: bool | None = None,
    scheduler: str | object | None = None,
    out: str | Path | None = None,
    sample_interval: str | int | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    benefit: bool = False,
    progress: Callable[[int, int], object] | None = None,
    max_trace_bytes: int | None = None,
    pcap: str | Path | None = None,
    pcap_at: str = "sender",
    **overrides: Any,
) -> Result:
    """Simulate a scenario.

    ``scenario`` is a file path, a TOML string, a dict, an already loaded :class:`Scenario`, or
    ``None`` for the built-in default (the STMS paper's lab set-up). ``overrides`` are ``seed=``,
    ``duration=``, ``scheduler=`` (and ``congestion``, ``protocol``, ``sndbuf``, ``rcvbuf``,
    ``paths``) or dotted keys such as ``**{"path.lte.rtt": "200ms"}``. Invalid input raises
    :class:`ScenarioError`.

    ``scheduler`` is a registered name, ``"module:Class"`` (a scheduler written in Python), or
    a Python scheduler object (see :mod:`mpsched.scheduler`).

    Traces: with ``trace=True`` every trace table comes back in memory (``Result.traces``,
    ``Result.segments``, ...). With ``out=DIR`` the run is written to ``DIR``
    (``summary.json``, ``scenario.json``) and the traces, unless ``trace=False``, are streamed
    to ``DIR/TABLE.parquet`` in row groups of ``chunk_rows`` rows, so memory does not grow
    with the run's length. ``sample_interval`` (a duration such as ``"10ms"``, or ns) is the
    period of the sampled ``subflows`` and ``connection`` tables.

    ``benefit=True`` also runs plain TCP on each path alone and adds ``aggregation_benefit``
    and ``baselines`` to the summary (see :mod:`mpsched.benefit`).

    ``progress(simulated_ns, events)`` is called about ten times a second of wall time. Ctrl-C
    stops the run within a fraction of a second: the traces so far are flushed, the summary
    (marked ``interrupted_at_s``) written, and :class:`RunInterrupted` raised with the partial
    result. With ``max_trace_bytes`` the run stops with :class:`ScenarioError` once the
    streamed traces reach that many bytes (uncompressed), before they fill a disk.

    ``pcap=FILE`` writes every packet of the run as pcapng (IPv4, TCP and MPTCP headers,
    stamped in simulated time) as seen at ``pcap_at``: ``"sender"`` (the server: data leaving,
    ACKs arriving), ``"receiver"`` (the client) or ``"links"`` (each link's output, one
    interface per link and direction). ``max_trace_bytes`` bounds it too.
    """
    start = time.perf_counter()
    py_scheduler: object | None = None
    if scheduler is not None and not isinstance(scheduler, str):
        py_scheduler = scheduler
        overrides["scheduler"] = f"python:{type(scheduler).__name__}"
    elif scheduler is not None:
        overrides["scheduler"] = scheduler
        if is_reference(scheduler):
            py_scheduler = load_scheduler(scheduler)
    if isinstance(scenario, Scenario):
        if overrides and py_scheduler is None:
            raise ScenarioError("overrides cannot be applied to a loaded Scenario; use load()")
        model = scenario
    else:
        model = load(scenario, _expand(overrides))
    config = to_native(model)
    if py_scheduler is None and is_reference(config["scheduler"]):
        py_scheduler = load_scheduler(config["scheduler"])
    interval_ns = sample_interval_ns(sample_interval)
    if chunk_rows < 1:
        raise ScenarioError(f"chunk_rows: must be >= 1, got {chunk_rows!r}")
    out_dir = None if out is None else Path(out)
    traced = (out_dir is not None) if trace is None else bool(trace)
    sink: _traces.ParquetSink | None = None
    if out_dir is not None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ScenarioError(f"out {out_dir}: cannot write: {exc.strerror or exc}") from None
        if traced:
            sink = _traces.ParquetSink(out_dir, max_bytes=max_trace_bytes)
    extra: dict[str, Any] = {} if py_scheduler is None else {"scheduler": py_scheduler}
    stop = _Interrupt()
    extra["progress"] = stop.watching(progress)
    if pcap is not None:
        if pcap_at not in PCAP_VANTAGES:
            raise ScenarioError(
                f"pcap_at: expected one of {', '.join(PCAP_VANTAGES)}, got {pcap_at!r}"
            )
        extra["pcap"] = str(Path(pcap))
        extra["pcap_at"] = pcap_at
        if max_trace_bytes is not None:
            extra["pcap_max_bytes"] = max_trace_bytes
    if traced:
        extra["sample_interval_ns"] = interval_ns
        if sink is not None:
            extra["sink"] = sink
            extra["chunk_rows"] = chunk_rows
    try:
        with stop.installed():
            summary_json, columns = native().run(json.dumps(config), traced, **extra)
    except ScenarioError:
        raise  # from the sink (a limit): already one line naming the setting
    except ValueError as exc:
        raise ScenarioError(toml_keys(" ".join(str(exc).split()))) from None
    except OSError as exc:  # from the sink: the output directory
        raise ScenarioError(f"out {out_dir}: cannot write: {exc.strerror or exc}") from None
    finally:
        if sink is not None:
            sink.close()
    summary: dict[str, Any] = json.loads(summary_json)
    loop_wall_s = summary.get("wall_s")
    traces = None
    if columns is not None:
        traces = {name: table_from_columns(cols) for name, cols in columns.items()}
    if benefit:
        from .benefit import with_benefit

        with_benefit(summary, config, lambda text: native().run(text, False))
    summary["wall_s"] = time.perf_counter() - start
    if out_dir is not None:
        _traces.write_json(out_dir / "summary.json", summary)
        _traces.write_json(out_dir / "scenario.json", config)
    result = Result(
        summary=summary,
        scenario=config,
        loop_wall_s=float(loop_wall_s) if isinstance(loop_wall_s, int | float) else None,
        traces=traces,
        out=out_dir,
    )
    if summary.get("interrupted_at_s") is not None:
        raise RunInterrupted(result)
    return result

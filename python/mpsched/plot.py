"""Plots of runs written by ``mpsched run --out DIR``.

:func:`plot_run` draws every plot that applies to one run (PNG files and an ``index.html``
that shows them all); :func:`compare_runs` draws the same quantities for several runs on one
set of axes, one colour per run (and one line style per subflow), as the papers compare
schedulers. Uses matplotlib (a dependency of the package); drawing uses the Agg backend
and never opens a window.

Each plot is a function ``(runs, labels) -> Figure | None`` in :data:`PLOTS`; it returns None
when the runs have nothing to show (e.g. no scheduler values).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import traces
from .gaps import SEGMENT_COLUMNS as SEGMENT_GAP_COLUMNS
from .gaps import gap_truth
from .traces import SSTHRESH_INFINITE, Run, load_run, mss_bytes

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .api import Result

__all__ = ["PLOTS", "compare_runs", "figures", "mark_schedule", "plot_run", "schedule_marks"]

WIDTH_IN = 9.0
PANEL_IN = 2.5
DPI = 150
# Colour-blind-safe (Okabe-Ito), readable in print and in grey scale by line style.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
STYLES = ["-", "--", ":", "-."]
RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "lines.linewidth": 1.4,
    "figure.titlesize": 12,
    "figure.titleweight": "bold",
}
MAX_POINTS = 4000  # time series are binned down to this many points
MAX_SCATTER = 40_000


def _matplotlib(*, agg: bool = True) -> Any:
    """matplotlib, with the Agg backend when drawing to files (``agg=False`` keeps the
    caller's backend: a notebook shows the figures inline)."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError(
            "plotting needs matplotlib, which `pip install .` installs: pip install matplotlib"
        ) from None
    if agg:
        matplotlib.use("Agg", force=True)
    return matplotlib


# --- helpers ---


@dataclass
class Series:
    """What a line stands for: a run and (optionally) one of its subflows."""

    run: int
    subflow: int | None
    label: str


def _style(compare: bool, series: Series) -> dict[str, Any]:
    if compare:
        style = STYLES[(series.subflow or 0) % len(STYLES)] if series.subflow is not None else "-"
        return {"color": COLORS[series.run % len(COLORS)], "linestyle": style}
    if series.subflow is None:  # the connection total of a single run
        return {"color": "#000000", "linestyle": "-"}
    return {"color": COLORS[series.subflow % len(COLORS)], "linestyle": "-"}


def _subflow_series(runs: Sequence[Run], labels: Sequence[str]) -> list[Series]:
    compare = len(runs) > 1
    out = []
    for r, run in enumerate(runs):
        for i, name in enumerate(run.subflow_names):
            out.append(Series(r, i, f"{labels[r]}: {name}" if compare else name))
    return out


def _figure(panels: int, title: str, labels: Sequence[str], height: float = PANEL_IN) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, 0.9 + height * panels), layout="constrained", dpi=DPI)
    subtitle = labels[0] if len(labels) == 1 else f"{len(labels)} runs"
    fig.suptitle(f"{title}: {subtitle}")
    return fig


def _legend(fig: Figure, axes: Sequence[Axes]) -> None:
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    if handles:
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=min(len(handles), 3),
            frameon=False,
        )


def _time_axis(ax: Axes) -> None:
    ax.set_xlabel("time (s)")
    ax.set_xlim(left=0)


# --- the scenario's schedule on the time axes ---

OUTAGE_COLOR = "#999999"
CHANGE_COLOR = "#555555"


@dataclass(frozen=True)
class ScheduleMarks:
    """What a run's ``[[path.schedule]]`` did, in seconds: the spans a path was down (or gone)
    and the other changes (rate, delay, jitter) with a short description."""

    outages: tuple[tuple[float, float, str], ...]
    changes: tuple[tuple[float, str], ...]


def _rate_text(bps: float) -> str:
    return f"{bps / 1e6:g} Mbit/s" if bps >= 1e6 else f"{bps / 1e3:g} kbit/s"


def schedule_marks(runs: Sequence[Run]) -> ScheduleMarks:
    """The schedule of every path of ``runs`` (each distinct mark once), from their normalized
    scenarios; a path still down at the end is down until the run's duration."""
    outages: dict[tuple[float, float, str], None] = {}
    changes: dict[tuple[float, str], None] = {}
    for run in runs:
        end = (run.scenario.get("duration_ns") or 0) / 1e9
        for path in run.scenario.get("paths", []):
            name = path.get("name", "?")
            down_since: float | None = None
            for entry in sorted(path.get("schedule") or [], key=lambda e: e["at_ns"]):
                at = entry["at_ns"] / 1e9
                down = entry.get("up") is False or entry.get("present") is False
                up = entry.get("up") is True or entry.get("present") is True
                if down and down_since is None:
                    down_since = at
                elif up and down_since is not None:
                    outages[(down_since, at, f"{name} down")] = None
                    down_since = None
                what = []
                if entry.get("rate_bps") is not None:
                    what.append(_rate_text(entry["rate_bps"]))
                if entry.get("delay_down_ns") is not None:
                    what.append(f"delay {entry['delay_down_ns'] / 1e6:g} ms")
                if entry.get("jitter_down_ns") is not None:
                    what.append(f"jitter {entry['jitter_down_ns'] / 1e6:g} ms")
                if what:
                    changes[(at, f"{name}: {', '.join(what)}")] = None
            if down_since is not None:
                outages[(down_since, max(end, down_since), f"{name} down")] = None
    return ScheduleMarks(tuple(outages), tuple(changes))


def _is_time_axis(ax: Axes, time_axes: Sequence[Axes]) -> bool:
    return any(ax is t or ax.get_shared_x_axes().joined(ax, t) for t in time_axes)


def mark_schedule(fig: Figure, runs: Sequence[Run]) -> None:
    """Shade each outage and draw a dotted line at each other change of the scenario's schedule
    on every time axis of ``fig`` (those labelled time and those sharing their x axis); the
    topmost of them names each."""
    marks = schedule_marks(runs)
    if not marks.outages and not marks.changes:
        return
    labelled = [ax for ax in fig.axes if ax.get_xlabel() == "time (s)"]
    axes = [ax for ax in fig.axes if _is_time_axis(ax, labelled)]
    if not axes:
        return
    top = min(axes, key=lambda ax: -ax.get_position().y1)
    for ax in axes:
        xlim = ax.get_xlim()
        for start, end, text in marks.outages:
            ax.axvspan(start, end, color=OUTAGE_COLOR, alpha=0.2, linewidth=0, zorder=0)
            if ax is top:
                ax.annotate(
                    text,
                    (start, 1.0),
                    xycoords=("data", "axes fraction"),
                    xytext=(2, -2),
                    textcoords="offset points",
                    va="top",
                    fontsize=8,
                    color=CHANGE_COLOR,
                )
        for at, text in marks.changes:
            ax.axvline(at, color=CHANGE_COLOR, linestyle=":", linewidth=1.0, zorder=0)
            if ax is top:
                ax.annotate(
                    text,
                    (at, 1.0),
                    xycoords=("data", "axes fraction"),
                    xytext=(2, -12),
                    textcoords="offset points",
                    va="top",
                    fontsize=8,
                    color=CHANGE_COLOR,
                )
        ax.set_xlim(xlim)  # the marks do not widen the axis


def _bin(t_ns: np.ndarray, values: np.ndarray, how: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    """Bins a per-event series to at most MAX_POINTS points (mean, max or last per bin)."""
    import numpy as np

    if len(t_ns) <= MAX_POINTS:
        return t_ns / 1e9, values.astype(np.float64)
    t0, t1 = int(t_ns.min()), int(t_ns.max())
    width = max((t1 - t0) / MAX_POINTS, 1.0)
    idx = np.minimum(((t_ns - t0) / width).astype(np.int64), MAX_POINTS - 1)
    counts = np.bincount(idx, minlength=MAX_POINTS)
    keep = counts > 0
    centers = (t0 + (np.arange(MAX_POINTS) + 0.5) * width) / 1e9
    if how == "mean":
        sums = np.bincount(idx, weights=values.astype(np.float64), minlength=MAX_POINTS)
        return centers[keep], sums[keep] / counts[keep]
    if how == "max":
        out = np.full(MAX_POINTS, -np.inf)
        np.maximum.at(out, idx, values.astype(np.float64))
        return centers[keep], out[keep]
    last = np.zeros(MAX_POINTS)
    last[idx] = values  # numpy keeps the last assignment of repeated indices
    return centers[keep], last[keep]


# Bins of an envelope (`_envelope`): few enough that a fast oscillation reads as a band.
ENVELOPE_BINS = 200


def _envelope(
    t_ns: np.ndarray, values: np.ndarray, bins: int = ENVELOPE_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Min, mean and max of a sampled series in `bins` equal time bins: (centers in s, min,
    mean, max, bin width in s)."""
    import numpy as np

    t0, t1 = int(t_ns.min()), int(t_ns.max())
    width = max((t1 - t0) / bins, 1.0)
    idx = np.minimum(((t_ns - t0) / width).astype(np.int64), bins - 1)
    v = values.astype(np.float64)
    counts = np.bincount(idx, minlength=bins)
    keep = counts > 0
    lo = np.full(bins, np.inf)
    hi = np.full(bins, -np.inf)
    np.minimum.at(lo, idx, v)
    np.maximum.at(hi, idx, v)
    mean = np.bincount(idx, weights=v, minlength=bins)[keep] / counts[keep]
    centers = (t0 + (np.arange(bins) + 0.5) * width) / 1e9
    return centers[keep], lo[keep], mean, hi[keep], width / 1e9


def _window_ns(run: Run) -> int:
    duration_ns = int(float(run.summary.get("duration_s") or 1.0) * 1e9)
    for ms in (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000):
        if ms * 1_000_000 * 300 >= duration_ns:
            return ms * 1_000_000
    return 60_000_000_000


def _ms(ns: int) -> str:
    return f"{ns / 1e6:g} ms" if ns < 1_000_000_000 else f"{ns / 1e9:g} s"


# --- the plots ---


def plot_throughput(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Sending rate and goodput per subflow over time (and the connection's goodput)."""
    compare = len(runs) > 1
    frames = [traces.rates(run.frame("subflows"), _window_ns(run)) for run in runs]
    if all(f.empty for f in frames):
        return None
    window = _window_ns(runs[0])
    fig = _figure(3 if compare else 2, "Throughput over time", labels)
    axes = fig.subplots(3 if compare else 2, 1, sharex=True)
    send_ax, good_ax = axes[0], axes[1]
    for series in _subflow_series(runs, labels):
        f = frames[series.run]
        rows = f[f["subflow"] == series.subflow]
        style = _style(compare, series)
        send_ax.plot(rows["t_s"], rows["send_mbps"], label=series.label, **style)
        good_ax.plot(rows["t_s"], rows["goodput_mbps"], label=series.label, **style)
    total_ax = axes[2] if compare else good_ax
    for r, f in enumerate(frames):
        if f.empty:
            continue
        total = f.groupby("t_s", as_index=False)["goodput_mbps"].sum()
        label = f"{labels[r]}: total" if compare else "connection (all subflows)"
        style = _style(compare, Series(r, None, label))
        total_ax.plot(
            total["t_s"], total["goodput_mbps"], label=label, **{**style, "linewidth": 1.8}
        )
    send_ax.set_title(
        f"sending rate per subflow (payload incl. retransmissions, {_ms(window)} bins)"
    )
    send_ax.set_ylabel("Mbit/s")
    good_ax.set_title("goodput per subflow (bytes delivered in order to the application)")
    good_ax.set_ylabel("Mbit/s")
    if compare:
        total_ax.set_title("connection goodput")
        total_ax.set_ylabel("Mbit/s")
    for ax in axes:
        ax.set_ylim(bottom=0)
    _time_axis(axes[-1])
    _legend(fig, axes)
    return fig


def plot_subflow_state(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """cwnd, ssthresh, smoothed RTT and bytes in flight per subflow over time."""
    import numpy as np

    frames = [run.frame("subflows") for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    fig = _figure(4, "Subflow state over time (sampled)", labels, height=2.1)
    axes = fig.subplots(4, 1, sharex=True)
    for series in _subflow_series(runs, labels):
        f = frames[series.run]
        rows = f[f["subflow"] == series.subflow]
        t = rows["t_ns"].to_numpy() / 1e9
        style = _style(compare, series)
        axes[0].plot(t, rows["cwnd_segments"], label=series.label, **style)
        ssthresh = rows["ssthresh_segments"].to_numpy(dtype=np.float64)
        ssthresh[ssthresh >= SSTHRESH_INFINITE] = np.nan
        axes[1].plot(t, ssthresh, label=series.label, **style)
        srtt = rows["srtt_ns"].to_numpy(dtype=np.float64) / 1e6
        srtt[srtt <= 0] = np.nan
        axes[2].plot(t, srtt, label=series.label, **style)
        axes[3].plot(t, rows["in_flight_segments"], label=series.label, **style)
    titles = [
        ("congestion window", "cwnd (segments)"),
        ("slow-start threshold (gaps: infinite, before the first loss)", "ssthresh (segments)"),
        ("smoothed RTT", "srtt (ms)"),
        ("data in flight", "in flight (segments)"),
    ]
    for ax, (title, ylabel) in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    interval = _sample_interval(frames[0])
    if interval:
        axes[0].set_title(f"congestion window (sampled every {_ms(interval)})")
    _time_axis(axes[-1])
    _legend(fig, axes)
    return fig


def _sample_interval(frame: Any) -> int | None:
    import numpy as np

    t = np.unique(frame["t_ns"].to_numpy()) if len(frame) else []
    return int(np.min(np.diff(t))) if len(t) > 1 else None


def plot_queues(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Backlog of each path's bottleneck queue (data direction) and its queueing delay."""
    import numpy as np

    frames = [run.frame("subflows", ["t_ns", "subflow", "queue_bytes"]) for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    fig = _figure(2, "Bottleneck queue (data direction)", labels)
    axes = fig.subplots(2, 1, sharex=True)
    for series in _subflow_series(runs, labels):
        run = runs[series.run]
        f = frames[series.run]
        rows = f[f["subflow"] == series.subflow]
        t_ns = rows["t_ns"].to_numpy()
        backlog = rows["queue_bytes"].to_numpy(dtype=np.float64)
        style = _style(compare, series)
        axes[0].plot(t_ns / 1e9, backlog / 1e3, label=series.label, **style)
        paths = run.scenario.get("paths") or []
        if series.subflow is not None and series.subflow < len(paths):
            path = paths[series.subflow]
            rate = np.array([traces.link_rate_bps(path, int(t)) for t in t_ns], dtype=np.float64)
            axes[1].plot(t_ns / 1e9, backlog * 8 / rate * 1e3, label=series.label, **style)
            if not compare:
                limit = traces.queue_limit_bytes(path)
                axes[0].axhline(
                    limit / 1e3,
                    color=style["color"],
                    linestyle=(0, (1, 3)),
                    linewidth=1.0,
                    label=f"{series.label}: limit",
                )
    axes[0].set_title("queue backlog (wire bytes, packet in service included; dotted: limit)")
    axes[0].set_ylabel("backlog (KB)")
    axes[1].set_title("queueing delay a packet arriving now would see (backlog / link rate)")
    axes[1].set_ylabel("delay (ms)")
    for ax in axes:
        ax.set_ylim(bottom=0)
    _time_axis(axes[-1])
    _legend(fig, axes)
    return fig


def plot_data_ack(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Data ACK progress over time and the size of each Data ACK step (STMS Fig. 5)."""
    import numpy as np

    cols = ["t_ns", "data_ack_bytes", "data_ack_step_bytes"]
    frames = [run.frame("acks", cols) for run in runs]
    if all(f.empty for f in frames):
        return None
    fig = _figure(3, "Data ACK progress (STMS Fig. 5)", labels)
    axes = fig.subplot_mosaic([["progress", "zoom"], ["steps", "steps"], ["cdf", "cdf"]])
    # The zoom: one second (at most a quarter of the run) around the first run's largest step.
    first = next(f for f in frames if not f.empty)
    t_first = first["t_ns"].to_numpy()
    biggest = int(t_first[int(np.argmax(first["data_ack_step_bytes"].to_numpy()))])
    span = min(1_000_000_000, max(int(t_first.max() - t_first.min()) // 4, 1))
    lo, hi = biggest - span // 2, biggest + span // 2
    sampled = False
    for r, f in enumerate(frames):
        if f.empty:
            continue
        color = COLORS[r % len(COLORS)]
        t = f["t_ns"].to_numpy()
        # An ACK carries the Data ACK its receiver had then; ACKs of a slower subflow carry
        # older values. The server's cumulative Data ACK is the running maximum.
        acked = np.maximum.accumulate(f["data_ack_bytes"].to_numpy())
        x, y = _bin(t, acked, "max")
        axes["progress"].plot(x, y / 1e6, color=color, label=labels[r])
        near = (t >= lo) & (t <= hi)
        x, y = _bin(t[near], acked[near], "max")
        axes["zoom"].plot(x, y / 1e6, color=color, drawstyle="steps-post", label=labels[r])
        step = f["data_ack_step_bytes"].to_numpy()
        moved = step > 0
        mss = mss_bytes(runs[r].scenario.get("protocol", "mptcp"))
        ts, steps = t[moved], step[moved] / mss
        if len(steps) > MAX_SCATTER:  # keep every large step, thin out the small ones
            sampled = True
            big = steps >= np.quantile(steps, 0.99)
            stride = max(int(len(steps) / MAX_SCATTER), 1)
            keep = big | (np.arange(len(steps)) % stride == 0)
            ts, steps = ts[keep], steps[keep]
        axes["steps"].scatter(
            ts / 1e9,
            steps,
            s=6,
            color=color,
            alpha=0.5,
            linewidths=0,
            label=labels[r],
            rasterized=True,
        )
        xs, ps = traces.cdf(step[moved] / mss)
        axes["cdf"].step(xs, ps, where="post", color=color, label=labels[r])
    axes["progress"].set_title("cumulative Data ACK at the server")
    axes["progress"].set_ylabel("Data ACK (MB)")
    axes["progress"].set_ylim(bottom=0)
    axes["progress"].axvspan(lo / 1e9, hi / 1e9, color="#999999", alpha=0.3, linewidth=0)
    axes["progress"].axvline(biggest / 1e9, color="#999999", linestyle=":", linewidth=1.0)
    _time_axis(axes["progress"])
    axes["zoom"].set_title(f"zoom (shaded, dotted): largest step at {biggest / 1e9:.2f} s")
    axes["zoom"].set_ylabel("Data ACK (MB)")
    axes["zoom"].set_xlabel("time (s)")
    axes["steps"].set_title(
        "size of each Data ACK step"
        + (" (every step >= p99, a sample of the rest)" if sampled else "")
    )
    axes["steps"].set_ylabel("step (segments)")
    axes["steps"].set_yscale("log")
    _time_axis(axes["steps"])
    axes["cdf"].set_title("CDF of Data ACK step sizes (ACKs that moved the Data ACK)")
    axes["cdf"].set_xlabel("step (segments, log scale)")
    axes["cdf"].set_ylabel("CDF")
    axes["cdf"].set_xscale("log")
    axes["cdf"].set_ylim(0, 1.02)
    if len(runs) > 1:
        _legend(fig, [axes["progress"]])
    return fig


def plot_free_cwnd(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Free congestion window at each ACK per subflow: over time and its CDF (STMS Fig. 6)."""
    frames = [run.frame("acks", ["t_ns", "subflow", "free_cwnd_segments"]) for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    fig = _figure(2, "Free cwnd at each ACK: burstiness (STMS Fig. 6)", labels)
    axes = fig.subplots(2, 1)
    for series in _subflow_series(runs, labels):
        f = frames[series.run]
        rows = f[f["subflow"] == series.subflow]
        if rows.empty:
            continue
        free = rows["free_cwnd_segments"].to_numpy()
        style = _style(compare, series)
        x, y = _bin(rows["t_ns"].to_numpy(), free, "mean")
        label = f"{series.label} (mean {free.mean():.1f}, peak {int(free.max())})"
        axes[0].plot(x, y, label=label, **style)
        xs, ps = traces.cdf(free)
        axes[1].step(xs, ps, where="post", label=label, **style)
    binned = any(len(f) > MAX_POINTS for f in frames)
    axes[0].set_title(
        "free cwnd when an ACK arrives (segments a subflow may send at once)"
        + (", mean per time bin" if binned else "")
    )
    axes[0].set_ylabel("free cwnd (segments)")
    axes[0].set_ylim(bottom=0)
    _time_axis(axes[0])
    axes[1].set_title("CDF of the free cwnd at ACKs")
    axes[1].set_xlabel("free cwnd (segments)")
    axes[1].set_ylabel("CDF")
    axes[1].set_ylim(0, 1.02)
    _legend(fig, axes)
    return fig


def plot_bursts(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Packets per burst per subflow: distribution and over time."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    frames = [run.frame("bursts") for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    fig = _figure(2, "Bursts: packets a subflow sends back to back", labels)
    axes = fig.subplots(2, 1)
    biggest = max(int(f["packets"].max()) for f in frames if not f.empty)
    for series in _subflow_series(runs, labels):
        f = frames[series.run]
        rows = f[f["subflow"] == series.subflow]
        if rows.empty:
            continue
        packets = rows["packets"].to_numpy()
        style = _style(compare, series)
        label = (
            f"{series.label} (mean {packets.mean():.2f}, "
            f"p99 {np.quantile(packets, 0.99):.0f}, max {packets.max()})"
        )
        sizes, counts = np.unique(packets, return_counts=True)
        axes[0].plot(
            sizes,
            counts / counts.sum(),
            marker="osD^v"[(series.subflow or 0) % 5],
            markersize=5,
            linestyle="none",
            color=style["color"],
            label=label,
        )
        x, y = _bin(rows["t_ns"].to_numpy(), packets, "mean")
        axes[1].plot(x, y, label=label, **style)
    axes[0].set_title("distribution of burst sizes")
    axes[0].set_ylabel("fraction of bursts (log scale)")
    axes[0].set_yscale("log")
    if biggest > 30:
        axes[0].set_xscale("log")
        axes[0].set_xlabel("packets per burst (log scale)")
    else:
        axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
        axes[0].set_xlabel("packets per burst")
    axes[1].set_title("mean burst size over time")
    axes[1].set_ylabel("packets per burst")
    axes[1].set_ylim(bottom=0)
    _time_axis(axes[1])
    _legend(fig, axes)
    return fig


def plot_buffers(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Connection-level reorder queue, receive buffer and send buffer over time."""
    frames = [run.frame("connection") for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    send_title = "send buffer"
    fig = _figure(3, "Connection buffers over time (sampled)", labels)
    axes = fig.subplots(3, 1, sharex=True)
    for r, f in enumerate(frames):
        if f.empty:
            continue
        t = f["t_ns"].to_numpy() / 1e9
        held = COLORS[r % len(COLORS)] if compare else "#000000"
        window = COLORS[r % len(COLORS)] if compare else COLORS[0]
        axes[0].plot(t, f["reorder_bytes"] / 1e3, color=held, label=labels[r])
        axes[1].plot(
            t,
            f["rcvbuf_used_bytes"] / 1e3,
            color=held,
            label=labels[r] if compare else "held by the client (out of order)",
        )
        axes[1].plot(
            t,
            f["rwnd_bytes"] / 1e3,
            color=window,
            linestyle="--",
            linewidth=1.0,
            label="_" if compare else "advertised receive window",
        )
        # The application refills the send buffer in blocks: a sawtooth too fast to see over
        # a long run, drawn as its range and mean per bin.
        t_ns = f["t_ns"].to_numpy()
        used = f["sndbuf_used_bytes"].to_numpy()
        if len(t_ns) > 4 * ENVELOPE_BINS:
            centers, lo, mean, hi, width = _envelope(t_ns, used / 1e3)
            send_title = f"send buffer (line: mean, shaded: range, per {width * 1e3:.0f} ms)"
            axes[2].fill_between(centers, lo, hi, color=held, alpha=0.18, linewidth=0)
            axes[2].plot(
                centers,
                mean,
                color=held,
                label=labels[r] if compare else "written, not yet Data-ACKed",
            )
        else:
            axes[2].plot(
                t,
                used / 1e3,
                color=held,
                label=labels[r] if compare else "written, not yet Data-ACKed",
            )
        if not compare:
            for ax, key, what in (
                (axes[1], "rcvbuf_bytes", "receive"),
                (axes[2], "sndbuf_bytes", "send"),
            ):
                size = runs[r].scenario.get(key)
                if isinstance(size, int):
                    ax.axhline(
                        size / 1e3,
                        color="#888888",
                        linestyle=":",
                        linewidth=1.2,
                        label=f"{what} buffer size",
                    )
    axes[0].set_title("connection-level out-of-order queue at the client (OTIAS Fig. 5)")
    axes[0].set_ylabel("reorder queue (KB)")
    axes[1].set_title(
        "receive buffer (STMS sec. 3.2)"
        + (": solid held, dashed advertised window" if compare else "")
    )
    axes[1].set_ylabel("KB")
    axes[2].set_title(send_title)
    axes[2].set_ylabel("KB")
    for ax in axes:
        ax.set_ylim(bottom=0)
        top = ax.get_ylim()[1]
        ax.set_ylim(top=top * 1.25)  # room for the legend above the lines
    _time_axis(axes[-1])
    if compare:
        _legend(fig, axes[:1])
    else:
        for ax in axes[1:]:
            ax.legend(loc="upper right", ncols=3, frameon=True, framealpha=0.9)
    return fig


def plot_delays(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """CDFs of the out-of-order delay and of the end-to-end delay (STMS Fig. 10)."""
    cols = ["subflow", "ooo_delay_ns", "e2e_delay_ns"]
    frames = [run.frame("segments", cols) for run in runs]
    if all(f.empty for f in frames):
        return None
    compare = len(runs) > 1
    fig = _figure(1, "Per-segment delays (STMS Fig. 10)", labels, height=3.6)
    axes = fig.subplots(1, 2)
    for r, f in enumerate(frames):
        if f.empty:
            continue
        groups: list[tuple[Series, Any]] = [
            (Series(r, None, f"{labels[r]}: all" if compare else "all segments"), f)
        ]
        if not compare:
            for i, name in enumerate(runs[r].subflow_names):
                rows = f[f["subflow"] == i]
                if not rows.empty:
                    groups.append((Series(r, i, f"via {name}"), rows))
        for series, rows in groups:
            style = _style(compare, series)
            for ax, col in zip(axes, ("ooo_delay_ns", "e2e_delay_ns"), strict=True):
                values = rows[col].to_numpy()
                xs, ps = traces.cdf(values)
                label = f"{series.label} (mean {values.mean() / 1e6:.1f} ms)"
                ax.step(xs / 1e6, ps, where="post", label=label, **style)
    axes[0].set_title("out-of-order delay\n(delivered - first received)")
    axes[0].set_xlabel("delay (ms)")
    axes[1].set_title("end-to-end delay\n(delivered - first sent)")
    axes[1].set_xlabel("delay (ms)")
    for ax in axes:
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(left=0)
        ax.legend(loc="lower right", frameon=True)
    return fig


TOTALS = [
    ("goodput_mbps", "goodput", "Mbit/s", 1.0),
    ("share", "share of delivered bytes", "%", 100.0),
    ("loss_rate", "loss rate (drops / sent)", "%", 100.0),
    ("retransmits", "retransmissions", "packets", 1.0),
    ("rtos", "timeouts (RTO)", "count", 1.0),
    ("reinjections", "reinjections", "segments", 1.0),
    ("penalizations", "penalisations", "count", 1.0),
    ("queue_drops", "queue drops (data)", "packets", 1.0),
    ("random_drops", "random drops (data)", "packets", 1.0),
]


def plot_totals(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Per-subflow totals from the summaries (MPTCP-SF Table 3), and the aggregation benefit
    against plain TCP on each path alone when the run has it."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    subflows = [
        [s for s in run.summary.get("subflows") or [] if isinstance(s, dict)] for run in runs
    ]
    if not any(subflows):
        return None
    names: list[str] = []
    for run in runs:
        names += [n for n in run.subflow_names if n not in names]
    benefit = [run for run in runs if run.summary.get("baselines")]
    mosaic = [[key for key, *_ in TOTALS[i : i + 3]] for i in range(0, len(TOTALS), 3)]
    if benefit:
        mosaic.append(["benefit"] * 3)
    fig = _figure(len(mosaic), "Per-subflow totals (MPTCP-SF Table 3)", labels, height=2.2)
    axes = fig.subplot_mosaic(mosaic)
    width = 0.8 / len(runs)
    x = np.arange(len(names))
    for key, title, unit, scale in TOTALS:
        ax = axes[key]
        peak = 0.0
        for r, subs in enumerate(subflows):
            by_name = {s.get("name"): s for s in subs}
            values = [float(by_name.get(n, {}).get(key) or 0) * scale for n in names]
            peak = max([peak, *values])
            bars = ax.bar(
                x + (r - (len(runs) - 1) / 2) * width,
                values,
                width,
                color=COLORS[r % len(COLORS)],
                label=labels[r],
            )
            spec = "{:,.0f}" if unit in ("count", "packets", "segments") else "{:,.3g}"
            ax.bar_label(bars, labels=[spec.format(v) for v in values], fontsize=8, padding=2)
        ax.set_xticks(x, names)
        ax.set_title(title)
        ax.set_ylabel(unit)
        if peak > 0:
            ax.set_ylim(0, peak * 1.18)  # room for the value labels
        else:
            ax.set_ylim(0, 1)
            ax.set_yticks([0])
            ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", color="#666666")
        if unit in ("count", "packets", "segments"):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="x", visible=False)
    if benefit:
        ax = axes["benefit"]
        ticks: list[str] = []
        heights: list[float] = []
        colors: list[str] = []
        for run in benefit:
            r = runs.index(run)
            for b in run.summary["baselines"]:
                ticks.append(f"TCP alone on {b['name']}")
                heights.append(float(b["goodput_mbps"]))
                colors.append("#999999")
            value = run.summary.get("aggregation_benefit")
            shown = "n/a" if value is None else f"{value:+.2f}"
            ticks.append(f"{labels[r]}: benefit {shown}")
            heights.append(float(run.summary.get("goodput_mbps") or 0))
            colors.append(COLORS[r % len(COLORS)])
        ax.barh(np.arange(len(ticks)), heights, color=colors)
        ax.set_yticks(np.arange(len(ticks)), ticks)
        ax.invert_yaxis()
        ax.set_xlabel("goodput (Mbit/s)")
        ax.set_title("aggregation benefit (Kaspar): -1 nothing, 0 best single path, 1 sum of paths")
        ax.grid(axis="y", visible=False)
    if len(runs) > 1:
        _legend(fig, [axes["goodput_mbps"]])
    return fig


def plot_flows(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Competing flows (``[[flow]]``): each connection from its SYN to its last byte, and the
    CDF of their completion times (paper 004's AFT is its mean)."""
    import numpy as np

    flows = [[f for f in run.summary.get("flows") or [] if isinstance(f, dict)] for run in runs]
    if not any(flows):
        return None
    compare = len(runs) > 1
    fig = _figure(1, "Competing flows (MPTCP-SF Figs. 5, 10)", labels, height=4.2)
    timeline, cdf = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    sizes = {"<100 KB": "#1f77b4", "100-400 KB": "#ff7f0e", ">=400 KB": "#2ca02c"}

    def size_class(size: Any) -> str:
        if not isinstance(size, int | float):
            return "bulk"
        return "<100 KB" if size < 100e3 else "100-400 KB" if size < 400e3 else ">=400 KB"

    shown: set[str] = set()
    for r, (run, conns) in enumerate(zip(runs, flows, strict=True)):
        end = float(run.summary.get("duration_s") or 0)
        offset = (r - (len(runs) - 1) / 2) * 0.8 / len(runs)
        for f in conns:
            start = float(f.get("start_s") or 0)
            done = f.get("completion_s")
            stop = start + float(done) if done is not None else max(end, start)
            cls = size_class(f.get("size_bytes"))
            color = COLORS[r % len(COLORS)] if compare else sizes.get(cls, "#999999")
            label = labels[r] if compare else cls
            timeline.plot(
                [start, stop],
                [f["flow"] + offset] * 2,
                color=color,
                linestyle="-" if done is not None else ":",
                linewidth=2,
                label=None if label in shown else label,
            )
            shown.add(label)
        done = np.array([float(f["completion_s"]) for f in conns if f.get("completion_s")])
        if done.size:
            xs, ps = traces.cdf(done)
            name = f"{labels[r]}: " if compare else ""
            cdf.step(
                xs,
                ps,
                where="post",
                color=COLORS[r % len(COLORS)],
                label=f"{name}{done.size} finished, mean {done.mean():.3f} s",
            )
    timeline.set_title("each connection, SYN to last byte (dotted: bulk or unfinished)")
    timeline.set_xlabel("time (s)")
    timeline.set_ylabel("flow (0: the main connection)")
    timeline.invert_yaxis()
    timeline.legend(loc="lower left", frameon=True)
    cdf.set_title("completion times")
    cdf.set_xlabel("completion (s)")
    cdf.set_ylabel("CDF")
    cdf.set_ylim(0, 1.02)
    cdf.set_xlim(left=0)
    cdf.legend(loc="lower right", frameon=True)
    return fig


def _plot_needed_gap(ax: Axes, run: Run, color: str, label: str) -> None:
    """Beside the STMS gap, the gap the slow subflow's segments needed (mpsched.gaps)."""
    segments = run.frame("segments", SEGMENT_GAP_COLUMNS)
    try:
        needed = gap_truth(segments)
    except ValueError:
        return
    if needed.empty:
        return
    x, y = _bin(needed["t_ns"].to_numpy(), needed["needed"].to_numpy(), "mean")
    ax.plot(x, y, color=color, linestyle="--", linewidth=1.0, label=f"{label}: needed")


def plot_scheduler(runs: Sequence[Run], labels: Sequence[str]) -> Figure | None:
    """Values the scheduler recorded over time (e.g. the STMS gap, Fig. 12)."""
    frames = [run.frame("scheduler") for run in runs]
    keys: list[str] = []
    for f in frames:
        if not f.empty:
            keys += [k for k in sorted(f["key"].unique()) if k not in keys]
    if not keys:
        return None
    keys = keys[:8]
    fig = _figure(len(keys), "Scheduler values over time (e.g. STMS gap, Fig. 12)", labels, 2.0)
    axes = fig.subplots(len(keys), 1, sharex=True, squeeze=False)[:, 0]
    for ax, key in zip(axes, keys, strict=True):
        for r, f in enumerate(frames):
            rows = f[f["key"] == key] if not f.empty else f
            if rows.empty:
                continue
            x, y = _bin(rows["t_ns"].to_numpy(), rows["value"].to_numpy(), "mean")
            ax.plot(x, y, color=COLORS[r % len(COLORS)], label=labels[r], drawstyle="steps-post")
            if key == "gap":
                _plot_needed_gap(ax, runs[r], COLORS[r % len(COLORS)], labels[r])
        ax.set_title(key + (" (binned mean)" if len(frames[0]) > MAX_POINTS else ""))
        ax.set_ylabel(key)
    _time_axis(axes[-1])
    _legend(fig, axes)
    return fig


PLOTS: dict[str, tuple[Callable[[Sequence[Run], Sequence[str]], Figure | None], str]] = {
    "throughput": (plot_throughput, "Sending rate and goodput per subflow over time."),
    "subflow_state": (plot_subflow_state, "cwnd, ssthresh, srtt and in-flight per subflow."),
    "queues": (plot_queues, "Bottleneck queue backlog and queueing delay per path."),
    "buffers": (plot_buffers, "Reorder queue, receive buffer and send buffer occupancy."),
    "delays": (plot_delays, "CDFs of out-of-order and end-to-end delay per segment."),
    "data_ack": (plot_data_ack, "Data ACK progress and step sizes."),
    "free_cwnd": (plot_free_cwnd, "Free cwnd at each ACK (burstiness)."),
    "bursts": (plot_bursts, "Packets per burst per subflow."),
    "totals": (plot_totals, "Per-subflow totals (and aggregation benefit when computed)."),
    "flows": (plot_flows, "Competing flows: each connection's lifetime, completion-time CDF."),
    "scheduler": (plot_scheduler, "Values the scheduler recorded over time."),
}
"""Every plot: ``name -> (function, caption)``, in the order of the index page."""


# --- drawing runs ---


def _draw(runs: Sequence[Run], labels: Sequence[str], out: Path, title: str) -> list[Path]:
    matplotlib = _matplotlib()
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    captions: list[tuple[str, str]] = []
    with matplotlib.rc_context(RC):
        for name, (function, caption) in PLOTS.items():
            fig = function(runs, labels)
            if fig is not None:
                mark_schedule(fig, runs)
            for run in runs:  # keep one plot's tables in memory at a time
                run.forget()
            if fig is None:
                continue
            path = out / f"{name}.png"
            fig.savefig(path, dpi=DPI)
            written.append(path)
            captions.append((path.name, caption))
    index = out / "index.html"
    index.write_text(_index_html(runs, labels, captions, title), "utf-8")
    written.append(index)
    return written


def _fmt(value: Any, spec: str = ".2f") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return f"{value:{spec}}"


def _index_html(
    runs: Sequence[Run], labels: Sequence[str], images: list[tuple[str, str]], title: str
) -> str:
    e = html.escape
    head = [
        "run",
        "scheduler",
        "duration (s)",
        "goodput (Mbit/s)",
        "completion (s)",
        "OOO delay mean / p99 (ms)",
        "aggregation benefit",
    ]
    rows = []
    for run, label in zip(runs, labels, strict=True):
        s = run.summary
        ooo = s.get("ooo_delay_ms") or {}
        rows.append(
            [
                label,
                traces.run_scheduler(s),
                _fmt(s.get("duration_s"), "g"),
                _fmt(s.get("goodput_mbps")),
                _fmt(s.get("completion_s"), ".3f"),
                f"{_fmt(ooo.get('mean'))} / {_fmt(ooo.get('p99'))}",
                _fmt(s.get("aggregation_benefit"), "+.3f"),
            ]
        )
    table = (
        "<table><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
        + "</table>"
    )
    figures = "\n".join(
        f'<figure><img src="{e(name)}" alt="{e(caption)}"><figcaption>{e(caption)}'
        f"</figcaption></figure>"
        for name, caption in images
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; max-width: 1400px; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ margin: 0 0 2em 0; }}
img {{ max-width: 100%; border: 1px solid #ddd; }}
figcaption {{ color: #444; }}
</style></head>
<body><h1>{e(title)}</h1>
{table}
{figures}
</body></html>
"""


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> list[Path]:
    """Draw every plot that applies to the run in ``run_dir`` into ``out`` (default
    ``run_dir/plots``); returns the files written (PNGs, then ``index.html``)."""
    run = load_run(run_dir)
    target = Path(out) if out is not None else run.path / "plots"
    label = f"{traces.run_scheduler(run.summary)}, {run.path.name}"
    return _draw([run], [label], target, f"mpsched run {run.path.name}")


def _as_run(source: Result | str | Path, index: int) -> Run:
    """A run directory, or a :class:`~mpsched.api.Result` (written to disk or in memory)."""
    if isinstance(source, str | Path):
        return load_run(source)
    if source.out is not None:
        return load_run(source.out)
    # Untraced: the summary's plots (totals, flows) still apply.
    return Run(
        path=Path(f"run{index + 1}"),
        summary=source.summary,
        scenario=source.scenario,
        tables=dict(source.traces or {}),
    )


def figures(*runs: Result | str | Path, labels: Sequence[str] | None = None) -> dict[str, Figure]:
    """The plots of one run, or of several on shared axes, as matplotlib figures (``name ->
    Figure``, the names of :data:`PLOTS` that apply), for a notebook or a script to show,
    restyle or save. Each run is a :class:`~mpsched.api.Result` (``mpsched.run(...,
    trace=True)`` in memory, or with ``out=``) or a run directory."""
    if not runs:
        raise ValueError("figures() needs at least one run")
    loaded = [_as_run(source, i) for i, source in enumerate(runs)]
    names = list(labels) if labels else compare_labels(loaded)
    if len(names) != len(loaded):
        raise ValueError(f"{len(names)} labels for {len(loaded)} runs")
    matplotlib = _matplotlib(agg=False)
    drawn: dict[str, Figure] = {}
    with matplotlib.rc_context(RC):
        for name, (function, _) in PLOTS.items():
            fig = function(loaded, names)
            if fig is not None:
                mark_schedule(fig, loaded)
                drawn[name] = fig
    return drawn


def compare_labels(runs: Sequence[Run]) -> list[str]:
    """The scheduler of each run; the directory name added where schedulers repeat."""
    schedulers = [traces.run_scheduler(run.summary) for run in runs]
    return [
        s if schedulers.count(s) == 1 else f"{s} ({run.path.name})"
        for s, run in zip(schedulers, runs, strict=True)
    ]


def compare_runs(
    run_dirs: Sequence[str | Path], out: str | Path, labels: Sequence[str] | None = None
) -> list[Path]:
    """Draw the runs in ``run_dirs`` on shared axes into ``out``; ``labels`` name the runs
    (default: their schedulers, with the directory name where schedulers repeat)."""
    runs = [load_run(d) for d in run_dirs]
    if labels is None or not labels:
        labels = compare_labels(runs)
    if len(labels) != len(runs):
        raise ValueError(f"{len(labels)} labels for {len(runs)} runs")
    return _draw(runs, list(labels), Path(out), "mpsched compare: " + ", ".join(labels))

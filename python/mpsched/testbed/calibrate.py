"""``mpsched calibrate``: the same scenarios on the Linux kernel and in the simulator, side by side.

A target is a scenario file (one point) or a sweep file (``mpsched.sweepfile``: a base scenario
and the points to run, as ``--set`` overrides, in grids or space-filling designs).

Every point runs ``repetitions`` times on each side, repetition ``i`` with seed ``seed + i``
(the emulator draws its losses from the same streams as the simulator). The kernel runs its own
MPTCP scheduler (``linux``: ``net.mptcp.scheduler`` ``default``); the simulator runs ``linux``
(the model of that scheduler) when it has it, ``minrtt`` otherwise, and the report says which.
The report (Markdown and JSON, rewritten after every run so that a long sweep can be watched
and resumed) gives per point the goodput, each path's share, retransmissions and RTTs of both,
and the kernel/simulator goodput ratio with its spread over the repetitions.
"""

from __future__ import annotations

import datetime
import json
import platform
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import api
from ..scenario import load, to_native
from ..sweepfile import Point, Sweep, expand_paths, load_sweep
from .kernel import TestbedError, check_kernel_support, missing_capabilities
from .run import emulate
from .transport import emulate_transport

__all__ = ["Point", "Sweep", "aggregate", "calibrate", "load_target", "render"]

# A kernel/simulator goodput ratio this far from 1, beyond the kernel's own spread, is flagged.
TOLERANCE = 0.10

# The kernel's second run of a repetition, same seed (``calibrate(kernel_again=...)``).
AGAIN = "kernel-again"
KERNEL_SIDES = ("kernel", AGAIN)

# Repetitions per point when the sweep file does not say.
DEFAULT_REPETITIONS = 3

load_target = load_sweep


def simulator_scheduler() -> tuple[str, str | None]:
    """The simulator's model of the kernel's scheduler, and a note if it is a stand-in."""
    names = {s.name for s in api.schedulers()}
    if "linux" in names:
        return "linux", None
    return "minrtt", (
        "the simulator has no `linux` scheduler (the upstream kernel's); `minrtt` stands in"
    )


# --- running ---


def _trim(summary: Mapping[str, Any], side: str) -> dict[str, Any]:
    """What the report keeps of a run's summary."""
    keep = ("goodput_mbps", "bytes_delivered", "duration_s", "completion_s", "reinjections")
    out: dict[str, Any] = {k: summary.get(k) for k in keep}
    out["subflows"] = [
        {
            k: sub.get(k)
            for k in (
                "name",
                "goodput_mbps",
                "share",
                "bytes_sent",
                "retransmits",
                "rtos",
                "fast_recoveries",
                "queue_drops",
                "random_drops",
                "srtt_ms",
                "min_rtt_ms",
                "cwnd_segments",
                "kernel",
            )
            if k in sub
        }
        for sub in summary.get("subflows") or []
    ]
    if side in KERNEL_SIDES:
        emu = summary.get("emulator") or {}
        out["emulator"] = {
            "cpu_percent": emu.get("cpu_percent"),
            "lateness_us": emu.get("lateness_us"),
        }
        out["kernel"] = summary.get("kernel")
        out["timeline"] = summary.get("timeline")
    else:
        for k in ("peak_reorder_bytes", "window_probes", "opportunistic_retransmits"):
            out[k] = summary.get(k)
    return out


def _key(point: Point, rep: int, side: str) -> str:
    return f"{point.group}|{point.name}|{rep}|{side}"


def calibrate(
    sweep: Sweep,
    out: Path,
    *,
    repetitions: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    resume: bool = False,
    rerun_sim: bool = False,
    transport: bool = False,
    sim_scheduler: str | None = None,
    progress: Callable[[str], None] | None = None,
    emulate_options: Mapping[str, Any] | None = None,
    kernel_again: frozenset[tuple[str, str]] = frozenset(),
) -> dict[str, Any]:
    """Run every point of ``sweep`` on both sides and write ``out``/report.md and report.json.

    ``resume`` keeps the runs already in report.json; ``rerun_sim`` keeps only its kernel (and
    transport) runs and simulates every point again (after a change of the model).
    ``transport`` adds a third side: mpsched's own transport over UDP (``mpsched serve`` /
    ``get``) with the simulator's scheduler, over the same emulated paths.
    ``kernel_again`` names points (group, point) whose every repetition the kernel runs a
    second time with the same seed (side ``kernel-again``): the kernel's own spread from run
    to run, which the goodput statistics leave out (one kernel run per repetition)."""
    reason = missing_capabilities("mptcp")
    if reason:
        raise TestbedError(f"the kernel testbed {reason}")
    note = None
    if sim_scheduler is None:
        sim_scheduler, note = simulator_scheduler()
    extra = expand_paths(overrides or {}, sweep.base)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "report.json"
    runs: dict[str, Any] = {}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    kernel = {"kernel": platform.release(), "kernel_created": now}
    if (resume or rerun_sim) and state_path.exists():
        state = json.loads(state_path.read_text())
        runs = state.get("runs", {})
        # The runs kept were made with the report's overrides and repetitions: the new ones
        # take the same (a 30-s report re-simulated at the base scenario's 60 s would compare
        # nothing), and different ones given here would mix two experiments in one report.
        kept = {
            k: v
            for k, v in state.get("meta", {}).get("overrides", {}).items()
            if sweep.overrides.get(k, object()) != v
        }
        if overrides and extra != kept:
            raise TestbedError(
                f"{state_path}: its runs were made with {json.dumps(kept)}, not "
                f"{json.dumps(extra)}; leave out --duration/--set to keep the report's, or "
                "write a new report (another --out)"
            )
        extra = kept
        repetitions = repetitions or state.get("meta", {}).get("repetitions")
        if rerun_sim:
            runs = {k: r for k, r in runs.items() if r.get("side") in (*KERNEL_SIDES, "transport")}
        old = state.get("meta", {})
        if any(r.get("side") == "kernel" for r in runs.values()) and "kernel" in old:
            # The kernel runs kept are the old kernel's, of their day.
            kernel = {
                "kernel": old["kernel"],
                "kernel_created": old.get("kernel_created", old.get("created", now)),
            }
    reps = repetitions or sweep.repetitions or DEFAULT_REPETITIONS
    meta = {
        "title": sweep.title,
        "source": sweep.source,
        "created": now,
        **kernel,
        "kernel_scheduler": "linux",
        "simulator_scheduler": sim_scheduler,
        "simulator_note": note,
        "repetitions": reps,
        "overrides": {**sweep.overrides, **extra},
    }
    total = len(sweep.points) * reps
    done = 0
    for point in sweep.points:
        for rep in range(reps):
            done += 1
            base = {**sweep.overrides, **point.overrides, **extra}
            seed = int(load(sweep.base, base).seed) + rep
            sides = ["kernel", "sim"]
            if transport:
                sides.append("transport")
            if (point.group, point.name) in kernel_again:
                sides.append(AGAIN)
            for side in sides:
                key = _key(point, rep, side)
                if key in runs:
                    continue
                sched = "linux" if side in KERNEL_SIDES else sim_scheduler
                scenario = load(sweep.base, {**base, "seed": seed, "connection.scheduler": sched})
                if progress:
                    progress(f"[{done}/{total}] {side:6} {point.group} | {point.name} | rep {rep}")
                if side in KERNEL_SIDES:
                    config = to_native(scenario)
                    check_kernel_support(config, None)
                    summary = emulate(config, **(emulate_options or {}))
                elif side == "transport":
                    summary = emulate_transport(to_native(scenario))
                else:
                    summary = api.run(scenario).summary
                runs[key] = {
                    "group": point.group,
                    "point": point.name,
                    "overrides": point.overrides,
                    "rep": rep,
                    "seed": seed,
                    "side": side,
                    "summary": _trim(summary, side),
                }
                _write(out, meta, sweep, runs)
    return _write(out, meta, sweep, runs)


def _write(out: Path, meta: dict[str, Any], sweep: Sweep, runs: dict[str, Any]) -> dict[str, Any]:
    rows = aggregate(sweep.points, runs)
    report = {"meta": meta, "rows": rows, "runs": runs}
    tmp = out / "report.json.tmp"
    tmp.write_text(json.dumps(report, separators=(",", ":")) + "\n")
    tmp.replace(out / "report.json")
    (out / "report.md").write_text(render(meta, rows))
    return report


# --- aggregation ---


def _stats(values: Sequence[float | None]) -> dict[str, float | int | None]:
    xs = [float(v) for v in values if isinstance(v, int | float)]
    if not xs:
        return {"n": 0, "mean": None, "sd": None, "min": None, "max": None}
    return {
        "n": len(xs),
        "mean": statistics.fmean(xs),
        "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
        "min": min(xs),
        "max": max(xs),
    }


def _per_path(summary: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {s.get("name"): s.get(key) for s in summary.get("subflows") or []}


def aggregate(points: Sequence[Point], runs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per point: both sides' statistics and the kernel/simulator ratio."""
    rows = []
    for point in points:
        mine = [r for r in runs.values() if r["group"] == point.group and r["point"] == point.name]
        if not mine:
            continue
        side: dict[str, list[dict[str, Any]]] = {"kernel": [], "sim": [], "transport": []}
        for run in sorted(mine, key=lambda r: r["rep"]):
            if run["side"] in side:
                side[run["side"]].append(run["summary"])
        row: dict[str, Any] = {"group": point.group, "point": point.name}
        paths: list[str] = []
        for s in side["kernel"] + side["sim"] + side["transport"]:
            for sub in s.get("subflows") or []:
                if sub.get("name") not in paths:
                    paths.append(sub.get("name"))
        for name, summaries in side.items():
            row[name] = {
                "goodput_mbps": _stats([s.get("goodput_mbps") for s in summaries]),
                "completion_s": _stats([s.get("completion_s") for s in summaries]),
                "retransmits": _stats(
                    [
                        sum(sub.get("retransmits") or 0 for sub in s["subflows"])
                        for s in summaries
                        if name != "transport"
                    ]
                ),
                "paths": {
                    p: {
                        key: _stats([_per_path(s, key).get(p) for s in summaries])
                        for key in ("share", "goodput_mbps", "retransmits", "srtt_ms", "min_rtt_ms")
                    }
                    for p in paths
                },
            }
        k = [s.get("goodput_mbps") for s in side["kernel"]]
        m = [s.get("goodput_mbps") for s in side["sim"]]
        pairs = [(a, b) for a, b in zip(k, m, strict=False) if a and b]
        km, sm = row["kernel"]["goodput_mbps"]["mean"], row["sim"]["goodput_mbps"]["mean"]
        ratio = km / sm if km and sm else None
        per_rep = [a / b for a, b in pairs]
        kcv = (row["kernel"]["goodput_mbps"]["sd"] or 0.0) / km if km else 0.0
        row["ratio"] = {
            "mean": ratio,
            "min": min(per_rep) if per_rep else None,
            "max": max(per_rep) if per_rep else None,
            "kernel_cv": kcv,
            "flag": ratio is not None and abs(ratio - 1) > TOLERANCE + kcv,
        }
        t = row["transport"]["goodput_mbps"]["mean"]
        # The transport against the simulator (issue 19: within 10% with the same scheduler).
        row["transport_ratio"] = t / sm if t and sm else None
        row["paths"] = paths
        rows.append(row)
    return rows


# --- the Markdown report ---


def _f(value: Any, spec: str = ".1f") -> str:
    return "-" if not isinstance(value, int | float) else format(value, spec)


def _pm(stats: Mapping[str, Any], spec: str = ".1f") -> str:
    if not stats or stats.get("mean") is None:
        return "-"
    if stats.get("n", 0) > 1:
        return f"{_f(stats['mean'], spec)} ± {_f(stats['sd'], spec)}"
    return _f(stats["mean"], spec)


def render(meta: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The report as Markdown."""
    lines = [
        f"# Calibration: {meta['title']}",
        "",
        f"Kernel (Linux {meta['kernel']}, MPTCP scheduler `{meta['kernel_scheduler']}`, "
        "upstream's) against "
        f"the simulator (scheduler `{meta['simulator_scheduler']}`), "
        f"{meta['repetitions']} repetition(s) per point, seeds `seed + i`. Source: "
        f"`{meta['source']}`; created {meta['created']} by `mpsched calibrate`"
        + (
            f" (the kernel runs on {meta['kernel_created']})."
            if meta.get("kernel_created", meta["created"]) != meta["created"]
            else "."
        ),
        "",
    ]
    if meta.get("simulator_note"):
        lines += [f"**Note:** {meta['simulator_note']}.", ""]
    if meta.get("overrides"):
        lines += [f"Applied to every point: `{json.dumps(meta['overrides'])}`.", ""]
    lines += [
        "Goodput is mean ± standard deviation over the repetitions (Mbit/s); the ratio is "
        "kernel / simulator of the mean goodputs, with the range of the per-repetition ratios. "
        f"⚠ marks a ratio more than {TOLERANCE:.0%} from 1 beyond the kernel's own spread "
        "(its coefficient of variation). Share, retransmissions (segments) and smoothed RTT "
        "(ms, at the end of the run) are kernel / simulator means.",
        "",
    ]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    for group, members in groups.items():
        if group:
            lines += [f"## {group}", ""]
        paths: list[str] = []
        for row in members:
            paths += [p for p in row["paths"] if p not in paths]
        with_transport = any(row["transport"]["goodput_mbps"]["n"] for row in members)
        head = ["point", "kernel Mbps", "sim Mbps", "ratio [range]"]
        if with_transport:
            head += ["transport Mbps", "transport / sim"]
        head += [f"share {p}" for p in paths]
        head += ["retx"] + [f"srtt {p}" for p in paths]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in members:
            r = row["ratio"]
            ratio = "-"
            if r["mean"] is not None:
                ratio = f"{r['mean']:.3f} [{_f(r['min'], '.3f')}, {_f(r['max'], '.3f')}]"
                ratio += " ⚠" if r["flag"] else ""
            cells = [
                row["point"] or "scenario",
                _pm(row["kernel"]["goodput_mbps"]),
                _pm(row["sim"]["goodput_mbps"]),
                ratio,
            ]
            if with_transport:
                cells += [_pm(row["transport"]["goodput_mbps"]), _f(row["transport_ratio"], ".3f")]
            for p in paths:
                ks = row["kernel"]["paths"].get(p, {}).get("share", {})
                ss = row["sim"]["paths"].get(p, {}).get("share", {})
                cells.append(f"{_f(ks.get('mean'), '.2f')} / {_f(ss.get('mean'), '.2f')}")
            cells.append(
                f"{_f(row['kernel']['retransmits']['mean'], '.0f')} / "
                f"{_f(row['sim']['retransmits']['mean'], '.0f')}"
            )
            for p in paths:
                kr = row["kernel"]["paths"].get(p, {}).get("srtt_ms", {})
                sr = row["sim"]["paths"].get(p, {}).get("srtt_ms", {})
                cells.append(f"{_f(kr.get('mean'), '.0f')} / {_f(sr.get('mean'), '.0f')}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    transported = [row for row in rows if row.get("transport_ratio")]
    if transported:
        within = [row for row in transported if abs(row["transport_ratio"] - 1) <= TOLERANCE]
        lines += [
            f"The transport (mpsched serve / get, the simulator's scheduler, over the same "
            f"emulated paths) is within {TOLERANCE:.0%} of the simulator at {len(within)} of "
            f"{len(transported)} point(s).",
            "",
        ]
    flagged = [row for row in rows if row["ratio"]["flag"]]
    lines += [
        f"{len(flagged)} of {len(rows)} point(s) differ by more than {TOLERANCE:.0%} beyond "
        "the kernel's spread.",
        "",
    ]
    return "\n".join(lines)

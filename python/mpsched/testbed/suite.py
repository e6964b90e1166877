"""``mpsched calibrate --suite``: every calibration report at once, and one verdict per point.

A suite file lists the reports the model is held to (TOML, ``[[report]]`` entries: ``name``,
``target`` (a scenario or sweep file), ``out`` (the report's directory), optional ``duration``,
``repetitions``, ``set`` (overrides of every point) and ``transport``); paths are relative to
the suite file. Each entry runs as ``mpsched calibrate`` would (``--resume`` and
``--rerun-sim`` mean the same), and the suite writes ``SUITE.md`` and ``SUITE.json`` beside the
suite file: per point the kernel's mean and range, the model's, their ratio and two verdicts.

- **Goodput** agrees when the ratio of the means is within ``TOLERANCE`` of 1 beyond the
  kernel's own spread (its coefficient of variation), as each report flags it.
- **Retransmissions** agree when, in every repetition and on every path, the model's count is
  within ``RETX_FACTOR`` of the kernel's, or the two differ by at most ``RETX_SLACK`` segments
  (at a handful of segments a factor says nothing: 1 against 3 is random loss, not a model).
"""

from __future__ import annotations

import datetime
import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sweepfile import load_sweep
from .calibrate import TOLERANCE, calibrate
from .kernel import TestbedError

__all__ = ["Entry", "load_suite", "render_suite", "run_suite", "verdicts"]

# Retransmissions agree within this factor per path and repetition ...
RETX_FACTOR = 2.0
# ... or within this many segments.
RETX_SLACK = 5

_KEYS = {"name", "target", "out", "duration", "repetitions", "set", "transport"}


@dataclass(frozen=True)
class Entry:
    """One report of the suite."""

    name: str
    target: Path
    out: Path
    duration: str | None = None
    repetitions: int | None = None
    sets: Mapping[str, Any] = field(default_factory=dict)
    transport: bool = False


def load_suite(path: Path) -> list[Entry]:
    """The suite file's entries; a bad one is an error naming its key."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TestbedError(f"{path}: {exc}") from None
    unknown = set(doc) - {"report"}
    if unknown:
        raise TestbedError(f"{path}: unknown key(s) {sorted(unknown)} (a suite has [[report]])")
    reports = doc.get("report")
    if not isinstance(reports, list) or not reports:
        raise TestbedError(f"{path}: report: at least one [[report]] entry is needed")
    base = path.parent
    entries, names = [], set()
    for i, r in enumerate(reports):
        where = f"{path}: report[{i}]"
        extra = set(r) - _KEYS
        if extra:
            raise TestbedError(f"{where}: unknown key(s) {sorted(extra)}; known: {sorted(_KEYS)}")
        for key in ("name", "target", "out"):
            if not isinstance(r.get(key), str) or not r[key]:
                raise TestbedError(f"{where}.{key}: a non-empty string is needed")
        if r["name"] in names:
            raise TestbedError(f"{where}.name: {r['name']!r} is used twice")
        names.add(r["name"])
        target = base / r["target"]
        if not target.is_file():
            raise TestbedError(f"{where}.target: {target} does not exist")
        reps = r.get("repetitions")
        if reps is not None and (not isinstance(reps, int) or not 1 <= reps <= 100):
            raise TestbedError(f"{where}.repetitions: an integer from 1 to 100 is needed")
        sets = r.get("set", {})
        if not isinstance(sets, dict):
            raise TestbedError(f"{where}.set: a table of scenario keys is needed")
        duration = r.get("duration")
        if duration is not None and not isinstance(duration, str):
            raise TestbedError(f'{where}.duration: a duration such as "30s" is needed')
        if not isinstance(r.get("transport", False), bool):
            raise TestbedError(f"{where}.transport: true or false")
        entries.append(
            Entry(
                name=r["name"],
                target=target,
                out=base / r["out"],
                duration=duration,
                repetitions=reps,
                sets=sets,
                transport=r.get("transport", False),
            )
        )
    return entries


def run_suite(
    path: Path,
    *,
    resume: bool = False,
    rerun_sim: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run (or complete, or re-simulate) every report of the suite, then write its verdicts."""
    entries = load_suite(path)
    reports = {}
    for entry in entries:
        if progress:
            progress(f"== {entry.name}: {entry.target} -> {entry.out}")
        overrides = dict(entry.sets)
        if entry.duration is not None:
            overrides["duration"] = entry.duration
        reports[entry.name] = calibrate(
            load_sweep(entry.target),
            entry.out,
            repetitions=entry.repetitions,
            overrides=overrides,
            resume=resume,
            rerun_sim=rerun_sim,
            transport=entry.transport,
            progress=progress,
        )
    return write_suite(path, entries, reports)


def write_suite(
    path: Path, entries: Sequence[Entry], reports: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """SUITE.md and SUITE.json beside the suite file, from the reports' runs."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    suite = {
        "source": str(path),
        "created": now,
        "tolerance": TOLERANCE,
        "retx_factor": RETX_FACTOR,
        "retx_slack": RETX_SLACK,
        "reports": [
            {
                "name": e.name,
                "report": os.path.relpath(e.out / "report.md", path.parent),
                "meta": reports[e.name]["meta"],
                "points": verdicts(reports[e.name]),
            }
            for e in entries
        ],
    }
    out = path.with_suffix("")
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(suite, indent=1) + "\n")
    tmp.replace(out.with_suffix(".json"))
    out.with_suffix(".md").write_text(render_suite(suite))
    return suite


def _retx_by_path(summary: Mapping[str, Any]) -> dict[str, int]:
    return {s["name"]: int(s.get("retransmits") or 0) for s in summary.get("subflows") or []}


def _retx_agree(kernel: int, model: int) -> bool:
    if abs(kernel - model) <= RETX_SLACK:
        return True
    lo, hi = sorted((kernel, model))
    return lo > 0 and hi / lo <= RETX_FACTOR


def verdicts(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per point of a calibration report: both sides' goodput, the ratio, and the verdicts."""
    runs = report.get("runs", {}).values()
    out = []
    for row in report["rows"]:
        k, s = row["kernel"]["goodput_mbps"], row["sim"]["goodput_mbps"]
        ratio = row["ratio"]
        reps: dict[int, dict[str, Any]] = {}
        for run in runs:
            if run["group"] == row["group"] and run["point"] == row["point"]:
                reps.setdefault(run["rep"], {})[run["side"]] = run["summary"]
        worst: dict[str, Any] | None = None
        retx_ok = True
        pairs = 0
        for rep, sides in sorted(reps.items()):
            if "kernel" not in sides or "sim" not in sides:
                continue
            kr, sr = _retx_by_path(sides["kernel"]), _retx_by_path(sides["sim"])
            for name in sorted(kr.keys() & sr.keys()):
                pairs += 1
                ok = _retx_agree(kr[name], sr[name])
                far = max(kr[name], sr[name]) / max(1, min(kr[name], sr[name]))
                if (
                    worst is None
                    or (not ok and worst["agree"])
                    or (ok == worst["agree"] and far > worst["factor"])
                ):
                    worst = {
                        "rep": rep,
                        "path": name,
                        "kernel": kr[name],
                        "model": sr[name],
                        "factor": far,
                        "agree": ok,
                    }
                retx_ok = retx_ok and ok
        goodput_ok = ratio["mean"] is not None and not ratio["flag"]
        out.append(
            {
                "group": row["group"],
                "point": row["point"],
                "kernel": {key: k[key] for key in ("n", "mean", "min", "max")},
                "model": {key: s[key] for key in ("n", "mean", "min", "max")},
                "ratio": ratio["mean"],
                "kernel_cv": ratio["kernel_cv"],
                "goodput_agrees": goodput_ok,
                "retx_pairs": pairs,
                "retx_agree": retx_ok and pairs > 0,
                "retx_worst": worst,
            }
        )
    return out


def _f(x: Any, spec: str = ".1f") -> str:
    return "-" if not isinstance(x, int | float) else format(x, spec)


def _range(side: Mapping[str, Any]) -> str:
    if side["mean"] is None:
        return "-"
    if side["n"] > 1:
        return f"{_f(side['mean'])} [{_f(side['min'])}, {_f(side['max'])}]"
    return _f(side["mean"])


def render_suite(suite: Mapping[str, Any]) -> str:
    """The suite's verdicts as Markdown."""
    lines = [
        "# Calibration suite: the model against the Linux kernel",
        "",
        f"Source: `{suite['source']}`; written {suite['created']} by `mpsched calibrate "
        "--suite` from each report's runs. Goodput (Mbit/s) is the mean [min, max] over the "
        "repetitions; the ratio is kernel / model of the means. Goodput agrees when the ratio "
        f"is within {suite['tolerance']:.0%} of 1 beyond the kernel's own spread; "
        "retransmissions agree when in every repetition, on every path, the model's count is "
        f"within {suite['retx_factor']:g}x of the kernel's or within {suite['retx_slack']} "
        "segments of it (the worst pair is shown: repetition, path, kernel / model).",
        "",
    ]
    totals = [0, 0, 0]
    for rep in suite["reports"]:
        meta = rep["meta"]
        lines += [
            f"## {rep['name']}: {meta['title']}",
            "",
            f"[{rep['report']}]({rep['report']}); kernel {meta['kernel']} "
            f"(runs of {meta.get('kernel_created', meta['created'])}), model "
            f"`{meta['simulator_scheduler']}` ({meta['created']}), {meta['repetitions']} "
            "repetition(s).",
            "",
            "| point | kernel Mbps | model Mbps | ratio | goodput | retx, worst | retx |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in rep["points"]:
            name = f"{p['group']}: {p['point']}" if p["group"] else p["point"] or "scenario"
            w = p["retx_worst"]
            worst = f"rep {w['rep']} {w['path']}: {w['kernel']} / {w['model']}" if w else "-"
            lines.append(
                f"| {name} | {_range(p['kernel'])} | {_range(p['model'])} | "
                f"{_f(p['ratio'], '.3f')} | {'agrees' if p['goodput_agrees'] else '**differs**'} "
                f"| {worst} | {'agrees' if p['retx_agree'] else '**differs**'} |"
            )
            totals[0] += 1
            totals[1] += p["goodput_agrees"]
            totals[2] += p["retx_agree"]
        lines.append("")
    lines += [
        f"Goodput agrees at {totals[1]} of {totals[0]} point(s), retransmissions at "
        f"{totals[2]} of {totals[0]}.",
        "",
    ]
    return "\n".join(lines)

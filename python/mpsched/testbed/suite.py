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
  The kernel is not deterministic: the same seed run again can retransmit several times as
  much (whether slow start's overshoot drops 80 segments or 1,000 turns on microseconds of
  timing). ``--kernel-again`` runs every repetition of each point whose verdict differs a
  second time on the kernel, and a second verdict holds the model to the kernel's range over
  its runs of that seed: within the factor of some count in [min, max], or within the slack
  of one. Both verdicts are reported; the goodput statistics use the first runs only.
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
from .calibrate import AGAIN, TOLERANCE, calibrate
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
    kernel_again: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run (or complete, or re-simulate) every report of the suite, then write its verdicts.

    ``kernel_again`` keeps every run and runs the kernel a second time, same seed, for each
    repetition of every point whose retransmissions differ from its first kernel runs."""
    entries = load_suite(path)
    reports = {}
    for entry in entries:
        if progress:
            progress(f"== {entry.name}: {entry.target} -> {entry.out}")
        overrides = dict(entry.sets)
        if entry.duration is not None:
            overrides["duration"] = entry.duration
        again: frozenset[tuple[str, str]] = frozenset()
        if kernel_again:
            state = entry.out / "report.json"
            if not state.exists():
                raise TestbedError(f"{state}: no report to run again; run the suite first")
            again = frozenset(
                (p["group"], p["point"])
                for p in verdicts(json.loads(state.read_text()))
                if not p["retx_agree_first"]
            )
        reports[entry.name] = calibrate(
            load_sweep(entry.target),
            entry.out,
            repetitions=entry.repetitions,
            overrides=overrides,
            resume=resume or kernel_again,
            rerun_sim=rerun_sim,
            transport=entry.transport,
            progress=progress,
            kernel_again=again,
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


def _retx_agree_range(kernel: Sequence[int], model: int) -> bool:
    """Within the factor of some count in the kernel's [min, max], or the slack of one."""
    if any(abs(k - model) <= RETX_SLACK for k in kernel):
        return True
    # A kernel run without a retransmission puts 0 in the range, so any count up to the
    # factor of the largest is within the factor of some count in it.
    lo, hi = min(kernel), max(kernel)
    return model > 0 and lo <= model * RETX_FACTOR and model <= hi * RETX_FACTOR


def _worse(new: Mapping[str, Any], old: Mapping[str, Any] | None, key: str) -> bool:
    if old is None:
        return True
    if new[key] != old[key]:
        return not new[key]
    return bool(new["factor"] > old["factor"])


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
        worst_first: dict[str, Any] | None = None
        retx_ok = first_ok = True
        pairs = 0
        for rep, sides in sorted(reps.items()):
            if "kernel" not in sides or "sim" not in sides:
                continue
            kr, sr = _retx_by_path(sides["kernel"]), _retx_by_path(sides["sim"])
            again = _retx_by_path(sides.get(AGAIN, {}))
            for name in sorted(kr.keys() & sr.keys()):
                pairs += 1
                ks = [kr[name]] + ([again[name]] if name in again else [])
                m = sr[name]
                far = max(kr[name], m) / max(1, min(kr[name], m))
                inside = min(ks) <= m <= max(ks)
                far_range = 1.0 if inside else max(m / max(1, *ks), min(ks) / max(1, m))
                first, agree = _retx_agree(kr[name], m), _retx_agree_range(ks, m)
                pair = {
                    "rep": rep,
                    "path": name,
                    "kernel": kr[name],
                    "kernel_runs": ks,
                    "model": m,
                    "first": first,
                    "agree": agree,
                }
                if _worse({**pair, "factor": far}, worst_first, "first"):
                    worst_first = {**pair, "factor": far}
                if _worse({**pair, "factor": far_range}, worst, "agree"):
                    worst = {**pair, "factor": far_range}
                first_ok = first_ok and first
                retx_ok = retx_ok and agree
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
                "retx_agree_first": first_ok and pairs > 0,
                "retx_worst_first": worst_first,
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


def _pair(w: Mapping[str, Any] | None) -> str:
    if not w:
        return "-"
    kernel = ", ".join(str(k) for k in w.get("kernel_runs", [w["kernel"]]))
    return f"rep {w['rep']} {w['path']}: {kernel} / {w['model']}"


def render_suite(suite: Mapping[str, Any]) -> str:
    """The suite's verdicts as Markdown."""
    lines = [
        "# Calibration suite: the model against the Linux kernel",
        "",
        f"Source: `{suite['source']}`; written {suite['created']} by `mpsched calibrate "
        "--suite` from each report's runs. Goodput (Mbit/s) is the mean [min, max] over the "
        "repetitions; the ratio is kernel / model of the means. Goodput agrees when the ratio "
        f"is within {suite['tolerance']:.0%} of 1 beyond the kernel's own spread. "
        "Retransmissions agree with the first run when in every repetition, on every path, the "
        f"model's count is within {suite['retx_factor']:g}x of the kernel's or within "
        f"{suite['retx_slack']} segments of it. Where they do not, `--kernel-again` runs each "
        "repetition of the point once more on the kernel with the same seed, and the second "
        "verdict holds the model to the kernel's range over its runs of that seed (within "
        f"{suite['retx_factor']:g}x of some count between them). The worst pair is shown: "
        "repetition, path, the kernel's runs / the model.",
        "",
    ]
    totals = [0, 0, 0, 0]
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
            "| point | kernel Mbps | model Mbps | ratio | goodput | retx, worst pair "
            "| retx, first run | retx, kernel's runs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for p in rep["points"]:
            name = f"{p['group']}: {p['point']}" if p["group"] else p["point"] or "scenario"
            first = p.get("retx_agree_first", p["retx_agree"])
            worst = p["retx_worst"] if first or not p["retx_agree"] else p["retx_worst_first"]
            lines.append(
                f"| {name} | {_range(p['kernel'])} | {_range(p['model'])} | "
                f"{_f(p['ratio'], '.3f')} | {_verdict(p['goodput_agrees'])} "
                f"| {_pair(worst)} | {_verdict(first)} | {_verdict(p['retx_agree'])} |"
            )
            totals[0] += 1
            totals[1] += p["goodput_agrees"]
            totals[2] += first
            totals[3] += p["retx_agree"]
        lines.append("")
    lines += [
        f"Goodput agrees at {totals[1]} of {totals[0]} point(s); retransmissions at "
        f"{totals[2]} of {totals[0]} against the kernel's first runs, at {totals[3]} of "
        f"{totals[0]} against its range over the runs of each seed.",
        "",
    ]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "agrees" if ok else "**differs**"

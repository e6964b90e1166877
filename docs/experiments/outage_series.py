"""The Wi-Fi outage, the model against Linux (docs/experiments/outage.md): MB delivered in
order per second around the failure, kernel runs against model runs.

    python docs/experiments/outage_series.py [--offsets MS,MS,...] [--save FILE] KERNEL [KERNEL ...]

Each KERNEL is a run directory written by
``mpsched emulate scenarios/wifi-outage.toml --scheduler linux --out DIR``, or a digest of
such runs (a ``.json`` file) that ``--save FILE`` wrote: per run what the comparison reads
(its failure time, duration, timer phase, goodput, the client's duplicate count and its MB per
second), so that a series of kernel runs can be kept beside the page that quotes it
(``docs/experiments/outage-kernel.json``) and re-read on a machine without them. For each, the model
runs with that run's timer-wheel phase (``kernel.timer_phase_ns``) and with the
failure moved by 0, 5, ..., 35 ms: where the stream stands when Wi-Fi fails (how full the
connection's buffer is in its 256 KiB write cycle, about 37 ms at 7.1 MB/s) varies from kernel
run to kernel run, and decides whether the application writes during the outage; the offsets
sample that cycle in the model, whose runs are otherwise deterministic. Seconds count from the
failure (kernel: its run's, `scenario.json`; model: the same + offset). Kernel runs whose
failures were themselves moved through the cycle (`at` = 5.000-5.035 s) sample it on the
kernel's side too: then `--offsets 0` gives one model run per kernel run, at its failure time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import mpsched

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "wifi-outage.toml"
FAILURE_S = 5.0
OFFSETS_MS = range(0, 40, 5)
SECONDS = np.arange(-2, 13)


def failure_s(run: Path) -> float:
    """When the kernel run's Wi-Fi failed (its scenario's first schedule entry)."""
    scenario = json.loads((run / "scenario.json").read_text())
    return scenario["paths"][0]["schedule"][0]["at_ns"] / 1e9


def kernel_series(run: Path) -> np.ndarray:
    timeline = json.loads((run / "raw" / "client.json").read_text())["timeline"]
    t = np.array([0.0] + [a for a, _ in timeline])
    b = np.array([0.0] + [c for _, c in timeline])
    return np.diff(np.interp(failure_s(run) + SECONDS, t, b)) / 1e6


def digest(run: Path) -> dict:
    """What the comparison reads from one kernel run directory."""
    whole = json.loads((run / "summary.json").read_text())
    summary = whole["kernel"]
    client = summary.get("mptcp_counters", {}).get("client", {})
    return {
        "run": run.name,
        "failure_s": failure_s(run),
        "duration_ns": json.loads((run / "scenario.json").read_text())["duration_ns"],
        "timer_phase_ns": int(summary["timer_phase_ns"]),
        "goodput_mbps": whole["goodput_mbps"],
        "duplicates": client.get("MPTcpExtDuplicateData", 0),
        "seconds_from_failure": SECONDS.tolist(),
        "mb_per_second": [round(float(x), 6) for x in kernel_series(run)],
    }


def kernel_runs(args: list[Path]) -> list[dict]:
    """Digests of the kernel runs named: run directories, or digest files."""
    runs: list[dict] = []
    for a in args:
        if a.suffix == ".json":
            kept = json.loads(a.read_text())["runs"]
            if any(r["seconds_from_failure"] != SECONDS.tolist() for r in kept):
                sys.exit(f"{a}: its seconds are not this script's {SECONDS.tolist()}")
            runs.extend(kept)
        else:
            runs.append(digest(a))
    return runs


def model_series(
    phase_ns: int, fail_ms: int, duration_ns: int, tmp: Path
) -> tuple[np.ndarray, int, float]:
    scenario = tomllib.loads(SCENARIO.read_text())
    scenario["duration"] = f"{duration_ns}ns"
    scenario["path"][0]["schedule"][0]["at"] = f"{fail_ms}ms"
    scenario["connection"]["timer_phase"] = f"{phase_ns}ns"
    out = tmp / f"{phase_ns}-{fail_ms}"
    result = mpsched.run(scenario, scheduler="linux", out=out)
    seg = pq.read_table(out / "segments.parquet", columns=["len_bytes", "t_delivered_ns"])
    frame = seg.to_pandas().sort_values("t_delivered_ns")
    t = np.r_[0.0, frame.t_delivered_ns.to_numpy() / 1e9]
    b = np.r_[0.0, np.cumsum(frame.len_bytes.to_numpy())]
    at = fail_ms / 1000 + SECONDS
    summary = result.summary
    return np.diff(np.interp(at, t, b)) / 1e6, int(summary["reinjections"]), summary["goodput_mbps"]


def main(runs: list[dict], offsets: list[int]) -> None:
    kernel, model, dups, resent = [], [], [], []
    goodput: dict[str, list[float]] = {"kernel": [], "model": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            goodput["kernel"].append(run["goodput_mbps"])
            kernel.append(np.array(run["mb_per_second"]))
            dups.append(run["duplicates"])
            fail_ms = round(run["failure_s"] * 1000)
            # The model runs as long as the kernel run did, so that the goodputs compare.
            for off in offsets:
                series, n, mbps = model_series(
                    run["timer_phase_ns"], fail_ms + off, run["duration_ns"], Path(tmp)
                )
                model.append(series)
                resent.append(n)
                goodput["model"].append(mbps)
    k, m = np.array(kernel), np.array(model)
    print(f"{len(k)} kernel runs, {len(m)} model runs: MB delivered in order per second")
    print("| interval (s) | kernel: mean (range) | median | model: mean (range) | median | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for j in range(len(SECONDS) - 1):
        a, b = k[:, j], m[:, j]
        ratio = f"{b.mean() / a.mean():.2f}" if a.mean() > 0.02 else "-"
        print(
            f"| {FAILURE_S + SECONDS[j]:.0f}-{FAILURE_S + SECONDS[j + 1]:.0f} "
            f"| {a.mean():.2f} ({a.min():.2f}-{a.max():.2f}) | {np.median(a):.2f} "
            f"| {b.mean():.2f} ({b.min():.2f}-{b.max():.2f}) | {np.median(b):.2f} | {ratio} |"
        )
    second = int(np.flatnonzero(SECONDS == 2)[0])  # 7-8 s
    early_k = int((k[:, second] > 1.0).sum())
    early_m = int((m[:, second] > 1.0).sum())
    print(f"recovered within 7-8 s: kernel {early_k} of {len(k)}, model {early_m} of {len(m)}")
    print(
        f"duplicates: kernel client {min(dups)}-{max(dups)} (MPTcpExtDuplicateData), "
        f"model resends {min(resent)}-{max(resent)}"
    )
    for side, values in goodput.items():
        v = np.array(values)
        print(f"goodput over each run, {side}: {v.mean():.2f} Mbit/s ({v.min():.2f}-{v.max():.2f})")


if __name__ == "__main__":
    args = sys.argv[1:]
    offsets = list(OFFSETS_MS)
    save = None
    while args[:1] in (["--offsets"], ["--save"]) and len(args) > 1:
        if args[0] == "--offsets":
            offsets = [int(x) for x in args[1].split(",")]
        else:
            save = Path(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    runs = kernel_runs([Path(a) for a in args])
    if save is not None:
        # One run per line: a digest of dozens of runs stays readable in a diff.
        lines = ",\n".join("  " + json.dumps(r) for r in runs)
        save.write_text(f'{{"scenario": "scenarios/wifi-outage.toml",\n "runs": [\n{lines}\n ]}}\n')
        print(f"wrote {save}: {len(runs)} kernel runs")
    main(runs, offsets)

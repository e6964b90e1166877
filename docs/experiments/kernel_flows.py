"""The model against the kernel where connections compete (issue 30, acceptance 1 and 2): each
repetition runs in the simulator (``mpsched run``) and on the kernel (``mpsched emulate``) with
the same scenario, and the table compares what the acceptance names.

    python docs/experiments/kernel_flows.py rfc6356 --out runs/kernel-rfc6356
    python docs/experiments/kernel_flows.py short-flows --out runs/kernel-short-flows
    python docs/experiments/kernel_flows.py rate-app --out runs/kernel-rate-app

``rfc6356-tcp`` (a TCP connection in the MPTCP one's place) and ``short-flows-dense`` (the
flows arriving ten times as often) are controls.

Each run's summary goes to ``OUT/{model,kernel}-{i}.json``; ``--resume`` keeps those already
there, ``--table`` only prints the table of what is there. Needs root (the kernel testbed).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpsched import api, load, to_native
from mpsched.testbed import emulate

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("137ms", "274ms", "411ms", "548ms", "685ms")


def _ratio(s: dict[str, Any]) -> float:
    """The MPTCP connection's goodput over the TCP flow's."""
    mptcp, tcp = s["flows"][0], s["flows"][1]
    return mptcp["goodput_mbps"] / tcp["goodput_mbps"]


EXPERIMENTS: dict[str, dict[str, Any]] = {
    # RFC 6356's set-up (docs/experiments/shared-bottleneck.md): two subflows and one TCP flow
    # through one 20 Mbit/s bottleneck; upstream's scheduler, uncoupled CUBIC on both; the TCP
    # flow starting at the sweep's five phases.
    "rfc6356": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": {
            "connection.scheduler": "linux",
            "connection.congestion": "cubic",
            "flow.0.congestion": "cubic",
            "duration": "60s",
        },
        "reps": [{"flow.0.start": p} for p in PHASES],
        "metrics": {
            "MPTCP Mbit/s": lambda s: s["flows"][0]["goodput_mbps"],
            "TCP Mbit/s": lambda s: s["flows"][1]["goodput_mbps"],
            "MPTCP/TCP": _ratio,
        },
    },
    # The control: the same with a TCP connection (on path a) in place of the MPTCP one.
    "rfc6356-tcp": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": {
            "connection.protocol": "tcp",
            "connection.congestion": "cubic",
            "flow.0.congestion": "cubic",
            "duration": "60s",
        },
        "reps": [{"flow.0.start": p} for p in PHASES],
        "metrics": {
            "TCP a Mbit/s": lambda s: s["flows"][0]["goodput_mbps"],
            "TCP Mbit/s": lambda s: s["flows"][1]["goodput_mbps"],
            "a/TCP": _ratio,
        },
    },
    "short-flows": {
        "scenario": "scenarios/short-flows.toml",
        "set": {"connection.scheduler": "linux"},
        "reps": [{"seed": k} for k in range(1, 6)],
        "metrics": {
            "mean FCT ms": lambda s: s["mean_flow_completion_s"] * 1e3,
            "unfinished": lambda s: s["unfinished_flows"],
        },
    },
    # The same flows arriving ten times as fast (one every 5 ms): most of them at once.
    "short-flows-dense": {
        "scenario": "scenarios/short-flows.toml",
        "set": {"connection.scheduler": "linux", "flow.0.interval": "5ms"},
        "reps": [{"seed": k} for k in range(1, 6)],
        "metrics": {
            "mean FCT ms": lambda s: s["mean_flow_completion_s"] * 1e3,
            "unfinished": lambda s: s["unfinished_flows"],
        },
    },
    "rate-app": {
        "scenario": "scenarios/rate-app.toml",
        "set": {"connection.scheduler": "linux"},
        "reps": [{"seed": k} for k in range(1, 6)],
        "metrics": {
            "blocks": lambda s: s["blocks_delivered"],
            "block p50 ms": lambda s: s["block_delay_ms"]["p50"],
            "block p99 ms": lambda s: s["block_delay_ms"]["p99"],
        },
    },
}


def _run(name: str, out: Path, resume: bool) -> None:
    exp = EXPERIMENTS[name]
    out.mkdir(parents=True, exist_ok=True)
    for i, rep in enumerate(exp["reps"]):
        overrides = {**exp["set"], **rep}
        for side in ("model", "kernel"):
            path = out / f"{side}-{i}.json"
            if resume and path.exists():
                continue
            scenario = load(ROOT / exp["scenario"], overrides)
            model = side == "model"
            summary = api.run(scenario).summary if model else emulate(to_native(scenario))
            summary["overrides"] = overrides
            path.write_text(json.dumps(summary) + "\n")
            print(f"{path}: done", flush=True)


def _table(name: str, out: Path) -> None:
    exp = EXPERIMENTS[name]
    metrics: dict[str, Callable[[dict[str, Any]], float]] = exp["metrics"]
    runs: dict[str, list[dict[str, Any]]] = {"model": [], "kernel": []}
    for i in range(len(exp["reps"])):
        for side in runs:
            path = out / f"{side}-{i}.json"
            if path.exists():
                runs[side].append(json.loads(path.read_text()))
    n = min(len(runs["model"]), len(runs["kernel"]))
    head = ["rep", *(f"{m} {side}" for m in metrics for side in ("model", "kernel"))]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for i in range(n):
        cells = [", ".join(f"{k}={v}" for k, v in exp["reps"][i].items())]
        for f in metrics.values():
            cells += [f"{f(runs['model'][i]):.3f}", f"{f(runs['kernel'][i]):.3f}"]
        print("| " + " | ".join(cells) + " |")
    cells = ["mean"]
    means = {}
    for m, f in metrics.items():
        for side in ("model", "kernel"):
            means[m, side] = statistics.fmean(f(s) for s in runs[side][:n])
            cells.append(f"{means[m, side]:.3f}")
    print("| " + " | ".join(cells) + " |")
    print()
    for m in metrics:
        k = means[m, "kernel"]
        if k:
            print(f"{m}: model / kernel = {means[m, 'model'] / k:.3f} (means over {n} repetitions)")
    if name.startswith("rfc6356"):
        # The page's measure: the ratio of the mean goodputs over the phases.
        for side in ("model", "kernel"):
            first = next(iter(metrics))
            r = means[first, side] / means["TCP Mbit/s", side]
            print(f"{side}: mean {first} / mean TCP Mbit/s = {r:.3f}")
        # Where the shares part: each connection's data packets dropped (all at the
        # bottleneck) per packet sent, over the repetitions.
        for side in ("model", "kernel"):
            rates = []
            for k in (0, 1):
                flows = [s["flows"][k] for s in runs[side][:n]]
                drops, sent = (
                    sum(f[key] for f in flows) for key in ("queue_drops", "packets_sent")
                )
                rates.append(f"flow {k} {drops} of {sent} ({100 * drops / sent:.3f}%)")
            print(f"{side}: dropped {', '.join(rates)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--resume", action="store_true", help="keep the runs already in OUT")
    parser.add_argument("--table", action="store_true", help="only print the table")
    args = parser.parse_args()
    if not args.table:
        _run(args.experiment, args.out, args.resume)
    _table(args.experiment, args.out)


if __name__ == "__main__":
    main()

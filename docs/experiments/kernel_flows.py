"""The model against the kernel where connections compete (issue 30, acceptance 1 and 2): each
repetition runs in the simulator (``mpsched run``) and on the kernel (``mpsched emulate``) with
the same scenario, and the table compares what the acceptance names.

    python docs/experiments/kernel_flows.py rfc6356 --out runs/kernel-rfc6356
    python docs/experiments/kernel_flows.py short-flows --out runs/kernel-short-flows
    python docs/experiments/kernel_flows.py rate-app --out runs/kernel-rate-app

``rfc6356-rtt`` runs the first with the TCP flow's round trip 0-1.1 ms longer,
``rfc6356-jitter`` with 1 ms of jitter on every access link (``rfc6356-jitter-more``: at ten
more start phases).
``rfc6356-tcp`` (a TCP connection in the MPTCP one's place), ``rfc6356-two-tcp`` (two, on
the subflows' paths) and ``short-flows-dense`` (the
flows arriving ten times as often) are controls. ``windows KERNEL_DIR MODEL_DIR`` compares the
main connection's subflows' windows in an ``mpsched emulate --out`` and an ``mpsched run --out``;
``losses KERNEL_DIR`` counts each kernel connection's loss events; ``bottleneck RUN`` rebuilds
the shared bottleneck's queue from an ``mpsched emulate --trace-headers`` capture.

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


RFC6356_SET = {
    "connection.scheduler": "linux",
    "connection.congestion": "cubic",
    "flow.0.congestion": "cubic",
    "duration": "60s",
}
RFC6356_METRICS: dict[str, Callable[[dict[str, Any]], float]] = {
    "MPTCP Mbit/s": lambda s: s["flows"][0]["goodput_mbps"],
    "TCP Mbit/s": lambda s: s["flows"][1]["goodput_mbps"],
    "MPTCP/TCP": _ratio,
}

EXPERIMENTS: dict[str, dict[str, Any]] = {
    # RFC 6356's set-up (docs/experiments/shared-bottleneck.md): two subflows and one TCP flow
    # through one 20 Mbit/s bottleneck; upstream's scheduler, uncoupled CUBIC on both; the TCP
    # flow starting at the sweep's five phases.
    "rfc6356": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": RFC6356_SET,
        "reps": [{"flow.0.start": p} for p in PHASES],
        "metrics": RFC6356_METRICS,
    },
    # The same with the TCP flow's round trip longer by 0-1.1 ms (its own access link's delay;
    # one start phase): a drop-tail bottleneck serves one 1,500-byte packet in 0.6 ms, and
    # which connection's packet meets a full queue depends on where in that time it arrives.
    "rfc6356-rtt": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": {**RFC6356_SET, "flow.0.start": "137ms"},
        "reps": [{"path.tcp.rtt": f"{4000 + 100 * k}us"} for k in range(12)],
        "metrics": RFC6356_METRICS,
    },
    # The first with every host's access link delaying each packet by its own draw (normal,
    # 1 ms deviation, both directions, order kept): no connection keeps its place in the
    # bottleneck's 0.6-ms service time from one round trip to the next.
    "rfc6356-jitter": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": {
            **RFC6356_SET,
            **{f"path.{p}.{k}": "1ms" for p in ("a", "b", "tcp") for k in ("jitter", "jitter_up")},
        },
        "reps": [{"flow.0.start": p} for p in PHASES],
        "metrics": RFC6356_METRICS,
    },
    # The same at ten more start phases (100 ms + 37 ms x k): a five-phase mean of either side
    # is a draw within about 8% of its own ensemble.
    "rfc6356-jitter-more": {
        "scenario": "python/mpsched/experiments/rfc6356-base.toml",
        "set": {
            **RFC6356_SET,
            **{f"path.{p}.{k}": "1ms" for p in ("a", "b", "tcp") for k in ("jitter", "jitter_up")},
        },
        "reps": [{"flow.0.start": f"{100 + 37 * k}ms"} for k in range(1, 11)],
        "metrics": RFC6356_METRICS,
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
    # The second control: two TCP connections on paths a and b in the MPTCP one's place (the
    # second starting when the second subflow would), beside the same TCP flow.
    "rfc6356-two-tcp": {
        "scenario": "docs/experiments/rfc6356-two-tcp.toml",
        "set": {},
        "reps": [{"flow.1.start": p} for p in PHASES],
        "metrics": {
            "TCP a+b Mbit/s": lambda s: (
                s["flows"][0]["goodput_mbps"] + s["flows"][1]["goodput_mbps"]
            ),
            "TCP Mbit/s": lambda s: s["flows"][2]["goodput_mbps"],
            "(a+b)/TCP": lambda s: (
                (s["flows"][0]["goodput_mbps"] + s["flows"][1]["goodput_mbps"])
                / s["flows"][2]["goodput_mbps"]
            ),
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
            for k in range(len(runs[side][0]["flows"])):
                flows = [s["flows"][k] for s in runs[side][:n]]
                drops, sent = (
                    sum(f[key] for f in flows) for key in ("queue_drops", "packets_sent")
                )
                rates.append(f"flow {k} {drops} of {sent} ({100 * drops / sent:.3f}%)")
            print(f"{side}: dropped {', '.join(rates)}")


def windows(kernel: Path, model: Path, after_s: float = 5.0) -> None:
    """The main connection's subflows' mean congestion window (segments) and smoothed RTT
    after ``after_s``: the kernel's from the server's ``TCP_INFO`` samples (every 100 ms,
    ``raw/server.json`` of ``mpsched emulate --out``), the model's from its ``subflows``
    trace (``mpsched run --out``)."""
    import pyarrow.parquet as pq

    sampled = ("snd_cwnd", "snd_ssthresh", "rtt_us")
    server = json.loads((kernel / "raw" / "server.json").read_text())
    by: dict[str, list[tuple[float, float]]] = {}
    for t, rows, _buffer in server["samples"]:
        for row in rows if t >= after_s else []:
            d = dict(zip(sampled, row[1:4], strict=True))
            by.setdefault(str(row[0]).split(":")[0], []).append((d["snd_cwnd"], d["rtt_us"] / 1e3))
    for addr, v in sorted(by.items()):
        cwnd, rtt = statistics.fmean(c for c, _ in v), statistics.fmean(r for _, r in v)
        print(f"kernel subflow from {addr}: cwnd {cwnd:.1f} segments, srtt {rtt:.1f} ms")
    # The competing flows' connections, sampled at the same instants (runs since the load
    # generator samples them).
    for k, rows in sorted(server.get("flow_samples", {}).items()):
        v = [
            (row[1], row[3] / 1e3)
            for t, conn_rows, _buffer in rows
            if t >= after_s
            for row in conn_rows
        ]
        if v:
            cwnd, rtt = statistics.fmean(c for c, _ in v), statistics.fmean(r for _, r in v)
            print(f"kernel flow {k}: cwnd {cwnd:.1f} segments, srtt {rtt:.1f} ms")
    trace = pq.read_table(model / "subflows.parquet").to_pandas()
    trace = trace[trace["t_ns"] >= after_s * 1e9]
    for sf, rows in trace.groupby("subflow"):
        cwnd, rtt = rows["cwnd_segments"].mean(), rows["srtt_ns"].mean() / 1e6
        print(f"model subflow {sf}: cwnd {cwnd:.1f} segments, srtt {rtt:.1f} ms")
    for side, out in (("kernel", kernel), ("model", model)):
        flows = json.loads((out / "summary.json").read_text()).get("flows") or []
        rates = ", ".join(f"flow {f['flow']} {f['goodput_mbps']:.2f}" for f in flows)
        print(f"{side} goodput (Mbit/s): {rates}")


def losses(kernel: Path, after_s: float = 2.0) -> None:
    """Each kernel connection's loss events after ``after_s`` (a sample whose window fell with
    a retransmission: a recovery began), from the server's 100-ms samples of the main
    connection's subflows and of the competing flows; and how many of the bottleneck's
    overflows (loss events of any connection within 200 ms of each other) each one lost in."""
    server = json.loads((kernel / "raw" / "server.json").read_text())
    series = {"MPTCP": server["samples"]}
    series.update({f"flow {k}": v for k, v in server.get("flow_samples", {}).items()})
    events: dict[str, list[float]] = {}
    for name, samples in series.items():
        prev: dict[str, list[Any]] = {}
        for t, rows, _buffer in samples:
            for row in rows:
                key = f"{name} {row[0]}" if row[0] else name
                p = prev.get(key)
                # SAMPLED: snd_cwnd at 1, total_retrans at 6.
                if p is not None and t >= after_s and row[1] < p[1] and row[6] > p[6]:
                    events.setdefault(key, []).append(t)
                prev[key] = row
    times = sorted(t for ts in events.values() for t in ts)
    overflows: list[float] = []
    for t in times:
        if not overflows or t - overflows[-1] > 0.2:
            overflows.append(t)
    print(f"{len(overflows)} overflows after {after_s:g} s")
    for key, ts in sorted(events.items()):
        hit = sum(any(abs(t - o) <= 0.2 for t in ts) for o in overflows)
        print(f"{key}: {len(ts)} loss events, in {hit} of the {len(overflows)} overflows")


def bottleneck(run: Path) -> None:
    """The kernel's shared bottleneck rebuilt from an ``mpsched emulate --trace-headers --out
    RUN`` capture: each server packet enters the bottleneck when it leaves its path's access
    link (entry + serialization + delay, the access link idle), into a drop-tail queue of the
    bottleneck's rate and limit (the packet in service counted, as the emulator does). Prints
    the drops per path beside the emulator's own count, and each path's share of the packets
    that arrived with the queue within a packet of full."""
    import subprocess

    scenario = json.loads((run / "scenario.json").read_text())
    (link,) = scenario["links"]
    rate, queue = link["down"]["rate_bps"], link["down"]["queue"]
    limit = queue["bytes"] if "bytes" in queue else rate * queue["time_ns"] // 8_000_000_000
    access = {p["name"]: p["down"] for p in scenario["paths"]}
    fields = ["frame.time_relative", "frame.interface_name", "ip.src", "ip.len"]
    out = subprocess.run(
        ["tshark", "-r", str(run / "capture.pcapng"), "-T", "fields", "-E", "separator=,"]
        + [a for f in fields for a in ("-e", f)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    arrivals = []
    for line in out.stdout.splitlines():
        t, iface, src, size = line.split(",")
        path, _, direction = iface.partition(" ")
        if direction != "down" or src != "10.20.0.1":
            continue
        a = access[path]
        arrivals.append(
            (float(t) + int(size) * 8 / a["rate_bps"] + a["delay_ns"] / 1e9, path, int(size))
        )
    arrivals.sort()
    done: list[tuple[float, int]] = []  # (end of service, bytes), oldest first
    backlog, head = 0, 0
    drops: dict[str, int] = {}
    near_full: dict[str, int] = {}
    for t, path, size in arrivals:
        while head < len(done) and done[head][0] <= t:
            backlog -= done[head][1]
            head += 1
        if backlog + size > limit - 1500:
            near_full[path] = near_full.get(path, 0) + 1
        if head < len(done) and backlog + size > limit:
            drops[path] = drops.get(path, 0) + 1
            continue
        start = max(t, done[-1][0]) if head < len(done) else t
        done.append((start + size * 8 / rate, size))
        backlog += size
    emulator = json.loads((run / "raw" / "emulator.json").read_text())
    (bn,) = (
        lk for th in emulator["threads"] for lk in th["links"]
        if lk["name"] == link["name"] and lk["direction"] == "down"
    )  # fmt: skip
    names = [p["name"] for p in scenario["paths"]]
    counted = {names[i]: d[0] for i, d in enumerate(bn["path_drops"])}
    total = sum(near_full.values()) or 1
    for path in names:
        if path in near_full or counted.get(path):
            print(
                f"path {path}: {drops.get(path, 0)} drops rebuilt, {counted.get(path, 0)} by "
                f"the emulator; {near_full.get(path, 0)} arrivals within a packet of a full "
                f"queue ({100 * near_full.get(path, 0) / total:.0f}%)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "experiment", choices=[*sorted(EXPERIMENTS), "windows", "losses", "bottleneck"]
    )
    parser.add_argument(
        "dirs", nargs="*", type=Path, help="windows: the kernel's and the model's --out DIR"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--resume", action="store_true", help="keep the runs already in OUT")
    parser.add_argument("--table", action="store_true", help="only print the table")
    args = parser.parse_args()
    if args.experiment == "windows":
        kernel, model = args.dirs
        windows(kernel, model)
        return
    if args.experiment == "losses":
        losses(args.dirs[0])
        return
    if args.experiment == "bottleneck":
        bottleneck(args.dirs[0])
        return
    if args.out is None:
        parser.error("--out DIR is needed")
    if not args.table:
        _run(args.experiment, args.out, args.resume)
    _table(args.experiment, args.out)


if __name__ == "__main__":
    main()

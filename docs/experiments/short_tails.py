"""How long each path falls silent at the receiver, and how many silences end with a segment
shorter than a full one: the kernel's sub-MSS tails that the model's whole-segment pushes do
not have (docs/calibration/README.md, "The kernel's short tails").

    python docs/experiments/short_tails.py [--save FILE] RUN [RUN ...]
    python docs/experiments/short_tails.py --per-second SECONDS RUN [RUN ...]
    python docs/experiments/short_tails.py --stalls KERNEL_RUN

RUN: a kernel run (`mpsched emulate ... --kernel-trace --out RUN`: the client's `tcp_probe`
rows, one per data segment received, with its path and payload), a model run (`mpsched run
... --out RUN`: `segments.parquet`, each segment's first arrival), or a digest that `--save`
wrote. Per path, from 10 s on (past slow start): the data segments received, how many were
shorter than the path's full payload, the silences (no data on the path for more than 15 ms)
and their total, the silences that ended with a short segment and those that began right after
one; then the same for the connection ("both": nothing arriving on any path). `--per-second
N`: for each of the first N seconds, the share of it each path was silent (Wi-Fi / LTE), per
run.
`--stalls`: the connection's silences in a kernel run, by what came in last before it (path,
short or full segment) and by the path of the first ACK after it that moved the connection's
right edge by 10 segments or more (the server's `ack_update_msk`, its path from the server's
`tcp_probe` of the same ACK): how many, their median and their total.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kept_runs import cli, server_acks

# A path that hears nothing for longer than this is silent: ten times the 1.5-ms spacing of
# full segments at 8 Mbit/s, well above a delayed ACK's wait for the second segment.
SILENCE_MS = 15.0
FROM_S = 10.0
FULL = 1424


def silences(t_ns: np.ndarray, length: np.ndarray, full: int = FULL) -> dict:
    """One path's arrivals (time-ordered): how often and how long it fell silent, and how
    many silences a short segment ended."""
    gap_ms = np.diff(t_ns, prepend=t_ns[:1]) / 1e6
    silent = gap_ms > SILENCE_MS
    short = length < full
    ended_short = silent & short
    after_short = silent & np.concatenate([[False], short[:-1]])
    return {
        "segments": len(t_ns),
        "short": int(short.sum()),
        "silences": int(silent.sum()),
        "silent_s": round(float(gap_ms[silent].sum()) / 1e3, 2),
        "ended_short": int(ended_short.sum()),
        "ended_short_s": round(float(gap_ms[ended_short].sum()) / 1e3, 2),
        "ended_short_median_ms": round(float(np.median(gap_ms[ended_short])), 1)
        if ended_short.any()
        else None,
        "after_short": int(after_short.sum()),
    }


def arrivals(run: Path) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """The run's data arrivals at the client: side, time (ns), path and payload, in time order."""
    trace = run / "raw" / "ktrace.parquet"
    if trace.exists():
        t = pq.read_table(trace, columns=["t_ns", "event", "side", "path", "data_len"])
        t = t.filter(
            pc.and_(
                pc.and_(pc.equal(t["event"], "tcp_probe"), pc.equal(t["side"], "client")),
                pc.greater(t["data_len"], 0),
            )
        )
        cols = t.to_pydict()
        t_ns, path, length = (np.asarray(cols[c]) for c in ("t_ns", "path", "data_len"))
        side = "kernel"
    else:
        s = pq.read_table(
            run / "segments.parquet", columns=["t_first_received_ns", "subflow", "len_bytes"]
        ).to_pydict()
        t_ns = np.asarray(s["t_first_received_ns"], dtype=np.int64)
        path = np.asarray(s["subflow"])
        length = np.asarray(s["len_bytes"])
        # Never received (the run ended first): no arrival to count.
        keep = t_ns > 0
        t_ns, path, length = t_ns[keep], path[keep], length[keep]
        side = "model"
    order = np.argsort(t_ns, kind="stable")
    return side, t_ns[order], path[order], length[order]


def digest(run: Path, from_s: float = FROM_S) -> dict:
    side, t_ns, path, length = arrivals(run)
    paths = []
    for p in sorted(set(path.tolist())):
        m = (path == p) & (t_ns >= from_s * 1e9)
        paths.append({"path": int(p), **silences(t_ns[m], length[m])})
    # The connection: nothing arriving on any path.
    m = t_ns >= from_s * 1e9
    both = silences(t_ns[m], length[m])
    out = {"run": run.name, "side": side, "from_s": from_s, "paths": paths, "connection": both}
    if side == "kernel":
        out["stalls"] = [[a, b, n, round(m, 1), round(t, 2)] for a, b, n, m, t in stalls(run)]
    return out


def per_second(run: Path, seconds: int) -> list[list[float]]:
    """For each of the first `seconds` seconds, the share of it each path spent in silences
    that began within it."""
    _, t_ns, path, _ = arrivals(run)
    out = []
    for sec in range(seconds):
        shares = []
        for p in sorted(set(path.tolist())):
            x = t_ns[path == p]
            gap_ms = np.diff(x) / 1e6
            start = x[:-1]
            m = (start >= sec * 1e9) & (start < (sec + 1) * 1e9) & (gap_ms > SILENCE_MS)
            shares.append(round(float(gap_ms[m].sum()) / 1e3, 2))
        out.append(shares)
    return out


def show(runs: list[dict]) -> None:
    print(
        "| run | side | path | segments | short | silences > 15 ms | silent s "
        "| ended by a short segment | their s | median ms | after a short segment |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in runs:
        rows = [(str(p["path"]), p) for p in r["paths"]]
        rows += [("both", r["connection"])] if "connection" in r else []
        for name, p in rows:
            print(
                f"| {r['run']} | {r['side']} | {name} | {p['segments']:,} | {p['short']:,} "
                f"| {p['silences']} | {p['silent_s']} | {p['ended_short']} "
                f"| {p['ended_short_s']} | {p['ended_short_median_ms']} | {p['after_short']} |"
            )


def stalls(run: Path, from_s: float = FROM_S) -> list[tuple[str, str, int, float, float]]:
    """(last arrival, edge moved on, count, median ms, total s) of a kernel run's connection
    silences, the longest total first."""
    import bisect
    from collections import defaultdict

    _, t_ns, path, length = arrivals(run)
    keep = t_ns >= from_s * 1e9
    t_ns, path, length = t_ns[keep], path[keep], length[keep]
    gap_ms = np.diff(t_ns) / 1e6
    opens: list[tuple[int, int]] = []
    edge = 0
    for t, path_of_ack, _, end in server_acks(run):
        if end >= edge + 10 * FULL and path_of_ack is not None:
            opens.append((t, path_of_ack))
        edge = max(edge, end)
    at = [o[0] for o in opens]
    name = {0: "Wi-Fi", 1: "LTE"}
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for i in np.flatnonzero(gap_ms > SILENCE_MS):
        j = bisect.bisect_left(at, t_ns[i])
        if j == len(opens):
            continue
        last = f"{name[int(path[i])]} {'short' if length[i] < FULL else 'full'}"
        groups[(last, name[opens[j][1]])].append(float(gap_ms[i]))
    rows = [
        (last, on, len(g), float(np.median(g)), sum(g) / 1e3) for (last, on), g in groups.items()
    ]
    return sorted(rows, key=lambda r: -r[4])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stalls"] and len(sys.argv) == 3:
        print("| last in before the silence | edge opened on | silences | median ms | total s |")
        print("| --- | --- | --- | --- | --- |")
        for last, on, n, med, tot in stalls(Path(sys.argv[2])):
            print(f"| {last} | {on} | {n} | {med:.0f} | {tot:.1f} |")
    elif sys.argv[1:2] == ["--per-second"] and len(sys.argv) > 3:
        n = int(sys.argv[2])
        print("| run | " + " | ".join(f"{k}-{k + 1} s" for k in range(n)) + " |")
        print("| --- |" + " --- |" * n)
        for a in sys.argv[3:]:
            cells = [" / ".join(f"{x:.2f}" for x in sh) for sh in per_second(Path(a), n)]
            print(f"| {Path(a).name} | " + " | ".join(cells) + " |")
    else:
        cli(__doc__, digest, show)

"""Which ACKs move the connection's right edge, on the kernel and in the model, and how the
data is handed out to the paths: the numbers behind docs/calibration/README.md's 512 KiB
paragraph.

    python docs/experiments/edge_moves.py KERNEL_DIR MODEL_DIR [--start 1] [--end 8]

KERNEL_DIR: `mpsched emulate ... --trace-headers --out KERNEL_DIR` (`raw/windows.parquet`: each
ACK's path, Data ACK and right edge as the client sent it; `raw/data.parquet`: each data
packet's path and data sequence number), or without the capture `--kernel-trace` (the
server's `ack_update_msk` and `mptcp_sendmsg_frag` rows, `kernel_from_trace`). MODEL_DIR:
`mpsched run ... --out MODEL_DIR` with the
same scenario, seed and `--set`s (`acks.parquet`: each ACK's Data ACK and right edge as the
server processed it; `segments.parquet`). Per side, over [start, end) seconds, per path:

- edge moves: the ACKs that moved the right edge past every earlier one, and by how much
  (median and 90th percentile, segments of 1,424 bytes);
- jumps: the ACKs that moved the Data ACK past every earlier one by 10 segments or more, and
  how many of them also moved the edge by 10 or more;
- runs: stretches of consecutive data sequence numbers sent on this path (their first
  transmission), in segments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kept_runs import server_acks

SEGMENT = 1424
JUMP = 10


def _acks(t, path, data_ack, edge):
    order = np.argsort(t, kind="stable")
    t, path, data_ack, edge = t[order], path[order], data_ack[order], edge[order]
    d_before = np.concatenate([[data_ack[0]], np.maximum.accumulate(data_ack)[:-1]])
    e_before = np.concatenate([[edge[0]], np.maximum.accumulate(edge)[:-1]])
    return t, path, (data_ack - d_before) / SEGMENT, (edge - e_before) / SEGMENT


def _runs(paths):
    """Run lengths of equal consecutive values, with the value of each run."""
    if len(paths) == 0:
        return np.array([]), np.array([])
    cut = np.flatnonzero(paths[1:] != paths[:-1]) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(paths)]])
    return paths[starts], ends - starts


def kernel_from_trace(run: Path, start: float, end: float, names: list[str]):
    """The same from `--kernel-trace` alone (no header capture): each ACK's Data ACK and the
    right edge it carries from `ack_update_msk` (its path from the server's `tcp_probe` of the
    same ACK, just before), the data's paths from `mptcp_sendmsg_frag`'s mappings (a mapping
    extended or following the last on its subflow is that subflow's; the subflow that carried
    more bytes is named as the run's busier path in `summary.json`)."""
    acks = [a for a in server_acks(run) if a[1] is not None]
    tr = pq.read_table(
        run / "raw" / "ktrace.parquet",
        columns=["t_ns", "event", "data_seq", "subflow_seq", "data_len"],
    ).to_pydict()
    frags = [
        (tr["t_ns"][i], tr["data_seq"][i], tr["subflow_seq"][i], tr["data_len"][i])
        for i, ev in enumerate(tr["event"])
        if ev == "mptcp_sendmsg_frag"
    ]
    t = np.array([a[0] for a in acks])
    path = np.array([names[a[1]] for a in acks], dtype=object)
    base = min(a[2] for a in acks)
    t, path, jump, moved = _acks(
        t,
        path,
        np.array([float(a[2] - base) for a in acks]),
        np.array([float(a[3] - base) for a in acks]),
    )
    # Subflows by continuity of their own sequence numbers; each new piece of data.
    cur: list[list[int]] = []
    pieces = []
    for tn, ds, ss, ln in frags:
        k = next(
            (i for i, (s0, e0) in enumerate(cur) if ss in (s0, e0) or s0 <= ss <= e0 + (1 << 20)),
            None,
        )
        if k is None:
            cur.append([ss, ss])
            k = len(cur) - 1
        s0, e0 = cur[k]
        new, first = (ss + ln - e0, ds + (e0 - ss)) if ss == s0 else (ln, ds)
        if new > 0:
            pieces.append((tn, k, first, new))
        cur[k] = [ss, max(e0, ss + ln)]
    carried = [sum(n for _, k, _, n in pieces if k == j) for j in range(len(cur))]
    summary = json.loads((run / "summary.json").read_text())
    by_bytes = sorted(summary["subflows"], key=lambda x: -x["bytes_sent"])
    label = {
        j: by_bytes[r]["name"]
        for r, j in enumerate(sorted(range(len(cur)), key=lambda j: -carried[j]))
    }
    kept = sorted(
        (first, label[k], n) for tn, k, first, n in pieces if start * 1e9 <= tn < end * 1e9
    )
    segs = [name for _, name, n in kept for _ in range(max(1, round(n / SEGMENT)))]
    return t, path, jump, moved, np.array(segs, dtype=object)


def kernel(run: Path, start: float, end: float, names: list[str]):
    if not (run / "raw" / "windows.parquet").exists():
        return kernel_from_trace(run, start, end, names)
    w = pq.read_table(run / "raw" / "windows.parquet").to_pandas()
    w = w.dropna(subset=["data_ack_bytes", "right_edge_bytes"])
    t, path, jump, moved = _acks(
        w.t_ns.to_numpy(),
        w.path.to_numpy(),
        w.data_ack_bytes.to_numpy().astype(float),
        w.right_edge_bytes.to_numpy().astype(float),
    )
    d = pq.read_table(run / "raw" / "data.parquet").to_pandas()
    d = d.sort_values("t_ns").drop_duplicates("dsn_bytes")
    d = d[(d.t_ns >= start * 1e9) & (d.t_ns < end * 1e9)].sort_values("dsn_bytes")
    return t, path, jump, moved, d.path.to_numpy()


def model(run: Path, start: float, end: float, names: list[str]):
    a = pq.read_table(run / "acks.parquet").to_pandas()
    named = np.array(names, dtype=object)
    t, path, jump, moved = _acks(
        a.t_ns.to_numpy(),
        named[a.subflow.to_numpy()],
        a.data_ack_bytes.to_numpy().astype(float),
        a.right_edge_bytes.to_numpy().astype(float),
    )
    s = pq.read_table(run / "segments.parquet").to_pandas()
    s = s[(s.t_first_sent_ns >= start * 1e9) & (s.t_first_sent_ns < end * 1e9)]
    return t, path, jump, moved, named[s.sort_values("dseq").subflow.to_numpy()]


def pct(x, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def report(side: str, rows, start: float, end: float, names: list[str]) -> None:
    t, path, jump, moved, sent = rows
    keep = (t >= start * 1e9) & (t < end * 1e9)
    run_path, run_len = _runs(sent)
    for name in names:
        mine = keep & (path == name)
        m = moved[mine & (moved > 0)]
        j = mine & (jump >= JUMP)
        r = run_len[run_path == name]
        print(
            f"{side:6} {name:5} edge moves {len(m):5} (median {pct(m, 50):5.1f}, p90 "
            f"{pct(m, 90):5.1f} segments) | jumps of {JUMP}+ {j.sum():4}, moving the edge "
            f"{(j & (moved >= JUMP)).sum():4} | runs {len(r):4} (median {pct(r, 50):5.1f}, "
            f"p90 {pct(r, 90):5.1f}, mean {np.mean(r) if len(r) else float('nan'):5.1f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel", type=Path)
    ap.add_argument("model", type=Path)
    ap.add_argument("--start", type=float, default=1.0)
    ap.add_argument("--end", type=float, default=8.0)
    args = ap.parse_args()
    scenario = json.loads((args.model / "scenario.json").read_text())
    names = [p["name"] for p in scenario["paths"]]
    report("kernel", kernel(args.kernel, args.start, args.end, names), args.start, args.end, names)
    report("model", model(args.model, args.start, args.end, names), args.start, args.end, names)


if __name__ == "__main__":
    main()

"""The kernel's sampled state beside the model's at the same moments, per subflow.

    python docs/experiments/side_by_side.py KERNEL_DIR MODEL_DIR [--at 1,2,5.5] [--every 1]

KERNEL_DIR: `mpsched emulate ... --out KERNEL_DIR` (its load generators' samples,
`raw/server.json` and `raw/client.json`, every `--sample-interval`). MODEL_DIR: `mpsched run
... --out MODEL_DIR` with the same scenario, seed and `--set`s (its `subflows` and
`connection` tables; a `--sample-interval` dividing the kernel's). Each line is one moment:

    t  side  per subflow: cwnd / in flight / waiting to be sent (segments), srtt (ms)
             | the connection's window (KB, as the server sees it) and the receiver's buffer

The kernel's "in flight" is `tcpi_unacked` (SACKed segments included, so it can exceed cwnd
in recovery), its "waiting" `tcpi_notsent_bytes` / 1,424 and its window `tcpi_snd_wnd` of the
first subflow; the model's are `in_flight_segments`, `notsent_segments` and `rwnd_bytes`.
Where both stacks are held by the connection's window, what the scheduler has placed (in
flight + waiting, both subflows) is the window less the data the receiver holds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from mpsched.testbed.loadgen import RCV_SAMPLED, SAMPLED

# Payload of the testbed's MPTCP segments: tcpi_snd_mss is 1,448, less the DSS option.
SEGMENT = 1424


def kernel_rows(run: Path) -> tuple[list, list]:
    server = json.loads((run / "raw" / "server.json").read_text())["samples"]
    client = json.loads((run / "raw" / "client.json").read_text())["samples"]
    return server, client


def at_or_after(samples: list, t: float) -> list | None:
    for row in samples:
        if row[0] >= t - 1e-6:
            return row
    return None


def kernel_line(server: list, client: list, t: float) -> str:
    s, c = at_or_after(server, t), at_or_after(client, t)
    if s is None:
        return "(no kernel sample)"
    field = {name: i + 1 for i, name in enumerate(SAMPLED)}
    parts = []
    for sub in s[1]:
        notsent = sub[field["notsent_bytes"]] // SEGMENT
        parts.append(
            f"{sub[field['snd_cwnd']]:5d} {sub[field['unacked']]:5d} {notsent:5d}"
            f" {sub[field['rtt_us']] / 1000:6.1f}"
        )
    wnd = s[1][0][field["snd_wnd"]] / 1000 if s[1] else 0
    rcvbuf = c[2][0] / 1000 if c is not None else float("nan")
    rcv = {name: i + 1 for i, name in enumerate(RCV_SAMPLED)}
    rcv_wnd = "/".join(f"{sub[rcv['rcv_wnd']] // 1000}" for sub in (c[1] if c else []))
    return " | ".join(parts) + f" | wnd {wnd:7.1f}K buf {rcvbuf:6.0f}K (rcv_wnd {rcv_wnd}K)"


def model_line(subflows, conn, t: float) -> str:
    t_ns = round(t * 1e9)
    rows = subflows[subflows.t_ns >= t_ns - 1000]
    if rows.empty:
        return "(no model sample)"
    first = rows.t_ns.iloc[0]
    rows = rows[rows.t_ns == first]
    parts = [
        f"{r.cwnd_segments:5d} {r.in_flight_segments:5d} {r.notsent_segments:5d}"
        f" {r.srtt_ns / 1e6:6.1f}"
        for r in rows.itertuples()
    ]
    c = conn[conn.t_ns == first].iloc[0]
    return " | ".join(parts) + (
        f" | wnd {c.rwnd_bytes / 1000:7.1f}K buf {c.rcvbuf_bytes / 1000:6.0f}K"
        f" (held {c.rcvbuf_used_bytes // 1000}K)"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernel", type=Path)
    p.add_argument("model", type=Path)
    p.add_argument("--at", help="comma-separated times in seconds")
    p.add_argument("--every", type=float, default=1.0, help="else every this many seconds")
    args = p.parse_args(argv)
    server, client = kernel_rows(args.kernel)
    subflows = pq.read_table(args.model / "subflows.parquet").to_pandas()
    conn = pq.read_table(args.model / "connection.parquet").to_pandas()
    if args.at:
        times = [float(x) for x in args.at.split(",")]
    else:
        end = min(server[-1][0], subflows.t_ns.max() / 1e9)
        times = [k * args.every for k in range(1, int(end / args.every) + 1)]
    print("per subflow: cwnd, in flight, waiting, srtt ms")
    for t in times:
        print(f"{t:7.2f} kernel {kernel_line(server, client, t)}")
        print(f"{'':7} model  {model_line(subflows, conn, t)}")


if __name__ == "__main__":
    main()

"""Upstream's connection-level retransmission timer on the kernel, kept beside the pages that
quote it: per traced run of the Wi-Fi outage, each firing of the timer, what it sent again,
each restart's period in ticks, and the application's writes.

    python docs/experiments/timer_digest.py [--save FILE] RUN [RUN ...]

Each RUN is a run directory of `mpsched emulate scenarios/wifi-outage.toml --scheduler linux
--kernel-trace --out DIR` (its `raw/ktrace.parquet`), or a digest (`.json`) that `--save`
wrote (`docs/experiments/outage-timer-kernel.json`). Prints, per run, the firings with the
bytes each sent again (the `mptcp_sendmsg_frag` events within 1 ms of the firing, the first
of each skb), and checks them against the run's own counters: their sum is the connection's
`bytes_retrans` and their count `MPTcpExtMPTCPRetrans`.
"""

from __future__ import annotations

import json
from pathlib import Path


def digest(run: Path) -> dict:
    """What the page reads from one traced run."""
    import pyarrow.parquet as pq

    summary = json.loads((run / "summary.json").read_text())["kernel"]
    t = pq.read_table(run / "raw" / "ktrace.parquet").to_pandas()
    fires = t[t.event == "mptcp_rtx_timer_fire"].t_ns.tolist()
    frags = t[t.event == "mptcp_sendmsg_frag"]
    firings = []
    for f in fires:
        w = frags[(frags.t_ns >= f) & (frags.t_ns < f + 1_000_000)]
        # A firing sends one fragment's rest; later events in the window are the stale
        # subflow's whole queue, pushed again (not counted as retransmissions).
        sent = int(w.data_len.iloc[0]) if len(w) and len(w) < 3 else 0
        firings.append({"t_s": round(f / 1e9, 6), "resent_bytes": sent})
    starts = t[t.event == "mptcp_rtx_timer_start"]
    writes = t[t.event == "app_send"]
    return {
        "run": run.name,
        "timer_phase_ns": int(summary["timer_phase_ns"]),
        "bytes_retrans": int(summary.get("mptcp_bytes_retrans") or 0),
        "mptcp_retrans": int(summary["mptcp_counters"]["server"].get("MPTcpExtMPTCPRetrans", 0)),
        "firings": firings,
        "restarts": [
            [round(r.t_ns / 1e9, 6), int(r.timeout)]
            for r in starts.itertuples()
            if 5e9 <= r.t_ns < 9e9
        ],
        "writes_s": [round(x / 1e9, 6) for x in writes.t_ns if 5e9 <= x < 9e9],
    }


def main(kept: list[dict]) -> None:
    for r in kept:
        resent = [f["resent_bytes"] for f in r["firings"] if f["resent_bytes"]]
        at = ", ".join(f"{f['t_s']:.3f}" for f in r["firings"])
        print(f"{r['run']}: firings at {at} s")
        print(
            f"  resent {resent} = {sum(resent)} bytes in {len(resent)} firing(s); "
            f"bytes_retrans {r['bytes_retrans']}, MPTcpExtMPTCPRetrans {r['mptcp_retrans']}"
        )
        ticks = sorted({p for _, p in r["restarts"]})
        print(f"  periods of the restarts in 5-9 s (ticks): {ticks}; writes at {r['writes_s']} s")


if __name__ == "__main__":
    from kept_runs import cli

    cli(__doc__, digest, main)

"""Does the kernel's receiver hold its Data ACK back? From an emulated run's capture.

    python docs/experiments/data_ack_lag.py KERNEL_DIR

KERNEL_DIR: `mpsched emulate ... --trace-headers --out KERNEL_DIR` (its `capture.pcapng`, read
with tshark). Each data segment's stream position comes from its DSS mapping; the client's
subflow ACKs (cumulative, per path) prove when each segment had arrived in order on its
subflow, so the moment the stream's prefix up to a segment was complete at the client is the
latest such proof over the prefix. The lag is from that moment to the first client ACK, on
either path, whose Data ACK covers the segment: zero if the receiver's Data ACK keeps up with
what its subflows have, positive if it holds data back (docs/calibration/README.md, the
512 KiB paragraph). The first 2 s are left out.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

FIELDS = (
    "frame.interface_name", "frame.time_relative", "tcp.seq", "tcp.ack", "tcp.len",
    "tcp.options.mptcp.rawdataseqno", "tcp.options.mptcp.subflowseqno",
    "tcp.options.mptcp.rawdataack",
)  # fmt: skip


def main(run: Path) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        sys.exit("needs tshark (apt-get install tshark)")
    out = subprocess.run(
        [tshark, "-r", str(run / "capture.pcapng"), "-T", "fields", "-E", "separator=,",
         "-E", "occurrence=f", *(a for f in FIELDS for a in ("-e", f))],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    first: dict[int, tuple[float, str, int, int]] = {}  # stream position -> t, path, seq, len
    acks: list[tuple[float, str, int, int]] = []
    for iface, t, seq, ack, length, dsn, ssn, data_ack in csv.reader(io.StringIO(out)):
        path, direction = iface.split()
        if direction == "down" and length and int(length) > 0 and dsn:
            pos = int(dsn) + int(seq) - int(ssn)
            if pos not in first or float(t) < first[pos][0]:
                first[pos] = (float(t), path, int(seq), int(length))
        elif direction == "up" and data_ack:
            acks.append((float(t), path, int(ack), int(data_ack)))
    acks.sort()
    proofs = {}
    for p in {a[1] for a in acks}:
        mine = [a for a in acks if a[1] == p]
        proofs[p] = (
            np.array([a[0] for a in mine]),
            np.maximum.accumulate(np.array([a[2] for a in mine], dtype=np.int64)),
        )
    base = min(first)
    ack_t = np.array([a[0] for a in acks])
    covered = np.maximum.accumulate(np.array([a[3] - base for a in acks], dtype=np.int64))
    in_order, acked, sent = [], [], []
    for pos in sorted(first):
        t, path, seq, length = first[pos]
        times, upto = proofs[path]
        i = np.searchsorted(upto, seq + length)
        in_order.append(times[i] if i < len(times) else np.inf)
        j = np.searchsorted(covered, pos - base + length)
        acked.append(ack_t[j] if j < len(ack_t) else np.inf)
        sent.append(t)
    complete = np.maximum.accumulate(np.array(in_order))
    with np.errstate(invalid="ignore"):  # never acknowledged: inf - inf
        lag_ms = (np.array(acked) - complete) * 1e3
    keep = (np.array(sent) > 2.0) & np.isfinite(lag_ms)
    q = np.percentile(lag_ms[keep], [10, 50, 90, 99])
    print(
        f"{keep.sum()} segments: Data ACK lag after the prefix was in order at the subflows, "
        f"ms p10 / p50 / p90 / p99: {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} / {q[3]:.2f}; "
        f"over 5 ms: {np.mean(lag_ms[keep] > 5):.1%}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))

"""How the connection-level window turns over, on the kernel and in the model: the numbers
behind docs/calibration/README.md's small-receive-buffer paragraph.

    python docs/experiments/window_steps.py KERNEL_DIR MODEL_DIR

KERNEL_DIR: `mpsched emulate ... --kernel-trace --trace-headers --out KERNEL_DIR` (the server's
data mappings from the header trace, its Data ACKs and window from `mptcp:ack_update_msk`,
each ACK's path from the `tcp:tcp_probe` just before it). MODEL_DIR: `mpsched run ... --out
MODEL_DIR` (the segments, acks and connection traces). The first 2 s are left out. Per side:

- the Data-ACKed rate, and by Little's law what the data in flight at the connection level
  over the time a segment holds the window would give;
- the time a segment holds the window (first sent -> the server's Data ACK passes it), per path;
- the window the sender has (right edge - Data ACK) and the data it has in flight;
- how the server's Data ACK moves: the share of the data acknowledged in steps of 10 segments
  or more, and the share of it that came on each path's ACKs;
- how the data leaves: the share of each path's packets sent in trains of 10 or more (packets
  less than 0.2 ms apart).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SEGMENT = 1424  # payload of an upstream MPTCP segment (a DSS option in every packet)
SKIP_NS = 2e9
# The kernel trace's 64-bit sequence numbers: float64 would round them to 2 KB.
SEQ_COLUMNS = ("new_snd_una", "msk_wnd_end")


def _relative(col: pa.ChunkedArray, base: int) -> np.ndarray:
    """A uint64 sequence column minus ``base``, exactly (wrapping), as float64; null -> NaN."""
    raw = pc.fill_null(col, 0).to_numpy().astype(np.uint64)
    out = (raw - np.uint64(base)).view(np.int64).astype(np.float64)
    out[col.is_null().to_numpy(zero_copy_only=False)] = np.nan
    return out


def _trains(times: np.ndarray) -> float:
    """Share of packets in trains of >= 10 (consecutive packets < 0.2 ms apart)."""
    t = np.sort(times)
    ids = np.concatenate([[0], np.cumsum(np.diff(t) > 0.2e6)])
    sizes = np.bincount(ids)
    return float((sizes[ids] >= 10).mean())


def _step_on(t: np.ndarray) -> np.ndarray:
    """Time-ordered grid of 1 ms from SKIP_NS to the last time in ``t``."""
    return np.arange(SKIP_NS, float(t.max()), 1e6)


def _at(t: np.ndarray, v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The step function v(t) (t sorted) on ``grid``."""
    return v[np.clip(np.searchsorted(t, grid, side="right") - 1, 0, None)]


def side(
    name: str,
    sent_t: np.ndarray,
    sent_off: np.ndarray,
    sent_len: np.ndarray,
    sent_path: np.ndarray,
    ack_t: np.ndarray,
    ack_una: np.ndarray,
    ack_path: np.ndarray,
    window: np.ndarray,
) -> None:
    order = np.argsort(ack_t, kind="stable")
    ack_t, ack_una, ack_path = ack_t[order], ack_una[order], ack_path[order]
    una = np.maximum.accumulate(ack_una)
    end = sent_off + sent_len
    idx = np.searchsorted(una, end, side="left")
    acked = idx < len(ack_t)
    held_ms = (ack_t[np.minimum(idx, len(ack_t) - 1)] - sent_t) / 1e6
    keep = acked & (sent_t > SKIP_NS)
    order = np.argsort(sent_t, kind="stable")
    grid = _step_on(sent_t)
    nxt = _at(sent_t[order], np.maximum.accumulate(end[order]), grid)
    una_g = _at(ack_t, una, grid)
    rate = (una_g[-1] - una_g[0]) * 8 / ((grid[-1] - grid[0]) / 1e9) / 1e6
    in_flight = float((nxt - una_g).mean())
    little = in_flight * 8 / (np.mean(held_ms[keep]) / 1e3) / 1e6
    print(f"{name}: Data-ACKed {rate:.1f} Mbit/s (in flight / holding time: {little:.1f})")
    print(f"  window {np.mean(window) / SEGMENT:.0f} segments, in flight {in_flight / SEGMENT:.0f}")
    for p in sorted(set(sent_path[keep].tolist())):
        on = keep & (sent_path == p)
        q = np.percentile(held_ms[on], [10, 50, 90])
        trains = _trains(sent_t[(sent_path == p) & (sent_t > SKIP_NS)])
        print(
            f"  {p}: {on.sum() / keep.sum():.0%} of segments, hold the window "
            f"{q[0]:.0f} / {q[1]:.0f} / {q[2]:.0f} ms (p10 / p50 / p90), "
            f"{trains:.0%} of packets in trains >= 10"
        )
    late = ack_t > SKIP_NS
    step = np.diff(una, prepend=una[0])[late]
    moved = step > 0
    big = step >= 10 * SEGMENT
    print(
        f"  Data ACK: {step[big].sum() / step[moved].sum():.0%} of the data acknowledged in "
        f"steps >= 10 segments; by the ACKs of "
        + ", ".join(
            f"{p} {step[ack_path[late] == p].sum() / step.sum():.0%}"
            for p in sorted(set(ack_path[late][moved].tolist()))
        )
    )


def kernel(run: Path) -> None:
    data = pq.read_table(run / "raw" / "data.parquet").to_pandas()
    data = data[data["dsn_bytes"].notna() & (data["payload_bytes"] > 0)]
    first = data.drop_duplicates("dsn_bytes", keep="first")
    table = pq.read_table(run / "raw" / "ktrace.parquet")
    kt = table.drop_columns(list(SEQ_COLUMNS)).to_pandas()
    base = int(pc.min(table["data_seq"]).as_py())
    for col in SEQ_COLUMNS:
        kt[col] = _relative(table[col], base)
    # Each Data ACK's path: the server's tcp_probe just before it (the same ACK).
    probe = (kt["event"] == "tcp_probe") & (kt["side"] == "server")
    kt["ack_path"] = kt["path"].where(probe).ffill()
    acks = kt[kt["event"] == "ack_update_msk"]
    # The client's connection takes Data ACKs of its own (empty) direction: the server's only.
    acks = acks[acks["new_snd_una"].abs() < 1e12]
    names = {i: p["name"] for i, p in enumerate(_paths(run))}
    grid = _step_on(first["t_ns"].to_numpy(np.float64))
    t = acks["t_ns"].to_numpy(np.float64)
    window = _at(t, acks["msk_wnd_end"].to_numpy(np.float64), grid) - _at(
        t, np.maximum.accumulate(acks["new_snd_una"].to_numpy(np.float64)), grid
    )
    side(
        "kernel",
        first["t_ns"].to_numpy(np.float64),
        first["dsn_bytes"].to_numpy(np.float64),
        first["payload_bytes"].to_numpy(np.float64),
        first["path"].to_numpy(),
        t,
        acks["new_snd_una"].to_numpy(np.float64),
        acks["ack_path"].map(names).fillna("?").to_numpy(),
        window,
    )


def model(run: Path) -> None:
    seg = pq.read_table(run / "segments.parquet").to_pandas().sort_values("dseq")
    acks = pq.read_table(run / "acks.parquet").to_pandas()
    conn = pq.read_table(run / "connection.parquet").to_pandas()
    names = {i: p["name"] for i, p in enumerate(_paths(run))}
    lengths = seg["len_bytes"].to_numpy(np.float64)
    side(
        "model",
        seg["t_first_sent_ns"].to_numpy(np.float64),
        np.concatenate([[0.0], np.cumsum(lengths)[:-1]]),
        lengths,
        np.array([names[int(s)] for s in seg["subflow"]]),
        acks["t_ns"].to_numpy(np.float64),
        acks["data_ack_bytes"].to_numpy(np.float64),
        np.array([names[int(s)] for s in acks["subflow"]]),
        conn.loc[conn["t_ns"] > SKIP_NS, "rwnd_bytes"].to_numpy(np.float64),
    )


def _paths(run: Path) -> list[dict]:
    return json.loads((run / "scenario.json").read_text())["paths"]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kernel(Path(sys.argv[1]))
    model(Path(sys.argv[2]))

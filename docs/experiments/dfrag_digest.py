"""Where upstream MPTCP's data fragments begin and end on the kernel, and what the server
application's writes were, kept beside the pages that quote them (docs/calibration/README.md,
"Where the kernel's fragments fall").

    python docs/experiments/dfrag_digest.py [--save FILE] RUN [RUN ...]

Each RUN is a run directory of `mpsched emulate ... --scheduler linux --kernel-trace --out DIR`
(its `raw/ktrace.parquet`), or a digest (`.json`) that `--save` wrote
(`docs/experiments/dfrag-kernel.json`).

A `mptcp_sendmsg_frag` event is one call of `mptcp_sendmsg_frag`, which copies from a single
data fragment into a subflow's tail skb and reports that skb's mapping (`data_seq`,
`data_len`). Where a later call extends the same mapping, the earlier call stopped inside an
skb with room left: at its fragment's end, or where a push stopped (window, burst, buffer). The
fragments' ends are the most common of those stops per 2 MB of the stream, taken modulo
32,728 bytes (a 32-KiB page less the 40-byte `struct mptcp_data_frag`): on a fixed grid of
whole pages the residue is 0, and each write that finds every fragment handed to a subflow
starts one in the middle of a page and moves the grid 40 bytes earlier.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

#: A fragment that has a page to itself.
DFRAG_BYTES = 32_728
#: The stream is read in windows of this many bytes.
WINDOW = 2_000_000


def digest(run: Path) -> dict:
    """What the page reads from one traced run."""
    import pyarrow.parquet as pq

    cols = ["t_ns", "event", "data_len", "data_seq", "subflow_seq"]
    rows = pq.read_table(run / "raw" / "ktrace.parquet", columns=cols).to_pylist()
    frags = [r for r in rows if r["event"] == "mptcp_sendmsg_frag"]
    writes = [int(r["data_len"]) for r in rows if r["event"] == "app_send"]
    idsn = min(r["data_seq"] for r in frags) - 1
    lens: dict[int, set[int]] = {}
    for r in frags:
        lens.setdefault(r["data_seq"], set()).add(int(r["data_len"]))
    stops = sorted(s - idsn - 1 + n for s, ns in lens.items() for n in sorted(ns)[:-1])
    windows: dict[int, Counter[int]] = {}
    for e in stops:
        windows.setdefault(e // WINDOW, Counter())[e % DFRAG_BYTES] += 1
    grid = [
        [k * WINDOW, c.most_common(1)[0][0], c.most_common(1)[0][1], sum(c.values())]
        for k, c in sorted(windows.items())
    ]
    # The second subflow's first push: its mappings from its first event (subflow_seq 1
    # again) while they continue its own subflow sequence.
    pushes = []
    second = next((i for i, r in enumerate(frags) if r["subflow_seq"] == 1 and i > 0), None)
    if second is not None:
        start = frags[second]["data_seq"] - idsn - 1
        end = start
        ends = {1}
        for r in frags[second:]:
            if r["subflow_seq"] not in ends:  # the first subflow's mapping
                break
            ends.add(r["subflow_seq"] + int(r["data_len"]))
            end = max(end, r["data_seq"] - idsn - 1 + int(r["data_len"]))
        pushes = [start, end, round(frags[second]["t_ns"] / 1e9, 6)]
    return {
        "run": run.name,
        "writes": {
            "count": len(writes),
            "chunks": sum(1 for w in writes if w == 262_144),
            "whole_fragment_writes": sum(1 for w in writes if w % DFRAG_BYTES == 0),
            "whole_fragments": sorted({w // DFRAG_BYTES for w in writes if w % DFRAG_BYTES == 0}),
            "other": sorted(w for w in writes if w != 262_144 and w % DFRAG_BYTES),
            "first": writes[:6],
        },
        "grid": grid,
        "second_subflow_first_push": pushes,
    }


def shifts(grid: list[list[int]]) -> list[tuple[float, int]]:
    """Where the grid's residue changes: (stream MB, residue)."""
    out = []
    last = None
    for at, residue, _, _ in grid:
        if residue != last:
            out.append((at / 1e6, residue))
            last = residue
    return out


def main(kept: list[dict]) -> None:
    for r in kept:
        w = r["writes"]
        print(
            f"{r['run']}: {w['count']} writes, {w['chunks']} of 256 KiB, "
            f"{len(w['whole_fragments'])} size(s) of whole fragments "
            f"{[n * DFRAG_BYTES for n in w['whole_fragments']]}, others {w['other']}; "
            f"first {w['first']}"
        )
        pts = ", ".join(f"{mb:.0f} MB: {res}" for mb, res in shifts(r["grid"]))
        print(f"  fragment ends mod {DFRAG_BYTES} from: {pts}")
        if r["second_subflow_first_push"]:
            a, b, t = r["second_subflow_first_push"]
            print(f"  the second subflow's first push: bytes {a}-{b} ({b - a} bytes) at {t:.3f} s")


if __name__ == "__main__":
    from kept_runs import cli

    cli(__doc__, digest, main)

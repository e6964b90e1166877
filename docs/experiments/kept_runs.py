"""What the digest scripts share (timer_digest.py, dfrag_digest.py, short_tails.py): their
command line, which reads kernel run directories or a digest that `--save` wrote, and prints
them; and the server's ACKs as a `--kernel-trace` run records them (short_tails.py,
edge_moves.py).

    python docs/experiments/SCRIPT.py [--save FILE] RUN [RUN ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq


def runs(args: list[Path], digest: Callable[[Path], dict]) -> list[dict]:
    """Each argument's runs: a digest file's, or one run directory read by `digest`."""
    out: list[dict] = []
    for a in args:
        out.extend(json.loads(a.read_text())["runs"] if a.suffix == ".json" else [digest(a)])
    return out


def cli(usage: str, digest: Callable[[Path], dict], show: Callable[[list[dict]], None]) -> None:
    """Reads the runs named on the command line, writes them with `--save FILE`, shows them."""
    args = sys.argv[1:]
    save = None
    if args[:1] == ["--save"] and len(args) > 1:
        save, args = Path(args[1]), args[2:]
    if not args:
        sys.exit(usage)
    kept = runs([Path(a) for a in args], digest)
    if save is not None:
        lines = ",\n".join("  " + json.dumps(r) for r in kept)
        save.write_text('{"runs": [\n' + lines + "\n]}\n")
    show(kept)


def server_acks(run: Path) -> list[tuple[int, int | None, int, int]]:
    """(t_ns, path, Data ACK, right edge it carries) of each ACK the server took in, from a
    `--kernel-trace` run's `ack_update_msk` rows; the path is that of the server's `tcp_probe`
    of the same ACK, just before (None before the first)."""
    tr = pq.read_table(
        run / "raw" / "ktrace.parquet",
        columns=["t_ns", "event", "side", "path", "data_ack", "new_wnd_end"],
    ).to_pydict()
    acks, last_path = [], None
    for i, ev in enumerate(tr["event"]):
        if ev == "tcp_probe" and tr["side"][i] == "server":
            last_path = tr["path"][i]
        elif ev == "ack_update_msk" and tr["data_ack"][i] > 1 << 50:
            # The server's own Data ACKs of the client's (empty) stream are small numbers.
            acks.append((tr["t_ns"][i], last_path, tr["data_ack"][i], tr["new_wnd_end"][i]))
    return acks

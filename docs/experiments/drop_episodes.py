"""Loss episodes at the routers' queues, on the kernel and in the model: when each path's queue
overflowed and how many packets each overflow cost. The numbers behind docs/calibration/
README.md's paragraph on 500-ms queues.

    python docs/experiments/drop_episodes.py KERNEL_DIR MODEL_DIR [--gap 1.0]

KERNEL_DIR: `mpsched emulate ... --out KERNEL_DIR` (`raw/emulator.json`: the time of each of a
link's first 20,000 drops, queue or random). MODEL_DIR: `mpsched run ... --out MODEL_DIR` with
the same scenario, seed and `--set`s (`subflows.parquet`: each path's queue drops, sampled every
`--sample-interval`, 10 ms by default). Drops less than `--gap` seconds apart are one episode;
per path and side the script prints the drops and each episode as start (s) + length (s): drops.
A random loss shows as an episode of one on the kernel's side and not at all on the model's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def episodes(times: list[float], gap: float) -> list[tuple[float, float, int]]:
    """Drop times (s, ascending) grouped into (start, length, drops), split at gaps >= `gap`."""
    out: list[list[float]] = []
    for t in times:
        if out and t - out[-1][1] < gap:
            out[-1][1] = t
            out[-1][2] += 1
        else:
            out.append([t, t, 1])
    return [(a, b - a, int(n)) for a, b, n in out]


def kernel(run: Path) -> dict[str, list[float]]:
    emu = json.loads((run / "raw" / "emulator.json").read_text())
    drops: dict[str, list[float]] = {}
    for thread in emu["threads"]:
        for link in thread["links"]:
            if link["direction"] == "down":
                drops[link["name"]] = sorted(t / 1000 for t in link["drop_times_ms"])
    return drops


def model(run: Path) -> dict[str, list[float]]:
    names = [p["name"] for p in json.loads((run / "scenario.json").read_text())["paths"]]
    sf = pq.read_table(run / "subflows.parquet", columns=["t_ns", "subflow", "queue_drops"])
    sf = sf.to_pandas()
    drops: dict[str, list[float]] = {}
    for i, name in enumerate(names):
        s = sf[sf.subflow == i].sort_values("t_ns")
        new = np.diff(s.queue_drops.to_numpy(), prepend=0)
        t = s.t_ns.to_numpy() / 1e9
        drops[name] = [float(x) for x, n in zip(t, new, strict=True) for _ in range(int(n))]
    return drops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel_dir", type=Path)
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between episodes")
    args = ap.parse_args()
    sides = {"kernel": kernel(args.kernel_dir), "model": model(args.model_dir)}
    for name in sides["model"]:
        for side, drops in sides.items():
            times = drops.get(name, [])
            eps = ", ".join(f"{a:.2f}+{d:.2f}: {n}" for a, d, n in episodes(times, args.gap))
            print(f"{name:6} {side:6} {len(times):5} drops  {eps}")


if __name__ == "__main__":
    main()

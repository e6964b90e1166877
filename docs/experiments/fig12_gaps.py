"""Paper 000's Fig. 12 (docs/experiments/paper000.md, "Gap after a path change"): the gap STMS
gives the slow path's segments against the gap they needed (`mpsched.gaps.gap_truth`), in
windows around a path change at 30 s, out-of-tree, on the built-in lab.

    python docs/experiments/fig12_gaps.py

Each row is one run (the LTE RTT falling from 200 to 100 ms, or the Wi-Fi RTT from 20 to
5 ms); each cell the mean gap needed / got over the window (segments).
"""

from __future__ import annotations

import mpsched
from mpsched.gaps import gap_truth

WINDOWS = ((20, 30), (30, 33), (33, 36), (36, 40), (40, 50))
LTE = {"path.lte.rtt": "200ms", "path.lte.schedule": [{"at": "30s", "rtt": "100ms"}]}
WIFI = {"path.lte.rtt": "200ms", "path.wifi.schedule": [{"at": "30s", "rtt": "5ms"}]}
RUNS = [("LTE 200 -> 100 ms", s, seed, LTE) for s in ("stms-a", "stms-c") for seed in (1, 2, 3)]
RUNS += [("Wi-Fi 20 -> 5 ms", s, 1, WIFI) for s in ("stms-a", "stms-c")]


def main() -> None:
    heads = " | ".join(f"{a}-{b} s" for a, b in WINDOWS)
    print(f"| change | scheduler | seed | {heads} |")
    print("| --- | --- | --- |" + " --- |" * len(WINDOWS))
    for change, scheduler, seed, sets in RUNS:
        overrides = {
            "connection.stack": "out-of-tree",
            "workload.write_chunk": "128KiB",
            **sets,
        }
        r = mpsched.run(scheduler=scheduler, seed=seed, trace=True, **overrides)
        g = gap_truth(r.segments)
        cells = []
        for a, b in WINDOWS:
            w = g[(g["t_ns"] >= a * 1e9) & (g["t_ns"] < b * 1e9)]
            cells.append(f"{w['needed'].mean():.0f} / {w['got'].mean():.0f}")
        print(f"| {change} | {scheduler} | {seed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

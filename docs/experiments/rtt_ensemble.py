"""How much a point's simulated goodput depends on microseconds of path delay: the numbers
behind docs/calibration/README.md's "a point on a knife's edge".

    python docs/experiments/rtt_ensemble.py [--set KEY=VALUE ...]

Runs the STMS lab (`scenarios/stms-lab.toml`, upstream's scheduler, LTE RTT 100 ms, 30 s) with
the Wi-Fi RTT at 20 ms plus 0, 5, 10, 50, 100 and 500 microseconds, seeds 1-3 each, and prints
each run's goodput and the mean over all of them. A simulated path's delay is exact to the
nanosecond, so two receiver timers can fall on the same instant every round trip; a real
kernel's never do. Extra `--set` options go to every run (default: a 512 KiB buffer).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mpsched
from mpsched.scenario import parse_set

ROOT = Path(__file__).resolve().parents[2]

OFFSETS_US = [0, 5, 10, 50, 100, 500]
SEEDS = [1, 2, 3]


def main(argv: list[str]) -> None:
    sets = ["connection.rcvbuf=512KiB"]
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag != "--set" or not args:
            sys.exit(f"usage: rtt_ensemble.py [--set KEY=VALUE ...] (got {flag!r})")
        sets.append(args.pop(0))
    every = []
    for us in OFFSETS_US:
        row = []
        for seed in SEEDS:
            overrides = {
                "connection.scheduler": "linux",
                "path.lte.rtt": "100ms",
                "duration": "30s",
                "seed": seed,
                "path.wifi.rtt": f"{20_000 + us}us",
                **parse_set(sets),
            }
            result = mpsched.run(mpsched.load(ROOT / "scenarios" / "stms-lab.toml", overrides))
            row.append(result.summary["goodput_mbps"])
        every += row
        print(f"Wi-Fi RTT 20 ms + {us:>3} us: " + "  ".join(f"{g:5.1f}" for g in row))
    print(
        f"mean of {len(every)} runs: {sum(every) / len(every):.1f} Mbit/s "
        f"({min(every):.1f}-{max(every):.1f})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])

"""Where each subflow of the STMS lab leaves slow start, in the model and on the kernel.

    python docs/experiments/hystart.py model [--set KEY=VALUE]...   # the simulator
    python docs/experiments/hystart.py kernel DIR                    # an emulate --kernel-trace run

The model's side runs the lab (scheduler `linux`, 2 s, 2-ms samples) and reports, per subflow,
the first sample with a finite ssthresh: its time, cwnd, ssthresh and the queue drops so far.
The kernel's side reads `DIR/raw/ktrace.parquet` (`mpsched emulate ... --kernel-trace --out
DIR`): the first ACK the server took with a finite ssthresh, per path
(docs/calibration/README.md, "HyStart's rounds").
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

INFINITE = 2**31 - 1
ROOT = Path(__file__).resolve().parents[2]


def model(sets: list[str]) -> pl.DataFrame:
    import mpsched
    from mpsched.scenario import parse_set

    overrides = {"duration": "2s", "connection.scheduler": "linux", **parse_set(sets)}
    result = mpsched.run(
        mpsched.load(ROOT / "scenarios" / "stms-lab.toml", overrides),
        trace=True,
        sample_interval="2ms",
    )
    sub = pl.from_arrow(result.table("subflows"))
    assert isinstance(sub, pl.DataFrame)
    left = (
        sub.filter(pl.col("ssthresh_segments") < INFINITE)
        .group_by("subflow", maintain_order=True)
        .first()
        .select(
            "subflow",
            (pl.col("t_ns") / 1e6).alias("t_ms"),
            "cwnd_segments",
            "ssthresh_segments",
            "queue_drops",
        )
        .sort("subflow")
    )
    return left


def kernel(run: Path) -> pl.DataFrame:
    t = pl.read_parquet(run / "raw" / "ktrace.parquet")
    acks = t.filter((pl.col("event") == "tcp_probe") & (pl.col("side") == "server"))
    return (
        acks.filter(pl.col("ssthresh") < INFINITE)
        .group_by("path", maintain_order=True)
        .first()
        .select("path", (pl.col("t_ns") / 1e6).alias("t_ms"), "snd_cwnd", "ssthresh")
        .sort("path")
    )


def main(argv: list[str]) -> None:
    if argv[:1] == ["model"]:
        sets = [a for a in argv[1:] if a != "--set"]
        print(model(sets))
    elif argv[:1] == ["kernel"] and len(argv) == 2:
        print(kernel(Path(argv[1])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

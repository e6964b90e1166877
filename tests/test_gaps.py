"""The gap a slow subflow's segments needed and got (mpsched.gaps), by hand and on a run."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pandas as pd
import pytest

import mpsched
from mpsched.gaps import gap_truth

MS = 1_000_000


def hand_made() -> pd.DataFrame:
    """Fast subflow 0: data segments 0..99 except 30, the i-th sent at i ms and arriving 10 ms
    later. Slow subflow 1: segment 30 sent at 0.5 ms, arriving at 50.5 ms; segment 200 sent
    at 1 ms and retransmitted (left out)."""
    fast = [d for d in range(100) if d != 30]
    rows = [(d, 0, 1, i * MS, i * MS + 10 * MS) for i, d in enumerate(fast)]
    rows += [(30, 1, 1, MS // 2, 50 * MS + MS // 2), (200, 1, 2, MS, 400 * MS)]
    return pd.DataFrame(
        rows,
        columns=["dseq", "subflow", "transmissions", "t_first_sent_ns", "t_first_received_ns"],
    )


def test_needed_and_got_are_counted_from_sends_and_arrivals() -> None:
    g = gap_truth(hand_made())
    # One fast segment (at 0 ms) went before the slow one. It needed the 40 fast segments
    # sent at 1..40 ms (arriving by 50 ms) and got the 29 below it (1..29): it landed 11
    # segments late.
    assert g.to_dict("records") == [{"t_ns": MS // 2, "dseq": 30, "needed": 40, "got": 29}]


def test_the_slower_subflow_is_found_by_its_transit_time() -> None:
    frame = hand_made()
    swapped = frame.assign(subflow=1 - frame["subflow"])
    assert gap_truth(swapped).to_dict("records") == gap_truth(frame).to_dict("records")
    with pytest.raises(ValueError, match="two subflows"):
        gap_truth(frame[frame["subflow"] == 0])


def test_stms_c_on_constant_paths_gets_the_gap_it_needs(native: ModuleType) -> None:
    # 30 Mbit/s each, RTT 20/100 ms, shallow buffers, no loss: the needed gap is close to
    # B_f x (OWD_s - OWD_f) = 2,500 segments/s x 40 ms = 100, and STMS-C's eq. 2 gives it.
    result = mpsched.run(
        scheduler="stms-c",
        duration="20s",
        trace=True,
        **{
            "connection.sndbuf_autotune": False,
            "path.wifi.loss": 0.0,
            "path.lte.loss": 0.0,
            "path.wifi.queue": "5ms",
            "path.lte.queue": "5ms",
        },
    )
    g = gap_truth(result.segments)
    g = g[g["t_ns"] > 5_000 * MS]
    needed, got = g["needed"].mean(), g["got"].mean()
    assert needed == pytest.approx(100, rel=0.2)
    assert got == pytest.approx(needed, rel=0.15)
    # And what the scheduler recorded is what the segments got.
    recorded = result.scheduler
    gap = recorded[(recorded["key"] == "gap") & (recorded["t_ns"] > 5_000 * MS)]["value"]
    assert float(np.median(gap)) == pytest.approx(float(g["got"].median()), rel=0.1)

"""The gap a slow subflow's segments needed, measured from a run's segment trace.

STMS (paper 000, eq. 2) sends the slow subflow's segment ``gap`` places ahead of the fast
subflow's, so that the fast subflow fills the places in between before it lands. Whether a
gap was right shows only afterwards, at the receiver: for a segment first sent on the slow
subflow at ``t`` and arriving at ``a``, the gap it **needed** is the number of fast-subflow
segments sent after ``t`` that arrived before ``a``; the gap it **got** is the number of
fast-subflow segments sent after ``t`` with a smaller data sequence number. ``got - needed``
> 0: it landed early and waited; < 0: segments above it waited for it.

>>> import mpsched
>>> from mpsched.gaps import gap_truth
>>> r = mpsched.run(scheduler="stms-c", duration="20s", trace=True)
>>> g = gap_truth(r.segments)  # doctest: +SKIP
>>> (g["got"] - g["needed"]).abs().mean()  # doctest: +SKIP

Both counts rely on what holds for a FIFO path and an in-order fast subflow (STMS, OTIAS and
LowRTT send each subflow's new segments in data order): the fast subflow's first
transmissions arrive in the order they were sent, and its data sequence numbers grow with
its send times. Segments that needed a retransmission are left out on both sides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: The columns of the ``segments`` table that :func:`gap_truth` reads.
SEGMENT_COLUMNS = ["dseq", "subflow", "transmissions", "t_first_sent_ns", "t_first_received_ns"]


def _ranked_subflows(segments: pd.DataFrame) -> tuple[int, int]:
    """(fast, slow): the two subflows that carried the most segments, by median transit."""
    once = segments[segments["transmissions"] == 1]
    counts = once["subflow"].value_counts()
    if len(counts) < 2:
        raise ValueError("gap_truth needs segments on two subflows")
    pair = [int(s) for s in counts.index[:2]]
    transit = once["t_first_received_ns"] - once["t_first_sent_ns"]
    medians = {s: float(transit[once["subflow"] == s].median()) for s in pair}
    fast, slow = sorted(pair, key=lambda s: medians[s])
    return fast, slow


def gap_truth(
    segments: pd.DataFrame, fast: int | None = None, slow: int | None = None
) -> pd.DataFrame:
    """One row per segment first sent on ``slow`` and never retransmitted: ``t_ns`` (when it
    was sent), ``dseq``, ``needed`` and ``got`` (segments, as the module says).

    ``segments`` is a run's ``segments`` table (``Result.segments``). By default ``fast`` and
    ``slow`` are the two busiest subflows, the one with the shorter median transit first.
    """
    import pandas as pd

    if fast is None or slow is None:
        fast, slow = _ranked_subflows(segments)
    once = segments[segments["transmissions"] == 1]
    f = once[once["subflow"] == fast].sort_values("t_first_sent_ns", kind="stable")
    s = once[once["subflow"] == slow]
    f_sent = f["t_first_sent_ns"].to_numpy()
    # FIFO: arrivals follow sends; the running maximum absorbs ties and clock equalities.
    f_arrival = np.maximum.accumulate(f["t_first_received_ns"].to_numpy())
    f_dseq = np.sort(f["dseq"].to_numpy())
    s_sent = s["t_first_sent_ns"].to_numpy()
    s_arrival = s["t_first_received_ns"].to_numpy()
    s_dseq = s["dseq"].to_numpy()
    # Fast segments sent no later than the slow one: the first `before` in send order.
    before = np.searchsorted(f_sent, s_sent, side="right")
    needed = np.maximum(np.searchsorted(f_arrival, s_arrival, side="left") - before, 0)
    got = np.maximum(np.searchsorted(f_dseq, s_dseq, side="left") - before, 0)
    frame = pd.DataFrame(
        {
            "t_ns": s_sent,
            "dseq": s_dseq,
            "needed": needed.astype(np.int64),
            "got": got.astype(np.int64),
        }
    )
    return frame.sort_values("t_ns", kind="stable", ignore_index=True)

"""The per-segment retransmission count adds up to the subflows' TCP retransmissions."""

from __future__ import annotations

import mpsched

SCENARIO = """
duration = "120s"
[connection]
protocol = "tcp"
[workload]
kind = "file"
size = "5MB"
[[path]]
name = "lossy"
rate = "20Mbps"
rtt = "40ms"
queue = "60KB"
loss = 0.01
"""


def test_per_segment_retransmissions_sum_to_the_subflow_total() -> None:
    result = mpsched.run(SCENARIO, trace=True)
    total = sum(s["retransmits"] for s in result.summary["subflows"])
    segments = result.segments
    assert result.summary["completion_s"] is not None
    assert total > 20  # 1% loss on ~3,500 segments, plus queue drops
    assert int(segments["retransmissions"].sum()) == total
    # The scheduler sent each segment once: plain TCP has no reinjections.
    assert (segments["transmissions"] == 1).all()

"""The kernel testbed runs the simulator's topologies and workloads: shared links (``[[link]]``,
a path's ``via``), competing flows (``[[flow]]``) and the rate-limited application.

These tests need root, network namespaces, TUN devices and MPTCP; they skip with the reason
where those are missing, unless ``MPSCHED_REQUIRE_TESTBED=1`` (CI): then they fail
(``kernel_testbed.py``).
"""

from __future__ import annotations

import pytest

from mpsched import ScenarioError, load, to_native
from mpsched.testbed import emulate, missing_capabilities

from .kernel_testbed import MISSING

_MISSING_MPTCP = MISSING or missing_capabilities("mptcp")
needs_mptcp = pytest.mark.skipif(
    _MISSING_MPTCP is not None, reason=f"kernel MPTCP testbed unavailable: {_MISSING_MPTCP}"
)

# Two MPTCP subflows (paths a, b) and one TCP flow (path tcp) through one 10 Mbit/s bottleneck,
# each path's own access link fast and short: RFC 6356's set-up, small.
SHARED = """
duration = "5s"
seed = 1

[connection]
protocol = "mptcp"
scheduler = "linux"
congestion = "cubic"
paths = ["a", "b"]

[[link]]
name = "bottleneck"
rate = "10Mbps"
rtt = "20ms"
queue = "20ms"

[[path]]
name = "a"
rate = "1Gbps"
rtt = "2ms"
via = ["bottleneck"]

[[path]]
name = "b"
rate = "1Gbps"
rtt = "2ms"
via = ["bottleneck"]

[[path]]
name = "tcp"
rate = "1Gbps"
rtt = "2ms"
via = ["bottleneck"]

[[flow]]
protocol = "tcp"
paths = ["tcp"]
"""

# A rate-limited application (1 Mbit/s of 8 KiB blocks) beside ten short MPTCP flows arriving
# as a Poisson process, of Pareto-distributed sizes, over two paths.
FLOWS = """
duration = "5s"
seed = 3

[connection]
protocol = "mptcp"
scheduler = "linux"
congestion = "cubic"

[workload]
kind = "rate"
rate = "1Mbps"
block = "8KiB"

[[flow]]
count = 10
start = "100ms"
interval = "200ms"
start_dist = "poisson"
size = "100KB"
size_dist = "pareto"

[[path]]
name = "p1"
rate = "20Mbps"
rtt = "20ms"
queue = "20ms"

[[path]]
name = "p2"
rate = "20Mbps"
rtt = "60ms"
queue = "30ms"
"""


def test_the_testbed_refuses_only_what_the_kernel_lacks() -> None:
    """Shared links, competing flows and the rate workload pass the kernel's check; coupled
    congestion control (a flow's too), classic recovery, a window ratio other than the
    kernel's and a scheduler it does not have are refused, naming the key."""
    from mpsched.testbed import check_kernel_support

    for text in (SHARED, FLOWS):
        assert check_kernel_support(to_native(load(text)), None) == "default"
    config = to_native(load(SHARED, {"flow.0.congestion": "lia"}))
    with pytest.raises(ScenarioError, match=r"^flow\[0\]\.congestion: 'lia'"):
        check_kernel_support(config, None)
    config = to_native(load(FLOWS, {"connection.loss_recovery": "classic"}))
    with pytest.raises(ScenarioError, match=r"^connection\.loss_recovery: .*'classic'"):
        check_kernel_support(config, None)
    config = to_native(load(FLOWS, {"connection.join": "syn-ack"}))
    with pytest.raises(ScenarioError, match=r"^connection\.join: .*'syn-ack'"):
        check_kernel_support(config, None)
    config = to_native(load(FLOWS, {"connection.window_ratio": 0.5}))
    with pytest.raises(ScenarioError, match=r"^connection\.window_ratio: "):
        check_kernel_support(config, None)
    config = to_native(load(FLOWS, {"flow.0.scheduler": "minrtt"}))
    with pytest.raises(ScenarioError, match=r"^flow\[0\]\.scheduler: .*'linux'"):
        check_kernel_support(config, None)


@needs_mptcp
def test_a_shared_bottleneck_carries_both_connections_at_its_rate() -> None:
    summary = emulate(load(SHARED))
    mptcp, tcp = summary["flows"]
    assert (mptcp["protocol"], tcp["protocol"]) == ("mptcp", "tcp")
    assert tcp["paths"] == ["tcp"] and mptcp["paths"] == ["a", "b"]
    # Both connections moved data, and together no more than the bottleneck carries: its
    # payload rate (1,424 bytes of MPTCP's and 1,448 of TCP's per 1,500-byte packet) over the
    # run, plus its 20 ms queue. A path that bypassed the bottleneck (1 Gbit/s) would exceed it.
    moved = mptcp["bytes_delivered"] + tcp["bytes_delivered"]
    assert mptcp["bytes_delivered"] > 0.1 * moved and tcp["bytes_delivered"] > 0.1 * moved
    ceiling = 10e6 / 8 * 5.0 * 1448 / 1500 + 10e6 / 8 * 0.020
    assert moved <= 1.02 * ceiling, (moved, ceiling)
    # And the bottleneck was the limit, not the hosts: nearly full after slow start.
    assert moved >= 0.85 * ceiling, (moved, ceiling)
    # The emulator ran one shared link per direction, crossed by all three paths' packets:
    # the data leave it into the paths' own links.
    links = summary["emulator"]["links"]
    shared = [ln for ln in links if ln["name"] == "bottleneck"]
    assert sorted(ln["direction"] for ln in shared) == ["down", "up"], links
    down = next(ln for ln in shared if ln["direction"] == "down")
    own = [ln for ln in links if ln["name"] != "bottleneck" and ln["direction"] == "down"]
    into_own = sum(ln["enqueued"] + ln["queue_drops"] + ln["random_drops"] for ln in own)
    assert down["delivered"] > 1000 and abs(down["delivered"] - into_own) <= 10, (down, own)
    # Every data drop is one connection's: the subflows' and the TCP flow's queue drops are
    # all the down links' (the bottleneck's, nearly all).
    drops = sum(s["queue_drops"] for s in summary["subflows"]) + tcp["queue_drops"]
    on_links = sum(row[0] + row[2] for ln in links if ln["direction"] == "down"
                   for row in ln["path_drops"])  # fmt: skip
    assert drops == on_links > 0, (drops, on_links)


@needs_mptcp
def test_competing_flows_complete_and_blocks_are_timed() -> None:
    scenario = load(FLOWS)
    config = to_native(scenario)
    summary = emulate(config)
    flows = summary["flows"]
    assert [f["flow"] for f in flows] == list(range(11))
    # Every competing flow finished its file, and its completion time is its own, from its
    # SYN: at least a round trip on the faster path, and it started when it was drawn to.
    assert summary["unfinished_flows"] == 0, flows
    for f, spec in zip(flows[1:], config["flows"], strict=True):
        assert f["size_bytes"] == spec["size_bytes"]
        assert f["bytes_delivered"] >= spec["size_bytes"], f
        assert f["completion_s"] is not None and f["completion_s"] >= 0.020, f
        assert abs(f["start_s"] - spec["start_ns"] / 1e9) < 0.02, (f, spec)
    done = [f["completion_s"] for f in flows[1:]]
    assert summary["mean_flow_completion_s"] == pytest.approx(sum(done) / len(done))
    # The application's blocks: about one every 65.5 ms for the 5 s (less the handshake), each
    # taking at least the faster path's one-way delay and its six segments' serialization.
    blocks = summary["block_delay_ms"]
    assert 65 <= summary["blocks_delivered"] <= 77, summary["blocks_delivered"]
    least = 10.0 + 6 * 1500 * 8 / 20e6 * 1e3
    assert least <= blocks["p50"] <= blocks["p99"] <= blocks["max"], blocks
    assert summary["block_delay_increase"] >= 0

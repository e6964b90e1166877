"""The transport (``mpsched serve`` / ``get``) between the testbed's namespaces, over the
emulated paths the kernel runs over: against the simulator, and through loss and an outage.

These tests need root, network namespaces and TUN devices; they skip with the reason where
those are missing.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from mpsched import api, load, to_native
from mpsched.testbed.transport import emulate_transport

from .conftest import ROOT
from .kernel_testbed import needs_testbed


@needs_testbed
@pytest.mark.parametrize("scheduler", ["linux", "stms-c"])
def test_the_transport_gets_the_simulators_goodput_over_the_same_paths(scheduler: str) -> None:
    scenario = load(
        ROOT / "scenarios/stms-lab.toml",
        {"duration": "10s", "connection.scheduler": scheduler},
    )
    sim = api.run(scenario).summary
    got = emulate_transport(to_native(scenario))
    assert abs(got["goodput_mbps"] / sim["goodput_mbps"] - 1) < 0.10, (got, sim["goodput_mbps"])
    assert all(sf["share"] > 0.3 for sf in got["subflows"]), got["subflows"]


@needs_testbed
def test_a_file_survives_loss_on_one_path_and_an_outage_on_the_other(tmp_path: Path) -> None:
    # Wi-Fi down 5-10 s (scenarios/wifi-outage.toml), 1% random loss on LTE.
    data = os.urandom(30_000_000)
    source = tmp_path / "file.bin"
    source.write_bytes(data)
    scenario = load(
        ROOT / "scenarios/wifi-outage.toml",
        {
            "duration": "120s",
            "path.lte.loss": 0.01,
            "workload.kind": "file",
            "workload.size": f"{len(data)}B",
        },
    )
    got = emulate_transport(to_native(scenario), source=source)
    assert got["complete"] and got["bytes"] == len(data), got
    assert got["sha256"] == hashlib.sha256(data).hexdigest()
    assert got["drops"] == {"malformed": 0, "unauthenticated": 0, "replayed": 0}
    # Wi-Fi carried data again after its return: it has most of the bytes.
    shares = {sf["name"]: sf["share"] for sf in got["subflows"]}
    assert shares["wifi"] > 0.5, shares


@needs_testbed
def test_a_path_whose_interface_goes_down_is_used_again_when_it_returns() -> None:
    # scenarios/wifi-removed.toml: Wi-Fi's address gone at 10 s, back at 15 s; through the
    # transport its device goes down and up. Upstream's scheduler: LTE takes the transfer over
    # once Wi-Fi is stale, Wi-Fi is back at its next backed-off retransmission.
    scenario = load(
        ROOT / "scenarios/wifi-removed.toml", {"duration": "20s", "connection.scheduler": "linux"}
    )
    got = emulate_transport(to_native(scenario))
    assert [c["present"] for c in got["device_changes"]] == [False, True], got["device_changes"]
    assert all("error" not in c for c in got["device_changes"])
    wifi = [sf["name"] for sf in got["subflows"]].index("wifi")

    def at(t: float) -> tuple[int, int]:
        row = min(got["timeline"], key=lambda r: abs(r[0] - t))
        return row[1], row[2][wifi]

    (_, w8), (d12, w12), (d15, w15), (_, w18), (_, w19) = map(at, (8.0, 12.0, 15.0, 18.0, 19.5))
    assert w8 > 5_000_000
    assert w15 - w12 < 100_000, "Wi-Fi carries nothing while its interface is down"
    assert d15 - d12 > 6_000_000, "LTE carries the transfer meanwhile"
    assert w19 - w18 > 2_000_000, "Wi-Fi carries data again after it returns"

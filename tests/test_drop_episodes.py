"""docs/experiments/drop_episodes.py: the grouping of drops into episodes, and that both readers
count what the runs' summaries count."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import mpsched

SCRIPT = Path(__file__).parent.parent / "docs" / "experiments" / "drop_episodes.py"
spec = importlib.util.spec_from_file_location("drop_episodes", SCRIPT)
drop_episodes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drop_episodes)

# A 2-path run whose short queues overflow, with one path's random loss beside.
SHALLOW = """
duration = "4s"
seed = 3
[connection]
congestion = "cubic"
[[path]]
name = "wifi"
rate = "20Mbps"
rtt = "20ms"
queue = "10ms"
loss = 0.001
[[path]]
name = "lte"
rate = "10Mbps"
rtt = "60ms"
queue = "20ms"
"""


def test_drops_closer_than_the_gap_are_one_episode() -> None:
    got = drop_episodes.episodes([1.0, 1.5, 2.4, 3.5, 9.0], gap=1.0)
    assert got == [(1.0, 1.4, 3), (3.5, 0.0, 1), (9.0, 0.0, 1)]
    assert drop_episodes.episodes([], gap=1.0) == []


def test_the_model_s_drops_are_its_queue_drops(tmp_path: Path) -> None:
    out = tmp_path / "run"
    mpsched.run(SHALLOW, out=out)
    summary = json.loads((out / "summary.json").read_text())
    drops = drop_episodes.model(out)
    for sf in summary["subflows"]:
        assert len(drops[sf["name"]]) == sf["queue_drops"]
    # Random losses are not queue drops: the lossy path's count excludes them.
    assert summary["subflows"][0]["random_drops"] > 0
    assert sum(sf["queue_drops"] for sf in summary["subflows"]) > 10
    assert all(0 <= t <= 4 for ts in drops.values() for t in ts)


def test_the_kernel_s_drops_are_the_down_links_drop_times(tmp_path: Path) -> None:
    link = {"direction": "down", "name": "wifi", "drop_times_ms": [2500.0, 1200.5]}
    up = {"direction": "up", "name": "wifi", "drop_times_ms": [10.0]}
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "emulator.json").write_text(json.dumps({"threads": [{"links": [link, up]}]}))
    assert drop_episodes.kernel(tmp_path) == {"wifi": [1.2005, 2.5]}

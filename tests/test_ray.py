"""The Ray backend on a real Ray cluster of two nodes on this machine (``ray.cluster_utils``):
the same results as the local backend, and a node killed halfway through loses no run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from mpsched import sweep as sweep_mod

ROOT = Path(__file__).resolve().parent.parent

if os.environ.get("MPSCHED_REQUIRE_RAY"):  # CI installs the extra: there a missing Ray fails
    import ray  # noqa: F401
else:
    pytest.importorskip("ray")

# 48 runs of about a quarter of a second each (two 200 Mbit/s paths for 30 s), so that the
# sweep is still running when half of it is in the journal.
SWEEP = """
[sweep]
title = "ray"
scenario = "{scenario}"
repetitions = 4
set = {{ "duration" = "30s", "path.wifi.rate" = "200Mbps", "path.lte.rate" = "200Mbps" }}

[[sweep.group]]
name = "grid"

[sweep.group.grid]
"path.lte.rtt" = ["50ms", "100ms", "150ms", "200ms"]
"connection.scheduler" = ["minrtt", "default", "rr"]
"""
RUNS = 48


@pytest.fixture
def cluster() -> Iterator[object]:
    """A head node and a second node, one CPU each, both on this machine (its own address: the
    driver looks for a node at it); the health checks quick, so that a killed node is noticed
    within seconds."""
    from ray.cluster_utils import Cluster

    local = {"num_cpus": 1}
    c = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={
            **local,
            "include_dashboard": False,
            "_system_config": {
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 4,
            },
        },
    )
    try:
        c.add_node(**local)
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()


def _journal_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


def test_a_sweep_on_two_ray_nodes_equals_the_local_one_and_survives_a_node_killed_halfway(
    cluster, tmp_path: Path
) -> None:
    file = tmp_path / "sweep.toml"
    file.write_text(SWEEP.format(scenario=ROOT / "scenarios" / "stms-lab.toml"))
    out = tmp_path / "ray"
    sweep = subprocess.Popen(
        [
            *(sys.executable, "-m", "mpsched", "sweep", str(file), "--out", str(out)),
            *("--backend", "ray", "--ray-address", cluster.address),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Halfway: kill the second node (its raylet and workers, no draining).
        deadline = time.monotonic() + 180
        while _journal_lines(out / "runs.jsonl") < RUNS // 2:
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "the sweep did not get halfway in 180 s"
            time.sleep(0.02)
        (worker,) = cluster.worker_nodes
        cluster.remove_node(worker, allow_graceful=False)
        done_at_kill = _journal_lines(out / "runs.jsonl")
        _, err = sweep.communicate(timeout=240)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, err
    assert done_at_kill < RUNS, "the node was killed after the sweep ended: nothing shown"
    assert f"{RUNS} of {RUNS} runs" in err
    # Every run exactly once, none failed.
    results = pd.read_parquet(out / "results.parquet")
    assert len(results) == RUNS and results["key"].is_unique
    assert results["error"].isna().all()
    journal = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in journal) == sorted(results["key"])
    # And the same numbers as the worker processes of this machine.
    local = sweep_mod.run_sweep(file, tmp_path / "local", jobs=2)
    pd.testing.assert_frame_equal(results, local.results)

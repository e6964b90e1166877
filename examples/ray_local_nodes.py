"""Runs a sweep on a Ray cluster of NODES nodes started on this machine, one CPU each, to see
what `mpsched sweep --backend ray` gains per node (docs/ray.md):

    python examples/ray_local_nodes.py NODES SWEEP --out DIR

NODES - 1 nodes join a head node (`ray.cluster_utils.Cluster`, as tests/test_ray.py); the
sweep runs as `mpsched sweep SWEEP --out DIR --backend ray --ray-address ADDRESS`, which prints
its runs per second; the cluster stops after it.
"""

from __future__ import annotations

import subprocess
import sys

from ray.cluster_utils import Cluster


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit() or int(argv[0]) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    nodes, sweep = int(argv[0]), argv[1:]
    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        command = [sys.executable, "-m", "mpsched", "sweep", *sweep]
        command += ["--backend", "ray", "--ray-address", cluster.address]
        return subprocess.run(command, check=False).returncode
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

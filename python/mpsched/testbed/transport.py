"""One scenario through the real transport (``mpsched serve`` / ``mpsched get``, the core over
UDP) instead of the kernel's MPTCP, over the same emulated paths: the third column of a
calibration, simulator / transport / kernel."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .kernel import TestbedError, missing_capabilities
from .netns import SERVER_ADDR, Testbed, client_addr, read_line

__all__ = ["emulate_transport"]

PORT = 4433


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "mpsched", *args]


def emulate_transport(
    config: Mapping[str, Any], *, raw_dir: Path | None = None, source: Path | None = None
) -> dict[str, Any]:
    """Run the normalized scenario ``config`` through the transport over emulated paths and
    return what ``mpsched get`` measured, with each path's share and the scheduler's name.

    The scenario's scheduler, its parameters and congestion control run in the server; a
    bulk workload is measured for the scenario's duration, a file until it arrives: generated
    bytes of the workload's size, or the file ``source`` (its SHA-256 is in the summary)."""
    config = dict(config)
    if config.get("flows"):
        raise TestbedError("flow: the transport runs the main connection only")
    if config["workload"]["kind"] == "rate":
        raise TestbedError("workload.kind: the transport sends bulk transfers and files")
    reason = missing_capabilities("tcp")
    if reason:
        raise TestbedError(f"the kernel testbed {reason}")
    secret = secrets.token_hex(32)
    workload = config["workload"]
    n_paths = len(config["paths"]) if config["protocol"] == "mptcp" else 1
    serve = _cli(
        "serve",
        "--bind",
        f"{SERVER_ADDR}:{PORT}",
        "--scheduler",
        str(config["scheduler"]),
        "--congestion",
        str(config["congestion"]),
        "--sndbuf",
        f"{config['sndbuf_bytes']}B",
    )
    if source is not None:
        serve.insert(serve.index("serve") + 1, str(source))
    elif workload["kind"] == "file":
        serve += ["--size", f"{workload['size_bytes']}B"]
    for key, value in dict(config.get("scheduler_params") or {}).items():
        serve += ["--param", f"{key}={value}"]
    get = _cli("get", f"{SERVER_ADDR}:{PORT}", "--json", "--rcvbuf", f"{config['rcvbuf_bytes']}B")
    for p in range(n_paths):
        get += ["--path", client_addr(p)]
    if workload["kind"] == "bulk":
        get += ["--duration", f"{config['duration_ns'] / 1e9}s"]
    env_secret = ["env", f"MPSCHED_SECRET={secret}"]
    start = time.perf_counter()
    with Testbed(config, kernel_scheduler="default") as bed:
        server = bed.spawn(bed.server_ns, [*env_secret, *serve])
        assert server.stderr is not None
        read_line(server.stderr, 15.0, server, "mpsched serve")
        time.sleep(0.3)  # it binds right after saying so
        epoch = time.monotonic_ns() + 50_000_000
        bed.set_epoch(epoch)
        devices = bed.device_changes(epoch)
        time.sleep(max(0.0, (epoch - time.monotonic_ns()) / 1e9))
        client = bed.spawn(bed.client_ns, [*env_secret, *get])
        try:
            out, err = client.communicate(timeout=config["duration_ns"] / 1e9 + 60.0)
        except subprocess.TimeoutExpired:
            raise TestbedError("mpsched get: still running after the scenario's duration") from None
        crashed = server.poll() is not None
        server.send_signal(signal.SIGINT)
        try:
            _, server_err = server.communicate(timeout=10.0)
        except subprocess.TimeoutExpired:
            server.kill()
            server_err = ""
        report = bed.stop_emulator()
    if crashed:
        raise TestbedError(f"mpsched serve: exited early: {server_err.strip()[-1500:]}")
    if client.returncode != 0:
        raise TestbedError(f"mpsched get: exit {client.returncode}: {err.strip()[-1500:]}")
    got = json.loads(out)
    total = sum(sf["bytes_received"] for sf in got["subflows"]) or 1
    names = [p["name"] for p in config["paths"]]
    summary = {
        "transport": "udp",
        "scheduler": config["scheduler"],
        "goodput_mbps": got["goodput_mbps"],
        "bytes": got["bytes"],
        "duration_s": got["duration_s"],
        "complete": got["complete"],
        "sha256": got["sha256"],
        "subflows": [
            {
                "name": names[sf["subflow"]],
                "bytes_received": sf["bytes_received"],
                "share": sf["bytes_received"] / total,
                "goodput_mbps": got["goodput_mbps"] * sf["bytes_received"] / total,
            }
            for sf in got["subflows"]
        ],
        "drops": got["drops"],
        # About every 100 ms: seconds, bytes in order, bytes received per path.
        "timeline": got.get("timeline", []),
        "device_changes": list(devices),
        "server": server_err.strip().splitlines()[-1:] if server_err else [],
        "wall_s": time.perf_counter() - start,
    }
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)
        (raw_dir / "get.json").write_text(json.dumps(got, indent=1) + "\n")
        (raw_dir / "emulator.json").write_text(json.dumps(report, indent=1) + "\n")
    return summary

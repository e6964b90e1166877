"""What the load generator runs: the scenario's connections, each with a server port of its
own, and a rate-limited application's blocks as the simulator writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .netns import PORT, client_addr

__all__ = ["connections", "rate_blocks", "server_port"]


def server_port(flow: int) -> int:
    """The server's port of connection ``flow`` (0: the main one, k: the k-th ``[[flow]]``):
    each has one of its own, so that the emulator can tell their packets (and drops) apart."""
    return PORT + flow


def _mss(protocol: str) -> int:
    """Payload of a full segment as the model counts it (and this kernel sends it: 1,448
    bytes with timestamps, 1,424 with MPTCP's DSS option; `payload_per_packet`)."""
    return 1424 if protocol == "mptcp" else 1448


def rate_blocks(config: Mapping[str, Any]) -> dict[str, int] | None:
    """A rate-limited application's blocks as the simulator writes them (`app.rs`): whole
    segments (``block`` bytes, the block rounded up), one every ``block_bytes x 8 / rate``
    from the connection's start (ns, rounded up as `Rate::tx_time`)."""
    w = config["workload"]
    if w["kind"] != "rate":
        return None
    mss = _mss(config["protocol"])
    segs = -(-int(w["block_bytes"]) // mss)
    interval = -(-int(w["block_bytes"]) * 8 * 1_000_000_000 // int(w["rate_bps"]))
    return {
        "block": segs * mss,
        "segments": segs,
        "interval_ns": interval,
        "warmup_ns": int(w.get("warmup_ns", 0)),
    }


def connections(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's connections for the load generator: the main one (flow 0) from time zero,
    bound to its first path's address, then each ``[[flow]]`` at its start, bound to its
    first path's (an MPTCP one joins the other paths through the client's endpoints)."""
    w = config["workload"]
    chunk = config.get("write_chunk_bytes", 262144)
    main = {
        "flow": 0,
        "protocol": config["protocol"],
        "congestion": config["congestion"],
        "port": server_port(0),
        "bind": client_addr(0),
        "start_ns": 0,
        "size": w.get("size_bytes") if w["kind"] == "file" else None,
        "chunk": 0 if chunk is None else int(chunk),
        "rate": rate_blocks(config),
    }
    out = [main]
    for k, f in enumerate(config.get("flows") or []):
        out.append(
            {
                "flow": k + 1,
                "protocol": f["protocol"],
                "congestion": f["congestion"],
                "port": server_port(k + 1),
                "bind": client_addr(int(f["paths"][0])),
                "start_ns": int(f["start_ns"]),
                "size": f.get("size_bytes"),
                "chunk": 0 if chunk is None else int(chunk),
                "rate": None,
            }
        )
    return out

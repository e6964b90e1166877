"""The summary of an emulated run, keyed as ``mpsched run --json``'s: the load generator's
measurements, the emulator's link counters and the kernel's ``nstat`` counters; what the kernel
cannot tell is ``None``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .. import contract
from .kernel import KERNEL_SCHEDULERS
from .netns import client_addr
from .spec import rate_blocks, server_port

__all__ = ["summarize"]


def _path_of(address: str | None, role: str, n_paths: int) -> int | None:
    """The path a subflow runs over, from its client-side address."""
    if not address:
        return None
    host = address.rsplit(":", 1)[0]
    for p in range(n_paths):
        if host == client_addr(p):
            return p
    return None


def _per_path(snapshot: Mapping[str, Any], role: str, n_paths: int) -> list[list[dict[str, Any]]]:
    by_path: list[list[dict[str, Any]]] = [[] for _ in range(n_paths)]
    for sf in snapshot.get("subflows") or []:
        p = _path_of(sf.get("remote" if role == "server" else "local"), role, n_paths)
        if p is not None:
            by_path[p].append(sf)
    return by_path


def _sum(items: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [sf[key] for sf in items if isinstance(sf.get(key), int)]
    return sum(values) if values else None


def _last(items: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [sf[key] for sf in items if isinstance(sf.get(key), int)]
    return values[-1] if values else None


def _drops(
    links: Sequence[Mapping[str, Any]], path: int, port: int | None, down: bool
) -> tuple[int, int] | None:
    """(queue, random) drops of path ``path``'s packets of the connection on server port
    ``port`` (any connection: ``None``) over every link of the direction (a path's own and
    the shared ones it crosses). A queue drop includes CoDel's at the head of the queue, as
    the simulator counts a subflow's. ``None`` for an emulator report without them."""
    if not links or any("port_drops" not in ln for ln in links):
        return None
    queue = random = 0
    direction = "down" if down else "up"
    for ln in links:
        if ln["direction"] != direction:
            continue
        if port is None:
            row = (ln.get("path_drops") or [])[path : path + 1]
            for q, r, aqm, _outage in row:
                queue, random = queue + q + aqm, random + r
            continue
        for p, srv, q, r, aqm, _outage in ln["port_drops"]:
            if p == path and srv == port:
                queue, random = queue + q + aqm, random + r
    return queue, random


def _subflow(
    path: Mapping[str, Any],
    tx: Sequence[Mapping[str, Any]],
    rx: Sequence[Mapping[str, Any]],
    down: Mapping[str, Any],
    up: Mapping[str, Any],
    *,
    end: float,
    recv_total: int,
    drops: tuple[int, int] | None = None,
    ack_drops: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One path's entry of ``subflows``: its subflows as the server (``tx``) and the client
    (``rx``) saw them, and the emulator's counters of its links. What the kernel does not
    measure per subflow (TLP probes: TCP_INFO has no count, the run's is ``kernel.tlp_probes``;
    the free window at ACKs, bursts, penalizations, ...) is left out: :func:`summarize` makes
    every field the contract declares present, as null."""
    got = _sum(rx, "bytes_received")
    packets = _sum(tx, "data_segs_out")
    if drops is None:
        drops = (down.get("queue_drops") or 0, down.get("random_drops") or 0)
    if ack_drops is None:
        ack_drops = (up.get("queue_drops") or 0, up.get("random_drops") or 0)
    lost = drops[0] + drops[1]
    srtt, min_rtt = _last(tx, "rtt_us"), _last(tx, "min_rtt_us")
    return {
        "name": path["name"],
        "bytes_sent": _sum(tx, "bytes_sent"),
        "packets_sent": packets,
        "goodput_mbps": None if got is None else got * 8 / end / 1e6,
        "bytes_delivered": got,
        "share": None if got is None or not recv_total else got / recv_total,
        "retransmits": _sum(tx, "total_retrans"),
        "rtos": _sum(tx, "total_rto"),
        "queue_drops": drops[0],
        "random_drops": drops[1],
        "ack_queue_drops": ack_drops[0],
        "ack_random_drops": ack_drops[1],
        "loss_rate": lost / packets if packets else None,
        "srtt_ms": None if srtt is None else srtt / 1000,
        "min_rtt_ms": None if min_rtt is None else min_rtt / 1000,
        "cwnd_segments": _last(tx, "snd_cwnd"),
        "kernel": {
            "subflows": len(tx),
            "mss": _last(tx, "snd_mss"),
            "bytes_retrans": _sum(tx, "bytes_retrans"),
            "ssthresh": _last(tx, "snd_ssthresh"),
            "rttvar_ms": None
            if _last(tx, "rttvar_us") is None
            else (_last(tx, "rttvar_us") or 0) / 1000,
            "rwnd_limited_s": None
            if _sum(tx, "rwnd_limited_us") is None
            else (_sum(tx, "rwnd_limited_us") or 0) / 1e6,
            "sndbuf_limited_s": None
            if _sum(tx, "sndbuf_limited_us") is None
            else (_sum(tx, "sndbuf_limited_us") or 0) / 1e6,
            "peer_window": _last(tx, "snd_wnd"),
            "receiver_window": _last(rx, "rcv_wnd"),
            "receiver_ooo_packets": _sum(rx, "rcv_ooopack"),
            # The client subflow's rcv_ssthresh: capped by the subflow socket's own buffer.
            "receiver_rcv_ssthresh": _last(rx, "rcv_ssthresh"),
            "payload_per_packet": None if not packets else (_sum(tx, "bytes_sent") or 0) / packets,
            "link_packet_sizes": down.get("sizes"),
            "link_delivered_packets": down.get("delivered"),
            "link_backlog_bytes": down.get("backlog_bytes"),
        },
    }


def summarize(
    config: Mapping[str, Any],
    client: Mapping[str, Any],
    server: Mapping[str, Any],
    report: Mapping[str, Any],
    counters: Mapping[str, Mapping[str, int]],
    *,
    kernel_scheduler: str,
    wall_s: float,
) -> dict[str, Any]:
    """The summary of an emulated run, keyed as ``mpsched run --json``'s: every field the
    simulator's contract declares (null where the kernel cannot tell), then ``kernel``,
    ``timeline`` and ``emulator``."""
    n = len(config["paths"])
    duration_s = config["duration_ns"] / 1e9
    completion = client.get("completion_s")
    end = completion if isinstance(completion, float) else duration_s
    delivered = int(client.get("bytes_received") or 0)
    all_links = [ln for t in report.get("threads", []) for ln in t["links"]]
    links = {(ln["path"], ln["direction"]): ln for ln in all_links}
    main_port = server_port(0)
    sent_by_path = _per_path(server, "server", n)
    recv_by_path = _per_path(client, "client", n)
    recv_total = sum(_sum(r, "bytes_received") or 0 for r in recv_by_path)
    subflows = [
        _subflow(
            path,
            sent_by_path[p],
            recv_by_path[p],
            links.get((p, "down"), {}),
            links.get((p, "up"), {}),
            end=end,
            recv_total=recv_total,
            drops=_drops(all_links, p, main_port, down=True),
            ack_drops=_drops(all_links, p, main_port, down=False),
        )
        for p, path in enumerate(config["paths"][: int(config.get("main_paths") or n)])
    ]
    mptcp_server = server.get("mptcp") or {}
    srv, cli = counters.get("server", {}), counters.get("client", {})
    data_packets = _sum(subflows, "packets_sent")
    segs_out = _sum(client.get("subflows") or [], "segs_out")
    data_out = _sum(client.get("subflows") or [], "data_segs_out") or 0
    mptcp = config["protocol"] == "mptcp"
    extra: dict[str, Any] = {}
    if config.get("flows"):
        extra = _flows(config, client, server, all_links)
    blocks = rate_blocks(config)
    if blocks is not None:
        extra.update(_blocks(config, blocks, client, server))
    return contract.complete(
        {
            "protocol": config["protocol"],
            # The simulator's name for what the kernel ran (`linux`: net.mptcp.scheduler
            # default); a kernel scheduler the simulator has no name for keeps the kernel's.
            "scheduler": _scheduler_name(config, kernel_scheduler) if mptcp else "none",
            "congestion": config["congestion"],
            "seed": config["seed"],
            "goodput_mbps": delivered * 8 / end / 1e6,
            "bytes_delivered": delivered,
            "duration_s": end,
            "completion_s": completion,
            "longest_stall_ms": _ms(client.get("longest_stall_s")),
            "longest_stall_at_s": client.get("longest_stall_at_s"),
            # One connection: its own completion and goodput (the simulator's per-flow means).
            "mean_flow_completion_s": completion,
            "mean_flow_goodput_mbps": delivered * 8 / end / 1e6,
            "unfinished_flows": int(config["workload"]["kind"] == "file" and completion is None),
            "reinjections": mptcp_server.get("retransmits") if mptcp else 0,
            "window_probes": srv.get("TcpExtTCPWinProbe"),
            "data_packets": data_packets,
            "acks_sent": None if segs_out is None else segs_out - data_out,
            "wall_s": wall_s,
            "subflows": subflows,
            "kernel": {
                "scheduler": kernel_scheduler if mptcp else None,
                "connected_s": client.get("connected_s"),
                "server_accepted_s": server.get("accepted_s"),
                "subflows_established": len(server.get("subflows") or []),
                "congestion_in_use": server.get("congestion_in_use"),
                "mptcp_bytes_retrans": mptcp_server.get("bytes_retrans"),
                "fast_recoveries": _opt_sum(srv, "TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery"),
                "rto_recoveries": srv.get("TcpExtTCPTimeouts"),
                "tlp_probes": srv.get("TcpExtTCPLossProbes"),
                "spurious_rtos": srv.get("TcpExtTCPSpuriousRTOs"),
                "dsacks_received": srv.get("TcpExtTCPDSACKRecv"),
                "hystart_train_exits": srv.get("TcpExtTCPHystartTrainDetect"),
                "hystart_train_cwnd": srv.get("TcpExtTCPHystartTrainCwnd"),
                "hystart_delay_exits": srv.get("TcpExtTCPHystartDelayDetect"),
                "hystart_delay_cwnd": srv.get("TcpExtTCPHystartDelayCwnd"),
                "receiver_ofo_queued": cli.get("TcpExtTCPOFOQueue"),
                "block_write_lag_ms": server.get("block_write_lag_ms"),
                "receiver_prune_drops": _opt_sum(cli, "TcpExtPruneCalled", "TcpExtRcvPruned"),
                "mptcp_counters": {
                    side: {k: v for k, v in c.items() if k.startswith("MPTcpExt") and v}
                    for side, c in counters.items()
                },
                "errors": [e for e in (client.get("error"), server.get("error")) if e],
            },
            **extra,
            "timeline": client.get("timeline"),
            "emulator": {
                "wall_s": report.get("wall_s"),
                "cpu_percent": report.get("cpu_percent"),
                "user_s": report.get("user_s"),
                "sys_s": report.get("sys_s"),
                "lateness_us": report.get("lateness"),
                # Drop times stay in the raw report (emulate(raw_dir=...), --out).
                "links": [
                    {k: v for k, v in ln.items() if k != "drop_times_ms"}
                    for t in report.get("threads", [])
                    for ln in t["links"]
                ],
            },
        }
    )


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    """mean, p50, p99, max as the simulator's histogram gives them (the value of rank
    ceil(q n), from 1)."""
    xs = sorted(values)
    if not xs:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}

    def q(p: float) -> float:
        rank = min(max(math.ceil(p * len(xs)), 1), len(xs))
        return xs[rank - 1]

    return {"mean": sum(xs) / len(xs), "p50": q(0.5), "p99": q(0.99), "max": xs[-1]}


def _flows(
    config: Mapping[str, Any],
    client: Mapping[str, Any],
    server: Mapping[str, Any],
    links: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """``flows`` (the main connection first, then each ``[[flow]]``) and the means over them,
    as the simulator reports them: completion from the SYN to the last byte read, goodput
    over the SYN to the completion or the run's end, the server's subflows' counters, and
    the drops of the connection's data packets on every link (the emulator tells them by the
    server's port)."""
    names = [p["name"] for p in config["paths"]]
    n = len(names)
    duration = config["duration_ns"] / 1e9
    run_end = min(float(client.get("end_s") or duration), duration)
    by_flow_c = {f["flow"]: f for f in client.get("flows") or []}
    by_flow_s = {f["flow"]: f for f in server.get("flows") or []}
    specs = [
        {
            "protocol": config["protocol"],
            "paths": list(range(int(config.get("main_paths") or n))),
            "start_ns": 0,
            "size_bytes": config["workload"].get("size_bytes")
            if config["workload"]["kind"] == "file"
            else None,
        },
        *config["flows"],
    ]
    flows = []
    for k, spec in enumerate(specs):
        c, srv = by_flow_c.get(k, {}), by_flow_s.get(k, {})
        syn = c.get("syn_s")
        done = c.get("completion_s")
        got = int(c.get("bytes_received") or 0)
        span = (done if done is not None else run_end) - syn if syn is not None else 0.0
        sfs = srv.get("subflows") or []
        queue = random = 0
        for p in range(n):
            d = _drops(links, p, server_port(k), down=True)
            if d is not None:
                queue, random = queue + d[0], random + d[1]
        flows.append(
            {
                "flow": k,
                "protocol": spec["protocol"],
                "paths": [names[int(p)] for p in spec["paths"]],
                "start_s": syn if syn is not None else spec["start_ns"] / 1e9,
                "size_bytes": spec.get("size_bytes"),
                "completion_s": None if done is None or syn is None else done - syn,
                "bytes_delivered": got,
                "goodput_mbps": got * 8 / span / 1e6 if span > 0 else 0.0,
                "packets_sent": _sum(sfs, "data_segs_out") or 0,
                "retransmits": _sum(sfs, "total_retrans") or 0,
                "rtos": _sum(sfs, "total_rto") or 0,
                "queue_drops": queue,
                "random_drops": random,
            }
        )
    done = [f["completion_s"] for f in flows if f["completion_s"] is not None]
    return {
        "flows": flows,
        "mean_flow_completion_s": sum(done) / len(done) if done else None,
        "mean_flow_goodput_mbps": sum(f["goodput_mbps"] for f in flows) / len(flows),
        "unfinished_flows": sum(
            1 for f in flows if f["size_bytes"] is not None and f["completion_s"] is None
        ),
    }


def _blocks(
    config: Mapping[str, Any],
    blocks: Mapping[str, int],
    client: Mapping[str, Any],
    server: Mapping[str, Any],
) -> dict[str, Any]:
    """A rate-limited application's block delays, as the simulator's (`app.rs`): block k is
    due k intervals after the connection's start (the server's accept), and its delay runs
    from its write (its first byte handed to the socket, within a millisecond of when it was
    due: `kernel.block_write_lag_ms`) to when the client has read its last byte; blocks due in
    the warm-up are not timed. The least a block can take: the best main path's propagation
    delay over every link of its route plus the block's serialization at the route's slowest
    link."""
    accepted = server.get("accepted_s")
    done = client.get("block_done_s") or []
    written = server.get("block_written_s") or []
    if accepted is None:
        return {"block_delay_ms": None, "blocks_delivered": 0}
    interval, warm = blocks["interval_ns"] / 1e9, blocks["warmup_ns"] / 1e9
    timed = []
    for k, (t, w) in enumerate(zip(done, written, strict=False)):
        if accepted + k * interval >= accepted + warm:
            timed.append((t - w, w))
    wire = blocks["segments"] * 1500 * 8
    ideal = None
    for p in range(int(config.get("main_paths") or len(config["paths"]))):
        path = config["paths"][p]
        route = [path["down"]] + [config["links"][s]["down"] for s in path.get("via") or []]
        best = sum(ln["delay_ns"] for ln in route) / 1e9 + max(
            wire / ln["rate_bps"] for ln in route
        )
        ideal = best if ideal is None else min(ideal, best)
    worst = max(timed, default=None)
    return {
        "block_delay_ms": _quantiles([d * 1e3 for d, _ in timed]),
        "block_delay_increase": worst[0] / ideal - 1 if worst and ideal else None,
        "blocks_delivered": len(timed),
        "block_worst_at_s": worst[1] if worst else None,
    }


def _scheduler_name(config: Mapping[str, Any], kernel_scheduler: str) -> str:
    name = str(config.get("scheduler"))
    if KERNEL_SCHEDULERS.get(name) == kernel_scheduler:
        return name
    return f"kernel:{kernel_scheduler}"


def _ms(seconds: Any) -> float | None:
    return seconds * 1e3 if isinstance(seconds, int | float) else None


def _opt_sum(counters: Mapping[str, int], *keys: str) -> int | None:
    values = [counters[k] for k in keys if k in counters]
    return sum(values) if values else None

"""The summary of an emulated run, keyed as ``mpsched run --json``'s: the load generator's
measurements, the emulator's link counters and the kernel's ``nstat`` counters; what the kernel
cannot tell is ``None``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import contract
from .kernel import KERNEL_SCHEDULERS
from .netns import client_addr

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


def _subflow(
    path: Mapping[str, Any],
    tx: Sequence[Mapping[str, Any]],
    rx: Sequence[Mapping[str, Any]],
    down: Mapping[str, Any],
    up: Mapping[str, Any],
    *,
    end: float,
    recv_total: int,
) -> dict[str, Any]:
    """One path's entry of ``subflows``: its subflows as the server (``tx``) and the client
    (``rx``) saw them, and the emulator's counters of its links. What the kernel does not
    measure per subflow (TLP probes: TCP_INFO has no count, the run's is ``kernel.tlp_probes``;
    the free window at ACKs, bursts, penalizations, ...) is left out: :func:`summarize` makes
    every field the contract declares present, as null."""
    got = _sum(rx, "bytes_received")
    packets = _sum(tx, "data_segs_out")
    drops = (down.get("queue_drops") or 0) + (down.get("random_drops") or 0)
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
        "queue_drops": down.get("queue_drops"),
        "random_drops": down.get("random_drops"),
        "ack_queue_drops": up.get("queue_drops"),
        "ack_random_drops": up.get("random_drops"),
        "loss_rate": drops / packets if packets else None,
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
    links = {
        (ln["path"], ln["direction"]): ln for t in report.get("threads", []) for ln in t["links"]
    }
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
        )
        for p, path in enumerate(config["paths"])
    ]
    mptcp_server = server.get("mptcp") or {}
    srv, cli = counters.get("server", {}), counters.get("client", {})
    data_packets = _sum(subflows, "packets_sent")
    segs_out = _sum(client.get("subflows") or [], "segs_out")
    data_out = _sum(client.get("subflows") or [], "data_segs_out") or 0
    mptcp = config["protocol"] == "mptcp"
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
                "receiver_prune_drops": _opt_sum(cli, "TcpExtPruneCalled", "TcpExtRcvPruned"),
                "mptcp_counters": {
                    side: {k: v for k, v in c.items() if k.startswith("MPTcpExt") and v}
                    for side, c in counters.items()
                },
                "errors": [e for e in (client.get("error"), server.get("error")) if e],
            },
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

"""The load generator and kernel-statistics collector of ``mpsched emulate``.

Run inside the testbed's network namespaces as
``python -m mpsched.testbed.loadgen server|client ...``: the server sends (a bulk transfer for
the scenario's duration, or a file of ``size`` bytes), the client receives. Each side prints one
JSON line with what it measured: the client the bytes it received by the deadline (or the
file's completion time) and a timeline; both the kernel's view of every subflow (``TCP_INFO``
per subflow through ``MPTCP_TCPINFO``, the subflows' addresses through
``MPTCP_SUBFLOW_ADDRS``, ``MPTCP_INFO`` for the connection), taken just before the connection
is torn down.

It must import nothing of mpsched: the testbed runs it by its file path, as a script.

Time zero is ``--epoch`` (CLOCK_MONOTONIC nanoseconds, shared by every namespace): the client
connects at the epoch, as a simulated client sends its SYN at time zero, and the emulator counts
the scenario's schedules from it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import json
import select
import shutil
import socket
import struct
import subprocess
import sys
import time
from typing import Any

__all__ = ["IPPROTO_MPTCP", "mptcp_info", "subflow_addrs", "subflow_tcp_info", "tcp_info"]

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO = 1
MPTCP_TCPINFO = 2
MPTCP_SUBFLOW_ADDRS = 3

# struct tcp_info (include/uapi/linux/tcp.h): field -> (offset, struct format).
TCP_INFO_FIELDS: dict[str, tuple[int, str]] = {
    "state": (0, "B"),
    "ca_state": (1, "B"),
    "rto_us": (8, "I"),
    "snd_mss": (16, "I"),
    "rcv_mss": (20, "I"),
    "unacked": (24, "I"),
    "sacked": (28, "I"),
    "lost": (32, "I"),
    "retrans": (36, "I"),
    "pmtu": (60, "I"),
    "rcv_ssthresh": (64, "I"),
    "rtt_us": (68, "I"),
    "rttvar_us": (72, "I"),
    "snd_ssthresh": (76, "I"),
    "snd_cwnd": (80, "I"),
    "advmss": (84, "I"),
    "reordering": (88, "I"),
    "rcv_rtt_us": (92, "I"),
    "rcv_space": (96, "I"),
    "total_retrans": (100, "I"),
    "pacing_rate": (104, "Q"),
    "bytes_acked": (120, "Q"),
    "bytes_received": (128, "Q"),
    "segs_out": (136, "I"),
    "segs_in": (140, "I"),
    "notsent_bytes": (144, "I"),
    "min_rtt_us": (148, "I"),
    "data_segs_in": (152, "I"),
    "data_segs_out": (156, "I"),
    "delivery_rate": (160, "Q"),
    "busy_time_us": (168, "Q"),
    "rwnd_limited_us": (176, "Q"),
    "sndbuf_limited_us": (184, "Q"),
    "delivered": (192, "I"),
    "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"),
    "dsack_dups": (216, "I"),
    "reord_seen": (220, "I"),
    "rcv_ooopack": (224, "I"),
    "snd_wnd": (228, "I"),
    "rcv_wnd": (232, "I"),
    "total_rto": (240, "H"),
    "total_rto_recoveries": (242, "H"),
    "total_rto_time_ms": (244, "I"),
}
TCP_INFO_SIZE = 248

# struct mptcp_info (include/uapi/linux/mptcp.h).
MPTCP_INFO_FIELDS: dict[str, tuple[int, str]] = {
    "subflows": (0, "B"),
    "add_addr_signal": (1, "B"),
    "add_addr_accepted": (2, "B"),
    "subflows_max": (3, "B"),
    "flags": (8, "I"),
    "write_seq": (16, "Q"),
    "snd_una": (24, "Q"),
    "rcv_nxt": (32, "Q"),
    "local_addr_used": (40, "B"),
    "retransmits": (44, "I"),
    "bytes_retrans": (48, "Q"),
    "bytes_sent": (56, "Q"),
    "bytes_received": (64, "Q"),
    "bytes_acked": (72, "Q"),
    "subflows_total": (80, "B"),
}
MPTCP_INFO_SIZE = 96
SUBFLOW_ADDRS_SIZE = 256  # two struct sockaddr_storage: local, remote

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _getsockopt(sock: socket.socket, level: int, option: int, buf: bytearray) -> int:
    """``getsockopt`` with an input/output buffer (Python's own cannot pass input)."""
    cbuf = (ctypes.c_char * len(buf)).from_buffer(buf)
    length = ctypes.c_uint32(len(buf))
    if _libc.getsockopt(sock.fileno(), level, option, cbuf, ctypes.byref(length)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"getsockopt({level}, {option})")
    return length.value


def _unpack(data: bytes | bytearray, fields: dict[str, tuple[int, str]]) -> dict[str, int]:
    out = {}
    for name, (offset, fmt) in fields.items():
        if offset + struct.calcsize(fmt) <= len(data):
            out[name] = struct.unpack_from("=" + fmt, data, offset)[0]
    return out


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """``TCP_INFO`` of a TCP socket (or of an MPTCP socket: its first subflow's)."""
    data = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
    return _unpack(data, TCP_INFO_FIELDS)


def _subflow_array(sock: socket.socket, option: int, item: int, room: int = 16) -> list[bytes]:
    buf = bytearray(16 + item * room)
    # struct mptcp_subflow_data: size_subflow_data, num_subflows, size_kernel, size_user.
    struct.pack_into("=IIII", buf, 0, 16, 0, 0, item)
    _getsockopt(sock, SOL_MPTCP, option, buf)
    _, count, _size_kernel, size_user = struct.unpack_from("=IIII", buf, 0)
    return [
        bytes(buf[16 + i * size_user : 16 + (i + 1) * size_user]) for i in range(min(count, room))
    ]


def subflow_tcp_info(sock: socket.socket) -> list[dict[str, int]]:
    """``TCP_INFO`` of every subflow of an MPTCP socket (``MPTCP_TCPINFO``)."""
    return [_unpack(d, TCP_INFO_FIELDS) for d in _subflow_array(sock, MPTCP_TCPINFO, TCP_INFO_SIZE)]


def _sockaddr(data: bytes) -> str | None:
    family, port = struct.unpack_from("=H", data, 0)[0], struct.unpack_from("!H", data, 2)[0]
    if family == socket.AF_INET:
        return f"{socket.inet_ntop(socket.AF_INET, data[4:8])}:{port}"
    if family == socket.AF_INET6:
        return f"[{socket.inet_ntop(socket.AF_INET6, data[8:24])}]:{port}"
    return None


def subflow_addrs(sock: socket.socket) -> list[tuple[str | None, str | None]]:
    """(local, remote) address of every subflow of an MPTCP socket (``MPTCP_SUBFLOW_ADDRS``)."""
    items = _subflow_array(sock, MPTCP_SUBFLOW_ADDRS, SUBFLOW_ADDRS_SIZE)
    return [(_sockaddr(d[:128]), _sockaddr(d[128:256])) for d in items]


def mptcp_info(sock: socket.socket) -> dict[str, int]:
    """``MPTCP_INFO`` of an MPTCP socket."""
    buf = bytearray(MPTCP_INFO_SIZE)
    n = _getsockopt(sock, SOL_MPTCP, MPTCP_INFO, buf)
    return _unpack(buf[:n], MPTCP_INFO_FIELDS)


def snapshot(sock: socket.socket, protocol: str) -> dict[str, Any]:
    """The kernel's view of the connection: per subflow ``TCP_INFO`` with its addresses."""
    if protocol == "tcp":
        local, remote = sock.getsockname(), sock.getpeername()
        info = tcp_info(sock)
        info["local"] = f"{local[0]}:{local[1]}"
        info["remote"] = f"{remote[0]}:{remote[1]}"
        return {"mptcp": None, "subflows": [info]}
    infos = subflow_tcp_info(sock)
    addrs = subflow_addrs(sock)
    if len(addrs) != len(infos):  # a subflow came or went between the two calls
        infos = subflow_tcp_info(sock)
        addrs = subflow_addrs(sock)
    for info, (local, remote) in zip(infos, addrs, strict=False):
        info["local"], info["remote"] = local, remote  # type: ignore[assignment]
    return {"mptcp": mptcp_info(sock), "subflows": infos}


def _socket(protocol: str, congestion: str) -> socket.socket:
    proto = IPPROTO_MPTCP if protocol == "mptcp" else socket.IPPROTO_TCP
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    except OSError as exc:
        raise SystemExit(f"loadgen: cannot open a {protocol} socket: {exc}") from None
    # Per socket, not per namespace (see mpsched.testbed.netns); MPTCP applies it to every subflow,
    # and an accepted connection inherits it from the listener.
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
    except OSError as exc:
        raise SystemExit(f"loadgen: congestion control {congestion!r}: {exc}") from None
    return sock


def congestion_in_use(port: int) -> list[str] | None:
    """The congestion controls of this namespace's TCP sockets on ``port`` (``ss -ti``): the
    subflows' own, which TCP_INFO does not tell."""
    try:
        out = subprocess.run(
            [
                shutil.which("ss") or "/usr/bin/ss",
                "-tinH",
                "state",
                "established",
                f"( sport = :{port} or dport = :{port} )",
            ],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    known = {"reno", "cubic", "bbr", "bbr2", "dctcp", "vegas", "westwood", "htcp", "bic"}
    return sorted({word for word in out.split() if word in known})


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _read_epoch() -> int:
    """Time zero, as the driver writes it on stdin once every process is ready."""
    line = sys.stdin.readline()
    if not line.strip():
        raise SystemExit("loadgen: no epoch on stdin")
    return int(line)


def _sleep_until(t_ns: int) -> None:
    while (left := t_ns - time.monotonic_ns()) > 0:
        time.sleep(min(left / 1e9, 0.5))


def _acked(sock: socket.socket, protocol: str) -> bool:
    """Whether everything written has been acknowledged (at the data level for MPTCP)."""
    if protocol == "mptcp":
        info = mptcp_info(sock)
        return info.get("snd_una") == info.get("write_seq")
    info = tcp_info(sock)
    return info.get("unacked") == 0 and info.get("notsent_bytes") == 0


SAMPLED = ("snd_cwnd", "snd_ssthresh", "rtt_us", "snd_wnd", "bytes_sent", "total_retrans",
           "unacked", "ca_state", "notsent_bytes", "pacing_rate", "rto_us")  # fmt: skip


SIOCOUTQ = 0x5411  # bytes written and not yet acknowledged (MPTCP: at the data level)


def _send_buffer(sock: socket.socket) -> list[int | None]:
    """[SO_SNDBUF, SIOCOUTQ] of the socket (for MPTCP, the connection's), None if unreadable."""
    import fcntl

    try:
        sndbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    except OSError:
        sndbuf = None
    try:
        outq = struct.unpack("i", fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0" * 4))[0]
    except OSError:
        outq = None
    return [sndbuf, outq]


def _sample(sock: socket.socket, protocol: str, t: float) -> list[Any]:
    """The sender's view now: [t, [[remote, cwnd, ssthresh, ...] per subflow],
    [SO_SNDBUF, SIOCOUTQ]] (``SAMPLED`` names the per-subflow fields)."""
    buffer = _send_buffer(sock)
    try:
        if protocol == "tcp":
            infos = [tcp_info(sock)]
            remotes: list[str | None] = [None]
        else:
            infos = subflow_tcp_info(sock)
            remotes = [remote for _, remote in subflow_addrs(sock)]
    except OSError:
        return [round(t, 4), [], buffer]
    rows = [
        [remote, *(info.get(k) for k in SAMPLED)]
        for remote, info in zip(remotes, infos, strict=False)
    ]
    return [round(t, 4), rows, buffer]


# The server's write size unless told (`workload.write_chunk`'s default); 0 fills the
# socket's buffer each time it is writable (`write_chunk = "fill"`).
WRITE_CHUNK = 256 * 1024
FILL_BLOCK = 4 << 20


def serve(args: argparse.Namespace) -> dict[str, Any]:
    listener = _socket(args.protocol, args.congestion)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.addr, args.port))
    listener.listen(4)
    _emit({"listening": True})
    args.epoch = args.epoch or _read_epoch()
    deadline = args.epoch + args.duration
    listener.settimeout(max(1.0, (deadline - time.monotonic_ns()) / 1e9))
    conn, peer = listener.accept()
    # The listener stays open: MP_JOIN SYNs of further subflows arrive on it.
    accepted = (time.monotonic_ns() - args.epoch) / 1e9
    conn.setblocking(False)
    fill = args.chunk == 0
    chunk = memoryview(bytes(FILL_BLOCK if fill else args.chunk))
    total = args.size if args.workload == "file" else None
    sent = 0
    error = None
    samples: list[list[Any]] = []
    next_sample = time.monotonic_ns()
    try:
        while (now := time.monotonic_ns()) < deadline and (total is None or sent < total):
            if now >= next_sample:
                samples.append(_sample(conn, args.protocol, (now - args.epoch) / 1e9))
                next_sample += args.sample
            wait = min(0.05, (min(deadline, next_sample) - now) / 1e9)
            _, writable, _ = select.select([], [conn], [], max(0.0, wait))
            # A filling writer sends until the socket refuses: its buffer is then full.
            while writable and (total is None or sent < total):
                want = len(chunk) if total is None else min(len(chunk), total - sent)
                try:
                    sent += conn.send(chunk[:want])
                except BlockingIOError:
                    break
                writable = fill
        # A file: wait for the last byte's acknowledgement, then report.
        while (
            total is not None and time.monotonic_ns() < deadline and not _acked(conn, args.protocol)
        ):
            time.sleep(0.002)
    except OSError as exc:
        error = f"send: {exc}"
    stats = None
    try:
        stats = snapshot(conn, args.protocol)
    except OSError as exc:
        error = error or f"snapshot: {exc}"
    congestion = congestion_in_use(args.port)
    done = (time.monotonic_ns() - args.epoch) / 1e9
    if total is None:
        # Let the client take its own snapshot first, then reset rather than drain the
        # buffers; a reset from the client could otherwise tear the subflows down early.
        time.sleep(args.grace)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    listener.close()
    return {
        "role": "server",
        "peer": f"{peer[0]}:{peer[1]}",
        "accepted_s": accepted,
        "done_s": done,
        "app_bytes_sent": sent,
        "congestion_in_use": congestion,
        "samples": samples,
        "error": error,
        **(stats or {"mptcp": None, "subflows": []}),
    }


def receive(args: argparse.Namespace) -> dict[str, Any]:
    sock = _socket(args.protocol, args.congestion)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.bind, 0))
    if not args.epoch:
        _emit({"ready": True})
        args.epoch = _read_epoch()
    _sleep_until(args.epoch)
    start = time.monotonic_ns()
    sock.settimeout(max(1.0, args.duration / 1e9))
    error = None
    try:
        sock.connect((args.addr, args.port))
    except OSError as exc:
        return {"role": "client", "error": f"connect: {exc}", "subflows": [], "mptcp": None}
    connected = (time.monotonic_ns() - args.epoch) / 1e9
    sock.setblocking(False)
    deadline = args.epoch + args.duration
    total = args.size if args.workload == "file" else None
    buf = bytearray(1 << 20)
    received = 0
    completion = None
    timeline: list[tuple[float, int]] = []
    next_sample = args.epoch + args.sample
    closed = False
    last_read: int | None = None
    stall = (0, 0)  # (ns, when it began)
    while (now := time.monotonic_ns()) < deadline:
        if now >= next_sample:
            timeline.append((round((now - args.epoch) / 1e9, 4), received))
            next_sample += args.sample
        wait = min(deadline, next_sample) - now
        readable, _, _ = select.select([sock], [], [], max(0.0, wait / 1e9))
        if not readable:
            continue
        try:
            n = sock.recv_into(buf)
        except BlockingIOError:
            continue
        except OSError as exc:
            error = f"recv: {exc}"
            break
        if n == 0:
            closed = True
            break
        received += n
        # The longest time the application read nothing: a failure's stall.
        read_at = time.monotonic_ns()
        if last_read is not None and read_at - last_read > stall[0]:
            stall = (read_at - last_read, last_read)
        last_read = read_at
        if total is not None and received >= total:
            completion = (time.monotonic_ns() - args.epoch) / 1e9
            break
    if completion is None and last_read is not None and deadline - last_read > stall[0]:
        stall = (deadline - last_read, last_read)  # still waiting at the end
    stats = None
    if not closed and error is None:
        try:
            stats = snapshot(sock, args.protocol)
        except OSError as exc:
            error = f"snapshot: {exc}"
    # Drain until the server closes (it resets a bulk transfer, closes a file normally).
    sock.setblocking(True)
    sock.settimeout(args.grace + 5.0)
    with contextlib.suppress(OSError):
        while sock.recv_into(buf):
            pass
    sock.close()
    return {
        "role": "client",
        "start_lag_s": (start - args.epoch) / 1e9,
        "connected_s": connected,
        "bytes_received": received,
        "completion_s": completion,
        "timeline": timeline,
        "longest_stall_s": stall[0] / 1e9,
        "longest_stall_at_s": (stall[1] - args.epoch) / 1e9 if last_read is not None else None,
        "error": error,
        **(stats or {"mptcp": None, "subflows": []}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mpsched.testbed.loadgen")
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument("--protocol", choices=("mptcp", "tcp"), default="mptcp")
    parser.add_argument("--addr", required=True, help="the server's address")
    parser.add_argument("--port", type=int, default=5201)
    parser.add_argument("--bind", default="0.0.0.0", help="the client's address")  # noqa: S104
    parser.add_argument("--congestion", default="cubic")
    parser.add_argument("--workload", choices=("bulk", "file"), default="bulk")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument(
        "--chunk",
        type=int,
        default=WRITE_CHUNK,
        help="bytes written each time writable (0: until the buffer is full)",
    )
    parser.add_argument(
        "--epoch", type=int, default=0, help="time zero, monotonic ns (0: read it from stdin)"
    )
    parser.add_argument("--duration", type=int, required=True, help="ns")
    parser.add_argument("--sample", type=int, default=100_000_000, help="timeline step, ns")
    parser.add_argument("--grace", type=float, default=0.3, help="s before a bulk reset")
    args = parser.parse_args(argv)
    _emit(serve(args) if args.role == "server" else receive(args))


if __name__ == "__main__":
    main()

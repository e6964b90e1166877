"""The load generator and kernel-statistics collector of ``mpsched emulate``.

Run inside the testbed's network namespaces as
``python loadgen.py server|client --spec FILE``: the spec (JSON, written by
:func:`mpsched.testbed.run.connections`) lists the run's connections, the main one first and
then each ``[[flow]]``: protocol, congestion control, the server's port (one per connection,
so that the emulator can tell their packets apart), the client's address, the start, and the
workload (a bulk transfer for the scenario's duration, a file of ``size`` bytes, or blocks
written at a rate). The server listens on every port and sends; the client opens each
connection at its start and receives. Each side prints one JSON line with what it measured:
the client the bytes each connection received by the deadline (or its file's completion
time), the main connection's timeline, longest stall and block completion times; both the
kernel's view of every subflow (``TCP_INFO`` per subflow through ``MPTCP_TCPINFO``, the
subflows' addresses through ``MPTCP_SUBFLOW_ADDRS``, ``MPTCP_INFO`` for the connection),
taken as each file finishes or just before the connection is torn down. Both also sample
the main connection every sample interval: the server its subflows' sending state
(``SAMPLED``), the client its receiving state (``RCV_SAMPLED`` per subflow, with the
connection's ``SO_RCVBUF`` and the bytes waiting to be read), which shows how the receive
buffer grew and on which receiver RTT estimates.

It must import nothing of mpsched: the testbed runs it by its file path, as a script.

Time zero (CLOCK_MONOTONIC nanoseconds, shared by every namespace) comes on stdin once every
process is ready: the main connection's client connects at it, as a simulated client sends its
SYN at time zero, each other one at its start after it, and the emulator counts the scenario's
schedules from it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
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


# New fields go at the end: readers index the rows (docs/experiments/kernel_flows.py).
SAMPLED = ("snd_cwnd", "snd_ssthresh", "rtt_us", "snd_wnd", "bytes_sent", "total_retrans",
           "unacked", "ca_state", "notsent_bytes", "pacing_rate", "rto_us", "sacked",
           "lost")  # fmt: skip


# The receiver's view of each subflow, sampled by the client.
RCV_SAMPLED = ("rcv_rtt_us", "rcv_space", "rcv_ssthresh", "rcv_wnd", "rcv_mss")

SIOCINQ = 0x541B  # bytes received in order and not yet read
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


def _subflow_rows(
    sock: socket.socket, protocol: str, fields: tuple[str, ...], end: int
) -> list[list[Any]]:
    """Per subflow, its address (``end`` 0: local, 1: remote; ``None`` for plain TCP) and the
    ``TCP_INFO`` fields named; raises ``OSError`` if the socket cannot be read."""
    if protocol == "tcp":
        infos, addrs = [tcp_info(sock)], [None]
    else:
        infos = subflow_tcp_info(sock)
        addrs = [pair[end] for pair in subflow_addrs(sock)]
    return [
        [addr, *(info.get(k) for k in fields)] for addr, info in zip(addrs, infos, strict=False)
    ]


def _sample(sock: socket.socket, protocol: str, t: float) -> list[Any]:
    """The sender's view now: [t, [[remote, cwnd, ssthresh, ...] per subflow],
    [SO_SNDBUF, SIOCOUTQ]] (``SAMPLED`` names the per-subflow fields)."""
    buffer = _send_buffer(sock)
    try:
        rows = _subflow_rows(sock, protocol, SAMPLED, 1)
    except OSError:
        rows = []
    return [round(t, 4), rows, buffer]


def _rcv_sample(sock: socket.socket, protocol: str, t: float) -> list[Any]:
    """The receiver's view now: [t, [[local, *RCV_SAMPLED] per subflow], [SO_RCVBUF, SIOCINQ]]."""
    import fcntl

    try:
        rcvbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        inq = struct.unpack("i", fcntl.ioctl(sock.fileno(), SIOCINQ, b"\0" * 4))[0]
        return [round(t, 4), _subflow_rows(sock, protocol, RCV_SAMPLED, 0), [rcvbuf, inq]]
    except OSError:
        return [round(t, 4), [], [None, None]]


# The server's write size unless told (`workload.write_chunk`'s default); 0 fills the
# socket's buffer each time it is writable (`write_chunk = "fill"`).
WRITE_CHUNK = 256 * 1024
FILL_BLOCK = 4 << 20


class Sender:
    """One connection of the server: its listener, then its socket, and what it sends.

    ``spec`` is one entry of the run's ``connections``: ``flow`` (0: the main connection),
    ``protocol``, ``congestion``, ``port``, ``size`` (a file; ``None``: bulk), ``chunk`` (the
    write size; 0 fills the buffer), ``rate`` (``{"interval_ns", "block"}``: a block every
    interval from the connection's acceptance, the main connection only)."""

    def __init__(self, spec: dict[str, Any], addr: str, backlog: int) -> None:
        self.spec = spec
        self.flow = int(spec["flow"])
        self.protocol = str(spec["protocol"])
        self.listener = _socket(self.protocol, str(spec["congestion"]))
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((addr, int(spec["port"])))
        self.listener.listen(backlog)
        self.listener.setblocking(False)
        self.conn: socket.socket | None = None
        self.accepted_ns: int | None = None
        self.total: int | None = spec.get("size")
        fill = int(spec.get("chunk", WRITE_CHUNK)) == 0
        self.fill = fill
        self.chunk = memoryview(bytes(FILL_BLOCK if fill else int(spec.get("chunk", WRITE_CHUNK))))
        rate = spec.get("rate")
        self.interval_ns: int | None = int(rate["interval_ns"]) if rate else None
        self.block = int(rate["block"]) if rate else 0
        self.blocks_due = 0  # blocks whose time has come (written or pending)
        self.pending = 0  # bytes of due blocks not yet written
        # When each block's first byte was handed to the socket, minus when it was due.
        self.written_ns: list[int] = []  # when each block's first byte went to the socket
        self.sent = 0
        self.done_ns: int | None = None  # a file's last byte acknowledged
        self.stats: dict[str, Any] | None = None
        self.error: str | None = None

    def accept(self) -> bool:
        try:
            conn, _peer = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        self.conn = conn
        self.accepted_ns = time.monotonic_ns()
        conn.setblocking(False)
        # The listener stays open: MP_JOIN SYNs of further subflows arrive on it.
        return True

    def next_block_ns(self) -> int | None:
        if self.interval_ns is None or self.accepted_ns is None:
            return None
        return self.accepted_ns + self.blocks_due * self.interval_ns

    def wants_to_write(self, now: int) -> bool:
        if self.conn is None or self.error:
            return False
        if self.interval_ns is not None:
            while (t := self.next_block_ns()) is not None and t <= now:
                self.blocks_due += 1
                self.pending += self.block
            return self.pending > 0
        return self.total is None or self.sent < self.total

    def write(self) -> None:
        assert self.conn is not None
        while True:
            if self.interval_ns is not None:
                want = min(self.pending, len(self.chunk))
            elif self.total is None:
                want = len(self.chunk)
            else:
                want = min(len(self.chunk), self.total - self.sent)
            if want <= 0:
                return
            try:
                n = self.conn.send(self.chunk[:want])
            except BlockingIOError:
                return
            except OSError as exc:
                self.error = f"send: {exc}"
                return
            if self.interval_ns is not None and self.accepted_ns is not None:
                # Blocks whose first byte this write carried.
                now = time.monotonic_ns()
                b = -(-self.sent // self.block)
                while b * self.block < self.sent + n:
                    self.written_ns.append(now)
                    b += 1
            self.sent += n
            if self.interval_ns is not None:
                self.pending -= n
                continue
            if not self.fill:
                return

    def snapshot(self) -> None:
        if self.conn is None or self.stats is not None:
            return
        try:
            self.stats = snapshot(self.conn, self.protocol)
        except OSError as exc:
            self.error = self.error or f"snapshot: {exc}"
            self.stats = {"mptcp": None, "subflows": []}

    def report(self, epoch: int) -> dict[str, Any]:
        def rel(t: int | None) -> float | None:
            return None if t is None else (t - epoch) / 1e9

        out: dict[str, Any] = {
            "flow": self.flow,
            "accepted_s": rel(self.accepted_ns),
            "acked_s": rel(self.done_ns),
            "app_bytes_sent": self.sent,
            "error": self.error,
            **(self.stats or {"mptcp": None, "subflows": []}),
        }
        if self.interval_ns is not None:
            out["blocks_written"] = self.blocks_due
            out["block_written_s"] = [round((t - epoch) / 1e9, 7) for t in self.written_ns]
            # How late each block went out after it was due (the application's own lateness).
            assert self.accepted_ns is not None or not self.written_ns
            lag = sorted(
                t - (self.accepted_ns or 0) - b * self.interval_ns
                for b, t in enumerate(self.written_ns)
            )
            out["block_write_lag_ms"] = (
                {
                    "p50": lag[len(lag) // 2] / 1e6,
                    "p99": lag[min(len(lag) - 1, len(lag) * 99 // 100)] / 1e6,
                    "max": lag[-1] / 1e6,
                }
                if lag
                else None
            )
        return out


# A rate-limited application polls for this long before a block is due, instead of sleeping.
SPIN_S = 0.002


def _realtime(spec: dict[str, Any]) -> None:
    """SCHED_FIFO below the emulator's link threads (priority 10), when the spec asks: a
    rate-limited application's blocks are timed to the millisecond, and a process of the
    normal scheduler wakes late by milliseconds on a busy machine."""
    prio = int(spec.get("rt_priority") or 0)
    if prio > 0:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))


def serve(args: argparse.Namespace) -> dict[str, Any]:
    spec = json.loads(open(args.spec).read())  # noqa: SIM115 - read once
    _realtime(spec)
    conns = spec["connections"]
    senders = [Sender(c, spec["addr"], max(16, len(conns))) for c in conns]
    main = senders[0]
    _emit({"listening": True})
    epoch = _read_epoch()
    deadline = epoch + int(spec["duration_ns"])
    sample_ns = int(spec["sample_ns"])
    samples: list[list[Any]] = []
    # The competing flows' connections, sampled at the same instants (flow k's under "k").
    flow_samples: dict[str, list[list[Any]]] = {str(k): [] for k in range(1, len(senders))}
    next_sample = epoch
    error = None
    by_listener = {s.listener.fileno(): s for s in senders}
    try:
        while (now := time.monotonic_ns()) < deadline:
            if main.conn is not None and now >= next_sample:
                t = (now - epoch) / 1e9
                samples.append(_sample(main.conn, main.protocol, t))
                for k, s in enumerate(senders[1:], start=1):
                    if s.conn is not None:
                        flow_samples[str(k)].append(_sample(s.conn, s.protocol, t))
                next_sample += sample_ns
            # Files whose last byte is acknowledged: their kernel view, once.
            for s in senders:
                if (
                    s.conn is not None
                    and s.total is not None
                    and s.done_ns is None
                    and s.sent >= s.total
                    and _acked(s.conn, s.protocol)
                ):
                    s.done_ns = time.monotonic_ns()
                    s.snapshot()
            if all(s.done_ns is not None for s in senders):
                break
            waiting = [s.listener for s in senders if s.conn is None]
            writers = [s for s in senders if s.wants_to_write(now)]
            wake = [deadline, next_sample if main.conn is not None else deadline]
            wake += [t for s in senders if (t := s.next_block_ns()) is not None and t > now]
            # Unacknowledged files are polled every 2 ms (no event tells their last ACK).
            if any(s.total is not None and s.done_ns is None and s.sent >= s.total
                   for s in senders):  # fmt: skip
                wake.append(now + 2_000_000)
            wait = max(0.0, min(0.05, (min(wake) - now) / 1e9))
            if any(s.interval_ns is not None for s in senders) and wait < SPIN_S:
                # A block is due within the spin margin: poll until it is (a sleeping
                # process wakes late by up to milliseconds on a busy machine).
                wait = 0.0
            readable, writable, _ = select.select(
                waiting, [s.conn for s in writers if s.conn is not None], [], wait
            )
            for sock in readable:
                by_listener[sock.fileno()].accept()
            ready = {sock.fileno() for sock in writable}
            for s in writers:
                if s.conn is not None and s.conn.fileno() in ready:
                    s.write()
    except OSError as exc:
        error = f"serve: {exc}"
    for s in senders:
        s.snapshot()
    congestion = congestion_in_use(int(conns[0]["port"]))
    done = (time.monotonic_ns() - epoch) / 1e9
    # Let the client take its own snapshot first, then reset the bulk transfers rather than
    # drain the buffers (a reset from the client could tear the subflows down early).
    if any(s.total is None and s.conn is not None for s in senders):
        time.sleep(float(spec.get("grace_s", 0.3)))
    for s in senders:
        if s.conn is not None:
            if s.total is None:
                with contextlib.suppress(OSError):
                    s.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.conn.close()
        s.listener.close()
    main_report = main.report(epoch)
    return {
        "role": "server",
        # Its send() calls in the kernel's trace are told apart by it.
        "pid": os.getpid(),
        "accepted_s": main_report["accepted_s"],
        "done_s": done,
        "app_bytes_sent": main.sent,
        "congestion_in_use": congestion,
        "samples": samples,
        "flow_samples": flow_samples,
        "error": error or main.error,
        "mptcp": main_report["mptcp"],
        "subflows": main_report["subflows"],
        "blocks_written": main_report.get("blocks_written"),
        "block_written_s": main_report.get("block_written_s"),
        "block_write_lag_ms": main_report.get("block_write_lag_ms"),
        "flows": [s.report(epoch) for s in senders],
    }


class Receiver:
    """One connection of the client: it connects at its start and reads until its file is
    complete or the run ends. The main connection (flow 0) also keeps a timeline, its
    longest stall and, for a rate-limited application, when each block's last byte came."""

    def __init__(self, spec: dict[str, Any], addr: str, epoch: int) -> None:
        self.spec = spec
        self.flow = int(spec["flow"])
        self.protocol = str(spec["protocol"])
        self.start_ns = epoch + int(spec["start_ns"])
        self.addr = (addr, int(spec["port"]))
        self.total: int | None = spec.get("size")
        rate = spec.get("rate")
        self.block = int(rate["block"]) if rate else 0
        self.block_done_ns: list[int] = []
        self.sock: socket.socket | None = None
        self.syn_ns: int | None = None
        self.connected_ns: int | None = None
        self.received = 0
        self.completion_ns: int | None = None
        self.closed = False
        self.error: str | None = None
        self.last_read: int | None = None
        self.stall = (0, 0)
        self.stats: dict[str, Any] | None = None

    def open(self) -> None:
        sock = _socket(self.protocol, str(self.spec["congestion"]))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((str(self.spec["bind"]), 0))
        sock.setblocking(False)
        self.syn_ns = time.monotonic_ns()
        err = sock.connect_ex(self.addr)
        if err not in (0, errno.EINPROGRESS):
            self.error = f"connect: {os.strerror(err)}"
        self.sock = sock

    def on_writable(self) -> None:
        assert self.sock is not None
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.error = f"connect: {os.strerror(err)}"
            return
        self.connected_ns = time.monotonic_ns()

    def on_readable(self, buf: bytearray) -> None:
        assert self.sock is not None
        while True:
            try:
                n = self.sock.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self.error = f"recv: {exc}"
                return
            if n == 0:
                self.closed = True
                return
            self.received += n
            now = time.monotonic_ns()
            if self.last_read is not None and now - self.last_read > self.stall[0]:
                self.stall = (now - self.last_read, self.last_read)
            self.last_read = now
            while self.block and self.received >= (len(self.block_done_ns) + 1) * self.block:
                self.block_done_ns.append(now)
            if self.total is not None and self.received >= self.total:
                self.completion_ns = now
                return

    @property
    def active(self) -> bool:
        return (
            self.sock is not None
            and self.error is None
            and not self.closed
            and self.completion_ns is None
        )

    def snapshot(self) -> None:
        if self.sock is None or self.stats is not None or self.closed or self.error:
            return
        try:
            self.stats = snapshot(self.sock, self.protocol)
        except OSError as exc:
            self.error = f"snapshot: {exc}"

    def report(self, epoch: int, end: int) -> dict[str, Any]:
        def rel(t: int | None) -> float | None:
            return None if t is None else (t - epoch) / 1e9

        stall = self.stall
        waiting = None if self.last_read is None else end - self.last_read
        if self.completion_ns is None and waiting is not None and waiting > stall[0]:
            stall = (waiting, self.last_read)  # still waiting at the end
        return {
            "flow": self.flow,
            "syn_s": rel(self.syn_ns),
            "connected_s": rel(self.connected_ns),
            "bytes_received": self.received,
            "completion_s": rel(self.completion_ns),
            "longest_stall_s": stall[0] / 1e9,
            "longest_stall_at_s": rel(stall[1]) if self.last_read is not None else None,
            "error": self.error,
        }


def receive(args: argparse.Namespace) -> dict[str, Any]:
    spec = json.loads(open(args.spec).read())  # noqa: SIM115 - read once
    _realtime(spec)
    _emit({"ready": True})
    epoch = _read_epoch()
    deadline = epoch + int(spec["duration_ns"])
    sample_ns = int(spec["sample_ns"])
    receivers = [Receiver(c, spec["addr"], epoch) for c in spec["connections"]]
    main = receivers[0]
    # Flows drawn to start after the end never start (the simulator's unfinished ones).
    waiting = sorted((r for r in receivers if r.start_ns < deadline), key=lambda r: r.start_ns)
    buf = bytearray(1 << 20)
    timeline: list[tuple[float, int]] = []
    samples: list[list[Any]] = []
    next_sample = epoch + sample_ns
    _sleep_until(epoch)
    files = [r for r in receivers if r.total is not None]
    bulk = any(r.total is None for r in receivers)
    while (now := time.monotonic_ns()) < deadline:
        while waiting and waiting[0].start_ns <= now:
            waiting.pop(0).open()
        if now >= next_sample:
            timeline.append((round((now - epoch) / 1e9, 4), main.received))
            if main.sock is not None and main.connected_ns is not None and main.active:
                samples.append(_rcv_sample(main.sock, main.protocol, (now - epoch) / 1e9))
            next_sample += sample_ns
        if not bulk and not waiting and all(r.completion_ns is not None for r in files):
            break
        # The main connection's view is taken as it finishes its file (the others' as the
        # run ends), before the server closes.
        if main.completion_ns is not None:
            main.snapshot()
        active = [r for r in receivers if r.active]
        wake = [deadline, next_sample] + ([waiting[0].start_ns] if waiting else [])
        wait = max(0.0, (min(wake) - now) / 1e9)
        connecting = [r.sock for r in active if r.connected_ns is None]
        readable, writable, _ = select.select(
            [r.sock for r in active if r.connected_ns is not None], connecting, [], wait
        )
        by_fd = {r.sock.fileno(): r for r in active if r.sock is not None}
        for sock in writable:
            by_fd[sock.fileno()].on_writable()
        for sock in readable:
            by_fd[sock.fileno()].on_readable(buf)
    end = time.monotonic_ns()
    for r in receivers:
        r.snapshot()
    # Drain until the server closes (it resets a bulk transfer, closes a file normally).
    for r in receivers:
        if r.sock is None:
            continue
        r.sock.setblocking(True)
        r.sock.settimeout(0.05 if r is not main else float(spec.get("grace_s", 0.3)) + 5.0)
        with contextlib.suppress(OSError):
            while r.sock.recv_into(buf):
                pass
        r.sock.close()
    report = main.report(epoch, end)
    return {
        "role": "client",
        "start_lag_s": (main.syn_ns - epoch) / 1e9 if main.syn_ns else None,
        "connected_s": report["connected_s"],
        "bytes_received": main.received,
        "completion_s": report["completion_s"],
        "timeline": timeline,
        "samples": samples,
        "longest_stall_s": report["longest_stall_s"],
        "longest_stall_at_s": report["longest_stall_at_s"],
        "error": main.error,
        "block_done_s": [(t - epoch) / 1e9 for t in main.block_done_ns],
        "end_s": (end - epoch) / 1e9,
        "flows": [r.report(epoch, end) for r in receivers],
        **(main.stats or {"mptcp": None, "subflows": []}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mpsched.testbed.loadgen")
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument(
        "--spec",
        required=True,
        help="the run's connections as JSON (see mpsched.testbed.run.connections)",
    )
    args = parser.parse_args(argv)
    _emit(serve(args) if args.role == "server" else receive(args))


if __name__ == "__main__":
    main()

"""The kernel's own tracepoints during an emulated run (``mpsched emulate --kernel-trace``).

What the socket samples (``ss``-like, every 100 ms) cannot show, the kernel's tracepoints do,
per event: every ACK a TCP socket takes with its window and smoothed RTT (``tcp:tcp_probe``),
every retransmission (``tcp:tcp_retransmit_skb``), every change of congestion state
(``tcp:tcp_cong_state_set``), every decision of MPTCP's packet scheduler with each subflow's
linger-time ratio (``mptcp:mptcp_subflow_get_send``), every data fragment pushed to a
subflow (``mptcp:mptcp_sendmsg_frag``), every Data ACK the sender takes, with the right
edge that ACK offers and the connection's right edge after it (``mptcp:ack_update_msk``), and
every arming and firing of MPTCP's connection-level retransmission timer with the period it
was armed for (``timer:timer_start`` and ``timer:timer_expire_entry`` of
``mptcp_retransmit_timer``; rows ``mptcp_rtx_timer_start`` with ``timeout`` in jiffies, and
``mptcp_rtx_timer_fire``), and every ``send()`` of the server's application, with the bytes
it wrote (``syscalls:sys_enter_sendto``/``sys_exit_sendto`` of the load generator's
process; rows ``app_send`` at the call, ``data_len`` what it returned; calls that failed, as
a full non-blocking socket's, are left out). They answer what the model should do, from the
kernel: when HyStart left slow start, why a subflow was starved, when and why the
connection's timer fired, whether the sender had window left at the connection level, when
the application could write.

A tracing instance of its own (``/sys/kernel/tracing/instances/mpsemu-RUN``), with the
monotonic clock the testbed's epoch is taken on, so that times count from the client's
connect; a thread drains it while the run lasts, so long runs lose nothing unless the machine
cannot keep up (the overruns are counted). Tracepoints see every network namespace: TCP rows
are kept for the run's own sockets (the client's ports the load generator reports), MPTCP
rows carry no socket and are the run's only if nothing else on the machine uses MPTCP.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .kernel import TestbedError, tool

__all__ = ["EVENTS", "KernelTrace", "ktrace_table", "trace_unavailable"]

TRACEFS = Path("/sys/kernel/tracing")

#: The tracepoints recorded, as ``system/event``.
EVENTS = (
    "tcp/tcp_probe",
    "tcp/tcp_retransmit_skb",
    "tcp/tcp_cong_state_set",
    "mptcp/mptcp_subflow_get_send",
    "mptcp/mptcp_sendmsg_frag",
    "mptcp/ack_update_msk",
    # Every timer of the machine: only MPTCP's connection-level retransmission timer is kept.
    "timer/timer_start",
    "timer/timer_expire_entry",
    # Every process's: only the server application's are kept.
    "syscalls/sys_enter_sendto",
    "syscalls/sys_exit_sendto",
)

# The timer events kept, by the function the timer runs, and the names their rows take.
_TIMER_FUNCTION = "mptcp_retransmit_timer"
_TIMER_ROWS = {"timer_start": "mptcp_rtx_timer_start", "timer_expire_entry": "mptcp_rtx_timer_fire"}

# Per-CPU ring of 16 MiB: about 80,000 events, half a second of a 1 Gbit/s flow's ACKs, which
# the draining thread empties many times a second.
_BUFFER_KB = 16384

# The numeric fields kept as columns (the events' own names; tcp_probe's `srtt` is in us).
_FIELDS = (
    "snd_nxt", "snd_una", "snd_cwnd", "ssthresh", "snd_wnd", "srtt", "rcv_wnd", "data_len",
    "cong_state", "active", "free", "pace", "backup", "ratio", "data_seq", "subflow_seq",
    "data_ack", "old_snd_una", "new_snd_una", "new_wnd_end", "msk_wnd_end", "timeout",
)  # fmt: skip

_LINE = re.compile(rb"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): (\w+): (.*)$")
# A system call's tracepoints write "sys_sendto(fd: 5, buff: 0x.., len: 0x8000, ...)" when it
# is made and "sys_sendto -> 0x7fd8" when it returns.
_SYSCALL = re.compile(
    rb"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): sys_sendto(?:\(.*\)| -> (\S+))$"
)


def trace_unavailable() -> str | None:
    """Why the kernel's tracepoints cannot be recorded here, or ``None`` if they can."""
    if os.geteuid() != 0:
        return "needs root"
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(
            [tool("mount"), "-t", "tracefs", "nodev", str(TRACEFS)],
            capture_output=True,
            check=False,
        )
    if not (TRACEFS / "instances").is_dir():
        return f"needs tracefs at {TRACEFS} (CONFIG_TRACING)"
    missing = [e for e in EVENTS if not (TRACEFS / "events" / e).is_dir()]
    if missing:
        return f"the kernel lacks the tracepoint(s) {', '.join(missing)}"
    # A locked-down kernel lists tracefs but refuses to set it up.
    probe = TRACEFS / "instances" / f"mpsemu-probe-{os.getpid()}"
    try:
        probe.mkdir()
        (probe / "trace_clock").write_text("mono")
        (probe / "events" / EVENTS[0] / "enable").write_text("0")
    except OSError as exc:
        return f"cannot set up a tracing instance in {TRACEFS}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    return None


class KernelTrace:
    """Records :data:`EVENTS` into ``path`` (the kernel's text lines) while open."""

    def __init__(self, name: str, path: Path) -> None:
        self.path = path
        self.dir = TRACEFS / "instances" / name
        self.overrun = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _write(self, rel: str, value: str) -> None:
        try:
            (self.dir / rel).write_text(value)
        except OSError as exc:
            raise TestbedError(
                f"kernel trace: cannot write {self.dir / rel}: {exc.strerror or exc}"
            ) from None

    def __enter__(self) -> KernelTrace:
        reason = trace_unavailable()
        if reason:
            raise TestbedError(f"--kernel-trace {reason}")
        try:
            self.dir.mkdir()
        except OSError as exc:
            raise TestbedError(
                f"kernel trace: cannot create {self.dir}: {exc.strerror or exc}"
            ) from None
        try:
            self._write("tracing_on", "0")
            self._write("trace_clock", "mono")
            self._write("buffer_size_kb", str(_BUFFER_KB))
            for event in EVENTS:
                self._write(f"events/{event}/enable", "1")
            fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
            self._thread = threading.Thread(target=self._drain, args=(fd,), daemon=True)
            self._thread.start()
            self._write("tracing_on", "1")
        except BaseException:
            self._close()
            raise
        return self

    def _drain(self, fd: int) -> None:
        try:
            with open(self.path, "wb") as out:
                while True:
                    stopping = self._stop.is_set()
                    ready, _, _ = select.select([fd], [], [], 0.05)
                    chunk = b""
                    if ready:
                        try:
                            chunk = os.read(fd, 1 << 20)
                        except BlockingIOError:
                            chunk = b""
                    if chunk:
                        out.write(chunk)
                    elif stopping:
                        return
        except BaseException as exc:  # reported by stop()
            self._error = exc
        finally:
            os.close(fd)

    def _overruns(self) -> int:
        total = 0
        for stats in (self.dir / "per_cpu").glob("cpu*/stats"):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events"):
                    total += int(value.split()[0])
        return total

    def _close(self) -> None:
        for rel in ("tracing_on", *(f"events/{e}/enable" for e in EVENTS)):
            with contextlib.suppress(OSError):
                (self.dir / rel).write_text("0")
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with contextlib.suppress(OSError):
            self.overrun = self._overruns()
        with contextlib.suppress(OSError):
            self.dir.rmdir()

    def __exit__(self, *exc: object) -> None:
        self._close()
        if self._error is not None:
            raise TestbedError(f"kernel trace: reading {self.dir}/trace_pipe: {self._error}")


def _fields(text: bytes) -> dict[str, str]:
    out = {}
    for part in text.split():
        # timer_start writes its period as "[timeout=108]".
        key, sep, value = part.strip(b"[]").partition(b"=")
        if sep:
            out[key.decode()] = value.decode()
    return out


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def _endpoint(fields: dict[str, str]) -> tuple[str, str] | None:
    """The (local, remote) "addr:port" of a TCP event's socket."""
    if "src" in fields:
        return fields["src"], fields["dest"]
    if "saddr" in fields and "sport" in fields:
        return f"{fields['saddr']}:{fields['sport']}", f"{fields['daddr']}:{fields['dport']}"
    return None


def ktrace_table(
    path: Path,
    epoch_ns: int,
    server_addr: str,
    client_sockets: Iterable[str],
    path_of: dict[str, int],
    app_pid: int | None = None,
) -> Any:
    """The recorded lines as an Arrow table, one row per event, oldest first.

    Columns: ``t_ns`` (from the epoch, the client's connect), ``event``, ``side`` ("server" or
    "client": the host whose socket the event is on; null for MPTCP events), ``path`` (the
    scenario's path index of a TCP socket, from the client's address), ``client_port``, and
    the events' numeric fields (``snd_nxt`` ... ``data_ack``; null where an event has none).
    TCP rows of sockets not in ``client_sockets`` ("addr:port" of the client's end; empty: keep
    every testbed socket) are left out. ``app_pid`` is the server application's process:
    its ``send()`` calls become ``app_send`` rows (none without it).
    """
    import pyarrow as pa

    keep = set(client_sockets)
    cols: dict[str, list[Any]] = {
        k: [] for k in ("t_ns", "event", "side", "path", "client_port", *_FIELDS)
    }
    # The server application's send() calls made and not yet returned: when.
    calling: int | None = None

    def add(t_ns: int, event: str, side: str | None, where: int | None, port: int | None,
            fields: dict[str, str]) -> None:  # fmt: skip
        cols["t_ns"].append(t_ns - epoch_ns)
        cols["event"].append(event)
        cols["side"].append(side)
        cols["path"].append(where)
        cols["client_port"].append(port)
        for k in _FIELDS:
            cols[k].append(_int(fields.get(k)))

    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\n")
            m = _LINE.match(line)
            call = None if m else _SYSCALL.match(line)
            if call:
                if app_pid is None or int(call.group(2)) != app_pid:
                    continue
                t_ns = int(call.group(4)) * 1_000_000_000 + int(call.group(5).ljust(9, b"0")[:9])
                if call.group(6) is None:
                    calling = t_ns
                    continue
                written = _int(call.group(6).decode())
                # An error comes back as a negative number, written as a 64-bit one.
                if calling is not None and written is not None and written < 1 << 63:
                    add(calling, "app_send", None, None, None, {"data_len": str(written)})
                calling = None
                continue
            if not m:
                continue
            t_ns = int(m.group(4)) * 1_000_000_000 + int(m.group(5).ljust(9, b"0")[:9])
            event = m.group(6).decode()
            fields = _fields(m.group(7))
            if event in _TIMER_ROWS:
                if fields.get("function") != _TIMER_FUNCTION:
                    continue
                event = _TIMER_ROWS[event]
            side = port = where = None
            ends = _endpoint(fields)
            if ends is not None:
                local, remote = ends
                if local.rsplit(":", 1)[0] == server_addr:
                    side, client = "server", remote
                elif remote.rsplit(":", 1)[0] == server_addr:
                    side, client = "client", local
                else:
                    continue
                if keep and client not in keep:
                    continue
                addr, _, p = client.rpartition(":")
                port, where = int(p), path_of.get(addr)
            add(t_ns, event, side, where, port, fields)
    types = {
        "t_ns": pa.int64(),
        "event": pa.string(),
        "side": pa.string(),
        "path": pa.int16(),
        # MPTCP's 64-bit data sequence numbers.
        "data_seq": pa.uint64(),
        "data_ack": pa.uint64(),
        "old_snd_una": pa.uint64(),
        "new_snd_una": pa.uint64(),
        "new_wnd_end": pa.uint64(),
        "msk_wnd_end": pa.uint64(),
    }
    return pa.table({k: pa.array(v, type=types.get(k, pa.int64())) for k, v in cols.items()})

"""The transport's speed on this machine's loopback (``mpsched bench --transport``): goodput
and CPU seconds per GB of ``mpsched serve``/``get`` over one path and two, beside a quinn peer
(if built: ``benches/quinn-peer``), kernel TCP and kernel MPTCP with two subflows, moving the
same bytes between two processes.

The method (issue 29): each system runs ``rounds`` times, interleaved (A B C A B C ...), so a
drift in the machine's speed reaches every system alike; both ends' CPU (user + system) comes
from ``wait4`` on each process; servers are stopped with SIGTERM (a shell that started this
one without job control hands its children an ignored SIGINT, which they keep); each row gives
the median and the range."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["QUINN_ENV", "bench_shaped", "bench_transport", "quinn_peer"]

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO = 1
QUINN_ENV = "MPSCHED_QUINN_PEER"
# The transport's default receive buffer: the window quinn is given too.
WINDOW = 6 << 20
# A server that has not stopped this long after SIGTERM is killed (and the row says so).
STOP_TIMEOUT_S = 10.0

# The kernel's side: a sender and a receiver of SIZE bytes, each a process of its own. The
# receiver reports how many subflows an MPTCP connection had (MPTCP_INFO's first byte counts
# the subflows beside the first).
_KERNEL = r"""
import socket, sys, time
role, proto, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
buf = bytearray(4 << 20)
if role == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    left = size
    view = memoryview(buf)
    while left > 0:
        n = c.send(view[: min(left, len(buf))])
        left -= n
    # tcp_info's tcpi_rtt (offset 68) and tcpi_min_rtt (148), microseconds: for MPTCP the
    # first subflow's; printed for the bench's RTT column (what the window keeps queued).
    try:
        info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 152)
        rtt, min_rtt = info[68:72], info[148:152]
        print(int.from_bytes(rtt, "little"), int.from_bytes(min_rtt, "little"), flush=True)
    except OSError:
        pass
    c.close()
else:
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    c.connect(("127.0.0.1", port))
    t0 = time.monotonic(); got = 0; subflows = 1
    while True:
        n = c.recv_into(buf)
        if n == 0:
            break
        got += n
        if proto != 6 and subflows < 2:
            try:
                subflows = 1 + c.getsockopt(284, 1, 64)[0]
            except OSError:
                pass
    print(got, time.monotonic() - t0, subflows)
"""


def quinn_peer() -> Path | None:
    """The quinn peer's binary: ``$MPSCHED_QUINN_PEER``, else the repository's release build
    (``cargo build --release`` in ``benches/quinn-peer``), if it exists."""
    env = os.environ.get(QUINN_ENV)
    if env:
        return Path(env)
    built = Path(__file__).resolve().parents[2] / "benches/quinn-peer/target/release/quinn-peer"
    return built if built.exists() else None


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu(rusage: Any) -> float:
    return float(rusage.ru_utime + rusage.ru_stime)


class _Proc:
    """A child process whose output goes to temporary files and whose CPU time comes from
    ``wait4`` when it is reaped."""

    def __init__(
        self, argv: list[str], env: dict[str, str] | None = None, cpu: int | None = None
    ) -> None:
        # Open as long as the object: read after the process ends, closed with it.
        self.out = tempfile.TemporaryFile()  # noqa: SIM115
        self.err = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(argv, env=env, stdout=self.out, stderr=self.err)
        if cpu is not None:
            # Set at once, before the interpreter or runtime it starts makes its threads
            # (they inherit it); not preexec_fn, which is unsafe beside threads.
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self.proc.pid, {cpu})
        self.cpu: float | None = None
        self.status: int | None = None

    def running(self) -> bool:
        """Whether it has not ended, without reaping it (its rusage is read when it is)."""
        if self.status is not None:
            return False
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, self.proc.pid, flags) is None

    def reap(self, timeout: float | None = None) -> bool:
        """Waits for the process (at most ``timeout`` seconds); whether it ended."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            pid, status, rusage = os.wait4(self.proc.pid, os.WNOHANG if end else 0)
            if pid:
                self.cpu = _cpu(rusage)
                self.status = os.waitstatus_to_exitcode(status)
                self.proc.returncode = self.status
                return True
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.02)

    def stop(self) -> bool:
        """SIGTERM, then the wait; killed if it does not end in time (false then)."""
        if self.status is not None:
            return True
        # Not Popen.send_signal: it polls first, which would reap the process (and lose its
        # rusage) if it had ended by itself, as the kernel's sender does.
        os.kill(self.proc.pid, signal.SIGTERM)
        if self.reap(STOP_TIMEOUT_S):
            return True
        os.kill(self.proc.pid, signal.SIGKILL)
        self.reap()
        return False

    def close(self) -> None:
        self.out.close()
        self.err.close()

    def text(self, which: str = "out") -> str:
        f = self.out if which == "out" else self.err
        f.seek(0)
        return f.read().decode(errors="replace")

    def first_line(self, timeout: float, which: str = "out") -> str:
        """The first line of its stdout (or stderr) once written (``""`` if none in time)."""
        f = self.out if which == "out" else self.err
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            f.seek(0)
            line = f.readline()
            if line.endswith(b"\n"):
                return line.decode(errors="replace").strip()
            if not self.running():
                break
            time.sleep(0.02)
        return ""


def _sample(seconds: float, nbytes: int, cpu: float, **extra: Any) -> dict[str, Any]:
    return {
        "bytes": nbytes,
        "seconds": seconds,
        "goodput_mbps": nbytes * 8 / seconds / 1e6 if seconds > 0 else None,
        "cpu_s_per_gb": cpu / (nbytes / 1e9) if nbytes else None,
        **extra,
    }


def _cpus() -> tuple[int, int] | None:
    """The CPUs the server and the client run on: two of the ones this process may use, so
    that every system's ends sit on the same two cores in every round (left to the
    scheduler, the two ends sometimes share a core and sometimes migrate, and the goodput of
    the same build moved 18% between rounds on a quiet machine; pinned, 8%)."""
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else None


def _pair(
    server_argv: list[str],
    ready: Callable[[_Proc], bool],
    client_argv: list[str],
    parse: Callable[[str, str], dict[str, Any]],
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One transfer: the server started and waited for, the client run to its end, the server
    stopped; CPU of both from wait4. ``parse`` reads the client's and the server's stdout."""
    cpus = _cpus()
    server = _Proc(server_argv, env, cpus[0] if cpus else None)
    client: _Proc | None = None
    try:
        if not ready(server):
            server.stop()
            return {"error": f"the server did not start: {server.text('err')[-300:]}"}
        client = _Proc(client_argv, env, cpus[1] if cpus else None)
        client.reap()
        stopped = server.stop()
        if client.status != 0:
            return {"error": client.text("err")[-300:] or f"exit status {client.status}"}
        got = parse(client.text(), server.text())
    finally:
        server.stop()
        server.close()
        if client is not None:
            client.close()
    cpu = (client.cpu or 0.0) + (server.cpu or 0.0)
    sample = _sample(got.pop("seconds"), got.pop("bytes"), cpu, **got)
    if not stopped:
        sample["error"] = "the server did not stop on SIGTERM: killed"
    return sample


def _mpsched(
    size: int, paths: list[str], extra: list[str], netns: str | None = None
) -> dict[str, Any]:
    env = {**os.environ, "MPSCHED_SECRET": secrets.token_hex(32)}
    port = _free_port(socket.SOCK_DGRAM)
    prefix = [shutil.which("ip") or "ip", "netns", "exec", netns] if netns else []
    mpsched = [*prefix, sys.executable, "-m", "mpsched"]

    def ready(p: _Proc) -> bool:
        # `serve` says it serves once the secret is checked and its socket bound.
        return p.first_line(30, "err").startswith("serving")

    def parse(out: str, _server: str) -> dict[str, Any]:
        got = json.loads(out)
        first = (got.get("subflows") or [{}])[0]
        return {
            "bytes": got["bytes"],
            "seconds": got["duration_s"],
            "complete": got["complete"],
            "aead": got.get("aead"),
            "srtt_ms": first.get("srtt_ms"),
            "min_rtt_ms": first.get("min_rtt_ms"),
        }

    argv = [*mpsched, "get", f"127.0.0.1:{port}", "--json", *extra]
    for p in paths:
        argv += ["--path", p]
    return _pair(
        [*mpsched, "serve", "--bind", f"127.0.0.1:{port}", "--size", f"{size}B"],
        ready,
        argv,
        parse,
        env,
    )


def _quinn(size: int, peer: Path) -> dict[str, Any]:
    port = _free_port(socket.SOCK_DGRAM)
    with tempfile.TemporaryDirectory() as tmp:
        cert = str(Path(tmp) / "cert.der")

        def parse(out: str, _server: str) -> dict[str, Any]:
            got = json.loads(out)
            return {
                "bytes": got["bytes"],
                "seconds": got["duration_s"],
                "complete": got["complete"],
                "aead": got["aead"],
                "srtt_ms": got.get("srtt_ms"),
            }

        return _pair(
            [str(peer), "serve", f"127.0.0.1:{port}", str(size), cert, str(WINDOW)],
            lambda p: p.first_line(30) == "ready",
            [str(peer), "get", f"127.0.0.1:{port}", cert, str(WINDOW)],
            parse,
        )


def _kernel(size: int, proto: int, netns: str | None = None) -> dict[str, Any]:
    port = _free_port(socket.SOCK_STREAM)
    prefix = [shutil.which("ip") or "ip", "netns", "exec", netns] if netns else []

    def parse(out: str, server: str) -> dict[str, Any]:
        got, seconds, subflows = out.split()
        extra: dict[str, Any] = {"subflows": int(subflows)} if proto == IPPROTO_MPTCP else {}
        rtt = server.split("\n")[1].split() if server.count("\n") >= 2 else []
        if len(rtt) == 2:
            extra["srtt_ms"], extra["min_rtt_ms"] = int(rtt[0]) / 1e3, int(rtt[1]) / 1e3
        return {"bytes": int(got), "seconds": float(seconds), "complete": True, **extra}

    def argv(role: str) -> list[str]:
        return [*prefix, sys.executable, "-c", _KERNEL, role, str(proto), str(port), str(size)]

    return _pair(argv("server"), lambda p: p.first_line(30) == "ready", argv("client"), parse)


def _run_steps(steps: list[list[str]]) -> str | None:
    """Runs each command; the first failure's message."""
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"{' '.join(step[1:])}: {done.stderr.strip()}"
    return None


_RATE_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def _rate_bps(rate: str) -> float:
    """A ``tc`` rate such as ``1gbit`` in bits per second."""
    for unit, scale in _RATE_UNITS.items():
        if rate.lower().endswith(unit):
            return float(rate[: -len(unit)]) * scale
    raise ValueError(f"rate {rate!r}: a number and one of {', '.join(_RATE_UNITS)}")


class _ShapedLoopback:
    """A network namespace whose loopback carries each path at ``rate`` (HTB, one class per
    path each way) through a drop-tail queue of ``buffer_ms`` at that rate (a router's
    buffer: without it, a run of GSO datagrams counts as one packet of the default queue's
    thousand, and the queue, tens of MB, becomes the RTT): path 0 is 127.0.0.1 to 127.0.0.1,
    path 1 everything from or to 127.0.0.2. The machine's own loopback is left alone."""

    def __init__(self, rate: str, buffer_ms: float = 10.0) -> None:
        self.name = f"mpsched-shaped-{os.getpid()}"
        self.ip = shutil.which("ip")
        tc = shutil.which("tc")
        if self.ip is None or tc is None:
            self.error: str | None = "no `ip` or `tc` command"
            return
        ip, ns = self.ip, self.name

        def tc_in(words: str) -> list[str]:
            return [str(tc), "-n", ns, *words.split()]

        htb = f"rate {rate} ceil {rate} burst 256k cburst 256k".split()
        steps = [
            [ip, "netns", "add", ns],
            [ip, "-n", ns, "link", "set", "lo", "up"],
            tc_in("qdisc add dev lo root handle 1: htb default 10"),
        ]
        limit = int(_rate_bps(rate) * buffer_ms / 1e3 / 8)
        for c, leaf in (("1:10", "10:"), ("1:20", "20:")):
            steps.append([*tc_in(f"class add dev lo parent 1: classid {c} htb"), *htb])
            steps.append(tc_in(f"qdisc add dev lo parent {c} handle {leaf} bfifo limit {limit}"))
        for way in ("src", "dst"):
            match = f"prio 1 u32 match ip {way} 127.0.0.2/32 flowid 1:20".split()
            steps.append([*tc_in("filter add dev lo parent 1: protocol ip"), *match])
        self.error = _run_steps(steps)

    def close(self) -> None:
        if self.ip is not None:
            subprocess.run([self.ip, "netns", "del", self.name], capture_output=True, check=False)


class _MptcpNamespace:
    """A network namespace of its own for kernel MPTCP: its loopback up, path managers'
    limits raised, and 127.0.0.2 an endpoint from which the client opens a second subflow
    (the machine's own MPTCP settings are left alone)."""

    def __init__(self) -> None:
        self.name = f"mpsched-bench-{os.getpid()}"
        self.error: str | None = None
        self.ip = shutil.which("ip")
        if self.ip is None:
            self.error = "no `ip` command"
            return
        ip, ns = self.ip, self.name
        steps = [
            [ip, "netns", "add", ns],
            [ip, "-n", ns, "link", "set", "lo", "up"],
            [ip, "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=1"],
            [ip, "-n", ns, "mptcp", "limits", "set", "subflow", "2"],
            [ip, "-n", ns, "mptcp", "endpoint", "add", "127.0.0.2", "dev", "lo", "subflow"],
        ]
        self.error = _run_steps(steps)

    def close(self) -> None:
        if self.ip is not None:
            subprocess.run([self.ip, "netns", "del", self.name], capture_output=True, check=False)


def _summary(name: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in samples if "error" not in s and s.get("complete", True)]
    row: dict[str, Any] = {"name": name, "runs": len(samples), "ok": len(ok)}
    if not ok:
        row["error"] = next((s["error"] for s in samples if "error" in s), "incomplete")
        return row
    for key in ("goodput_mbps", "cpu_s_per_gb", "srtt_ms", "min_rtt_ms"):
        values = [float(s[key]) for s in ok if s.get(key) is not None]
        if values:
            row[key] = statistics.median(values)
            row[f"{key}_range"] = [min(values), max(values)]
    for key in ("aead", "subflows"):
        if key in ok[0]:
            row[key] = ok[0][key]
    row["samples"] = samples
    return row


def bench_transport(
    size: int = 1_000_000_000,
    rounds: int = 3,
    *,
    quinn: Path | None = None,
    ack_every: int = 32,
    mptcp: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Rows (median and range over ``rounds`` interleaved rounds): the transport over one path
    (Linux's delayed ACK, and ``--ack-every ack_every``) and two, the quinn peer (``quinn``, or
    the one ``quinn_peer`` finds), kernel TCP and kernel MPTCP with two subflows in a namespace
    of its own, each moving ``size`` bytes on this machine's loopback. CPU seconds count both
    ends' processes (user + system, from wait4). The load average before and after is kept."""
    quinn = quinn or quinn_peer()
    systems: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("mpsched, 1 path", lambda: _mpsched(size, ["127.0.0.1"], [])),
        (
            f"mpsched, 1 path, --ack-every {ack_every}",
            lambda: _mpsched(size, ["127.0.0.1"], ["--ack-every", str(ack_every)]),
        ),
        ("mpsched, 2 paths", lambda: _mpsched(size, ["127.0.0.1", "127.0.0.2"], [])),
    ]
    if quinn is not None:
        systems.append(("quinn 0.11, AES-128-GCM", lambda: _quinn(size, quinn)))
    systems.append(("kernel TCP", lambda: _kernel(size, socket.IPPROTO_TCP)))
    ns = _MptcpNamespace() if mptcp else None
    if ns is not None and ns.error is None:
        netns = ns.name
        systems.append(("kernel MPTCP, 2 subflows", lambda: _kernel(size, IPPROTO_MPTCP, netns)))
    load_before = os.getloadavg()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in systems}
    try:
        for r in range(rounds):
            for name, run in systems:
                if progress is not None:
                    progress(f"round {r + 1}/{rounds}: {name}")
                samples[name].append(run())
    finally:
        if ns is not None:
            ns.close()
    rows = [_summary(name, samples[name]) for name, _ in systems]
    if ns is not None and ns.error is not None:
        rows.append({"name": "kernel MPTCP, 2 subflows", "error": ns.error})
    return {
        "bytes": size,
        "rounds": rounds,
        "cpus": _cpus(),
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "rows": rows,
    }


def bench_shaped(
    size: int,
    rounds: int = 3,
    rate: str = "1gbit",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The transport over one path and two when each path carries at most ``rate`` with a
    10-ms buffer (a loopback shaped in a namespace of its own): rounds interleaved, medians
    and ranges, and the two paths' goodput and CPU per GB over one path's."""
    try:
        _rate_bps(rate)
    except ValueError as exc:
        return {"error": str(exc)}
    shaped = _ShapedLoopback(rate)
    if shaped.error is not None:
        shaped.close()
        return {"error": shaped.error}
    systems: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        (f"mpsched, 1 path of {rate}", lambda: _mpsched(size, ["127.0.0.1"], [], shaped.name)),
        (
            f"mpsched, 2 paths of {rate}",
            lambda: _mpsched(size, ["127.0.0.1", "127.0.0.2"], [], shaped.name),
        ),
    ]
    load_before = os.getloadavg()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in systems}
    try:
        for r in range(rounds):
            for name, run in systems:
                if progress is not None:
                    progress(f"round {r + 1}/{rounds}: {name}")
                samples[name].append(run())
    finally:
        shaped.close()
    rows = [_summary(name, samples[name]) for name, _ in systems]
    report: dict[str, Any] = {
        "bytes": size,
        "rounds": rounds,
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "rows": rows,
    }
    one, two = rows
    if "error" not in one and "error" not in two:
        report["goodput_ratio"] = two["goodput_mbps"] / one["goodput_mbps"]
        report["cpu_ratio"] = two["cpu_s_per_gb"] / one["cpu_s_per_gb"]
    return report

"""``mpsched emulate``: run a scenario on the real Linux kernel over emulated paths.

The testbed (see ``docs/emulator.md``):

- two network namespaces, ``mpsemu-<id>-c`` (the client, which receives) and ``mpsemu-<id>-s``
  (the server, which sends), ``<id>`` a random run identifier;
- per path ``p`` one TUN device in each, ``me<id>c<p>`` and ``me<id>s<p>``, created by the
  link emulator ``mpsched-emu`` (crates/mpsched-emu), which is the wire between them and applies
  the scenario's links to every packet: the same model as the simulator (rate, delay per
  direction, drop-tail limit, loss, schedules);
- the client has one address per path (``10.10.<p>.2``) with source routing (``ip rule``) onto
  the path's device and an MPTCP ``subflow`` endpoint per address; the server has one address,
  ``10.20.0.1``, so that each client address opens one subflow over its path;
- sysctls per namespace: ``tcp_rmem``/``tcp_wmem`` maxima from the scenario's rcvbuf/sndbuf,
  ``net.mptcp.scheduler``, the congestion control.

The load generator (:mod:`mpsched.loadgen`) runs in the namespaces; its measurements, the
emulator's link counters and the kernel's ``nstat`` counters make a summary with the keys of
``mpsched run --json`` (fields the kernel cannot tell are ``null``). Everything is removed
afterwards, also on an exception, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import click

from .errors import ScenarioError
from .scenario import Scenario, load, parse_set, to_native

__all__ = [
    "KERNEL_CONGESTION",
    "Testbed",
    "TestbedError",
    "emulate",
    "emulate_command",
    "emulator_binary",
    "kernel_schedulers",
    "leftovers",
    "missing_capabilities",
    "netns_inode",
]

SERVER_ADDR = "10.20.0.1"
PORT = 5201
NS_PREFIX = "mpsemu-"
KERNEL_CONGESTION = ("reno", "cubic")
ROOT = Path(__file__).resolve().parents[2]


class TestbedError(RuntimeError):
    """The testbed cannot be built or run (missing privilege, tool or kernel feature)."""

    __test__ = False  # not a pytest test class


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a run, handled as Ctrl-C (SIGINT) is."""


def client_addr(path: int) -> str:
    return f"10.10.{path}.2"


# --- preflight ---


@functools.cache
def tool(name: str) -> str:
    """The full path of a system tool (``ip``, ``sysctl``, ``nstat``), or its bare name."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin") or name


def missing_capabilities(protocol: str = "mptcp") -> str | None:
    """Why the testbed cannot run here, or ``None`` if it can."""
    if sys.platform != "linux":
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs root (network namespaces, TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    for name in ("ip", "sysctl"):
        if tool(name) == name:
            return f"needs the {name!r} tool (iproute2/procps)"
    if protocol == "mptcp" and not os.path.exists("/proc/sys/net/mptcp/enabled"):
        return "needs a kernel with Multipath TCP (/proc/sys/net/mptcp)"
    probe = f"{NS_PREFIX}probe-{secrets.token_hex(3)}"
    proc = subprocess.run(
        [tool("ip"), "netns", "add", probe], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return f"cannot create a network namespace: {proc.stderr.strip()}"
    subprocess.run([tool("ip"), "netns", "del", probe], capture_output=True, check=False)
    return None


def kernel_schedulers() -> list[str]:
    """The kernel's MPTCP packet schedulers (``net.mptcp.available_schedulers``)."""
    try:
        return Path("/proc/sys/net/mptcp/available_schedulers").read_text().split()
    except OSError:
        return []


def _kernel_congestion() -> list[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


@functools.cache
def emulator_binary() -> Path:
    """The ``mpsched-emu`` executable: ``$MPSCHED_EMU``, else built from this source tree
    (``cargo build --release -p mpsched-emu``), else on ``PATH``."""
    env = os.environ.get("MPSCHED_EMU")
    if env:
        return Path(env)
    built = ROOT / "target" / "release" / "mpsched-emu"
    cargo = shutil.which("cargo")
    if (ROOT / "crates" / "mpsched-emu").is_dir() and cargo:
        proc = subprocess.run(
            [cargo, "build", "--release", "-q", "-p", "mpsched-emu"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 and not built.exists():
            raise TestbedError(f"cannot build mpsched-emu: {proc.stderr.strip()[-2000:]}")
    if built.exists():
        return built
    found = shutil.which("mpsched-emu")
    if found:
        return Path(found)
    raise TestbedError("mpsched-emu not found: set MPSCHED_EMU or build crates/mpsched-emu")


def netns_inode(name: str) -> int | None:
    """The inode of a named network namespace (what /proc/PID/ns/net of its processes shows)."""
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except OSError:
        return None


def _pids_in(inodes: set[int]) -> list[int]:
    """Processes in one of the network namespaces ``inodes``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry / "ns" / "net").st_ino in inodes:
                    pids.append(int(entry.name))
    return pids


def leftovers(run_id: str | None = None, netns_inodes: Sequence[int] = ()) -> list[str]:
    """What remains of a run (of every run if ``run_id`` is None): its namespaces, its devices
    in this namespace, its emulator, and any process still in its namespaces (given their
    inodes, :func:`netns_inode`, since a deleted namespace has no name)."""
    tag = f"{NS_PREFIX}{run_id}-" if run_id else NS_PREFIX
    found = []
    out = subprocess.run([tool("ip"), "netns", "list"], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(tag) and "-probe-" not in name:
            found.append(f"netns {name}")
    if run_id:
        links = subprocess.run(
            [tool("ip"), "-o", "link"], capture_output=True, text=True, check=False
        )
        for line in links.stdout.splitlines():
            parts = line.split(":")
            if len(parts) > 1 and parts[1].strip().startswith(f"me{run_id}"):
                found.append(f"device {parts[1].strip()}")
        for pid in _pids_with(f"{NS_PREFIX}{run_id}-"):
            found.append(f"process {pid} (emulator)")
    for pid in _pids_in(set(netns_inodes)):
        found.append(f"process {pid} (in the run's namespaces)")
    return found


def _pids_with(text: str) -> list[int]:
    """Processes whose command line mentions ``text`` (the emulator's names the run's files)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


# --- the testbed ---


def _run(argv: Sequence[str], what: str | None = None) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise TestbedError(
            f"{what or ' '.join(argv)}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout


def _readline(stream: IO[str], timeout: float, proc: subprocess.Popen[str], what: str) -> str:
    """One line from a child's stdout within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise TestbedError(f"{what}: no answer within {timeout:g} s")
        ready, _, _ = select.select([stream], [], [], min(left, 0.2))
        if ready:
            line = stream.readline()
            if line:
                return line
            proc.wait(timeout=5)
            raise TestbedError(f"{what}: exited with code {proc.returncode}")


class Testbed:
    """Namespaces, TUN devices, addresses and the running link emulator for one scenario.

    Use as a context manager; everything is torn down on exit, whatever happened. ``config`` is
    the normalized scenario (:func:`mpsched.scenario.to_native`). The emulator's link threads
    run under SCHED_FIFO at ``rt_priority`` (0: the normal scheduler), sleep until ``spin_us``
    before a release and spin through the rest; ``threads`` is ``"per_direction"`` or
    ``"single"``.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        spin_us: int = 50,
        threads: str = "per_direction",
        rt_priority: int = 10,
        kernel_scheduler: str = "default",
        header_trace: int = 0,
    ) -> None:
        self.config = dict(config)
        self.header_trace = header_trace
        self.paths = list(self.config["paths"])
        self.protocol = str(self.config["protocol"])
        self.run_id = secrets.token_hex(3)
        self.client_ns = f"{NS_PREFIX}{self.run_id}-c"
        self.server_ns = f"{NS_PREFIX}{self.run_id}-s"
        self.spin_us = spin_us
        self.threads = threads
        self.rt_priority = rt_priority
        self.kernel_scheduler = kernel_scheduler
        self.emulator: subprocess.Popen[str] | None = None
        self.report: dict[str, Any] | None = None
        self._namespaces: list[str] = []
        self.netns_inodes: list[int] = []
        self._children: list[subprocess.Popen[str]] = []
        self._tmp = Path(tempfile.mkdtemp(prefix=f"mpsemu-{self.run_id}-"))
        self._signals: dict[int, Any] = {}

    # Device names fit IFNAMSIZ (15): "me" + 6 hex digits + side + path index.
    def client_dev(self, path: int) -> str:
        return f"me{self.run_id}c{path}"

    def server_dev(self, path: int) -> str:
        return f"me{self.run_id}s{path}"

    def __enter__(self) -> Testbed:
        self._trap_signals()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- signals: SIGTERM/SIGHUP become an exception so that `finally` blocks run --

    def _trap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupted(signum: int, _frame: object) -> None:
            raise Interrupted(f"signal {signal.Signals(signum).name}")

        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._signals[sig] = signal.signal(sig, interrupted)

    def _restore_signals(self) -> None:
        for sig, handler in self._signals.items():
            signal.signal(sig, handler)
        self._signals.clear()

    # -- construction --

    def _sysctls(self) -> dict[str, str]:
        rcv = int(self.config["rcvbuf_bytes"])
        snd = int(self.config["sndbuf_bytes"])
        values = {
            "net.ipv6.conf.all.disable_ipv6": "1",
            "net.ipv6.conf.default.disable_ipv6": "1",
            "net.ipv4.conf.all.rp_filter": "0",
            "net.ipv4.conf.default.rp_filter": "0",
            "net.ipv4.tcp_rmem": f"4096 {min(131072, rcv)} {rcv}",
            "net.ipv4.tcp_wmem": f"4096 {min(16384, snd)} {snd}",
            "net.ipv4.tcp_no_metrics_save": "1",
        }
        # No net.ipv4.tcp_congestion_control: a namespace may only default to an algorithm of
        # the host's tcp_allowed_congestion_control (EPERM otherwise), and starts with the
        # host's default (bbr, say). The load generator sets TCP_CONGESTION on its sockets,
        # which MPTCP applies to every subflow; the summary reports what the subflows used.
        if self.protocol == "mptcp":
            values["net.mptcp.enabled"] = "1"
            values["net.mptcp.scheduler"] = self.kernel_scheduler
        return values

    def ip(self, ns: str, *args: str) -> str:
        return _run([tool("ip"), "-n", ns, *args])

    def _build(self) -> None:
        for ns in (self.client_ns, self.server_ns):
            self._namespaces.append(ns)
            _run([tool("ip"), "netns", "add", ns])
            inode = netns_inode(ns)
            if inode is not None:
                self.netns_inodes.append(inode)
            self.ip(ns, "link", "set", "lo", "up")
            sysctls = [f"{k}={v}" for k, v in self._sysctls().items()]
            _run(
                [tool("ip"), "netns", "exec", ns, tool("sysctl"), "-q", "-w", *sysctls],
                f"sysctl in {ns}",
            )
        self._start_emulator()
        n = len(self.paths)
        # The server: one address; a route back to each client address over its path.
        self.ip(self.server_ns, "addr", "add", f"{SERVER_ADDR}/32", "dev", "lo")
        for p in range(n):
            dev = self.server_dev(p)
            self.ip(self.server_ns, "link", "set", dev, "up")
            self.ip(self.server_ns, "route", "add", f"{client_addr(p)}/32", "dev", dev)
        # The client: one address per path, routed by source onto the path's device.
        for p in range(n):
            dev, addr = self.client_dev(p), client_addr(p)
            self.ip(self.client_ns, "addr", "add", f"{addr}/32", "dev", dev)
            self.ip(self.client_ns, "link", "set", dev, "up")
            table = str(100 + p)
            self.ip(self.client_ns, "route", "add", f"{SERVER_ADDR}/32", "dev", dev, "src", addr,
                    "table", table)  # fmt: skip
            self.ip(self.client_ns, "rule", "add", "from", addr, "table", table,
                    "pref", str(1000 + p))  # fmt: skip
        self.ip(self.client_ns, "route", "add", f"{SERVER_ADDR}/32", "dev", self.client_dev(0),
                "src", client_addr(0))  # fmt: skip
        if self.protocol == "mptcp":
            limit = str(min(8, max(n, 1)))
            for ns in (self.client_ns, self.server_ns):
                self.ip(ns, "mptcp", "limits", "set", "subflow", limit, "add_addr_accepted", limit)
            for p in range(1, n):
                self.ip(self.client_ns, "mptcp", "endpoint", "add", client_addr(p),
                        "dev", self.client_dev(p), "subflow")  # fmt: skip

    def _start_emulator(self) -> None:
        devices = [
            {
                "client_ns": self.client_ns,
                "client_dev": self.client_dev(p),
                "server_ns": self.server_ns,
                "server_dev": self.server_dev(p),
            }
            for p in range(len(self.paths))
        ]
        cfg = {
            "scenario": self.config,
            "devices": devices,
            "spin_us": self.spin_us,
            "threads": self.threads,
            "rt_priority": self.rt_priority,
            "header_trace": self.header_trace,
        }
        path = self._tmp / "emulator.json"
        path.write_text(json.dumps(cfg))
        stderr = (self._tmp / "emulator.err").open("w")
        self.emulator = subprocess.Popen(
            [str(emulator_binary()), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        stderr.close()
        self._children.append(self.emulator)
        assert self.emulator.stdout is not None
        try:
            line = _readline(self.emulator.stdout, 10.0, self.emulator, "mpsched-emu")
        except TestbedError as exc:
            raise TestbedError(f"{exc}: {self._emulator_stderr()}") from None
        if not json.loads(line).get("ready"):
            raise TestbedError(f"mpsched-emu: unexpected output {line.strip()!r}")

    def _emulator_stderr(self) -> str:
        with contextlib.suppress(OSError):
            return (self._tmp / "emulator.err").read_text().strip()[-2000:]
        return ""

    # -- running things --

    def spawn(self, ns: str, argv: Sequence[str]) -> subprocess.Popen[str]:
        """A child process in namespace ``ns`` (stdin/stdout pipes, its own session)."""
        proc = subprocess.Popen(
            [tool("ip"), "netns", "exec", ns, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._children.append(proc)
        return proc

    def set_epoch(self, epoch_ns: int) -> None:
        """Time zero of the scenario's schedules, in CLOCK_MONOTONIC nanoseconds."""
        assert self.emulator is not None and self.emulator.stdin is not None
        self.emulator.stdin.write(f"epoch {epoch_ns}\n")
        self.emulator.stdin.flush()

    def stop_emulator(self) -> dict[str, Any]:
        """Stops the links and returns the emulator's report."""
        if self.report is not None:
            return self.report
        proc = self.emulator
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write("stop\n")
            proc.stdin.close()
        line = _readline(proc.stdout, 10.0, proc, "mpsched-emu report")
        proc.wait(timeout=10)
        self.report = json.loads(line)["report"]
        return self.report

    def nstat(self, ns: str) -> dict[str, int]:
        """The namespace's SNMP counters (``nstat``), absolute."""
        if tool("nstat") == "nstat":
            return {}
        proc = subprocess.run(
            [tool("ip"), "netns", "exec", ns, tool("nstat"), "-asz", "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            return {}
        counters: dict[str, int] = {}
        for table in data.values():
            if isinstance(table, dict):
                counters.update({k: v for k, v in table.items() if isinstance(v, int)})
        return counters

    # -- teardown --

    def close(self) -> None:
        """Stops every process of the run and removes its namespaces (idempotent)."""
        old = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                old[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            for proc in self._children:
                _stop(proc)
            self._children.clear()
            for ns in self._namespaces:
                listed = subprocess.run(
                    [tool("ip"), "netns", "pids", ns], capture_output=True, text=True, check=False
                )
                for pid in listed.stdout.split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
                subprocess.run([tool("ip"), "netns", "del", ns], capture_output=True, check=False)
            self._namespaces.clear()
            shutil.rmtree(self._tmp, ignore_errors=True)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
            self._restore_signals()


def _stop(proc: subprocess.Popen[str]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=5)


# --- the load and the summary ---


def _loadgen(bed: Testbed, role: str, epoch_ns: int | None = None) -> subprocess.Popen[str]:
    cfg = bed.config
    workload = cfg["workload"]
    argv = [
        sys.executable,
        str(Path(__file__).with_name("loadgen.py")),
        role,
        "--protocol",
        bed.protocol,
        "--addr",
        SERVER_ADDR,
        "--port",
        str(PORT),
        "--workload",
        workload["kind"],
        "--size",
        str(workload.get("size_bytes", 0)),
        "--duration",
        str(cfg["duration_ns"]),
        "--epoch",
        str(epoch_ns or 0),
        "--congestion",
        str(cfg["congestion"]),
    ]
    if role == "client":
        argv += ["--bind", client_addr(0)]
    return bed.spawn(bed.server_ns if role == "server" else bed.client_ns, argv)


def _result(proc: subprocess.Popen[str], what: str, timeout: float) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"{what}: still running after {timeout:g} s") from None
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise TestbedError(f"{what}: exited with code {proc.returncode}: {err.strip()[-1500:]}")
    return dict(json.loads(lines[-1]))


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
    """The summary of an emulated run, keyed as ``mpsched run --json``'s."""
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
    subflows = []
    for p, path in enumerate(config["paths"]):
        tx, rx = sent_by_path[p], recv_by_path[p]
        down, up = links.get((p, "down"), {}), links.get((p, "up"), {})
        got = _sum(rx, "bytes_received")
        packets = _sum(tx, "data_segs_out")
        drops = (down.get("queue_drops") or 0) + (down.get("random_drops") or 0)
        srtt, min_rtt = _last(tx, "rtt_us"), _last(tx, "min_rtt_us")
        subflows.append(
            {
                "name": path["name"],
                "bytes_sent": _sum(tx, "bytes_sent"),
                "packets_sent": packets,
                "goodput_mbps": None if got is None else got * 8 / end / 1e6,
                "bytes_delivered": got,
                "share": None if got is None or not recv_total else got / recv_total,
                "retransmits": _sum(tx, "total_retrans"),
                "reinjections": None,
                "opportunistic_retransmits": None,
                "rtos": _sum(tx, "total_rto"),
                "fast_recoveries": None,
                # TCP_INFO has no per-subflow count; the run's is kernel.tlp_probes.
                "tlp_probes": None,
                "penalizations": None,
                "queue_drops": down.get("queue_drops"),
                "random_drops": down.get("random_drops"),
                "ack_queue_drops": up.get("queue_drops"),
                "ack_random_drops": up.get("random_drops"),
                "loss_rate": drops / packets if packets else None,
                "srtt_ms": None if srtt is None else srtt / 1000,
                "min_rtt_ms": None if min_rtt is None else min_rtt / 1000,
                "cwnd_segments": _last(tx, "snd_cwnd"),
                "mean_free_cwnd_at_ack": None,
                "p99_free_cwnd_at_ack": None,
                "peak_free_cwnd_at_ack": None,
                "mean_burst_packets": None,
                "p99_burst_packets": None,
                "max_burst_packets": None,
                "held_acks": None,
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
                    "payload_per_packet": None
                    if not packets
                    else (_sum(tx, "bytes_sent") or 0) / packets,
                    "link_packet_sizes": down.get("sizes"),
                    "link_delivered_packets": down.get("delivered"),
                    "link_backlog_bytes": down.get("backlog_bytes"),
                },
            }
        )
    mptcp_server = server.get("mptcp") or {}
    srv, cli = counters.get("server", {}), counters.get("client", {})
    data_packets = _sum(subflows, "packets_sent")
    segs_out = _sum(client.get("subflows") or [], "segs_out")
    data_out = _sum(client.get("subflows") or [], "data_segs_out") or 0
    mptcp = config["protocol"] == "mptcp"
    return {
        "protocol": config["protocol"],
        "scheduler": f"kernel:{kernel_scheduler}" if mptcp else "none",
        "congestion": config["congestion"],
        "seed": config["seed"],
        "goodput_mbps": delivered * 8 / end / 1e6,
        "bytes_delivered": delivered,
        "duration_s": end,
        "completion_s": completion,
        # One connection: its own completion and goodput (the simulator's per-flow means).
        "mean_flow_completion_s": completion,
        "mean_flow_goodput_mbps": delivered * 8 / end / 1e6,
        "unfinished_flows": int(config["workload"]["kind"] == "file" and completion is None),
        "ooo_delay_ms": None,
        "data_ack_step_segments": None,
        "opportunistic_retransmits": None,
        "reinjections": mptcp_server.get("retransmits") if mptcp else 0,
        "penalizations": None,
        "window_probes": srv.get("TcpExtTCPWinProbe"),
        "peak_reorder_bytes": None,
        "mean_reorder_bytes": None,
        "data_packets": data_packets,
        "acks_sent": None if segs_out is None else segs_out - data_out,
        "events": None,
        "wall_s": wall_s,
        "subflows": subflows,
        "kernel": {
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


def _opt_sum(counters: Mapping[str, int], *keys: str) -> int | None:
    values = [counters[k] for k in keys if k in counters]
    return sum(values) if values else None


def check_kernel_support(config: Mapping[str, Any], kernel_scheduler: str | None) -> str:
    """The kernel scheduler to use; ``ScenarioError`` for what the kernel lacks."""
    if config.get("flows"):
        raise ScenarioError(
            "flow: the testbed runs the main connection only; competing flows ([[flow]]) "
            "are simulated, not emulated"
        )
    if config["workload"]["kind"] == "rate":
        raise ScenarioError(
            "workload.kind: the testbed's load generator sends bulk transfers and files; "
            "'rate' is simulated, not emulated"
        )
    if config.get("loss_recovery", "linux") != "linux":
        raise ScenarioError(
            "connection.loss_recovery: the kernel recovers losses as Linux does; "
            "'classic' exists only in the simulator"
        )
    congestion = config["congestion"]
    if congestion not in KERNEL_CONGESTION:
        raise ScenarioError(
            f"connection.congestion: {congestion!r} does not exist in the upstream Linux kernel "
            f"(it has no coupled congestion control for MPTCP); the testbed supports "
            f"{', '.join(KERNEL_CONGESTION)}"
        )
    available_cc = _kernel_congestion()
    if available_cc and congestion not in available_cc:
        raise ScenarioError(
            f"connection.congestion: {congestion!r} is not available in this kernel "
            f"(net.ipv4.tcp_available_congestion_control: {' '.join(available_cc)})"
        )
    if config["protocol"] != "mptcp":
        return "default"
    scheduler = kernel_scheduler or str(config["scheduler"])
    available = kernel_schedulers()
    if available and scheduler not in available:
        raise ScenarioError(
            f"connection.scheduler: {scheduler!r} is not an MPTCP scheduler of this kernel "
            f"(net.mptcp.available_schedulers: {' '.join(available)}); use "
            f"--set connection.scheduler=default or --kernel-scheduler"
        )
    return scheduler


def emulate(
    scenario: Scenario | Mapping[str, Any] | str | None = None,
    *,
    kernel_scheduler: str | None = None,
    spin_us: int = 50,
    threads: str = "per_direction",
    rt_priority: int = 10,
    raw_dir: Path | None = None,
    header_trace: bool = False,
) -> dict[str, Any]:
    """Run a scenario on the kernel over emulated paths and return its summary.

    ``scenario`` is a loaded :class:`Scenario`, a normalized dict (:func:`to_native`) or a
    source for :func:`load`. ``kernel_scheduler`` overrides the scenario's scheduler name for
    ``net.mptcp.scheduler``. ``raw_dir`` receives the raw measurements (client, server,
    emulator report, counters). ``header_trace`` records the headers of every packet (the
    emulator reads them): the client's windows and Data ACKs into ``raw_dir/windows.parquet``
    and the server's data mappings into ``raw_dir/data.parquet`` (:func:`header_tables`).
    """
    if isinstance(scenario, Scenario):
        config = to_native(scenario)
    elif isinstance(scenario, Mapping) and "duration_ns" in scenario:
        config = dict(scenario)
    else:
        config = to_native(load(scenario))
    sched = check_kernel_support(config, kernel_scheduler)
    reason = missing_capabilities(config["protocol"])
    if reason:
        raise TestbedError(f"the kernel testbed {reason}")
    start = time.perf_counter()
    duration_s = config["duration_ns"] / 1e9
    with Testbed(
        config,
        spin_us=spin_us,
        threads=threads,
        rt_priority=rt_priority,
        kernel_scheduler=sched,
        header_trace=HEADER_TRACE_ROWS if header_trace else 0,
    ) as bed:
        server = _loadgen(bed, "server")
        assert server.stdout is not None
        _readline(server.stdout, 15.0, server, "load generator (server)")
        client = _loadgen(bed, "client")
        assert client.stdout is not None and client.stdin is not None
        assert server.stdin is not None
        # Both sides wait for the epoch on stdin; the client connects at it.
        _readline(client.stdout, 15.0, client, "load generator (client)")
        epoch = time.monotonic_ns() + 50_000_000
        bed.set_epoch(epoch)
        for proc in (server, client):
            assert proc.stdin is not None
            proc.stdin.write(f"{epoch}\n")
            proc.stdin.flush()
        timeout = duration_s + 30.0
        client_out = _result(client, "load generator (client)", timeout)
        server_out = _result(server, "load generator (server)", 15.0)
        counters = {"server": bed.nstat(bed.server_ns), "client": bed.nstat(bed.client_ns)}
        report = bed.stop_emulator()
    headers = _pop_headers(report)
    summary = summarize(
        config,
        client_out,
        server_out,
        report,
        counters,
        kernel_scheduler=sched,
        wall_s=time.perf_counter() - start,
    )
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)
        for name, data in (
            ("client", client_out),
            ("server", server_out),
            ("emulator", report),
            ("counters", counters),
        ):
            (raw_dir / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
        if header_trace:
            import pyarrow.parquet as pq

            windows, data = header_tables(headers, config)
            pq.write_table(windows, raw_dir / "windows.parquet")
            pq.write_table(data, raw_dir / "data.parquet")
    return summary


# Rows of the header trace per link: every packet of 100 Mbit/s for 10 minutes.
HEADER_TRACE_ROWS = 5_000_000

_ABSENT = 2**64 - 1


def _pop_headers(report: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """Takes the links' header traces out of the emulator's report: (path, direction, trace)."""
    out = []
    for thread in report.get("threads", []):
        for link in thread.get("links", []):
            trace = link.pop("headers", None)
            if trace is not None:
                out.append((int(link["path"]), str(link["direction"]), trace))
    return out


def _unwrap(values: list[tuple[int, bool] | None]) -> list[int | None]:
    """Data-level sequence numbers relative to the first one, 32-bit ones extended to 64 bits
    as the nearest to the previous value (RFC 8684 3.3.1); None stays None."""
    base: int | None = None
    last = 0
    out: list[int | None] = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        value, wide = v
        if not wide:
            full = (last & ~0xFFFFFFFF) | value
            if full < last - 2**31:
                full += 2**32
            elif full > last + 2**31 and full >= 2**32:
                full -= 2**32
            value = full
        if base is None:
            base = value
        last = value
        out.append(value - base)
    return out


def header_tables(
    headers: list[tuple[int, str, dict[str, Any]]], config: Mapping[str, Any]
) -> tuple[Any, Any]:
    """The header traces as two Arrow tables, rows in time order (``t_ns`` since the epoch).

    ``windows`` (the client's segments, up links): ``t_ns``, ``path``, ``window_bytes``
    (scaled), ``data_ack_bytes`` (the MPTCP Data ACK relative to the first one; null without
    one) and ``right_edge_bytes`` (``data_ack_bytes + window_bytes``, what the simulator's
    ``rwnd_bytes`` adds to its Data ACK). ``data`` (the server's segments with payload, down
    links): ``t_ns``, ``path``, ``dsn_bytes`` (the mapping's data sequence number relative to
    the first one; null without a mapping) and ``payload_bytes``.
    """
    import pyarrow as pa

    names = [p["name"] for p in config["paths"]]

    def rows(direction: str, key: str, wide_key: str) -> list[tuple[Any, ...]]:
        out = []
        for path, d, tr in headers:
            if d != direction:
                continue
            for i, t in enumerate(tr["t_ns"]):
                v = tr[key][i]
                out.append(
                    (
                        t,
                        names[path],
                        tr["window_bytes"][i],
                        tr["payload_len"][i],
                        None if v == _ABSENT else (v, tr[wide_key][i]),
                    )
                )
        out.sort(key=lambda r: r[0])
        return out

    up = rows("up", "data_ack", "data_ack_wide")
    data_ack = _unwrap([r[4] for r in up])
    windows = pa.table(
        {
            "t_ns": pa.array([r[0] for r in up], pa.int64()),
            "path": pa.array([r[1] for r in up], pa.string()),
            "window_bytes": pa.array([r[2] for r in up], pa.int64()),
            "data_ack_bytes": pa.array(data_ack, pa.int64()),
            "right_edge_bytes": pa.array(
                [None if d is None else d + r[2] for d, r in zip(data_ack, up, strict=True)],
                pa.int64(),
            ),
        }
    )
    down = [r for r in rows("down", "dsn", "dsn_wide") if r[3] > 0]
    data = pa.table(
        {
            "t_ns": pa.array([r[0] for r in down], pa.int64()),
            "path": pa.array([r[1] for r in down], pa.string()),
            "dsn_bytes": pa.array(_unwrap([r[4] for r in down]), pa.int64()),
            "payload_bytes": pa.array([r[3] for r in down], pa.int64()),
        }
    )
    return windows, data


# --- the command ---


def _print(summary: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    from rich.console import Console

    from .api import Result
    from .cli import print_summary

    console = Console()
    print_summary(Result(summary=dict(summary), scenario=dict(config)), console)
    emu, kernel = summary.get("emulator") or {}, summary.get("kernel") or {}
    late = emu.get("lateness_us") or {}
    console.print()
    console.print(
        f"[bold]emulator[/bold]  release lateness p50 {late.get('p50_us', 0):.0f} us, "
        f"p99 {late.get('p99_us', 0):.0f} us, max {late.get('max_us', 0):.0f} us over "
        f"{late.get('count', 0):,} packets; CPU {emu.get('cpu_percent') or 0:.0f}% of a core"
    )
    console.print(
        f"[bold]kernel[/bold]    {kernel.get('subflows_established')} subflow(s), congestion "
        f"{', '.join(kernel.get('congestion_in_use') or ['?'])}, fast recoveries "
        f"{kernel.get('fast_recoveries')}, RTO recoveries {kernel.get('rto_recoveries')}"
    )
    for error in kernel.get("errors") or []:
        console.print(f"[bold]warning[/bold]   {error}")


@click.command("emulate")
@click.argument("file", required=False)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario key, e.g. --set path.lte.rtt=200ms (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Write summary.json, scenario.json and the raw measurements into DIR.",
)
@click.option(
    "--kernel-scheduler",
    metavar="NAME",
    help="net.mptcp.scheduler to use instead of the scenario's scheduler name.",
)
@click.option(
    "--rt-priority",
    type=click.IntRange(0, 99),
    default=10,
    show_default=True,
    help="SCHED_FIFO priority of the emulator's link threads (0: normal scheduling).",
)
@click.option(
    "--spin-us",
    type=click.IntRange(0, 10_000),
    default=50,
    show_default=True,
    help="Busy-wait this long before each release instead of sleeping.",
)
@click.option(
    "--threads",
    type=click.Choice(["per_direction", "single"]),
    default="per_direction",
    show_default=True,
    help="Emulator threads: one per direction, or one for all links.",
)
@click.option(
    "--trace-headers",
    "header_trace",
    is_flag=True,
    help="Record every packet's TCP/MPTCP headers (needs --out): raw/windows.parquet (the "
    "client's windows and Data ACKs) and raw/data.parquet (the server's data mappings).",
)
def emulate_command(
    file: str | None,
    sets: tuple[str, ...],
    as_json: bool,
    out: Path | None,
    kernel_scheduler: str | None,
    rt_priority: int,
    spin_us: int,
    threads: str,
    header_trace: bool,
) -> None:
    """Run the scenario FILE on the Linux kernel over emulated paths (needs root).

    Builds network namespaces and TUN devices, runs the scenario's links in the mpsched-emu
    emulator, transfers with the kernel's MPTCP (or TCP), and prints the summary of
    `mpsched run` from the kernel's counters; fields it cannot measure are null.
    """
    scenario = load(file, parse_set(sets), label="--set")
    config = to_native(scenario)
    if header_trace and out is None:
        raise ScenarioError("--trace-headers: needs --out DIR (it writes DIR/raw/*.parquet)")
    try:
        summary = emulate(
            config,
            kernel_scheduler=kernel_scheduler,
            spin_us=spin_us,
            threads=threads,
            rt_priority=rt_priority,
            raw_dir=None if out is None else out / "raw",
            header_trace=header_trace,
        )
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from None
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
            (out / "scenario.json").write_text(json.dumps(config, indent=2) + "\n", "utf-8")
        except OSError as exc:
            raise ScenarioError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
        click.echo(f"wrote {out}/summary.json, scenario.json, raw/", err=True)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        _print(summary, config)

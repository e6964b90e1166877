"""The testbed's network: namespaces, TUN devices, addresses and routes, and the running link
emulator, built for one scenario and always torn down; and what a run may leave behind."""

from __future__ import annotations

import contextlib
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .kernel import NS_PREFIX, TestbedError, tool

__all__ = [
    "PORT",
    "SERVER_ADDR",
    "Testbed",
    "client_addr",
    "emulator_command",
    "leftovers",
    "mptcp_path_set",
    "netns_inode",
    "read_line",
]

SERVER_ADDR = "10.20.0.1"
PORT = 5201
# Packets a TUN device's ring holds between the kernel and the emulator (`txqueuelen`). The
# default, 500, drops the tail of a burst the emulator has not read yet, without telling TCP:
# `tun_net_xmit` orphans each packet, so TCP Small Queues never holds the socket back, and
# CUBIC is not paced, so a window that opens at once leaves at once (a recovery that ends
# with 700 segments of cwnd free put 645 on one device within 1.4 ms and 121-193 were
# dropped there, docs/calibration/README.md). A real host keeps such a burst in its qdisc
# and its socket (TSQ counts a packet until the NIC sends it); the scenario's only queue is
# its link's. So the ring is made deep enough for any window: a slot is a pointer.
TUN_TXQUEUELEN = 100_000


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a run, handled as Ctrl-C (SIGINT) is."""


def client_addr(path: int) -> str:
    return f"10.10.{path}.2"


def mptcp_path_set(config: Mapping[str, Any]) -> list[int]:
    """The paths the client's MPTCP connections use, in order: the main connection's if it is
    MPTCP, else the MPTCP flows' (the kernel's path manager joins every endpoint for every
    connection of the host, so they must be one set; ``check_kernel_support`` says so).
    Empty without MPTCP."""
    n = len(config["paths"])
    if config["protocol"] == "mptcp":
        return list(range(int(config.get("main_paths") or n)))
    for f in config.get("flows") or []:
        if f["protocol"] == "mptcp":
            return [int(p) for p in f["paths"]]
    return []


def emulator_command() -> list[str]:
    """How to start the link emulator: ``$MPSCHED_EMU`` (an ``mpsched-emu`` binary) if set,
    else the one built into the native module, run as a process of its own."""
    env = os.environ.get("MPSCHED_EMU")
    if env:
        return [env]
    return [sys.executable, "-m", "mpsched.testbed.emulator"]


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


def _tx_dropped(ns: str, dev: str) -> int | None:
    """The device's ``tx_dropped`` counter (``ip -s``), or None if it cannot be read."""
    proc = subprocess.run(
        [tool("ip"), "-n", ns, "-j", "-s", "link", "show", "dev", dev],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return int(json.loads(proc.stdout)[0]["stats64"]["tx"]["dropped"])
    except (json.JSONDecodeError, IndexError, KeyError, TypeError, ValueError):
        return None


def read_line(stream: IO[str], timeout: float, proc: subprocess.Popen[str], what: str) -> str:
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
        pcap: Path | None = None,
    ) -> None:
        self.config = dict(config)
        self.header_trace = header_trace
        self.pcap = pcap
        self.paths = list(self.config["paths"])
        # Which paths' addresses have a `subflow` endpoint now (not the first's at first).
        self._endpoint_added = [False] * len(self.paths)
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
        # Paths whose address is an MPTCP `subflow` endpoint (every MPTCP connection of the
        # client joins them); the first connects the connections.
        self.mptcp_paths = mptcp_path_set(self.config)
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

    @property
    def workdir(self) -> Path:
        """A directory of the run's own, removed with it."""
        return self._tmp

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
        if self.mptcp_paths:
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
            self.ip(self.server_ns, "link", "set", dev, "txqueuelen", str(TUN_TXQUEUELEN), "up")
            self.ip(self.server_ns, "route", "add", f"{client_addr(p)}/32", "dev", dev)
        # The client: one address per path, routed by source onto the path's device.
        for p in range(n):
            dev, addr = self.client_dev(p), client_addr(p)
            self.ip(self.client_ns, "addr", "add", f"{addr}/32", "dev", dev)
            self.ip(self.client_ns, "link", "set", dev, "txqueuelen", str(TUN_TXQUEUELEN), "up")
            table = str(100 + p)
            self.ip(self.client_ns, "route", "add", f"{SERVER_ADDR}/32", "dev", dev, "src", addr,
                    "table", table)  # fmt: skip
            self.ip(self.client_ns, "rule", "add", "from", addr, "table", table,
                    "pref", str(1000 + p))  # fmt: skip
        self.ip(self.client_ns, "route", "add", f"{SERVER_ADDR}/32", "dev", self.client_dev(0),
                "src", client_addr(0))  # fmt: skip
        if self.mptcp_paths:
            limit = str(min(8, max(len(self.mptcp_paths), 1)))
            for ns in (self.client_ns, self.server_ns):
                self.ip(ns, "mptcp", "limits", "set", "subflow", limit, "add_addr_accepted", limit)
            for p in self.mptcp_paths:
                if p != self.mptcp_paths[0]:
                    self._add_endpoint(p)
                elif self.paths[p].get("backup"):
                    # The first subflow's MP_CAPABLE asks for backup priority through the
                    # endpoint of its address (no `subflow` flag: it is already there).
                    self.ip(self.client_ns, "mptcp", "endpoint", "add", client_addr(p),
                            "dev", self.client_dev(p), "id", str(p + 1), "backup")  # fmt: skip

    def _add_endpoint(self, p: int) -> None:
        """Path ``p``'s address as a `subflow` endpoint (id ``p + 1``): the kernel's path
        manager opens a subflow from it, on a connection open or when it is added during one
        (MP_JOIN). A backup path's endpoint carries the flag (RFC 8684 3.3.8, MP_PRIO)."""
        backup = ["backup"] if self.paths[p].get("backup") else []
        self.ip(self.client_ns, "mptcp", "endpoint", "add", client_addr(p),
                "dev", self.client_dev(p), "id", str(p + 1), "subflow", *backup)  # fmt: skip
        self._endpoint_added[p] = True

    def _presence_changes(
        self, epoch_ns: int, name: str, change: Callable[[int, bool], None]
    ) -> list[dict[str, Any]]:
        """Calls ``change(path, present)`` at each `gone` or returning address of the paths'
        schedules (`present`), at its time from ``epoch_ns``, in a thread named ``name``.
        Returns the log it fills as it goes (when each was applied, and any error)."""
        events = sorted(
            (int(c["at_ns"]), p, bool(c["present"]))
            for p, path in enumerate(self.paths)
            for c in path.get("schedule", [])
            if c.get("present") is not None
        )
        log: list[dict[str, Any]] = []

        def apply() -> None:
            for at_ns, p, present in events:
                time.sleep(max(0.0, (epoch_ns + at_ns - time.monotonic_ns()) / 1e9))
                entry: dict[str, Any] = {"at_s": at_ns / 1e9, "path": p, "present": present}
                try:
                    change(p, present)
                except TestbedError as exc:
                    entry["error"] = str(exc)
                entry["applied_s"] = (time.monotonic_ns() - epoch_ns) / 1e9
                log.append(entry)

        if events:
            threading.Thread(target=apply, name=name, daemon=True).start()
        return log

    def address_changes(self, epoch_ns: int) -> list[dict[str, Any]]:
        """Applies the paths' `gone` and returning addresses (`present` in a schedule) at
        their times from ``epoch_ns``, in a thread: deleting a path's endpoint makes the
        kernel close its subflow (the emulator drops the link's packets meanwhile), adding it
        back makes the path manager join a new one. Returns the log it fills as it goes."""
        if self.protocol != "mptcp":
            return []

        def change(p: int, present: bool) -> None:
            if present:
                self._add_endpoint(p)
            elif p == 0 and not self._endpoint_added[0]:
                # The initial subflow's address has no endpoint: id 0 names it.
                self.ip(self.client_ns, "mptcp", "endpoint", "delete", "id", "0",
                        client_addr(0))  # fmt: skip
            else:
                self.ip(self.client_ns, "mptcp", "endpoint", "delete", "id", str(p + 1))
            self._endpoint_added[p] = present

        return self._presence_changes(epoch_ns, "address-changes", change)

    def device_changes(self, epoch_ns: int) -> list[dict[str, Any]]:
        """Applies the paths' `gone` and returning addresses as their client devices going
        down and up (an interface lost and found: sends from its address fail, what arrives
        for it is dropped), at their times from ``epoch_ns``, in a thread; for a transport
        other than the kernel's MPTCP, whose path manager `address_changes` drives instead.
        A device coming back gets its path's routes again (they go with the link)."""

        def change(p: int, present: bool) -> None:
            dev, addr = self.client_dev(p), client_addr(p)
            self.ip(self.client_ns, "link", "set", dev, "up" if present else "down")
            if present:
                self.ip(self.client_ns, "route", "replace", f"{SERVER_ADDR}/32", "dev", dev,
                        "src", addr, "table", str(100 + p))  # fmt: skip
                if p == 0:
                    self.ip(self.client_ns, "route", "replace", f"{SERVER_ADDR}/32", "dev", dev,
                            "src", addr)  # fmt: skip

        return self._presence_changes(epoch_ns, "device-changes", change)

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
            "pcap": None if self.pcap is None else str(self.pcap.resolve()),
        }
        path = self._tmp / "emulator.json"
        path.write_text(json.dumps(cfg))
        stderr = (self._tmp / "emulator.err").open("w")
        self.emulator = subprocess.Popen(
            [*emulator_command(), str(path)],
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
            line = read_line(self.emulator.stdout, 10.0, self.emulator, "mpsched-emu")
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
        line = read_line(proc.stdout, 10.0, proc, "mpsched-emu report")
        proc.wait(timeout=10)
        self.report = json.loads(line)["report"]
        return self.report

    def device_drops(self) -> dict[str, list[int | None]]:
        """Packets each path's TUN devices dropped before the emulator read them
        (``tx_dropped``: the ring between the kernel and the emulator was full), per path: the
        server's (data) and the client's (ACKs). A scenario's only queues are its links', so
        anything here is a fault of the testbed, not the network it emulates."""
        out: dict[str, list[int | None]] = {"server": [], "client": []}
        for side, ns, dev in (("server", self.server_ns, self.server_dev),
                              ("client", self.client_ns, self.client_dev)):  # fmt: skip
            for p in range(len(self.paths)):
                out[side].append(_tx_dropped(ns, dev(p)))
        return out

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

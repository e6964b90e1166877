"""What this machine allows the testbed: privileges, tools, the kernel's MPTCP schedulers and
congestion controls, and which scenarios the kernel can run at all."""

from __future__ import annotations

import functools
import gzip
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ScenarioError

__all__ = [
    "KERNEL_CONGESTION",
    "KERNEL_SCHEDULERS",
    "NS_PREFIX",
    "TestbedError",
    "check_kernel_support",
    "kernel_scheduler_for",
    "kernel_schedulers",
    "missing_capabilities",
    "tool",
]

# Every namespace the testbed makes starts with it, the probe's too: what `leftovers` looks for.
NS_PREFIX = "mpsemu-"
KERNEL_CONGESTION = ("reno", "cubic")


class TestbedError(RuntimeError):
    """The testbed cannot be built or run (missing privilege, tool or kernel feature)."""

    __test__ = False  # not a pytest test class


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


def kernel_hz() -> int | None:
    """This kernel's ``CONFIG_HZ`` (``/proc/config.gz``), when the kernel exposes its config."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if line.startswith("CONFIG_HZ="):
                    return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        return None
    return None


# The timer wheel's coarsest rounding (2^24 ticks): a phase matters only modulo it.
PHASE_PERIOD_TICKS = 1 << 24


def timer_phase_ns(epoch_ns: int, hz: int, source: Path = Path("/proc/timer_list")) -> int | None:
    """Where the kernel's jiffies stand at ``epoch_ns`` (CLOCK_MONOTONIC): jiffies x tick + the
    time since the last tick, modulo 2^24 ticks (``connection.timer_phase``).

    Read from ``/proc/timer_list`` (root): its ``now at T nsecs`` and the first CPU's
    ``jiffies``. The periodic tick lands on multiples of the tick in CLOCK_MONOTONIC (the
    kernel aligns it), so jiffies at any instant follow from one reading. A reading within
    0.2 ms of a tick may have seen jiffies before or after it: read again.
    """
    tick = 1_000_000_000 // hz
    for _ in range(5):
        try:
            text = source.read_text()
        except OSError:
            return None
        now = re.search(r"^now at (\d+) nsecs", text, re.M)
        jiffies = re.search(r"^jiffies: (\d+)", text, re.M)
        if now is None or jiffies is None:
            return None
        t, j = int(now.group(1)), int(jiffies.group(1))
        if 200_000 <= t % tick <= tick - 200_000:
            at_epoch = j + epoch_ns // tick - t // tick
            return (at_epoch % PHASE_PERIOD_TICKS) * tick + epoch_ns % tick
        time.sleep(0.001)
    return None


# The simulator's names for what the upstream kernel runs: `linux` is the model of upstream's
# scheduler, which `net.mptcp.scheduler` calls "default".
KERNEL_SCHEDULERS = {"linux": "default"}


def kernel_scheduler_for(scheduler: str) -> str:
    """The ``net.mptcp.scheduler`` that runs the simulator's ``scheduler``; ``ScenarioError``
    when upstream Linux has no such scheduler (``default``, the out-of-tree kernel's, among
    them)."""
    if scheduler in KERNEL_SCHEDULERS:
        return KERNEL_SCHEDULERS[scheduler]
    if scheduler == "default":
        raise ScenarioError(
            "connection.scheduler: 'default' is the out-of-tree kernel's (MPTCP v0.9x) LowRTT "
            "scheduler, which upstream Linux does not have; upstream's scheduler is 'linux' "
            "(--scheduler linux)"
        )
    raise ScenarioError(
        f"connection.scheduler: {scheduler!r} is the simulator's; upstream Linux has only "
        "'linux' (net.mptcp.scheduler default); --kernel-scheduler NAME runs another of "
        "the kernel's own (net.mptcp.available_schedulers)"
    )


def _check_mptcp_paths(config: Mapping[str, Any]) -> None:
    """Every MPTCP connection of the client over the same paths: the kernel's path manager
    opens a subflow from each `subflow` endpoint for every MPTCP connection of the host, and
    the testbed's client is one host. TCP flows may use any path."""
    names = [p["name"] for p in config["paths"]]
    n = len(names)
    first: tuple[str, list[int]] | None = None
    if config["protocol"] == "mptcp":
        first = ("the connection's", list(range(int(config.get("main_paths") or n))))
    for k, f in enumerate(config.get("flows") or []):
        if f["protocol"] != "mptcp":
            continue
        paths = [int(p) for p in f["paths"]]
        if first is None:
            first = (f"flow[{k}]'s", paths)
            continue
        if paths != first[1]:
            raise ScenarioError(
                f"flow[{k}].paths: the kernel's path manager opens a subflow from every "
                "endpoint for every MPTCP connection of a host, so the testbed's MPTCP "
                f"connections all run over the same paths: {first[0]} are "
                f"{[names[p] for p in first[1]]}, flow[{k}]'s {[names[p] for p in paths]}"
            )


def check_kernel_support(config: Mapping[str, Any], kernel_scheduler: str | None) -> str:
    """The ``net.mptcp.scheduler`` to use (``kernel_scheduler`` if given, else the kernel's
    for the scenario's scheduler); ``ScenarioError`` for what the kernel lacks."""
    _check_mptcp_paths(config)
    if config.get("loss_recovery", "linux") != "linux":
        raise ScenarioError(
            "connection.loss_recovery: the kernel recovers losses as Linux does; "
            f"{config['loss_recovery']!r} exists only in the simulator"
        )
    if config.get("join", "first-data") != "first-data":
        raise ScenarioError(
            "connection.join: Linux opens the other subflows once the connection is fully "
            f"established ('first-data'); {config['join']!r} exists only in the simulator"
        )
    if config.get("stack", "upstream") != "upstream":
        raise ScenarioError(
            "connection.stack: the testbed runs this machine's upstream Linux; the "
            "out-of-tree stack (MPTCP v0.9x) exists only in the simulator"
        )
    if config.get("window_ratio") is not None:
        raise ScenarioError(
            "connection.window_ratio: the kernel advertises its own share of the receive "
            "buffer (Linux 6.18: payload per truesize, the model's default); another ratio "
            "exists only in the simulator: leave it unset to compare"
        )
    hz = kernel_hz()
    if hz is not None and config.get("timer_hz", hz) != hz:
        raise ScenarioError(
            f"connection.timer_hz: this kernel's timers tick at {hz} Hz (CONFIG_HZ in "
            f"/proc/config.gz), not {config['timer_hz']}; set timer_hz = {hz} to compare"
        )
    connections = [("connection", config)] + [
        (f"flow[{k}]", f) for k, f in enumerate(config.get("flows") or [])
    ]
    available_cc = _kernel_congestion()
    for where, conn in connections:
        congestion = conn["congestion"]
        if congestion not in KERNEL_CONGESTION:
            raise ScenarioError(
                f"{where}.congestion: {congestion!r} does not exist in the upstream Linux "
                f"kernel (it has no coupled congestion control for MPTCP); the testbed "
                f"supports {', '.join(KERNEL_CONGESTION)}"
            )
        if available_cc and congestion not in available_cc:
            raise ScenarioError(
                f"{where}.congestion: {congestion!r} is not available in this kernel "
                f"(net.ipv4.tcp_available_congestion_control: {' '.join(available_cc)})"
            )
    chosen: dict[str, str] = {}  # kernel scheduler -> the first connection running it
    available = kernel_schedulers()
    for where, conn in connections:
        if conn["protocol"] != "mptcp":
            continue
        if kernel_scheduler is not None:
            scheduler = kernel_scheduler
        else:
            try:
                scheduler = kernel_scheduler_for(str(conn["scheduler"]))
            except ScenarioError as exc:
                raise ScenarioError(str(exc).replace("connection.", f"{where}.", 1)) from None
        if available and scheduler not in available:
            raise ScenarioError(
                f"{where}.scheduler: {scheduler!r} is not an MPTCP scheduler of this kernel "
                f"(net.mptcp.available_schedulers: {' '.join(available)}); use "
                f"--scheduler linux or --kernel-scheduler"
            )
        chosen.setdefault(scheduler, where)
        if len(chosen) > 1:
            # The server's namespace has one net.mptcp.scheduler for every connection.
            raise ScenarioError(
                f"{where}.scheduler: the kernel runs one MPTCP scheduler per network namespace "
                f"(net.mptcp.scheduler); {conn['scheduler']!r} differs from "
                f"{next(iter(chosen.values()))}'s"
            )
    return next(iter(chosen), "default")

"""The transport's speed on this machine's loopback (``mpsched bench --transport``): goodput
and CPU seconds per GB of ``mpsched serve``/``get`` over one path and two, beside the kernel's
TCP and MPTCP moving the same bytes between two processes."""

from __future__ import annotations

import json
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import time
from typing import Any

__all__ = ["bench_transport"]

IPPROTO_MPTCP = 262

# The kernel's side: a sender and a receiver of SIZE bytes, each a process of its own.
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
    c.close()
else:
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    c.connect(("127.0.0.1", port))
    t0 = time.monotonic(); got = 0
    while True:
        n = c.recv_into(buf)
        if n == 0:
            break
        got += n
    print(got, time.monotonic() - t0)
"""


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _row(name: str, nbytes: int, seconds: float, cpu: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "bytes": nbytes,
        "seconds": seconds,
        "goodput_mbps": nbytes * 8 / seconds / 1e6 if seconds > 0 else None,
        "cpu_s_per_gb": cpu / (nbytes / 1e9) if nbytes else None,
        **extra,
    }


def _transport(size: int, paths: list[str]) -> dict[str, Any]:
    env = {**os.environ, "MPSCHED_SECRET": secrets.token_hex(32)}
    port = _free_port(socket.SOCK_DGRAM)
    cpu0 = _children_cpu()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mpsched",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--size",
            f"{size}B",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    argv = [sys.executable, "-m", "mpsched", "get", f"127.0.0.1:{port}", "--json"]
    for p in paths:
        argv += ["--path", p]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    server.send_signal(signal.SIGINT)
    try:
        server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
    cpu = _children_cpu() - cpu0
    if done.returncode != 0:
        return {"name": f"mpsched transport, {len(paths)} path(s)", "error": done.stderr[-300:]}
    got = json.loads(done.stdout)
    return _row(
        f"mpsched transport, {len(paths)} path(s)",
        got["bytes"],
        got["duration_s"],
        cpu,
        complete=got["complete"],
    )


def _kernel(size: int, proto: int, name: str) -> dict[str, Any]:
    port = _free_port(socket.SOCK_STREAM)
    cpu0 = _children_cpu()
    server = subprocess.Popen(
        [sys.executable, "-c", _KERNEL, "server", str(proto), str(port), str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    if server.stdout.readline().strip() != "ready":
        server.kill()
        return {"name": name, "error": (server.communicate()[1] or "")[-300:]}
    done = subprocess.run(
        [sys.executable, "-c", _KERNEL, "client", str(proto), str(port), str(size)],
        capture_output=True,
        text=True,
        check=False,
    )
    server.wait(timeout=30)
    cpu = _children_cpu() - cpu0
    if done.returncode != 0:
        return {"name": name, "error": done.stderr[-300:]}
    got, seconds = done.stdout.split()
    return _row(name, int(got), float(seconds), cpu)


def bench_transport(size: int = 1_000_000_000) -> list[dict[str, Any]]:
    """Rows: the transport over one path and two, kernel TCP, kernel MPTCP (one subflow: the
    loopback has one address pair), each moving ``size`` bytes on this machine's loopback.
    CPU seconds count both ends (their processes' user and system time)."""
    return [
        _transport(size, ["127.0.0.1"]),
        _transport(size, ["127.0.0.1", "127.0.0.2"]),
        _kernel(size, socket.IPPROTO_TCP, "kernel TCP"),
        _kernel(size, IPPROTO_MPTCP, "kernel MPTCP"),
    ]

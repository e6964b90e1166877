"""One scenario on the kernel over emulated paths: the testbed built, the load generator run in
its namespaces from a shared epoch, and the summary of what was measured."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..scenario import Scenario, load, to_native
from .headers import HEADER_TRACE_ROWS, header_tables, pop_headers
from .kernel import (
    TestbedError,
    check_kernel_support,
    kernel_hz,
    missing_capabilities,
    timer_phase_ns,
)
from .ktrace import KernelTrace, ktrace_table, trace_unavailable
from .netns import SERVER_ADDR, Testbed, client_addr, read_line
from .spec import connections
from .summary import summarize

__all__ = ["MIN_SAMPLE_NS", "SAMPLE_NS", "emulate"]

#: How often the load generators sample the main connection unless told (`--sample-interval`).
SAMPLE_NS = 100_000_000
#: The shortest period: each sample is a few `getsockopt` calls in the load generator's own
#: loop, which below a millisecond would delay its reads and writes.
MIN_SAMPLE_NS = 1_000_000


def _loadgen(bed: Testbed, role: str, spec: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, str(Path(__file__).with_name("loadgen.py")), role, "--spec", str(spec)]
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


def emulate(
    scenario: Scenario | Mapping[str, Any] | str | None = None,
    *,
    kernel_scheduler: str | None = None,
    spin_us: int = 50,
    threads: str = "per_direction",
    rt_priority: int = 10,
    raw_dir: Path | None = None,
    header_trace: bool = False,
    pcap: Path | None = None,
    kernel_trace: bool = False,
    sample_ns: int = SAMPLE_NS,
) -> dict[str, Any]:
    """Run a scenario on the kernel over emulated paths and return its summary.

    ``scenario`` is a loaded :class:`Scenario`, a normalized dict (:func:`to_native`) or a
    source for :func:`load`. ``kernel_scheduler`` overrides the scenario's scheduler name for
    ``net.mptcp.scheduler``. ``raw_dir`` receives the raw measurements (client, server,
    emulator report, counters). ``header_trace`` records the headers of every packet (the
    emulator reads them): the client's windows and Data ACKs into ``raw_dir/windows.parquet``
    and the server's data mappings into ``raw_dir/data.parquet`` (:func:`header_tables`).
    ``pcap`` receives the kernels' packets as pcapng (IP and TCP headers of every packet
    entering an emulated link, stamped from the client's connect; interfaces "PATH down" and
    "PATH up"). ``sample_ns`` is the period of both load generators' samples of the main
    connection and of the client's timeline (``raw_dir/{client,server}.json``), at least
    :data:`MIN_SAMPLE_NS`.
    """
    if sample_ns < MIN_SAMPLE_NS:
        raise TestbedError(
            f"the sampling period must be at least {MIN_SAMPLE_NS // 1_000_000} ms, "
            f"got {sample_ns} ns"
        )
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
    if kernel_trace:
        if raw_dir is None:
            raise TestbedError("the kernel trace needs a directory for its table (raw_dir)")
        why = trace_unavailable()
        if why:
            raise TestbedError(f"the kernel trace {why}")
    if pcap is not None:
        try:
            pcap.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TestbedError(f"cannot write the capture {pcap}: {exc.strerror or exc}") from None
    start = time.perf_counter()
    duration_s = config["duration_ns"] / 1e9
    with (
        Testbed(
            config,
            spin_us=spin_us,
            threads=threads,
            rt_priority=rt_priority,
            kernel_scheduler=sched,
            header_trace=HEADER_TRACE_ROWS if header_trace else 0,
            pcap=pcap,
        ) as bed,
        contextlib.ExitStack() as tracing,
    ):
        ktrace = None
        if kernel_trace:
            ktrace = tracing.enter_context(
                KernelTrace(f"mpsemu-{bed.run_id}", bed.workdir / "ktrace.txt")
            )
        spec = bed.workdir / "connections.json"
        spec.write_text(
            json.dumps(
                {
                    "addr": SERVER_ADDR,
                    "duration_ns": config["duration_ns"],
                    "connections": connections(config),
                    "sample_ns": sample_ns,
                    # Blocks timed to the millisecond: the application runs at real-time
                    # priority, below the link threads'.
                    "rt_priority": 5 if config["workload"]["kind"] == "rate" and rt_priority else 0,
                }
            )
        )
        server = _loadgen(bed, "server", spec)
        assert server.stdout is not None
        read_line(server.stdout, 15.0, server, "load generator (server)")
        client = _loadgen(bed, "client", spec)
        assert client.stdout is not None and client.stdin is not None
        assert server.stdin is not None
        # Both sides wait for the epoch on stdin; the client connects at it.
        read_line(client.stdout, 15.0, client, "load generator (client)")
        epoch = time.monotonic_ns() + 50_000_000
        bed.set_epoch(epoch)
        hz = kernel_hz()
        phase = timer_phase_ns(epoch, hz) if hz else None
        addresses = bed.address_changes(epoch)
        for proc in (server, client):
            assert proc.stdin is not None
            proc.stdin.write(f"{epoch}\n")
            proc.stdin.flush()
        timeout = duration_s + 30.0
        client_out = _result(client, "load generator (client)", timeout)
        server_out = _result(server, "load generator (server)", 15.0)
        counters = {"server": bed.nstat(bed.server_ns), "client": bed.nstat(bed.client_ns)}
        host_drops = bed.device_drops()
        report = bed.stop_emulator()
        table = None
        if ktrace is not None:
            tracing.close()
            table = ktrace_table(
                ktrace.path,
                epoch,
                SERVER_ADDR,
                _client_sockets(server_out),
                {client_addr(i): i for i in range(len(config["paths"]))},
                app_pid=server_out.get("pid"),
            )
    headers = pop_headers(report)
    if report.get("pcap_error"):
        raise TestbedError(f"the emulator could not write the capture: {report['pcap_error']}")
    summary = summarize(
        config,
        client_out,
        server_out,
        report,
        counters,
        kernel_scheduler=sched,
        wall_s=time.perf_counter() - start,
    )
    # Each path's TUN devices' drops (data at the server, ACKs at the client): none unless the
    # testbed failed to emulate the scenario (netns.TUN_TXQUEUELEN).
    summary["kernel"]["host_drops"] = host_drops
    if phase is not None:
        # The kernel's timer wheel at the epoch: `--set connection.timer_phase=...ns` replays it.
        summary["kernel"]["timer_phase_ns"] = phase
    if addresses:
        # When each path's address went away or came back, as the testbed applied it.
        summary["kernel"]["address_changes"] = list(addresses)
    if table is not None and ktrace is not None:
        summary["kernel"]["trace_events"] = table.num_rows
        summary["kernel"]["trace_overrun"] = ktrace.overrun
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
        if table is not None:
            import pyarrow.parquet as pq

            pq.write_table(table, raw_dir / "ktrace.parquet")
    return summary


def _client_sockets(server_out: Mapping[str, Any]) -> set[str]:
    """The client's ends ("addr:port") of every subflow the server sampled, of every
    connection: the run's own sockets among the machine's."""
    rows = [row for _, row, _ in server_out.get("samples", [])]
    for samples in (server_out.get("flow_samples") or {}).values():
        rows += [row for _, row, _ in samples]
    return {str(sub[0]) for row in rows for sub in row if sub and sub[0]}

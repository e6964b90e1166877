"""``mpsched emulate``: one scenario on the Linux kernel over emulated paths (needs root)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import ScenarioError
from ..scenario import load, parse_set, to_native
from ..testbed.kernel import TestbedError
from ..testbed.run import MIN_SAMPLE_NS, SAMPLE_NS, emulate
from ..units import UnitError, parse_duration
from .options import CAPTURE_NAME, json_option, set_option
from .render import print_emulation

__all__ = ["emulate_command"]


@click.command("emulate")
@click.argument("file", required=False)
@click.option(
    "--scheduler",
    metavar="NAME",
    help="Packet scheduler, as `mpsched run --scheduler` (linux: upstream's, the kernel's).",
)
@click.option(
    "--seed", type=int, metavar="N", help="Random seed (integer >= 0): the links' losses."
)
@set_option
@json_option
@click.option(
    "--transport",
    type=click.Choice(["kernel", "udp"]),
    default="kernel",
    show_default=True,
    help="kernel: Linux's MPTCP; udp: mpsched's own transport (`mpsched serve`/`get`) with the "
    "scenario's scheduler, over the same emulated paths.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Write summary.json, scenario.json and the raw measurements into DIR.",
)
@click.option(
    "--kernel-scheduler",
    metavar="NAME",
    help="Run this net.mptcp.scheduler (the kernel's own name, e.g. a BPF scheduler) instead "
    "of the kernel's for the scenario's scheduler (linux: upstream's, net.mptcp.scheduler "
    "default).",
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
    "client's windows and Data ACKs), raw/data.parquet (the server's data mappings) and "
    "capture.pcapng (the kernels' packets entering each link, for Wireshark and tshark).",
)
@click.option(
    "--kernel-trace",
    is_flag=True,
    help="Record the kernel's TCP and MPTCP tracepoints (needs --out): raw/ktrace.parquet, a "
    "row per ACK (cwnd, ssthresh, srtt), retransmission, congestion-state change, scheduler "
    "decision, data fragment pushed, arming (with its period) and firing of MPTCP's "
    "connection-level retransmission timer, and send() of the server's application, timed "
    "from the client's connect.",
)
@click.option(
    "--sample-interval",
    default=f"{SAMPLE_NS // 1_000_000}ms",
    show_default=True,
    metavar="DURATION",
    help="Period of the load generators' samples of the main connection (raw/server.json, "
    "raw/client.json: windows, buffers, receiver RTT) and of the client's timeline; at least "
    "1ms.",
)
def emulate_command(
    file: str | None,
    scheduler: str | None,
    seed: int | None,
    sets: tuple[str, ...],
    as_json: bool,
    transport: str,
    out: Path | None,
    kernel_scheduler: str | None,
    rt_priority: int,
    spin_us: int,
    threads: str,
    header_trace: bool,
    kernel_trace: bool,
    sample_interval: str,
) -> None:
    """Run the scenario FILE on the Linux kernel over emulated paths (needs root).

    Builds network namespaces and TUN devices, runs the scenario's links in the mpsched-emu
    emulator, transfers with the kernel's MPTCP (or TCP), and prints the summary of
    `mpsched run` from the kernel's counters; fields it cannot measure are null. The
    scheduler `linux` is upstream's (the kernel's `default`); the out-of-tree `default` and
    the simulator's other schedulers are refused.
    """
    try:
        sample_ns = parse_duration(sample_interval)
    except UnitError as exc:
        raise ScenarioError(f"--sample-interval: {exc}") from None
    if sample_ns < MIN_SAMPLE_NS:
        raise ScenarioError(f"--sample-interval: must be at least 1ms, got {sample_interval!r}")
    overrides = parse_set(sets)
    if scheduler is not None:
        overrides["connection.scheduler"] = scheduler
    if seed is not None:
        overrides["seed"] = seed
    scenario = load(file, overrides, label="--set")
    config = to_native(scenario)
    if header_trace and out is None:
        raise ScenarioError("--trace-headers: needs --out DIR (it writes DIR/raw/*.parquet)")
    if kernel_trace and out is None:
        raise ScenarioError("--kernel-trace: needs --out DIR (it writes DIR/raw/ktrace.parquet)")
    if kernel_trace and transport == "udp":
        raise ScenarioError("--kernel-trace: records the kernel's TCP, not --transport udp")
    if transport == "udp":
        _emulate_transport(config, out, as_json)
        return
    try:
        summary = emulate(
            config,
            kernel_scheduler=kernel_scheduler,
            spin_us=spin_us,
            threads=threads,
            rt_priority=rt_priority,
            raw_dir=None if out is None else out / "raw",
            header_trace=header_trace,
            pcap=out / CAPTURE_NAME if header_trace and out is not None else None,
            kernel_trace=kernel_trace,
            sample_ns=sample_ns,
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
        written = "summary.json, scenario.json, raw/"
        if header_trace:
            written += f", {CAPTURE_NAME}"
        click.echo(f"wrote {out}/{written}", err=True)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        print_emulation(summary, config)


def _emulate_transport(config: dict, out: Path | None, as_json: bool) -> None:
    from ..testbed.transport import emulate_transport

    try:
        summary = emulate_transport(config, raw_dir=None if out is None else out / "raw")
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"transport udp, scheduler {summary['scheduler']}: {summary['goodput_mbps']:.2f} Mbit/s "
        f"({summary['bytes']:,} bytes in {summary['duration_s']:.2f} s)"
    )
    for sf in summary["subflows"]:
        click.echo(f"  {sf['name']}: {sf['share']:.2f} of the bytes")

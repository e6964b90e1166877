"""``mpsched run``: simulate one scenario and print its summary."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console

from .. import api
from ..errors import ScenarioError
from ..scenario import load, parse_set, to_native
from ..traces import TABLES
from ..units import UnitError, parse_duration, parse_size
from .options import CAPTURE_NAME, json_option, set_option
from .progress import RunProgress
from .render import print_summary

__all__ = ["run_command"]


@click.command("run")
@click.argument("file", required=False)
@click.option("--scheduler", metavar="NAME", help="Packet scheduler (see `mpsched schedulers`).")
@click.option("--seed", type=int, metavar="N", help="Random seed (integer >= 0).")
@set_option
@json_option
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Write summary.json, scenario.json and the Parquet traces (streamed) into DIR.",
)
@click.option(
    "--sample-interval",
    default="10ms",
    show_default=True,
    metavar="DURATION",
    help="Period of the sampled subflow and connection traces.",
)
@click.option("--no-traces", is_flag=True, help="With --out, write only the JSON files.")
@click.option(
    "--benefit",
    is_flag=True,
    help="Also run plain TCP on each path alone and report the aggregation benefit.",
)
@click.option(
    "--max-trace-size",
    default="4GB",
    show_default=True,
    metavar="SIZE",
    help="Stop with an error once the traces (--out) or the capture (--pcap) reach SIZE "
    "(before a disk fills).",
)
@click.option(
    "--pcap",
    is_flag=False,
    flag_value="",
    metavar="FILE",
    help="Write every packet as pcapng (Wireshark, tshark) to FILE; "
    "bare, with --out: DIR/capture.pcapng.",
)
@click.option(
    "--pcap-at",
    type=click.Choice(api.PCAP_VANTAGES),
    default="sender",
    show_default=True,
    help="Where the capture is taken: the server, the client, or each link's output.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on long runs.")
@click.option(
    "--force",
    is_flag=True,
    help="With --out: replace the run already in DIR (its files and plots; nothing else).",
)
def run_command(
    file: str | None,
    scheduler: str | None,
    seed: int | None,
    sets: tuple[str, ...],
    as_json: bool,
    out: Path | None,
    sample_interval: str,
    no_traces: bool,
    benefit: bool,
    max_trace_size: str,
    pcap: str | None,
    pcap_at: str,
    quiet: bool,
    force: bool,
) -> None:
    """Simulate the scenario FILE (default: the STMS lab set-up) and print a summary."""
    overrides = parse_set(sets)
    if scheduler is not None:
        overrides["connection.scheduler"] = scheduler
    if seed is not None:
        overrides["seed"] = seed
    model = load(file, overrides, label="--set")
    try:
        interval = parse_duration(sample_interval)
    except UnitError as exc:
        raise ScenarioError(f"--sample-interval: {exc}") from None
    if interval <= 0:
        raise ScenarioError(f"--sample-interval: must be > 0, got {sample_interval!r}")
    try:
        max_trace_bytes = parse_size(max_trace_size)
    except UnitError as exc:
        raise ScenarioError(f"--max-trace-size: {exc}") from None
    if out is not None:
        _prepare_out(out, force)
    capture = _capture_path(pcap, out)
    progress = None if quiet else RunProgress(to_native(model)["duration_ns"])
    try:
        result = api.run(
            model,
            out=out,
            trace=out is not None and not no_traces,
            sample_interval=interval,
            benefit=benefit,
            progress=progress,
            max_trace_bytes=max_trace_bytes,
            pcap=capture,
            pcap_at=pcap_at,
        )
    except api.RunInterrupted as stop:
        if progress is not None:
            progress.close()
        _report(stop.result, out, no_traces, as_json, capture)
        at = stop.result.summary.get("interrupted_at_s")
        where = f"; the run so far is in {out}" if out is not None else ""
        click.echo(f"interrupted at {at:.3f} s simulated{where}", err=True)
        sys.exit(130)
    finally:
        if progress is not None:
            progress.close()
    _report(result, out, no_traces, as_json, capture)


#: What `mpsched run --out DIR` and `mpsched plot DIR` leave in DIR: what --force replaces.
RUN_FILES = ("summary.json", "scenario.json", *(f"{t}.parquet" for t in TABLES), CAPTURE_NAME)
PLOTS_DIR = "plots"


def _prepare_out(out: Path, force: bool) -> None:
    """DIR made, and empty of any earlier run: a run written over another would sit beside the
    other's plots and traces (a table this run does not write)."""
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ScenarioError(
                f"--out {out}: the folder is not empty (an earlier run?); "
                "choose another with --out, or pass --force to replace the run in it"
            )
        try:
            for name in RUN_FILES:
                (out / name).unlink(missing_ok=True)
            if (out / PLOTS_DIR).is_dir():
                shutil.rmtree(out / PLOTS_DIR)
        except OSError as exc:
            raise ScenarioError(f"--out {out}: cannot replace: {exc.strerror or exc}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScenarioError(f"--out {out}: cannot write: {exc.strerror or exc}") from None


def _capture_path(pcap: str | None, out: Path | None) -> Path | None:
    """Where --pcap writes: its FILE, or DIR/capture.pcapng when bare with --out DIR."""
    if pcap is None:
        return None
    if pcap:
        return Path(pcap)
    if out is None:
        raise ScenarioError("--pcap: give a FILE, or use it with --out DIR (DIR/capture.pcapng)")
    return out / CAPTURE_NAME


def _report(
    result: api.Result, out: Path | None, no_traces: bool, as_json: bool, capture: Path | None
) -> None:
    if out is not None:
        names = ["summary.json", "scenario.json"]
        if not no_traces:
            names += [f"{table}.parquet" for table in TABLES]
        for name in names:
            click.echo(f"wrote {out / name}", err=True)
    if capture is not None:
        click.echo(f"wrote {capture}", err=True)
    if as_json:
        click.echo(json.dumps(result.summary, indent=2))
    else:
        print_summary(result, Console())

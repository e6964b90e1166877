"""What the commands print on a terminal: a run's summary (``mpsched run``, ``mpsched emulate``)
and the speed report (``mpsched bench``).

Every formatter tolerates missing keys and ``None`` (printed as ``-``): the testbed's summary
leaves out what the kernel cannot tell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from .. import contract
from ..api import Result

__all__ = [
    "print_bench_report",
    "print_bench_suite",
    "print_emulation",
    "print_summary",
    "print_transport_bench",
    "rate",
]


# --- formatting helpers (tolerant of missing keys) ---


def _num(value: Any, spec: str = ",.2f", unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:{spec}}{unit}"


def _pct(value: Any) -> float | None:
    return value * 100 if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> str:
    return _num(value, ",d") if isinstance(value, int) else _num(value, ",.0f")


def _stats(stats: Any, keys: Sequence[str], unit: str) -> str:
    if not isinstance(stats, dict):
        return "-"
    parts = []
    for key in keys:
        value = stats.get(key)
        spec = ",d" if isinstance(value, int) and not isinstance(value, bool) else ",.2f"
        parts.append(f"{key} {_num(value, spec, unit)}")
    return "  ".join(parts)


def rate(events: Any, seconds: Any) -> float | None:
    if isinstance(events, int | float) and isinstance(seconds, int | float) and seconds > 0:
        return events / seconds
    return None


def _subflow_table(subflows: list[dict[str, Any]]) -> Table:
    table = Table(title="subflows", title_justify="left", box=None, header_style="bold")
    columns = [
        ("subflow", "left"),
        ("sent MB", "right"),
        ("Mbps", "right"),
        ("retx", "right"),
        ("RTOs", "right"),
        ("q drop", "right"),
        ("rnd drop", "right"),
        ("srtt ms", "right"),
        ("min rtt ms", "right"),
    ]
    # Packets lost to a path outage, only in runs that had one (data and ACKs).
    outages = any(sub.get("outage_drops") or sub.get("ack_outage_drops") for sub in subflows)
    if outages:
        columns.insert(7, ("outage", "right"))
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for sub in subflows:
        sent = sub.get("bytes_sent")
        row = [
            str(sub.get("name", "?")),
            _num(sent / 1e6 if isinstance(sent, int | float) else None),
            _num(sub.get("goodput_mbps")),
            _int(sub.get("retransmits")),
            _int(sub.get("rtos")),
            _int(sub.get("queue_drops")),
            _int(sub.get("random_drops")),
            _num(sub.get("srtt_ms"), ",.1f"),
            _num(sub.get("min_rtt_ms"), ",.1f"),
        ]
        if outages:
            lost = (sub.get("outage_drops") or 0) + (sub.get("ack_outage_drops") or 0)
            row.insert(7, _int(lost))
        table.add_row(*row)
    return table


def _flow_table(flows: list[dict[str, Any]]) -> Table:
    table = Table(
        title="flows (0: the main connection)",
        title_justify="left",
        box=None,
        header_style="bold",
    )
    columns = ("flow", "protocol", "paths", "start s", "size KB", "done s", "Mbps", "RTOs")
    for name in columns:
        table.add_column(name, justify="left" if name in ("protocol", "paths") else "right")
    for f in flows:
        size = f.get("size_bytes")
        table.add_row(
            _int(f.get("flow")),
            str(f.get("protocol", "?")),
            ",".join(str(p) for p in f.get("paths") or []),
            _num(f.get("start_s"), ",.3f"),
            "bulk" if size is None else _num(size / 1e3 if isinstance(size, int) else None, ",.1f"),
            _num(f.get("completion_s"), ",.3f"),
            _num(f.get("goodput_mbps")),
            _int(f.get("rtos")),
        )
    return table


def _benefit_text(s: dict[str, Any]) -> str:
    base = [b for b in s.get("baselines") or [] if isinstance(b, dict)]
    paths = ", ".join(
        f"{b.get('name', '?')} {_num(b.get('goodput_mbps'), ',.2f', ' Mbps')}" for b in base
    )
    return f"benefit {_num(s.get('aggregation_benefit'), '+.3f')} (TCP alone: {paths or '-'})"


# The summary fields the layout above the subflow table shows, and those it leaves to --json
# on purpose. Any other field the contract declares is printed on an "other" line with its
# unit, so a field added in Rust shows up here without a change.
_SHOWN = frozenset(
    {
        "protocol", "scheduler", "congestion", "seed", "simulated_s", "goodput_mbps",
        "bytes_delivered", "completion_s", "ooo_delay_ms", "data_ack_step_segments",
        "reinjections", "opportunistic_retransmits", "penalizations", "block_delay_ms",
        "blocks_delivered", "block_delay_increase", "flows", "mean_flow_completion_s",
        "unfinished_flows", "events", "wall_s", "subflows", "interrupted_at_s",
        "longest_stall_ms", "longest_stall_at_s",
    }
)  # fmt: skip
_LEFT_TO_JSON = frozenset(
    {
        "window_probes", "peak_reorder_bytes", "mean_reorder_bytes", "data_packets",
        "acks_sent", "mean_flow_goodput_mbps", "block_worst_at_s", "duration_s",
    }
)  # fmt: skip


def _other_fields(s: Mapping[str, Any]) -> str | None:
    parts = []
    for f in contract.fields("summary"):
        if f.name in _SHOWN or f.name in _LEFT_TO_JSON or s.get(f.name) is None:
            continue
        value = s[f.name]
        unit = f" {f.unit}" if f.unit and f.unit != "fraction" else ""
        if f.type == "quantiles":
            parts.append(f"{f.name} " + _stats(value, ("mean", "p50", "p99", "max"), unit))
        elif f.type in ("int", "float"):
            parts.append(
                f"{f.name} {_int(value) if f.type == 'int' else _num(value, ',.4g')}{unit}"
            )
        else:
            parts.append(f"{f.name} {value}")
    return "; ".join(parts) or None


def print_summary(result: Result, console: Console) -> None:
    """Print a run's summary as readable text."""
    s = result.summary
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row(
        "scenario",
        f"{s.get('protocol', '?')}, scheduler {s.get('scheduler', '?')}, "
        f"{s.get('congestion', '?')}, seed {s.get('seed', '?')}, "
        + (
            f"{_num(s.get('duration_s'), 'g', 's')} on the kernel"
            if isinstance(s.get("kernel"), dict)
            else f"{_num(s.get('simulated_s', s.get('duration_s')), 'g', 's')} simulated"
        )
        + ("" if s.get("interrupted_at_s") is None else " (interrupted: the run so far)"),
    )
    delivered = s.get("bytes_delivered")
    flows = [f for f in s.get("flows") or [] if isinstance(f, dict)]
    # With competing flows the headline figures are the main connection's (flow 0) alone.
    main = " (main)" if flows else ""
    head.add_row(
        f"goodput{main}",
        f"{_num(s.get('goodput_mbps'), ',.2f', ' Mbps')} "
        f"({_num(delivered / 1e6 if isinstance(delivered, int | float) else None)} MB delivered)",
    )
    completion = s.get("completion_s")
    # A rate-limited run times its blocks (0 delivered included); a null field is the
    # kernel testbed's "not this workload", as an absent one is the simulator's.
    rate_limited = s.get("blocks_delivered") is not None
    endless = "- (rate-limited application)" if rate_limited else "- (bulk transfer)"
    head.add_row(
        f"completion{main}", endless if completion is None else _num(completion, ",.3f", " s")
    )
    head.add_row("OOO delay", _stats(s.get("ooo_delay_ms"), ("mean", "p50", "p99", "max"), " ms"))
    if s.get("longest_stall_ms") is not None:
        head.add_row(
            "longest stall",
            f"{_num(s.get('longest_stall_ms'), ',.1f', ' ms')} "
            f"from {_num(s.get('longest_stall_at_s'), ',.3f', ' s')}",
        )
    head.add_row(
        "DATA_ACK step",
        _stats(s.get("data_ack_step_segments"), ("mean", "p99", "max"), " seg"),
    )
    head.add_row(
        "MPTCP",
        f"reinjections {_int(s.get('reinjections'))}, opportunistic retransmits "
        f"{_int(s.get('opportunistic_retransmits'))}, penalizations "
        f"{_int(s.get('penalizations'))}",
    )
    if "aggregation_benefit" in s:
        head.add_row("aggregation", _benefit_text(s))
    if s.get("block_delay_ms") is not None:
        head.add_row(
            "blocks",
            f"{_int(s.get('blocks_delivered'))} delivered; delay "
            + _stats(s.get("block_delay_ms"), ("mean", "p50", "p99", "max"), " ms")
            + f"; worst {_num(_pct(s.get('block_delay_increase')), ',.0f', '%')} over the least"
            " a block can take",
        )
    if flows:
        head.add_row(
            "flows",
            f"{len(flows)} connections; mean completion "
            f"{_num(s.get('mean_flow_completion_s'), ',.3f', ' s')}, "
            f"{_int(s.get('unfinished_flows'))} unfinished",
        )
    other = _other_fields(s)
    if other:
        head.add_row("other", other)
    events_per_s = rate(s.get("events"), result.loop_wall_s)
    head.add_row(
        "events",
        f"{_int(s.get('events'))} ({_num(events_per_s, ',.0f')} events/s; "
        f"loop {_num(result.loop_wall_s, '.3f', ' s')}, wall {_num(s.get('wall_s'), '.3f', ' s')})",
    )
    console.print(head)
    subflows = s.get("subflows")
    if isinstance(subflows, list) and subflows:
        console.print()
        console.print(_subflow_table([sub for sub in subflows if isinstance(sub, dict)]))
    if flows and len(flows) <= 40:
        console.print()
        console.print(_flow_table(flows))


def print_emulation(summary: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Print an emulated run's summary, then the emulator's and the kernel's own lines."""
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
    host = kernel.get("host_drops") or {}
    if any(n for side in host.values() for n in side or [] if n):
        console.print(
            f"[bold]warning[/bold]   the hosts' devices dropped packets before the emulated "
            f"links (per path: server {host.get('server')}, client {host.get('client')}); "
            "the run is not the scenario's network"
        )
    for error in kernel.get("errors") or []:
        console.print(f"[bold]warning[/bold]   {error}")


# --- mpsched bench ---


def print_bench_suite(suite: Mapping[str, Any]) -> None:
    """The fixed benchmark scenarios as a table beside the bare heap loop, then the sweeps."""
    table = Table(
        title=f"bare heap loop: {suite['heap_mevents_per_s']:.2f} M events/s",
        caption="; ".join(f"{r['name']}: {r['description']}" for r in suite["scenarios"])
        + "; loop s: the median run's simulation loop; ratio: sim s/s over the heap loop's "
        "M events/s, timed between the runs",
    )
    for col in (
        "scenario",
        "sim s",
        "events",
        "data pkts",
        "runs",
        "loop s",
        "sim s/s",
        "pkts/s",
        "peak RSS",
        "ratio",
    ):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in suite["scenarios"]:
        rss = r.get("peak_rss_bytes")
        table.add_row(
            r["name"],
            _num(r["simulated_s"], ",.0f"),
            _int(r["events"]),
            _int(r["data_packets"]),
            _int(r["runs"]),
            _num(r["wall_s"], ",.3f"),
            _num(r["sim_s_per_wall_s"], ",.0f"),
            _num(r["data_packets_per_wall_s"] / 1e6, ",.2f", " M"),
            "-" if rss is None else f"{rss / 2**20:,.0f} MiB",
            _num(r["ratio_to_heap"], ",.1f"),
        )
    console = Console(width=max(Console().width, 110))
    if suite["scenarios"]:
        console.print(table)
    for s in suite["sweeps"]:
        console.print(
            f"{s['name']}: {s['description']}: {s['runs']} runs in {s['wall_s']:.1f} s on "
            f"{s['cores']} cores = {s['runs_per_s']:.1f} runs/s "
            f"({s['sim_s_per_wall_s']:,.0f} simulated s per wall s)"
        )


def print_bench_report(report: Mapping[str, Any]) -> None:
    """One run of the default scenario: its events, simulated and wall time, and speed."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("events", _int(report["events"])),
        ("simulated", _num(report["sim_s"], ",.1f", " s")),
        ("loop wall time", _num(report["loop_wall_s"], ",.3f", " s")),
        ("total wall time", _num(report["wall_s"], ",.3f", " s")),
        ("events/s", _num(report["events_per_s"], ",.0f")),
        ("sim s / wall s", _num(report["sim_s_per_wall_s"], ",.2f")),
        ("bare heap loop", _num(report["heap_mevents_per_s"], ",.2f", " M events/s")),
        ("(sim s / wall s) / heap", _num(report["sim_s_per_wall_s_per_heap_mevents"], ",.3f")),
    ]
    for label, value in rows:
        table.add_row(label, value)
    Console().print(table)


def print_transport_bench(report: Mapping[str, Any]) -> None:
    """``mpsched bench --transport``'s rows as a Markdown table: medians and ranges."""

    def cell(row: Mapping[str, Any], key: str, fmt: str) -> str:
        lo, hi = row[f"{key}_range"]
        return f"{format(row[key], fmt)} ({format(lo, fmt)}-{format(hi, fmt)})"

    if "error" in report:
        click.echo(f"error: {report['error']}")
        return

    def rtt(row: Mapping[str, Any]) -> str:
        if "srtt_ms" not in row:
            return "-"
        low = f" (min {row['min_rtt_ms']:.2f})" if "min_rtt_ms" in row else ""
        return f"{row['srtt_ms']:.2f}{low}"

    load = report["load_before"][0], report["load_after"][0]
    pinned = report.get("cpus")
    where = f"servers on CPU {pinned[0]}, clients on CPU {pinned[1]}; " if pinned else ""
    click.echo(
        f"{report['bytes']:,} bytes over loopback, {report['rounds']} interleaved rounds, "
        f"{where}load average {load[0]:.2f} before, {load[1]:.2f} after; median (range)"
    )
    click.echo(
        "| system | goodput (Mbit/s) | CPU s per GB (both ends) | smoothed RTT at the end, ms "
        "| AEAD |"
    )
    click.echo("| --- | ---: | ---: | ---: | --- |")
    for r in report["rows"]:
        name = r["name"]
        if "subflows" in r:
            name += f" (seen: {r['subflows']})"
        if "error" in r:
            click.echo(f"| {name} | error: {r['error'].strip()} | | | |")
            continue
        click.echo(
            f"| {name} | {cell(r, 'goodput_mbps', ',.0f')} | {cell(r, 'cpu_s_per_gb', '.2f')} "
            f"| {rtt(r)} | {r.get('aead') or '-'} |"
        )
    if "goodput_ratio" in report:
        click.echo(
            f"two paths / one: goodput {report['goodput_ratio']:.2f}x, "
            f"CPU per GB {report['cpu_ratio']:.2f}x"
        )

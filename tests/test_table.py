"""`mpsched table`: a sweep's metric as a table, on hand-made results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mpsched.errors import ScenarioError
from mpsched.table import sweep_table


def write_sweep(tmp_path: Path) -> Path:
    """Two LTE RTTs x two schedulers x two repetitions, and one failed run."""
    rows, subflows = [], []
    key = 0
    for rtt in ["100ms", "200ms"]:
        for sched, base in [("default", 40.0), ("stms-a", 50.0)]:
            for rep in range(2):
                goodput = base + (10 if rtt == "200ms" else 0) + 2 * rep
                rows.append(
                    {
                        "group": "lab",
                        "key": f"k{key}",
                        "rep": rep,
                        "set.path.lte.rtt": rtt,
                        "set.connection.scheduler": sched,
                        "scheduler": sched,
                        "goodput_mbps": goodput,
                        "error": None,
                    }
                )
                subflows.append({"key": f"k{key}", "name": "wifi", "goodput_mbps": goodput / 2})
                subflows.append({"key": f"k{key}", "name": "lte", "goodput_mbps": goodput / 2})
                key += 1
    rows.append(dict(rows[0], key="failed", goodput_mbps=0.0, error="boom"))
    pd.DataFrame(rows).to_parquet(tmp_path / "results.parquet")
    pd.DataFrame(subflows).to_parquet(tmp_path / "subflows.parquet")
    return tmp_path


def test_means_over_repetitions_by_the_varying_factor(tmp_path: Path) -> None:
    table = sweep_table(write_sweep(tmp_path), ratio_to="default")
    assert table.row_keys == ["path.lte.rtt"]
    assert table.markdown() == "\n".join(
        [
            "| path.lte.rtt | default | stms-a |",
            "| --- | --- | --- |",
            "| 100ms | 41.0 | 51.0 (1.24x) |",
            "| 200ms | 51.0 | 61.0 (1.20x) |",
        ]
    )


def test_bulk_flows_by_connection(tmp_path: Path) -> None:
    """Competing bulk flows have no size (a column of nulls): the table splits them by flow."""
    sweep = write_sweep(tmp_path)
    keys = pd.read_parquet(sweep / "results.parquet")["key"]
    flows = [
        {"key": k, "flow": f, "size_bytes": None, "goodput_mbps": 10.0 * (f + 1)}
        for k in keys
        for f in (0, 1)
    ]
    pd.DataFrame(flows).to_parquet(sweep / "flows.parquet")
    table = sweep_table(sweep, value="flows:goodput_mbps", rows=["flow"])
    assert table.markdown() == "\n".join(
        ["| flow | default | stms-a |", "| --- | --- | --- |", "| 0 | 10.0 | 10.0 |",
         "| 1 | 20.0 | 20.0 |"]
    )  # fmt: skip
    with pytest.raises(ScenarioError, match="flow needs --value flows:COLUMN"):
        sweep_table(sweep, rows=["flow"])


def test_a_subflow_metric_and_csv(tmp_path: Path) -> None:
    table = sweep_table(write_sweep(tmp_path), value="wifi:goodput_mbps", cols="path.lte.rtt")
    assert table.row_keys == ["connection.scheduler"]
    assert table.csv(2).splitlines() == [
        "connection.scheduler,100ms,200ms",
        "default,20.50,25.50",
        "stms-a,25.50,30.50",
    ]


def test_a_statistic_over_the_runs_of_a_cell(tmp_path: Path) -> None:
    # By group alone, a cell holds both RTTs' runs: default 40, 42, 50, 52.
    sweep = write_sweep(tmp_path)
    cell = {
        stat: sweep_table(sweep, rows=["group"], stat=stat).cells[(("lab",), "default")]
        for stat in ["mean", "median", "min", "max", "p25", "p100"]
    }
    assert cell == {"mean": 46, "median": 46, "min": 40, "max": 52, "p25": 41.5, "p100": 52}


def test_rows_show_values_as_written_in_the_sweep_file_s_order(tmp_path: Path) -> None:
    # A zip runs buffer-major (256KiB: both RTTs, then 1MiB: both RTTs); --rows asks RTT first.
    # The normalized scenario also has the buffer, in bytes: the table shows it as written.
    rows = [
        {
            "group": "g",
            "key": f"k{i}",
            "set.connection.sndbuf": buf,
            "connection.sndbuf": str(size),
            "set.path.lte.rtt": rtt,
            "scheduler": "default",
            "goodput_mbps": float(i),
            "error": None,
        }
        for i, (buf, size, rtt) in enumerate(
            [
                ("256KiB", 262144, "200ms"),
                ("256KiB", 262144, "100ms"),
                ("1MiB", 1048576, "200ms"),
                ("1MiB", 1048576, "100ms"),
            ]
        )
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "results.parquet")
    table = sweep_table(tmp_path, rows=["path.lte.rtt", "connection.sndbuf"])
    assert table.rows == [
        ("200ms", "256KiB"),
        ("200ms", "1MiB"),
        ("100ms", "256KiB"),
        ("100ms", "1MiB"),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"value": "goodput"}, "--value: no column 'goodput'"),
        ({"value": "wlan:goodput_mbps"}, "--value: no subflow named 'wlan' (have: lte, wifi)"),
        ({"value": "wifi:cwnd"}, "--value: no subflow column 'cwnd'"),
        ({"rows": ["path.lte.delay"]}, "--rows: no factor 'path.lte.delay'"),
        ({"group": "big"}, "--group: no group 'big' (have: lab)"),
        ({"ratio_to": "minrtt"}, "--ratio-to: no column 'minrtt' (have: default, stms-a)"),
        ({"value": "scheduler"}, "--value: no column 'scheduler'"),
        ({"stat": "p101"}, "--stat: 'p101' is not mean"),
        ({"stat": "avg"}, "--stat: 'avg' is not mean"),
    ],
)
def test_bad_options_name_themselves(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sweep_table(write_sweep(tmp_path), **kwargs)


def test_the_command_prints_the_table_and_fails_cleanly(tmp_path: Path, run_cli) -> None:
    sweep = write_sweep(tmp_path)
    outcome = run_cli("table", str(sweep), "--digits", "0")
    assert outcome.code == 0, outcome
    lines = outcome.out.splitlines()
    assert lines[0] == "goodput_mbps: mean over each cell's runs, every group"
    assert lines[1] == "" and lines[2].startswith("| path.lte.rtt |")
    assert lines[4] == "| 100ms | 41 | 51 |"
    missing = run_cli("table", str(tmp_path / "nothing"))
    assert missing.code == 2
    assert "no results.parquet" in missing.err


def test_the_caption_names_the_metric_the_statistic_and_the_group(tmp_path, run_cli) -> None:
    sweep = str(write_sweep(tmp_path))
    args = ("table", sweep, "--value", "wifi:goodput_mbps", "--stat", "p25", "--group", "lab")
    outcome = run_cli(*args, "--ratio-to", "default")
    assert outcome.code == 0, outcome
    assert outcome.out.splitlines()[0] == (
        "wifi:goodput_mbps: 25th percentile over each cell's runs, group lab; "
        "in brackets the ratio to column default"
    )
    median = run_cli("table", sweep, "--stat", "median").out.splitlines()[0]
    assert median.startswith("goodput_mbps: median over")
    # CSV is the table alone, for programs.
    csv = run_cli(*args, "--csv").out.splitlines()
    assert csv[0] == "path.lte.rtt,default,stms-a" and len(csv) == 3

"""The Python API with a fake simulator: inputs, results and trace tables."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

import mpsched
from mpsched.api import table_from_columns
from mpsched.errors import ScenarioError

TOML = """
duration = "5s"
[[path]]
name = "only"
rate = "10Mbps"
rtt = "30ms"
"""


def test_run_accepts_path_toml_string_and_dict(fake: ModuleType, tmp_path: Path) -> None:
    file = tmp_path / "only.toml"
    file.write_text(TOML)
    as_dict = {"duration": "5s", "path": [{"name": "only", "rate": "10Mbps", "rtt": "30ms"}]}
    results = [mpsched.run(source) for source in (file, str(file), TOML, as_dict)]
    assert all(r.scenario == results[0].scenario for r in results)
    assert results[0].scenario["paths"][0]["name"] == "only"
    assert results[0].summary["subflows"][0]["name"] == "only"


def test_run_default_and_overrides(fake: ModuleType) -> None:
    result = mpsched.run(
        seed=5, scheduler="minrtt", duration="3s", **{"path.lte.rtt": "200ms", "rcvbuf": "1MiB"}
    )
    config = fake.calls[-1]
    assert config == result.scenario
    assert config["seed"] == 5
    assert config["scheduler"] == "minrtt"
    assert config["duration_ns"] == 3 * 10**9
    assert config["rcvbuf_bytes"] == 2**20
    assert config["paths"][1]["down"]["delay_ns"] == 100_000_000


def test_run_loaded_scenario(fake: ModuleType) -> None:
    scenario = mpsched.load(TOML)
    assert mpsched.run(scenario).scenario == mpsched.to_native(scenario)
    with pytest.raises(mpsched.ScenarioError, match="overrides cannot be applied"):
        mpsched.run(scenario, seed=2)


def test_wall_times(fake: ModuleType) -> None:
    result = mpsched.run(duration="1s")
    assert result.loop_wall_s == 0.01
    assert 0 < result.summary["wall_s"] < 5


def test_invalid_input_raises_scenario_error(fake: ModuleType) -> None:
    with pytest.raises(mpsched.ScenarioError) as info:
        mpsched.run(**{"path.lte.rate": "-5Mbps"})
    assert str(info.value) == "path[1].rate ('lte'): rate must be > 0, got '-5Mbps'"
    assert isinstance(info.value, ValueError)
    with pytest.raises(mpsched.ScenarioError, match="override bogus: unknown key"):
        mpsched.run(bogus=1)


def test_traces(fake: ModuleType) -> None:
    result = mpsched.run(trace=True, duration="1s")
    assert result.traces is not None
    assert set(result.traces) == {"segments", "acks"}
    segments = result.traces["segments"]
    assert isinstance(segments, pa.Table)
    assert segments.schema.field("dseq").type == pa.uint64()
    assert segments.schema.field("len_bytes").type == pa.uint16()
    assert segments.schema.field("t_delivered_ns").type == pa.int64()
    assert segments.column("dseq").to_pylist() == [0, 1, 2, 3, 4]
    frame = result.segments
    assert list(frame["subflow"]) == [0, 1, 2, 3, 4]
    assert result.acks["free_cwnd_segments"].dtype == "float64"
    with pytest.raises(ValueError, match="no trace table 'nope'"):
        result.table("nope")


def test_no_traces_unless_asked(fake: ModuleType) -> None:
    result = mpsched.run(duration="1s")
    assert result.traces is None
    with pytest.raises(ValueError, match=r"trace=True"):
        _ = result.segments


def test_table_from_columns_dtypes() -> None:
    import numpy as np

    columns = {
        name: (dtype, np.array([1, 2], dtype=np_dtype).tobytes())
        for name, dtype, np_dtype in [
            ("a", "i64", "<i8"),
            ("b", "u64", "<u8"),
            ("c", "u32", "<u4"),
            ("d", "u16", "<u2"),
            ("e", "u8", "u1"),
            ("f", "f64", "<f8"),
        ]
    }
    columns["g"] = ("str", ["x", "y"])
    table = table_from_columns(columns)
    assert [str(t) for t in table.schema.types] == [
        "int64",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "double",
        "string",
    ]
    assert table.column("g").to_pylist() == ["x", "y"]
    assert table.num_rows == 2
    with pytest.raises(RuntimeError, match="unknown dtype 'i128'"):
        table_from_columns({"x": ("i128", b"")})


def test_schedulers(fake: ModuleType) -> None:
    names = [s.name for s in mpsched.schedulers()]
    assert names == ["default", "minrtt", "rr"]


def test_a_result_shows_itself_briefly_and_as_html_in_a_notebook(native: ModuleType) -> None:
    result = mpsched.run(duration="2s", seed=3)
    text = repr(result)
    assert text.startswith("Result(mptcp default/cubic, seed 3: goodput ")
    assert f"{result.summary['goodput_mbps']:.2f} Mbit/s, 2 s simulated)" in text
    assert len(text) < 120  # not the whole summary dict
    page = result._repr_html_()
    assert page.count("<table") == 2  # the summary, then the subflows
    for name in ("wifi", "lte", "goodput_mbps", "ooo_delay_ms.mean"):
        assert f"<th>{name}</th>" in page


_NATIVE_KEY = re.compile(r"_ns\b|_bps\b|_bytes\b|\bpaths\[|\.down\.|\.up\.|\bflows\[|\blinks\[")


@pytest.mark.parametrize(
    "overrides",
    [
        {
            "connection.scheduler": "stms-a",
            "connection.scheduler_params.adjust_interval": "5 parsecs",
        },
        {"connection.scheduler_params.lambda": -1, "connection.scheduler": "bm"},
        {"connection.scheduler_params.nope": 1},
        {"path.wifi.rate": "0Mbps"},
        {"path.wifi.loss": 1.5},
        {"connection.stack": "out-of-tree", "connection.scheduler": "linux"},
        {"workload.kind": "rate", "workload.rate": "0Mbps"},
    ],
)
def test_no_error_names_a_native_key(overrides: dict[str, Any]) -> None:
    """Bad input is reported in the scenario file's words, whichever side found it."""
    with pytest.raises(ScenarioError) as info:
        mpsched.run(duration="1s", **overrides)
    assert not _NATIVE_KEY.search(str(info.value)), str(info.value)

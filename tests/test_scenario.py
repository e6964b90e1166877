from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mpsched import ScenarioError, contract, load, to_native
from mpsched.scenario import default_scenario_text, parse_set, parse_value

from .conftest import ROOT, SCENARIOS


def _direction(**keys: Any) -> dict[str, Any]:
    """A link direction as the normalized scenario has it: ``keys``, and every link knob the
    contract lists (``jitter_ns``, ...) at its default, so that a knob added in Rust changes no
    test here."""
    return {**{k.key: k.default for k in contract.link_knobs()}, **keys}


MINIMAL = """
[[path]]
name = "a"
rate = "10Mbps"
rtt = "10ms"
"""

STMS_NATIVE: dict[str, Any] = {
    "duration_ns": 60_000_000_000,
    "seed": 1,
    "protocol": "mptcp",
    "scheduler": "default",
    "scheduler_params": {},
    "congestion": "cubic",
    "sndbuf_bytes": 6 * 2**20,
    "sndbuf_autotune": True,
    "rcvbuf_bytes": 6 * 2**20,
    "rcvbuf_initial_bytes": 128 * 2**10,
    "rcvbuf_autotune": True,
    "window_ratio": None,
    "stack": "upstream",
    "loss_recovery": "linux",
    "join": "first-data",
    "timer_hz": 250,
    "timer_phase_ns": 0,
    "workload": {"kind": "bulk"},
    "write_chunk_bytes": 262144,
    "paths": [
        {
            "name": "wifi",
            "down": _direction(
                rate_bps=30_000_000,
                delay_ns=10_000_000,
                loss=0.0001,
                queue={"time_ns": 50_000_000},
            ),
            "up": _direction(
                rate_bps=30_000_000,
                delay_ns=10_000_000,
                loss=0.0,
                queue={"time_ns": 50_000_000},
            ),
            "schedule": [],
        },
        {
            "name": "lte",
            "down": _direction(
                rate_bps=30_000_000,
                delay_ns=50_000_000,
                loss=0.0001,
                queue={"time_ns": 500_000_000},
            ),
            "up": _direction(
                rate_bps=30_000_000,
                delay_ns=50_000_000,
                loss=0.0,
                queue={"time_ns": 500_000_000},
            ),
            "schedule": [],
        },
    ],
}


@pytest.fixture(autouse=True)
def _schedulers(fake: object) -> None:
    """Validate scheduler names against the fake's list (default, minrtt, rr)."""


def error(source: Any = None, overrides: dict[str, Any] | None = None) -> str:
    with pytest.raises(ScenarioError) as info:
        load(source, overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_default_scenario_is_the_stms_lab() -> None:
    assert to_native(load()) == STMS_NATIVE


def test_default_is_shipped_as_example() -> None:
    assert (SCENARIOS / "stms-lab.toml").read_text() == default_scenario_text()


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_example_scenarios_are_valid(path: Path) -> None:
    native = to_native(load(path))
    assert native["paths"]


def test_sources_path_string_dict_agree(tmp_path: Path) -> None:
    file = tmp_path / "s.toml"
    file.write_text(MINIMAL)
    as_dict = {"path": [{"name": "a", "rate": "10Mbps", "rtt": "10ms"}]}
    results = [to_native(load(x)) for x in (file, str(file), MINIMAL, as_dict)]
    assert all(r == results[0] for r in results)


def test_defaults() -> None:
    native = to_native(load(MINIMAL))
    assert native["duration_ns"] == 60 * 10**9
    assert native["seed"] == 1
    assert native["protocol"] == "mptcp"
    assert native["scheduler"] == "default"
    assert native["congestion"] == "cubic"
    assert native["sndbuf_bytes"] == native["rcvbuf_bytes"] == 6 * 2**20
    assert native["workload"] == {"kind": "bulk"}
    path = native["paths"][0]
    for link in (path["down"], path["up"]):
        assert link["queue"] == {"packets": 1000}
        assert link["loss"] == 0.0
        assert link["delay_ns"] == 5_000_000
        assert link["rate_bps"] == 10_000_000


def test_asymmetric_path_and_schedule() -> None:
    text = """
    duration = "20s"
    [[path]]
    name = "sat"
    rate = "50Mbps"
    rate_up = "5Mbps"
    delay_down = "250ms"
    delay_up = "50ms"
    rtt = "300ms"
    queue = "64KB"
    queue_up = "20pkt"
    loss = 0.01
    ack_loss = 0.001
    [[path.schedule]]
    at = "10s"
    rate = "10Mbps"
    [[path.schedule]]
    at = "5s"
    rtt = "101ms"
    [[path.schedule]]
    at = "15s"
    delay_up = "1ms"
    jitter = "4ms"
    """
    path = to_native(load(text))["paths"][0]
    assert path["down"] == _direction(
        rate_bps=50_000_000,
        delay_ns=250_000_000,
        loss=0.01,
        queue={"bytes": 64_000},
    )
    assert path["up"] == _direction(
        rate_bps=5_000_000,
        delay_ns=50_000_000,
        loss=0.001,
        queue={"packets": 20},
    )
    nothing = {"jitter_down_ns": None, "jitter_up_ns": None}
    assert path["schedule"] == [
        {
            "at_ns": 5 * 10**9,
            "rate_bps": None,
            "delay_down_ns": 50_500_000,
            "delay_up_ns": 50_500_000,
            **nothing,
        },
        {
            "at_ns": 10 * 10**9,
            "rate_bps": 10_000_000,
            "delay_down_ns": None,
            "delay_up_ns": None,
            **nothing,
        },
        {
            "at_ns": 15 * 10**9,
            "rate_bps": None,
            "delay_down_ns": None,
            "delay_up_ns": 1_000_000,
            "jitter_down_ns": 4_000_000,
            "jitter_up_ns": None,
        },
    ]


def test_jitter_of_each_direction() -> None:
    text = MINIMAL + 'jitter = "3ms"\njitter_up = "1ms"\n'
    path = to_native(load(text))["paths"][0]
    assert (path["down"]["jitter_ns"], path["up"]["jitter_ns"]) == (3_000_000, 1_000_000)
    assert error(text, {"path.a.jitter": "-1ms"}).startswith("path[0].jitter ('a')")


def test_reorder_reaches_both_directions_only_when_set() -> None:
    text = MINIMAL + 'jitter = "3ms"\n'
    path = to_native(load(text))["paths"][0]
    assert "reorder" not in path["down"] and "reorder" not in path["up"]
    path = to_native(load(text + "reorder = true\n"))["paths"][0]
    assert path["down"]["reorder"] is True and path["up"]["reorder"] is True


def test_one_way_delays_without_rtt() -> None:
    one = {"path": [{"name": "a", "rate": "1Mbps", "delay_down": "30ms"}]}
    path = to_native(load(one))["paths"][0]
    assert path["down"]["delay_ns"] == path["up"]["delay_ns"] == 30_000_000
    rest = {"path": [{"name": "a", "rate": "1Mbps", "delay_down": "30ms", "rtt": "40ms"}]}
    path = to_native(load(rest))["paths"][0]
    assert (path["down"]["delay_ns"], path["up"]["delay_ns"]) == (30_000_000, 10_000_000)


def test_path_selection_and_tcp() -> None:
    native = to_native(load(None, {"connection.paths": ["lte", "wifi"]}))
    assert [p["name"] for p in native["paths"]] == ["lte", "wifi"]
    native = to_native(load(None, {"connection.paths": ["lte"]}))
    assert [p["name"] for p in native["paths"]] == ["lte"]
    native = to_native(load(None, {"connection.protocol": "tcp"}))
    assert [p["name"] for p in native["paths"]] == ["wifi"]
    tcp_lte = {"connection.protocol": "tcp", "connection.paths": ["lte", "wifi"]}
    assert [p["name"] for p in to_native(load(None, tcp_lte))["paths"]] == ["lte"]


def test_file_workload_and_params() -> None:
    native = to_native(
        load(
            None,
            {
                "workload.kind": "file",
                "workload.size": "10MB",
                "connection.scheduler_params.alpha": 0.5,
                "connection.scheduler_params.mode": "fast",
            },
        )
    )
    assert native["workload"] == {"kind": "file", "size_bytes": 10_000_000}
    assert native["scheduler_params"] == {"alpha": 0.5, "mode": "fast"}


def test_set_overrides() -> None:
    overrides = parse_set(
        [
            "duration=10s",
            "seed=3",
            "connection.rcvbuf=1MiB",
            "connection.scheduler=minrtt",
            "workload.kind=file",
            "workload.size=10MB",
            "path.lte.rtt=200ms",
            "path.wifi.queue=30KB",
        ]
    )
    native = to_native(load(None, overrides))
    assert native["duration_ns"] == 10 * 10**9
    assert native["seed"] == 3
    assert native["rcvbuf_bytes"] == 2**20
    assert native["scheduler"] == "minrtt"
    assert native["workload"] == {"kind": "file", "size_bytes": 10_000_000}
    wifi, lte = native["paths"]
    assert lte["down"]["delay_ns"] + lte["up"]["delay_ns"] == 200_000_000
    assert wifi["down"]["queue"] == wifi["up"]["queue"] == {"bytes": 30_000}


def test_set_delays_replace_each_other() -> None:
    def delays(overrides: dict[str, Any], source: Any = None) -> tuple[int, int]:
        path = to_native(load(source, overrides))["paths"][0]
        return path["up"]["delay_ns"], path["down"]["delay_ns"]

    ms = 1_000_000
    assert delays({"path.wifi.delay_up": "30ms"}) == (30 * ms, 10 * ms)
    assert delays({"path.wifi.delay_down": "1ms"}) == (10 * ms, 1 * ms)
    assert delays({"path.wifi.rtt": "100ms"}) == (50 * ms, 50 * ms)
    one_way = {"path": [{"name": "a", "rate": "1Mbps", "delay_up": "7ms", "delay_down": "3ms"}]}
    assert delays({"path.a.rtt": "4ms"}, one_way) == (2 * ms, 2 * ms)
    assert delays({"path.a.delay_up": "1ms"}, one_way) == (1 * ms, 3 * ms)


def test_set_values_are_toml_when_they_parse() -> None:
    assert parse_value("3") == 3
    assert parse_value("0.5") == 0.5
    assert parse_value("true") is True
    assert parse_value("minrtt") == "minrtt"
    assert parse_value("10s") == "10s"
    assert parse_value('"3"') == "3"
    assert parse_value('["wifi"]') == ["wifi"]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"path.lte.rate": "-5Mbps"}, "path[1].rate ('lte'): rate must be > 0, got '-5Mbps'"),
        ({"path.lte.rate": "0Mbps"}, "path[1].rate ('lte'): rate must be > 0, got '0Mbps'"),
        ({"path.lte.rate_up": "0bps"}, "path[1].rate_up ('lte'): rate_up must be > 0"),
        ({"duration": "0s"}, "duration: duration must be > 0, got '0s'"),
        ({"duration": "-3s"}, "duration: duration must be > 0, got '-3s'"),
        ({"duration": 10}, "duration: bad duration 10: missing unit"),
        ({"seed": -1}, "seed: seed must be an integer >= 0, got -1"),
        ({"seed": 1.5}, "seed: seed must be an integer >= 0, got 1.5"),
        ({"path.wifi.loss": 1}, "path[0].loss ('wifi'): loss must be in [0, 1), got 1"),
        ({"path.wifi.loss": -0.1}, "path[0].loss ('wifi'): loss must be in [0, 1), got -0.1"),
        ({"path.wifi.ack_loss": 2.0}, "path[0].ack_loss ('wifi'): ack_loss must be in [0, 1)"),
        ({"path.wifi.loss": "x"}, "path[0].loss ('wifi'): loss must be a number"),
        ({"path.wifi.name": "lte"}, "path[1].name ('lte'): duplicate path name"),
        ({"path.wifi.rtt": "20 parsecs"}, "path[0].rtt ('wifi'): bad duration '20 parsecs'"),
        ({"path.wifi.rate": "30Mbsp"}, "path[0].rate ('wifi'): bad rate '30Mbsp'"),
        ({"path.wifi.queue": "5 apples"}, "path[0].queue ('wifi'): bad queue limit '5 apples'"),
        ({"path.wifi.queue": "-1pkt"}, "path[0].queue ('wifi'): queue must be >= 0"),
        ({"path.wifi.delay_up": "-1ms"}, "path[0].delay_up ('wifi'): delay_up must be >= 0"),
        ({"connection.sndbuf": "6MB6"}, "connection.sndbuf: bad size '6MB6'"),
        ({"connection.rcvbuf": "0B"}, "connection.rcvbuf: rcvbuf must be > 0, got '0B'"),
        ({"connection.rcvbuf": 0}, "connection.rcvbuf: bad size 0: missing unit (use B, KB"),
        (
            {"connection.rcvbuf": "1000B"},
            "connection.rcvbuf: 1KB is less than one segment (1448 bytes)",
        ),
        (
            {"connection.sndbuf": "1KB"},
            "connection.sndbuf: 1KB is less than one segment (1448 bytes)",
        ),
        ({"path.wifi.queue": 50}, "path[0].queue ('wifi'): bad queue limit 50: missing unit"),
        ({"connection.rcvbuf_initial": "0B"}, "connection.rcvbuf_initial: rcvbuf_initial must"),
        ({"connection.rcvbuf_autotune": "yes"}, "connection.rcvbuf_autotune: rcvbuf_autotune must"),
        ({"connection.window_ratio": 0}, "connection.window_ratio: window_ratio must be in (0, 1]"),
        ({"connection.window_ratio": 1.5}, "connection.window_ratio: window_ratio must be in (0"),
        ({"connection.window_ratio": "half"}, "connection.window_ratio: window_ratio must be a"),
        ({"connection.scheduler": "nope"}, "connection.scheduler: unknown scheduler 'nope'"),
        ({"connection.congestion": "bbr"}, "connection.congestion: unknown congestion 'bbr'"),
        ({"connection.protocol": "udp"}, "connection.protocol: unknown protocol 'udp'"),
        ({"connection.stack": "v0.92"}, "connection.stack: unknown stack 'v0.92'"),
        (
            {"connection.stack": "out-of-tree", "connection.scheduler": "linux"},
            "connection.scheduler: 'linux' is upstream Linux's scheduler and runs on stack",
        ),
        ({"connection.paths": ["wifi", "x"]}, "connection.paths[1]: unknown path 'x'"),
        ({"connection.paths": ["wifi", "wifi"]}, "connection.paths[1]: path 'wifi' is listed"),
        ({"connection.paths": []}, "connection.paths: must name at least one path"),
        ({"connection.scheduler_params.k": [1]}, "connection.scheduler_params.k: scheduler"),
        ({"workload.kind": "file"}, "workload.size: required when kind = 'file'"),
        ({"workload.size": "1MB"}, "workload.size: not allowed when kind = 'bulk'"),
        ({"workload.kind": "stream"}, "workload.kind: unknown kind 'stream'"),
        ({"connection.schedulr": "x"}, "override connection.schedulr: unknown key"),
        ({"path.wifi.bogus": 1}, "override path.wifi.bogus: unknown key"),
        ({"path.nope.rtt": "1ms"}, "override path.nope.rtt: no path named 'nope'"),
        ({"path.wifi": 1}, "override path.wifi: expected path.NAME.KEY"),
        ({"foo": 1}, "override foo: unknown key"),
        (
            {"path.wifi.schedule": [{"at": "60s", "rate": "1Mbps"}]},
            "path[0].schedule[0].at ('wifi'): must be < duration 60s, got 60s",
        ),
        (
            {"path.wifi.schedule": [{"at": "1s"}]},
            "path[0].schedule[0] ('wifi'): changes nothing",
        ),
        (
            {"path.wifi.schedule": [{"rate": "1Mbps"}]},
            "path[0].schedule[0].at ('wifi'): required",
        ),
        (
            {"path.wifi.schedule": [{"at": "1s", "rate": "1Mbps", "ratee": 1}]},
            "path[0].schedule[0].ratee ('wifi'): unknown key",
        ),
    ],
)
def test_invalid_overrides(overrides: dict[str, Any], expected: str) -> None:
    assert error(None, overrides).startswith(expected)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"path": []}, "path: at least one [[path]] table is required"),
        ({}, "path: at least one [[path]] table is required"),
        ({"path": {"name": "a"}}, "path: expected an array, got {'name': 'a'}"),
        ({"path": [{"name": "a"}]}, "path[0].rate ('a'): required"),
        ({"path": [{"rate": "1Mbps", "rtt": "1ms"}]}, "path[0].name: required"),
        ({"path": [{"name": "a.b", "rate": "1Mbps", "rtt": "1ms"}]}, "path[0].name ('a.b'): name"),
        ({"path": [{"name": "a", "rate": "1Mbps"}]}, "path[0].rtt ('a'): required"),
        ({"path": [{"name": "a", "rate": "1Mbps", "rtt": "1ms"}], "connection": 5}, "connection: "),
        (
            {"path": [{"name": "a", "rate": "1Mbps", "rtt": "1ms"}], "extra": 1},
            "extra: unknown key",
        ),
        (
            {"path": [{"name": "a", "rate": "1Mbps", "rtt": "1ms", "delay_up": "2ms"}]},
            "path[0].rtt ('a'): rtt 1ms is smaller than delay_up",
        ),
        (
            {
                "path": [
                    {
                        "name": "a",
                        "rate": "1Mbps",
                        "rtt": "30ms",
                        "delay_up": "10ms",
                        "delay_down": "10ms",
                    }
                ]
            },
            "path[0].rtt ('a'): rtt 30ms must equal delay_up + delay_down = 20ms",
        ),
        ("[connection]\nschedulr = 'x'\n" + MINIMAL, "connection.schedulr: unknown key"),
        ("duration = \n", "scenario: malformed TOML: "),
        ("[[path]\nname='a'", "scenario: malformed TOML: "),
        ("no-such-file.toml", "no-such-file.toml: no such scenario file"),
        (ROOT, "is a directory"),
        (42, "scenario: expected a file path, a TOML string or a dict, got int"),
    ],
)
def test_invalid_sources(source: Any, expected: str) -> None:
    assert expected in error(source)


def test_several_errors_are_counted_on_one_line() -> None:
    message = error({"path": [{"name": "a", "rate": "0bps", "rtt": "-1ms"}]})
    assert message == "path[0].rate ('a'): rate must be > 0, got '0bps' (and 1 more error)"


def test_a_rate_limited_application() -> None:
    text = MINIMAL + '[workload]\nkind = "rate"\nrate = "1875kbps"\nwarmup = "5s"\n'
    assert to_native(load(text))["workload"] == {
        "kind": "rate",
        "rate_bps": 1_875_000,
        "block_bytes": 8192,
        "warmup_ns": 5_000_000_000,
    }
    assert error(text, {"workload.rate": None}).startswith("workload.rate: required")
    assert error(text, {"workload.size": "1MB"}).startswith("workload.size: not allowed")
    assert error(text, {"workload.block": "0B"}).startswith("workload.block")
    assert error(text, {"workload.warmup": "2min"}).startswith("workload.warmup: must be shorter")
    bulk = MINIMAL + '[workload]\nkind = "bulk"\nrate = "1Mbps"\n'
    assert error(bulk).startswith("workload.rate: only for kind = 'rate'")


def test_bursty_loss_of_each_direction() -> None:
    raw = {
        "path": [
            {"name": "a", "rate": "10Mbps", "rtt": "20ms", "loss": 0.01, "loss_burst": 10},
            {
                "name": "b",
                "rate": "10Mbps",
                "rtt": "20ms",
                "ack_gilbert_elliott": {"p": 0.001, "r": 0.2, "loss_bad": 0.5},
            },
        ]
    }
    a, b = to_native(load(raw))["paths"]
    assert a["down"]["loss"] == 0.01 and a["down"]["loss_burst"] == 10.0
    assert "loss_burst" not in a["up"] and "gilbert_elliott" not in a["down"]
    assert b["up"]["gilbert_elliott"] == {"p": 0.001, "r": 0.2, "loss_good": 0.0, "loss_bad": 0.5}


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"loss_burst": 0.5}, "path[0].loss_burst ('a'): loss_burst must be >= 1"),
        ({"loss": 0.6, "loss_burst": 1.2}, "needs bursts of at least 1.500 packets"),
        ({"loss": 0.01, "gilbert_elliott": {"p": 0.1, "r": 0.5}}, "replaces loss and loss_burst"),
        ({"gilbert_elliott": {"p": 0.1, "r": 0.0}}, "gilbert_elliott.r ('a'): must be > 0"),
        ({"gilbert_elliott": {"p": 1.5, "r": 0.1}}, "p must be in [0, 1]"),
        ({"ack_gilbert_elliott": {"p": 0.1}}, "ack_gilbert_elliott.r"),
    ],
)
def test_bad_loss_settings_name_the_key(keys: dict[str, Any], message: str) -> None:
    path = {"name": "a", "rate": "10Mbps", "rtt": "20ms", **keys}
    with pytest.raises(ScenarioError) as err:
        load({"path": [path]})
    assert message in str(err.value)


def test_trace_files_are_read_from_the_scenario_s_folder() -> None:
    from mpsched import mahimahi

    config = to_native(load(SCENARIOS / "lte-trace.toml"))
    lte = config["paths"][1]
    shipped = mahimahi.read(SCENARIOS / "traces" / "lte-steps.trace")
    assert lte["down"]["trace_ms"] == shipped
    assert lte["down"]["rate_bps"] == mahimahi.mean_rate_bps(shipped)
    assert "trace_ms" not in lte["up"] and lte["up"]["rate_bps"] == 10_000_000


def test_the_shipped_traces_are_what_the_generator_writes(tmp_path: Path) -> None:
    from mpsched import mahimahi

    assert mahimahi.main([str(tmp_path)]) == 0
    for name in mahimahi.SHIPPED:
        assert (tmp_path / name).read_text() == (SCENARIOS / "traces" / name).read_text(), name
    # The built-in experiments ship their own copy.
    shipped = ROOT / "python" / "mpsched" / "experiments" / "traces" / "lte-steps.trace"
    assert shipped.read_text() == (tmp_path / "lte-steps.trace").read_text()
    # The constant trace is 12.032 Mbit/s; the stepped one averages its four steps.
    assert mahimahi.mean_rate_bps(mahimahi.read(tmp_path / "constant-12mbps.trace")) == 12_032_000
    steps = mahimahi.mean_rate_bps(mahimahi.read(tmp_path / "lte-steps.trace"))
    assert abs(steps - 11_250_000) < 20_000


@pytest.mark.parametrize(
    ("text", "keys", "message"),
    [
        ("1\n2\nx\n", {}, "path[0].trace ('a'): {file} line 3: expected milliseconds, got 'x'"),
        ("5\n3\n", {}, "line 2: 3 ms comes after 5 ms"),
        ("0\n", {}, "no opportunity after 0 ms"),
        ("1\n2\n", {"schedule": [{"at": "1s", "rate": "5Mbps"}]}, "the path's trace sets"),
    ],
)
def test_bad_traces_name_the_key_the_file_and_the_line(
    tmp_path: Path, text: str, keys: dict[str, Any], message: str
) -> None:
    file = tmp_path / "bad.trace"
    file.write_text(text)
    path = {"name": "a", "rtt": "20ms", "rate": "10Mbps", "trace": str(file), **keys}
    with pytest.raises(ScenarioError) as err:
        load({"path": [path]})
    assert message.format(file=file) in str(err.value)


def test_a_path_without_rate_needs_traces_both_ways() -> None:
    with pytest.raises(ScenarioError) as err:
        load({"path": [{"name": "a", "rtt": "20ms"}]})
    assert "path[0].rate ('a'): required (or trace and trace_up)" in str(err.value)


SHARED = {
    "connection": {"paths": ["a", "b"]},
    "link": [{"name": "dsl", "rate": "20Mbps", "rtt": "10ms", "queue": "20ms"}],
    "path": [
        {"name": "a", "rate": "100Mbps", "rtt": "4ms", "via": ["dsl"]},
        {"name": "b", "rate": "50Mbps", "rtt": "60ms"},
    ],
}


def test_shared_links_become_the_native_links_and_paths_name_them_by_index() -> None:
    config = to_native(load(SHARED))
    (dsl,) = config["links"]
    assert dsl["name"] == "dsl"
    assert dsl["down"]["rate_bps"] == 20_000_000 and dsl["up"]["delay_ns"] == 5_000_000
    assert dsl["down"]["queue"] == {"time_ns": 20_000_000}
    assert config["paths"][0]["via"] == [0]
    # A path of its own keeps the normalized form it always had.
    assert "via" not in config["paths"][1]
    assert "links" not in to_native(load(MINIMAL))


def test_a_shared_link_is_set_by_name() -> None:
    config = to_native(load(SHARED, {"link.dsl.rate": "5Mbps"}))
    assert config["links"][0]["down"]["rate_bps"] == 5_000_000
    with pytest.raises(ScenarioError, match="no link named 'adsl' \\(links: dsl\\)"):
        load(SHARED, {"link.adsl.rate": "5Mbps"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"via": ["adsl"]}, "path[0].via[0] ('a'): unknown link 'adsl' ([[link]]s: dsl)"),
        ({"via": ["dsl", "dsl"]}, "path[0].via[1] ('a'): link 'dsl' is listed twice"),
        ({"via": "dsl"}, "via"),
    ],
)
def test_bad_vias_name_the_path_and_the_entry(change: dict[str, Any], message: str) -> None:
    raw = {**SHARED, "path": [{**SHARED["path"][0], **change}, SHARED["path"][1]]}
    with pytest.raises(ScenarioError) as err:
        load(raw)
    assert message in str(err.value)


def test_bad_shared_links_name_the_link() -> None:
    twice = {**SHARED, "link": SHARED["link"] * 2}
    with pytest.raises(ScenarioError, match=r"link\[1\]\.name \('dsl'\): duplicate link name"):
        load(twice)
    no_rtt = {**SHARED, "link": [{"name": "dsl", "rate": "20Mbps"}]}
    with pytest.raises(ScenarioError, match=r"link\[0\]\.rtt \('dsl'\): required"):
        load(no_rtt)


def test_a_gone_address_and_its_return_are_native_present_changes() -> None:
    raw = {
        "path": [
            {"name": "wifi", "rate": "10Mbps", "rtt": "20ms"},
            {
                "name": "lte",
                "rate": "10Mbps",
                "rtt": "60ms",
                "schedule": [
                    {"at": "8s", "state": "up"},
                    {"at": "2s", "state": "gone"},
                    {"at": "0s", "state": "down"},
                    {"at": "1s", "state": "up"},
                ],
            },
        ]
    }
    changes = to_native(load(raw))["paths"][1]["schedule"]
    states = [(c["at_ns"] // 10**9, c.get("up"), c.get("present")) for c in changes]
    # `up` after `down` only restores the link; after `gone` the address too.
    assert states == [(0, False, None), (1, True, None), (2, None, False), (8, True, True)]


@pytest.mark.parametrize(
    ("first", "lte", "message"),
    [
        (
            [{"at": "0s", "state": "gone"}],
            [],
            "path[0].schedule[0].state ('wifi'): the connection opens on its first path",
        ),
        ([], [{"at": "1s", "state": "gone"}, {"at": "2s", "state": "gone"}], "already gone"),
        ([], [{"at": "1s", "state": "gone"}, {"at": "2s", "state": "down"}], "`up` brings it"),
    ],
)
def test_bad_address_changes_name_the_entry(
    first: list[dict[str, str]], lte: list[dict[str, str]], message: str
) -> None:
    raw = {
        "path": [
            {"name": "wifi", "rate": "10Mbps", "rtt": "20ms", "schedule": first},
            {"name": "lte", "rate": "10Mbps", "rtt": "60ms", "schedule": lte},
        ]
    }
    with pytest.raises(ScenarioError) as err:
        load(raw)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("native", "toml"),
    [
        ("paths[0].down.jitter_ns: must be >= 0", "path[0].jitter: must be >= 0"),
        (
            "paths[1].up.loss: must be in [0, 1), got 2",
            "path[1].ack_loss: must be in [0, 1), got 2",
        ),
        ("paths[1].up.rate_bps: must be > 0", "path[1].rate_up: must be > 0"),
        ("paths[0].schedule[2].rate_bps: must be > 0", "path[0].schedule[2].rate: must be > 0"),
        ("links[0].down.queue: bad", "link[0].queue: bad"),
        ("paths[2].via[0]: no shared link 3", "path[2].via[0]: no shared link 3"),
        ("flows[3].size_bytes: must be > 0", "flow[3].size: must be > 0"),
        ("duration_ns: must be > 0", "duration: must be > 0"),
        ("write_chunk_bytes: must be > 0", "workload.write_chunk: must be > 0"),
        ("workload.block_bytes: must be in 1..=1 GiB", "workload.block: must be in 1..=1 GiB"),
    ],
)
def test_a_message_from_the_core_names_the_scenario_file_s_key(native: str, toml: str) -> None:
    from mpsched.errors import toml_keys

    assert toml_keys(native) == toml

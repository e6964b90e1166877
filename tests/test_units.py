from __future__ import annotations

import re

import pytest

from mpsched.units import (
    QueueLimit,
    UnitError,
    format_bytes,
    format_duration,
    format_rate,
    parse_duration,
    parse_queue,
    parse_rate,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("60s", 60 * 10**9),
        ("20ms", 20 * 10**6),
        ("500us", 500_000),
        ("500µs", 500_000),
        ("1.5s", 1_500_000_000),
        ("100ns", 100),
        ("2min", 120 * 10**9),
        ("1h", 3600 * 10**9),
        (" 7 ms ", 7 * 10**6),
        ("1e3ms", 10**9),
        ("0s", 0),
        ("-5s", -5 * 10**9),
    ],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("30KB", 30_000),
        ("30kB", 30_000),
        ("6MiB", 6 * 2**20),
        ("1500B", 1500),
        ("1.5MB", 1_500_000),
        ("1GB", 10**9),
        ("4KiB", 4096),
        ("30 KB", 30_000),
    ],
)
def test_sizes(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("30Mbps", 30_000_000),
        ("1Gbps", 10**9),
        ("500kbps", 500_000),
        ("100bps", 100),
        ("30Mbit/s", 30_000_000),
        ("2.5Mbps", 2_500_000),
        ("-5Mbps", -5_000_000),
    ],
)
def test_rates(text: str, bps: int) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("30KB", QueueLimit("bytes", 30_000)),
        ("100pkt", QueueLimit("packets", 100)),
        ("100 packets", QueueLimit("packets", 100)),
        ("50ms", QueueLimit("time_ns", 50_000_000)),
    ],
)
def test_queue_limits(text: str | int, limit: QueueLimit) -> None:
    assert parse_queue(text) == limit
    assert limit.to_native() == {limit.kind: limit.value}


@pytest.mark.parametrize(
    ("parse", "value", "fragment"),
    [
        (parse_duration, "20 parsecs", "unknown unit 'parsecs'"),
        (parse_duration, "20", "missing unit"),
        (parse_duration, 20, "missing unit"),
        (parse_duration, "fast", "expected a number and a unit"),
        (parse_size, "30KiBB", "unknown unit"),
        (parse_size, "1.5B", "not a whole number of bytes"),
        (parse_size, True, "bad size True"),
        (parse_rate, "30MBps", "unknown unit 'MBps'"),
        (parse_rate, "30", "missing unit"),
        (parse_rate, float("nan"), "not a finite number"),
        (parse_queue, "10 apples", "unknown unit 'apples'"),
        (parse_queue, "1.5pkt", "whole number of packets"),
        (parse_queue, [1], "expected a string"),
    ],
)
def test_bad_units_name_the_value(parse, value: object, fragment: str) -> None:
    with pytest.raises(UnitError) as info:
        parse(value)
    message = str(info.value)
    assert fragment in message
    assert repr(value) in message
    assert "\n" not in message


def test_formatting() -> None:
    assert format_duration(20_000_000) == "20ms"
    assert format_duration(1_500_000_000) == "1.5s"
    assert format_duration(999) == "999ns"
    assert format_bytes(30_000) == "30KB"
    assert format_rate(30_000_000) == "30Mbps"
    assert str(QueueLimit("packets", 100)) == "100pkt"


@pytest.mark.parametrize(
    ("parse", "value", "message"),
    [
        (parse_size, 1500, "bad size 1500: missing unit (use B, KB"),
        (parse_size, "1500", "missing unit"),
        (parse_size, "50mb", "did you mean 'MB'?"),
        (parse_rate, "30mbps", "did you mean 'Mbps'?"),
        (parse_rate, 30, "missing unit"),
        (parse_duration, 60, "missing unit"),
        (parse_duration, "20MS", "did you mean 'ms'?"),
        (parse_queue, 50, "bad queue limit 50: missing unit (use a size such as 30KB"),
    ],
)
def test_a_quantity_needs_its_unit_in_its_case(parse, value, message: str) -> None:
    """Every size, rate and duration needs its unit; case carries meaning (m milli, M mega; b
    bit, B byte), so a wrong case is an error that suggests the spelling meant."""
    with pytest.raises(UnitError, match=re.escape(message)):
        parse(value)


def test_a_space_between_number_and_unit_is_accepted() -> None:
    assert parse_rate("30 Mbps") == parse_rate("30Mbps") == 30_000_000

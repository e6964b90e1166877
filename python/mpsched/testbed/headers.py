"""The emulator's header traces (``mpsched emulate --trace-headers``) as Arrow tables: the
client's windows and Data ACKs, the server's data mappings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEADER_TRACE_ROWS", "header_tables", "pop_headers"]

# Rows of the header trace per link: every packet of 100 Mbit/s for 10 minutes.
HEADER_TRACE_ROWS = 5_000_000

# The emulator's mark for a packet without the field (no Data ACK, no mapping): u64::MAX.
_ABSENT = 2**64 - 1


def pop_headers(report: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """Takes the links' header traces out of the emulator's report: (path, direction, trace)."""
    out = []
    for thread in report.get("threads", []):
        for link in thread.get("links", []):
            trace = link.pop("headers", None)
            if trace is not None:
                out.append((int(link["path"]), str(link["direction"]), trace))
    return out


def _unwrap(values: list[tuple[int, bool] | None]) -> list[int | None]:
    """Data-level sequence numbers relative to the first one, 32-bit ones extended to 64 bits
    as the nearest to the previous value (RFC 8684 3.3.1); None stays None."""
    base: int | None = None
    last = 0
    out: list[int | None] = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        value, wide = v
        if not wide:
            full = (last & ~0xFFFFFFFF) | value
            if full < last - 2**31:
                full += 2**32
            elif full > last + 2**31 and full >= 2**32:
                full -= 2**32
            value = full
        if base is None:
            base = value
        last = value
        out.append(value - base)
    return out


def header_tables(
    headers: list[tuple[int, str, dict[str, Any]]], config: Mapping[str, Any]
) -> tuple[Any, Any]:
    """The header traces as two Arrow tables, rows in time order (``t_ns`` since the epoch).

    ``windows`` (the client's segments, up links): ``t_ns``, ``path``, ``window_bytes``
    (scaled), ``data_ack_bytes`` (the MPTCP Data ACK relative to the first one; null without
    one) and ``right_edge_bytes`` (``data_ack_bytes + window_bytes``, what the simulator's
    ``rwnd_bytes`` adds to its Data ACK). ``data`` (the server's segments with payload, down
    links): ``t_ns``, ``path``, ``dsn_bytes`` (the mapping's data sequence number relative to
    the first one; null without a mapping) and ``payload_bytes``.
    """
    import pyarrow as pa

    names = [p["name"] for p in config["paths"]]

    def rows(direction: str, key: str, wide_key: str) -> list[tuple[Any, ...]]:
        out = []
        for path, d, tr in headers:
            if d != direction:
                continue
            for i, t in enumerate(tr["t_ns"]):
                v = tr[key][i]
                out.append(
                    (
                        t,
                        names[path],
                        tr["window_bytes"][i],
                        tr["payload_len"][i],
                        None if v == _ABSENT else (v, tr[wide_key][i]),
                    )
                )
        out.sort(key=lambda r: r[0])
        return out

    up = rows("up", "data_ack", "data_ack_wide")
    data_ack = _unwrap([r[4] for r in up])
    windows = pa.table(
        {
            "t_ns": pa.array([r[0] for r in up], pa.int64()),
            "path": pa.array([r[1] for r in up], pa.string()),
            "window_bytes": pa.array([r[2] for r in up], pa.int64()),
            "data_ack_bytes": pa.array(data_ack, pa.int64()),
            "right_edge_bytes": pa.array(
                [None if d is None else d + r[2] for d, r in zip(data_ack, up, strict=True)],
                pa.int64(),
            ),
        }
    )
    down = [r for r in rows("down", "dsn", "dsn_wide") if r[3] > 0]
    data = pa.table(
        {
            "t_ns": pa.array([r[0] for r in down], pa.int64()),
            "path": pa.array([r[1] for r in down], pa.string()),
            "dsn_bytes": pa.array(_unwrap([r[4] for r in down]), pa.int64()),
            "payload_bytes": pa.array([r[3] for r in down], pa.int64()),
        }
    )
    return windows, data

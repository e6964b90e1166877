"""The schedulers over real networks: the multipath transport over UDP (crates/mpsched-udp,
docs/wire.md) from Python, beside :func:`mpsched.run`.

>>> import mpsched
>>> summary = mpsched.get("server:4433", paths=["192.168.1.20", "172.20.10.2"],
...                       save="big.iso", out="runs/big")  # doctest: +SKIP
>>> summary["goodput_mbps"], summary["sha256"]  # doctest: +SKIP

Both ends need the same pre-shared secret (at least 32 bytes): ``secret=``, else the
environment variable ``MPSCHED_SECRET``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _native
from .errors import ScenarioError
from .scheduler import is_reference
from .scheduler import load as load_scheduler
from .units import parse_duration, parse_size

__all__ = ["SECRET_ENV", "get", "serve"]

SECRET_ENV = "MPSCHED_SECRET"  # noqa: S105 (the variable's name, not a secret)

Progress = Callable[[int, "int | None", list[int]], object]


def secret_from(key_file: str | Path | None = None) -> bytes:
    """The pre-shared secret: the key file's bytes, else $MPSCHED_SECRET."""
    if key_file is not None:
        try:
            return Path(key_file).read_bytes().strip()
        except OSError as exc:
            raise ScenarioError(f"--key-file: {exc}") from exc
    value = os.environ.get(SECRET_ENV)
    if not value:
        raise ScenarioError(
            f"no secret: give --key-file FILE (Python: secret=) or set {SECRET_ENV} (the same "
            "on both ends, at "
            "least 32 bytes, e.g. `head -c 32 /dev/urandom | base64`)"
        )
    return value.encode()


def _quantity(field: str, parse: Callable[[object], int], value: str | int) -> int:
    """``value`` parsed, or one line naming the field."""
    try:
        return int(parse(value))
    except ValueError as exc:
        raise ScenarioError(f"{field}: {exc}") from exc


def _native_call(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from exc


def _secret(secret: bytes | str | None) -> bytes:
    if secret is None:
        return secret_from()
    return secret.encode() if isinstance(secret, str) else secret


def get(
    server: str,
    paths: Sequence[str] = (),
    *,
    secret: bytes | str | None = None,
    save: str | Path | None = None,
    out: str | Path | None = None,
    rcvbuf: str | int = "6MiB",
    duration: str | int | None = None,
    progress: Progress | None = None,
    aead: str | None = None,
    ack_every: int | None = None,
) -> dict[str, Any]:
    """Download from an ``mpsched serve`` at ``server`` (host:port) over one path per local
    address in ``paths`` (one unbound path if empty); returns the summary (goodput, bytes per
    path with the server's counters, out-of-order delay, SHA-256, dropped datagrams, a 100-ms
    timeline).

    ``save``: write the bytes there. ``out``: a run directory as ``mpsched run --out`` writes
    it: ``summary.json`` and the trace tables the client sees (``segments`` and
    ``connection``; their sending columns are null, they are the server's). ``duration``:
    stop after it (an endless stream). ``progress(bytes, total, bytes per path)`` is called
    about every 100 ms. Ctrl-C stops the download; the summary then has ``interrupted``.
    ``aead``: offer only this suite (``aes-128-gcm``, ``chacha20-poly1305``; else the server
    picks the fastest both ends run; the summary's ``aead`` names it). ``ack_every``: ACK
    every N in-order segments (QUIC's ACK_FREQUENCY) instead of Linux's every second one.
    """
    locals_ = [p if ":" in p.rsplit("]", 1)[-1] else f"{p}:0" for p in paths] or ["0.0.0.0:0"]
    text, traces = _native_call(
        _native.udp_get,
        server,
        locals_,
        _secret(secret),
        str(save) if save is not None else None,
        _quantity("rcvbuf", parse_size, rcvbuf),
        progress,
        _quantity("duration", parse_duration, duration) / 1e9 if duration is not None else None,
        out is not None,
        aead,
        ack_every,
    )
    summary: dict[str, Any] = json.loads(text)
    if out is not None:
        _write_run(Path(out), summary, traces or {})
    return summary


def _write_run(out: Path, summary: Mapping[str, Any], traces: Mapping[str, Any]) -> None:
    import pyarrow.parquet as pq

    from .traces import partial_table, write_json

    try:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "summary.json", summary)
        for name, columns in traces.items():
            pq.write_table(partial_table(name, columns), out / f"{name}.parquet")
    except OSError as exc:
        raise ScenarioError(f"out: {exc}") from exc


def serve(
    file: str | Path | None = None,
    *,
    bind: str = "0.0.0.0:4433",
    size: str | int | None = None,
    scheduler: str = "linux",
    params: Mapping[str, object] | None = None,
    congestion: str = "cubic",
    sndbuf: str | int = "6MiB",
    secret: bytes | str | None = None,
    aead: str | None = None,
) -> dict[str, Any]:
    """Serve ``file`` (or ``size`` generated bytes; an endless stream if neither) to
    :func:`get` clients until Ctrl-C; returns the datagrams dropped by reason, the scheduler's
    decisions and their mean cost in real time (``decision_us``).

    ``scheduler``: a registered name or one written in Python (``FILE.py:Class`` or
    ``module:Class``, run in this process, one instance per connection). ``aead``: take
    only this suite (else the fastest both ends run).
    """
    total = _quantity("size", parse_size, size) if size is not None else None
    if file is not None and total is not None:
        raise ScenarioError("size: give a file or a size, not both")
    pairs = [(str(k), str(v)) for k, v in (params or {}).items()]
    instance = load_scheduler(scheduler) if is_reference(scheduler) else None
    return json.loads(
        _native_call(
            _native.udp_serve,
            bind,
            _secret(secret),
            str(file) if file is not None else None,
            total,
            "linux" if instance is not None else scheduler,
            pairs,
            congestion,
            _quantity("sndbuf", parse_size, sndbuf),
            instance,
            aead,
        )
    )

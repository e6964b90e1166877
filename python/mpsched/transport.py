"""The schedulers over real networks: the multipath transport over UDP (crates/mpsched-udp,
docs/wire.md) from Python, beside :func:`mpsched.run`.

>>> import mpsched
>>> summary = mpsched.get("server:4433", paths=["192.168.1.20", "172.20.10.2"],
...                       save="big.iso", out="runs/big")  # doctest: +SKIP
>>> summary["goodput_mbps"], summary["sha256"]  # doctest: +SKIP

Both ends need the same pre-shared secret: 32 random bytes in base64 (or hex), as
``mpsched keygen`` prints them: ``secret=``, a key file only its owner may read, or the
environment variable ``MPSCHED_SECRET``. The secret is a group credential: whoever holds it can
act as the server or as any client.
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

__all__ = ["SECRET_ENV", "get", "keygen", "serve"]

SECRET_ENV = "MPSCHED_SECRET"  # noqa: S105 (the variable's name, not a secret)

Progress = Callable[[int, "int | None", list[int]], object]


def keygen() -> str:
    """A new secret: 32 random bytes in base64 (``mpsched keygen``)."""
    return str(_native.udp_keygen())


def secret_from(key_file: str | Path | None = None) -> bytes:
    """The pre-shared secret, checked: the key file's content (a file group or others may
    read is refused, as ssh refuses such keys), else $MPSCHED_SECRET."""
    if key_file is not None:
        try:
            value = Path(key_file).read_bytes().strip()
        except OSError as exc:
            raise ScenarioError(f"--key-file: {exc}") from exc
        _native_call(_native.udp_check_secret, value, str(key_file))
        return value
    env = os.environ.get(SECRET_ENV)
    if not env:
        raise ScenarioError(
            f"no secret: give --key-file FILE (Python: secret=) or set {SECRET_ENV} (the same "
            "on both ends: 32 random bytes in base64, as `mpsched keygen` prints them)"
        )
    value = env.encode()
    _native_call(_native.udp_check_secret, value)
    return value


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
    value = secret.encode() if isinstance(secret, str) else secret
    _native_call(_native.udp_check_secret, value)
    return value


def _seconds(field: str, value: str | float) -> float:
    if isinstance(value, int | float):
        return float(value)
    return _quantity(field, parse_duration, value) / 1e9


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
    resume: bool = False,
    idle_timeout: str | float = 30.0,
) -> dict[str, Any]:
    """Download from an ``mpsched serve`` at ``server`` (host:port) over one path per local
    address in ``paths`` (one unbound path if empty); returns the summary (goodput, bytes per
    path with the server's counters, out-of-order delay, SHA-256, dropped datagrams, a 100-ms
    timeline).

    ``save``: write the bytes to ``save``: to ``SAVE.part`` until the stream is whole, then
    renamed; a download that stops short keeps ``SAVE.part`` (the summary's ``kept``) and
    ``resume=True`` continues it (the server sends from its length on; the SHA-256 covers the
    whole file). ``idle_timeout`` (seconds or e.g. ``"30s"``): the longest silence the
    connection survives; the summary's ``error`` then says why it ended. ``out``: a run
    directory as ``mpsched run --out`` writes
    it: ``summary.json`` and the trace tables the client sees (``segments`` and
    ``connection``; their sending columns are null, they are the server's). ``duration``:
    stop after it (an endless stream). ``progress(bytes, total, bytes per path)`` is called
    about every 100 ms. Ctrl-C stops the download; the summary then has ``interrupted``.
    ``aead``: offer only this suite (``aes-128-gcm``, ``chacha20-poly1305``; else the server
    picks the fastest both ends run; the summary's ``aead`` names it). ``ack_every``: ACK
    every N in-order segments (QUIC's ACK_FREQUENCY) instead of Linux's every second one.
    """
    locals_ = [_local(p) for p in paths] or ["0.0.0.0:0"]
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
        resume,
        _seconds("idle_timeout", idle_timeout),
    )
    summary: dict[str, Any] = json.loads(text)
    if out is not None:
        _write_run(Path(out), summary, traces or {})
    return summary


def _local(path: str) -> str:
    """A path's local address with port 0 unless it has one (IPv6 in brackets, or bare)."""
    if path.startswith("["):
        return path if "]:" in path else f"{path}:0"
    if path.count(":") > 1:
        return f"[{path}]:0"
    return path if ":" in path else f"{path}:0"


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
    idle_timeout: str | float = 30.0,
    ready: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Serve ``file`` (or ``size`` generated bytes; an endless stream if neither) to
    :func:`get` clients until Ctrl-C; returns the datagrams dropped by reason, the scheduler's
    decisions and their mean cost in real time (``decision_us``).

    ``scheduler``: a registered name or one written in Python (``FILE.py:Class`` or
    ``module:Class``, run in this process, one instance per connection). ``aead``: take
    only this suite (else the fastest both ends run). ``ready(address)`` is called once
    everything is checked and the socket bound. ``idle_timeout``: a connection silent this
    long is forgotten (the client may ask for less).
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
            _seconds("idle_timeout", idle_timeout),
            ready,
        )
    )

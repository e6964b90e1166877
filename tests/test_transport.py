"""`mpsched serve` and `mpsched get`: the real transport over UDP on this machine's loopback,
and the ways a download ends short (killed, restarted or wrong server, Ctrl-C, --duration)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ctrl_c_reaches

SECRET = "cmHYWoAxRSHq1/LDZvbbapUM61xl+Zp1EGiHoVLrm5s="  # `mpsched keygen`
MPSCHED = [sys.executable, "-m", "mpsched"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(server: subprocess.Popen[str], timeout: float = 10) -> str:
    """Ctrl-C to a server, and its stderr; killed (and the test failed) if it does not stop."""
    server.send_signal(signal.SIGINT)
    try:
        _, err = server.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        pytest.fail("mpsched serve did not stop on SIGINT")
    return err


def _env() -> dict[str, str]:
    return {**os.environ, "MPSCHED_SECRET": SECRET}


def _serve(port: int, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`mpsched serve ARGS` on 127.0.0.1:port, once it says it serves (it has bound)."""
    server = subprocess.Popen(
        [*MPSCHED, "serve", *args, "--bind", f"127.0.0.1:{port}"],
        env=env or _env(),
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches,  # noqa: PLW1509
    )
    line = _line(server, 30)
    if not line.startswith("serving"):
        server.kill()
        _, err = server.communicate()
        pytest.fail(f"mpsched serve did not start: {line}{err}")
    return server


def _line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line of a process's stderr, waited for until ``timeout``."""
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], timeout)
    if not ready:
        proc.kill()
        pytest.fail(f"no line from {proc.args} within {timeout} s")
    return proc.stderr.readline()


def _get(port: int, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`mpsched get 127.0.0.1:port ARGS`."""
    return subprocess.run(
        [*MPSCHED, "get", f"127.0.0.1:{port}", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def served_file(tmp_path: Path):
    data = os.urandom(20_000_000)
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    port = _free_port()
    server = _serve(port, str(path), "--scheduler", "stms-c")
    yield port, hashlib.sha256(data).hexdigest()
    err = _stop(server)
    assert server.returncode == 0, err
    assert "datagrams dropped" in err and "scheduler decisions" in err


def test_a_file_arrives_over_two_paths_with_its_hash(served_file, tmp_path: Path) -> None:
    port, sha = served_file
    out = tmp_path / "got.bin"
    done = _get(port, "--path", "127.0.0.1", "--path", "127.0.0.2", "--save", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["complete"] and summary["bytes"] == 20_000_000
    assert summary["sha256"] == sha == hashlib.sha256(out.read_bytes()).hexdigest()
    assert all(sf["bytes_received"] > 0 for sf in summary["subflows"]), summary
    assert summary["drops"] == {"malformed": 0, "unauthenticated": 0, "replayed": 0}
    # `mpsched run`'s fields: the client's (in-order delivery) and the server's counters.
    assert summary["bytes_delivered"] == 20_000_000 and summary["completion_s"] > 0
    assert set(summary["ooo_delay_ms"]) == {"mean", "p50", "p99", "max"}
    for sf in summary["subflows"]:
        assert sf["packets_sent"] > 0 and sf["srtt_ms"] > 0 and sf["rtos"] >= 0, sf
    sent = sum(sf["bytes_sent"] for sf in summary["subflows"])
    assert 20_000_000 <= sent < 1.2 * 20_000_000


def test_the_python_api_writes_the_clients_trace_tables(served_file, tmp_path: Path) -> None:
    import numpy as np
    import pyarrow.parquet as pq

    import mpsched
    from mpsched.traces import TABLES, load_run

    port, sha = served_file
    run_dir = tmp_path / "run"
    summary = mpsched.get(
        f"127.0.0.1:{port}", ["127.0.0.1", "127.0.0.2"], secret=SECRET, out=run_dir
    )
    assert summary["complete"] and summary["sha256"] == sha
    assert load_run(run_dir).summary == summary
    segments = pq.read_table(run_dir / "segments.parquet")
    assert segments.column_names == [c.name for c in TABLES["segments"][1]]
    seg = segments.to_pandas()
    # One row per 1,424-byte segment in data order, the last one short.
    assert len(seg) == -(-20_000_000 // 1424)
    assert seg["len_bytes"].sum() == 20_000_000
    assert (np.diff(seg["dseq"]) == 1).all() and (np.diff(seg["t_delivered_ns"]) >= 0).all()
    assert (seg["ooo_delay_ns"] == seg["t_delivered_ns"] - seg["t_first_received_ns"]).all()
    assert set(seg["subflow"]) == {0, 1}
    # The sending columns are the server's: null here, not made up.
    assert segments.column("t_first_sent_ns").null_count == len(seg)
    assert segments.column("transmissions").null_count == len(seg)
    conn = pq.read_table(run_dir / "connection.parquet").to_pandas()
    assert len(conn) >= 1 and conn["bytes_delivered"].is_monotonic_increasing
    assert conn["sndbuf_bytes"].isna().all() and (conn["rcvbuf_bytes"] > 0).all()


def test_without_a_secret_the_commands_say_how_to_give_one() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MPSCHED_SECRET"}
    done = subprocess.run(
        [*MPSCHED, "get", "127.0.0.1:9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "MPSCHED_SECRET" in done.stderr and "--key-file" in done.stderr
    short = {**env, "MPSCHED_SECRET": "short"}
    done = subprocess.run(
        [*MPSCHED, "serve", "--bind", "127.0.0.1:0"],
        env=short,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2 and "mpsched keygen" in done.stderr, done.stderr
    assert "serving" not in done.stderr, "checked before it says it serves"


def test_a_scheduler_written_in_python_serves_a_transfer_and_its_cost_is_reported() -> None:
    port = _free_port()
    server = _serve(port, "--size", "20MB", "--scheduler", "mpsched.scheduler:MinRtt")
    done = _get(port, "--path", "127.0.0.1", "--path", "127.0.0.2", "--json", timeout=120)
    err = _stop(server)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["complete"]
    # "stopped; 14,153 scheduler decisions, 3.10 us each in real time; ..."
    decisions, cost = re.search(r"([\d,]+) scheduler decisions, ([\d.]+) us each", err).groups()
    assert int(decisions.replace(",", "")) >= 20_000_000 // 1424
    assert 0 < float(cost) < 1000, err


def test_a_python_scheduler_that_raises_stops_serve_with_its_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "class Broken:\n    def next(self, ctx):\n        raise RuntimeError('no idea where')\n"
    )
    port = _free_port()
    server = _serve(port, "--size", "5MB", "--scheduler", f"{bad}:Broken")
    _get(port, "--duration", "3s", "--json")
    try:
        _, err = server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        pytest.fail("mpsched serve went on after its scheduler raised")
    assert server.returncode == 2, err
    assert "connection.scheduler: Broken" in err and "no idea where" in err, err


def test_each_aead_suite_carries_a_transfer_and_get_names_it() -> None:
    port = _free_port()
    server = _serve(port, "--size", "5MB")
    try:
        for suite in ("chacha20-poly1305", "aes-128-gcm"):
            done = _get(port, "--aead", suite, "--ack-every", "16", "--json")
            assert done.returncode == 0, done.stderr
            summary = json.loads(done.stdout)
            assert summary["complete"] and summary["aead"] == suite, summary
        shown = _get(port)
        assert shown.returncode == 0 and "  aead " in shown.stdout, shown.stdout
    finally:
        _stop(server)


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        [*MPSCHED, *args],
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_keygen_makes_a_secret_both_ends_accept_and_key_files_must_be_private(
    tmp_path: Path,
) -> None:
    done = _cli("keygen")
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert len(key) == 44 and key != _cli("keygen").stdout.strip()
    key_file = tmp_path / "key"
    key_file.write_text(key + "\n")
    key_file.chmod(0o644)
    port = _free_port()
    refused = _cli("serve", "--bind", f"127.0.0.1:{port}", "--key-file", str(key_file))
    assert refused.returncode == 2
    assert "permissions 0644 are too open" in refused.stderr and "chmod 600" in refused.stderr
    assert "serving" not in refused.stderr
    key_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "MPSCHED_SECRET"}
    server = _serve(port, "--size", "3MB", "--key-file", str(key_file), env=env)
    try:
        got = _cli("get", f"127.0.0.1:{port}", "--key-file", str(key_file), "--json", env=env)
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["complete"]
    finally:
        _stop(server)


def test_serve_stops_on_sigterm_where_sigint_is_ignored() -> None:
    """A shell without job control starts its background jobs with SIGINT ignored; they keep
    it so. `mpsched serve` stops on SIGTERM all the same, and reports."""
    port = _free_port()
    server = subprocess.Popen(
        [*MPSCHED, "serve", "--size", "1MB", "--bind", f"127.0.0.1:{port}"],
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509
    )
    assert _line(server, 30).startswith("serving")
    server.send_signal(signal.SIGTERM)
    try:
        _, err = server.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        pytest.fail("mpsched serve did not stop on SIGTERM")
    assert server.returncode == 0, err
    assert "stopped;" in err and "datagrams dropped" in err, err


def test_the_transport_bench_interleaves_rounds_and_counts_both_ends_cpu() -> None:
    from mpsched.transport_bench import bench_transport

    report = bench_transport(5_000_000, rounds=2, quinn=None, mptcp=False)
    rows = {r["name"]: r for r in report["rows"]}
    assert "mpsched, 1 path" in rows and "kernel TCP" in rows, rows
    for row in report["rows"]:
        if row["name"].startswith("quinn"):
            continue
        assert "error" not in row, row
        assert row["runs"] == row["ok"] == 2, row
        lo, hi = row["cpu_s_per_gb_range"]
        assert 0 < lo <= row["cpu_s_per_gb"] <= hi, row
    assert rows["mpsched, 1 path"]["aead"] in ("aes-128-gcm", "chacha20-poly1305")
    assert len(report["load_before"]) == 3
    # The RTT column: the transport's and the kernel's sender's smoothed RTT, at or above the
    # least they measured.
    for name in ("mpsched, 1 path", "kernel TCP"):
        row = rows[name]
        assert 0 < row["min_rtt_ms"] <= row["srtt_ms"] < 1000, row
    if len(os.sched_getaffinity(0)) >= 2:
        assert report["cpus"] is not None and len(set(report["cpus"])) == 2, report["cpus"]


def test_serve_checks_its_address_before_it_says_it_serves() -> None:
    done = _cli("serve", "--bind", "192.0.2.77:4433", "--size", "1MB")
    assert done.returncode == 2 and "serving" not in done.stderr
    assert "192.0.2.77:4433" in done.stderr and "ip addr" in done.stderr, done.stderr
    done = _cli("serve", "--bind", "127.0.0.1", "--size", "1MB")
    assert done.returncode == 2 and "has no port" in done.stderr, done.stderr


def test_get_names_the_address_that_fails_and_the_fix() -> None:
    # A local address this machine does not have (Cannot assign requested address).
    done = _cli("get", "127.0.0.1:9", "--path", "192.0.2.55")
    assert done.returncode == 2
    assert "path 192.0.2.55:0" in done.stderr and "ip addr" in done.stderr, done.stderr
    done = _cli("get", "127.0.0.1")
    assert done.returncode == 2
    assert "'127.0.0.1' has no port" in done.stderr and "127.0.0.1:4433" in done.stderr
    done = _cli("get", "127.0.0.1:9", "--path", "127.0.0.1", "--path", "127.0.0.1")
    assert done.returncode == 2 and "--path: 127.0.0.1 given twice" in done.stderr
    done = _cli("get", "127.0.0.1:9", "--resume")
    assert done.returncode == 2 and "--save" in done.stderr


def test_a_wrong_secret_ends_get_within_11_s_with_the_reason(tmp_path: Path) -> None:
    port = _free_port()
    server = _serve(port, "--size", "1MB")
    try:
        other = _cli("keygen").stdout.strip()
        start = time.monotonic()
        save = tmp_path / "got.bin"
        done = _cli(
            "get", f"127.0.0.1:{port}", "--save", str(save), env={**_env(), "MPSCHED_SECRET": other}
        )
        took = time.monotonic() - start
    finally:
        err = _stop(server)
    assert done.returncode == 1, done.stderr
    assert took < 11 + 2, took  # 10 s, plus the interpreter's start
    assert (
        f"no authenticated answer from 127.0.0.1:{port}: is the server running, and is the "
        "secret the same?" in done.stderr
    ), done.stderr
    assert not save.exists(), "no file under the final name"
    assert '"unauthenticated": 4' in err, err


def _get_in_background(port: int, save: Path, *args: str) -> subprocess.Popen[str]:
    """`mpsched get --save SAVE ARGS`, once its SAVE.part holds a megabyte."""
    client = subprocess.Popen(
        [*MPSCHED, "get", f"127.0.0.1:{port}", "--save", str(save), *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches,  # noqa: PLW1509
    )
    part = save.with_name(save.name + ".part")
    deadline = time.monotonic() + 30
    while not (part.exists() and part.stat().st_size > 1_000_000):
        assert time.monotonic() < deadline and client.poll() is None, "no bytes arrived"
        time.sleep(0.01)
    return client


def test_a_killed_server_ends_get_within_its_idle_timeout_keeping_the_part(
    tmp_path: Path,
) -> None:
    port = _free_port()
    server = _serve(port, "--size", "20GB")
    save = tmp_path / "got.bin"
    client = _get_in_background(port, save, "--idle-timeout", "3s")
    server.kill()
    killed = time.monotonic()
    server.communicate()
    _, err = client.communicate(timeout=30)
    took = time.monotonic() - killed
    assert client.returncode == 1, err
    assert took < 3 + 1, took
    assert f"error: the server at 127.0.0.1:{port} stopped answering" in err, err
    part = tmp_path / "got.bin.part"
    kept = part.stat().st_size
    assert f"kept {kept:,} bytes in {part}" in err and "--resume" in err, err
    assert not save.exists()


def test_a_download_cut_short_keeps_its_part_and_resume_completes_it(tmp_path: Path) -> None:
    port = _free_port()
    server = _serve(port, "--size", "150MB")
    save = tmp_path / "got.bin"
    part = tmp_path / "got.bin.part"
    try:
        whole = json.loads(_cli("get", f"127.0.0.1:{port}", "--json").stdout)
        assert whole["complete"]
        cut = _cli("get", f"127.0.0.1:{port}", "--save", str(save), "--duration", "0.2s")
        assert cut.returncode == 1, cut.stderr
        kept = part.stat().st_size
        assert 0 < kept < 150_000_000 and not save.exists()
        assert "error: incomplete:" in cut.stderr, cut.stderr
        assert f"kept {kept:,} bytes in {part}" in cut.stderr, cut.stderr
        done = _cli("get", f"127.0.0.1:{port}", "--save", str(save), "--resume", "--json")
    finally:
        _stop(server)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["offset"] == kept and summary["bytes"] == 150_000_000 - kept
    assert summary["complete"] and summary["sha256"] == whole["sha256"]
    assert not part.exists() and save.stat().st_size == 150_000_000
    with save.open("rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == whole["sha256"]


def test_a_restarted_server_ends_the_old_connection_at_once(tmp_path: Path) -> None:
    port = _free_port()
    server = _serve(port, "--size", "20GB")
    client = _get_in_background(port, tmp_path / "got.bin")
    _stop(server)
    server = _serve(port, "--size", "20GB")
    restarted = time.monotonic()
    try:
        _, err = client.communicate(timeout=30)
    finally:
        stats = _stop(server)
    took = time.monotonic() - restarted
    assert client.returncode == 1, err
    assert "no longer knows this connection (it restarted?)" in err, err
    assert took < 2, took
    assert re.search(r'"resets": [1-9]', stats), stats


def test_ctrl_c_keeps_the_part_and_says_so(tmp_path: Path) -> None:
    port = _free_port()
    server = _serve(port, "--size", "20GB")
    save = tmp_path / "got.bin"
    try:
        client = _get_in_background(port, save)
        client.send_signal(signal.SIGINT)
        _, err = client.communicate(timeout=30)
    finally:
        _stop(server)
    part = tmp_path / "got.bin.part"
    assert client.returncode == 1, err
    assert "error: interrupted" in err, err
    assert f"kept {part.stat().st_size:,} bytes in {part}" in err, err
    assert not save.exists()

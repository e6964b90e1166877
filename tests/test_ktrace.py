"""The kernel's tracepoints during an emulated run (``mpsched emulate --kernel-trace``): the
recorded lines become a table with the run's own sockets, and on the kernel the table shows
what the socket samples cannot (HyStart's exit on each path, to the ACK)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpsched.testbed import missing_capabilities
from mpsched.testbed.ktrace import TRACEFS, ktrace_table, trace_unavailable

from .conftest import run_subprocess
from .kernel_testbed import MISSING

EPOCH = 54_197_600_000_000

# Lines as the kernel writes them (trace_clock "mono"; fields abridged where long): a
# congestion-state change, a scheduler decision, a fragment pushed, a server ACK on Wi-Fi, a
# client-side ACK on LTE, one of another run's sockets, a retransmission, a Data ACK the
# sender took, and MPTCP's connection timer armed (beside another timer) and firing.
LINES = (Path(__file__).parent / "data" / "ktrace.txt").read_bytes()


def test_the_lines_become_rows_of_the_run_s_own_sockets(tmp_path: Path) -> None:
    path = tmp_path / "ktrace.txt"
    path.write_bytes(LINES)
    own = {"10.10.0.2:43795", "10.10.1.2:54767"}
    t = ktrace_table(path, EPOCH, "10.20.0.1", own, {"10.10.0.2": 0, "10.10.1.2": 1}).to_pylist()
    # Another run's socket (port 40000) is left out; MPTCP rows carry no socket and stay.
    assert [r["event"] for r in t] == [
        "tcp_cong_state_set",
        "mptcp_subflow_get_send",
        "mptcp_sendmsg_frag",
        "tcp_probe",
        "tcp_probe",
        "tcp_retransmit_skb",
        "ack_update_msk",
        "mptcp_rtx_timer_start",
        "mptcp_rtx_timer_fire",
    ]
    state, get_send, frag, server_ack, client_ack, rtx, data_ack, armed, fired = t
    assert state["t_ns"] == 54_146_000 and state["cong_state"] == 0
    assert (state["side"], state["path"], state["client_port"]) == ("server", 0, 43795)
    assert get_send["side"] is None and get_send["path"] is None
    assert (get_send["free"], get_send["pace"], get_send["ratio"]) == (1, 1436579, 0)
    # The 64-bit data sequence number survives.
    assert frag["data_seq"] == 2273695315578993703 and frag["data_len"] == 31328
    # Hexadecimal sequence numbers; srtt in us as the kernel gives it.
    assert server_ack["snd_nxt"] == 0x6A4F16F8 and server_ack["srtt"] == 20159
    assert (server_ack["side"], server_ack["path"]) == ("server", 0)
    assert (client_ack["side"], client_ack["path"], client_ack["client_port"]) == (
        "client",
        1,
        54767,
    )
    # A symbolic field (state=TCP_ESTABLISHED) is no column; the row keeps its socket.
    assert (rtx["path"], rtx["snd_cwnd"]) == (0, None)
    # The sender's Data ACK and the connection's right edge, 64-bit.
    assert data_ack["new_snd_una"] - data_ack["old_snd_una"] == 31328
    assert data_ack["msk_wnd_end"] - data_ack["new_snd_una"] == 64256
    # MPTCP's connection timer, armed for 50 jiffies, then firing; another timer is left out.
    assert (armed["t_ns"], armed["timeout"], armed["side"]) == (100_100_000, 50, None)
    assert fired["t_ns"] == 300_300_000 and fired["timeout"] is None


def test_the_server_application_s_sends_become_rows(tmp_path: Path) -> None:
    path = tmp_path / "ktrace.txt"
    path.write_bytes(LINES)
    own = {"10.10.0.2:43795", "10.10.1.2:54767"}
    t = ktrace_table(path, EPOCH, "10.20.0.1", own, {"10.10.0.2": 0}, app_pid=5315).to_pylist()
    # Another process's send() is not the application's; a call that failed (EAGAIN) wrote
    # nothing. The one that wrote: when it was made, and the 130,928 bytes it took of 256 KiB.
    sends = [r for r in t if r["event"] == "app_send"]
    assert [(r["t_ns"], r["data_len"], r["side"]) for r in sends] == [(350_000_000, 130_928, None)]
    # Without the application's process, no send rows.
    events = ktrace_table(path, EPOCH, "10.20.0.1", own, {}).column("event").to_pylist()
    assert "app_send" not in events


def test_without_a_list_of_sockets_every_testbed_socket_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "ktrace.txt"
    path.write_bytes(LINES)
    t = ktrace_table(path, EPOCH, "10.20.0.1", (), {"10.10.0.2": 0})
    assert t.column("client_port").to_pylist().count(40000) == 1
    # A client address of no path of the run: no path index.
    rows = t.to_pylist()
    assert [r["path"] for r in rows if r["client_port"] == 54767] == [None]


def test_the_command_asks_for_out() -> None:
    outcome = run_subprocess("emulate", "--kernel-trace")
    assert outcome.code != 0 and "--kernel-trace: needs --out DIR" in outcome.err


_MISSING = MISSING or missing_capabilities("mptcp") or trace_unavailable()


@pytest.mark.skipif(_MISSING is not None, reason=f"kernel tracepoints unavailable: {_MISSING}")
def test_the_kernel_s_hystart_exit_on_each_path(tmp_path: Path) -> None:
    """The STMS lab for 2 s on the kernel: the server's ACK rows of both paths, timed from the
    connect, and HyStart's ACK-train exit where the trains pass delay_min / 2 (the Wi-Fi
    path's 40-packet round at 0.4 ms a packet: 40 + 26 segments; the model's test of the
    same, cubic.rs)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from mpsched import load
    from mpsched.testbed import emulate

    from .conftest import ROOT

    scenario = load(
        ROOT / "scenarios" / "stms-lab.toml",
        {"duration": "2s", "connection.scheduler": "linux"},
    )
    summary = emulate(scenario, raw_dir=tmp_path, kernel_trace=True)
    assert summary["kernel"]["trace_overrun"] == 0
    t = pq.read_table(tmp_path / "ktrace.parquet")
    assert summary["kernel"]["trace_events"] == t.num_rows
    acks = t.filter(pc.and_(pc.equal(t["event"], "tcp_probe"), pc.equal(t["side"], "server")))
    assert set(acks["path"].to_pylist()) == {0, 1}
    # The first ACK the server takes: its SYN-ACK's answer, a Wi-Fi round trip after connect.
    first = min(acks["t_ns"].to_pylist())
    assert 15_000_000 < first < 60_000_000
    wifi = acks.filter(pc.and_(pc.equal(acks["path"], 0), pc.less(acks["ssthresh"], 2**31 - 1)))
    exit_cwnd = wifi["ssthresh"][0].as_py()
    assert 50 <= exit_cwnd <= 90, exit_cwnd
    # The server application's writes: its first once the request is in (a Wi-Fi round trip
    # after the connect, and the application's own wake-up), each at most its 256 KiB chunk,
    # and the bytes written add up to what it reports having sent (to the last call's return).
    sends = t.filter(pc.equal(t["event"], "app_send"))
    written = sends["data_len"].to_pylist()
    assert len(written) >= 5 and all(0 < n <= 262_144 for n in written), written
    assert 20_000_000 < min(sends["t_ns"].to_pylist()) < 60_000_000
    sent = json.loads((tmp_path / "server.json").read_text())["app_bytes_sent"]
    assert abs(sum(written) - sent) <= 262_144, (sum(written), sent)
    # Nothing of the trace is left in the kernel.
    assert not any(p.name.startswith("mpsemu-") for p in (TRACEFS / "instances").iterdir())

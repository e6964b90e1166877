"""Simulated packet captures read by tshark, checked packet for packet against the traces.

tshark decodes the capture independently of the simulator: if a header, an MPTCP option or a
timestamp were wrong, the sequence numbers it reads would not match the Parquet traces. The
tests skip without tshark unless ``MPSCHED_REQUIRE_TSHARK=1`` (set by ``.ci/run``, which
installs it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import run_subprocess
from .tshark import FIELDS, needs_tshark, packets, tshark

pytestmark = needs_tshark

SERVER = "10.20.0.1"
MSS = 1424


def simulate(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "run"
    outcome = run_subprocess("run", "--out", str(out), "--pcap", "--quiet", *args)
    assert outcome.code == 0, outcome.err
    return out


@pytest.fixture(scope="module")
def sender(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """The default scenario (60 s, two paths, losses and reordering) seen at the server."""
    out = simulate(tmp_path_factory.mktemp("pcap"))
    return out, packets(out / "capture.pcapng")


def test_data_segments_match_the_segments_trace(sender: tuple[Path, pd.DataFrame]) -> None:
    out, frame = sender
    data = frame[(frame.src == SERVER) & (frame.len > 0)].copy()
    assert data.ip_len.eq(data.frame_len).all(), "pcapng original length is the IP length"
    # Relative DSN 1 is the first byte of the stream (IDSN + 1).
    data["dseq"] = (data.dsn.astype(np.int64) - 1) // MSS
    assert ((data.dsn.astype(np.int64) - 1) % MSS == 0).all()
    # The DSS mapping's subflow sequence number is the TCP sequence number, relative.
    assert data.ssn.eq(data.seq).all()
    assert data.stream.nunique() == 1, "both subflows belong to one MPTCP connection"

    segments = pd.read_parquet(out / "segments.parquet").set_index("dseq")
    seen = data.groupby("dseq").agg(
        copies=("t_ns", "size"),
        first=("t_ns", "min"),
        interfaces=("interface", lambda s: frozenset(s.astype(int))),
    )
    before = (
        data.join(segments.t_delivered_ns, on="dseq")
        .query("t_ns <= t_delivered_ns")
        .groupby("dseq")
        .size()
    )
    joined = segments.join(seen, how="left").join(before.rename("before"))
    assert joined.copies.notna().all(), "every delivered segment was captured"
    # One packet per send: scheduler copies and the subflows' own TCP retransmissions, those
    # a subflow sends after the segment was Data-ACKed (its own sequence space still has the
    # hole) not counted in the trace; all the copies sent before its delivery are.
    expected = joined.transmissions + joined.retransmissions
    assert (joined.before.fillna(0) <= expected).all()
    assert (expected <= joined.copies).all()
    assert (expected < joined.copies).sum() < 10
    assert joined["first"].eq(joined.t_first_sent_ns).all()
    assert all(sf in ifaces for sf, ifaces in zip(joined.subflow, joined.interfaces, strict=True))
    # Segments the capture holds but the trace does not are the ones in flight at the end.
    undelivered = seen.index.difference(segments.index)
    assert len(undelivered) < 1000 and undelivered.min() > segments.index.max() - 1000


def test_data_acks_match_the_acks_trace(sender: tuple[Path, pd.DataFrame]) -> None:
    out, frame = sender
    acks = pd.read_parquet(out / "acks.parquet")
    captured = frame[(frame.src != SERVER) & (frame.syn == 0) & frame.data_ack.notna()]
    # The third ACK of each handshake carries no Data ACK; every other client packet does.
    assert len(captured) == len(acks)
    assert captured.t_ns.to_numpy().tolist() == acks.t_ns.tolist()
    assert captured.interface.astype(int).tolist() == acks.subflow.astype(int).tolist()
    assert (captured.data_ack.astype(np.int64) - 1).tolist() == acks.data_ack_bytes.tolist()


def test_no_malformed_packets_or_mptcp_errors(sender: tuple[Path, pd.DataFrame]) -> None:
    out, _ = sender
    report = tshark(out / "capture.pcapng", "-q", "-z", "expert,error")
    assert "Errors" not in report and "Malformed" not in report, report
    bad = tshark(
        out / "capture.pcapng",
        "-Y",
        "_ws.malformed or tcp.checksum.status == 0 or ip.checksum.status == 0 "
        "or mptcp.connection.echoed_key_mismatch or mptcp.dss.missing_mapping",
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "ip.check_checksum:TRUE",
    )
    assert bad == ""


@pytest.mark.parametrize(
    ("vantage", "interfaces"),
    [
        # One interface per path at the client: "client wifi", "client lte".
        ("receiver", ["client wifi", "client lte"]),
        # Two per path, each link's output: data leaves "wifi down" as it reaches the client.
        ("links", ["wifi down", "wifi up", "lte down", "lte up"]),
    ],
)
def test_each_delivered_copy_arrives_when_the_trace_says(
    tmp_path: Path, vantage: str, interfaces: list[str]
) -> None:
    out = simulate(tmp_path, "--pcap-at", vantage, "--set", "duration=10s")
    capture = out / "capture.pcapng"
    names = tshark(capture, "-T", "fields", "-E", "separator=,", "-e", "frame.interface_name")
    assert set(names.splitlines()) == set(interfaces)
    fields = {**FIELDS, "dss_dsn": "mptcp.dss.dsn", "dss_len": "tcp.options.mptcp.datalvllen"}
    frame = packets(capture, fields)
    data = frame[(frame.src == SERVER) & (frame.len > 0)].copy()
    # tshark's mapping analysis leaves a few subflow-level retransmissions without a DSN (13
    # of 47,960 segments in this run, all at one recovery of Wi-Fi). Every segment carries its
    # own mapping, so its DSS option gives the DSN directly.
    assert (data.ssn.eq(data.seq) & data.dss_len.eq(data.len)).all()
    assert data.dss_dsn.eq(data.dsn)[data.dsn.notna()].all()
    data["dsn"] = data.dss_dsn
    per_path = len(interfaces) // 2  # interfaces per path, in path order
    arrivals = set(
        zip(
            (data.dsn.astype(np.int64) - 1) // MSS,
            data.interface.astype(int) // per_path,
            data.t_ns,
            strict=True,
        )
    )
    segments = pd.read_parquet(out / "segments.parquet")
    delivered = zip(
        segments.dseq, segments.subflow.astype(int), segments.t_first_received_ns, strict=True
    )
    missing = [row for row in delivered if row not in arrivals]
    assert missing == []

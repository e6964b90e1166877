"""tshark, for the tests that read packet captures (`mpsched run --pcap`, `mpsched emulate
--trace-headers`). Without it those tests skip, unless ``MPSCHED_REQUIRE_TSHARK=1`` (set by
``.ci/run``, which installs it): then its absence is an error."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

TSHARK = shutil.which("tshark")

if TSHARK is None and os.environ.get("MPSCHED_REQUIRE_TSHARK") == "1":
    raise RuntimeError("MPSCHED_REQUIRE_TSHARK=1 but tshark is not installed")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

FIELDS = {
    "interface": "frame.interface_id",
    "src": "ip.src",
    "ip_len": "ip.len",
    "frame_len": "frame.len",
    "seq": "tcp.seq",
    "len": "tcp.len",
    "syn": "tcp.flags.syn",
    "ssn": "tcp.options.mptcp.subflowseqno",
    "dsn": "mptcp.dsn",
    "data_ack": "mptcp.ack",
    "stream": "mptcp.stream",
}


def tshark(capture: Path, *args: str) -> str:
    """Runs tshark on `capture` with MPTCP analysis and relative sequence numbers."""
    assert TSHARK is not None
    proc = subprocess.run(
        [
            TSHARK,
            "-r",
            str(capture),
            "-o",
            "mptcp.analyze_mappings:TRUE",
            "-o",
            "mptcp.relative_sequence_numbers:TRUE",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return proc.stdout


def packets(capture: Path, fields: dict[str, str] = FIELDS) -> pd.DataFrame:
    """Packets' `fields` as tshark decodes them (columns named by the keys, numbers parsed but
    `src` and `name`); `t_ns`, the time in integer nanoseconds, exactly."""
    args = ["-T", "fields", "-E", "separator=,", "-E", "occurrence=f", "-e", "frame.time_epoch"]
    for field in fields.values():
        args += ["-e", field]
    text = tshark(capture, *args)
    rows = [line.split(",") for line in text.splitlines()]
    frame = pd.DataFrame(rows, columns=["time", *fields])
    seconds, fraction = frame["time"].str.split(".", expand=True).T.to_numpy()
    frame["t_ns"] = seconds.astype(np.int64) * 10**9 + np.array(
        [int(f.ljust(9, "0")) for f in fraction], dtype=np.int64
    )
    for column in fields:
        if column not in ("src", "name"):
            frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
    return frame

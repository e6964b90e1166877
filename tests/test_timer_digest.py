"""The kept kernel traces of upstream's connection timer in the Wi-Fi outage
(docs/experiments/outage-timer-kernel.json, written by docs/experiments/timer_digest.py):
what the model's `msk_rtx.rs` and `sender.rs` are checked against."""

import json
from pathlib import Path

from .conftest import run_experiment

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "docs" / "experiments" / "outage-timer-kernel.json"


def test_each_firing_resends_the_rest_of_one_fragment_and_the_counters_agree() -> None:
    runs = json.loads(KEPT.read_text())["runs"]
    assert len(runs) == 4
    for r in runs:
        resent = [f["resent_bytes"] for f in r["firings"] if f["resent_bytes"]]
        # Linux counts a firing's resend once (MPTcpExtMPTCPRetrans) and its bytes in
        # bytes_retrans: the digest's firings account for both exactly.
        assert sum(resent) == r["bytes_retrans"], r["run"]
        assert len(resent) == r["mptcp_retrans"], r["run"]
        # At most one 32,728-byte data fragment (a 32-KiB page less its 40-byte header).
        assert all(0 < b <= 32_728 for b in resent), r["run"]
        # The first firing, before the failure: about 0.48 s in, the rest of a fragment.
        first = r["firings"][0]
        assert 0.48 <= first["t_s"] <= 0.49 and first["resent_bytes"] == 22_736, r["run"]


def test_the_script_reads_its_digest() -> None:
    out = run_experiment("timer_digest.py", str(KEPT))
    assert "ko-h1: firings at 0.482, 1.162, 5.494, 5.942, 6.486" in out
    assert out.count("MPTcpExtMPTCPRetrans") == 4

"""The kept kernel traces of upstream's data fragments (docs/experiments/dfrag-kernel.json,
written by docs/experiments/dfrag_digest.py): the writes and fragment boundaries that
`crates/mpsched-core/src/conn/dfrag.rs` and `conn/data.rs` model."""

import itertools
import json
from pathlib import Path

from .conftest import run_experiment

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "docs" / "experiments" / "dfrag-kernel.json"
DFRAG = 32_728


def test_a_write_that_meets_a_full_buffer_still_fills_its_page() -> None:
    runs = json.loads(KEPT.read_text())["runs"]
    assert len(runs) == 5
    for r in runs:
        w = r["writes"]
        # The load generator's 256-KiB send()s; those cut short by the buffer end at a page's
        # end (`mptcp_sendmsg` checks the buffer only before each page's piece), but one that
        # began inside a page another write had started.
        assert w["chunks"] + w["whole_fragment_writes"] + len(w["other"]) == w["count"], r["run"]
        assert len(w["other"]) == 1, r["run"]
        assert w["first"][:3] == [2 * DFRAG, 4 * DFRAG, 3 * DFRAG], r["run"]


def test_the_fragments_move_40_bytes_earlier_at_a_time() -> None:
    for r in json.loads(KEPT.read_text())["runs"]:
        residues = [res for _, res, _, _ in r["grid"]]
        assert residues[0] == 0, r["run"]
        moves = [(DFRAG - b if a == 0 else a - b) for a, b in itertools.pairwise(residues)]
        # Each move is whole headers (40 bytes) and only ever earlier in the stream.
        assert all(m >= 0 and m % 40 == 0 for m in moves), (r["run"], moves)


def test_the_second_subflow_s_first_push_is_two_whole_fragments() -> None:
    for r in json.loads(KEPT.read_text())["runs"]:
        start, end, t = r["second_subflow_first_push"]
        assert start % DFRAG == 0 and end - start == 2 * DFRAG, r["run"]
        assert 0.19 < t < 0.21, r["run"]


def test_the_script_reads_its_digest() -> None:
    out = run_experiment("dfrag_digest.py", str(KEPT))
    assert "ko-h1: 647 writes, 637 of 256 KiB" in out
    assert out.count("the second subflow's first push: bytes 687288-752744") == 5

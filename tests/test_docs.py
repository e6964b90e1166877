"""The programs in the docs run, and still print what the docs say they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.DOTALL)


def _words(text: str) -> list[list[str]]:
    """Lines as words: column padding may differ between pandas versions, values may not."""
    return [line.split() for line in text.strip().splitlines()]


def test_the_notebook_page_runs_and_prints_what_it_shows(
    native: ModuleType, tmp_path: Path
) -> None:
    page = ROOT / "docs" / "notebook.md"
    (program,) = _blocks(page, "python")
    (shown,) = _blocks(page, "text")
    script = tmp_path / "notebook.py"
    script.write_text(program)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _words(done.stdout) == _words(shown)
    assert (tmp_path / "delays.png").stat().st_size > 10_000
    assert (tmp_path / "fig10b.png").stat().st_size > 10_000
    assert (tmp_path / "runs" / "rtt" / "results.parquet").is_file()


# --- claims: the pages' numbers and the commands that print them (mpsched.docclaims) -----------

# Pages whose console blocks other work owns for now (the UDP transport's); their blocks are
# not claims yet.
_NOT_YET_CLAIMS = {ROOT / "docs" / "wire.md", ROOT / "docs" / "performance.md"}


def _claim_pages() -> list[Path]:
    from mpsched import docclaims

    return [p for p in docclaims.pages(ROOT) if p not in _NOT_YET_CLAIMS]


def _check_pages() -> list[Path]:
    from mpsched import docclaims

    return [p for p in _claim_pages() if any(c.kind == "check" for c in docclaims.claims(p))]


def test_every_shown_command_with_output_is_a_claim() -> None:
    """A console block (or a block of `$ ` commands) is a claim: marked, so that its numbers are
    checked (`check`) or dated and regenerated (`measured`, `manual`)."""
    from mpsched import docclaims

    unmarked = []
    for page in _claim_pages():
        lines = page.read_text().splitlines()
        marked = {c.line for c in docclaims.claims(page)}  # the marker's line, from 1
        for n, line in enumerate(lines):
            fence = re.match(r"^ *```(console)?$", line)
            if not fence or n + 1 >= len(lines):
                continue
            opens = fence[1] == "console" or lines[n + 1].lstrip().startswith("$ ")
            # A bare ``` closes a block as often as it opens one: only count openers whose
            # next line is a command.
            if opens and lines[n + 1].lstrip().startswith("$ ") and n not in marked:
                unmarked.append(f"{page.relative_to(ROOT)}:{n + 1}")
    assert not unmarked, f"console blocks without a claim marker: {unmarked}"


def test_every_shown_table_command_is_a_claim() -> None:
    """A block of commands that runs `mpsched table` prints a table the page shows: it is a
    claim, so that `docgen --claims` re-reads the table when the model changes (tables under
    an unmarked block went stale for days). Indented blocks are instructions inside a list
    (a cluster's sweep), not a page's results."""
    from mpsched import docclaims

    unmarked = []
    for page in _claim_pages():
        lines = page.read_text().splitlines()
        marked = {c.line for c in docclaims.claims(page)}  # the marker's line, from 1
        for n, line in enumerate(lines):
            if line != "```sh":
                continue
            body = []
            for following in lines[n + 1 :]:
                if following.startswith("```"):
                    break
                body.append(following)
            if any(b.startswith("mpsched table ") for b in body) and n not in marked:
                unmarked.append(f"{page.relative_to(ROOT)}:{n + 1}")
    assert not unmarked, f"mpsched table blocks without a claim marker: {unmarked}"


def test_the_claim_pages_parse_and_the_long_ones_are_dated() -> None:
    from mpsched import docclaims

    found = {kind: 0 for kind in docclaims.KINDS}
    for page in _claim_pages():
        for claim in docclaims.claims(page):
            found[claim.kind] += 1
            if claim.kind != "check":
                assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", claim.date or ""), claim.where
    assert found["check"] >= 10 and found["measured"] >= 3, found


@pytest.mark.parametrize("page", _check_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_cheap_claims_print_what_the_page_shows(native: ModuleType, page: Path) -> None:
    from mpsched import docclaims

    from .tshark import TSHARK

    if TSHARK is None and "tshark" in page.read_text():  # .ci/run installs it and requires it
        pytest.skip("tshark is not installed")
    outcomes = docclaims.check_page(page, ROOT)
    assert outcomes
    problems = [str(m) for o in outcomes for m in o.mismatches()]
    assert not problems, "\n\n".join(problems)
    slow = [f"{o.claim.where}: {o.cpu_seconds:.0f} CPU-s" for o in outcomes if o.cpu_seconds > 30]
    assert not slow, f"check claims must be cheap; mark these measured: {slow}"


def test_a_number_changed_by_hand_fails_the_check(native: ModuleType, tmp_path: Path) -> None:
    """The check compares the digits: one changed in a copy of a README claim is caught."""
    from mpsched import docclaims

    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    start = text.index("<!-- claim: check -->\n```console\n$ mpsched run scenarios/codel.toml")
    block = text[start : text.index("```\n", start + 30) + 4]
    page.write_text(block)
    assert not [m for o in docclaims.check_page(page, tmp_path) for m in o.mismatches()]
    shown = re.search(r" p +[\d.]+ +([\d.]+) ", block)
    assert shown, block
    changed = block.replace(shown[0], shown[0].replace(shown[1], f"{float(shown[1]) + 0.01:.2f}"))
    page.write_text(changed)
    (mismatch,) = [m for o in docclaims.check_page(page, tmp_path) for m in o.mismatches()]
    assert "scenarios/codel.toml" in mismatch.command and "README.md:1" in str(mismatch)


def test_the_comparison_ignores_wall_times_and_reads_ellipses() -> None:
    from mpsched.docclaims import matches, rewrite

    shown = ["goodput 55.77 Mbps", "...", "events 447,011 (8.5 M events/s; loop 0.05 s)", "x 1"]
    actual = ["goodput 55.77 Mbps", "a", "b", "events 447,011 (2.1 M events/s; loop 0.21 s)", "x 1"]
    assert matches(shown, actual)
    assert not matches(shown, [*actual[:-1], "x 2"])  # a digit
    assert not matches(shown, ["goodput 55.78 Mbps", *actual[1:]])
    assert not matches(["events 447,011 (1 M events/s)"], ["events 447,012 (1 M events/s)"])
    assert matches(["a  1", "b 2"], ["a 1   ", "b  2"])  # column padding is not a number
    assert not matches(["a 1"], ["a 1", "b 2"])  # nor is a line more
    assert matches(["$ x", "...", "y"], ["$ x", "y"])  # ... may be no line at all
    # Regenerating keeps the ... and the lines' places, and refuses a changed shape.
    assert rewrite(shown, ["goodput 50.00 Mbps", "c", *actual[3:]]) == [
        "goodput 50.00 Mbps",
        "...",
        actual[3],
        "x 1",
    ]
    assert rewrite(["a 1", "b 2"], ["a 3", "b 4"]) == ["a 3", "b 4"]
    assert rewrite(["a 1", "b 2"], ["a 3", "new 5", "b 4"]) is None


def test_kept_runs_land_in_the_repository_s_runs_and_replace_their_namesakes(
    tmp_path: Path,
) -> None:
    """`docgen --claims --keep-runs`: what a claim wrote under runs/ survives its scratch
    folder (the page's hand tables are read from it), an older run of that name is replaced,
    and without the option nothing is kept."""
    from mpsched import docclaims

    page = tmp_path / "p.md"
    page.write_text(
        "<!-- claim: measured 2026-01-01 -->\n```console\n"
        "$ mkdir -p runs/a && echo 7 > runs/a/n && cat runs/a/n\n7\n```\n"
    )
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "old").write_text("stale")
    docclaims.regenerate_page(page, tmp_path, kinds=("measured",), echo=lambda _: None)
    assert (tmp_path / "runs" / "a" / "old").exists()  # not kept: the repository's untouched
    docclaims.regenerate_page(
        page, tmp_path, kinds=("measured",), echo=lambda _: None, keep_runs=True
    )
    assert sorted(p.name for p in (tmp_path / "runs" / "a").iterdir()) == ["n"]
    assert (tmp_path / "runs" / "a" / "n").read_text() == "7\n"


def test_a_bad_marker_is_an_error_naming_the_page_and_line(tmp_path: Path) -> None:
    from mpsched import docclaims

    page = tmp_path / "p.md"
    for text, message in [
        ("<!-- claim: measured -->\n```console\n$ true\n```\n", "needs its date"),
        ("<!-- claim: check -->\n\n```console\n$ true\n```\n", "precedes a console or sh"),
        ("<!-- claim: cheap -->\n```console\n$ true\n```\n", "claim kind 'cheap'"),
        ("<!-- claim: check -->\n```console\n$ true\n", "does not end"),
        ("<!-- claim: check\n```console\n", "unreadable claim marker"),
    ]:
        page.write_text(text)
        with pytest.raises(docclaims.ClaimError, match=message) as err:
            docclaims.claims(page)
        assert f"{page}:1" in str(err.value)


def test_the_quick_start_says_what_pip_install_is_doing_and_for_how_long() -> None:
    """pip prints nothing while cargo builds: the README says so, how long, and how to see it."""
    text = (ROOT / "README.md").read_text()
    quick = text[text.index("## Quick start") : text.index("## Schedulers")]
    assert "pip install ." in quick and "cargo" in quick
    assert re.search(r"\d+ to \d+ minutes", quick), "how long a first build takes"
    assert "pip install -v ." in quick, "how to see cargo's progress"

"""The numbers in README.md and docs/ come from commands the pages show: each is a *claim*, a
fenced block right after a marker that says how it is kept true.

A claim is either a ``console`` block, commands after ``$ `` each followed by what it printed,
or an ``sh`` block of commands whose last one printed the Markdown table that follows the
block (its table lines: ``mpsched table``'s caption is the page's prose there). The marker, an
HTML comment on the line before the fence, is one of:

- ``<!-- claim: check -->``: cheap (seconds); ``tests/test_docs.py`` runs it on every test run
  and fails when its output differs from the page's;
- ``<!-- claim: measured 2026-11-26 -->``: too long for every test run; measured on that date,
  re-run and rewritten by ``python -m mpsched.docgen --claims`` (which sets the date);
- ``<!-- claim: manual 2026-11-26 -->``: needs what the tool cannot set up (a second shell
  running a server, root and the kernel testbed); measured by hand on that date.

``; vary: REGEX`` after the kind adds numbers that differ from run to run (wall times) to those
every claim ignores (:data:`VOLATILE`). In a shown output a line ``...`` stands for any number
of lines (progress lines, a summary's rows the page does not discuss).

The blocks of a page run in order, in one scratch folder per page that links the repository's
top-level files (so ``scenarios/...`` and ``runs/...`` mean what they mean in a checkout), with
``bash``: a block's commands share one shell (a variable set by one is seen by the next).
Checking runs only a page's ``check`` claims, so those never depend on the others.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KINDS",
    "VOLATILE",
    "Claim",
    "ClaimError",
    "Mismatch",
    "align",
    "check_page",
    "claims",
    "matches",
    "pages",
    "regenerate_page",
    "run_claims",
]

KINDS = ("check", "measured", "manual")

#: Printed numbers that change from run to run with the machine, never with the model: the
#: timing parentheses of ``mpsched run`` (``events 447,011 (8.5 M events/s; loop 0.05 s, wall
#: 0.05 s)``) and ``mpsched sweep`` (``35 of 35 runs in DIR (2.6 s, 13.6 runs/s)``), and the
#: ``wall_s`` of a JSON summary. Their digits are not compared.
VOLATILE = (
    r"\([^()\n]*(?:events/s|runs/s)[^()\n]*\)",
    r'"wall_s": [0-9.e+-]+',
)

#: Lines a command prints because of where the check runs, not what the page is about: tshark
#: warns on stderr when run as root (CI runs as root). They are left out of outputs.
IGNORED_LINES = (r'^Running as user "root" and group "root"\. This could be dangerous\.$',)

_MARKER = re.compile(
    r"^<!-- claim: (?P<kind>[a-z]+)(?: (?P<date>\d{4}-\d{2}-\d{2}))?"
    r"(?:; vary: (?P<vary>.*?))? -->$"
)
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[a-z]*)$")
_ELLIPSIS = "..."
_PROMPT = "$ "

#: Seconds a ``check`` claim may take before the check says to mark it ``measured``.
CHECK_SECONDS = 30.0


@dataclass
class Command:
    """One command of a claim and the output the page shows for it (``None``: not shown)."""

    text: str
    shown: list[str] | None


@dataclass
class Claim:
    """A marked block of a page: where it is, its kind and its commands."""

    page: Path
    line: int  # of the marker, from 1
    kind: str
    date: str | None
    vary: tuple[str, ...]
    lang: str
    commands: list[Command]
    indent: str = ""  # of a block in a list item
    # Lines of the page (from 0) the outputs occupy, per command with a shown output:
    # (first, end) of the console lines, or of the table after an sh block.
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def printed(self, output: list[str]) -> list[str]:
        """What of a command's ``output`` the page shows: all of it, or after an sh block the
        table."""
        return output if self.lang == "console" else [x for x in output if x.startswith("|")]


class ClaimError(ValueError):
    """A marker or block the parser cannot read (the message names the page and line)."""


def pages(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _join_continued(lines: list[str], i: int) -> tuple[str, int]:
    """The command starting at ``lines[i]`` with its ``\\`` continuations, and the next line."""
    parts = [lines[i]]
    while parts[-1].endswith("\\") and i + 1 < len(lines):
        i += 1
        parts.append(lines[i])
    return "\n".join(parts), i + 1


def claims(page: Path) -> list[Claim]:
    """Every claim of ``page``, in order."""
    lines = page.read_text("utf-8").splitlines()
    out: list[Claim] = []
    for n, line in enumerate(lines):
        m = _MARKER.match(line.strip())
        if not m:
            if line.strip().startswith("<!-- claim"):
                raise ClaimError(f"{page}:{n + 1}: unreadable claim marker {line.strip()!r}")
            continue
        kind, date = m["kind"], m["date"]
        if kind not in KINDS:
            raise ClaimError(f"{page}:{n + 1}: claim kind {kind!r} (one of {', '.join(KINDS)})")
        if kind != "check" and date is None:
            raise ClaimError(f"{page}:{n + 1}: a {kind} claim needs its date (YYYY-MM-DD)")
        fence = _FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
        if fence is None or fence["lang"] not in ("console", "sh"):
            raise ClaimError(f"{page}:{n + 1}: a claim marker precedes a console or sh block")
        indent = fence["indent"]
        end = next((k for k in range(n + 2, len(lines)) if lines[k] == indent + "```"), None)
        if end is None:
            raise ClaimError(f"{page}:{n + 1}: the block does not end")
        vary = tuple(v.strip() for v in (m["vary"] or "").split(" | ") if v.strip())
        claim = Claim(page, n + 1, kind, date, vary, fence["lang"], [], indent)
        body = [line.removeprefix(indent) for line in lines[n + 2 : end]]
        if fence["lang"] == "console":
            _console(claim, body, n + 2)
        else:
            _sh(claim, body, lines, end)
        if not claim.commands:
            raise ClaimError(f"{claim.where}: the block has no command")
        out.append(claim)
    return out


def _console(claim: Claim, body: list[str], first: int) -> None:
    i = 0
    while i < len(body):
        if not body[i].startswith(_PROMPT):
            raise ClaimError(f"{claim.page}:{first + i + 1}: output before any command")
        text, i = _join_continued(body, i)
        start = i
        while i < len(body) and not body[i].startswith(_PROMPT):
            i += 1
        claim.commands.append(Command(text[len(_PROMPT) :], body[start:i]))
        claim.spans.append((first + start, first + i))


def _sh(claim: Claim, body: list[str], lines: list[str], end: int) -> None:
    i = 0
    while i < len(body):
        if not body[i].strip() or body[i].lstrip().startswith("#"):
            i += 1
            continue
        text, i = _join_continued(body, i)
        claim.commands.append(Command(text, None))
    # The table after the block (one blank line between) is the last command's output.
    k = end + 1
    if k < len(lines) and not lines[k].strip():
        k += 1
    table_end = k
    while table_end < len(lines) and lines[table_end].startswith("|"):
        table_end += 1
    if table_end > k and claim.commands:
        claim.commands[-1].shown = lines[k:table_end]
        claim.spans.append((k, table_end))


# --- comparing ---


def _mask(line: str, vary: Iterable[str]) -> str:
    for pattern in (*VOLATILE, *vary):
        line = re.sub(pattern, lambda m: re.sub(r"\d[\d,.]*", "#", m.group(0)), line)
    return line


def _words(line: str) -> tuple[str, ...]:
    return tuple(line.split())


def _skeleton(line: str) -> tuple[str, ...]:
    """A line without its numbers: what stays when the model moves."""
    return _words(re.sub(r"[-+]?\d[\d,.]*(?:e[-+]?\d+)?", "#", line))


def align(
    shown: Sequence[str], actual: Sequence[str], key: Callable[[str], object]
) -> list[tuple[int, int]] | None:
    """Where each run of lines of ``shown`` between ``...`` lines sits in ``actual``, comparing
    lines by ``key``: ``[(start, end)]`` in ``actual`` per run, or ``None`` when they do not
    fit. Text before the first ``...`` must start the output, text after the last must end it;
    a run in between is found at its first fit."""
    runs: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == _ELLIPSIS:
            runs.append([])
        else:
            runs[-1].append(line)
    want = [[key(x) for x in run] for run in runs]
    have = [key(x) for x in actual]
    if len(runs) == 1:
        return [(0, len(have))] if want[0] == have else None
    spans: list[tuple[int, int]] = []
    head = want[0]
    if have[: len(head)] != head:
        return None
    spans.append((0, len(head)))
    cursor = len(head)
    for run in want[1:-1]:
        at = next(
            (s for s in range(cursor, len(have) - len(run) + 1) if have[s : s + len(run)] == run),
            None,
        )
        if at is None:
            return None
        spans.append((at, at + len(run)))
        cursor = at + len(run)
    tail = want[-1]
    start = len(have) - len(tail)
    if start < cursor or have[start:] != tail:
        return None
    spans.append((start, len(have)))
    return spans


def matches(shown: Sequence[str], actual: Sequence[str], vary: Iterable[str] = ()) -> bool:
    """Whether ``actual`` prints what ``shown`` shows: the same words line by line, numbers
    included, but for the volatile ones; ``...`` lines stand for any lines."""
    vary = tuple(vary)
    return align(shown, actual, lambda line: _words(_mask(line, vary))) is not None


def rewrite(shown: Sequence[str], actual: Sequence[str]) -> list[str] | None:
    """``shown`` with its lines replaced by those ``actual`` printed in their place (the
    ``...`` lines kept), or ``None`` when the output changed more than its numbers."""
    spans = align(shown, actual, _skeleton)
    if spans is None:
        return None
    if len(spans) == 1:
        return list(actual)
    out: list[str] = []
    for i, (a, b) in enumerate(spans):
        if i:
            out.append(_ELLIPSIS)
        out += actual[a:b]
    return out


# --- running ---


@dataclass
class Mismatch:
    """A claim whose command printed something else than its page shows."""

    claim: Claim
    command: str
    shown: list[str]
    actual: list[str]
    seconds: float

    def __str__(self) -> str:
        return (
            f"{self.claim.where}: `{self.command}` no longer prints what the page shows "
            "(digits compared but for wall times; regenerate with "
            f"`python -m mpsched.docgen --claims {self.claim.page}` or fix the model)\n"
            "--- the page\n" + "\n".join(self.shown) + "\n--- now\n" + "\n".join(self.actual)
        )


def _environment(bin_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]),
        COLUMNS="100",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
        MPLBACKEND="Agg",
        PYTHONUNBUFFERED="1",
    )
    env.pop("FORCE_COLOR", None)
    return env


def _scratch(root: Path) -> Path:
    """A folder that looks like the repository's root (its files linked) but for ``runs``."""
    work = Path(tempfile.mkdtemp(prefix="mpsched-claims-"))
    for entry in root.iterdir():
        if entry.name in ("runs", ".git") or entry.name.startswith("."):
            continue
        (work / entry.name).symlink_to(entry)
    return work


_SEPARATOR = "@@mpsched-claim-output@@"


def _run_block(claim: Claim, work: Path, env: dict[str, str], timeout: float) -> list[list[str]]:
    """Each command's output (stdout and stderr as a terminal shows them, interleaved), run in
    one bash in ``work``."""
    script = ["set -o pipefail"]
    for command in claim.commands:
        script += [f"printf '%s\\n' '{_SEPARATOR}'", command.text]
    done = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-c", "\n".join(script)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    parts = done.stdout.split(_SEPARATOR + "\n")[1:]
    outputs = [
        [
            line.rstrip()
            for line in part.rstrip("\n").splitlines()
            if not any(re.match(pattern, line) for pattern in IGNORED_LINES)
        ]
        for part in parts
    ]
    while len(outputs) < len(claim.commands):  # bash stopped early
        outputs.append([f"(not run: the block's shell exited with {done.returncode})"])
    return outputs


@dataclass
class Outcome:
    """What running one claim gave: each command's output, the seconds it took, and the CPU
    seconds its processes used (user + system: what "cheap" means, whatever else the machine
    is doing)."""

    claim: Claim
    outputs: list[list[str]]
    seconds: float
    cpu_seconds: float = 0.0

    def mismatches(self) -> list[Mismatch]:
        out = []
        for command, output in zip(self.claim.commands, self.outputs, strict=True):
            actual = self.claim.printed(output)
            if command.shown is not None and not matches(command.shown, actual, self.claim.vary):
                out.append(Mismatch(self.claim, command.text, command.shown, actual, self.seconds))
        return out


def _children_cpu() -> float:
    """CPU seconds used so far by this process's waited-for children and theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_claims(
    page: Path,
    root: Path,
    kinds: Sequence[str],
    *,
    timeout: float = 3600.0,
    echo: Callable[[str], None] | None = None,
    keep_runs: bool = False,
) -> list[Outcome]:
    """Run ``page``'s claims of ``kinds``, in order, in one scratch folder; with ``keep_runs``
    what they wrote under ``runs/`` is moved to the repository's ``runs/`` afterwards
    (replacing directories of the same name), where a page's hand-written tables, read from
    the same runs, can be recomputed."""
    selected = [c for c in claims(page) if c.kind in kinds]
    if not selected:
        return []
    env = _environment(Path(sys.executable).parent)
    work = _scratch(root)
    try:
        outcomes = []
        for claim in selected:
            if echo:
                echo(f"{claim.where}: {claim.kind}: {claim.commands[0].text.splitlines()[0]}")
            start, cpu = time.perf_counter(), _children_cpu()
            outputs = _run_block(claim, work, env, timeout)
            outcomes.append(
                Outcome(claim, outputs, time.perf_counter() - start, _children_cpu() - cpu)
            )
        return outcomes
    finally:
        if keep_runs and (work / "runs").is_dir():
            (root / "runs").mkdir(exist_ok=True)
            for entry in (work / "runs").iterdir():
                dest = root / "runs" / entry.name
                if dest.is_dir():
                    shutil.rmtree(dest)
                elif dest.exists():
                    dest.unlink()
                shutil.move(str(entry), str(dest))
        shutil.rmtree(work, ignore_errors=True)


def check_page(page: Path, root: Path) -> list[Outcome]:
    """Run ``page``'s ``check`` claims (the test compares them)."""
    return run_claims(page, root, ("check",), timeout=300.0)


def regenerate_page(
    page: Path,
    root: Path,
    *,
    kinds: Sequence[str] = ("check", "measured"),
    today: str | None = None,
    whole: bool = False,
    echo: Callable[[str], None] = print,
    keep_runs: bool = False,
) -> list[str]:
    """Re-run ``page``'s claims of ``kinds`` and write what they print into the page (and
    today's date into the markers of measured claims). Returns the problems: claims whose
    output changed more than its numbers, which need rewriting by hand (or, with ``whole``,
    get their whole output, ``...`` lines dropped)."""
    today = today or _dt.date.today().isoformat()
    outcomes = run_claims(page, root, kinds, echo=echo, keep_runs=keep_runs)
    lines = page.read_text("utf-8").splitlines()
    edits: list[tuple[int, int, list[str]]] = []
    problems = []
    for outcome in outcomes:
        claim = outcome.claim
        echo(f"{claim.where}: {outcome.seconds:.1f} s, {outcome.cpu_seconds:.1f} CPU-s")
        spans = iter(claim.spans)
        for command, output in zip(claim.commands, outcome.outputs, strict=True):
            if command.shown is None:
                continue
            actual = claim.printed(output)
            span = next(spans)
            new = rewrite(command.shown, actual)
            if new is None and whole:
                new = list(actual)
            if new is None:
                problems.append(
                    f"{claim.where}: `{command.text}` printed something else than numbers "
                    "changed; rewrite its output by hand:\n" + "\n".join(actual)
                )
                continue
            edits.append((span[0], span[1], [claim.indent + line for line in new]))
        if claim.kind == "measured":
            marker = f"{claim.indent}<!-- claim: measured {today}"
            marker += f"; vary: {' | '.join(claim.vary)} -->" if claim.vary else " -->"
            edits.append((claim.line - 1, claim.line, [marker]))
    for first, end, new in sorted(edits, reverse=True):
        lines[first:end] = new
    text = "\n".join(lines) + "\n"
    if text != page.read_text("utf-8"):
        page.write_text(text, "utf-8")
        echo(f"wrote {page}")
    return problems

"""The reference pages written from the contract: ``docs/summary.md`` (every summary field)
and ``docs/schedulers.md`` (every scheduler and congestion control with its parameters, and
the subflow view schedulers see), and the column tables of ``docs/traces.md``, and
``docs/scenario.md`` (every scenario key, from the scenario's models); and the stub's
``class SubflowView`` in ``python/mpsched/_native.pyi``. ``tests/test_contract.py`` fails when
a page differs from what this writes; ``python -m mpsched.docgen`` rewrites them.

The numbers the pages claim (``mpsched.docclaims``: a command and its output, marked ``check``,
``measured`` or ``manual``):

- ``python -m mpsched.docgen --claims [PAGE...]`` re-runs the ``check`` and ``measured`` claims
  of the pages (default: README.md and docs/) and writes what they print into them, with today's
  date on the measured ones;
- ``--check`` re-runs only the ``check`` claims and reports those that differ (as the test does);
- ``--kind measured`` (or ``check``) limits ``--claims`` to one kind;
- ``--whole``: a claim whose output changed more than its numbers (a new line in a summary)
  gets its whole new output instead of an error; put back its ``...`` by hand;
- ``--keep-runs``: the run directories the claims wrote (``runs/...``) are moved into the
  repository's ``runs/`` instead of deleted, so that a page's hand-written tables, read from
  the same runs with ``mpsched table``, can be recomputed.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from mpsched import contract, traces
from mpsched.scenario.reference import scenario_markdown

_GENERATED = "<!-- Written by `python -m mpsched.docgen` from the native module's contract. -->"
_TRACES_START = "<!-- tables: generated -->"
_TRACES_END = "<!-- end of generated tables -->"
_STUB = Path(__file__).with_name("_native.pyi")
_VIEW_START = (
    "# class SubflowView: written by `python -m mpsched.docgen` from the contract's "
    "subflow_view\n# (SubflowView in crates/mpsched-core/src/sched/mod.rs).\n"
)
_VIEW_END = "# end of the generated class SubflowView\n"
_PLURAL = {"segment": "segments", "byte": "bytes"}

_RECORD_TITLES = {
    "summary": ("The summary", "`mpsched run --json`, `summary.json`, `Result.summary`."),
    "subflow": ("`subflows[i]`", "One record per subflow of the main connection."),
    "flow": (
        "`flows[k]`",
        "With competing flows (`[[flow]]`): one record per connection, the main one first.",
    ),
    "quantiles": (
        "Distributions",
        "A field of type `quantiles` holds these, in the field's unit.",
    ),
}


def _type(f: contract.Field) -> str:
    return f"{f.type} or null" if f.nullable else f.type


def _cell(text: str) -> str:
    """``text`` for a Markdown table's cell (a pipe would end it)."""
    return text.replace("|", "\\|")


def summary_markdown() -> str:
    """``docs/summary.md``."""
    out = [
        "# Summary fields",
        "",
        _GENERATED,
        "",
        "What a run reports. The simulator and the kernel testbed (`mpsched emulate`) share "
        "these fields; the testbed leaves null what the kernel does not measure and adds a "
        "`kernel` record. With `--benefit` the summary also has `baselines` and "
        '`aggregation_benefit` (README, "Summary fields").',
    ]
    for record in contract.RECORDS:
        title, intro = _RECORD_TITLES[record]
        out += ["", f"## {title}", "", intro, ""]
        out += ["| field | type | unit | meaning |", "| --- | --- | --- | --- |"]
        out += [
            f"| `{f.name}` | {_type(f)} | {f.unit} | {f.meaning} |" for f in contract.fields(record)
        ]
    return "\n".join(out) + "\n"


def schedulers_markdown() -> str:
    """``docs/schedulers.md``."""
    out = ["# Schedulers and congestion controls", "", _GENERATED, ""]
    out += [
        "`[connection] scheduler = NAME` picks a scheduler, `[connection.scheduler_params]` sets "
        "its parameters; `congestion = NAME` picks a congestion control.",
        "",
        "## Schedulers",
        "",
        "A scenario may also give a scheduler one of its aliases (the papers' names); a run "
        "reports the registered name.",
        "",
        "| scheduler | aliases | what it does | source |",
        "| --- | --- | --- | --- |",
    ]
    out += [
        f"| `{s['name']}` | {', '.join(f'`{a}`' for a in s['aliases'])} | {s['description']} "
        f"| {s['source']} |"
        for s in contract.schedulers()
    ]
    out += ["", "## Scheduler parameters", ""]
    out += ["| scheduler | parameter | default | meaning |", "| --- | --- | --- | --- |"]
    for s in contract.schedulers():
        for p in s["params"]:
            out.append(f"| `{s['name']}` | `{p['key']}` | {p['default']} | {p['meaning']} |")
    out += [
        "",
        "## The subflow view",
        "",
        "What a scheduler sees of each subflow: `SubflowView` in Rust (`ctx.subflows()`), "
        "`ctx.subflows[i]` in Python, where durations and times are integers of nanoseconds "
        "(`_ns`) and rates of bits per second (`_bps`). Derived attributes are methods in Rust.",
        "",
        "| attribute | Rust | type | unit | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    out += [
        f"| `{f.name}` | `{f.rust}{'()' if f.derived else ''}` | `{_cell(f.annotation)}` "
        f"| {f.unit} | {f.meaning} |"
        for f in contract.subflow_view()
    ]
    out += ["", "## Congestion controls", ""]
    out += ["| congestion | what it does | on one path | source |", "| --- | --- | --- | --- |"]
    out += [
        f"| `{c['name']}` | {c['description']} | `{c['single_path']}` | {c['source']} |"
        for c in contract.congestion_controls()
    ]
    return "\n".join(out) + "\n"


def traces_page(current: str) -> str:
    """``docs/traces.md`` with its generated column tables replaced."""
    start, end = current.find(_TRACES_START), current.find(_TRACES_END)
    if start < 0 or end < start:
        raise ValueError(f"docs/traces.md lacks the markers {_TRACES_START} ... {_TRACES_END}")
    body = traces.schema_markdown()
    return current[: start + len(_TRACES_START)] + "\n\n" + body + "\n" + current[end:]


def subflow_view_stub() -> str:
    """The stub's ``class SubflowView``, from the contract (markers included)."""
    out = [
        "@final",
        "class SubflowView:",
        '    """One subflow as a Python scheduler sees it (read-only)."""',
        "",
    ]
    for f in contract.subflow_view():
        doc = f.meaning[0].upper() + f.meaning[1:]
        if f.unit:
            doc += f" [{_PLURAL.get(f.unit, f.unit)}]"
        out.append(f"    {f.name}: {f.annotation}")
        out += textwrap.wrap(
            f'"""{doc}."""', width=100, initial_indent="    ", subsequent_indent="    "
        )
    return _VIEW_START + "\n".join(out) + "\n\n" + _VIEW_END


def stub(current: str) -> str:
    """``_native.pyi`` with its generated ``class SubflowView`` replaced."""
    start, end = current.find(_VIEW_START), current.find(_VIEW_END)
    if start < 0 or end < start:
        raise ValueError("_native.pyi lacks the generated class SubflowView's markers")
    return current[:start] + subflow_view_stub() + current[end + len(_VIEW_END) :]


def pages(docs: Path) -> dict[Path, str]:
    """Every generated page, as it should read, and the stub."""
    return {
        docs / "summary.md": summary_markdown(),
        docs / "schedulers.md": schedulers_markdown(),
        docs / "traces.md": traces_page((docs / "traces.md").read_text()),
        docs / "scenario.md": scenario_markdown(),
        _STUB: stub(_STUB.read_text()),
    }


def _claims(
    paths: list[Path], kinds: tuple[str, ...], check: bool, whole: bool, keep_runs: bool
) -> int:
    from mpsched import docclaims

    root = Path.cwd()
    if not (root / "README.md").is_file() or not (root / "scenarios").is_dir():
        print("error: run from the repository's root (README.md, scenarios/)")
        return 2
    try:
        targets = paths or [p for p in docclaims.pages(root) if docclaims.claims(p)]
        for page in targets:
            docclaims.claims(page)
    except (docclaims.ClaimError, OSError) as exc:
        print(f"error: {exc}")
        return 2
    failed = 0
    for page in targets:
        if check:
            for outcome in docclaims.check_page(page, root):
                for mismatch in outcome.mismatches():
                    print(mismatch)
                    failed += 1
                print(f"{outcome.claim.where}: {outcome.seconds:.1f} s")
        else:
            for problem in docclaims.regenerate_page(
                page, root, kinds=kinds, whole=whole, keep_runs=keep_runs
            ):
                print(f"error: {problem}")
                failed += 1
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated pages under ``DOCS`` (default: ``docs`` here), or the claims."""
    parser = argparse.ArgumentParser(prog="python -m mpsched.docgen", description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path, metavar="DOCS|PAGE")
    parser.add_argument(
        "--claims", action="store_true", help="re-run the pages' claims and write their output"
    )
    parser.add_argument(
        "--check", action="store_true", help="with --claims: compare the check claims only"
    )
    parser.add_argument(
        "--kind", choices=("check", "measured"), help="with --claims: only claims of this kind"
    )
    parser.add_argument(
        "--whole",
        action="store_true",
        help="with --claims: a claim whose output changed more than its numbers gets its whole "
        "new output (its ... lines dropped) instead of an error",
    )
    parser.add_argument(
        "--keep-runs",
        action="store_true",
        help="with --claims: move the run directories the claims wrote into ./runs (replacing "
        "those of the same name), for the page's hand-written tables",
    )
    args = parser.parse_args(argv)
    if args.claims or args.check:
        kinds = (args.kind,) if args.kind else ("check", "measured")
        return _claims(args.paths, kinds, args.check, args.whole, args.keep_runs)
    docs = args.paths[0] if args.paths else Path("docs")
    for path, text in pages(docs).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

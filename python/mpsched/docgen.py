"""The reference pages written from the contract: ``docs/summary.md`` (every summary field)
and ``docs/schedulers.md`` (every scheduler and congestion control with its parameters), and
the column tables of ``docs/traces.md``, and ``docs/scenario.md`` (every scenario key, from
the scenario's models). ``tests/test_contract.py`` fails when a page differs
from what this writes; ``python -m mpsched.docgen`` rewrites them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mpsched import contract, traces
from mpsched.scenario.reference import scenario_markdown

_GENERATED = "<!-- Written by `python -m mpsched.docgen` from the native module's contract. -->"
_TRACES_START = "<!-- tables: generated -->"
_TRACES_END = "<!-- end of generated tables -->"

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
        "| scheduler | what it does | source |",
        "| --- | --- | --- |",
    ]
    out += [
        f"| `{s['name']}` | {s['description']} | {s['source']} |" for s in contract.schedulers()
    ]
    out += ["", "## Scheduler parameters", ""]
    out += ["| scheduler | parameter | default | meaning |", "| --- | --- | --- | --- |"]
    for s in contract.schedulers():
        for p in s["params"]:
            out.append(f"| `{s['name']}` | `{p['key']}` | {p['default']} | {p['meaning']} |")
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


def pages(docs: Path) -> dict[Path, str]:
    """Every generated page, as it should read."""
    return {
        docs / "summary.md": summary_markdown(),
        docs / "schedulers.md": schedulers_markdown(),
        docs / "traces.md": traces_page((docs / "traces.md").read_text()),
        docs / "scenario.md": scenario_markdown(),
    }


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated pages under ``DOCS`` (default: ``docs`` here)."""
    args = sys.argv[1:] if argv is None else argv
    docs = Path(args[0]) if args else Path("docs")
    for path, text in pages(docs).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

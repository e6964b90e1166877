"""What the digest scripts share (timer_digest.py, dfrag_digest.py): their command line, which
reads kernel run directories or a digest that `--save` wrote, and prints them.

    python docs/experiments/SCRIPT.py [--save FILE] RUN [RUN ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path


def runs(args: list[Path], digest: Callable[[Path], dict]) -> list[dict]:
    """Each argument's runs: a digest file's, or one run directory read by `digest`."""
    out: list[dict] = []
    for a in args:
        out.extend(json.loads(a.read_text())["runs"] if a.suffix == ".json" else [digest(a)])
    return out


def cli(usage: str, digest: Callable[[Path], dict], show: Callable[[list[dict]], None]) -> None:
    """Reads the runs named on the command line, writes them with `--save FILE`, shows them."""
    args = sys.argv[1:]
    save = None
    if args[:1] == ["--save"] and len(args) > 1:
        save, args = Path(args[1]), args[2:]
    if not args:
        sys.exit(usage)
    kept = runs([Path(a) for a in args], digest)
    if save is not None:
        lines = ",\n".join("  " + json.dumps(r) for r in kept)
        save.write_text('{"runs": [\n' + lines + "\n]}\n")
    show(kept)

"""The programs in the docs run, and still print what the docs say they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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

"""docs/extending.md's claim, done: a scheduler is its own file (with its tests) and two lines
in the registry. The worked example is added to a copy of the core exactly as the guide says,
and the core's tests, which run every registered scheduler (it builds and names itself, its
documented defaults are its defaults, it refuses unknown parameters), pass with it. (The
conservation property runs the same example in crates/mpsched-sim/tests/conservation.rs.)"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "crates" / "mpsched-core"


def _changed(before: Path, after: Path) -> set[str]:
    """Files added or changed under `after` relative to `before`."""
    out = set()
    for path in after.rglob("*"):
        if path.is_file():
            rel = path.relative_to(after)
            old = before / rel
            if not old.exists() or not filecmp.cmp(old, path, shallow=False):
                out.add(str(rel))
    return out


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_the_worked_scheduler_is_one_file_and_two_registry_lines(tmp_path: Path) -> None:
    # The core alone (it depends on nothing), at the same depth below a copy of docs/.
    copy = tmp_path / "crates" / "mpsched-core"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("target"))
    shutil.copytree(ROOT / "docs" / "extending", tmp_path / "docs" / "extending")
    manifest = (copy / "Cargo.toml").read_text()
    (copy / "Cargo.toml").write_text(
        manifest.replace("version.workspace = true", 'version = "0.1.0"')
        .replace("edition.workspace = true", 'edition = "2021"')
        .replace("license.workspace = true", 'license = "MIT"')
        + "\n[workspace]\n"
    )
    pristine = tmp_path / "pristine"
    shutil.copytree(copy, pristine)

    # The guide's two steps.
    sched = copy / "src" / "sched"
    shutil.copy(ROOT / "docs" / "extending" / "widest.rs", sched / "widest.rs")
    registry = (sched / "registry.rs").read_text()
    assert registry.count("    linux::INFO,\n") == 1
    registry = registry.replace(
        '#[path = "linux.rs"]\nmod linux;\n',
        '#[path = "linux.rs"]\nmod linux;\n\n#[path = "widest.rs"]\nmod widest;\n',
    ).replace("    linux::INFO,\n", "    linux::INFO,\n    widest::INFO,\n")
    (sched / "registry.rs").write_text(registry)

    assert _changed(pristine, copy) == {"src/sched/widest.rs", "src/sched/registry.rs"}
    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    run = subprocess.run(
        ["cargo", "test", "--manifest-path", str(copy / "Cargo.toml"), "sched::"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Its own test ran beside the registry's, which iterate the list it is now in.
    assert "sched::registry::widest::tests::min_space_is_read_and_bounded ... ok" in run.stdout
    assert "every_scheduler_s_documented_defaults_are_its_defaults ... ok" in run.stdout

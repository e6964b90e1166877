"""docs/extending.md's claims, done in a copy of the core exactly as the guide says.

A scheduler is its own file (with its tests) and two lines in the registry: the core's tests,
which run every registered scheduler (it builds and names itself, its documented defaults are
its defaults, it refuses unknown parameters), pass with the worked example. (The conservation
property runs the same example in crates/mpsched-sim/tests/conservation.rs.)

A field of the schedulers' view (`SubflowView`) is one file, `sched/mod.rs`: the core's tests
pass with it (they compare every cached view with a fresh one, and fail for a field that is not
kept fresh: shown too), and the table the contract publishes lists it. The Python half is not
built here (the extension takes minutes to build in a copy): pysched.rs builds the Python view
from the same list, and tests/test_contract.py checks that the module's `SubflowView`, the
contract's `subflow_view` and the stub's class have the same attributes and types.
"""

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


def _core_copy(tmp_path: Path) -> tuple[Path, Path]:
    """The core alone (it depends on nothing), at the same depth below a copy of docs/, and a
    pristine copy of it to compare with."""
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
    return copy, pristine


def _cargo_test(copy: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    return subprocess.run(
        ["cargo", "test", "--manifest-path", str(copy / "Cargo.toml"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_the_worked_scheduler_is_one_file_and_two_registry_lines(tmp_path: Path) -> None:
    copy, pristine = _core_copy(tmp_path)

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
    run = _cargo_test(copy, tmp_path, "sched::")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Its own test ran beside the registry's, which iterate the list it is now in.
    assert "sched::registry::widest::tests::min_space_is_read_and_bounded ... ok" in run.stdout
    assert "every_scheduler_s_documented_defaults_are_its_defaults ... ok" in run.stdout


def _add_view_field(mod_rs: str, declaration: str, value: str) -> str:
    """The guide's step for a view field: its line at the end of `subflow_view!`'s field list,
    and its value in `SubflowView::of`."""
    end_of_fields = "    }\n    derived {\n"
    assert mod_rs.count(end_of_fields) == 1
    mod_rs = mod_rs.replace(end_of_fields, f"        {declaration}\n{end_of_fields}")
    of = mod_rs.index("fn of(sf: &SubflowTx")
    literal = mod_rs.index("        SubflowView {\n", of) + len("        SubflowView {\n")
    return mod_rs[:literal] + f"            {value},\n" + mod_rs[literal:]


# The guide's example of a view field (its step 3), as it shows them.
_RTO_FIELD = 'rto: Dur = [rto_ns, "ns", "the retransmission timeout, backed off"],'
_RTO_VALUE = "rto: sf.rtt().rto()"


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_a_view_field_is_one_file(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "extending.md").read_text()
    assert f"```rust\n        {_RTO_FIELD}\n```" in guide
    assert f"```rust\n            {_RTO_VALUE},\n```" in guide
    copy, pristine = _core_copy(tmp_path)
    mod_rs = copy / "src" / "sched" / "mod.rs"
    mod_rs.write_text(_add_view_field(mod_rs.read_text(), _RTO_FIELD, _RTO_VALUE))
    assert _changed(pristine, copy) == {"src/sched/mod.rs"}
    # Every test of the core: the sender's compare the cached views with fresh ones at every
    # decision.
    run = _cargo_test(copy, tmp_path, "--", "--show-output")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "sched::tests::minrtt_fills_the_fast_subflow_first ... ok" in run.stdout
    # The table the contract publishes (`SubflowView::FIELDS`) has it, as Python will see it.
    assert "view field rto_ns <- rto: int [ns] the retransmission timeout, backed off" in run.stdout

    # A field that sending changes, which `after_send` does not refresh, fails those tests.
    mod_rs.write_text(
        _add_view_field(
            mod_rs.read_text(),
            'snd_nxt: u64 = [snd_nxt, "segment", "the next sequence number to send"],',
            "snd_nxt: sf.snd_nxt()",
        )
    )
    run = _cargo_test(copy, tmp_path, "sched::tests::")
    assert run.returncode != 0
    assert "a cached subflow view is stale" in run.stdout + run.stderr

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

A link knob is `link.rs` and the scenario crate's `config.rs` (with their tests) and no Python:
the guide's knob is added to a copy of both crates, whose tests pass, and what the copy
publishes for the contract is fed to Python's models, which take its keys from a scenario
file (tests/test_link_knobs.py does the same with knobs made up in Python).
"""

from __future__ import annotations

import filecmp
import json
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


# docs/extending.md's link knob, "A link knob, worked through": what each step adds, and
# where (after or before an anchor that occurs once in the file).
LINK_FIELD = """\
    /// Bytes each packet takes on the wire besides its own length (netem's `rate R
    /// PACKETOVERHEAD`): framing that costs serialization time, not queue space.
    pub overhead: u64,
"""
LINK_TEST = """\
    #[test]
    fn overhead_takes_serialization_time() {
        let cfg = LinkConfig {
            overhead: 100,
            ..LinkConfig::new(Rate::mbps(32), Dur::from_millis(10), QueueLimit::Packets(9))
        };
        let mut l = Link::new(&cfg, Rng::new(1, 1));
        for i in 0..3 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        // (1500 + 100) B at 32 Mbit/s = 400 us each, then 10 ms.
        let want: Vec<_> = (0..3u64)
            .map(|i| (Time((i + 1) * 400_000 + 10_000_000), i))
            .collect();
        assert_eq!(drain(&mut l), want);
    }

"""
SPEC_FIELD = """\
    /// Bytes each packet takes on the wire besides its own (`LinkConfig::overhead`).
    #[serde(default)]
    pub overhead_bytes: u64,
"""
SPEC_KNOB = """\
    Knob {
        key: "overhead_bytes",
        get: |l| l.overhead_bytes.into(),
        min: None,
        max: None,
        meaning: "Bytes each data packet takes on the wire besides its own length (netem's \\
                  `rate R PACKETOVERHEAD`): framing, which costs serialization time at the \\
                  rate but no queue space.",
    },
"""
SPEC_TEST = """\

    #[test]
    fn the_overhead_reaches_the_link() {
        let json = r#"{"rate_bps": 1, "delay_ns": 0, "loss": 0.0, "queue": {"packets": 1},
            "overhead_bytes": 40}"#;
        let link: LinkSpec = serde_json::from_str(json).unwrap();
        assert_eq!(link.to_link().overhead, 40);
        assert_eq!(LinkSpec::new(1, 0, QueueSpec::Packets(1), 0.0).to_link().overhead, 0);
    }
"""
# (file, before, text, after): where `before + after` is, once, the step makes it
# `before + text + after`.
LINK_KNOB_STEPS = [
    ("crates/mpsched-core/src/link.rs", "    pub reorder: bool,\n", LINK_FIELD, ""),
    ("crates/mpsched-core/src/link.rs", "            reorder: false,\n",
     "            overhead: 0,\n", ""),
    ("crates/mpsched-core/src/link.rs", "    reorder: bool,\n", "    overhead: u64,\n", ""),
    ("crates/mpsched-core/src/link.rs", "            reorder: cfg.reorder,\n",
     "            overhead: cfg.overhead,\n", ""),
    ("crates/mpsched-core/src/link.rs", "self.rate.tx_time(len as u64", " + self.overhead", ");"),
    ("crates/mpsched-core/src/link.rs", "", LINK_TEST,
     "    #[test]\n    fn drop_tail_in_packets_and_bytes_and_time() {\n"),
    ("crates/mpsched-scenario/src/config.rs", "    pub fq_codel: Option<CodelSpec>,\n",
     SPEC_FIELD, ""),
    ("crates/mpsched-scenario/src/config.rs", "    },\n", SPEC_KNOB, "];\n"),
    ("crates/mpsched-scenario/src/config.rs", "            reorder: self.reorder,\n",
     "            overhead: self.overhead_bytes,\n", ""),
    ("crates/mpsched-scenario/src/config.rs",
     '        assert_eq!(e.field, "scenario");\n    }\n', SPEC_TEST, ""),
]  # fmt: skip


def test_the_guide_shows_the_link_knob_it_adds() -> None:
    guide = (ROOT / "docs" / "extending.md").read_text()
    for _, _, text, _ in LINK_KNOB_STEPS:
        assert text.strip() in guide, text


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_a_link_knob_is_link_rs_and_the_scenario_crate_and_no_python(
    tmp_path: Path, scenario_with_knobs
) -> None:
    """docs/extending.md's link knob (a per-packet overhead, in bytes), added to a copy of the
    core and the scenario crate as the guide says: their tests pass with it, the contract's
    list of knobs has it with its type, unit and default, Python's models built from that list
    take `overhead` and `overhead_up` from a scenario file and write `overhead_bytes`, and the
    copy's links are built with it. (Building the whole extension from the copy would take
    minutes: the contract's entry is what Python reads of it, and this feeds it to Python.)"""
    for crate in ("mpsched-core", "mpsched-scenario"):
        shutil.copytree(
            ROOT / "crates" / crate,
            tmp_path / "crates" / crate,
            ignore=shutil.ignore_patterns("target"),
        )
    (tmp_path / "Cargo.toml").write_text(
        '[workspace]\nresolver = "2"\nmembers = ["crates/mpsched-core", "crates/mpsched-scenario"]'
        '\n\n[workspace.package]\nversion = "0.1.0"\nedition = "2021"\nlicense = "MIT"\n'
    )
    shutil.copy(ROOT / "Cargo.lock", tmp_path / "Cargo.lock")  # the versions already fetched
    shutil.copytree(ROOT / "docs" / "extending", tmp_path / "docs" / "extending")  # core's tests
    pristine = tmp_path / "pristine"
    shutil.copytree(tmp_path / "crates", pristine)

    # The guide's steps.
    for file, before, text, after in LINK_KNOB_STEPS:
        path = tmp_path / file
        code = path.read_text()
        assert code.count(before + after) == 1, (file, before + after)
        path.write_text(code.replace(before + after, before + text + after))
    assert _changed(pristine, tmp_path / "crates") == {
        "mpsched-core/src/link.rs",
        "mpsched-scenario/src/config.rs",
    }

    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    manifest = ["--manifest-path", str(tmp_path / "Cargo.toml"), "--offline"]

    def cargo(*args: str) -> str:
        run = subprocess.run(
            ["cargo", *args, *manifest],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        return run.stdout

    out = cargo("test", "-p", "mpsched-core", "--lib", "link::")
    assert "link::tests::overhead_takes_serialization_time ... ok" in out
    out = cargo("test", "-p", "mpsched-scenario")  # builds its example too
    assert "config::tests::the_overhead_reaches_the_link ... ok" in out
    assert "keys::tests::every_knob_reads_the_field_it_names ... ok" in out
    links = tmp_path / "target" / "debug" / "examples" / "links"

    # What the contract would publish: the new knob, with what Python needs to derive its keys.
    knobs = json.loads(subprocess.check_output([links, "knobs"], text=True))
    overhead = next(k for k in knobs if k["key"] == "overhead_bytes")
    assert (overhead["type"], overhead["unit"], overhead["default"]) == ("int", "bytes", 0)
    assert (overhead["min"], overhead["max"]) == (0.0, None)

    # Python, unchanged, built from that list: a scenario file sets it in each direction.
    from mpsched import contract
    from mpsched.errors import ScenarioError

    scenario = scenario_with_knobs([contract.LinkKnob(**k) for k in knobs])
    text = '[[path]]\nname = "a"\nrate = "10Mbps"\nrtt = "10ms"\noverhead = "100B"\n'
    native = scenario.to_native(scenario.load(text + 'overhead_up = "40B"\n'))
    assert native["paths"][0]["down"]["overhead_bytes"] == 100
    assert native["paths"][0]["up"]["overhead_bytes"] == 40
    with pytest.raises(ScenarioError, match=r"^path\[0\]\.overhead_up \('a'\): bad size"):
        scenario.load(text + "overhead_up = 40\n")
    from mpsched.scenario.reference import scenario_markdown  # the one built from `knobs`

    assert '| `overhead_up` | size >= 0 | `"0B"` |' in scenario_markdown()

    # ... and the copy's scenario crate builds its links with it.
    plans = subprocess.run(
        [links, "plans"], input=json.dumps(native), capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [line.split(" ")[:2] for line in plans] == [["a", "down"], ["a", "up"]]
    assert plans[0].endswith("overhead: 100 }") and plans[1].endswith("overhead: 40 }"), plans


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

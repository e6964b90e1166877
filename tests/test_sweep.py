"""Sweeps: the sweep file (grids, space-filling designs), the runner (parallel, resumable, every
finished run kept) and its tables."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mpsched
from mpsched import sweep as sweep_mod
from mpsched.errors import ScenarioError
from mpsched.sweepfile import latin_hypercube, load_sweep

from .conftest import ctrl_c_reaches

ROOT = Path(__file__).resolve().parent.parent

SWEEP = """
[sweep]
title = "small"
scenario = "{scenario}"
repetitions = 2

[[sweep.group]]
name = "grid"
grid = {{ "path.lte.rtt" = ["50ms", "150ms"], "connection.scheduler" = ["minrtt", "rr"] }}
set = {{ "duration" = "2s" }}
"""


def write_sweep(tmp: Path, text: str = SWEEP) -> Path:
    path = tmp / "sweep.toml"
    path.write_text(text.format(scenario=ROOT / "scenarios" / "stms-lab.toml"))
    return path


def test_a_latin_hypercube_puts_one_point_in_every_stratum() -> None:
    design = np.array(latin_hypercube(50, 3, seed=7))
    assert design.shape == (50, 3)
    for column in design.T:
        # Each of the 50 strata [k/50, (k+1)/50) holds exactly one point.
        assert sorted((column * 50).astype(int)) == list(range(50))
    assert latin_hypercube(50, 3, seed=7) == design.tolist()  # deterministic
    assert latin_hypercube(50, 3, seed=8) != design.tolist()


def test_maximin_spreads_the_points_more_than_one_random_hypercube() -> None:
    def gap(d: np.ndarray) -> float:
        dist = np.sqrt(((d[:, None, :] - d[None, :, :]) ** 2).sum(-1))
        np.fill_diagonal(dist, np.inf)
        return float(dist.min())

    best = gap(np.array(latin_hypercube(40, 4, seed=1, candidates=64)))
    single = [gap(np.array(latin_hypercube(40, 4, seed=s, candidates=1))) for s in range(20)]
    assert best >= max(single)


def test_the_paper001_sweep_fills_table1_s_domains() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper001-bulk.toml")
    # 200 settings per environment, each with the three schedulers.
    assert len(sweep.points) == 2 * 200 * 3
    low = [p for p in sweep.points if p.group == "low-BDP"]
    rates = [mpsched.load(None, {"path.wifi.rate": p.factors["path.a.rate"]}).path[0].rate
             for p in low[::3]]  # fmt: skip
    assert min(rates) >= 100_000 and max(rates) <= 100_000_000
    # Space-filling: the 200 rates cover every fifth of the range.
    fifths = {int((r - 100_000) / (99_900_000 / 5)) for r in rates}
    assert fifths >= {0, 1, 2, 3, 4}
    high = [p for p in sweep.points if p.group == "high-BDP"]
    assert max(float(p.factors["path.b.queue"].removesuffix("ms")) for p in high) > 1800


def test_the_paper000_sweep_runs_the_lab_on_both_kernels() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-lab.toml")
    # lab: 2 kernels x 2 LTE RTTs x 3 Wi-Fi buffers x 6 schedulers; table1: 2 x 2 x 3 more
    # buffers x 2 schedulers; tcp-wifi: TCP at Table 1's 4 buffers. Five runs each, as the
    # paper's.
    assert len(sweep.points) == 72 + 24 + 4
    assert sweep.repetitions == 5
    stacks = {p.overrides.get("connection.stack") for p in sweep.points}
    assert stacks == {"out-of-tree", "upstream", None}
    tcp = [p for p in sweep.points if p.overrides.get("connection.protocol") == "tcp"]
    assert sorted(p.overrides["path.wifi.queue"] for p in tcp) == ["150KB", "30KB", "60KB", "90KB"]


def test_the_paper000_interval_sweep_varies_only_stms_a_s_parameters() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-interval.toml")
    # adjust-interval: 2 kernels x 2 recovery_jumps x 8 intervals; reference: 2 x 3 schedulers.
    assert len(sweep.points) == 32 + 6
    tuned = [p for p in sweep.points if p.group == "adjust-interval"]
    assert {p.overrides["connection.scheduler"] for p in tuned} == {"stms-a"}
    intervals = {p.overrides["connection.scheduler_params.adjust_interval"] for p in tuned}
    assert len(intervals) == 8
    # Every point is the paper's Fig. 10 setting, and every interval is a valid parameter.
    assert sweep.overrides == {
        "workload.write_chunk": "128KiB",
        "path.lte.rtt": "200ms",
        "path.wifi.queue": "50ms",
    }
    for p in tuned:
        mpsched.load(None, {**sweep.overrides, **p.overrides})


def test_the_paper000_host_buffer_sweep_sets_both_buffers_to_each_size() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-host-buffer.toml")
    # 9 sizes x (2 kernels x 2 LTE RTTs x 4 schedulers, and 2 kernels of TCP alone).
    assert len(sweep.points) == 9 * 16 + 9 * 2
    sizes = set()
    for p in sweep.points:
        assert p.overrides["connection.sndbuf"] == p.overrides["connection.rcvbuf"]
        sizes.add(p.overrides["connection.sndbuf"])
        mpsched.load(None, {**sweep.overrides, **p.overrides})
    assert len(sizes) == 9 and "6MiB" in sizes
    tcp = [p for p in sweep.points if p.group == "tcp-wifi"]
    assert {p.overrides["connection.protocol"] for p in tcp} == {"tcp"}


def test_the_paper000_rtt_sweep_runs_fig_10b_and_fig_14_s_settings() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-rtt.toml")
    fig10b = [p for p in sweep.points if p.group == "fig10b"]
    fig14 = [p for p in sweep.points if p.group == "fig14"]
    # 2 kernels x 5 RTTs x 4 schedulers, and the same x 3 Wi-Fi buffers.
    assert (len(fig10b), len(fig14)) == (40, 120)
    assert all("path.wifi.queue" not in p.overrides for p in fig10b)  # the lab's 50 ms
    assert {p.overrides["path.wifi.queue"] for p in fig14} == {"30KB", "60KB", "150KB"}
    for p in sweep.points:
        mpsched.load(None, {**sweep.overrides, **p.overrides})


def test_the_paper000_varying_sweep_changes_both_rates_every_10_s() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-varying.toml")
    # 5 configurations x 2 kernels x 4 schedulers, 5 runs each.
    assert len(sweep.points) == 40
    assert sweep.repetitions == 5
    rates = {"5Mbps", "10Mbps", "20Mbps", "30Mbps"}
    for p in sweep.points:
        for path in ("wifi", "lte"):
            changes = p.overrides[f"path.{path}.schedule"]
            assert [c["at"] for c in changes] == [f"{10 * i}s" for i in range(1, 9)]
            assert {c["rate"] for c in changes} | {p.overrides[f"path.{path}.rate"]} <= rates


def test_a_zip_moves_its_keys_together_and_crosses_the_grid(tmp_path: Path) -> None:
    base = ROOT / "scenarios" / "stms-lab.toml"
    path = tmp_path / "zip.toml"
    path.write_text(
        f'[sweep]\nscenario = "{base}"\n[[sweep.group]]\n'
        'zip = { "connection.sndbuf" = ["256KiB", "1MiB"],'
        ' "connection.rcvbuf" = ["256KiB", "1MiB"] }\n'
        'grid = { "connection.scheduler" = ["minrtt", "stms-c"] }\n'
    )
    points = load_sweep(path).points
    pairs = {(p.overrides["connection.sndbuf"], p.overrides["connection.rcvbuf"]) for p in points}
    assert pairs == {("256KiB", "256KiB"), ("1MiB", "1MiB")}
    assert len(points) == 4
    assert {p.overrides["connection.scheduler"] for p in points} == {"minrtt", "stms-c"}


def test_exclude_leaves_out_the_combinations_it_names(tmp_path: Path) -> None:
    base = ROOT / "scenarios" / "stms-lab.toml"
    path = tmp_path / "exclude.toml"
    path.write_text(
        f'[sweep]\nscenario = "{base}"\n[[sweep.group]]\n'
        'grid = { "connection.stack" = ["upstream", "out-of-tree"],'
        ' "connection.scheduler" = ["linux", "minrtt"] }\n'
        'exclude = [{ "connection.stack" = "out-of-tree", "connection.scheduler" = "linux" }]\n'
    )
    chosen = {
        (p.overrides["connection.stack"], p.overrides["connection.scheduler"])
        for p in load_sweep(path).points
    }
    assert chosen == {("upstream", "linux"), ("upstream", "minrtt"), ("out-of-tree", "minrtt")}


def test_a_star_sweeps_every_registered_scheduler(tmp_path: Path) -> None:
    from mpsched import contract

    base = ROOT / "scenarios" / "stms-lab.toml"
    path = tmp_path / "star.toml"
    path.write_text(
        f'[sweep]\nscenario = "{base}"\n[[sweep.group]]\n'
        'grid = { "connection.scheduler" = ["*"], "seed" = [1, 2] }\n'
    )
    names = [p.overrides["connection.scheduler"] for p in load_sweep(path).points]
    assert names[::2] == list(contract.names("schedulers"))


@pytest.mark.parametrize("experiment", ["handover", "lte-trace", "paper004-flows"])
def test_the_every_scheduler_experiments_take_in_every_registered_one(experiment: str) -> None:
    from mpsched import contract

    swept = {
        p.overrides.get("connection.scheduler")
        for p in load_sweep(ROOT / "experiments" / f"{experiment}.toml").points
    }
    assert set(contract.names("schedulers")) <= swept


def test_the_handover_sweep_leaves_out_only_linux_on_the_out_of_tree_stack() -> None:
    points = load_sweep(ROOT / "experiments" / "handover.toml").points
    combos = {
        (p.overrides["connection.stack"], p.overrides["connection.scheduler"]) for p in points
    }
    assert ("out-of-tree", "linux") not in combos
    assert ("upstream", "linux") in combos and ("out-of-tree", "default") in combos
    from mpsched import contract

    assert len(points) == 4 * (2 * len(contract.names("schedulers")) - 1)


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ('grid = { "seed" = [1] }\nexclude = [{ "seed" = 1 }]', "exclude: leaves no point"),
        ('grid = { "seed" = [1] }\nexclude = { "seed" = 1 }', "exclude: a list of non-empty"),
        ('design = "sobol"\npoints = 3\nfactors = { "duration" = ["1s", "2s"] }', "unknown design"),
        ('design = "lhs"\npoints = 3\nfactors = { "duration" = ["1s", "2ms"] }', "same unit"),
        ('design = "lhs"\npoints = 3\nfactors = { "duration" = ["2s", "1s"] }', "low must be"),
        ('design = "lhs"\npoints = 0\nfactors = { "duration" = ["1s", "2s"] }', "points"),
        ('design = "lhs"\npoints = 3\nfactors = { "duration" = ["1s"] }', "[low, high]"),
        ('factors = { "duration" = ["1s", "2s"] }', "needs design"),
        ('name = "x"', "needs a grid, a zip, a design, or several"),
        ('zip = { "duration" = ["1s", "2s"], "seed" = [1] }', "zip.seed: 1 values where duration"),
        ('zip = { "duration" = [] }', "zip.duration: a non-empty list"),
        ("zip = []", "zip: a table"),
        ('grid = { "path.lte.rtt" = [] }', "non-empty"),
        ('grid = { "path.lte.rtt" = ["-5ms"] }', "path[1].rtt"),
        ('grid = { "x" = [1] }\nbogus = 1', "bogus: unknown key"),
    ],
)
def test_bad_sweep_files_name_the_field(tmp_path: Path, group: str, message: str) -> None:
    base = ROOT / "scenarios" / "stms-lab.toml"
    text = f'[sweep]\nscenario = "{base}"\n[[sweep.group]]\n{group}\n'
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_sweep(path)


def test_a_sweep_runs_every_point_and_repetition_as_mpsched_run_would(tmp_path: Path) -> None:
    result = sweep_mod.run_sweep(write_sweep(tmp_path), tmp_path / "out", jobs=2)
    assert (result.total, result.done, result.failed, result.interrupted) == (8, 8, 0, False)
    runs = result.results
    assert len(runs) == 8
    assert set(runs["scheduler"]) == {"minrtt", "rr"}
    assert set(runs["path.lte.delay_down_ns"]) == {25_000_000, 75_000_000}
    assert set(runs["rep"]) == {0, 1} and set(runs["seed"]) == {1, 2}
    # Each row is exactly the summary of that point's run.
    row = runs[(runs["scheduler"] == "rr") & (runs["set.path.lte.rtt"] == "150ms")].iloc[1]
    alone = mpsched.run(
        duration="2s", scheduler="rr", seed=int(row["seed"]), **{"path.lte.rtt": "150ms"}
    ).summary
    assert row["goodput_mbps"] == alone["goodput_mbps"]
    assert row["ooo_delay_ms.p99"] == alone["ooo_delay_ms"]["p99"]
    sub = result.subflows
    assert len(sub) == 16 and set(sub["name"]) == {"wifi", "lte"}
    mine = sub[sub["key"] == row["key"]].sort_values("subflow")
    assert list(mine["bytes_delivered"]) == [s["bytes_delivered"] for s in alone["subflows"]]


def test_a_worker_process_that_dies_costs_its_run_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers are fresh interpreters: one that dies with a run (a crash of the native code,
    # the OOM killer) fails that run only; a new worker takes the next. Here the first four
    # worker processes die at once, the others work.
    crashing = tmp_path / "python"
    crashing.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "for n in range(4):\n"
        "    try:\n"
        f"        os.close(os.open('{tmp_path}/died-' + str(n), os.O_CREAT | os.O_EXCL))\n"
        "        os._exit(3)\n"
        "    except FileExistsError:\n"
        "        pass\n"
        "from mpsched.sweep_worker import main\n"
        "main()\n"
    )
    crashing.chmod(0o755)
    monkeypatch.setattr(sweep_mod.sys, "executable", str(crashing))
    result = sweep_mod.run_sweep(write_sweep(tmp_path), tmp_path / "out", jobs=2)
    assert result.done == result.total == 8 and not result.interrupted
    errors = list(result.results["error"].dropna())
    assert errors == ["worker process died (exit code 3)"] * 4 and result.failed == 4
    # The runs the surviving workers did are whole.
    ok = result.results[result.results["error"].isna()]
    assert len(ok) == 4 and ok["goodput_mbps"].gt(0).all()


def test_one_worker_and_two_give_the_same_tables(tmp_path: Path) -> None:
    a = sweep_mod.run_sweep(write_sweep(tmp_path), tmp_path / "a", jobs=1).results
    b = sweep_mod.run_sweep(write_sweep(tmp_path), tmp_path / "b", jobs=2).results
    pd.testing.assert_frame_equal(a, b)


def test_an_interrupted_sweep_keeps_its_runs_and_resumes(tmp_path: Path) -> None:
    path = write_sweep(tmp_path)
    full = sweep_mod.run_sweep(path, tmp_path / "full", jobs=1).results

    def interrupt_after_three(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    out = tmp_path / "cut"
    cut = sweep_mod.run_sweep(path, out, jobs=1, progress=interrupt_after_three)
    assert cut.interrupted and cut.done == 3
    assert len(cut.results) == 3
    assert len((out / "runs.jsonl").read_text().splitlines()) == 3
    # Without --resume the directory is refused; with it, only the rest runs.
    with pytest.raises(ScenarioError, match="resume"):
        sweep_mod.run_sweep(path, out, jobs=1)
    ran: list[int] = []
    done = sweep_mod.run_sweep(path, out, jobs=2, resume=True, progress=lambda d, t: ran.append(d))
    assert (done.done, done.interrupted) == (8, False)
    assert ran[0] == 3  # started from the three kept runs
    pd.testing.assert_frame_equal(done.results, full)


def _pids_of(command: str) -> list[str]:
    """The processes whose command line contains ``command``."""
    found = subprocess.run(["pgrep", "-f", command], capture_output=True, text=True, check=False)
    return found.stdout.split()


def test_ctrl_c_stops_the_command_and_keeps_the_finished_runs(tmp_path: Path) -> None:
    text = SWEEP.replace('"duration" = "2s"', '"duration" = "20s"').replace(
        '["minrtt", "rr"]', '["minrtt", "rr", "default", "bm", "blest", "ecf"]'
    )
    path = write_sweep(tmp_path, text.replace("repetitions = 2", "repetitions = 4"))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsched", "sweep", str(path), "--out", str(out), "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches,  # noqa: PLW1509
    )
    journal = out / "runs.jsonl"
    deadline = time.monotonic() + 120
    while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no two runs finished in 120 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    kept = journal.read_text().splitlines()
    assert 2 <= len(kept) < 48
    assert len(pd.read_parquet(out / "results.parquet")) == len(kept)
    # No worker is left behind: they are gone soon after the command (10 s on a loaded machine).
    deadline = time.monotonic() + 10
    while (left := _pids_of(f"sweep {path}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


def test_the_command_reports_and_refuses_bad_input(tmp_path: Path) -> None:
    path = write_sweep(tmp_path)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mpsched", "sweep", str(path), "--out", str(out)]
    done = subprocess.run(
        [*cmd, "--set", "duration=1s"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "8 of 8 runs" in done.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert again.returncode == 2 and "--resume" in again.stderr
    bad = subprocess.run(
        [*cmd, "--resume", "--set", "connection.schedulr=rr"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error:")
    assert "schedulr" in bad.stderr


def test_the_ray_backend_sends_the_same_runs(tmp_path: Path, monkeypatch) -> None:
    """Against a stand-in for Ray that runs each task in this process, and loses the first
    attempt of one run as a dead node would (tests/test_ray.py runs a real two-node cluster)."""
    calls: dict[str, object] = {"submitted": 0}

    class RayError(Exception):
        pass

    class RayTaskError(RayError):
        pass

    class Ref:
        def __init__(self, value: object, lost: bool = False) -> None:
            self.value, self.lost = value, lost

    def remote(**options):
        calls["options"] = options

        def wrap(fn):
            def submit(*a):
                calls["submitted"] += 1
                return Ref(fn(*a), lost=calls["submitted"] == 3)

            return types.SimpleNamespace(remote=submit)

        return wrap

    def get(ref):
        if ref.lost:
            raise RayError("the node died")
        return ref.value

    exceptions = types.SimpleNamespace(RayError=RayError, RayTaskError=RayTaskError)
    fake = types.SimpleNamespace(
        init=lambda **kw: calls.setdefault("init", kw),
        remote=remote,
        wait=lambda refs, num_returns: (refs[:num_returns], refs[num_returns:]),
        get=get,
        cancel=lambda ref, force: None,
        exceptions=exceptions,
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.exceptions", exceptions)
    path = write_sweep(tmp_path)
    via_ray = sweep_mod.run_sweep(path, tmp_path / "ray", backend="ray", ray_address="ray://x")
    local = sweep_mod.run_sweep(path, tmp_path / "local", jobs=1)
    assert calls["init"]["address"] == "ray://x"
    assert calls["options"] == {"max_retries": 3}
    assert calls["submitted"] == 9  # 8 runs, one of them twice
    pd.testing.assert_frame_equal(via_ray.results, local.results)


def test_without_ray_the_error_names_the_extra_that_installs_it(tmp_path: Path, monkeypatch):
    import tomllib

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    with pytest.raises(ScenarioError, match=r"pip install 'mpsched\[ray\]'"):
        sweep_mod.run_sweep(write_sweep(tmp_path), tmp_path / "out", backend="ray")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("ray") for d in extras["optional-dependencies"]["ray"])


def test_results_load_back_from_the_journal(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sweep_mod.run_sweep(write_sweep(tmp_path), out, jobs=2)
    (out / "results.parquet").unlink()
    again = sweep_mod.load_results(out)
    assert again.done == 8 and len(again.results) == 8
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["runs"] == 8 and meta["title"] == "small"


def test_the_paper000_wild_sweep_downloads_200_mb_over_table2_s_paths() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-wild.toml")
    wild = [p for p in sweep.points if p.group == "wild"]
    # 2 kernels x 5 LTE RTTs x 4 schedulers, and TCP alone on Wi-Fi on both kernels.
    assert (len(wild), len(sweep.points)) == (40, 42)
    rtts = {p.overrides["path.lte.rtt"] for p in wild}
    assert rtts == {"70ms", "120ms", "170ms", "270ms", "370ms"}
    for p in sweep.points:
        sc = mpsched.load(None, {**sweep.overrides, **p.overrides})
        assert sc.workload.size == 200_000_000
        assert (sc.path[0].rate, sc.path[1].rate) == (40_000_000, 30_000_000)


def test_the_paper003_sweep_varies_the_router_and_receive_buffers() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper003-rcvbuf.toml")
    # 3 router buffers x 9 receive buffers x 4 schedulers, once each (nothing random).
    assert len(sweep.points) == 3 * 9 * 4
    assert sweep.repetitions == 1
    for p in sweep.points:
        sc = mpsched.load(sweep.base, p.overrides)
        assert [x.name for x in sc.path] == ["eth", "usb"]
        assert sc.connection.congestion == "lia" and sc.connection.stack == "out-of-tree"


def test_the_paper004_sweep_covers_figs_4_5_7_and_8() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper004-flows.toml")
    groups = {p.group for p in sweep.points}
    assert groups == {"fig5a", "fig5b", "fig7", "fig4", "fig8", "all-schedulers"}
    assert sweep.repetitions == 10
    for p in sweep.points:
        sc = mpsched.load(sweep.base, p.overrides)
        assert len(sc.path) == 8
        # The main connection and 29 competing flows, except in Fig. 8's count sweep.
        if p.group != "fig8":
            assert sc.flow[0].count == 29
        native = mpsched.to_native(sc)
        assert native["loss_recovery"] in ("linux", "classic")
    every = {
        p.overrides["connection.scheduler"] for p in sweep.points if p.group == "all-schedulers"
    }
    assert every == {info.name for info in mpsched.schedulers()}
    fig5b = [p for p in sweep.points if p.group == "fig5b"]
    sc = mpsched.load(sweep.base, fig5b[0].overrides)
    assert {p.rate for p in sc.path} == {10_000_000}
    assert min(p.delays()[1] for p in sc.path) == 100_000_000


def test_the_paper004_wireless_sweep_is_wlan_and_lte_with_poisson_arrivals() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper004-wireless.toml")
    from mpsched import contract

    every = len(contract.names("schedulers"))
    assert len(sweep.points) == 2 * 4 + every and sweep.repetitions == 20
    sc = mpsched.load(sweep.base, sweep.points[0].overrides)
    assert [(p.name, p.rate) for p in sc.path] == [("wlan", 6_000_000), ("lte", 36_700_000)]
    assert sc.workload.size == 15_000_000
    native = mpsched.to_native(sc)
    starts = [f["start_ns"] for f in native["flows"]]
    assert len(starts) == 29 and starts == sorted(starts) and len(set(starts)) == 29


def test_the_paper000_latency_sweep_changes_latency_and_jitter_together() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper000-latency.toml")
    assert len(sweep.points) == 5 * 2 * 4 and sweep.repetitions == 5
    for p in sweep.points:
        overrides = {**sweep.overrides, **p.overrides}
        native = mpsched.to_native(mpsched.load(sweep.base, overrides))
        assert native["duration_ns"] == 90 * 10**9
        for path in native["paths"]:
            # 40% of each direction's one-way delay, at the start and at every change.
            assert path["down"]["jitter_ns"] == round(0.4 * path["down"]["delay_ns"])
            assert path["up"]["jitter_ns"] == round(0.4 * path["up"]["delay_ns"])
            assert [c["at_ns"] for c in path["schedule"]] == [k * 10**10 for k in range(1, 9)]
            for c in path["schedule"]:
                assert c["jitter_down_ns"] == round(0.4 * c["delay_down_ns"])


def test_the_paper001_app_sweep_is_the_high_bdp_design_with_a_rate_limited_source() -> None:
    sweep = load_sweep(ROOT / "experiments" / "paper001-app.toml")
    bulk = load_sweep(ROOT / "experiments" / "paper001-bulk.toml")
    # The bulk sweep's high-BDP settings, each at 2 warm-ups x 2 rates x 4 schedulers.
    high = [p for p in bulk.points if p.group == "high-BDP"]
    assert len(sweep.points) == len(high) // 3 * 2 * 2 * 4
    settings = {tuple(sorted(p.factors.items())) for p in high}
    for p in sweep.points:
        native = mpsched.to_native(mpsched.load(sweep.base, {**sweep.overrides, **p.overrides}))
        assert native["workload"]["kind"] == "rate" and native["workload"]["block_bytes"] == 8192
        design = {k: v for k, v in p.factors.items() if k.startswith("path.")}
        assert tuple(sorted(design.items())) in {
            tuple((k, v) for k, v in s if k.startswith("path.")) for s in settings
        }


def test_a_sweep_without_a_terminal_prints_a_line_per_tenth() -> None:
    import io

    from mpsched.cli.progress import SweepLines

    stream = io.StringIO()
    lines = SweepLines(stream=stream)
    for done in range(1, 41):
        lines(done, 40)
    printed = stream.getvalue().splitlines()
    assert len(printed) == 10
    assert printed[0].startswith("sweep: 4 of 40 runs (10%), ")
    assert printed[-1].startswith("sweep: 40 of 40 runs (100%), ")
    assert "left" not in printed[-1]


def test_trace_files_in_a_sweep_are_read_from_their_files_folders(tmp_path: Path) -> None:
    """The base scenario's traces from its folder, the sweep's own values from the sweep's."""
    from mpsched.sweepfile import load_sweep

    (tmp_path / "scen").mkdir()
    (tmp_path / "scen" / "a.trace").write_text("1\n2\n")
    (tmp_path / "scen" / "base.toml").write_text(
        '[[path]]\nname = "lte"\nrtt = "20ms"\nrate = "10Mbps"\ntrace = "a.trace"\n'
    )
    (tmp_path / "b.trace").write_text("1\n")
    (tmp_path / "sweep.toml").write_text(
        '[sweep]\nscenario = "scen/base.toml"\n'
        '[[sweep.group]]\nname = "g"\ngrid = { "path.lte.trace_up" = ["b.trace"] }\n'
    )
    sweep = load_sweep(tmp_path / "sweep.toml")
    assert sweep.base["path"][0]["trace"] == str(tmp_path / "scen" / "a.trace")
    (point,) = sweep.points
    assert point.overrides["path.lte.trace_up"] == str(tmp_path / "b.trace")


def test_the_list_gives_each_experiment_its_runs_and_one_line_description() -> None:
    from mpsched.sweep import tasks_of
    from mpsched.sweepfile import EXPERIMENTS, experiments

    done = subprocess.run(
        [sys.executable, "-m", "mpsched", "sweep", "--list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0]: line for line in done.stdout.splitlines() if "runs" in line}
    assert sorted(listed) == experiments()
    for name, line in listed.items():
        sweep = load_sweep(EXPERIMENTS / f"{name}.toml")
        assert line.rstrip().endswith(sweep.title), line
        runs = int(line.split()[1].replace(",", ""))
        if name in ("rfc6356", "lte-trace", "handover"):  # the list counts as the sweep runs
            assert runs == len(tasks_of(sweep))
        else:
            assert runs == len(sweep.points) * (sweep.repetitions or 1)


def test_the_experiments_headers_name_commands_that_exist_and_no_sizes() -> None:
    """The sizes were stale comments ("300 runs" for 500); `sweep --list` prints them now."""
    from mpsched.sweepfile import EXPERIMENTS, experiments

    for path in sorted(EXPERIMENTS.glob("*.toml")):
        for line in path.read_text().splitlines():
            if not line.startswith("#   mpsched sweep "):
                continue
            target = line.split()[3]
            assert target in experiments(), f"{path.name}: {line}"
            assert "#" not in line[1:], f"{path.name}: a size in a comment goes stale: {line}"

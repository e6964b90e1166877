"""`mpsched plot` and `mpsched compare` on real runs: which plots, legible sizes, the index page."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import mpsched
from mpsched.plot import PLOTS, compare_labels, compare_runs, plot_run, plot_scheduler
from mpsched.scheduler import MinRtt
from mpsched.traces import load_run

pytest.importorskip("matplotlib")

ALWAYS = {
    "throughput",
    "subflow_state",
    "queues",
    "buffers",
    "delays",
    "data_ack",
    "free_cwnd",
    "bursts",
    "totals",
}


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


class Recording(MinRtt):
    def next(self, ctx):
        decision = super().next(ctx)
        ctx.record("gap", float(len(ctx.subflows)))
        return decision


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    out = {
        "default": root / "default",
        "rr": root / "rr",
        "recording": root / "recording",
        "bare": root / "bare",
    }
    mpsched.run(None, out=out["default"], duration="2s", rcvbuf="1MiB", benefit=True)
    mpsched.run(None, out=out["rr"], duration="2s", rcvbuf="1MiB", scheduler="rr")
    mpsched.run(None, out=out["recording"], duration="1s", scheduler=Recording())
    mpsched.run(None, out=out["bare"], duration="1s", trace=False)
    return out


def test_plot_run_draws_every_plot_that_applies(runs: dict[str, Path]) -> None:
    written = plot_run(runs["default"])
    folder = runs["default"] / "plots"
    assert written[-1] == folder / "index.html"
    assert {p.stem for p in written[:-1]} == ALWAYS  # no scheduler values: no scheduler plot
    for path in written[:-1]:
        width, height = png_size(path)
        assert width >= 1200 and height >= 500, (path.name, width, height)  # 9 in at 150 dpi
    page = (folder / "index.html").read_text()
    for path in written[:-1]:
        assert f'src="{path.name}"' in page
    assert "aggregation benefit" in page


def test_scheduler_values_get_a_plot(runs: dict[str, Path]) -> None:
    run = load_run(runs["recording"])
    figure = plot_scheduler([run], ["recording"])
    assert figure is not None
    assert [ax.get_title() for ax in figure.axes] == ["gap"]
    assert plot_scheduler([load_run(runs["rr"])], ["rr"]) is None
    assert list(PLOTS)[-1] == "scheduler"


def test_a_run_without_traces_gets_its_totals(runs: dict[str, Path], tmp_path: Path) -> None:
    written = plot_run(runs["bare"], tmp_path)
    assert [p.name for p in written] == ["totals.png", "index.html"]


def test_compare(runs: dict[str, Path], tmp_path: Path) -> None:
    written = compare_runs([runs["default"], runs["rr"]], tmp_path)
    assert {p.stem for p in written[:-1]} == ALWAYS
    page = (tmp_path / "index.html").read_text()
    assert "<td>default</td>" in page and "<td>rr</td>" in page
    with pytest.raises(ValueError, match="2 labels for 1 runs"):
        compare_runs([runs["rr"]], tmp_path / "bad", labels=["a", "b"])


def test_compare_labels(runs: dict[str, Path]) -> None:
    twice = [load_run(runs["rr"]), load_run(runs["rr"])]
    assert compare_labels(twice) == ["rr (rr)", "rr (rr)"]
    assert compare_labels([load_run(runs["rr"]), load_run(runs["default"])]) == ["rr", "default"]


def test_cli_plot_and_compare(run_cli, runs: dict[str, Path], tmp_path: Path) -> None:
    # Runs without traces keep this quick: only their totals are drawn.
    outcome = run_cli("plot", str(runs["bare"]), "--out", str(tmp_path / "one"))
    assert outcome.code == 0, outcome
    assert outcome.out.splitlines() == [
        f"wrote {tmp_path / 'one' / 'totals.png'}",
        f"wrote {tmp_path / 'one' / 'index.html'}",
    ]
    outcome = run_cli(
        "compare",
        str(runs["bare"]),
        str(runs["bare"]),
        "--out",
        str(tmp_path / "two"),
        "--label",
        "first",
        "--label",
        "second",
    )
    assert outcome.code == 0, outcome
    assert "<td>second</td>" in (tmp_path / "two" / "index.html").read_text()
    again = run_cli("compare", str(runs["bare"]), "--out", str(tmp_path / "two"))
    assert again.code == 2 and "the folder is not empty" in again.err and "--force" in again.err
    assert "<td>second</td>" in (tmp_path / "two" / "index.html").read_text()
    forced = run_cli("compare", str(runs["bare"]), "--out", str(tmp_path / "two"), "--force")
    assert forced.code == 0, forced
    assert "<td>second</td>" not in (tmp_path / "two" / "index.html").read_text()
    missing = run_cli("plot", str(tmp_path / "nothing"))
    assert missing.code == 2
    assert missing.err.startswith("error: ") and "not a run directory" in missing.err
    labels = run_cli("compare", str(runs["rr"]), "--label", "a", "--label", "b")
    assert labels.code == 2 and "--label: 2 labels for 1 runs" in labels.err


def test_competing_flows_get_a_plot_from_the_summary_alone(tmp_path: Path) -> None:
    scenario = Path(mpsched.__file__).parent / "experiments" / "paper004-wlan-lte.toml"
    mpsched.run(scenario, out=tmp_path / "run", trace=False, **{"flow.0.count": 5})
    written = plot_run(tmp_path / "run")
    assert [p.name for p in written] == ["totals.png", "flows.png", "index.html"]
    width, height = png_size(written[1])
    assert width >= 1200 and height >= 500
    # (Without competing flows there is no flows plot: see the bare run above.)


def test_figures_of_a_result_in_memory_match_those_of_its_run_directory(tmp_path: Path) -> None:
    from mpsched.plot import figures

    in_memory = mpsched.run(duration="3s", trace=True)
    on_disk = mpsched.run(duration="3s", out=tmp_path / "run")
    drawn = figures(in_memory)
    assert list(drawn) == list(figures(on_disk)) == list(figures(tmp_path / "run"))
    assert {"throughput", "queues", "delays", "totals"} <= set(drawn)
    memory_lines = [line.get_xydata() for line in drawn["throughput"].axes[0].get_lines()]
    disk_lines = [line.get_xydata() for line in figures(on_disk)["throughput"].axes[0].get_lines()]
    assert len(memory_lines) == len(disk_lines) > 0
    for a, b in zip(memory_lines, disk_lines, strict=True):
        assert (a == b).all()
    both = figures(in_memory, mpsched.run(duration="3s", scheduler="rr"), labels=["lowrtt", "rr"])
    assert list(both) == list(drawn)  # the untraced run shows in the totals only
    totals = both["totals"].axes[0].get_legend_handles_labels()[1] or [
        t.get_text() for t in both["totals"].axes[0].get_xticklabels()
    ]
    assert any("rr" in label for label in totals), totals
    with pytest.raises(ValueError, match="1 labels for 2 runs"):
        figures(in_memory, in_memory, labels=["one"])


def test_a_fast_sawtooth_is_drawn_as_its_range_and_mean() -> None:
    """The send buffer refills in blocks every few hundred ms: over a minute a line of it is a
    solid band, so the panel draws each bin's range and mean instead."""
    import numpy as np

    from mpsched.plot import _envelope

    t_ns = np.arange(6000, dtype=np.int64) * 10_000_000  # 60 s sampled every 10 ms
    saw = 3000 + (np.arange(6000) % 37) * 40.0  # period 370 ms, 3000..4440
    centers, lo, mean, hi, width = _envelope(t_ns, saw, bins=200)
    assert len(centers) == 200 and width == pytest.approx(0.29995)
    assert lo.min() == 3000 and hi.max() == 4440
    assert np.all(lo <= mean) and np.all(mean <= hi)
    assert abs(mean.mean() - saw.mean()) < 10


def test_plots_shade_outages_and_mark_the_schedule_s_changes(tmp_path: Path) -> None:
    from mpsched.plot import figures, schedule_marks

    root = Path(__file__).resolve().parent.parent / "scenarios"
    outage = mpsched.run(root / "wifi-outage.toml", out=tmp_path / "o", duration="12s")
    changes = mpsched.run(root / "handover.toml", out=tmp_path / "h", duration="23s")
    runs = [load_run(tmp_path / "o"), load_run(tmp_path / "h")]
    # wifi-outage: Wi-Fi down from 5 s to 10 s; handover: Wi-Fi's rate and delay change.
    assert schedule_marks(runs[:1]).outages == ((5.0, 10.0, "wifi down"),)
    assert schedule_marks(runs[1:]).changes[:2] == (
        (10.0, "wifi: 5 Mbit/s, delay 40 ms"),
        (15.0, "wifi: 1 Mbit/s, delay 100 ms"),
    )
    assert not schedule_marks(runs[1:]).outages
    for result, expect in [(outage, "wifi down"), (changes, "wifi: 5 Mbit/s, delay 40 ms")]:
        drawn = figures(result)
        assert drawn
        for name in ("throughput", "queues", "subflow_state"):
            fig = drawn[name]
            texts = [t.get_text() for ax in fig.axes for t in ax.texts]
            assert texts.count(expect) == 1, (name, texts)  # named once, on the top panel
            time_axes = [ax for ax in fig.axes if ax.get_xlim()[1] > 5]
            if result is outage:  # a grey span over 5-10 s on every time panel
                spans = [p.get_x() for ax in time_axes for p in ax.patches if p.get_alpha() == 0.2]
                assert spans == [5.0] * len(time_axes), (name, spans)
            else:  # a dotted line at each change on every time panel
                lines = [
                    ln.get_xdata()[0]
                    for ax in time_axes
                    for ln in ax.lines
                    if ln.get_linestyle() == ":" and ln.get_xdata()[0] == ln.get_xdata()[1]
                ]
                assert lines.count(10.0) == len(time_axes), (name, lines)
    # A run without a schedule has no marks.
    assert schedule_marks([load_run(tmp_path / "o")]).changes == ()

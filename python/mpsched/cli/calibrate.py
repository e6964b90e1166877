"""``mpsched calibrate``: scenarios on the kernel and in the simulator, side by side (needs
root)."""

from __future__ import annotations

from pathlib import Path

import click

from ..sweepfile import overrides_of
from ..testbed.calibrate import calibrate, load_target, render
from ..testbed.kernel import TestbedError
from ..testbed.suite import run_suite
from .options import override_options

__all__ = ["calibrate_command"]


@click.command("calibrate")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repetitions", "-n", type=click.IntRange(1, 100), help="Runs per point and side.")
@override_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of report.md and report.json.  [default: calibration]",
)
@click.option("--resume", is_flag=True, help="Keep the runs already in DIR/report.json.")
@click.option(
    "--rerun-sim",
    is_flag=True,
    help="Keep the kernel runs of DIR/report.json and simulate every point again.",
)
@click.option(
    "--transport",
    is_flag=True,
    help="A third side: mpsched's own transport over UDP (serve/get) with the simulator's "
    "scheduler, over the same emulated paths.",
)
@click.option(
    "--suite",
    is_flag=True,
    help="TARGET is a suite file: run every report it lists (into their own directories) "
    "and write SUITE.md/SUITE.json beside it with a verdict per point.",
)
@click.option(
    "--kernel-again",
    is_flag=True,
    help="With --suite: keep every run, and run each repetition of every point whose "
    "retransmissions differ once more on the kernel, same seed (the kernel's own spread).",
)
@click.option(
    "--sim-scheduler",
    metavar="NAME",
    help="Simulator scheduler (default: linux if the simulator has it, else minrtt).",
)
def calibrate_command(
    target: Path,
    repetitions: int | None,
    duration: str | None,
    sets: tuple[str, ...],
    out: Path | None,
    resume: bool,
    rerun_sim: bool,
    transport: bool,
    suite: bool,
    kernel_again: bool,
    sim_scheduler: str | None,
) -> None:
    """Run TARGET (a scenario or a sweep file) on the kernel and in the simulator (needs root).

    Writes DIR/report.md and DIR/report.json with both sides' goodput, per-path share,
    retransmissions and RTTs, and the kernel/simulator goodput ratio per point.

    With --suite, TARGET lists the reports (docs/calibration/suite.toml): each is run as its
    own calibrate, and the suite's report gives per point the goodput and retransmission
    verdicts.
    """
    if kernel_again and not suite:
        raise click.UsageError("--kernel-again: only with --suite")
    if suite:
        given = {
            "--out": out is not None,
            "--repetitions": repetitions is not None,
            "--duration": duration is not None,
            "--set": bool(sets),
            "--transport": transport,
            "--sim-scheduler": sim_scheduler is not None,
        }
        clash = [name for name, on in given.items() if on]
        if clash:
            raise click.UsageError(
                f"{', '.join(clash)}: a suite's entries say these themselves (edit {target})"
            )
        try:
            run_suite(
                target,
                resume=resume,
                rerun_sim=rerun_sim,
                kernel_again=kernel_again,
                progress=lambda line: click.echo(line, err=True),
            )
        except TestbedError as exc:
            raise click.ClickException(str(exc)) from None
        md = target.with_suffix(".md")
        click.echo(f"wrote {md} and {target.with_suffix('.json')}", err=True)
        click.echo(md.read_text(), nl=False)
        return
    out = out or Path("calibration")
    sweep = load_target(target)
    overrides = overrides_of(duration, sets)
    try:
        report = calibrate(
            sweep,
            out,
            repetitions=repetitions,
            overrides=overrides,
            resume=resume,
            rerun_sim=rerun_sim,
            transport=transport,
            sim_scheduler=sim_scheduler,
            progress=lambda line: click.echo(line, err=True),
        )
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {out / 'report.md'} and {out / 'report.json'}", err=True)
    click.echo(render(report["meta"], report["rows"]))

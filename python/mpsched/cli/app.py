"""The ``mpsched`` command group and its entry point, which turns every error into one line.

Bad input is reported as one ``error: ...`` line on stderr with exit code 2; an internal failure
of the simulator as ``error: internal: ...`` with exit code 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from .. import __version__
from ..errors import ScenarioError
from .bench import bench_command
from .calibrate import calibrate_command
from .emulate import emulate_command
from .plot import compare_command, plot_command
from .run import run_command
from .schedulers import schedulers_command
from .schema import schema_command
from .sweep import sweep_command
from .table import table_command
from .transport import get_command, keygen_command, serve_command

__all__ = ["cli", "main"]


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    commands=[
        run_command,
        schedulers_command,
        bench_command,
        emulate_command,
        calibrate_command,
        serve_command,
        get_command,
        keygen_command,
        sweep_command,
        plot_command,
        compare_command,
        table_command,
        schema_command,
    ],
)
@click.version_option(version=__version__, prog_name="mpsched")
def cli() -> None:
    """mpsched: a multipath TCP simulator for studying packet schedulers."""


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the CLI; turn every error into one ``error:`` line and an exit code."""
    try:
        code = cli.main(args=argv, prog_name="mpsched", standalone_mode=False)
    except ScenarioError as exc:
        _fail(str(exc), 2)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except RuntimeError as exc:
        _fail(f"internal: {exc}", 1)
    except BrokenPipeError:  # e.g. `mpsched run --json | head -1`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

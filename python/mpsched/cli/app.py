"""The ``mpsched`` command group and its entry point, which turns every error into one line.

Bad input is reported as one ``error: ...`` line on stderr with exit code 2; an internal failure
of the simulator as ``error: internal: ...`` with exit code 1.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from ..errors import ScenarioError

__all__ = ["cli", "main"]

# Each command's module and object, imported when the command runs (or help lists it):
# `mpsched get` does not pay for the simulator's imports.
_COMMANDS = {
    "run": ("run", "run_command"),
    "schedulers": ("schedulers", "schedulers_command"),
    "bench": ("bench", "bench_command"),
    "emulate": ("emulate", "emulate_command"),
    "calibrate": ("calibrate", "calibrate_command"),
    "serve": ("transport", "serve_command"),
    "get": ("transport", "get_command"),
    "sweep": ("sweep", "sweep_command"),
    "plot": ("plot", "plot_command"),
    "compare": ("plot", "compare_command"),
    "table": ("table", "table_command"),
    "schema": ("schema", "schema_command"),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = _COMMANDS.get(cmd_name)
        if spec is None:
            return None
        command: click.Command = getattr(
            importlib.import_module(f".{spec[0]}", __package__), spec[1]
        )
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mpsched", prog_name="mpsched")
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

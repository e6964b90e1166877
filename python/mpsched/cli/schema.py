"""``mpsched schema``: the JSON Schema of scenario files, for editors and CI checks."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..scenario.schema import scenario_schema

__all__ = ["schema_command"]


@click.command("schema")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the schema to this file instead of standard output.",
)
def schema_command(out: Path | None) -> None:
    """Print the JSON Schema of scenario files (for TOML editors: `#:schema FILE`)."""
    text = json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)

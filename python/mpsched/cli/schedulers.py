"""``mpsched schedulers``: the packet schedulers the simulator has."""

from __future__ import annotations

import json
import textwrap

import click

from .. import api

__all__ = ["schedulers_command"]

#: The table fits a terminal this wide; ``--json`` has every field unabridged.
WIDTH = 100


@click.command("schedulers")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print name, description, parameters and source of each, as JSON.",
)
def schedulers_command(as_json: bool) -> None:
    """List the packet schedulers: name, what it does, the parameters it takes.

    Each name can be set as `connection.scheduler`, as can the aliases listed ("also": the
    papers' names, e.g. lowrtt for minrtt; a run reports the name). The parameters, their
    defaults and meanings are in docs/schedulers.md and in `--json`.
    """
    entries = api.schedulers()
    if as_json:
        click.echo(json.dumps([entry._asdict() for entry in entries], indent=2))
        return
    name_width = max((len(e.name) for e in entries), default=0) + 2
    indent = " " * name_width
    for entry in entries:
        lines = textwrap.wrap(entry.description, WIDTH - name_width) or [""]
        if entry.aliases:
            lines.append("also: " + ", ".join(entry.aliases))
        if entry.params:
            lines += textwrap.wrap(
                "params: " + ", ".join(entry.params),
                WIDTH - name_width,
                subsequent_indent="        ",
            )
        click.echo(entry.name.ljust(name_width) + lines[0])
        for line in lines[1:]:
            click.echo(indent + line)

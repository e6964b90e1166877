"""``mpsched schedulers``: the packet schedulers the simulator has."""

from __future__ import annotations

import click

from .. import api

__all__ = ["schedulers_command"]


@click.command("schedulers")
def schedulers_command() -> None:
    """List the packet schedulers: name, description, parameters, source."""
    entries = api.schedulers()
    params = {e.name: ", ".join(e.params) or "-" for e in entries}
    name_width = max((len(e.name) for e in entries), default=0)
    desc_width = max((len(e.description) for e in entries), default=0)
    param_width = max((len(p) for p in params.values()), default=0)
    for entry in entries:
        click.echo(
            f"{entry.name:<{name_width}}  {entry.description:<{desc_width}}  "
            f"{params[entry.name]:<{param_width}}  {entry.source}"
        )

"""Options that several commands share, so that they read and behave the same everywhere."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["CAPTURE_NAME", "json_option", "override_options", "set_option"]

# A packet capture's name in an output directory (`run --out DIR --pcap`, `emulate --out DIR
# --trace-headers`).
CAPTURE_NAME = "capture.pcapng"

# `mpsched run` and `mpsched emulate`: one scenario, its keys overridden one by one.
set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario key, e.g. --set path.lte.rtt=200ms (repeatable).",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the summary as one JSON object."
)


def override_options(fn: Any) -> Any:
    """The ``--duration`` and ``--set`` options of the commands that run sweeps."""
    fn = click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override a key of every point (path.*.KEY for every path; repeatable).",
    )(fn)
    return click.option("--duration", metavar="D", help="Duration of every run, e.g. 30s.")(fn)

"""Exceptions raised by mpsched."""

from __future__ import annotations

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """Invalid input: a scenario, an override or a command-line value.

    The message is a single line that starts with the offending field, e.g.
    ``path[1].rate ('lte'): rate must be > 0, got '-5Mbps'``.
    """

    def __init__(self, message: object = "") -> None:
        # A key or value from the input may hold a line break; escaped, the message stays the
        # one line a log, a sweep's journal or `error: ...` expects.
        text = str(message).replace("\r", "\\r").replace("\n", "\\n")
        super().__init__(text)

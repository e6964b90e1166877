"""Exceptions raised by mpsched."""

from __future__ import annotations

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """Invalid input: a scenario, an override or a command-line value.

    The message is a single line that starts with the offending field, e.g.
    ``path[1].rate ('lte'): rate must be > 0, got '-5Mbps'``.
    """

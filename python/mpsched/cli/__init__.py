"""The ``mpsched`` command line: one module per command (``plot`` and ``compare`` share one),
the options several share in :mod:`.options`, what they print in :mod:`.render`, and the group
with its entry point, :func:`main`, in :mod:`.app`."""

from .app import cli, main

__all__ = ["cli", "main"]

"""A worker process of ``mpsched sweep`` (``python -m mpsched.sweep_worker``): reads one task per
line on stdin (JSON: the task's fields and ``benefit``), runs it, writes its journal record as
one JSON line on stdout, until stdin closes.

Workers are fresh interpreters rather than forks of the sweep's process: a fork copies whatever
the parent's other threads were holding (a notebook's, Ray's or gRPC's locks), and a
``forkserver``/``spawn`` worker re-runs the user's script unless it has a main guard. A fresh
interpreter has neither problem, and a run that crashes its process costs only that run.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from .sweep import Task, simulate

    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        benefit = bool(msg.pop("benefit"))
        record = simulate(Task(**msg), benefit)
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

"""``mpsched sweep``: every point of a sweep file in the simulator, in parallel, every finished
run kept.

The points come from a sweep file (:mod:`mpsched.sweepfile`: grids and space-filling designs
over a base scenario); each runs ``repetitions`` times, repetition ``i`` with seed
``seed + i``. Runs go to worker processes on this machine (``jobs``, all cores by default) or,
with ``backend="ray"``, to a Ray cluster. Each finished run is appended at once to
``DIR/runs.jsonl`` (its key, point, seed and summary, one JSON object per line), so an
interrupted sweep loses only the runs in progress, and ``resume=True`` skips the runs already
there. When the sweep ends (or is interrupted) the journal becomes two Parquet tables:

- ``DIR/results.parquet``: one row per run: ``group``, ``point``, ``rep``, ``key``, the swept
  values as written (``set.KEY``), the normalized scenario (``scheduler``, ``tcp`` for plain
  TCP, ``congestion``,
  ``seed``, ``duration_ns``, ``rcvbuf_bytes``, and per path ``path.NAME.rate_bps``,
  ``.delay_down_ns``, ``.delay_up_ns``, ``.loss``, ``.queue``) and the summary's numbers
  (``goodput_mbps``, ``completion_s``, ``ooo_delay_ms.mean``, ..., ``aggregation_benefit``
  with ``benefit=True``), with ``error`` for a run that failed;
- ``DIR/subflows.parquet``: one row per run and subflow, the summary's per-subflow numbers;
- ``DIR/flows.parquet``, for scenarios with competing flows: one row per run and connection
  (``flow`` 0 the main one), the summary's per-flow numbers (``completion_s``...).

``sweep.json`` records what was run.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import contract
from .errors import ScenarioError
from .scenario import load, to_native
from .sweepfile import Sweep, expand_paths, load_sweep, unique_names

__all__ = ["SweepResult", "Task", "load_results", "run_sweep", "tasks_of"]

JOURNAL = "runs.jsonl"


@dataclass(frozen=True)
class Task:
    """One run of a sweep: a point, a repetition, and the normalized scenario to simulate."""

    key: str
    group: str
    point: str
    rep: int
    factors: dict[str, Any]
    config: dict[str, Any]


def tasks_of(
    sweep: Sweep, *, repetitions: int | None = None, overrides: Mapping[str, Any] | None = None
) -> list[Task]:
    """Every run of ``sweep``, validated, in order."""
    unique_names(sweep.points)
    reps = repetitions or sweep.repetitions or 1
    extra = expand_paths(overrides or {}, sweep.base)
    out = []
    for point in sweep.points:
        base = {**sweep.overrides, **point.overrides, **extra}
        seed = int(load(sweep.base, base, label=f"point {point.name!r}:").seed)
        for rep in range(reps):
            scenario = load(sweep.base, {**base, "seed": seed + rep})
            out.append(
                Task(
                    key=f"{point.group}|{point.name}|{rep}",
                    group=point.group,
                    point=point.name,
                    rep=rep,
                    factors=dict(point.factors or point.overrides),
                    config=to_native(scenario),
                )
            )
    return out


def simulate(task: Task, benefit: bool) -> dict[str, Any]:
    """Runs one task (in a worker): its journal record."""
    from . import api

    record = _record_of(task)
    try:
        record["summary"] = api.run_native(task.config, benefit=benefit)
    except Exception as exc:  # a failed run is recorded, the sweep goes on
        record["error"] = f"{type(exc).__name__}: {exc}"
    return record


def _local(tasks: list[Task], jobs: int, benefit: bool) -> Iterator[dict[str, Any]]:
    if jobs == 1 or len(tasks) == 1:
        for t in tasks:
            yield simulate(t, benefit)
        return
    workers: dict[int, tuple[subprocess.Popen[str], Task | None]] = {}
    started: list[subprocess.Popen[str]] = []
    pending = list(reversed(tasks))
    sel = selectors.DefaultSelector()

    def start() -> None:
        # Their own session: a terminal's Ctrl-C reaches only the sweep, which stops them.
        proc = subprocess.Popen(
            [sys.executable, "-m", "mpsched.sweep_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        sel.register(proc.stdout, selectors.EVENT_READ, proc.pid)
        workers[proc.pid] = (proc, None)
        give(proc.pid)

    def give(pid: int) -> None:
        proc, _ = workers[pid]
        task = pending.pop() if pending else None
        workers[pid] = (proc, task)
        assert proc.stdin is not None
        if task is None:
            proc.stdin.close()  # no more work: it exits
            return
        # A worker that died already fails this run when its output ends, below.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps({**asdict(task), "benefit": benefit}) + "\n")
            proc.stdin.flush()

    try:
        for _ in range(min(jobs, len(tasks))):
            start()
        while any(task is not None for _, task in workers.values()):
            for key, _ in sel.select():
                proc, task = workers[key.data]
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if line:
                    give(key.data)
                    yield json.loads(line)
                    continue
                # The process died in the middle of a run: that run failed, the rest go on.
                sel.unregister(key.fileobj)
                del workers[key.data]
                code = proc.wait()
                if task is not None:
                    yield {**_record_of(task), "error": f"worker process died (exit code {code})"}
                    if pending:
                        start()
        for proc, _ in workers.values():
            proc.wait()
    finally:
        sel.close()
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


def _record_of(task: Task) -> dict[str, Any]:
    return {
        "key": task.key,
        "group": task.group,
        "point": task.point,
        "rep": task.rep,
        "factors": task.factors,
        "config": task.config,
    }


#: Extra submissions of a run whose Ray task failed for want of a worker (its node died, its
#: worker crashed) once Ray's own retries were spent; after these it is recorded as failed,
#: and ``--resume`` runs it again.
RAY_RESUBMITS = 2


def _ray(tasks: list[Task], benefit: bool, address: str | None) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise ScenarioError(
            "--backend ray: Ray is not installed: pip install 'mpsched[ray]' "
            "(in a checkout: pip install '.[ray]')"
        ) from None
    from ray.exceptions import RayError, RayTaskError

    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local instance"
        raise ScenarioError(
            f"--ray-address {where}: cannot connect to a Ray cluster ({exc}); start one "
            "(`ray start --head`) or give its address (--ray-address, RAY_ADDRESS)"
        ) from None
    # A task whose worker or node dies is re-run by Ray (max_retries); the run is deterministic,
    # so a re-run gives the same record.
    remote = ray.remote(max_retries=3)(simulate)
    pending: dict[Any, tuple[Task, int]] = {}
    for t in tasks:
        pending[remote.remote(t, benefit)] = (t, 0)
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            task, resubmits = pending.pop(done[0])
            try:
                yield ray.get(done[0])
            except RayTaskError:
                raise  # simulate() records its own errors: this is a bug, not a lost node
            except RayError as exc:
                if resubmits < RAY_RESUBMITS:
                    pending[remote.remote(task, benefit)] = (task, resubmits + 1)
                    continue
                yield {**_record_of(task), "error": f"ray: {type(exc).__name__}: {exc}"}
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)


@dataclass
class SweepResult:
    """What a sweep left in its directory."""

    out: Path
    total: int
    done: int
    failed: int
    interrupted: bool
    wall_s: float

    @property
    def results(self) -> Any:
        """``results.parquet`` as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(self.out / "results.parquet")

    @property
    def subflows(self) -> Any:
        """``subflows.parquet`` as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(self.out / "subflows.parquet")

    @property
    def flows(self) -> Any:
        """``flows.parquet`` (runs with competing flows) as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(self.out / "flows.parquet")


def _read_journal(path: Path) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    for line in path.read_text("utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # a line cut short by a crash
            r = json.loads(line)
            records[r["key"]] = r
    return records


def run_sweep(
    sweep: Sweep | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    repetitions: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    resume: bool = False,
    benefit: bool = False,
    backend: str = "local",
    ray_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Run every point of ``sweep`` (a :class:`Sweep` or a sweep file) and write ``out``.

    ``jobs`` worker processes (default: every core) run the points; ``backend="ray"`` sends
    them to Ray instead (``ray_address``, default ``RAY_ADDRESS`` or a local instance).
    ``resume`` keeps the runs already in ``out/runs.jsonl`` (and retries failed ones);
    otherwise an existing journal is an error. ``progress(done, total)`` is called after each
    run. Ctrl-C stops the workers; the finished runs are written out and the result says
    ``interrupted``.
    """
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    if backend not in ("local", "ray"):
        raise ScenarioError(f"backend: unknown backend {backend!r} (local or ray)")
    tasks = tasks_of(sweep, repetitions=repetitions, overrides=overrides)
    out_dir = Path(out)
    journal = out_dir / JOURNAL
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScenarioError(f"out {out_dir}: cannot write: {exc.strerror or exc}") from None
    if journal.exists() and not resume:
        raise ScenarioError(
            f"out {out_dir}: holds a sweep already ({JOURNAL}); use --resume or another --out"
        )
    done = {k: r for k, r in _read_journal(journal).items() if "error" not in r}
    todo = [t for t in tasks if t.key not in done]
    meta = {
        "title": sweep.title,
        "source": sweep.source,
        "runs": len(tasks),
        "repetitions": repetitions or sweep.repetitions or 1,
        "overrides": {**sweep.overrides, **(overrides or {})},
        "benefit": benefit,
    }
    (out_dir / "sweep.json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    start = time.perf_counter()
    records = dict(done)
    interrupted = False
    if progress:
        progress(len(done), len(tasks))
    stream = (
        _local(todo, jobs or os.cpu_count() or 1, benefit)
        if backend == "local"
        else _ray(todo, benefit, ray_address or os.environ.get("RAY_ADDRESS"))
    )
    with journal.open("a", encoding="utf-8") as log:
        try:
            for record in stream:
                log.write(json.dumps(record) + "\n")
                log.flush()
                records[record["key"]] = record
                if progress:
                    progress(len(records), len(tasks))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[attr-defined]
    order = {t.key: i for i, t in enumerate(tasks)}
    kept = sorted((r for r in records.values() if r["key"] in order), key=lambda r: order[r["key"]])
    write_tables(kept, out_dir)
    return SweepResult(
        out=out_dir,
        total=len(tasks),
        done=len(kept),
        failed=sum("error" in r for r in kept),
        interrupted=interrupted,
        wall_s=time.perf_counter() - start,
    )


# --- tables ---

# The summary's columns come from the contract; the seed is a scenario column already and the
# wall time is not a result.
_NOT_RESULTS = ("seed", "wall_s")
# Added by Python (``--benefit``), not by the simulator.
_EXTRA_SCALARS = ("aggregation_benefit",)


def _result_columns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(always-present scalars, scalars present only in some runs), then the quantiles."""
    scalars = [f for f in contract.fields("summary") if f.type in ("int", "float")]
    present = tuple(f.name for f in scalars if not f.nullable and f.name not in _NOT_RESULTS)
    optional = tuple(f.name for f in scalars if f.nullable) + _EXTRA_SCALARS
    return present, optional


_SUBFLOW_SKIP = ("name",)


def _scenario_columns(config: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        k: config.get(k)
        for k in (
            "protocol",
            "scheduler",
            "congestion",
            "seed",
            "duration_ns",
            "sndbuf_bytes",
            "rcvbuf_bytes",
        )
    }
    if row["protocol"] == "tcp":
        # Plain TCP has no MPTCP scheduler: in tables by scheduler it is a column of its own.
        row["scheduler"] = "tcp"
    for p in config.get("paths", []):
        pre = f"path.{p['name']}."
        row[pre + "rate_bps"] = p["down"]["rate_bps"]
        row[pre + "delay_down_ns"] = p["down"]["delay_ns"]
        row[pre + "delay_up_ns"] = p["up"]["delay_ns"]
        row[pre + "loss"] = p["down"]["loss"]
        ((kind, value),) = p["down"]["queue"].items()
        row[pre + "queue"] = f"{value} {kind}"
    return row


def _rows(records: Iterable[Mapping[str, Any]]) -> tuple[list[dict], list[dict], list[dict]]:
    runs, subflows, flows = [], [], []
    for r in records:
        row: dict[str, Any] = {"group": r["group"], "point": r["point"], "rep": r["rep"]}
        row["key"] = r["key"]
        for k, v in (r.get("factors") or {}).items():
            row[f"set.{k}"] = v if isinstance(v, str | int | float | bool) else json.dumps(v)
        row.update(_scenario_columns(r.get("config") or {}))
        s = r.get("summary")
        row["error"] = r.get("error")
        if s is not None:
            present, optional = _result_columns()
            for k in present:
                row[k] = s.get(k)
            for k in contract.quantile_fields("summary"):
                for q, v in (s.get(k) or {}).items():
                    row[f"{k}.{q}"] = v
            for k in optional:
                if k in s:
                    row[k] = s[k]
            for f in s.get("flows") or []:
                flow = {"key": r["key"], "group": r["group"], "point": r["point"], "rep": r["rep"]}
                flow.update(f)
                flow["paths"] = ",".join(f.get("paths") or [])
                flows.append(flow)
            for i, sf in enumerate(s.get("subflows") or []):
                sub = {"key": r["key"], "group": r["group"], "point": r["point"]}
                sub.update(rep=r["rep"], subflow=i, name=sf.get("name"))
                sub.update({k: v for k, v in sf.items() if k not in _SUBFLOW_SKIP})
                subflows.append(sub)
        runs.append(row)
    return runs, subflows, flows


def write_tables(records: list[Mapping[str, Any]], out: Path) -> None:
    """``results.parquet``, ``subflows.parquet`` and (with competing flows) ``flows.parquet``
    from journal records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs, subflows, flows = _rows(records)
    tables = [("results", runs), ("subflows", subflows)]
    if flows:
        tables.append(("flows", flows))
    for name, rows in tables:
        columns: dict[str, list[Any]] = {}
        for row in rows:
            for k in row:
                columns.setdefault(k, [])
        for row in rows:
            for k in columns:
                columns[k].append(row.get(k))
        table = pa.table(columns) if rows else pa.table({"key": pa.array([], pa.string())})
        pq.write_table(table, out / f"{name}.parquet")


def load_results(out: str | os.PathLike[str]) -> SweepResult:
    """A sweep directory read back (the tables are rewritten from its journal)."""
    out_dir = Path(out)
    records = list(_read_journal(out_dir / JOURNAL).values())
    if not records:
        raise ScenarioError(f"{out_dir}: no sweep here ({JOURNAL} missing or empty)")
    meta = json.loads((out_dir / "sweep.json").read_text("utf-8"))
    write_tables(records, out_dir)
    return SweepResult(
        out=out_dir,
        total=int(meta.get("runs", len(records))),
        done=len(records),
        failed=sum("error" in r for r in records),
        interrupted=False,
        wall_s=0.0,
    )

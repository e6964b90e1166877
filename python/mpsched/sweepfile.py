"""Sweep files: a base scenario and the points to run, as ``--set`` overrides.

A sweep file is a TOML document with a ``[sweep]`` table::

    [sweep]
    title = "slow-path RTT"
    scenario = "../scenarios/stms-lab.toml"    # relative to the sweep file
    repetitions = 3                             # seeds seed, seed + 1, ...
    set = { "path.*.loss" = 0.0001 }            # applied to every point; path.* = every path

    [[sweep.group]]                             # a grid: every combination of the values
    name = "slow-path RTT x router buffers"
    grid = { "path.lte.rtt" = ["20ms", "50ms"], "path.*.queue" = ["50ms", "500ms"] }

    [[sweep.group]]                             # a space-filling design over ranges
    name = "low-BDP"
    design = "lhs"                              # maximin Latin hypercube
    points = 200
    seed = 1
    factors = { "path.a.rate" = ["0.1Mbps", "100Mbps"], "path.a.delay_down" = ["0ms", "50ms"] }
    grid = { "connection.scheduler" = ["minrtt", "default"] }   # crossed with the design

    [[sweep.point]]                             # a single point, in a group of its own name
    name = "lab"
    set = {}

    [[sweep.group]]                             # keys that move together
    name = "host buffer"
    zip = { "connection.sndbuf" = ["256KiB", "1MiB"], "connection.rcvbuf" = ["256KiB", "1MiB"] }
    grid = { "connection.scheduler" = ["minrtt", "default"] }   # crossed with the zip

A group may have ``grid`` (values to combine), ``zip`` (lists of one length, the i-th values
taken together), ``design`` + ``factors`` (ranges to fill), or several of them (every
combination of their settings), ``set`` (fixed overrides), and ``exclude`` (combinations to
skip: a list of tables, a point is left out when it chose every value of one of them, e.g.
``exclude = [{ "connection.stack" = "out-of-tree", "connection.scheduler" = "linux" }]``). A
scheduler key's grid values ``["*"]`` stand for every registered scheduler. A
factor's range is two quantities with the same unit, or two numbers; ``log = [KEY, ...]``
samples those factors uniformly in log space instead. Every point is validated before
anything runs.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from . import contract
from .errors import ScenarioError
from .scenario import load, read_source, resolve_files
from .units import UnitError, _split

__all__ = [
    "EXPERIMENTS",
    "Point",
    "Sweep",
    "expand_paths",
    "experiments",
    "label",
    "latin_hypercube",
    "load_sweep",
    "overrides_of",
    "resolve",
]

DESIGNS = ("lhs",)

# The sweeps that reproduce the papers' experiments, shipped with the package.
EXPERIMENTS = Path(__file__).resolve().parent / "experiments"


def experiments() -> list[str]:
    """The names of the built-in experiments (sweep files in ``EXPERIMENTS``)."""
    names = []
    for path in sorted(EXPERIMENTS.glob("*.toml")):
        with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
            if "sweep" in tomllib.loads(path.read_text("utf-8")):
                names.append(path.stem)
    return names


def resolve(target: str | os.PathLike[str]) -> Path:
    """A sweep file's path: ``target`` itself, or the built-in experiment of that name."""
    path = Path(target)
    if not path.exists() and (EXPERIMENTS / f"{path.name}.toml").exists():
        return EXPERIMENTS / f"{path.name}.toml"
    return path


@dataclass
class Point:
    """One setting of the sweep: ``overrides`` applied to the base scenario."""

    group: str
    name: str
    overrides: dict[str, Any]
    # The values this point chose for each swept key (grid and design), as written.
    factors: dict[str, Any] = field(default_factory=dict)


@dataclass
class Sweep:
    title: str
    base: dict[str, Any]
    source: str
    points: list[Point]
    # None: the sweep file does not say (each command has its default).
    repetitions: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)


def expand_paths(overrides: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """``path.*.KEY`` stands for ``path.NAME.KEY`` of every path of the base scenario."""
    names = [p.get("name") for p in base.get("path", []) if isinstance(p, dict)]
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if key.startswith("path.*."):
            for name in names:
                out[f"path.{name}.{key[len('path.*.') :]}"] = value
        else:
            out[key] = value
    return out


def _resolve_traces(overrides: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A trace file a sweep sets (``path.lte.trace``) is named relative to the sweep file."""
    out = dict(overrides)
    for key, value in out.items():
        traced = key.endswith((".trace", ".trace_up")) and isinstance(value, str) and value
        if traced and not Path(value).is_absolute():
            out[key] = str(folder / value)
    return out


def label(overrides: Mapping[str, Any]) -> str:
    """A short readable name of a point."""
    return ", ".join(f"{k.removeprefix('path.').removeprefix('connection.')}={v}"
                     for k, v in overrides.items()) or "base"  # fmt: skip


def latin_hypercube(points: int, dims: int, seed: int, candidates: int = 32) -> list[list[float]]:
    """A maximin Latin hypercube in [0, 1)^dims: of ``candidates`` random Latin hypercubes
    (each dimension a permutation of the ``points`` strata, jittered within them), the one
    whose closest pair of points is farthest apart. Deterministic for a seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    best, best_gap = None, -1.0
    for _ in range(candidates):
        strata = np.stack([rng.permutation(points) for _ in range(dims)], axis=1)
        design = (strata + rng.random((points, dims))) / points
        if points > 1:
            diff = design[:, None, :] - design[None, :, :]
            dist = np.sqrt((diff**2).sum(-1))
            np.fill_diagonal(dist, np.inf)
            gap = float(dist.min())
        else:
            gap = 0.0
        if gap > best_gap:
            best, best_gap = design, gap
    assert best is not None
    return best.tolist()


@dataclass
class _Factor:
    key: str
    lo: float
    hi: float
    unit: str | None
    log: bool

    def value(self, u: float) -> Any:
        if self.log:
            x = math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
        else:
            x = self.lo + u * (self.hi - self.lo)
        if self.unit is None:
            return float(f"{x:.6g}")
        return f"{x:.6g}{self.unit}"


def _factor(where: str, key: str, spec: object, log: bool) -> _Factor:
    if not isinstance(spec, list) or len(spec) != 2:
        raise ScenarioError(f"{where}.factors.{key}: expected [low, high], got {spec!r}")
    try:
        (lo, lo_unit), (hi, hi_unit) = (_split(v, "quantity") for v in spec)
    except UnitError as exc:
        raise ScenarioError(f"{where}.factors.{key}: {exc}") from None
    if lo_unit != hi_unit:
        raise ScenarioError(
            f"{where}.factors.{key}: both ends need the same unit, got {spec[0]!r} and {spec[1]!r}"
        )
    if not lo < hi:
        raise ScenarioError(f"{where}.factors.{key}: low must be below high, got {spec!r}")
    if log and lo <= 0:
        raise ScenarioError(f"{where}.factors.{key}: a log scale needs a low end > 0")
    return _Factor(key, float(Fraction(lo)), float(Fraction(hi)), lo_unit, log)


def _design_points(where: str, group: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The factor settings of a group's design (one empty setting without a design)."""
    design = group.get("design")
    factors = group.get("factors")
    if design is None:
        if factors is not None:
            raise ScenarioError(f'{where}.factors: needs design = "lhs"')
        return [{}]
    if design not in DESIGNS:
        raise ScenarioError(f"{where}.design: unknown design {design!r} (known: lhs)")
    if not isinstance(factors, dict) or not factors:
        raise ScenarioError(f"{where}.factors: a table of [low, high] ranges")
    n = group.get("points")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ScenarioError(f"{where}.points: an integer >= 1, got {n!r}")
    seed = group.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ScenarioError(f"{where}.seed: an integer >= 0, got {seed!r}")
    log = group.get("log") or []
    if not isinstance(log, list) or any(k not in factors for k in log):
        raise ScenarioError(f"{where}.log: a list of factor names, got {log!r}")
    specs = [_factor(where, k, v, k in log) for k, v in factors.items()]
    return [
        {f.key: f.value(u) for f, u in zip(specs, row, strict=True)}
        for row in latin_hypercube(n, len(specs), seed)
    ]


def _group_points(where: str, group: object, default_name: str, base: Mapping[str, Any]):
    if not isinstance(group, dict):
        raise ScenarioError(f"{where}: must be a table")
    known = {"name", "grid", "zip", "set", "design", "points", "seed", "factors", "log", "exclude"}
    unknown = set(group) - known
    if unknown:
        raise ScenarioError(f"{where}.{sorted(unknown)[0]}: unknown key")
    name = str(group.get("name") or default_name)
    grid = group.get("grid") or {}
    fixed = group.get("set") or {}
    if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
        raise ScenarioError(f"{where}.grid: a table of non-empty value lists")
    grid = {k: _every(k, v) for k, v in grid.items()}
    if not isinstance(fixed, dict):
        raise ScenarioError(f"{where}.set: a table of overrides")
    designs = _design_points(where, group)
    zipped = _zip_rows(where, group.get("zip"))
    if not grid and designs == [{}] and zipped == [{}]:
        raise ScenarioError(f"{where}: needs a grid, a zip, a design, or several")
    excluded = _exclusions(where, group.get("exclude"))
    keys = list(grid)
    out = []
    for chosen_design in designs:
        for chosen_zip in zipped:
            for values in itertools.product(*(grid[k] for k in keys)):
                chosen = {**chosen_design, **chosen_zip, **dict(zip(keys, values, strict=True))}
                if any(all(k in chosen and chosen[k] == v for k, v in e.items()) for e in excluded):
                    continue
                overrides = expand_paths({**fixed, **chosen}, base)
                out.append(Point(name, label(chosen), overrides, chosen))
    if not out:
        raise ScenarioError(f"{where}.exclude: leaves no point to run")
    return out


def _every(key: str, values: list[Any]) -> list[Any]:
    """``["*"]`` for a scheduler key: every registered scheduler, in the registry's order, so a
    sweep over all of them takes in one added later."""
    if values == ["*"] and (key == "scheduler" or key.endswith(".scheduler")):
        return list(contract.names("schedulers"))
    return values


def _exclusions(where: str, table: object) -> list[dict[str, Any]]:
    """A group's ``exclude``: the combinations of swept values to leave out."""
    if table is None:
        return []
    if not isinstance(table, list) or not all(isinstance(e, dict) and e for e in table):
        raise ScenarioError(f"{where}.exclude: a list of non-empty tables of swept keys")
    return table


def _zip_rows(where: str, table: object) -> list[dict[str, Any]]:
    """The settings of a group's ``zip``: the i-th value of every list, for each i."""
    if table is None:
        return [{}]
    if not isinstance(table, dict) or not table:
        raise ScenarioError(f"{where}.zip: a table of value lists of one length")
    lengths = {}
    for key, values in table.items():
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"{where}.zip.{key}: a non-empty list of values")
        lengths[key] = len(values)
    first, n = next(iter(lengths.items()))
    for key, m in lengths.items():
        if m != n:
            raise ScenarioError(f"{where}.zip.{key}: {m} values where {first} has {n}")
    return [{key: table[key][i] for key in table} for i in range(n)]


def load_sweep(target: str | os.PathLike[str]) -> Sweep:
    """A sweep file (or a built-in experiment's name), or a scenario file as a sweep of one
    point."""
    path = resolve(target)
    try:
        raw = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario or sweep file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    if "sweep" not in raw:
        resolve_files(raw, path.parent)
        load(raw)  # validate
        return Sweep(title=path.stem, base=raw, source=str(path), points=[Point("", "", {})])
    spec = raw["sweep"]
    if not isinstance(spec, dict):
        raise ScenarioError(f"{path}: [sweep] must be a table")
    unknown = set(spec) - {"scenario", "repetitions", "set", "group", "point", "title"}
    if unknown:
        raise ScenarioError(f"{path}: sweep.{sorted(unknown)[0]}: unknown key")
    scenario = spec.get("scenario")
    if not isinstance(scenario, str):
        raise ScenarioError(f"{path}: sweep.scenario: required (a scenario file)")
    scenario_file = (path.parent / scenario).resolve()
    base = read_source(scenario_file)
    # Trace files: the base scenario's from its folder, the sweep's own from the sweep's.
    resolve_files(base, scenario_file.parent)
    common = _resolve_traces(expand_paths(spec.get("set") or {}, base), path.parent)
    points: list[Point] = []
    groups = spec.get("group") or []
    if not isinstance(groups, list):
        raise ScenarioError(f"{path}: sweep.group: an array of tables ([[sweep.group]])")
    for i, group in enumerate(groups):
        points += _group_points(f"{path}: sweep.group[{i}]", group, f"group {i + 1}", base)
    for point in spec.get("point") or []:
        overrides = point.get("set") or {}
        name = point.get("name") or label(overrides)
        points.append(Point(point.get("group") or name, name, expand_paths(overrides, base)))
    if not points:
        raise ScenarioError(f"{path}: the sweep has no [[sweep.group]] or [[sweep.point]]")
    repetitions = spec.get("repetitions")
    if repetitions is not None and (
        not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1
    ):
        raise ScenarioError(f"{path}: sweep.repetitions: an integer >= 1")
    for p in points:
        p.overrides = _resolve_traces(p.overrides, path.parent)
    for p in points:  # validate every point before running any
        load(base, {**common, **p.overrides}, label=f"point {p.name!r}:")
    return Sweep(
        title=str(spec.get("title") or path.stem),
        base=base,
        source=str(path),
        points=points,
        repetitions=repetitions,
        overrides=common,
    )


def overrides_of(duration: str | None, sets: Sequence[str]) -> dict[str, Any]:
    """The overrides ``--duration`` and ``--set`` ask for."""
    from .scenario import parse_set

    overrides = parse_set(sets)
    if duration is not None:
        overrides["duration"] = duration
    return overrides


def unique_names(points: Sequence[Point]) -> None:
    """Numbers points that share a group and a name (a design can repeat a label)."""
    seen: dict[tuple[str, str], int] = {}
    for p in points:
        k = (p.group, p.name)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            p.name = f"{p.name} #{seen[k]}"

"""Aggregation benefit (Kaspar; used in paper 001, section 4.2).

With ``g`` the multipath goodput, ``C_i`` the goodput of plain TCP on path ``i`` alone and
``C_max`` the largest of them::

    Ben = (g - C_max) / (sum C_i - C_max)   if g >= C_max
    Ben = (g - C_max) / C_max               otherwise

-1 means nothing got through, 0 as good as the best single path, 1 perfect aggregation (the
sum of the paths). The single-path baselines come from running the same scenario (same seed,
duration, buffers, workload and path) with plain TCP on each path alone.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import contract

__all__ = ["aggregation_benefit", "baseline_config", "baselines", "with_benefit"]


def aggregation_benefit(goodput: float, baselines: Sequence[float]) -> float:
    """Kaspar's aggregation benefit of ``goodput`` over the single-path ``baselines``.

    With a single path (or when every other path has zero goodput) the upper branch has no
    denominator; the benefit is then the relative gain ``(g - C_max) / C_max`` on both sides.
    ``nan`` if there is no baseline or every baseline is 0.
    """
    values = [float(c) for c in baselines]
    if not values:
        return math.nan
    best = max(values)
    if best <= 0:
        return math.nan
    spare = sum(values) - best
    if goodput >= best and spare > 0:
        return (goodput - best) / spare
    return (goodput - best) / best


def baseline_config(config: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The normalized scenario of plain TCP on path ``index`` of ``config`` alone."""
    single = copy.deepcopy(dict(config))
    single["protocol"] = "tcp"
    single["paths"] = [copy.deepcopy(config["paths"][index])]
    single["scheduler"] = "default"
    single["scheduler_params"] = {}
    # A coupled control is Reno on one path (LIA: alpha = 1; OLIA: no other path to shift to);
    # the contract says what each becomes.
    single["congestion"] = contract.single_path_congestion(config["congestion"])
    return single


def baselines(
    config: Mapping[str, Any], run_native: Callable[[str], tuple[str, Any]]
) -> list[dict[str, Any]]:
    """Run plain TCP on each path of the normalized scenario ``config`` alone.

    ``run_native(config_json)`` is the native ``run`` (without traces). Returns one entry per
    path: ``name``, ``congestion``, ``goodput_mbps``, ``bytes_delivered``, ``completion_s``.
    """
    out = []
    for index, path in enumerate(config["paths"]):
        single = baseline_config(config, index)
        summary = json.loads(run_native(json.dumps(single))[0])
        out.append(
            {
                "name": path["name"],
                "congestion": single["congestion"],
                "goodput_mbps": summary["goodput_mbps"],
                "bytes_delivered": summary["bytes_delivered"],
                "completion_s": summary.get("completion_s"),
            }
        )
    return out


def with_benefit(
    summary: dict[str, Any],
    config: Mapping[str, Any],
    run_native: Callable[[str], tuple[str, Any]],
) -> dict[str, Any]:
    """Add ``aggregation_benefit`` (``None`` when undefined) and ``baselines`` to ``summary``."""
    base = baselines(config, run_native)
    value = aggregation_benefit(summary["goodput_mbps"], [b["goodput_mbps"] for b in base])
    summary["aggregation_benefit"] = None if math.isnan(value) else value
    summary["baselines"] = base
    return summary

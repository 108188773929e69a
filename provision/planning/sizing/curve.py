"""The sizing curve ``size --plot`` and ``SizingReport.figure()`` draw (days and cost against cluster size), and
the count shorthand (``70B``) both label it with.

Pure, and free of the report models' module on purpose (``SizingReport.figure()`` imports it lazily, so importing
the models here would close an import circle): the report is duck-typed.
"""

from __future__ import annotations

import math
from typing import Any


def curve(report: Any, points: int = 8) -> dict[str, list[tuple[int, float, float | None]]]:
    """Per cloud: (GPUs, days, total USD) from a quarter of the chosen cluster (at least the memory minimum) to 4x it.

    Days = GPU-hours / GPUs / 24 at the report's expected GPU-hours (MFU's slow fall above 8,192 GPUs is
    ignored here); cost = node price x nodes x hours, None where the catalog has no price.
    """
    out: dict[str, list[tuple[int, float, float | None]]] = {}
    for option in report.clouds:
        if not option.gpus or not option.nodes or not option.wall_hours:
            continue
        per_node = option.gpus // option.nodes
        gpu_hours = option.wall_hours * option.gpus
        smallest = max(per_node, report.memory.min_gpus or per_node, option.gpus // 4)
        low = math.ceil(smallest / per_node)
        high = max(low + 1, option.nodes * 4)
        step = max(1, (high - low) // max(points - 1, 1))
        rows = []
        for nodes in range(low, high + 1, step):
            gpus = nodes * per_node
            wall = gpu_hours / gpus
            cost = None if option.node_hourly_usd is None else option.node_hourly_usd * nodes * wall
            rows.append((gpus, wall / 24, cost))
        out[option.cloud] = rows
    return out


def format_count(n: float) -> str:
    """The shorthand of a count: ``7e10`` -> ``"70B"``."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:g}{suffix}"
    return f"{n:g}"

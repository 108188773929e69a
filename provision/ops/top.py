"""``provision top``: per node GPU utilisation, memory, power and temperature, and the newest job's state.

One sample runs ``nvidia-smi --query-gpu=...`` on every node through the node runner the health check
uses (:mod:`provision.ops.nodes`: SSH on real clusters, the mocked nodes' sandboxes under ``--mock``)
and reads the newest job from the nodes (:mod:`provision.ops.jobs`). Fabric counters are not sampled yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: nvidia-smi's query fields, in this order (nvidia-smi --help-query-gpu).
QUERY = ("index", "utilization.gpu", "memory.used", "memory.total", "power.draw", "temperature.gpu")
COMMAND = f"nvidia-smi --query-gpu={','.join(QUERY)} --format=csv,noheader,nounits"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_gpus(stdout: str) -> list[dict[str, Any]]:
    """nvidia-smi's CSV lines as ``[{"index", "util_pct", "mem_used_mib", "mem_total_mib", "power_w", "temp_c"}]``."""
    keys = ("index", "util_pct", "mem_used_mib", "mem_total_mib", "power_w", "temp_c")
    rows = []
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == len(keys):
            rows.append({k: _number(v) for k, v in zip(keys, parts, strict=True)})
    return rows


def summarize(rank: int, host: str, exit_code: int, stdout: str) -> dict[str, Any]:
    """One node's row: its GPUs and their mean utilisation, memory, summed power, hottest GPU."""
    gpus = parse_gpus(stdout) if exit_code == 0 else []

    def values(key: str) -> list[float]:
        return [g[key] for g in gpus if g[key] is not None]

    util, power, temp = values("util_pct"), values("power_w"), values("temp_c")
    return {
        "rank": rank,
        "host": host,
        "ok": bool(gpus),
        "gpus": len(gpus),
        "util_pct": round(sum(util) / len(util), 1) if util else None,
        "mem_used_gib": round(sum(values("mem_used_mib")) / 1024, 1) if gpus else None,
        "mem_total_gib": round(sum(values("mem_total_mib")) / 1024, 1) if gpus else None,
        "power_w": round(sum(power), 1) if power else None,
        "temp_max_c": max(temp) if temp else None,
        "per_gpu": gpus,
    }


def sample(cluster: Any, run: Any) -> dict[str, Any]:
    """One sample of every node (``run``: a node runner) and the newest job."""
    nodes = [summarize(r.rank, r.host, r.exit_code, r.stdout) for r in run(COMMAND, None)]
    job = None
    try:
        from provision.ops import jobs
        from provision.ops.jobs.recover import recover

        found = jobs.list_jobs(cluster)
        if recover(cluster, found):  # a rank lost with a replaced node runs again
            found = jobs.list_jobs(cluster)
        job = found[0].as_dict() if found else None
    except Exception:  # noqa: BLE001  # the GPU view stays useful without the job view (e.g. Kubernetes)
        job = None
    return {"cluster": cluster.spec.name, "nodes": nodes, "job": job}


def rows(doc: dict[str, Any]) -> Sequence[tuple[str, ...]]:
    """The table rows of a sample: node, GPUs, util, memory, power, temperature."""

    def show(v: Any, unit: str = "") -> str:
        return "-" if v is None else f"{v:g}{unit}"

    return [
        (
            f"{doc['cluster']}-{n['rank']}",
            str(n["gpus"]),
            show(n["util_pct"], "%"),
            f"{show(n['mem_used_gib'])}/{show(n['mem_total_gib'])} GiB",
            show(n["power_w"], " W"),
            show(n["temp_max_c"], " C"),
        )
        for n in doc["nodes"]
    ]

"""``provision top``: per node GPU utilisation, memory, power and temperature, and the newest job's state.

One sample runs ``nvidia-smi --query-gpu=...`` on every node through the node runner the health check
uses (:mod:`provision.ops.nodes`: SSH on real clusters, the mocked nodes' sandboxes under ``--mock``)
and reads the newest job from the nodes (:mod:`provision.ops.jobs`): its state, ranks, restarts and the last line
of its log. The same command reads the fabric's byte counters where the node has them (:data:`FABRIC_SCRIPT`);
between two samples they become rates.

Fabric counters, per RDMA device port under ``/sys/class/infiniband``:

* ``hw_counters/rx_bytes`` and ``tx_bytes``: AWS EFA (the driver's port statistics, Linux
  ``drivers/infiniband/hw/efa/efa_verbs.c``, ``efa_port_stats_descs``) and other drivers with byte counters;
* else ``counters/port_rcv_data`` and ``port_xmit_data``, which count octets divided by 4
  (https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband): InfiniBand (Azure ND, GCP
  RDMA NICs) and eRDMA where the driver keeps the standard port counters.

GCP's TCPX/TCPXO move GPU data over ordinary NICs with no such counters: ``fabric`` is then ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: nvidia-smi's query fields, in this order (nvidia-smi --help-query-gpu).
QUERY = ("index", "utilization.gpu", "memory.used", "memory.total", "power.draw", "temperature.gpu")
GPU_COMMAND = f"nvidia-smi --query-gpu={','.join(QUERY)} --format=csv,noheader,nounits"
#: ``FABRIC <device/port> <rx bytes> <tx bytes>`` per RDMA port (``$PROVISION_ROOT``: a mocked node's sandbox).
FABRIC_SCRIPT = (
    'for p in "${PROVISION_ROOT:-}"/sys/class/infiniband/*/ports/*; do [ -d "$p" ] || continue; '
    'd=$(basename "$(dirname "$(dirname "$p")")")/$(basename "$p"); '
    'if [ -r "$p/hw_counters/rx_bytes" ]; then '
    'echo "FABRIC $d $(cat "$p/hw_counters/rx_bytes") $(cat "$p/hw_counters/tx_bytes")"; '
    'elif [ -r "$p/counters/port_rcv_data" ]; then '
    'echo "FABRIC $d $(( $(cat "$p/counters/port_rcv_data") * 4 )) $(( $(cat "$p/counters/port_xmit_data") * 4 ))"; '
    "fi; done"
)
#: One command per node: the GPUs (its exit code is nvidia-smi's), then the fabric counters.
COMMAND = f"{GPU_COMMAND}; rc=$?; {FABRIC_SCRIPT}; exit $rc"


def parse_fabric(stdout: str) -> dict[str, Any] | None:
    """The ``FABRIC`` lines summed: ``{"ports", "rx_bytes", "tx_bytes"}``; ``None`` when the node has no counters."""
    ports, rx, tx = 0, 0, 0
    for line in stdout.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == "FABRIC" and words[2].isdigit() and words[3].isdigit():
            ports, rx, tx = ports + 1, rx + int(words[2]), tx + int(words[3])
    return {"ports": ports, "rx_bytes": rx, "tx_bytes": tx} if ports else None


def add_rates(doc: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """Per node fabric ``rx_gbps`` / ``tx_gbps`` from the counters' change since ``previous`` (a sample)."""
    before = {n["rank"]: n for n in (previous or {}).get("nodes", [])}
    seconds = doc["time"] - (previous or {}).get("time", doc["time"])
    for n in doc["nodes"]:
        old, new = (before.get(n["rank"]) or {}).get("fabric"), n.get("fabric")
        if old and new and seconds > 0:
            for key in ("rx", "tx"):
                delta = max(0, new[f"{key}_bytes"] - old[f"{key}_bytes"])
                new[f"{key}_gbps"] = round(delta * 8 / seconds / 1e9, 2)
    return doc


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
        "fabric": parse_fabric(stdout),
    }


def _last_line(cluster: Any, job: Any) -> str | None:
    """The newest line of the job's log (its first rank's: the head's, where the launchers print progress)."""
    from provision.ops import jobs

    last: list[str] = []
    rank = job.spec.ranks[0] if job.spec.ranks else None
    jobs.backend(cluster).logs(
        job.spec, [rank] if rank is not None else [], follow=False, tail=1, on_line=lambda _r, t: last.append(t)
    )
    return last[-1] if last else None


def sample(cluster: Any, run: Any) -> dict[str, Any]:
    """One sample of every node (``run``: a node runner) and the newest job."""
    import time

    started = time.time()
    nodes = [summarize(r.rank, r.host, r.exit_code, r.stdout) for r in run(COMMAND, None)]
    job = None
    try:
        from provision.ops import jobs
        from provision.ops.jobs.recover import recover

        found = jobs.list_jobs(cluster)
        if any(r.error is None for r in recover(cluster, found)):  # a rank lost with a replaced node runs again
            found = jobs.list_jobs(cluster)
        job = None
        if found:
            job = found[0].as_dict()
            job["last_line"] = _last_line(cluster, found[0])
            job["restarts"] = sum(r.restarts for r in found[0].ranks)
    except Exception:  # noqa: BLE001  # the GPU view stays useful without the job view (e.g. Kubernetes)
        job = None
    return {"cluster": cluster.spec.name, "time": started, "nodes": nodes, "job": job}


def rows(doc: dict[str, Any]) -> Sequence[tuple[str, ...]]:
    """The table rows of a sample: node, GPUs, util, memory, power, temperature, fabric (rates, else totals)."""

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
            _fabric(n.get("fabric")),
        )
        for n in doc["nodes"]
    ]


def _fabric(f: dict[str, Any] | None) -> str:
    """``rx/tx`` in Gb/s between two samples, else the totals so far in GB; ``-`` without counters."""
    if not f:
        return "-"
    if "rx_gbps" in f:
        return f"{f['rx_gbps']:g}/{f['tx_gbps']:g} Gb/s"
    return f"{f['rx_bytes'] / 1e9:.1f}/{f['tx_bytes'] / 1e9:.1f} GB"

"""What a benchmark's figures say: the slow node, why the MFU falls short of the plan, and checked tuning hints.

Findings read the measured figures against the plan (:mod:`provision.ops.bench`), the NCCL check's last
measurement (``provision nccl-test``: the ``fabric_manifest`` output's ``measured`` entry) and the memory model.
Every hint is computed from this cluster's plan and names its source; none is given without a check behind it:

* micro-batch and activation checkpointing: the planner's per-layer memory model
  (provision/planning/sizing/layout.py ``layer_memory``, after Korthikanti et al. 2022, arXiv:2205.05198);
* NCCL: the fabric's variables the cluster's env file already holds (the ``nccl_env`` output);
* FP8: only where the catalog gives the GPU an FP8 peak, at the planner's measured speed-up
  (provision/planning/sizing/calibration.py ``FP8_SPEEDUP``).
"""

from __future__ import annotations

import statistics
from typing import Any

#: A rank this much below the median MFU is named slow.
SLOW_RANK = 0.8
#: Peak memory above this share of the GPU is memory pressure.
MEMORY_PRESSURE = 0.9
#: A communication share above this points at the fabric or the layout.
COMM_HEAVY = 0.3

GIB = 2**30


def slow_ranks(ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks whose MFU is below :data:`SLOW_RANK` of the median."""
    values = [r["mfu"] for r in ranks if r.get("mfu") is not None]
    if len(values) < 2:
        return []
    median = statistics.median(values)
    return [r for r in ranks if r.get("mfu") is not None and r["mfu"] < SLOW_RANK * median]


def findings(cluster: Any, report: Any) -> list[str]:
    m, p = report.measured, report.planned
    name = cluster.spec.name
    out = []
    median = statistics.median(r["mfu"] for r in report.ranks if r.get("mfu") is not None)
    for r in slow_ranks(report.ranks):
        out.append(
            f"node {r.get('node_rank')} ({r['node']}, rank {r['rank']}) is slow: MFU {r['mfu']:.1%} against the "
            f"median {median:.1%}; the step waits for it. Check it: provision health {name}, provision nccl-test {name}"
        )
    for r in report.ranks:
        if r["peak_memory_bytes"] >= MEMORY_PRESSURE * p["memory_capacity_bytes"]:
            out.append(
                f"node {r.get('node_rank')} ({r['node']}) peaked at {r['peak_memory_bytes'] / GIB:,.1f} GiB of "
                f"{p['memory_capacity_bytes'] / GIB:,.0f} GiB per GPU (over {MEMORY_PRESSURE:.0%}): a longer sequence "
                "or a larger batch will not fit. Try: --checkpointing on, --micro-batch 1, or more GPUs"
            )
    low = p["mfu_range"][0]
    if m["mfu"] >= low:
        return out
    head = f"measured MFU {m['mfu']:.1%} is below the planner's range ({low:.1%} to {p['mfu_range'][1]:.1%}): "
    nccl = (cluster.outputs.get("fabric_manifest") or {}).get("measured") or {}
    transports = nccl.get("transports") or {}
    if nccl and (not nccl.get("ok", True) or transports.get("failures")):
        what = "; ".join(transports.get("failures") or []) or (
            f"all-reduce {nccl.get('all_reduce_busbw_gbps')} GB/s below the {nccl.get('floor_gbps')} GB/s floor"
        )
        out.append(
            head + f"likely the fabric transport (nccl-test: {what}). Try: the fabric's NCCL settings in "
            f"/etc/provision/env, then re-run provision nccl-test {name}"
        )
    elif m["peak_memory_bytes"] >= MEMORY_PRESSURE * p["memory_capacity_bytes"]:
        out.append(
            head + f"likely memory pressure (peak {m['peak_memory_gib']:,.1f} GiB of "
            f"{p['memory_capacity_bytes'] / GIB:,.0f} GiB: allocator retries and fragmentation). Try: "
            "--checkpointing on, --micro-batch 1, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or more GPUs"
        )
    elif m["comm_share"] >= COMM_HEAVY:
        out.append(
            head + f"likely the layout: communication is {m['comm_share']:.0%} of the step with FSDP over "
            f"{m['gpus']} GPUs. Try: the planner's layout {p['layout']} (TPxPPxDP), or a larger micro-batch"
        )
    elif slow_ranks(report.ranks):
        out.append(head + f"likely the slow node named above: check it (provision health {name}) and exclude it")
    else:
        out.append(head + f"no single cause found; compare with provision nccl-test {name} and provision health {name}")
    return out


def hints(cluster: Any, req: Any, report: Any, sizing: Any) -> list[dict[str, str]]:
    from provision.catalog import load_catalog
    from provision.planning.sizing.calibration import FP8_SOURCE, FP8_SPEEDUP
    from provision.planning.sizing.layout import layer_memory

    out = []
    mem = sizing.memory
    capacity = mem.gpu_memory_bytes
    shape = report.request["shape"]
    tokens = req.seq_len * req.micro_batch
    model_src = "provision/planning/sizing/layout.py layer_memory (Korthikanti et al. 2022, arXiv:2205.05198)"
    bigger = layer_memory(mem.model_states_bytes, mem.gpus, 1, 1, tokens * 2, shape["hidden"], shape["layers"])
    if bigger <= MEMORY_PRESSURE * capacity:
        out.append(
            {
                "hint": f"--micro-batch {req.micro_batch * 2} fits the memory model ({bigger / GIB:,.1f} of "
                f"{capacity / GIB:,.0f} GiB per GPU with checkpointing): fewer, larger steps amortise FSDP's gathers",
                "source": model_src,
            }
        )
    if req.checkpointing == "on":
        # Without recomputation each layer keeps its working set (34 s h bytes) instead of its 2 s h-byte input.
        keep = mem.model_states_bytes / mem.gpus + tokens * shape["hidden"] * 34 * shape["layers"]
        if keep <= MEMORY_PRESSURE * capacity:
            out.append(
                {
                    "hint": f"--checkpointing off fits ({keep / GIB:,.1f} of {capacity / GIB:,.0f} GiB per GPU) and "
                    "saves the recomputed forward pass (about a quarter of the step's FLOPs)",
                    "source": model_src,
                }
            )
        else:
            out.append(
                {
                    "hint": f"keep activation checkpointing on: without it a GPU would need {keep / GIB:,.0f} GiB "
                    f"of {capacity / GIB:,.0f}",
                    "source": model_src,
                }
            )
    out += _nccl_hints(cluster, report)
    gpu = load_catalog().gpu(report.planned["gpu"])
    if req.precision == "bf16" and gpu is not None and gpu.fp8_dense_tflops:
        out.append(
            {
                "hint": f"{gpu.name} has FP8 tensor cores ({gpu.fp8_dense_tflops:g} dense TFLOPS): --precision fp8 "
                f"(Transformer Engine) ran {FP8_SPEEDUP:g}x BF16 in published runs; size --precision fp8 plans it",
                "source": FP8_SOURCE,
            }
        )
    return out


def _nccl_hints(cluster: Any, report: Any) -> list[dict[str, str]]:
    """The fabric's NCCL settings against what every rank ran with (the ranks report their NCCL_*/FI_*/UCX_*)."""
    env = cluster.nccl_env
    if not env:
        return []
    source = (
        f"the cluster's nccl_env output (provision outputs {cluster.spec.name} nccl_env) and the ranks' environment"
    )
    reported = [r for r in report.ranks if "fabric_env" in r]
    wrong: dict[str, Any] = {}
    for r in reported:
        for key, value in env.items():
            got = r["fabric_env"].get(key)
            if got != value:
                wrong.setdefault(key, (value, got, r.get("node_rank")))
    if wrong:
        listed = "; ".join(
            f"{k}={v} planned, {'unset' if g is None else g} on node {n}" for k, (v, g, n) in sorted(wrong.items())
        )
        return [
            {
                "hint": f"the job did not run with the fabric's NCCL settings ({listed}): source /etc/provision/env "
                "in the job (provision launch does) and do not override NCCL_* by hand",
                "source": source,
            }
        ]
    shown = ", ".join(f"{k}={v}" for k, v in sorted(env.items())[:4]) + (" ..." if len(env) > 4 else "")
    checked = f"every rank ran with them ({len(reported)} checked)" if reported else "no rank reported its environment"
    return [
        {
            "hint": f"the fabric's {len(env)} NCCL settings from /etc/provision/env are in force ({shown}); "
            f"{checked}: leave them as they are",
            "source": source,
        }
    ]

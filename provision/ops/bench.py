"""``provision bench``: a short training microbenchmark of the user's model on the cluster, against the plan.

    >>> report = run_bench(cluster, BenchRequest(params="70B"))   # runs a job through provision.ops.jobs
    >>> report.measured["mfu"], report.planned["mfu"], report.recomputed["days"]

The node side is ``images/bench/provision_bench.py`` (torch only: FSDP FULL_SHARD of a decoder-only
transformer on synthetic data), written into the job's line and run under ``torchrun`` in the cluster's
runtime; each rank prints one ``PROVISION_BENCH {json}`` line, read back from the job's logs. A mocked
cluster's nodes run ``images/fake-node/bin/provision-bench`` instead: the plan's figures, steered by
``--inject RANK:slow`` / ``RANK:memory``, after node 0 runs the real script on the CPU with a tiny model.

The model's shape comes from the planner's rule (:func:`provision.planning.sizing.estimates._memory`:
hidden = 128 x layers, N = 12 x layers x hidden^2), heads = hidden / 128; FLOPs per token are the planner's
6 N, so measured and planned MFU compare like for like. The planned figures are ``size``'s for this
cluster's GPU and GPU count; the run's days and cost are re-computed by planned / measured MFU.
The result is kept with the cluster (:func:`record`) and shown by ``provision status``.
"""

from __future__ import annotations

import base64
import json
import math
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from provision.spec.errors import Problem, SpecError
from provision.spec.units import format_time

PREFIX = "PROVISION_BENCH "
#: Chinchilla's compute-optimal 20 tokens per parameter (Hoffmann et al. 2022, arXiv:2203.15556), the run's
#: default length when --tokens is not given.
TOKENS_PER_PARAM = 20
#: Head dimension of the shape rule (Llama 2/3 use 128: arXiv:2307.09288 table 1).
HEAD_DIM = 128
FAULTS = ("slow", "memory")


@dataclass(frozen=True)
class BenchRequest:
    params: str
    tokens: str | None = None
    seq_len: int = 4096
    precision: str = "bf16"
    layout: str = "auto"
    micro_batch: int = 1
    checkpointing: str = "on"
    warmup: int = 2
    steps: int = 5
    inject: tuple[str, ...] = ()


@dataclass
class BenchReport:
    cluster: str
    job_id: str
    measured: dict[str, Any]
    planned: dict[str, Any]
    recomputed: dict[str, Any]
    ranks: list[dict[str, Any]]
    findings: list[str] = field(default_factory=list)
    hints: list[dict[str, str]] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    measured_at: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "job_id": self.job_id,
            "measured_at": self.measured_at,
            "request": self.request,
            "measured": self.measured,
            "planned": self.planned,
            "mfu_ratio": self.recomputed["mfu_ratio"],
            "recomputed": self.recomputed,
            "findings": self.findings,
            "hints": self.hints,
            "ranks": self.ranks,
        }

    def lines(self) -> list[str]:
        m, p, r = self.measured, self.planned, self.recomputed
        low, high = p["mfu_range"]
        out = [
            f"bench {self.cluster} (job {self.job_id}): {m['gpus']} GPUs, {m['strategy']}, "
            f"{self.request['precision']}, seq {self.request['seq_len']}",
            f"measured: {m['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, {m['achieved_tflops']:,.1f} TFLOPS per GPU, "
            f"MFU {m['mfu']:.1%}, peak memory {m['peak_memory_gib']:,.1f} GiB, communication {m['comm_share']:.0%} "
            "of the step",
            f"planned:  MFU {p['mfu']:.1%} (range {low:.1%} to {high:.1%}, {p['basis']}); "
            f"layout measured {m['strategy']} 1x1x{m['gpus']}, planner's TPxPPxDP {p['layout']}",
            f"run of {p['tokens']:.3g} tokens: {p['days']:,.1f} days / {_usd(p['cost_usd'])} planned; "
            f"{r['days']:,.1f} days / {_usd(r['cost_usd'])} at the measured MFU (x{1 / r['mfu_ratio']:.2f})",
        ]
        if m["simulated"]:
            cpu = m.get("cpu_check") or {}
            real = (
                f"skipped: {cpu['skipped']}"
                if "skipped" in cpu
                else f"ran ({cpu.get('strategy')}, {cpu.get('model_params')} parameters, "
                f"{cpu.get('tokens_per_s', 0):,.0f} tokens/s on the CPU)"
            )
            out.append(f"mocked nodes: figures from images/fake-node/bin/provision-bench; the real script {real}")
        out += [f"finding: {f}" for f in self.findings]
        out += [f"hint: {h['hint']} (source: {h['source']})" for h in self.hints]
        return out


def _usd(v: float | None) -> str:
    return "unpriced" if v is None else f"${v:,.0f}"


def model_shape(params: float) -> dict[str, int]:
    """The planner's shape for ``params``: hidden = 128 x layers, N = 12 x layers x hidden^2; heads of 128."""
    from provision.planning.sizing.models import ASPECT

    hidden = round((ASPECT * params / 12) ** (1 / 3))
    layers = max(1, round(hidden / ASPECT))
    hidden = max(HEAD_DIM, round(hidden / HEAD_DIM) * HEAD_DIM)
    return {"hidden": hidden, "layers": layers, "heads": hidden // HEAD_DIM}


def _check(req: BenchRequest, gpus: int, nodes: int, mock: bool) -> tuple[float, tuple[int, int, int] | None]:
    from provision.planning.sizing.models import parse_count

    problems: list[Problem] = []
    n = 0.0
    try:
        n = parse_count(req.params)
    except (ValueError, TypeError):
        problems.append(Problem("--params", req.params, "is not a parameter count", "write e.g. 70B or 7e9"))
    if req.tokens is not None:
        try:
            parse_count(req.tokens)
        except (ValueError, TypeError):
            problems.append(Problem("--tokens", req.tokens, "is not a token count", "write e.g. 2T"))
    if req.precision == "fp8":
        problems.append(
            Problem(
                "--precision",
                req.precision,
                "is not measured yet: the benchmark script uses PyTorch alone, and FP8 training needs NVIDIA "
                "Transformer Engine's fp8_autocast",
                "measure bf16 (the report's FP8 hint says what FP8 would change on this GPU)",
            )
        )
    elif req.precision != "bf16":
        problems.append(Problem("--precision", req.precision, "is not a training precision", "use bf16"))
    for flag, value, low in (("--seq-len", req.seq_len, 1), ("--steps", req.steps, 1), ("--warmup", req.warmup, 0)):
        if value < low:
            problems.append(Problem(flag, value, f"is below {low}", f"use {low} or more"))
    layout = None
    if req.layout != "auto":
        parts = req.layout.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            problems.append(Problem("--layout", req.layout, "is not auto or TPxPPxDP", "write e.g. 1x1x16 or auto"))
        else:
            tp, pp, dp = (int(p) for p in parts)
            if tp * pp * dp != gpus:
                problems.append(
                    Problem(
                        "--layout", req.layout, f"uses {tp * pp * dp} GPUs, the cluster has {gpus}", f"use 1x1x{gpus}"
                    )
                )
            elif tp * pp != 1:
                problems.append(
                    Problem(
                        "--layout",
                        req.layout,
                        "asks for tensor or pipeline parallelism; the torch-only benchmark shards with FSDP (TP=PP=1)",
                        f"use 1x1x{gpus} (or auto, which names the planner's layout beside the FSDP figures)",
                    )
                )
            layout = (tp, pp, dp)
    for text in req.inject:
        rank, _, kind = text.partition(":")
        if not mock:
            problems.append(Problem("--inject", text, "needs --mock (faults go into mocked nodes only)", "add --mock"))
        elif not (rank.isdigit() and int(rank) < nodes and kind in FAULTS):
            problems.append(
                Problem("--inject", text, f"is not RANK:slow or RANK:memory with RANK in 0..{nodes - 1}", "e.g. 1:slow")
            )
    if problems:
        raise SpecError("the benchmark's options are invalid", problems)
    return n, layout


def planned(cluster: Any, req: BenchRequest, n: float) -> tuple[Any, dict[str, Any]]:
    """``size``'s report for this cluster's GPU and GPU count, and the figures the bench compares with."""
    from provision.planning.sizing import size_training

    plan = cluster.plan()
    tokens = req.tokens if req.tokens is not None else n * TOKENS_PER_PARAM
    try:
        report = size_training(
            n, tokens, gpu=plan.offer.gpu, gpus=plan.gpus, seq_len=req.seq_len, precision=req.precision
        )
    except SpecError as e:  # the planner names its own options; here the GPU count is the cluster's
        raise SpecError(
            "the benchmark does not fit the cluster",
            [
                Problem(
                    "--params",
                    req.params,
                    f"does not fit this cluster ({plan.gpus} {plan.offer.gpu} GPUs): {p.rule}",
                    f"bench a smaller model, or bring up more nodes ({p.fix.removeprefix('use ')})",
                )
                if p.path == "--gpus"
                else p
                for p in e.problems
            ],
        ) from None
    c = report.compute
    hourly = plan.cost.hourly_usd
    wall = report.cluster.wall_hours
    return report, {
        "gpu": report.inputs.gpu,
        "gpus": plan.gpus,
        "tokens": report.inputs.tokens,
        "mfu": c.mfu,
        "mfu_range": (c.effective_mfu_range[0] / c.goodput, c.effective_mfu_range[1] / c.goodput),
        "goodput": c.goodput,
        "basis": c.mfu_basis,
        "peak_tflops": c.peak_tflops_per_gpu,
        "gpu_hours": c.gpu_hours,
        "days": report.cluster.wall_days,
        "hourly_usd": hourly,
        "cost_usd": None if hourly is None else wall * hourly,
        "memory_per_gpu_bytes": report.memory.total_per_gpu_bytes,
        "memory_capacity_bytes": report.memory.gpu_memory_bytes,
        "layout": f"{report.layout.tensor_parallel}x{report.layout.pipeline_parallel}x{report.layout.data_parallel}"
        if report.layout
        else None,
    }


def _script_line(shape: dict[str, int], req: BenchRequest, n: float, peak: float) -> str:
    """Write the benchmark script on the node and run it under the launch helpers' torchrun."""
    from provision.planning.images import image_text

    blob = base64.b64encode(image_text("bench/provision_bench.py").encode()).decode()
    path = "$HOME/.cache/provision/provision_bench.py"
    args = [
        f"--hidden={shape['hidden']}",
        f"--layers={shape['layers']}",
        f"--heads={shape['heads']}",
        f"--seq-len={req.seq_len}",
        f"--micro-batch={req.micro_batch}",
        f"--precision={req.precision}",
        f"--checkpointing={req.checkpointing}",
        f"--warmup={req.warmup}",
        f"--steps={req.steps}",
        f"--params={n:.0f}",
        f"--peak-tflops={peak:g}",
    ]
    write = f'mkdir -p "$HOME/.cache/provision" && echo {blob} | base64 -d > "{path}"'
    run = (
        "torchrun --nnodes=$NNODES --nproc-per-node=$NPROC_PER_NODE --node-rank=$NODE_RANK "
        f'--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT "{path}" ' + " ".join(args)
    )
    return f"{write} && {run}"


def _fake_line(req: BenchRequest, n: float, p: dict[str, Any], per_node: int) -> str:
    args = [
        f"--expect-mfu={p['mfu']!r}",
        f"--python={shlex.quote(sys.executable)}",  # the mocked nodes are this machine: its torch, if any
        f"--peak-tflops={p['peak_tflops']:g}",
        f"--flops-params={n:.0f}",
        f"--expect-memory-bytes={p['memory_per_gpu_bytes']:.0f}",
        f"--capacity-bytes={p['memory_capacity_bytes']:.0f}",
        f"--gpus-per-node={per_node}",
        f"--seq-len={req.seq_len}",
        f"--micro-batch={req.micro_batch}",
        f"--steps={req.steps}",
        f"--precision={req.precision}",
        f"--checkpointing={req.checkpointing}",
        *(f"--inject={i}" for i in req.inject),
    ]
    return "provision-bench " + " ".join(args)


def collect(lines: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """The ranks' ``PROVISION_BENCH`` results from (node, log line) pairs, by rank (several on a line are read
    too: ranks sharing one output stream may land on the same line)."""
    decoder = json.JSONDecoder()
    found = {}
    for node, line in lines:
        at = line.find(PREFIX)
        while at >= 0:
            try:
                doc, end = decoder.raw_decode(line, at + len(PREFIX))
            except ValueError:
                break
            if isinstance(doc, dict) and "rank" in doc:
                doc.setdefault("node_rank", node)
                found[doc["rank"]] = doc
            at = line.find(PREFIX, end)
    return [found[r] for r in sorted(found)]


def run_bench(cluster: Any, req: BenchRequest, *, timeout: float = 3600.0, poll: float = 0.5) -> BenchReport:
    """Submit the benchmark through the jobs layer, wait for it, and build the report (then record it)."""
    from provision.ops import jobs

    plan = cluster.plan()
    n, _ = _check(req, plan.gpus, plan.nodes, cluster.mock)
    sizing, p = planned(cluster, req, n)
    shape = model_shape(n)
    line = _fake_line(req, n, p, plan.gpus_per_node) if cluster.mock else _script_line(shape, req, n, p["peak_tflops"])
    label = f"bench: {n / 1e9:.3g}B params, {req.steps} steps, seq {req.seq_len}, {req.precision}"
    spec = jobs.submit(cluster, jobs.CMD, [line], label=label)
    end = time.monotonic() + timeout
    status = jobs.find(cluster, spec.id)
    while status.state in ("pending", "running") and time.monotonic() < end:
        time.sleep(poll)
        status = jobs.find(cluster, spec.id)
    got: list[tuple[int, str]] = []
    jobs.logs(cluster, spec.id, lambda rank, text: got.append((rank, text)))
    ranks = collect(got)
    if status.state != "succeeded" or len(ranks) < len(spec.ranks):
        tail = [t for _, t in got][-10:]
        from provision.spec.errors import ProvisionError

        raise ProvisionError(
            f"the benchmark job {spec.id} ended {status.state} with {len(ranks)} of {len(spec.ranks)} node results; "
            f"last log lines: {tail}. To fix: read `provision logs {cluster.spec.name} {spec.id}`"
        )
    report = build_report(cluster, req, spec.id, ranks, p, sizing, shape)
    record(cluster, report)
    return report


def _summary(ranks: list[dict[str, Any]], gpus: int) -> dict[str, Any]:
    weights = [r.get("gpus", 1) for r in ranks]
    total = sum(weights)
    mean = lambda key: sum(r[key] * w for r, w in zip(ranks, weights, strict=True)) / total  # noqa: E731
    # The step is as slow as its slowest rank: tokens/s of the job follow the longest step.
    slowest = min(r["tokens_per_s"] for r in ranks)
    return {
        "gpus": gpus,
        "strategy": ranks[0]["strategy"],
        "simulated": any(r.get("simulated") for r in ranks),
        "tokens_per_s_per_gpu": slowest,
        "tokens_per_s": slowest * gpus,
        "achieved_tflops": min(r["achieved_tflops"] for r in ranks),
        "mfu": min(r["mfu"] for r in ranks if r.get("mfu") is not None),
        "mfu_mean": mean("mfu"),
        "peak_memory_bytes": max(r["peak_memory_bytes"] for r in ranks),
        "peak_memory_gib": max(r["peak_memory_bytes"] for r in ranks) / 2**30,
        "comm_share": max(r["comm_share"] for r in ranks),
        "step_s": max(statistics.fmean(r["step_s"]) for r in ranks),
        "cpu_check": next((r["cpu_check"] for r in ranks if "cpu_check" in r), None),
    }


def build_report(
    cluster: Any,
    req: BenchRequest,
    job_id: str,
    ranks: list[dict[str, Any]],
    p: dict[str, Any],
    sizing: Any,
    shape: dict[str, int],
) -> BenchReport:
    """Measured beside planned; days and cost re-computed at the measured MFU; findings and checked hints."""
    m = _summary(ranks, p["gpus"])
    ratio = m["mfu"] / p["mfu"]
    rec = {
        "mfu_ratio": ratio,
        "gpu_hours": p["gpu_hours"] / ratio,
        "days": p["days"] / ratio,
        "cost_usd": None if p["cost_usd"] is None else p["cost_usd"] / ratio,
    }
    from provision.ops.bench_advice import findings, hints

    report = BenchReport(
        cluster=cluster.spec.name,
        job_id=job_id,
        measured=m,
        planned=p,
        recomputed=rec,
        ranks=ranks,
        request={**req.__dict__, "inject": list(req.inject), "shape": shape},
        measured_at=format_time(datetime.now(timezone.utc).replace(microsecond=0)),
    )
    report.findings = findings(cluster, report)
    report.hints = hints(cluster, req, report, sizing)
    return report


def _path(cluster: Any) -> Any:
    from provision.engine.automation import stack_bench_path

    return stack_bench_path(cluster.stack)


def record(cluster: Any, report: BenchReport) -> None:
    """Keep the report with the cluster: ``$PROVISION_HOME/bench/STACK.json`` (mocked or real), stamped with the
    cluster's creation time so a later cluster of the same name does not show it."""
    doc = {**report.as_dict(), "cluster_created_at": cluster.cost.as_dict()["created_at"]}
    _path(cluster).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def last_bench(cluster: Any, created_at: str | None) -> dict[str, Any] | None:
    """The last bench recorded for this cluster (created at ``created_at``), or None."""
    try:
        doc = json.loads(_path(cluster).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if created_at is not None and doc.get("cluster_created_at") == created_at else None


def status_line(doc: dict[str, Any]) -> str:
    m, p = doc["measured"], doc["planned"]
    return (
        f"last bench {doc['measured_at']} (job {doc['job_id']}): MFU {m['mfu']:.1%} measured vs {p['mfu']:.1%} "
        f"planned, {m['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, {m['peak_memory_gib']:,.1f} GiB peak"
    )


def mfu_scale_from(path: str, gpu: str) -> float:
    """The measured / planned MFU ratio of a ``provision bench --json`` file, for ``size --mfu-from``.

    Raises:
        SpecError: unreadable file, not a bench result, or measured on another GPU than ``--gpu``.
    """
    from pathlib import Path

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        ratio = float(doc["mfu_ratio"])
        bench_gpu = str(doc["planned"]["gpu"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SpecError(
            problems=[Problem("--mfu-from", path, f"is not a `provision bench --json` result ({e})", "pass one")]
        ) from None
    from provision.catalog import load_catalog

    model = load_catalog().gpu(gpu)
    if model is None or model.name != bench_gpu or not math.isfinite(ratio) or ratio <= 0:
        raise SpecError(
            problems=[
                Problem(
                    "--mfu-from", path, f"was measured on {bench_gpu}, not on --gpu {gpu}", f"use --gpu {bench_gpu}"
                )
            ]
        )
    return ratio

"""The sizing planner: parameters and tokens -> FLOPs, GPU-hours, memory, GPUs, wall time, storage, cost.

``size_training(params, tokens, ...)`` is pure (catalog in, report out) and deterministic. The formulas:

* training FLOPs = 6 * N_active * D (forward 2ND + backward 4ND; attention FLOPs ignored); LoRA/QLoRA 4 * N * D.
  N_active is ``--active-params`` for MoE models, else N.
* GPU-hours = FLOPs / (MFU x goodput x dense BF16 peak) / 3600, with MFU x goodput calibrated on published runs
  (:mod:`.calibration`: low / expected / high) unless ``--mfu`` is given; FP8 at its measured speed-up.
* model states under full sharding (ZeRO-3 / FSDP FULL_SHARD) = N * bytes per parameter / GPUs, where AdamW in
  mixed precision keeps 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master) + 8 (fp32 m, v) = 16 bytes;
  LoRA/QLoRA keep optimizer states for the adapters only (:func:`.estimates.state_bytes`).
* a TP x PP x DP layout that fits memory and a published global batch (:mod:`.layout`).
* an allowance per GPU for activations (activation checkpointing, one sequence per GPU), FSDP's gathered layers
  and the runtime; the model shape behind it is guessed from N (hidden = 128 * layers, N = 12 * layers * hidden^2).
* checkpoint = everything but the gradients; write throughput = checkpoint bytes / checkpoint interval.
* buy versus rent: a server's capital cost amortised at a utilisation, plus its energy, against renting.

Every assumption lands in the report's ``assumptions``; every input error is reported at once as a
:class:`~provision.spec.errors.SpecError` whose problems name the command-line option.
"""

from __future__ import annotations

import math
from typing import Any

from provision.catalog import Catalog, GpuModel, load_catalog, suggest
from provision.catalog.models import CLOUDS
from provision.planning.cost import HOURS_PER_MONTH
from provision.planning.sizing.calibration import (
    FP8_SOURCE,
    FP8_SPEEDUP,
    GOODPUT,
    GOODPUT_SOURCE,
    INTERVAL_Z,
    LARGEST_FITTED_GPUS,
    RUNS,
    UNFITTED_WIDENING,
)
from provision.planning.sizing.estimates import (
    _NUMBERS_REQUIRED,
    _choose_gpus,
    _count,
    _gpus_per_node,
    _memory,
    _number,
    _peak_tflops,
    calibration,
    effective_mfu,
    gpu_hours,
    training_flops,
)
from provision.planning.sizing.layout import parallel_layout
from provision.planning.sizing.models import (
    AMORTISATION_YEARS,
    ASPECT,
    DEFAULT_DEADLINE_DAYS,
    DEFAULT_GPUS_PER_NODE,
    FSDP_GATHERED_LAYERS,
    GIB,
    LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN,
    MAX_GPUS,
    MFU_WARN_ABOVE,
    MODES,
    OPTIMIZERS,
    PRECISIONS,
    RAW_TEXT_BYTES_PER_TOKEN,
    RETAINED_CHECKPOINTS,
    RUNTIME_RESERVE_GIB,
    TOKENIZED_BYTES_PER_TOKEN,
    TYPICAL_DRAW_FRACTION,
    CloudOption,
    ClusterChoice,
    ComputeEstimate,
    LayoutEstimate,
    MemoryEstimate,
    SizingInputs,
    SizingReport,
    format_count,
    parse_count,
)
from provision.planning.sizing.offers import (
    _buy_vs_rent,
    _cloud_option,
    _storage,
)
from provision.spec.errors import ProblemCollector, SpecError


def _similar(cat: Any, tflops: float | None) -> str:
    """The catalog GPU whose dense BF16 peak is nearest ``tflops`` (A100-80GB, a mid-range part, when unknown)."""
    if not tflops:
        return "A100-80GB"
    best = min(cat.gpus, key=lambda g: abs(math.log(g.bf16_dense_tflops / tflops)))
    return f"{best.name} ({best.bf16_dense_tflops:g} TFLOPS)"


def size_training(
    params: Any,
    tokens: Any,
    *,
    gpu: str = "H100",
    gpus: Any = None,
    deadline_days: Any = None,
    mfu: Any = None,
    goodput: Any = None,
    mfu_scale: Any = None,
    active_params: Any = None,
    mode: str = "pretrain",
    trainable_params: Any = None,
    precision: str = "bf16",
    optimizer: str = "adamw",
    seq_len: Any = 4096,
    checkpoint_minutes: Any = 5.0,
    electricity_usd_per_kwh: Any = 0.12,
    pue: Any = 1.3,
    utilisation: Any = 0.8,
    catalog: Catalog | None = None,
) -> SizingReport:
    """Size a training run of ``params`` parameters on ``tokens`` tokens.

    Numbers may be given as text (the command line passes them through unparsed), and ``params`` and
    ``tokens`` accept shorthands such as ``"70B"`` or ``"1.5T"``. Pure and deterministic.

    Raises:
        SpecError: every input problem at once, each naming the command-line option (``--mfu``, ...);
            also when ``--gpus`` cannot hold the model or the deadline needs more than 65,536 GPUs.
    """
    cat = catalog or load_catalog()
    found = ProblemCollector()
    n = _count(found, "--params", params, "give the number of parameters, e.g. 70B")
    d = _count(found, "--tokens", tokens, "give the number of training tokens, e.g. 2T")
    a = _count(found, "--active-params", active_params, "") if active_params is not None else None
    t = _count(found, "--trainable-params", trainable_params, "") if trainable_params is not None else None
    if n is not None and a is not None and a > n:
        found.add(
            "--active-params",
            active_params,
            f"is more than --params ({format_count(n)})",
            "give the parameters each token passes through (MoE), e.g. --params 671B --active-params 37B",
        )
    if mode not in MODES:
        found.add("--mode", mode, "is not a training mode", f"use one of: {', '.join(MODES)}")
    elif t is not None and mode not in ("lora", "qlora"):
        found.add(
            "--trainable-params",
            trainable_params,
            f"applies to lora and qlora, not {mode}",
            "drop it or use --mode lora",
        )
    ambiguous = {"a100": ("A100-40GB", "A100-80GB")}
    model = cat.gpu(gpu) if isinstance(gpu, str) and gpu.strip().lower() not in ambiguous else None
    if isinstance(gpu, str) and gpu.strip().lower() in ambiguous:
        found.add(
            "--gpu", gpu, "names two GPUs with different memory", f"use {' or '.join(ambiguous[gpu.strip().lower()])}"
        )
    elif model is None and isinstance(gpu, str) and (known := cat.known_accelerator(gpu)) is not None:
        found.add(
            "--gpu",
            gpu,
            f"is {known.name}, a known accelerator the planner does not size or price: {known.cloud}; {known.sizing}",
            f"size with a catalog GPU of similar throughput, e.g. --gpu {_similar(cat, known.bf16_dense_tflops)}"
            + (f"; the build catalog lists its server ({known.onprem_server})" if known.onprem_server else ""),
        )
    elif model is None:
        close = suggest(str(gpu), cat.gpu_names()) or cat.gpu_names()
        found.add("--gpu", gpu, "is not a GPU in the catalog", f"use one of: {', '.join(close)}")
    if precision not in PRECISIONS:
        found.add("--precision", precision, "is not a training precision", "use bf16 or fp8")
    elif model is not None and _peak_tflops(model, precision) is None:
        found.add("--precision", precision, f"is not supported by {model.name} (no FP8 tensor cores)", "use bf16")
    if mfu_scale is not None and (mfu is not None or not isinstance(mfu_scale, (int, float)) or mfu_scale <= 0):
        found.add(
            "--mfu-from",
            mfu_scale,
            "cannot be combined with --mfu" if mfu is not None else "is not a positive measured/planned MFU ratio",
            "give either --mfu or --mfu-from BENCH.json",
        )
    if optimizer not in OPTIMIZERS:
        found.add("--optimizer", optimizer, "is not a supported optimizer", "use adamw, adafactor or sgd")
    given = {
        "--gpus": gpus,
        "--deadline-days": deadline_days,
        "--mfu": mfu,
        "--goodput": goodput if goodput is not None else GOODPUT,
        "--seq-len": seq_len,
        "--checkpoint-minutes": checkpoint_minutes,
        "--electricity-usd-per-kwh": electricity_usd_per_kwh,
        "--pue": pue,
        "--utilisation": utilisation,
    }
    checked = {f: _number(found, f, v) for f, v in given.items() if v is not None or f in _NUMBERS_REQUIRED}
    num = {f: v for f, v in checked.items() if v is not None}
    count = int(num["--gpus"]) if "--gpus" in num else None
    per_node = _gpus_per_node(cat, model) if model else DEFAULT_GPUS_PER_NODE
    if count is not None:
        if count > MAX_GPUS:
            found.add("--gpus", count, f"is more than {MAX_GPUS:,} GPUs", f"use at most {MAX_GPUS:,}")
        elif count > per_node and count % per_node:
            low, high = count // per_node * per_node, -(-count // per_node) * per_node
            found.add("--gpus", count, f"is not a whole number of {per_node}-GPU nodes", f"use {low} or {high}")
    found.raise_if_any(SpecError, "the sizing inputs are invalid")
    assert model is not None and n is not None and d is not None  # noqa: S101  # no problems found
    req = SizingInputs.model_validate(
        {
            "params": n,
            "tokens": d,
            "gpu": model.name,
            "precision": precision,
            "optimizer": optimizer,
            "gpus": count,
            "seq_len": int(num.pop("--seq-len")),
            "active_params": a,
            "mode": mode,
            "trainable_params": t,
            "mfu_scale": float(mfu_scale) if mfu_scale is not None else 1.0,
            **{f.removeprefix("--").replace("-", "_"): v for f, v in num.items() if f != "--gpus"},
        }
    )
    hours = gpu_hours(cat, req, model)[1]
    probe = _memory(req, model, per_node, per_node)
    _check_feasible(found, req, hours, probe, per_node)
    found.raise_if_any(SpecError, "the sizing inputs cannot be met")
    chosen, basis = _choose_gpus(hours, probe.min_gpus, per_node, count, req.deadline_days)
    low_h, hours, high_h = gpu_hours(cat, req, model, chosen)  # MFU falls on very large clusters
    if count is None:
        chosen, basis = _choose_gpus(hours, probe.min_gpus, per_node, count, req.deadline_days)
    memory = _memory(req, model, chosen, per_node)
    clouds = tuple(_cloud_option(cat, c, req, model) for c in CLOUDS)
    cluster = _cluster(req, hours, memory, chosen, per_node, basis, clouds)
    peak = model.bf16_dense_tflops
    e_low, eff, e_high = effective_mfu(cat, req, model, chosen)
    layout = parallel_layout(
        memory.model_states_bytes,
        chosen,
        per_node,
        model.memory_gib,
        req.seq_len,
        memory.assumed_hidden_size,
        memory.assumed_layers,
        moe=req.active_params is not None,
    )
    basis_text = (
        f"given: --mfu {req.mfu:g} x goodput {req.goodput:g}"
        if req.mfu is not None
        else (
            "ASSUMED, not calibrated: no published whole run on this accelerator; the line is fitted on the vendor's "
            "throughput benchmarks x goodput, with a wide range (provision/planning/sizing/calibration.py BENCHMARKS)"
            if calibration(cat).line(model.name, model.generation)[0].basis == "benchmarks"
            else "calibrated on published runs (provision/planning/sizing/calibration.py)"
        )
        + (f" x {req.mfu_scale:.4g} measured/planned (--mfu-from)" if req.mfu_scale != 1.0 else "")
    )
    return SizingReport(
        inputs=req,
        compute=ComputeEstimate(
            formula=(
                f"training FLOPs = {'4' if req.mode in ('lora', 'qlora') else '6'} * N_active * D; GPU-hours = "
                "FLOPs / (MFU x goodput x dense BF16 peak FLOP/s) / 3600"
            ),
            training_flops=training_flops(req),
            tokens_per_param=d / n,
            peak_tflops_per_gpu=peak,
            achieved_tflops_per_gpu=peak * eff,
            gpu_hours=hours,
            mfu_basis=basis_text,
            mfu=eff / req.goodput,
            goodput=req.goodput,
            effective_mfu=eff,
            effective_mfu_range=(e_low, e_high),
            gpu_hours_range=(low_h, high_h),
            fit_error=calibration(cat).line(model.name, model.generation)[0].sigma,
        ),
        memory=memory,
        cluster=cluster,
        clouds=clouds,
        storage=_storage(cat, req),
        layout=layout,
        buy_vs_rent=_buy_vs_rent(cat, req, model, cluster),
        assumptions=_assumptions(cat, req, model, memory, per_node),
        warnings=_warnings(req, memory, cluster, layout, chosen),
    )


def _check_feasible(
    found: ProblemCollector, req: SizingInputs, hours: float, probe: MemoryEstimate, per_node: int
) -> None:
    """Inputs that parse but cannot be met: --gpus too few to hold the model, a deadline beyond any cluster."""
    if req.gpus is not None and probe.min_gpus is not None and req.gpus < probe.min_gpus:
        need = math.ceil(probe.min_gpus / per_node) * per_node
        found.add(
            "--gpus",
            req.gpus,
            f"cannot hold {format_count(req.params)} parameters with {req.optimizer} on {req.gpu} "
            f"({probe.model_states_bytes / req.gpus / GIB + probe.allowance_per_gpu_bytes / GIB:,.0f} GiB per GPU "
            f"needed, {probe.gpu_memory_bytes / GIB:g} GiB available)",
            f"use at least {need} GPUs, or a lighter optimizer (adafactor) or a bigger GPU",
        )
    if req.deadline_days is not None and req.gpus is None:
        needed = hours / (req.deadline_days * 24)
        if needed > MAX_GPUS:
            found.add(
                "--deadline-days",
                req.deadline_days,
                f"needs {needed:,.0f} GPUs, more than the {MAX_GPUS:,} a cluster may have",
                f"allow at least {math.ceil(hours / (MAX_GPUS * 24) * 100) / 100:g} days, or use --gpus",
            )


def _cluster(
    req: SizingInputs,
    hours: float,
    memory: MemoryEstimate,
    gpus: int,
    per_node: int,
    basis: str,
    clouds: tuple[CloudOption, ...],
) -> ClusterChoice:
    nodes = math.ceil(gpus / per_node)
    wall = hours / gpus
    deadline = req.deadline_days or DEFAULT_DEADLINE_DAYS
    one_node_days = hours / per_node / 24
    fits_one = memory.min_nodes is not None and memory.min_nodes <= 1
    if nodes == 1 and not memory.fits:
        text = (
            f"single node by GPU-hours ({wall / 24:,.1f} days), but it cannot hold the model: "
            f"{memory.total_per_gpu_bytes / GIB:,.1f} GiB per GPU of {memory.gpu_memory_bytes / GIB:g} (see warnings)"
        )
    elif nodes == 1:
        text = (
            f"single node: the model states fit {per_node} GPUs ({memory.total_per_gpu_bytes / GIB:,.1f} of "
            f"{memory.gpu_memory_bytes / GIB:g} GiB per GPU) and one node trains in {wall / 24:,.1f} days; "
            "no inter-node fabric is needed, so take the cheapest 8-GPU instance"
        )
    else:
        reasons = []
        if memory.min_gpus is None:
            reasons.append("pure FSDP cannot hold the model at any GPU count (see warnings)")
        elif not fits_one:
            reasons.append(f"the model states need at least {memory.min_gpus} GPUs")
        if one_node_days > deadline:
            reasons.append(f"one node would take {one_node_days:,.1f} days, more than the {deadline:g}-day deadline")
        why = " and ".join(reasons) or f"--gpus asks for {gpus}; one node would also do it in {one_node_days:,.1f} days"
        fabrics = "; ".join(
            f"{c.cloud} {c.fabric_name} ({c.instance_type})" for c in clouds if c.instance_type and c.fabric != "none"
        )
        text = f"multi-node ({nodes} nodes): {why}. Use a fast GPU fabric in one placement group or zone: {fabrics}"
    return ClusterChoice(
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=per_node,
        basis=basis,
        wall_hours=wall,
        wall_days=wall / 24,
        deadline_days=deadline,
        meets_deadline=wall / 24 <= deadline * (1 + 1e-9),
        topology="single-node" if nodes == 1 else "multi-node",
        recommendation=text,
    )


def _error_text(cat: Catalog, gpu: GpuModel) -> str:
    """How the range for ``gpu``'s generation was made and validated (leave-one-out)."""
    line, borrowed = calibration(cat).line(gpu.name, gpu.generation)
    left_out = ", ".join(f"{name} {ratio:.2f}x" for name, ratio in line.left_out)
    if line.basis == "benchmarks":
        return (
            f"ASSUMPTION, not a calibration: no published whole training run on {gpu.name} states its device-hours, "
            f"so the {line.generation} line is fitted on the vendor's measured throughput ({', '.join(line.runs)}: "
            f"6 x N x tokens/s against the {gpu.bf16_dense_tflops:g} TFLOPS peak, times goodput {GOODPUT:g}; sources "
            "in calibration.py BENCHMARKS); low/high are a deliberately wide 80% interval exp(-/+ "
            f"{INTERVAL_Z} x {line.sigma:.3f}) = {math.exp(-INTERVAL_Z * line.sigma):.2f}x-"
            f"{math.exp(INTERVAL_Z * line.sigma):.2f}x (the widest run-fitted generation's leave-one-out error x "
            f"{UNFITTED_WIDENING:g}); pass --mfu or --mfu-from with a measured value to replace it"
        )
    return (
        f"low/high are the 80% interval exp(-/+ {INTERVAL_Z} x {line.sigma:.3f}), the {line.generation} line's own "
        f"leave-one-out error{' (borrowed)' if borrowed else ''}: each fitted run left out in turn lands at {left_out} "
        f"of its reported GPU-hours, {line.coverage:.0%} inside its range"
    )


def _assumptions(
    cat: Catalog, req: SizingInputs, gpu: GpuModel, memory: MemoryEstimate, per_node: int
) -> tuple[str, ...]:
    states = " + ".join(f"{v:g} {k}" for k, v in memory.bytes_per_param.items())
    fitted = ", ".join(r.name for r in RUNS if r.fit)
    held_out = ", ".join(r.name for r in RUNS if not r.fit)
    assumed = calibration(cat).line(gpu.name, gpu.generation)[0].basis == "benchmarks"
    mfu_text = (
        f"MFU {req.mfu:g} as given, times goodput {req.goodput:g}; no range"
        if req.mfu is not None
        else _error_text(cat, gpu)
        if assumed
        else (
            f"MFU from a fit of ln(MFU x goodput) = a + b ln(N_active/10B) per GPU generation on {fitted} (reported "
            f"GPU-hours; sources in calibration.py); held-out runs checked within 0.67x-1.5x: {held_out}; "
            f"{_error_text(cat, gpu)}; Blackwell/AMD use the Hopper line with a 1.5x wider range; above 8,192 GPUs "
            "MFU falls 7% per doubling (Llama 3 Table 4: 430 -> 400 TFLOPS, 8K -> 16K H100)"
        )
    )
    return (
        "training FLOPs = 6 * N_active * D (2ND forward + 4ND backward; LoRA/QLoRA 4ND: no weight gradients for "
        "frozen weights); MoE uses the active parameters for compute and the total for memory and checkpoints; "
        "attention FLOPs and recomputation are not counted, so MFU is the model-FLOPs utilisation",
        f"peak = {gpu.name} dense (no sparsity) BF16 {gpu.bf16_dense_tflops:g} TFLOPS from the catalog's gpus.yaml; "
        f"MFU is quoted against it in every precision; FP8 training runs {FP8_SPEEDUP:g}x the BF16 throughput "
        f"({FP8_SOURCE}), not 2x",
        mfu_text,
        f"goodput {req.goodput:g} = share of wall time spent training (failures, restarts, checkpoint stalls); "
        f"default {GOODPUT:g} from the {GOODPUT_SOURCE}",
        f"model states under full sharding (ZeRO-3 / FSDP): {states} = {memory.bytes_per_param_total:g} bytes/param, "
        "divided evenly over every GPU; fp8 training keeps the same bf16/fp32 copies (FP8 casts are transient)",
        "adafactor: no first moment (beta1=None) and a factored second moment of O(rows + cols) per matrix, taken "
        "as 0 bytes/param; sgd: momentum kept in fp32",
        f"model shape guessed from N: hidden = {ASPECT} * layers and N = 12 * layers * hidden^2, giving hidden "
        f"{memory.assumed_hidden_size} and {memory.assumed_layers} layers",
        f"activation allowance: activation checkpointing at every layer, one {req.seq_len}-token sequence per GPU "
        f"(micro-batch 1), FlashAttention, no tensor/sequence parallelism: seq * hidden * (2 * layers + "
        f"{LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN}) bytes",
        f"FSDP working set: {FSDP_GATHERED_LAYERS} layers of gathered bf16 tensors (current and prefetched weights, "
        f"one layer's gradients) = {FSDP_GATHERED_LAYERS} * 12 * hidden^2 * 2 bytes; runtime reserve "
        f"{RUNTIME_RESERVE_GIB:g} GiB per GPU (CUDA context, NCCL buffers, fragmentation, logits)",
        f"GPU count: --gpus as given, else whole {per_node}-GPU nodes meeting --deadline-days (default "
        f"{DEFAULT_DEADLINE_DAYS:g} days) and holding the model states, whichever is more",
        "wall time = GPU-hours / GPUs; GPU-hours already include the goodput allowance for failures and restarts",
        "cloud clusters: on-demand list prices from the catalog, cheapest region; a single node takes the cheapest "
        "offer, a multi-node cluster the offer with the fastest GPU fabric (cheapest among equals); a cloud without "
        "the GPU gets the closest GPU it sells (|log peak TFLOPS ratio| + |log memory ratio| + 1 across vendors), "
        "re-sized for it",
        "checkpoint = bf16 weights + fp32 master weights + optimizer states (gradients are not saved)",
        f"dataset: {RAW_TEXT_BYTES_PER_TOKEN} bytes/token as raw text, {TOKENIZED_BYTES_PER_TOKEN} bytes/token "
        "tokenized as uint16 (vocabulary up to 65,536; double it for uint32 token ids)",
        f"shared filesystem holds the tokenized dataset and the last {RETAINED_CHECKPOINTS} checkpoints (raw text "
        "stays in object storage); write throughput = checkpoint bytes / --checkpoint-minutes, 1 GB = 10^9 bytes, "
        "MB/s/TiB = 10^6 bytes/s per provisioned TiB; the smallest filesystem meeting both needs wins (ties: the "
        "catalog's first-listed service, then the lowest throughput tier); scratch (unreplicated) tiers are skipped",
        f"buy versus rent: one 8-GPU server at the catalog's street price; it draws {TYPICAL_DRAW_FRACTION:.0%} of "
        "its maximum input power while training (DGX H100: ~10.2 kW maximum, ~7 kW typical training draw), times "
        f"PUE {req.pue:g} at ${req.electricity_usd_per_kwh:g}/kWh; energy is billed only for busy hours",
        f"amortisation over {' or '.join(str(y) for y in AMORTISATION_YEARS)} years at {req.utilisation:.0%} "
        f"utilisation, {HOURS_PER_MONTH:g} hours a month; excludes data-centre space, networking, storage, staff, "
        "maintenance, financing and resale value (all of which delay break-even)",
        "renting: the cheapest on-demand price for a node of the GPU in any cloud and region in the catalog",
    )


def _warnings(
    req: SizingInputs, memory: MemoryEstimate, cluster: ClusterChoice, layout: LayoutEstimate, gpus: int
) -> tuple[str, ...]:
    out = []
    if req.mfu is not None and req.mfu > MFU_WARN_ABOVE:
        out.append(f"MFU {req.mfu:g} is above what large runs report (about 0.35-0.55); the time is optimistic")
    if gpus > LARGEST_FITTED_GPUS:
        out.append(
            f"{gpus:,} GPUs is beyond the largest published run in the calibration ({LARGEST_FITTED_GPUS:,} H100 for "
            "Llama 3 405B): MFU, failure rates and the global batch there are extrapolated"
        )
    if "pure FSDP" in layout.note:
        out.append(
            layout.note.split("; ", 1)[1] + f": use the layout TP {layout.tensor_parallel} x PP "
            f"{layout.pipeline_parallel} x DP {layout.data_parallel}"
        )
    if not layout.fits:
        out.append(
            f"no layout fits: at least {layout.min_global_batch_tokens / 1e6:,.0f}M tokens per step or "
            f"{layout.memory_per_gpu_bytes / GIB:,.0f} GiB per GPU; use fewer GPUs or a longer deadline"
        )
    if req.mfu is None and gpus <= 64:
        out.append(
            "the calibration comes from published runs on hundreds to thousands of GPUs; a job this small usually "
            "runs faster: pass --mfu with a measured value for a tighter estimate"
        )
    if req.mode in ("lora", "qlora") and req.trainable_params is None:
        out.append(f"--trainable-params not given: LoRA adapters taken as 1% of N ({format_count(req.params / 100)})")
    if memory.min_gpus is None:
        out.append(
            "pure FSDP cannot hold this model: the per-GPU allowance alone "
            f"({memory.allowance_per_gpu_bytes / GIB:,.0f} GiB) exceeds the GPU's {memory.gpu_memory_bytes / GIB:g} "
            "GiB; use tensor/sequence parallelism (not modelled) or a shorter --seq-len"
        )
    elif memory.allowance_per_gpu_bytes > memory.gpu_memory_bytes / 2:
        out.append(
            "the activation and FSDP allowance takes over half of each GPU's memory; tensor or sequence "
            "parallelism (not modelled) would leave more room"
        )
    if not cluster.meets_deadline:
        out.append(
            f"{cluster.gpus} GPUs take {cluster.wall_days:,.1f} days, more than the {cluster.deadline_days:g}-day "
            "deadline"
        )
    return tuple(out)


__all__ = ["SizingReport", "format_count", "parse_count", "size_training"]

"""Sizing planner: compute, memory and GPU-count estimates."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

from provision.catalog import Catalog, GpuModel
from provision.planning.sizing.calibration import GOODPUT, Calibration, fit
from provision.planning.sizing.models import (
    ASPECT,
    DEFAULT_DEADLINE_DAYS,
    DEFAULT_GPUS_PER_NODE,
    DEFAULT_TRAINABLE_FRACTION,
    FSDP_GATHERED_LAYERS,
    GIB,
    LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN,
    QLORA_BYTES_PER_PARAM,
    RUNTIME_RESERVE_GIB,
    STATE_BYTES,
    MemoryEstimate,
    SizingInputs,
    parse_count,
)
from provision.spec.errors import MISSING, ProblemCollector


def _whole(v: float) -> bool:
    return v >= 1 and v == int(v)


#: The numeric options: the test a value must pass, the rule it breaks otherwise, and the fix.
_NUMBERS: dict[str, tuple[Callable[[float], bool], str, str]] = {
    "--gpus": (_whole, "must be a whole number >= 1", "use a GPU count such as 64"),
    "--deadline-days": (lambda v: v > 0, "must be above 0", "give the days the run may take, e.g. 30"),
    "--mfu": (lambda v: 0 < v <= 1, "must be in (0, 1]", "use a measured MFU such as 0.35-0.5"),
    "--goodput": (lambda v: 0 < v <= 1, "must be in (0, 1]", "give the share of wall time spent training, e.g. 0.9"),
    "--seq-len": (_whole, "must be a whole number >= 1", "use the training sequence length, e.g. 4096"),
    "--checkpoint-minutes": (lambda v: v > 0, "must be above 0", "give the minutes a checkpoint write may take"),
    "--electricity-usd-per-kwh": (lambda v: v >= 0, "must be 0 or more", "give your electricity price, e.g. 0.12"),
    "--pue": (lambda v: 1 <= v <= 3, "must be in [1, 3]", "use your data centre's PUE; 1.1-1.6 is typical"),
    "--utilisation": (lambda v: 0 < v <= 1, "must be in (0, 1]", "give the share of hours an owned server is busy"),
}


#: Options that have no "not given" state (``None`` is an error for them).
_NUMBERS_REQUIRED = frozenset(_NUMBERS) - {"--gpus", "--deadline-days", "--mfu"}


def _number(found: ProblemCollector, flag: str, value: Any) -> float | None:
    """``value`` (a number or its text) as a finite float passing the option's test; else a problem and None."""
    ok, rule, fix = _NUMBERS[flag]
    if isinstance(value, str) and not value.isascii():  # float() also reads "６４" and "٦"
        found.add(flag, value, "is not a number: it has non-ASCII characters", f"write it with ASCII digits; {fix}")
        return None
    try:
        number = float("nan" if isinstance(value, bool) else value)
    except (TypeError, ValueError):
        number = float("nan")
    if math.isnan(number) and not isinstance(value, float):
        found.add(flag, value, "is not a number", fix)
        return None
    if not math.isfinite(number) or not ok(number):
        found.add(flag, value, rule, fix)
        return None
    return number


def _count(found: ProblemCollector, flag: str, value: Any, fix: str) -> float | None:
    if value is None:
        found.add(flag, MISSING, "is required", fix)
        return None
    try:
        return parse_count(value)
    except ValueError as e:
        found.add(flag, value, str(e), fix)
        return None


def _peak_tflops(gpu: GpuModel, precision: str) -> float | None:
    return gpu.fp8_dense_tflops if precision == "fp8" else gpu.bf16_dense_tflops


def _gpus_per_node(cat: Catalog, gpu: GpuModel) -> int:
    offers = cat.instances_for(gpu=gpu.name)
    return offers[0].gpus_per_node if offers else DEFAULT_GPUS_PER_NODE


# --------------------------------------------------------------------------------------------- estimates


@cache
def _calibration(gpus: tuple[tuple[str, float, str], ...]) -> Calibration:
    return fit({name: (peak, generation) for name, peak, generation in gpus})


def calibration(cat: Catalog) -> Calibration:
    """The MFU fit on published runs, with the catalog's BF16 peaks and generations."""
    return _calibration(tuple((g.name, g.bf16_dense_tflops, g.generation) for g in cat.gpus))


def active(req: SizingInputs) -> float:
    """Parameters each token passes through: ``--active-params`` for MoE, else all of them."""
    return req.active_params or req.params


def trainable(req: SizingInputs) -> float:
    """Parameters the optimizer updates: all of them, or the LoRA adapters."""
    if req.mode in ("lora", "qlora"):
        return req.trainable_params or req.params * DEFAULT_TRAINABLE_FRACTION
    return req.params


def training_flops(req: SizingInputs) -> float:
    """6 * N_active * D; LoRA/QLoRA skip the frozen weights' gradients: 4 * N_active * D."""
    factor = 4 if req.mode in ("lora", "qlora") else 6
    return factor * active(req) * req.tokens


def effective_mfu(cat: Catalog, req: SizingInputs, gpu: GpuModel, gpus: int | None) -> tuple[float, float, float]:
    """(low, expected, high) MFU x goodput against the BF16 peak: calibrated, or --mfu x --goodput."""
    if req.mfu is not None:
        eff = req.mfu * req.goodput
        return eff, eff, eff
    low, expected, high = calibration(cat).mfu(gpu.name, gpu.generation, active(req), req.precision, gpus)
    scale = req.goodput / GOODPUT * req.mfu_scale  # mfu_scale: measured / planned (provision/ops/bench.py)
    return low * scale, expected * scale, high * scale


def gpu_hours(cat: Catalog, req: SizingInputs, gpu: GpuModel, gpus: int | None = None) -> tuple[float, float, float]:
    """(low, expected, high) GPU-hours: FLOPs / (effective MFU x dense BF16 peak)."""
    low, expected, high = effective_mfu(cat, req, gpu, gpus)
    per_gpu = gpu.bf16_dense_tflops * 1e12 * 3600
    flops = training_flops(req)
    return flops / (high * per_gpu), flops / (expected * per_gpu), flops / (low * per_gpu)


def state_bytes(req: SizingInputs) -> dict[str, float]:
    """Model-state bytes per (total) parameter by mode; optimizer states only for trainable parameters."""
    full = STATE_BYTES[req.optimizer]
    if req.mode not in ("lora", "qlora"):
        return dict(full)
    share = trainable(req) / req.params
    frozen = QLORA_BYTES_PER_PARAM if req.mode == "qlora" else 2.0
    out = {("weights_nf4_frozen" if req.mode == "qlora" else "weights_bf16_frozen"): frozen}
    out.update({f"adapter_{k}": v * share for k, v in full.items()})
    return out


def _memory(req: SizingInputs, gpu: GpuModel, gpus: int, per_node: int) -> MemoryEstimate:
    per_param = state_bytes(req)
    n = req.params
    states = n * sum(per_param.values())
    # The shape (and so the activations) follows the parameters a token passes through (MoE: active ones).
    shape = active(req)
    hidden = round((ASPECT * shape / 12) ** (1 / 3))
    layers = max(1, round(hidden / ASPECT))
    seq_len = req.seq_len
    allowance = {
        "checkpointed_activations": float(seq_len * hidden * (2 * layers + LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN)),
        "fsdp_gathered_layers": float(FSDP_GATHERED_LAYERS * 12 * hidden**2 * 2),
        "runtime_reserve": RUNTIME_RESERVE_GIB * GIB,
    }
    allowance_total = sum(allowance.values())
    capacity = gpu.memory_gib * GIB
    free = capacity - allowance_total
    min_gpus = math.ceil(states / free) if free > 0 else None
    total = states / gpus + allowance_total
    weights = sum(v for k, v in per_param.items() if "weights" in k and "master" not in k)
    grads = sum(v for k, v in per_param.items() if "gradients" in k)
    return MemoryEstimate(
        sharding="full: weights, gradients and optimizer states split over every GPU (ZeRO-3 / FSDP FULL_SHARD)",
        bytes_per_param=per_param,
        bytes_per_param_total=sum(per_param.values()),
        model_states_bytes=states,
        gpus=gpus,
        weights_per_gpu_bytes=n * weights / gpus,
        gradients_per_gpu_bytes=n * grads / gpus,
        optimizer_per_gpu_bytes=n * (sum(per_param.values()) - weights - grads) / gpus,
        states_per_gpu_bytes=states / gpus,
        allowance_per_gpu=allowance,
        allowance_per_gpu_bytes=allowance_total,
        total_per_gpu_bytes=total,
        gpu_memory_bytes=capacity,
        fits=total <= capacity,
        min_gpus=min_gpus,
        min_nodes=None if min_gpus is None else math.ceil(min_gpus / per_node),
        assumed_hidden_size=hidden,
        assumed_layers=layers,
    )


def _choose_gpus(
    gpu_hours: float, min_gpus: int | None, per_node: int, gpus: int | None, deadline_days: float | None
) -> tuple[int, str]:
    """The GPU count and why: --gpus as given, else whole nodes meeting the deadline and holding the model."""
    if gpus is not None:
        return gpus, "given by --gpus"
    days = deadline_days or DEFAULT_DEADLINE_DAYS
    for_time = math.ceil(gpu_hours / (days * 24) / per_node)
    for_memory = math.ceil(min_gpus / per_node) if min_gpus else 1
    nodes = max(for_time, for_memory, 1)
    source = f"--deadline-days {days:g}" if deadline_days else f"the default {days:g}-day deadline"
    why = "the memory minimum" if for_memory > for_time else source
    return nodes * per_node, (
        f"{nodes} whole {per_node}-GPU node(s): the larger of {for_time} node(s) to meet {source} "
        f"and {for_memory} node(s) to hold the model states (set by {why})"
    )

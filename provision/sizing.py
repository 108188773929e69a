"""The sizing planner: parameters and tokens -> FLOPs, GPU-hours, memory, GPUs, wall time, storage, cost.

``size_training(params, tokens, ...)`` is pure (catalog in, report out) and deterministic. The formulas:

* training FLOPs = 6 * N * D (forward 2ND + backward 4ND; attention FLOPs ignored).
* GPU-hours = FLOPs / (MFU * peak dense TFLOPS of the GPU in the chosen precision) / 3600.
* model states under full sharding (ZeRO-3 / FSDP FULL_SHARD) = N * bytes per parameter / GPUs, where AdamW in
  mixed precision keeps 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master) + 8 (fp32 m, v) = 16 bytes.
* an allowance per GPU for activations (activation checkpointing, one sequence per GPU), FSDP's gathered layers
  and the runtime; the model shape behind it is guessed from N (hidden = 128 * layers, N = 12 * layers * hidden^2).
* checkpoint = everything but the gradients; write throughput = checkpoint bytes / checkpoint interval.
* buy versus rent: a server's capital cost amortised at a utilisation, plus its energy, against renting.

Every assumption lands in the report's ``assumptions``; every input error is reported at once as a
:class:`~provision.errors.SpecError` whose problems name the command-line option.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema

from provision.catalog import Catalog, FilesystemOffer, GpuModel, InstanceOffer, load_catalog, suggest
from provision.catalog.models import CLOUDS
from provision.cost import HOURS_PER_MONTH, storage_hourly_usd
from provision.errors import MISSING, ProblemCollector, SpecError

Precision = Literal["bf16", "fp8"]
Optimizer = Literal["adamw", "adafactor", "sgd"]
PRECISIONS: tuple[str, ...] = ("bf16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adamw", "adafactor", "sgd")

GIB = 1024**3
HOURS_PER_YEAR = 8760.0
#: Used when neither --gpus nor --deadline-days is given.
DEFAULT_DEADLINE_DAYS = 30.0
#: More GPUs than this is not a cluster this library builds (same bound as the spec's).
MAX_GPUS = 65_536
#: Fallback when the catalog sells no node of the GPU; every catalog offer today has 8.
DEFAULT_GPUS_PER_NODE = 8
#: Transformer shape guessed from N: hidden = ASPECT * layers (GPT-3 175B: 12288 / 96; Llama-2 7B: 4096 / 32).
ASPECT = 128
#: Korthikanti et al. 2022 ("Reducing Activation Recomputation"): a layer's activations are s*b*h*(34 + 5*a*s/h)
#: bytes in 16-bit; FlashAttention removes the 5*a*s/h term.
LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34
#: FSDP holds the current and the prefetched layer's gathered weights plus one layer's full gradients.
FSDP_GATHERED_LAYERS = 3
#: CUDA context, NCCL buffers, allocator fragmentation, logits.
RUNTIME_RESERVE_GIB = 4.0
RAW_TEXT_BYTES_PER_TOKEN = 4
TOKENIZED_BYTES_PER_TOKEN = 2
RETAINED_CHECKPOINTS = 3
#: DGX H100: 10.2 kW maximum input power, ~7 kW typical draw while training (gpus.yaml comment and sources).
TYPICAL_DRAW_FRACTION = 7.0 / 10.2
AMORTISATION_YEARS = (3, 4)
MFU_WARN_ABOVE = 0.6
#: Switching vendor (CUDA to ROCm) weighs like a factor e in speed or memory when a cloud lacks the GPU.
VENDOR_PENALTY = 1.0

FABRIC_NAMES = {
    "efa": "EFA",
    "tcpx": "GPUDirect-TCPX",
    "tcpxo": "GPUDirect-TCPXO",
    "rdma": "RDMA over RoCE",
    "infiniband": "InfiniBand",
    "erdma": "eRDMA",
    "none": "none (ordinary VPC networking)",
}

#: Bytes per parameter of the model states, by optimizer (mixed precision, bf16 compute).
STATE_BYTES: dict[str, dict[str, float]] = {
    "adamw": {"weights_bf16": 2, "gradients_bf16": 2, "master_weights_fp32": 4, "adam_m_fp32": 4, "adam_v_fp32": 4},
    "adafactor": {"weights_bf16": 2, "gradients_bf16": 2, "master_weights_fp32": 4, "factored_second_moment": 0},
    "sgd": {"weights_bf16": 2, "gradients_bf16": 2, "master_weights_fp32": 4, "momentum_fp32": 4},
}

_COUNT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*([kmbgtp]?)\s*$", re.IGNORECASE)
_COUNT_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_count(value: Any) -> float:
    """Parse ``"70B"``, ``"7e9"``, ``"500M"``, ``"1.5T"`` (k, M, B or G, T, P; any case) or a number.

    Raises:
        ValueError: not a count, or not positive and finite.
    """
    if isinstance(value, bool):
        raise ValueError("is not a count such as 70B, 7e9, 500M or 1.5T")
    if isinstance(value, (int, float)):
        n = float(value)
    elif isinstance(value, str) and (m := _COUNT.match(value.replace("_", "").replace(",", ""))):
        n = float(m.group(1)) * _COUNT_SCALE[m.group(2).lower()]
    else:
        raise ValueError("is not a count such as 70B, 7e9, 500M or 1.5T")
    if not math.isfinite(n) or n <= 0:
        raise ValueError("must be a positive, finite count")
    return n


Count = Annotated[
    float,
    BeforeValidator(parse_count),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "examples": ["70B", "7e9", "500M", "1.5T"]}]}),
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SizingInputs(_Model):
    """The inputs after parsing (the GPU by its canonical catalog name)."""

    params: Count
    tokens: Count
    gpu: str
    precision: Precision
    optimizer: Optimizer
    mfu: float
    seq_len: int
    gpus: int | None = None
    deadline_days: float | None = None
    checkpoint_minutes: float
    electricity_usd_per_kwh: float
    pue: float
    utilisation: float


class ComputeEstimate(_Model):
    formula: str
    training_flops: float
    tokens_per_param: float
    peak_tflops_per_gpu: float
    achieved_tflops_per_gpu: float
    gpu_hours: float


class MemoryEstimate(_Model):
    """Memory per GPU at ``gpus`` GPUs; ``min_gpus`` is None when no count fits (the allowance alone is too big)."""

    sharding: str
    bytes_per_param: dict[str, float]
    bytes_per_param_total: float
    model_states_bytes: float
    gpus: int
    weights_per_gpu_bytes: float
    gradients_per_gpu_bytes: float
    optimizer_per_gpu_bytes: float
    states_per_gpu_bytes: float
    allowance_per_gpu: dict[str, float]
    allowance_per_gpu_bytes: float
    total_per_gpu_bytes: float
    gpu_memory_bytes: float
    fits: bool
    min_gpus: int | None
    min_nodes: int | None
    assumed_hidden_size: int
    assumed_layers: int


class ClusterChoice(_Model):
    gpus: int
    nodes: int
    gpus_per_node: int
    basis: str
    wall_hours: float
    wall_days: float
    deadline_days: float
    meets_deadline: bool
    topology: Literal["single-node", "multi-node"]
    recommendation: str


class CloudOption(_Model):
    """The recommended cluster on one cloud; prices are None when the catalog has none (``notes`` say so)."""

    cloud: str
    gpu: str | None = None
    substitute: bool = False
    instance_type: str | None = None
    region: str | None = None
    fabric: str | None = None
    fabric_name: str | None = None
    fabric_gbps: float | None = None
    gpus: int | None = None
    nodes: int | None = None
    wall_hours: float | None = None
    node_hourly_usd: float | None = None
    hourly_usd: float | None = None
    total_usd: float | None = None
    notes: tuple[str, ...] = ()


class FilesystemChoice(_Model):
    """The shared filesystem suggested on one cloud; ``kind`` is None when no catalog tier reaches the need."""

    cloud: str
    kind: str | None = None
    tier: str | None = None
    size_gib: int | None = None
    throughput_mbps_per_tib: float | None = None
    write_gbps: float | None = None
    hourly_usd: float | None = None
    note: str


class StorageEstimate(_Model):
    checkpoint_bytes_per_param: float
    checkpoint_bytes: float
    checkpoint_minutes: float
    required_write_gbps: float
    dataset_raw_text_bytes: float
    dataset_tokenized_bytes: float
    retained_checkpoints: int
    shared_capacity_bytes: float
    filesystems: tuple[FilesystemChoice, ...]


class Amortisation(_Model):
    years: int
    owned_usd_per_node_hour: float | None
    cheaper: Literal["buy", "rent", "unknown"]


class BuyVsRent(_Model):
    gpu: str
    server_price_usd: float | None
    max_power_kw: float | None
    typical_power_kw: float | None
    electricity_usd_per_kwh: float
    pue: float
    energy_usd_per_node_hour: float | None
    utilisation: float
    rent_usd_per_node_hour: float | None
    rent_offer: str | None
    amortisation: tuple[Amortisation, ...]
    break_even_months: float | None
    cluster_capex_usd: float | None
    run_rent_usd: float | None
    verdict: str


class SizingReport(_Model):
    """What it takes to train the model: compute, memory, GPUs and time, clouds, storage, buy versus rent."""

    inputs: SizingInputs
    compute: ComputeEstimate
    memory: MemoryEstimate
    cluster: ClusterChoice
    clouds: tuple[CloudOption, ...]
    storage: StorageEstimate
    buy_vs_rent: BuyVsRent
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --------------------------------------------------------------------------------------------- inputs


def _whole(v: float) -> bool:
    return v >= 1 and v == int(v)


#: The numeric options: the test a value must pass, the rule it breaks otherwise, and the fix.
_NUMBERS: dict[str, tuple[Callable[[float], bool], str, str]] = {
    "--gpus": (_whole, "must be a whole number >= 1", "use a GPU count such as 64"),
    "--deadline-days": (lambda v: v > 0, "must be above 0", "give the days the run may take, e.g. 30"),
    "--mfu": (lambda v: 0 < v <= 1, "must be in (0, 1]", "use a measured MFU such as 0.35-0.5"),
    "--seq-len": (_whole, "must be a whole number >= 1", "use the training sequence length, e.g. 4096"),
    "--checkpoint-minutes": (lambda v: v > 0, "must be above 0", "give the minutes a checkpoint write may take"),
    "--electricity-usd-per-kwh": (lambda v: v >= 0, "must be 0 or more", "give your electricity price, e.g. 0.12"),
    "--pue": (lambda v: 1 <= v <= 3, "must be in [1, 3]", "use your data centre's PUE; 1.1-1.6 is typical"),
    "--utilisation": (lambda v: 0 < v <= 1, "must be in (0, 1]", "give the share of hours an owned server is busy"),
}


#: Options that have no "not given" state (``None`` is an error for them).
_NUMBERS_REQUIRED = frozenset(_NUMBERS) - {"--gpus", "--deadline-days"}


def _number(found: ProblemCollector, flag: str, value: Any) -> float | None:
    """``value`` (a number or its text) as a finite float passing the option's test; else a problem and None."""
    ok, rule, fix = _NUMBERS[flag]
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


def _memory(n: float, optimizer: str, seq_len: int, gpu: GpuModel, gpus: int, per_node: int) -> MemoryEstimate:
    per_param = STATE_BYTES[optimizer]
    states = n * sum(per_param.values())
    hidden = round((ASPECT * n / 12) ** (1 / 3))
    layers = max(1, round(hidden / ASPECT))
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
    return MemoryEstimate(
        sharding="full: weights, gradients and optimizer states split over every GPU (ZeRO-3 / FSDP FULL_SHARD)",
        bytes_per_param=per_param,
        bytes_per_param_total=sum(per_param.values()),
        model_states_bytes=states,
        gpus=gpus,
        weights_per_gpu_bytes=n * per_param["weights_bf16"] / gpus,
        gradients_per_gpu_bytes=n * per_param["gradients_bf16"] / gpus,
        optimizer_per_gpu_bytes=n * (sum(per_param.values()) - 4) / gpus,
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


def _cheapest_region(offer: InstanceOffer) -> tuple[str | None, float | None]:
    if "on-demand" not in offer.consumption:
        return None, None
    priced = [(p, r) for r in offer.regions if (p := offer.price(r)) is not None]
    if not priced:
        return (min(offer.regions) if offer.regions else None), None
    price, region = min(priced)
    return region, price


def _offer_key(offer: InstanceOffer, multi_node: bool) -> tuple[Any, ...]:
    _, price = _cheapest_region(offer)
    fabric = (offer.fabric == "none", -(offer.fabric_gbps or 0)) if multi_node else (False, 0.0)
    return (*fabric, price is None, price or 0.0, offer.instance_type)


def _closest_gpu(cat: Catalog, cloud: str, gpu: GpuModel, precision: str) -> GpuModel | None:
    """The GPU sold on ``cloud`` nearest to ``gpu``: log peak TFLOPS + log memory, plus a penalty across vendors."""
    names = {o.gpu for o in cat.instances_for(cloud=cloud)}
    candidates = [g for g in cat.gpus if g.name in names and _peak_tflops(g, precision)]
    peak = _peak_tflops(gpu, precision) or gpu.bf16_dense_tflops

    def distance(g: GpuModel) -> float:
        vendor = 0.0 if g.vendor == gpu.vendor else VENDOR_PENALTY
        return (
            abs(math.log((_peak_tflops(g, precision) or 1.0) / peak))
            + abs(math.log(g.memory_gib / gpu.memory_gib))
            + vendor
        )

    return min(candidates, key=lambda g: (distance(g), g.name), default=None)


def _cloud_option(cat: Catalog, cloud: str, req: SizingInputs, gpu: GpuModel) -> CloudOption:
    notes: list[str] = []
    chosen = gpu
    offers = cat.instances_for(cloud=cloud, gpu=gpu.name)
    if not offers:
        sub = _closest_gpu(cat, cloud, gpu, req.precision)
        if sub is None:
            return CloudOption(
                cloud=cloud, notes=(f"the catalog has no {req.precision.upper()}-capable GPU on {cloud}",)
            )
        chosen, offers = sub, cat.instances_for(cloud=cloud, gpu=sub.name)
        notes.append(
            f"the catalog has no {gpu.name} on {cloud}; {sub.name} is the closest "
            f"({_peak_tflops(sub, req.precision):g} dense {req.precision.upper()} TFLOPS, {sub.memory_gib:g} GiB), "
            "so GPUs and time are re-sized for it"
        )
    per_node = offers[0].gpus_per_node
    hours = _gpu_hours(req, chosen)
    mem = _memory(req.params, req.optimizer, req.seq_len, chosen, per_node, per_node)
    count, _ = _choose_gpus(hours, mem.min_gpus, per_node, req.gpus, req.deadline_days)
    if mem.min_gpus is not None and count < mem.min_gpus:
        count = math.ceil(mem.min_gpus / per_node) * per_node
        notes.append(f"{req.gpus} {chosen.name} cannot hold the model states; raised to {count}")
    nodes = math.ceil(count / per_node)
    multi = nodes > 1
    offer = min(offers, key=lambda o: _offer_key(o, multi))
    region, price = _cheapest_region(offer)
    if multi and offer.fabric == "none":
        notes.append(
            f"no {chosen.name} offer on {cloud} has a GPU fabric: multi-node traffic crosses ordinary VPC networking"
        )
    for other in offers if multi and price is not None else []:
        other_price = _cheapest_region(other)[1]
        if other_price is not None and price is not None and other_price < price:
            notes.append(
                f"{other.instance_type} ({FABRIC_NAMES[other.fabric]}, {other.fabric_gbps or 0:g} Gbps) costs "
                f"${price - other_price:,.2f}/node-hour less with a slower fabric"
            )
    if "on-demand" not in offer.consumption:
        notes.append(f"unpriced: {offer.instance_type} is not sold on-demand ({', '.join(offer.consumption)})")
    elif price is None:
        notes.append(f"unpriced: the catalog has no on-demand price for {offer.instance_type}; ask {cloud} for a quote")
    wall = hours / count
    return CloudOption(
        cloud=cloud,
        gpu=chosen.name,
        substitute=chosen is not gpu,
        instance_type=offer.instance_type,
        region=region,
        fabric=offer.fabric,
        fabric_name=FABRIC_NAMES[offer.fabric],
        fabric_gbps=offer.fabric_gbps,
        gpus=count,
        nodes=nodes,
        wall_hours=wall,
        node_hourly_usd=price,
        hourly_usd=None if price is None else price * nodes,
        total_usd=None if price is None else price * nodes * wall,
        notes=tuple(notes),
    )


def _gpu_hours(req: SizingInputs, gpu: GpuModel) -> float:
    peak = _peak_tflops(gpu, req.precision) or gpu.bf16_dense_tflops
    return 6 * req.params * req.tokens / (req.mfu * peak * 1e12) / 3600


def _filesystem(cat: Catalog, cloud: str, capacity_gib: int, write_mbps: float) -> FilesystemChoice:
    """The smallest catalog filesystem on ``cloud`` holding ``capacity_gib`` and writing ``write_mbps``."""
    best: tuple[int, int, float, FilesystemOffer] | None = None
    for rank, offer in enumerate(cat.filesystems_for(cloud)):
        if "scratch" in offer.tier.lower():  # unreplicated: a lost disk loses the checkpoints
            continue
        tiers = offer.throughput_mbps_per_tib or ((offer.baseline_mbps_per_tib,) if offer.baseline_mbps_per_tib else ())
        for tier in tiers:
            wanted = max(capacity_gib, math.ceil(write_mbps / tier * 1024))
            size = offer.nearest_sizes(wanted, 1)[0]
            if size >= wanted and offer.allows_size(size) and (best is None or (size, rank, tier) < best[:3]):
                best = (size, rank, tier, offer)
    if best is None:
        return FilesystemChoice(
            cloud=cloud,
            note=f"no catalog filesystem on {cloud} with a known throughput reaches {write_mbps / 1000:.2f} GB/s; "
            "write checkpoints to local NVMe and upload them asynchronously, or lengthen --checkpoint-minutes",
        )
    size, _, tier, offer = best
    selectable = bool(offer.throughput_mbps_per_tib)
    hourly = storage_hourly_usd(offer, size, int(tier) if selectable else None)
    return FilesystemChoice(
        cloud=cloud,
        kind=offer.kind,
        tier=offer.tier,
        size_gib=size,
        throughput_mbps_per_tib=tier,
        write_gbps=size / 1024 * tier / 1000,
        hourly_usd=hourly,
        note=f"{offer.kind} {offer.tier}: {size:,} GiB x {tier:g} MB/s/TiB = {size / 1024 * tier / 1000:.2f} GB/s"
        + ("" if hourly is not None else "; unpriced in the catalog"),
    )


def _storage(cat: Catalog, req: SizingInputs) -> StorageEstimate:
    per_param = {k: v for k, v in STATE_BYTES[req.optimizer].items() if not k.startswith("gradients")}
    checkpoint = req.params * sum(per_param.values())
    tokenized = req.tokens * TOKENIZED_BYTES_PER_TOKEN
    capacity = tokenized + RETAINED_CHECKPOINTS * checkpoint
    write_gbps = checkpoint / (req.checkpoint_minutes * 60) / 1e9
    capacity_gib = math.ceil(capacity / GIB)
    return StorageEstimate(
        checkpoint_bytes_per_param=sum(per_param.values()),
        checkpoint_bytes=checkpoint,
        checkpoint_minutes=req.checkpoint_minutes,
        required_write_gbps=write_gbps,
        dataset_raw_text_bytes=req.tokens * RAW_TEXT_BYTES_PER_TOKEN,
        dataset_tokenized_bytes=tokenized,
        retained_checkpoints=RETAINED_CHECKPOINTS,
        shared_capacity_bytes=capacity,
        filesystems=tuple(_filesystem(cat, c, capacity_gib, write_gbps * 1000) for c in CLOUDS),
    )


def _buy_vs_rent(cat: Catalog, req: SizingInputs, gpu: GpuModel, cluster: ClusterChoice) -> BuyVsRent:
    rents = [
        (p, f"{o.cloud} {o.instance_type} {r}")
        for o in cat.instances_for(gpu=gpu.name)
        for r, p in [_cheapest_region(o)]
        if p is not None
    ]
    rent, rent_offer = min(rents) if rents else (None, None)
    capex = gpu.server_price_usd
    typical = gpu.server_power_kw * TYPICAL_DRAW_FRACTION if gpu.server_power_kw else None
    energy = typical * req.pue * req.electricity_usd_per_kwh if typical is not None else None
    amortisation = []
    for years in AMORTISATION_YEARS:
        owned = capex / (years * HOURS_PER_YEAR * req.utilisation) + energy if capex and energy is not None else None
        cheaper: Literal["buy", "rent", "unknown"] = "unknown"
        if owned is not None and rent is not None:
            cheaper = "buy" if owned < rent else "rent"
        amortisation.append(Amortisation(years=years, owned_usd_per_node_hour=owned, cheaper=cheaper))
    break_even = None
    if capex and energy is not None and rent is not None and rent > energy:
        break_even = capex / ((rent - energy) * HOURS_PER_MONTH * req.utilisation)
        verdict = (
            f"an owned 8x {gpu.name} server pays for itself after {break_even:.1f} months at "
            f"{req.utilisation:.0%} utilisation against renting at ${rent:,.2f}/h; buy if you will keep it busy longer"
        )
        if cluster.nodes > 1 or cluster.wall_hours < break_even * HOURS_PER_MONTH:
            verdict += (
                f". This run alone: ${capex * cluster.nodes:,.0f} to buy {cluster.nodes} server(s) versus "
                f"${rent * cluster.nodes * cluster.wall_hours:,.0f} to rent them for {cluster.wall_days:,.1f} days"
            )
    else:
        missing = [
            w for w, v in (("server price", capex), ("server power", energy), ("on-demand price", rent)) if v is None
        ]
        verdict = f"unknown: the catalog has no {' or '.join(missing)} for {gpu.name}"
    return BuyVsRent(
        gpu=gpu.name,
        server_price_usd=capex,
        max_power_kw=gpu.server_power_kw,
        typical_power_kw=typical,
        electricity_usd_per_kwh=req.electricity_usd_per_kwh,
        pue=req.pue,
        energy_usd_per_node_hour=energy,
        utilisation=req.utilisation,
        rent_usd_per_node_hour=rent,
        rent_offer=rent_offer,
        amortisation=tuple(amortisation),
        break_even_months=break_even,
        cluster_capex_usd=capex * cluster.nodes if capex else None,
        run_rent_usd=rent * cluster.nodes * cluster.wall_hours if rent is not None else None,
        verdict=verdict,
    )


# --------------------------------------------------------------------------------------------- entry point


def size_training(
    params: Any,
    tokens: Any,
    *,
    gpu: str = "H100",
    gpus: Any = None,
    deadline_days: Any = None,
    mfu: Any = 0.4,
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
    model = cat.gpu(gpu) if isinstance(gpu, str) else None
    if model is None:
        close = suggest(str(gpu), cat.gpu_names()) or cat.gpu_names()
        found.add("--gpu", gpu, "is not a GPU in the catalog", f"use one of: {', '.join(close)}")
    if precision not in PRECISIONS:
        found.add("--precision", precision, "is not a training precision", "use bf16 or fp8")
    elif model is not None and _peak_tflops(model, precision) is None:
        found.add("--precision", precision, f"is not supported by {model.name} (no FP8 tensor cores)", "use bf16")
    if optimizer not in OPTIMIZERS:
        found.add("--optimizer", optimizer, "is not a supported optimizer", "use adamw, adafactor or sgd")
    given = {
        "--gpus": gpus,
        "--deadline-days": deadline_days,
        "--mfu": mfu,
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
            **{f.removeprefix("--").replace("-", "_"): v for f, v in num.items() if f != "--gpus"},
        }
    )
    hours = _gpu_hours(req, model)
    probe = _memory(n, req.optimizer, req.seq_len, model, per_node, per_node)
    _check_feasible(found, req, hours, probe, per_node)
    found.raise_if_any(SpecError, "the sizing inputs cannot be met")
    chosen, basis = _choose_gpus(hours, probe.min_gpus, per_node, count, req.deadline_days)
    memory = _memory(n, req.optimizer, req.seq_len, model, chosen, per_node)
    clouds = tuple(_cloud_option(cat, c, req, model) for c in CLOUDS)
    cluster = _cluster(req, hours, memory, chosen, per_node, basis, clouds)
    peak = _peak_tflops(model, req.precision) or model.bf16_dense_tflops
    return SizingReport(
        inputs=req,
        compute=ComputeEstimate(
            formula="training FLOPs = 6 * N * D; GPU-hours = FLOPs / (MFU * peak dense FLOP/s) / 3600",
            training_flops=6 * n * d,
            tokens_per_param=d / n,
            peak_tflops_per_gpu=peak,
            achieved_tflops_per_gpu=peak * req.mfu,
            gpu_hours=hours,
        ),
        memory=memory,
        cluster=cluster,
        clouds=clouds,
        storage=_storage(cat, req),
        buy_vs_rent=_buy_vs_rent(cat, req, model, cluster),
        assumptions=_assumptions(req, model, memory, per_node),
        warnings=_warnings(req, memory, cluster),
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


def _assumptions(req: SizingInputs, gpu: GpuModel, memory: MemoryEstimate, per_node: int) -> tuple[str, ...]:
    states = " + ".join(f"{v:g} {k}" for k, v in memory.bytes_per_param.items())
    peak = _peak_tflops(gpu, req.precision)
    return (
        "training FLOPs = 6 * N * D (2ND forward + 4ND backward); attention FLOPs and activation recomputation "
        "are not counted, so MFU is the model-FLOPs utilisation",
        f"peak = {gpu.name} dense (no sparsity) {req.precision.upper()} {peak:g} TFLOPS from the catalog's gpus.yaml; "
        f"MFU {req.mfu:g} is held constant at every scale (it falls at very large scale)",
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
        "wall time = GPU-hours / GPUs: no allowance for failures, restarts, evaluation or checkpoint stalls",
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


def _warnings(req: SizingInputs, memory: MemoryEstimate, cluster: ClusterChoice) -> tuple[str, ...]:
    out = []
    if req.mfu > MFU_WARN_ABOVE:
        out.append(f"MFU {req.mfu:g} is above what large runs report (about 0.35-0.55); the time is optimistic")
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


def format_count(n: float) -> str:
    """The shorthand of a count: ``7e10`` -> ``"70B"``."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:g}{suffix}"
    return f"{n:g}"

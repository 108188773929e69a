"""Sizing planner: constants, input shorthands and the report models."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

# Defined beside the curve (which the figure draws, and which must not import this module); re-exported here.
from provision.planning.sizing.curve import format_count as format_count
from provision.spec.units import ascii_number_text

Precision = Literal["bf16", "fp8"]
Mode = Literal["pretrain", "finetune", "lora", "qlora"]
MODES: tuple[str, ...] = ("pretrain", "finetune", "lora", "qlora")
Optimizer = Literal["adamw", "adafactor", "sgd"]
PRECISIONS: tuple[str, ...] = ("bf16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adamw", "adafactor", "sgd")

GIB = 1024**3
HOURS_PER_YEAR = 8760.0
#: Used when neither --gpus nor --deadline-days is given.
DEFAULT_DEADLINE_DAYS = 30.0
#: More GPUs than this is not a cluster this library builds (same bound as the spec's).
MAX_GPUS = 65_536
#: Fallback when the catalog sells no node of the GPU (8-GPU nodes, as every row but the 4-GPU GB200 slices).
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
#: A bare number below this is taken as a missing unit ("--params 70"), not as a count.
UNITLESS_BELOW = 1e6
#: LoRA/QLoRA trainable parameters when --trainable-params is not given: 1% of N. Rank-16 adapters on every
#: linear layer of a Llama-2-7B hold ~40M parameters (0.6%); rank 64 ~160M (2.3%).
DEFAULT_TRAINABLE_FRACTION = 0.01
#: QLoRA (Dettmers et al. 2023, arXiv 2305.14314, s3): NF4 weights with double quantization cost
#: 4 + 0.127 bits per parameter.
QLORA_BYTES_PER_PARAM = 4.127 / 8
#: Largest global batch a published dense run used: Llama 3 405B grew to 16M tokens per step
#: (arXiv 2407.21783, s3.4.1). Beyond it the planner asks for model parallelism.
MAX_GLOBAL_BATCH_TOKENS = 16 * 1024**2
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

_COUNT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*([kmbgtp]?)\s*$", re.IGNORECASE | re.ASCII)
_COUNT_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


#: The largest count taken (10^18): 10,000x today's largest datasets (~10^14 tokens) and models (~10^12).
MAX_COUNT = 1e18


def parse_count(value: Any) -> float:
    """Parse ``"70B"``, ``"7e9"``, ``"500M"``, ``"1.5T"`` (k, M, B or G, T, P; any case) or a number.

    Raises:
        ValueError: not a count, or not positive and finite.
    """
    if isinstance(value, bool):
        raise ValueError("is not a count such as 70B, 7e9, 500M or 1.5T")
    if isinstance(value, (int, float)):
        n = float(value)
    elif isinstance(value, str) and (
        m := _COUNT.match(ascii_number_text(value, "count", "70B").replace("_", "").replace(",", ""))
    ):
        n = float(m.group(1)) * _COUNT_SCALE[m.group(2).lower()]
        if not m.group(2) and "e" not in m.group(1).lower() and 0 < n < UNITLESS_BELOW:
            raise ValueError(
                f"has no unit (B for billions, M for millions, T for trillions); did you mean {m.group(1)}B?"
            )
    else:
        raise ValueError("is not a count such as 70B, 7e9, 500M or 1.5T")
    if not math.isfinite(n) or n <= 0:
        raise ValueError("must be a positive, finite count")
    if n > MAX_COUNT:
        # Beyond this the arithmetic overflows (a 1e155 x 1e155 run has an infinite FLOP count).
        raise ValueError(f"is over {MAX_COUNT:.0e}, far beyond any model or dataset; check the number of digits")
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
    mfu: float | None = None
    #: Measured / planned MFU from a benchmark (``size --mfu-from``): scales the calibrated MFU (1: unscaled).
    mfu_scale: float = 1.0
    goodput: float
    active_params: Count | None = None
    mode: Mode = "pretrain"
    trainable_params: Count | None = None
    seq_len: int
    gpus: int | None = None
    deadline_days: float | None = None
    checkpoint_minutes: float
    electricity_usd_per_kwh: float
    pue: float
    utilisation: float


class ComputeEstimate(_Model):
    """Training compute; MFU is quoted against the dense BF16 peak, effective = MFU x goodput."""

    formula: str
    training_flops: float
    tokens_per_param: float
    peak_tflops_per_gpu: float
    achieved_tflops_per_gpu: float
    gpu_hours: float
    mfu_basis: str
    mfu: float
    goodput: float
    effective_mfu: float
    effective_mfu_range: tuple[float, float]
    gpu_hours_range: tuple[float, float]
    fit_error: float


class LayoutEstimate(_Model):
    """A TP x PP x DP layout for the chosen cluster (TP inside a node) and its global batch."""

    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    expert_parallel: int | None
    micro_batch_sequences: int
    min_global_batch_tokens: int
    recomputation: str
    memory_per_gpu_bytes: float
    fits: bool
    note: str


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
    price_estimated: bool = Field(
        default=False, description="The node price is the catalog's labelled ESTIMATE (no vendor price readable)."
    )
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
    price_estimated: bool = Field(default=False, description="Priced at the catalog's labelled ESTIMATE.")
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
    layout: LayoutEstimate | None = None
    buy_vs_rent: BuyVsRent
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def figure(self) -> Any:
        """Days and total cost against GPUs per cloud, as a matplotlib ``Figure`` for notebooks.

        Needs ``pip install 'provision[notebook]'`` (matplotlib, imported only here); see :mod:`.figure`.
        """
        from provision.planning.sizing.figure import figure

        return figure(self)


# --------------------------------------------------------------------------------------------- inputs

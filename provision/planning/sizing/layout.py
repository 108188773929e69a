"""A parallel layout for the chosen cluster: tensor x pipeline x data parallel (and expert parallel for MoE).

Rules (each stated in the report):

* tensor parallelism stays inside a node (NVLink), so TP <= GPUs per node; TP also splits activations
  (sequence parallelism), which is what lets long sequences or wide models fit;
* model states are sharded over every GPU (ZeRO-3 / FSDP inside each TP x PP shard);
* activations are recomputed per layer ("full" recomputation): each layer keeps its bf16 input
  (seq * hidden * 2 bytes), and one layer's working set (34 * seq * hidden bytes, Korthikanti et al. 2022)
  lives at a time; in 1F1B the first stage holds one micro-batch per stage in flight;
* the global batch is at least DP x one sequence (micro-batch 1, no gradient accumulation); above
  :data:`~provision.planning.sizing.models.MAX_GLOBAL_BATCH_TOKENS` (the 16M tokens Llama 3 405B ended at)
  the layout adds model parallelism instead.

The smallest TP x PP that fits memory and keeps the batch within the published bound wins, TP first.
For MoE models the report names an expert-parallel degree of up to one node's GPUs inside the data-parallel
group (DeepSeek-V3 used EP 64 across 8 nodes); all-to-all cost is not modelled beyond the fitted MFU.
"""

from __future__ import annotations

import math

from provision.planning.sizing.models import (
    FSDP_GATHERED_LAYERS,
    GIB,
    LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN,
    MAX_GLOBAL_BATCH_TOKENS,
    RUNTIME_RESERVE_GIB,
    LayoutEstimate,
)

RECOMPUTATION = "full: every layer's input is checkpointed and the layer recomputed in the backward pass"


def layer_memory(states_bytes: float, gpus: int, tp: int, pp: int, seq_len: int, hidden: int, layers: int) -> float:
    """Bytes per GPU for one TP x PP choice (see the module docstring)."""
    stage_layers = math.ceil(layers / pp)
    checkpoints = seq_len * hidden * 2 * stage_layers * pp / tp  # stage 0 holds pp micro-batches in 1F1B
    working = seq_len * hidden * LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN / tp
    gathered = FSDP_GATHERED_LAYERS * 12 * hidden**2 * 2 / tp
    return states_bytes / gpus + checkpoints + working + gathered + RUNTIME_RESERVE_GIB * GIB


def parallel_layout(
    states_bytes: float,
    gpus: int,
    per_node: int,
    gpu_memory_gib: float,
    seq_len: int,
    hidden: int,
    layers: int,
    moe: bool,
) -> LayoutEstimate:
    """The smallest TP x PP layout of ``gpus`` GPUs that fits memory and a published batch size."""
    capacity = gpu_memory_gib * GIB
    tps = [t for t in (1, 2, 4, 8, 16) if t <= per_node and gpus % t == 0]
    candidates = []
    for tp in tps:
        for pp in (1, 2, 4, 8, 16, 32, 64):
            if pp > layers or gpus % (tp * pp):
                continue
            dp = gpus // (tp * pp)
            mem = layer_memory(states_bytes, gpus, tp, pp, seq_len, hidden, layers)
            batch = dp * seq_len
            candidates.append((tp * pp, pp, tp, dp, mem, batch))
    ok = [c for c in candidates if c[4] <= capacity and c[5] <= MAX_GLOBAL_BATCH_TOKENS]
    pure = next((c for c in candidates if c[0] == 1), None)
    if ok:
        _, pp, tp, dp, mem, batch = min(ok)
        fits = True
        note = f"TP {tp} (inside a node) x PP {pp} x DP {dp}"
    else:
        _, pp, tp, dp, mem, batch = (
            max(candidates, key=lambda c: (c[0], -c[4])) if candidates else (1, 1, 1, gpus, 0.0, gpus * seq_len)
        )
        fits = mem <= capacity and batch <= MAX_GLOBAL_BATCH_TOKENS
        note = "no TP x PP within one node and 64 stages fits both memory and a published batch size"
    if pure is not None and pure[5] > MAX_GLOBAL_BATCH_TOKENS:
        note += (
            f"; pure FSDP over {gpus:,} GPUs would need at least {pure[5] / 1e6:,.0f}M tokens per step "
            f"(one {seq_len}-token sequence per GPU), above the {MAX_GLOBAL_BATCH_TOKENS / 2**20:g}M Llama 3 405B used"
        )
    return LayoutEstimate(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        expert_parallel=min(per_node, dp) if moe else None,
        micro_batch_sequences=1,
        min_global_batch_tokens=dp * seq_len,
        recomputation=RECOMPUTATION,
        memory_per_gpu_bytes=mem,
        fits=fits,
        note=note,
    )

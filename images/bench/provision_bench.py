#!/usr/bin/env python3
"""provision's training microbenchmark: a few steps of a decoder-only transformer of a given shape on synthetic data.

Runs under torchrun (or alone: one rank). Needs only PyTorch: torch.distributed with NCCL on GPUs, gloo on the CPU;
the model is wrapped in FSDP (FULL_SHARD) when torch.distributed.fsdp is importable, else DDP. Every rank prints one
line ``PROVISION_BENCH {json}`` with its figures; ``provision bench`` collects them from the job's logs.

Figures (per rank; the laptop side sums them up):

* ``step_s``: wall seconds of each measured step (after ``--warmup`` steps), synchronised on the device;
* ``tokens_per_s``: tokens this rank processed per second (micro-batch x sequence length / mean step);
* ``achieved_tflops``: 6 x N x tokens_per_s / 1e12, the model FLOPs per token the planner uses
  (provision/planning/sizing/estimates.py ``training_flops``: 6 N per token, attention ignored), so measured and
  planned MFU compare like for like; recomputation is not counted (model FLOPs, not hardware FLOPs);
* ``mfu``: achieved / ``--peak-tflops`` (the GPU's dense BF16 peak from the catalog), or null without a peak;
* ``peak_memory_bytes``: torch.cuda.max_memory_allocated (GPU), or the process's peak RSS on the CPU;
* ``comm_s`` / ``comm_share``: the step's collectives (FSDP: all-gather of the weights in the forward and the
  backward pass, reduce-scatter of the gradients; DDP: all-reduce of the gradients) timed alone for the same bytes,
  over the mean step: an upper bound on the exposed communication (FSDP overlaps part of it with compute).

Usage (one GPU; see the README): ``torchrun --nproc-per-node=1 provision_bench.py --hidden 4096 --layers 4
--heads 32 --seq-len 4096 --peak-tflops 989``.
"""

import argparse
import json
import os
import resource
import sys
import time

PREFIX = "PROVISION_BENCH "


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--vocab", type=int, default=0, help="0: no embedding (the planner counts 12 L h^2 only)")
    p.add_argument("--precision", choices=("bf16", "fp8", "fp32"), default="bf16")
    p.add_argument("--checkpointing", choices=("on", "off"), default="on")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--params", type=float, default=0.0, help="N for the FLOPs (default: 12 L h^2 of the shape)")
    p.add_argument("--peak-tflops", type=float, default=0.0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    return p.parse_args(argv)


def build_model(torch, a):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        """Pre-norm decoder block: 4 h^2 attention weights + 8 h^2 MLP weights = 12 h^2 parameters."""

        def __init__(self):
            super().__init__()
            h = a.hidden
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h, bias=False)
            self.proj = nn.Linear(h, h, bias=False)
            self.up = nn.Linear(h, 4 * h, bias=False)
            self.down = nn.Linear(4 * h, h, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, a.heads, h // a.heads).permute(2, 0, 3, 1, 4)
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(b, s, h))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(a.vocab, a.hidden) if a.vocab else None
            self.blocks = nn.ModuleList(Block() for _ in range(a.layers))

        def forward(self, x):
            if self.embed is not None:
                x = self.embed(x)
            for block in self.blocks:
                if a.checkpointing == "on" and self.training:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return x

    return Model(), Block


def wrap(torch, model, block_cls, device, world):
    """FSDP FULL_SHARD per block (the planner's sharding), else DDP; a single rank runs the model as it is."""
    if world == 1:
        return model.to(device), "single"
    try:
        from functools import partial

        from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        policy = partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
        kwargs = {"device_id": device} if device.type == "cuda" else {}
        wrapped = FullyShardedDataParallel(
            model.to(device), sharding_strategy=ShardingStrategy.FULL_SHARD, auto_wrap_policy=policy, **kwargs
        )
        return wrapped, "fsdp"
    except (ImportError, RuntimeError, ValueError) as e:  # e.g. an FSDP without CPU support
        sys.stderr.write(f"provision_bench: FSDP unavailable ({e}); using DDP\n")
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model.to(device)), "ddp"


def comm_seconds(torch, dist, device, world, param_count, strategy, dtype, repeats=2):
    """The step's collectives for the same bytes, timed alone (see the module docs)."""
    if world == 1:
        return 0.0
    shard = max(1, param_count // world)
    out = torch.empty(shard * world, dtype=dtype, device=device)
    part = torch.ones(shard, dtype=dtype, device=device)
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        if strategy == "fsdp":
            dist.all_gather_into_tensor(out, part)
            dist.all_gather_into_tensor(out, part)
            dist.reduce_scatter_tensor(part, out)
        else:
            dist.all_reduce(out)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def fabric_env():
    """The fabric variables this rank runs with (NCCL_*, FI_*, UCX_*): provision bench checks them against the plan."""
    return {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "FI_", "UCX_"))}


def run(a):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    if a.hidden % a.heads:
        raise SystemExit(f"provision_bench: --hidden {a.hidden} is not a multiple of --heads {a.heads}")
    torch.manual_seed(0)
    model, block_cls = build_model(torch, a)
    param_count = sum(p.numel() for p in model.parameters())
    model, strategy = wrap(torch, model, block_cls, device, world)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    dtype = torch.bfloat16 if cuda and a.precision in ("bf16", "fp8") else torch.float32
    note = []
    if a.precision == "fp8":
        note.append("fp8 needs Transformer Engine's fp8_autocast, which this torch-only script does not use: ran bf16")
    if not cuda:
        note.append("CPU: float32, no GPU peak; figures show the code path, not a GPU's speed")
    shape = (a.micro_batch, a.seq_len)
    data = torch.randint(0, a.vocab, shape, device=device) if a.vocab else torch.randn(*shape, a.hidden, device=device)
    times = []
    for step in range(a.warmup + a.steps):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = model(data).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    comm = comm_seconds(torch, dist, device, world, param_count, strategy, dtype if cuda else torch.float32)
    mean = sum(times) / len(times)
    tokens = a.micro_batch * a.seq_len / mean
    n = a.params or 12 * a.layers * a.hidden**2
    tflops = 6 * n * tokens / 1e12
    if cuda:
        peak_mem = torch.cuda.max_memory_allocated(device)
        capacity = torch.cuda.get_device_properties(device).total_memory
        gpu = torch.cuda.get_device_name(device)
    else:
        peak_mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
        capacity, gpu = None, None
    result = {
        "rank": rank,
        "world_size": world,
        "node": os.environ.get("PROVISION_NODE") or os.uname().nodename,
        "device": device.type,
        "gpu": gpu,
        "strategy": strategy,
        "precision": a.precision,
        "checkpointing": a.checkpointing,
        "shape": {"hidden": a.hidden, "layers": a.layers, "heads": a.heads, "seq_len": a.seq_len},
        "micro_batch": a.micro_batch,
        "model_params": param_count,
        "flops_params": n,
        "step_s": [round(t, 6) for t in times],
        "tokens_per_s": tokens,
        "achieved_tflops": tflops,
        "mfu": tflops / a.peak_tflops if a.peak_tflops else None,
        "peak_memory_bytes": peak_mem,
        "memory_capacity_bytes": capacity,
        "comm_s": comm,
        "comm_share": min(1.0, comm / mean) if mean else 0.0,
        "loss": float(loss.detach()),
        "notes": note,
        "simulated": False,
        "fabric_env": fabric_env(),
    }
    # One write of the whole line: ranks share torchrun's output stream, and a pipe keeps a write of up to
    # PIPE_BUF bytes whole (POSIX write(2)).
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (PREFIX + json.dumps(result, sort_keys=True) + "\n").encode())
    if world > 1:
        # Every rank leaves together: a rank that tears gloo down while a peer is still in a collective aborts
        # the peer ("terminate called without an active exception").
        dist.barrier()
        dist.destroy_process_group()
    return result


def main(argv=None):
    run(parse_args(argv))


if __name__ == "__main__":
    main()

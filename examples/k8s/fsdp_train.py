"""A minimal FSDP training script for ``provision k8s-launch TARGET -- examples/k8s/fsdp_train.py``.

The TrainJob runs ``torchrun fsdp_train.py`` on every GPU node; Kubeflow Trainer sets torchrun's
rendezvous (``PET_NNODES``, ``PET_NODE_RANK``, ``PET_MASTER_ADDR``, ...) and provision sets the fabric's
NCCL environment, so the script only initialises the process group. It trains a toy model on random
data; rank 0 prints the loss and prepares the checkpoint folder on the shared volume (``/shared``).
The script must be in the training image (or on the shared volume) at the path given to k8s-launch.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--out", default=os.environ.get("CHECKPOINT_DIR", "/shared/checkpoints"))
    args = parser.parse_args()

    dist.init_process_group("nccl")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    model = torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width) for _ in range(8)]).cuda()
    model = FSDP(model, device_id=local)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(args.steps):
        x = torch.randn(16, args.width, device="cuda")
        loss = model(x).pow(2).mean()
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if dist.get_rank() == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f} world {dist.get_world_size()}", flush=True)
    dist.barrier()
    if dist.get_rank() == 0:
        os.makedirs(args.out, exist_ok=True)
        print(f"done; checkpoints go to {args.out}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

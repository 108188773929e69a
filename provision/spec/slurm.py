"""``scheduler.slurm``: the options of a Slurm cluster (``scheduler.kind: slurm``).

A Slurm cluster is the VM cluster plus a controller (a small CPU node running ``slurmctld``, and
``slurmdbd`` when accounting is asked for) in the cluster's private network; every GPU node runs
``slurmd``. The configuration files are rendered by :mod:`provision.planning.slurm`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: A Slurm partition name: Slurm takes any word without spaces, '=' or ','; this keeps it to a
#: portable subset (``PartitionName`` in https://slurm.schedmd.com/slurm.conf.html).
PARTITION_PATTERN = r"^[a-z][a-z0-9_-]{0,30}$"


class SlurmSpec(BaseModel):
    """Options of the Slurm controller and configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    accounting: bool = Field(
        default=False,
        description="Run slurmdbd (job accounting, sacct history beyond the controller's memory) on the controller.",
    )
    controller_instance_type: str | None = Field(
        default=None,
        description="Machine type of the controller (default: a 4-vCPU general-purpose type of the cloud).",
    )
    controller_disk_gib: int = Field(
        default=100, ge=30, le=2048, description="Encrypted boot disk of the controller (state, spool, accounting)."
    )
    partition: str = Field(
        default="gpu", pattern=PARTITION_PATTERN, description="Name of the GPU nodes' partition (the default one)."
    )
    topology: Literal["auto", "block", "tree", "none"] = Field(
        default="auto",
        description="topology.conf: 'block' (Slurm 23.02+ topology/block, one block per placement island), "
        "'tree' (one leaf switch per island), 'none', or 'auto' (block where the Slurm pin has it, else tree).",
    )
    containers: bool = Field(default=True, description="Install enroot and pyxis (srun --container-image).")

    @field_validator("controller_disk_gib", mode="before")
    @classmethod
    def _not_bool(cls, v: object) -> object:
        if isinstance(v, bool):
            raise ValueError("must be a number of GiB, not true/false")
        return v

"""The job runtime's part of a plan (its model; :mod:`provision.planning.runtime` decides it)."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: The launchers ``provision launch`` writes lines for, and what DeepSpeed's multi-node launcher needs too.
LAUNCHER_TOOLS = ("torchrun", "deepspeed", "pdsh", "mpirun", "accelerate")


class RuntimePlan(BaseModel):
    """What jobs run in on the nodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["container", "node"]
    image: str | None = Field(default=None, description="The container image, pinned by digest (kind container).")
    source: str = Field(description="'spec' or the images/runtime.yaml entry it came from.")
    versions: dict[str, str] = Field(default_factory=dict, description="The image's CUDA, NCCL, PyTorch.")
    tools: dict[str, str] = Field(default_factory=dict, description="Launcher tool -> where it comes from.")
    setup: tuple[str, ...] = Field(default=(), description="Commands run once per node (defaults, then the spec's).")
    fabric_args: tuple[str, ...] = Field(default=(), description="docker run words the fabric needs.")
    fabric_env: dict[str, str] = Field(default_factory=dict, description="Variables the fabric needs in the container.")

    @property
    def local_image(self) -> str:
        """The node-local image jobs run in: the image with the setup applied (named by their hash)."""
        digest = hashlib.sha256("\n".join([self.image or "", *self.setup]).encode()).hexdigest()[:12]
        return f"provision-runtime:{digest}" if self.setup else str(self.image)

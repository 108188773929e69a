"""The ``runtime:`` section: what the jobs run in on the nodes, and what is set up once per node.

    runtime:
      kind: container            # container (default) | node (the node image's own Python)
      image: nvcr.io/nvidia/pytorch:25.01-py3@sha256:...   # optional; default per GPU family (images/runtime.yaml)
      cuda: "12.8"               # the image's CUDA, with a custom image (checked against the node's driver)
      setup: ["pip install -r requirements.txt"]            # run once per node, before the first job

A container image is pinned by digest (``@sha256:`` and 64 hex digits): a tag can move under a running
cluster, a digest cannot.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: A container reference pinned by digest: ``registry/path[:tag]@sha256:<64 hex>``.
PINNED_IMAGE = re.compile(
    r"^[a-z0-9][a-z0-9.-]*(?::[0-9]{1,5})?(?:/[a-z0-9][a-z0-9._-]*)+(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?@sha256:[0-9a-f]{64}$"
)
_CUDA = r"^[0-9]{1,2}\.[0-9]{1,2}$"


class RuntimeSpec(BaseModel):
    """What jobs run in (``runtime:``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    kind: Literal["container", "node"] = Field(
        default="container",
        description="container: jobs run in `image` (default per GPU family); node: in the node image's own Python.",
    )
    image: str | None = Field(
        default=None,
        max_length=400,
        description="A container image pinned by digest (…@sha256:<64 hex>); default: images/runtime.yaml's.",
    )
    cuda: str | None = Field(
        default=None, pattern=_CUDA, description="The image's CUDA version (major.minor); needed with a custom image."
    )
    setup: tuple[str, ...] = Field(
        default=(), max_length=50, description="Shell commands run once per node (in the container) before jobs."
    )

    @model_validator(mode="after")
    def _pinned(self) -> RuntimeSpec:
        if self.kind == "node" and (self.image or self.cuda):
            raise ValueError(
                "runtime.image and runtime.cuda apply to kind: container; drop them or use kind: container"
            )
        if self.image is not None and not PINNED_IMAGE.match(self.image):
            raise ValueError(
                f"runtime.image {self.image!r} is not pinned by digest; to fix: append @sha256:<64 hex digits> "
                "(`docker buildx imagetools inspect IMAGE` prints it)"
            )
        if self.image is not None and self.cuda is None:
            raise ValueError(
                "runtime.image needs runtime.cuda (its CUDA version, e.g. '12.8'), so it can be checked against the "
                "node's driver before anything is created"
            )
        for command in self.setup:
            if not command.strip() or "\0" in command:
                raise ValueError("runtime.setup holds an empty command; to fix: remove it")
        return self

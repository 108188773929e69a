"""The resolved plan: everything an adapter decided, as plain frozen data.

``adapter.plan(spec)`` returns a :class:`ClusterPlan`; ``adapter.build(plan)`` turns it
into Pulumi resources without making further decisions. ``provision plan`` prints
:meth:`ClusterPlan.summary`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from provision.catalog.models import FilesystemOffer, InstanceOffer
from provision.planning.kubernetes import KubernetesPlan
from provision.planning.runtime_plan import RuntimePlan
from provision.spec import AccessSpec, CapacitySpec, ClusterSpec, ScratchStorage
from provision.spec.units import format_time


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class StoragePlan(_Frozen):
    """The shared filesystem as it will be created."""

    kind: str
    tier: str
    protocol: str
    size_gib: int
    throughput_mbps_per_tib: int | None
    retain: bool
    mount: str
    hourly_usd: float | None
    offer: FilesystemOffer = Field(exclude=True)

    @property
    def throughput_mbps(self) -> float | None:
        t = self.throughput_mbps_per_tib
        return None if t is None else t * self.size_gib / 1024


class ImagePlan(_Frozen):
    """The pinned node image and the versions it carries."""

    ref: str = Field(description="The exact image reference the cloud API takes.")
    source: str = Field(description="'spec' when the user pinned it, else the images/ file it came from.")
    family: str | None = None
    versions: dict[str, str] = Field(default_factory=dict, description="The fabric manifest.")


class CostEstimate(_Frozen):
    """Hourly and lifetime cost. ``None`` where the catalog has no price."""

    compute_hourly_usd: float | None
    storage_hourly_usd: float | None
    network_hourly_usd: float | None
    scheduler_hourly_usd: float | None = Field(
        default=None, description="Managed Kubernetes: control plane + system pool (None without a scheduler)."
    )
    hourly_usd: float | None
    unpriced: tuple[str, ...] = Field(description="Parts with no known price, e.g. 'compute'.")
    lifetime_hours: float | None = Field(description="TTL, or the lifetime the cost cap allows.")
    lifetime_usd: float | None


class ClusterPlan(_Frozen):
    """Everything needed to build the cluster; adapters' ``build`` reads only this."""

    spec: ClusterSpec = Field(exclude=True)
    name: str
    cloud: str
    region: str
    zone: str | None
    instance_type: str
    offer: InstanceOffer = Field(exclude=True)
    nodes: int
    gpus: int
    gpus_per_node: int
    fabric: str
    fabric_interfaces: int
    islands: tuple[int, ...] = Field(description="Nodes per fabric island, in rank order.")
    capacity: CapacitySpec
    storage: StoragePlan | None
    scratch: ScratchStorage
    image: ImagePlan
    access: AccessSpec = Field(exclude=True)
    tags: dict[str, str]
    created_at: datetime
    expires_at: datetime | None
    lifetime_enforced_by: str | None = Field(
        default=None, description="What deletes the nodes in the cloud at expires_at (None: only the reaper)."
    )
    cost: CostEstimate
    nccl_env: dict[str, str]
    warnings: tuple[str, ...]
    options: Any = Field(exclude=True, description="The cloud's option model.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Cloud-specific decisions (adapter-owned).")
    kubernetes: KubernetesPlan | None = Field(
        default=None, description="The managed Kubernetes cluster (scheduler.kind kubernetes), else None."
    )
    runtime: RuntimePlan | None = Field(default=None, description="What jobs run in on VM nodes (planning/runtime.py).")

    def island_of(self, rank: int) -> int:
        """The fabric island that node ``rank`` belongs to."""
        start = 0
        for i, size in enumerate(self.islands):
            if rank < start + size:
                return i
            start += size
        raise IndexError(rank)

    def summary(self) -> dict[str, Any]:
        """The JSON shape of ``provision plan`` (contract in DESIGN.md)."""
        return {
            "name": self.name,
            "cloud": self.cloud,
            "region": self.region,
            "zone": self.zone,
            "instance_type": self.instance_type,
            "gpu": self.offer.gpu,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "fabric": self.fabric,
            "fabric_interfaces": self.fabric_interfaces,
            "islands": list(self.islands),
            "capacity": self.capacity.type,
            "storage": self.storage.model_dump(mode="json") if self.storage else None,
            "image": self.image.model_dump(mode="json"),
            "hourly_usd": self.cost.hourly_usd,
            "cost": self.cost.model_dump(mode="json"),
            "max_lifetime_hours": self.cost.lifetime_hours,
            "expires_at": format_time(self.expires_at) if self.expires_at else None,
            "lifetime_enforced_by": self.lifetime_enforced_by,
            "tags": self.tags,
            "nccl_env": self.nccl_env,
            "warnings": list(self.warnings),
            "extra": self.extra,
            "scheduler": self.kubernetes.summary() if self.kubernetes else {"kind": "none"},
            "runtime": self.runtime.model_dump(mode="json") if self.runtime else None,
        }

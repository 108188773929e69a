"""The resolved plan: everything an adapter decided, as plain frozen data.

``adapter.plan(spec)`` returns a :class:`ClusterPlan`; ``adapter.build(plan)`` turns it
into Pulumi resources without making further decisions. ``provision plan`` prints
:meth:`ClusterPlan.summary`, whose shape :class:`PlanJson` declares (``provision schema --plan``).

The cloud's own decisions ride in ``ClusterPlan.extra``, a frozen :class:`CloudPlan` subclass that
each cloud declares in ``clouds/<cloud>/plan.py`` (``AwsPlan``, ``GcpPlan``, ...). ``ClusterPlan`` is
generic in it, so ``ClusterPlan[AwsPlan]`` lets mypy follow a field from the adapter to the component.
Shared code never reads a cloud's own fields: it asks the accessors :class:`CloudPlan` declares.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from provision.catalog.models import Cloud, FilesystemOffer, InstanceOffer
from provision.planning.kubernetes import KubernetesJson, KubernetesPlan
from provision.planning.runtime_plan import RuntimePlan
from provision.spec import AccessSpec, CapacitySpec, ClusterSpec, ScratchStorage
from provision.spec.options import AnyCloudOptions
from provision.spec.units import format_time


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class PlanPart(_Frozen):
    """A frozen part of a plan: the base of the nested models in ``clouds/<cloud>/plan.py``."""


class Bastion(_Frozen):
    """A managed bastion that reaches the private nodes (Azure Bastion)."""

    name: str
    resource_group: str
    scale_sets: tuple[str, ...] = Field(description="The scale sets whose instances it reaches.")


class IapTunnel(_Frozen):
    """An Identity-Aware Proxy TCP tunnel to the private nodes (GCP)."""

    project: str | None
    zone: str | None = Field(description="The nodes' zone when the cloud plan names it (else the plan's zone).")


class CloudPlan(PlanPart):
    """The cloud's own decisions (``ClusterPlan.extra``), subclassed per cloud in ``clouds/<cloud>/plan.py``.

    Its fields are the cloud's; ``model_dump(mode="json")`` is the ``extra`` object of ``provision plan
    --json``, so a field's name is public. Shared layers read only the accessors below, which each cloud
    answers from its own fields (the defaults: the cloud has no such thing).
    """

    def managed_bastion(self) -> Bastion | None:
        """The managed bastion the cluster is reached through, if the plan creates one."""
        return None

    def iap_tunnel(self) -> IapTunnel | None:
        """Where an IAP tunnel reaches the nodes (GCP), if the cloud has one."""
        return None

    def identity_login(self) -> bool:
        """Whether logins go through the cloud's identity (GCP OS Login): no fixed login user exists."""
        return False

    def nccl_nics(self) -> int | None:
        """NICs per node NCCL should spread over when the plan fixes them itself (Alibaba's ERIs), else None."""
        return None


#: The cloud part of a plan; ``ClusterPlan[AwsPlan]`` in a cloud's own code.
P = TypeVar("P", bound=CloudPlan)


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
    object_store: str | None = Field(
        default=None, description="The bucket linked to the filesystem (storage.shared.object_store.uri)."
    )
    volume: str | None = Field(
        default=None,
        description="The attached volume (storage.shared.volume): its own stack holds the filesystem, the cluster "
        "mounts it; hourly_usd is then the volume's cost, billed while the volume lives, not the cluster's.",
    )

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
        default=None,
        description="Managed Kubernetes: control plane + system pool; Slurm: the controller VM (None without a "
        "scheduler, or when unpriced).",
    )
    hourly_usd: float | None
    unpriced: tuple[str, ...] = Field(description="Parts with no known price, e.g. 'compute'.")
    estimated: tuple[str, ...] = Field(
        default=(),
        description="Parts priced at a labelled catalog ESTIMATE (no vendor figure readable), e.g. "
        "'storage (amlfs AMLFS-Durable-Premium-250)'; counted in the totals and the cap.",
    )
    lifetime_hours: float | None = Field(description="TTL, or the lifetime the cost cap allows.")
    lifetime_usd: float | None


class ClusterPlan(_Frozen, Generic[P]):
    """Everything needed to build the cluster; adapters' ``build`` reads only this."""

    spec: ClusterSpec = Field(exclude=True)
    name: str
    cloud: Cloud
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
    options: AnyCloudOptions = Field(exclude=True, description="The cloud's option model.")
    extra: P = Field(description="Cloud-specific decisions (adapter-owned; see clouds/<cloud>/plan.py).")
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
        """The JSON of ``provision plan --json``: :class:`PlanJson` (``provision schema --plan``, docs/contracts.md)."""
        return self.json_view().model_dump(mode="json")

    def json_view(self) -> PlanJson:
        """This plan as :class:`PlanJson`, the model of ``provision plan --json``."""
        return PlanJson(
            name=self.name,
            cloud=self.cloud,
            region=self.region,
            zone=self.zone,
            instance_type=self.instance_type,
            gpu=self.offer.gpu,
            nodes=self.nodes,
            gpus=self.gpus,
            fabric=self.fabric,
            fabric_interfaces=self.fabric_interfaces,
            islands=self.islands,
            capacity=self.capacity.type,
            storage=self.storage,
            image=self.image,
            hourly_usd=self.cost.hourly_usd,
            cost=self.cost,
            max_lifetime_hours=self.cost.lifetime_hours,
            expires_at=format_time(self.expires_at) if self.expires_at else None,
            lifetime_enforced_by=self.lifetime_enforced_by,
            tags=self.tags,
            nccl_env=self.nccl_env,
            warnings=self.warnings,
            extra=self.extra,
            scheduler=self.kubernetes.json_view() if self.kubernetes else NoScheduler(),
            runtime=self.runtime,
        )


class NoScheduler(_Frozen):
    """``scheduler`` of a plan without one: plain VMs."""

    kind: Literal["none"] = "none"


class PlanJson(_Frozen):
    """The object ``provision plan --json`` prints, field for field (its JSON Schema: ``provision schema --plan``).

    ``extra`` is the cloud's :class:`CloudPlan`, dumped with its own fields; the published schema names each
    cloud's model there (``provision.clouds.plan_schema``).
    """

    name: str
    cloud: Cloud
    region: str
    zone: str | None
    instance_type: str
    gpu: str
    nodes: int
    gpus: int
    fabric: str
    fabric_interfaces: int
    islands: tuple[int, ...] = Field(description="Nodes per fabric island, in rank order.")
    capacity: str = Field(description="capacity.type: on-demand, spot, reservation, ...")
    storage: StoragePlan | None
    image: ImagePlan
    hourly_usd: float | None
    cost: CostEstimate
    max_lifetime_hours: float | None
    expires_at: str | None = Field(description="UTC, like 2026-12-01T23:53:28Z; None: no lifetime.")
    lifetime_enforced_by: str | None
    tags: dict[str, str]
    nccl_env: dict[str, str]
    warnings: tuple[str, ...]
    extra: SerializeAsAny[CloudPlan] = Field(description="The cloud's own decisions (clouds/<cloud>/plan.py).")
    scheduler: NoScheduler | KubernetesJson = Field(discriminator="kind")
    runtime: RuntimePlan | None = Field(description="Where jobs run: the container image or the node's Python.")

"""The Kubernetes part of a plan (``scheduler: {kind: kubernetes}``): pure data, no Pulumi.

A cloud adapter that runs its nodes under the cloud's managed Kubernetes fills a
:class:`KubernetesPlan`: the control plane, the system node pool, the GPU node pool (the
same nodes, fabric and capacity as the VM path), the add-ons, and the job profile a
generated training job uses (GPUs and fabric devices per node, pod annotations, sidecars,
the NCCL environment as pods see it). ``provision plan`` shows it with the cost of each part.

Prices (USD per hour, list prices checked 2026-11; they differ by region and change):

* GKE cluster management fee: $0.10 per cluster-hour for Standard clusters (Google Cloud
  "Google Kubernetes Engine pricing", "Cluster management fee").
* EKS: $0.10 per cluster-hour in standard support (AWS "Amazon EKS pricing"); $0.60 in
  extended support, which the plan avoids by pinning a version in standard support.
* System nodes: e2-standard-4 $0.134012/h in us-central1 (Google "VM instance pricing", E2);
  m6i.xlarge $0.192/h in us-east-1 (AWS "EC2 On-Demand pricing").
* AKS Standard tier: $0.10 per cluster-hour (Azure "Azure Kubernetes Service (AKS) pricing", Standard
  tier, the one with the uptime SLA; the Free tier has none and is meant for clusters under 10 nodes).
  System nodes: Standard_D4s_v5 $0.192/h in eastus, Linux pay-as-you-go (Azure "Linux Virtual Machines
  Pricing", Dsv5).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from provision.catalog.models import PriceEstimate

#: Control plane price per cluster-hour, by managed service (sources in the module docstring).
CONTROL_PLANE_HOURLY_USD = {"gke": 0.10, "eks": 0.10, "aks": 0.10}
#: ACK managed Pro cluster management fee: USD 0.09 per cluster-hour ("Billing for ACK managed and dedicated
#: clusters", help/en/ack/ack-managed-and-ack-dedicated/product-overview/ack-pro-cluster-billing).
CONTROL_PLANE_HOURLY_USD["ack"] = 0.09
#: The system pool's default machine type and its list price per node-hour (module docstring).
SYSTEM_NODE: dict[str, tuple[str, float | None]] = {
    "gcp": ("e2-standard-4", 0.134012),
    "aws": ("m6i.xlarge", 0.192),
    "azure": ("Standard_D4s_v5", 0.192),
}
#: ACK system nodes: ecs.g7.xlarge (4 vCPU, 16 GiB); no list price was readable, so the pool is priced at the
#: catalog's labelled estimate for the type (catalog/data/alibaba.yaml cpu_instances) and the plan says so.
SYSTEM_NODE["alibaba"] = ("ecs.g7.xlarge", None)
#: Regions the system-node price above was read for; elsewhere it is an estimate.
SYSTEM_NODE_PRICE_REGION = {"gcp": "us-central1", "aws": "us-east-1", "azure": "eastus"}
#: Kubernetes label put on every node of a pool, so queues and DaemonSets can select the pool.
POOL_LABEL = "provision-pool"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ControlPlanePlan(_Frozen):
    """The managed control plane."""

    service: Literal["gke", "eks", "aks", "ack"]
    name: str
    version: str = Field(description="Kubernetes minor version, or the GKE release channel it follows.")
    location: str = Field(description="Region (GKE: regional control plane; EKS: always regional).")
    private_nodes: bool = True
    endpoint_access: str = Field(description="Who can reach the API server, in words.")
    authorized_networks: tuple[str, ...] = ()
    hourly_usd: float | None


class NodePoolPlan(_Frozen):
    """One node pool (GKE) or managed node group (EKS)."""

    role: Literal["gpu", "system"]
    name: str
    instance_type: str
    nodes: int = Field(description="Nodes the pool holds once created (flex-start: the most it grows to).")
    min_nodes: int
    max_nodes: int
    gpus_per_node: int = 0
    fabric: str = "none"
    fabric_devices_per_node: int = 0
    capacity: str = "on-demand"
    placement: str = Field(default="none", description="How the pool's nodes are packed together.")
    hourly_usd: float | None = None


class AddonPlan(_Frozen):
    """Software the cluster gets at creation: a managed add-on, a Helm chart or our own manifests."""

    name: str
    kind: Literal["managed", "helm", "manifest"]
    source: str = Field(description="Add-on name, chart reference or container image.")
    version: str | None = Field(description="Pinned version; None: the service's default for the cluster version.")
    namespace: str
    purpose: str


class JobProfile(_Frozen):
    """What every pod of a generated training job needs on this cluster (see ``clouds/k8s/jobs.py``)."""

    namespace: str
    queue: str
    runtime: str = Field(description="The ClusterTrainingRuntime the cluster is created with.")
    service_account: str
    image: str = Field(description="Default training image (overridable per job).")
    nodes: int
    gpus_per_node: int
    fabric: str
    fabric_resource: str | None = Field(description="Extended resource of the fabric devices, if one exists.")
    fabric_devices_per_node: int
    resources: dict[str, str] = Field(description="Requests = limits per node (GPUs, fabric devices, ...).")
    env: dict[str, str] = Field(description="The NCCL / libfabric environment as pods see it.")
    annotations: dict[str, str] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    sidecars: tuple[dict[str, Any], ...] = Field(default=(), description="Native sidecars (init, restart Always).")
    volumes: tuple[dict[str, Any], ...] = ()
    security_context: dict[str, Any] = Field(
        default_factory=dict, description="The training container's securityContext (e.g. IPC_LOCK for RDMA)."
    )
    mounts: tuple[dict[str, Any], ...] = Field(default=(), description="Volume mounts of the training container.")
    shared_claim: str | None = None
    shared_mount: str | None = None
    queue_quota: dict[str, str] = Field(
        default_factory=dict, description="The Kueue ClusterQueue's nominal quota: the whole GPU pool."
    )
    provisioning_class: str | None = Field(
        default=None,
        description="ProvisioningRequest class Kueue's admission check asks for (all of a job's nodes at once).",
    )
    provisioning_parameters: dict[str, str] = Field(
        default_factory=dict, description="The class's parameters (ProvisioningRequestConfig.spec.parameters)."
    )


class KubernetesCloudPlan(_Frozen):
    """The managed-Kubernetes decisions of one cloud (``KubernetesPlan.extra``), subclassed per cloud in
    ``clouds/<cloud>/plan.py`` (``EksPlan``, ``GkePlan``). Shared code reads only the fields declared here."""

    node_image: str = Field(description="The image the GPU nodes boot, in words (the service manages it).")


class KubernetesPlan(_Frozen):
    """Everything the cloud's ``kubernetes.py`` builds, and its cost."""

    control_plane: ControlPlanePlan
    system_pool: NodePoolPlan
    gpu_pool: NodePoolPlan
    addons: tuple[AddonPlan, ...]
    job: JobProfile
    extra: SerializeAsAny[KubernetesCloudPlan] = Field(
        description="Cloud-specific decisions (adapter-owned; see clouds/<cloud>/plan.py)."
    )

    @property
    def hourly_usd(self) -> float | None:
        """What the cluster adds to the GPU nodes: control plane + system pool (``None`` if unpriced)."""
        parts = (self.control_plane.hourly_usd, self.system_pool.hourly_usd)
        return None if any(p is None for p in parts) else round(sum(p or 0.0 for p in parts), 4)

    def summary(self) -> dict[str, Any]:
        """The ``scheduler`` section of ``provision plan``: each part with its cost."""
        return self.json_view().model_dump(mode="json")

    def json_view(self) -> KubernetesJson:
        """The ``scheduler`` section of ``provision plan --json`` as its model."""
        return KubernetesJson(
            control_plane=self.control_plane,
            gpu_pool=self.gpu_pool,
            system_pool=self.system_pool,
            addons=self.addons,
            job=JobJson(
                namespace=self.job.namespace,
                queue=self.job.queue,
                runtime=self.job.runtime,
                resources_per_node=self.job.resources,
                fabric_devices_per_node=self.job.fabric_devices_per_node,
                fabric_resource=self.job.fabric_resource or "pod network interfaces",
                image=self.job.image,
            ),
            hourly_usd=self.hourly_usd,
        )


class JobJson(_Frozen):
    """``scheduler.job`` of ``provision plan --json``: what a generated training job asks of each node."""

    namespace: str
    queue: str
    runtime: str
    resources_per_node: dict[str, str]
    fabric_devices_per_node: int
    fabric_resource: str = Field(description="The fabric devices' extended resource, or 'pod network interfaces'.")
    image: str


class KubernetesJson(_Frozen):
    """``scheduler`` of ``provision plan --json`` under managed Kubernetes: each part with its cost."""

    kind: Literal["kubernetes"] = "kubernetes"
    control_plane: ControlPlanePlan
    gpu_pool: NodePoolPlan
    system_pool: NodePoolPlan
    addons: tuple[AddonPlan, ...]
    job: JobJson
    hourly_usd: float | None = Field(description="Control plane + system pool (None when unpriced).")


def system_pool(cloud: str, region: str, nodes: int, instance_type: str | None) -> NodePoolPlan:
    """The small CPU pool for cluster services (DNS, operators, Kueue, the Trainer controller)."""
    default_type, _ = SYSTEM_NODE[cloud]
    chosen = instance_type or default_type
    price = _system_price(cloud, region, chosen)
    hourly = round(price * nodes, 4) if price is not None else None
    return NodePoolPlan(
        role="system",
        name="system",
        instance_type=chosen,
        nodes=nodes,
        min_nodes=nodes,
        max_nodes=nodes,
        hourly_usd=hourly,
    )


def _system_price(cloud: str, region: str, instance_type: str) -> float | None:
    """USD per node-hour of the default system type: its list price, else the catalog's labelled estimate."""
    default_type, price = SYSTEM_NODE[cloud]
    if instance_type != default_type:
        return None
    if price is not None:
        return price
    guess = system_pool_estimate(cloud, region, instance_type)
    return guess.usd if guess is not None else None


def system_pool_estimate(cloud: str, region: str, instance_type: str) -> PriceEstimate | None:
    """The catalog's labelled estimate that prices the system pool's ``instance_type``, when no list price does."""
    default_type, price = SYSTEM_NODE[cloud]
    if instance_type != default_type or price is not None:
        return None
    from provision.catalog import load_catalog

    return load_catalog().cpu_estimate(cloud, instance_type, region)


def system_price_note(cloud: str, region: str, pool: NodePoolPlan) -> str | None:
    """A plan warning when the system pool's price is an estimate or unknown."""
    default_type, price = SYSTEM_NODE[cloud]
    if price is None and pool.hourly_usd is not None:
        return None  # priced at the catalog's labelled estimate: the plan's ESTIMATE line says so
    if pool.hourly_usd is None and price is None:
        return f"the system pool's {pool.instance_type} has no catalog price; the hourly estimate leaves it out."
    if pool.hourly_usd is None:
        return (
            f"the system pool's {pool.instance_type} has no catalog price; the hourly estimate leaves it out "
            f"(the default {default_type} is priced)."
        )
    if region != SYSTEM_NODE_PRICE_REGION.get(cloud, region):
        return (
            f"the system pool is priced at {SYSTEM_NODE_PRICE_REGION[cloud]} list prices "
            f"({default_type}); {region} may differ slightly."
        )
    return None


def pod_storage(mount: str | None, claim: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A training pod's volumes and their mounts: ``/dev/shm`` in memory (NCCL and data loaders need more than the
    container's 64 MiB), and the shared filesystem's claim at ``mount`` when the cluster has one."""
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if claim and mount is not None:
        volumes.append({"name": "shared", "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": "shared", "mountPath": mount})
    return volumes, mounts

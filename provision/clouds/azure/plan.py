"""Azure plan: what ``adapter.py`` decides and ``components.py`` builds (pure data).

:class:`AzurePlan` is ``ClusterPlan.extra`` of an Azure cluster. Field names are public: it is the ``extra``
object of ``provision plan --json``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from provision.planning.kubernetes import KubernetesCloudPlan
from provision.planning.plan import Bastion, CloudPlan, PlanPart
from provision.planning.slurm import SlurmController as BaseSlurmController


def _absent(value: object) -> bool:
    return value is None


class Island(PlanPart):
    """One scale set: a fabric island of consecutive ranks."""

    index: int
    vmss: str
    ppg: str | None = Field(description="The proximity placement group (InfiniBand clusters share one).")
    computer_name_prefix: str
    first_rank: int
    nodes: int


class ImageReference(PlanPart):
    """The scale set's ImageReference: a marketplace URN's four parts, or one image id (the others unset)."""

    publisher: str | None = Field(default=None, exclude_if=_absent)
    offer: str | None = Field(default=None, exclude_if=_absent)
    sku: str | None = Field(default=None, exclude_if=_absent)
    version: str | None = Field(default=None, exclude_if=_absent)
    id: str | None = Field(default=None, exclude_if=_absent)
    shared_gallery_image_id: str | None = Field(default=None, exclude_if=_absent)
    community_gallery_image_id: str | None = Field(default=None, exclude_if=_absent)


class Maintenance(PlanPart):
    """The Managed Lustre weekly maintenance window."""

    day_of_week: Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    time_of_day_utc: str


class AmlfsHsm(PlanPart):
    """Managed Lustre's link to a Blob container (``storage.shared.object_store``): its HSM settings."""

    container: str = Field(description="Resource id of the data container (imported from, archived to).")
    logging_container: str = Field(description="Resource id of the log container (same account).")
    import_prefix: str = Field(description="Only blobs under this prefix are imported, at their own path.")
    account_id: str | None = Field(default=None, description="The storage account the two roles are scoped to.")
    principal_id: str | None = Field(
        default=None, description="Object id of the 'HPC Cache Resource Provider' service principal (the grantee)."
    )


class Amlfs(PlanPart):
    """An Azure Managed Lustre file system."""

    kind: Literal["amlfs"] = "amlfs"
    name: str
    sku: str
    capacity_tib: int | float
    zone: str | None
    maintenance: Maintenance
    subnet_prefix_rule: str
    hsm: AmlfsHsm | None = None


class NetApp(PlanPart):
    """An Azure NetApp Files account, pool and NFS volume."""

    kind: Literal["netapp"] = "netapp"
    account: str
    pool: str
    volume: str
    creation_token: str
    service_level: str
    pool_bytes: int
    volume_bytes: int
    large_volume: bool
    allowed_clients: str = Field(description="The node subnet, the only network allowed to mount the volume.")


Filesystem = Annotated[Amlfs | NetApp, Field(discriminator="kind")]


class BastionHost(PlanPart):
    """Azure Bastion in its own subnet (azure.bastion)."""

    name: str
    subnet: str


class SlurmController(BaseSlurmController):
    """The Slurm controller VM (``scheduler.kind: slurm``): built by ``slurm.py`` in the node subnet."""

    disk_type: str = Field(description="Its managed OS disk's storage type (Azure encrypts managed disks at rest).")


class AzurePlan(CloudPlan):
    """The Azure decisions (``ClusterPlan.extra``)."""

    resource_group: str
    network_resource_group: str = Field(description="Where the network lives: the data group when retained.")
    retain_network: bool
    vnet: str
    vnet_cidr: str
    subnets: dict[str, str] = Field(description="Subnet role (nodes, filesystem, bastion) -> CIDR.")
    islands: tuple[Island, ...]
    single_placement_group: bool
    image: ImageReference
    priority: Literal["Regular", "Spot"]
    eviction_policy: Literal["Delete"] | None
    max_price: int | float | None = Field(description="Spot price cap in USD per hour; -1: up to on-demand.")
    capacity_reservation_group: str | None
    os_disk_gib: int
    encryption_at_host: bool
    nic: str
    filesystem: Filesystem | None
    lifetime: Literal["node-timer", "tags+reaper"]
    hostfile: Literal["vmss-hostnames"] = "vmss-hostnames"
    bastion: BastionHost | None
    slurm: SlurmController | None = Field(
        default=None, exclude_if=_absent, description="The Slurm controller (kind slurm only)."
    )

    def managed_bastion(self) -> Bastion | None:
        if self.bastion is None:
            return None
        return Bastion(
            name=self.bastion.name,
            resource_group=self.network_resource_group,
            # The scale sets live in the cluster's group; qualify them when the Bastion is in the data group.
            scale_sets=tuple(
                island.vmss
                if self.resource_group == self.network_resource_group
                else f"{self.resource_group}/{island.vmss}"
                for island in self.islands
            ),
        )


class HelmChart(PlanPart):
    """A pinned Helm chart (``repo`` None: an OCI reference in ``chart``)."""

    repo: str | None
    chart: str
    version: str
    namespace: str


class AksPlan(KubernetesCloudPlan):
    """The AKS decisions of ``scheduler: kubernetes`` on Azure (``KubernetesPlan.extra``; ``kubeplan.py``)."""

    cluster: str = Field(description="The managed cluster's resource name.")
    dns_prefix: str
    node_resource_group: str
    version: str
    tier: Literal["Standard", "Free"]
    system_pool: str = Field(description="The system agent pool's name (Linux: 1-12 lowercase alphanumerics).")
    gpu_pool: str = Field(description="The GPU agent pool's name.")
    os_sku: Literal["Ubuntu2204"]
    max_pods: int
    pod_cidr: str
    service_cidr: str
    dns_service_ip: str
    ppg: str = Field(description="The proximity placement group of the GPU pool (one InfiniBand island).")
    gpu_driver: Literal["None", "Install"] = Field(
        description="AKS GPU driver install on the GPU pool: None, the GPU Operator installs it with GPUDirect RDMA."
    )
    gpu_labels: dict[str, str]
    helm: dict[str, HelmChart]
    rdma_resource: str = Field(description="The extended resource the RDMA shared device plugin exposes.")
    delete_at_expiry: bool = Field(
        description="A CronJob deletes the cluster at the expiry through Workload Identity (kubeexpiry.py)."
    )

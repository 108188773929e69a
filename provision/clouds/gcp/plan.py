"""GCP plan: what ``layout.py`` and ``kubeplan.py`` decide and the components build (pure data).

:class:`GcpPlan` is ``ClusterPlan.extra`` of a GCP cluster, :class:`GkePlan` the ``KubernetesPlan.extra`` of its
GKE path. Field names are public: ``GcpPlan`` is the ``extra`` object of ``provision plan --json``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from provision.planning.kubernetes import KubernetesCloudPlan
from provision.planning.plan import CloudPlan, IapTunnel, PlanPart
from provision.planning.slurm import SlurmController as BaseSlurmController

#: Identity-Aware Proxy's TCP forwarding range (Google Cloud "Using IAP for TCP forwarding").
IAP_RANGE = "35.235.240.0/20"


class Subnet(PlanPart):
    key: str
    cidr: str


class Vpc(PlanPart):
    """One VPC of the layout (host, GPU or RoCE), its subnets and its rules."""

    key: str
    role: Literal["host", "gpu", "rdma"]
    mtu: int
    profile: str | None = Field(description="The RDMA network profile (RoCE VPC only).")
    subnets: tuple[Subnet, ...]
    internal_firewall: bool = Field(description="Allow traffic inside the VPC (RoCE VPCs take no firewall rules).")
    ssh: bool = Field(description="SSH from ssh_source_ranges lands on this VPC.")
    nat: bool
    retain: bool = Field(default=False, description="Kept on destroy (a retained filesystem is peered to it).")
    volume: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The attached volume whose VPC this network is: the cluster adds its subnets, firewall rules "
        "and Cloud NAT to that VPC (named for the cluster) and creates no VPC (shown only when set).",
    )


class Nic(PlanPart):
    """One NIC of every node, in order."""

    network: str
    subnet: str
    nic_type: Literal["GVNIC", "MRDMA"]


class NoPlacement(PlanPart):
    kind: Literal["none"] = "none"
    reason: str


class WorkloadPolicy(PlanPart):
    """A MIG workload policy (A3 / A4 8-GPU types)."""

    kind: Literal["workload-policy"] = "workload-policy"
    type: Literal["HIGH_THROUGHPUT"] = "HIGH_THROUGHPUT"
    max_topology_distance: Literal["CLUSTER", "BLOCK", "SUBBLOCK"] | None


class CompactPlacement(PlanPart):
    """A compact placement policy on the instance template."""

    kind: Literal["compact-placement"] = "compact-placement"
    collocation: Literal["COLLOCATED"] = "COLLOCATED"


Placement = Annotated[NoPlacement | WorkloadPolicy | CompactPlacement, Field(discriminator="kind")]


class Allocation(PlanPart):
    """Gang allocation with one MIG."""

    mode: Literal["resize-request", "target-size"]
    target_size: int
    resize_by: int
    bulk: bool
    wait: bool


class NoReservation(PlanPart):
    type: Literal["NO_RESERVATION"] = "NO_RESERVATION"


class SpecificReservation(PlanPart):
    type: Literal["SPECIFIC_RESERVATION"] = "SPECIFIC_RESERVATION"
    key: str
    values: tuple[str, ...]


class Scheduling(PlanPart):
    """Provisioning model, maintenance behaviour, lifetime mode and reservation affinity."""

    on_host_maintenance: Literal["TERMINATE"] = "TERMINATE"
    automatic_restart: bool
    preemptible: bool
    instance_termination_action: Literal["DELETE"] | None
    lifetime: Literal["termination-time", "run-duration", "none"]
    max_run_duration_s: int | None
    reservation_affinity: NoReservation | SpecificReservation | None
    provisioning_model: Literal["STANDARD", "SPOT", "FLEX_START", "RESERVATION_BOUND"]


class BootDisk(PlanPart):
    type: str
    size_gib: int


class Shielded(PlanPart):
    secure_boot: bool
    vtpm: bool
    integrity_monitoring: bool


class ServiceAccount(PlanPart):
    """The nodes' service account: its id, project roles and instance scopes."""

    account_id: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]


def _false(value: bool) -> bool:
    return not value


class ManagedLustre(PlanPart):
    kind: Literal["managed-lustre"] = "managed-lustre"
    retain: bool
    mount: str
    instance_id: str
    filesystem: str
    capacity_gib: str
    throughput: str
    psa: bool
    firewall: bool
    firewall_ports: tuple[str, ...]
    location: str | None
    gke_support: bool = Field(default=False, exclude_if=_false, description="Shown only when true (GKE).")


class Parallelstore(PlanPart):
    kind: Literal["parallelstore"] = "parallelstore"
    retain: bool
    mount: str
    instance_id: str
    capacity_gib: str
    deployment_type: str
    psa: bool
    firewall: bool
    firewall_ports: tuple[str, ...] = Field(description="Empty: every TCP port.")
    location: str | None


class Filestore(PlanPart):
    kind: Literal["filestore"] = "filestore"
    retain: bool
    mount: str
    tier: str
    capacity_gib: int
    share: str
    connect_mode: Literal["DIRECT_PEERING"] = "DIRECT_PEERING"
    location: str | None
    psa: bool
    firewall: bool
    firewall_ports: tuple[str, ...]


SharedStorage = Annotated[ManagedLustre | Parallelstore | Filestore, Field(discriminator="kind")]


class SlurmController(BaseSlurmController):
    """The Slurm controller VM (``scheduler.kind: slurm``): built by ``slurm.py`` on the host VPC's subnet."""

    disk_type: str = Field(description="Its boot disk type (Google encrypts every disk at rest).")


class GcpPlan(CloudPlan):
    """The GCP decisions (``ClusterPlan.extra``)."""

    project: str | None
    zone: str | None
    networks: tuple[Vpc, ...]
    nics: tuple[Nic, ...]
    ssh_source_ranges: tuple[str, ...]
    placement: Placement
    allocation: Allocation
    scheduling: Scheduling
    boot_disk: BootDisk
    shielded: Shielded
    service_account: ServiceAccount
    psa_prefix_length: int
    os_login: bool
    storage: SharedStorage | None
    slurm: SlurmController | None = Field(
        default=None, exclude_if=lambda v: v is None, description="The Slurm controller (kind slurm only)."
    )

    def iap_tunnel(self) -> IapTunnel | None:
        return IapTunnel(project=self.project, zone=self.zone) if IAP_RANGE in self.ssh_source_ranges else None

    def identity_login(self) -> bool:
        return self.os_login


class PodNetwork(PlanPart):
    """A pod network of the GKE GPU pool: the VM layout's VPC/subnet keys, the device mode, the pod interface."""

    name: str
    vpc: str
    subnet: str
    mode: Literal["RDMA", "NetDevice"]
    ifname: str


class NodeNetwork(PlanPart):
    """A node-only network of the GPU pool (no pod uses it)."""

    vpc: str
    subnet: str


class GkePlan(KubernetesCloudPlan):
    """The GKE decisions (``KubernetesPlan.extra`` of a GCP cluster)."""

    zone: str | None
    release_channel: str
    pods_cidr: str
    services_cidr: str
    accelerator: str = Field(description="The GKE accelerator type of the GPU (check() refuses other types).")
    local_ssd_count: int
    boot_disk_type: str
    networks: tuple[PodNetwork, ...]
    node_only_networks: tuple[NodeNetwork, ...]
    compact: bool
    spot: bool
    flex_start: bool
    max_run_duration_s: int | None
    reservation: str | None
    storage_kind: str | None
    queued_provisioning: bool = Field(
        default=False, description="Flex-start with queued provisioning: a job's nodes all arrive at once."
    )
    images: dict[str, str]
    scopes: tuple[str, ...]

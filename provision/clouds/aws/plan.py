"""AWS plan: what ``adapter.py`` decides and ``components.py`` / ``kubernetes.py`` build (pure data).

:class:`AwsPlan` is ``ClusterPlan.extra`` of an AWS cluster, :class:`EksPlan` the ``KubernetesPlan.extra`` of
its EKS path. Field names are public: ``AwsPlan`` is the ``extra`` object of ``provision plan --json``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from provision.planning.kubernetes import KubernetesCloudPlan
from provision.planning.plan import CloudPlan, PlanPart
from provision.planning.slurm import SlurmController


class NewNetwork(PlanPart):
    """A VPC the cluster creates: private node subnet, public NAT subnet."""

    create: Literal[True] = True
    vpc_id: None = None
    subnet_id: None = None
    vpc_cidr: str
    private_cidr: str = Field(description="The node subnet: the VPC's first quarter.")
    public_cidr: str = Field(description="The NAT subnet: a /24 after it.")
    head_routes: tuple[str, ...] = Field(description="Networks routed to the internet gateway (public head node).")


class ExistingNetwork(PlanPart):
    """The user's VPC and subnet (aws.vpc_id, aws.subnet_id): nothing is created in them but the nodes."""

    create: Literal[False] = False
    vpc_id: str
    subnet_id: str
    head_routes: tuple[str, ...] = ()


class NetworkInterface(PlanPart):
    """One entry of the launch template's interface list (EFA layout)."""

    card: int
    device: int
    type: Literal["interface", "efa-only"]


class PlacementGroup(PlanPart):
    """The cluster placement group: created, the user's (``name``), or none (a reservation places)."""

    create: bool
    name: str | None


class Market(PlanPart):
    """EC2 Fleet / launch template market settings."""

    target_capacity_type: Literal["on-demand", "spot", "capacity-block"]
    market_type: Literal["capacity-block"] | None
    reservation_id: str | None
    reservation_group: bool = Field(description="Target the reservation through a resource group (fleets).")
    spot_max_price: str | None
    all_or_nothing: bool


class Fsx(PlanPart):
    """The FSx for Lustre file system."""

    deployment_type: str
    storage_capacity: int
    per_unit_storage_throughput: int | None
    efa: bool
    metadata_mode: Literal["AUTOMATIC"] | None
    lustre_version: str
    retain: bool


class Instance(PlanPart):
    """Launch template settings of every node."""

    root_volume_gib: int
    root_device_name: str
    imds_hop_limit: int
    permissions_boundary_arn: str | None


class Ssh(PlanPart):
    """How the spec's first key reaches the nodes."""

    key_pair: bool = Field(description="Imported as an EC2 key pair (ed25519 / RSA); else user data only.")
    image_user: str


class Lifetime(PlanPart):
    """How the nodes stop at the expiry."""

    asg_schedule: bool = Field(description="A scheduled scale-to-zero of the ASG (aws.allocation: asg).")
    timer_delay_minutes: int = Field(description="The node shutdown timer fires this long after the expiry.")


class AwsPlan(CloudPlan):
    """The AWS decisions (``ClusterPlan.extra``)."""

    allocation: Literal["fleet", "asg"]
    partition: str
    network: NewNetwork | ExistingNetwork
    efa_interfaces: tuple[NetworkInterface, ...]
    placement_group: PlacementGroup
    market: Market
    image_lookup: str | None = Field(description="The SSM parameter the AMI is resolved from; None: pinned AMI.")
    fsx: Fsx | None
    instance: Instance
    ssh: Ssh
    public_head_node: bool
    lifetime: Lifetime
    slurm: SlurmController | None = Field(
        default=None, exclude_if=lambda v: v is None, description="The Slurm controller (kind slurm only)."
    )


class HelmChart(PlanPart):
    """A Helm chart the EKS cluster gets."""

    repo: str
    chart: str
    version: str


class EksPlan(KubernetesCloudPlan):
    """The EKS decisions (``KubernetesPlan.extra`` of an AWS cluster)."""

    version: str
    control_plane_zone: str
    control_plane_cidr: str
    public_access_cidrs: tuple[str, ...]
    capacity_type: Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]
    lt_instance_type: bool = Field(description="The launch template names the instance type (Capacity Blocks).")
    gpu_ami_type: str
    system_ami_type: str
    root_device_name: str
    gpu_labels: dict[str, str]
    managed_addons: tuple[str, ...]
    helm: dict[str, HelmChart]
    lifetime_schedule: bool

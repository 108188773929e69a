"""Alibaba Cloud plan: what ``adapter.py`` decides and ``components.py`` builds (pure data).

:class:`AlibabaPlan` is ``ClusterPlan.extra`` of an Alibaba cluster. Field names are public: it is the
``extra`` object of ``provision plan --json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from provision.planning.plan import CloudPlan, PlanPart
from provision.planning.slurm import SlurmController as BaseSlurmController

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan


class Cpfs(PlanPart):
    """CPFS general-purpose, reached over NFS through its free protocol service."""

    file_system_type: Literal["cpfs"] = "cpfs"
    protocol_type: Literal["cpfs"] = "cpfs"
    storage_type: str
    capacity: int | None
    encrypt_type: None = None
    kms_key_id: None = None
    access: Literal["protocol-service"] = "protocol-service"
    export_path: str = Field(description="Mounted as <domain>:<export_path>.")
    lookup_role: str = Field(description="The RAM role the nodes look the export's domain up with.")
    lookup_policy: str
    nas_endpoint: str


class Nas(PlanPart):
    """NAS (general-purpose or Extreme) behind a mount target in the cluster's vSwitch."""

    file_system_type: Literal["standard", "extreme"]
    protocol_type: Literal["NFS"] = "NFS"
    storage_type: str
    capacity: int | None = Field(description="Extreme NAS only; general-purpose NAS grows by itself.")
    encrypt_type: Literal[1, 2] = Field(description="1: NAS-managed key; 2: the user's KMS key (Extreme only).")
    kms_key_id: str | None
    access: Literal["mount-target"] = "mount-target"
    export_path: str
    lookup_role: str = Field(description="The RAM role the nodes look the mount target's domain up with.")
    lookup_policy: str
    nas_endpoint: str


SharedStorage = Annotated[Cpfs | Nas, Field(discriminator="access")]


class SlurmController(BaseSlurmController):
    """The Slurm controller VM (``scheduler.kind: slurm``): built by ``slurm.py`` on the nodes' vSwitch."""

    disk_type: str = Field(description="Its encrypted system disk's category.")


class AlibabaPlan(CloudPlan):
    """The Alibaba Cloud decisions (``ClusterPlan.extra``)."""

    vpc_cidr: str
    vswitch_cidr: str
    charge_type: Literal["PrePaid", "PostPaid"]
    period_months: int | None
    spot_strategy: Literal["NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit"]
    spot_price_limit: float | None
    private_pool_id: str | None
    auto_release: bool
    placement_groups: tuple[int, ...] = Field(description="Nodes per LowLatency deployment set, in rank order.")
    eri_cards: tuple[int | None, ...] = Field(description="Per ERI: its network card index (None: ECS places it).")
    jumbo_frames: bool
    mtu: int
    system_disk_gib: int
    data_disk_gib: int | None
    kms_key_id: str | None
    resource_group_id: str | None
    nat_bandwidth_mbps: int
    metadata_tokens: bool
    public_head: bool
    key_pair_public_key: str | None
    head_eip_bandwidth_mbps: int
    storage: SharedStorage | None
    retain_network: bool = Field(description="A retained CPFS keeps the VPC and vSwitch it lives in.")
    nfs_options: str
    slurm: SlurmController | None = Field(
        default=None, exclude_if=lambda v: v is None, description="The Slurm controller (kind slurm only)."
    )

    def nccl_nics(self) -> int | None:
        return len(self.eri_cards)


#: ECS's auto_release_time format (UTC).
AUTO_RELEASE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: Key types ECS ImportKeyPair accepts: rsa, dsa and ecdsa (and their OpenSSH certificates); not ssh-ed25519 nor
#: FIDO sk-* keys (ECS API "ImportKeyPair", help/en/ecs/developer-reference/api-ecs-2014-05-26-importkeypair).
KEY_PAIR_TYPES = ("ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")


def auto_release_time(plan: ClusterPlan[AlibabaPlan]) -> str | None:
    """The ``auto_release_time`` of every node: the plan's expiry in UTC, or ``None`` when not applicable."""
    if not plan.extra.auto_release or plan.expires_at is None:
        return None
    return plan.expires_at.strftime(AUTO_RELEASE_FORMAT)


def key_pair_public_key(keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` an ECS key pair can hold (root login), or ``None`` when none is RSA/DSA/ECDSA.

    Every key also reaches ``access.ssh_user`` through the user data, whatever its type.
    """
    return next((k for k in keys if k.split(" ", 1)[0] in KEY_PAIR_TYPES), None)

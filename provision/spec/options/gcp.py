"""GCP-only spec options (``gcp:`` in a spec). Pure pydantic: no SDK imports.

CIDR values are checked by the adapter (``GcpAdapter.check``), which reports every bad
range at once with its path, beside the catalog's problems.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from provision.spec.options.base import CloudOptions


class GcpOptions(CloudOptions):
    project: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$",
        description="GCP project id; defaults to the provider's gcp:project config. When both are set this wins.",
    )
    host_subnet_cidr: str = Field(default="10.0.0.0/20", description="CIDR of the host (gVNIC nic0) subnet.")
    secondary_host_subnet_cidr: str = Field(
        default="10.0.16.0/20", description="CIDR of the second gVNIC subnet (a3-ultragpu-8g has two host NICs)."
    )
    gpu_subnet_cidr_base: str = Field(
        default="10.128.0.0/9",
        description="Range carved into one subnet per GPU NIC (TCPX/TCPXO VPCs or the RoCE VPC's subnets).",
    )
    gpu_subnet_prefix: int = Field(
        default=20, ge=16, le=26, description="Prefix length of each GPU NIC subnet carved from gpu_subnet_cidr_base."
    )
    allow_iap_ssh: bool = Field(
        default=True,
        description="Allow SSH from Identity-Aware Proxy's TCP forwarding range (35.235.240.0/20) on the host VPC: "
        "the private way in (`provision ssh`, `gcloud compute start-iap-tunnel`); who may tunnel is decided by "
        "IAM (roles/iap.tunnelResourceAccessor). Set false to reach the nodes only over a VPN or peering.",
    )
    os_login: bool = Field(
        default=True,
        description="Log in through OS Login (IAM decides who may log in and who gets sudo: roles/compute.osLogin, "
        "roles/compute.osAdminLogin); access.ssh_public_keys are then not installed on the nodes. false: OS Login "
        "off and access.ssh_public_keys go to the instance metadata for access.ssh_user (the guest agent creates "
        "the user with sudo), so access no longer follows IAM.",
    )
    reservation_bound: bool | None = Field(
        default=None,
        description="Consume the reservation with the RESERVATION_BOUND provisioning model (all-or-nothing bulk "
        "creation). Default: true for a3-ultragpu-8g (its reservations are dense AI Hypercomputer reservations), "
        "false (STANDARD) otherwise.",
    )
    max_topology_distance: Literal["CLUSTER", "BLOCK", "SUBBLOCK"] | None = Field(
        default=None,
        description="Strict placement bound for A3 workload policies; unset means best-effort dense placement "
        "(a strict bound can leave the group unable to create any VM).",
    )
    boot_disk_gib: int = Field(default=200, ge=50, le=65536, description="Boot disk size in GiB.")
    secure_boot: bool = Field(
        default=False,
        description="Shielded VM Secure Boot. Off by default: the fabric stacks load DKMS modules "
        "(dmabuf-import-helper, gIB) that are not signed for Secure Boot.",
    )
    psa_prefix_length: int = Field(
        default=20, ge=16, le=24, description="Size of the private-services-access range for Lustre/Parallelstore."
    )

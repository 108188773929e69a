"""Azure-only spec options (``azure:`` in a spec). Pure pydantic: no SDK imports."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from provision.spec.options.base import CloudOptions

DayOfWeek = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class AzureOptions(CloudOptions):
    max_island_nodes: int = Field(
        default=100,
        ge=1,
        le=300,
        description="Largest InfiniBand island (one single-placement-group VMSS): 100 by default, "
        "300 after a support request.",
    )
    split_islands: bool = Field(
        default=False, description="Split a cluster larger than one island into several IB islands."
    )
    vnet_cidr: str = Field(default="10.0.0.0/16", description="Address space of the cluster's VNet.")
    os_disk_gib: int = Field(
        default=256, ge=64, le=4095, description="Size of each node's Premium SSD OS disk (the image needs ~64 GiB)."
    )
    encryption_at_host: bool = Field(
        default=False,
        description="Encrypt temp disks and disk caches on the host. Off by default: the VMSS create fails unless "
        "the subscription registered the Microsoft.Compute/EncryptionAtHost feature (the Azure preflight checks "
        "it); v5 sizes encrypt their temp disks at rest anyway.",
    )
    delete_at_expiry: bool = Field(
        default=True,
        description="With a lifetime, every node deletes the cluster's resource group at the expiry, through a "
        "custom role scoped to that group (creating the role and its assignment needs Owner or User Access "
        "Administrator on the subscription). false: nothing in the cloud enforces the lifetime; run "
        "`provision reap --azure-subscription ID` on a schedule.",
    )
    filesystem_zone: str | None = Field(
        default="1",
        pattern=r"^[1-3]$",
        description="Availability zone of the Azure Managed Lustre file system when the spec names no zone; "
        "null in regions without availability zones.",
    )
    bastion: bool = Field(
        default=False,
        description="Create an Azure Bastion (Standard SKU: native-client tunnel, IP connect) in the cluster's VNet, "
        "the private way in for `provision ssh` (an AzureBastionSubnet /26 and a Standard public IP on the "
        "Bastion; ~0.29 USD/h). Needs the Azure CLI's bastion extension locally.",
    )
    maintenance_day: DayOfWeek = Field(
        default="Sunday", description="Day of the Managed Lustre file system's weekly 30-minute maintenance window."
    )
    maintenance_time_utc: str = Field(
        default="02:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="Start (HH:MM, UTC) of the Managed Lustre maintenance window.",
    )

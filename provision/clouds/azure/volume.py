"""Azure volume stack (``provision volume create``): Managed Lustre or NetApp Files in a VNet of its own (Pulumi only).

The stack holds a resource group (``vol-<name>-rg``), a VNet (``network_cidr``) with one filesystem subnet and its
NSG, and the filesystem, built by the same builders as a cluster's own (:mod:`provision.clouds.azure.storage`):

* Azure Managed Lustre: the subnet sized for the capacity (``rules.amlfs_subnet_prefix``), behind a NAT gateway
  like a cluster's Lustre subnet (``clouds/azure/network.py``): the file system's hosts reach Azure services
  ("Network prerequisites for Azure Managed Lustre": outbound access to AzureMonitor, AzureCloud and Storage), and
  the subnet has no default outbound access.
* Azure NetApp Files: the subnet delegated to ``Microsoft.NetApp/volumes``; the export admits the private ranges
  (RFC 1918), the only addresses a peered cluster VNet can have here (``spec/volume.py`` and the clusters' VNet
  checks keep both private).

The NSG lets in the file system's own hosts (Managed Lustre needs SSH among them while it deploys,
``configure-network-security-group.md``), clients from ``VirtualNetwork`` (which covers peered VNets:
learn.microsoft.com/azure/virtual-network/service-tags-overview), AzureMonitor for Lustre, and nothing else.

Its outputs are the contract attaching clusters read through a StackReference (:mod:`provision.clouds.volumeref`):
``mount_source``, ``filesystem_id`` and ``network`` (``vnet_id``, ``vnet_name``, ``resource_group``, ``cidr``:
:mod:`provision.clouds.azure.volumelink` peers both ways with them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_azure_native import network, resources

from provision.clouds.azure import rules
from provision.clouds.azure.adapter import has_zones
from provision.clouds.azure.network import DENY_PRIORITY, NETAPP_DELEGATION, build_nat, inbound_rule
from provision.clouds.azure.plan import Amlfs, Maintenance, NetApp
from provision.clouds.azure.storage import amlfs_resource, netapp_resources
from provision.spec.errors import Problem
from provision.spec.options.azure import AzureOptions
from provision.spec.volume import VolumeSpecError

if TYPE_CHECKING:
    from provision.spec.volume import VolumeSpec

#: NetApp export clients: the private ranges (the peered cluster VNets are private, like the volume's).
PRIVATE_CLIENTS = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"
_TIB = 1024**4


def volume_zone(spec: VolumeSpec) -> str | None:
    """The Managed Lustre zone: the spec's, else zone 1 where the region has zones (as a cluster's default,
    ``azure.filesystem_zone``); NetApp volumes are regional here."""
    if spec.kind != "amlfs":
        return spec.zone
    return spec.zone or (AzureOptions().filesystem_zone if has_zones(spec.region) else None)


def subnet_cidr(spec: VolumeSpec) -> str:
    """The filesystem subnet: the size Managed Lustre needs for the capacity, or NetApp's delegated /24.

    Raises:
        VolumeSpecError: ``network_cidr`` is too small for it.
    """
    tib = spec.size_gib / 1024
    prefix = rules.amlfs_subnet_prefix(max(1.0, tib)) if spec.kind == "amlfs" else rules.NETAPP_SUBNET_PREFIX
    layout = rules.address_plan(spec.network_cidr, {"filesystem": prefix})
    if layout is None:
        raise VolumeSpecError(
            problems=[
                Problem(
                    "network_cidr",
                    spec.network_cidr,
                    f"cannot hold the /{prefix} subnet a {spec.kind} of {tib:g} TiB needs (amlfs-prerequisites "
                    "subnet size table; NetApp: a delegated /24)",
                    f"use a /{min(prefix, 24)} or larger range, e.g. 10.250.0.0/16",
                )
            ]
        )
    return layout.subnets["filesystem"]


def filesystem_rules(spec: VolumeSpec, cidr: str) -> list[network.SecurityRuleArgs]:
    """Inbound to the volume's filesystem subnet: its own hosts, clients of the VNet and peered VNets, AzureMonitor
    (Managed Lustre health checks), nothing else."""
    out = [
        inbound_rule(
            "allow-filesystem-internal", "Between the file system's own hosts (SSH included)", 110, "Allow", cidr
        ),
        inbound_rule(
            "allow-peered-clients", "Clients: this VNet and the peered clusters", 111, "Allow", "VirtualNetwork"
        ),
    ]
    if spec.kind == "amlfs":
        out.append(inbound_rule("allow-azure-monitor", "AzureMonitor health checks", 112, "Allow", "AzureMonitor"))
    out.append(inbound_rule("deny-other-inbound", "Nothing else", DENY_PRIORITY, "Deny", "*"))
    return out


def build_volume(spec: VolumeSpec, tier: str, tags: dict[str, str]) -> dict[str, Any]:
    """Create the volume's resources in the current Pulumi context; returns the stack outputs."""
    n = f"vol-{spec.name}"
    location, zone = spec.region, volume_zone(spec)
    zones = [zone] if zone else None
    cidr = subnet_cidr(spec)
    rg = resources.ResourceGroup(f"{n}-rg", resource_group_name=f"{n}-rg", location=location, tags=tags)
    nsg = network.NetworkSecurityGroup(
        f"{n}-fs-nsg",
        network_security_group_name=f"{n}-fs-nsg",
        resource_group_name=rg.name,
        location=location,
        security_rules=filesystem_rules(spec, cidr),
        tags=tags,
    )
    vnet = network.VirtualNetwork(
        f"{n}-vnet",
        virtual_network_name=f"{n}-vnet",
        resource_group_name=rg.name,
        location=location,
        address_space=network.AddressSpaceArgs(address_prefixes=[spec.network_cidr]),
        tags=tags,
    )
    subnet_args: dict[str, Any] = {}
    if spec.kind == "netapp":
        subnet_args["delegations"] = [network.DelegationArgs(name="netapp", service_name=NETAPP_DELEGATION)]
    else:
        _, nat = build_nat(n, rg.name, location, zones, tags)
        subnet_args["nat_gateway"] = network.SubResourceArgs(id=nat.id)
    subnet = network.Subnet(
        f"{n}-filesystem",
        subnet_name="filesystem",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        address_prefix=cidr,
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        default_outbound_access=False,
        **subnet_args,
    )
    opts = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"))
    if spec.kind == "amlfs":
        tib = spec.size_gib / 1024
        defaults = AzureOptions()
        fs: Any
        fs, source = amlfs_resource(
            Amlfs(
                name=f"{n}-lustre",
                sku=tier,
                capacity_tib=int(tib) if tib == int(tib) else tib,
                zone=zone,
                maintenance=Maintenance(
                    day_of_week=defaults.maintenance_day, time_of_day_utc=defaults.maintenance_time_utc
                ),
                subnet_prefix_rule=f"{cidr} for {tib:g} TiB (amlfs-prerequisites table)",
            ),
            location,
            rg.name,
            subnet.id,
            tags,
            opts,
        )
    else:
        size = math.ceil(spec.size_gib / 1024) * _TIB
        fs, source = netapp_resources(
            NetApp(
                account=f"{n}-anf",
                pool=f"{n}-pool",
                volume=f"{n}-volume",
                creation_token=n,
                service_level=tier,
                pool_bytes=size,
                volume_bytes=size,
                large_volume=size > 100 * _TIB,
                allowed_clients=PRIVATE_CLIENTS,
            ),
            location,
            rg.name,
            subnet.id,
            tags,
            opts,
        )
    return {
        "mount_source": source,
        "filesystem_id": fs.id,
        "network": pulumi.Output.all(vnet.id, rg.name).apply(
            lambda a: {"vnet_id": a[0], "vnet_name": f"{n}-vnet", "resource_group": a[1], "cidr": spec.network_cidr}
        ),
    }

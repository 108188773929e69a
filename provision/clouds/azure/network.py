"""The cluster's network: VNet, node and filesystem subnets, NSG, NAT gateway (Pulumi only, no decisions).

Nodes get no public IP; egress goes through one NAT gateway; the NSG admits SSH only from
``access.allowed_cidrs`` and the node subnet, and otherwise keeps Azure's default rules (VNet-internal
traffic allowed, Internet inbound denied). Subnets are private (``defaultOutboundAccess: false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_azure_native import network

from provision.planning.plan import ClusterPlan

#: The service an Azure NetApp Files subnet is delegated to.
NETAPP_DELEGATION = "Microsoft.NetApp/volumes"


@dataclass
class Network:
    vnet: network.VirtualNetwork
    nsg: network.NetworkSecurityGroup
    nat: network.NatGateway
    nodes: network.Subnet
    filesystem: network.Subnet | None


def _ssh_rule(
    name: str, description: str, priority: int, access: str, source: list[str] | str
) -> network.SecurityRuleArgs:
    """An inbound TCP 22 rule. ``source`` is a list of CIDRs, or one tag such as ``*``: ARM refuses ``*`` and
    service tags inside ``sourceAddressPrefixes`` (SecurityRuleParameterContainsUnsupportedValue)."""
    prefixes = {"source_address_prefixes": source} if isinstance(source, list) else {"source_address_prefix": source}
    return network.SecurityRuleArgs(
        name=name,
        description=description,
        priority=priority,
        direction="Inbound",
        access=access,
        protocol="Tcp",
        source_port_range="*",
        destination_address_prefix="VirtualNetwork",
        destination_port_range="22",
        **prefixes,
    )


def ssh_rules(plan: ClusterPlan) -> list[network.SecurityRuleArgs]:
    """Inbound TCP 22: allow ``access.allowed_cidrs`` and the node subnet (MPI launches), deny everything else.

    The final deny is what makes ``allowed_cidrs`` binding: Azure's default rule 65000 AllowVnetInBound admits
    every port from the VirtualNetwork service tag, and that tag covers peered VNets and networks connected
    through a VPN gateway (learn.microsoft.com/azure/virtual-network/service-tags-overview), which are exactly
    how these private nodes are reached.
    """
    rules = []
    cidrs = list(plan.access.allowed_cidrs)
    if cidrs:
        rules.append(_ssh_rule("allow-ssh-from-allowed-cidrs", "SSH from access.allowed_cidrs", 100, "Allow", cidrs))
    nodes = plan.extra["subnets"]["nodes"]
    rules.append(_ssh_rule("allow-ssh-between-nodes", "SSH between the cluster's nodes", 110, "Allow", [nodes]))
    if plan.extra.get("bastion"):  # Bastion reaches the VMs from its own subnet (azure.bastion)
        bastion = [plan.extra["bastion"]["subnet"]]
        rules.append(_ssh_rule("allow-ssh-from-bastion", "SSH from Azure Bastion", 120, "Allow", bastion))
    rules.append(_ssh_rule("deny-other-ssh", "No SSH from anywhere else, peered networks included", 4096, "Deny", "*"))
    return rules


def build_network(
    plan: ClusterPlan, rg_name: pulumi.Input[str], tags: dict[str, str], opts: pulumi.ResourceOptions
) -> Network:
    """Create the network in resource group ``rg_name`` with ``tags`` on every taggable resource."""
    extra = plan.extra
    name = plan.name
    location = plan.region
    zones = [plan.zone] if plan.zone else None
    nsg = network.NetworkSecurityGroup(
        f"{name}-nsg",
        network_security_group_name=f"{name}-nsg",
        resource_group_name=rg_name,
        location=location,
        security_rules=ssh_rules(plan),
        tags=tags,
        opts=opts,
    )
    nat_ip = network.PublicIPAddress(
        f"{name}-nat-ip",
        public_ip_address_name=f"{name}-nat-ip",
        resource_group_name=rg_name,
        location=location,
        sku=network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
        public_ip_allocation_method="Static",
        public_ip_address_version="IPv4",
        zones=zones,
        tags=tags,
        opts=opts,
    )
    nat = network.NatGateway(
        f"{name}-nat",
        nat_gateway_name=f"{name}-nat",
        resource_group_name=rg_name,
        location=location,
        sku=network.NatGatewaySkuArgs(name="Standard"),
        public_ip_addresses=[network.SubResourceArgs(id=nat_ip.id)],
        idle_timeout_in_minutes=4,
        zones=zones,
        tags=tags,
        opts=opts,
    )
    vnet = network.VirtualNetwork(
        extra["vnet"],
        virtual_network_name=extra["vnet"],
        resource_group_name=rg_name,
        location=location,
        address_space=network.AddressSpaceArgs(address_prefixes=[extra["vnet_cidr"]]),
        tags=tags,
        opts=opts,
    )
    nodes = network.Subnet(
        f"{name}-nodes",
        subnet_name="nodes",
        resource_group_name=rg_name,
        virtual_network_name=vnet.name,
        address_prefix=extra["subnets"]["nodes"],
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=network.SubResourceArgs(id=nat.id),
        default_outbound_access=False,
        opts=opts,
    )
    fs_subnet = None
    fs = extra.get("filesystem")
    if fs is not None:
        kwargs: dict[str, Any] = {}
        if fs["kind"] == "netapp":
            kwargs["delegations"] = [network.DelegationArgs(name="netapp", service_name=NETAPP_DELEGATION)]
        else:
            kwargs["nat_gateway"] = network.SubResourceArgs(id=nat.id)
        fs_subnet = network.Subnet(
            f"{name}-filesystem",
            subnet_name="filesystem",
            resource_group_name=rg_name,
            virtual_network_name=vnet.name,
            address_prefix=extra["subnets"]["filesystem"],
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            default_outbound_access=False,
            # Azure refuses concurrent writes to one VNet (AnotherOperationInProgress): subnets go in turn.
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[nodes])),
            **kwargs,
        )
    return Network(vnet=vnet, nsg=nsg, nat=nat, nodes=nodes, filesystem=fs_subnet)


def build_bastion(
    plan: ClusterPlan, rg_name: pulumi.Input[str], net: Network, tags: dict[str, str], opts: pulumi.ResourceOptions
) -> network.BastionHost:
    """Azure Bastion, Standard SKU with native-client tunneling and IP connect (``azure.bastion``).

    ``az network bastion tunnel`` needs the Standard SKU and ``enableTunneling``; reaching VMSS nodes by
    private IP needs ``enableIpConnect`` (Microsoft Learn, "Connect to a VM using Bastion and the Linux
    native client"; "Connect to a VM via specified private IP address"). The subnet must be named
    AzureBastionSubnet, /26 or larger, and the Bastion's public IP Standard and static.
    """
    name = plan.name
    bastion = plan.extra["bastion"]
    subnet = network.Subnet(
        f"{name}-bastion",
        subnet_name="AzureBastionSubnet",
        resource_group_name=rg_name,
        virtual_network_name=net.vnet.name,
        address_prefix=bastion["subnet"],
        # One VNet write at a time (AnotherOperationInProgress): after the other subnets.
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[s for s in (net.nodes, net.filesystem) if s is not None])
        ),
    )
    ip = network.PublicIPAddress(
        f"{name}-bastion-ip",
        public_ip_address_name=f"{name}-bastion-ip",
        resource_group_name=rg_name,
        location=plan.region,
        sku=network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
        public_ip_allocation_method="Static",
        public_ip_address_version="IPv4",
        tags=tags,
        opts=opts,
    )
    return network.BastionHost(
        bastion["name"],
        bastion_host_name=bastion["name"],
        resource_group_name=rg_name,
        location=plan.region,
        sku=network.SkuArgs(name="Standard"),
        enable_tunneling=True,
        enable_ip_connect=True,
        ip_configurations=[
            network.BastionHostIPConfigurationArgs(
                name="bastion",
                subnet=network.SubResourceArgs(id=subnet.id),
                public_ip_address=network.SubResourceArgs(id=ip.id),
            )
        ],
        tags=tags,
        opts=opts,
    )

"""The cluster's network: VNet, node and filesystem subnets, NSG, NAT gateway (Pulumi only, no decisions).

Nodes get no public IP; egress goes through one NAT gateway. The node NSG admits SSH from
``access.allowed_cidrs`` and any port from the cluster's own subnets, and denies everything else from the VNet,
peered networks and VPNs; the file-system subnet has its own NSG (Microsoft's AMLFS rules). Subnets are
private (``defaultOutboundAccess: false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_azure_native import network

from provision.clouds.azure.plan import Amlfs, AzurePlan
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
    #: The NAT gateway's public IP (AKS authorizes it on its API server: the nodes reach it from there).
    nat_ip: network.PublicIPAddress | None = None


def inbound_rule(
    name: str,
    description: str,
    priority: int,
    access: str,
    source: list[Any] | str,
    *,
    protocol: str = "*",
    ports: list[str] | None = None,
    destination: str = "*",
) -> network.SecurityRuleArgs:
    """An inbound rule. ``source`` is a list of CIDRs, or one tag such as ``*``: ARM refuses ``*`` and service
    tags inside ``sourceAddressPrefixes`` (SecurityRuleParameterContainsUnsupportedValue)."""
    prefixes = {"source_address_prefixes": source} if isinstance(source, list) else {"source_address_prefix": source}
    port_args = {"destination_port_ranges": ports} if ports else {"destination_port_range": "*"}
    return network.SecurityRuleArgs(
        name=name,
        description=description,
        priority=priority,
        direction="Inbound",
        access=access,
        protocol=protocol,
        source_port_range="*",
        destination_address_prefix=destination,
        **prefixes,
        **port_args,
    )


#: The last rule of both NSGs: Azure's default rule 65000 AllowVnetInBound admits every port from the
#: VirtualNetwork service tag, and that tag covers peered VNets and networks connected through a VPN gateway
#: (learn.microsoft.com/azure/virtual-network/service-tags-overview). Above this rule only the cluster's own
#: subnets (and SSH from access.allowed_cidrs) are let in; Internet inbound stays denied by rule 65500.
DENY_PRIORITY = 4096


def node_rules(
    plan: ClusterPlan[AzurePlan], volume_cidr: pulumi.Input[str] | None = None
) -> list[network.SecurityRuleArgs]:
    """Inbound to the node subnet: SSH from ``access.allowed_cidrs``, anything from the cluster's own subnets
    (NCCL, MPI and the launchers use arbitrary ports; Lustre servers call clients back on 988 and 1019-1023),
    and from an attached volume's network (``volume_cidr``, a peered VNet: its file servers call back the same
    way), nothing else from the VNet, peered networks or VPNs."""
    subnets = plan.extra.subnets
    rules = []
    cidrs = list(plan.access.allowed_cidrs)
    if cidrs:
        rules.append(
            inbound_rule(
                "allow-ssh-from-allowed-cidrs",
                "SSH from access.allowed_cidrs",
                100,
                "Allow",
                cidrs,
                protocol="Tcp",
                ports=["22"],
                destination="VirtualNetwork",
            )
        )
    rules.append(
        inbound_rule("allow-nodes-inbound", "Any port between the cluster's nodes", 110, "Allow", [subnets["nodes"]])
    )
    if plan.kubernetes is not None:
        # AKS Azure CNI overlay: pod traffic is not encapsulated, so the subnet NSG sees pod addresses; it must
        # admit pod CIDR to pod CIDR and node CIDR to pod CIDR (learn.microsoft.com/azure/aks/azure-cni-overlay,
        # "Network security groups").
        pods = getattr(plan.kubernetes.extra, "pod_cidr", None)
        if pods:
            rules.append(
                inbound_rule(
                    "allow-pods-inbound", "Any port from the cluster's pods (AKS overlay)", 115, "Allow", [pods]
                )
            )
    if "filesystem" in subnets:
        rules.append(
            inbound_rule(
                "allow-filesystem-inbound", "The shared file system's servers", 120, "Allow", [subnets["filesystem"]]
            )
        )
    if volume_cidr is not None:
        rules.append(
            inbound_rule(
                "allow-volume-inbound", "The attached volume's file servers (peered VNet)", 125, "Allow", [volume_cidr]
            ),
        )
    if plan.extra.bastion:  # Bastion reaches the VMs from its own subnet (azure.bastion)
        bastion = [plan.extra.bastion.subnet]
        rules.append(
            inbound_rule(
                "allow-ssh-from-bastion",
                "SSH from Azure Bastion",
                130,
                "Allow",
                bastion,
                protocol="Tcp",
                ports=["22"],
                destination="VirtualNetwork",
            )
        )
    rules.append(
        inbound_rule(
            "deny-other-inbound",
            "Nothing else from the VNet, peered networks or VPNs",
            DENY_PRIORITY,
            "Deny",
            "VirtualNetwork",
        )
    )
    return rules


def filesystem_rules(plan: ClusterPlan[AzurePlan]) -> list[network.SecurityRuleArgs]:
    """Inbound to the file-system subnet, after Microsoft's table for Azure Managed Lustre
    ("Configure a network security group for Azure Managed Lustre file systems", inbound rules 110-120):
    any traffic between the file system's own hosts (they need SSH among themselves while the file system
    deploys), the clients (here: any port from the node subnet, a superset of Lustre's 988 and 1019-1023 and of
    NFS), AzureMonitor for AMLFS health checks, and a final deny."""
    subnets = plan.extra.subnets
    fs = subnets["filesystem"]
    rules = [
        inbound_rule(
            "allow-filesystem-internal", "Between the file system's own hosts (SSH included)", 110, "Allow", [fs]
        ),
        inbound_rule("allow-clients", "The cluster's nodes", 111, "Allow", [subnets["nodes"]]),
    ]
    if isinstance(plan.extra.filesystem, Amlfs):
        rules.append(
            inbound_rule(
                "allow-azure-monitor",
                "AzureMonitor health checks of the Managed Lustre hosts",
                112,
                "Allow",
                "AzureMonitor",
                protocol="Tcp",
                destination="VirtualNetwork",
            )
        )
    rules.append(inbound_rule("deny-other-inbound", "Nothing else", DENY_PRIORITY, "Deny", "*"))
    return rules


def build_nat(
    name: str,
    rg_name: pulumi.Input[str],
    location: str,
    zones: list[str] | None,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions | None = None,
) -> tuple[network.PublicIPAddress, network.NatGateway]:
    """``{name}-nat``: a Standard NAT gateway with its static public IP, the way out of subnets whose default outbound
    access is off (a cluster's nodes and filesystem subnets, a volume's Managed Lustre subnet)."""
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
    return nat_ip, nat


def build_network(
    plan: ClusterPlan[AzurePlan],
    rg_name: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    volume_cidr: pulumi.Input[str] | None = None,
) -> Network:
    """Create the network in resource group ``rg_name`` with ``tags`` on every taggable resource (``volume_cidr``:
    an attached volume's network, admitted by the node NSG)."""
    extra = plan.extra
    name = plan.name
    location = plan.region
    zones = [plan.zone] if plan.zone else None
    nsg = network.NetworkSecurityGroup(
        f"{name}-nsg",
        network_security_group_name=f"{name}-nsg",
        resource_group_name=rg_name,
        location=location,
        security_rules=node_rules(plan, volume_cidr),
        tags=tags,
        opts=opts,
    )
    nat_ip, nat = build_nat(name, rg_name, location, zones, tags, opts)
    vnet = network.VirtualNetwork(
        extra.vnet,
        virtual_network_name=extra.vnet,
        resource_group_name=rg_name,
        location=location,
        address_space=network.AddressSpaceArgs(address_prefixes=[extra.vnet_cidr]),
        tags=tags,
        opts=opts,
    )
    nodes = network.Subnet(
        f"{name}-nodes",
        subnet_name="nodes",
        resource_group_name=rg_name,
        virtual_network_name=vnet.name,
        address_prefix=extra.subnets["nodes"],
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=network.SubResourceArgs(id=nat.id),
        default_outbound_access=False,
        opts=opts,
    )
    fs_subnet = None
    fs = extra.filesystem
    if fs is not None:
        # Its own NSG: the node NSG's rules would cut Managed Lustre's host-to-host SSH (review A1).
        fs_nsg = network.NetworkSecurityGroup(
            f"{name}-fs-nsg",
            network_security_group_name=f"{name}-fs-nsg",
            resource_group_name=rg_name,
            location=location,
            security_rules=filesystem_rules(plan),
            tags=tags,
            opts=opts,
        )
        kwargs: dict[str, Any] = {}
        if fs.kind == "netapp":
            kwargs["delegations"] = [network.DelegationArgs(name="netapp", service_name=NETAPP_DELEGATION)]
        else:
            kwargs["nat_gateway"] = network.SubResourceArgs(id=nat.id)
        fs_subnet = network.Subnet(
            f"{name}-filesystem",
            subnet_name="filesystem",
            resource_group_name=rg_name,
            virtual_network_name=vnet.name,
            address_prefix=extra.subnets["filesystem"],
            network_security_group=network.NetworkSecurityGroupArgs(id=fs_nsg.id),
            default_outbound_access=False,
            # Azure refuses concurrent writes to one VNet (AnotherOperationInProgress): subnets go in turn.
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[nodes])),
            **kwargs,
        )
    return Network(vnet=vnet, nsg=nsg, nat=nat, nodes=nodes, filesystem=fs_subnet, nat_ip=nat_ip)


def build_bastion(
    plan: ClusterPlan[AzurePlan],
    rg_name: pulumi.Input[str],
    net: Network,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> network.BastionHost:
    """Azure Bastion, Standard SKU with native-client tunneling and IP connect (``azure.bastion``).

    ``az network bastion tunnel`` needs the Standard SKU and ``enableTunneling``; reaching VMSS nodes by
    private IP needs ``enableIpConnect`` (Microsoft Learn, "Connect to a VM using Bastion and the Linux
    native client"; "Connect to a VM via specified private IP address"). The subnet must be named
    AzureBastionSubnet, /26 or larger, and the Bastion's public IP Standard and static.
    """
    name = plan.name
    bastion = plan.extra.bastion
    assert bastion is not None  # noqa: S101 - built only when the plan has a bastion
    subnet = network.Subnet(
        f"{name}-bastion",
        subnet_name="AzureBastionSubnet",
        resource_group_name=rg_name,
        virtual_network_name=net.vnet.name,
        address_prefix=bastion.subnet,
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
        bastion.name,
        bastion_host_name=bastion.name,
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

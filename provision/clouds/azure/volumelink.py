"""Azure: how a cluster's nodes reach an attached volume's filesystem (Pulumi only), created and deleted with it.

The volume's filesystem (Azure Managed Lustre or a NetApp Files volume) sits in a subnet of the volume's own VNet
(its stack's ``network`` output: ``vnet_id``, ``vnet_name``, ``resource_group``). The cluster peers its VNet with
it in both directions, as Azure requires ("Virtual network peering": a peering is created on each of the two
virtual networks, and traffic flows once both are Connected; learn.microsoft.com/azure/virtual-network/
virtual-network-peering-overview). Both peerings are the cluster's resources: ``down`` removes them and the
volume stays. The default NSG rules admit ``VirtualNetwork`` traffic, which covers a peered VNet's address space
(learn.microsoft.com/azure/virtual-network/network-security-groups-overview, "Default security rules";
"service tags": VirtualNetwork includes "all connected address spaces" such as peered VNets). Clients in a peered
VNet may mount Azure Managed Lustre ("Network prerequisites for Azure Managed Lustre": "clients ... in a peered
VNet") and NetApp Files volumes ("Guidelines for Azure NetApp Files network planning": peered VNets supported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
from pulumi_azure_native import network

if TYPE_CHECKING:
    from provision.clouds.azure.network import Network
    from provision.clouds.azure.plan import AzurePlan
    from provision.clouds.volumeref import VolumeRef
    from provision.planning.plan import ClusterPlan


def build_volume_peering(
    plan: ClusterPlan[AzurePlan],
    rg_name: pulumi.Input[str],
    net: Network,
    volume: VolumeRef,
    opts: pulumi.ResourceOptions,
) -> list[network.VirtualNetworkPeering]:
    """The two peerings between the cluster's VNet (in ``rg_name``) and the volume's."""
    n = plan.name
    out = network.VirtualNetworkPeering(
        f"{n}-to-volume",
        resource_group_name=rg_name,
        virtual_network_name=net.vnet.name,
        virtual_network_peering_name=f"{n}-to-volume",
        remote_virtual_network=network.SubResourceArgs(id=volume.network_field("vnet_id")),
        allow_virtual_network_access=True,
        allow_forwarded_traffic=False,
        allow_gateway_transit=False,
        use_remote_gateways=False,
        opts=opts,
    )
    back = network.VirtualNetworkPeering(
        f"{n}-from-volume",
        resource_group_name=volume.network_field("resource_group"),
        virtual_network_name=volume.network_field("vnet_name"),
        virtual_network_peering_name=f"{n}-cluster",
        remote_virtual_network=network.SubResourceArgs(id=net.vnet.id),
        allow_virtual_network_access=True,
        allow_forwarded_traffic=False,
        allow_gateway_transit=False,
        use_remote_gateways=False,
        opts=opts,
    )
    return [out, back]

"""AWS: how a cluster's nodes reach an attached volume's FSx (Pulumi only), created and deleted with the cluster.

The volume's FSx lives in the volume's own VPC (its stack's ``network`` output: ``vpc_id``, ``cidr``,
``route_table_id``, ``security_group_id``). The cluster peers its VPC with it (same account and region, so the
peering is accepted by the requester: pulumi-aws ``ec2.VpcPeeringConnection.auto_accept``; Amazon VPC Peering
Guide, "Create a VPC peering connection"), routes each VPC's traffic for the other through the peering (VPC
Peering Guide, "Update your route tables for a VPC peering connection"), and opens the Lustre ports on the
volume's FSx security group to the cluster's node subnet, and on the node group to the volume's network (the
servers call clients back on the same ports: FSx for Lustre User Guide, "File system access control with Amazon
VPC"). Every one of these belongs to the cluster's stack: ``down`` removes them and the volume stays.

FSx over EFA does not cross a peering (EFA traffic is not routable: EC2 User Guide, "Elastic Fabric Adapter";
"EFA limitations"), so nodes mount an attached volume over TCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from provision.clouds.aws.network import LUSTRE_PORTS, Network, SecurityGroups, tags
from provision.clouds.aws.plan import NewNetwork

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.clouds.volumeref import VolumeRef
    from provision.planning.plan import ClusterPlan


def build_volume_access(
    plan: ClusterPlan[AwsPlan], net: Network, sgs: SecurityGroups, volume: VolumeRef, parent: pulumi.Resource
) -> list[pulumi.Resource]:
    """The peering, the two routes and the Lustre rules on both groups; returns what the nodes wait for."""
    spec = plan.extra.network
    if not isinstance(spec, NewNetwork) or net.private_route_table_id is None:
        raise pulumi.RunError(
            f"storage.shared.volume {volume.name}: the cluster runs in an existing VPC (aws.vpc_id), whose route "
            "tables provision does not change; to fix: drop aws.vpc_id/aws.subnet_id so the cluster creates its "
            "VPC and peers it with the volume's"
        )
    n = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    peer_cidr = volume.network_field("cidr")
    peering = aws.ec2.VpcPeeringConnection(
        f"{n}-volume-peering",
        vpc_id=net.vpc_id,
        peer_vpc_id=volume.network_field("vpc_id"),
        auto_accept=True,
        tags=tags(plan, "volume-peering"),
        opts=opts,
    )
    there = aws.ec2.Route(
        f"{n}-volume-route",
        route_table_id=net.private_route_table_id,
        destination_cidr_block=peer_cidr,
        vpc_peering_connection_id=peering.id,
        opts=opts,
    )
    back = aws.ec2.Route(
        f"{n}-volume-return",
        route_table_id=volume.network_field("route_table_id"),
        destination_cidr_block=spec.private_cidr,
        vpc_peering_connection_id=peering.id,
        opts=opts,
    )
    made: list[pulumi.Resource] = [peering, there, back]
    for lo, hi in LUSTRE_PORTS:
        port = f"{lo}" if lo == hi else f"{lo}-{hi}"
        made.append(
            aws.vpc.SecurityGroupIngressRule(
                f"{n}-volume-in-{lo}",
                security_group_id=volume.network_field("security_group_id"),
                ip_protocol="tcp",
                from_port=lo,
                to_port=hi,
                cidr_ipv4=spec.private_cidr,
                description=f"Lustre {port} from cluster {n}",
                tags=tags(plan, f"volume-in-{lo}"),
                opts=opts,
            )
        )
        made.append(
            aws.vpc.SecurityGroupIngressRule(
                f"{n}-nodes-in-volume-{lo}",
                security_group_id=sgs.cluster.id,
                ip_protocol="tcp",
                from_port=lo,
                to_port=hi,
                cidr_ipv4=peer_cidr,
                description=f"Lustre {port} (volume file servers)",
                tags=tags(plan, f"nodes-in-volume-{lo}"),
                opts=opts,
            )
        )
    return made

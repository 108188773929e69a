"""Alibaba network: VPC, the nodes' vSwitch, the cluster security group and NAT egress (Pulumi only).

Every decision (CIDRs, bandwidth, retention) is read from the plan. Argument names are those of
pulumi-alicloud 4.0.0 (``vpc.Network``, ``vpc.Switch``, ``ecs.SecurityGroup``, ``ecs.SecurityGroupRule``,
``vpc.NatGateway``, ``ecs.EipAddress``, ``ecs.EipAssociation``, ``vpc.SnatEntry``).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import pulumi
from pulumi_alicloud import ecs, vpc

from provision.clouds.alibaba.plan import AlibabaPlan
from provision.planning.plan import ClusterPlan


@dataclass
class Network:
    """The network resources the nodes and the filesystem attach to."""

    vpc_net: vpc.Network
    vswitch: vpc.Switch
    security_group: ecs.SecurityGroup
    snat: vpc.SnatEntry


def _rule_suffix(cidr: str) -> str:
    """A stable logical-name suffix for one allowed CIDR (names never depend on list positions)."""
    return re.sub(r"[^0-9a-f]+", "-", cidr.lower()).strip("-")


def build_network(plan: ClusterPlan[AlibabaPlan], parent: pulumi.Resource) -> Network:
    """Create the VPC, vSwitch, security group (+ SSH rules) and the NAT gateway with its EIP and SNAT entry."""
    name, tags, extra = plan.name, dict(plan.tags), plan.extra
    rg = extra.resource_group_id
    opts = pulumi.ResourceOptions(parent=parent)
    # A retained CPFS lives in the vSwitch: the plan then retains the VPC and vSwitch with it.
    keep = pulumi.ResourceOptions(parent=parent, retain_on_delete=bool(extra.retain_network))

    network = vpc.Network(
        f"{name}-vpc",
        vpc_name=f"{name}-vpc",
        cidr_block=extra.vpc_cidr,
        description=f"provision cluster {name}",
        resource_group_id=rg,
        tags=tags,
        opts=keep,
    )
    vswitch = vpc.Switch(
        f"{name}-vsw",
        vswitch_name=f"{name}-nodes",
        vpc_id=network.id,
        cidr_block=extra.vswitch_cidr,
        zone_id=plan.zone,
        description=f"provision cluster {name}: nodes, NAT gateway and mount targets",
        tags=tags,
        opts=keep,
    )
    sg = ecs.SecurityGroup(
        f"{name}-sg",
        security_group_name=f"{name}-nodes",
        vpc_id=network.id,
        # Members talk freely (NCCL, eRDMA, SSH between nodes); nothing else is let in unless a rule says so.
        inner_access_policy="Accept",
        security_group_type="normal",
        description=f"provision cluster {name}: nodes",
        resource_group_id=rg,
        tags=tags,
        opts=opts,
    )
    for cidr in plan.access.allowed_cidrs:
        v6 = isinstance(ipaddress.ip_network(cidr), ipaddress.IPv6Network)
        ecs.SecurityGroupRule(
            f"{name}-ssh-{_rule_suffix(cidr)}",
            security_group_id=sg.id,
            type="ingress",
            ip_protocol="tcp",
            port_range="22/22",
            nic_type="intranet",
            policy="accept",
            priority=1,
            cidr_ip=None if v6 else cidr,
            ipv6_cidr_ip=cidr if v6 else None,
            description=f"SSH from {cidr} (access.allowed_cidrs)",
            opts=opts,
        )

    nat = vpc.NatGateway(
        f"{name}-nat",
        nat_gateway_name=f"{name}-nat",
        vpc_id=network.id,
        vswitch_id=vswitch.id,
        nat_type="Enhanced",
        network_type="internet",
        payment_type="PayAsYouGo",
        internet_charge_type="PayByLcu",
        description=f"provision cluster {name}: egress for the private nodes",
        tags=tags,
        opts=opts,
    )
    eip = ecs.EipAddress(
        f"{name}-eip",
        address_name=f"{name}-egress",
        bandwidth=str(extra.nat_bandwidth_mbps),
        internet_charge_type="PayByTraffic",
        payment_type="PayAsYouGo",
        isp="BGP",
        description=f"provision cluster {name}: NAT egress",
        resource_group_id=rg,
        tags=tags,
        opts=opts,
    )
    assoc = ecs.EipAssociation(
        f"{name}-eip-nat", allocation_id=eip.id, instance_id=nat.id, instance_type="Nat", opts=opts
    )
    snat = vpc.SnatEntry(
        f"{name}-snat",
        snat_table_id=nat.snat_table_ids,
        source_vswitch_id=vswitch.id,
        snat_ip=eip.ip_address,
        snat_entry_name=f"{name}-nodes",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[assoc]),
    )
    return Network(vpc_net=network, vswitch=vswitch, security_group=sg, snat=snat)

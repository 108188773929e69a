"""AWS network resources: VPC, subnets, NAT egress, S3 endpoint and the security groups.

Pulumi only; every value comes from ``plan.extra.network`` and the plan. All security-group
rules are standalone ``vpc.SecurityGroup*Rule`` resources (no inline rules, so the two groups can
reference each other without a cycle and AWS's default allow-all egress is not kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from provision.clouds.aws.plan import AwsPlan, ExistingNetwork

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

ALL = "-1"
WORLD = "0.0.0.0/0"
#: Lustre LNET (988) and the ports its servers call clients back on (1018-1023).
LUSTRE_PORTS = ((988, 988), (1018, 1023))


def tags(plan: ClusterPlan[AwsPlan], role: str) -> dict[str, str]:
    """``plan.tags`` plus a console ``Name`` for one resource role."""
    return {**plan.tags, "Name": f"{plan.name}-{role}"}


@dataclass
class Network:
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    private_route_table_id: pulumi.Output[str] | None
    igw_id: pulumi.Output[str] | None
    #: What node egress needs before the first node boots (the private default route and its association).
    egress: list[pulumi.Resource] = field(default_factory=list)


def build_network(plan: ClusterPlan[AwsPlan], parent: pulumi.Resource) -> Network:
    """The VPC with a private node subnet and NAT egress, or the user's existing VPC and subnet."""
    spec = plan.extra.network
    if isinstance(spec, ExistingNetwork):
        return Network(spec.vpc_id, spec.subnet_id, None, None)
    n = plan.name
    retain = bool(plan.extra.fsx and plan.extra.fsx.retain)

    def opts(**kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, **kw)

    # A retained file system keeps network interfaces in the VPC and node subnet: keep those too.
    vpc = aws.ec2.Vpc(
        f"{n}-vpc",
        cidr_block=spec.vpc_cidr,
        enable_dns_support=True,
        enable_dns_hostnames=True,
        tags=tags(plan, "vpc"),
        opts=opts(retain_on_delete=retain),
    )
    private = aws.ec2.Subnet(
        f"{n}-private",
        vpc_id=vpc.id,
        cidr_block=spec.private_cidr,
        availability_zone=plan.zone,
        map_public_ip_on_launch=False,
        tags=tags(plan, "private"),
        opts=opts(retain_on_delete=retain),
    )
    public = aws.ec2.Subnet(
        f"{n}-public",
        vpc_id=vpc.id,
        cidr_block=spec.public_cidr,
        availability_zone=plan.zone,
        map_public_ip_on_launch=False,
        tags=tags(plan, "public"),
        opts=opts(),
    )
    igw = aws.ec2.InternetGateway(f"{n}-igw", vpc_id=vpc.id, tags=tags(plan, "igw"), opts=opts())
    nat_ip = aws.ec2.Eip(f"{n}-nat-ip", domain="vpc", tags=tags(plan, "nat-ip"), opts=opts(depends_on=[igw]))
    nat = aws.ec2.NatGateway(
        f"{n}-nat",
        allocation_id=nat_ip.allocation_id,
        subnet_id=public.id,
        connectivity_type="public",
        tags=tags(plan, "nat"),
        opts=opts(depends_on=[igw]),
    )
    public_rt = aws.ec2.RouteTable(f"{n}-public-rt", vpc_id=vpc.id, tags=tags(plan, "public-rt"), opts=opts())
    aws.ec2.Route(
        f"{n}-public-default", route_table_id=public_rt.id, destination_cidr_block=WORLD, gateway_id=igw.id, opts=opts()
    )
    aws.ec2.RouteTableAssociation(f"{n}-public-rta", subnet_id=public.id, route_table_id=public_rt.id, opts=opts())
    private_rt = aws.ec2.RouteTable(f"{n}-private-rt", vpc_id=vpc.id, tags=tags(plan, "private-rt"), opts=opts())
    private_default = aws.ec2.Route(
        f"{n}-private-default",
        route_table_id=private_rt.id,
        destination_cidr_block=WORLD,
        nat_gateway_id=nat.id,
        opts=opts(),
    )
    # Replies from the public head node to the SSH networks leave through the internet gateway (the one
    # address with a public IP); every other destination keeps the NAT route.
    for i, cidr in enumerate(spec.head_routes):
        aws.ec2.Route(
            f"{n}-head-route-{i}",
            route_table_id=private_rt.id,
            destination_cidr_block=cidr,
            gateway_id=igw.id,
            opts=opts(),
        )
    private_rta = aws.ec2.RouteTableAssociation(
        f"{n}-private-rta", subnet_id=private.id, route_table_id=private_rt.id, opts=opts()
    )
    aws.ec2.VpcEndpoint(
        f"{n}-s3",
        vpc_id=vpc.id,
        service_name=f"com.amazonaws.{plan.region}.s3",
        vpc_endpoint_type="Gateway",
        route_table_ids=[private_rt.id],
        tags=tags(plan, "s3"),
        opts=opts(),
    )
    return Network(vpc.id, private.id, private_rt.id, igw.id, egress=[private_default, private_rta])


@dataclass
class SecurityGroups:
    cluster: aws.ec2.SecurityGroup
    fsx: aws.ec2.SecurityGroup | None
    #: Every rule of the node group: the gang waits for them (EFA needs its self-referencing rules at boot).
    node_rules: list[pulumi.Resource] = field(default_factory=list)
    #: Every rule that lets the file system reach itself and its clients: FSx checks them at CreateFileSystem
    #: ("Creating an FSx for Lustre file system fails": InvalidNetworkSettings when the group does not allow
    #: Lustre/EFA traffic; aws/aws-parallelcluster#6181 hit the race, fixed by DependsOn in #6342).
    fsx_rules: list[pulumi.Resource] = field(default_factory=list)


def _rule(
    kind: str,
    name: str,
    plan: ClusterPlan[AwsPlan],
    group: aws.ec2.SecurityGroup,
    parent: pulumi.Resource,
    *,
    protocol: str = ALL,
    ports: tuple[int, int] | None = None,
    peer: aws.ec2.SecurityGroup | None = None,
    cidr: str | None = None,
    description: str,
) -> pulumi.Resource:
    cls = aws.vpc.SecurityGroupIngressRule if kind == "in" else aws.vpc.SecurityGroupEgressRule
    return cls(
        f"{plan.name}-{name}",
        security_group_id=group.id,
        ip_protocol=protocol,
        from_port=ports[0] if ports else None,
        to_port=ports[1] if ports else None,
        referenced_security_group_id=peer.id if peer is not None else None,
        cidr_ipv4=cidr,
        description=description,
        tags=tags(plan, name),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def build_security_groups(
    plan: ClusterPlan[AwsPlan], net: Network, parent: pulumi.Resource, placement: pulumi.Resource | None = None
) -> SecurityGroups:
    """The EFA group (all traffic within itself, SSH from ``allowed_cidrs``) and the FSx group.

    ``placement`` (the cluster placement group, if one is created) is deleted only after the node group:
    deleting an instant fleet does not wait for its instances, and a placement group that still holds
    terminating instances refuses deletion (``InvalidPlacementGroup.InUse``). The group's delete retries
    on ``DependencyViolation`` until the last node network interface is gone, so it is the wait.
    """
    n = plan.name
    fsx_spec = plan.extra.fsx
    cluster = aws.ec2.SecurityGroup(
        f"{n}-nodes",
        vpc_id=net.vpc_id,
        description=f"provision {n}: EFA all traffic within the cluster; SSH from allowed networks",
        tags=tags(plan, "nodes"),
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=[placement] if placement is not None else None,
            custom_timeouts=pulumi.CustomTimeouts(delete="30m"),
        ),
    )
    nodes_rules: list[pulumi.Resource] = []
    fsx_rules: list[pulumi.Resource] = []

    def node_rule(kind: str, name: str, **kw: Any) -> None:
        nodes_rules.append(_rule(kind, name, plan, cluster, parent, **kw))

    # EFA needs rules that reference the group itself, in both directions (CIDR rules do not count).
    node_rule("in", "nodes-in-self", peer=cluster, description="EFA and host traffic in cluster")
    node_rule("out", "nodes-out-self", peer=cluster, description="EFA and host traffic in cluster")
    node_rule("out", "nodes-out-world", cidr=WORLD, description="egress through NAT and S3")
    for i, cidr in enumerate(c for c in plan.access.allowed_cidrs if ":" not in c):
        node_rule("in", f"nodes-ssh-{i}", protocol="tcp", ports=(22, 22), cidr=cidr, description="SSH")
    if fsx_spec is None or (plan.storage is not None and plan.storage.volume is not None):
        # No FSx of the cluster's own (an attached volume's FSx has its group in the volume's stack).
        return SecurityGroups(cluster, None, nodes_rules)
    retain = bool(fsx_spec.retain)
    fsx = aws.ec2.SecurityGroup(
        f"{n}-fsx-sg",
        vpc_id=net.vpc_id,
        # EC2 takes only a-zA-Z0-9, spaces and ._-:/()#,@[]+=&;{}!$* here (CreateSecurityGroup Description in
        # botocore ec2 2016-11-15): no apostrophe.
        description=f"provision {n}: FSx for Lustre, reachable only from the cluster nodes",
        tags=tags(plan, "fsx-sg"),
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=retain),
    )

    def fsx_rule(kind: str, name: str, group: aws.ec2.SecurityGroup, **kw: Any) -> None:
        rule = _rule(kind, name, plan, group, parent, **kw)
        fsx_rules.append(rule)
        if group is cluster:
            nodes_rules.append(rule)

    if fsx_spec.efa:
        # An EFA-enabled file system needs all traffic to and from itself and its clients' group.
        for peer, who in ((fsx, "self"), (cluster, "nodes")):
            fsx_rule("in", f"fsx-in-{who}", fsx, peer=peer, description=f"Lustre over EFA ({who})")
            fsx_rule("out", f"fsx-out-{who}", fsx, peer=peer, description=f"Lustre over EFA ({who})")
        fsx_rule("in", "nodes-in-fsx", cluster, peer=fsx, description="Lustre over EFA (file servers)")
        fsx_rule("out", "nodes-out-fsx", cluster, peer=fsx, description="Lustre over EFA (file servers)")
        return SecurityGroups(cluster, fsx, nodes_rules, fsx_rules)
    for lo, hi in LUSTRE_PORTS:
        port = f"{lo}" if lo == hi else f"{lo}-{hi}"
        lustre: dict[str, Any] = {"protocol": "tcp", "ports": (lo, hi)}
        for peer, who in ((fsx, "self"), (cluster, "nodes")):
            desc = f"Lustre {port} ({who})"
            fsx_rule("in", f"fsx-in-{who}-{lo}", fsx, peer=peer, description=desc, **lustre)
            fsx_rule("out", f"fsx-out-{who}-{lo}", fsx, peer=peer, description=desc, **lustre)
        # Lustre servers call clients back on the same ports.
        fsx_rule("in", f"nodes-in-fsx-{lo}", cluster, peer=fsx, description=f"Lustre {port} (file servers)", **lustre)
    return SecurityGroups(cluster, fsx, nodes_rules, fsx_rules)

"""GCP networking resources for a cluster: VPCs, subnets, firewall rules and Cloud NAT.

Pulumi only, no decisions: every value comes from ``plan.extra`` (see
:mod:`provision.clouds.gcp.layout`). Resources carry no labels because ``compute.Network``,
``Subnetwork``, ``Firewall``, ``Router`` and ``RouterNat`` have no labels field in the GCP API.

A network whose plan names an attached volume (``Vpc.volume``) is that volume's VPC, read through the volume's
stack (:mod:`provision.clouds.volumeref`): the cluster creates no VPC for it, only its subnet, firewall rules,
router and NAT in it, each named for the cluster, so ``down`` removes exactly those and the volume's VPC stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_gcp import compute

from provision.clouds.gcp.layout import physical_name
from provision.clouds.gcp.plan import GcpPlan, Vpc
from provision.planning.plan import ClusterPlan

if TYPE_CHECKING:
    from provision.clouds.volumeref import VolumeRef


@dataclass(frozen=True)
class VolumeVpc:
    """An attached volume's VPC, as the cluster's resources name it (the attributes of a ``compute.Network``)."""

    id: Any  # Output[str]: projects/P/global/networks/N
    self_link: Any
    name: Any
    project: Any

    @staticmethod
    def of(volume: VolumeRef) -> VolumeVpc:
        return VolumeVpc(
            id=volume.network_field("network_id"),
            self_link=volume.network_field("self_link"),
            name=volume.network_field("network"),
            project=volume.network_field("project"),
        )


@dataclass
class Networks:
    """The cluster's networks, by the layout's keys."""

    vpcs: dict[str, compute.Network | VolumeVpc] = field(default_factory=dict)
    subnets: dict[str, compute.Subnetwork] = field(default_factory=dict)
    host: compute.Network | VolumeVpc | None = None
    host_subnet: compute.Subnetwork | None = None
    project: Any = None  # str or Output[str]: the spec's project, else the provider's (from the host VPC)


def build_networks(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource, volume: VolumeRef | None = None) -> Networks:
    """Create every VPC, subnet, firewall rule and the host VPC's Cloud NAT (in ``volume``'s VPC where planned)."""
    extra = plan.extra
    project = extra.project
    opts = pulumi.ResourceOptions(parent=parent)
    out = Networks()
    for net in extra.networks:
        if net.volume is not None:
            if volume is None:
                raise pulumi.RunError(
                    f"{net.key} is planned in volume {net.volume}'s VPC but the cluster reads no volume stack; to fix: "
                    "attach the volume with storage.shared.volume"
                )
            external = VolumeVpc.of(volume)
            out.vpcs[net.key] = external
            if out.host is None:
                out.host = external
                out.project = project if project else external.project
            _subnets_and_rules(plan, net, external, out, opts)
            continue
        vpc_args: dict[str, Any] = {
            "auto_create_subnetworks": False,
            "mtu": net.mtu,
            "routing_mode": "REGIONAL",
            "description": f"provision cluster {plan.name}: {net.role} network",
        }
        if net.profile:
            # RoCE VPC: the network profile can only be set at creation and must name the project.
            profile: str = net.profile
            vpc_args["network_profile"] = pulumi.Output.concat(
                "projects/", out.project, "/global/networkProfiles/", profile
            )
        vpc_name = f"{plan.name}-{net.key}"
        vpc = compute.Network(
            vpc_name,
            project=project,
            name=physical_name(vpc_name),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=net.retain)),
            **vpc_args,
        )
        out.vpcs[net.key] = vpc
        if out.host is None:
            out.host = vpc
            out.project = project if project else vpc.project
        _subnets_and_rules(plan, net, vpc, out, opts)
    return out


def _subnets_and_rules(
    plan: ClusterPlan[GcpPlan], net: Vpc, vpc: compute.Network | VolumeVpc, out: Networks, opts: pulumi.ResourceOptions
) -> None:
    """The subnets of ``net`` in ``vpc``, its firewall rules and its Cloud NAT, all named for the cluster.

    In a volume's VPC they are created in that VPC's project: a subnet, firewall rule or router belongs to the
    project of its network (compute v1: ``projects/{project}/regions/{region}/subnetworks``, ``.../firewalls``).
    """
    extra = plan.extra
    project = vpc.project if isinstance(vpc, VolumeVpc) else extra.project
    cidrs = []
    for sub in net.subnets:
        subnet_name = f"{plan.name}-{sub.key}"
        subnet = compute.Subnetwork(
            subnet_name,
            name=physical_name(subnet_name),
            network=vpc.id,
            region=plan.region,
            ip_cidr_range=sub.cidr,
            # Private Google Access: nodes without external IPs still reach Google APIs (Artifact
            # Registry, Cloud Storage, Logging). RoCE subnets carry RDMA traffic only.
            private_ip_google_access=net.role != "rdma",
            stack_type="IPV4_ONLY",
            project=project,
            opts=opts,
        )
        out.subnets[sub.key] = subnet
        cidrs.append(sub.cidr)
        if out.host_subnet is None:
            out.host_subnet = subnet
    if net.internal_firewall:
        internal = f"{plan.name}-{net.key}-internal"
        compute.Firewall(
            internal,
            name=physical_name(internal),
            network=vpc.self_link,
            direction="INGRESS",
            priority=1000,
            allows=[compute.FirewallAllowArgs(protocol="all")],
            source_ranges=cidrs,
            description="all traffic between the cluster's nodes on this network",
            project=project,
            opts=opts,
        )
    if net.ssh and extra.ssh_source_ranges:
        ssh = f"{plan.name}-{net.key}-ssh"
        compute.Firewall(
            ssh,
            name=physical_name(ssh),
            network=vpc.self_link,
            direction="INGRESS",
            priority=1000,
            allows=[compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            source_ranges=list(extra.ssh_source_ranges),
            description="SSH from access.allowed_cidrs",
            project=project,
            opts=opts,
        )
    if net.nat:
        router_name = f"{plan.name}-{net.key}-router"
        router = compute.Router(
            router_name,
            name=physical_name(router_name),
            network=vpc.id,
            region=plan.region,
            project=project,
            opts=opts,
        )
        nat_name = f"{plan.name}-{net.key}-nat"
        compute.RouterNat(
            nat_name,
            name=physical_name(nat_name),
            router=router.name,
            region=plan.region,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[
                compute.RouterNatSubnetworkArgs(name=out.subnets[s.key].id, source_ip_ranges_to_nats=["ALL_IP_RANGES"])
                for s in net.subnets
            ],
            log_config=compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            project=project,
            opts=opts,
        )

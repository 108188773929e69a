"""AWS nodes: identity, launch template, the gang (instant EC2 Fleet or ASG) and node addresses.

Pulumi only; every decision is in the plan. Nodes are never individual Pulumi resources, so the
resource count does not grow with the node count; their addresses come from an invoke after the
gang exists.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from provision.clouds.aws import userdata
from provision.clouds.aws.network import Network, SecurityGroups, tags
from provision.clouds.outputs import gather

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan

LIVE_STATES = ["pending", "running"]
#: DescribeInstances refuses a call with more than 200 filter values ("FilterLimitExceeded: The maximum
#: number of filter values specified on a single call is 200"); the cluster tag and the two states take 3.
MAX_FILTER_VALUES = 200
IDS_PER_LOOKUP = MAX_FILTER_VALUES - 1 - len(LIVE_STATES)
#: IAM is eventually consistent: EC2 may not see a brand-new instance profile for a while (IAM User Guide,
#: troubleshooting "Changes that I make are not always immediately visible"; the launch error is
#: "InvalidParameterValue: Invalid IAM Instance Profile", hashicorp/terraform#15341, aws/karpenter-provider-aws#7849).
#: An instant fleet returns that error inside its response and launches nothing (aws-parallelcluster-node#528), so
#: the gang starts only this long after the profile exists (Terraform users use time_sleep the same way).
PROFILE_PROPAGATION = "30s"


def _opts(parent: pulumi.Resource, **kw: Any) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, **kw)


@dataclass
class Identity:
    profile: aws.iam.InstanceProfile
    key_name: pulumi.Output[str] | None
    #: Done once the profile had :data:`PROFILE_PROPAGATION` to reach EC2; the gang depends on it.
    ready: pulumi.Resource


def shared_source_policy(plan: ClusterPlan[AwsPlan]) -> dict[str, Any]:
    """``ssm:GetParameter`` on this cluster's mount-source parameter only (any account: the role is this one's)."""
    arn = f"arn:{plan.extra.partition}:ssm:{plan.region}:*:parameter{userdata.shared_source_parameter(plan.name)}"
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": arn}],
    }


def shared_source_parameter(
    plan: ClusterPlan[AwsPlan], source: pulumi.Output[str], parent: pulumi.Resource
) -> aws.ssm.Parameter:
    """The FSx mount source where the nodes look it up at boot (written once the file system is AVAILABLE).

    ``source`` is the cluster's own FSx's, or an attached volume's (read from the volume's stack).
    """
    return aws.ssm.Parameter(
        f"{plan.name}-shared-source",
        name=userdata.shared_source_parameter(plan.name),
        type="String",
        description=f"provision {plan.name}: FSx mount source the nodes read at boot",
        # Not secret (a DNS name): insecure_value keeps it readable in the state and the preview.
        insecure_value=source,
        tags=tags(plan, "fsx"),
        opts=_opts(parent),
    )


def build_identity(plan: ClusterPlan[AwsPlan], parent: pulumi.Resource) -> Identity:
    """A least-privilege node role (SSM Session Manager only) and the EC2 key pair for key 0."""
    n, inst = plan.name, plan.extra.instance
    partition = plan.extra.partition
    assume = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    role = aws.iam.Role(
        f"{n}-node",
        assume_role_policy=json.dumps(assume, sort_keys=True),
        description=f"provision {n}: cluster nodes (SSM Session Manager only)",
        permissions_boundary=inst.permissions_boundary_arn,
        tags=tags(plan, "node"),
        opts=_opts(parent),
    )
    aws.iam.RolePolicyAttachment(
        f"{n}-node-ssm",
        role=role.name,
        policy_arn=f"arn:{partition}:iam::aws:policy/AmazonSSMManagedInstanceCore",
        opts=_opts(parent),
    )
    if plan.extra.fsx is not None:
        # The one call the fsx-source step makes: read this cluster's mount-source parameter, nothing else.
        aws.iam.RolePolicy(
            f"{n}-node-shared-source",
            role=role.id,
            policy=json.dumps(shared_source_policy(plan), sort_keys=True),
            opts=_opts(parent),
        )
    profile = aws.iam.InstanceProfile(f"{n}-node", role=role.name, tags=tags(plan, "node"), opts=_opts(parent))
    import pulumiverse_time  # the aws extra; imported here so `import provision` stays light

    ready = pulumiverse_time.Sleep(
        f"{n}-profile-propagation",
        create_duration=PROFILE_PROPAGATION,
        # A replaced profile is a new profile: the wait runs again.
        triggers={"profile": profile.arn},
        opts=_opts(parent, depends_on=[profile]),
    )
    key_name = None
    if plan.extra.ssh.key_pair:
        key = aws.ec2.KeyPair(
            f"{n}-key", public_key=plan.access.ssh_public_keys[0], tags=tags(plan, "key"), opts=_opts(parent)
        )
        key_name = key.key_name
    return Identity(profile, key_name, ready)


def image_id(plan: ClusterPlan[AwsPlan], parent: pulumi.Resource) -> pulumi.Output[str]:
    """The AMI: the plan's pinned id, or the SSM lookup resolved once for this deployment."""
    lookup = plan.extra.image_lookup
    if lookup is None:
        return pulumi.Output.from_input(plan.image.ref)
    # ``value`` "is always marked as sensitive" (ssm.get_parameter docstring), which would turn image_pin and the
    # fabric manifest into [secret]; an AMI id is public, and ``insecure_value`` carries it unmarked.
    return aws.ssm.get_parameter_output(name=lookup, opts=pulumi.InvokeOutputOptions(parent=parent)).insecure_value


def placement_group(plan: ClusterPlan[AwsPlan], parent: pulumi.Resource) -> aws.ec2.PlacementGroup | None:
    """The cluster placement group the plan asks to create (none for reservations or a user's group)."""
    if not plan.extra.placement_group.create:
        return None
    return aws.ec2.PlacementGroup(f"{plan.name}-pg", strategy="cluster", tags=tags(plan, "pg"), opts=_opts(parent))


def _capacity_reservation(
    plan: ClusterPlan[AwsPlan], parent: pulumi.Resource
) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    market = plan.extra.market
    cr = market.reservation_id
    if cr is None:
        return None
    if not market.reservation_group:
        target = aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=cr
        )
        return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(capacity_reservation_target=target)
    # EC2 Fleet targets On-Demand Capacity Reservations through a Capacity Reservation resource group.
    group = aws.resourcegroups.Group(
        f"{plan.name}-reservations",
        description=f"provision {plan.name} capacity reservations the fleet launches into",
        configurations=[
            aws.resourcegroups.GroupConfigurationArgs(type="AWS::EC2::CapacityReservationPool"),
            aws.resourcegroups.GroupConfigurationArgs(
                type="AWS::ResourceGroups::Generic",
                parameters=[
                    aws.resourcegroups.GroupConfigurationParameterArgs(
                        name="allowed-resource-types", values=["AWS::EC2::CapacityReservation"]
                    )
                ],
            ),
        ],
        tags=tags(plan, "reservations"),
        opts=_opts(parent),
    )
    account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id
    aws.resourcegroups.Resource(
        f"{plan.name}-reservation",
        group_arn=group.arn,
        resource_arn=pulumi.Output.concat(
            f"arn:{plan.extra.partition}:ec2:{plan.region}:", account, f":capacity-reservation/{cr}"
        ),
        opts=_opts(parent),
    )
    target = aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
        capacity_reservation_resource_group_arn=group.arn
    )
    return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(capacity_reservation_target=target)


def efa_interfaces(
    plan: ClusterPlan[AwsPlan], security_groups: list[Any], subnet_id: pulumi.Input[str] | None = None
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """The plan's EFA layout as launch-template interfaces (every card, the ENA primary first)."""
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=nic.card,
            device_index=nic.device,
            interface_type=nic.type,
            subnet_id=subnet_id,
            security_groups=security_groups,
            delete_on_termination="true",
            # Only the ENA primary can carry an address at all; never a public one.
            associate_public_ip_address="false" if nic.type == "interface" else None,
        )
        for nic in plan.extra.efa_interfaces
    ]


def imds_v2(hop_limit: int) -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    """Instance metadata through IMDSv2 tokens only, ``hop_limit`` hops away, no instance tags in it."""
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=hop_limit,
        instance_metadata_tags="disabled",
    )


def encrypted_root(device: str, gib: int) -> list[aws.ec2.LaunchTemplateBlockDeviceMappingArgs]:
    """The root volume: encrypted gp3 of ``gib``, deleted with the node."""
    return [
        aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=device,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=gib, volume_type="gp3", encrypted="true", delete_on_termination="true"
            ),
        )
    ]


def node_tag_specifications(node_tags: dict[str, str]) -> list[aws.ec2.LaunchTemplateTagSpecificationArgs]:
    """Tags for what a launch creates: the instance, its volumes and its network interfaces."""
    return [
        aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=node_tags)
        for kind in ("instance", "volume", "network-interface")
    ]


def launch_template(
    plan: ClusterPlan[AwsPlan],
    net: Network,
    sgs: SecurityGroups,
    identity: Identity,
    ami: pulumi.Output[str],
    pg: aws.ec2.PlacementGroup | None,
    parent: pulumi.Resource,
) -> aws.ec2.LaunchTemplate:
    """One launch template for every node: the EFA layout, IMDSv2, encrypted root, user data, tags."""
    inst, market = plan.extra.instance, plan.extra.market
    nics = efa_interfaces(plan, [sgs.cluster.id], net.subnet_id)
    # No input from the file system: the nodes look its mount source up at boot (userdata.shared_source_parameter).
    script = pulumi.Output.from_input(userdata.render(plan))
    pg_name = pg.name if pg is not None else plan.extra.placement_group.name
    node_tags = tags(plan, "node")
    return aws.ec2.LaunchTemplate(
        f"{plan.name}-nodes",
        description=f"provision {plan.name}: {plan.instance_type} nodes",
        image_id=ami,
        instance_type=plan.instance_type,
        key_name=identity.key_name,
        iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=identity.profile.arn),
        network_interfaces=nics,
        placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=pg_name) if pg_name else None,
        metadata_options=imds_v2(inst.imds_hop_limit),
        block_device_mappings=encrypted_root(inst.root_device_name, inst.root_volume_gib),
        user_data=script.apply(userdata.encode),
        instance_initiated_shutdown_behavior="terminate" if plan.expires_at is not None else None,
        instance_market_options=(
            aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type=market.market_type)
            if market.market_type
            else None
        ),
        capacity_reservation_specification=_capacity_reservation(plan, parent),
        tag_specifications=node_tag_specifications(node_tags),
        tags=tags(plan, "nodes"),
        update_default_version=True,
        # A new AMI behind the SSM parameter must never replace running nodes.
        opts=_opts(parent, ignore_changes=["image_id"] if plan.extra.image_lookup else None),
    )


def _lt_version(lt: aws.ec2.LaunchTemplate) -> pulumi.Output[str]:
    return lt.latest_version.apply(str)


def fleet(
    plan: ClusterPlan[AwsPlan],
    lt: aws.ec2.LaunchTemplate,
    parent: pulumi.Resource,
    waits: Sequence[pulumi.Resource] = (),
) -> aws.ec2.Fleet:
    """One instant EC2 Fleet: a single CreateFleet call, all nodes in one AZ and type, all or nothing.

    ``waits``: what must exist before the first node boots (profile propagation, node SG rules, egress route).
    """
    market, nodes = plan.extra.market, plan.nodes
    capacity_type = market.target_capacity_type
    gang: dict[str, Any] = {
        "min_target_capacity": nodes,
        "single_availability_zone": True,
        "single_instance_type": True,
    }
    on_demand = spot = None
    if capacity_type == "on-demand":
        reservations = (
            aws.ec2.FleetOnDemandOptionsCapacityReservationOptionsArgs(usage_strategy="use-capacity-reservations-first")
            if market.reservation_group
            else None
        )
        on_demand = aws.ec2.FleetOnDemandOptionsArgs(capacity_reservation_options=reservations, **gang)
    elif capacity_type == "spot":
        spot = aws.ec2.FleetSpotOptionsArgs(
            allocation_strategy="price-capacity-optimized", instance_interruption_behavior="terminate", **gang
        )
    # capacity-block: no OnDemandOptions (the fleet fills what the block holds; see the plan warning).
    overrides = (
        [aws.ec2.FleetLaunchTemplateConfigOverrideArgs(max_price=market.spot_max_price)]
        if market.spot_max_price
        else None
    )
    return aws.ec2.Fleet(
        f"{plan.name}-fleet",
        type="instant",
        launch_template_configs=[
            aws.ec2.FleetLaunchTemplateConfigArgs(
                launch_template_specification=aws.ec2.FleetLaunchTemplateConfigLaunchTemplateSpecificationArgs(
                    launch_template_id=lt.id, version=_lt_version(lt)
                ),
                overrides=overrides,
            )
        ],
        target_capacity_specification=aws.ec2.FleetTargetCapacitySpecificationArgs(
            default_target_capacity_type=capacity_type, total_target_capacity=nodes
        ),
        on_demand_options=on_demand,
        spot_options=spot,
        terminate_instances=True,
        tags=tags(plan, "fleet"),
        # An instant fleet cannot be modified: any change launches a new gang after the old one is gone.
        opts=_opts(
            parent,
            depends_on=list(waits),
            replace_on_changes=[
                "launchTemplateConfigs",
                "targetCapacitySpecification",
                "onDemandOptions",
                "spotOptions",
                "type",
            ],
            delete_before_replace=True,
            custom_timeouts=pulumi.CustomTimeouts(create="30m", delete="30m"),
        ),
    )


def autoscaling_group(
    plan: ClusterPlan[AwsPlan],
    net: Network,
    lt: aws.ec2.LaunchTemplate,
    parent: pulumi.Resource,
    waits: Sequence[pulumi.Resource] = (),
) -> aws.autoscaling.Group:
    """An ASG pinned at the node count that never replaces or rebalances nodes on its own (``waits``: as
    for :func:`fleet`)."""
    n, nodes = plan.name, plan.nodes
    group = aws.autoscaling.Group(
        f"{n}-asg",
        min_size=nodes,
        max_size=nodes,
        desired_capacity=nodes,
        vpc_zone_identifiers=[net.subnet_id],
        launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=lt.id, version=_lt_version(lt)),
        # Training needs a fixed gang: no replacement of unhealthy nodes, no AZ moves, and no health
        # checks that would mark a node (e.g. one past its shutdown timer) for replacement.
        suspended_processes=["ReplaceUnhealthy", "AZRebalance", "HealthCheck"],
        health_check_type="EC2",
        wait_for_capacity_timeout="30m",
        tags=[
            aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False)
            for k, v in sorted(tags(plan, "asg").items())
        ],
        opts=_opts(parent, depends_on=list(waits)),
    )
    if plan.expires_at is not None and plan.extra.lifetime.asg_schedule:
        aws.autoscaling.Schedule(
            f"{n}-expire",
            autoscaling_group_name=group.name,
            scheduled_action_name=f"{n}-expire",
            start_time=plan.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            min_size=0,
            max_size=0,
            desired_capacity=0,
            opts=_opts(parent),
        )
    return group


def _rank_order(ids: list[str], ips: list[str]) -> tuple[list[str], list[str]]:
    """Pairs (instance id, private IP) sorted by IP: rank 0 is the lowest address."""
    if len(ids) != len(ips):
        raise pulumi.RunError(
            f"DescribeInstances returned {len(ids)} instances but {len(ips)} private IPs; run `provision up` again"
        )
    pairs = sorted(zip(ids, ips, strict=True), key=lambda p: ipaddress.ip_address(p[1]))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def node_addresses(
    plan: ClusterPlan[AwsPlan], gang: aws.ec2.Fleet | aws.autoscaling.Group, parent: pulumi.Resource
) -> pulumi.Output[tuple[list[str], list[str]]]:
    """(instance ids, private IPs) by rank, read back after the gang exists."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    cluster_tag = {"provision-cluster": plan.name}
    found: pulumi.Output[list[Any]]  # one (ids, private IPs) pair per DescribeInstances lookup
    if isinstance(gang, aws.ec2.Fleet):

        def fleet_ids(sets: Sequence[Any]) -> list[str]:
            ids = sorted({i for s in sets or [] for i in (s.instance_ids or [])})
            if len(ids) != plan.nodes and plan.extra.market.all_or_nothing:
                # An instant fleet that misses MinTargetCapacity launches nothing yet still "succeeds".
                raise pulumi.RunError(
                    f"the EC2 Fleet launched {len(ids)} of {plan.nodes} {plan.instance_type} nodes (no capacity "
                    f"in {plan.zone}?); see the fleet's errors with `aws ec2 describe-fleets`. The empty fleet "
                    "stays in the stack, so running `provision up` again changes nothing: run `provision down`, "
                    "then `provision up`"
                )
            if not ids:
                raise pulumi.RunError("the EC2 Fleet launched no nodes; see `aws ec2 describe-fleets`")
            return ids

        def lookup(ids: list[str]) -> pulumi.Output[list[Any]]:
            # One DescribeInstances per IDS_PER_LOOKUP ids: a 1,000-node fleet in one call is FilterLimitExceeded.
            parts = [
                aws.ec2.get_instances_output(
                    filters=[aws.ec2.GetInstancesFilterArgs(name="instance-id", values=ids[i : i + IDS_PER_LOOKUP])],
                    instance_tags=cluster_tag,
                    instance_state_names=LIVE_STATES,
                    opts=invoke,
                )
                for i in range(0, len(ids), IDS_PER_LOOKUP)
            ]
            return gather([gather([p.ids, p.private_ips]) for p in parts])

        found = gang.fleet_instance_sets.apply(fleet_ids).apply(lookup)
    else:
        group = aws.ec2.get_instances_output(
            instance_tags=gang.name.apply(lambda name: {**cluster_tag, "aws:autoscaling:groupName": name}),
            instance_state_names=LIVE_STATES,
            opts=invoke,
        )
        found = gather([gather([group.ids, group.private_ips])])
    return found.apply(lambda parts: _rank_order([i for p in parts for i in p[0]], [ip for p in parts for ip in p[1]]))


def head_public_ip(
    plan: ClusterPlan[AwsPlan], ranked: pulumi.Output[tuple[list[str], list[str]]], parent: pulumi.Resource
) -> pulumi.Output[str] | None:
    """An Elastic IP on node 0's primary (ENA) interface; multi-card instances get no automatic public IP."""
    if not plan.extra.public_head_node:
        return None
    eip = aws.ec2.Eip(f"{plan.name}-head-ip", domain="vpc", tags=tags(plan, "head-ip"), opts=_opts(parent))
    primary = aws.ec2.get_network_interface_output(
        filters=ranked.apply(
            lambda r: [
                aws.ec2.GetNetworkInterfaceFilterArgs(name="attachment.instance-id", values=[r[0][0]]),
                aws.ec2.GetNetworkInterfaceFilterArgs(name="attachment.device-index", values=["0"]),
                aws.ec2.GetNetworkInterfaceFilterArgs(name="interface-type", values=["interface"]),
            ]
        ),
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    aws.ec2.EipAssociation(
        f"{plan.name}-head-ip",
        allocation_id=eip.allocation_id,
        network_interface_id=primary.id,
        opts=_opts(parent),
    )
    return eip.public_ip

"""AWS adapter, build half: the ``provision:aws:Cluster`` component (Pulumi only, no decisions).

Resources, in dependency order: VPC with a private node subnet and NAT egress (or the user's
subnet), a cluster placement group, the EFA and FSx security groups with standalone rules (the node
group after the placement group, so destroy removes the group last), FSx for Lustre, the node role
and key pair, ONE launch template with the type's EFA layout, and the gang:
an instant EC2 Fleet (default) or an Auto Scaling group. Node addresses come from an invoke after
the gang; nodes are never individual resources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from provision.clouds.aws import datalink, network, nodes, storage, volumelink
from provision.clouds.aws.userdata import fsx_source
from provision.clouds.outputs import stack_outputs
from provision.clouds.volumeref import attached_summary, volume_reference
from provision.planning.outputs import shared_fs_summary

if TYPE_CHECKING:
    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan

TYPE_TOKEN = "provision:aws:Cluster"


class AwsCluster(pulumi.ComponentResource):
    """One GPU cluster on AWS, built from a :class:`~provision.planning.plan.ClusterPlan`.

    Attributes:
        outputs: the stack outputs (``stack_outputs`` plus ``image_pin``).
    """

    outputs: dict[str, Any]

    def __init__(self, plan: ClusterPlan[AwsPlan], opts: pulumi.ResourceOptions | None = None) -> None:
        _check_provider_region(plan)
        super().__init__(TYPE_TOKEN, plan.name, None, opts)
        net = network.build_network(plan, self)
        pg = nodes.placement_group(plan, self)
        sgs = network.build_security_groups(plan, net, self, placement=pg)
        identity = nodes.build_identity(plan, self)
        ami = nodes.image_id(plan, self)
        # GPUs first: nothing of the node group waits for the file system; the nodes read its mount source at boot.
        lt = nodes.launch_template(plan, net, sgs, identity, ami, pg, self)
        volume = volume_reference(plan, self)  # an attached volume: its FSx lives in its own stack
        fs = storage.build_fsx(plan, net, sgs, self) if volume is None else None
        dra = datalink.build_s3_link(plan, fs, self)
        reach: list[pulumi.Resource] = []
        if fs is not None:
            nodes.shared_source_parameter(plan, fs_source(fs), self)
        elif volume is not None:
            nodes.shared_source_parameter(plan, volume.mount_source, self)
            reach = volumelink.build_volume_access(plan, net, sgs, volume, self)
        # The first node boots only once its profile reached EC2, its group's rules exist and egress works.
        waits = [identity.ready, *sgs.node_rules, *net.egress, *reach]
        gang: aws.ec2.Fleet | aws.autoscaling.Group = (
            nodes.fleet(plan, lt, self, waits)
            if plan.extra.allocation == "fleet"
            else nodes.autoscaling_group(plan, net, lt, self, waits)
        )
        ranked = nodes.node_addresses(plan, gang, self)
        head_ip = nodes.head_public_ip(plan, ranked, self)
        shared = None
        if fs is not None:
            shared = fs_source(fs).apply(lambda s: shared_fs_summary(plan, s, "lustre", "relatime,flock"))
        elif volume is not None:
            shared = volume.mount_source.apply(
                lambda s: attached_summary(shared_fs_summary(plan, s, "lustre", "relatime,flock"), volume.name)
            )
        outputs = stack_outputs(
            plan, ranked.apply(lambda r: r[1]), head_ip, shared, node_ids=ranked.apply(lambda r: r[0])
        )
        manifest = dict(outputs["fabric_manifest"])
        if plan.extra.slurm is not None:  # scheduler: slurm
            from provision.clouds.aws.slurm import build_controller

            outputs["slurm"] = build_controller(
                plan, subnet_id=net.subnet_id, security_group_id=sgs.cluster.id, profile_name=identity.profile.name,
                key_name=identity.key_name, image_id=lt.image_id, node_ips=ranked.apply(lambda r: r[1]),
                parent=self, depends_on=[identity.ready, *sgs.node_rules, *net.egress],
            )  # fmt: skip
        if dra is not None and fs is not None:
            outputs["object_store"] = datalink.link_output(plan, fs, dra)
        self.outputs = {
            **outputs,
            # The AMI the launch template really holds (a lookup is resolved once; pin it with image.id).
            "image_pin": lt.image_id,
            "fabric_manifest": lt.image_id.apply(lambda ami: {**manifest, "image": ami}),
        }
        self.register_outputs(self.outputs)


def fs_source(fs: aws.fsx.LustreFileSystem) -> pulumi.Output[str]:
    """The cluster's own FSx mount source, ``<dns name>@tcp:/<mount name>``."""
    return pulumi.Output.all(fs.dns_name, fs.mount_name).apply(lambda a: fsx_source(a[0], a[1]))


def _check_provider_region(plan: ClusterPlan[AwsPlan]) -> None:
    """The default AWS provider must deploy into the plan's region (checked before any resource).

    Raises:
        pulumi.RunError: the stack's ``aws:region`` names another region.
    """
    configured = pulumi.Config("aws").get("region")
    if configured and configured != plan.region:
        raise pulumi.RunError(
            f"the stack's aws:region is {configured!r} but the cluster spec's region is {plan.region!r}; "
            f"to fix: set aws:region to {plan.region} in the stack file (or change the spec's region)"
        )


def build(plan: ClusterPlan[AwsPlan]) -> dict[str, Any]:
    """Create the cluster's resources in the current Pulumi context; returns the stack outputs."""
    return AwsCluster(plan).outputs

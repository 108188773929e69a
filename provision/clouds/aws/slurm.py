"""AWS ``scheduler: slurm``: the controller VM (``slurmctld``, and ``slurmdbd`` when accounting is asked).

:func:`slurm_controller_plan` is the adapter's decision (pure data, no SDK); :func:`build_controller` creates
one ``aws.ec2.Instance`` in the node subnet, in the node security group (the GPU nodes reach slurmctld on
6817 and it reaches their slurmd on 6818), with no public IP, an encrypted gp3 root volume, IMDSv2, the node
instance profile (SSM, the cluster's way in) and the cluster's lifetime: its cloud-config
(:func:`provision.planning.slurm.controller_user_data`) runs the same shutdown timer as the nodes, and
instance-initiated shutdown is ``terminate`` (EC2 User Guide, "Change the instance initiated shutdown
behavior"). The rendered ``slurm.conf``, ``gres.conf`` and ``topology.conf`` (with the real addresses) are the
``slurm`` stack output; ``provision up`` sends them over SSH with the munge key (:mod:`provision.ops.slurm`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.planning.slurm import SlurmController

if TYPE_CHECKING:
    import pulumi

    from provision.clouds.aws.plan import AwsPlan
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec

#: The controller's default type: 4 vCPU, 16 GiB, general purpose (EC2 "General purpose instances",
#: https://aws.amazon.com/ec2/instance-types/m7i/); slurmctld and slurmdbd of a few hundred nodes fit.
DEFAULT_INSTANCE_TYPE = "m7i.xlarge"
#: The DLAMI's OS (images/aws.yaml ``os``): picks the Slurm pin in images/compat.yaml.
DEFAULT_OS = "ubuntu-22.04"


def slurm_controller_plan(spec: ClusterSpec) -> SlurmController | None:
    """The controller of a ``scheduler.kind: slurm`` cluster (``None`` for other kinds)."""
    from provision.planning.slurm import controller_plan

    return controller_plan(spec, DEFAULT_INSTANCE_TYPE)  # type: ignore[no-any-return]


def rendered_files(plan: ClusterPlan[AwsPlan], controller_addr: str | None, node_addrs: list[str]) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf, plugstack.conf of the plan with these addresses."""
    from provision.planning.slurm import plan_files

    return plan_files(plan, plan.image.versions.get("os", DEFAULT_OS), controller_addr, node_addrs)


def build_controller(
    plan: ClusterPlan[AwsPlan],
    *,
    subnet_id: Any,
    security_group_id: Any,
    profile_name: Any,
    key_name: Any,
    image_id: Any,
    node_ips: pulumi.Output[list[str]],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> dict[str, Any]:
    """Create the controller; returns the ``slurm`` stack output (name, address, rendered files)."""
    import pulumi
    import pulumi_aws as aws

    from provision.clouds.aws.network import tags
    from provision.clouds.aws.userdata import encode, extra_keys
    from provision.planning.slurm import controller_user_data, slurm_pins

    ctl = plan.extra.slurm
    assert ctl is not None  # noqa: S101
    pins = slurm_pins(plan.image.versions.get("os", DEFAULT_OS))
    user_data = encode(controller_user_data(plan, pins, login_keys=extra_keys(plan)))
    vm = aws.ec2.Instance(
        ctl.name,
        ami=image_id,
        instance_type=ctl.instance_type,
        subnet_id=subnet_id,
        vpc_security_group_ids=[security_group_id],
        associate_public_ip_address=False,
        iam_instance_profile=profile_name,
        key_name=key_name,
        user_data_base64=user_data,
        instance_initiated_shutdown_behavior="terminate",
        metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            http_put_response_hop_limit=plan.extra.instance.imds_hop_limit,
            instance_metadata_tags="disabled",
        ),
        root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
            volume_size=ctl.disk_gib, volume_type="gp3", encrypted=True, delete_on_termination=True
        ),
        tags={**tags(plan, "slurm-ctl"), "provision:role": "slurm-controller"},
        volume_tags=tags(plan, "slurm-ctl"),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
    both = pulumi.Output.all(vm.private_ip, node_ips)
    return {
        "controller": ctl.name,
        "address": vm.private_ip,
        "instance_id": vm.id,
        "files": both.apply(lambda a: rendered_files(plan, a[0], list(a[1] or []))),
    }

"""Alibaba ``scheduler: slurm``: the controller VM (``slurmctld``, and ``slurmdbd`` when accounting is asked).

:func:`slurm_controller_plan` is the adapter's decision (pure data, no SDK); :func:`build_controller` creates one
``ecs.Instance`` on the nodes' vSwitch, in the nodes' security group (which admits any port between its members, so
slurmd and slurmctld talk), with no public address (``internet_max_bandwidth_out: 0``, no EIP), an encrypted ESSD
system disk (the cluster's KMS key when given), metadata in token mode, and the cluster's lifetime:
``auto_release_time`` at the expiry, as the nodes ("RunInstances AutoReleaseTime",
https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances). It is reached the way
the nodes are (the networks of ``access.allowed_cidrs``, or through node 0 when the head node is public). Its image
is the same Ubuntu release as the nodes' (``DEFAULT_OS``), looked up once for the controller's own type: the nodes'
image is the UEFI build their bare-metal type needs, which not every CPU type boots ("Instance boot modes",
https://www.alibabacloud.com/help/en/ecs/user-guide/instance-startup-mode). Topology: one block or leaf switch per
LowLatency deployment set (``plan.islands``). The rendered Slurm files are the ``slurm`` stack output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.clouds.alibaba.plan import SlurmController

if TYPE_CHECKING:
    import pulumi

    from provision.clouds.alibaba.plan import AlibabaPlan
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec

#: 4 vCPU, 16 GiB, general purpose (g7 family, "General-purpose instance families",
#: https://www.alibabacloud.com/help/en/ecs/user-guide/general-purpose-instance-families); slurmctld and slurmdbd of a
#: few hundred nodes fit.
DEFAULT_INSTANCE_TYPE = "ecs.g7.xlarge"
#: ESSD: the g7 family's system disk category (same page: "supports only ESSDs"... as the nodes' disks).
DISK_TYPE = "cloud_essd"
#: The nodes' image OS (images/alibaba.yaml ``os``): picks the Slurm pin in images/compat.yaml.
DEFAULT_OS = "ubuntu-22.04"
#: The public Ubuntu 22.04 image family (BIOS and UEFI-capable types), looked up for the controller's type.
IMAGE_REGEX = r"^ubuntu_22_04_x64_20G_alibase_[0-9]{8}\.vhd$"


def slurm_controller_plan(spec: ClusterSpec) -> SlurmController | None:
    """The controller of a ``scheduler.kind: slurm`` cluster (``None`` for other kinds)."""
    from provision.planning.slurm import controller_plan

    return controller_plan(spec, DEFAULT_INSTANCE_TYPE, SlurmController, disk_type=DISK_TYPE)  # type: ignore[no-any-return]


def _os(plan: ClusterPlan[AlibabaPlan]) -> str:
    return plan.image.versions.get("os", DEFAULT_OS)


def rendered_files(
    plan: ClusterPlan[AlibabaPlan], controller_addr: str | None, node_addrs: list[str]
) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf, plugstack.conf of the plan with these addresses."""
    from provision.planning.slurm import plan_files

    return plan_files(plan, _os(plan), controller_addr, node_addrs)


def controller_user_data(plan: ClusterPlan[AlibabaPlan]) -> str:
    """The controller's user data (gzip + base64, as the nodes'): the login keys as on the nodes, and no shutdown
    timer: ``auto_release_time`` releases it in the cloud, where a guest shutdown would only stop it."""
    from provision.clouds.alibaba.userdata import MAX_USER_DATA_BYTES
    from provision.planning.bootstrap import gzip_base64
    from provision.planning.slurm import controller_user_data as render
    from provision.planning.slurm import slurm_pins

    text = render(plan, slurm_pins(_os(plan)), login_keys=tuple(plan.access.ssh_public_keys), lifetime=[])
    encoded = gzip_base64(text)
    if len(encoded) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(encoded)} bytes base64, over the ECS limit of {MAX_USER_DATA_BYTES}")
    return encoded


def build_controller(
    plan: ClusterPlan[AlibabaPlan],
    *,
    vswitch_id: Any,
    security_group_id: Any,
    key_name: Any,
    node_ips: pulumi.Output[list[str]],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> dict[str, Any]:
    """Create the controller; returns the ``slurm`` stack output (name, address, instance id, rendered files)."""
    import pulumi
    from pulumi_alicloud import ecs

    from provision.clouds.alibaba.plan import auto_release_time

    extra = plan.extra
    ctl = extra.slurm
    assert ctl is not None  # noqa: S101
    tags = dict(plan.tags)
    image = ecs.get_images_output(
        name_regex=IMAGE_REGEX,
        owners="system",
        most_recent=True,
        instance_type=ctl.instance_type,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    ).images.apply(lambda images: images[0].id)
    vm = ecs.Instance(
        ctl.name,
        instance_name=ctl.name,
        host_name=ctl.name,
        instance_type=ctl.instance_type,
        image_id=image,
        vswitch_id=vswitch_id,
        security_groups=[security_group_id],
        key_name=key_name,
        internet_max_bandwidth_out=0,
        # Pay-as-you-go whatever the nodes pay: auto_release_time needs it (RunInstances AutoReleaseTime).
        instance_charge_type="PostPaid",
        auto_release_time=auto_release_time(plan),
        http_tokens="required" if extra.metadata_tokens else None,
        system_disk_category=ctl.disk_type,
        system_disk_performance_level="PL0",
        system_disk_size=ctl.disk_gib,
        system_disk_encrypted=True,
        system_disk_kms_key_id=extra.kms_key_id,
        user_data=controller_user_data(plan),
        resource_group_id=extra.resource_group_id,
        description=f"provision cluster {plan.name}: Slurm controller",
        tags={**tags, "provision-role": "slurm-controller"},
        volume_tags=tags,
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=depends_on,
            # A one-time image lookup must not replace the controller when a newer image ships.
            ignore_changes=["image_id"],
        ),
    )
    return {
        "controller": ctl.name,
        "address": vm.private_ip,
        "instance_id": vm.id,
        "files": pulumi.Output.all(vm.private_ip, node_ips).apply(
            lambda a: rendered_files(plan, a[0], list(a[1] or []))
        ),
    }

"""Alibaba shared storage: CPFS (general-purpose) or NAS (general-purpose / Extreme) for the nodes.

* NAS: ``nas.FileSystem`` + ``nas.AccessGroup`` (VPC) + ``nas.AccessRule`` (the nodes' vSwitch CIDR,
  read-write, ``no_squash``) + ``nas.MountTarget`` in the nodes' vSwitch, mounted over NFSv3. ``no_squash``
  because the only clients are the cluster's own nodes (the rule admits the vSwitch CIDR and nothing else) and a
  fresh share is root-owned: with ``root_squash`` no node could create the first directory on it.
* CPFS general-purpose: ``nas.FileSystem(file_system_type="cpfs")`` in the nodes' VPC and vSwitch, then the
  free NFS protocol service (``nas.ProtocolService``, spec General) and one export of ``/``
  (``nas.ProtocolMountTarget``), as in the provider's own example.

The GPU nodes never wait for any of these in the graph: they are requested as soon as the network and the lookup
role exist, so an out-of-stock answer (and every failover try) costs no file system creation, and a CPFS that
takes 40 minutes does not hold the nodes back. Each node finds the file system by its description at boot and
looks its NFS domain up (the mount target's, or the CPFS export's, which pulumi-alicloud 4.0 does not return), with a
RAM role trusting ECS (``ram.Role``) whose policy allows only ``nas:DescribeFileSystems`` and
``nas:DescribeProtocolMountTarget`` in the region (``ram.Policy`` + ``ram.RolePolicyAttachment``, fixed at plan
time: :mod:`provision.clouds.alibaba.ramrole`); the shared-mount step then mounts it at every boot. The
``shared_fs`` output keeps a lookup command for people.

``retain_on_delete`` keeps the file system itself when the plan says ``retain``; the RAM role and policy are
always deleted with the stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_alicloud import nas, ram

from provision.clouds.alibaba import ramrole
from provision.clouds.alibaba.network import Network
from provision.clouds.alibaba.plan import AlibabaPlan, Cpfs
from provision.planning.outputs import shared_fs_summary
from provision.planning.plan import ClusterPlan

if TYPE_CHECKING:
    from provision.clouds.volumeref import VolumeRef

CPFS_DOMAIN_VAR = "CPFS_EXPORT_DOMAIN"


@dataclass
class Storage:
    """What the nodes need from the shared filesystem.

    Attributes:
        shared_fs: the ``shared_fs`` output (``Output[dict]``), ``None`` without a shared filesystem.
        role_name: the nodes' RAM role name (``Output[str]``), else ``None``.
        ready: resources the nodes must wait for (the role's policy attachment: RAM only, never the file system).
    """

    shared_fs: Any = None
    role_name: Any = None
    ready: list[pulumi.Resource] = field(default_factory=list)
    fs: Any = None  # the nas.FileSystem (the object-store link of clouds/alibaba/datalink.py attaches to it)
    mount_target_domain: Any = None  # a NAS mount target's domain (``Output[str]``; the ACK volume's server)


def build_storage(
    plan: ClusterPlan[AlibabaPlan],
    net: Network,
    parent: pulumi.Resource,
    volume: VolumeRef | None = None,
    *,
    lookup_role: bool = True,
) -> Storage:
    """Create the shared filesystem and the nodes' lookup role (which does not depend on the file system).

    With an attached ``volume`` (its own stack holds the file system) no file system is created: the cluster gets
    its own way in to the volume's, in its own VPC and vSwitch, created and deleted with the cluster: for NAS an
    access group, rule and mount target (a NAS file system takes mount targets in other VPCs: NAS API
    CreateMountTarget, VpcId), for CPFS an export of the volume's protocol service (CreateProtocolMountTarget:
    "The VPC CIDR block of the protocol service export cannot overlap with the VPC CIDR block of the file
    system"; at most 10 exports per protocol service; one export per directory).

    ``lookup_role=False`` (ACK, whose volume names the mount target's domain itself): no RAM role.
    """
    storage = plan.extra.storage
    if plan.storage is None or storage is None:
        return Storage()
    name, extra = plan.name, plan.extra
    opts = pulumi.ResourceOptions(parent=parent)
    role, attachment = _lookup_role(plan, opts) if lookup_role else (None, None)
    nodes = Storage(None, role.role_name if role else None, [attachment] if attachment else [])
    if volume is not None:
        return _ways_in(plan, net, volume.filesystem_id, volume.network_field, nodes, opts)
    fs = nas.FileSystem(
        f"{name}-fs",
        file_system_type=storage.file_system_type,
        protocol_type=storage.protocol_type,
        storage_type=storage.storage_type,
        capacity=storage.capacity,
        zone_id=plan.zone,
        vpc_id=net.vpc_net.id if isinstance(storage, Cpfs) else None,
        vswitch_id=net.vswitch.id if isinstance(storage, Cpfs) else None,
        encrypt_type=storage.encrypt_type,
        kms_key_id=storage.kms_key_id,
        description=ramrole.fs_description(name),
        resource_group_id=extra.resource_group_id,
        tags=dict(plan.tags),
        opts=pulumi.ResourceOptions(
            parent=parent,
            retain_on_delete=plan.storage.retain,
            # The provider waits 10 minutes for Running by default (resource_alicloud_nas_file_system.go), but a
            # CPFS file system "takes about 20 to 40 minutes to reach the Running state" (NAS API,
            # CreateProtocolMountTarget); NAS is quicker, and the longer limit only matters when it is needed.
            custom_timeouts=pulumi.CustomTimeouts(create="60m", delete="30m"),
        ),
    )
    if not isinstance(storage, Cpfs):
        return _ways_in(plan, net, fs.id, None, nodes, opts)
    assert role is not None  # noqa: S101 - the ACK path refuses CPFS (its nodes look the export's domain up)
    base = Storage(None, nodes.role_name, nodes.ready, fs)
    service = nas.ProtocolService(
        f"{name}-fs-nfs",
        file_system_id=fs.id,
        protocol_type="NFS",
        protocol_spec="General",
        vpc_id=net.vpc_net.id,
        vswitch_id=net.vswitch.id,
        description=f"provision-{name}-nfs",
        # Creating the protocol service takes 5-10 minutes (CreateProtocolService); room to spare.
        opts=pulumi.ResourceOptions(parent=parent, custom_timeouts=pulumi.CustomTimeouts(create="30m")),
    )
    return _export(plan, net, fs.id, service.protocol_service_id, base, opts)


def _export(
    plan: ClusterPlan[AlibabaPlan],
    net: Network,
    fs_id: Any,
    service_id: Any,
    base: Storage,
    opts: pulumi.ResourceOptions,
) -> Storage:
    """The CPFS export of ``/`` in the cluster's vSwitch, and the ``shared_fs`` output with its lookup command."""
    storage, name = plan.extra.storage, plan.name
    assert isinstance(storage, Cpfs)  # noqa: S101
    options = plan.extra.nfs_options
    export = nas.ProtocolMountTarget(
        f"{name}-fs-export",
        file_system_id=fs_id,
        protocol_service_id=service_id,
        path="/",
        vpc_id=net.vpc_net.id,
        vswitch_id=net.vswitch.id,
        access_group_name="DEFAULT_VPC_GROUP_NAME",
        description=ramrole.export_description(name),
        opts=opts,
    )
    placeholder = f"${{{CPFS_DOMAIN_VAR}}}:{storage.export_path}"
    summary = shared_fs_summary(plan, placeholder, "nfs", options)
    shared_fs = pulumi.Output.all(fs_id, export.export_id).apply(
        lambda a: {
            **summary,
            "file_system_id": a[0],
            "export_id": a[1],
            "mounted_at_boot": True,
            "boot_lookup": f"the nodes look the export's domain up at boot (RAM role {storage.lookup_role})",
            "lookup_command": (
                f"export {CPFS_DOMAIN_VAR}=$(aliyun nas DescribeProtocolMountTarget --FileSystemId {a[0]} "
                f"--Filters.1.Key ExportIds --Filters.1.Value {a[1]} "
                "| jq -r '.ProtocolMountTargets[0].ProtocolMountTargetDomain')"
            ),
        }
    )
    return Storage(shared_fs=_volume_mark(plan, shared_fs), role_name=base.role_name, ready=base.ready, fs=base.fs)


def _ways_in(
    plan: ClusterPlan[AlibabaPlan],
    net: Network,
    fs_id: Any,
    volume_field: Any,
    base: Storage,
    opts: pulumi.ResourceOptions,
) -> Storage:
    """The nodes' way in to the file system ``fs_id``: the CPFS export, or the NAS access group, rule and mount target.

    ``volume_field`` reads an attached volume's network outputs (its CPFS protocol service), else ``None``.
    """
    storage, name, extra = plan.extra.storage, plan.name, plan.extra
    assert storage is not None  # noqa: S101
    options = extra.nfs_options
    if isinstance(storage, Cpfs):
        assert volume_field is not None  # noqa: S101  # a cluster-owned CPFS goes through build_storage's service
        return _export(plan, net, fs_id, volume_field("protocol_service_id"), base, opts)

    group = nas.AccessGroup(
        f"{name}-fs-ag",
        access_group_name=f"{name}-nodes",
        access_group_type="Vpc",
        file_system_type=storage.file_system_type,
        description=f"provision-{name}-nodes",
        opts=opts,
    )
    rule = nas.AccessRule(
        f"{name}-fs-rule",
        access_group_name=group.access_group_name,
        file_system_type=storage.file_system_type,
        source_cidr_ip=extra.vswitch_cidr,
        rw_access_type="RDWR",
        user_access_type="no_squash",
        priority=1,
        opts=opts,
    )
    target = nas.MountTarget(
        f"{name}-fs-mt",
        file_system_id=fs_id,
        access_group_name=group.access_group_name,
        network_type="Vpc",
        vpc_id=net.vpc_net.id,
        vswitch_id=net.vswitch.id,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[rule])),
    )
    source = target.mount_target_domain.apply(lambda d: f"{d}:{storage.export_path}")
    shared_fs = pulumi.Output.all(source, fs_id).apply(
        lambda a: {**shared_fs_summary(plan, a[0], "nfs", options), "file_system_id": a[1], "mounted_at_boot": True}
    )
    return Storage(
        shared_fs=_volume_mark(plan, shared_fs),
        role_name=base.role_name,
        ready=base.ready,
        fs=base.fs,
        mount_target_domain=target.mount_target_domain,
    )


def _volume_mark(plan: ClusterPlan[AlibabaPlan], shared_fs: Any) -> Any:
    """The ``shared_fs`` output, naming the attached volume when there is one."""
    volume = plan.storage.volume if plan.storage is not None else None
    return shared_fs if volume is None else shared_fs.apply(lambda d: {**d, "volume": volume, "retain": True})


def _lookup_role(plan: ClusterPlan[AlibabaPlan], opts: pulumi.ResourceOptions) -> tuple[ram.Role, Any]:
    """The nodes' RAM role: trusted by ECS, allowed the two NAS reads of the boot lookup (no file system input)."""
    storage, name = plan.extra.storage, plan.name
    assert storage is not None  # noqa: S101 - the lookup role exists with a shared file system only
    role = ram.Role(
        f"{name}-nodes-role",
        role_name=storage.lookup_role,
        assume_role_policy_document=ramrole.trust_policy(),
        description=f"provision cluster {name}: nodes look up their shared file system's NFS domain at boot",
        # Deleting a role that still has policies attached fails unless forced (ram.Role force); the
        # attachment is deleted first anyway, as it depends on the role.
        force=True,
        tags=dict(plan.tags),
        opts=opts,
    )
    policy = ram.Policy(
        f"{name}-cpfs-lookup-policy",
        policy_name=storage.lookup_policy,
        policy_document=ramrole.lookup_policy(plan.region),
        description=f"provision cluster {name}: find the shared file system and read its NFS domain",
        force=True,
        tags=dict(plan.tags),
        opts=opts,
    )
    attachment = ram.RolePolicyAttachment(
        f"{name}-cpfs-lookup-attach",
        policy_name=policy.policy_name,
        policy_type="Custom",
        role_name=role.role_name,
        opts=opts,
    )
    return role, attachment

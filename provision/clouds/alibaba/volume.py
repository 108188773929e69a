"""Alibaba volume stack (``provision volume create``): NAS or CPFS in a VPC of its own (Pulumi only).

The stack holds a VPC (``network_cidr``), for CPFS a vSwitch in the volume's zone, and the file system, described as
``ramrole.fs_description(<volume>)``: the attaching clusters' nodes find it by that description at boot
(``clouds/alibaba/userdata.py``). VPCs and vSwitches are free (Alibaba Cloud VPC billing: "You are not charged for
VPCs or vSwitches").

* CPFS general-purpose: the file system in the vSwitch, and its free NFS protocol service (``nas.ProtocolService``,
  spec General), which every attaching cluster exports from into its own VPC (``clouds/alibaba/storage.py``;
  CreateProtocolMountTarget: the export VPC must not overlap the file system's).
* NAS (general-purpose, Extreme): the file system only. Each attaching cluster makes its own access group, rule and
  mount target in its own VPC (CreateMountTarget takes any VPC of the region); the volume keeps no mount target of
  its own, since the nodes take the file system's first active mount target at boot (``provision-fs-domain``).

Outputs (:mod:`provision.clouds.volumeref`): ``filesystem_id``, ``filesystem_description``, ``mount_source`` (the
form the nodes mount; the domain is their cluster's export or mount target, looked up at boot) and ``network``
(``vpc_id``, ``cidr``, and for CPFS ``protocol_service_id``: :data:`provision.ops.volume_network.NETWORK_KEYS`).
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_alicloud import nas, vpc

from provision.clouds.alibaba import ramrole
from provision.spec.errors import Problem
from provision.spec.volume import VolumeSpecError

if TYPE_CHECKING:
    from provision.spec.volume import VolumeSpec

#: The vSwitch's prefix in the volume's VPC (as a cluster's nodes vSwitch: ``adapter.VSWITCH_PREFIX``).
VSWITCH_PREFIX = 24
#: Kinds whose file system is zonal and sits in a vSwitch or needs a zone (NAS API CreateFileSystem: ZoneId is
#: required for Extreme NAS and CPFS; CPFS also takes VpcId and VSwitchId).
ZONAL = ("cpfs", "nas-extreme")
LINGJUN_REASON = (
    "CPFS for Lingjun serves Lingjun (eflo) compute, not ECS instances in a VPC, so no cluster of provision could "
    "mount it (clouds/alibaba/adapter.py refuses it for clusters too)"
)


def volume_problems(spec: VolumeSpec) -> list[Problem]:
    """Why the Alibaba volume ``spec`` cannot be created; [] when it can."""
    out = []
    if spec.kind == "cpfs-lingjun":
        out.append(Problem("kind", spec.kind, f"cannot be a volume: {LINGJUN_REASON}", "use kind cpfs or nas-extreme"))
    elif spec.kind in ZONAL and spec.zone is None:
        out.append(
            Problem(
                "zone",
                None,
                f"is required for {spec.kind}: the file system is zonal (NAS API CreateFileSystem, ZoneId)",
                "give the zone of the clusters that will attach it, e.g. zone: cn-hangzhou-i",
            )
        )
    return out


def _file_system_type(kind: str) -> str:
    return {"cpfs": "cpfs", "nas-extreme": "extreme"}.get(kind, "standard")


def build_volume(spec: VolumeSpec, tier: str, tags: dict[str, str]) -> dict[str, Any]:
    """Create the volume's resources in the current Pulumi context; returns the stack outputs.

    Raises:
        VolumeSpecError: the kind cannot be a volume, or a zonal kind has no zone.
    """
    problems = volume_problems(spec)
    if problems:
        raise VolumeSpecError(problems=problems)
    n = f"vol-{spec.name}"
    net = ipaddress.ip_network(spec.network_cidr)
    network = vpc.Network(
        f"{n}-vpc",
        vpc_name=f"{n}-vpc",
        cidr_block=spec.network_cidr,
        description=f"provision volume {spec.name}",
        tags=tags,
    )
    fs_type = _file_system_type(spec.kind)
    cpfs = fs_type == "cpfs"
    vswitch = None
    if cpfs and spec.zone is not None:  # CPFS sits in a vSwitch; NAS takes none (clusters mount it from theirs)
        vswitch = vpc.Switch(
            f"{n}-vsw",
            vswitch_name=f"{n}-fs",
            vpc_id=network.id,
            cidr_block=str(next(net.subnets(new_prefix=max(net.prefixlen, VSWITCH_PREFIX)))),
            zone_id=spec.zone,
            description=f"provision volume {spec.name}: the file system",
            tags=tags,
        )
    fs = nas.FileSystem(
        f"{n}-fs",
        file_system_type=fs_type,
        protocol_type="cpfs" if cpfs else "NFS",
        storage_type=tier,
        # General-purpose NAS is pay-per-use and grows by itself: it takes no capacity (clouds/alibaba/adapter.py).
        capacity=None if fs_type == "standard" else spec.size_gib,
        zone_id=spec.zone,
        vpc_id=network.id if cpfs else None,
        vswitch_id=vswitch.id if cpfs and vswitch is not None else None,
        encrypt_type=None if cpfs else 1,  # 1: NAS-managed key (as a cluster's own NAS)
        description=ramrole.fs_description(spec.name),
        tags=tags,
        # A CPFS "takes about 20 to 40 minutes to reach the Running state" (NAS API, CreateProtocolMountTarget).
        opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="60m", delete="30m")),
    )
    network_out: dict[str, Any] = {"vpc_id": network.id, "cidr": spec.network_cidr}
    export_path = "/" if fs_type == "standard" else "/share"
    if cpfs and vswitch is not None:
        service = nas.ProtocolService(
            f"{n}-fs-nfs",
            file_system_id=fs.id,
            protocol_type="NFS",
            protocol_spec="General",
            vpc_id=network.id,
            vswitch_id=vswitch.id,
            description=f"provision-{n}-nfs",
            # Creating the protocol service takes 5-10 minutes (CreateProtocolService); room to spare.
            opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="30m")),
        )
        network_out["protocol_service_id"] = service.protocol_service_id
    source = "<the attaching cluster's " + ("CPFS export" if cpfs else "mount target") + f" domain>:{export_path}"
    return {
        "mount_source": source,
        "filesystem_id": fs.id,
        "filesystem_description": ramrole.fs_description(spec.name),
        "network": pulumi.Output.all(**network_out),
    }

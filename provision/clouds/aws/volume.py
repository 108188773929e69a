"""AWS volume stack (``provision volume create``): FSx for Lustre in a VPC of its own (Pulumi only).

The stack holds a VPC (``network_cidr``), one subnet in the volume's zone, its route table, the FSx security group
with the Lustre rules among the file servers (FSx validates its groups at CreateFileSystem: FSx for Lustre User
Guide, "File system access control with Amazon VPC"), and the file system. Its outputs are the contract attaching
clusters read through a StackReference (:mod:`provision.clouds.volumeref`): ``mount_source``, ``filesystem_id`` and
``network`` (``vpc_id``, ``cidr``, ``route_table_id``, ``security_group_id``: :mod:`provision.clouds.aws.volumelink`
peers and opens them). No internet gateway or NAT: nothing in the volume's VPC reaches out.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from provision.clouds.aws.network import LUSTRE_PORTS
from provision.clouds.aws.userdata import fsx_source

if TYPE_CHECKING:
    from provision.spec.volume import VolumeSpec


def volume_zone(spec: VolumeSpec) -> str:
    """The volume's availability zone: the spec's, else the region's first (``<region>a``)."""
    return spec.zone or f"{spec.region}a"


def build_volume(spec: VolumeSpec, tier: str, tags: dict[str, str]) -> dict[str, Any]:
    """Create the volume's resources in the current Pulumi context; returns the stack outputs."""
    n = f"vol-{spec.name}"
    zone = volume_zone(spec)
    net = ipaddress.ip_network(spec.network_cidr)
    subnet_cidr = str(next(net.subnets(new_prefix=min(net.prefixlen + 1, 28))))

    def tagged(part: str) -> dict[str, str]:
        return {**tags, "Name": f"{n}-{part}"}

    vpc = aws.ec2.Vpc(
        f"{n}-vpc",
        cidr_block=spec.network_cidr,
        enable_dns_support=True,
        enable_dns_hostnames=True,
        tags=tagged("vpc"),
    )
    subnet = aws.ec2.Subnet(
        f"{n}-subnet",
        vpc_id=vpc.id,
        cidr_block=subnet_cidr,
        availability_zone=zone,
        map_public_ip_on_launch=False,
        tags=tagged("subnet"),
    )
    table = aws.ec2.RouteTable(f"{n}-rt", vpc_id=vpc.id, tags=tagged("rt"))
    aws.ec2.RouteTableAssociation(f"{n}-rta", subnet_id=subnet.id, route_table_id=table.id)
    group = aws.ec2.SecurityGroup(
        f"{n}-fsx-sg",
        vpc_id=vpc.id,
        description=f"provision volume {spec.name}: FSx for Lustre; clusters add their own rules",
        tags=tagged("fsx-sg"),
    )
    rules = []
    for lo, hi in LUSTRE_PORTS:
        for kind in ("in", "out"):
            cls = aws.vpc.SecurityGroupIngressRule if kind == "in" else aws.vpc.SecurityGroupEgressRule
            rules.append(
                cls(
                    f"{n}-fsx-{kind}-self-{lo}",
                    security_group_id=group.id,
                    ip_protocol="tcp",
                    from_port=lo,
                    to_port=hi,
                    referenced_security_group_id=group.id,
                    description=f"Lustre {lo}-{hi} among the file servers",
                    tags=tagged(f"fsx-{kind}-self-{lo}"),
                )
            )
    persistent = tier.startswith("PERSISTENT")
    fs = aws.fsx.LustreFileSystem(
        f"{n}-fsx",
        subnet_ids=subnet.id,
        security_group_ids=[group.id],
        storage_capacity=spec.size_gib,
        storage_type="SSD",
        deployment_type=tier,
        per_unit_storage_throughput=spec.throughput_mbps_per_tib if persistent else None,
        file_system_type_version="2.15",
        metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC")
        if tier == "PERSISTENT_2"
        else None,
        skip_final_backup=True if persistent else None,
        tags=tagged("fsx"),
        opts=pulumi.ResourceOptions(
            depends_on=rules, custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m")
        ),
    )
    return {
        "mount_source": pulumi.Output.all(fs.dns_name, fs.mount_name).apply(lambda a: fsx_source(a[0], a[1])),
        "filesystem_id": fs.id,
        "zone": zone,
        "network": pulumi.Output.all(vpc.id, table.id, group.id).apply(
            lambda a: {
                "vpc_id": a[0],
                "cidr": spec.network_cidr,
                "route_table_id": a[1],
                "security_group_id": a[2],
            }
        ),
    }


#: The resources a cluster keeps with a retained FSx (``retain_on_delete`` in ``clouds/aws/network.py`` and
#: ``storage.py``), which its volume stack adopts, by type token.
#: (class, the part of its logical name in the volume stack, as :func:`build_volume` names it).
ADOPTED: dict[str, tuple[Any, str]] = {
    "aws:ec2/vpc:Vpc": (aws.ec2.Vpc, "vpc"),
    "aws:ec2/subnet:Subnet": (aws.ec2.Subnet, "subnet"),
    "aws:ec2/securityGroup:SecurityGroup": (aws.ec2.SecurityGroup, "fsx-sg"),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (aws.fsx.LustreFileSystem, "fsx"),
}


def adopt_volume(name: str, kept: list[dict[str, Any]]) -> dict[str, Any]:
    """The volume stack of a cluster's retained FSx: the kept VPC, node subnet, FSx group and file system imported
    as they exist (``import_``, their recorded inputs declared), plus what the cluster's ``down`` deleted and the
    volume needs: a route table for the subnet and the Lustre rules among the file servers (as
    :func:`build_volume` makes them). Returns the same outputs as :func:`build_volume`."""
    from provision.clouds.adopt import adopt_resources

    n = f"vol-{name}"
    made = adopt_resources(n, kept, ADOPTED)
    vpc, subnet = made["aws:ec2/vpc:Vpc"], made["aws:ec2/subnet:Subnet"]
    group, fs = made["aws:ec2/securityGroup:SecurityGroup"], made["aws:fsx/lustreFileSystem:LustreFileSystem"]
    fs_inputs = next(k["inputs"] for k in kept if k["type"] == "aws:fsx/lustreFileSystem:LustreFileSystem")
    vpc_inputs = next(k["inputs"] for k in kept if k["type"] == "aws:ec2/vpc:Vpc")
    tags = {k: v for k, v in (fs_inputs.get("tags") or {}).items() if k != "Name"}
    table = aws.ec2.RouteTable(f"{n}-rt", vpc_id=vpc.id, tags={**tags, "Name": f"{n}-rt"})
    aws.ec2.RouteTableAssociation(f"{n}-rta", subnet_id=subnet.id, route_table_id=table.id)
    # The cluster's rules on the FSx group went with it; FSx servers talk to each other on the Lustre ports (all
    # traffic when EFA-enabled): FSx for Lustre User Guide, "File system access control with Amazon VPC".
    ports = [(-1, -1)] if fs_inputs.get("efaEnabled") else list(LUSTRE_PORTS)
    for lo, hi in ports:
        for kind in ("in", "out"):
            cls = aws.vpc.SecurityGroupIngressRule if kind == "in" else aws.vpc.SecurityGroupEgressRule
            port: dict[str, Any] = (
                {"ip_protocol": "-1"} if lo < 0 else {"ip_protocol": "tcp", "from_port": lo, "to_port": hi}
            )
            suffix = "all" if lo < 0 else str(lo)
            cls(
                f"{n}-fsx-{kind}-self-{suffix}",
                security_group_id=group.id,
                referenced_security_group_id=group.id,
                description="Lustre among the file servers",
                tags={**tags, "Name": f"{n}-fsx-{kind}-self-{suffix}"},
                **port,
            )
    return {
        "mount_source": pulumi.Output.all(fs.dns_name, fs.mount_name).apply(lambda a: fsx_source(a[0], a[1])),
        "filesystem_id": fs.id,
        "zone": subnet.availability_zone,
        "network": pulumi.Output.all(vpc.id, table.id, group.id).apply(
            lambda a: {
                "vpc_id": a[0],
                "cidr": vpc_inputs.get("cidrBlock"),
                "route_table_id": a[1],
                "security_group_id": a[2],
            }
        ),
    }

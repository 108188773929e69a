"""Hand-written Pulumi program with the resources provision registers for an Alibaba cluster (no provision code).

``program(nodes)`` registers what ``spec(nodes)`` makes provision register: VPC, vSwitch, security group +
one SSH rule, Enhanced NAT gateway + EIP + association + SNAT entry, one image lookup (no key pair: the spec's
ed25519 key cannot be one, so provision creates none), one
LowLatency deployment set per 20 nodes, one ``ecs.Instance`` per node (primary ERI + inline secondary ERI,
auto release, encrypted ESSD, user data) and general-purpose NAS with its access group, rule and mount
target. Used by benchmarks/preview_scale.py.
"""

from __future__ import annotations

import base64
import math
from typing import Any

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
NAME = "bench"
ZONE = "cn-hangzhou-i"


def spec(nodes: int) -> dict[str, Any]:
    """The provision spec of the same cluster."""
    return {
        "name": NAME,
        "cloud": "alibaba",
        "region": "cn-hangzhou",
        "zone": ZONE,
        "instance_type": "ecs.ebmgn8v.48xlarge",
        "nodes": nodes,
        "fabric": "erdma",
        "storage": {"shared": {"kind": "nas", "tier": "Performance"}},
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "lifetime": {"ttl": "6h"},
        "owner": "bench",
        "tags": {"team": "bench"},
    }


def program(nodes: int) -> None:
    """Register the cluster's resources directly with pulumi_alicloud."""
    import pulumi
    from pulumi_alicloud import ecs, nas, vpc

    tags = {"team": "bench", "provision-cluster": NAME, "provision-owner": "bench"}
    network = vpc.Network(f"{NAME}-vpc", vpc_name=f"{NAME}-vpc", cidr_block="10.0.0.0/16", tags=tags)
    vswitch = vpc.Switch(
        f"{NAME}-vsw",
        vpc_id=network.id,
        cidr_block="10.0.0.0/18",
        zone_id=ZONE,
        vswitch_name=f"{NAME}-nodes",
        tags=tags,
    )
    sg = ecs.SecurityGroup(f"{NAME}-sg", vpc_id=network.id, inner_access_policy="Accept", tags=tags)
    ecs.SecurityGroupRule(
        f"{NAME}-ssh",
        security_group_id=sg.id,
        type="ingress",
        ip_protocol="tcp",
        port_range="22/22",
        nic_type="intranet",
        cidr_ip="203.0.113.0/24",
    )
    nat = vpc.NatGateway(
        f"{NAME}-nat", vpc_id=network.id, vswitch_id=vswitch.id, nat_type="Enhanced", network_type="internet", tags=tags
    )
    eip = ecs.EipAddress(f"{NAME}-eip", bandwidth="100", internet_charge_type="PayByTraffic", tags=tags)
    assoc = ecs.EipAssociation(f"{NAME}-eip-nat", allocation_id=eip.id, instance_id=nat.id, instance_type="Nat")
    snat = vpc.SnatEntry(
        f"{NAME}-snat",
        snat_table_id=nat.snat_table_ids,
        source_vswitch_id=vswitch.id,
        snat_ip=eip.ip_address,
        opts=pulumi.ResourceOptions(depends_on=[assoc]),
    )
    fs = nas.FileSystem(
        f"{NAME}-fs",
        file_system_type="standard",
        protocol_type="NFS",
        storage_type="Performance",
        zone_id=ZONE,
        tags=tags,
    )
    group = nas.AccessGroup(f"{NAME}-fs-ag", access_group_name=f"{NAME}-nodes", access_group_type="Vpc")
    rule = nas.AccessRule(
        f"{NAME}-fs-rule",
        access_group_name=group.access_group_name,
        source_cidr_ip="10.0.0.0/18",
        rw_access_type="RDWR",
        user_access_type="no_squash",
    )
    target = nas.MountTarget(
        f"{NAME}-fs-mt",
        file_system_id=fs.id,
        access_group_name=group.access_group_name,
        vswitch_id=vswitch.id,
        opts=pulumi.ResourceOptions(depends_on=[rule]),
    )
    image = ecs.get_images_output(
        name_regex=r"^ubuntu_22_04_uefi_x64_20G_alibase_[0-9]{8}\.vhd$",
        owners="system",
        most_recent=True,
        instance_type="ecs.ebmgn8v.48xlarge",
    ).images.apply(lambda images: images[0].id)
    sets = [ecs.EcsDeploymentSet(f"{NAME}-ds-{i}", strategy="LowLatency") for i in range(math.ceil(nodes / 20))]
    user_data = target.mount_target_domain.apply(
        lambda domain: base64.b64encode(f"#!/bin/bash\nmount {domain}:/ /shared\n".ljust(7000).encode()).decode()
    )
    for rank in range(nodes):
        ecs.Instance(
            f"{NAME}-node-{rank}",
            instance_name=f"{NAME}-{rank}",
            instance_type="ecs.ebmgn8v.48xlarge",
            image_id=image,
            vswitch_id=vswitch.id,
            security_groups=[sg.id],
            internet_max_bandwidth_out=0,
            instance_charge_type="PostPaid",
            auto_release_time="2030-01-01T00:00:00Z",
            deployment_set_id=sets[rank // 20].id,
            network_interface_traffic_mode="HighPerformance",
            network_card_index=0,
            network_interfaces=ecs.InstanceNetworkInterfacesArgs(
                network_card_index=1,
                network_interface_traffic_mode="HighPerformance",
                vswitch_id=vswitch.id,
                security_group_ids=[sg.id],
            ),
            enable_jumbo_frame=True,
            system_disk_category="cloud_essd",
            system_disk_size=200,
            system_disk_encrypted=True,
            user_data=user_data,
            tags=tags,
            volume_tags=tags,
            opts=pulumi.ResourceOptions(depends_on=[snat], ignore_changes=["image_id"]),
        )

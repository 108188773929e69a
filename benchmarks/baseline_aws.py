"""Hand-written Pulumi program with the resources provision registers for an AWS cluster (no provision code).

``program(nodes)`` registers what ``spec(nodes)`` makes provision register: a VPC with a private node
subnet, a public subnet, internet gateway, NAT gateway + EIP, two route tables with their routes and
associations and an S3 gateway endpoint; the EFA and FSx security groups with standalone rules; an FSx
for Lustre PERSISTENT_2 file system with EFA; the node role, SSM policy attachment, instance profile and
key pair; a cluster placement group; one SSM image lookup; ONE launch template with the p5 EFA layout
(33 interfaces); and the gang: one instant EC2 Fleet up to 1,000 nodes (its MinTargetCapacity limit),
an Auto Scaling group above that; then the DescribeInstances reads for the hostfile (one per 197 fleet
instances: EC2 takes at most 200 filter values per call). The resource count
does not grow with the node count. Used by benchmarks/preview_scale.py.
"""

from __future__ import annotations

import base64
from typing import Any

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
NAME = "bench"
REGION = "us-east-1"
ZONE = "us-east-1a"
FLEET_MAX = 1000
LOOKUP = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"


def spec(nodes: int) -> dict[str, Any]:
    """The provision spec of the same cluster."""
    return {
        "name": NAME,
        "cloud": "aws",
        "region": REGION,
        "zone": ZONE,
        "instance_type": "p5.48xlarge",
        "nodes": nodes,
        "fabric": "efa",
        "storage": {
            "shared": {"kind": "fsx-lustre", "tier": "PERSISTENT_2", "size_gib": 19200, "throughput_mbps_per_tib": 250}
        },
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "lifetime": {"ttl": "6h"},
        "owner": "bench",
        "tags": {"team": "bench"},
        "aws": {"allocation": "fleet" if nodes <= FLEET_MAX else "asg"},
    }


def program(nodes: int) -> None:
    """Register the cluster's resources directly with pulumi_aws."""
    import pulumi
    import pulumi_aws as aws
    from pulumi_aws import ec2, vpc

    tags = {"team": "bench", "provision-cluster": NAME, "provision-owner": "bench"}
    net = ec2.Vpc(
        f"{NAME}-vpc", cidr_block="10.0.0.0/16", enable_dns_hostnames=True, enable_dns_support=True, tags=tags
    )
    private = ec2.Subnet(f"{NAME}-private", vpc_id=net.id, cidr_block="10.0.0.0/18", availability_zone=ZONE, tags=tags)
    public = ec2.Subnet(f"{NAME}-public", vpc_id=net.id, cidr_block="10.0.64.0/24", availability_zone=ZONE, tags=tags)
    igw = ec2.InternetGateway(f"{NAME}-igw", vpc_id=net.id, tags=tags)
    nat_ip = ec2.Eip(f"{NAME}-nat-ip", domain="vpc", tags=tags)
    nat = ec2.NatGateway(f"{NAME}-nat", allocation_id=nat_ip.allocation_id, subnet_id=public.id, tags=tags)
    public_rt = ec2.RouteTable(f"{NAME}-public-rt", vpc_id=net.id, tags=tags)
    ec2.Route(
        f"{NAME}-public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0", gateway_id=igw.id
    )
    ec2.RouteTableAssociation(f"{NAME}-public-rta", subnet_id=public.id, route_table_id=public_rt.id)
    private_rt = ec2.RouteTable(f"{NAME}-private-rt", vpc_id=net.id, tags=tags)
    ec2.Route(
        f"{NAME}-private-default",
        route_table_id=private_rt.id,
        destination_cidr_block="0.0.0.0/0",
        nat_gateway_id=nat.id,
    )
    ec2.RouteTableAssociation(f"{NAME}-private-rta", subnet_id=private.id, route_table_id=private_rt.id)
    ec2.VpcEndpoint(
        f"{NAME}-s3",
        vpc_id=net.id,
        service_name=f"com.amazonaws.{REGION}.s3",
        route_table_ids=[private_rt.id],
        tags=tags,
    )
    nodes_sg = ec2.SecurityGroup(f"{NAME}-nodes", vpc_id=net.id, description="nodes", tags=tags)
    fsx_sg = ec2.SecurityGroup(f"{NAME}-fsx-sg", vpc_id=net.id, description="fsx", tags=tags)
    rules = [
        ("in", "nodes-in-self", nodes_sg, nodes_sg, None),
        ("out", "nodes-out-self", nodes_sg, nodes_sg, None),
        ("out", "nodes-out-world", nodes_sg, None, "0.0.0.0/0"),
        ("in", "fsx-in-self", fsx_sg, fsx_sg, None),
        ("out", "fsx-out-self", fsx_sg, fsx_sg, None),
        ("in", "fsx-in-nodes", fsx_sg, nodes_sg, None),
        ("out", "fsx-out-nodes", fsx_sg, nodes_sg, None),
        ("in", "nodes-in-fsx", nodes_sg, fsx_sg, None),
        ("out", "nodes-out-fsx", nodes_sg, fsx_sg, None),
    ]
    for kind, name, group, peer, cidr in rules:
        cls = vpc.SecurityGroupIngressRule if kind == "in" else vpc.SecurityGroupEgressRule
        cls(
            f"{NAME}-{name}",
            security_group_id=group.id,
            ip_protocol="-1",
            referenced_security_group_id=peer.id if peer else None,
            cidr_ipv4=cidr,
            tags=tags,
        )
    vpc.SecurityGroupIngressRule(
        f"{NAME}-nodes-ssh-0",
        security_group_id=nodes_sg.id,
        ip_protocol="tcp",
        from_port=22,
        to_port=22,
        cidr_ipv4="203.0.113.0/24",
        tags=tags,
    )
    fs = aws.fsx.LustreFileSystem(
        f"{NAME}-fsx",
        subnet_ids=private.id,
        security_group_ids=[fsx_sg.id],
        storage_capacity=19200,
        deployment_type="PERSISTENT_2",
        per_unit_storage_throughput=250,
        file_system_type_version="2.15",
        metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC"),
        efa_enabled=True,
        tags=tags,
    )
    role = aws.iam.Role(
        f"{NAME}-node",
        assume_role_policy='{"Statement":[{"Action":"sts:AssumeRole","Effect":"Allow",'
        '"Principal":{"Service":"ec2.amazonaws.com"}}],"Version":"2012-10-17"}',
        tags=tags,
    )
    aws.iam.RolePolicyAttachment(
        f"{NAME}-node-ssm", role=role.name, policy_arn="arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    )
    profile = aws.iam.InstanceProfile(f"{NAME}-node", role=role.name, tags=tags)
    key = ec2.KeyPair(f"{NAME}-key", public_key=KEY, tags=tags)
    pg = ec2.PlacementGroup(f"{NAME}-pg", strategy="cluster", tags=tags)
    ami = aws.ssm.get_parameter_output(name=LOOKUP).value
    nics = [(0, 0, "interface"), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 32)]
    user_data = pulumi.Output.all(fs.dns_name, fs.mount_name).apply(
        lambda a: base64.b64encode(f"#!/bin/bash\nmount -t lustre {a[0]}@tcp:/{a[1]} /shared\n".encode()).decode()
    )
    lt = ec2.LaunchTemplate(
        f"{NAME}-nodes",
        image_id=ami,
        instance_type="p5.48xlarge",
        key_name=key.key_name,
        iam_instance_profile=ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
        placement=ec2.LaunchTemplatePlacementArgs(group_name=pg.name),
        network_interfaces=[
            ec2.LaunchTemplateNetworkInterfaceArgs(
                network_card_index=card,
                device_index=dev,
                interface_type=kind,
                subnet_id=private.id,
                security_groups=[nodes_sg.id],
                delete_on_termination="true",
            )
            for card, dev, kind in nics
        ],
        metadata_options=ec2.LaunchTemplateMetadataOptionsArgs(http_tokens="required", http_put_response_hop_limit=1),
        block_device_mappings=[
            ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/sda1",
                ebs=ec2.LaunchTemplateBlockDeviceMappingEbsArgs(volume_size=200, volume_type="gp3", encrypted="true"),
            )
        ],
        user_data=user_data,
        instance_initiated_shutdown_behavior="terminate",
        tag_specifications=[
            ec2.LaunchTemplateTagSpecificationArgs(resource_type=k, tags=tags)
            for k in ("instance", "volume", "network-interface")
        ],
        tags=tags,
    )
    if nodes <= FLEET_MAX:
        fleet = ec2.Fleet(
            f"{NAME}-fleet",
            type="instant",
            launch_template_configs=[
                ec2.FleetLaunchTemplateConfigArgs(
                    launch_template_specification=ec2.FleetLaunchTemplateConfigLaunchTemplateSpecificationArgs(
                        launch_template_id=lt.id, version=lt.latest_version.apply(str)
                    )
                )
            ],
            target_capacity_specification=ec2.FleetTargetCapacitySpecificationArgs(
                default_target_capacity_type="on-demand", total_target_capacity=nodes
            ),
            on_demand_options=ec2.FleetOnDemandOptionsArgs(
                min_target_capacity=nodes, single_availability_zone=True, single_instance_type=True
            ),
            terminate_instances=True,
            tags=tags,
        )
        ids = fleet.fleet_instance_sets.apply(lambda sets: sorted(i for s in sets for i in s.instance_ids))

        def lookup(ids: list[str]) -> Any:
            # DescribeInstances takes at most 200 filter values per call.
            return pulumi.Output.all(
                *[
                    ec2.get_instances_output(
                        filters=[ec2.GetInstancesFilterArgs(name="instance-id", values=ids[i : i + 197])],
                        instance_tags={"provision-cluster": NAME},
                        instance_state_names=["pending", "running"],
                    ).private_ips
                    for i in range(0, len(ids), 197)
                ]
            )

        pulumi.export("hosts", ids.apply(lookup).apply(lambda parts: [ip for p in parts for ip in p]))
        return
    else:
        group = aws.autoscaling.Group(
            f"{NAME}-asg",
            min_size=nodes,
            max_size=nodes,
            desired_capacity=nodes,
            vpc_zone_identifiers=[private.id],
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=lt.id, version=lt.latest_version.apply(str)),
            suspended_processes=["ReplaceUnhealthy", "AZRebalance", "HealthCheck"],
        )
        aws.autoscaling.Schedule(
            f"{NAME}-expire",
            autoscaling_group_name=group.name,
            scheduled_action_name=f"{NAME}-expire",
            start_time="2030-01-01T00:00:00Z",
            min_size=0,
            max_size=0,
            desired_capacity=0,
        )
        found = ec2.get_instances_output(
            instance_tags=group.name.apply(lambda n: {"aws:autoscaling:groupName": n}),
            instance_state_names=["pending", "running"],
        )
    pulumi.export("hosts", found.private_ips)

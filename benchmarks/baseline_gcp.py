"""Hand-written Pulumi program with the resources provision registers for a GCP cluster (no provision code).

``program(nodes)`` registers what ``spec(nodes)`` makes provision register for ``nodes`` x a3-megagpu-8g:
the host VPC + 8 GPU VPCs (one subnet and one internal firewall each), the SSH rule, Cloud Router + NAT,
the node service account + 2 role bindings, a HIGH_THROUGHPUT workload policy, private services access
(global address + connection + Lustre firewall), Managed Lustre, ONE regional instance template with
9 gVNICs and ONE zonal MIG at target size ``nodes``; then the same invokes for the node IPs (one
getInstanceGroup, one getInstance per node). Used by benchmarks/preview_scale.py.
"""

from __future__ import annotations

from typing import Any

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
NAME = "bench"
PROJECT = "bench-project"
REGION, ZONE = "us-central1", "us-central1-a"
IMAGE = "projects/ubuntu-os-accelerator-images/global/images/ubuntu-accelerator-2404-amd64-with-nvidia-580-v20260522"


def spec(nodes: int) -> dict[str, Any]:
    """The provision spec of the same cluster."""
    return {
        "name": NAME,
        "cloud": "gcp",
        "region": REGION,
        "zone": ZONE,
        "instance_type": "a3-megagpu-8g",
        "nodes": nodes,
        "storage": {"shared": {"kind": "managed-lustre", "size_gib": 36000, "throughput_mbps_per_tib": 500}},
        "access": {"ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "lifetime": {"ttl": "6h"},
        "owner": "bench",
        "tags": {"team": "bench"},
        "gcp": {"project": PROJECT},
    }


def program(nodes: int) -> None:
    """Register the cluster's resources directly with pulumi_gcp."""
    import pulumi
    from pulumi_gcp import compute, lustre, projects, serviceaccount, servicenetworking

    labels = {"team": "bench", "provision-cluster": NAME, "provision-owner": "bench"}
    vpcs, subnets = [], []
    for i in range(9):
        key = "net-0" if i == 0 else f"gpunet-{i - 1}"
        cidr = "10.0.0.0/20" if i == 0 else f"10.128.{(i - 1) * 16}.0/20"
        vpc = compute.Network(f"{NAME}-{key}", auto_create_subnetworks=False, mtu=8244, project=PROJECT)
        sub = compute.Subnetwork(
            f"{NAME}-{'subnet-0' if i == 0 else f'gpusubnet-{i - 1}'}",
            network=vpc.id,
            region=REGION,
            ip_cidr_range=cidr,
            private_ip_google_access=True,
            project=PROJECT,
        )
        compute.Firewall(
            f"{NAME}-{key}-internal",
            network=vpc.self_link,
            allows=[compute.FirewallAllowArgs(protocol="all")],
            source_ranges=[cidr],
            project=PROJECT,
        )
        vpcs.append(vpc)
        subnets.append(sub)
    host = vpcs[0]
    compute.Firewall(
        f"{NAME}-net-0-ssh",
        network=host.self_link,
        allows=[compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
        source_ranges=["203.0.113.0/24"],
        project=PROJECT,
    )
    router = compute.Router(f"{NAME}-net-0-router", network=host.id, region=REGION, project=PROJECT)
    compute.RouterNat(
        f"{NAME}-net-0-nat",
        router=router.name,
        region=REGION,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[compute.RouterNatSubnetworkArgs(name=subnets[0].id, source_ip_ranges_to_nats=["ALL_IP_RANGES"])],
        project=PROJECT,
    )
    sa = serviceaccount.Account(f"{NAME}-nodes", account_id=f"{NAME}-nodes", project=PROJECT)
    for role in ("logging.logWriter", "monitoring.metricWriter"):
        projects.IAMMember(f"{NAME}-nodes-{role.lower()}", project=PROJECT, role=f"roles/{role}", member=sa.member)
    policy = compute.ResourcePolicy(
        f"{NAME}-workload",
        region=REGION,
        workload_policy=compute.ResourcePolicyWorkloadPolicyArgs(type="HIGH_THROUGHPUT"),
        project=PROJECT,
    )
    address = compute.GlobalAddress(
        f"{NAME}-psa-range",
        purpose="VPC_PEERING",
        address_type="INTERNAL",
        prefix_length=20,
        network=host.id,
        labels=labels,
        project=PROJECT,
    )
    conn = servicenetworking.Connection(
        f"{NAME}-psa",
        network=host.id,
        service="servicenetworking.googleapis.com",
        reserved_peering_ranges=[address.name],
    )
    compute.Firewall(
        f"{NAME}-net-0-storage",
        network=host.self_link,
        allows=[compute.FirewallAllowArgs(protocol="tcp", ports=["988", "6988"])],
        source_ranges=[pulumi.Output.concat(address.address, "/20")],
        project=PROJECT,
    )
    fs = lustre.Instance(
        f"{NAME}-lustre",
        instance_id=f"{NAME}-lustre",
        location=ZONE,
        filesystem=NAME,
        capacity_gib="36000",
        per_unit_storage_throughput="500",
        network=host.id,
        labels=labels,
        project=PROJECT,
        opts=pulumi.ResourceOptions(depends_on=[conn]),
    )
    template = compute.RegionInstanceTemplate(
        f"{NAME}-template",
        region=REGION,
        machine_type="a3-megagpu-8g",
        disks=[
            compute.RegionInstanceTemplateDiskArgs(boot=True, source_image=IMAGE, disk_type="pd-ssd", disk_size_gb=200)
        ],
        network_interfaces=[
            compute.RegionInstanceTemplateNetworkInterfaceArgs(
                network=v.self_link, subnetwork=s.self_link, nic_type="GVNIC"
            )
            for v, s in zip(vpcs, subnets, strict=True)
        ],
        scheduling=compute.RegionInstanceTemplateSchedulingArgs(
            provisioning_model="STANDARD",
            on_host_maintenance="TERMINATE",
            instance_termination_action="DELETE",
            termination_time="2030-01-01T00:00:00Z",
        ),
        service_account=compute.RegionInstanceTemplateServiceAccountArgs(
            email=sa.email, scopes=["https://www.googleapis.com/auth/logging.write"]
        ),
        metadata={
            "enable-oslogin": "TRUE",
            "block-project-ssh-keys": "TRUE",
            "user-data": fs.mount_point.apply(lambda m: f"#!/bin/bash\necho {m}"),
        },
        labels=labels,
        project=PROJECT,
    )
    group = compute.InstanceGroupManager(
        f"{NAME}-nodes",
        base_instance_name=NAME,
        zone=ZONE,
        versions=[compute.InstanceGroupManagerVersionArgs(name="nodes", instance_template=template.self_link)],
        target_size=nodes,
        resource_policies=compute.InstanceGroupManagerResourcePoliciesArgs(workload_policy=policy.self_link),
        wait_for_instances=True,
        project=PROJECT,
    )
    invoke = pulumi.InvokeOutputOptions(depends_on=[group])
    members = compute.get_instance_group_output(self_link=group.instance_group, zone=ZONE, opts=invoke)
    ips = members.instances.apply(
        lambda links: pulumi.Output.all(
            *[
                compute.get_instance_output(self_link=link, opts=invoke).network_interfaces.apply(
                    lambda n: n[0].network_ip
                )
                for link in sorted(links)
            ]
        )
    )
    pulumi.export("hosts", ips)

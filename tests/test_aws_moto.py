"""The boto3 side the AWS adapter and the reaper rely on, against moto (no network, no credentials).

moto does not model EFA semantics, placement groups or capacity reservations (see
/work/shared/research/moto.md), so these tests check only what it models faithfully: instance-type
facts, launch-template data round trips, tag-scoped instance lookup and FSx create/describe.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from provision.catalog import load_catalog
from provision.clouds.aws.adapter import efa_interfaces

REGION = "us-east-1"
TYPES = ("p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "p4de.24xlarge")


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    """One mocked account for the module (moto start-up is the slow part); tests tag what they create."""
    # moto first: it sets and later restores fake keys; the MonkeyPatch inside it restores its own changes first.
    with mock_aws(), pytest.MonkeyPatch.context() as mp:
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN"):
            mp.setenv(var, "testing")
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/18", AvailabilityZone="us-east-1a")["Subnet"]
        yield {"ec2": ec2, "fsx": boto3.client("fsx", region_name=REGION), "subnet": subnet["SubnetId"]}


@pytest.mark.parametrize("instance_type", TYPES)
def test_catalog_efa_counts_match_ec2(aws: dict[str, Any], instance_type: str) -> None:
    info = aws["ec2"].describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"][0]["NetworkInfo"]
    offer = load_catalog().instance("aws", instance_type)
    assert offer is not None
    assert info["EfaInfo"]["MaximumEfaInterfaces"] == offer.fabric_interfaces
    assert info["MaximumNetworkCards"] == offer.network_cards
    # The layout puts an EFA-only interface on every card (two on card 0), so each card must accept
    # efa-only interfaces and card 0 must take two interfaces.
    cards = {c["NetworkCardIndex"]: c for c in info["NetworkCards"]}
    layout = efa_interfaces("efa", offer.fabric_interfaces, offer.network_cards)
    for nic in layout:
        assert nic.type in cards[nic.card]["InterfaceTypes"]
    assert cards[0]["MaximumNetworkInterfaces"] >= 2


def test_launch_template_round_trips_the_efa_layout(aws: dict[str, Any]) -> None:
    offer = load_catalog().instance("aws", "p5.48xlarge")
    assert offer is not None
    layout = efa_interfaces("efa", offer.fabric_interfaces, offer.network_cards)
    nics = [
        {"NetworkCardIndex": n.card, "DeviceIndex": n.device, "InterfaceType": n.type,
         "SubnetId": aws["subnet"], "DeleteOnTermination": True}
        for n in layout
    ]  # fmt: skip
    lt = aws["ec2"].create_launch_template(
        LaunchTemplateName="t1-nodes",
        LaunchTemplateData={
            "InstanceType": "p5.48xlarge",
            "NetworkInterfaces": nics,
            "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
        },
    )["LaunchTemplate"]
    data = aws["ec2"].describe_launch_template_versions(LaunchTemplateId=lt["LaunchTemplateId"])[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    got = [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in data["NetworkInterfaces"]]
    assert len(got) == 33
    assert got[:2] == [(0, 0, "interface"), (0, 1, "efa-only")]
    assert data["MetadataOptions"]["HttpTokens"] == "required"


def test_tag_lookup_finds_only_the_clusters_live_nodes(aws: dict[str, Any]) -> None:
    ec2 = aws["ec2"]

    def launch(cluster: str, count: int) -> list[str]:
        tags = [
            {"Key": "provision-cluster", "Value": cluster},
            {"Key": "provision-expires-at", "Value": "20261130t0000z"},
        ]
        out = ec2.run_instances(
            ImageId="ami-12c6146b", InstanceType="p5.48xlarge", MinCount=count, MaxCount=count,
            SubnetId=aws["subnet"], TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )  # fmt: skip
        return [i["InstanceId"] for i in out["Instances"]]

    ours = launch("llm-train", 3)
    launch("someone-else", 2)
    ec2.terminate_instances(InstanceIds=[ours[0]])
    found = ec2.describe_instances(
        Filters=[
            {"Name": "tag:provision-cluster", "Values": ["llm-train"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )
    ids = sorted(i["InstanceId"] for r in found["Reservations"] for i in r["Instances"])
    assert ids == sorted(ours[1:])
    ips = [i["PrivateIpAddress"] for r in found["Reservations"] for i in r["Instances"]]
    assert all(ip.startswith("10.0.") for ip in ips)


def test_fsx_persistent_2_create_and_describe(aws: dict[str, Any]) -> None:
    created = aws["fsx"].create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=19200,
        StorageType="SSD",
        SubnetIds=[aws["subnet"]],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250},
        Tags=[{"Key": "provision-cluster", "Value": "llm-train"}],
    )["FileSystem"]
    (fs,) = aws["fsx"].describe_file_systems(FileSystemIds=[created["FileSystemId"]])["FileSystems"]
    assert fs["FileSystemType"] == "LUSTRE" and fs["StorageCapacity"] == 19200
    assert fs["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    assert fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 250
    assert {"Key": "provision-cluster", "Value": "llm-train"} in fs["Tags"]

"""AWS adapter, build half: the Pulumi resource graph under the mocked cloud, and the golden stacks."""

from __future__ import annotations

import base64
import gzip
import importlib
import inspect
import ipaddress
import json
from typing import Any

import pytest
from conftest import assert_golden, golden_graph, preview, shipped_preview
from test_aws_plan import spec

from provision.engine import mockrun as run_module
from provision.spec.errors import SpecError

LT = "aws:ec2/launchTemplate:LaunchTemplate"
FLEET = "aws:ec2/fleet:Fleet"
ASG = "aws:autoscaling/group:Group"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
PG = "aws:ec2/placementGroup:PlacementGroup"
EIP = "aws:ec2/eip:Eip"
STACKS = ("aws-p5-64", "aws-p5-16", "aws-p5-ci", "aws-p5-16-slurm")


@pytest.fixture(scope="module")
def p5_64() -> Any:
    return shipped_preview("aws-p5-64")


def by_name(result: Any, type_token: str) -> dict[str, Any]:
    return {r.name: r for r in result.of_type(type_token)}


def accepts_tags(type_token: str) -> bool:
    """Whether the installed pulumi_aws resource for ``type_token`` takes a ``tags`` argument."""
    if not type_token.startswith("aws:"):
        return False  # e.g. time:index/sleep:Sleep, a local wait with nothing to tag
    module, cls = type_token.split(":")[1].split("/")[0], type_token.split(":")[2]
    args = getattr(importlib.import_module(f"pulumi_aws.{module}"), f"{cls}Args")
    return "tags" in inspect.signature(args.__init__).parameters


# ---------------------------------------------------------------------- launch template: EFA, IMDS, disks


@pytest.mark.parametrize(
    ("instance_type", "gpu", "entries"), [("p5en.48xlarge", "H200", 17), ("p4d.24xlarge", "A100-40GB", 5)]
)
def test_launch_template_efa_interfaces_per_type(instance_type: str, gpu: str, entries: int) -> None:
    result = preview(spec(instance_type=instance_type, gpu=gpu))
    nics = result.one(LT).inputs["networkInterfaces"]
    assert len(nics) == entries
    assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics] == [
        (0, 0, "interface"),
        (0, 1, "efa-only"),
        *[(c, 0, "efa-only") for c in range(1, entries - 1)],
    ]


def test_p5_launch_template_has_33_interfaces_on_32_cards(p5_64: Any) -> None:
    lt = p5_64.one(LT).inputs
    nics = lt["networkInterfaces"]
    assert len(nics) == 33
    assert nics[0] == {**nics[0], "networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert nics[1]["networkCardIndex"] == 0 and nics[1]["deviceIndex"] == 1
    assert [n["networkCardIndex"] for n in nics[2:]] == list(range(1, 32))
    assert {n["deviceIndex"] for n in nics[2:]} == {0}
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    sg = by_name(p5_64, SG)["aws-p5-64-nodes"]
    subnet = by_name(p5_64, "aws:ec2/subnet:Subnet")["aws-p5-64-private"]
    for nic in nics:
        assert nic["securityGroups"] == [sg.id]
        assert nic["subnetId"] == subnet.id
        assert nic["deleteOnTermination"] == "true"
        assert nic.get("associatePublicIpAddress") in (None, "false")
    assert "vpcSecurityGroupIds" not in lt


def test_launch_template_security_settings(p5_64: Any) -> None:
    lt = p5_64.one(LT).inputs
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert lt["metadataOptions"]["httpEndpoint"] == "enabled"
    (root,) = lt["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/sda1"
    assert root["ebs"] == {"encrypted": "true", "volumeType": "gp3", "volumeSize": 500, "deleteOnTermination": "true"}
    assert lt["instanceType"] == "p5.48xlarge"
    assert lt["instanceInitiatedShutdownBehavior"] == "terminate"
    assert lt["iamInstanceProfile"]["arn"].endswith(p5_64.one("aws:iam/instanceProfile:InstanceProfile").id)
    assert lt["keyName"] == p5_64.one("aws:ec2/keyPair:KeyPair").outputs["keyName"]
    kinds = {t["resourceType"]: t["tags"] for t in lt["tagSpecifications"]}
    assert set(kinds) == {"instance", "volume", "network-interface"}
    for tags in kinds.values():
        assert tags.items() >= p5_64.plan.tags.items()


def test_launch_template_user_data_mounts_fsx_and_sets_timer(p5_64: Any) -> None:
    raw = base64.b64decode(p5_64.one(LT).inputs["userData"])
    script = gzip.decompress(raw).decode()  # gzip: cloud-init decompresses it; EC2's 16 KB limit is on the bytes
    assert len(raw) < 16 * 1024
    fs = p5_64.one(FSX).outputs
    # The nodes read the mount source at boot from the SSM parameter the program writes once FSx exists.
    parameter = p5_64.one("aws:ssm/parameter:Parameter").inputs
    assert parameter["insecureValue"] == f"{fs['dnsName']}@tcp:/{fs['mountName']}"
    assert f"SHARED_SOURCE_PARAMETER={parameter['name']}" in script and fs["dnsName"] not in script
    assert '"fabric_devices": 32' in script
    assert "OnCalendar=2026-11-30 00:00:00 UTC" in script and "Persistent=true" in script
    assert "PRIVATE KEY" not in script


def test_node_role_is_least_privilege(p5_64: Any) -> None:
    (attachment,) = p5_64.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    role = p5_64.one("aws:iam/role:Role").inputs
    assert '"Service": "ec2.amazonaws.com"' in role["assumeRolePolicy"]
    assert "inlinePolicies" not in role and "managedPolicyArns" not in role
    # One inline policy: read this cluster's FSx mount-source parameter, nothing else.
    (inline,) = p5_64.of_type("aws:iam/rolePolicy:RolePolicy")
    name = p5_64.one("aws:ssm/parameter:Parameter").inputs["name"]
    assert json.loads(inline.inputs["policy"])["Statement"] == [
        {"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": f"arn:aws:ssm:us-east-1:*:parameter{name}"}
    ]
    bounded = preview(spec(aws={"permissions_boundary_arn": "arn:aws:iam::123456789012:policy/gpu-boundary"}))
    assert bounded.one("aws:iam/role:Role").inputs["permissionsBoundary"].endswith(":policy/gpu-boundary")


# ---------------------------------------------------------------------- placement, fleet, addresses


def test_cluster_placement_group_is_used(p5_64: Any) -> None:
    pg = p5_64.one(PG)
    assert pg.inputs["strategy"] == "cluster"
    assert p5_64.one(LT).inputs["placement"] == {"groupName": pg.outputs["name"]}


def test_fleet_is_an_all_or_nothing_gang(p5_64: Any) -> None:
    fleet = p5_64.one(FLEET).inputs
    assert fleet["type"] == "instant"
    assert fleet["terminateInstances"] is True
    assert fleet["targetCapacitySpecification"] == {"defaultTargetCapacityType": "on-demand", "totalTargetCapacity": 8}
    assert fleet["onDemandOptions"] == {
        "minTargetCapacity": 8,
        "singleAvailabilityZone": True,
        "singleInstanceType": True,
    }
    (config,) = fleet["launchTemplateConfigs"]
    assert config["launchTemplateSpecification"] == {"launchTemplateId": p5_64.one(LT).id, "version": "1"}
    assert not p5_64.of_type(ASG) and not p5_64.of_type("aws:ec2/instance:Instance")


def test_hostfile_comes_from_the_fleet_in_address_order(p5_64: Any) -> None:
    hosts = p5_64.outputs["hosts"]
    assert len(hosts) == 8
    assert hosts == sorted(hosts, key=ipaddress.ip_address)
    private = ipaddress.ip_network(by_name(p5_64, "aws:ec2/subnet:Subnet")["aws-p5-64-private"].inputs["cidrBlock"])
    assert all(ipaddress.ip_address(h) in private for h in hosts)
    assert p5_64.outputs["hostfile"].splitlines()[0] == f"{hosts[0]} slots=8"
    assert p5_64.outputs["head_node"] == hosts[0]
    (call,) = [args for token, args in p5_64.calls if token == "aws:ec2/getInstances:getInstances"]
    fleet_ids = p5_64.one(FLEET).outputs["fleetInstanceSets"][0]["instanceIds"]
    assert call["filters"] == [{"name": "instance-id", "values": sorted(fleet_ids)}]
    assert call["instanceStateNames"] == ["pending", "running"]
    assert call["instanceTags"] == {"provision-cluster": "aws-p5-64"}


def test_large_fleet_hostfile_stays_under_the_describe_instances_filter_limit() -> None:
    # EC2 rejects a DescribeInstances call with more than 200 filter values (FilterLimitExceeded).
    result = preview(spec(nodes=400))
    calls = [args for token, args in result.calls if token == "aws:ec2/getInstances:getInstances"]
    assert len(calls) == 3
    for call in calls:
        values = sum(len(f["values"]) for f in call["filters"]) + len(call["instanceTags"])
        assert values + len(call["instanceStateNames"]) <= 200
    looked_up = [i for call in calls for i in call["filters"][0]["values"]]
    assert sorted(looked_up) == sorted(result.one(FLEET).outputs["fleetInstanceSets"][0]["instanceIds"])
    hosts = result.outputs["hosts"]
    assert len(hosts) == len(set(hosts)) == 400
    assert hosts == sorted(hosts, key=ipaddress.ip_address)


def test_image_is_resolved_once_and_exported_as_pin(p5_64: Any) -> None:
    ssm = [args for token, args in p5_64.calls if token == "aws:ssm/getParameter:getParameter"]
    assert len(ssm) == 1 and ssm[0]["name"].endswith("base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id")
    assert p5_64.outputs["image_pin"] == p5_64.one(LT).inputs["imageId"]
    assert p5_64.outputs["image_pin"].startswith("ami-0")
    assert p5_64.outputs["fabric_manifest"]["image"] == p5_64.outputs["image_pin"]


def test_pinned_image_needs_no_lookup() -> None:
    result = preview(spec(image={"id": "ami-0123456789abcdef0"}))
    assert result.one(LT).inputs["imageId"] == "ami-0123456789abcdef0"
    assert not [t for t, _ in result.calls if t == "aws:ssm/getParameter:getParameter"]


# ---------------------------------------------------------------------- network and security groups


def test_security_group_rules_are_standalone_and_private(p5_64: Any) -> None:
    groups = by_name(p5_64, SG)
    nodes, fsx = groups["aws-p5-64-nodes"], groups["aws-p5-64-fsx-sg"]
    for group in groups.values():
        assert "ingress" not in group.inputs and "egress" not in group.inputs
    ingress = [r.inputs for r in p5_64.of_type(INGRESS)]
    egress = [r.inputs for r in p5_64.of_type(EGRESS)]
    node_in = [r for r in ingress if r["securityGroupId"] == nodes.id]
    assert any(r["ipProtocol"] == "-1" and r.get("referencedSecurityGroupId") == nodes.id for r in node_in)
    assert any(
        r["securityGroupId"] == nodes.id and r["ipProtocol"] == "-1" and r.get("referencedSecurityGroupId") == nodes.id
        for r in egress
    )
    cidr_rules = [r for r in ingress if "cidrIpv4" in r or "cidrIpv6" in r]
    assert cidr_rules == [
        {**cidr_rules[0], "ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": "203.0.113.0/24"}
    ]
    assert all(r.get("cidrIpv4") not in ("0.0.0.0/0",) for r in ingress)
    # The FSx group only ever talks to itself and to the nodes (EFA-enabled file system: all traffic).
    fsx_in = [r for r in ingress if r["securityGroupId"] == fsx.id]
    assert {r["referencedSecurityGroupId"] for r in fsx_in} == {fsx.id, nodes.id}
    assert all("cidrIpv4" not in r for r in fsx_in)


def test_scratch_fsx_opens_only_lustre_ports_from_the_nodes() -> None:
    result = shipped_preview("aws-p5-16")
    fsx = by_name(result, SG)["aws-p5-16-fsx-sg"]
    nodes = by_name(result, SG)["aws-p5-16-nodes"]
    fsx_in = [r.inputs for r in result.of_type(INGRESS) if r.inputs["securityGroupId"] == fsx.id]
    assert {(r["fromPort"], r["toPort"], r["ipProtocol"]) for r in fsx_in} == {(988, 988, "tcp"), (1018, 1023, "tcp")}
    assert {r["referencedSecurityGroupId"] for r in fsx_in} == {fsx.id, nodes.id}


def test_no_public_addresses_on_nodes(p5_64: Any) -> None:
    for subnet in p5_64.of_type("aws:ec2/subnet:Subnet"):
        assert subnet.inputs["mapPublicIpOnLaunch"] is False
    assert [e.name for e in p5_64.of_type(EIP)] == ["aws-p5-64-nat-ip"]
    assert p5_64.one("aws:ec2/natGateway:NatGateway").inputs["subnetId"] == (
        by_name(p5_64, "aws:ec2/subnet:Subnet")["aws-p5-64-public"].id
    )
    routes = {r.name: r.inputs for r in p5_64.of_type("aws:ec2/route:Route")}
    assert "natGatewayId" in routes["aws-p5-64-private-default"]
    assert p5_64.one("aws:ec2/vpcEndpoint:VpcEndpoint").inputs["serviceName"] == "com.amazonaws.us-east-1.s3"


def test_public_head_node_gets_an_eip_on_its_primary_interface() -> None:
    result = preview(spec(access={"public_head_node": True}))
    eips = by_name(result, EIP)
    assoc = result.one("aws:ec2/eipAssociation:EipAssociation").inputs
    assert assoc["allocationId"] == eips["t1-head-ip"].outputs["allocationId"]
    assert assoc["networkInterfaceId"].startswith("eni-") and "instanceId" not in assoc
    (eni_call,) = [a for t, a in result.calls if t == "aws:ec2/getNetworkInterface:getNetworkInterface"]
    filters = {f["name"]: f["values"] for f in eni_call["filters"]}
    assert filters["interface-type"] == ["interface"] and filters["attachment.device-index"] == ["0"]
    (instances,) = [a for t, a in result.calls if t == "aws:ec2/getInstances:getInstances"]
    assert filters["attachment.instance-id"][0] in instances["filters"][0]["values"]
    assert result.outputs["head_node"] == eips["t1-head-ip"].outputs["publicIp"]
    head_route = by_name(result, "aws:ec2/route:Route")["t1-head-route-0"].inputs
    assert head_route["destinationCidrBlock"] == "203.0.113.0/24" and "gatewayId" in head_route


def test_existing_network_creates_no_vpc() -> None:
    result = preview(spec(aws={"vpc_id": "vpc-0123456789abcdef0", "subnet_id": "subnet-0123456789abcdef0"}))
    for token in ("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway", EIP):
        assert not result.of_type(token)
    assert {n["subnetId"] for n in result.one(LT).inputs["networkInterfaces"]} == {"subnet-0123456789abcdef0"}
    assert result.one(SG).inputs["vpcId"] == "vpc-0123456789abcdef0"


# ---------------------------------------------------------------------- tags


def test_every_taggable_resource_carries_plan_tags(p5_64: Any) -> None:
    custom = [r for r in p5_64.resources if r.custom]
    checked = 0
    for r in custom:
        if not accepts_tags(r.type):
            continue
        tags = r.inputs.get("tags")
        if isinstance(tags, list):  # autoscaling.Group takes a list of tag blocks
            tags = {t["key"]: t["value"] for t in tags}
        assert tags and tags.items() >= p5_64.plan.tags.items(), r.name
        checked += 1
    assert checked >= 20
    assert {r.type for r in p5_64.resources if not r.custom} == {"provision:aws:Cluster"}


# ---------------------------------------------------------------------- FSx


def test_fsx_persistent_2_with_efa(p5_64: Any) -> None:
    fs = p5_64.one(FSX).inputs
    assert fs["deploymentType"] == "PERSISTENT_2"
    assert fs["storageCapacity"] == 19200 and fs["perUnitStorageThroughput"] == 250
    assert fs["efaEnabled"] is True
    assert fs["metadataConfiguration"] == {"mode": "AUTOMATIC"}
    assert fs["fileSystemTypeVersion"] == "2.15"
    assert fs["storageType"] == "SSD"
    assert isinstance(fs["subnetIds"], str)
    assert fs["securityGroupIds"] == [by_name(p5_64, SG)["aws-p5-64-fsx-sg"].id]
    assert fs["skipFinalBackup"] is True
    shared = p5_64.outputs["shared_fs"]
    assert shared["mount_command"].startswith("sudo mkdir -p /shared && sudo mount -t lustre -o relatime,flock fs-")
    assert shared["source"].endswith(f"@tcp:/{p5_64.one(FSX).outputs['mountName']}")


def spy_options(monkeypatch: pytest.MonkeyPatch, *classes: Any) -> dict[str, Any]:
    """Record the ResourceOptions each resource of ``classes`` is created with (mocks do not see them)."""
    seen: dict[str, Any] = {}
    for cls in classes:

        def spy(self: Any, name: str, *a: Any, _orig: Any = cls.__init__, _kind: str = cls.__name__, **kw: Any) -> None:
            seen[f"{_kind}/{name}"] = kw.get("opts")
            _orig(self, name, *a, **kw)

        monkeypatch.setattr(cls, "__init__", spy)
    return seen


def test_retained_fsx_keeps_its_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi_aws as aws

    seen = spy_options(monkeypatch, aws.fsx.LustreFileSystem, aws.ec2.Vpc, aws.ec2.Subnet, aws.ec2.SecurityGroup)
    shared = {"kind": "fsx-lustre", "tier": "SCRATCH_2", "size_gib": 1200, "retain": True}
    preview(spec(storage={"shared": shared}))
    retained = {name for name, opts in seen.items() if opts is not None and opts.retain_on_delete}
    assert retained == {"LustreFileSystem/t1-fsx", "SecurityGroup/t1-fsx-sg", "Vpc/t1-vpc", "Subnet/t1-private"}


def test_new_ami_never_replaces_nodes_and_fleet_changes_replace_the_gang(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi_aws as aws

    seen = spy_options(monkeypatch, aws.ec2.LaunchTemplate, aws.ec2.Fleet)
    preview(spec())
    assert seen["LaunchTemplate/t1-nodes"].ignore_changes == ["image_id"]
    fleet = seen["Fleet/t1-fleet"]
    assert fleet.delete_before_replace is True and "launchTemplateConfigs" in fleet.replace_on_changes
    preview(spec(image={"id": "ami-0123456789abcdef0"}))
    assert not seen["LaunchTemplate/t1-nodes"].ignore_changes


def test_placement_group_outlives_the_nodes_on_destroy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Deleting an instant fleet does not wait for its instances, and a placement group that still holds
    # terminating instances refuses deletion (InvalidPlacementGroup.InUse). The node security group's delete
    # waits for the last node interface, so the placement group must be deleted after it.
    import pulumi_aws as aws

    seen = spy_options(monkeypatch, aws.ec2.SecurityGroup)
    result = preview(spec())
    nodes_sg = seen["SecurityGroup/t1-nodes"]
    assert [type(d) for d in nodes_sg.depends_on] == [aws.ec2.PlacementGroup]
    assert nodes_sg.custom_timeouts.delete == "30m"
    assert result.one(LT).inputs["placement"] == {"groupName": result.one(PG).outputs["name"]}
    preview(spec(aws={"placement_group": "my-reserved-pg"}))
    assert not seen["SecurityGroup/t1-nodes"].depends_on


def test_stack_region_must_match_the_spec() -> None:
    with pytest.raises(Exception, match="aws:region"):
        preview(spec(), config={"aws:region": "us-west-2"})
    assert preview(spec(), config={"aws:region": "us-east-1"}).outputs["region"] == "us-east-1"


# ---------------------------------------------------------------------- other gangs and markets


def test_asg_path_pins_size_and_suspends_replacement() -> None:
    result = preview(spec(nodes=3, lifetime={"ttl": "6h"}, aws={"allocation": "asg"}))
    group = result.one(ASG).inputs
    assert group["minSize"] == group["maxSize"] == group["desiredCapacity"] == 3
    assert {"ReplaceUnhealthy", "AZRebalance"} <= set(group["suspendedProcesses"])
    assert group["launchTemplate"] == {"id": result.one(LT).id, "version": "1"}
    schedule = result.one("aws:autoscaling/schedule:Schedule").inputs
    assert schedule["startTime"] == "2026-11-29T18:00:00Z" and schedule["desiredCapacity"] == 0
    assert not result.of_type(FLEET)
    assert len(result.outputs["hosts"]) == 3


def test_spot_fleet_keeps_the_gang() -> None:
    result = preview(spec(capacity={"type": "spot", "max_price_per_hour_usd": 30}))
    fleet = result.one(FLEET).inputs
    assert fleet["targetCapacitySpecification"]["defaultTargetCapacityType"] == "spot"
    assert fleet["spotOptions"]["minTargetCapacity"] == 2 and fleet["spotOptions"]["singleAvailabilityZone"] is True
    assert fleet["launchTemplateConfigs"][0]["overrides"] == [{"maxPrice": "30.0000"}]
    assert "onDemandOptions" not in fleet
    assert "instanceMarketOptions" not in result.one(LT).inputs


def test_capacity_block_targets_the_block() -> None:
    cr = "cr-0123456789abcdef0"
    result = preview(spec(zone="us-east-1a", capacity={"type": "capacity-block", "reservation": cr}))
    lt = result.one(LT).inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": cr}}
    assert "placement" not in lt and not result.of_type(PG)
    fleet = result.one(FLEET).inputs
    assert fleet["targetCapacitySpecification"]["defaultTargetCapacityType"] == "capacity-block"
    assert "onDemandOptions" not in fleet


def test_reservation_fleet_targets_a_reservation_group() -> None:
    cr = "cr-0123456789abcdef0"
    result = preview(spec(zone="us-east-1a", capacity={"type": "reservation", "reservation": cr}))
    group = result.one("aws:resourcegroups/group:Group")
    assert {c["type"] for c in group.inputs["configurations"]} == {
        "AWS::EC2::CapacityReservationPool",
        "AWS::ResourceGroups::Generic",
    }
    member = result.one("aws:resourcegroups/resource:Resource").inputs
    assert member["resourceArn"] == f"arn:aws:ec2:us-east-1:123456789012:capacity-reservation/{cr}"
    target = result.one(LT).inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationResourceGroupArn": group.outputs["arn"]}
    options = result.one(FLEET).inputs["onDemandOptions"]
    assert options["capacityReservationOptions"] == {"usageStrategy": "use-capacity-reservations-first"}
    assert options["minTargetCapacity"] == 2


# ---------------------------------------------------------------------- bad specs create nothing


def test_bad_spec_registers_no_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[Any] = []
    real = run_module.CloudMocks

    def recording(*a: Any, **kw: Any) -> Any:
        mocks = real(*a, **kw)
        created.append(mocks)
        return mocks

    monkeypatch.setattr(run_module, "CloudMocks", recording)
    bad = spec(zone="us-east-1a", capacity={"type": "capacity-block", "reservation": "block-7"})
    with pytest.raises(SpecError) as err:
        preview(bad)
    assert [p.path for p in err.value.problems] == ["capacity.reservation"]
    assert created == [] or all(not m.ledger for m in created)


# ---------------------------------------------------------------------- golden stacks


@pytest.mark.parametrize("stack", STACKS)
def test_golden_stack(stack: str) -> None:
    assert_golden(stack, golden_graph(shipped_preview(stack)))

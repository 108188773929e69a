"""Strict mocked AWS: each rule family refuses a violating input and names the rule and its source."""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws
import pytest
from strict_helpers import one, register, run, violations_of

from provision.clouds.aws import strict
from provision.clouds.mocking import StrictViolationError
from provision.clouds.strict import AUTONAME_SUFFIX

SG = "aws:ec2/securityGroup:SecurityGroup"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def test_security_group_description_rejects_an_apostrophe_from_the_botocore_documentation() -> None:
    v = one(violations_of(SG, "x-fsx-sg", {"description": "reachable from the cluster's nodes"}), "description")
    assert '"\'" are not allowed' in v.rule
    assert "CreateSecurityGroupRequest.Description" in v.source and "Valid characters" in v.source
    assert v.type == SG and v.name == "x-fsx-sg"


def test_security_group_rule_description_uses_the_ip_range_rule() -> None:
    v = one(
        violations_of(
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "x-rule",
            {"securityGroupId": "sg-1", "ipProtocol": "-1", "description": "nodes' traffic"},
        ),
        "description",
    )
    assert "IpRange.Description" in v.source


def test_enums_come_from_the_service_model() -> None:
    found = violations_of(
        LT,
        "x-nodes",
        {"metadataOptions": {"httpTokens": "maybe"}, "blockDeviceMappings": [{"ebs": {"volumeType": "gp9"}}]},
    )
    tokens = one(found, "metadataOptions.httpTokens")
    assert "optional, required" in tokens.rule and tokens.source.startswith("botocore ec2 2016-11-15")
    assert "gp3" in one(found, "blockDeviceMappings[].ebs.volumeType").rule


def test_fleet_enums_and_a_valid_fleet_passes() -> None:
    bad = violations_of(
        "aws:ec2/fleet:Fleet",
        "x-fleet",
        {
            "type": "sometimes",
            "targetCapacitySpecification": {"defaultTargetCapacityType": "on-demand", "totalTargetCapacity": 2},
        },
    )
    assert [v.field for v in bad] == ["type"]
    register("aws:ec2/fleet:Fleet", "x-fleet", {"type": "instant"})
    missing = violations_of(
        "aws:ec2/fleet:Fleet", "x", {"targetCapacitySpecification": {"defaultTargetCapacityType": "spot"}}
    )
    assert one(missing, "targetCapacitySpecification.totalTargetCapacity").rule == "is required"


def test_autonamed_iam_role_over_64_characters_is_refused() -> None:
    name = "a" * 57  # + "-" + 7 hex = 65
    v = one(violations_of("aws:iam/role:Role", name, {"assumeRolePolicy": "{}"}), "name (autonamed)")
    assert v.value == name + AUTONAME_SUFFIX
    assert "1-64" in v.rule and "RoleName" in v.source
    register("aws:iam/role:Role", "a" * 56, {"assumeRolePolicy": "{}"})


def test_explicit_names_match_the_model_pattern() -> None:
    v = one(violations_of("aws:iam/instanceProfile:InstanceProfile", "p", {"name": "bad name!"}), "name")
    assert "must match" in v.rule


@pytest.mark.parametrize(
    ("inputs", "field", "text"),
    [
        ({"deploymentType": "PERSISTENT_2", "storageCapacity": 3000}, "storageCapacity", "increments of 2400 GiB"),
        ({"deploymentType": "SCRATCH_1", "storageCapacity": 4800}, "storageCapacity", "increments of 3600 GiB"),
        ({"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 200}, "perUnitStorageThroughput", "125, 250"),
        ({"deploymentType": "PERSISTENT_2", "fileSystemTypeVersion": "2.16"}, "fileSystemTypeVersion", "2.15"),
        ({"deploymentType": "PERSISTENT_3"}, "deploymentType", "PERSISTENT_2"),
    ],
)
def test_fsx_sizes_throughput_and_versions(inputs: dict, field: str, text: str) -> None:
    v = one(violations_of(FSX, "x-fsx", {"storageType": "SSD", "subnetIds": "subnet-1", **inputs}), field)
    assert text in v.source or text in v.rule
    assert "fsx 2018-03-01" in v.source


def test_valid_fsx_passes() -> None:
    register(
        FSX,
        "x-fsx",
        {
            "deploymentType": "PERSISTENT_2",
            "storageCapacity": 19200,
            "perUnitStorageThroughput": 250,
            "storageType": "SSD",
            "fileSystemTypeVersion": "2.15",
            "subnetIds": "subnet-1",
        },
    )


@pytest.mark.parametrize("key", sorted(strict.FSX_CAPACITY, key=str))
def test_fsx_capacity_quotes_are_still_in_the_installed_model(key: tuple[str, str]) -> None:
    import botocore.session

    doc = botocore.session.get_session().get_service_model("fsx").operation_model("CreateFileSystem")
    text = strict._plain(doc.input_shape.members["StorageCapacity"].documentation)
    assert strict.FSX_CAPACITY[key][0] in text


def _fsx_program(*, wait_for_rules: bool) -> None:
    sg = aws.ec2.SecurityGroup("t-fsx-sg", vpc_id="vpc-1", description="provision t: FSx for Lustre")
    rule = aws.vpc.SecurityGroupIngressRule(
        "t-fsx-in",
        security_group_id=sg.id,
        ip_protocol="tcp",
        from_port=988,
        to_port=988,
        referenced_security_group_id=sg.id,
    )
    aws.fsx.LustreFileSystem(
        "t-fsx",
        subnet_ids="subnet-1",
        security_group_ids=[sg.id],
        storage_capacity=1200,
        deployment_type="SCRATCH_2",
        opts=pulumi.ResourceOptions(depends_on=[rule] if wait_for_rules else None),
    )


def test_fsx_created_in_parallel_with_its_security_group_rules_is_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _fsx_program(wait_for_rules=False))
    v = one(err.value.violations, "dependsOn")
    assert v.type == FSX and v.name == "t-fsx" and v.value == ["t-fsx-in"]
    assert "aws-parallelcluster#6181" in v.source


def test_fsx_that_depends_on_its_rules_passes() -> None:
    mocks = run(lambda: _fsx_program(wait_for_rules=True))
    assert any(r.type == FSX for r in mocks.ledger)


def _fleet_program(*, sleep: str | None) -> None:
    role = aws.iam.Role("t-node", assume_role_policy="{}")
    profile = aws.iam.InstanceProfile("t-node", role=role.name)
    depends: list[pulumi.Resource] = []
    if sleep is not None:
        # A stand-in with the pulumiverse-time Sleep type token (the real package may not be installed).
        depends.append(
            pulumi.CustomResource(
                "time:index/sleep:Sleep",
                "t-profile-wait",
                {"createDuration": sleep},
                opts=pulumi.ResourceOptions(depends_on=[profile]),
            )
        )
    lt = aws.ec2.LaunchTemplate(
        "t-nodes", iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn)
    )
    aws.ec2.Fleet(
        "t-fleet",
        type="instant",
        launch_template_configs=[
            aws.ec2.FleetLaunchTemplateConfigArgs(
                launch_template_specification=aws.ec2.FleetLaunchTemplateConfigLaunchTemplateSpecificationArgs(
                    launch_template_id=lt.id, version="1"
                )
            )
        ],
        target_capacity_specification=aws.ec2.FleetTargetCapacitySpecificationArgs(
            default_target_capacity_type="on-demand", total_target_capacity=2
        ),
        opts=pulumi.ResourceOptions(depends_on=depends),
    )


def test_instant_fleet_seconds_after_a_new_instance_profile_is_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _fleet_program(sleep=None))
    v = one(err.value.violations, "dependsOn")
    assert v.name == "t-fleet" and v.value == "t-node"
    assert "packer#9946" in v.source


@pytest.mark.parametrize(("sleep", "ok"), [("15s", True), ("1m30s", True), ("2s", False)])
def test_a_wait_after_the_profile_satisfies_the_propagation_rule(sleep: str, ok: bool) -> None:
    if ok:
        run(lambda: _fleet_program(sleep=sleep))
    else:
        with pytest.raises(StrictViolationError):
            run(lambda: _fleet_program(sleep=sleep))


def test_strict_off_accepts_what_the_cloud_rejects() -> None:
    mocks = run(lambda: _fsx_program(wait_for_rules=False), strict=False)
    assert len(mocks.ledger) == 3


def test_charset_rule_is_parsed_from_prose() -> None:
    regex, max_len, quote = strict.charset_rule(
        "<p>Constraints: Up to 255 characters in length</p> <p>Valid characters: a-z, A-Z, 0-9, spaces, and ._-:/()</p>"
    ) or ("", None, "")
    assert max_len == 255 and quote.startswith("Valid characters")
    assert re.fullmatch(regex, "ok Name-1.2:/()") and not re.fullmatch(regex, "no'pe")


def test_nested_structures_carry_their_required_members() -> None:
    inputs = {
        "deploymentType": "PERSISTENT_2",
        "storageCapacity": 2400,
        "perUnitStorageThroughput": 125,
        "subnetIds": "subnet-1",
        "metadataConfiguration": {"iops": 1500},
    }
    v = one(violations_of(FSX, "x-fsx", inputs), "metadataConfiguration.mode")
    assert v.rule == "is required" and v.source.startswith("botocore fsx") and v.source.endswith(".Mode")


def test_tag_limits_are_parsed_from_the_ec2_tag_shape() -> None:
    found = violations_of(
        "aws:ec2/vpc:Vpc", "x-vpc", {"cidrBlock": "10.0.0.0/16", "tags": {"aws:x": "1", "k": "v" * 257}}
    )
    assert {v.field for v in found} == {"tags.aws:x", "tags.k"}
    assert all("Tag.Key/Tag.Value" in v.source for v in found)

"""Strict mocked Alibaba Cloud: the provider's validation lists, jumbo frames, CPFS create time, names."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud
import pytest
from strict_helpers import one, run, violations_of

from provision.clouds.alibaba import strict
from provision.clouds.mocking import StrictViolationError
from provision.clouds.strict import Resource

INSTANCE = "alicloud:ecs/instance:Instance"
NODE = {"instanceType": "ecs.gn8v.4xlarge", "imageId": "ubuntu", "vswitchId": "vsw-1", "securityGroups": ["sg-1"]}


@pytest.mark.parametrize("months", [10, 11, 13, 25])
def test_subscription_periods_the_provider_rejects(months: int) -> None:
    inputs = {**NODE, "instanceChargeType": "PrePaid", "period": months, "periodUnit": "Month"}
    v = one(violations_of(INSTANCE, "x-node-0", inputs), "period")
    assert "1-9, 12, 24, 36, 48 or 60" in v.rule and "resource_alicloud_instance.go" in v.source


@pytest.mark.parametrize("months", [1, 9, 12, 60])
def test_subscription_periods_the_provider_accepts(months: int) -> None:
    res = Resource(INSTANCE, "x", {**NODE, "instanceChargeType": "PrePaid", "period": months, "periodUnit": "Month"})
    assert strict.instance_rules(res) == []


def test_jumbo_frames_only_on_types_documented_with_them() -> None:
    v = one(
        violations_of(INSTANCE, "x", {**NODE, "instanceType": "ecs.ebmgn7ex.32xlarge", "enableJumboFrame": True}),
        "enableJumboFrame",
    )
    assert "EnableJumboFrame" in v.source
    assert strict.instance_rules(Resource(INSTANCE, "x", {**NODE, "enableJumboFrame": True})) == []


@pytest.mark.parametrize(
    ("type_token", "inputs", "field"),
    [
        (INSTANCE, {**NODE, "spotStrategy": "Cheap"}, "spotStrategy"),
        (INSTANCE, {**NODE, "systemDiskPerformanceLevel": "PL9"}, "systemDiskPerformanceLevel"),
        (INSTANCE, {**NODE, "instanceType": "gn8v.4xlarge"}, "instanceType"),
        (INSTANCE, {**NODE, "hostName": "-node"}, "hostName"),
        (
            "alicloud:ecs/securityGroupRule:SecurityGroupRule",
            {
                "type": "ingress",
                "ipProtocol": "tcp",
                "portRange": "-1/-1",
                "securityGroupId": "sg-1",
                "cidrIp": "10.0.0.0/8",
            },
            "portRange",
        ),
        (
            "alicloud:ecs/securityGroupRule:SecurityGroupRule",
            {"type": "inbound", "ipProtocol": "all", "securityGroupId": "sg-1"},
            "type",
        ),
        ("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet", {"strategy": "Close"}, "strategy"),
        ("alicloud:nas/fileSystem:FileSystem", {"protocolType": "NFS", "storageType": "Fast"}, "storageType"),
        ("alicloud:vpc/network:Network", {"vpcName": "1vpc", "cidrBlock": "10.0.0.0/16"}, "vpcName"),
        (
            "alicloud:nas/protocolService:ProtocolService",
            {"fileSystemId": "cpfs-1", "protocolType": "NFS", "protocolSpec": "Fast"},
            "protocolSpec",
        ),
    ],
)
def test_provider_validation_lists(type_token: str, inputs: dict, field: str) -> None:
    v = one(violations_of(type_token, "x", inputs), field)
    assert "terraform-provider-alicloud" in v.source or "API reference" in v.source or "RunInstances" in v.source


def _cpfs(timeouts: pulumi.CustomTimeouts | None) -> None:
    alicloud.nas.FileSystem(
        "t-fs",
        file_system_type="cpfs",
        protocol_type="cpfs",
        storage_type="advance_100",
        capacity=3600,
        zone_id="cn-hangzhou-i",
        vpc_id="vpc-1",
        vswitch_id="vsw-1",
        opts=pulumi.ResourceOptions(custom_timeouts=timeouts),
    )


def test_cpfs_with_the_providers_default_create_timeout_is_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _cpfs(None), region="cn-hangzhou")
    v = one(err.value.violations, "customTimeouts.create")
    assert v.value == "10m (provider default)" and "20 to 40 minutes" in v.source


def test_cpfs_with_a_long_enough_create_timeout_passes() -> None:
    mocks = run(lambda: _cpfs(pulumi.CustomTimeouts(create="60m")), region="cn-hangzhou")
    assert [r.name for r in mocks.ledger] == ["t-fs"]

"""The Alibaba preflight (clouds/alibaba/preflight.py) against a fake account: stock of the type in the zone,
CPFS/NAS in the zone, the pay-as-you-go vCPU quota; a real `up` asks it first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from nodekit import plan_of

from provision.clouds.alibaba import preflight
from provision.clouds.alibaba.preflight import alibaba_preflight, sign

TYPE, ZONE = "ecs.ebmgn8v.48xlarge", "cn-hangzhou-i"


@dataclass
class FakeAccount:
    stock: str | None = "WithStock"
    vcpus: tuple[int, int] = (0, 10000)  # used, max
    cpfs_zones: dict[str, list[str]] = field(default_factory=lambda: {ZONE: ["advance_100", "advance_200"]})
    nas_zones_: dict[str, list[str]] = field(default_factory=lambda: {ZONE: ["Capacity", "Performance"]})
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def available_resource(self, region: str, zone: str, instance_type: str, charge: str, spot: str) -> dict[str, Any]:
        self.asked.append(("DescribeAvailableResource", region, zone, instance_type, charge, spot))
        sup = (
            []
            if self.stock is None
            else [{"Value": instance_type, "Status": "Available", "StatusCategory": self.stock}]
        )
        res = {"AvailableResource": [{"Type": "InstanceType", "SupportedResources": {"SupportedResource": sup}}]}
        return {"AvailableZones": {"AvailableZone": [{"ZoneId": zone, "AvailableResources": res}]}}

    def account_attributes(self, region: str) -> dict[str, Any]:
        used, most = self.vcpus
        items = [
            {"AttributeName": "max-postpaid-instance-vcpu-count", "AttributeValues": {"ValueItem": [{"Value": most}]}},
            {"AttributeName": "used-postpaid-instance-vcpu-count", "AttributeValues": {"ValueItem": [{"Value": used}]}},
        ]
        return {"AccountAttributeItems": {"AccountAttributeItem": items}}

    def nas_zones(self, region: str, file_system_type: str) -> dict[str, Any]:
        table = self.cpfs_zones if file_system_type == "cpfs" else self.nas_zones_
        zones = [
            {"ZoneId": z, "InstanceTypes": {"InstanceType": [{"StorageType": t} for t in tiers]}}
            for z, tiers in table.items()
        ]
        return {"Zones": {"Zone": zones}}


def test_a_ready_account_passes_and_is_asked_for_the_planned_type_and_zone() -> None:
    account = FakeAccount()
    assert alibaba_preflight(plan_of("alibaba-gn8-64"), account) == []
    assert account.asked == [("DescribeAvailableResource", "cn-hangzhou", ZONE, TYPE, "PostPaid", "NoSpot")]


@pytest.mark.parametrize(("stock", "said"), [(None, "not offered"), ("WithoutStock", "WithoutStock in")])
def test_a_type_without_stock_in_the_zone_is_refused(stock: str | None, said: str) -> None:
    (p,) = alibaba_preflight(plan_of("alibaba-gn8-ci"), FakeAccount(stock=stock))
    assert p.path == "zone" and said in p.rule


def test_cpfs_sold_only_in_other_zones_is_refused_before_the_network_exists() -> None:
    (p,) = alibaba_preflight(plan_of("alibaba-gn8-64"), FakeAccount(cpfs_zones={"cn-hangzhou-g": ["advance_200"]}))
    assert p.path == "zone" and "CPFS is not sold in cn-hangzhou-i" in p.rule and "cn-hangzhou-g" in p.rule


def test_a_tier_the_zone_does_not_sell_is_refused() -> None:
    (p,) = alibaba_preflight(plan_of("alibaba-gn8-64"), FakeAccount(cpfs_zones={ZONE: ["advance_100"]}))
    assert p.path == "storage.shared.tier" and p.value == "advance_200"


def test_the_vcpu_quota_counts_what_the_account_already_uses() -> None:
    plan = plan_of("alibaba-gn8-ci")  # 2 x 192 vCPUs
    assert alibaba_preflight(plan, FakeAccount(vcpus=(100, 484))) == []
    (p,) = alibaba_preflight(plan, FakeAccount(vcpus=(101, 484)))
    assert p.path == "nodes" and "384" in p.rule and "101 of its 484" in p.rule


def test_every_problem_is_reported_at_once() -> None:
    account = FakeAccount(stock="WithoutStock", vcpus=(0, 0), cpfs_zones={})
    assert sorted(p.path for p in alibaba_preflight(plan_of("alibaba-gn8-64"), account)) == ["nodes", "zone", "zone"]


def test_the_signature_matches_alibabas_published_rpc_example() -> None:
    # Alibaba's RPC signature example (ECS DescribeRegions, AccessKey secret "testsecret").
    params = {
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "Format": "XML",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "SignatureVersion": "1.0",
        "Timestamp": "2016-02-23T12:46:24Z",
        "Version": "2014-05-26",
    }
    assert sign(params, "testsecret") == "OLeaidS1JvxuMvnyHOwuJ+uX5qY="


def test_without_credentials_the_live_account_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    from provision.spec.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="ALIBABA_CLOUD_ACCESS_KEY_ID"):
        preflight.RpcAccount.from_environment()


def test_the_adapter_dispatches_to_it() -> None:
    from provision.clouds.alibaba.adapter import AlibabaAdapter

    (p,) = AlibabaAdapter().preflight(plan_of("alibaba-gn8-ci"), FakeAccount(stock="WithoutStock"))
    assert p.path == "zone"

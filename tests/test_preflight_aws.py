"""AWS preflight: zone offerings from moto, the vCPU quota through a botocore Stubber."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from provision.engine.preflight import aws_preflight
from provision.spec import load_spec


def _plan(zone: str | None = None, nodes: int = 8, capacity: str = "on-demand") -> Any:
    pytest.importorskip("provision.clouds.aws.adapter")
    from provision.clouds.base import get_adapter

    spec = {
        "name": "pf",
        "cloud": "aws",
        "region": "us-east-1",
        "instance_type": "p5.48xlarge",
        "nodes": nodes,
        "capacity": {"type": capacity},
    }
    if zone:
        spec["zone"] = zone
    return get_adapter("aws").plan(load_spec(spec))


def _quota_client(limit: float, code: str = "L-417A185B"):
    sq = boto3.client("service-quotas", region_name="us-east-1")
    stub = Stubber(sq)
    stub.add_response(
        "get_service_quota", {"Quota": {"QuotaCode": code, "Value": limit}}, {"ServiceCode": "ec2", "QuotaCode": code}
    )
    stub.activate()
    return sq


@pytest.fixture
def aws():
    with mock_aws():
        yield


def test_preflight_passes_when_zone_offers_type_and_quota_fits(aws) -> None:
    plan = _plan()
    sq = _quota_client(limit=8 * 192)
    problems = aws_preflight(
        plan, client=lambda svc, reg: sq if svc == "service-quotas" else boto3.client(svc, region_name=reg)
    )
    assert problems == []


def test_preflight_reports_quota_shortfall_with_the_needed_vcpus(aws) -> None:
    plan = _plan(nodes=8)
    sq = _quota_client(limit=0)
    problems = aws_preflight(
        plan, client=lambda svc, reg: sq if svc == "service-quotas" else boto3.client(svc, region_name=reg)
    )
    assert [p.path for p in problems] == ["nodes"]
    assert "1536 vCPUs" in problems[0].rule and "L-417A185B" in problems[0].rule
    assert "1536" in problems[0].fix


def test_preflight_reports_a_zone_that_does_not_offer_the_type(aws) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    offered = {
        o["Location"]
        for o in ec2.describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]}]
        )["InstanceTypeOfferings"]
    }
    plan = _plan()
    missing = plan.model_copy(update={"zone": "us-east-1-nowhere"})
    sq = _quota_client(limit=1e6)
    problems = aws_preflight(
        missing, client=lambda svc, reg: sq if svc == "service-quotas" else boto3.client(svc, region_name=reg)
    )
    assert [p.path for p in problems] == ["zone"]
    assert all(z in problems[0].fix for z in offered)

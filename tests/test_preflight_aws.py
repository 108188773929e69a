"""AWS preflight: zone offerings from moto, the vCPU quota through a botocore Stubber."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from provision.clouds.aws.preflight import aws_preflight
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


# ------------------------------------------------------------------ a real `up` asks the account first


def _real_cluster(tmp_path: Any, monkeypatch: Any) -> tuple[Any, Any]:
    from conftest import isolated_home, stack_spec
    from test_automation import FakePulumi

    from provision.ops.cluster import Cluster

    isolated_home(tmp_path, monkeypatch)
    fake = FakePulumi()
    return Cluster.from_spec(stack_spec("aws-p5-ci"), stack="aws-ci", pulumi_command=fake, display="none"), fake


def _answers(limit: float, zones: list[str]) -> Any:
    """An AWS account stand-in: the zones offering p5.48xlarge and the on-demand P quota (botocore Stubbers)."""
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    offerings = [{"InstanceType": "p5.48xlarge", "LocationType": "availability-zone", "Location": z} for z in zones]
    stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": offerings})
    stub.activate()
    sq = boto3.client("service-quotas", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    quota = Stubber(sq)
    quota.add_response("get_service_quota", {"Quota": {"QuotaCode": "L-417A185B", "Value": limit}})
    quota.activate()
    return lambda service, region: ec2 if service == "ec2" else sq


def test_a_real_up_asks_the_account_first_and_creates_nothing_when_it_cannot_hold_the_cluster(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """A new account's P quota is 0 and us-east-1a may not offer p5: before, both surfaced at CreateFleet, after the
    VPC, the FSx file system and the placement group existed (the preflight was a library call nobody made)."""
    from provision.clouds.aws import preflight
    from provision.spec.errors import SpecError

    answers = _answers(limit=0, zones=["us-east-1b"])
    monkeypatch.setattr(preflight, "aws_preflight", lambda plan, client=None: _real_preflight(plan, answers))
    cluster, fake = _real_cluster(tmp_path, monkeypatch)
    with pytest.raises(SpecError) as e:
        cluster.up()
    assert e.value.exit_code == 2 and sorted(p.path for p in e.value.problems) == ["nodes", "zone"]
    assert "us-east-1b" in str(e.value) and "L-417A185B" in str(e.value)
    assert not any(c[:2] == ["stack", "init"] or c[:1] == ["up"] for c in fake.calls)


def test_an_account_that_fits_goes_on_without_a_warning(tmp_path: Any, monkeypatch: Any) -> None:
    from provision.clouds.aws import preflight

    answers = _answers(limit=10_000, zones=["us-east-1a", "us-east-1b"])
    monkeypatch.setattr(preflight, "aws_preflight", lambda plan, client=None: _real_preflight(plan, answers))
    cluster, fake = _real_cluster(tmp_path, monkeypatch)
    result = cluster.up()
    assert result is not None and any(c[:1] == ["up"] for c in fake.calls)
    assert not any("preflight" in w for w in result.warnings)


def test_an_account_that_cannot_be_asked_is_a_warning_not_a_stop(tmp_path: Any, monkeypatch: Any) -> None:
    # No AWS credentials and no metadata service (conftest does this for the session too), as on a runner without.
    from conftest import AWS_ENV

    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    cluster, fake = _real_cluster(tmp_path, monkeypatch)
    result = cluster.up()
    assert result is not None and any(c[:1] == ["up"] for c in fake.calls)
    warning = next(w for w in result.warnings if "preflight did not run" in w)
    assert "NoCredentialsError" in warning and "vCPU quota" in warning


def _real_preflight(plan: Any, client: Any) -> Any:
    return aws_preflight(plan, client=client)


def test_a_failover_try_the_account_refuses_moves_on_to_the_next_and_creates_nothing_for_it(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """The preflight runs per failover try; a zone that does not offer the type is a capacity answer for that try,
    so the next try is made (nothing of the refused one exists) instead of stopping the whole `up`."""
    from conftest import isolated_home, stack_spec
    from test_automation import FakePulumi

    from provision.clouds.aws import preflight
    from provision.ops.cluster import Cluster
    from provision.spec.errors import SpecError

    zones_asked: list[str | None] = []

    def account(plan: Any, client: Any = None) -> Any:
        zones_asked.append(plan.zone)
        return _real_preflight(plan, _answers(limit=10_000, zones=["us-east-1b"]))

    monkeypatch.setattr(preflight, "aws_preflight", account)
    isolated_home(tmp_path, monkeypatch)
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    fake = FakePulumi()
    cluster = Cluster.from_spec(
        {**data, "failover": [{"zone": "us-east-1b"}]}, stack="aws-fo", pulumi_command=fake, display="none"
    )
    result = cluster.up()
    assert zones_asked == ["us-east-1a", "us-east-1b"]
    assert result is not None and cluster.plan().zone == "us-east-1b"
    assert [c[:1] for c in fake.calls].count(["up"]) == 1  # one up: the refused try ran no pulumi up

    # Every try refused: one error naming each try's problem, still exit 2.
    monkeypatch.setattr(
        preflight, "aws_preflight", lambda plan, client=None: _real_preflight(plan, _answers(limit=0, zones=["x"]))
    )
    isolated_home(tmp_path / "again", monkeypatch)
    fake = FakePulumi()
    cluster = Cluster.from_spec(
        {**data, "failover": [{"zone": "us-east-1b"}]}, stack="aws-fo2", pulumi_command=fake, display="none"
    )
    with pytest.raises(SpecError) as e:
        cluster.up()
    text = str(e.value)
    assert e.value.exit_code == 2 and "us-east-1a on-demand" in text and "us-east-1b on-demand" in text
    assert not any(c[:1] == ["up"] for c in fake.calls)


class _Ec2WithZoneIds:
    """moto's EC2 with this account's zone name -> zone ID mapping (names map to IDs per account)."""

    def __init__(self, region: str, ids: dict[str, str]) -> None:
        self._ec2 = boto3.client("ec2", region_name=region)
        self._ids = ids

    def describe_availability_zones(self, **_: Any) -> dict[str, Any]:
        return {"AvailabilityZones": [{"ZoneName": n, "ZoneId": z} for n, z in self._ids.items()]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


def _eks_plan(zone: str) -> Any:
    from conftest import stack_spec

    from provision.clouds.base import get_adapter

    data = stack_spec("aws-p5-64-eks").model_dump(exclude_none=True)
    data["zone"] = zone
    return get_adapter("aws").plan(load_spec(data))


@pytest.mark.parametrize(
    ("zone", "refused"),
    [("us-east-1a", None), ("us-east-1b", "use1-az3")],  # in this account us-east-1b is use1-az3
)
def test_eks_preflight_refuses_a_node_zone_whose_id_eks_refuses(aws, zone: str, refused: str | None) -> None:
    plan = _eks_plan(zone)
    ids = {"us-east-1a": "use1-az1", "us-east-1b": "use1-az3", "us-east-1c": "use1-az2", "us-east-1d": "use1-az4"}
    sq = _quota_client(limit=1e6)
    ec2 = _Ec2WithZoneIds("us-east-1", ids)
    problems = aws_preflight(plan, client=lambda svc, reg: sq if svc == "service-quotas" else ec2)
    zone_problems = [p for p in problems if p.path == "zone" and "EKS" in p.rule]
    if refused is None:
        assert zone_problems == []
    else:
        assert len(zone_problems) == 1 and refused in zone_problems[0].rule
        assert "us-east-1b" not in zone_problems[0].fix and "us-east-1c" in zone_problems[0].fix

"""Failover rehearsals as the clouds really report a stock-out, and what a try in the same region keeps.

An instant EC2 Fleet that misses capacity is created empty and lists the miss in DescribeFleets ``Errors``; a GCP
managed instance group without stock never becomes stable, its create times out, and the stock-out is only in
``listErrors``. ``Fault(reported="listed")`` makes the mocked cloud answer that way, and ``up`` must still see a
stock error and move on, leaving nothing of the failed try behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import stack_spec

from provision import plan as plan_spec
from provision.clouds import failover
from provision.clouds.aws import stockout as aws_stockout
from provision.clouds.gcp import stockout as gcp_stockout
from provision.engine.mockstate import MockResource, MockStore, diff_resources
from provision.ops.cluster import Cluster
from provision.spec.errors import CapacityError, CloudError, QuotaError
from provision.testing import Fault

FLEET = "aws:ec2/fleet:Fleet"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _data(stack: str, *options: dict[str, Any]) -> dict[str, Any]:
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    return {**data, "failover": list(options)}


def _other_zone(stack: str) -> tuple[str, str]:
    from provision.catalog import load_catalog

    first = plan_spec(stack_spec(stack))
    offer = load_catalog().instance(first.cloud, first.instance_type)
    assert offer is not None and first.zone
    other = next(z for z in offer.regions[first.region].zones if z != first.zone)
    return first.zone, other


def _counting_downs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    downs: list[str] = []
    original = Cluster.down

    def down(self: Cluster, yes: bool = True) -> Any:
        downs.append(self.stack)
        return original(self, yes)

    monkeypatch.setattr(Cluster, "down", down)
    return downs


# ---------------------------------------------------------------------- AWS: the instant fleet's error list


def test_an_instant_fleet_that_launches_nothing_is_a_stock_error_read_from_its_error_list() -> None:
    fault = Fault("InsufficientInstanceCapacity", type_token=FLEET, reported="listed")
    cluster = Cluster(_data("aws-p5-64"), stack="ls-fleet", mock=True, faults=[fault], display="none")
    with pytest.raises(CapacityError) as err:
        cluster.up()
    assert not isinstance(err.value, QuotaError)
    assert err.value.code == "InsufficientInstanceCapacity"
    text = str(err.value)
    assert "launched 0 of 8" in text  # the program's own failure, which carries no code, is kept
    state = MockStore().load("ls-fleet")
    assert state is not None and any(r.type == FLEET for r in state.resources)  # created empty, as EC2 does


def test_a_fleet_that_lists_a_quota_code_fails_at_once_without_failover() -> None:
    zone, other = _other_zone("aws-p5-64")
    fault = Fault("VcpuLimitExceeded", type_token=FLEET, reported="listed")
    cluster = Cluster(_data("aws-p5-64", {"zone": other}), stack="ls-quota", mock=True, faults=[fault], display="none")
    with pytest.raises(QuotaError, match="VcpuLimitExceeded"):
        cluster.up()
    state = MockStore().load("ls-quota")
    assert state is not None and failover.deployed_try(cluster.spec, state.spec) == 0


def test_the_aws_reader_asks_describe_fleets_for_the_fleet_ids() -> None:
    asked: list[tuple[str, str, list[str]]] = []

    class Ec2:
        def describe_fleets(self, FleetIds: list[str]) -> dict[str, Any]:  # noqa: N803
            asked.append(("ec2", region[0], FleetIds))
            return {
                "Fleets": [
                    {
                        "FleetId": FleetIds[0],
                        "Errors": [{"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "x"}],
                    }
                ]
            }

    region: list[str] = []

    def client(service: str, name: str) -> Ec2:
        region.append(name)
        assert service == "ec2"
        return Ec2()

    plan = plan_spec(stack_spec("aws-p5-64"))
    assert aws_stockout.group_errors(plan, ["fleet-1"], client) == ["InsufficientInstanceCapacity: x"]
    assert asked == [("ec2", plan.region, ["fleet-1"])]
    assert aws_stockout.group_errors(plan, [], client) == []  # nothing created: nothing to ask


# ---------------------------------------------------------------------- GCP: the MIG's listErrors


def test_a_mig_stockout_times_out_and_is_read_from_list_errors() -> None:
    fault = Fault("ZONE_RESOURCE_POOL_EXHAUSTED", type_token=MIG, reported="listed", message="no a3 in the zone")
    cluster = Cluster(_data("gcp-a3-64"), stack="ls-mig", mock=True, faults=[fault], display="none")
    with pytest.raises(CapacityError) as err:
        cluster.up()
    assert err.value.code == "ZONE_RESOURCE_POOL_EXHAUSTED"
    text = str(err.value)
    assert "timeout while waiting for state to become 'created'" in text and "no a3 in the zone" in text


def test_without_its_error_list_a_mig_timeout_is_no_stock_error() -> None:
    """What the provider says alone (a timeout) must not be read as a stock-out: another zone would not help."""
    fault = Fault("ZONE_RESOURCE_POOL_EXHAUSTED", type_token=MIG, reported="listed")
    cluster = Cluster(_data("gcp-a3-64"), stack="ls-mig2", mock=True, faults=[fault], display="none")
    plan = cluster.plan()
    resources = [{"type": MIG, "name": "n", "id": f"projects/p/zones/{plan.zone}/instanceGroupManagers/n"}]

    class Empty:
        def list_errors(self, project: str, zone: str, name: str) -> list[dict[str, Any]]:
            return []

    assert failover.listed_capacity_error(plan, resources, "up failed", "timeout", Empty()) is None


def test_a_mig_stockout_fails_over_to_the_next_zone_and_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    zone, other = _other_zone("gcp-a3-64")
    fault = Fault("ZONE_RESOURCE_POOL_EXHAUSTED", type_token=MIG, reported="listed", where=zone)
    data = _data("gcp-a3-64", {"zone": other})
    downs = _counting_downs(monkeypatch)
    result = Cluster(data, stack="ls-mig-fo", mock=True, faults=[fault], display="none").up()
    assert result is not None and result.outputs
    state = MockStore().load("ls-mig-fo")
    assert state is not None
    assert failover.deployed_try(load_data_spec(data), state.spec) == 1
    migs = [r for r in state.resources if r.type == MIG]
    assert len(migs) == 1 and zone not in str(migs[0].inputs) and other in str(migs[0].inputs)
    assert not [r for r in state.resources if f'"{zone}"' in str(r.inputs).replace("'", '"')]  # nothing in the old zone
    assert downs == []  # a regional network: the try in the next zone reused it
    Cluster(data, stack="ls-mig-fo", mock=True, display="none").down()
    assert MockStore().load("ls-mig-fo") is None


def load_data_spec(data: dict[str, Any]) -> Any:
    from provision.spec import load_spec

    return load_spec(data)


def test_the_gcp_reader_parses_the_group_ids_and_reads_every_error() -> None:
    seen: list[tuple[str, str, str]] = []

    class Account:
        def list_errors(self, project: str, zone: str, name: str) -> list[dict[str, Any]]:
            seen.append((project, zone, name))
            return [{"error": {"code": "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "message": "m"}}, {"error": {}}]

    plan = plan_spec(stack_spec("gcp-a3-64"))
    ids = ["projects/p1/zones/us-central1-a/instanceGroupManagers/g1", "not-an-id"]
    assert gcp_stockout.group_errors(plan, ids, Account()) == ["ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: m", ""]
    assert seen == [("p1", "us-central1-a", "g1")]


def test_a_listed_fault_on_a_resource_without_an_error_list_is_refused() -> None:
    fault = Fault("InsufficientInstanceCapacity", type_token="aws:ec2/vpc:Vpc", reported="listed")
    with pytest.raises(CloudError, match="keeps no error list"):
        Cluster(_data("aws-p5-ci"), stack="ls-bad", mock=True, faults=[fault], display="none").up()
    with pytest.raises(ValueError, match="reported"):
        Fault("X", index=0, reported="later")


# ---------------------------------------------------------------------- what a try in the same region keeps


def test_a_try_in_the_same_zone_keeps_the_network_and_the_filesystem(monkeypatch: pytest.MonkeyPatch) -> None:
    """aws-p5-64 on-demand has no stock; spot in the same zone reuses the VPC and the FSx; only the fleet changes."""
    fault = Fault("InsufficientInstanceCapacity", type_token=FLEET, reported="listed", where="on-demand")
    data = _data("aws-p5-64", {"capacity": {"type": "spot"}})
    downs = _counting_downs(monkeypatch)
    result = Cluster(data, stack="keep-aws", mock=True, faults=[fault], display="none").up()
    assert result is not None and downs == []
    changed = {(s.type, s.op) for s in result.steps if s.op != "same"}
    assert (FLEET, "replace") in changed  # the empty fleet of the first try is replaced
    kept = ("aws:ec2/vpc:", "aws:ec2/subnet:", "aws:ec2/natGateway:", "aws:ec2/securityGroup:", "aws:fsx/")
    assert not [c for c in changed if c[0].startswith(kept)]  # the network and the FSx stay as they are
    assert result.changes.get("delete", 0) == 0
    state = MockStore().load("keep-aws")
    assert state is not None
    assert sum(r.type == "aws:fsx/lustreFileSystem:LustreFileSystem" for r in state.resources) == 1


def test_a_try_in_another_zone_of_a_regional_network_replaces_only_zonal_resources() -> None:
    zone, other = _other_zone("gcp-a3-64")
    fault = Fault("ZONE_RESOURCE_POOL_EXHAUSTED", type_token=MIG, reported="listed", where=zone)
    result = Cluster(
        _data("gcp-a3-64", {"zone": other}), stack="keep-gcp", mock=True, faults=[fault], display="none"
    ).up()
    assert result is not None
    ops = {(s.type, s.op) for s in result.steps}
    assert (MIG, "replace") in ops and ("gcp:lustre/instance:Instance", "replace") in ops  # zonal: they move
    regional = ("gcp:compute/network:", "gcp:compute/subnetwork:", "gcp:compute/router", "gcp:compute/firewall:")
    assert not [(t, op) for t, op in ops if t.startswith(regional) and op != "same"]  # VPCs, subnets, NAT stay
    state = MockStore().load("keep-gcp")
    assert state is not None and sum(r.type.startswith(regional) for r in state.resources) >= 4
    # What the failed try created before it was stopped is not deleted, except what the new zone replaces.
    assert result.changes.get("delete", 0) == 0


def test_a_try_in_another_zone_of_a_zonal_network_starts_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS subnets belong to one zone, and a same-CIDR replacement would collide: the failed try is removed first."""
    zone, other = _other_zone("aws-p5-64")
    fault = Fault("InsufficientInstanceCapacity", type_token=FLEET, reported="listed", where=zone)
    downs = _counting_downs(monkeypatch)
    result = Cluster(
        _data("aws-p5-64", {"zone": other}), stack="anew-aws", mock=True, faults=[fault], display="none"
    ).up()
    assert result is not None and downs == ["anew-aws"]
    assert result.changes.get("create", 0) == len(MockStore().load("anew-aws").resources)  # type: ignore[union-attr]


def test_the_mock_diff_replaces_what_refers_to_a_replaced_resource() -> None:
    """A replaced subnet gets a new id in a real cloud, so a filesystem placed in it is replaced too."""
    subnet_old = MockResource("aws:ec2/subnet:Subnet", "s", {"availabilityZone": "us-east-1a"}, "subnet-1", True)
    subnet_new = MockResource("aws:ec2/subnet:Subnet", "s", {"availabilityZone": "us-east-1b"}, "subnet-1", True)
    fs = MockResource("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", {"subnetIds": ["subnet-1"]}, "fs-1", True)
    steps = diff_resources([subnet_old, fs], [subnet_new, fs])
    assert [(s.name, s.op) for s in steps] == [("s", "replace"), ("fs", "replace")]
    assert steps[1].keys and all(k.startswith("subnetIds") for k in steps[1].keys)


def test_a_real_up_that_fails_without_a_code_asks_the_fleet_for_its_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real path: after a failed `pulumi up`, the fleet id from the stack's state goes to DescribeFleets."""
    import boto3

    asked: list[list[str]] = []

    class Ec2:
        def describe_fleets(self, FleetIds: list[str]) -> dict[str, Any]:  # noqa: N803
            asked.append(FleetIds)
            return {"Fleets": [{"FleetId": FleetIds[0], "Errors": [{"ErrorCode": "InsufficientInstanceCapacity"}]}]}

    class Deployment:
        deployment = {
            "resources": [
                {"type": "pulumi:pulumi:Stack", "urn": "urn:pulumi:s::p::pulumi:pulumi:Stack::s"},
                {"type": FLEET, "urn": f"urn:pulumi:s::p::{FLEET}::aws-p5-64-fleet", "id": "fleet-0a1b"},
            ]
        }

    class Stack:
        def export_stack(self) -> Deployment:
            return Deployment()

    monkeypatch.setattr(boto3, "client", lambda service, region_name=None: Ec2())
    cluster = Cluster("aws-p5-64", display="none")
    failed = CloudError("up of 'aws-p5-64' failed:\nthe EC2 Fleet launched 0 of 8 p5.48xlarge nodes")
    found = cluster._listed_capacity(cluster.plan(), Stack(), failed)  # type: ignore[arg-type]
    assert isinstance(found, CapacityError) and found.code == "InsufficientInstanceCapacity"
    assert asked == [["fleet-0a1b"]] and "launched 0 of 8" in str(found)

    def broken(service: str, region_name: str | None = None) -> Any:
        raise RuntimeError("no credentials")

    monkeypatch.setattr(boto3, "client", broken)
    assert cluster._listed_capacity(cluster.plan(), Stack(), failed) is None  # type: ignore[arg-type]

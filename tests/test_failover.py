"""Failover on capacity errors: every try planned first, the next one after no stock, quota fails fast."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import stack_spec

from provision import plan as plan_spec
from provision.catalog import load_catalog
from provision.clouds import failover
from provision.engine.automation import failover_config
from provision.engine.mockstate import MockStore
from provision.ops.cluster import Cluster
from provision.spec import load_spec
from provision.spec.errors import BudgetError, CapacityError, QuotaError, SpecError
from provision.testing import Fault

#: The resource that allocates the GPU nodes, per cloud: where a stock error comes from.
NODE_GROUP = {
    "aws": "aws:ec2/fleet:Fleet",
    "gcp": "gcp:compute/instanceGroupManager:InstanceGroupManager",
    "azure": "azure-native:compute:VirtualMachineScaleSet",
    "alibaba": "alicloud:ecs/instance:Instance",
}
STACKS = ("aws-p5-64", "gcp-a3-64", "azure-ndh100-64", "alibaba-gn8-64")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _elsewhere(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A failover option the catalog sells, and the JSON text that appears only in the primary's node group."""
    spec = load_spec(data)
    first = plan_spec(spec)
    offer = load_catalog().instance(spec.cloud, first.instance_type)
    assert offer is not None
    zones = offer.regions[first.region].zones if first.region in offer.regions else ()
    other_zone = next((z for z in zones if z != first.zone), None)
    if first.zone and other_zone:
        return {"zone": other_zone}, first.zone
    other_region = next((r for r in offer.regions if r != first.region), None)
    if other_region:
        return {"region": other_region}, first.region
    sibling = next(
        o.instance_type
        for o in load_catalog().instances
        if o.cloud == spec.cloud
        and o.gpu == offer.gpu
        and o.instance_type != offer.instance_type
        and first.region in o.regions
    )
    return {"instance_type": sibling}, first.instance_type


def _with_failover(stack: str) -> tuple[dict[str, Any], str]:
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    option, where = _elsewhere(data)
    return {**data, "failover": [option]}, where


def _typ(data: dict[str, Any]) -> str:
    return NODE_GROUP[data["cloud"]]


@pytest.mark.parametrize("stack", STACKS)
def test_no_stock_in_the_first_place_lands_the_cluster_on_the_next_try(stack: str) -> None:
    data, where = _with_failover(stack)
    if where == json.dumps("ignored"):
        pytest.skip(f"{stack}: the catalog sells its type in one place only")
    fault = Fault(code=_stock_code(data["cloud"]), type_token=_typ(data), where=where)
    cluster = Cluster(data, stack=f"fo-{stack}", mock=True, faults=[fault], display="none")
    result = cluster.up()
    assert result is not None and result.outputs
    state = MockStore().load(f"fo-{stack}")
    assert state is not None
    assert failover.deployed_try(cluster.spec, state.spec) == 1  # the state holds the second try's spec
    landed, primary = cluster.plan(), plan_spec(load_spec({**data, "failover": []}))
    assert landed.spec == failover.alternative(cluster.spec, 1)
    assert where not in (landed.region, landed.zone, landed.instance_type)  # off the place that had no stock
    assert where in (primary.region, primary.zone, primary.instance_type)
    assert any(r.type == _typ(data) for r in state.resources)
    # A second up keeps the cluster where it landed: nothing changes.
    again = Cluster(data, stack=f"fo-{stack}", mock=True, faults=[fault], display="none").up()
    assert again is not None and again.changed == 0
    Cluster(data, stack=f"fo-{stack}", mock=True, display="none").down()
    assert MockStore().load(f"fo-{stack}") is None


def _stock_code(cloud: str) -> str:
    return {
        "aws": "InsufficientInstanceCapacity",
        "gcp": "ZONE_RESOURCE_POOL_EXHAUSTED",
        "azure": "AllocationFailed",
        "alibaba": "OperationDenied.NoStock",
    }[cloud]


def test_a_quota_error_fails_at_once_naming_the_quota() -> None:
    data, _ = _with_failover("aws-p5-64")
    fault = Fault(code="VcpuLimitExceeded", type_token=_typ(data))
    cluster = Cluster(data, stack="fo-quota", mock=True, faults=[fault], display="none")
    with pytest.raises(QuotaError) as err:
        cluster.up()
    assert "VcpuLimitExceeded" in str(err.value) and "quota" in str(err.value)
    state = MockStore().load("fo-quota")
    assert state is not None and failover.deployed_try(cluster.spec, state.spec) == 0  # no second try was made


def test_when_every_try_has_no_stock_the_error_names_each_try() -> None:
    data, _ = _with_failover("gcp-a3-64")
    fault = Fault(code="ZONE_RESOURCE_POOL_EXHAUSTED", type_token=_typ(data))
    cluster = Cluster(data, stack="fo-none", mock=True, faults=[fault], display="none")
    with pytest.raises(CapacityError) as err:
        cluster.up()
    assert not isinstance(err.value, QuotaError)
    text = str(err.value)
    assert text.count("ZONE_RESOURCE_POOL_EXHAUSTED") >= 2 and "no try" in text
    state = MockStore().load("fo-none")
    assert state is not None and failover.deployed_try(cluster.spec, state.spec) == 1  # only the last try remains


def test_every_try_is_validated_before_anything_exists() -> None:
    data = stack_spec("aws-p5-64").model_dump(mode="json", exclude_none=True)
    data["failover"] = [{"zone": "eu-west-1a"}, {"region": "mars-1"}]
    cluster = Cluster(data, stack="fo-bad", mock=True, display="none")
    with pytest.raises(SpecError) as err:
        cluster.up()
    paths = [p.path for p in err.value.problems]
    assert any(p.startswith("failover[0].") for p in paths) and any(p.startswith("failover[1].") for p in paths)
    assert MockStore().load("fo-bad") is None


def test_a_try_over_the_cost_cap_is_refused_before_anything_exists() -> None:
    data = stack_spec("aws-p5-64").model_dump(mode="json", exclude_none=True)
    first = plan_spec(load_spec(data))
    assert first.cost.hourly_usd
    data["lifetime"] = {"ttl": "2h", "max_cost_usd": round(first.cost.hourly_usd * 2.5, 2)}
    data["failover"] = [{"instance_type": "p5en.48xlarge"}]  # dearer per hour than p5
    cluster = Cluster(data, stack="fo-cap", mock=True, display="none")
    with pytest.raises((BudgetError, SpecError)) as err:
        cluster.up()
    assert any(p.path.startswith("failover[0]") for p in err.value.problems)
    assert MockStore().load("fo-cap") is None


def test_an_option_must_change_something() -> None:
    data = stack_spec("aws-p5-64").model_dump(mode="json", exclude_none=True)
    with pytest.raises(SpecError) as err:
        load_spec({**data, "failover": [{}]})
    assert any(p.path.startswith("failover") and "changes nothing" in p.rule for p in err.value.problems)


def test_a_new_region_without_a_zone_lets_the_catalog_choose() -> None:
    data = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    data["zone"] = "us-central1-a"
    spec = load_spec({**data, "failover": [{"region": "us-east4"}, {"capacity": {"type": "spot"}}]})
    moved = failover.alternative(spec, 1)
    assert moved.region == "us-east4" and moved.zone is None and moved.failover == ()
    spot = failover.alternative(spec, 2)
    assert spot.capacity.type == "spot" and spot.zone == "us-central1-a"
    assert failover.alternative(spec, 0) is spec
    assert failover.tries(spec) == 3


def test_stock_and_quota_codes_are_told_apart() -> None:
    assert isinstance(failover.capacity_error("... InsufficientInstanceCapacity ...", "up"), CapacityError)
    assert not isinstance(failover.capacity_error("InsufficientInstanceCapacity", "up"), QuotaError)
    assert isinstance(failover.capacity_error("code QUOTA_EXCEEDED", "up"), QuotaError)
    assert failover.capacity_error("AccessDenied", "up") is None


def test_a_bare_pulumi_up_builds_the_recorded_try_in_its_region() -> None:
    config = failover_config(2, "aws", "us-west-2")
    assert {k: v.value for k, v in config.items()} == {"provision:failover": "2", "aws:region": "us-west-2"}
    assert set(failover_config(1, "azure", "eastus2")) == {"provision:failover", "azure-native:location"}


def test_provision_plan_reports_a_bad_failover_option_with_its_path(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from provision.cli.app import app

    data = stack_spec("aws-p5-64").model_dump(mode="json", exclude_none=True)
    data["failover"] = [{"zone": "us-east-1z"}]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 2, result.output
    problems = json.loads(result.output)["problems"]
    assert [p["path"] for p in problems] == ["failover[0].zone"]

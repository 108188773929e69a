"""``failover: auto``: the tries come from the catalog's offers (zones first, then regions by price), planned first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import stack_spec
from typer.testing import CliRunner

from provision import plan as plan_spec
from provision.catalog import load_catalog
from provision.cli.app import app
from provision.clouds import failover
from provision.clouds.failover_auto import MAX_TRIES, auto_tries
from provision.clouds.validate import load_and_plan
from provision.engine.mockstate import MockStore
from provision.ops.cluster import Cluster
from provision.planning.cluster_offers import cluster_offers
from provision.spec import load_spec
from provision.spec.errors import SpecError
from provision.testing import Fault


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def _auto(stack: str, **more: Any) -> dict[str, Any]:
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    return {**data, **more, "failover": "auto"}


def test_auto_tries_the_other_zones_first_then_the_regions_cheapest_first() -> None:
    spec = load_spec(_auto("aws-p5-64"))
    first = plan_spec(load_spec({**_auto("aws-p5-64"), "failover": []}))
    derived = auto_tries(spec)
    options = [o.model_dump(exclude_none=True) for o in derived.options]
    zones = [z for z in first.offer.regions[first.region].zones if z != first.zone]
    assert options[: len(zones)] == [{"zone": z} for z in zones]  # the catalog's other zones of the region
    regions = [o["region"] for o in options[len(zones) :]]
    assert regions and first.region not in regions
    rows = cluster_offers(load_catalog(), first.gpus, gpu=first.offer.gpu, cloud="aws", capacity=("on-demand",))
    order = [r.region for r in rows if r.region != first.region]
    assert regions == [r for r in order if r in regions]  # in the offers' order: cheapest first
    assert len(derived.options) <= MAX_TRIES
    # Every derived try plans, and none breaks the cost cap: those were left out, with the reason.
    plans = failover.plan_all(spec, plan_spec)
    assert len(plans) == 1 + len(derived.options)
    assert all(p.cost.lifetime_usd is None or p.cost.lifetime_usd <= 6000 for p in plans)
    assert derived.left_out and all(": " in why for why in derived.left_out)


def test_plan_explains_the_derived_tries_and_what_was_left_out(tmp_path: Path) -> None:
    path = tmp_path / "auto.yaml"
    path.write_text(yaml.safe_dump(_auto("gcp-a3-64")))
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "failover: auto tries" in text and "us-central1-b" in text and "(the network stays)" in text
    assert "Left out:" in text and "europe-west4" in text
    shown = load_and_plan(_auto("gcp-a3-64"))
    assert any(w.startswith("failover: auto tries") for w in shown.warnings)


def test_auto_on_reserved_capacity_is_refused_with_the_fix() -> None:
    data = _auto("aws-p5-64", capacity={"type": "reservation", "reservation": "cr-0123456789abcdef0"})
    with pytest.raises(SpecError) as err:
        load_and_plan(data)
    problem = next(p for p in err.value.problems if p.path == "failover")
    assert "held in one place" in problem.rule and "by hand" in problem.fix


def test_only_auto_is_accepted_as_a_word() -> None:
    data = {**_auto("aws-p5-64"), "failover": "automatic"}
    with pytest.raises(SpecError) as err:
        load_spec(data)
    assert any(p.path.startswith("failover") for p in err.value.problems)


def test_auto_with_nothing_else_in_the_catalog_says_a_stockout_fails() -> None:
    shown = load_and_plan(_auto("alibaba-gn8-64"))
    assert any("found no other place" in w and "To fix" in w for w in shown.warnings)
    assert failover.tries(load_spec(_auto("alibaba-gn8-64"))) == 1


def test_up_with_auto_lands_in_the_next_zone_and_a_later_up_stays_there() -> None:
    first = plan_spec(stack_spec("gcp-a3-64"))
    fault = Fault("ZONE_RESOURCE_POOL_EXHAUSTED", type_token="gcp:compute/instanceGroupManager:InstanceGroupManager",
                  reported="listed", where=first.zone)  # fmt: skip
    data = _auto("gcp-a3-64")
    cluster = Cluster(data, stack="auto-gcp", mock=True, faults=[fault], display="none")
    assert cluster.up() is not None
    landed = cluster.plan()
    assert landed.region == first.region and landed.zone != first.zone
    state = MockStore().load("auto-gcp")
    assert state is not None and failover.deployed_try(cluster.spec, state.spec) == 1
    again = Cluster(data, stack="auto-gcp", mock=True, faults=[fault], display="none").up()
    assert again is not None and again.changed == 0
    Cluster(data, stack="auto-gcp", mock=True, display="none").down()
    assert MockStore().load("auto-gcp") is None

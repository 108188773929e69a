"""The Slurm controller is in the plan's price: its catalog price is the plan's scheduler part, the hourly total and the
cost cap count it, and a controller type the catalog cannot price is named, never hidden."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from provision.catalog import load_catalog
from provision.clouds.base import plan_spec
from provision.spec import load_target
from provision.spec.errors import BudgetError
from provision.spec.slurm import SlurmSpec

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
PRICED = ["aws-p5-16-slurm", "gcp-a3-16-slurm", "azure-ndh100-16-slurm"]


def _without_scheduler(spec: Any) -> Any:
    return spec.model_copy(update={"scheduler": type(spec.scheduler)()})


@pytest.mark.parametrize("stack", PRICED)
def test_the_controller_is_priced_from_the_catalog_and_counted_in_the_hourly_total(stack: str) -> None:
    plan = plan_spec(load_target(stack, ROOT), now=NOW)
    ctl = plan.extra.slurm
    price = load_catalog().cpu_price(plan.cloud, ctl.instance_type, plan.region)
    assert price is not None and price > 0
    assert plan.cost.scheduler_hourly_usd == pytest.approx(price, abs=1e-4)  # the estimate rounds to 4 places
    plain = plan_spec(_without_scheduler(plan.spec), now=NOW)
    assert plan.cost.hourly_usd == pytest.approx(plain.cost.hourly_usd + price, abs=1e-3)
    assert plan.summary()["cost"]["scheduler_hourly_usd"] == pytest.approx(price, abs=1e-4)


def test_the_cost_cap_counts_the_controller() -> None:
    spec = load_target("aws-p5-16-slurm", ROOT)
    ttl_h = spec.lifetime.ttl.total_seconds() / 3600
    nodes_only = plan_spec(_without_scheduler(spec), now=NOW).cost.hourly_usd * ttl_h
    # A cap the nodes, NAT and storage fit under for the ttl, but not with the controller's hours.
    cap = round(nodes_only + 0.5, 2)
    lifetime = spec.lifetime.model_copy(update={"max_cost_usd": cap})
    plan_spec(_without_scheduler(spec.model_copy(update={"lifetime": lifetime})), now=NOW)
    with pytest.raises(BudgetError):
        plan_spec(spec.model_copy(update={"lifetime": lifetime}), now=NOW)


def test_alibabas_controller_is_priced_at_the_catalogs_labelled_estimate_and_says_so() -> None:
    plan = plan_spec(load_target("alibaba-gn8-16-slurm", ROOT), now=NOW)
    guess = load_catalog().cpu_estimate("alibaba", "ecs.g7.xlarge", plan.region)
    assert guess is not None
    assert plan.cost.scheduler_hourly_usd == pytest.approx(guess.usd)
    assert plan.cost.unpriced == () and plan.cost.estimated == ("slurm controller (ecs.g7.xlarge)",)
    assert any(w.startswith("slurm controller (ecs.g7.xlarge) is priced at an ESTIMATE") for w in plan.warnings)
    plain = plan_spec(_without_scheduler(plan.spec), now=NOW)
    assert plan.cost.hourly_usd == pytest.approx(plain.cost.hourly_usd + guess.usd, abs=1e-3)


def test_an_unpriced_controller_type_is_named_and_left_out_of_the_cap() -> None:
    spec = load_target("alibaba-gn8-16-slurm", ROOT)
    slurm = SlurmSpec(controller_instance_type="ecs.g7.2xlarge")
    plan = plan_spec(spec.model_copy(update={"scheduler": spec.scheduler.model_copy(update={"slurm": slurm})}), now=NOW)
    assert plan.cost.scheduler_hourly_usd is None
    assert plan.cost.unpriced == ("slurm controller (ecs.g7.2xlarge)",)
    assert any("slurm controller (ecs.g7.2xlarge)" in w and "not counted" in w for w in plan.warnings)


def test_a_controller_type_the_spec_names_is_priced_only_where_the_catalog_has_it() -> None:
    spec = load_target("aws-p5-16-slurm", ROOT)
    slurm = spec.scheduler.slurm.model_copy(update={"controller_instance_type": "m7i.2xlarge"})
    other = spec.model_copy(update={"scheduler": spec.scheduler.model_copy(update={"slurm": slurm})})
    plan = plan_spec(other, now=NOW)
    assert plan.extra.slurm.instance_type == "m7i.2xlarge"
    assert plan.cost.unpriced == ("slurm controller (m7i.2xlarge)",)

"""Labelled estimates where no vendor price is readable: each one is what its stated method gives on today's
catalog, errs high, gives way to a vendor figure, and is called an ESTIMATE wherever a plan or sizing uses it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.catalog.models import ESTIMATE_BASIS
from provision.cli.app import app


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def fs(cat, kind: str, tier: str):
    return next(f for f in cat.filesystems if f.kind == kind and f.tier == tier)


def test_fsx_persistent_2_250_is_bounded_by_twice_the_125_tier_in_us_east_1_only(cat) -> None:
    p2 = fs(cat, "fsx-lustre", "PERSISTENT_2")
    guess = p2.estimates_by_throughput[250]

    assert guess.usd == pytest.approx(2 * p2.price_per_tib_month_by_throughput[125])
    assert p2.price_per_tib_month(250, "us-east-1") == guess.usd
    assert p2.estimate_for(250, "us-east-1") is guess
    assert p2.estimate_for(125, "us-east-1") is None  # a vendor-side figure prices that tier
    assert p2.price_per_tib_month(250, "eu-west-1") is None  # the bound holds where its basis was read
    assert p2.price_per_tib_month(500, "us-east-1") is None  # no estimate for 500/1000: unpriced, said so


def test_a_vendor_figure_replaces_the_estimate(cat) -> None:
    p2 = fs(cat, "fsx-lustre", "PERSISTENT_2")
    refreshed = p2.model_copy(update={"price_per_tib_month_by_throughput": {125: 148.48, 250: 200.0}})

    assert refreshed.price_per_tib_month(250, "us-east-1") == 200.0
    assert refreshed.estimate_for(250, "us-east-1") is None


@pytest.mark.parametrize("sku", [40, 125, 250, 500])
def test_amlfs_is_the_highest_vendor_priced_managed_lustre_at_its_tier_or_the_next(cat, sku: int) -> None:
    row = fs(cat, "amlfs", f"AMLFS-Durable-Premium-{sku}")
    vendor: dict[int, list[float]] = {}
    for f in cat.filesystems:
        if f.kind == "fsx-lustre":
            for tier, price in f.price_per_tib_month_by_throughput.items():
                vendor.setdefault(tier, []).append(price)
        elif f.kind == "managed-lustre" and f.price_per_tib_month_usd:
            vendor.setdefault(int(f.baseline_mbps_per_tib), []).append(f.price_per_tib_month_usd)
    tier = min(t for t in vendor if t >= sku)

    assert row.estimates_by_throughput[sku].usd == pytest.approx(max(vendor[tier]))
    assert row.price_per_tib_month(None, "eastus") == row.estimates_by_throughput[sku].usd
    assert row.estimate_for(None, "eastus") is not None


@pytest.mark.parametrize("instance_type", ["ecs.ebmgn8v.48xlarge", "ecs.gn8v-8x.48xlarge"])
def test_gn8_is_bounded_by_the_dearest_h100_gpu_hour_in_the_catalog(cat, instance_type: str) -> None:
    offer = cat.instance("alibaba", instance_type)
    dearest = max(
        r.price_per_hour_usd / o.gpus_per_node
        for o in cat.instances
        if o.gpu == "H100"
        for r in o.regions.values()
        if r.price_per_hour_usd
    )

    price, basis = offer.capacity_price("cn-hangzhou", "on-demand")
    assert basis == ESTIMATE_BASIS
    assert price == pytest.approx(dearest * offer.gpus_per_node)
    assert offer.estimate("cn-hangzhou", "on-demand").made.isoformat() == "2026-12-02"


def test_plan_labels_the_estimated_parts() -> None:
    out = CliRunner().invoke(app, ["plan", "azure-ndh100-64"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "includes ESTIMATES: storage (amlfs AMLFS-Durable-Premium-250)" in out.output
    assert "priced at an ESTIMATE, not a vendor figure: $215.04 per TiB-month" in out.output

    doc = json.loads(CliRunner().invoke(app, ["plan", "alibaba-gn8-64", "--json"]).stdout)
    assert doc["cost"]["estimated"] == ["compute (ecs.ebmgn8v.48xlarge)"] and not doc["cost"]["unpriced"]


def test_size_marks_an_estimated_price() -> None:
    out = CliRunner().invoke(app, ["size", "--params", "70B", "--tokens", "2T", "--gpu", "H20"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("│ alibaba"))
    assert row.count("*") == 2
    assert "labelled ESTIMATE, not a vendor price" in out.output
    doc = json.loads(CliRunner().invoke(app, ["size", "--params", "70B", "--tokens", "2T", "--json"]).stdout)
    azure = next(f for f in doc["storage"]["filesystems"] if f["cloud"] == "azure")
    assert azure["price_estimated"] and "ESTIMATE" in azure["note"]


def test_offers_counts_and_labels_the_same_estimate_plan_uses() -> None:
    from pathlib import Path

    from provision.clouds.base import plan_spec
    from provision.planning.cluster_offers import cluster_offers
    from provision.spec import load_target

    plan = plan_spec(load_target("alibaba-gn8-64", Path(__file__).resolve().parents[1]))
    (row,) = [
        r
        for r in cluster_offers(load_catalog(), plan.gpus, gpu="H20", region=plan.region)
        if r.instance_type == plan.instance_type
    ]

    assert row.estimated == ("compute (ecs.ebmgn8v.48xlarge)",) and row.compute_hourly_usd is not None
    assert row.compute_hourly_usd == pytest.approx(plan.cost.compute_hourly_usd, rel=0.01)
    out = CliRunner().invoke(app, ["offers", "--gpus", "64", "--gpu", "H20"], env={"COLUMNS": "80"})
    assert "*" in out.output and "labelled ESTIMATE" in out.output

"""``provision catalog refresh`` for storage rows: FSx for Lustre (AWS Price List) and Azure Managed Lustre
(Azure Retail Prices), replayed from fixtures; no test reaches the network.

The fixtures tests/data/prices/*_sample*.json are FORMAT SAMPLES, NOT PRICE SOURCES: their shapes follow the APIs'
documentation (cited in each file's ``_comment``), and every price, meter name and SKU in them is made up. A number
asserted below is a made-up input run through the conversion, never a vendor's figure.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.catalog import read_cloud_files
from provision.catalog.models import CloudFile
from provision.ops.catalog.refresh import AwsSource, Sources, SourceUnavailable, apply_changes, refresh
from provision.ops.catalog.refresh_storage import amlfs_tier_number, azure_lustre_prices, fsx_lustre_prices

DATA = Path(__file__).parent / "data" / "prices"
ROOT = Path(__file__).resolve().parent.parent
TODAY = date(2026, 12, 1)


def _fsx_products(region: str = "us-east-1") -> list[str]:
    """The sample as the API hands it over: each PriceList entry a JSON string."""
    doc = json.loads((DATA / "aws_fsx_lustre_sample.json").read_text())
    return [json.dumps(p) for p in doc["PriceList"]]


def _azure_get(url: str) -> Any:
    if "sample-page=2" in url:
        return json.loads((DATA / "azure_amlfs_sample_page2.json").read_text())
    if "Azure+Managed+Lustre" in url and "eastus" in url:
        return json.loads((DATA / "azure_amlfs_sample_page1.json").read_text())
    return json.loads((DATA / "azure_empty.json").read_text())


def _aws(fsx: Any = _fsx_products) -> AwsSource:
    return AwsSource(get_products=lambda t, r: [], spot_prices=lambda t, r: [], fsx_products=fsx)


def _changes(result: Any) -> dict[tuple[str, str, str], tuple[Any, Any]]:
    return {(c.item, c.region, c.field): (c.old, c.new) for c in result.changes}


# --------------------------------------------------------------------------------------------- parsing


def test_fsx_parser_keys_ssd_lustre_storage_by_deployment_and_tier_in_the_region() -> None:
    got = fsx_lustre_prices(_fsx_products(), "us-east-1")

    # GB-month x 1024 = per TiB-month. HDD, backup, ONTAP and the us-west-2 row are not read.
    assert got.prices == {
        "PERSISTENT/125": pytest.approx(0.111 * 1024),
        "PERSISTENT/250": pytest.approx(0.222 * 1024),
        "PERSISTENT/100": pytest.approx(0.101 * 1024),  # tier from the usagetype suffix (no throughputCapacity)
        "SCRATCH": pytest.approx(0.099 * 1024),
    }
    # Two us-east-1 rows for the 500 tier disagree: neither is used, and both are named.
    (problem,) = got.problems
    assert (
        problem.startswith("PERSISTENT/500: the vendor's rows disagree") and "0.333" in problem and "0.344" in problem
    )


def test_fsx_parser_reads_another_region_only_when_asked_for_it() -> None:
    assert fsx_lustre_prices(_fsx_products(), "us-west-2").prices == {"PERSISTENT/250": pytest.approx(0.999 * 1024)}


def test_amlfs_parser_maps_meters_to_sku_tiers_and_converts_units() -> None:
    tiers = [
        "AMLFS-Durable-Premium-40",
        "AMLFS-Durable-Premium-125",
        "AMLFS-Durable-Premium-250",
        "AMLFS-Durable-Premium-500",
    ]

    got = azure_lustre_prices(_azure_get, "eastus", tiers)

    # 1 GiB/Hour x 1024 x 730; 1 TiB/Month as is. The westus row, the second usage band (tierMinimumUnits 100)
    # and the reservation row are not pay-as-you-go eastus rows.
    assert got.prices == {
        "AMLFS-Durable-Premium-250": pytest.approx(0.0001 * 1024 * 730),
        "AMLFS-Durable-Premium-500": pytest.approx(500.0),
    }
    assert any(p.startswith("AMLFS-Durable-Premium-125:") and "1 GB/Month" in p for p in got.problems)
    assert any(p.startswith("AMLFS-Durable-Premium-40: the vendor's rows disagree") for p in got.problems)


def test_amlfs_tier_number_reads_the_sku_name() -> None:
    assert amlfs_tier_number("AMLFS-Durable-Premium-250") == 250
    assert amlfs_tier_number("Premium") is None


# --------------------------------------------------------------------------------------------- refresh


def test_aws_refresh_reports_fsx_tier_prices_for_the_rows_region_and_says_what_is_missing() -> None:
    result = refresh(read_cloud_files(), ["aws"], Sources(aws=_aws), today=TODAY)
    changes = _changes(result)

    p2 = "fsx-lustre/PERSISTENT_2"
    assert changes[(p2, "us-east-1", "price_per_tib_month_by_throughput[125]")] == (148.48, 113.664)
    assert changes[(p2, "us-east-1", "price_per_tib_month_by_throughput[250]")] == (None, 227.328)
    assert changes[("fsx-lustre/PERSISTENT_1", "us-east-1", "price_per_tib_month_by_throughput[100]")] == (
        None,
        103.424,
    )
    assert changes[("fsx-lustre/SCRATCH_2", "us-east-1", "price_per_tib_month_usd")] == (143.36, 101.376)
    # 500 (rows disagree) and 1000 (no row) stay as the catalog has them, and the notes say why.
    assert not any("[500]" in c.field or "[1000]" in c.field for c in result.changes)
    assert any("PERSISTENT/500: the vendor's rows disagree" in n for n in result.notes)
    assert any(
        "PERSISTENT_2 price_per_tib_month_by_throughput[1000]" in n and "no PERSISTENT/1000" in n for n in result.notes
    )
    assert result.checked["aws"] >= 8


def test_aws_refresh_keeps_instance_prices_when_the_fsx_price_list_fails() -> None:
    def broken(region: str) -> list[str]:
        raise SourceUnavailable("pricing:GetProducts (AmazonFSx) failed: throttled")

    def products(instance_type: str, region: str) -> list[str]:
        dims = {"S.T.D": {"unit": "Hrs", "pricePerUnit": {"USD": "52.0"}}}
        return (
            [json.dumps({"terms": {"OnDemand": {"S.T": {"priceDimensions": dims}}}})] if region == "us-east-1" else []
        )

    aws = AwsSource(get_products=products, spot_prices=lambda t, r: [], fsx_products=broken)
    result = refresh(read_cloud_files(), ["aws"], Sources(aws=lambda: aws), today=TODAY)

    assert ("p5.48xlarge", "us-east-1", "price_per_hour_usd") in _changes(result)
    assert any("fsx-lustre us-east-1: not checked" in n and "throttled" in n for n in result.notes)
    assert "aws" not in result.skipped


def test_azure_refresh_reports_amlfs_tiers_in_eastus_only() -> None:
    result = refresh(read_cloud_files(), ["azure"], Sources(get=_azure_get), today=TODAY)
    changes = _changes(result)

    amlfs = {k: v for k, v in changes.items() if k[0].startswith("amlfs/")}
    assert amlfs == {
        ("amlfs/AMLFS-Durable-Premium-250", "eastus", "price_per_tib_month_usd"): (None, 74.752),
        ("amlfs/AMLFS-Durable-Premium-500", "eastus", "price_per_tib_month_usd"): (None, 500.0),
    }
    assert any("AMLFS-Durable-Premium-125" in n and "unit" in n for n in result.notes)


# --------------------------------------------------------------------------------------------- writing


@pytest.fixture
def catalog_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the catalog data that ``load_catalog`` reads instead of the package's."""
    import provision.catalog as pkg

    data = tmp_path / "data"
    shutil.copytree(Path(pkg.__file__).parent / "data", data)
    monkeypatch.setattr(pkg, "read_data", lambda name: yaml.safe_load((data / name).read_text(encoding="utf-8")))
    pkg.load_catalog.cache_clear()
    yield data
    pkg.load_catalog.cache_clear()


def test_written_storage_prices_are_scoped_to_the_region_they_were_read_in(catalog_copy: Path) -> None:
    result = refresh(read_cloud_files(), ["aws", "azure"], Sources(get=_azure_get, aws=_aws), today=TODAY)

    written = apply_changes(catalog_copy, result)

    assert sorted(p.name for p in written) == ["aws.yaml", "azure.yaml"]
    aws = CloudFile.model_validate(yaml.safe_load((catalog_copy / "aws.yaml").read_text()))
    azure = CloudFile.model_validate(yaml.safe_load((catalog_copy / "azure.yaml").read_text()))
    p2 = next(f for f in aws.filesystems if f.tier == "PERSISTENT_2")
    assert p2.price_per_tib_month_by_throughput == {125: 113.664, 250: 227.328}
    assert p2.priced_regions == ("us-east-1",)
    assert any("AmazonFSx" in s.ref and s.retrieved == TODAY and "us-east-1" in s.covers for s in p2.sources)
    # A row priced before for every region keeps that scope; a row priced for the first time gets this region.
    scratch = next(f for f in aws.filesystems if f.tier == "SCRATCH_2")
    assert scratch.price_per_tib_month_usd == 101.376 and scratch.priced_regions == ()
    amlfs250 = next(f for f in azure.filesystems if f.tier == "AMLFS-Durable-Premium-250")
    assert amlfs250.price_per_tib_month_usd == 74.752 and amlfs250.priced_regions == ("eastus",)
    assert amlfs250.price_per_tib_month(None, "westus") is None


def test_a_written_answer_prices_the_stacks_that_were_gaps(catalog_copy: Path) -> None:
    """The pipeline closes the named gaps once a real answer arrives (here: the format samples)."""
    from provision.clouds.base import plan_spec
    from provision.spec import load_target

    result = refresh(read_cloud_files(), ["aws", "azure"], Sources(get=_azure_get, aws=_aws), today=TODAY)
    apply_changes(catalog_copy, result)
    now = datetime(2026, 12, 2, 12, tzinfo=timezone.utc)

    for stack in ("aws-p5-64", "aws-p5-64-eks", "azure-ndh100-64", "azure-ndh100-256", "azure-ndh100-64-aks"):
        plan = plan_spec(load_target(stack, ROOT), now=now)
        assert plan.cost.unpriced == (), stack
        assert plan.cost.storage_hourly_usd and plan.cost.storage_hourly_usd > 0, stack


def test_cli_prints_the_storage_diff_and_the_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import provision.ops.catalog.refresh as mod
    from provision.cli.app import app

    monkeypatch.setattr(mod, "default_sources", lambda: Sources(get=_azure_get))

    result = CliRunner().invoke(app, ["catalog", "refresh", "--cloud", "azure"], env={"COLUMNS": "160"})

    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "amlfs/AMLFS-Durable-Premium-250 eastus $/TiB-mo - 74.752" in out
    assert "note: azure amlfs eastus: AMLFS-Durable-Premium-40: the vendor's rows disagree" in out
    assert "--write" in out


def test_cli_json_carries_the_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import provision.ops.catalog.refresh as mod
    from provision.cli.app import app

    monkeypatch.setattr(mod, "default_sources", lambda: Sources(aws=_aws))

    result = CliRunner().invoke(app, ["catalog", "refresh", "--cloud", "aws", "--json"])

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert any(c["item"] == "fsx-lustre/PERSISTENT_2" and c["new"] == 227.328 for c in doc["changes"])
    assert any("PERSISTENT/500" in n for n in doc["notes"])

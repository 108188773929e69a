"""``provision catalog refresh``: price rows rebuilt from the vendors' price APIs, replayed from fixtures.

The fixtures under tests/data/prices/ are hand-written in the documented response shapes of the Azure
Retail Prices API, the AWS Price List Query API and the Cloud Billing Catalog API (this sandbox has no
network to record real answers). No test reaches the network: every source is injected.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.catalog import read_cloud_files
from provision.catalog.models import CloudFile
from provision.ops.catalog.refresh import (
    AwsSource,
    Sources,
    SourceUnavailable,
    apply_changes,
    aws_on_demand,
    azure_vm_prices,
    refresh,
)

DATA = Path(__file__).parent / "data" / "prices"
TODAY = date(2026, 12, 1)


def _json(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def azure_get(url: str) -> Any:
    """Replays the Retail Prices API: the H100 size has two pages, NetApp Standard one, everything else none."""
    if "Standard_ND96isr_H100_v5" in url:
        return _json("azure_nd_h100_page1.json")
    if "page2" in url:
        return _json("azure_nd_h100_page2.json")
    if "Azure+NetApp+Files" in url and "Standard+Capacity" in url:
        return _json("azure_netapp_standard.json")
    return _json("azure_empty.json")


def _changes(result: Any) -> dict[tuple[str, str, str], tuple[Any, Any]]:
    return {(c.item, c.region, c.field): (c.old, c.new) for c in result.changes}


def test_azure_rows_keep_linux_pay_as_you_go_and_spot_and_follow_pages() -> None:
    prices = azure_vm_prices(azure_get, "Standard_ND96isr_H100_v5")

    # The Windows row (112.5) and the Low Priority row (19.664) are ignored; page 2 adds swedencentral.
    assert prices == {
        "eastus": {"on-demand": 98.32, "spot": 29.496},
        "eastus2": {"on-demand": 96.0},
        "swedencentral": {"on-demand": 98.32},
    }


def test_azure_refresh_reports_each_changed_price() -> None:
    result = refresh(read_cloud_files(), ["azure"], Sources(get=azure_get), today=TODAY)
    changes = _changes(result)

    assert changes[("Standard_ND96isr_H100_v5", "eastus", "spot_price_per_hour_usd")] == (None, 29.496)
    assert changes[("Standard_ND96isr_H100_v5", "eastus2", "price_per_hour_usd")] == (98.32, 96.0)
    assert changes[("Standard_ND96isr_H100_v5", "swedencentral", "price_per_hour_usd")] == (None, 98.32)
    # Unchanged on-demand price in eastus is not a change.
    assert ("Standard_ND96isr_H100_v5", "eastus", "price_per_hour_usd") not in changes
    # NetApp Standard: 0.000202 USD per GiB-hour x 1024 x 730 h = 151.0 USD per TiB-month.
    assert changes[("netapp/Standard", "eastus", "price_per_tib_month_usd")] == (None, 151.0)
    assert result.skipped == {}
    assert result.checked["azure"] > 0


def test_written_prices_load_back_into_the_catalog(tmp_path: Path) -> None:
    import provision.catalog as pkg

    data = tmp_path / "data"
    shutil.copytree(Path(pkg.__file__).parent / "data", data)
    result = refresh(read_cloud_files(), ["azure"], Sources(get=azure_get), today=TODAY)

    written = apply_changes(data, result)

    assert written == [data / "azure.yaml"]
    text = (data / "azure.yaml").read_text()
    assert text.startswith("# Azure offer catalog")  # the header comment survives
    doc = CloudFile.model_validate(yaml.safe_load(text))
    assert doc.version == "2026-12-01"
    h100 = next(o for o in doc.instances if o.instance_type == "Standard_ND96isr_H100_v5")
    assert h100.regions["eastus2"].price_per_hour_usd == 96.0
    assert h100.regions["eastus"].spot_price_per_hour_usd == 29.496
    assert h100.regions["swedencentral"].zones == ()
    assert any(s.ref.startswith("https://prices.azure.com") and s.retrieved == TODAY for s in h100.sources)
    netapp = next(f for f in doc.filesystems if f.kind == "netapp" and f.tier == "Standard")
    assert netapp.price_per_tib_month_usd == 151.0


def _product(usd: str, unit: str = "Hrs") -> str:
    dims = {"SKU.TERM.DIM": {"unit": unit, "pricePerUnit": {"USD": usd}, "description": "On Demand Linux"}}
    return json.dumps({"product": {"sku": "SKU"}, "terms": {"OnDemand": {"SKU.TERM": {"priceDimensions": dims}}}})


def test_aws_price_list_answer_gives_the_hourly_on_demand_price() -> None:
    assert aws_on_demand([_product("55.0400000000")]) == 55.04
    assert aws_on_demand([_product("0.0000000000"), _product("63.296")]) == 63.296  # zero rows are reservations
    assert aws_on_demand([_product("1.0", unit="Quantity")]) is None
    assert aws_on_demand([]) is None


def test_aws_refresh_compares_on_demand_and_lowest_spot() -> None:
    def products(instance_type: str, region: str) -> list[str]:
        return [_product("52.00")] if (instance_type, region) == ("p5.48xlarge", "us-east-1") else []

    def spots(instance_type: str, region: str) -> list[float]:
        return [18.5, 16.0] if (instance_type, region) == ("p5.48xlarge", "us-east-1") else []

    result = refresh(read_cloud_files(), ["aws"], Sources(aws=lambda: AwsSource(products, spots)), today=TODAY)
    changes = _changes(result)

    assert changes[("p5.48xlarge", "us-east-1", "price_per_hour_usd")] == (55.04, 52.0)
    assert changes[("p5.48xlarge", "us-east-1", "spot_price_per_hour_usd")] == (17.6289, 16.0)
    # Rows the API did not answer are left alone, not erased.
    assert all(c.item == "p5.48xlarge" and c.region == "us-east-1" for c in result.changes)


def test_gcp_machine_price_is_vcpus_memory_and_gpus_at_the_family_skus() -> None:
    result = refresh(
        read_cloud_files(), ["gcp"], Sources(get=lambda url: _json("gcp_skus.json"), gcp_key="k"), today=TODAY
    )
    changes = _changes(result)

    # a3-highgpu-8g in us-east4: 208 vCPU x 0.035 + 1872 GiB x 0.001 + 8 GPU x 9.50 = 85.152 (spot SKU ignored).
    assert changes[("a3-highgpu-8g", "us-east4", "price_per_hour_usd")] == (87.83, 85.152)
    # No SKU for a3-megagpu-8g in the fixture: its prices stay.
    assert not any(c.item == "a3-megagpu-8g" for c in result.changes)


def _offline(url: str) -> Any:
    raise SourceUnavailable("GET https://prices.azure.com/api/retail/prices failed: network unreachable")


def _no_credentials() -> AwsSource:
    raise SourceUnavailable("no AWS credentials: the Price List Query API needs any AWS account's credentials")


def _no_alibaba_credentials() -> Any:
    raise SourceUnavailable("no Alibaba Cloud credentials: DescribePrice needs an account")


def test_unavailable_sources_are_skipped_with_the_reason() -> None:
    offline = Sources(get=_offline, aws=_no_credentials, gcp_key=None, alibaba=_no_alibaba_credentials)

    result = refresh(read_cloud_files(), ["aws", "gcp", "azure", "alibaba"], offline, today=TODAY)

    assert result.changes == []
    assert "network unreachable" in result.skipped["azure"]
    assert "credentials" in result.skipped["aws"]
    assert "GOOGLE_API_KEY" in result.skipped["gcp"]
    assert "Alibaba" in result.skipped["alibaba"]


def test_cli_refresh_prints_one_json_document_and_skips_what_it_cannot_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import provision.ops.catalog.refresh as mod
    from provision.cli.app import app

    monkeypatch.setattr(mod, "default_sources", lambda: Sources(get=_offline, aws=_no_credentials, gcp_key=None))

    result = CliRunner().invoke(app, ["catalog", "refresh", "--cloud", "AZURE", "--json"])

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["changes"] == [] and "network unreachable" in doc["skipped"]["azure"]
    assert list(doc["skipped"]) == ["azure"]


def test_cli_refresh_prints_the_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import provision.ops.catalog.refresh as mod
    from provision.cli.app import app

    monkeypatch.setattr(mod, "default_sources", lambda: Sources(get=azure_get))

    # A wide terminal: at 80 columns the table folds long item names across lines.
    result = CliRunner().invoke(app, ["catalog", "refresh", "--cloud", "azure"], env={"COLUMNS": "160"})

    assert result.exit_code == 0, result.output
    assert "Standard_ND96isr_H100_v5" in result.stdout and "98.32" in result.stdout and "96" in result.stdout
    assert "--write" in result.stdout


def test_cli_refresh_rejects_an_unknown_cloud() -> None:
    from typer.testing import CliRunner

    from provision.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "refresh", "--cloud", "oracle", "--json"])

    assert result.exit_code == 2
    assert json.loads(result.stdout)["problems"][0]["path"] == "--cloud"

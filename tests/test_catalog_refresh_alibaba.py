"""``provision catalog refresh --cloud alibaba``: ECS DescribePrice answers replayed offline.

The answers under tests/data/prices/alibaba_describe_price_*.json are written in DescribePrice's documented
response shape (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice)
with placeholder figures: this sandbox has no Alibaba account or network to record real ones. Each one is checked
against the ECS SDK's own response model, so a field the SDK would not carry fails here.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from provision.catalog import read_cloud_files
from provision.catalog.models import ESTIMATE_BASIS, CloudFile
from provision.ops.catalog.refresh import Sources, apply_changes, refresh
from provision.ops.catalog.refresh_alibaba import API_REF, AlibabaRefused, AlibabaSource, hourly_price

DATA = Path(__file__).parent / "data" / "prices"
CATALOG = Path(__file__).resolve().parents[1] / "provision" / "catalog" / "data"
TODAY = date(2026, 12, 2)


def body(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"alibaba_describe_price_{name}.json").read_text())


def recorded(instance_type: str, region: str, strategy: str) -> dict[str, Any]:
    """ebmgn8v is priced in cn-hangzhou (pay-as-you-go and spot); Alibaba refuses every other type."""
    if instance_type == "ecs.ebmgn8v.48xlarge" and region == "cn-hangzhou":
        return body("ebmgn8v_nospot" if strategy == "NoSpot" else "ebmgn8v_spot")
    raise AlibabaRefused("InvalidInstanceType.NotSupported: the instance type is not supported in this region")


def sources() -> Sources:
    return Sources(alibaba=lambda: AlibabaSource(describe_price=recorded))


@pytest.mark.parametrize("name", ["ebmgn8v_nospot", "ebmgn8v_spot", "cny"])
def test_the_replayed_answers_have_the_sdks_response_shape(name: str) -> None:
    from alibabacloud_ecs20140526.models import DescribePriceResponseBody

    doc = body(name)
    assert DescribePriceResponseBody().from_map(doc).to_map() == doc


def test_the_instance_line_is_the_price_not_the_total_with_the_system_disk() -> None:
    assert hourly_price(body("ebmgn8v_nospot")) == (98.7, "")
    price, why = hourly_price(body("cny"))
    assert price is None and "CNY" in why


def test_refresh_fills_pay_as_you_go_and_spot_and_notes_what_alibaba_refused() -> None:
    result = refresh(read_cloud_files(), ["alibaba"], sources(), today=TODAY)

    changes = {(c.item, c.region, c.field): (c.old, c.new) for c in result.changes}
    assert changes == {
        ("ecs.ebmgn8v.48xlarge", "cn-hangzhou", "price_per_hour_usd"): (None, 98.7),
        ("ecs.ebmgn8v.48xlarge", "cn-hangzhou", "spot_price_per_hour_usd"): (None, 29.61),
    }
    assert result.checked["alibaba"] >= 2 and "alibaba" not in result.skipped
    assert any("ecs.gn8v-8x.48xlarge cn-hangzhou" in n and "InvalidInstanceType" in n for n in result.notes)


def test_written_prices_replace_the_labelled_estimate_and_cite_describeprice(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(CATALOG, data)
    result = refresh(read_cloud_files(), ["alibaba"], sources(), today=TODAY)

    written = apply_changes(data, result)

    assert written == [data / "alibaba.yaml"]
    import yaml

    doc = CloudFile.model_validate(yaml.safe_load((data / "alibaba.yaml").read_text()))
    offer = next(o for o in doc.instances if o.instance_type == "ecs.ebmgn8v.48xlarge")
    assert offer.capacity_price("cn-hangzhou", "on-demand") == (98.7, "on-demand list price")
    assert offer.capacity_price("cn-hangzhou", "on-demand")[1] != ESTIMATE_BASIS
    assert any(s.ref == API_REF and s.retrieved == TODAY for s in offer.sources)
    assert doc.version == TODAY.isoformat()


def test_h20_rows_are_sourced_and_h100_h800_have_no_ecs_row_for_a_stated_reason() -> None:
    from provision.catalog import load_catalog

    cat = load_catalog()
    h20 = [o for o in cat.instances_for(cloud="alibaba") if o.gpu == "H20"]
    assert {o.instance_type for o in h20} == {"ecs.ebmgn8v.48xlarge", "ecs.gn8v-8x.48xlarge"}
    assert all(any(s.ref.startswith("https://") for s in o.sources) for o in h20)
    assert not [o for o in cat.instances_for(cloud="alibaba") if o.gpu in ("H100", "H800")]
    header = (CATALOG / "alibaba.yaml").read_text().split("\nversion:")[0]
    assert "H100 and H800" in header and "Lingjun" in header and "https://" in header


def test_without_an_account_the_cloud_is_skipped_with_the_reason() -> None:
    from provision.ops.catalog.refresh_alibaba import AlibabaUnavailable

    def no_account() -> AlibabaSource:
        raise AlibabaUnavailable("no Alibaba Cloud credentials: DescribePrice needs an account")

    result = refresh(read_cloud_files(), ["alibaba"], Sources(alibaba=no_account), today=TODAY)

    assert result.changes == [] and "credentials" in result.skipped["alibaba"]

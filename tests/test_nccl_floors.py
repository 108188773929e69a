"""NCCL floors (images/nccl-floors.yaml): every row names its source; vendor rows carry the published figure."""

from __future__ import annotations

import re
from typing import Any

import pytest
from nodekit import plan_of

from provision.catalog import load_catalog
from provision.ops.nccl import _floors, floor_for, floor_row

ROWS: dict[str, dict[str, Any]] = _floors()["types"]
PUBLISHED_KEYS = {"busbw_gbps", "collective", "message_bytes", "nodes", "where", "url", "date"}


@pytest.mark.parametrize("instance_type", sorted(ROWS))
def test_every_row_names_its_source(instance_type: str) -> None:
    row = ROWS[instance_type]
    assert row.get("source") in {"vendor", "derived", "measured"}, f"{instance_type}: source must be named"
    if row["source"] == "measured":
        assert float(row["busbw_gbps"]) > 0 and row.get("where") and row.get("date")
        return
    if row["source"] == "vendor":
        pub = row["published"]
        assert set(pub) >= PUBLISHED_KEYS, f"{instance_type}: published lacks {PUBLISHED_KEYS - set(pub)}"
        assert re.fullmatch(r"https://\S+", pub["url"]) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", pub["date"])
        assert float(pub["busbw_gbps"]) > 0 and int(pub["nodes"]) >= 2 and int(pub["message_bytes"]) > 0
        assert 0 < float(row["fraction"]) <= 1
    else:
        assert row.get("reason") and row.get("no_vendor_figure"), f"{instance_type}: a derived row says why"
        assert ("like" in row and ROWS[row["like"]]["source"] == "vendor") or 0 < float(row["fraction_of_fabric"]) <= 1


def test_default_row_is_marked_derived_with_a_reason() -> None:
    default = _floors()["default"]
    assert default["source"] == "derived" and default["reason"] and default["no_vendor_figure"]


def test_every_catalog_type_with_a_gpu_fabric_has_its_own_row() -> None:
    fabric_types = {o.instance_type for o in load_catalog().instances if o.fabric_gbps}
    assert fabric_types - set(ROWS) == set()


def test_vendor_floor_is_the_stated_fraction_of_the_published_result_and_cites_it() -> None:
    floor = floor_for(plan_of("aws-p5-64"))
    assert floor.kind == "vendor"
    assert floor.busbw_gbps == round(479.28 * 0.5, 1)  # 2 x p5.48xlarge, 8 GiB, awsome-distributed-training README
    assert "awsome-distributed-training" in floor.source and "2025-09-26" in floor.source
    # The old floor (link rate x 0.5) was not a published result; the vendor figure is above the NIC rate.
    assert floor.busbw_gbps != 3200 / 8 * 0.5


def test_a_type_without_a_figure_of_its_own_borrows_a_sibling_and_says_so() -> None:
    assert floor_row("p4d.24xlarge")["source"] == "derived"
    floor = floor_for(plan_of("aws-p5-64", instance_type="p4d.24xlarge"))
    assert floor.kind == "derived" and floor.busbw_gbps == round(78.33 * 0.5, 1)
    assert "p4de.24xlarge" in floor.source


def test_a_derived_floor_names_the_missing_vendor_figure() -> None:
    floor = floor_for(plan_of("azure-ndh100-ci"))
    assert floor.kind == "derived" and "no vendor figure" in floor.source and "single-VM" in floor.source
    assert floor.busbw_gbps == 3200 / 8 * 0.5


def test_a_measured_row_wins_and_names_where_and_when(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.ops.nccl as nccl

    data = {
        **_floors(),
        "types": {
            **ROWS,
            "p5.48xlarge": {
                "source": "measured",
                "busbw_gbps": 400.0,
                "where": "our 16-node run",
                "date": "2026-11-30",
            },
        },
    }
    monkeypatch.setattr(nccl, "_floors", lambda: data)
    floor = floor_for(plan_of("aws-p5-64"))
    assert floor.kind == "measured" and floor.busbw_gbps == 400.0 and "2026-11-30" in floor.source

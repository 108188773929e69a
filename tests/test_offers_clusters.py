"""``provision offers``: whole clusters across clouds cheapest first, spot prices, the --region price fix."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from typer.testing import CliRunner

from provision.catalog import load_catalog
from provision.cli.app import app
from provision.planning.cluster_offers import cluster_offers


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def offers_json(*args: str) -> list[dict[str, Any]]:
    result = invoke("offers", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def expected_total(row: dict[str, Any]) -> float:
    """The row's hourly total recomputed from the catalog rows by hand: nodes x price + NAT + its IP + storage."""
    cat = load_catalog()
    offer = cat.instance(row["cloud"], row["instance_type"])
    region = offer.regions[row["region"]]
    per_node = region.price_per_hour_usd if row["capacity"] == "on-demand" else region.spot_price_per_hour_usd
    net = cat.network_prices(row["cloud"])
    nat = net.nat_hourly(row["region"], row["nodes"])
    ip = net.public_ip_per_hour_usd * net.nat_public_ips
    storage = 0.0
    if row["storage"]:
        (fs,) = [
            f for f in cat.filesystems_for(row["cloud"], row["storage"]["kind"]) if f.tier == row["storage"]["tier"]
        ]
        storage = (
            fs.price_per_tib_month(row["storage"]["throughput_mbps_per_tib"]) * row["storage"]["size_gib"] / 1024 / 730
        )
    return math.ceil(64 / offer.gpus_per_node) * per_node + nat + ip + storage


def test_cheapest_64_h100_on_demand_across_clouds_is_one_command_and_adds_up() -> None:
    rows = offers_json("--gpus", "64", "--gpu", "H100")

    priced = [r for r in rows if r["hourly_usd"] is not None]
    assert {r["cloud"] for r in priced} == {"aws", "gcp", "azure"}  # Alibaba sells no H100 in the catalog
    assert [r["hourly_usd"] for r in priced] == sorted(r["hourly_usd"] for r in priced)
    assert rows[: len(priced)] == priced  # unpriced rows come last
    cheapest = rows[0]
    assert (cheapest["cloud"], cheapest["instance_type"], cheapest["nodes"]) == ("aws", "p5.48xlarge", 8)
    for row in priced:
        assert row["hourly_usd"] == pytest.approx(expected_total(row), abs=1e-3)
        assert row["hourly_usd"] == pytest.approx(
            row["compute_hourly_usd"] + row["storage_hourly_usd"] + row["network_hourly_usd"], abs=1e-3
        )


def test_per_cloud_keeps_each_clouds_cheapest() -> None:
    rows = offers_json("--gpus", "64", "--gpu", "h100", "--per-cloud")

    assert [r["cloud"] for r in rows] == ["aws", "gcp", "azure"]
    everything = offers_json("--gpus", "64", "--gpu", "h100")
    for row in rows:
        same_cloud = [r["hourly_usd"] for r in everything if r["cloud"] == row["cloud"] and r["hourly_usd"] is not None]
        assert row["hourly_usd"] == min(same_cloud)


def test_spot_prices_are_shown_and_used() -> None:
    rows = offers_json("--gpus", "16", "--cloud", "AWS", "--gpu", "h100", "--capacity", "SPOT", "--region", "US-EAST-1")

    (p5,) = [r for r in rows if r["instance_type"] == "p5.48xlarge"]
    spot = load_catalog().instance("aws", "p5.48xlarge").regions["us-east-1"].spot_price_per_hour_usd
    assert p5["capacity"] == "spot" and p5["node_hourly_usd"] == spot
    assert p5["compute_hourly_usd"] == pytest.approx(2 * spot)
    assert any("spot prices move" in n for n in p5["notes"])


def test_storage_is_part_of_the_total_and_fits_the_request() -> None:
    rows = offers_json("--gpus", "64", "--gpu", "H100", "--storage-gib", "4096", "--per-cloud")

    by_cloud = {r["cloud"]: r for r in rows}
    # 4 TiB: AWS rounds up to the next FSx size; GCP's Filestore zonal takes 4096; Azure NetApp Premium holds it.
    assert by_cloud["aws"]["storage"]["kind"] == "fsx-lustre" and by_cloud["aws"]["storage"]["size_gib"] == 4800
    assert by_cloud["gcp"]["storage"]["kind"] == "filestore" and by_cloud["gcp"]["storage"]["size_gib"] == 4096
    assert by_cloud["azure"]["storage"] == {
        "kind": "netapp",
        "tier": "Premium",
        "size_gib": 4096,
        "throughput_mbps_per_tib": 64,
        "hourly_usd": pytest.approx(301.25 * 4 / 730, abs=1e-4),
    }
    for row in rows:
        assert row["hourly_usd"] == pytest.approx(expected_total(row), abs=1e-3)


def test_rows_a_gpu_count_not_a_multiple_of_the_node_round_up_and_say_so() -> None:
    rows = cluster_offers(load_catalog(), 12, gpu="H100", cloud="aws")

    assert rows and all(r.nodes == 2 and r.gpus == 16 for r in rows)
    assert "12 GPUs rounded up to 2 whole nodes (16 GPUs)" in rows[0].notes


def test_capacity_priced_by_contract_is_listed_unpriced() -> None:
    """Reservations and capacity blocks of a type sold on-demand are contracts: the catalog holds no price."""
    rows = cluster_offers(load_catalog(), 64, gpu="H100", cloud="aws", capacity=("reservation", "capacity-block"))

    assert rows and all(r.hourly_usd is None and "compute" in r.unpriced for r in rows)
    assert "priced by contract" in rows[0].notes[0]


def test_region_filter_shows_that_regions_price_not_us_east_1() -> None:
    (row,) = offers_json("--cloud", "aws", "--gpu", "H100", "--region", "ap-northeast-1")

    assert row["price_per_hour_usd"] == {"ap-northeast-1": 68.8}
    assert row["regions"] == ["ap-northeast-1"]
    text = invoke("offers", "--cloud", "aws", "--gpu", "H100", "--region", "ap-northeast-1").stdout
    assert "68.80" in text and "55.04" not in text


def test_region_filter_without_a_price_says_unpriced() -> None:
    text = invoke("offers", "--cloud", "aws", "--gpu", "H100", "--region", "sa-east-1").stdout

    assert "unpriced" in text and "55.04" not in text


def test_filters_are_case_insensitive() -> None:
    lower = offers_json("--cloud", "aws", "--gpu", "h100")
    upper = offers_json("--cloud", "AWS", "--gpu", "H100-SXM")

    assert lower == upper and lower


def test_type_rows_carry_spot_prices() -> None:
    (row,) = offers_json("--cloud", "aws", "--gpu", "H100", "--region", "us-east-1")

    assert row["spot_price_per_hour_usd"] == {"us-east-1": 17.6289}


def test_bad_filters_are_reported_together() -> None:
    result = invoke("offers", "--gpus", "0", "--capacity", "cheap", "--sort", "fast", "--cloud", "oracle", "--json")

    assert result.exit_code == 2
    paths = [p["path"] for p in json.loads(result.stdout)["problems"]]
    assert paths == ["--cloud", "--capacity", "--sort", "--gpus"]


def test_human_cluster_table_names_unpriced_offers() -> None:
    result = invoke("offers", "--gpus", "64", "--gpu", "H100")

    assert result.exit_code == 0
    assert "p5.48xlarge" in result.stdout and "440.37" in result.stdout
    assert "parts without a catalog price (compute)" in result.stdout


def test_human_cluster_table_says_which_cloud_has_no_such_gpu() -> None:
    """Alibaba sells no H100 with a public price: the 64 x H100 answer says so instead of dropping it silently."""
    result = invoke("offers", "--gpus", "64", "--gpu", "H100")

    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "alibaba: no H100 instance type in the catalog, so no publicly priced H100 cluster" in out
    assert "aws: no" not in out and "gcp: no" not in out


def test_a_type_sold_only_by_reservation_is_offered_at_its_reservation_rate() -> None:
    rows = offers_json("--gpus", "64", "--gpu", "H200", "--cloud", "gcp", "--capacity", "on-demand,reservation")
    ultra = [r for r in rows if r["instance_type"] == "a3-ultragpu-8g"]
    rate = load_catalog().instance("gcp", "a3-ultragpu-8g").regions["us-central1"].reservation_price_per_hour_usd

    assert {r["capacity"] for r in ultra} == {"reservation"}  # never listed as on-demand
    (central,) = [r for r in ultra if r["region"] == "us-central1"]
    assert central["compute_hourly_usd"] == pytest.approx(8 * rate)
    assert any("commitment discounts" in n for n in central["notes"])
    assert all(r["hourly_usd"] is None for r in ultra if r["region"] not in ("us-central1", "us-east4", "us-west1"))


def test_on_demand_64_h100_with_storage_sums_each_rows_catalog_parts() -> None:
    """Issue 15.5 bar, with every part present: the total is compute + storage + network, each from the catalog."""
    rows = offers_json("--gpus", "64", "--gpu", "H100", "--capacity", "on-demand", "--storage-gib", "10240")

    priced = [r for r in rows if r["hourly_usd"] is not None]
    assert {r["capacity"] for r in rows} == {"on-demand"}
    assert len({r["cloud"] for r in priced}) >= 3
    assert [r["hourly_usd"] for r in priced] == sorted(r["hourly_usd"] for r in priced)
    assert rows[: len(priced)] == priced
    for row in priced:
        assert row["storage"] and row["storage"]["size_gib"] >= 10240 and row["storage_hourly_usd"] > 0
        assert row["network_hourly_usd"] > 0 and row["compute_hourly_usd"] > 0
        assert row["hourly_usd"] == pytest.approx(expected_total(row), abs=1e-3)


def test_type_table_fits_80_columns_without_cutting_a_type_or_a_price(monkeypatch: pytest.MonkeyPatch) -> None:
    """The longest type name (Standard_ND128isr_NDR_GB200_v6) folds; nothing is cut off with an ellipsis."""
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke("offers")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in result.stdout
    for o in load_catalog().instances:  # every type, whole or folded at the column's 18 characters
        name = o.instance_type
        assert all(name[i : i + 18] in result.stdout for i in range(0, len(name), 18)), name


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("--region", "us-eats-1"), "us-east-1"),  # a typo gets the close match, not an empty list
        (("--cloud", "gcp", "--region", "us-east-1"), "us-east1"),  # another cloud's region spelling
        (("--gpus", "64", "--region", "nowhere"), "use e.g."),
    ],
)
def test_an_unknown_region_is_refused_with_the_close_matches(args: tuple[str, ...], hint: str) -> None:
    result = invoke("offers", *args, "--json")
    assert result.exit_code == 2, result.stdout
    problem = json.loads(result.stdout)["problems"][0]
    assert problem["path"] == "--region" and hint in problem["fix"]


def test_a_known_region_in_any_case_still_lists_offers() -> None:
    rows = json.loads(invoke("offers", "--cloud", "aws", "--region", "US-EAST-1", "--json").stdout)
    assert rows and all("us-east-1" in r["regions"] for r in rows)


def test_offers_of_one_cloud_name_what_provision_cannot_do_there() -> None:
    """``Adapter.limits`` said it was shown in ``provision offers``; nothing read it. One renderer now lists the
    typed limits under the cloud's offers (text only; --json keeps its rows)."""
    from provision.clouds.base import Limit, get_adapter, limit_lines

    azure = get_adapter("azure")
    assert all(isinstance(k, Limit) for k in azure.limits)
    result = invoke("offers", "--cloud", "azure")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "provision on azure cannot give:" in text
    for line in limit_lines(azure.limits):
        assert " ".join(line.split()) in text
    assert "cannot give" not in invoke("offers", "--cloud", "azure", "--json").stdout


def test_a_gpu_no_cloud_sells_says_so_and_points_at_the_build() -> None:
    """`offers --gpu Ascend-910B` lists no type: it says no cloud sells the GPU, not just "0 offers"."""
    out = CliRunner().invoke(app, ["offers", "--gpu", "ascend-910b"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "no cloud in the catalog (aws, gcp, azure, alibaba) sells Ascend-910B" in out.stdout
    assert "provision size --gpu Ascend-910B --build" in out.stdout
    # A GPU some cloud sells, filtered away by --cloud, is not called unsold: the filter is named instead.
    mi = CliRunner().invoke(app, ["offers", "--gpu", "MI300X", "--cloud", "aws"], env={"COLUMNS": "200"})
    assert mi.exit_code == 0, mi.output
    assert "sells" not in mi.stdout and "no catalog offer matches --cloud aws, --gpu MI300X" in mi.stdout
    assert offers_json("--gpu", "Ascend-910B") == []  # --json stays one document


def test_a_type_priced_only_by_an_estimate_shows_it_labelled_as_the_cluster_rows_and_plan_do() -> None:
    """ebmgn8v has no vendor price: the type list shows the same labelled estimate `--gpus` and `plan` price it at,
    starred, not "unpriced"."""
    guess = load_catalog().instance("alibaba", "ecs.ebmgn8v.48xlarge").regions["cn-hangzhou"].price_estimate
    (row,) = [r for r in offers_json("--gpu", "H20") if r["instance_type"] == "ecs.ebmgn8v.48xlarge"]
    assert row["price_per_hour_usd"] == {"cn-hangzhou": None}
    assert row["estimated_price_per_hour_usd"] == {"cn-hangzhou": guess.usd}
    (p5,) = [r for r in offers_json("--cloud", "aws", "--gpu", "H100") if r["instance_type"] == "p5.48xlarge"]
    assert p5["estimated_price_per_hour_usd"] == {}  # a vendor price needs no estimate
    out = CliRunner().invoke(app, ["offers", "--gpu", "H20"], env={"COLUMNS": "80"})
    assert f"{guess.usd:,.2f}*" in out.stdout and "labelled ESTIMATE" in out.stdout

"""Cost: hourly estimate = nodes x price + filesystem + NAT, and the cost-cap rules.

Most cases use a small hand-made catalog whose figures make the arithmetic easy to check by
hand; a few recompute the packaged catalog's rows with the same formula.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import FIXED_NOW
from hypothesis import given, settings
from hypothesis import strategies as st
from test_spec_errors import BASES, mutate

from provision.catalog import Catalog, FilesystemOffer, InstanceOffer, NetworkPrices, load_catalog
from provision.catalog.models import RegionOffer, Source
from provision.planning.cost import HOURS_PER_MONTH, estimate, expiry, spent_usd, storage_hourly_usd
from provision.planning.resolve import resolve
from provision.spec import MAX_TTL, ClusterSpec, load_spec
from provision.spec.errors import BudgetError, ProblemCollector
from provision.spec.units import parse_duration

SRC = (Source(ref="hand-made test row", retrieved=date(2026, 11, 29), covers="everything"),)
MAX_HOURS = MAX_TTL.total_seconds() / 3600  # 2160


def _offer(instance_type: str, prices: dict[str, float | None]) -> InstanceOffer:
    return InstanceOffer(
        cloud="aws",
        instance_type=instance_type,
        family="x8",
        gpu="H100",
        gpus_per_node=8,
        gpu_memory_gib=80,
        vcpus=192,
        memory_gib=2048,
        fabric="efa",
        fabric_interfaces=32,
        consumption=("on-demand", "spot"),
        regions={r: RegionOffer(zones=(f"{r}a",), price_per_hour_usd=p) for r, p in prices.items()},
        sources=SRC,
    )


#: 40 USD per node-hour in us-east-1; no price in us-west-2; free in eu-west-1.
NODE = _offer("x8.big", {"us-east-1": 40.0, "us-west-2": None, "eu-west-1": 0.0})
#: 146 USD per TiB-month (0.2 USD per TiB-hour at 730 h) plus 0.73 USD per provisioned MB/s-month.
FS = FilesystemOffer(
    cloud="aws",
    kind="fsx-lustre",
    tier="TEST_TIER",
    protocol="lustre",
    min_gib=1024,
    step_gib=1024,
    max_gib=102400,
    throughput_mbps_per_tib=(125, 250),
    price_per_tib_month_usd=146.0,
    price_per_mbps_month_usd=0.73,
    sources=SRC,
)
NAT = NetworkPrices(cloud="aws", nat_per_hour_usd=0.05, sources=SRC)
TEST_CATALOG = Catalog(version="test", gpus=load_catalog().gpus, instances=(NODE,), filesystems=(FS,), network=(NAT,))

# 4 nodes x 40 = 160.00; 2 TiB x 146 / 730 = 0.40; 250 MB/s/TiB x 2 TiB x 0.73 / 730 = 0.50; NAT 0.05.
HOURLY = 160.0 + 0.4 + 0.5 + 0.05  # 160.95


def spec(**changes: Any) -> ClusterSpec:
    """A 32-GPU (4-node) aws spec with a 2 TiB, 250 MB/s/TiB filesystem, plus ``changes``."""
    base = mutate(BASES["aws"], {"gpus": 32, "storage.shared.size_gib": "2TiB"})
    base["storage"]["shared"]["throughput_mbps_per_tib"] = 250
    return load_spec(mutate(base, {k.replace("__", "."): v for k, v in changes.items()}))


def cost(s: ClusterSpec, catalog: Catalog = TEST_CATALOG) -> Any:
    found = ProblemCollector()
    res = resolve(s, catalog, found)
    assert not found, [str(p) for p in found.problems]
    storage = (res.storage, res.storage_size_gib, res.storage_throughput) if res.storage else None
    return estimate(s, catalog, res.offer, res.nodes, storage)


# --------------------------------------------------------------------------------- hourly estimate


def test_hourly_is_nodes_times_price_plus_filesystem_plus_nat() -> None:
    c = cost(spec())

    assert c.compute_hourly_usd == 160.0
    assert c.storage_hourly_usd == pytest.approx(0.9)
    assert c.network_hourly_usd == 0.05
    assert c.hourly_usd == pytest.approx(HOURLY)
    assert c.unpriced == ()
    assert (c.lifetime_hours, c.lifetime_usd) == (None, None)


def test_storage_hourly_by_hand() -> None:
    assert storage_hourly_usd(FS, 2048, None) == pytest.approx(0.4)  # capacity only
    assert storage_hourly_usd(FS, 2048, 250) == pytest.approx(0.9)
    assert storage_hourly_usd(FS, 10240, 125) == pytest.approx(146 * 10 / 730 + 0.73 * 125 * 10 / 730)
    unpriced = FS.model_copy(update={"price_per_tib_month_usd": None})
    assert storage_hourly_usd(unpriced, 2048, 250) is None


def test_no_shared_filesystem_costs_nothing() -> None:
    c = cost(load_spec(mutate(BASES["aws"], {"gpus": 32})))

    assert c.storage_hourly_usd == 0.0
    assert c.hourly_usd == pytest.approx(160.05)


def test_hourly_price_override_replaces_the_catalog_price() -> None:
    c = cost(spec(lifetime__hourly_price_usd=60.0))

    assert c.compute_hourly_usd == 240.0  # 4 nodes x 60
    assert c.hourly_usd == pytest.approx(240.95)


def test_unpriced_offer_has_no_hourly_but_keeps_ttl() -> None:
    c = cost(spec(region="us-west-2", lifetime__ttl="6h"))

    assert c.compute_hourly_usd is None
    assert c.hourly_usd is None
    assert c.unpriced == ("compute",)
    assert c.lifetime_hours == 6.0
    assert c.lifetime_usd is None


def test_packaged_catalog_row_by_hand() -> None:
    """aws p5.48xlarge x 8 in us-east-1 with FSx SCRATCH_2 2400 GiB, recomputed from the rows."""
    cat = load_catalog()
    s = load_spec(
        mutate(
            BASES["aws"], {"storage.shared.tier": "SCRATCH_2", "storage.shared.size_gib": 2400, "lifetime.ttl": "6h"}
        )
    )
    node_price = cat.instance("aws", "p5.48xlarge").price("us-east-1")
    (scratch,) = [f for f in cat.filesystems_for("aws", "fsx-lustre") if f.tier == "SCRATCH_2"]
    net = cat.network_prices("aws")
    nat = net.nat_per_hour_usd + net.public_ip_per_hour_usd * net.nat_public_ips  # the gateway and its IP
    assert node_price and scratch.price_per_tib_month_usd and nat  # the rows this test reads are priced

    c = cost(s, cat)

    fs = scratch.price_per_tib_month_usd * 2400 / 1024 / HOURS_PER_MONTH
    assert c.compute_hourly_usd == pytest.approx(8 * node_price)
    assert c.storage_hourly_usd == pytest.approx(fs, abs=1e-4)
    assert c.hourly_usd == pytest.approx(8 * node_price + fs + nat, abs=1e-4)
    assert c.lifetime_usd == pytest.approx(6 * (8 * node_price + fs + nat), abs=1e-3)


def test_packaged_catalog_lists_unpriced_parts() -> None:
    cat = load_catalog()
    s = load_spec(
        mutate(
            BASES["gcp"],
            {"region": "us-east4", "storage.shared.size_gib": 9000, "storage.shared.kind": "managed-lustre"},
        )
    )
    lustre = cat.filesystems_for("gcp", "managed-lustre")[0]
    # What this relies on: Managed Lustre is priced for us-central1 only, so a us-east4 plan leaves it unpriced.
    assert lustre.priced_regions == ("us-central1",) and lustre.price_per_tib_month(None, "us-east4") is None

    c = cost(s, cat)

    assert c.unpriced == ("storage (managed-lustre 1000)",)
    assert c.hourly_usd == pytest.approx(c.compute_hourly_usd + c.network_hourly_usd, abs=1e-4)


def test_gcp_nat_is_billed_per_node_up_to_32_then_flat() -> None:
    """Cloud NAT: $0.0014 per VM-hour up to 32 VMs, $0.044 above, plus $0.005 per NAT IP.

    Source: cloud.google.com/nat/pricing.
    """
    net = load_catalog().network_prices("gcp")

    assert net.nat_hourly("us-central1", 8) == pytest.approx(8 * 0.0014)
    assert net.nat_hourly("us-central1", 32) == pytest.approx(32 * 0.0014)
    assert net.nat_hourly("us-central1", 33) == pytest.approx(0.044)
    assert net.nat_ip_hourly() == pytest.approx(0.005)


def test_alibaba_nat_and_its_eip_differ_by_region() -> None:
    net = load_catalog().network_prices("alibaba")

    assert net.nat_hourly("cn-hangzhou", 8) == 0.034
    assert net.nat_hourly("us-east-1", 8) == 0.043
    assert net.nat_hourly("cn-nowhere-9", 8) is None
    # The EIP's configuration (retention) fee from Alibaba's EIP price overview; unlisted regions stay unpriced.
    assert net.nat_ip_hourly("cn-hangzhou") == 0.003
    assert net.nat_ip_hourly("cn-hongkong") == 0.009
    assert net.nat_ip_hourly("cn-nowhere-9") is None
    assert net.nat_ip_hourly() is None


# ------------------------------------------------------------------------------------- cost caps


def test_cap_derives_the_lifetime() -> None:
    c = cost(spec(lifetime__max_cost_usd=1000))

    assert c.lifetime_hours == pytest.approx(1000 / HOURLY, abs=1e-4)  # 6.2131 h
    assert c.lifetime_usd == pytest.approx(1000, abs=0.05)


def test_cap_lifetime_never_exceeds_the_longest_ttl() -> None:
    c = cost(spec(lifetime__max_cost_usd=9_000_000))

    assert c.lifetime_hours == MAX_HOURS


def test_cap_of_exactly_one_hour_is_accepted() -> None:
    c = cost(spec(lifetime__max_cost_usd=HOURLY))

    assert c.lifetime_hours == pytest.approx(1.0)


def test_cap_below_one_hour_is_refused() -> None:
    with pytest.raises(BudgetError) as info:
        cost(spec(lifetime__max_cost_usd=160))

    err = info.value
    assert err.exit_code == 3
    (p,) = err.problems
    assert (p.path, p.value) == ("lifetime.max_cost_usd", 160)
    assert p.rule == "buys less than one hour of this cluster ($160.95/h)"
    assert p.fix == "raise it to at least 161 or use fewer nodes"


def test_ttl_over_the_cap_is_refused_with_a_shorter_ttl() -> None:
    # 24 h x 160.95 = 3862.80 > 1000; 1000 / 160.95 h = 372.8 min -> 6h12m.
    with pytest.raises(BudgetError) as info:
        cost(spec(lifetime__ttl="24h", lifetime__max_cost_usd=1000))

    (p,) = info.value.problems
    assert p.path == "lifetime.max_cost_usd"
    assert p.rule == "is below the projected $3,862.80 for ttl 24h at $160.95/h"
    assert p.fix == "shorten lifetime.ttl to 6h12m or less, or raise the cap to 3863"
    assert info.value.exit_code == 3


def test_the_suggested_ttl_fits_under_the_cap() -> None:
    with pytest.raises(BudgetError) as info:
        cost(spec(lifetime__ttl="3d", lifetime__max_cost_usd=5000))
    suggested = re.search(r"shorten lifetime\.ttl to (\S+) or less", info.value.problems[0].fix)
    assert suggested is not None

    c = cost(spec(lifetime__ttl=suggested.group(1), lifetime__max_cost_usd=5000))

    assert c.lifetime_usd <= 5000
    assert parse_duration(suggested.group(1)) + timedelta(minutes=1) > timedelta(hours=5000 / HOURLY)


def test_ttl_costing_exactly_the_cap_is_accepted() -> None:
    c = cost(spec(lifetime__ttl="2h", lifetime__max_cost_usd=2 * HOURLY))

    assert c.lifetime_hours == 2.0
    assert c.lifetime_usd == pytest.approx(2 * HOURLY)


def test_ttl_under_the_cap_keeps_the_ttl() -> None:
    c = cost(spec(lifetime__ttl="6h", lifetime__max_cost_usd=5000))

    assert c.lifetime_hours == 6.0
    assert c.lifetime_usd == pytest.approx(6 * HOURLY)


def test_cap_on_unpriced_offer_is_refused() -> None:
    with pytest.raises(BudgetError) as info:
        cost(spec(region="us-west-2", lifetime__max_cost_usd=5000))

    (p,) = info.value.problems
    assert p.path == "lifetime.max_cost_usd"
    assert "no price for x8.big in us-west-2" in p.rule
    assert "lifetime.hourly_price_usd" in p.fix


def test_cap_on_unpriced_offer_works_with_an_hourly_price() -> None:
    c = cost(spec(region="us-west-2", lifetime__max_cost_usd=5000, lifetime__hourly_price_usd=30.0))

    assert c.compute_hourly_usd == 120.0
    assert c.lifetime_hours == pytest.approx(5000 / (120 + 0.9 + 0.05), abs=1e-4)


def test_cap_on_a_free_offer_lives_the_longest_ttl() -> None:
    s = load_spec(mutate(BASES["aws"], {"gpus": 32, "region": "eu-west-1", "lifetime.max_cost_usd": 100}))
    no_nat = Catalog("t", TEST_CATALOG.gpus, (NODE,), (), (NAT.model_copy(update={"nat_per_hour_usd": 0.0}),))

    c = cost(s, no_nat)

    assert c.hourly_usd == 0.0
    assert c.lifetime_hours == MAX_HOURS


@settings(max_examples=200, deadline=None)
@given(
    cap=st.floats(min_value=1, max_value=1e6, allow_nan=False),
    ttl_minutes=st.one_of(st.none(), st.integers(min_value=30, max_value=90 * 24 * 60)),
    nodes=st.integers(min_value=1, max_value=64),
)
def test_cap_is_never_exceeded(cap: float, ttl_minutes: int | None, nodes: int) -> None:
    changes: dict[str, Any] = {"gpus": nodes * 8, "lifetime.max_cost_usd": cap}
    if ttl_minutes is not None:
        changes["lifetime.ttl"] = f"{ttl_minutes}m"
    s = load_spec(mutate(BASES["aws"], changes))
    hourly = nodes * 40.0 + 0.05

    try:
        c = cost(s)
    except BudgetError as e:
        (p,) = e.problems
        assert p.path == "lifetime.max_cost_usd"
        assert cap < hourly or (ttl_minutes is not None and hourly * ttl_minutes / 60 > cap)
        return
    assert c.lifetime_usd <= cap + 0.01
    assert c.lifetime_hours <= MAX_HOURS
    assert cap >= hourly


# ---------------------------------------------------------------------------------- expiry, spend


def test_expiry_adds_the_lifetime_to_the_second() -> None:
    start = datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=timezone.utc)

    assert expiry(start, 6.5) == datetime(2026, 11, 29, 18, 30, tzinfo=timezone.utc)
    assert expiry(start, 1000 / HOURLY).microsecond == 0
    assert expiry(start, None) is None


def test_spent_usd_by_hand() -> None:
    start = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)

    assert spent_usd(10.0, start, start + timedelta(minutes=90)) == 15.0
    assert spent_usd(HOURLY, start, start + timedelta(hours=2)) == round(2 * HOURLY, 2)
    assert spent_usd(10.0, start, start - timedelta(hours=1)) == 0.0
    assert spent_usd(None, start, start) is None


# --------------------------------------------------------------------------------- via the plan


def _aws_adapter() -> Any:
    pytest.importorskip("provision.clouds.aws.adapter", reason="provision/clouds/aws/adapter.py is not written yet")
    from provision.clouds.base import get_adapter

    return get_adapter("aws")


def test_plan_carries_the_estimate_and_expiry() -> None:
    plan = _aws_adapter().plan(spec(lifetime__max_cost_usd=1000), catalog=TEST_CATALOG, now=FIXED_NOW)

    assert plan.cost.hourly_usd == pytest.approx(HOURLY)
    assert plan.cost.lifetime_hours == pytest.approx(1000 / HOURLY, abs=1e-4)
    assert plan.expires_at == expiry(FIXED_NOW, plan.cost.lifetime_hours)
    assert plan.summary()["hourly_usd"] == plan.cost.hourly_usd
    assert math.isclose(plan.summary()["max_lifetime_hours"], 1000 / HOURLY, abs_tol=1e-4)


def test_plan_refuses_a_cap_below_one_hour() -> None:
    adapter = _aws_adapter()

    with pytest.raises(BudgetError) as info:
        adapter.plan(spec(lifetime__max_cost_usd=100), catalog=TEST_CATALOG, now=FIXED_NOW)

    assert [p.path for p in info.value.problems] == ["lifetime.max_cost_usd"]


def test_a_spot_plan_states_the_spot_cost_offers_ranks_by_within_one_percent() -> None:
    """plan prices spot nodes at on-demand (the cap's upper bound) and states the spot figure beside it; that
    figure and `offers`' row for the same nodes agree."""
    import re

    from spec_cases.base import BASES
    from test_spec_errors import mutate

    from provision.catalog import load_catalog
    from provision.clouds.validate import load_and_plan
    from provision.planning.cluster_offers import cluster_offers

    data = mutate(
        BASES["aws"],
        {"region": "us-east-2", "gpus": 64, "instance_type": "p5.48xlarge", "capacity.type": "spot"},
    )
    plan = load_and_plan(data)
    (line,) = [w for w in plan.warnings if w.startswith("spot:")]
    stated = float(re.search(r"\$([\d,.]+)/h with storage and network", line).group(1).replace(",", ""))

    (row,) = [
        r
        for r in cluster_offers(load_catalog(), 64, gpu="H100", region="us-east-2", capacity=("spot",))
        if r.instance_type == "p5.48xlarge"
    ]
    assert row.hourly_usd is not None and abs(stated - row.hourly_usd) / row.hourly_usd < 0.01
    spot = load_catalog().instance("aws", "p5.48xlarge").regions["us-east-2"].spot_price_per_hour_usd
    assert f"${spot:,.2f}/node-h" in line and "read 20" in line  # the catalog's dated figure
    assert plan.cost.compute_hourly_usd > spot * plan.nodes  # the estimate and cap stay on-demand

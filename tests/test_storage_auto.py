"""``storage.shared.kind: auto`` picks the cheapest filesystem service and tier that fits the request."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from test_spec_errors import BASES, mutate

from provision.catalog import load_catalog
from provision.planning.fschoice import fits, smallest_allowed
from provision.planning.resolve import resolve, shared_kind
from provision.spec import load_spec
from provision.spec.errors import ProblemCollector

TODAY = date(2026, 11, 29)


def resolved(cloud: str, **shared: Any) -> tuple[Any, ProblemCollector]:
    data = mutate(BASES[cloud], {f"storage.shared.{k}": v for k, v in shared.items()})
    spec = load_spec(data)
    found = ProblemCollector()
    return spec, resolve(spec, load_catalog(), found, today=TODAY), found


def test_azure_4_tib_no_longer_picks_a_48_tib_tier() -> None:
    spec, res, found = resolved("azure", kind="auto", size_gib="4TiB")

    assert not found
    assert res.storage_size_gib == 4096
    # ANF Premium (a vendor figure) costs less than AMLFS-500's labelled estimate, the only other fitting tier.
    assert (res.storage.kind, res.storage.tier) == ("netapp", "Premium")
    assert shared_kind(spec, res) == "netapp"


def test_azure_auto_with_a_throughput_needs_a_tier_that_delivers_it() -> None:
    _, res, found = resolved("azure", kind="auto", size_gib="4TiB", throughput_mbps_per_tib=250)

    assert not found
    # Only AMLFS-500 (minimum 4 TiB) delivers >= 250 MB/s/TiB at 4 TiB; Premium-250's minimum is 8 TiB.
    assert (res.storage.kind, res.storage.tier, res.storage_throughput) == ("amlfs", "AMLFS-Durable-Premium-500", 500)


def test_gcp_4_tib_picks_filestore_zonal_not_a_9000_gib_lustre() -> None:
    _, res, found = resolved("gcp", kind="auto", size_gib="4TiB")

    assert not found
    assert (res.storage.kind, res.storage.tier, res.storage_size_gib) == ("filestore", "ZONAL", 4096)


def test_aws_rounds_up_to_the_next_allowed_size_and_says_so() -> None:
    _, res, found = resolved("aws", kind="auto", size_gib=3600)

    assert not found
    assert (res.storage.kind, res.storage_size_gib) == ("fsx-lustre", 4800)
    assert any("rounded up to 4800 GiB" in w for w in res.warnings)


def test_cheapest_priced_tier_wins() -> None:
    _, res, _ = resolved("aws", kind="auto", size_gib=2400)

    # SCRATCH_2 (143.36 USD/TiB-month) is cheaper than PERSISTENT_2 at 125 (148.48); PERSISTENT_1 is unpriced.
    assert res.storage.tier == "SCRATCH_2"


def test_nothing_fits_is_one_clear_problem() -> None:
    _, res, found = resolved("aws", kind="auto", size_gib=1000)

    assert res.storage is None
    (p,) = found.problems
    assert p.path == "storage.shared.size_gib" and p.value == 1000
    assert "fits no aws filesystem" in p.rule and "1200 GiB" in p.fix


def test_auto_without_a_size_keeps_the_clouds_parallel_filesystem() -> None:
    for cloud, kind in {"aws": "fsx-lustre", "gcp": "managed-lustre", "azure": "amlfs"}.items():
        _, res, found = resolved(cloud, kind="auto")
        assert not found and res.storage.kind == kind


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure", "alibaba"])
@pytest.mark.parametrize("size", [100, 1024, 4096, 5000, 36000, 100_000])
def test_every_fit_allows_its_size_and_is_not_below_the_request(cloud: str, size: int) -> None:
    for fit in fits(load_catalog(), cloud, None, size):
        assert fit.offer.allows_size(fit.size_gib)
        assert size <= fit.size_gib == smallest_allowed(fit.offer, size)
        assert fit.size_gib - size < max(fit.offer.step_gib, 1) or fit.size_gib in fit.offer.fixed_sizes_gib


def test_plan_of_an_auto_spec_builds_the_chosen_kind() -> None:
    from provision.clouds.validate import load_and_plan

    data = mutate(BASES["gcp"], {"storage.shared.size_gib": "4TiB"})
    plan = load_and_plan(data)

    assert plan.storage.kind == "filestore" and plan.storage.size_gib == 4096
    assert plan.cost.storage_hourly_usd == pytest.approx(256.0 * 4 / 730, abs=1e-4)


def _gcp_image_specs() -> list[tuple[str, str]]:
    """One (instance type, region) per shipped GCP image (images/gcp.yaml: one entry per fabric, and the default)."""
    seen: dict[str, tuple[str, str]] = {}
    for o in load_catalog().instances_for(cloud="gcp"):
        if o.fabric == "tcpx":
            continue  # its image entry is usable only with a pinned image.id (the TCPX kernel), whose OS is the user's
        region = "us-central1" if "us-central1" in o.regions else sorted(o.regions)[0]
        seen.setdefault(o.fabric, (o.instance_type, region))
    return sorted(seen.values())


@pytest.mark.parametrize("tib", [8, 12, 20, 36, 100])
@pytest.mark.parametrize(("instance_type", "region"), _gcp_image_specs())
def test_gcp_auto_plans_on_every_shipped_image(instance_type: str, region: str, tib: int) -> None:
    """auto chooses only what the node image mounts: Parallelstore's client is published for Ubuntu 22.04, so on
    the Ubuntu 24.04 A3 Mega image auto passes it over instead of choosing it and then refusing the plan."""
    from provision.clouds.validate import load_and_plan

    offer = load_catalog().instance("gcp", instance_type)
    data = mutate(
        BASES["gcp"],
        {
            "instance_type": instance_type,
            "gpu": offer.gpu,
            "gpus": 2 * offer.gpus_per_node,
            "region": region,
            "storage.shared.kind": "auto",
            "storage.shared.size_gib": f"{tib}TiB",
            "capacity.type": "on-demand" if "on-demand" in offer.consumption else "spot",
        },
    )
    plan = load_and_plan(data)
    assert plan.storage is not None and plan.storage.size_gib >= tib * 1024
    if offer.fabric == "tcpxo":  # the A3 Mega image is Ubuntu 24.04
        assert plan.storage.kind != "parallelstore"


def test_an_auto_scratch_pick_says_it_is_not_replicated() -> None:
    _, res, found = resolved("aws", kind="auto", size_gib="8TiB")

    assert not found
    assert res.storage.tier == "SCRATCH_2"  # the cheapest fit at 8 TiB
    assert any("not replicated" in w and "SCRATCH_2" in w for w in res.warnings)
    _, persistent, _ = resolved("aws", kind="auto", size_gib="8TiB", tier="PERSISTENT_2")
    assert not any("not replicated" in w for w in persistent.warnings)

"""Whole-cluster offers across clouds: what ``provision offers --gpus N`` lists.

For every catalog instance type carrying the GPU, every region it is sold in and every capacity type
asked for, the cluster of ``ceil(N / GPUs per node)`` nodes costs per hour:

* compute: nodes x the region's on-demand price (``on-demand``), recent spot price (``spot``) or, for types
  sold only through reservations, the rate a reservation bills before commitment discounts (``reservation``);
  other capacity types (capacity block, flex-start, reservations of on-demand types) are priced by contract
  and stay unpriced;
* storage: the cheapest catalog filesystem that fits ``storage_gib`` on that cloud (the ``kind: auto``
  rule, :mod:`provision.planning.fschoice`), none when ``storage_gib`` is 0;
* a part the catalog prices only by a labelled ESTIMATE (no vendor figure readable: the gn8 on-demand rate, FSx
  PERSISTENT_2 250, Azure Managed Lustre) is counted, as ``plan`` counts it, and named in ``estimated``;
* network: the NAT gateway (and its public IP) a private cluster egresses through
  (:func:`provision.planning.cost.network_parts`).

Rows whose every part is priced come first, cheapest first; the others follow, naming what is unpriced.
Pure: catalog in, rows out.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from provision.catalog import Catalog
from provision.planning.cost import network_parts
from provision.planning.fschoice import fits

PRICED_CAPACITY = ("on-demand", "spot")
#: The note of a node price that is the catalog's labelled estimate.
ESTIMATE_NOTE = "compute priced at the catalog's labelled ESTIMATE (no vendor price readable)"
SortKey = Literal["price", "gpu-price", "cloud"]


class ClusterOffer(BaseModel):
    """One way to buy the cluster; ``hourly_usd`` is None unless every part is priced."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cloud: str
    region: str
    instance_type: str
    gpu: str
    gpus_per_node: int
    nodes: int
    gpus: int
    capacity: str
    fabric: str
    fabric_gbps: float | None
    node_hourly_usd: float | None
    compute_hourly_usd: float | None
    storage: dict[str, Any] | None
    storage_hourly_usd: float | None
    network_hourly_usd: float | None
    hourly_usd: float | None
    priced_hourly_usd: float
    unpriced: tuple[str, ...]
    notes: tuple[str, ...]
    estimated: tuple[str, ...] = ()


def _node_price(offer: Any, region: str, capacity: str) -> tuple[float | None, str | None]:
    r = offer.regions[region]
    if capacity == "on-demand":
        if "on-demand" not in offer.consumption:
            return None, f"{offer.instance_type} is not sold on-demand ({', '.join(offer.consumption)})"
        if r.price_per_hour_usd is None and r.price_estimate is not None:
            return r.price_estimate.usd, ESTIMATE_NOTE
        return r.price_per_hour_usd, None if r.price_per_hour_usd is not None else "no on-demand price in the catalog"
    if capacity == "spot":
        note = "spot prices move hourly; the catalog keeps a recent one"
        return (
            r.spot_price_per_hour_usd,
            note if r.spot_price_per_hour_usd is not None else "no spot price in the catalog",
        )
    if capacity == "reservation" and r.reservation_price_per_hour_usd is not None:
        return r.reservation_price_per_hour_usd, "reservation list rate; commitment discounts lower it"
    return None, f"{capacity} capacity is priced by contract; the catalog holds no price"


def cluster_offers(
    catalog: Catalog,
    gpus: int,
    *,
    gpu: str | None = None,
    cloud: str | None = None,
    region: str | None = None,
    capacity: tuple[str, ...] = ("on-demand",),
    storage_gib: int = 0,
    sort: SortKey = "price",
    per_cloud: bool = False,
) -> list[ClusterOffer]:
    """Every cluster of ``gpus`` GPUs the catalog holds, cheapest first (see the module docstring).

    ``per_cloud`` keeps only each cloud's first row (its cheapest, with the default sort).
    """
    rows = []
    for offer in catalog.instances_for(cloud, gpu):
        per = offer.gpus_per_node
        nodes = math.ceil(gpus / per)
        for reg in sorted(offer.regions):
            if region is not None and reg.lower() != region.lower():
                continue
            for cap in capacity:
                if cap not in offer.consumption:
                    continue
                rows.append(_row(catalog, offer, reg, cap, nodes, gpus, storage_gib))
    ordered = sorted(rows, key=_sort_key(sort))
    if per_cloud:
        seen: set[str] = set()
        ordered = [r for r in ordered if not (r.cloud in seen or seen.add(r.cloud))]  # type: ignore[func-returns-value]
    return ordered


def _row(
    catalog: Catalog, offer: Any, region: str, capacity: str, nodes: int, gpus: int, storage_gib: int
) -> ClusterOffer:
    notes: list[str] = []
    unpriced: list[str] = []
    estimated: list[str] = []
    per_node, why = _node_price(offer, region, capacity)
    if why == ESTIMATE_NOTE:
        estimated.append(f"compute ({offer.instance_type})")
    if why:
        notes.append(why)
    compute = None if per_node is None else per_node * nodes
    if compute is None:
        unpriced.append("compute")
    if nodes * offer.gpus_per_node != gpus:
        notes.append(f"{gpus} GPUs rounded up to {nodes} whole nodes ({nodes * offer.gpus_per_node} GPUs)")
    if offer.cpu_arch != "x86_64":
        notes.append(f"{offer.cpu_arch} (NVIDIA Grace) hosts: `provision plan` does not support this type yet")
    storage = None
    fs_hourly: float | None = 0.0
    if storage_gib > 0:
        fit = fits(catalog, offer.cloud, region, storage_gib)
        if not fit:
            fs_hourly = None
            unpriced.append("storage")
            notes.append(f"no {offer.cloud} filesystem in the catalog holds {storage_gib} GiB")
        else:
            best = fit[0]
            fs_hourly = best.hourly_usd
            storage = {
                "kind": best.offer.kind,
                "tier": best.offer.tier,
                "size_gib": best.size_gib,
                "throughput_mbps_per_tib": best.throughput_mbps_per_tib,
                "hourly_usd": None if best.hourly_usd is None else round(best.hourly_usd, 4),
            }
            if best.hourly_usd is None:
                unpriced.append(f"storage ({best.offer.kind} {best.offer.tier})")
            elif best.offer.estimate_for(
                best.throughput_mbps_per_tib if best.offer.throughput_mbps_per_tib else None, region
            ):
                estimated.append(f"storage ({best.offer.kind} {best.offer.tier})")
                notes.append(f"storage ({best.offer.kind} {best.offer.tier}) priced at a labelled ESTIMATE")
    net_parts = network_parts(catalog, offer.cloud, region, nodes)
    known = [v for _, v in net_parts if v is not None]
    unpriced += [name for name, v in net_parts if v is None]
    network = sum(known) if known else None
    priced = (compute or 0.0) + (fs_hourly or 0.0) + (network or 0.0)
    total = None if unpriced else priced
    return ClusterOffer(
        cloud=offer.cloud,
        region=region,
        instance_type=offer.instance_type,
        gpu=offer.gpu,
        gpus_per_node=offer.gpus_per_node,
        nodes=nodes,
        gpus=nodes * offer.gpus_per_node,
        capacity=capacity,
        fabric=offer.fabric,
        fabric_gbps=offer.fabric_gbps,
        node_hourly_usd=per_node,
        compute_hourly_usd=_r(compute),
        storage=storage,
        storage_hourly_usd=_r(fs_hourly),
        network_hourly_usd=_r(network),
        hourly_usd=_r(total),
        priced_hourly_usd=round(priced, 4),
        unpriced=tuple(unpriced),
        notes=tuple(notes),
        estimated=tuple(estimated),
    )


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _sort_key(sort: SortKey) -> Any:
    def key(o: ClusterOffer) -> tuple[Any, ...]:
        if sort == "cloud":
            return (o.cloud, o.instance_type, o.region, o.capacity)
        price = o.hourly_usd if sort == "price" else o.node_hourly_usd
        return (price is None, price if price is not None else o.priced_hourly_usd, o.cloud, o.instance_type, o.region)

    return key

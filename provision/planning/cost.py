"""Cost: the hourly estimate of a plan, the cost of a lifetime, and the cap rule.

The hourly cost is compute (nodes x the catalog's on-demand price, or the spec's
``lifetime.hourly_price_usd``) + the shared filesystem (capacity x USD per TiB-month /
730 h, plus provisioned throughput where billed so) + the network pieces that bill by
the hour (one NAT gateway and its public IP). Spot and reservation prices differ from list
prices: the estimate is then an upper bound, and the plan says so; a type not sold on-demand is
priced at its own capacity type's rate (a reservation's list rate, a spot price). Prices hold in
the regions they were read for: a filesystem priced only elsewhere is unpriced here. A part the
catalog has no price for is named in ``unpriced`` (e.g. ``storage (amlfs AMLFS-Durable-Premium-250)``)
and left out of the total; the plan warns about it. A cost cap counts every priced part.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta

from provision.catalog import Catalog, FilesystemOffer, InstanceOffer
from provision.catalog.models import ESTIMATE_BASIS, HOURS_PER_MONTH, PriceEstimate
from provision.planning.plan import CostEstimate
from provision.spec import MAX_TTL, ClusterSpec
from provision.spec.errors import BudgetError, Problem

#: The smallest lifetime a cost cap may buy: below one hour of the cluster is refused.
MIN_CAPPED_HOURS = 1.0
#: The deepest documented discount below the on-demand list price is AWS Spot's "up to 90%"
#: (https://aws.amazon.com/ec2/spot/pricing/); an override of a non-on-demand price below this share
#: of the list price is a typo or a way around the cost cap.
MIN_DISCOUNTED_SHARE = 0.10
#: Environment variable: the hourly cost above which a plan with no cost cap gets a loud warning.
WARN_HOURLY_ENV = "PROVISION_WARN_HOURLY_USD"
DEFAULT_WARN_HOURLY_USD = 1000.0
#: A plan warns when its cloud's catalog prices were last reviewed longer ago than this.
STALE_AFTER_DAYS = 90


def storage_hourly_usd(
    offer: FilesystemOffer, size_gib: int, throughput_mbps_per_tib: int | None, region: str | None = None
) -> float | None:
    """USD per hour of a filesystem of ``size_gib`` in ``region``; ``None`` when the catalog has no price there.

    Prices are per TiB-month (binary: GiB / 1024) over :data:`HOURS_PER_MONTH` hours.
    """
    per_tib = offer.price_per_tib_month(throughput_mbps_per_tib, region)
    if per_tib is None:
        return None
    monthly = per_tib * size_gib / 1024
    if offer.price_per_mbps_month_usd is not None and throughput_mbps_per_tib is not None:
        monthly += offer.price_per_mbps_month_usd * throughput_mbps_per_tib * size_gib / 1024
    return monthly / HOURS_PER_MONTH


def estimated_parts(
    spec: ClusterSpec, offer: InstanceOffer, storage: tuple[FilesystemOffer, int, int | None] | None
) -> list[tuple[str, PriceEstimate]]:
    """The parts a plan prices at a labelled catalog estimate, with the estimate (its figure, method and date)."""
    out: list[tuple[str, PriceEstimate]] = []
    if spec.lifetime.hourly_price_usd is None and spec.region in offer.regions:
        guess = offer.estimate(spec.region, spec.capacity.type)
        if guess is not None:
            out.append((f"compute ({offer.instance_type})", guess))
    if storage is not None:
        fs, _, throughput = storage
        guess = fs.estimate_for(throughput if fs.throughput_mbps_per_tib else None, spec.region)
        if guess is not None:
            out.append((f"storage ({fs.kind} {fs.tier})", guess))
    return out


def _estimate_lines(
    spec: ClusterSpec, offer: InstanceOffer, storage: FilesystemOffer | None, cost: CostEstimate
) -> list[str]:
    """One line per part ``cost`` priced at an estimate: its figure, how and when it was made, what replaces it."""
    found: list[tuple[str, PriceEstimate, str]] = []
    for name in cost.estimated:
        if name.startswith("compute"):
            guess = offer.estimate(spec.region, spec.capacity.type) if spec.region in offer.regions else None
            if guess is not None:
                found.append((name, guess, "per node-hour; set lifetime.hourly_price_usd to the price you pay"))
        elif not name.startswith("storage") or storage is None:
            continue  # the scheduler's estimate: clouds/base.py words it with its own figure
        elif not storage.estimates_by_throughput and storage.price_estimate is not None:
            found.append((name, storage.price_estimate, "per TiB-month; the bill may differ from it"))
        elif storage.estimates_by_throughput:
            shared = spec.storage.shared
            want = shared.throughput_mbps_per_tib if shared is not None else None
            by_tier = storage.estimates_by_throughput
            tier = want if want in by_tier else next(iter(by_tier))
            if storage.baseline_mbps_per_tib and not storage.throughput_mbps_per_tib:
                tier = int(storage.baseline_mbps_per_tib) if int(storage.baseline_mbps_per_tib) in by_tier else tier
            found.append((name, by_tier[tier], "per TiB-month; the bill may differ from it"))
    return [estimate_line(name, guess, unit) for name, guess, unit in found]


def estimate_line(name: str, guess: PriceEstimate, unit: str) -> str:
    """The plan warning for part ``name`` priced at the labelled estimate ``guess`` (``unit``: what it is per)."""
    return (
        f"{name} is priced at an ESTIMATE, not a vendor figure: ${guess.usd:,.2f} {unit} (made "
        f"{guess.made.isoformat()}; {guess.method}); `provision catalog refresh` replaces it with the vendor's "
        "price where its price API is reachable."
    )


def network_parts(catalog: Catalog, cloud: str, region: str, nodes: int) -> list[tuple[str, float | None]]:
    """The hourly network parts of a private cluster: its NAT gateway and the gateway's public IP."""
    prices = catalog.network_prices(cloud)
    return [
        ("network: NAT gateway", prices.nat_hourly(region, nodes)),
        ("network: NAT public IP", prices.nat_ip_hourly(region)),
    ]


def price_basis_warnings(
    spec: ClusterSpec,
    offer: InstanceOffer,
    storage: FilesystemOffer | None,
    nodes: int | None = None,
    cost: CostEstimate | None = None,
) -> list[str]:
    """What the estimate's figures are, where that is not the plain on-demand list price in this region.

    With ``nodes`` and ``cost``, a spot plan also states what the same nodes cost at the catalog's spot price
    (the figure ``offers`` ranks by), next to the on-demand figure the cap is checked against.
    """
    out = []
    if storage is not None and not storage.priced_in(spec.region):
        out.append(
            f"storage ({storage.kind} {storage.tier}) has a catalog price only for "
            f"{', '.join(storage.priced_regions)}; prices differ by region, so it stays unpriced in {spec.region}."
        )
    local = storage.converted_price(spec.region) if storage is not None else None
    if storage is not None and local is not None:
        rate = local.rate
        out.append(
            f"storage ({storage.kind} {storage.tier}) is priced in {local.currency} only "
            f"({local.currency} {local.per_gib_month:g} per GiB-month in {spec.region}); the estimate converts it at "
            f"the {rate.authority} of {rate.rate_date.isoformat()} (1 USD = {1 / rate.usd_per_unit:.4f} "
            f"{local.currency}), so the USD figure moves with the exchange rate."
        )
    if cost is not None:
        out.extend(_estimate_lines(spec, offer, storage, cost))
    out.extend(_contract_price_warnings(spec, offer))
    if spec.capacity.type != "on-demand" and spec.lifetime.hourly_price_usd is None:
        price, basis = offer.capacity_price(spec.region, spec.capacity.type)
        spot = _spot_line(spec, offer, nodes, cost) if spec.capacity.type == "spot" and price is not None else None
        if spot is not None:
            out.append(spot)
        elif price is not None and basis == "on-demand list price":
            out.append(f"prices are on-demand list prices; {spec.capacity.type} capacity usually costs less.")
        elif price is not None:
            out.append(
                f"{offer.instance_type} is not sold on-demand: compute is priced at its {basis} in {spec.region}; "
                "set lifetime.hourly_price_usd to the rate you pay."
            )
    return out


def _spot_line(spec: ClusterSpec, offer: InstanceOffer, nodes: int | None, cost: CostEstimate | None) -> str | None:
    """The expected cost at the catalog's dated spot price beside the on-demand cap basis; None without one."""
    row = offer.regions.get(spec.region)
    spot = row.spot_price_per_hour_usd if row is not None else None
    on_demand = row.price_per_hour_usd if row is not None else None
    if spot is None or on_demand is None or nodes is None or cost is None or cost.compute_hourly_usd is None:
        return None
    read = [s.retrieved.isoformat() for s in offer.sources if "spot" in s.covers]
    when = f"read {read[0]}" if read else "date not recorded"
    expected = None if cost.hourly_usd is None else cost.hourly_usd - cost.compute_hourly_usd + spot * nodes
    total = f", ${expected:,.2f}/h with storage and network (the figure `offers` ranks by)" if expected else ""
    return (
        f"spot: the estimate and the cost cap use the on-demand list price (${on_demand:,.2f}/node-h), an upper "
        f"bound; at the catalog's spot price (${spot:,.2f}/node-h in {spec.region}, {when}; spot prices move) the "
        f"{nodes} nodes cost ${spot * nodes:,.2f}/h{total}."
    )


def _contract_price_warnings(spec: ClusterSpec, offer: InstanceOffer) -> list[str]:
    """Where the catalog has no price for the nodes: whose figure prices them, or what would.

    A type sold only through the vendor's sales team has no public price; its price is the user's contract
    figure (``lifetime.hourly_price_usd``), never one the catalog makes up.
    """
    listed, basis = offer.capacity_price(spec.region, spec.capacity.type)
    if listed is not None and basis != ESTIMATE_BASIS:
        return []
    region = offer.regions.get(spec.region)
    sales_only = region is not None and region.sales_only
    given = spec.lifetime.hourly_price_usd
    if given is not None:
        why = "it is sold through sales, so that is your contract price" if sales_only else "the catalog has none"
        estimate = (
            f" (only a labelled ESTIMATE, ${listed:,.2f} per node-hour, which `provision offers` shows)"
            if listed is not None
            else ""
        )
        return [
            f"compute is priced from lifetime.hourly_price_usd (${given:,.2f} per node-hour), your figure: "
            f"{offer.instance_type} has no {spec.capacity.type} price in {spec.region} in the catalog{estimate} "
            f"and {why}."
        ]
    if sales_only:
        return [
            f"{offer.instance_type} has no public price: {spec.cloud} sells it in {spec.region} only through its "
            "sales team, so the nodes cost what your contract says; set lifetime.hourly_price_usd to that price "
            "per node-hour to count them in the estimate and under a cost cap"
            + (" instead of the catalog's labelled ESTIMATE." if listed is not None else ".")
        ]
    return []


def stale_catalog_warning(catalog: Catalog, cloud: str, today: date) -> str | None:
    """A warning when ``cloud``'s catalog prices were reviewed more than :data:`STALE_AFTER_DAYS` ago."""
    age = catalog.age_days(cloud, today)
    if age is None or age <= STALE_AFTER_DAYS:
        return None
    return (
        f"the catalog's {cloud} prices were last reviewed {age} days ago ({catalog.reviewed[cloud].isoformat()}); "
        "prices may have changed: run `provision catalog refresh` (network needed) or check the vendor's price page."
    )


def compute_hourly_usd(spec: ClusterSpec, offer: InstanceOffer, nodes: int) -> float | None:
    """USD per hour for ``nodes`` nodes: the spec's override, else the catalog's price for the capacity type.

    The catalog price is the on-demand list price where there is one; a type sold only through reservations
    or spot is priced at that capacity type's own rate (:meth:`InstanceOffer.capacity_price`).

    Raises:
        BudgetError: the override is below what the catalog says this offer costs (exit 3).
    """
    per_node = spec.lifetime.hourly_price_usd
    if per_node is None:
        per_node, _ = offer.capacity_price(spec.region, spec.capacity.type)
    else:
        _check_override(spec, offer, per_node)
    return None if per_node is None else per_node * nodes


#: Set to the exact ``lifetime.hourly_price_usd`` to confirm a contract price below every catalog price
#: of that GPU (the operator's confirmation, outside the spec it confirms).
CONFIRM_PRICE_ENV = "PROVISION_CONFIRM_HOURLY_PRICE_USD"


def cheapest_gpu_hour(gpu: str | None) -> tuple[float, str] | None:
    """The lowest USD per GPU-hour the catalog lists for ``gpu`` (``None``: any GPU) on any cloud, region
    and capacity type, with where it is listed."""
    from provision.catalog import load_catalog

    best: tuple[float, str] | None = None
    for o in load_catalog().instances:
        if gpu is not None and o.gpu != gpu:
            continue
        for region, r in o.regions.items():
            for price in (r.price_per_hour_usd, r.spot_price_per_hour_usd, r.reservation_price_per_hour_usd):
                if price is not None and price > 0 and (best is None or price / o.gpus_per_node < best[0]):
                    best = (price / o.gpus_per_node, f"{o.cloud} {o.instance_type} in {region}")
    return best


def _confirmed(per_node: float) -> bool:
    import os

    raw = os.environ.get(CONFIRM_PRICE_ENV, "")
    try:
        return raw.isascii() and math.isclose(float(raw), per_node, rel_tol=1e-9)
    except ValueError:
        return False


def _check_unpriced_override(spec: ClusterSpec, offer: InstanceOffer, per_node: float) -> None:
    """For a type the catalog cannot price: in capped or ephemeral runs, refuse a figure below the cheapest
    catalog price of the same GPU on any cloud (of any GPU when the catalog prices that one nowhere),
    unless the operator confirms it outside the spec (:data:`CONFIRM_PRICE_ENV`)."""
    if spec.lifetime.max_cost_usd is None and spec.lifetime.ttl is None:
        return  # nothing is capped: the figure only prices the estimate
    cheapest = cheapest_gpu_hour(offer.gpu)
    model = f"a {offer.gpu}"
    if cheapest is None:
        cheapest, model = cheapest_gpu_hour(None), "any GPU"
    if cheapest is None or _confirmed(per_node):
        return
    per_gpu, where = cheapest
    floor = per_gpu * offer.gpus_per_node
    if per_node >= floor * (1 - 1e-9):
        return
    raise BudgetError(
        "the contract price is below any catalog price of this GPU",
        [
            Problem(
                "lifetime.hourly_price_usd",
                per_node,
                f"is below the cheapest catalog price of {model} on any cloud (${per_gpu:,.4f} per GPU-hour, "
                f"{where}; ${floor:,.4f} per node-hour for {offer.gpus_per_node} GPUs); the catalog has no price for "
                f"{offer.instance_type}, so this figure alone would set the cost cap",
                f"give the contract price per node-hour; if it really is that low, confirm it outside the spec: "
                f"{CONFIRM_PRICE_ENV}={per_node:g}",
            )
        ],
    )


def _check_override(spec: ClusterSpec, offer: InstanceOffer, per_node: float) -> None:
    """Refuse ``lifetime.hourly_price_usd`` below the catalog's price (on-demand) or its deepest discount."""
    listed, what = offer.capacity_price(spec.region, spec.capacity.type)
    if listed is None or what == ESTIMATE_BASIS:  # an estimate is no floor for the price a contract gives
        _check_unpriced_override(spec, offer, per_node)  # the override is the only price there is
        return
    on_demand = spec.capacity.type == "on-demand"
    floor = listed if on_demand else listed * MIN_DISCOUNTED_SHARE
    if per_node >= floor * (1 - 1e-9):
        return
    basis = (
        "the catalog's on-demand price"
        if on_demand
        else f"{MIN_DISCOUNTED_SHARE:.0%} of the catalog's {what} "
        f"(the deepest documented {spec.capacity.type} discount)"
    )
    raise BudgetError(
        "the price override is below the catalog's price",
        [
            Problem(
                "lifetime.hourly_price_usd",
                per_node,
                f"is below {basis} for {offer.instance_type} in {spec.region} (${floor:,.4f} per node-hour), "
                "so the cost cap and estimates would count a fraction of the real bill",
                f"give the price you pay per node-hour (at least {floor:,.4f}), or drop it to use the catalog's",
            )
        ],
    )


def warn_hourly_usd() -> float:
    """The no-cap warning threshold: ``$PROVISION_WARN_HOURLY_USD`` when it is a positive number, else 1000."""
    import os

    raw = os.environ.get(WARN_HOURLY_ENV, "")
    if not raw.isascii():  # float() also reads "１０００"
        return DEFAULT_WARN_HOURLY_USD
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_WARN_HOURLY_USD
    return value if math.isfinite(value) and value > 0 else DEFAULT_WARN_HOURLY_USD


def spend_warnings(spec: ClusterSpec, hourly_usd: float | None) -> list[str]:
    """A loud warning when a plan costs more than the threshold per hour and nothing caps it."""
    threshold = warn_hourly_usd()
    if hourly_usd is None or spec.lifetime.max_cost_usd is not None or hourly_usd <= threshold:
        return []
    ttl = spec.lifetime.ttl
    bound = (
        f"up to ${hourly_usd * ttl.total_seconds() / 3600:,.0f} over its {ttl} ttl"
        if ttl
        else "with no end: it has neither a ttl nor a cost cap"
    )
    return [
        f"NO COST CAP: this cluster costs ${hourly_usd:,.2f}/h (over the ${threshold:,.0f}/h warning threshold, "
        f"${WARN_HOURLY_ENV}), {bound}. Set lifetime.max_cost_usd to cap it."
    ]


def estimate(
    spec: ClusterSpec,
    catalog: Catalog,
    offer: InstanceOffer,
    nodes: int,
    storage: tuple[FilesystemOffer, int, int | None] | None,
    *,
    scheduler: bool = False,
    scheduler_hourly_usd: float | None = None,
    scheduler_part: str = "kubernetes",
    scheduler_estimated: bool = False,
) -> CostEstimate:
    """The hourly cost and the lifetime (from ttl, or derived from the cap).

    With ``scheduler`` (managed Kubernetes, or a Slurm controller), ``scheduler_hourly_usd`` (control plane + system
    pool, or the controller VM; ``None`` when unpriced, then named ``scheduler_part`` in ``unpriced``) counts toward
    the hourly cost and the cap; ``scheduler_estimated`` says it is a labelled catalog estimate (named in
    ``estimated``).

    Raises:
        BudgetError: the cap does not cover the lifetime, covers under one hour, or the
            offer has no price and the spec gives none (exit 3). Nothing has been created.
    """
    compute = compute_hourly_usd(spec, offer, nodes)
    fs = storage_hourly_usd(*storage, spec.region) if storage else 0.0
    parts = network_parts(catalog, spec.cloud, spec.region, nodes)
    known = [v for _, v in parts if v is not None]
    net = sum(known) if known else None
    sched = scheduler_hourly_usd if scheduler else 0.0
    unpriced = tuple(
        [
            *(["compute"] if compute is None else []),
            *([f"storage ({storage[0].kind} {storage[0].tier})"] if storage and fs is None else []),
            *(name for name, v in parts if v is None),
            *([scheduler_part] if sched is None else []),
        ]
    )
    estimated = tuple(name for name, _ in estimated_parts(spec, offer, storage)) + (
        (scheduler_part,) if scheduler and scheduler_estimated and sched is not None else ()
    )
    hourly = None if compute is None else compute + (fs or 0.0) + (net or 0.0) + (sched or 0.0)
    lifetime_hours = spec.lifetime.ttl.total_seconds() / 3600 if spec.lifetime.ttl else None
    cap = spec.lifetime.max_cost_usd
    if cap is not None:
        lifetime_hours = _apply_cap(spec, offer, cap, hourly, lifetime_hours)
    lifetime_usd = hourly * lifetime_hours if hourly is not None and lifetime_hours is not None else None
    return CostEstimate(
        compute_hourly_usd=_round(compute),
        storage_hourly_usd=_round(fs),
        network_hourly_usd=_round(net),
        scheduler_hourly_usd=_round(sched) if scheduler else None,
        hourly_usd=_round(hourly),
        unpriced=unpriced,
        estimated=estimated,
        lifetime_hours=_round(lifetime_hours),
        lifetime_usd=_round(lifetime_usd),
    )


def _apply_cap(
    spec: ClusterSpec, offer: InstanceOffer, cap: float, hourly: float | None, ttl_hours: float | None
) -> float:
    if hourly is None:
        raise BudgetError(
            "cannot enforce the cost cap",
            [
                Problem(
                    "lifetime.max_cost_usd",
                    cap,
                    f"cannot be enforced: the catalog has no price for {offer.instance_type} in {spec.region}",
                    "set lifetime.hourly_price_usd to the price per node-hour you pay, or drop the cap",
                )
            ],
        )
    if cap < hourly * MIN_CAPPED_HOURS:
        raise BudgetError(
            "the cost cap is below one hour of the cluster",
            [
                Problem(
                    "lifetime.max_cost_usd",
                    cap,
                    f"buys less than one hour of this cluster (${hourly:,.2f}/h)",
                    f"raise it to at least {math.ceil(hourly)} or use fewer nodes",
                )
            ],
        )
    if ttl_hours is None:
        max_hours = MAX_TTL.total_seconds() / 3600
        # A free offer (a catalog price of 0) never reaches the cap: live as long as any cluster may.
        return min(cap / hourly, max_hours) if hourly > 0 else max_hours
    projected = hourly * ttl_hours
    if projected > cap:
        affordable = math.floor(cap / hourly * 60)
        raise BudgetError(
            "the projected cost is over the cap",
            [
                Problem(
                    "lifetime.max_cost_usd",
                    cap,
                    f"is below the projected ${projected:,.2f} for ttl {ttl_hours:g}h at ${hourly:,.2f}/h",
                    f"shorten lifetime.ttl to {affordable // 60}h{affordable % 60:02d}m or less, "
                    f"or raise the cap to {math.ceil(projected)}",
                )
            ],
        )
    return ttl_hours


def expiry(created_at: datetime, lifetime_hours: float | None) -> datetime | None:
    """When the cluster must be gone, to the second (``None`` without a lifetime)."""
    if lifetime_hours is None:
        return None
    return (created_at + timedelta(hours=lifetime_hours)).replace(microsecond=0)


def spent_usd(hourly_usd: float | None, started_at: datetime, now: datetime) -> float | None:
    """What the cluster has cost since ``started_at`` at the estimated rate."""
    if hourly_usd is None:
        return None
    return round(hourly_usd * max(0.0, (now - started_at).total_seconds()) / 3600, 2)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)

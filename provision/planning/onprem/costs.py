"""Capital by category, yearly running costs, and three years of owning against renting the same GPU-hours.

Owning for three years = the capital written off in those years (straight-line over the depreciation period) +
3 x (energy + support + colocation + staff); every figure is in ``CostPlan.tco`` with its basis (``tco.py``).
Colocation is rent per kW of the build's IT maximum power. Energy: servers at typical draw for the busy share of
hours (--utilisation) and the rest of the build at maximum all the time, times PUE, times the electricity price.
Renting the same GPU-hours: the owned GPUs x 26,280 h x utilisation, at each cloud's on-demand and spot price per
GPU-hour; a three-year commitment bills every hour whether used or not, so it is priced on all 26,280 h.
"""

from __future__ import annotations

from typing import Any

from provision.catalog.onprem import OnpremCatalog
from provision.planning.onprem.models import CATEGORIES, CostPlan, LineItem, RentRow, TcoFigure
from provision.planning.onprem.tco import figure

HOURS_PER_YEAR = 8760.0
YEARS = 3
MONTHS = tuple(range(0, 12 * YEARS + 1, 3))


def capex(lines: tuple[LineItem, ...]) -> tuple[dict[str, float | None], float, tuple[str, ...]]:
    """Capital per category (None when any line in it is unpriced), the priced sum, and the unpriced lines."""
    by: dict[str, float | None] = {}
    unpriced: list[str] = []
    priced = 0.0
    for cat in CATEGORIES:
        items = [li for li in lines if li.category == cat and li.quantity and li.priced_in is None]
        if not items:
            continue
        missing = [li for li in items if li.total_usd is None]
        subtotal = sum(li.total_usd or 0.0 for li in items)
        priced += subtotal
        unpriced.extend(f"{li.item} x {li.quantity}" for li in missing)
        by[cat] = None if missing else subtotal
    return by, priced, tuple(unpriced)


def _own_note(unpriced: tuple[str, ...], floor_3y: float | None, energy: float | None) -> str:
    """Why owning's cost is unknown, naming each missing line and what the priced ones come to."""
    why = []
    if unpriced:
        why.append(f"unknown: unpriced {', '.join(unpriced)}")
        if floor_3y is not None:
            why.append(f"the priced lines alone come to ${floor_3y:,.0f} over 3 years, a floor")
    if energy is None:
        why.append("unknown: no published server power for the energy cost")
    return "; ".join(why)


def _neocloud_rows(
    cat: OnpremCatalog,
    gpu: str,
    busy: float,
    every_hour: float,
    own_3y: float | None,
    best: dict[str, tuple[float, str]],
) -> list[RentRow]:
    """Neoclouds' public per-GPU-hour prices for ``gpu`` (assumptions ``neocloud_<provider>_<capacity>_<gpu>``).

    On-demand and spot are paid for the busy GPU-hours; a reservation bills every hour, like a commitment.
    """
    out = []
    suffix = "_" + gpu.lower().replace("-", "_")
    for a in cat.assumptions:
        if not a.id.startswith("neocloud_") or not a.id.endswith(suffix):
            continue
        provider, _, capacity = a.id.removeprefix("neocloud_").removesuffix(suffix).partition("_")
        kind = capacity.replace("_", "-")
        cost = a.value * (every_hour if kind == "reserved" else busy)
        if kind in ("on-demand", "spot") and (kind not in best or cost < best[kind][0]):
            best[kind] = (cost, provider)
        read = a.sources[0].retrieved.isoformat() if a.sources else "undated"
        out.append(
            RentRow(
                option=f"{provider} {gpu} {kind}",
                cloud=provider,
                capacity=kind,  # type: ignore[arg-type]
                usd_per_gpu_hour=a.value,
                three_year_usd=cost,
                vs_own=cost / own_3y if own_3y else None,
                note=f"neocloud; third-party figure read {read}"
                + ("; reservation term not stated" if kind == "reserved" else "")
                + ("; interruptible" if kind == "spot" else ""),
            )
        )
    return out


def _spot(cloud: str, instance_type: str | None, region: str | None) -> float | None:
    if not instance_type or not region:
        return None
    from provision.catalog import load_catalog

    offer = load_catalog().instance(cloud, instance_type)
    row = offer.regions.get(region) if offer else None
    return row.spot_price_per_hour_usd if row else None


def _discount(cat: OnpremCatalog, cloud: str) -> float | None:
    try:
        return cat.assumption(f"commit_discount_3y_{cloud}").value
    except KeyError:
        return None


def plan_costs(
    cat: OnpremCatalog,
    lines: tuple[LineItem, ...],
    *,
    gpus: int,
    sized_gpu: str,
    run_gpu_hours: float,
    server_typical_kw_total: float | None,
    infra_kw: float,
    utilisation: float,
    clouds: tuple[dict[str, Any], ...],
    tco: tuple[TcoFigure, ...],
    it_kw_max: float | None,
) -> CostPlan:
    """Capital, yearly running costs, the own-versus-rent table and the cost-over-time series.

    ``tco`` holds the ownership figures (power price, PUE, depreciation, support, colocation, staff);
    ``it_kw_max`` is the IT capacity colocation rent is paid on (None: unknown, so is owning's cost).
    """
    by, priced, unpriced = capex(lines)
    total = None if unpriced else priced
    pue, power_price = figure(tco, "PUE"), figure(tco, "power price")
    support_pct = figure(tco, "support contract")
    years = figure(tco, "depreciation period")
    support = priced * support_pct / 100
    colo = it_kw_max * figure(tco, "colocation") * 12 if it_kw_max is not None else None
    staff = figure(tco, "staff") * figure(tco, "staff cost")
    charged = priced * min(YEARS, years) / years
    energy = None
    if server_typical_kw_total is not None:
        kwh = (server_typical_kw_total * utilisation + infra_kw) * HOURS_PER_YEAR * pue
        energy = kwh * power_price
    running = energy + support + colo + staff if energy is not None and colo is not None else None
    floor_3y = charged + YEARS * running if running is not None else None
    # Any unpriced line (a server, a switch, the racks) makes owning's cost unknown: no ratio is drawn from the
    # priced lines alone, which would understate owning by whatever the missing lines cost.
    own_3y = None if unpriced else floor_3y
    busy = gpus * HOURS_PER_YEAR * YEARS * utilisation
    network = sum(v or 0.0 for k, v in by.items() if k in ("compute fabric", "fabric links"))
    share = network / priced if priced else None

    rows: list[RentRow] = [
        RentRow(
            option="own (this build)",
            capacity="own",
            usd_per_gpu_hour=own_3y / busy if own_3y and busy else None,
            three_year_usd=own_3y,
            vs_own=1.0 if own_3y else None,
            note=_own_note(unpriced, floor_3y, energy),
        )
    ]
    run_rent: dict[str, float | None] = {}
    best: dict[str, tuple[float, str]] = {}
    for c in clouds:
        cloud = c["cloud"]
        node_price = c.get("node_hourly_usd")
        per_node = (c.get("gpus") or 0) // max(1, c.get("nodes") or 1) or None
        note = ""
        if c.get("gpu") and c["gpu"].lower() != sized_gpu.lower():
            note = f"prices {c['gpu']} (the catalog has no {sized_gpu} there)"
        on_demand = node_price / per_node if node_price is not None and per_node else None
        spot_node = _spot(cloud, c.get("instance_type"), c.get("region"))
        spot = spot_node / per_node if spot_node is not None and per_node else None
        disc = _discount(cat, cloud)
        committed = on_demand * (1 - disc) if on_demand is not None and disc is not None else None
        run_rent[cloud] = run_gpu_hours * on_demand if on_demand is not None else None
        label = f"{cloud} {c.get('instance_type') or '-'}"
        for capacity, price, hours, extra in (
            ("on-demand", on_demand, busy, ""),
            ("spot", spot, busy, "interruptible; "),
            (
                "committed-3y",
                committed,
                gpus * HOURS_PER_YEAR * YEARS,
                f"{disc:.0%} off on-demand, billed every hour; " if disc is not None else "",
            ),
        ):
            cost = price * hours if price is not None else None
            if cost is not None and (capacity not in best or cost < best[capacity][0]):
                best[capacity] = (cost, cloud)
            missing = "" if price is not None else f"no {capacity} price in the catalog; "
            rows.append(
                RentRow(
                    option=f"{label} {capacity}",
                    cloud=cloud,
                    capacity=capacity,  # type: ignore[arg-type]
                    usd_per_gpu_hour=price,
                    three_year_usd=cost,
                    vs_own=cost / own_3y if cost is not None and own_3y else None,
                    note=(extra + missing + note).strip("; "),
                )
            )
    rows.extend(_neocloud_rows(cat, sized_gpu, busy, gpus * HOURS_PER_YEAR * YEARS, own_3y, best))
    series: dict[str, tuple[float | None, ...]] = {}
    if floor_3y is not None and running is not None:
        monthly = running / 12
        # Unpriced lines: the curve is the priced lines' floor and its name says so.
        series["own" if own_3y is not None else "own, priced lines only (a floor)"] = tuple(
            priced + monthly * m for m in MONTHS
        )
    for capacity, (cost, cloud) in sorted(best.items()):
        series[f"{capacity} ({cloud})"] = tuple(cost / (12 * YEARS) * m for m in MONTHS)
    return CostPlan(
        capex_by_category=by,
        capex_usd=total,
        capex_priced_usd=priced,
        unpriced=unpriced,
        energy_usd_per_year=energy,
        support_usd_per_year=support,
        support_percent=support_pct,
        three_year_own_usd=own_3y,
        three_year_own_priced_usd=floor_3y,
        busy_gpu_hours_3y=busy,
        network_share=share,
        rent=tuple(rows),
        run_rent_usd=run_rent,
        months=MONTHS,
        series=series,
        colo_usd_per_year=colo,
        staff_usd_per_year=staff,
        depreciation_years=years,
        capital_charged_priced_usd=charged,
        residual_value_priced_usd=priced - charged,
        tco=tco,
    )

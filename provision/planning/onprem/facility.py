"""Power, cooling and racks for the bill of materials.

IT power at maximum is what the facility must provision; typical draw is what the electricity bill sees. A part
with no published power figure is left out of the sums and named in ``excluded``, never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from provision.catalog.onprem import OnpremCatalog
from provision.planning.onprem.models import PowerPlan, ServerConfig

#: Rack height for network, storage and head-node racks. A planning assumption (the common full-height 42U
#: rack); no vendor figure is used.
RACK_UNITS = 42


@dataclass(frozen=True)
class Powered:
    """One kind of part in the build: how many, and its rack units and maximum watts when published."""

    name: str
    count: int
    rack_units: int | None
    max_w: float | None
    always_on: bool = True


def server_power(
    cfg: ServerConfig, gpu_server_kw: float | None, typical_fraction: float, notes: list[str]
) -> tuple[float | None, float | None]:
    """(maximum kW, typical kW) of one server; the sizing catalog's 8-GPU server power fills a gap (noted)."""
    max_kw = cfg.power_max_kw
    if max_kw is None and gpu_server_kw is not None:
        max_kw = gpu_server_kw
        notes.append(
            f"{cfg.name}: maximum power not published; used the {cfg.accelerator} 8-GPU reference server's "
            f"{gpu_server_kw:g} kW from the sizing catalog (gpus.yaml)"
        )
    typical = cfg.power_typical_kw
    if typical is None and max_kw is not None:
        typical = max_kw * typical_fraction
    return max_kw, typical


def plan_power(
    cat: OnpremCatalog,
    servers: int,
    server_max_kw: float | None,
    server_typical_kw: float | None,
    server_cooling: tuple[str, ...],
    others: list[Powered],
    pue: float,
    server_rack_units: int | None = None,
    rack_scale_units: int | None = None,
    rack_power_kw: float | None = None,
) -> PowerPlan:
    """IT and facility kW, servers per rack, rack density, liquid cooling, and rack count.

    A rack-scale system (``rack_scale_units`` trays per rack, e.g. GB200 NVL72) fills its own racks: the rack
    holds exactly that many units and draws ``rack_power_kw`` (its published figure, which counts the NVLink switch
    trays) instead of a budget-limited number of servers.
    """
    budget = cat.assumption("rack_power_budget_kw").value
    per_rack_max = int(cat.assumption("servers_per_rack_max").value)
    air_limit = cat.assumption("air_cooling_limit_kw").value
    excluded = [p.name for p in others if p.count and p.max_w is None]
    infra_kw = sum(p.count * (p.max_w or 0.0) for p in others) / 1000
    if server_max_kw is None:
        excluded.insert(0, "accelerator servers")
        it_max = it_typical = facility = rack_kw = None
        per_rack = 1
        liquid: bool | None = None if "liquid" not in server_cooling or "air" in server_cooling else True
        reason = "server power unknown: rack density and cooling cannot be worked out; racks counted at one server each"
        if liquid:
            reason = "the vendor offers this server liquid-cooled only"
    else:
        per_rack = max(1, min(per_rack_max, int(budget // server_max_kw), servers))
        rack_kw = per_rack * server_max_kw
        scale = 1.0
        if rack_scale_units:
            per_rack = rack_scale_units
            rack_kw = rack_power_kw or per_rack * server_max_kw
            scale = rack_kw / (per_rack * server_max_kw)  # the rack's own parts (switch trays) on top of its trays
        it_max = servers * server_max_kw * scale + infra_kw
        it_typical = servers * (server_typical_kw or server_max_kw) * scale + infra_kw
        facility = it_max * pue
        if rack_scale_units and server_cooling and "air" not in server_cooling:
            liquid = True
            reason = (
                f"a rack-scale system: {per_rack} trays per rack draw {rack_kw:,.1f} kW, liquid-cooled by design "
                f"(above the {air_limit:g} kW air-cooling limit)"
            )
        elif server_cooling and "air" not in server_cooling:
            liquid, reason = True, "the vendor offers this server liquid-cooled only"
        elif rack_kw > air_limit:
            liquid = True
            reason = (
                f"{per_rack} server(s) per rack draw {rack_kw:,.1f} kW, above the {air_limit:g} kW air-cooling limit"
            )
        else:
            liquid = False
            reason = (
                f"{per_rack} server(s) per rack draw {rack_kw:,.1f} kW, within the {air_limit:g} kW air-cooling limit "
                f"(rack budget {budget:g} kW; hot/cold-aisle containment assumed)"
            )
    support_units = sum(p.count * (p.rack_units or 0) for p in others)
    unknown_ru = [p.name for p in others if p.count and p.rack_units is None]
    support_racks = math.ceil(support_units / RACK_UNITS) if support_units else 0
    if servers > 1 and support_racks == 0:
        support_racks = 1  # switches and head nodes need a home even when their heights are unknown
    if unknown_ru:
        excluded.extend(f"{n} (rack units)" for n in unknown_ru)
    compute_racks = math.ceil(servers / per_rack)
    if servers == 1 and support_units + (server_rack_units or 0) <= RACK_UNITS:
        support_racks = 0  # one server and its management switch share a rack
    return PowerPlan(
        it_kw_max=it_max,
        it_kw_typical=it_typical,
        facility_kw=facility,
        pue=pue,
        servers_per_rack=per_rack,
        rack_kw=rack_kw,
        liquid_cooling=liquid,
        cooling_reason=reason,
        compute_racks=compute_racks,
        support_racks=support_racks,
        racks=compute_racks + support_racks,
        excluded=tuple(dict.fromkeys(excluded)),
    )

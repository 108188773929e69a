"""``failover: auto``: the tries derived from the catalog's offers instead of a hand-written list.

The tries are what ``provision offers`` lists for the cluster (:func:`provision.planning.cluster_offers.cluster_offers`:
the same GPU model and capacity type on the spec's cloud, each region's price), in this order:

1. the other zones of the planned region that sell the planned type (catalog availability): a stock-out is
   usually one zone's, and a try there keeps the network (:func:`keeps_network`);
2. other instance types with the same GPU in the planned region, cheapest first (only when the spec names no
   ``instance_type``);
3. the other regions that sell the GPU, cheapest first (unpriced regions last), the catalog choosing the zone.

Every candidate is planned like a written option; one the planner refuses (a zone without the type, a region the
spec's options cannot use) or that breaks the cost cap is left out, with the reason, instead of failing the spec.
At most :data:`MAX_TRIES` are kept. Reserved capacity (reservation, capacity block) is held in one place, so
``auto`` is refused there. ``provision plan`` prints the tries and what was left out.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from provision.spec.errors import BudgetError, Problem, SpecError

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec
    from provision.spec.models import FailoverOption

#: The most tries ``auto`` keeps (a written list holds at most as many).
MAX_TRIES = 10
#: Capacity types bought where stock is: reserved capacity exists in one zone only.
MOVABLE_CAPACITY = ("on-demand", "spot", "flex-start")


@dataclass(frozen=True)
class AutoTries:
    """The derived options, a label per try (place, capacity, type, price) and the candidates left out (why)."""

    options: tuple[FailoverOption, ...]
    labels: tuple[str, ...]
    left_out: tuple[str, ...]

    def explanation(self) -> tuple[str, ...]:
        """What ``provision plan`` says about the derived tries (as plan warnings)."""
        if not self.options:
            return (
                "failover: auto found no other place in the catalog's offers for this cluster, so a stock-out "
                "fails `up`"
                + (f" (left out: {'; '.join(self.left_out)})" if self.left_out else "")
                + ". To fix: list failover options by hand, or widen the spec (no instance_type pin, another GPU)",
            )
        tries = "; ".join(f"{i + 1}) {label}" for i, label in enumerate(self.labels))
        text = f"failover: auto tries, after the spec itself, from the catalog's offers: {tries}"
        if self.left_out:
            text += f". Left out: {'; '.join(self.left_out)}"
        return (text,)


def auto_tries(spec: ClusterSpec) -> AutoTries:
    """The tries of ``failover: auto`` for ``spec`` (see the module docstring).

    Raises:
        SpecError: the spec itself cannot be planned, or its capacity is reserved in one place.
    """
    from provision.catalog import load_catalog
    from provision.clouds.base import get_adapter
    from provision.planning.cluster_offers import cluster_offers
    from provision.spec.models import FailoverOption

    adapter = get_adapter(spec.cloud)
    base = apply_option(spec, {})
    first = adapter.plan(base)
    capacity = first.capacity.type
    if capacity not in MOVABLE_CAPACITY:
        raise SpecError(
            problems=[
                Problem(
                    "failover",
                    "auto",
                    f"derives other zones and regions from the catalog's offers, but {capacity} capacity is held "
                    "in one place",
                    "list failover options by hand (e.g. another reservation), or drop failover",
                )
            ]
        )
    rows = cluster_offers(load_catalog(), first.gpus, gpu=first.offer.gpu, cloud=spec.cloud, capacity=(capacity,))
    if spec.instance_type:
        rows = [r for r in rows if r.instance_type == first.instance_type]
    here = first.offer.regions.get(first.region)
    candidates: list[dict[str, Any]] = [
        {"zone": z} for z in (here.zones if here else ()) if first.zone and z != first.zone
    ]
    candidates += [
        {"instance_type": r.instance_type}
        for r in rows  # cheapest first, unpriced last
        if r.region == first.region and r.instance_type != first.instance_type
    ]
    candidates += [
        {"region": r.region} | ({"instance_type": r.instance_type} if r.instance_type != first.instance_type else {})
        for r in rows
        if r.region != first.region
    ]
    kept: list[FailoverOption] = []
    labels: list[str] = []
    left_out: list[str] = []
    seen = {(first.region, first.zone, first.instance_type)}
    for option in candidates:
        where = " ".join(str(v) for v in option.values())
        try:
            planned = adapter.plan(apply_option(spec, option))
        except SpecError as e:
            left_out.append(f"{where}: {e.problems[0].rule if e.problems else e.message}")
            continue
        except BudgetError as e:
            left_out.append(f"{where}: {e.problems[0].rule if e.problems else 'over the cost cap'}")
            continue
        placed = (planned.region, planned.zone, planned.instance_type)
        if placed in seen:
            continue
        seen.add(placed)
        if len(kept) == MAX_TRIES:
            left_out.append(f"{where}: past the first {MAX_TRIES} tries")
            continue
        kept.append(FailoverOption.model_validate(option))
        cost = f"${planned.cost.hourly_usd:,.2f}/h" if planned.cost.hourly_usd is not None else "unpriced"
        keeps = " (the network stays)" if keeps_network(first, planned) else ""
        labels.append(f"{planned.zone or planned.region} {capacity} {planned.instance_type}, {cost}{keeps}")
    return AutoTries(tuple(kept), tuple(labels), tuple(left_out))


def apply_option(spec: ClusterSpec, option: dict[str, Any]) -> ClusterSpec:
    """``spec`` with ``option``'s fields in place of its own and no failover (a new region drops the zone).

    Raises:
        SpecError: the option makes an invalid spec (paths as in the spec).
    """
    from provision.spec import load_spec

    data = spec.model_dump(mode="json", exclude_none=True)
    data.pop("failover", None)
    if "region" in option and option["region"] != data["region"] and "zone" not in option:
        data.pop("zone", None)
    data.update(copy.deepcopy(option))
    return load_spec(data)


def keeps_network(tried: ClusterPlan, following: ClusterPlan) -> bool:
    """Whether the try after a stock-out can reuse what ``tried`` created (its network, its filesystem).

    In the same cloud and region the next try's ``up`` runs on the same stack: resources whose inputs the new
    try leaves alone stay (the VPC, the NAT, a regional filesystem; a zonal one when the zone stays), and the
    diff replaces the rest by the provider's own force-new rules (a subnet or filesystem pinned to the old
    zone). Another region shares nothing, and on clouds whose subnets belong to one zone
    (``Adapter.network_zonal``) neither does another zone: those tries start from an empty stack.
    """
    from provision.clouds.base import get_adapter

    if tried.cloud != following.cloud or tried.region != following.region:
        return False
    return tried.zone == following.zone or not get_adapter(tried.cloud).network_zonal

"""Catalog feasibility shared by every adapter: offer, zone, node count, fabric, capacity, storage.

:func:`resolve` checks a :class:`~provision.spec.models.ClusterSpec` against the catalog and
returns a :class:`Resolution`, adding every problem it finds to a collector rather than
stopping at the first. Adapters then add their cloud's own rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timezone

from provision.catalog import Catalog, FilesystemOffer, InstanceOffer, cloud_facts, suggest
from provision.planning.cost import stale_catalog_warning
from provision.planning.fschoice import MOUNT_OS, fits, minimum, mountable, unreplicated
from provision.planning.images import default_image
from provision.spec import ClusterSpec
from provision.spec.errors import ProblemCollector, SpecError


def default_shared_kind(cloud: str) -> str:
    """The cloud's managed parallel filesystem: what ``kind: auto`` prefers when prices cannot decide.

    The first of the cloud's ``facts.filesystems`` (``catalog/data/<cloud>.yaml``). ``kind: auto`` itself picks
    the cheapest service and tier that fits (:mod:`provision.planning.fschoice`); read the chosen kind from
    ``Resolution.storage.kind``, not from here.
    """
    return cloud_facts(cloud).filesystems[0]


def shared_kind(spec: ClusterSpec, res: Resolution | None = None) -> str | None:
    """The shared filesystem kind the plan creates: for ``auto``, the service the resolution chose."""
    shared = spec.storage.shared
    if shared is None or shared.kind == "none":
        return None
    if shared.kind != "auto":
        return shared.kind
    if res is not None and res.storage is not None:
        return res.storage.kind
    return default_shared_kind(spec.cloud)


@dataclass
class Resolution:
    """What the catalog says about a spec. Fields are ``None`` where a problem was found."""

    offer: InstanceOffer | None = None
    zone: str | None = None
    nodes: int | None = None
    fabric: str | None = None
    storage: FilesystemOffer | None = None
    storage_size_gib: int | None = None
    storage_throughput: int | None = None
    warnings: list[str] = field(default_factory=list)


def _examples(values: list[int], count: int = 3) -> str:
    return ", ".join(str(v) for v in values[:count]) + " ..."


def _choose_offer(spec: ClusterSpec, catalog: Catalog, found: ProblemCollector) -> InstanceOffer | None:
    cloud = spec.cloud
    if spec.instance_type is not None:
        offer = catalog.instance(cloud, spec.instance_type)
        if offer is None:
            names = [o.instance_type for o in catalog.instances_for(cloud)]
            hints = suggest(spec.instance_type, names)
            fix = f"did you mean {' or '.join(hints)}?" if hints else f"use one of: {', '.join(names)}"
            found.add("instance_type", spec.instance_type, f"is not a known {cloud} GPU instance type", fix)
            return None
        if spec.gpu is not None:
            gpu = catalog.gpu(spec.gpu)
            if gpu is not None and gpu.name != offer.gpu:
                carriers = [o.instance_type for o in catalog.instances_for(cloud, gpu.name)]
                fix = f"use gpu {offer.gpu}, or for {gpu.name} use " + (
                    " or ".join(carriers) if carriers else f"another cloud (no {cloud} type carries it)"
                )
                found.add("instance_type", offer.instance_type, f"carries {offer.gpu}, not {gpu.name}", fix)
        return offer
    assert spec.gpu is not None  # noqa: S101  # the spec's cross-field rule guarantees gpu or instance_type
    gpu = catalog.gpu(spec.gpu)
    if gpu is None:
        return None  # reported by _check_gpu
    candidates = catalog.instances_for(cloud, gpu.name)
    if not candidates:
        other = sorted({o.cloud for o in catalog.instances_for(None, gpu.name)})
        found.add(
            "gpu",
            spec.gpu,
            f"is not offered on {cloud} by any type in the catalog",
            f"use cloud {' or '.join(other)}" if other else "pick another GPU",
        )
        return None
    in_region = [o for o in candidates if spec.region in o.regions]
    if not in_region:
        regions = sorted({r for o in candidates for r in o.regions})
        fix = (
            f"use one of: {', '.join(regions)}"
            if regions
            else f"pick another GPU: the catalog records no {cloud} region for {gpu.name}"
        )
        found.add("region", spec.region, f"has no {gpu.name} offer on {cloud}", fix)
        return None

    def score(o: InstanceOffer) -> tuple[int, int, int, float]:
        fabric_ok = spec.fabric in ("auto", o.fabric) or spec.fabric == "none"
        sold = spec.capacity.type in o.consumption
        zone_ok = spec.zone is None or spec.zone in o.regions[spec.region].zones or not o.regions[spec.region].zones
        price = o.price(spec.region)
        return (not fabric_ok, not sold, not zone_ok, price if price is not None else float("inf"))

    return min(in_region, key=score)


def _check_gpu(spec: ClusterSpec, catalog: Catalog, found: ProblemCollector) -> None:
    if spec.gpu is not None and catalog.gpu(spec.gpu) is None:
        hints = suggest(spec.gpu, [n for g in catalog.gpus for n in (g.name, *g.aliases)])
        fix = f"did you mean {' or '.join(hints)}?" if hints else f"use one of: {', '.join(catalog.gpu_names())}"
        found.add("gpu", spec.gpu, "is not a known accelerator model", fix)


def _check_region(spec: ClusterSpec, catalog: Catalog, found: ProblemCollector) -> bool:
    regions = catalog.regions(spec.cloud)
    if spec.region in regions:
        return True
    hints = suggest(spec.region, regions)
    fix = f"did you mean {' or '.join(hints)}?" if hints else f"use one of: {', '.join(regions)}"
    found.add("region", spec.region, f"is not a {spec.cloud} region with GPU offers in the catalog", fix)
    return False


def _check_placement(spec: ClusterSpec, offer: InstanceOffer, res: Resolution, found: ProblemCollector) -> None:
    region = offer.regions.get(spec.region)
    if region is None:
        regions = sorted(offer.regions)
        fix = (
            f"use one of: {', '.join(regions)}"
            if regions
            else f"pick another instance_type: the catalog records no region for {offer.instance_type}"
        )
        found.add("region", spec.region, f"does not offer {offer.instance_type}", fix)
        return
    if region.sales_only:
        res.warnings.append(
            f"{offer.instance_type} in {spec.region} is sold only through {spec.cloud}'s sales team; "
            "expect the launch to fail without an agreement."
        )
    if spec.zone is not None:
        if region.zones and spec.zone not in region.zones:
            found.add(
                "zone", spec.zone, f"does not offer {offer.instance_type}", f"use one of: {', '.join(region.zones)}"
            )
            return
        res.zone = spec.zone
    else:
        res.zone = region.zones[0] if region.zones else None


def _check_count(spec: ClusterSpec, offer: InstanceOffer, res: Resolution, found: ProblemCollector) -> None:
    per = offer.gpus_per_node
    if spec.gpus is not None:
        if spec.gpus % per:
            multiples = [per * k for k in range(1, 4)]
            lower, upper = spec.gpus // per * per, -(-spec.gpus // per) * per
            near = [v for v in (lower, upper) if v > 0]
            found.add(
                "gpus",
                spec.gpus,
                f"is not a multiple of {per} GPUs per node on {offer.instance_type}",
                f"use {' or '.join(str(v) for v in near)} (multiples of {per}: {_examples(multiples)})",
            )
            return
        nodes = spec.gpus // per
        if spec.nodes is not None and spec.nodes != nodes:
            found.add(
                "nodes",
                spec.nodes,
                f"disagrees with gpus {spec.gpus} ({nodes} nodes of {per} GPUs)",
                "give only one of gpus and nodes",
            )
            return
        res.nodes = nodes
    else:
        res.nodes = spec.nodes


def _check_fabric(
    spec: ClusterSpec, offer: InstanceOffer, catalog: Catalog, res: Resolution, found: ProblemCollector
) -> None:
    if spec.fabric in ("auto", offer.fabric):
        res.fabric = offer.fabric
    elif spec.fabric == "none":
        res.fabric = "none"
    else:
        with_fabric = [o.instance_type for o in catalog.instances_for(spec.cloud) if o.fabric == spec.fabric]
        fix = (
            f"use instance_type {' or '.join(with_fabric)}, or fabric {offer.fabric} (or auto)"
            if with_fabric
            else f"use fabric {offer.fabric} (or auto)"
        )
        found.add("fabric", spec.fabric, f"is not available on {offer.instance_type} (it has {offer.fabric})", fix)
        return
    if res.nodes and res.nodes > 1 and res.fabric == "none":
        res.warnings.append(
            f"{res.nodes} nodes without a GPU fabric: inter-node collectives run over the host network "
            "and will be slow for large-model training."
        )


def _check_capacity(spec: ClusterSpec, offer: InstanceOffer, found: ProblemCollector) -> None:
    if spec.capacity.type not in offer.consumption:
        found.add(
            "capacity.type",
            spec.capacity.type,
            f"is not sold for {offer.instance_type} on {spec.cloud}",
            f"use one of: {', '.join(offer.consumption)}",
        )


def _auto_storage(spec: ClusterSpec, catalog: Catalog, res: Resolution, found: ProblemCollector) -> None:
    """``kind: auto``: the cheapest service and tier whose minimum, step and throughput fit the request."""
    shared = spec.storage.shared
    assert shared is not None  # noqa: S101  # the caller checked
    rows = catalog.filesystems_for(spec.cloud)
    if shared.tier is not None:
        rows = [r for r in rows if r.tier.lower() == shared.tier.lower()]
        if not rows:
            tiers = sorted({f"{r.kind} {r.tier}" for r in catalog.filesystems_for(spec.cloud)})
            found.add(
                "storage.shared.tier",
                shared.tier,
                f"is not a {spec.cloud} filesystem tier",
                f"use one of: {', '.join(tiers)}",
            )
            return
    kinds: tuple[str, ...] = tuple(sorted({r.kind for r in rows}))
    if shared.size_gib is None and shared.tier is None:
        # No size to fit: the cloud's parallel filesystem at its smallest size (cheapest tier among them).
        kinds = (default_shared_kind(spec.cloud),)
        rows = [r for r in rows if r.kind in kinds]
    want = shared.throughput_mbps_per_tib
    size = shared.size_gib if shared.size_gib is not None else min(minimum(r) for r in rows)
    node_os = _node_os(spec, res)
    every = [
        f for f in fits(catalog, spec.cloud, spec.region, size, want, kinds) if shared.tier is None or f.offer in rows
    ]
    options = [f for f in every if mountable(f.offer, node_os)]
    if every and options and every[0] is not options[0]:
        skipped = every[0].offer
        res.warnings.append(
            f"storage.shared.kind auto skipped {skipped.kind} {skipped.tier}: its client needs "
            f"{' or '.join(MOUNT_OS[skipped.kind])} and the node image runs {node_os}; pin such an image with "
            f"image.id and set storage.shared.kind: {skipped.kind} to use it."
        )
    if not options:
        smallest = sorted(rows, key=minimum)
        listed = ", ".join(f"{r.kind} {r.tier} from {minimum(r)} GiB" for r in smallest[:4])
        rule = f"fits no {spec.cloud} filesystem" + (f" at {want} MB/s per TiB" if want else "")
        found.add(
            "storage.shared.size_gib" if shared.size_gib is not None else "storage.shared.kind",
            shared.size_gib if shared.size_gib is not None else shared.kind,
            rule,
            f"use a size one of them allows ({listed}), or lower storage.shared.throughput_mbps_per_tib",
        )
        return
    best = options[0]
    res.storage, res.storage_size_gib, res.storage_throughput = best.offer, best.size_gib, best.throughput_mbps_per_tib
    if shared.size_gib is not None and best.size_gib != shared.size_gib:
        res.warnings.append(
            f"storage.shared.size_gib {shared.size_gib} is rounded up to {best.size_gib} GiB, the next size "
            f"{best.offer.kind} {best.offer.tier} allows."
        )
    if unreplicated(best.offer):
        res.warnings.append(
            f"storage.shared.kind auto chose {best.offer.kind} {best.offer.tier}, a scratch tier: not replicated, "
            "a file server failure loses data; copy checkpoints elsewhere or set storage.shared.tier to a "
            "persistent one."
        )
    unpriced = [f for f in options if f.hourly_usd is None]
    if best.hourly_usd is not None and unpriced:
        names = ", ".join(f"{f.offer.kind} {f.offer.tier}" for f in unpriced[:4])
        res.warnings.append(
            f"storage.shared.kind auto chose {best.offer.kind} {best.offer.tier} (${best.hourly_usd:,.2f}/h), the "
            f"cheapest priced fit; {names} also fit but have no catalog price and were not compared."
        )
    if best.hourly_usd is not None and best.offer.estimate_for(
        best.throughput_mbps_per_tib if best.offer.throughput_mbps_per_tib else None, spec.region
    ):
        res.warnings.append(
            f"storage.shared.kind auto compared {best.offer.kind} {best.offer.tier} at its labelled ESTIMATE (no "
            "vendor price readable); set storage.shared.kind to choose another service."
        )
    if best.hourly_usd is None:
        res.warnings.append(
            f"storage.shared.kind auto chose {best.offer.kind} {best.offer.tier}: no fitting {spec.cloud} filesystem "
            "has a catalog price, so the choice follows the smallest size, then the cloud's parallel filesystem."
        )


def _node_os(spec: ClusterSpec, res: Resolution) -> str | None:
    """The OS of the image the nodes will boot, when the plan knows it (not for a custom ``image.id``)."""
    if spec.image.id or res.offer is None or res.fabric is None:
        return None
    try:
        return default_image(spec, res.offer, res.fabric).versions.get("os")
    except SpecError:
        return None  # the image check reports it


def _check_storage(spec: ClusterSpec, catalog: Catalog, res: Resolution, found: ProblemCollector) -> None:
    shared = spec.storage.shared
    if shared is None or shared.kind == "none":
        return
    if shared.kind == "auto":
        _auto_storage(spec, catalog, res, found)
        return
    kind = shared.kind
    rows = catalog.filesystems_for(spec.cloud, kind)
    if not rows:
        kinds = sorted({f.kind for f in catalog.filesystems_for(spec.cloud)})
        found.add(
            "storage.shared.kind",
            shared.kind,
            f"is not a {spec.cloud} filesystem",
            f"use one of: auto, {', '.join(kinds)}",
        )
        return
    rows = [r for r in rows if not r.regions or spec.region in r.regions] or rows
    if shared.tier is not None:
        tiers = [r for r in rows if r.tier.lower() == shared.tier.lower()]
        if not tiers:
            found.add(
                "storage.shared.tier",
                shared.tier,
                f"is not a tier of {kind}",
                f"use one of: {', '.join(r.tier for r in rows)}",
            )
            return
        rows = tiers
    want = shared.throughput_mbps_per_tib
    if want is not None:
        matching = [r for r in rows if want in r.throughput_mbps_per_tib or r.baseline_mbps_per_tib == want]
        if not matching:
            offered = sorted(
                {
                    t
                    for r in rows
                    for t in (
                        *r.throughput_mbps_per_tib,
                        *([int(r.baseline_mbps_per_tib)] if r.baseline_mbps_per_tib else []),
                    )
                }
            )
            found.add(
                "storage.shared.throughput_mbps_per_tib",
                want,
                f"is not a throughput tier of {kind}" + (f" {shared.tier}" if shared.tier else ""),
                f"use one of: {', '.join(map(str, offered))}" if offered else "drop it",
            )
            return
        rows = matching
    offer = rows[0]
    size = shared.size_gib if shared.size_gib is not None else min((*offer.fixed_sizes_gib, offer.min_gib))
    if not offer.allows_size(size):
        smallest = min((*offer.fixed_sizes_gib, offer.min_gib))
        rule = (
            f"is below the minimum {smallest} GiB of {kind} {offer.tier}"
            if size < smallest
            else f"is above the maximum {offer.max_gib} GiB of {kind} {offer.tier}"
            if size > offer.max_gib
            else f"is not a valid {kind} {offer.tier} size (steps of {offer.step_gib} GiB from {offer.min_gib})"
        )
        found.add(
            "storage.shared.size_gib", size, rule, f"use {' or '.join(str(s) for s in offer.nearest_sizes(size))}"
        )
        return
    res.storage = offer
    res.storage_size_gib = size
    res.storage_throughput = offer.throughput_for(want)


def resolve(spec: ClusterSpec, catalog: Catalog, found: ProblemCollector, today: date | None = None) -> Resolution:
    """Check ``spec`` against ``catalog``; add every problem to ``found``.

    Pure but for ``today`` (UTC today when None), which dates the catalog-age warning. The caller
    raises ``found`` (with the adapter's own problems) once all checks ran.
    """
    res = Resolution()
    stale = stale_catalog_warning(catalog, spec.cloud, today or datetime.now(timezone.utc).date())
    if stale:
        res.warnings.append(stale)
    _check_gpu(spec, catalog, found)
    region_ok = _check_region(spec, catalog, found)
    offer = _choose_offer(spec, catalog, found) if region_ok or spec.instance_type else None
    if offer is None:
        _check_storage(spec, catalog, res, found)
        return res
    res.offer = offer
    if region_ok:
        _check_placement(spec, offer, res, found)
    _check_count(spec, offer, res, found)
    _check_fabric(spec, offer, catalog, res, found)
    # After the offer and fabric: `kind: auto` chooses only services the node image can mount.
    _check_storage(spec, catalog, res, found)
    _check_capacity(spec, offer, found)
    return res

"""Sizing planner: per-cloud clusters, filesystems and buy versus rent."""

from __future__ import annotations

import math
from typing import Any, Literal

from provision.catalog import Catalog, FilesystemOffer, GpuModel, InstanceOffer
from provision.catalog.models import CLOUDS, PriceEstimate
from provision.planning.cost import HOURS_PER_MONTH, storage_hourly_usd
from provision.planning.sizing.estimates import (
    _choose_gpus,
    _memory,
    _peak_tflops,
    gpu_hours,
    state_bytes,
)
from provision.planning.sizing.models import (
    AMORTISATION_YEARS,
    FABRIC_NAMES,
    GIB,
    HOURS_PER_YEAR,
    RAW_TEXT_BYTES_PER_TOKEN,
    RETAINED_CHECKPOINTS,
    TOKENIZED_BYTES_PER_TOKEN,
    TYPICAL_DRAW_FRACTION,
    VENDOR_PENALTY,
    Amortisation,
    BuyVsRent,
    CloudOption,
    ClusterChoice,
    FilesystemChoice,
    SizingInputs,
    StorageEstimate,
)


def _cheapest_region(offer: InstanceOffer) -> tuple[str | None, float | None]:
    if "on-demand" not in offer.consumption:
        return None, None
    priced = [(p, r) for r in offer.regions if (p := offer.price(r)) is not None]
    if not priced:
        return (min(offer.regions) if offer.regions else None), None
    price, region = min(priced)
    return region, price


def _estimate(offer: InstanceOffer) -> tuple[str, PriceEstimate] | None:
    """The lowest labelled estimate of ``offer``'s node price in any region, where no region has a real price."""
    guesses = [(r.price_estimate.usd, name, r.price_estimate) for name, r in offer.regions.items() if r.price_estimate]
    if not guesses:
        return None
    _, region, guess = min(guesses, key=lambda g: (g[0], g[1]))
    return region, guess


def _offer_key(offer: InstanceOffer, multi_node: bool) -> tuple[Any, ...]:
    _, price = _cheapest_region(offer)
    fabric = (offer.fabric == "none", -(offer.fabric_gbps or 0)) if multi_node else (False, 0.0)
    return (*fabric, price is None, price or 0.0, offer.instance_type)


def _closest_gpu(cat: Catalog, cloud: str, gpu: GpuModel, precision: str) -> GpuModel | None:
    """The GPU sold on ``cloud`` nearest to ``gpu``: log peak TFLOPS + log memory, plus a penalty across vendors."""
    names = {o.gpu for o in cat.instances_for(cloud=cloud)}
    candidates = [g for g in cat.gpus if g.name in names and _peak_tflops(g, precision)]
    peak = _peak_tflops(gpu, precision) or gpu.bf16_dense_tflops

    def distance(g: GpuModel) -> float:
        vendor = 0.0 if g.vendor == gpu.vendor else VENDOR_PENALTY
        return (
            abs(math.log((_peak_tflops(g, precision) or 1.0) / peak))
            + abs(math.log(g.memory_gib / gpu.memory_gib))
            + vendor
        )

    return min(candidates, key=lambda g: (distance(g), g.name), default=None)


def _cloud_option(cat: Catalog, cloud: str, req: SizingInputs, gpu: GpuModel) -> CloudOption:
    notes: list[str] = []
    chosen = gpu
    offers = cat.instances_for(cloud=cloud, gpu=gpu.name)
    if not offers:
        sub = _closest_gpu(cat, cloud, gpu, req.precision)
        if sub is None:
            return CloudOption(
                cloud=cloud, notes=(f"the catalog has no {req.precision.upper()}-capable GPU on {cloud}",)
            )
        chosen, offers = sub, cat.instances_for(cloud=cloud, gpu=sub.name)
        notes.append(
            f"the catalog has no {gpu.name} on {cloud}; {sub.name} is the closest "
            f"({_peak_tflops(sub, req.precision):g} dense {req.precision.upper()} TFLOPS, {sub.memory_gib:g} GiB), "
            "so GPUs and time are re-sized for it"
        )
    per_node = offers[0].gpus_per_node
    hours = _gpu_hours(cat, req, chosen)
    mem = _memory(req, chosen, per_node, per_node)
    count, _ = _choose_gpus(hours, mem.min_gpus, per_node, req.gpus, req.deadline_days)
    hours = _gpu_hours(cat, req, chosen, count)
    if mem.min_gpus is not None and count < mem.min_gpus:
        count = math.ceil(mem.min_gpus / per_node) * per_node
        notes.append(f"{req.gpus} {chosen.name} cannot hold the model states; raised to {count}")
    nodes = math.ceil(count / per_node)
    multi = nodes > 1
    offer = min(offers, key=lambda o: _offer_key(o, multi))
    region, price = _cheapest_region(offer)
    if multi and offer.fabric == "none":
        notes.append(
            f"no {chosen.name} offer on {cloud} has a GPU fabric: multi-node traffic crosses ordinary VPC networking"
        )
    for other in offers if multi and price is not None else []:
        other_price = _cheapest_region(other)[1]
        if other_price is not None and price is not None and other_price < price:
            notes.append(
                f"{other.instance_type} ({FABRIC_NAMES[other.fabric]}, {other.fabric_gbps or 0:g} Gbps) costs "
                f"${price - other_price:,.2f}/node-hour less with a slower fabric"
            )
    if offer.cpu_arch != "x86_64":
        notes.append(
            f"{offer.instance_type} has {offer.cpu_arch} (NVIDIA Grace) hosts: `provision plan` does not support it "
            "yet, so a spec written for it will not plan"
        )
    guess = _estimate(offer) if price is None and "on-demand" in offer.consumption else None
    if guess is not None:
        region, estimate = guess
        price = estimate.usd
        notes.append(
            f"ESTIMATE, not a vendor price: ${estimate.usd:,.2f}/node-hour in {region} (made "
            f"{estimate.made.isoformat()}; {estimate.method})"
        )
    if "on-demand" not in offer.consumption:
        notes.append(f"unpriced: {offer.instance_type} is not sold on-demand ({', '.join(offer.consumption)})")
    elif price is None:
        notes.append(f"unpriced: the catalog has no on-demand price for {offer.instance_type}; ask {cloud} for a quote")
    wall = hours / count
    return CloudOption(
        cloud=cloud,
        gpu=chosen.name,
        substitute=chosen is not gpu,
        instance_type=offer.instance_type,
        region=region,
        fabric=offer.fabric,
        fabric_name=FABRIC_NAMES[offer.fabric],
        fabric_gbps=offer.fabric_gbps,
        gpus=count,
        nodes=nodes,
        wall_hours=wall,
        node_hourly_usd=price,
        hourly_usd=None if price is None else price * nodes,
        total_usd=None if price is None else price * nodes * wall,
        price_estimated=guess is not None,
        notes=tuple(notes),
    )


def _gpu_hours(cat: Catalog, req: SizingInputs, gpu: GpuModel, gpus: int | None = None) -> float:
    """Expected GPU-hours on ``gpu`` (calibrated MFU x goodput, see :mod:`.calibration`)."""
    return gpu_hours(cat, req, gpu, gpus)[1]


def _filesystem(cat: Catalog, cloud: str, capacity_gib: int, write_mbps: float) -> FilesystemChoice:
    """The smallest catalog filesystem on ``cloud`` holding ``capacity_gib`` and writing ``write_mbps``."""
    best: tuple[int, int, float, FilesystemOffer] | None = None
    for rank, offer in enumerate(cat.filesystems_for(cloud)):
        if "scratch" in offer.tier.lower():  # unreplicated: a lost disk loses the checkpoints
            continue
        tiers = offer.throughput_mbps_per_tib or ((offer.baseline_mbps_per_tib,) if offer.baseline_mbps_per_tib else ())
        for tier in tiers:
            wanted = max(capacity_gib, math.ceil(write_mbps / tier * 1024))
            size = offer.nearest_sizes(wanted, 1)[0]
            if size >= wanted and offer.allows_size(size) and (best is None or (size, rank, tier) < best[:3]):
                best = (size, rank, tier, offer)
    if best is None:
        return FilesystemChoice(
            cloud=cloud,
            note=f"no catalog filesystem on {cloud} with a known throughput reaches {write_mbps / 1000:.2f} GB/s; "
            "write checkpoints to local NVMe and upload them asynchronously, or lengthen --checkpoint-minutes",
        )
    size, _, tier, offer = best
    selectable = bool(offer.throughput_mbps_per_tib)
    hourly = storage_hourly_usd(offer, size, int(tier) if selectable else None)
    estimated = offer.estimate_for(int(tier) if selectable else None) is not None
    return FilesystemChoice(
        cloud=cloud,
        kind=offer.kind,
        tier=offer.tier,
        size_gib=size,
        throughput_mbps_per_tib=tier,
        write_gbps=size / 1024 * tier / 1000,
        hourly_usd=hourly,
        note=f"{offer.kind} {offer.tier}: {size:,} GiB x {tier:g} MB/s/TiB = {size / 1024 * tier / 1000:.2f} GB/s"
        + ("" if hourly is not None else "; unpriced in the catalog")
        + ("; priced at a labelled ESTIMATE, not a vendor figure" if estimated else ""),
        price_estimated=estimated,
    )


def _storage(cat: Catalog, req: SizingInputs) -> StorageEstimate:
    per_param = {k: v for k, v in state_bytes(req).items() if "gradients" not in k and "frozen" not in k}
    checkpoint = req.params * sum(per_param.values())
    tokenized = req.tokens * TOKENIZED_BYTES_PER_TOKEN
    capacity = tokenized + RETAINED_CHECKPOINTS * checkpoint
    write_gbps = checkpoint / (req.checkpoint_minutes * 60) / 1e9
    capacity_gib = math.ceil(capacity / GIB)
    return StorageEstimate(
        checkpoint_bytes_per_param=sum(per_param.values()),
        checkpoint_bytes=checkpoint,
        checkpoint_minutes=req.checkpoint_minutes,
        required_write_gbps=write_gbps,
        dataset_raw_text_bytes=req.tokens * RAW_TEXT_BYTES_PER_TOKEN,
        dataset_tokenized_bytes=tokenized,
        retained_checkpoints=RETAINED_CHECKPOINTS,
        shared_capacity_bytes=capacity,
        filesystems=tuple(_filesystem(cat, c, capacity_gib, write_gbps * 1000) for c in CLOUDS),
    )


def _buy_vs_rent(cat: Catalog, req: SizingInputs, gpu: GpuModel, cluster: ClusterChoice) -> BuyVsRent:
    rents = [
        (p, f"{o.cloud} {o.instance_type} {r}")
        for o in cat.instances_for(gpu=gpu.name)
        for r, p in [_cheapest_region(o)]
        if p is not None
    ]
    rent, rent_offer = min(rents) if rents else (None, None)
    capex = gpu.server_price_usd
    typical = gpu.server_power_kw * TYPICAL_DRAW_FRACTION if gpu.server_power_kw else None
    energy = typical * req.pue * req.electricity_usd_per_kwh if typical is not None else None
    amortisation = []
    for years in AMORTISATION_YEARS:
        owned = capex / (years * HOURS_PER_YEAR * req.utilisation) + energy if capex and energy is not None else None
        cheaper: Literal["buy", "rent", "unknown"] = "unknown"
        if owned is not None and rent is not None:
            cheaper = "buy" if owned < rent else "rent"
        amortisation.append(Amortisation(years=years, owned_usd_per_node_hour=owned, cheaper=cheaper))
    break_even = None
    if capex and energy is not None and rent is not None and rent > energy:
        break_even = capex / ((rent - energy) * HOURS_PER_MONTH * req.utilisation)
        verdict = (
            f"an owned 8x {gpu.name} server pays for itself after {break_even:.1f} months at "
            f"{req.utilisation:.0%} utilisation against renting at ${rent:,.2f}/h; buy if you will keep it busy longer"
        )
        if cluster.nodes > 1 or cluster.wall_hours < break_even * HOURS_PER_MONTH:
            verdict += (
                f". This run alone: ${capex * cluster.nodes:,.0f} to buy {cluster.nodes} server(s) versus "
                f"${rent * cluster.nodes * cluster.wall_hours:,.0f} to rent them for {cluster.wall_days:,.1f} days"
            )
    else:
        missing = [
            w for w, v in (("server price", capex), ("server power", energy), ("on-demand price", rent)) if v is None
        ]
        verdict = f"unknown: the catalog has no {' or '.join(missing)} for {gpu.name}"
    return BuyVsRent(
        gpu=gpu.name,
        server_price_usd=capex,
        max_power_kw=gpu.server_power_kw,
        typical_power_kw=typical,
        electricity_usd_per_kwh=req.electricity_usd_per_kwh,
        pue=req.pue,
        energy_usd_per_node_hour=energy,
        utilisation=req.utilisation,
        rent_usd_per_node_hour=rent,
        rent_offer=rent_offer,
        amortisation=tuple(amortisation),
        break_even_months=break_even,
        cluster_capex_usd=capex * cluster.nodes if capex else None,
        run_rent_usd=rent * cluster.nodes * cluster.wall_hours if rent is not None else None,
        verdict=verdict,
    )


# --------------------------------------------------------------------------------------------- entry point

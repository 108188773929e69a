"""Choosing a shared filesystem that fits: the logic behind ``storage.shared.kind: auto`` and ``offers``.

A catalog row *fits* a request when its minimum size is at or below the requested size and it allows a
size at or above it (the next allowed size is taken, so steps and fixed sizes count; a tier whose minimum
is above the request does not fit: nobody asked to pay for 48 TiB to get 4) and, when a throughput is asked
for, it offers that throughput per TiB or more. Among the rows that fit, the cheapest per hour at that size
wins; rows without a price come after every priced row, the smallest overshoot first, then the cloud's
preferred service (its parallel filesystem before NFS).
"""

from __future__ import annotations

from dataclasses import dataclass

from provision.catalog import Catalog, FilesystemOffer, cloud_facts
from provision.planning.cost import storage_hourly_usd

#: Node operating systems a service's client runs on, where the vendor limits them. Parallelstore: Google's
#: "Connect from Compute Engine" guide lists HPC Rocky Linux 8, Ubuntu 22.04 LTS and Debian 12 images for the DAOS
#: client (https://cloud.google.com/parallelstore/docs/connect-from-compute-engine, read 2026-12-01); the node
#: images this project ships are Ubuntu, so 22.04 is the one they can be (the GCP adapter refuses the rest).
MOUNT_OS: dict[str, tuple[str, ...]] = {"parallelstore": ("ubuntu-22.04",)}


def mountable(offer: FilesystemOffer, node_os: str | None) -> bool:
    """Whether nodes running ``node_os`` can mount ``offer`` (``None``: unknown, e.g. a custom image: not limited)."""
    need = MOUNT_OS.get(offer.kind)
    return need is None or node_os is None or node_os in need


def unreplicated(offer: FilesystemOffer) -> bool:
    """Scratch tiers keep one copy of the data (FSx SCRATCH_1/2, Parallelstore SCRATCH): a server failure loses it."""
    return "scratch" in offer.tier.lower()


@dataclass(frozen=True)
class FilesystemFit:
    """A row that fits, at the size and throughput it would be created with."""

    offer: FilesystemOffer
    size_gib: int
    requested_gib: int
    throughput_mbps_per_tib: int | None
    hourly_usd: float | None


def smallest_allowed(offer: FilesystemOffer, size_gib: int) -> int | None:
    """The smallest size ``offer`` allows at or above ``size_gib``; None above its maximum."""
    candidates = [s for s in offer.fixed_sizes_gib if s >= size_gib]
    if size_gib <= offer.max_gib:
        start = max(size_gib, offer.min_gib)
        k = -(-(start - offer.min_gib) // offer.step_gib)
        step_size = offer.min_gib + k * offer.step_gib
        if step_size <= offer.max_gib:
            candidates.append(step_size)
    return min(candidates) if candidates else None


def minimum(offer: FilesystemOffer) -> int:
    """The smallest size ``offer`` allows."""
    return min((*offer.fixed_sizes_gib, offer.min_gib))


def _throughput(offer: FilesystemOffer, want: int | None) -> int | None | bool:
    """The tier to create for ``want`` (False when the row cannot deliver it)."""
    tiers = list(offer.throughput_mbps_per_tib)
    if tiers:
        if want is None:
            return tiers[0]
        fitting = [t for t in tiers if t >= want]
        return min(fitting) if fitting else False
    baseline = offer.baseline_mbps_per_tib
    if want is None:
        return int(baseline) if baseline else None
    return int(baseline) if baseline is not None and baseline >= want else False


def fits(
    catalog: Catalog,
    cloud: str,
    region: str | None,
    size_gib: int,
    throughput_mbps_per_tib: int | None = None,
    kinds: tuple[str, ...] | None = None,
    skip_scratch: bool = False,
    node_os: str | None = None,
) -> list[FilesystemFit]:
    """Every catalog row on ``cloud`` that fits the request, best first (see the module docstring).

    With ``node_os``, rows whose client does not run on it (:data:`MOUNT_OS`) are left out: auto never chooses
    a service the nodes cannot mount.
    """
    # Services ``auto`` prefers when prices cannot decide, parallel filesystems first (catalog facts).
    prefer = cloud_facts(cloud).filesystems
    out = []
    for offer in catalog.filesystems_for(cloud):
        if kinds is not None and offer.kind not in kinds:
            continue
        if region is not None and offer.regions and region not in offer.regions:
            continue
        if skip_scratch and unreplicated(offer):
            continue
        if not mountable(offer, node_os):
            continue
        size = smallest_allowed(offer, size_gib)
        tier = _throughput(offer, throughput_mbps_per_tib)
        if size is None or tier is False or minimum(offer) > size_gib:
            continue
        throughput = None if isinstance(tier, bool) else tier
        selectable = bool(offer.throughput_mbps_per_tib)
        hourly = storage_hourly_usd(offer, size, throughput if selectable else None, region)
        out.append(FilesystemFit(offer, size, size_gib, throughput, hourly))

    def key(f: FilesystemFit) -> tuple[bool, float, int, int]:
        rank = prefer.index(f.offer.kind) if f.offer.kind in prefer else len(prefer)
        if f.hourly_usd is not None:
            return (False, f.hourly_usd, rank, f.size_gib)
        return (True, float(f.size_gib), rank, 0)

    return sorted(out, key=key)

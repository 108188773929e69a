"""The offer catalog: GPU instance types, shared filesystems and network prices as data.

``load_catalog()`` reads and checks ``data/*.yaml`` once per process (the result is
immutable and cached). Lookups are case-insensitive and suggest close matches.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from importlib import resources

import yaml

from provision.catalog.models import (
    CLOUDS,
    CloudFacts,
    CloudFile,
    CpuOffer,
    FilesystemOffer,
    GpuFile,
    GpuModel,
    InstanceOffer,
    KnownAccelerator,
    NetworkPrices,
    PriceEstimate,
)

__all__ = [
    "Catalog",
    "CloudFacts",
    "FilesystemOffer",
    "GpuModel",
    "InstanceOffer",
    "NetworkPrices",
    "cloud_facts",
    "cloud_of_package",
    "load_catalog",
    "read_cloud_files",
    "suggest",
]


def suggest(word: str, choices: list[str] | tuple[str, ...], n: int = 3) -> list[str]:
    """Close matches of ``word`` among ``choices`` (case-insensitive), best first."""
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


@dataclass(frozen=True)
class Catalog:
    """All offers, indexed. Build it with :func:`load_catalog`."""

    version: str
    gpus: tuple[GpuModel, ...]
    instances: tuple[InstanceOffer, ...]
    filesystems: tuple[FilesystemOffer, ...]
    network: tuple[NetworkPrices, ...]
    #: Small CPU types (the Slurm controller), with their on-demand prices per region.
    cpu_instances: tuple[CpuOffer, ...] = ()
    #: Per cloud, the date its file's figures were last reviewed (``version`` in ``data/<cloud>.yaml``).
    reviewed: dict[str, date] = field(default_factory=dict)
    #: Accelerators known but not sized or priced (gpus.yaml ``known``).
    known: tuple[KnownAccelerator, ...] = ()

    def known_accelerator(self, name: str) -> KnownAccelerator | None:
        """The known-but-unsized accelerator called ``name`` or one of its aliases, case-insensitively."""
        key = name.strip().lower()
        for k in self.known:
            if k.name.lower() == key or key in (a.lower() for a in k.aliases):
                return k
        return None

    def age_days(self, cloud: str, today: date) -> int | None:
        """Days since ``cloud``'s prices were last reviewed; None when the catalog does not say."""
        when = self.reviewed.get(cloud)
        return None if when is None else (today - when).days

    def gpu(self, name: str) -> GpuModel | None:
        """The GPU model called ``name`` or one of its aliases, case-insensitively."""
        key = name.strip().lower()
        for g in self.gpus:
            if g.name.lower() == key or key in (a.lower() for a in g.aliases):
                return g
        return None

    def gpu_names(self) -> list[str]:
        return [g.name for g in self.gpus]

    def instance(self, cloud: str, instance_type: str) -> InstanceOffer | None:
        for o in self.instances:
            if o.cloud == cloud and o.instance_type.lower() == instance_type.lower():
                return o
        return None

    def instances_for(
        self, cloud: str | None = None, gpu: str | None = None, region: str | None = None
    ) -> list[InstanceOffer]:
        """Offers filtered by cloud, canonical GPU name and region (each optional)."""
        model = self.gpu(gpu) if gpu else None
        canonical = model.name if model else gpu
        return [
            o
            for o in self.instances
            if (cloud is None or o.cloud == cloud)
            and (canonical is None or o.gpu.lower() == canonical.lower())
            and (region is None or region in o.regions)
        ]

    def regions(self, cloud: str) -> list[str]:
        return sorted({r for o in self.instances if o.cloud == cloud for r in o.regions})

    def zones(self, cloud: str, region: str) -> list[str]:
        return sorted(
            {z for o in self.instances if o.cloud == cloud and region in o.regions for z in o.regions[region].zones}
        )

    def filesystems_for(self, cloud: str, kind: str | None = None) -> list[FilesystemOffer]:
        return [f for f in self.filesystems if f.cloud == cloud and (kind is None or f.kind == kind)]

    def cpu_price(self, cloud: str, instance_type: str, region: str) -> float | None:
        """The on-demand USD per hour of CPU type ``instance_type`` in ``region``; None when the catalog has none."""
        for o in self.cpu_instances:
            if o.cloud == cloud and o.instance_type.lower() == instance_type.lower():
                return o.price_per_hour_usd.get(region)
        return None

    def cpu_estimate(self, cloud: str, instance_type: str, region: str) -> PriceEstimate | None:
        """The labelled estimate that prices CPU type ``instance_type`` in ``region``; None when a vendor figure does
        (or nothing does)."""
        for o in self.cpu_instances:
            if o.cloud == cloud and o.instance_type.lower() == instance_type.lower():
                return None if region in o.price_per_hour_usd else o.price_estimate
        return None

    def cpu_hourly(self, cloud: str, instance_type: str, region: str) -> float | None:
        """The USD per hour of CPU type ``instance_type`` in ``region``: the vendor's figure, else the labelled
        estimate (:meth:`cpu_estimate` says which), else None."""
        price = self.cpu_price(cloud, instance_type, region)
        if price is not None:
            return price
        guess = self.cpu_estimate(cloud, instance_type, region)
        return guess.usd if guess is not None else None

    def network_prices(self, cloud: str) -> NetworkPrices:
        for n in self.network:
            if n.cloud == cloud:
                return n
        raise KeyError(cloud)


def load_yaml(text: str) -> object:
    """``text`` read with a safe YAML loader: libyaml's where PyYAML has it (the same document; the catalog about ten
    times, a node's user data about fifty times faster than with the pure-Python one), else PyYAML's own."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506  # a safe loader either way


def read_data(name: str) -> object:
    """The YAML document ``data/<name>`` of the catalog package."""
    return load_yaml(resources.files("provision.catalog").joinpath("data").joinpath(name).read_text(encoding="utf-8"))


def read_cloud_files() -> dict[str, CloudFile]:
    """Every ``data/<cloud>.yaml`` document as validated, uncached (``provision catalog refresh`` edits them)."""
    return {cloud: CloudFile.model_validate(read_data(f"{cloud}.yaml")) for cloud in CLOUDS}


@cache
def cloud_facts(cloud: str) -> CloudFacts:
    """The ``facts:`` header of ``data/<cloud>.yaml`` (package, region key, tag field, filesystem preference).

    Raises:
        KeyError: ``cloud`` is not one of ``CLOUDS``.
    """
    if cloud not in CLOUDS:
        raise KeyError(f"{cloud!r} is not a cloud; the clouds are {', '.join(CLOUDS)}")
    doc = read_data(f"{cloud}.yaml")
    return CloudFacts.model_validate(doc.get("facts") if isinstance(doc, dict) else None)


def cloud_of_package(package: str) -> str | None:
    """The cloud whose Pulumi provider has type-token prefix ``package`` (``azure-native`` -> ``azure``)."""
    return next((c for c in CLOUDS if cloud_facts(c).pulumi_package == package), None)


@cache
def load_catalog() -> Catalog:
    """Read and validate every catalog file. Cached: the result is immutable.

    Raises:
        pydantic.ValidationError: a data file breaks the row models (a bug in the data, not user input).
    """
    gpus = GpuFile.model_validate(read_data("gpus.yaml"))
    files = [CloudFile.model_validate(read_data(f"{cloud}.yaml")) for cloud in CLOUDS]
    for f in files:
        wrong = [o.instance_type for o in f.instances if o.cloud != f.cloud]
        wrong += [fs.tier for fs in f.filesystems if fs.cloud != f.cloud]
        wrong += [c.instance_type for c in f.cpu_instances if c.cloud != f.cloud]
        if wrong:
            raise ValueError(f"{f.cloud}.yaml holds rows of another cloud: {wrong}")
    known = {g.name for g in gpus.gpus}
    unknown = [
        f"{o.cloud}.yaml row {o.instance_type!r}: gpu {o.gpu!r}"
        for f in files
        for o in f.instances
        if o.gpu not in known
    ]
    if unknown:
        # The planner and the health check read a type's GPU facts (generation, NVSwitch) from gpus.yaml.
        raise ValueError(f"instance rows name a GPU that gpus.yaml does not hold: {'; '.join(unknown)}")
    return Catalog(
        version=max([gpus.version, *(f.version for f in files)]),
        reviewed={f.cloud: date.fromisoformat(f.version) for f in files},
        gpus=gpus.gpus,
        known=gpus.known,
        instances=tuple(o for f in files for o in f.instances),
        filesystems=tuple(fs for f in files for fs in f.filesystems),
        network=tuple(f.network for f in files),
        cpu_instances=tuple(c for f in files for c in f.cpu_instances),
    )

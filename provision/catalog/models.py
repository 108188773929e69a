"""Typed rows of the offer catalog.

The catalog is data (``provision/catalog/data/*.yaml``), loaded and checked by these models.
Every figure carries its source; a figure nobody could verify is ``null`` in the data and
``None`` here, and is never invented.
"""

from __future__ import annotations

from datetime import date
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Cloud = Literal["aws", "gcp", "azure", "alibaba"]
CLOUDS: tuple[str, ...] = get_args(Cloud)

FabricKind = Literal["efa", "tcpx", "tcpxo", "rdma", "infiniband", "erdma", "none"]
FABRICS: tuple[str, ...] = get_args(FabricKind)

CpuArch = Literal["x86_64", "arm64"]

Consumption = Literal["on-demand", "spot", "reservation", "capacity-block", "flex-start"]
CONSUMPTIONS: tuple[str, ...] = get_args(Consumption)

FilesystemKind = Literal[
    "fsx-lustre",
    "filestore",
    "managed-lustre",
    "parallelstore",
    "amlfs",
    "netapp",
    "cpfs",
    "cpfs-lingjun",
    "nas",
    "nas-extreme",
]
FILESYSTEM_KINDS: tuple[str, ...] = get_args(FilesystemKind)

#: What :meth:`InstanceOffer.capacity_price` calls a price that is a labelled estimate.
ESTIMATE_BASIS = "ESTIMATE (no vendor price readable)"

#: The month this catalog's per-month prices are divided over to give an hourly rate (planning/cost.py too).
HOURS_PER_MONTH = 730.0


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(_Row):
    """Where a figure comes from."""

    ref: str = Field(description="URL, or 'package==version path' for data shipped in a package.")
    retrieved: date = Field(description="When the figure was read.")
    covers: str = Field(description="Which fields this source backs, e.g. 'gpus, memory, vcpus'.")


class PriceEstimate(_Row):
    """A price nobody could read from the vendor, estimated by a stated method and labelled so wherever it is used.

    Estimates err on the safe (high) side so that a cost cap built on one is not exceeded by the real bill;
    ``provision catalog refresh`` replaces them with the vendor's figure where its price API is reachable.
    """

    usd: float = Field(gt=0, description="The estimate: USD per node-hour (instances) or per TiB-month (storage).")
    method: str = Field(min_length=10, description="How the figure was made, so anyone can redo it.")
    made: date = Field(description="When the estimate was made.")
    sources: tuple[Source, ...] = Field(min_length=1, description="The figures the method starts from.")


class RegionOffer(_Row):
    """An instance type as sold in one region."""

    zones: tuple[str, ...] = Field(description="Zones that offer the type; empty when unknown.")
    price_per_hour_usd: float | None = Field(
        default=None, ge=0, description="On-demand list price per node-hour in USD; null when unknown."
    )
    spot_price_per_hour_usd: float | None = Field(
        default=None, ge=0, description="A recent spot price per node-hour in USD; null when unknown."
    )
    reservation_price_per_hour_usd: float | None = Field(
        default=None,
        ge=0,
        description="Rate per node-hour a reservation bills before commitment discounts; set where the type is "
        "not sold on-demand (GCP bills reserved VMs at the machine type's list SKU rate).",
    )
    sales_only: bool = Field(default=False, description="Sold only through the vendor's sales team here.")
    price_estimate: PriceEstimate | None = Field(
        default=None, description="A labelled estimate per node-hour, used only where no price above is known."
    )


class InstanceOffer(_Row):
    """One GPU instance type."""

    cloud: Cloud
    instance_type: str
    family: str = Field(description="Short family name used in stack names, e.g. p5, a3, ndh100, gn8.")
    gpu: str = Field(description="Canonical accelerator model, e.g. H100, H200, A100-80GB, MI300X.")
    gpu_vendor: Literal["nvidia", "amd"] = "nvidia"
    cpu_arch: CpuArch = Field(
        default="x86_64", description="Host CPU architecture: arm64 on NVIDIA Grace (GB200) sizes."
    )
    gpus_per_node: int = Field(gt=0)
    gpu_memory_gib: float = Field(gt=0, description="Memory per GPU in GiB.")
    vcpus: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    local_nvme_gib: float | None = Field(default=None, ge=0, description="Total local NVMe; null if unknown.")
    local_nvme_disks: int | None = Field(default=None, ge=0)
    fabric: FabricKind = Field(description="The GPU-to-GPU network between nodes.")
    fabric_gbps: float | None = Field(default=None, ge=0, description="Fabric bandwidth per node.")
    fabric_interfaces: int = Field(
        ge=0, description="EFA devices (AWS), GPU NICs (GCP), IB rails (Azure) or ERIs (Alibaba)."
    )
    network_cards: int | None = Field(default=None, ge=0, description="AWS network cards on the type.")
    host_nics: int = Field(default=1, ge=1, description="Host (non-GPU) NICs; 2 on a3-ultragpu-8g.")
    consumption: tuple[Consumption, ...] = Field(description="Consumption models the cloud sells.")
    regions: dict[str, RegionOffer]
    sources: tuple[Source, ...] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _fabric_count_matches(self) -> InstanceOffer:
        if self.fabric == "none" and self.fabric_interfaces:
            raise ValueError(f"{self.instance_type}: fabric 'none' with {self.fabric_interfaces} interfaces")
        return self

    def price(self, region: str) -> float | None:
        offer = self.regions.get(region)
        return offer.price_per_hour_usd if offer else None

    def capacity_price(self, region: str, capacity: str) -> tuple[float | None, str]:
        """USD per node-hour for ``capacity`` in ``region`` and what the figure is.

        The on-demand list price when the catalog has one (an upper bound for discounted capacity types);
        for a type with no on-demand price, the rate its own capacity type bills: a reservation's list rate
        or a recent spot price. ``(None, reason)`` when the catalog holds neither.
        """
        offer = self.regions.get(region)
        if offer is None:
            return None, f"{self.instance_type} is not offered in {region}"
        if offer.price_per_hour_usd is not None:
            return offer.price_per_hour_usd, "on-demand list price"
        if capacity == "reservation" and offer.reservation_price_per_hour_usd is not None:
            return offer.reservation_price_per_hour_usd, "reservation list rate (before commitment discounts)"
        if capacity == "spot" and offer.spot_price_per_hour_usd is not None:
            return offer.spot_price_per_hour_usd, "recent spot price"
        if offer.price_estimate is not None:
            return offer.price_estimate.usd, ESTIMATE_BASIS
        return None, f"no {capacity} price for {self.instance_type} in {region} in the catalog"

    def estimate(self, region: str, capacity: str) -> PriceEstimate | None:
        """The labelled estimate that prices ``capacity`` in ``region``, or None when a real figure does."""
        _, basis = self.capacity_price(region, capacity)
        return self.regions[region].price_estimate if basis == ESTIMATE_BASIS else None

    @property
    def gpu_memory_total_gib(self) -> float:
        return self.gpu_memory_gib * self.gpus_per_node


class ExchangeRate(_Row):
    """A dated reference rate from a public authority, as published: units of ``currency`` and of USD per euro.

    The ECB publishes every rate against the euro, so USD per unit of ``currency`` is the cross
    ``usd_per_eur / per_eur`` of the same day (:attr:`usd_per_unit`).
    """

    currency: Literal["CNY"]
    authority: str = Field(description="Who publishes the rates, e.g. 'ECB euro foreign exchange reference rates'.")
    per_eur: float = Field(gt=0, description="Units of `currency` per euro on `rate_date`.")
    usd_per_eur: float = Field(gt=0, description="US dollars per euro on `rate_date`.")
    rate_date: date = Field(description="The day the authority published both rates for.")
    sources: tuple[Source, ...] = Field(min_length=1)

    @property
    def usd_per_unit(self) -> float:
        return self.usd_per_eur / self.per_eur


class LocalPrice(_Row):
    """A price the vendor publishes only in a local currency, converted to USD at a stated, dated rate."""

    currency: Literal["CNY"]
    per_gib_month: float = Field(ge=0, description="The vendor's figure, in `currency` per GiB-month.")
    billing_hours_per_month: float = Field(
        default=730.0, gt=0, description="Hours the vendor divides its monthly unit price by to bill each hour."
    )
    rate: ExchangeRate = Field(description="The rate of `currency` (the only local currency the catalog holds: CNY).")

    def usd_per_tib_month(self, hours_per_month: float) -> float:
        """USD per TiB-month on a ``hours_per_month`` month that bills what the vendor bills per hour."""
        return self.per_gib_month * 1024 * self.rate.usd_per_unit * hours_per_month / self.billing_hours_per_month


class FilesystemOffer(_Row):
    """One managed shared filesystem service tier.

    Allowed sizes are ``fixed_sizes_gib`` plus every ``min_gib + k * step_gib`` up to ``max_gib``.
    """

    cloud: Cloud
    kind: FilesystemKind
    tier: str = Field(description="The cloud's name for the tier: deployment type, SKU or service level.")
    protocol: Literal["lustre", "nfs", "daos", "cpfs"]
    min_gib: int = Field(gt=0)
    step_gib: int = Field(gt=0)
    max_gib: int = Field(gt=0)
    fixed_sizes_gib: tuple[int, ...] = Field(default=(), description="Sizes allowed below min_gib.")
    throughput_mbps_per_tib: tuple[int, ...] = Field(
        default=(), description="Selectable throughput tiers; empty when the tier fixes throughput."
    )
    baseline_mbps_per_tib: float | None = Field(default=None, ge=0, description="Throughput the tier gives.")
    price_per_tib_month_usd: float | None = Field(default=None, ge=0)
    price_per_tib_month_by_throughput: dict[int, float] = Field(
        default_factory=dict,
        description="USD per TiB-month by throughput tier, where the tier sets the price (FSx PERSISTENT_2).",
    )
    price_per_mbps_month_usd: float | None = Field(
        default=None, ge=0, description="Extra charge per provisioned MB/s per month, where billed so."
    )
    estimates_by_throughput: dict[int, PriceEstimate] = Field(
        default_factory=dict,
        description="Labelled estimates of USD per TiB-month by throughput tier (the baseline for fixed-throughput "
        "tiers), used only where the vendor's price is unknown; they hold where the row's prices hold.",
    )
    price_estimate: PriceEstimate | None = Field(
        default=None,
        description="A labelled estimate of USD per TiB-month for a tier with no throughput figure to key it by "
        "(Alibaba Extreme NAS), used only where the vendor's price is unknown.",
    )
    regions: tuple[str, ...] = Field(default=(), description="Regions where sold; empty means 'not restricted'.")
    priced_regions: tuple[str, ...] = Field(
        default=(),
        description="Regions the prices were read for; a plan elsewhere is unpriced. Empty: the source named no "
        "region and the price stands for every region (the row's notes say so).",
    )
    local_price: LocalPrice | None = Field(
        default=None,
        description="The vendor's price in its own currency where it publishes no USD one (Alibaba's China-site "
        "CPFS); used, converted at its stated rate, when the row has no USD price.",
    )
    sources: tuple[Source, ...] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _sizes_consistent(self) -> FilesystemOffer:
        if self.max_gib < self.min_gib:
            raise ValueError(f"{self.kind}/{self.tier}: max_gib < min_gib")
        return self

    def allows_size(self, size_gib: int) -> bool:
        if size_gib in self.fixed_sizes_gib:
            return True
        return self.min_gib <= size_gib <= self.max_gib and (size_gib - self.min_gib) % self.step_gib == 0

    def nearest_sizes(self, size_gib: int, count: int = 3) -> list[int]:
        """Allowed sizes at or above ``size_gib`` (or the largest ones), for 'to fix' hints."""
        out = [s for s in sorted(self.fixed_sizes_gib) if s >= size_gib]
        start = max(self.min_gib, size_gib)
        k = -(-(start - self.min_gib) // self.step_gib)
        while len(out) < count:
            s = self.min_gib + k * self.step_gib
            if s > self.max_gib:
                break
            out.append(s)
            k += 1
        return out[:count] or [self.max_gib]

    def priced_in(self, region: str | None) -> bool:
        """Whether the row's prices hold in ``region`` (``None``: no region to check against)."""
        return region is None or not self.priced_regions or region in self.priced_regions

    def price_per_tib_month(self, throughput_mbps_per_tib: int | None, region: str | None = None) -> float | None:
        """USD per TiB-month at a throughput tier in ``region``; the tier's own price where the row lists one.

        A row priced only in a local currency (:class:`LocalPrice`) is converted at its stated rate onto this
        catalog's 730-hour month. ``None`` when the catalog has no price, or has one only for other regions
        (``priced_regions``).
        """
        if not self.priced_in(region):
            return None
        if throughput_mbps_per_tib is not None and throughput_mbps_per_tib in self.price_per_tib_month_by_throughput:
            return self.price_per_tib_month_by_throughput[throughput_mbps_per_tib]
        if self.price_per_tib_month_usd is None and self.local_price is not None:
            return self.local_price.usd_per_tib_month(HOURS_PER_MONTH)
        if self.price_per_tib_month_usd is None:
            guess = self.estimate_for(throughput_mbps_per_tib, region)
            return guess.usd if guess is not None else None
        return self.price_per_tib_month_usd

    def estimate_for(self, throughput_mbps_per_tib: int | None, region: str | None = None) -> PriceEstimate | None:
        """The labelled estimate that prices this row at ``throughput_mbps_per_tib`` in ``region``; None when a
        vendor figure does (or nothing does)."""
        if not self.priced_in(region) or self.price_per_tib_month_usd is not None or self.local_price is not None:
            return None
        tier = throughput_mbps_per_tib
        if tier is None and not self.throughput_mbps_per_tib and self.baseline_mbps_per_tib:
            tier = int(self.baseline_mbps_per_tib)
        if tier is None and not self.throughput_mbps_per_tib and not self.baseline_mbps_per_tib:
            return self.price_estimate
        if tier is None or tier in self.price_per_tib_month_by_throughput:
            return None
        return self.estimates_by_throughput.get(tier)

    def converted_price(self, region: str | None = None) -> LocalPrice | None:
        """The local-currency price a plan in ``region`` is converted from, or ``None`` when it uses a USD one."""
        if self.local_price is None or self.price_per_tib_month_usd is not None or not self.priced_in(region):
            return None
        return self.local_price

    def throughput_for(self, requested: int | None) -> int | None:
        if not self.throughput_mbps_per_tib:
            return int(self.baseline_mbps_per_tib) if self.baseline_mbps_per_tib else None
        if requested is None:
            return self.throughput_mbps_per_tib[0]
        return requested if requested in self.throughput_mbps_per_tib else None


class NetworkPrices(_Row):
    """What a private cluster's egress path bills per hour on one cloud: the NAT gateway and its public IP.

    Clouds bill the gateway differently: per gateway-hour (AWS, Azure, Alibaba; some regions differ), or per
    VM that uses it up to a cap and a flat rate above (GCP Cloud NAT). Per-GB processing fees are usage, not
    held here.
    """

    cloud: Cloud
    nat_per_hour_usd: float | None = Field(
        default=None, ge=0, description="Gateway-hour price (GCP: the flat rate above nat_node_cap VMs)."
    )
    nat_per_hour_usd_by_region: dict[str, float] = Field(
        default_factory=dict, description="Gateway-hour price where a region differs from nat_per_hour_usd."
    )
    nat_per_node_hour_usd: float | None = Field(
        default=None, ge=0, description="Price per VM-hour using the gateway, where billed so (GCP)."
    )
    nat_node_cap: int | None = Field(default=None, ge=1, description="VMs billed per VM before the flat rate.")
    public_ip_per_hour_usd: float | None = Field(default=None, ge=0)
    public_ip_per_hour_usd_by_region: dict[str, float] = Field(
        default_factory=dict, description="Public IP price per hour where a region differs from public_ip_per_hour_usd."
    )
    nat_public_ips: int = Field(default=0, ge=0, description="Public IPs the cluster's NAT gateway holds.")
    sources: tuple[Source, ...] = Field(min_length=1)
    notes: str = ""

    def nat_hourly(self, region: str, nodes: int) -> float | None:
        """The NAT gateway's USD per hour for ``nodes`` VMs in ``region``; None when not recorded."""
        if self.nat_per_node_hour_usd is not None:
            if self.nat_node_cap is None or nodes <= self.nat_node_cap:
                return self.nat_per_node_hour_usd * nodes
            return self.nat_per_hour_usd
        return self.nat_per_hour_usd_by_region.get(region, self.nat_per_hour_usd)

    def nat_ip_hourly(self, region: str | None = None) -> float | None:
        """The NAT gateway's public IPs per hour in ``region`` (0 when it holds none); None when not recorded."""
        if not self.nat_public_ips:
            return 0.0
        price = self.public_ip_per_hour_usd_by_region.get(region or "", self.public_ip_per_hour_usd)
        return None if price is None else price * self.nat_public_ips


#: Accelerator architectures the catalog knows. The sizing planner's calibration
#: (planning/sizing/calibration.py) fits or borrows one MFU line per generation; a row naming any other value
#: is refused when the catalog loads, with the row's name.
GpuGeneration = Literal["ampere", "hopper", "blackwell", "cdna3", "davinci"]
GPU_GENERATIONS: tuple[str, ...] = get_args(GpuGeneration)


class GpuModel(_Row):
    """Facts about an accelerator model used by the sizing planner and the node health check."""

    name: str
    vendor: Literal["nvidia", "amd", "huawei"]
    generation: str = Field(description=f"Architecture, one of {', '.join(GPU_GENERATIONS)}; required, no default.")
    nvswitch: bool = Field(
        description="Its 8-GPU board (HGX/DGX, or the NVL72 rack) joins every GPU through NVSwitch, so the node "
        "health check expects every NVLink up; false for parts without NVLink switching (AMD's Infinity Fabric)."
    )
    memory_gib: float = Field(gt=0)
    bf16_dense_tflops: float = Field(gt=0, description="Dense BF16 peak TFLOP/s without sparsity.")
    fp8_dense_tflops: float | None = Field(default=None, gt=0)
    server_price_usd: float | None = Field(default=None, gt=0, description="Street price of an 8-GPU server.")
    server_power_kw: float | None = Field(default=None, gt=0, description="Max power of an 8-GPU server.")
    aliases: tuple[str, ...] = ()
    sources: tuple[Source, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _known_generation(self) -> GpuModel:
        if self.generation not in GPU_GENERATIONS:
            raise ValueError(
                f"gpus.yaml row {self.name!r}: generation {self.generation!r} is not one of "
                f"{', '.join(GPU_GENERATIONS)} (add the architecture to catalog/models.py GpuGeneration and a "
                "calibration line or borrow in planning/sizing/calibration.py)"
            )
        return self


class PrivatePath(_Row):
    """The cloud's private way in to nodes without a public address (``planning/access.py`` renders it)."""

    via: Literal["ssm", "iap", "bastion"] = Field(description="SSM Session Manager, IAP TCP forwarding, Bastion.")
    option: str | None = Field(
        pattern=r"^[a-z_]+$",
        description="The cloud's spec option (``<cloud>.<option>``) that turns it on; null: always on.",
    )


class CloudFacts(_Row):
    """What the layers below ``clouds/`` know about a cloud: the ``facts:`` header of ``data/<cloud>.yaml``.

    One place per fact (``docs/adding-a-cloud.md``): the mocked cloud, the policy rules, the planner and the
    stack config all read these instead of keeping their own per-cloud tables.
    """

    pulumi_package: str = Field(
        pattern=r"^[a-z][a-z0-9-]*$",
        description="The type-token prefix of the cloud's Pulumi provider (``aws`` in ``aws:ec2/vpc:Vpc``).",
    )
    pulumi_module: str = Field(
        pattern=r"^[a-z_][a-z0-9_]*$", description="The provider's Python SDK module, e.g. ``pulumi_aws``."
    )
    provider_region_key: str = Field(
        pattern=r"^[a-z][a-z0-9-]*:[a-zA-Z]+$",
        description="The provider config key that sets the default region, e.g. ``aws:region``.",
    )
    region_from_provider: bool = Field(
        description="Resources go where the provider points (no region input of their own), so a stack of this "
        "cloud must set ``provider_region_key``.",
    )
    tag_field: Literal["tags", "labels"] = Field(
        description="The resource input that holds provision's tags (GCP calls them labels)."
    )
    private_path: PrivatePath | None = Field(
        description="The private way in to the nodes; null when the cloud has none (a public head node or a VPN).",
    )
    filesystems: tuple[FilesystemKind, ...] = Field(
        min_length=1,
        description="Shared filesystems in order of preference when prices cannot decide (``storage.kind: auto``);"
        " the first is the cloud's default parallel filesystem.",
    )
    regions_without_zones: tuple[str, ...] = Field(
        default=(),
        description="Catalog regions that have no availability zones: a zonal resource there is refused, so the "
        "plan refuses a zone and applies no default zone (the source is next to the list in the data file).",
    )


class CpuOffer(_Row):
    """A small CPU machine type the clusters run beside the GPU nodes (the Slurm controller), with its on-demand
    list price per region where a source gave one."""

    cloud: Cloud
    instance_type: str
    vcpus: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    price_per_hour_usd: dict[str, float] = Field(description="Region -> on-demand (Linux) USD per hour.")
    price_estimate: PriceEstimate | None = Field(
        default=None,
        description="A labelled estimate per node-hour, used in every region the row has no price for (none read).",
    )
    sources: tuple[Source, ...] = Field(min_length=1)
    notes: str = ""

    @field_validator("price_per_hour_usd")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {r: p for r, p in v.items() if p < 0}
        if bad:
            raise ValueError(f"negative prices: {bad}")
        return v


class CloudFile(_Row):
    """One ``data/<cloud>.yaml`` document."""

    version: str = Field(description="Date the file's figures were last reviewed, YYYY-MM-DD.")
    cloud: Cloud
    facts: CloudFacts
    instances: tuple[InstanceOffer, ...]
    filesystems: tuple[FilesystemOffer, ...]
    network: NetworkPrices
    cpu_instances: tuple[CpuOffer, ...] = Field(default=(), description="CPU types (the Slurm controller).")


class KnownAccelerator(_Row):
    """An accelerator the catalog knows of but neither sizes nor prices: no catalog cloud sells it and the planner
    has no calibrated throughput for its architecture (Huawei Ascend, Cambricon MLU). ``size --gpu`` names it and
    says why instead of calling it unknown."""

    name: str
    vendor: str = Field(description="Lower case: huawei, cambricon ...")
    aliases: tuple[str, ...] = ()
    memory_gib: float | None = Field(default=None, gt=0)
    bf16_dense_tflops: float | None = Field(default=None, gt=0, description="Null where sources disagree or none.")
    cloud: str = Field(description="Why no cloud option exists, e.g. 'sold by no cloud in this catalog'.")
    sizing: str = Field(description="Why the planner does not size it, and what to do instead.")
    onprem_server: str | None = Field(default=None, description="The build catalog's server row id, if any.")
    sources: tuple[Source, ...] = Field(min_length=1)


class GpuFile(_Row):
    """The ``data/gpus.yaml`` document."""

    version: str
    gpus: tuple[GpuModel, ...]
    known: tuple[KnownAccelerator, ...] = Field(
        default=(), description="Accelerators known but not sized or priced (KnownAccelerator)."
    )

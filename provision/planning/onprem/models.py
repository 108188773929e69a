"""The on-premises build report: the bill of materials and what it costs, as frozen pydantic models.

Every money figure is ``None`` when some part of it is unpriced in the on-premises catalog; the line says so
in ``note`` and the report lists it under ``unpriced``. Nothing here computes; see the sibling modules.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Category = Literal[
    "servers", "compute fabric", "fabric links", "storage", "management network", "head nodes", "racks and facility"
]
CATEGORIES: tuple[str, ...] = (
    "servers",
    "compute fabric",
    "fabric links",
    "storage",
    "management network",
    "head nodes",
    "racks and facility",
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SizedRun(_Model):
    """What the build planner needs from the sizing report (see :func:`provision.planning.onprem.sized_run`)."""

    params: float
    tokens: float
    gpu: str
    gpus: int
    nodes: int
    gpus_per_node: int
    gpus_given: bool = Field(description="--gpus was given: its count is kept.")
    deadline_days: float
    deadline_given: bool
    gpu_hours: float
    fits_one_node: bool = Field(description="The model states and allowance fit one node's GPUs.")
    shared_capacity_bytes: float
    checkpoint_bytes: float
    checkpoint_minutes: float
    required_write_gb_s: float
    electricity_usd_per_kwh: float
    pue: float
    utilisation: float
    clouds: tuple[dict[str, Any], ...] = Field(description="Per-cloud rows: cloud, instance_type, region, gpu, ...")
    mfu_basis: str = Field(default="", description="Where the sizing planner's efficiency came from.")
    gpu_hours_range: tuple[float, float] | None = Field(default=None, description="The sizing planner's range.")


class Decision(_Model):
    """Single server or cluster, and why."""

    topology: Literal["single-server", "cluster"]
    servers: int
    gpus: int
    reason: str
    one_server_days: float
    cluster_days: float


class LineItem(_Model):
    """One procurement line."""

    category: Category
    item: str
    part: str | None = Field(default=None, description="Catalog id of the part, when it has one.")
    quantity: int
    unit_usd: float | None = None
    total_usd: float | None = None
    priced_in: str | None = Field(default=None, description="Set when another line's price already includes this.")
    note: str = ""
    sources: tuple[str, ...] = ()


class ServerConfig(_Model):
    """The server to buy and how to configure it."""

    id: str
    name: str
    vendor: str
    accelerator: str
    accelerators: int
    cpu: str | None
    memory_gb: int | None
    memory_note: str
    nvme_tb: float | None
    compute_nics: int
    compute_nic: str
    nic_gbps: int
    rack_units: int | None
    power_max_kw: float | None
    power_typical_kw: float | None
    cooling: tuple[str, ...]
    software: str
    nvlink_domain_gpus: int | None = Field(default=None, description="GPUs per NVLink domain when it spans units.")
    rack_scale_units: int | None = Field(default=None, description="Units per rack-scale system (bought whole).")
    rack_power_kw: float | None = Field(default=None, description="Power of one whole rack-scale system.")


class FabricDesign(_Model):
    """A rail-optimized, non-blocking fat tree sized from the node count and the switch radix."""

    kind: Literal["none", "infiniband", "roce"]
    switch: str | None
    radix: int | None
    rails: int
    tiers: int = Field(description="0: no fabric (one server); 1: one switch; 2: leaf-spine; 3: leaf-spine-core.")
    endpoints: int
    leaves: int
    spines: int
    cores: int
    node_links: int
    leaf_spine_links: int
    spine_core_links: int
    max_endpoints_two_tier: int | None
    rule: str


class StorageOption(_Model):
    block: str
    filesystem: str
    blocks: int | None
    by: str
    capacity_tb: float | None
    write_gb_s: float | None
    note: str


class StoragePlan(_Model):
    capacity_needed_tb: float
    write_needed_gb_s: float
    chosen: StorageOption | None
    options: tuple[StorageOption, ...]


class PowerPlan(_Model):
    it_kw_max: float | None
    it_kw_typical: float | None
    facility_kw: float | None
    pue: float
    servers_per_rack: int
    rack_kw: float | None
    liquid_cooling: bool | None
    cooling_reason: str
    compute_racks: int
    support_racks: int
    racks: int
    excluded: tuple[str, ...] = Field(default=(), description="Parts with no published power figure.")
    bf16_tflops_per_watt: float | None = Field(
        default=None,
        description="Performance per watt: the build's dense BF16 peak TFLOPS over its IT maximum watts (servers, "
        "fabric, storage, management); None when a peak or a power figure is unknown.",
    )
    server_bf16_tflops_per_watt: float | None = Field(
        default=None, description="The same for one accelerator server alone (its peak over its maximum power)."
    )


class RentRow(_Model):
    option: str
    cloud: str | None = None
    capacity: Literal["own", "on-demand", "spot", "committed-3y", "reserved"]
    usd_per_gpu_hour: float | None
    three_year_usd: float | None
    vs_own: float | None
    note: str = ""


class TcoFigure(_Model):
    """One ownership-cost figure, its unit, the flag that overrides it and where the value comes from."""

    name: str
    flag: str
    value: float
    unit: str
    basis: Literal["flag", "source", "assumption"]
    source: str


class CostPlan(_Model):
    capex_by_category: dict[str, float | None]
    capex_usd: float | None
    capex_priced_usd: float
    unpriced: tuple[str, ...]
    energy_usd_per_year: float | None
    support_usd_per_year: float
    support_percent: float
    three_year_own_usd: float | None  # None when a line is unpriced: owning's cost is then unknown
    three_year_own_priced_usd: float | None  # the priced lines alone: a floor, never compared as the cost
    busy_gpu_hours_3y: float
    network_share: float | None
    rent: tuple[RentRow, ...]
    run_rent_usd: dict[str, float | None]
    months: tuple[int, ...]
    series: dict[str, tuple[float | None, ...]]
    colo_usd_per_year: float | None = None
    staff_usd_per_year: float = 0.0
    depreciation_years: float = 3.0
    capital_charged_priced_usd: float | None = Field(
        default=None, description="The priced capital written off over the 3 years compared (straight-line)."
    )
    residual_value_priced_usd: float = Field(default=0.0, description="Book value of the priced capital after 3 years.")
    tco: tuple[TcoFigure, ...] = Field(default=(), description="Every ownership-cost figure, with its basis.")


class SoftwareItem(_Model):
    layer: str
    item: str
    version: str | None
    note: str = ""


class BuildReport(_Model):
    """The on-premises answer: what to buy, what it draws, what it costs, and the software to run on it."""

    sized: SizedRun
    decision: Decision
    server: ServerConfig
    fabric: FabricDesign
    storage: StoragePlan
    power: PowerPlan
    lines: tuple[LineItem, ...]
    costs: CostPlan
    software: tuple[SoftwareItem, ...]
    software_source: str
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    catalog_version: str

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def _repr_html_(self) -> str:  # notebooks
        from provision.planning.onprem.export import report_html

        return report_html(self)

"""The on-premises catalog: servers, fabric parts, storage building blocks and planning assumptions as data.

``load_onprem()`` reads ``data/onprem-*.yaml`` once per process. Every figure in those files is backed by a
source with a URL and the date it was read: a row lists its sources, and each source names the fields it
backs (``covers``). A row whose non-null figure no source covers fails to load, so an unsourced number can
never reach a bill of materials. A figure nobody could verify is ``null`` and stays ``None`` here.
"""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from provision.catalog import read_data

AcceleratorVendor = Literal["nvidia", "amd", "huawei", "cambricon"]
FabricKind = Literal["infiniband", "roce"]
SoftwareStack = Literal["cuda", "rocm", "cann", "neuware"]
Cooling = Literal["air", "liquid"]
PortForm = Literal["osfp-twin", "osfp", "qsfp112", "qsfp56", "qsfp28", "rj45"]
Filesystem = Literal["lustre", "beegfs", "ceph"]

FABRICS: tuple[str, ...] = ("infiniband", "roce")

#: Fields that describe a row rather than measure it: they need no source.
_DESCRIPTIVE = frozenset({"id", "name", "vendor", "sources", "notes", "kind", "role", "description", "unit"})


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OnpremSource(_Row):
    """Where figures come from: a URL, the day it was read and the fields it backs."""

    url: str = Field(description="http(s) address of the page, document or file read.")
    retrieved: date = Field(description="When the figures were read.")
    covers: tuple[str, ...] = Field(min_length=1, description="Names of the fields this source backs.")
    note: str = Field(default="", description="What exactly the source says, or how a figure was derived from it.")

    @field_validator("url")
    @classmethod
    def _is_url(cls, v: str) -> str:
        if not v.startswith(("https://", "http://")):
            raise ValueError(f"source url must start with https:// or http://, got {v!r}")
        return v


class _Sourced(_Row):
    """A row whose every non-null figure is covered by one of its sources."""

    #: Fields that are neither figures nor descriptive (e.g. nested lists); set per model when needed.
    _unsourced: ClassVar[frozenset[str]] = frozenset()

    sources: tuple[OnpremSource, ...] = Field(min_length=1)
    notes: str = ""

    def figures(self) -> dict[str, Any]:
        """The row's figures (every field but names, notes and sources), including nulls."""
        skip = _DESCRIPTIVE | self._unsourced
        return {k: getattr(self, k) for k in type(self).model_fields if k not in skip}

    @model_validator(mode="after")
    def _every_figure_sourced(self) -> _Sourced:
        covered = {f for s in self.sources for f in s.covers}
        known = set(type(self).model_fields)
        unknown = sorted(covered - known)
        if unknown:
            raise ValueError(f"{self.row_id()}: sources cover fields that do not exist: {unknown}")
        missing = sorted(k for k, v in self.figures().items() if v not in (None, ()) and k not in covered)
        if missing:
            raise ValueError(f"{self.row_id()}: figures without a source: {missing}")
        return self

    def row_id(self) -> str:
        return str(getattr(self, "id", type(self).__name__))

    def source_urls(self, field: str) -> tuple[str, ...]:
        return tuple(s.url for s in self.sources if field in s.covers)


class GpuServer(_Sourced):
    """An accelerator server one can buy: DGX, HGX/OAM OEM systems and the domestic alternatives."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    vendor: str = Field(
        description="Who sells it, lower case: nvidia, dell, hpe, lenovo, inspur, supermicro, huawei ..."
    )
    accelerator: str = Field(description="Accelerator model; the sizing catalog's canonical name where it has one.")
    accelerator_vendor: AcceleratorVendor
    accelerators: int | None = Field(default=None, gt=0, description="Null when the sources read do not say.")
    accelerator_memory_gb: float | None = Field(default=None, gt=0)
    accelerator_bf16_dense_tflops: float | None = Field(default=None, gt=0, description="Per accelerator, no sparsity.")
    scale_up: str | None = Field(default=None, description="The in-server accelerator interconnect.")
    scale_up_gb_s_per_accelerator: float | None = Field(default=None, gt=0, description="GB/s, both directions.")
    cpu: str | None = None
    cpus: int | None = Field(default=None, gt=0)
    cpu_cores_total: int | None = Field(default=None, gt=0)
    memory_gb_min: int | None = Field(default=None, gt=0, description="Smallest system RAM offered or shipped.")
    memory_gb_max: int | None = Field(default=None, gt=0, description="Largest system RAM supported.")
    nvme_tb: float | None = Field(default=None, gt=0, description="Data NVMe as shipped or as submitted to MLPerf.")
    compute_nics: int | None = Field(default=None, gt=0, description="Scale-out NICs (one per rail).")
    compute_nic: str | None = None
    compute_nic_gbps: int | None = Field(default=None, gt=0)
    compute_port_form: PortForm | None = Field(default=None, description="Cage of the server's compute ports.")
    fabrics: tuple[FabricKind, ...] = Field(default=(), description="Scale-out fabrics the NICs run.")
    rack_units: int | None = Field(default=None, gt=0)
    power_typical_kw: float | None = Field(default=None, gt=0)
    power_max_kw: float | None = Field(default=None, gt=0)
    cooling: tuple[Cooling, ...] = Field(default=(), description="Cooling the vendor offers for this model.")
    price_usd: float | None = Field(default=None, gt=0)
    price_kind: Literal["list", "street", "quote"] | None = None
    nvlink_domain_gpus: int | None = Field(
        default=None,
        gt=0,
        description="GPUs one NVLink domain joins when it spans more than this unit (72 in a GB200 NVL72 rack); "
        "null: the unit's own accelerators.",
    )
    rack_scale_units: int | None = Field(
        default=None,
        gt=0,
        description="Units (compute trays) that make one rack-scale system sold and cabled as a whole (18 trays "
        "in a GB200 NVL72); a build buys whole racks of them. Null: an ordinary server.",
    )
    rack_power_kw: float | None = Field(
        default=None, gt=0, description="Published power of one whole rack-scale system (trays, switch trays)."
    )
    software: SoftwareStack
    software_note: str = ""

    _unsourced: ClassVar[frozenset[str]] = frozenset({"software", "software_note", "accelerator_vendor"})

    @model_validator(mode="after")
    def _price_kind_with_price(self) -> GpuServer:
        if (self.price_usd is None) != (self.price_kind is None):
            raise ValueError(f"{self.id}: price_usd and price_kind go together")
        if self.memory_gb_min and self.memory_gb_max and self.memory_gb_min > self.memory_gb_max:
            raise ValueError(f"{self.id}: memory_gb_min > memory_gb_max")
        return self


class SwitchPorts(_Row):
    gbps: int = Field(gt=0)
    ports: int = Field(gt=0)


class Switch(_Sourced):
    """A fabric or management switch. ``port_modes`` lists the logical ports at each speed (its radix)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    vendor: str
    role: Literal["compute", "management", "oob"]
    fabric: Literal["infiniband", "ethernet"]
    port_modes: tuple[SwitchPorts, ...] = Field(min_length=1)
    cages: int | None = Field(default=None, gt=0)
    cage_form: PortForm | None = None
    rack_units: int | None = Field(default=None, gt=0)
    power_max_w: float | None = Field(default=None, gt=0)
    in_network_reduction: str | None = Field(default=None, description="e.g. SHARPv3; null when none or unknown.")
    price_usd: float | None = Field(default=None, gt=0)

    def radix(self, gbps: int) -> int | None:
        """Logical ports at the slowest listed speed that still carries ``gbps`` per port."""
        fits = sorted((m for m in self.port_modes if m.gbps >= gbps), key=lambda m: m.gbps)
        return fits[0].ports if fits else None


class Optic(_Sourced):
    """A transceiver, cable or a whole priced link (both transceivers and the fibre)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    kind: Literal["transceiver", "cable", "link"]
    form: PortForm | None = None
    gbps: int | None = Field(default=None, gt=0)
    links: int | None = Field(default=None, gt=0, description="Logical links one unit carries (2 for twin-port).")
    reach_m: float | None = Field(default=None, gt=0)
    media: Literal["multimode", "singlemode", "copper"] | None = None
    power_w: float | None = Field(default=None, gt=0)
    price_usd: float | None = Field(default=None, gt=0)


class StorageBlock(_Sourced):
    """A building block of a parallel filesystem: capacity and throughput per block as published."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    vendor: str
    filesystem: Filesystem
    description: str = ""

    _unsourced: ClassVar[frozenset[str]] = frozenset({"filesystem"})
    usable_tb: float | None = Field(default=None, gt=0)
    read_gb_s: float | None = Field(default=None, gt=0)
    write_gb_s: float | None = Field(default=None, gt=0)
    throughput_gb_s: float | None = Field(default=None, gt=0, description="Published figure with no direction given.")
    rack_units: int | None = Field(default=None, gt=0)
    power_max_w: float | None = Field(default=None, gt=0)
    price_usd: float | None = Field(default=None, gt=0)


class HeadNode(_Sourced):
    """A CPU server for the scheduler, login and management services."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    vendor: str
    cpu: str | None = None
    memory_gb: int | None = Field(default=None, gt=0)
    rack_units: int | None = Field(default=None, gt=0)
    power_max_w: float | None = Field(default=None, gt=0)
    price_usd: float | None = Field(default=None, gt=0)


class Assumption(_Sourced):
    """A planning figure the BOM relies on (rack power budget, support rate, commitment discounts ...)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    description: str
    value: float
    unit: str

    _unsourced: ClassVar[frozenset[str]] = frozenset({"description", "unit"})


class OnpremFile(_Row):
    """One ``data/onprem-*.yaml`` document."""

    version: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="Date the file was last reviewed.")
    servers: tuple[GpuServer, ...] = ()
    switches: tuple[Switch, ...] = ()
    optics: tuple[Optic, ...] = ()
    storage: tuple[StorageBlock, ...] = ()
    head_nodes: tuple[HeadNode, ...] = ()
    assumptions: tuple[Assumption, ...] = ()


ONPREM_FILES = (
    "onprem-servers.yaml",
    "onprem-servers-alternatives.yaml",
    "onprem-network.yaml",
    "onprem-storage.yaml",
    "onprem-assumptions.yaml",
)


class OnpremCatalog(_Row):
    """Every on-premises row, merged from the data files. Build it with :func:`load_onprem`."""

    version: str
    servers: tuple[GpuServer, ...]
    switches: tuple[Switch, ...]
    optics: tuple[Optic, ...]
    storage: tuple[StorageBlock, ...]
    head_nodes: tuple[HeadNode, ...]
    assumptions: tuple[Assumption, ...]

    def rows(self) -> tuple[_Sourced, ...]:
        return (*self.servers, *self.switches, *self.optics, *self.storage, *self.head_nodes, *self.assumptions)

    def vendors(self) -> list[str]:
        return sorted({s.vendor for s in self.servers})

    def server(self, server_id: str) -> GpuServer | None:
        return next((s for s in self.servers if s.id == server_id), None)

    def switch(self, switch_id: str) -> Switch | None:
        return next((s for s in self.switches if s.id == switch_id), None)

    def optic(self, optic_id: str) -> Optic | None:
        return next((o for o in self.optics if o.id == optic_id), None)

    def assumption(self, assumption_id: str) -> Assumption:
        """The assumption called ``assumption_id``. Raises KeyError: a bug in code or data, not user input."""
        for a in self.assumptions:
            if a.id == assumption_id:
                return a
        raise KeyError(assumption_id)


@cache
def load_onprem() -> OnpremCatalog:
    """Read and check every ``data/onprem-*.yaml`` file. Cached: the result is immutable.

    Raises:
        pydantic.ValidationError: a file breaks the row models, e.g. a figure without a source (a data bug).
        ValueError: two rows share an id.
    """
    files = [OnpremFile.model_validate(read_data(n)) for n in ONPREM_FILES]
    merged: dict[str, tuple[Any, ...]] = {}
    for key in ("servers", "switches", "optics", "storage", "head_nodes", "assumptions"):
        rows = tuple(r for f in files for r in getattr(f, key))
        ids = [r.id for r in rows]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"onprem catalog: duplicate {key} ids {dupes}")
        merged[key] = rows
    return OnpremCatalog(version=max(f.version for f in files), **merged)


__all__ = [
    "FABRICS",
    "Assumption",
    "GpuServer",
    "HeadNode",
    "OnpremCatalog",
    "OnpremSource",
    "Optic",
    "StorageBlock",
    "Switch",
    "load_onprem",
]

"""Procurement lines: what to order and how many, priced from the on-premises catalog where a price exists.

Cabling rules (NVIDIA twin-port OSFP documentation): switch cages take twin-port 2x400G OSFP transceivers, each
serving two 400G links; a ConnectX-7 adapter takes a single-port 400G OSFP (or QSFP112); DGX H100/H200 expose
twin-port OSFP cages themselves. Node-to-leaf links are assumed within 50 m (multimode SR4, one MPO-12/APC fibre per
link); switch-to-switch links are assumed up to 100 m (single-mode DR4 twin-port transceivers at both ends).
Where a whole priced link exists in the catalog (transceivers at both ends plus the fibre), links are priced with it
and the individual optics are listed with no price of their own, so nothing is counted twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from provision.catalog.onprem import OnpremCatalog
from provision.planning.onprem.models import Category, FabricDesign, LineItem, ServerConfig, StoragePlan

#: Head, login and scheduler nodes: three, so a Kubernetes control plane keeps etcd quorum with one node down, or
#: Slurm runs its controller, a backup controller and a login node (planning assumption).
HEAD_NODES = 3
#: Ports per device on the converged north-south network: two, to two switches (NVIDIA Enterprise RA for HGX H100/H200/
#: B200: "connects the nodes using two 200 GbE ports to two separate switches").
CONVERGED_PORTS_PER_DEVICE = 2
CONVERGED_GBPS = 200
CONVERGED_SWITCHES_MIN = 2


@dataclass(frozen=True)
class Counted:
    """Switch counts the facility module also needs (power and rack units)."""

    compute_switches: int
    converged_switches: int
    oob_switches: int
    storage_blocks: int
    head_nodes: int


def _line(
    category: Category,
    item: str,
    quantity: int,
    unit: float | None,
    *,
    part: str | None = None,
    note: str = "",
    sources: tuple[str, ...] = (),
    priced_in: str | None = None,
) -> LineItem:
    return LineItem(
        category=category,
        item=item,
        part=part,
        quantity=quantity,
        unit_usd=unit,
        total_usd=None if unit is None else unit * quantity,
        priced_in=priced_in,
        note=note,
        sources=sources,
    )


def server_lines(
    cat: OnpremCatalog, cfg: ServerConfig, servers: int, fallback_price: float | None, notes: list[str]
) -> list[LineItem]:
    row = cat.server(cfg.id)
    price = row.price_usd if row else None
    sources = row.source_urls("price_usd") if row and price else ()
    note = f"{row.price_kind} price" if row and row.price_kind else ""
    if price is None and fallback_price is not None:
        price = fallback_price
        note = f"no price for this model; the sizing catalog's {cfg.accelerator} 8-GPU server street price"
        notes.append(
            f"{cfg.name}: unpriced; used the {cfg.accelerator} reference server price ${fallback_price:,.0f} "
            "from gpus.yaml"
        )
    config = (
        f"{cfg.accelerators}x {cfg.accelerator}; CPU {cfg.cpu or 'per vendor'}; RAM {cfg.memory_note}; "
        f"NVMe {f'{cfg.nvme_tb:g} TB' if cfg.nvme_tb else 'per vendor'}; {cfg.compute_nics}x {cfg.compute_nic}"
    )
    return [
        _line("servers", cfg.name, servers, price, part=cfg.id, note=f"{note}; {config}".strip("; "), sources=sources)
    ]


def fabric_lines(cat: OnpremCatalog, fab: FabricDesign, cfg: ServerConfig, servers: int) -> list[LineItem]:
    if fab.tiers == 0 or not fab.switch:
        return []
    sw = cat.switch(fab.switch)
    assert sw is not None  # noqa: S101  # chosen from the catalog by the planner
    switches = fab.leaves + fab.spines + fab.cores
    roles = ", ".join(f"{n} {r}" for n, r in ((fab.leaves, "leaf"), (fab.spines, "spine"), (fab.cores, "core")) if n)
    lines = [
        _line(
            "compute fabric",
            sw.name,
            switches,
            sw.price_usd,
            part=sw.id,
            note=f"{roles}; {fab.rule}",
            sources=sw.source_urls("price_usd"),
        )
    ]
    link = cat.optic("link-400g-priced")
    # The priced link is a 400G one: slower NICs' links (HDR, NDR200 splits) stay unpriced.
    per_link = link.price_usd if link and link.gbps == cfg.nic_gbps else None
    all_links = fab.node_links + fab.leaf_spine_links + fab.spine_core_links
    link_note = "transceivers at both ends plus fibre, priced per link"
    if fab.kind == "roce" and per_link is not None:
        link_note += "; the twin-port optics carry both InfiniBand and Ethernet (NVIDIA docs), so the IB price is used"
    lines.append(
        _line(
            "fabric links",
            f"{cfg.nic_gbps}G links (node-leaf {fab.node_links}, switch-switch "
            f"{fab.leaf_spine_links + fab.spine_core_links})",
            all_links,
            per_link,
            part=link.id if per_link and link else None,
            note=link_note,
            sources=link.source_urls("price_usd") if per_link and link else (),
        )
    )
    twin_node_side = cfg.compute_nics // 2 if cfg.compute_nics and _twin(cat, cfg) else 0
    own_nics = _vendor_nics(cat, cfg)
    single_node_side = 0 if twin_node_side or own_nics else fab.node_links
    priced_in = "fabric links (per-link price)" if per_link else None
    counted = "included in the per-link price" if per_link else "unpriced"
    if own_nics and fab.node_links:
        lines.append(
            _line(
                "fabric links",
                f"node-side optics for the server's {cfg.compute_nic} ports",
                fab.node_links,
                None,
                note=f"the server vendor's own NICs ({own_nics}), whose optics are not in the catalog; {counted}",
                priced_in=priced_in,
            )
        )
    optics = [
        ("mma4z00-ns", twin_node_side * servers + math.ceil(fab.node_links / 2), "node-leaf, twin-port multimode"),
        ("mma4z00-ns400", single_node_side, "node side, single-port multimode in each ConnectX-7"),
        ("mms4x00-ns", 2 * math.ceil((fab.leaf_spine_links + fab.spine_core_links) / 2), "switch-switch, twin-port"),
        ("mfp7e10", fab.node_links, "node-leaf multimode fibre"),
    ]
    for part, qty, what in optics:
        o = cat.optic(part)
        if qty and o:
            lines.append(
                _line("fabric links", o.name, qty, None, part=o.id, note=f"{what}; {counted}", priced_in=priced_in)
            )
    if fab.leaf_spine_links + fab.spine_core_links:
        lines.append(
            _line(
                "fabric links",
                "single-mode MPO-12/APC fibre (switch-switch)",
                fab.leaf_spine_links + fab.spine_core_links,
                None,
                note=f"not in the catalog as a part; {counted}",
                priced_in=priced_in,
            )
        )
    return lines


#: Server vendors whose scale-out NICs are their own, not NVIDIA ConnectX (Atlas 800T A2: Huawei 200GE RoCE).
_OWN_NIC_VENDORS = frozenset({"huawei"})


def _vendor_nics(cat: OnpremCatalog, cfg: ServerConfig) -> str | None:
    """The server vendor whose own NICs it carries, when they are not NVIDIA's (their optics are not catalogued)."""
    row = cat.server(cfg.id)
    return row.vendor if row and row.vendor in _OWN_NIC_VENDORS else None


def _twin(cat: OnpremCatalog, cfg: ServerConfig) -> bool:
    row = cat.server(cfg.id)
    return bool(row and row.compute_port_form == "osfp-twin")


def storage_lines(cat: OnpremCatalog, plan: StoragePlan) -> list[LineItem]:
    if plan.chosen is not None and plan.chosen.block == "local-nvme":
        return []
    if plan.chosen is None or not plan.chosen.blocks:
        return [_line("storage", "shared filesystem (no catalog block has both capacity and write figures)", 1, None)]
    block = next(b for b in cat.storage if b.id == plan.chosen.block)
    return [
        _line(
            "storage",
            block.name,
            plan.chosen.blocks,
            block.price_usd,
            part=block.id,
            note=plan.chosen.note,
            sources=block.source_urls("price_usd"),
        )
    ]


def management_lines(
    cat: OnpremCatalog, servers: int, compute_switches: int, storage_blocks: int, multi_node: bool
) -> tuple[list[LineItem], Counted]:
    head = cat.head_nodes[0] if cat.head_nodes else None
    heads = HEAD_NODES if multi_node else 0
    converged = cat.switch("nvidia-sn5600")
    oob = cat.switch("nvidia-sn2201")
    lines: list[LineItem] = []
    conv_n = oob_n = 0
    if converged and multi_node:
        ports = CONVERGED_PORTS_PER_DEVICE * (servers + heads + storage_blocks)
        radix = converged.radix(CONVERGED_GBPS) or 1
        conv_n = max(CONVERGED_SWITCHES_MIN, math.ceil(ports / radix))
        lines.append(
            _line(
                "management network",
                f"{converged.name} (converged north-south / in-band)",
                conv_n,
                converged.price_usd,
                part=converged.id,
                note=f"{ports} ports: {CONVERGED_PORTS_PER_DEVICE} x {CONVERGED_GBPS} GbE per server, "
                f"head node and storage block, to two switches",
            )
        )
    if oob:
        devices = servers + heads + storage_blocks + compute_switches + conv_n
        radix = oob.radix(1) or 48
        oob_n = math.ceil(devices / radix)
        lines.append(
            _line(
                "management network",
                oob.name,
                oob_n,
                oob.price_usd,
                part=oob.id,
                note=f"{devices} BMC / management ports at 1 GbE",
            )
        )
    if heads and head:
        lines.append(
            _line(
                "head nodes",
                head.name,
                heads,
                head.price_usd,
                part=head.id,
                note="scheduler controller + backup + login, or a 3-node Kubernetes control plane",
            )
        )
    return lines, Counted(compute_switches, conv_n, oob_n, storage_blocks, heads)


def rack_lines(racks: int, liquid: bool | None) -> list[LineItem]:
    cooling = "with liquid cooling (CDU / rear-door)" if liquid else "air-cooled, hot/cold-aisle containment"
    return [
        _line(
            "racks and facility",
            f"42U racks with metered PDUs, {cooling}",
            racks,
            None,
            note="not in the catalog; quote locally",
        )
    ]

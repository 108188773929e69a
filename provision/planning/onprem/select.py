"""Which server to buy, how many, and whether one server is enough.

The reference guide this project follows says a single multi-GPU server suits models under about 10B parameters;
the planner applies that rule when the model also fits one server's memory, and says why either way.
"""

from __future__ import annotations

import math

from provision.catalog.onprem import GpuServer, OnpremCatalog
from provision.planning.onprem.models import Decision, ServerConfig, SizedRun
from provision.spec.errors import Problem

#: The reference's threshold for a single multi-GPU server.
SINGLE_SERVER_PARAMS = 10e9
#: Host RAM the BOM configures, clamped to what the issue asks for (512 GB - 2 TB DDR5 ECC).
HOST_RAM_RANGE_GB = (512, 2048)
#: When a server's NICs are unknown: one 400 Gb/s NIC per GPU, as on every HGX 8-GPU reference build read
#: (MLPerf system descriptions of DGX H100, XE9680, SYS-821GE-TNHR: 8x ConnectX-7 NDR 400 Gb/s).
DEFAULT_NIC_GBPS = 400


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def candidates(cat: OnpremCatalog, gpu: str, vendor: str | None, fabric: str | None = None) -> list[GpuServer]:
    """Servers carrying ``gpu`` (sold by ``vendor``, able to run ``fabric``), best first.

    Order: 8 GPUs per server, the fabric listed (not merely unknown), a published price, the cheaper, the id.
    """
    rows = [
        s
        for s in cat.servers
        if _same(s.accelerator, gpu)
        and s.accelerators
        and (vendor is None or _same(s.vendor, vendor))
        and (fabric is None or not s.fabrics or fabric in s.fabrics)
    ]
    return sorted(
        rows,
        key=lambda s: (
            s.accelerators != 8,
            fabric is not None and fabric not in s.fabrics,
            s.price_usd is None,
            s.price_usd or 0.0,
            s.id,
        ),
    )


def check_choice(cat: OnpremCatalog, gpu: str, vendor: str | None, fabric: str | None = None) -> list[Problem]:
    """Problems with ``--vendor`` and ``--fabric`` for ``gpu``: an unknown vendor, one that sells no server with
    that GPU, or no such server whose NICs run the fabric."""
    vendors = cat.vendors()
    if vendor is not None and not any(_same(vendor, v) for v in vendors):
        return [
            Problem(
                "--vendor", vendor, "is not a vendor in the on-premises catalog", f"use one of: {', '.join(vendors)}"
            )
        ]
    if candidates(cat, gpu, vendor, fabric):
        return []
    if fabric is not None and candidates(cat, gpu, vendor):
        runs = sorted({f for s in candidates(cat, gpu, vendor) for f in s.fabrics})
        who = f"{vendor}'s " if vendor else ""
        return [
            Problem(
                "--fabric",
                fabric,
                f"is not offered on any of {who}{gpu} servers in the catalog (they run {', '.join(runs)})",
                f"use --fabric {runs[0]} or another --vendor",
            )
        ]
    sellers = sorted({s.vendor for s in candidates(cat, gpu, None)})
    if vendor is not None and sellers:
        theirs = sorted({s.accelerator for s in cat.servers if _same(s.vendor, vendor)})
        return [
            Problem(
                "--vendor",
                vendor,
                f"sells no {gpu} server in the on-premises catalog (it sells {', '.join(theirs)})",
                f"use one of: {', '.join(sellers)}, or size for another GPU with --gpu",
            )
        ]
    buildable = sorted({s.accelerator for s in cat.servers if s.accelerators})
    return [
        Problem(
            "--gpu",
            gpu,
            "has no on-premises server in the catalog, so no bill of materials can be built",
            f"use one of: {', '.join(buildable)}",
        )
    ]


def decide(run: SizedRun, server: GpuServer) -> Decision:
    """One server or a cluster of ``server``, with the reason in terms of memory and time."""
    per = server.accelerators or run.gpus_per_node
    one_days = run.gpu_hours / per / 24
    cluster_servers = max(1, math.ceil(run.gpus / per))
    cluster_days = run.gpu_hours / (cluster_servers * per) / 24
    small = run.params < SINGLE_SERVER_PARAMS
    single = not run.gpus_given and small and run.fits_one_node and one_days <= run.deadline_days * (1 + 1e-9)
    single = single and not server.rack_scale_units  # a rack-scale system's trays are not sold one by one
    if single:
        reason = (
            f"single server: {run.params / 1e9:g}B parameters is under the ~10B the reference gives for one multi-GPU "
            f"server, the model states fit one server's {per} GPUs, and one {server.name} trains it in "
            f"{one_days:,.1f} days"
        )
        if cluster_servers > 1:
            reason += (
                f" ({cluster_servers} servers would take {cluster_days:,.1f} days; give --gpus "
                f"{cluster_servers * per} or --deadline-days for the cluster)"
            )
        return Decision(
            topology="single-server",
            servers=1,
            gpus=per,
            reason=reason,
            one_server_days=one_days,
            cluster_days=one_days,
        )
    why = []
    if run.gpus_given:
        why.append(f"--gpus asks for {run.gpus} GPUs")
    if not small:
        why.append(f"{run.params / 1e9:g}B parameters is above the ~10B one multi-GPU server suits")
    if not run.fits_one_node:
        why.append(f"the model states do not fit one server's {per} GPUs")
    if not run.gpus_given and one_days > run.deadline_days:
        # The deadline applies as it does to plain `size`: given, or the sizing planner's default.
        kind = "deadline" if run.deadline_given else "default deadline (--deadline-days to change it)"
        why.append(f"one server would take {one_days:,.1f} days, more than the {run.deadline_days:g}-day {kind}")
    if small and not why:
        why.append("the sizing planner chose a cluster")
    whole = server.rack_scale_units
    if whole and cluster_servers % whole:
        racks = math.ceil(cluster_servers / whole)
        why.append(
            f"{server.name} is sold and cabled as whole racks of {whole} ({whole * per} GPUs in one NVLink domain), "
            f"so {cluster_servers} are rounded up to {racks} rack(s)"
        )
        cluster_servers = racks * whole
        cluster_days = run.gpu_hours / (cluster_servers * per) / 24
    return Decision(
        topology="cluster" if cluster_servers > 1 else "single-server",
        servers=cluster_servers,
        gpus=cluster_servers * per,
        reason=f"{'cluster' if cluster_servers > 1 else 'single server'}: {'; '.join(why)}; {cluster_servers} x "
        f"{server.name} train it in {cluster_days:,.1f} days (one server: {one_days:,.1f} days)",
        one_server_days=one_days,
        cluster_days=cluster_days,
    )


def configure(server: GpuServer, notes: list[str]) -> ServerConfig:
    """The per-server configuration to order; unknown NICs default to one 400 Gb/s NIC per GPU (noted)."""
    lo, hi = HOST_RAM_RANGE_GB
    if server.memory_gb_min:
        ram = min(max(server.memory_gb_min, lo), server.memory_gb_max or hi, hi)
        ram_note = f"{ram} GB DDR5 ECC (as shipped or as submitted to MLPerf; supported {server.memory_gb_min}-"
        ram_note += f"{server.memory_gb_max or '?'} GB)"
    else:
        ram = None
        ram_note = f"not published; configure {lo}-{hi} GB DDR5 ECC"
    nics = server.compute_nics or server.accelerators or 8
    gbps = server.compute_nic_gbps or DEFAULT_NIC_GBPS
    if not server.compute_nics or not server.compute_nic_gbps:
        notes.append(
            f"{server.name}: scale-out NICs not published; assumed {nics} x {gbps} Gb/s (one per GPU, as in HGX builds)"
        )
    return ServerConfig(
        id=server.id,
        name=server.name,
        vendor=server.vendor,
        accelerator=server.accelerator,
        accelerators=server.accelerators or nics,
        cpu=f"{server.cpus or '?'} x {server.cpu}" if server.cpu else None,
        memory_gb=ram,
        memory_note=ram_note,
        nvme_tb=server.nvme_tb,
        compute_nics=nics,
        compute_nic=server.compute_nic or f"{gbps} Gb/s NIC (assumed)",
        nic_gbps=gbps,
        rack_units=server.rack_units,
        power_max_kw=server.power_max_kw,
        power_typical_kw=server.power_typical_kw,
        cooling=server.cooling,
        software=server.software,
        nvlink_domain_gpus=server.nvlink_domain_gpus,
        rack_scale_units=server.rack_scale_units,
        rack_power_kw=server.rack_power_kw,
    )

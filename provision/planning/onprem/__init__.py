"""The self-build path: from a sized training run to a bill of materials for an on-premises cluster.

``plan_build(report, vendor=..., fabric=...)`` is pure (catalog data in, report out): it picks the server, decides
between one server and a cluster, designs a rail-optimized non-blocking fabric, sizes storage, management
network and head nodes, works out power, cooling and racks, prices what the catalog prices, compares three years
of owning with renting the same GPU-hours, and lists the software stack. Every assumption is in the report.

Modules: ``select`` (server and topology), ``fabric`` (switch counts), ``bom`` (procurement lines), ``storage``,
``facility`` (power and racks), ``costs`` (capital, running costs, own versus rent), ``software`` (checklist from
``images/onprem.yaml``), ``export`` (CSV and the cost figure).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from provision.catalog.onprem import FABRICS, OnpremCatalog, load_onprem
from provision.planning.onprem.bom import fabric_lines, management_lines, rack_lines, server_lines, storage_lines
from provision.planning.onprem.costs import plan_costs
from provision.planning.onprem.fabric import FabricTooLarge, design_fabric, max_nodes
from provision.planning.onprem.facility import Powered, plan_power, server_power
from provision.planning.onprem.models import BuildReport, SizedRun
from provision.planning.onprem.select import candidates, check_choice, configure, decide
from provision.planning.onprem.software import software_stack
from provision.planning.onprem.storage import CAPACITY_HEADROOM, plan_storage
from provision.planning.onprem.tco import TcoOverrides, describe, parse_overrides, tco_figures
from provision.spec.errors import Problem, SpecError

T = TypeVar("T")

#: The compute switch per fabric and NIC generation: HDR (ConnectX-6) NICs go on the HDR QM8700; every other
#: InfiniBand NIC on the NDR QM9700, whose ports split to 128 x 200G for 200G NICs; RoCE on the Spectrum-4 SN5600.
_SWITCH = {"infiniband": "nvidia-qm9700", "infiniband-hdr": "nvidia-qm8700", "roce": "nvidia-sn5600"}


def _switch_key(kind: str, nic: str) -> str:
    hdr = kind == "infiniband" and ("HDR" in nic or "ConnectX-6" in nic)
    return "infiniband-hdr" if hdr else kind


def _per_watt(server: Any, servers: int, server_max_kw: float | None, it_kw_max: float | None) -> dict[str, Any]:
    """Dense BF16 peak TFLOPS per watt of maximum power, for the build and for one server (energy efficiency)."""
    peak = (server.accelerator_bf16_dense_tflops or 0.0) * (server.accelerators or 0)
    if not peak:
        return {}
    return {
        "bf16_tflops_per_watt": peak * servers / (it_kw_max * 1000) if it_kw_max else None,
        "server_bf16_tflops_per_watt": peak / (server_max_kw * 1000) if server_max_kw else None,
    }


def sized_run(report: Any) -> SizedRun:
    """The build planner's view of a sizing report (``provision.planning.sizing.SizingReport``).

    This is the only place that reads the sizing report, so a change there touches one function here.
    """
    i, k, m, s = report.inputs, report.cluster, report.memory, report.storage
    return SizedRun(
        params=i.params,
        tokens=i.tokens,
        gpu=i.gpu,
        gpus=k.gpus,
        nodes=k.nodes,
        gpus_per_node=k.gpus_per_node,
        gpus_given=i.gpus is not None,
        deadline_days=k.deadline_days,
        deadline_given=i.deadline_days is not None,
        gpu_hours=report.compute.gpu_hours,
        fits_one_node=m.min_nodes is not None and m.min_nodes <= 1,
        shared_capacity_bytes=s.shared_capacity_bytes,
        checkpoint_bytes=s.checkpoint_bytes,
        checkpoint_minutes=s.checkpoint_minutes,
        required_write_gb_s=s.required_write_gbps,
        electricity_usd_per_kwh=i.electricity_usd_per_kwh,
        pue=i.pue,
        utilisation=i.utilisation,
        clouds=tuple(c.model_dump(mode="json") for c in report.clouds),
        mfu_basis=report.compute.mfu_basis,
        gpu_hours_range=report.compute.gpu_hours_range,
    )


def option_problems(
    vendor: str | None, fabric: str | None, gpu: str | None = None, cat: OnpremCatalog | None = None
) -> list[Problem]:
    """Every problem with ``--vendor`` and ``--fabric`` (and the GPU, when known), without sizing anything."""
    cat = cat or load_onprem()
    found: list[Problem] = []
    if fabric is not None and fabric not in FABRICS:
        found.append(Problem("--fabric", fabric, "is not a fabric the build planner designs", "use infiniband or roce"))
    if gpu is not None and not found:
        found.extend(check_choice(cat, gpu, vendor, fabric))
    elif vendor is not None and vendor.lower() not in cat.vendors():
        found.append(
            Problem(
                "--vendor",
                vendor,
                "is not a vendor in the on-premises catalog",
                f"use one of: {', '.join(cat.vendors())}",
            )
        )
    return found


def with_option_checks(
    size: Callable[[], T], vendor: str | None, fabric: str | None, tco: dict[str, Any] | None = None
) -> T:
    """Run ``size()`` and report its input problems together with those of ``--vendor``, ``--fabric`` and the
    ownership-cost flags (``tco``: flag to text, e.g. ``{"--staff-fte": "2"}``).

    Raises:
        SpecError: every problem found, sizing and build options alike.
    """
    found = option_problems(vendor, fabric)
    found.extend(parse_overrides(tco or {})[1])
    try:
        result = size()
    except SpecError as e:
        raise SpecError(e.message, problems=[*e.problems, *found]) from None
    if found:
        raise SpecError("the build options are invalid", problems=found)
    return result


def plan_build(
    report: Any,
    *,
    vendor: str | None = None,
    fabric: str | None = None,
    cat: OnpremCatalog | None = None,
    tco: TcoOverrides | dict[str, Any] | None = None,
) -> BuildReport:
    """The bill of materials for the run ``report`` sized (a ``SizingReport`` or a :class:`SizedRun`).

    ``tco`` overrides ownership-cost figures (a :class:`TcoOverrides`, or the flags' text by flag name).

    Raises:
        SpecError: --vendor, --fabric or the GPU cannot be built on premises, or the cluster exceeds a three-tier
            fabric; every problem at once, each naming the option.
    """
    cat = cat or load_onprem()
    run = report if isinstance(report, SizedRun) else sized_run(report)
    problems = option_problems(vendor, fabric, run.gpu, cat)
    if isinstance(tco, dict):
        tco, bad = parse_overrides(tco)
        problems.extend(bad)
    if problems:
        raise SpecError("cannot build this cluster on premises", problems=problems)
    notes: list[str] = []
    warnings: list[str] = []
    server = candidates(cat, run.gpu, vendor, fabric)[0]
    decision = decide(run, server)
    cfg = configure(server, notes)
    kind = fabric or (server.fabrics[0] if server.fabrics else "infiniband")
    if not server.fabrics:
        notes.append(f"{server.name}: fabrics not published; designed for {kind}")
    switch = cat.switch(_SWITCH[_switch_key(kind, cfg.compute_nic)])
    assert switch is not None  # noqa: S101  # the ids above are catalog rows (tests check it)
    radix = switch.radix(cfg.nic_gbps) or switch.port_modes[0].ports
    try:
        fab = design_fabric(decision.servers, cfg.compute_nics, radix, kind=kind, switch=switch.id)
    except FabricTooLarge as e:
        raise SpecError(
            "cannot build this cluster on premises",
            problems=[
                Problem(
                    "--gpus",
                    decision.gpus,
                    str(e),
                    f"use at most {max_nodes(cfg.compute_nics, radix) * cfg.accelerators} GPUs per fabric, "
                    "or split the run",
                )
            ],
        ) from None

    from provision.catalog import load_catalog

    gpu_model = load_catalog().gpu(run.gpu)
    typical_fraction = cat.assumption("typical_draw_fraction").value
    max_kw, typical_kw = server_power(cfg, gpu_model.server_power_kw if gpu_model else None, typical_fraction, notes)
    multi = decision.servers > 1
    storage = plan_storage(cat, run.shared_capacity_bytes, run.required_write_gb_s, None if multi else cfg.nvme_tb)
    lines = server_lines(cat, cfg, decision.servers, gpu_model.server_price_usd if gpu_model else None, notes)
    lines += fabric_lines(cat, fab, cfg, decision.servers)
    lines += storage_lines(cat, storage)
    blocks = storage.chosen.blocks if storage.chosen and storage.chosen.blocks else 0
    switches = fab.leaves + fab.spines + fab.cores
    mgmt, counted = management_lines(cat, decision.servers, switches, blocks, multi)
    lines += mgmt
    others = _powered(cat, fab, counted, storage)
    power = plan_power(
        cat,
        decision.servers,
        max_kw,
        typical_kw,
        cfg.cooling,
        others,
        run.pue,
        cfg.rack_units,
        rack_scale_units=cfg.rack_scale_units,
        rack_power_kw=cfg.rack_power_kw,
    )
    power = power.model_copy(update=_per_watt(server, decision.servers, max_kw, power.it_kw_max))
    lines += rack_lines(power.racks, power.liquid_cooling)
    infra_kw = sum(p.count * (p.max_w or 0.0) for p in others) / 1000
    figures = tco_figures(
        cat, electricity_usd_per_kwh=run.electricity_usd_per_kwh, pue=run.pue, gpus=decision.gpus, overrides=tco
    )
    costs = plan_costs(
        cat,
        tuple(lines),
        gpus=decision.gpus,
        sized_gpu=run.gpu,
        run_gpu_hours=run.gpu_hours,
        server_typical_kw_total=None if typical_kw is None else typical_kw * decision.servers,
        infra_kw=infra_kw,
        utilisation=run.utilisation,
        clouds=run.clouds,
        tco=figures,
        it_kw_max=power.it_kw_max,
    )
    software, software_source = software_stack(server.accelerator_vendor, kind, multi)
    if power.excluded:
        warnings.append(
            "no published power or height for: " + ", ".join(power.excluded) + "; power and rack figures leave them out"
        )
    if costs.unpriced:
        warnings.append(
            f"{len(costs.unpriced)} line(s) unpriced in the catalog; the capital total counts priced lines "
            "only: ask vendors for quotes"
        )
    if run.mfu_basis.startswith("ASSUMED"):
        low, high = run.gpu_hours_range or (run.gpu_hours, run.gpu_hours)
        warnings.append(
            f"{run.gpu} efficiency: {run.mfu_basis}; {run.gpu_hours:,.0f} "
            f"device-hours expected, {low:,.0f}-{high:,.0f} in the printed range, so the server count may be off by "
            "as much: pass --mfu with a measured value"
        )
    if server.software != "cuda":
        warnings.append(f"{server.name} runs {server.software.upper()}, not CUDA/NCCL: {server.software_note}")
        if server.notes:
            warnings.append(f"{server.name}: {server.notes}")
    return BuildReport(
        sized=run,
        decision=decision,
        server=cfg,
        fabric=fab,
        storage=storage,
        power=power,
        lines=tuple(lines),
        costs=costs,
        software=software,
        software_source=software_source,
        assumptions=_assumptions(cat, run, fab, [*describe(figures), *notes]),
        warnings=tuple(warnings),
        catalog_version=cat.version,
    )


def _powered(cat: OnpremCatalog, fab: Any, counted: Any, storage: Any) -> list[Powered]:
    out: list[Powered] = []
    sw = cat.switch(fab.switch) if fab.switch else None
    if sw:
        out.append(Powered(sw.name, fab.leaves + fab.spines + fab.cores, sw.rack_units, sw.power_max_w))
    for sid, n in (("nvidia-sn5600", counted.converged_switches), ("nvidia-sn2201", counted.oob_switches)):
        s = cat.switch(sid)
        if s and n:
            out.append(Powered(f"{s.name} (management)", n, s.rack_units, s.power_max_w))
    if storage.chosen and storage.chosen.blocks:
        b = next(x for x in cat.storage if x.id == storage.chosen.block)
        out.append(Powered(b.name, storage.chosen.blocks, b.rack_units, b.power_max_w))
    if counted.head_nodes and cat.head_nodes:
        h = cat.head_nodes[0]
        out.append(Powered(h.name, counted.head_nodes, h.rack_units, h.power_max_w))
    for oid, n in (
        ("mma4z00-ns400", fab.node_links),
        ("mms4x00-ns", 2 * math.ceil((fab.leaf_spine_links + fab.spine_core_links) / 2)),
    ):
        o = cat.optic(oid)
        if o and n and o.power_w:
            out.append(Powered(o.name, n, 0, o.power_w))
    return out


def _assumptions(cat: OnpremCatalog, run: SizedRun, fab: Any, notes: list[str]) -> tuple[str, ...]:
    used = (
        "rack_power_budget_kw",
        "servers_per_rack_max",
        "air_cooling_limit_kw",
        "typical_draw_fraction",
        "commit_discount_3y_aws",
        "commit_discount_3y_gcp",
        "commit_discount_3y_azure",
    )
    sourced = []
    for aid in used:
        a = cat.assumption(aid)
        sourced.append(f"{a.description}: {a.value:g} {a.unit} ({a.sources[0].url}, read {a.sources[0].retrieved})")
    return (
        "server count, GPU count and training time come from the sizing planner (its own assumptions apply); "
        "models under ~10B parameters that fit one server get one server unless --gpus asks for more or one server "
        "misses the deadline (--deadline-days, or the sizing planner's default as for plain `size`)",
        f"fabric: {fab.rule}" if fab.tiers else "fabric: none (one server)",
        "non-blocking: every leaf has as many uplinks as node ports; every leaf uplink is cabled (the DGX SuperPOD "
        "practice of building the full scalable unit); one NIC per GPU rail",
        f"storage capacity = sizing's dataset + retained checkpoints x (1 + {CAPACITY_HEADROOM:g} headroom); write "
        f"throughput = checkpoint {run.checkpoint_bytes / 1e9:,.0f} GB / {run.checkpoint_minutes:g} min",
        "management: a converged north-south Ethernet network (2 x 200 GbE per device to two switches) and a 1 GbE "
        "out-of-band network; 3 head nodes for clusters",
        f"energy: servers at typical draw for {run.utilisation:.0%} of hours, the rest always on at maximum, x PUE "
        f"at the power price (TCO figures below); owning = capital written off over the 3 years compared + 3 x "
        "(energy + support + colocation on the IT maximum power + staff)",
        "renting the same GPU-hours: owned GPUs x 26,280 h x utilisation at each cloud's on-demand and spot GPU-hour "
        "price (cheapest region in the catalog); a 3-year commitment is billed for all 26,280 h",
        "parts without a published price are listed unpriced and left out of totals, never estimated",
        *sourced,
        *notes,
    )


__all__ = ["BuildReport", "SizedRun", "option_problems", "plan_build", "sized_run", "with_option_checks"]

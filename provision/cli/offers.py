"""``provision offers``: the catalog's GPU instance types, or whole clusters across clouds cheapest first.

Without ``--gpus`` it lists instance types (one row each, the contract in docs/contracts.md). With ``--gpus N`` it
lists every way to buy an N-GPU cluster (cloud x type x region x capacity type) with the hourly total of
compute + storage + network (:mod:`provision.planning.cluster_offers`). Filters are case-insensitive.
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

CAPACITIES = ("on-demand", "spot", "reservation", "capacity-block", "flex-start")
SORTS = ("price", "gpu-price", "cloud")


def _check(
    cloud: str | None, gpu: str | None, capacity: str, sort: str, gpus: str | None, region: str | None = None
) -> tuple[Any, ...]:
    """Parse and check every filter at once; returns (cloud, gpu, capacities, sort, gpus)."""
    from provision.catalog import load_catalog, suggest
    from provision.catalog.models import CLOUDS as CLOUD_NAMES
    from provision.spec.errors import Problem, SpecError
    from provision.spec.models import MAX_GPUS
    from provision.spec.units import ascii_digits

    cat = load_catalog()
    problems = []
    c = cloud.strip().lower() if cloud else None
    if c is not None and c not in CLOUD_NAMES:
        problems.append(Problem("--cloud", cloud, "is not a cloud", f"use one of: {', '.join(CLOUD_NAMES)}"))
    model = cat.gpu(gpu) if gpu else None
    if gpu and model is None:
        hints = suggest(gpu, [n for g in cat.gpus for n in (g.name, *g.aliases)]) or cat.gpu_names()
        problems.append(Problem("--gpu", gpu, "is not a known GPU", f"use one of: {', '.join(hints)}"))
    caps = tuple(dict.fromkeys(p.strip().lower() for p in capacity.split(",") if p.strip()))
    if caps == ("any",):
        caps = CAPACITIES
    bad = [p for p in caps if p not in CAPACITIES]
    if bad or not caps:
        problems.append(
            Problem(
                "--capacity", capacity, "is not a capacity type", f"use one or more of: {', '.join(CAPACITIES)}, or any"
            )
        )
    if region is not None:
        known = sorted({r for o in cat.instances if c in (None, o.cloud) for r in o.regions})
        if region.strip().lower() not in {r.lower() for r in known}:
            hints = suggest(region.strip(), known) or known[:8]
            where = f"a {c} region" if c in CLOUD_NAMES else "a region"
            problems.append(
                Problem(
                    "--region", region, f"is not {where} with GPU offers in the catalog", f"use e.g. {', '.join(hints)}"
                )
            )
    s = sort.strip().lower()
    if s not in SORTS:
        problems.append(Problem("--sort", sort, "is not a sort order", f"use one of: {', '.join(SORTS)}"))
    count = None
    if gpus is not None:
        text = gpus.strip()
        # ASCII digits only (int() also reads "６４"), and no more digits than the largest cluster has.
        count = int(text) if ascii_digits(text) and len(text) <= len(str(MAX_GPUS)) else 0
        if count < 1:
            problems.append(Problem("--gpus", gpus, "is not a whole number of GPUs >= 1", "use e.g. --gpus 64"))
        elif count > MAX_GPUS:
            problems.append(
                Problem("--gpus", gpus, f"is more GPUs than a cluster may have ({MAX_GPUS})", "use e.g. --gpus 64")
            )
    if problems:
        raise SpecError("bad filter", problems)
    return c, (model.name if model else None), caps, s, count


def offers(
    cloud: str | None = typer.Option(None, help="aws, gcp, azure or alibaba (any case)."),
    gpu: str | None = typer.Option(None, help="Accelerator model or alias, e.g. H100 or h100-sxm."),
    region: str | None = typer.Option(None, help="Only this region; prices shown are that region's."),
    gpus: str | None = typer.Option(None, "--gpus", metavar="N", help="List whole N-GPU clusters with hourly totals."),
    capacity: str = typer.Option(
        "on-demand", help="With --gpus: on-demand, spot, reservation, capacity-block, flex-start (comma list) or any."
    ),
    sort: str = typer.Option("price", help="With --gpus: price (cluster total), gpu-price (per node) or cloud."),
    storage_gib: int = typer.Option(
        0, "--storage-gib", min=0, help="With --gpus: add the cheapest shared filesystem holding this many GiB."
    ),
    limit: int = typer.Option(0, min=0, help="With --gpus: show at most this many rows (0: all)."),
    per_cloud: bool = typer.Option(False, "--per-cloud", help="With --gpus: only each cloud's cheapest cluster."),
    as_json: bool = JsonOpt,
) -> None:
    """List GPU instance types with fabric and prices, or (--gpus N) whole clusters across clouds, cheapest first."""

    def go() -> Any:
        from provision.catalog import load_catalog

        c, g, caps, s, count = _check(cloud, gpu, capacity, sort, gpus, region)
        cat = load_catalog()
        if count is not None:
            from provision.planning.cluster_offers import cluster_offers

            rows = cluster_offers(
                cat,
                count,
                gpu=g,
                cloud=c,
                region=region,
                capacity=caps,
                storage_gib=storage_gib,
                per_cloud=per_cloud,
                sort=s,  # type: ignore[arg-type]
            )
            return [r.model_dump(mode="json") for r in (rows[:limit] if limit else rows)]
        return [_type_row(o, region) for o in cat.instances_for(c, g) if _in_region(o, region)]

    rows = run_command(as_json, go)
    if as_json:
        emit_json(rows)
    elif gpus is not None:
        _print_clusters(rows)
        _print_missing_clouds(rows, cloud, gpu)
    else:
        _print_types(rows, region)
        if not rows:
            _print_no_types(cloud, gpu, region)
        if cloud:
            _print_limits(cloud.strip().lower())


def _print_no_types(cloud: str | None, gpu: str | None, region: str | None) -> None:
    """Say why the instance-type list is empty: no cloud sells the GPU at all, or the filters leave nothing."""
    from provision.catalog import load_catalog
    from provision.catalog.onprem import load_onprem

    cat = load_catalog()
    model = cat.gpu(gpu) if gpu else None
    out = console()
    if model is not None and not cat.instances_for(gpu=model.name):
        build = any(s.accelerator == model.name for s in load_onprem().servers)
        hint = f"; size an on-premises build with: provision size --gpu {model.name} --build" if build else ""
        out.print(f"no cloud in the catalog (aws, gcp, azure, alibaba) sells {model.name}{hint}", markup=False)
        return
    given = ", ".join(f"--{k} {v}" for k, v in (("cloud", cloud), ("gpu", gpu), ("region", region)) if v)
    out.print(f"no catalog offer matches {given}; drop a filter to see the others", markup=False)


def _print_limits(cloud: str) -> None:
    """What provision's path on ``cloud`` cannot do (the adapter's ``limits``), under its offers."""
    from provision.clouds.base import get_adapter, limit_lines

    lines = limit_lines(get_adapter(cloud).limits)
    if lines:
        out = console()
        out.print(f"provision on {cloud} cannot give:", markup=False)
        for line in lines:
            out.print(f"  - {line}", markup=False)


def _in_region(o: Any, region: str | None) -> bool:
    return region is None or region.lower() in {r.lower() for r in o.regions}


def _type_row(o: Any, region: str | None) -> dict[str, Any]:
    regions = sorted(r for r in o.regions if region is None or r.lower() == region.lower())
    return {
        "cloud": o.cloud,
        "instance_type": o.instance_type,
        "gpu": o.gpu,
        "gpus_per_node": o.gpus_per_node,
        "gpu_memory_gib": o.gpu_memory_gib,
        "cpu_arch": o.cpu_arch,
        "vcpus": o.vcpus,
        "memory_gib": o.memory_gib,
        "local_nvme_gib": o.local_nvme_gib,
        "fabric": o.fabric,
        "fabric_gbps": o.fabric_gbps,
        "fabric_interfaces": o.fabric_interfaces,
        "consumption": list(o.consumption),
        "regions": regions,
        "price_per_hour_usd": {r: o.regions[r].price_per_hour_usd for r in regions},
        "spot_price_per_hour_usd": {r: o.regions[r].spot_price_per_hour_usd for r in regions},
        # The labelled estimate that `plan` and `offers --gpus` price a type by where no vendor price was read.
        "estimated_price_per_hour_usd": {
            r: est.usd
            for r in regions
            if o.regions[r].price_per_hour_usd is None and (est := o.regions[r].price_estimate) is not None
        },
    }


def _cheapest(prices: dict[str, float | None], estimates: dict[str, float] | None = None) -> str:
    """The lowest price and its region; a region priced only by a labelled estimate gets a star."""
    known = [(p, r, "") for r, p in prices.items() if p is not None]
    known += [(p, r, "*") for r, p in (estimates or {}).items()]
    if not known:
        return "unpriced"
    p, r, star = min(known)
    return f"{p:,.2f}{star} {r}" if len(prices) > 1 else f"{p:,.2f}{star}"


def _print_types(rows: list[dict[str, Any]], region: str | None) -> None:

    from provision.cli.fit import Col, fit, left_out_note

    title = f"GPU offers ({len(rows)})" + (f" in {region}" if region else "")
    # Two-line cells, no word ever broken: the type whole over its cloud and region count, the GPUs over the fabric,
    # each price over its cheapest region; a terminal too narrow for that loses the spot column, then the fabric's.
    cols = [Col("type / cloud"), Col("GPUs / fabric"), Col("$/h", priority=1), Col("spot $/h", priority=2)]
    cells: list[list[str]] = []
    for r in rows:
        n = len(r["regions"])
        if cells:
            cells.append(["", "", "", ""])  # a blank line between offers
        cells.append(
            [
                f"{r['instance_type']}\n{r['cloud']}, {n} region{'s' if n != 1 else ''}",
                f"{r['gpus_per_node']}x{r['gpu']}\n{r['fabric']}"
                + (f" {r['fabric_gbps']:g}" if r["fabric_gbps"] else ""),
                _cheapest(r["price_per_hour_usd"], r["estimated_price_per_hour_usd"]).replace(" ", "\n", 1),
                _cheapest(r["spot_price_per_hour_usd"]).replace(" ", "\n", 1),
            ]
        )
    out = console()
    table, left_out = fit(cols, cells, out.width, title=title, title_justify="left")
    out.print(table)
    if left_out:
        out.print(left_out_note(left_out, out.width), markup=False)
    if any(r["estimated_price_per_hour_usd"] for r in rows):
        out.print("* a labelled ESTIMATE, not a vendor price (--json: estimated_price_per_hour_usd)", markup=False)


def _print_clusters(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    out = console()
    if not rows:
        out.print("no catalog offer matches these filters")
        return
    priced = [r for r in rows if r["hourly_usd"] is not None]
    from rich import box

    # Fits 80 columns; the parts of the cheapest total follow the table, and --json has every row's.
    table = Table(title=f"{rows[0]['gpus']}-GPU clusters, cheapest first", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("cloud", "region", "nodes x type", "capacity", "$/h"):
        table.add_column(col, no_wrap=True, justify="right" if col == "$/h" else "left")
    for r in priced:
        table.add_row(
            r["cloud"],
            r["region"],
            f"{r['nodes']}x {r['instance_type']}",
            r["capacity"],
            _money(r["hourly_usd"]) + ("*" if r.get("estimated") else ""),
        )
    if priced:
        out.print(table)
        if any(r.get("estimated") for r in priced):
            out.print(
                "* includes a labelled ESTIMATE, not a vendor price (--json: each row's `estimated` parts)",
                markup=False,
            )
        best = priced[0]
        storage = _money(best["storage_hourly_usd"]) if best["storage"] else "0"
        out.print(
            f"cheapest: {_money(best['hourly_usd'])} $/h = {_money(best['compute_hourly_usd'])} compute + {storage} "
            f"storage + {_money(best['network_hourly_usd'])} network (--json has every row's parts)",
            markup=False,
        )
    rest = len(rows) - len(priced)
    if rest:
        parts = sorted({p.split(" (")[0] for r in rows if r["hourly_usd"] is None for p in r["unpriced"]})
        out.print(
            f"{rest} more offer(s) have parts without a catalog price ({', '.join(parts)}); --json lists them",
            markup=False,
        )


def _print_missing_clouds(rows: list[dict[str, Any]], cloud: str | None, gpu: str | None) -> None:
    """Name each cloud the cheapest-cluster table leaves out, and why: no offer at all, or none priced."""
    from provision.catalog.models import CLOUDS

    clouds = [cloud.strip().lower()] if cloud else list(CLOUDS)
    what = f"{gpu} " if gpu else ""
    out = console()
    for c in clouds:
        mine = [r for r in rows if r["cloud"] == c]
        if not mine:
            out.print(
                f"{c}: no {what}instance type in the catalog, so no publicly priced {what}cluster",
                markup=False,
            )
        elif all(r["hourly_usd"] is None for r in mine):
            parts = sorted({p.split(" (")[0] for r in mine for p in r["unpriced"]})
            out.print(
                f"{c}: {len(mine)} {what}offer(s), none publicly priced ({', '.join(parts)} without a catalog price)",
                markup=False,
            )


def _money(v: float | None) -> str:
    return "?" if v is None else f"{v:,.2f}"


def register(app: typer.Typer) -> None:
    """Add ``offers`` to the ``provision`` app."""
    app.command("offers")(offers)

"""``provision offers``: the catalog's GPU instance types with their fabric and prices."""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command


def offers(
    cloud: str | None = typer.Option(None, help="aws, gcp, azure or alibaba."),
    gpu: str | None = typer.Option(None, help="Accelerator model, e.g. H100."),
    region: str | None = typer.Option(None, help="Only types sold in this region."),
    as_json: bool = JsonOpt,
) -> None:
    """List the catalog's GPU instance types with their fabric and prices."""
    from provision.catalog import load_catalog

    cloud = cloud.lower() if cloud else cloud  # enum values are case-insensitive: --cloud GCP

    def go() -> list[dict[str, Any]]:
        from provision.spec.errors import Problem, SpecError

        cat = load_catalog()
        problems = []
        if cloud is not None and cloud not in ("aws", "gcp", "azure", "alibaba"):
            problems.append(Problem("--cloud", cloud, "is not a cloud", "use aws, gcp, azure or alibaba"))
        if gpu is not None and cat.gpu(gpu) is None:
            problems.append(Problem("--gpu", gpu, "is not a known GPU", f"use one of: {', '.join(cat.gpu_names())}"))
        if problems:
            raise SpecError("bad filter", problems)
        rows = []
        for o in cat.instances_for(cloud, gpu, region):
            rows.append(
                {
                    "cloud": o.cloud,
                    "instance_type": o.instance_type,
                    "gpu": o.gpu,
                    "gpus_per_node": o.gpus_per_node,
                    "gpu_memory_gib": o.gpu_memory_gib,
                    "vcpus": o.vcpus,
                    "memory_gib": o.memory_gib,
                    "local_nvme_gib": o.local_nvme_gib,
                    "fabric": o.fabric,
                    "fabric_gbps": o.fabric_gbps,
                    "fabric_interfaces": o.fabric_interfaces,
                    "consumption": list(o.consumption),
                    "regions": sorted(o.regions),
                    "price_per_hour_usd": {r: v.price_per_hour_usd for r, v in sorted(o.regions.items())},
                }
            )
        return rows

    rows = run_command(as_json, go)
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"GPU offers ({len(rows)})", box=None)  # fits 80 columns; names never split
    for col in ("cloud", "instance type", "GPUs", "GPU GiB", "fabric", "Gbps", "NICs", "from $/h", "regions"):
        table.add_column(col, overflow="fold", no_wrap=col == "instance type")
    for r in rows:
        prices = [p for p in r["price_per_hour_usd"].values() if p is not None]
        table.add_row(
            r["cloud"],
            r["instance_type"],
            f"{r['gpus_per_node']}x {r['gpu']}",
            f"{r['gpu_memory_gib']:g}",
            r["fabric"],
            f"{r['fabric_gbps']:g}" if r["fabric_gbps"] else "?",
            str(r["fabric_interfaces"]),
            f"{min(prices):,.2f}" if prices else "unpriced",
            str(len(r["regions"])),
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``offers`` to the ``provision`` app."""
    app.command("offers")(offers)

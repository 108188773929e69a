"""``provision catalog refresh``: rebuild the catalog's prices from the vendors' public price APIs."""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

catalog_app = typer.Typer(
    help="The offer catalog: instance types, filesystems and prices.",
    no_args_is_help=True,
    epilog="Example: provision catalog refresh --cloud azure",
)


@catalog_app.command("refresh")
def refresh(
    cloud: list[str] = typer.Option(None, "--cloud", help="Only this cloud (repeatable); default: all four."),
    write: bool = typer.Option(False, "--write", help="Write the new prices into the catalog data files."),
    as_json: bool = JsonOpt,
) -> None:
    """Ask AWS, Azure and GCP's price APIs for the catalog's rows and print what changed (needs network)."""

    def go() -> dict[str, Any]:
        from pathlib import Path

        import provision.catalog as catalog_pkg
        from provision.catalog import read_cloud_files
        from provision.catalog.models import CLOUDS
        from provision.ops.catalog import refresh as refresh_mod
        from provision.spec.errors import Problem, SpecError

        chosen = [c.strip().lower() for c in cloud] if cloud else list(CLOUDS)
        bad = [c for c in chosen if c not in CLOUDS]
        if bad:
            raise SpecError(
                "bad filter", [Problem("--cloud", b, "is not a cloud", f"use {', '.join(CLOUDS)}") for b in bad]
            )
        result = refresh_mod.refresh(read_cloud_files(), chosen, refresh_mod.default_sources())
        doc = result.as_dict()
        if write and result.changes:
            data_dir = Path(catalog_pkg.__file__).parent / "data"
            doc["written"] = [str(p) for p in refresh_mod.apply_changes(data_dir, result)]
        return doc

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
        return
    _print(doc, write)


def _print(doc: dict[str, Any], write: bool) -> None:
    from rich.table import Table

    out = console()
    for cloud, why in doc["skipped"].items():
        out.print(f"{cloud}: skipped ({why})", markup=False)
    for note in doc.get("notes", []):
        out.print(f"note: {note}", markup=False)
    if not doc["changes"]:
        checked = ", ".join(f"{c} {n}" for c, n in doc["checked"].items()) or "nothing"
        out.print(f"no price changed (rows checked: {checked})")
        return
    from rich import box

    table = Table(
        title=f"price changes ({len(doc['changes'])}), retrieved {doc['retrieved']}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for col in ("cloud", "item", "region", "price", "catalog", "API"):
        table.add_column(col, no_wrap=col != "item", overflow="fold", min_width=16 if col == "item" else None)
    for c in doc["changes"]:
        table.add_row(
            c["cloud"],
            c["item"],
            c["region"],
            _field_label(c["field"]),
            "-" if c["old"] is None else f"{c['old']:g}",
            f"{c['new']:g}",
        )
    out.print(table)
    if write:
        out.print("written: " + ", ".join(doc.get("written", [])), markup=False)
    else:
        out.print("run again with --write to record these prices in the catalog files")


def _field_label(name: str) -> str:
    """A short label for a price field in the table (``--json`` keeps the field names); ``$`` is USD."""
    from provision.ops.catalog.refresh_storage import field_throughput

    tier = field_throughput(name)
    if tier is not None:
        return f"$/TiB-mo @{tier}MB/s"
    labels = {
        "price_per_hour_usd": "$/h",
        "spot_price_per_hour_usd": "$/h spot",
        "price_per_tib_month_usd": "$/TiB-mo",
    }
    return labels.get(name, name)


def register(app: typer.Typer) -> None:
    """Add the ``catalog`` command group to the ``provision`` app."""
    app.add_typer(catalog_app, name="catalog")

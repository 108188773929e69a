"""``provision volume create|list|delete``: shared filesystems that outlive clusters.

provision volume create volume.yaml --mock     # name, cloud, region, zone, kind, size_gib, lifetime, tags
provision volume list --mock [--json]          # with the cluster stacks attaching each
provision volume delete llm-data --mock        # refused while a cluster attaches it
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

_MOCK = typer.Option(False, "--mock", help="The mocked cloud (volumes persist between mocked clusters).")

volume_app = typer.Typer(
    help="Shared filesystems with their own lifetime, attached to clusters by storage.shared.volume.",
    no_args_is_help=True,
    epilog="Example: provision volume create data.yaml --mock",
)


@volume_app.command("create")
def create(
    file: str = typer.Argument(..., help="A volume spec YAML file.", show_default=False),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Create a volume from its spec: its own stack vol-NAME."""

    def go() -> Any:
        from provision.ops.volumes import create_volume
        from provision.spec.volume import load_volume_file

        return create_volume(load_volume_file(file), mock)

    record = run_command(as_json, go)
    if as_json:
        emit_json(record.row())
    else:
        row = record.row()
        console().print(
            f"volume {row['name']} created: {row['cloud']} {row['filesystem']} {row['size_gib']} GiB in "
            f"{row['zone'] or row['region']} ({row['filesystem_id']})",
            markup=False,
        )
        if "scratch" in str(row["tier"] or "").lower():  # planning.fschoice.unreplicated: one copy of the data
            console().print(
                f"warning: tier {row['tier']} is a scratch tier: not replicated, a server failure loses its data; "
                "set throughput_mbps_per_tib to a replicated tier's (provision catalog lists them) to keep two copies",
                markup=False,
            )


@volume_app.command("list")
def list_(mock: bool = _MOCK, as_json: bool = JsonOpt) -> None:
    """Every volume, with the cluster stacks attaching it."""

    def go() -> Any:
        from provision.ops.volumes import list_volumes

        return list_volumes(mock)

    rows = [r.row() for r in run_command(as_json, go)]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        console().print("no volumes", markup=False)
        return
    from rich.table import Table

    table = Table("name", "cloud", "where", "filesystem", "GiB", "$/h", "id", "used by", "origin")
    for r in rows:
        table.add_row(
            r["name"],
            str(r["cloud"]),
            str(r["zone"] or r["region"]),
            str(r["filesystem"]),
            str(r["size_gib"]),
            "-" if r["hourly_usd"] is None else f"{r['hourly_usd']:,.2f}",
            str(r["filesystem_id"]),
            ", ".join(r["used_by"]) or "-",
            str(r["origin"]),
        )
    console().print(table)


@volume_app.command("delete")
def delete(
    name: str = typer.Argument(..., help="The volume's name.", show_default=False),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Delete a volume; refused while a cluster attaches it."""

    def go() -> Any:
        from provision.ops.volumes import delete_volume

        return delete_volume(name, mock)

    record = run_command(as_json, go)
    if as_json:
        emit_json({"deleted": record.row()})
    else:
        console().print(f"volume {record.name} deleted", markup=False)


def register(app: typer.Typer) -> None:
    """Add the ``volume`` group."""
    app.add_typer(volume_app, name="volume")

"""``provision list [--mock] [--json]``: every cluster the state knows, with its size, cost and expiry."""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

_MOCK = typer.Option(False, "--mock", help="List the mocked cloud's clusters (local mock state).")


def _money(value: Any, suffix: str = "") -> str:
    return f"${value:,.2f}{suffix}" if isinstance(value, (int, float)) else "-"


def list_clusters(mock: bool = _MOCK, as_json: bool = JsonOpt) -> None:
    """List every cluster in the state: stack, name, cloud, region, nodes x type, GPUs, cost, expiry."""

    def go() -> list[dict[str, Any]]:
        from provision.ops.inventory import list_clusters as records

        return [r.row() for r in records(mock)]

    rows = run_command(as_json, go)
    if as_json:
        emit_json({"clusters": rows})
        return
    out = console()
    if not rows:
        out.print(f"no clusters{' in the mocked cloud' if mock else ''}; create one with `provision up TARGET`")
        return
    from provision.cli.fit import Col, fit, left_out_note

    cols = [
        Col("stack"),
        Col("name", priority=4, wrap=True),
        Col("where", priority=1, wrap=True),
        Col("nodes", wrap=True),
        Col("GPUs", justify="right"),
        Col("$/h", priority=2, justify="right"),
        Col("spent", priority=3, justify="right"),
        Col("expires", priority=1, wrap=True),
    ]
    cells = [
        [
            r["stack"],
            r["name"] if r["name"] != r["stack"] else "=",
            f"{r['cloud']} {r['region']}",
            f"{r['nodes']}x {r['instance_type']}",
            str(r["gpus"] or "-"),
            _money(r["hourly_usd"]),
            _money(r["spent_usd"]),
            (r["expires_at"] or "never")[:16].replace("T", " "),
        ]
        for r in rows
    ]
    # Columns wrap at spaces only (never inside a stack or type name); too narrow still: the least needed go.
    table, left_out = fit(cols, cells, out.width, title=f"{len(rows)} cluster(s){' (mock)' if mock else ''}")
    out.print(table)
    if left_out:
        out.print(left_out_note(left_out, out.width), markup=False)


def register(app: typer.Typer) -> None:
    """Add ``list``."""
    app.command("list")(list_clusters)

"""The ``provision`` command.

Every command takes ``--json`` and then prints one JSON document on stdout and nothing
else. Exit codes: 0 success, 2 the user's input is wrong, 3 refused by policy or budget,
1 anything else. User errors never print a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from provision.errors import ProvisionError

app = typer.Typer(
    name="provision",
    help="Bring up and tear down GPU training clusters on AWS, GCP, Azure and Alibaba Cloud from one spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JsonOpt = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else.")
TargetArg = typer.Argument(..., help="A stack name (stacks/Pulumi.<name>.yaml) or a path to a spec or stack YAML file.")

T = TypeVar("T")


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # A pipe or CI log has no width; 140 columns keeps tables readable there.
    width = None if stream.isatty() else 140
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")


def run_command(as_json: bool, fn: Callable[[], T]) -> T:
    """Run ``fn``; turn a ``ProvisionError`` (or an ``OSError``, exit 1) into a message and its exit code.

    No traceback is printed for either.
    """
    try:
        return fn()
    except (ProvisionError, OSError) as e:
        if isinstance(e, OSError):  # an unwritable ~/.provision, a full disk, ...
            where = f" ({e.filename})" if e.filename else ""
            e = ProvisionError(f"{e.strerror or e}{where}. To fix: check that path's permissions and free space")
        if as_json:
            emit_json(e.as_dict())
        else:
            from rich.markup import escape

            # User values and patterns contain '[...]': escape them so rich prints them literally.
            _console(stderr=True).print(f"[bold red]error:[/] {escape(e.render())}", markup=True, highlight=False)
        raise typer.Exit(e.exit_code) from None
    except KeyboardInterrupt:
        _console(stderr=True).print("interrupted")
        raise typer.Exit(130) from None


# ---------------------------------------------------------------------- offers


@app.command()
def offers(
    cloud: str | None = typer.Option(None, help="aws, gcp, azure or alibaba."),
    gpu: str | None = typer.Option(None, help="Accelerator model, e.g. H100."),
    region: str | None = typer.Option(None, help="Only types sold in this region."),
    as_json: bool = JsonOpt,
) -> None:
    """List the catalog's GPU instance types with their fabric and prices."""
    from provision.catalog import load_catalog

    def go() -> list[dict[str, Any]]:
        from provision.errors import Problem, SpecError

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

    table = Table(title=f"GPU offers ({len(rows)})")
    for col in ("cloud", "instance type", "GPUs", "GPU GiB", "fabric", "Gbps", "NICs", "from $/h", "regions"):
        table.add_column(col, overflow="fold")
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
    _console().print(table)


# ---------------------------------------------------------------------- plan / preview


def _target_data(target: str) -> Any:
    from provision.loading import read_yaml, spec_data_from_document, target_path

    path = target_path(target)
    return spec_data_from_document(read_yaml(path), str(path))


def _target_stack(target: str) -> str | None:
    """The stack of a ``Pulumi.<stack>.yaml`` target (a stack name included), as ``Cluster`` names it."""
    from provision.loading import stack_of_file, target_path

    return stack_of_file(target_path(target))


def _plan_target(target: str) -> Any:
    """The plan of a target; shape and catalog problems come together in one error."""
    from provision.validate import load_and_plan

    return load_and_plan(_target_data(target), stack=_target_stack(target))


def print_plan(summary: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    t = Table(show_header=False, title=f"plan: {summary['name']}")
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    storage = summary["storage"]
    cost = summary["cost"]
    rows = [
        ("cloud / region / zone", f"{summary['cloud']} / {summary['region']} / {summary['zone'] or '-'}"),
        ("nodes", f"{summary['nodes']} x {summary['instance_type']} ({summary['gpus']} x {summary['gpu']})"),
        (
            "fabric",
            f"{summary['fabric']} ({summary['fabric_interfaces']} interfaces/node), islands {summary['islands']}",
        ),
        ("capacity", summary["capacity"]),
        (
            "shared storage",
            f"{storage['kind']} {storage['tier']} {storage['size_gib']} GiB" if storage else "none",
        ),
        ("image", f"{summary['image']['ref']} ({summary['image']['source']})"),
        ("hourly", f"${cost['hourly_usd']:,.2f}/h" if cost["hourly_usd"] is not None else "unpriced"),
        (
            "lifetime",
            f"{cost['lifetime_hours']:g} h, ~${cost['lifetime_usd']:,.2f}, expires {summary['expires_at']}"
            if cost["lifetime_hours"] is not None and cost["lifetime_usd"] is not None
            else (f"expires {summary['expires_at']}" if summary["expires_at"] else "no lifetime set"),
        ),
    ]
    for k, v in rows:
        t.add_row(k, escape(str(v)))
    console = _console()
    console.print(t)
    for w in summary["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(w)}", markup=True)


@app.command()
def plan(target: str = TargetArg, as_json: bool = JsonOpt) -> None:
    """Validate a spec and print the resolved plan (nothing is created)."""
    summary = run_command(as_json, lambda: _plan_target(target).summary())
    if as_json:
        emit_json(summary)
    else:
        print_plan(summary)


@app.command()
def preview(target: str = TargetArg, as_json: bool = JsonOpt) -> None:
    """Run the real Pulumi program against the mocked cloud and print every resource."""

    def go() -> dict[str, Any]:
        from provision.testing import run_program

        stack = _target_stack(target) or "preview"
        plan = _plan_target(target)  # every problem at once, before anything is registered
        return run_program(plan.spec, stack=stack).as_dict()

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
        return
    from rich.markup import escape
    from rich.tree import Tree

    print_plan(doc["plan"])
    tree = Tree(f"[bold]{doc['plan']['name']}[/] ({len(doc['resources'])} resources)")
    for r in doc["resources"]:
        tree.add(f"{escape(r['type'])}  [cyan]{escape(r['name'])}[/]")
    console = _console()
    console.print(tree)
    outputs = doc["outputs"]
    console.print("[bold]outputs[/]")
    for key in ("head_node", "hostfile", "shared_fs", "expires_at", "hourly_usd"):
        value = outputs.get(key)
        if isinstance(value, dict):
            value = value.get("mount_command", value)
        console.print(f"  {key}: {str(value).strip()}", markup=False)


# ---------------------------------------------------------------------- schema


@app.command()
def schema(as_json: bool = JsonOpt) -> None:
    """Print the JSON Schema of the cluster spec."""
    from provision.spec import ClusterSpec

    emit_json(ClusterSpec.model_json_schema())


def _register_commands() -> None:
    """Commands that live in their own modules (size, up/down/status/outputs, reap)."""
    from provision import cli_lifecycle, cli_reap, cli_size

    for module in (cli_size, cli_lifecycle, cli_reap):
        module.register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()

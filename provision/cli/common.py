"""What every command module shares: options, the console, JSON output and error handling.

Command modules import this module, never :mod:`provision.cli.app` (which imports them).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from provision.spec.errors import ProvisionError

JsonOpt = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else.")
TargetArg = typer.Argument(..., help="A stack name (stacks/Pulumi.<name>.yaml) or a path to a spec or stack YAML file.")

T = TypeVar("T")


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # A pipe or CI log has no width: $COLUMNS when set, else 80, so tables fit a standard terminal.
    columns = os.environ.get("COLUMNS", "")
    # ASCII digits only ("８０".isdigit() is true), and a sane width (a 400-digit $COLUMNS is not a terminal).
    width = None if stream.isatty() else min(int(columns), 1000) if columns.isascii() and columns.isdigit() else 80
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


#: Exit code of an interrupted command (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def emit_json(doc: Any) -> None:
    """Print ``doc`` as the command's one JSON document; no secret survives into it."""
    from provision.spec.secrets import scrub_data

    sys.stdout.write(json.dumps(scrub_data(doc), indent=2, default=str) + "\n")


def interrupted_doc(what: str = "") -> dict[str, Any]:
    """The ``--json`` error document of an interrupted command (exit 130)."""
    return {
        "error": "Interrupted",
        "message": "interrupted (Ctrl-C or SIGINT)" + (f"; {what}" if what else ""),
        "problems": [],
        "exit_code": EXIT_INTERRUPTED,
    }


def run_command(as_json: bool, fn: Callable[[], T]) -> T:
    """Run ``fn``; turn any failure into a message (one JSON document with ``--json``) and its exit code.

    ``ProvisionError`` s exit with their code (2 input, 3 policy, 1 other), ``OSError`` s with 1, an
    interrupt with 130 and anything unexpected with 1. No traceback is printed for user errors;
    an unexpected error prints its traceback on stderr only with ``PROVISION_DEBUG=1``.
    """
    try:
        return fn()
    except (typer.Exit, typer.TyperException):
        raise  # an exit code already chosen, or a usage error click reports (exit 2)
    except KeyboardInterrupt:
        if as_json:
            emit_json(interrupted_doc())
        console(stderr=True).print("interrupted", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (ProvisionError, OSError) as e:
        if isinstance(e, OSError):  # an unwritable ~/.provision, a full disk, a file that is gone, ...
            where = f" ({e.filename})" if e.filename else ""
            fix = (
                "check that the path exists"
                if isinstance(e, FileNotFoundError)
                else "check that path's permissions and free space"
            )
            e = ProvisionError(f"{e.strerror or e}{where}. To fix: {fix}")
        if as_json:
            emit_json(e.as_dict())
        else:
            from rich.markup import escape

            # User values and patterns contain '[...]': escape them so rich prints them literally.
            # soft_wrap: the terminal wraps; a log keeps each line whole (fix commands stay copyable).
            console(stderr=True).print(
                f"[bold red]error:[/] {escape(e.render())}", markup=True, highlight=False, soft_wrap=True
            )
        raise typer.Exit(e.exit_code) from None
    except Exception as e:  # noqa: BLE001  # the CLI boundary: a bug still ends in one message and exit 1
        _internal_error(as_json, e)
        raise typer.Exit(1) from None


def _internal_error(as_json: bool, e: BaseException) -> None:
    """Report a failure that is a bug in provision (exit 1), without echoing secrets."""
    import os
    import traceback

    from provision.spec.secrets import scrub

    text = scrub(f"{type(e).__name__}: {str(e)[:500]}", blobs=True)
    message = f"internal error ({text}). This is a bug in provision; rerun with PROVISION_DEBUG=1 for the traceback"
    if as_json:
        emit_json({"error": "InternalError", "message": message, "problems": []})
    else:
        console(stderr=True).print(f"error: {message}", markup=False, highlight=False)
    if os.environ.get("PROVISION_DEBUG") == "1":
        traceback.print_exception(e, file=sys.stderr)


def runtime_rows(runtime: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The plan's job runtime: the image (by digest) and where each launcher tool comes from."""
    if not runtime:
        return []
    what = runtime["image"] if runtime["kind"] == "container" else "the node image's own Python"
    by_source: dict[str, list[str]] = {}
    for tool, source in runtime["tools"].items():
        by_source.setdefault(source.split(" (")[0], []).append(tool)
    tools = "; ".join(f"{', '.join(names)} ({source})" for source, names in by_source.items())
    return [("runtime", f"{what} ({runtime['source']})"), ("launcher tools", tools or "-")]


#: Hours in the month the clouds' monthly prices assume (AWS, Azure and GCP price pages: 730 hours per month).
HOURS_PER_MONTH = 730


def _storage_row(storage: dict[str, Any] | None) -> str:
    """The plan's shared storage: the cluster's own filesystem, or the attached volume (billed by its own stack)."""
    if not storage:
        return "none"
    text = f"{storage['kind']} {storage['tier']} {storage['size_gib']} GiB"
    if storage.get("volume"):
        price = f"${storage['hourly_usd']:,.2f}/h" if storage.get("hourly_usd") is not None else "unpriced"
        if storage.get("hourly_usd") is not None:
            price += f" (~${storage['hourly_usd'] * HOURS_PER_MONTH:,.0f}/month)"
        text = f"volume {storage['volume']}: {text}, {price} while the volume lives (its own stack)"
    return text


def _link_rows(storage: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The object-store link row of the plan: the bucket and what bills the link (no catalog price of its own)."""
    if not storage or not storage.get("object_store"):
        return []
    uri = str(storage["object_store"])
    if uri.startswith("s3://"):
        # aws.amazon.com/fsx/lustre/pricing bills storage, throughput, backups and data transfer: no item for a data
        # repository association; the bucket's requests and storage are S3's (aws.amazon.com/s3/pricing).
        text = (
            "$0.00/h for the link itself (FSx pricing has no data repository association item); S3 bills the requests"
        )
    elif uri.startswith("oss://"):
        # alibabacloud.com/help/en/cpfs/cpfsonecs/product-overview/billable-items: "dataflowthroughput", billed on the
        # configured bandwidth beyond 50 MB/s per 1,200 GiB of capacity.
        text = "dataflow bandwidth beyond 50 MB/s per 1,200 GiB is billed by the hour (unpriced: not in the catalog)"
    elif uri.startswith("gs://"):
        # cloud.google.com/managed-lustre/pricing and cloud.google.com/parallelstore/pricing bill capacity: no item
        # for import or export; the bucket's operations and egress are Cloud Storage's (cloud.google.com/storage/
        # pricing). The grant (a bucket IAM binding) is free.
        text = (
            "$0.00/h for the link itself (import/export have no price item; the bucket grant is free); Cloud "
            "Storage bills the operations and any cross-region transfer"
        )
    elif uri.startswith("https://"):
        # azure.microsoft.com/pricing/details/managed-lustre bills capacity per hour: no item for the HSM link or its
        # role assignments; the account's transactions are Blob Storage's.
        text = "$0.00/h for the link itself (no Managed Lustre price item for HSM); Blob Storage bills the transactions"
    else:
        text = "unpriced (not in the catalog)"
    bucket = uri.split("://", 1)[-1].split("/", 1)[0]
    return [("object store link", f"{uri}: {text}"), ("object store grant", _LINK_GRANTS[uri.split("://")[0]](bucket))]


#: Who the link's access is granted to and where, per bucket scheme (the clouds' datalink modules build them).
_LINK_GRANTS = {
    "s3": lambda b: f"bucket {b} only, to this file system's own FSx role (AWSServiceRoleForFSxS3Access_<fs id>)",
    "gs": lambda b: (
        f"bucket {b} only, to the filesystem's service agent (Managed Lustre: objectViewer, objectUser "
        "with export_path; Parallelstore: storage.admin)"
    ),
    "https": lambda b: (
        f"storage account {b.split('.')[0]} only: Storage Account Contributor and Storage Blob Data "
        "Contributor for the HPC Cache Resource Provider"
    ),
    "oss": lambda b: f"bucket {b} only, to CPFS's data-flow role (the bucket must be tagged cpfs-dataflow=true)",
}


def _hourly_row(hourly: float | None, storage: dict[str, Any] | None) -> str:
    """The cluster's hourly cost, with an attached volume's beside it (not counted in the cluster's cap)."""
    text = f"${hourly:,.2f}/h" if hourly is not None else "unpriced"
    if storage and storage.get("volume") and storage.get("hourly_usd") is not None:
        text += f" (+ volume {storage['volume']} ${storage['hourly_usd']:,.2f}/h)"
    return text


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
        ("shared storage", _storage_row(storage)),
        ("image", f"{summary['image']['ref']} ({summary['image']['source']})"),
        *runtime_rows(summary.get("runtime")),
        (
            "hourly",
            _hourly_row(cost["hourly_usd"], storage)
            + (f" (includes ESTIMATES: {', '.join(cost['estimated'])})" if cost.get("estimated") else ""),
        ),
        (
            "lifetime",
            f"{cost['lifetime_hours']:g} h, ~${cost['lifetime_usd']:,.2f}, expires {summary['expires_at']}"
            if cost["lifetime_hours"] is not None and cost["lifetime_usd"] is not None
            else (f"expires {summary['expires_at']}" if summary["expires_at"] else "no lifetime set"),
        ),
    ]
    rows += _link_rows(storage)
    rows += scheduler_rows(summary.get("scheduler") or {})
    ctl = (summary.get("extra") or {}).get("slurm")
    if ctl:  # scheduler: slurm: the controller VM and its price (counted in hourly and by the cost cap)
        daemons = "slurmctld + slurmdbd" if ctl.get("accounting") else "slurmctld"
        rows.append(
            ("slurm controller", f"1 x {ctl['instance_type']} ({daemons}): {_usd(cost['scheduler_hourly_usd'])}")
        )
    for k, v in rows:
        t.add_row(k, escape(str(v)))
    out = console()
    out.print(t)
    for w in summary["warnings"]:
        # Unbounded spend is the one warning nobody may scroll past.
        label = "[bold red]WARNING:[/]" if w.startswith("NO COST CAP") else "[yellow]warning:[/]"
        out.print(f"{label} {escape(w)}", markup=True)


def _usd(v: Any) -> str:
    return f"${v:,.2f}/h" if v is not None else "unpriced"


def scheduler_rows(sched: dict[str, Any]) -> list[tuple[str, str]]:
    """Plan rows for a managed Kubernetes cluster: control plane, pools and add-ons, each with its cost."""
    if sched.get("kind") != "kubernetes":
        return []
    cp, gpu, system = sched["control_plane"], sched["gpu_pool"], sched["system_pool"]
    addons = ", ".join(f"{a['name']} {a['version'] or ''}".strip() for a in sched["addons"])
    return [
        (
            "control plane",
            f"{cp['service'].upper()} {cp['name']} {cp['version']} in {cp['location']}: {_usd(cp['hourly_usd'])}",
        ),
        ("API access", cp["endpoint_access"]),
        (
            "GPU pool",
            f"{gpu['nodes']} x {gpu['instance_type']} ({gpu['gpus_per_node']} GPUs, {gpu['fabric_devices_per_node']} "
            f"{gpu['fabric']} devices/node, {gpu['placement']}, {gpu['capacity']}): {_usd(gpu['hourly_usd'])}",
        ),
        ("system pool", f"{system['nodes']} x {system['instance_type']}: {_usd(system['hourly_usd'])}"),
        ("add-ons", addons),
        (
            "jobs",
            f"namespace {sched['job']['namespace']}, queue {sched['job']['queue']}, "
            f"per node {sched['job']['resources_per_node']}",
        ),
    ]

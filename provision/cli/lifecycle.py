"""``provision up|down|status|outputs TARGET [--mock] [--yes] [--json]``.

``up`` shows the plan and its cost, then asks before creating anything unless ``--yes``;
``down`` asks too. ``--json`` cannot prompt, so it needs ``--yes`` for both (exit 2
otherwise). ``--mock`` runs against the mocked cloud with local state (no Pulumi CLI, no
credentials). Exit codes as everywhere: 0 ok, 2 bad input, 3 refused by policy or budget,
1 anything else (a missing Pulumi CLI included).

Registered by :mod:`provision.cli.app` through :func:`register`; nothing heavy loads at start.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from provision.cli.common import console, emit_json, print_plan, run_command
from provision.planning.launch import export_lines

_TARGET = typer.Argument(
    ...,
    help="A stack name (stacks/Pulumi.<name>.yaml), a path to a spec or stack YAML file, or (after up) "
    "a cluster or stack name known to the state.",
)
_JSON = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else.")
_MOCK = typer.Option(
    False, "--mock", help="Use the mocked cloud with local state (~/.provision/mock): no Pulumi CLI, no credentials."
)
_YES = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")

#: Outputs printed by `provision up` and `provision outputs` in text mode, in this order.
_SHOWN_OUTPUTS = ("head_node", "hostfile", "ssh_config", "nccl_env", "shared_fs", "expires_at", "hourly_usd")


def _cluster(target: str, mock: bool, as_json: bool) -> Any:
    from provision.ops.cluster import Cluster

    return Cluster(target, mock=mock, display="none" if as_json else "auto")


def _require_yes(command: str, target: str, yes: bool, as_json: bool) -> None:
    """With ``--json`` nothing can be asked: refuse (exit 2) unless ``--yes`` was given."""
    if yes or not as_json:
        return
    from provision.spec.errors import Problem, UnsupportedError

    def refuse() -> None:
        raise UnsupportedError(
            f"provision {command} --json needs --yes",
            [
                Problem(
                    "--yes",
                    False,
                    f"is required with --json, which cannot ask before `{command}` changes the cloud",
                    f"run `provision {command} {target} --json --yes`",
                )
            ],
        )

    run_command(True, refuse)


def _ask(question: str) -> None:
    if not typer.confirm(question, default=False, err=True):
        console(stderr=True).print("aborted: nothing was changed")
        raise typer.Exit(1)


def _print_changes(result: Any, verbose: bool = True) -> None:
    """Every step (``verbose``), else the updates and replacements (few, and the ones that matter) and the
    counts by step and resource kind."""
    from rich.markup import escape

    out = console()
    for step in result.steps:
        if verbose or step.op not in ("create", "delete"):
            out.print(f"  {escape(str(step))}")
    first, *kinds = result.summary_lines()
    out.print(f"[bold]{escape(first)}[/]")
    for line in [] if verbose else kinds:
        out.print(escape(line))
    for warning in result.warnings:
        out.print(f"[yellow]warning:[/] {escape(warning)}")


#: Outputs with one line per node: ``up`` names them instead of printing them (``provision outputs`` prints them).
_PER_NODE_OUTPUTS = ("hostfile", "ssh_config")


def _print_outputs(outputs: dict[str, Any], summary_of: str | None = None) -> None:
    """Print the outputs; ``summary_of`` (the target, for ``up``): per-node outputs as a pointer, not every line."""
    from rich.markup import escape

    out = console()
    for key in _SHOWN_OUTPUTS:
        value = outputs.get(key)
        if value is None:
            continue
        if summary_of is not None and key in _PER_NODE_OUTPUTS:
            nodes = len(outputs.get("hosts") or [])
            out.print(f"[bold]{key}:[/] {nodes} nodes (provision outputs {escape(summary_of)} {key})", soft_wrap=True)
            continue
        if key == "nccl_env" and isinstance(value, dict):
            value = export_lines(value)
        elif key == "shared_fs" and isinstance(value, dict):
            value = value.get("mount_command", value)
        text = str(value).rstrip("\n")
        if "\n" in text:
            out.print(f"[bold]{key}:[/]")
            for line in text.splitlines():
                out.print(f"  {escape(line)}", soft_wrap=True)  # copy-paste ready: never wrapped
        else:
            out.print(f"[bold]{key}:[/] {escape(text)}", soft_wrap=True)


def _interruptible(operation: Any, undo: str, mock: bool) -> Any:
    """Run ``operation``; on Ctrl-C say what may exist and how to remove it, then stop as interrupted."""
    try:
        return operation(yes=True)
    except KeyboardInterrupt:
        console(stderr=True).print(
            f"interrupted: resources created so far still exist. To remove them: {undo}{' --mock' if mock else ''}",
            markup=False,
        )
        raise


_ACCEPT = typer.Option(
    False, "--accept", help="After up: node health and the NCCL all-reduce test; the up fails when either fails."
)
_ON_FAILURE = typer.Option("keep", "--on-failure", help="With --accept: keep the cluster or tear it down (down).")
_INJECT = typer.Option(None, "--inject", help="With --accept --mock: break a check on a mocked node (RANK:CHECK).")
_VERBOSE = typer.Option(
    False, "--verbose", "-v", help="List every resource as it is done (default: progress and a summary by kind)."
)


def up(
    target: str = _TARGET,
    mock: bool = _MOCK,
    yes: bool = _YES,
    as_json: bool = _JSON,
    accept: bool = _ACCEPT,
    on_failure: str = _ON_FAILURE,
    inject: list[str] = _INJECT,
    verbose: bool = _VERBOSE,
) -> None:
    """Create or update a cluster (shows the plan and cost, then asks unless --yes)."""
    faults = run_command(as_json, lambda: _acceptance_options(accept, on_failure, inject, mock))
    _require_yes("up", target, yes, as_json)
    cluster = run_command(as_json, lambda: _cluster(target, mock, as_json))
    cluster.verbose = verbose
    if not as_json:
        print_plan(run_command(False, lambda: cluster.plan().summary()))
        if not yes:
            cluster.display = "none"  # the changes are printed below; a live display would repeat them
            _print_changes(run_command(False, cluster.preview), verbose)
            cluster.display = "auto"
            _ask(f"Bring up {cluster.stack}{' (mock)' if mock else ''}?")
    result = run_command(as_json, lambda: _interruptible(cluster.up, f"provision down {target}", mock))
    if yes and not as_json:  # without --yes they were shown with the changes, before the question
        from rich.markup import escape

        for warning in result.warnings:
            console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}")
    if not accept:
        if as_json:
            emit_json(result.as_dict())
            return
        _print_outputs(result.outputs, summary_of=cluster.stack)
        _print_next(cluster, result.outputs, mock)
        return
    from provision.ops.acceptance import accept as run_acceptance

    verdict = run_command(as_json, lambda: run_acceptance(cluster, faults))
    torn_down = False
    if not verdict.ok and on_failure == "down":
        run_command(as_json, lambda: cluster.down(yes=True))
        torn_down = True
    if as_json:
        emit_json({**result.as_dict(), "acceptance": verdict.as_dict(), "torn_down": torn_down})
    else:
        _print_outputs(result.outputs, summary_of=cluster.stack)
        for line in verdict.lines():
            console().print(line, markup=False)
        if not verdict.ok:
            console(stderr=True).print(
                "acceptance FAILED: "
                + (
                    "the cluster was torn down"
                    if torn_down
                    else f"the cluster is kept; remove it with `provision down {target}`"
                ),
                markup=False,
            )
    if not verdict.ok:
        raise typer.Exit(1)


def _print_next(cluster: Any, outputs: dict[str, Any], mock: bool) -> None:
    way = (outputs.get("access") or {}).get("via")
    if way:
        flag = " --mock" if mock else ""
        console().print(
            f"next: provision ssh {cluster.spec.name}{flag} | provision exec {cluster.spec.name}{flag} -- hostname "
            f"(way in: {way})",
            markup=False,
        )


def _acceptance_options(accept: bool, on_failure: str, inject: list[str] | None, mock: bool) -> list[Any]:
    from provision.spec.errors import Problem, UnsupportedError

    problems = []
    if on_failure not in ("keep", "down"):
        problems.append(Problem("--on-failure", on_failure, "is not keep or down", "use --on-failure keep or down"))
    if inject and not (accept and mock):
        problems.append(Problem("--inject", inject[0], "needs --accept and --mock", "add --accept --mock"))
    if problems:
        raise UnsupportedError("bad acceptance options", problems)
    from provision.ops.nodes import NodeFault, require_node_access

    if accept and not mock:
        require_node_access()  # refuse before the cluster exists, not after

    return [NodeFault.parse(text) for text in inject or []]


def down(
    target: str = _TARGET, mock: bool = _MOCK, yes: bool = _YES, as_json: bool = _JSON, verbose: bool = _VERBOSE
) -> None:
    """Delete every resource of a cluster (asks unless --yes)."""
    _require_yes("down", target, yes, as_json)
    cluster = run_command(as_json, lambda: _cluster(target, mock, as_json))
    cluster.verbose = verbose
    if not yes:
        status = run_command(False, cluster.status)
        if status["state"] == "none":
            console().print(f"{cluster.stack}: nothing exists; nothing to delete")
            return
        _ask(f"Delete all {len(status['resources'])} resources of {cluster.stack}{' (mock)' if mock else ''}?")
    logged = not as_json and not sys.stderr.isatty()
    if logged:
        cluster.display = "none"  # the summary (or, verbose, every deletion) is printed once, below
    result = run_command(as_json, lambda: cluster.down(yes=True))
    if as_json:
        emit_json(result.as_dict())
    elif logged:  # a terminal's progress display already ended with the summary
        _print_changes(result, verbose)
    else:
        from rich.markup import escape

        for warning in result.warnings:
            console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}")


def status(
    target: str = _TARGET,
    mock: bool = _MOCK,
    as_json: bool = _JSON,
    wide: bool = typer.Option(
        False, "--wide", help="Print addresses, names and types whole, however wide the terminal (or use --json)."
    ),
) -> None:
    """Show what exists for a cluster: its nodes, resources, cost so far and expiry."""
    doc = run_command(as_json, lambda: _cluster(target, mock, as_json).status())
    if as_json:
        emit_json(doc)
        return
    from rich.markup import escape

    out = console()
    mode = " (mock)" if doc["mock"] else ""
    if doc["state"] == "none":
        out.print(f"{escape(doc['stack'])}{mode}: nothing exists")
        return
    named = f" (cluster {doc['cluster']})" if doc.get("cluster") and doc["cluster"] != doc["stack"] else ""
    nodes = doc.get("nodes") or []
    header = f"{doc['stack']}{named}{mode}: {len(nodes)} nodes, {len(doc['resources'])} resources"
    out.print(escape(header), soft_wrap=True)
    node_rows = [[n["name"], str(n["address"]), n["state"], str(n["health"] or "unknown")] for n in nodes]
    shortened = _print_table(
        out, [("node", False), ("address", True), ("state", False), ("health", False)], node_rows, wide
    )
    resource_rows = [[r["type"], r["name"]] for r in doc["resources"]]
    shortened |= _print_table(out, [("resource type", True), ("name", False)], resource_rows, wide)
    spent = f"${doc['spent_usd']:,.2f}" if doc["spent_usd"] is not None else "unpriced"
    hourly = f"${doc['hourly_usd']:,.2f}/h" if doc["hourly_usd"] is not None else "unpriced"
    out.print(f"created {doc['created_at']}, expires {doc['expires_at'] or 'never'}", soft_wrap=True)
    out.print(f"cost: {hourly}, {spent} so far", soft_wrap=True)
    if doc.get("bench"):
        from provision.ops.bench import status_line

        out.print(escape(status_line(doc["bench"])), soft_wrap=True)
    if shortened:
        out.print("(… ends values shortened to fit; --wide or --json shows them whole)", soft_wrap=True)


def _print_table(out: Any, columns: list[tuple[str, bool]], rows: list[list[str]], wide: bool) -> bool:
    """Print one borderless table, one line per row; returns whether a value was shortened to fit.

    A name is never broken across lines (a zonal DNS name such as
    ``node-0.us-central1-a.c.project.internal`` folded mid-way reads as two values): columns marked
    shrinkable end in an ellipsis when the table is wider than the terminal, the others keep their
    whole width. ``wide`` prints every value whole, wider than the terminal if need be.
    """
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None)
    for name, shrinkable in columns:
        if shrinkable and not wide:
            # Wrappable (so rich narrows it first) but without spaces nothing wraps: it ends in "…".
            table.add_column(name, overflow="ellipsis", min_width=min(12, max(len(name), 8)))
        else:
            table.add_column(name, no_wrap=True)
    for row in rows:
        table.add_row(*(escape(v) for v in row))
    natural = out.measure(table, options=out.options.update_width(1 << 16)).maximum
    if wide:
        table.width = max(out.width, natural) if natural > out.width else None
        out.print(table, crop=False)
        return False
    out.print(table)
    return natural > out.width


def outputs(
    target: str = _TARGET,
    field: str | None = typer.Argument(None, help="Print only this output, raw (e.g. hostfile, nccl_env)."),
    mock: bool = _MOCK,
    as_json: bool = _JSON,
) -> None:
    """Print a cluster's outputs (hostfile, ssh_config, nccl_env, ...), or one of them raw."""

    def go() -> dict[str, Any]:
        from provision.spec.errors import CloudError

        cluster = _cluster(target, mock, as_json)
        found = cluster.outputs
        if not found:
            raise CloudError(
                f"cluster {cluster.stack!r} is not up, so it has no outputs. "
                f"To fix: run `provision up {target}{' --mock' if mock else ''}` first"
            )
        return dict(found)

    found = run_command(as_json, go)
    if field is not None:
        value = run_command(as_json, lambda: _field(found, field))
        if as_json:
            emit_json(value)
        else:
            sys.stdout.write(_raw(field, value))
        return
    if as_json:
        emit_json(found)
    else:
        _print_outputs(found)


def _field(found: dict[str, Any], field: str) -> Any:
    if field not in found:
        from provision.spec.errors import Problem, SpecError

        raise SpecError(
            problems=[
                Problem("FIELD", field, "is not an output of this cluster", f"use one of: {', '.join(sorted(found))}")
            ]
        )
    return found[field]


def _raw(field: str, value: Any) -> str:
    """One output as a script wants it: text as is, ``nccl_env`` as export lines, the rest as JSON."""
    import json

    if field == "nccl_env" and isinstance(value, dict):
        return export_lines(value)
    if isinstance(value, str):
        return value if value.endswith("\n") else value + "\n"
    return json.dumps(value, indent=2, default=str) + "\n"


def register(app: typer.Typer) -> None:
    """Add ``up``, ``down``, ``status`` and ``outputs`` to the ``provision`` app."""
    for fn in (up, down, status, outputs):
        app.command(fn.__name__)(fn)

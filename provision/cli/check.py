"""``provision check TARGET [--json]``: the policy rules over the cluster's resource graph.

Runs the program under the strict mocked cloud (nothing is created) and evaluates every rule of
:mod:`provision.ops.policy_rules`. Exit 0 when every rule holds, 3 on any violation (a policy
refusal), 2 for a bad spec, 1 otherwise (an input the real cloud would reject included).
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, TargetArg, console, emit_json, run_command

EXIT_POLICY = 3


def check(
    target: str = TargetArg,
    policy_config: str | None = typer.Option(
        None,
        "--policy-config",
        help="The operator's exemptions (JSON/YAML: allow_world_ssh, public_head_node, gcp_os_login; flat or in "
        "the policy pack's --policy-pack-config layout). The spec's own opt-ins waive no rule.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Check the cluster's resources against the security and hygiene rules (exit 3 on a violation)."""

    def go() -> dict[str, Any]:
        from provision.cli.plan import _plan_target, _target_stack
        from provision.ops.policy import check_spec, read_policy_config

        ctx = read_policy_config(policy_config) if policy_config else None
        plan = _plan_target(target)  # every spec problem at once, before anything is registered
        report = check_spec(plan.spec, stack=_target_stack(target) or "check", ctx=ctx)
        return {"target": target, **report.as_dict()}

    doc = run_command(as_json, go)
    # A policy violation is a refusal (3); inputs a real cloud would reject are a failure (1).
    code = EXIT_POLICY if doc["violations"] else 1 if doc["rejected_by_cloud"] else 0
    if as_json:
        emit_json(doc)
        raise typer.Exit(code)
    from rich.markup import escape
    from rich.table import Table

    out = console()
    table = Table(title=f"provision check {doc['stack']}: {doc['resources']} resources")
    for col in ("rule", "", "title"):
        table.add_column(col, overflow="fold")
    for rule in doc["rules"]:
        mark = "[green]pass[/]" if not rule["violations"] else f"[red]{rule['violations']} violation(s)[/]"
        table.add_row(rule["id"], mark, escape(rule["title"]))
    out.print(table)
    for v in doc["violations"]:
        anchors = f" ({', '.join(v['anchors'])})" if v["anchors"] else ""
        out.print(
            f"[red]{v['rule']}[/] {escape(v['resource_type'])} [cyan]{escape(v['resource'])}[/]: "
            f"{escape(v['message'])}{escape(anchors)}"
        )
    for path in doc["spec_opt_ins_not_granted"]:
        out.print(
            f"[yellow]not waived:[/] the spec's {escape(path)} is not an exemption; grant it with --policy-config"
        )
    for rejection in doc["rejected_by_cloud"]:
        out.print(f"[red]rejected by the cloud:[/] {escape(rejection)}")
    out.print("[green]all rules hold[/]" if doc["passed"] else f"[red]{len(doc['violations'])} violation(s)[/]")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``check`` to the ``provision`` app."""
    app.command("check")(check)

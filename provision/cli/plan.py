"""``provision plan``, ``preview`` and ``schema``: what a spec becomes, before anything exists."""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, TargetArg, console, emit_json, print_plan, run_command


def _target_data(target: str) -> Any:
    from provision.spec.loading import read_yaml, spec_data_from_document, target_path

    path = target_path(target)
    return spec_data_from_document(read_yaml(path), str(path))


def _target_stack(target: str) -> str | None:
    """The stack of a ``Pulumi.<stack>.yaml`` target (a stack name included), as ``Cluster`` names it."""
    from provision.spec.loading import stack_of_file, target_path

    return stack_of_file(target_path(target))


def _plan_target(target: str) -> Any:
    """The plan of a target; shape and catalog problems come together in one error."""
    from provision.clouds.validate import load_and_plan
    from provision.ops.volumes import planned_data

    # An attached volume (storage.shared.volume) is planned with its own filesystem, priced beside the cluster.
    return load_and_plan(planned_data(_target_data(target)), stack=_target_stack(target))


def plan(target: str = TargetArg, as_json: bool = JsonOpt) -> None:
    """Validate a spec and print the resolved plan (nothing is created)."""
    summary = run_command(as_json, lambda: _plan_target(target).summary())
    if as_json:
        emit_json(summary)
    else:
        print_plan(summary)


_STRICT_REPORT = typer.Option(
    False,
    "--strict-report",
    help="Print how the strict mocked cloud accounted for every input leaf: checked by a vendor-sourced rule, "
    "waived (with the reason) or unchecked.",
)


def preview(target: str = TargetArg, as_json: bool = JsonOpt, strict_report: bool = _STRICT_REPORT) -> None:
    """Run the real Pulumi program against the mocked cloud and print every resource."""

    def go() -> dict[str, Any]:
        from provision.clouds.mocking import StrictViolationError
        from provision.engine.mockrun import held_config, run_program
        from provision.spec.errors import CloudError, Problem
        from provision.spec.loading import target_path

        stack = _target_stack(target) or "preview"
        plan = _plan_target(target)  # every problem at once, before anything is registered
        # A stack file's failover try and createdAt count as in `pulumi preview -s <stack>`.
        held = held_config(target_path(target)) if _target_stack(target) else {}
        try:
            # Nothing is created by a preview: let the program run to the end and report every violation.
            run = run_program(plan.spec, stack=stack, config=held, fail_fast=False, accounting=strict_report)
            return strict_report_doc(run) if strict_report else run.as_dict()
        except StrictViolationError as e:
            problems = [
                Problem(
                    f"{v.type} {v.name}: {v.field}",
                    v.value,
                    f"{v.rule} (source: {v.source})",
                    "change the cloud code or the spec so the input meets the rule",
                )
                for v in e.violations
            ]
            raise CloudError(
                "the strict mocked cloud refused inputs a real cloud rejects (docs/fidelity.md lists the rules)",
                problems,
                code=e.code,
            ) from None

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
        return
    if strict_report:
        _print_strict_report(doc)
        return
    from rich.markup import escape
    from rich.tree import Tree

    print_plan(doc["plan"])
    tree = Tree(f"[bold]{doc['plan']['name']}[/] ({len(doc['resources'])} resources)")
    for r in doc["resources"]:
        tree.add(f"{escape(r['type'])}  [cyan]{escape(r['name'])}[/]")
    out = console()
    out.print(tree)
    outputs = doc["outputs"]
    out.print("[bold]outputs[/]")
    for key in ("head_node", "hostfile", "shared_fs", "expires_at", "hourly_usd"):
        value = outputs.get(key)
        if isinstance(value, dict):
            value = value.get("mount_command", value)
        out.print(f"  {key}: {str(value).strip()}", markup=False)


def strict_report_doc(run: Any) -> dict[str, Any]:
    """The ``preview --strict-report`` document: counts, the unchecked leaves apart, the waivers by reason."""
    from provision.clouds.strict import CHECKED, UNCHECKED, WAIVED, tally

    leaves = run.accounting
    counts = tally(leaves)
    by_type: dict[str, dict[str, int]] = {}
    for leaf in leaves:
        by_type.setdefault(leaf.type, {CHECKED: 0, WAIVED: 0, UNCHECKED: 0})[leaf.status] += 1
    waivers: dict[tuple[str, str], int] = {}
    for leaf in leaves:
        if leaf.status == WAIVED:
            key = (leaf.type, leaf.basis)
            waivers[key] = waivers.get(key, 0) + 1
    return {
        "stack": run.plan.name,
        CHECKED: counts[CHECKED],
        WAIVED: counts[WAIVED],
        UNCHECKED: counts[UNCHECKED],
        "unchecked_paths": [{"type": x.type, "name": x.name, "path": x.path} for x in leaves if x.status == UNCHECKED],
        "by_type": by_type,
        "waivers": [{"type": t, "reason": r, "leaves": n} for (t, r), n in sorted(waivers.items())],
        "leaves": [x.as_dict() for x in leaves],
    }


def _print_strict_report(doc: dict[str, Any]) -> None:
    from rich.markup import escape

    out = console()
    out.print(f"[bold]{escape(doc['stack'])}[/]: the strict mocked cloud accounted for every input leaf")
    for type_token, counts in sorted(doc["by_type"].items()):
        line = f"  {type_token}: {counts['checked']} checked, {counts['waived']} waived"
        bad = f", [red]{counts['unchecked']} unchecked[/]" if counts["unchecked"] else ""
        out.print(escape(line) + bad, soft_wrap=True)
    if doc["waivers"]:
        out.print("[bold]waived, and why[/]")
        for w in doc["waivers"]:
            out.print(f"  {escape(w['type'])} ({w['leaves']}): {escape(w['reason'])}", soft_wrap=True)
    if doc["unchecked_paths"]:
        out.print("[bold red]unchecked[/] (no vendor-sourced rule and no waiver):")
        for u in doc["unchecked_paths"]:
            out.print(f"  {escape(u['type'])} {escape(u['name'])}: {escape(u['path'])}", soft_wrap=True)
    out.print(f"[bold]{doc['checked']} checked, {doc['waived']} waived, {doc['unchecked']} unchecked[/]")


def schema(
    as_json: bool = JsonOpt,
    plan: bool = typer.Option(False, "--plan", help="The schema of `provision plan --json` instead of the spec's."),
) -> None:
    """Print the JSON Schema of the cluster spec (or, with --plan, of `provision plan --json`)."""
    if plan:
        from provision.clouds.plan_schema import plan_json_schema

        emit_json(plan_json_schema())
        return
    from provision.spec import ClusterSpec

    emit_json(ClusterSpec.model_json_schema())


def register(app: typer.Typer) -> None:
    """Add ``plan``, ``preview`` and ``schema`` to the ``provision`` app."""
    for fn in (plan, preview, schema):
        app.command(fn.__name__)(fn)

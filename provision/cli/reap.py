"""``provision reap``: list (and with ``--yes`` delete) clusters past their expiry."""

from __future__ import annotations

import re
from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command


def register(app: typer.Typer) -> None:
    @app.command()
    def reap(
        yes: bool = typer.Option(False, "--yes", help="Delete what is listed (default: only list)."),
        mock: bool = typer.Option(False, "--mock", help="Reap the mocked clouds' stacks instead of real ones."),
        aws_region: list[str] = typer.Option(
            [], "--aws-region", help="Also sweep this AWS region by tag (works without Pulumi state); repeatable."
        ),
        azure_subscription: list[str] = typer.Option(
            [],
            "--azure-subscription",
            help="Also sweep this Azure subscription's resource groups by tag (works without Pulumi state); "
            "repeatable. Uses the default Azure credentials (az login, environment, managed identity).",
        ),
        as_json: bool = JsonOpt,
    ) -> None:
        """Find clusters whose provision-expires-at has passed: in the state backend, or by cloud tags.

        Example: provision reap --aws-region us-east-1 --azure-subscription 0000-... --yes
        """

        def go() -> dict[str, Any]:
            from provision.ops import reaper
            from provision.spec.errors import CloudError

            _check_targets(aws_region, azure_subscription)

            found: list[dict[str, Any]] = []
            errors: list[str] = []  # one broken stack never stops the sweep of the others

            def reap_one(row: dict[str, Any], delete: Any) -> None:
                if yes:
                    try:
                        row["deleted"] = delete()
                    except CloudError as e:
                        row["error"] = str(e)
                        errors.append(f"{row['cluster']}: {e}")
                found.append(row)

            if mock:
                for c in reaper.expired_mock_stacks(errors=errors):
                    reap_one({**c.as_dict(), "source": "mock"}, lambda c=c: reaper.reap_mock_stack(c.cluster))
            else:
                for c in reaper.expired_pulumi_stacks(errors=errors):
                    reap_one({**c.as_dict(), "source": "pulumi-stack"}, lambda c=c: reaper.reap_pulumi_stack(c.cluster))
            for region in aws_region:
                found.extend(reaper.sweep("aws", region, yes))
            for subscription in azure_subscription:
                found.extend(reaper.sweep("azure", subscription, yes))
            return {"expired": found, "deleted": yes, "errors": errors}

        doc = run_command(as_json, go)
        # Exit 1 when a stack could not be read or reaped, after every other stack was handled.
        code = 1 if doc["errors"] else 0
        if as_json:
            emit_json(doc)
            raise typer.Exit(code)
        out = console()
        for error in doc["errors"]:
            console(stderr=True).print(f"error: {error}", markup=False)
        if not doc["expired"]:
            out.print("no expired clusters", markup=False)
            raise typer.Exit(code)
        for row in doc["expired"]:
            if "error" in row:
                continue
            verb = f"deleted {len(row.get('deleted', []))} resources of" if yes else "expired:"
            out.print(
                f"{verb} {row['cluster']} ({row['cloud']} {row['region']}, {row['source']}) "
                f"expired at {row['expires_at']}",
                markup=False,
            )
        if not yes:
            out.print("run again with --yes to delete them", markup=False)
        raise typer.Exit(code)


#: AWS region names (us-east-1, ap-southeast-3, us-gov-west-1) and Azure subscription ids (GUIDs), in ASCII.
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")
_GUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


def _check_targets(regions: list[str], subscriptions: list[str]) -> None:
    """Refuse malformed sweep targets (all at once, exit 2) before any cloud or state is touched."""
    from provision.spec.errors import Problem, SpecError

    problems = [
        Problem("--aws-region", r, "is not an AWS region name", "write it like us-east-1")
        for r in regions
        if not _AWS_REGION.match(r)
    ] + [
        Problem("--azure-subscription", s, "is not a subscription id (a GUID)", "copy it from `az account show`")
        for s in subscriptions
        if not _GUID.match(s)
    ]
    if problems:
        raise SpecError("bad sweep target", problems)

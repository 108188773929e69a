"""``provision install-pulumi``: download the Pulumi CLI that real (non ``--mock``) runs need.

Uses the Pulumi SDK's own installer (``pulumi.automation.PulumiCommand.install``: the official
get.pulumi.com script), into ``~/.pulumi/versions/<version>``, the folder where provision looks
when ``pulumi`` is not on PATH. Needs network access.
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command


def install_pulumi(
    version: str | None = typer.Option(None, "--version", help="CLI version (default: the one matching the SDK)."),
    as_json: bool = JsonOpt,
) -> None:
    """Download and install the Pulumi CLI (needs network); --mock runs need no CLI."""

    def go() -> dict[str, Any]:
        from provision.engine.automation import install_pulumi as install

        return install(version)

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
    else:
        console().print(f"installed Pulumi CLI {doc['version']} at {doc['command']}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``install-pulumi``."""
    app.command("install-pulumi")(install_pulumi)

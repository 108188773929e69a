"""``provision ssh-config``: the clusters' ssh_config files for plain ``ssh`` and VS Code Remote-SSH."""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command


def ssh_config(
    install: bool = typer.Option(False, "--install", help="Add the Include line to ~/.ssh/config (once)."),
    mock: bool = typer.Option(False, "--mock", help="Write the files of the mocked clusters."),
    as_json: bool = JsonOpt,
) -> None:
    """Write every cluster's ssh_config and print the Include line; --install adds it to ~/.ssh/config."""

    def go() -> dict[str, Any]:
        from provision.ops import ssh_include
        from provision.ops.access import write_ssh_config
        from provision.ops.cluster import Cluster
        from provision.ops.inventory import list_clusters

        written = []
        for row in list_clusters(mock=mock):
            cluster = Cluster(row.stack, mock=mock, display="none")
            if cluster.outputs.get("hosts"):
                written.append(str(write_ssh_config(cluster)))
        doc: dict[str, Any] = {"include": ssh_include.include_line(), "configs": written}
        if install:
            path, changed = ssh_include.install()
            doc.update(installed=str(path), changed=changed)
        return doc

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
        return
    out = console()
    if install:
        state = "added to" if doc["changed"] else "already in"
        out.print(f"{doc['include']}\n{state} {doc['installed']}; hosts are <cluster>-<rank>", markup=False)
    else:
        out.print(f"{doc['include']}\n(add it at the top of ~/.ssh/config, or run with --install)", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``ssh-config``."""
    app.command("ssh-config")(ssh_config)
